// Checks flash_attn_decode.h against a plain reference in double precision: head sizes 16 to 256 (64 and 128 most),
// groups of 1 to
// 16 query heads per key/value head, 1-3 query rows per sequence, 1-8 sequences with their own or one shared
// key/value sequence, masks with -inf holes, rows masked whole, finite mask values, and no mask, a cell's heads side
// by side (ggml's KV cache) or apart, padded strides, 1-16 threads (units split by key/value heads, then by query
// heads, when rows are too few), and the shapes it must refuse. Every output
// must be written (the buffer starts as NaN). Prints "skip: <why>" and exits 0 when this CPU build has no AVX-512
// (the kernel is not compiled then); exits 1 with the first mismatch otherwise.
// Built and run by test/model/cpu-kernels-flash-attn.test.ts: g++ -O2 -march=native.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "flash_attn_decode.h"

#if !defined(HEARTH_FLASH_ATTN_DECODE)
int main() {
    std::printf("skip: this CPU build has no AVX-512\n");
    return 0;
}
#else
static float half(uint16_t h) { return _cvtsh_ss(h); }
static uint16_t toHalf(float f) { return _cvtss_sh(f, 0); }

struct Shape {
    int64_t d, cells, rows, heads, kvHeads, seqs, kvSeqs;
    int mask;  // 0 none, 1 holes (-inf), 2 holes and finite values, 3 one row wholly masked
    int maskSeqs;  // 1 or seqs
    int nth;
    bool expectTaken;
    bool packed;  // a cell's key/value heads side by side (ggml's KV cache), else each head's cells apart
};

