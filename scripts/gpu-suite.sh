#!/usr/bin/env bash
# The whole GPU suite in one command, for a machine with CUDA and a GPU but no Rust:
# configures the CMake project against a prebuilt cudyn install (scripts/install-prefix.sh),
# builds the examples and tests with nvcc, and runs ctest with CUDYN_REQUIRE_GPU=1, so a test
# that cannot find the GPU fails instead of skipping. Tests that need more GPUs than the
# machine has still skip.
#   usage: scripts/gpu-suite.sh [PREFIX=.prefix] [extra ctest args...]
# CUDYN_GPU_TARGETS="t1 t2" builds only those targets (with a ctest -R for their tests), for a
# quick re-check of a few tests when device time is short.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
prefix=$(cd "${1:-.prefix}" && pwd)
shift || true
cuda=${CUDA_PATH:-/usr/local/cuda}
export CUDA_PATH="$cuda"
build=${CUDYN_GPU_BUILD:-build-gpu}
archs=${CUDYN_TEST_ARCHS:-90}
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# cache_compare's jitify2 rows, where jitify2.hpp was carried (it is not part of cudyn).
jitify=${CUDYN_JITIFY2_DIR:-}
[ -z "$jitify" ] && [ -f .bench-deps/jitify2.hpp ] && jitify=$PWD/.bench-deps
[ -n "$jitify" ] && gen+=(-DCUDYN_JITIFY2_DIR="$jitify")
cmake -S . -B "$build" "${gen[@]}" -DCUDYN_USE_INSTALLED=ON -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDAToolkit_ROOT="$cuda" -DCUDYN_TEST_ARCHS="$archs" \
  -DCMAKE_CUDA_ARCHITECTURES="${archs%%;*}"
targets=()
if [ -n "${CUDYN_GPU_TARGETS:-}" ]; then
  # The named targets, the versions example run below and every test's device code.
  for t in versions ${CUDYN_GPU_TARGETS} $(cmake --build "$build" --target help | grep -oE '\bdevice_[A-Za-z0-9_]+' | sort -u); do
    targets+=(--target "$t")
  done
fi
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
export CUDYN_REQUIRE_GPU=1
export CUDYN_CACHE_DIR="$PWD/$build/cudyn-cache"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$build"/c-examples/versions
# What cudyn finds here, from the installed command (the ctest entries cli.* check it too).
"$prefix"/bin/cudyn doctor || true
ctest --test-dir "$build" --output-on-failure "$@"
