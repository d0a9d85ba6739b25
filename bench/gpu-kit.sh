#!/usr/bin/env bash
# `npm run bench:gpu` on a GPU machine that has no Node, no npm registry and no network: everything the bench
# needs at run time, prepared on a machine that has them, in one folder that travels with the repository.
#
#   bash bench/gpu-kit.sh pack [DIR]                   here, after npm ci and npm run build:cuda -- ARCH --bench-tools
#                                                      (--link-stubs where this machine has no cuBLAS)
#   bash bench/gpu-kit.sh run [DIR] [bench:gpu options] there, at the root of a copy of the repository
#
# DIR (default .gpu-kit, git-ignored) holds node.xz (this machine's node binary) and runtime.tar.xz: the
# production node_modules without what a CUDA bench never loads (node-llama-cpp's GPU and other-platform
# prebuilts, its llama.cpp source bundle, uWebSockets.js builds for other Node versions, the web build tools),
# Hearth's native addon, native/build/cuda/ (libggml-cuda.so and the bench tools of the same build) and the
# tokenizer source of the synthetic bench models. `run` unpacks them in place, puts the machine's CUDA runtime
# (libcudart, libcublas) on LD_LIBRARY_PATH and runs bench/gpu.ts with the options given.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}; shift || true
DIR=${1:-$ROOT/.gpu-kit}
case "$DIR" in -*) DIR=$ROOT/.gpu-kit ;; *) shift || true ;; esac

pack() {
  cd "$ROOT"
  [ -f native/build/hearth_native.node ] || { echo "gpu-kit: native/build/hearth_native.node is missing (npm ci)" >&2; exit 2; }
  [ -f native/build/cuda/libggml-cuda.so ] || { echo "gpu-kit: run npm run build:cuda -- ARCH --bench-tools first" >&2; exit 2; }
  tools=native/build/cuda/bin
  [ -x $tools/llama-server ] && [ -x $tools/llama-batched-bench ] || { echo "gpu-kit: no bench tools in $tools: the kit runs Hearth only (bench:gpu --targets hearth)" >&2; tools=""; }
  tokenizer=${HEARTH_TOKENIZER_SOURCE:-$ROOT/../shared/models/llama-2-tiny-random.gguf}
  [ -f "$tokenizer" ] || { echo "gpu-kit: no tokenizer source GGUF at $tokenizer (set HEARTH_TOKENIZER_SOURCE)" >&2; exit 2; }
  mkdir -p "$DIR"
  abi=$(node -p process.versions.modules)
  list=$(mktemp)
  npm ls --omit=dev --all --parseable 2>/dev/null | sed "s|^$ROOT/||" | grep '^node_modules/' | sort -u \
    | grep -vE '^node_modules/(@node-llama-cpp/linux-(x64-(cuda|cuda-ext|vulkan)|arm64|armv7l)|typescript|@rolldown/.*|rolldown|lightningcss.*|vite)$' >"$list"
  xz -T0 -9 -c "$tokenizer" >"$DIR/tokenizer-source.gguf.xz"
  # lmdb's builds for other Node ABIs, N-API and musl (this Node's ABI build is the one it loads).
  other=()
  for f in node_modules/@lmdb/*/node.*.node; do
    case "$f" in *".abi$abi.glibc.node") ;; *) other+=(--exclude="$f") ;; esac
  done
  # node-llama-cpp's CPU libraries but haswell and x64 (on a GPU the CPU kernels hardly run; the kit must stay small).
  for v in alderlake cannonlake cascadelake cooperlake icelake ivybridge piledriver sandybridge sapphirerapids skylakex sse42 zen4; do
    other+=(--exclude="node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-$v.so")
  done
  tar -cf - "${other[@]}" --exclude='node_modules/@types' --exclude='*.d.ts' --exclude='*.d.mts' --exclude='*.d.cts' --exclude='*.md' --exclude='node_modules/node-llama-cpp/llama/gitRelease.bundle' --exclude='node_modules/node-llama-cpp/llama/llama.cpp' \
      --exclude='node_modules/uWebSockets.js/*.node' --exclude='node_modules/uws-legacy-node20/binaries' \
      --exclude='node_modules/uws-legacy-node20/dist/*.node' --exclude='*.map' \
      `# sources native modules were built from, and packages' test data and lock files: nothing loads them` \
      --exclude='*.c' --exclude='*.cc' --exclude='*.cpp' --exclude='*.h' --exclude='*.hpp' --exclude='yarn.lock' \
      --exclude='node_modules/bintrees/test' \
      -T "$list" native/build/hearth_native.node native/build/cuda/libggml-cuda.so $tools \
    | xz -T0 -9e >"$DIR/runtime.tar.xz"
  # uWS for this Node only: the btc-vision build (glibc 2.38+) and, for Node 20, the legacy one (src/http/uws.ts).
  uws=()
  for f in node_modules/uWebSockets.js/uws_linux_x64_"$abi".node node_modules/uws-legacy-node20/binaries/uws_linux_x64_"$abi".node; do
    [ -f "$f" ] && uws+=("$f")
  done
  [ "${#uws[@]}" -gt 0 ] || { echo "gpu-kit: no uWebSockets.js binary for Node ABI $abi" >&2; exit 2; }
  tar -cf - "${uws[@]}" | xz -T0 -6 >"$DIR/uws.tar.xz"
  if ! [ "$DIR/node.xz" -nt "$(command -v node)" ]; then
    # Its symbol table only (addons bind through .dynsym, which stays): 12 MB less, 2 MB less compressed.
    cp "$(command -v node)" "$DIR/node" && { strip --strip-all "$DIR/node" 2>/dev/null || true; }
    xz -T0 -9e -c "$DIR/node" >"$DIR/node.xz" && rm -f "$DIR/node"
  fi
  rm -f "$list"
  du -ch "$DIR"/* | tail -n 20
}

run() {
  cd "$ROOT"
  kit=/tmp/hearth-gpu-kit
  mkdir -p "$kit/bin"
  unxz() { if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma,sys,shutil; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi; }
  unxz "$DIR/node.xz" >"$kit/bin/node" && chmod +x "$kit/bin/node"
  unxz "$DIR/runtime.tar.xz" | tar -xf -
  unxz "$DIR/uws.tar.xz" | tar -xf -
  unxz "$DIR/tokenizer-source.gguf.xz" >"$kit/tokenizer-source.gguf"
  export PATH=$kit/bin:$PATH
  # The CUDA runtime the backend links (libcudart.so.13, libcublas.so.13, libcublasLt.so.13): the toolkit's, else pip's.
  libs=$( { ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib 2>/dev/null; find /usr /opt -xdev \( -name 'libcublas.so.1[0-9]' -o -name 'libcudart.so.1[0-9]' \) 2>/dev/null | xargs -r -n1 dirname; } | awk '!seen[$0]++' | paste -sd: -)
  # Not native/build/cuda/bin: Hearth binds node-llama-cpp's libraries; bench/gpu.ts gives the tools their own.
  export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export HEARTH_TOKENIZER_SOURCE=$kit/tokenizer-source.gguf HEARTH_CACHE_DIR=$kit/models
  echo "gpu-kit: node $(node --version); CUDA libraries from ${libs:-nowhere found}" >&2
  node --import tsx bench/gpu.ts --tools "$ROOT/native/build/cuda/bin" "$@"
}

case "$cmd" in
  pack) pack ;;
  run) run "$@" ;;
  *) echo "usage: bash bench/gpu-kit.sh pack|run [DIR] [bench:gpu options]" >&2; exit 2 ;;
esac