int main() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const Shape shapes[] = {
        {64, 1, 1, 1, 1, 1, 1, 0, 1, 1, true, false},     {64, 37, 1, 8, 4, 1, 1, 1, 1, 1, true, true},
        {64, 300, 1, 14, 2, 1, 1, 1, 1, 2, true, true},   {64, 513, 1, 14, 2, 1, 1, 2, 1, 4, true, false},
        {64, 96, 1, 14, 2, 8, 8, 1, 8, 2, true, true},    {64, 64, 3, 8, 4, 2, 2, 3, 2, 3, true, true},
        {128, 200, 1, 32, 8, 4, 4, 1, 4, 2, true, true},  {128, 33, 2, 16, 1, 1, 1, 2, 1, 1, true, false},
        {64, 70, 1, 16, 16, 5, 1, 1, 1, 2, true, true},   {64, 31, 1, 6, 2, 3, 3, 0, 1, 4, true, false},
        {64, 45, 1, 17, 1, 3, 3, 1, 3, 2, true, true},    {128, 90, 5, 32, 8, 1, 1, 2, 1, 4, true, true},
        {64, 40, 1, 14, 2, 1, 1, 1, 1, 8, true, true},    {64, 40, 1, 8, 4, 3, 3, 1, 3, 2, true, true},
        {64, 40, 1, 14, 2, 1, 1, 1, 1, 16, false, true},  {64, 50, 2, 8, 4, 2, 2, 1, 2, 1, true, false},
        {64, 10, 1, 1, 1, 1, 1, 0, 1, 2, false, true},    {72, 10, 1, 4, 4, 1, 1, 0, 1, 1, false, true},
        {64, 4, 1, 257, 1, 1, 1, 0, 1, 1, false, true},   {8, 10, 1, 8, 8, 1, 1, 0, 1, 1, false, true},
        {272, 10, 1, 4, 4, 1, 1, 0, 1, 1, false, true},   {16, 77, 1, 8, 8, 2, 2, 1, 2, 2, true, true},
        {32, 45, 2, 16, 4, 1, 1, 2, 1, 3, true, false},   {80, 130, 1, 32, 32, 2, 2, 1, 2, 2, true, true},
        {96, 300, 1, 32, 8, 1, 1, 2, 1, 2, true, true},   {96, 64, 3, 12, 4, 3, 1, 3, 1, 4, true, false},
        {112, 50, 1, 7, 7, 2, 2, 1, 2, 1, true, true},    {192, 40, 1, 8, 2, 2, 2, 1, 2, 2, true, true},
        {256, 513, 1, 4, 1, 1, 1, 1, 1, 2, true, true},   {256, 70, 2, 8, 4, 4, 4, 2, 4, 3, true, false},
        {256, 33, 1, 16, 8, 2, 2, 3, 2, 8, true, true},
    };
    long compared = 0;
    for (const Shape &s : shapes) {
        const int64_t d = s.d, pad = 8;
        const size_t qRow = (d + pad) * 4, qHead = qRow * s.rows, qSeq = qHead * s.heads + 64;
        const size_t kCell = s.packed ? (s.kvHeads * d + pad) * 2 : (d + pad) * 2;
        const size_t kHead = s.packed ? d * 2 : kCell * s.cells + 32;
        const size_t kSeq = s.packed ? kCell * s.cells + 64 : kHead * s.kvHeads;
        const size_t maskRow = (s.cells + 5) * 2, maskSeq = maskRow * s.rows;
        std::vector<float> q(qSeq * s.seqs / 4);
        std::vector<uint16_t> k(kSeq * s.kvSeqs / 2), v(kSeq * s.kvSeqs / 2), mask(maskSeq * s.maskSeqs / 2);
        for (auto &x : q) x = unit(rng);
        for (auto &x : k) x = toHalf(unit(rng));
        for (auto &x : v) x = toHalf(unit(rng));
        for (auto &x : mask) {
            const float r = unit(rng);
            x = toHalf(s.mask >= 1 && r < -0.4f ? -INFINITY : (s.mask == 2 ? r * 3.0f : 0.0f));
        }
        if (s.mask == 3)
            for (int64_t c = 0; c < s.cells; ++c) mask[c] = toHalf(-INFINITY);  // row 0 of sequence 0: all masked
        const size_t dstRow = d * 4;
        std::vector<float> dst(s.seqs * s.rows * s.heads * d, NAN);

        hearth_fa::Problem p;
        p.headSize = d;
        p.cells = s.cells;
        p.rows = s.rows;
        p.heads = s.heads;
        p.kvHeads = s.kvHeads;
        p.seqs = s.seqs;
        p.kvSeqs = s.kvSeqs;
        p.q = (const char *) q.data();
        p.qRow = qRow;
        p.qHead = qHead;
        p.qSeq = qSeq;
        p.k = (const char *) k.data();
        p.kCell = kCell;
        p.kHead = kHead;
        p.kSeq = kSeq;
        p.v = (const char *) v.data();
        p.vCell = kCell;
        p.vHead = kHead;
        p.vSeq = kSeq;
        p.mask = s.mask ? (const char *) mask.data() : nullptr;
        p.maskRow = maskRow;
        p.maskSeq = maskSeq;
        p.maskSeqs = s.maskSeqs;
        p.scale = 1.0f / std::sqrt((float) d);
        p.dst = (char *) dst.data();
        p.dstRow = dstRow;

        bool taken = true;
        for (int ith = 0; ith < s.nth; ++ith) taken = hearth_fa::run(p, ith, s.nth) && taken;
        if (taken != s.expectTaken) {
            std::printf("FAIL d=%ld heads=%ld/%ld nth=%d: taken %d, expected %d\n", (long) d, (long) s.heads,
                        (long) s.kvHeads, s.nth, taken, s.expectTaken);
            return 1;
        }
        if (!taken) continue;

        const int64_t group = s.heads / s.kvHeads;
        for (int64_t sq = 0; sq < s.seqs; ++sq)
            for (int64_t r = 0; r < s.rows; ++r)
                for (int64_t h = 0; h < s.heads; ++h) {
                    const float *qr = (const float *) ((const char *) q.data() + r * qRow + h * qHead + sq * qSeq);
                    const int64_t kvs = sq / (s.seqs / s.kvSeqs), kvh = h / group;
                    std::vector<double> out(d, 0.0);
                    std::vector<double> score(s.cells, -INFINITY);
                    double best = -INFINITY;
                    for (int64_t c = 0; c < s.cells; ++c) {
                        const double m = s.mask ? half(mask[(r * maskRow + (sq % s.maskSeqs) * maskSeq) / 2 + c]) : 0.0;
                        if (m == -INFINITY) continue;
                        const uint16_t *kr = k.data() + (c * kCell + kvh * kHead + kvs * kSeq) / 2;
                        double dot = 0;
                        for (int64_t i = 0; i < d; ++i) dot += (double) qr[i] * half(kr[i]);
                        score[c] = dot * p.scale + m;
                        best = std::max(best, score[c]);
                    }
                    double sum = 0;
                    for (int64_t c = 0; c < s.cells; ++c) {
                        if (score[c] == -INFINITY) continue;
                        const double w = std::exp(score[c] - best);
                        sum += w;
                        const uint16_t *vr = v.data() + (c * kCell + kvh * kHead + kvs * kSeq) / 2;
                        for (int64_t i = 0; i < d; ++i) out[i] += w * half(vr[i]);
                    }
                    const float *got = dst.data() + ((sq * s.rows + r) * s.heads + h) * d;
                    for (int64_t i = 0; i < d; ++i) {
                        const double want = sum == 0 ? 0.0 : out[i] / sum;
                        if (!(std::fabs(got[i] - want) <= 2e-5 + 2e-4 * std::fabs(want))) {
                            std::printf("FAIL d=%ld cells=%ld heads=%ld/%ld seqs=%ld/%ld mask=%d nth=%d at seq %ld row %ld head %ld [%ld]: %.7f, expected %.7f\n",
                                        (long) d, (long) s.cells, (long) s.heads, (long) s.kvHeads, (long) s.seqs,
                                        (long) s.kvSeqs, s.mask, s.nth, (long) sq, (long) r, (long) h, (long) i, got[i], want);
                            return 1;
                        }
                        compared++;
                    }
                }
    }
    std::printf("ok: %ld outputs match\n", compared);
    return 0;
}
#endif
