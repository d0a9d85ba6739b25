// Checks q8_0_gemm.h against a plain reference: every shape class the kernel has (one row at a time with 1-12
// columns, 4-row tiles beyond; row and column tails, an odd number of blocks, more columns than one pass prepares,
// strided rows, several threads), random quants over the whole int8 range and random fp16 scales. Prints
// "skip: <why>" and exits 0 when this CPU build has no AVX-512 VNNI (the kernel is not compiled then); exits 1
// with the first mismatch otherwise.
// Built and run by test/model/cpu-kernels-q8-0-gemm.test.ts: g++ -O2 -march=native.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

struct block_q8_0 {
    uint16_t d;
    int8_t qs[32];
};

#include "q8_0_gemm.h"

#if !defined(HEARTH_Q8_0_GEMM)
int main() {
    std::printf("skip: this CPU build has no AVX-512 VNNI\n");
    return 0;
}
#else
static float half(uint16_t h) { return _cvtsh_ss(h); }

int main() {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> quant(-128, 127);
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    auto fill = [&](std::vector<block_q8_0> &v) {
        for (auto &b : v) {
            b.d = _cvtss_sh(scale(rng), 0);
            for (auto &q : b.qs) q = (int8_t) quant(rng);
        }
    };
    struct Shape { int64_t m, n, k, padA, padB, nth; };
    const Shape shapes[] = {
        {1, 1, 1, 0, 0, 1},    {4, 4, 2, 0, 0, 1},    {7, 3, 5, 1, 2, 1},   {64, 8, 16, 0, 0, 2},
        {33, 9, 43, 3, 0, 2},  {257, 17, 43, 0, 1, 3}, {512, 1, 16, 0, 0, 2}, {130, 40, 7, 2, 5, 4},
        {5, 16, 3, 0, 0, 8},   {300, 33, 28, 0, 0, 2},  {3, 2, 8, 0, 0, 1},    {20, 5, 9, 0, 0, 2},
        {11, 6, 4, 1, 1, 1},   {9, 7, 17, 0, 3, 2},     {17, 10, 2, 0, 0, 3},  {8, 11, 5, 2, 0, 2},
        {12, 12, 6, 0, 0, 1},  {6, 13, 3, 0, 0, 2},
    };
    int checked = 0;
    for (const Shape &s : shapes) {
        const int64_t lda = s.k + s.padA, ldb = s.k + s.padB, ldc = s.m + 3;
        std::vector<block_q8_0> A((size_t) (lda * s.m)), B((size_t) (ldb * s.n));
        fill(A);
        fill(B);
        std::vector<float> C((size_t) (ldc * s.n), NAN);
        for (int t = 0; t < s.nth; ++t) hearth_q8_0::gemm(s.m, s.n, s.k, A.data(), lda, B.data(), ldb, C.data(), ldc, t, (int) s.nth);
        for (int64_t j = 0; j < s.n; ++j) {
            for (int64_t i = 0; i < s.m; ++i) {
                double ref = 0, magnitude = 0;
                for (int64_t l = 0; l < s.k; ++l) {
                    const block_q8_0 &a = A[(size_t) (lda * i + l)], &b = B[(size_t) (ldb * j + l)];
                    int32_t dot = 0;
                    for (int q = 0; q < 32; ++q) dot += (int32_t) a.qs[q] * (int32_t) b.qs[q];
                    const double term = (double) half(a.d) * (double) half(b.d) * dot;
                    ref += term;
                    magnitude += std::fabs(term);
                }
                const float got = C[(size_t) (ldc * j + i)];
                // Float32 products and sums in another order: within a few ulps of the terms' magnitude.
                if (!(std::fabs(got - ref) <= 1e-5 * magnitude + 1e-30)) {
                    std::printf("mismatch: m %lld n %lld k %lld threads %lld at row %lld column %lld: %.9g, reference %.9g\n",
                                (long long) s.m, (long long) s.n, (long long) s.k, (long long) s.nth, (long long) i,
                                (long long) j, got, ref);
                    return 1;
                }
                ++checked;
            }
        }
        // Rows between ldc's padding are not the kernel's: they must be untouched.
        for (int64_t j = 0; j < s.n; ++j)
            for (int64_t i = s.m; i < ldc; ++i)
                if (!std::isnan(C[(size_t) (ldc * j + i)])) {
                    std::printf("wrote outside its rows: m %lld column %lld row %lld\n", (long long) s.m, (long long) j, (long long) i);
                    return 1;
                }
    }
    std::printf("ok: %d outputs match\n", checked);
    return 0;
}
#endif
