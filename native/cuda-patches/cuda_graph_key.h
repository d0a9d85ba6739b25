#pragma once
// Hearth's edit of ggml's CUDA backend (llama.cpp de3ff81, ggml-cuda.cu / common.cuh): which cached CUDA graph a
// compute graph of llama.cpp's uses.
//
// Why. ggml-cuda replays a step as one CUDA graph (one launch) instead of launching its hundreds of kernels one by
// one, once the same graph came twice in a row with the same node properties ("warm-up"). It keeps its CUDA graphs in a
// map keyed by the address of the graph's first node. Every graph llama.cpp builds in a context starts at the same
// address, so every shape shares one entry: a step of another shape (a slot that joins or leaves a batch, a prompt
// chunk) overwrites the entry and resets its warm-up: the next step of the usual shape launches kernel by kernel,
// the one after captures the graph again. A server's batch changes shape every few steps; llama-batched-bench's never does.
//
// What. hearth_cuda_graph_key() adds the graph's size and its first and last nodes' shapes (token rows, output
// rows) to the key, so each shape keeps its own warm CUDA graph. The key only picks the cache entry: ggml-cuda
// still compares every node's properties with the entry's before it replays a graph, and captures afresh when
// they differ, so a collision costs a warm-up, never a wrong graph. hearth_cuda_graphs_make_room() bounds the
// entries (each holds its nodes' properties, ~1 KB a node, and maybe a graph executable) by evicting the least
// recently used, on top of ggml-cuda's own eviction of entries unused for 10 s.
//
// HEARTH_CUDA_GRAPH_KEY=first-node restores ggml's key (the A/B of bench:gpu's hearth-first-node target).

#include <cstdint>
#include <cstdlib>
#include <cstring>

// Entries a CUDA context keeps at most (the decode shapes of a busy server fit many times over).
#define HEARTH_CUDA_GRAPHS_MAX 32

static inline bool hearth_cuda_graph_key_is_upstream() {
    static const bool upstream = [] {
        const char * v = std::getenv("HEARTH_CUDA_GRAPH_KEY");
        return v != nullptr && std::strcmp(v, "first-node") == 0;
    }();
    return upstream;
}

// The cache key of `cgraph` (n_nodes > 0): its first node's address, as ggml's, mixed with its node count and the
// shapes of its first and last nodes. An opaque value, never dereferenced.
static inline const void * hearth_cuda_graph_key(const ggml_cgraph * cgraph) {
    const ggml_tensor * first = cgraph->nodes[0];
    if (hearth_cuda_graph_key_is_upstream()) {
        return first;
    }
    const ggml_tensor * last = cgraph->nodes[cgraph->n_nodes - 1];
    uint64_t h = (uint64_t) (uintptr_t) first;
    const auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix((uint64_t) cgraph->n_nodes);
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        mix((uint64_t) first->ne[d]);
        mix((uint64_t) last->ne[d]);
    }
    return (const void *) (uintptr_t) h;
}

// Called before a new entry goes into `graphs` (a map of key -> unique_ptr to an entry with `last_used_time`):
// evicts the least recently used entries until one more fits within `max`.
template <typename Graphs> static void hearth_cuda_graphs_make_room(Graphs & graphs, size_t max) {
    while (!graphs.empty() && graphs.size() >= max) {
        auto oldest = graphs.begin();
        for (auto it = graphs.begin(); it != graphs.end(); ++it) {
            if (it->second->last_used_time < oldest->second->last_used_time) {
                oldest = it;
            }
        }
        graphs.erase(oldest);
    }
}
