#!/usr/bin/env bash
# CI step for issue 47: one binary with candle-core 0.11 (`cuda`) and gpu-kernels on the
# stable toolchain (examples/with-candle). Installs what the build needs on a fresh Debian 12
# machine (idempotent: a rerun downloads nothing), then `cargo +stable build --release` in the
# example, printing its time, and `fmt --check`, `clippy` and `test --release` (the GPU test is
# #[ignore]d). The first build takes about 20-25 minutes on 2 cores, most of it nvcc compiling
# candle-kernels; a rerun takes seconds. Both the CUDA root (about 1.2 GB, most of it cuBLAS)
# and the example's target folder live in a cache outside the checkout (GPU_ASYNC_CACHE,
# default ~/.cache/gpu-async), so a fresh clone on the same machine reuses candle's build:
# cargo still rebuilds everything of this repository (its path differs), never candle-kernels
# unless its inputs changed.
#
#   1. a CUDA 13.0 root assembled from NVIDIA's PyPI wheels into $GPU_ASYNC_CACHE/cuda-13.0: candle-kernels compiles its .cu files with nvcc at build time (cudaforge: nvcc,
#      cicc, the runtime and CCCL headers, CUDA_COMPUTE_CAP), and candle links cudarc with
#      `dynamic-linking`: libcublas, libcublasLt, libcurand, libnvrtc and libcudart at link
#      time, found through CUDA_HOME. 13.0, not .ci/run's 13.5: candle loads the PTX nvcc
#      writes, and a driver refuses PTX newer than itself (CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
#      13.4's PTX ISA 9.4 on the H100s' R580 driver, CUDA 13.0); cudarc's bindings are 13.0's
#      too (CUDARC_CUDA_VERSION).
#   2. libcuda.so, which every candle CUDA binary links: Debian's libcuda1, as .ci/run installs
#      it (or the driver's own on a GPU machine); installed here the same way if missing.
#
# No nightly is used: gpu-kernels builds from its carried PTX (kernels/ptx). The script fails
# if gpu-kernels' build script warns the PTX is stale (it then builds the device code with the
# pinned nightly).
#
#   bash scripts/ci-candle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd -P)
step() { printf '\n== %s\n' "$*"; }

cuda_version=13.0.88
cache=${GPU_ASYNC_CACHE:-$HOME/.cache/gpu-async}
mkdir -p "$cache"
cuda=$cache/cuda-13.0
step "CUDA $cuda_version (nvcc, headers, libraries) from PyPI wheels into $cuda"
# .complete names the version unpacked, written last: a partial or older unpacking is redone.
if [ "$(cat "$cuda/.complete" 2>/dev/null)" != "$cuda_version" ]; then
  rm -rf "$cuda" "$cache/candle-wheels"
  mkdir -p "$cache/candle-wheels"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache/candle-wheels" \
    nvidia-cuda-nvcc==$cuda_version nvidia-cuda-crt==$cuda_version nvidia-nvvm==$cuda_version \
    nvidia-cuda-runtime==$cuda_version nvidia-cuda-nvrtc==$cuda_version \
    nvidia-cuda-cccl==13.0.85 nvidia-cublas==13.1.0.3 nvidia-curand==10.4.0.35
  # Every wheel holds a piece of one tree, nvidia/cu13/{bin,nvvm,include,lib}: unpacked into
  # one root (nvcc.profile finds cicc, the headers and CCCL relative to bin/), without what
  # neither the build nor the link needs (static libraries, nvblas).
  CUDA_ROOT_OUT=$cuda WHEELS=$cache/candle-wheels python3 - <<'EOF'
