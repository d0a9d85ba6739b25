import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applySourcePatches, sourcePatchesStamp, type SourcePatch } from '../ggml-source-patches.ts';

/**
 * Hearth's edits of ggml's CUDA backend, applied by `npm run build:cuda` (native/build-cuda.sh) to a pristine
 * checkout of node-llama-cpp's bundled llama.cpp before it configures: cuda_graph_key.h says why and what. The
 * build's llama-server and llama-batched-bench (bench:gpu's baselines) link the same library.
 *
 * Run as a program (build-cuda.sh): `... hearth-cuda-patches.ts stamp` prints the edits' identity, `... apply
 * <llama.cpp>/ggml` applies them.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const CUDA_DIR = join('src', 'ggml-cuda');

const PATCHES: SourcePatch[] = [
  {
    file: join(CUDA_DIR, 'common.cuh'),
    headers: ['cuda_graph_key.h'],
    edits: [
      { anchor: '#include "ggml-common.h"\n', after: '#include "cuda_graph_key.h"\n' },
      {
        anchor: '        auto it = cuda_graphs.find(first_node_ptr);\n        if (it == cuda_graphs.end()) {\n',
        after: '            hearth_cuda_graphs_make_room(cuda_graphs, HEARTH_CUDA_GRAPHS_MAX);\n',
      },
    ],
  },
  {
    file: join(CUDA_DIR, 'ggml-cuda.cu'),
    headers: [],
    edits: [
      {
        anchor:
          'static const void * ggml_cuda_graph_get_key(ggml_cgraph * cgraph) {\n    return cgraph->nodes[0];\n}\n',
        replace:
          'static const void * ggml_cuda_graph_get_key(ggml_cgraph * cgraph) {\n    return hearth_cuda_graph_key(cgraph);\n}\n',
      },
    ],
  },
];

/** Identity of the edits: build-cuda.sh records it in build.json. */
export function hearthCudaPatchesStamp(): string {
  return sourcePatchesStamp(HERE, PATCHES);
}

/** Puts the edits into ggml's source tree `ggmlDir`; throws, writing nothing, when an anchor is not there exactly once. */
export function applyHearthCudaPatches(ggmlDir: string): void {
  applySourcePatches(ggmlDir, HERE, PATCHES);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, dir] = process.argv.slice(2);
  if (command === 'stamp') console.log(hearthCudaPatchesStamp());
  else if (command === 'apply' && dir !== undefined) applyHearthCudaPatches(dir);
  else {
    console.error('usage: node --import tsx native/cuda-patches/hearth-cuda-patches.ts stamp | apply <llama.cpp>/ggml');
    process.exit(2);
  }
}
