#!/usr/bin/env bash
# `npm run build:cuda [-- ARCH] [--bench-tools]`: ggml's CUDA backend built for this machine's GPU from the
# llama.cpp source node-llama-cpp bundles (node_modules/node-llama-cpp/llama/gitRelease.bundle: the commit of
# the prebuilt libraries Hearth's native loop links), with this machine's nvcc, as a dynamically loaded backend
# (GGML_BACKEND_DL): native/build/cuda/libggml-cuda.so, which `--gpu-layers auto` finds and loads next to the
# prebuilt CPU libraries (its NEEDED libggml-base.so is the prebuilt one already in the process).
#
# Why not node-llama-cpp's prebuilt libggml-cuda.so: 3.22.1's holds machine code for sm_86, sm_89, sm_120a and
# sm_121a only; other GPUs (H100 = sm_90, A100 = sm_80) run its PTX, which needs an R590+ driver. On R580 the
# first decode aborts ("the provided PTX was compiled with an unsupported toolchain"); Hearth's GPU probe
# catches that and the build here is the fix.
#
#   ARCH           compute capability without the dot (default: the first GPU's, from nvidia-smi; 90 for H100/H200)
#   --bench-tools  also llama-server and llama-batched-bench of the same build (native/build/cuda/bin/), the
#                  baselines of npm run bench:gpu
#   --link-stubs   for a machine without cuBLAS or a GPU driver (building here for a GPU machine, bench/gpu-kit.sh):
#                  compiles against native/cuda-link-stubs/cublas_v2.h and links (--no-as-needed) to empty libraries
#                  that carry only the SONAMEs (libcublas.so.N, libcublasLt.so.N, libcuda.so.1): NEEDED entries the
#                  real libraries satisfy where it runs
# Environment: HEARTH_CUDA_BUILD_DIR (default native/build/cuda/build), HEARTH_CUDA_CMAKE_ARGS (extra -D options,
# space separated), HEARTH_CUDA_JOBS (default: all cores).
# Needs nvcc (CUDA 12.4+), cmake, ninja or make, git, cuBLAS, and Node with this repository's node_modules (it
# applies Hearth's edits). One architecture takes ~4.5 minutes on 16 cores, ~40 minutes on 2.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=""
TARGETS=(ggml-cuda)
LINK_STUBS=""
for a in "$@"; do
  case "$a" in
    --bench-tools) TARGETS+=(llama-server llama-batched-bench) ;;
    --link-stubs) LINK_STUBS=1 ;;
    [0-9]*) ARCH="$a" ;;
    *) echo "usage: npm run build:cuda -- [ARCH] [--bench-tools] [--link-stubs]" >&2; exit 2 ;;
  esac
done
if [ -z "$ARCH" ]; then
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.[:space:]' || true)
  [ -n "$ARCH" ] || { echo "build:cuda: no GPU found by nvidia-smi; name the architecture, e.g. npm run build:cuda -- 90" >&2; exit 2; }
fi
command -v nvcc >/dev/null || { echo "build:cuda: nvcc is not on PATH (e.g. export PATH=/usr/local/cuda/bin:\$PATH)" >&2; exit 2; }
BUNDLE=$ROOT/node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$BUNDLE" ] || { echo "build:cuda: $BUNDLE is missing (npm ci first)" >&2; exit 2; }
OUT=$ROOT/native/build/cuda
WORK=${HEARTH_CUDA_BUILD_DIR:-$OUT/build}
SRC=$WORK/src
COMMIT=$(git bundle list-heads "$BUNDLE" | awk 'NR==1{print $1}')
if [ "$(git -C "$SRC" rev-parse HEAD 2>/dev/null || true)" != "$COMMIT" ]; then
  rm -rf "$SRC" && mkdir -p "$WORK" && git clone -q "$BUNDLE" "$SRC" && git -C "$SRC" checkout -q "$COMMIT"
