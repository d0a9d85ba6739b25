// Hearth's Q8_0 x Q8_0 matrix multiply for x86 CPUs with AVX-512 VNNI, compiled into Hearth's native build
// of ggml's CPU backend (native/cpu-kernels-build.ts puts this file beside llamafile's sgemm.cpp and calls
// it first from llamafile_sgemm). Why: on Zen 5 a decode step of a Q8_0 model spends 66-77 % of its time in
// llamafile's tinyBLAS_Q0_AVX (8 sequences) or ggml_vec_dot_q8_0_q8_0 (1 sequence). Both work 32 bytes at a
// time and pay a sign trick and a scale shuffle per block; this kernel works two blocks per 512-bit register:
//
//   dot(w, a) = dpbusd(a + 128, w) - 128 * sum(w)          (a: activations, made unsigned; w: weights)
//
// The correction is an accumulator's starting value (one dpbusd per weight row and block pair, shared by the
// tile's columns), so a block pair costs one dpbusd, one int->float conversion, one scale product and one FMA
// per (row, column). The integer dot products are exact, as in ggml's kernels; only the float summation
// order of the per-block products differs (as between any two of ggml's CPU kernels).
//
// Contract (llamafile_sgemm's): A is m rows of k Q8_0 blocks, row i at A + lda * i; B is n columns of k
// Q8_0 blocks, column j at B + ldb * j; C[ldc * j + i] = sum over blocks of d_A * d_B * dot(qs_A, qs_B).
// Threads ith of nth each write a disjoint range of rows, all columns. Returns false (nothing written) when
// this CPU build lacks AVX-512 VNNI, so the caller falls back to ggml's own kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#include <immintrin.h>
#define HEARTH_Q8_0_GEMM 1

namespace hearth_q8_0 {

// One column of B prepared once per call: per block pair, the 64 quants made unsigned (a + 128) and the 16
// lanes' scales (lanes 0-7 block 2p, lanes 8-15 block 2p + 1; an odd k's last pair has zeros on top).
struct alignas(64) PreparedPair {
    uint8_t quants[64];
    float scales[16];
};

template <typename Block>
inline __m512 scalePair(const Block *first, bool both) {
    const __m128i lo = _mm_set1_epi16((short) first[0].d);
    const __m128i hi = both ? _mm_set1_epi16((short) first[1].d) : _mm_setzero_si128();
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

template <typename Block>
inline __m512i quantPair(const Block *first, bool both) {
    const __m256i lo = _mm256_loadu_si256((const __m256i *) first[0].qs);
    if (!both) return _mm512_zextsi256_si512(lo);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i *) first[1].qs), 1);
}

template <typename Block>
inline void prepareColumn(const Block *column, int64_t k, PreparedPair *out) {
    const __m512i bias = _mm512_set1_epi8((char) 0x80);
    for (int64_t p = 0; p * 2 < k; ++p) {
        const bool both = p * 2 + 1 < k;
        _mm512_store_si512(out[p].quants, _mm512_xor_si512(quantPair(column + p * 2, both), bias));
        _mm512_store_ps(out[p].scales, scalePair(column + p * 2, both));
    }
}

// RM rows x RN columns of C, rows ii.., prepared columns cols[0..RN).
template <int RM, int RN, typename Block>
inline void tile(int64_t k, const Block *A, int64_t lda, const PreparedPair *const *cols, float *C, int64_t ldc,
                 int64_t ii) {
    const __m512i unsigned128 = _mm512_set1_epi8((char) 0x80);
    __m512 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
    const int64_t pairs = (k + 1) / 2;
    for (int64_t p = 0; p < pairs; ++p) {
        const bool both = p * 2 + 1 < k;
        __m512i w[RM], start[RM];
        __m512 sw[RM];
        for (int i = 0; i < RM; ++i) {
            const Block *row = A + lda * (ii + i) + p * 2;
            w[i] = quantPair(row, both);
            // -128 * sum(w) per 4-byte group: the accumulator's start cancels the +128 given to the activations.
            start[i] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), unsigned128, w[i]));
            sw[i] = scalePair(row, both);
        }
        for (int j = 0; j < RN; ++j) {
            const __m512i a = _mm512_load_si512(cols[j][p].quants);
            const __m512 sa = _mm512_load_ps(cols[j][p].scales);
            for (int i = 0; i < RM; ++i) {
                const __m512i dot = _mm512_dpbusd_epi32(start[i], a, w[i]);
                acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sw[i], sa), acc[i][j]);
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i) C[ldc * j + ii + i] = _mm512_reduce_add_ps(acc[i][j]);
}

