// Probe, not shipped in any build: how often a GPU step would replay a CUDA graph, measured on a CPU machine.
//
// ggml-cuda (llama.cpp de3ff81, ggml_backend_cuda_graph_compute) replays a compute graph as one CUDA graph only
// once its cache entry is warm: the entry saw the same node properties twice in a row, and nothing else since.
// That decision depends only on the sequence of graphs llama.cpp hands the backend, which is the same on the CPU
// backend as on CUDA (same batches, same ubatch splits, same graph reuse). Included into ggml-cpu.cpp and called
// first in ggml_backend_cpu_graph_compute, this replays the decision for both keys (ggml's first-node key and
// Hearth's shape key, native/cuda-patches/cuda_graph_key.h, with its cache bound) and prints, every 2 s, the share
// of graph computes that would have been CUDA-graph replays under each:
//   hearth-cuda-graph-probe computes N first-node A shape B entries E | all T: A' B'
//
// Steps (docs/gpu.md "CUDA graphs and the batch's shape"): extract ggml from node-llama-cpp's gitRelease.bundle,
// apply Hearth's CPU kernels (native/cpu-kernels/hearth-kernels.ts), copy this file and cuda_graph_key.h into
// src/ggml-cpu/, add `#include "cuda_graph_emulation.h"` before ggml_backend_cpu_graph_compute and
// `hearth_cuda_graph_probe::observe(cgraph);` as its first statement, build ggml-cpu with the flags of
// native/build/cpu-kernels/build.json, put the library in place of libggml-cpu-native.so (keep the original), and
// serve with --cpu-kernels native and HEARTH_NATIVE_PROFILE=1.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cuda_graph_key.h"

namespace hearth_cuda_graph_probe {

// ggml_cuda_graph::node_properties.
struct NodeProperties {
    ggml_tensor node;
    void * src_data[GGML_MAX_SRC];
    int64_t src_ne[GGML_MAX_SRC][GGML_MAX_DIMS];
    size_t src_nb[GGML_MAX_SRC][GGML_MAX_DIMS];
};

// The parts of ggml_cuda_graph the decision reads.
struct Entry {
    uint64_t uid = 0;
    bool warm = false;
    std::vector<NodeProperties> props;
    int64_t last_used_time = 0;
};

struct Cache {
    std::unordered_map<const void *, std::unique_ptr<Entry>> entries;
    bool bounded;
    long replays = 0;

    // ggml_backend_cuda_context::cuda_graph (with Hearth's bound when `bounded`).
    Entry & entry(const void * key) {
        auto it = entries.find(key);
        if (it == entries.end()) {
            if (bounded) hearth_cuda_graphs_make_room(entries, HEARTH_CUDA_GRAPHS_MAX);
            it = entries.emplace(key, std::make_unique<Entry>()).first;
        }
        it->second->last_used_time = ggml_time_us();
        return *it->second;
    }
};

// ggml_cuda_graph_update_required.
static bool properties_changed(Entry & e, const ggml_cgraph * cgraph) {
    if (cgraph->uid != 0 && cgraph->uid == e.uid) return false;
    e.uid = cgraph->uid;
    bool changed = false;
    if ((int) e.props.size() != cgraph->n_nodes) {
        changed = true;
        e.props.resize(cgraph->n_nodes);
    }
    for (int i = 0; i < cgraph->n_nodes; i++) {
        NodeProperties p;
        std::memset(&p, 0, sizeof p);
        std::memcpy(&p.node, cgraph->nodes[i], sizeof(ggml_tensor));
        for (int j = 0; j < GGML_MAX_SRC; ++j) {
            const ggml_tensor * src = cgraph->nodes[i]->src[j];
            if (src) {
                p.src_data[j] = src->data;
                std::memcpy(p.src_ne[j], src->ne, sizeof p.src_ne[j]);
                std::memcpy(p.src_nb[j], src->nb, sizeof p.src_nb[j]);
            }
        }
        if (changed || std::memcmp(&e.props[i], &p, sizeof p) != 0) {
            e.props[i] = p;
            changed = true;
        }
    }
    return changed;
}

// ggml_backend_cuda_graph_compute's warm-up: true when this compute would launch a CUDA graph.
static bool replays(Entry & e, const ggml_cgraph * cgraph) {
    const bool changed = properties_changed(e, cgraph);
    if (!e.warm) {
        e.warm = !changed;
        return e.warm;
    }
    if (changed) e.warm = false;
    return !changed;
}

static Cache first_node{{}, false};
static Cache shape{{}, true};
static long computes = 0;
static long printed_computes = 0, printed_first_node = 0, printed_shape = 0;
static int64_t printed_at = 0;

static void observe(const ggml_cgraph * cgraph) {
    if (cgraph->n_nodes == 0) return;
    computes++;
    if (replays(first_node.entry(cgraph->nodes[0]), cgraph)) first_node.replays++;
    if (replays(shape.entry(hearth_cuda_graph_key(cgraph)), cgraph)) shape.replays++;
    const int64_t now = ggml_time_us();
    if (now - printed_at < 2000000) return;
    const long n = computes - printed_computes;
    if (n > 0) {
        std::fprintf(stderr,
                     "hearth-cuda-graph-probe computes %ld first-node %.3f shape %.3f entries %zu | all %ld: %.3f %.3f\n",
                     n, (double) (first_node.replays - printed_first_node) / n,
                     (double) (shape.replays - printed_shape) / n, shape.entries.size(), computes,
                     (double) first_node.replays / computes, (double) shape.replays / computes);
    }
    printed_at = now;
    printed_computes = computes;
    printed_first_node = first_node.replays;
    printed_shape = shape.replays;
}

}  // namespace hearth_cuda_graph_probe