import glob, os, zipfile
root = os.environ["CUDA_ROOT_OUT"]
prefix = "nvidia/cu13/"
skip = (".a", "libnvblas.so.13")
for wheel in glob.glob(os.path.join(os.environ["WHEELS"], "*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            name = info.filename
            if not name.startswith(prefix) or name.endswith("/") or name.endswith(skip):
                continue
            target = os.path.join(root, name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(info) as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            if "/bin/" in name or name.startswith(prefix + "bin/"):
                os.chmod(target, 0o755)
EOF
  # The wheels carry the run-time names (libcublas.so.13) only: the linker wants libcublas.so.
  for lib in "$cuda"/lib/lib*.so.*; do
    base=${lib##*/}
    ln -sf "$base" "$cuda/lib/${base%%.so.*}.so"
  done
  rm -rf "$cache/candle-wheels"
  echo "$cuda_version" >"$cuda/.complete"
fi
"$cuda/bin/nvcc" --version | tail -2 | head -1
ls "$cuda/lib"/*.so | xargs -n1 basename | tr '\n' ' '
echo

step "libcuda.so to link against (the driver's, or Debian 12's libcuda1 as .ci/run installs it)"
libdir=/usr/lib/x86_64-linux-gnu
if [ ! -e "$libdir/libcuda.so" ] && [ -e "$libdir/libcuda.so.1" ]; then
  ln -s libcuda.so.1 "$libdir/libcuda.so"
elif [ ! -e "$libdir/libcuda.so" ]; then
  . /etc/os-release
  if [ "${ID:-}" != debian ] || [ "${VERSION_CODENAME:-}" != bookworm ] || [ "$(id -u)" != 0 ]; then
    echo "error: candle links libcuda at build time and none is installed; this script installs" \
      "Debian 12's libcuda1 as root only (this is ${PRETTY_NAME:-an unknown system})" >&2
    exit 1
  fi
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || sources=/etc/apt/sources.list
  sed -i -E '/^(Components:|deb .* bookworm)/{/ contrib( |$)/!s/$/ contrib/;/ non-free( |$)/!s/$/ non-free/}' \
    "$sources"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libcuda1
fi
ls -l "$libdir/libcuda.so"

step "stable toolchain"
# Installed when missing, never updated here (other builds on this machine share it).
rustup run stable rustc --version >/dev/null 2>&1 || rustup toolchain install stable --profile minimal
cargo +stable --version

step "examples/with-candle: cargo +stable build --release"
# candle-kernels' build script (cudaforge): nvcc from NVCC, its compute capability from
# CUDA_COMPUTE_CAP (no GPU here: 90, built as sm_90a), both CPU threads. cudarc: its CUDA
# version and (CUDA_HOME) where to link the libraries from.
export NVCC=$cuda/bin/nvcc CUDA_HOME=$cuda CUDA_COMPUTE_CAP=90 CUDARC_CUDA_VERSION=13000
export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-$(nproc)}
# The tests run the binary: the libraries it links are found where it linked them.
export LD_LIBRARY_PATH=$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd examples/with-candle
unset RUSTUP_TOOLCHAIN
export CARGO_TARGET_DIR=$cache/with-candle-target
log=$CARGO_TARGET_DIR/ci-candle-build.log
mkdir -p "$CARGO_TARGET_DIR"
fresh=$([ -e "$CARGO_TARGET_DIR/release/candle-attention" ] && echo rebuild || echo "first build")
export TIMEFORMAT="candle-attention: %lR for the $fresh (real; user %lU, sys %lS)"
if ! time (cargo +stable build --release --locked -v >"$log" 2>&1); then
  tail -60 "$log"
  echo "error: the stable build of examples/with-candle failed (log above, $log)" >&2
  exit 1
fi
# Cargo replays a build script's warnings while its output is current: a rerun sees it too.
if grep -q "carried PTX (kernels/ptx) is stale" "$log"; then
  grep "is stale" "$log"
  echo "error: gpu-kernels' carried PTX is stale: run \`cargo xtask build-ptx\`" >&2
  exit 1
fi
ls -l "$CARGO_TARGET_DIR/release/candle-attention"

step "examples/with-candle: cargo +stable fmt --check, clippy, test --release"
cargo +stable fmt --check
cargo +stable clippy --release --locked --all-targets -- -D warnings
cargo +stable test --release --locked
