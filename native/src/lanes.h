// 16-float vectors for the scans over a row of logits (first_max.cpp, top_k.cpp): GCC vector extensions, compiled once
// per CPU level by HEARTH_CPU_CLONES (AVX-512, AVX2, and SSE2 for any x86-64; one portable build elsewhere).
#pragma once

#include <cstdint>
#include <cstring>

// The 64-byte vector type is passed in registers only where AVX-512 is on: GCC notes that ABI difference for every
// function taking or returning one, here only the inlined `loadLanes`.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace hearth {

constexpr int32_t kLanes = 16;
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t IndexLanes __attribute__((vector_size(kLanes * sizeof(int32_t))));

/** values[0..16) as a vector; inlined into each CPU clone, so the copy is that clone's vector load. */
__attribute__((always_inline)) inline Lanes loadLanes(const float * values) {
    Lanes v;
    std::memcpy(&v, values, sizeof v);
    return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HEARTH_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HEARTH_CPU_CLONES
#endif

}  // namespace hearth
