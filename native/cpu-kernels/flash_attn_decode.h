// Hearth's attention for generating rows (a few query rows per sequence) on x86 CPUs with AVX-512, compiled into
// Hearth's native build of ggml's CPU backend (native/cpu-kernels/hearth-kernels.ts puts this file beside ops.cpp,
// whose flash-attention op calls it first through flash_attn_decode_ggml.h). Why: for a generating row ggml runs
// one query head at a time over the cells (ggml_compute_forward_flash_attn_ext_f16_one_chunk): per cell a dot
// product, a scalar expf and a V update through an fp16 accumulator. With grouped-query attention it reads every
// K and V row once per query head of the group (7 times on a 14/2-head model). This kernel takes a (sequence,
// query row)'s heads at once, a block of cells at a time:
//
//   1. the block's unmasked K rows converted to fp32 once (all the unit's key/value heads of a cell lie side by
//      side: one contiguous read; the next block's rows and this block's V rows prefetched), every head's scores
//      q.k (q pre-scaled), 16 cells' dot products summed at once;
//   2. per head, the block's maximum, the running sums rescaled when it grows, exp(s - max) 16 lanes at a time;
//   3. the block's V rows converted likewise, added into each head's fp32 accumulator with its weights.
//
// Masked cells (-inf) are skipped as ggml does; the result is the same softmax-weighted sum in another summation
// order, with fp32 accumulators where ggml keeps V's sum in fp16, and exp from a polynomial (about 2 ulp).
//
// Contract: run() computes, for each sequence s < n_seq, query row r < n_rows and head h < n_head,
//   dst[(s*n_rows + r)*n_head + h] = softmax_c(scale * q.k_c + mask_c) . v_c over cells c < n_kv,
// where head h reads key/value head h / (n_head / n_head_kv) of key/value sequence s / (n_seq / kv_seq), and
// mask_c is the fp16 mask row of (r, s % mask_seq) shared by the heads (no mask: 0). A row whose cells are all
// masked gets zeros (as ggml). Threads ith of nth each write a disjoint set of rows. Returns false (nothing
// written) for shapes it does not take: head sizes that are not a multiple of 16 from 16 to 256, over kMaxHeads
// query heads, or too few rows and heads to give every thread a share (ggml then splits the cells among them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HEARTH_FLASH_ATTN_DECODE 1

