#!/usr/bin/env bash
# The structured hostile-image campaign through cudyn on the GPU machine: every field of every
# structure of three images (an sm_90 cubin, a multi-arch fatbin, a zstd-compressed fatbin) set
# to boundary values and bit-flipped, loaded through both APIs. cudyn must never crash. A crash
# is recorded (the mutant is written to OUT/crash<N>.bin for a regression test) and the run
# resumes after it, so one call finds several.
#   usage: scripts/gpu-structured.sh OUT [FROM=0] [SECONDS=240]
# Needs a configured build-gpu (scripts/gpu-suite.sh), or configures one against .prefix.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-structured.sh OUT [FROM] [SECONDS]}
from=${2:-0}
budget=${3:-240}
mkdir -p "$out"
cuda=${CUDA_PATH:-/usr/local/cuda}
if [ ! -f build-gpu/build.ninja ]; then
  cmake -S . -B build-gpu -G Ninja -DCUDYN_USE_INSTALLED=ON -DCMAKE_PREFIX_PATH="$PWD/.prefix" \
    -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDAToolkit_ROOT="$cuda" -DCUDYN_TEST_ARCHS=90 \
    -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null || exit 1
fi
cmake --build build-gpu -j "$(nproc)" >/dev/null || exit 1
"$cuda/bin/nvcc" -fatbin -Xfatbin=-compress-all -gencode 'arch=compute_90,code=[sm_90,compute_90]' \
  -o "$out/compressed.fatbin" cpp-tests/kernels/interop_kernels.cu || exit 1
d=build-gpu/cpp-tests/device
export MUTANTS_STRUCTURED=1 MUTANTS_EXTRA="$out/compressed.fatbin"
start=$(date +%s)
crashes=0
while :; do
  left=$((budget - ($(date +%s) - start)))
  [ "$left" -le 5 ] && { echo "time budget spent at mutant $from"; break; }
  rm -f "$out/trace"
  MUTANTS_FROM=$from MUTANTS_TRACE="$out/trace" timeout "$left" \
    build-gpu/cpp-tests/mutants "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 0 >"$out/run.txt" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then tail -40 "$out/run.txt"; break; fi
  if [ "$rc" -eq 124 ]; then echo "time budget spent (last mutant $(cat "$out/trace" 2>/dev/null))"; break; fi
  t=$(cat "$out/trace" 2>/dev/null) || { cat "$out/run.txt"; break; }
  crashes=$((crashes + 1))
  echo "mutant $t crashed the process through cudyn (status $rc)"
  build-gpu/cpp-tests/mutants "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 0 --dump "$t" "$out/crash$t.bin"
  from=$((t + 1))
done
echo "structured campaign: $crashes crash(es) through cudyn"
[ "$crashes" -eq 0 ]
