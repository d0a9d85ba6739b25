#!/bin/bash
# Rebuilds ggml's CUDA backend (libggml-cuda.so) for this machine's GPU from the llama.cpp source that
# node-llama-cpp ships (node_modules/node-llama-cpp/llama/gitRelease.bundle, the commit of its prebuilt
# binaries), with this machine's nvcc, and puts it in place of @node-llama-cpp/linux-x64-cuda's copy
# (the original is kept as libggml-cuda.so.prebuilt).
#
# Why: node-llama-cpp 3.22.1's linux-x64-cuda prebuilt carries machine code (SASS) for sm_86, sm_89,
# sm_120a and sm_121a only; other GPUs (H100 = sm_90, A100 = sm_80, T4 = sm_75) run its PTX, which is
# ISA 9.1 (CUDA 13.1) and needs a driver that can compile it (R590+). On an R580 driver (CUDA 13.0) the
# first decode aborts with "CUDA error: the provided PTX was compiled with an unsupported toolchain".
#
#   bash bench/build-ggml-cuda.sh [cuda-arch, default: the first GPU's compute capability, e.g. 90]
#
# Needs nvcc, cmake, ninja and git; about 4.5 minutes on 16 cores for one architecture. Run it again
# after `npm install` (which puts the prebuilt back). Not used by the tests.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}
BUNDLE=$ROOT/node_modules/node-llama-cpp/llama/gitRelease.bundle
DEST=$ROOT/node_modules/@node-llama-cpp/linux-x64-cuda/bins/linux-x64-cuda/libggml-cuda.so
WORK=${GGML_CUDA_BUILD_DIR:-/tmp/hearth-ggml-cuda}
rm -rf "$WORK" && git clone -q "$BUNDLE" "$WORK"
cmake -S "$WORK" -B "$WORK/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF >"$WORK/cmake.log"
ninja -C "$WORK/b" ggml-cuda >"$WORK/ninja.log"
[ -e "$DEST.prebuilt" ] || cp "$DEST" "$DEST.prebuilt"
cp "$(find "$WORK/b" -name libggml-cuda.so | head -1)" "$DEST"
echo "libggml-cuda.so for sm_$ARCH installed at $DEST (prebuilt kept as $DEST.prebuilt)"