namespace hearth_fa {

struct Problem {
    int64_t headSize;  // DK == DV
    int64_t cells;     // n_kv
    int64_t rows;      // query rows per sequence
    int64_t heads;     // query heads
    int64_t kvHeads;   // key/value heads (heads % kvHeads == 0)
    int64_t seqs;      // query sequences
    int64_t kvSeqs;    // key/value sequences (seqs % kvSeqs == 0)
    const char *q;     // fp32; row (s, r, h) at q + r*qRow + h*qHead + s*qSeq
    size_t qRow, qHead, qSeq;
    const char *k;     // fp16; cell c of (kv head, kv seq) at k + c*kCell + kvh*kHead + kvs*kSeq
    size_t kCell, kHead, kSeq;
    const char *v;     // fp16, as k
    size_t vCell, vHead, vSeq;
    const char *mask;  // fp16 or null; row (r, s) at mask + r*maskRow + (s % maskSeqs)*maskSeq
    size_t maskRow, maskSeq;
    int64_t maskSeqs;
    float scale;
    char *dst;  // fp32; row (s, r, h) at dst + ((s*rows + r)*heads + h)*dstRow
    size_t dstRow;
};

constexpr int kMaxBlock = 32;        // cells per block at most
constexpr int kBlockFloats = 8192;   // a block's converted rows: 32 KiB, within L1
constexpr int kMaxHeads = 256;
constexpr int kMaxHeadSize = 256;    // head sizes 16, 32, ... 256: one instance of unit() per size

// exp(x) for x <= 0 (and -inf): 2^n * e^r, r in [-ln2/2, ln2/2], Cephes' expf polynomial, vscalefps for 2^n.
inline __m512 exp512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

// The lane sums of 16 vectors, as one vector: lane i = sum of v[i]'s lanes (pairwise unpacks, then 128-bit shuffles).
inline __m512 sum16(const __m512 v[16]) {
    __m512 s1[8];
    for (int i = 0; i < 8; ++i)
        s1[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    __m512 s2[4];
    for (int i = 0; i < 4; ++i) {
        const __m512d a = _mm512_castps_pd(s1[2 * i]), b = _mm512_castps_pd(s1[2 * i + 1]);
        s2[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    // s2[i]: in each 128-bit lane, vectors 4i..4i+3 summed over that lane; add the lanes, vector group i to lane i.
    const __m512 u01 = _mm512_add_ps(_mm512_shuffle_f32x4(s2[0], s2[1], 0x88), _mm512_shuffle_f32x4(s2[0], s2[1], 0xDD));
    const __m512 u23 = _mm512_add_ps(_mm512_shuffle_f32x4(s2[2], s2[3], 0x88), _mm512_shuffle_f32x4(s2[2], s2[3], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(u01, u23, 0x88), _mm512_shuffle_f32x4(u01, u23, 0xDD));
}

// A thread's scratch, 64-byte aligned, grown as needed, freed with the thread.
inline float *scratch(size_t floats) {
    struct Buffer {
        float *data = nullptr;
        size_t size = 0;
        ~Buffer() { ::operator delete[](data, std::align_val_t(64)); }
    };
    thread_local Buffer buf;
    if (buf.size < floats) {
        ::operator delete[](buf.data, std::align_val_t(64));
        buf.data = static_cast<float *>(::operator new[](floats * sizeof(float), std::align_val_t(64)));
        buf.size = floats;
    }
    return buf.data;
}

// Converts `n` fp16 values to fp32 (n a multiple of 16).
inline void toFloat(const uint16_t *from, float *to, int64_t n) {
    for (int64_t i = 0; i < n; i += 16)
        _mm512_store_ps(to + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (from + i))));
}

// One unit: query row `r` of sequence `s`, query heads [h0, h1), which read key/value heads [kv0, kv1) (a head's
// key/value head is h / group). The key/value heads of a cell lie side by side in memory, so a unit with all of
// them reads each cell's row in one piece. D = head size.
template <int D>
void unit(const Problem &p, int64_t s, int64_t r, int64_t kv0, int64_t kv1, int64_t h0, int64_t h1) {
    constexpr int L = D / 16;  // 512-bit lanes per head
    const int64_t group = p.heads / p.kvHeads;
    const int64_t nh = h1 - h0, nkv = kv1 - kv0;
    const int block = (int) std::max<int64_t>(1, std::min<int64_t>(kMaxBlock, kBlockFloats / (nkv * D)));
    float *qs = scratch(2 * nh * D + (size_t) block * nkv * D + nh * kMaxBlock + 2 * nh);
    float *acc = qs + nh * D;
    float *rows = acc + nh * D;             // the block's K rows, then its V rows: [cell][kv head - kv0][D]
    float *weights = rows + block * nkv * D;  // [head][cell]: scores, then exp(score - max)
    float *maxS = weights + nh * kMaxBlock;
    float *sum = maxS + nh;
    int32_t cellOf[kMaxBlock];
    float maskOf[kMaxBlock + 16] = {};  // read 16 at a time

    const __m512 scale = _mm512_set1_ps(p.scale);
    for (int64_t j = 0; j < nh; ++j) {
        const float *qrow = (const float *) (p.q + r * p.qRow + (h0 + j) * p.qHead + s * p.qSeq);
        for (int l = 0; l < L; ++l) {
            _mm512_store_ps(qs + j * D + l * 16, _mm512_mul_ps(_mm512_loadu_ps(qrow + l * 16), scale));
            _mm512_store_ps(acc + j * D + l * 16, _mm512_setzero_ps());
        }
        maxS[j] = -INFINITY;
        sum[j] = 0.0f;
    }
    const int64_t kvs = s / (p.seqs / p.kvSeqs);
    const char *kBase = p.k + kvs * p.kSeq;
    const char *vBase = p.v + kvs * p.vSeq;
    const bool packed = p.kHead == (size_t) D * 2 && p.vHead == (size_t) D * 2;  // a cell's heads side by side
    const uint16_t *maskRow =
        p.mask ? (const uint16_t *) (p.mask + r * p.maskRow + (s % p.maskSeqs) * p.maskSeq) : nullptr;
    auto convert = [&](const char *base, size_t cellStride, size_t headStride, int live) {
        for (int t = 0; t < live; ++t) {
            const char *cell = base + cellOf[t] * cellStride + kv0 * headStride;
            // Ahead of time, as the rows stream from memory: the next block's row at this position, and while the K
            // rows are converted, this block's V rows (wanted once the scores are done).
            const char *ahead = cell + block * cellStride;
            for (int64_t b = 0; b < nkv * D * 2; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
            if (base == kBase) {
                const char *v = vBase + cellOf[t] * p.vCell + kv0 * p.vHead;
                for (int64_t b = 0; b < nkv * D * 2; b += 64) _mm_prefetch(v + b, _MM_HINT_T0);
            }
            if (packed) {
                toFloat((const uint16_t *) cell, rows + t * nkv * D, nkv * D);
            } else {
                for (int64_t kv = 0; kv < nkv; ++kv)
                    toFloat((const uint16_t *) (cell + kv * headStride), rows + (t * nkv + kv) * D, D);
            }
        }
    };

    for (int64_t c0 = 0; c0 < p.cells; c0 += block) {
        const int64_t c1 = std::min<int64_t>(c0 + block, p.cells);
        int live = 0;
        for (int64_t c = c0; c < c1; ++c) {
            const float m = maskRow ? _cvtsh_ss(maskRow[c]) : 0.0f;
            if (m == -INFINITY) continue;
            cellOf[live] = (int32_t) c;
            maskOf[live] = m;
            live++;
        }
        if (live == 0) continue;

        // 1. Scores.
        convert(kBase, p.kCell, p.kHead, live);
        for (int64_t j = 0; j < nh; ++j) {
            const int64_t kv = (h0 + j) / group - kv0;
            __m512 q[L];
            for (int l = 0; l < L; ++l) q[l] = _mm512_load_ps(qs + j * D + l * 16);
            for (int t0 = 0; t0 < live; t0 += 16) {
                __m512 d[16];
                for (int t = 0; t < 16; ++t) {
                    if (t0 + t >= live) {
                        d[t] = _mm512_setzero_ps();
                        continue;
                    }
                    const float *k = rows + ((t0 + t) * nkv + kv) * D;
                    d[t] = _mm512_mul_ps(q[0], _mm512_load_ps(k));
                    for (int l = 1; l < L; ++l) d[t] = _mm512_fmadd_ps(q[l], _mm512_load_ps(k + l * 16), d[t]);
                }
                _mm512_storeu_ps(weights + j * kMaxBlock + t0, _mm512_add_ps(sum16(d), _mm512_loadu_ps(maskOf + t0)));
            }
        }

        // 2. Softmax weights, the running maximum and sums.
        const __mmask16 first = (__mmask16) (live >= 16 ? 0xFFFF : (1u << live) - 1);
        const __mmask16 second = (__mmask16) (live <= 16 ? 0 : (1u << (live - 16)) - 1);
        for (int64_t j = 0; j < nh; ++j) {
            float *w = weights + j * kMaxBlock;
            const __m512 lo = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), first, w);
            const __m512 hi = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), second, w + 16);
            const float blockMax = _mm512_reduce_max_ps(_mm512_max_ps(lo, hi));
            if (blockMax > maxS[j]) {
                if (maxS[j] != -INFINITY) {
                    const float f = std::exp(maxS[j] - blockMax);
                    const __m512 vf = _mm512_set1_ps(f);
                    for (int l = 0; l < L; ++l)
                        _mm512_store_ps(acc + j * D + l * 16, _mm512_mul_ps(_mm512_load_ps(acc + j * D + l * 16), vf));
                    sum[j] *= f;
                }
                maxS[j] = blockMax;
            }
            const __m512 m = _mm512_set1_ps(maxS[j]);
            const __m512 wlo = _mm512_maskz_mov_ps(first, exp512(_mm512_sub_ps(lo, m)));
            const __m512 whi = _mm512_maskz_mov_ps(second, exp512(_mm512_sub_ps(hi, m)));
            sum[j] += _mm512_reduce_add_ps(_mm512_add_ps(wlo, whi));
            _mm512_storeu_ps(w, wlo);
            _mm512_storeu_ps(w + 16, whi);
        }

        // 3. Weighted V rows.
        convert(vBase, p.vCell, p.vHead, live);
        for (int64_t j = 0; j < nh; ++j) {
            const int64_t kv = (h0 + j) / group - kv0;
            __m512 a[L];
            for (int l = 0; l < L; ++l) a[l] = _mm512_load_ps(acc + j * D + l * 16);
            for (int t = 0; t < live; ++t) {
                const __m512 w = _mm512_set1_ps(weights[j * kMaxBlock + t]);
                const float *v = rows + (t * nkv + kv) * D;
#pragma GCC unroll 8
                for (int l = 0; l < L; ++l) a[l] = _mm512_fmadd_ps(w, _mm512_load_ps(v + l * 16), a[l]);
            }
            for (int l = 0; l < L; ++l) _mm512_store_ps(acc + j * D + l * 16, a[l]);
        }
    }