// The last columns of rows ii..ii+RM, fewer than a whole column tile: a tile of exactly `rest` columns.
template <int RM, int RN, typename Block>
inline void columnRest(int64_t rest, int64_t k, const Block *A, int64_t lda, const PreparedPair *const *cols,
                       float *C, int64_t ldc, int64_t ii) {
    if constexpr (RN > 0) {
        if (rest == RN) return tile<RM, RN>(k, A, lda, cols, C, ldc, ii);
        columnRest<RM, RN - 1>(rest, k, A, lda, cols, C, ldc, ii);
    }
}

// Every column tile of rows ii..ii+RM: the rows' blocks stay in L1 while the columns pass over them. A single row
// takes 8 columns a tile (its weights' preparation shared by more columns), 4 rows 4 (16 accumulators).
template <int RM, typename Block>
inline void rowTile(int64_t k, const Block *A, int64_t lda, const PreparedPair *const *cols, int64_t cn, float *C,
                    int64_t ldc, int64_t ii) {
    constexpr int RN = RM == 1 ? 8 : 4;
    int64_t j = 0;
    for (; j + RN <= cn; j += RN) tile<RM, RN>(k, A, lda, cols + j, C + ldc * j, ldc, ii);
    if (j < cn) columnRest<RM, RN - 1>(cn - j, k, A, lda, cols + j, C + ldc * j, ldc, ii);
}

// Columns prepared per pass: enough to fill the tiles, few enough that the prepared copy stays in L1/L2.
constexpr int64_t kColumnsPerPass = 16;

// Up to this many columns (decode: one per sequence) the weights go one row at a time, in memory order; more
// (a prompt's tokens) go in 4-row tiles, which load each prepared column once for four rows. Measured on Zen 5
// (llama-batched-bench, 56M and 0.5B Q8_0 llamas, 2 threads): at 1-12 columns rows one at a time decode 1.1-1.5x
// faster than 4-row tiles; at 16 the two are even in decode and the tiles prefill up to 1.3x faster.
constexpr int64_t kStreamingColumns = 12;

template <typename Block>
inline bool gemm(int64_t m, int64_t n, int64_t k, const Block *A, int64_t lda, const Block *B, int64_t ldb,
                 float *C, int64_t ldc, int ith, int nth) {
    if (m <= 0 || n <= 0 || k <= 0) return true;
    // Rows split in whole 4-row tiles, as evenly as the tiles allow.
    const int64_t tiles = (m + 3) / 4;
    const int64_t from = std::min<int64_t>(m, tiles * ith / nth * 4);
    const int64_t to = std::min<int64_t>(m, tiles * (ith + 1) / nth * 4);
    if (from >= to) return true;

    const int64_t pairs = (k + 1) / 2;
    thread_local std::vector<PreparedPair> prepared;
    const int64_t passColumns = std::min(n, kColumnsPerPass);
    if ((int64_t) prepared.size() < passColumns * pairs) prepared.resize((size_t) (passColumns * pairs));

    for (int64_t j0 = 0; j0 < n; j0 += kColumnsPerPass) {
        const int64_t cn = std::min(kColumnsPerPass, n - j0);
        const PreparedPair *cols[kColumnsPerPass];
        for (int64_t j = 0; j < cn; ++j) {
            PreparedPair *out = prepared.data() + j * pairs;
            prepareColumn(B + ldb * (j0 + j), k, out);
            cols[j] = out;
        }
        float *c = C + ldc * j0;
        int64_t i = from;
        if (cn <= kStreamingColumns) {
            for (; i < to; ++i) rowTile<1>(k, A, lda, cols, cn, c, ldc, i);
            continue;
        }
        for (; i + 4 <= to; i += 4) rowTile<4>(k, A, lda, cols, cn, c, ldc, i);
        switch (to - i) {
            case 3: rowTile<3>(k, A, lda, cols, cn, c, ldc, i); break;
            case 2: rowTile<2>(k, A, lda, cols, cn, c, ldc, i); break;
            case 1: rowTile<1>(k, A, lda, cols, cn, c, ldc, i); break;
            default: break;
        }
    }
    return true;
}

}  // namespace hearth_q8_0

#endif
