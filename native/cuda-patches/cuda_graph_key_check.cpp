// Checks cuda_graph_key.h on the host (no GPU): graphs built at the same addresses, as llama.cpp rebuilds them,
// get one key per shape and the same key for the same shape; with HEARTH_CUDA_GRAPH_KEY=first-node every graph
// gets ggml's key (its first node); the cache stays within its bound and evicts the least recently used entry.
// Built against ggml's headers of the pinned llama.cpp (ggml.h, ggml-impl.h); prints "ok: ..." or "FAIL: ...".
//   g++ -std=c++17 -I<ggml>/include -I<ggml>/src cuda_graph_key_check.cpp && ./a.out [first-node]
#include "ggml-impl.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <memory>
#include <vector>

#include "cuda_graph_key.h"

// ggml-impl.h's inline helpers call ggml_abort (libggml-base); the check links nothing of ggml.
void ggml_abort(const char * file, int line, const char * fmt, ...) {
    std::printf("FAIL: ggml_abort at %s:%d (%s)\n", file, line, fmt);
    std::exit(1);
}

static int failures = 0;
#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond)) {                                                 \
            std::printf("FAIL: line %d: %s\n", __LINE__, #cond);       \
            failures++;                                                \
        }                                                              \
    } while (0)

// The tensors of one llama.cpp graph arena: a rebuilt graph reuses the same objects, so its first node has the
// same address whatever the shape.
struct Arena {
    ggml_tensor first{};
    ggml_tensor middle[8]{};
    ggml_tensor last{};
    ggml_tensor * nodes[10]{};
    ggml_cgraph graph{};

    // A step of `tokens` rows (the input embeddings) and `outputs` output rows (the logits), `n_nodes` nodes.
    ggml_cgraph * build(int64_t tokens, int64_t outputs, int n_nodes = 10) {
        first.ne[0] = 896, first.ne[1] = tokens, first.ne[2] = first.ne[3] = 1;
        last.ne[0] = 32000, last.ne[1] = outputs, last.ne[2] = last.ne[3] = 1;
        nodes[0] = &first;
        for (int i = 1; i < n_nodes - 1; i++) nodes[i] = &middle[i - 1];
        nodes[n_nodes - 1] = &last;
        graph.nodes = nodes;
        graph.n_nodes = n_nodes;
        return &graph;
    }
};

struct Entry {
    int64_t last_used_time;
};

int main(int argc, char ** argv) {
    const bool upstream = argc > 1 && std::strcmp(argv[1], "first-node") == 0;
    CHECK(hearth_cuda_graph_key_is_upstream() == upstream);

    Arena a;
    const void * decode64 = hearth_cuda_graph_key(a.build(64, 64));
    const std::vector<const void *> others = {
        hearth_cuda_graph_key(a.build(63, 63)),      // a slot left
        hearth_cuda_graph_key(a.build(79, 64)),      // a 16-token prompt chunk joined 63 generating rows
        hearth_cuda_graph_key(a.build(64, 63)),      // same rows, one output fewer
        hearth_cuda_graph_key(a.build(64, 64, 9)),   // another graph of the same shapes
        hearth_cuda_graph_key(a.build(1, 1)),
    };
    CHECK(hearth_cuda_graph_key(a.build(64, 64)) == decode64);  // rebuilt: same shape, same key
    if (upstream) {
        CHECK(decode64 == &a.first);
        for (const void * k : others) CHECK(k == &a.first);
    } else {
        for (size_t i = 0; i < others.size(); i++) {
            CHECK(others[i] != decode64);
            for (size_t j = 0; j < i; j++) CHECK(others[i] != others[j]);
        }
        Arena b;  // another split (another first node) of the same shape
        CHECK(hearth_cuda_graph_key(b.build(64, 64)) != decode64);
    }

    // The cache: ggml-cuda's map type, entries inserted as its cuda_graph() does after the edit.
    std::unordered_map<const void *, std::unique_ptr<Entry>> graphs;
    int64_t now = 0;
    auto use = [&](uintptr_t key) {
        auto it = graphs.find((const void *) key);
        if (it == graphs.end()) {
            hearth_cuda_graphs_make_room(graphs, HEARTH_CUDA_GRAPHS_MAX);
            it = graphs.emplace((const void *) key, std::make_unique<Entry>()).first;
        }
        it->second->last_used_time = ++now;
        CHECK(graphs.size() <= HEARTH_CUDA_GRAPHS_MAX);
    };
    for (uintptr_t k = 1; k <= HEARTH_CUDA_GRAPHS_MAX; k++) use(k);
    CHECK(graphs.size() == HEARTH_CUDA_GRAPHS_MAX);
    use(1);       // the oldest is used again...
    use(1000);    // ...so a new entry evicts the next oldest, 2
    CHECK(graphs.count((const void *) 1) == 1);
    CHECK(graphs.count((const void *) 2) == 0);
    CHECK(graphs.count((const void *) 1000) == 1);
    for (uintptr_t k = 2000; k < 2000 + 3 * HEARTH_CUDA_GRAPHS_MAX; k++) use(k);
    CHECK(graphs.size() == HEARTH_CUDA_GRAPHS_MAX);
    CHECK(graphs.count((const void *) (2000 + 3 * HEARTH_CUDA_GRAPHS_MAX - 1)) == 1);
    CHECK(graphs.count((const void *) 1) == 0);

    if (failures > 0) return 1;
    std::printf("ok: %s key, cache bound %d\n", upstream ? "first-node" : "shape", HEARTH_CUDA_GRAPHS_MAX);
    return 0;
}