fi
# Hearth's edits of ggml-cuda (native/cuda-patches/: each batch shape keeps its own warm CUDA graph), applied to a
# pristine tree; a tree that already has these very edits is left alone, so a rebuild stays incremental.
PATCHES_CLI=(node --import tsx "$ROOT/native/cuda-patches/hearth-cuda-patches.ts")
STAMP=$("${PATCHES_CLI[@]}" stamp)
if [ "$(cat "$SRC/.hearth-cuda-patches" 2>/dev/null || true)" != "$STAMP" ]; then
  git -C "$SRC" checkout -q -f "$COMMIT" && git -C "$SRC" clean -qfd -- ggml
  "${PATCHES_CLI[@]}" apply "$SRC/ggml"
  echo "$STAMP" >"$SRC/.hearth-cuda-patches"
fi
GEN=(-G Ninja); command -v ninja >/dev/null || GEN=()
STUB_ARGS=()
if [ -n "$LINK_STUBS" ]; then
  STUBS=$WORK/link-stubs
  CUDA_MAJOR=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  mkdir -p "$STUBS" && echo 'void hearth_link_stub(void) {}' >"$STUBS/stub.c"
  for so in "libcublas.so.$CUDA_MAJOR" "libcublasLt.so.$CUDA_MAJOR" libcuda.so.1; do
    cc -shared -fPIC -o "$STUBS/${so%%.so.*}.so" -Wl,-soname,"$so" "$STUBS/stub.c"
  done
  STUB_ARGS=(-DCUDA_cublas_LIBRARY="$STUBS/libcublas.so" -DCUDA_cublasLt_LIBRARY="$STUBS/libcublasLt.so"
    -DCUDA_cuda_driver_LIBRARY="$STUBS/libcuda.so" -DCMAKE_CUDA_FLAGS="-I$ROOT/native/cuda-link-stubs"
    -DCMAKE_CXX_FLAGS="-I$ROOT/native/cuda-link-stubs" -DCMAKE_MODULE_LINKER_FLAGS=-Wl,--no-as-needed)
fi
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$WORK/b" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF \
  -DGGML_OPENMP=OFF -DCMAKE_CUDA_ARCHITECTURES="${ARCH}-real" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  `# NEEDED libggml-base.so (not .so.0) and no rpath: in Hearth's process it binds to node-llama-cpp's prebuilt base` \
  -DCMAKE_PLATFORM_NO_VERSIONED_SONAME=ON -DCMAKE_SKIP_RPATH=ON -DGGML_CUDA_NCCL=OFF "${STUB_ARGS[@]}" \
  ${HEARTH_CUDA_CMAKE_ARGS:-} >"$WORK/cmake.log"
started=$(date +%s)
cmake --build "$WORK/b" --target "${TARGETS[@]}" -j "${HEARTH_CUDA_JOBS:-$(nproc)}" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log" >&2; exit 1; }
BIN=$WORK/b/bin
mkdir -p "$OUT"
cp "$BIN/libggml-cuda.so" "$OUT/libggml-cuda.so"
if [ "${#TARGETS[@]}" -gt 1 ]; then
  # The tools with the libraries of this build beside them, stripped; they load libggml-cuda.so from their own
  # folder (a link to the one above) and need that folder on LD_LIBRARY_PATH (no rpath).
  rm -rf "$OUT/bin" && mkdir -p "$OUT/bin"
  (cd "$BIN" && cp -a llama-server llama-batched-bench lib*.so* "$OUT/bin/") && rm -f "$OUT/bin/libggml-cuda.so"
  strip --strip-unneeded "$OUT"/bin/llama-server "$OUT"/bin/llama-batched-bench "$OUT"/bin/lib*.so* 2>/dev/null || true
  ln -sf ../libggml-cuda.so "$OUT/bin/libggml-cuda.so"
fi
printf '{"commit":"%s","arch":"%s","nvcc":"%s","hearthCudaPatches":"%s","seconds":%d}\n' "$COMMIT" "$ARCH" "$(nvcc --version | tail -1)" "$STAMP" "$(( $(date +%s) - started ))" >"$OUT/build.json"
echo "build:cuda: $OUT/libggml-cuda.so for sm_$ARCH ($(( $(date +%s) - started )) s)${TARGETS[1]:+; bench tools in $OUT/bin}"