    for (int64_t j = 0; j < nh; ++j) {
        float *out = (float *) (p.dst + ((s * p.rows + r) * p.heads + h0 + j) * p.dstRow);
        const __m512 inv = _mm512_set1_ps(sum[j] == 0.0f ? 0.0f : 1.0f / sum[j]);
        for (int l = 0; l < L; ++l) _mm512_storeu_ps(out + l * 16, _mm512_mul_ps(_mm512_load_ps(acc + j * D + l * 16), inv));
    }
}

using UnitFn = void (*)(const Problem &, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);

// unit<D> for a head size D in 16, 32, ... kMaxHeadSize.
template <int... Lanes>
inline UnitFn unitFrom(int64_t headSize, std::integer_sequence<int, Lanes...>) {
    static constexpr UnitFn units[] = {&unit<16 * (Lanes + 1)>...};
    return units[headSize / 16 - 1];
}
inline UnitFn unitOf(int64_t headSize) {
    return unitFrom(headSize, std::make_integer_sequence<int, kMaxHeadSize / 16>{});
}

/**
 * Thread ith of nth computes its share of the rows; false when the shape is not one this kernel takes. A unit is a
 * (sequence, query row) with all its heads while there are enough of them to share out evenly; otherwise the
 * key/value heads are split among units, and then a key/value head's group of query heads.
 */
inline bool run(const Problem &p, int ith, int nth) {
    if (p.headSize % 16 != 0 || p.headSize < 16 || p.headSize > kMaxHeadSize) return false;
    if (p.kvHeads <= 0 || p.heads % p.kvHeads != 0 || p.heads > kMaxHeads) return false;
    if (p.kvSeqs <= 0 || p.seqs % p.kvSeqs != 0 || (p.mask != nullptr && p.maskSeqs <= 0)) return false;
    const int64_t group = p.heads / p.kvHeads;
    const int64_t rowUnits = p.seqs * p.rows;
    int64_t kvPer = p.kvHeads;  // key/value heads per unit
    int64_t split = 1;          // parts of a group, when kvPer is 1
    if (rowUnits < 4 * nth && rowUnits % nth != 0) {
        // Units per row wanted: enough for every thread, or a 4-fold surplus to even out the threads' shares.
        const int64_t want = rowUnits < nth ? (nth + rowUnits - 1) / rowUnits : (4 * nth + rowUnits - 1) / rowUnits;
        if (want <= p.kvHeads) {
            kvPer = (p.kvHeads + want - 1) / want;
        } else {
            kvPer = 1;
            split = std::min<int64_t>(group, (want + p.kvHeads - 1) / p.kvHeads);
        }
    }
    const int64_t kvParts = (p.kvHeads + kvPer - 1) / kvPer;
    const int64_t subGroup = (group + split - 1) / split;
    const int64_t total = rowUnits * kvParts * split;
    if (total < nth) return false;  // a thread would sit idle: ggml splits the cells instead
    for (int64_t u = ith; u < total; u += nth) {
        const int64_t part = u % split;
        const int64_t kv0 = (u / split) % kvParts * kvPer;
        const int64_t kv1 = std::min<int64_t>(kv0 + kvPer, p.kvHeads);
        const int64_t sr = u / split / kvParts;  // s * rows + r
        const int64_t h0 = split == 1 ? kv0 * group : kv0 * group + part * subGroup;
        const int64_t h1 = split == 1 ? kv1 * group : std::min<int64_t>(h0 + subGroup, kv1 * group);
        if (h0 >= h1) continue;
        unitOf(p.headSize)(p, sr / p.rows, sr % p.rows, kv0, kv1, h0, h1);
    }
    return true;
}

}  // namespace hearth_fa

#endif
