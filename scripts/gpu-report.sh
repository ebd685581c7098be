#!/usr/bin/env bash
# Everything the GPU figures in docs/ come from, in one call on a GPU machine (after
# scripts/install-prefix.sh here): the suite, compute-sanitizer, the soak, the hostile-image
# run (cudyn, then raw cuLibraryLoadData for comparison, time-capped), the benchmark and the
# cuda.core reference row, with the chart. Results go to DIR. About 6 minutes on an H200
# (the raw mutant pass runs MUTANTS_RAW_JOBS children side by side, default 8, and stops itself
# after MUTANTS_RAW_SECONDS, default 200, reporting how many mutants it got through).
# With CORPUS=folder (scripts/real_world_fatbins.py fills one) it also loads every real-world
# image there (corpus_load: same verdict as raw CUDA, first-sight load cost), and with
# CACHE_COMPARE=1 it runs the compile-cache comparison (cache_compare; jitify2's rows when the
# build was configured with -DCUDYN_JITIFY2_DIR) and cuda.core's cache beside it.
#   usage: scripts/gpu-report.sh DIR [PREFIX=.prefix]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: gpu-report.sh DIR [PREFIX]}
prefix=${2:-.prefix}
mkdir -p "$out"
# The suite without hostile.mutants_10000: the hostile-image run below makes the same pass.
bash scripts/gpu-suite.sh "$prefix" -E '^hostile\.mutants_10000$' > "$out/suite.log" 2>&1
grep -E "tests passed|Failed|\*\*\*" "$out/suite.log" | tail -15
export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} CUDYN_REQUIRE_GPU=1
export LD_LIBRARY_PATH="$CUDA_PATH/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu/cpp-tests
d=$b/device
echo "== hostile images"
timeout 300 "$b/mutants" "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 10000 > "$out/mutants.txt" 2>&1
echo "cudyn pass: exit $?"; tail -8 "$out/mutants.txt"
export MUTANTS_RAW_SECONDS=${MUTANTS_RAW_SECONDS:-200}
timeout $((MUTANTS_RAW_SECONDS + 60)) "$b/mutants" "$d/interop_kernels.sm_90.cubin" "$d/interop_kernels.fatbin" 10000 --raw-only > "$out/mutants-raw.txt" 2>&1
echo "raw pass: exit $?"; tail -12 "$out/mutants-raw.txt"
echo "== benchmark"
"$b/launch_bench" "$d/interop_kernels.fatbin" "$out/bench.json" > "$out/bench.txt" 2>&1; cat "$out/bench.txt"
python3 benches/cuda_core_reference.py "$out/cuda_core.json" > "$out/cuda_core.txt" 2>&1; cat "$out/cuda_core.txt"
python3 benches/plot.py "$out/bench.json" "$out/cuda_core.json" > "$out/launch-overhead.svg" 2>/dev/null
if [ -n "${CORPUS:-}" ]; then
  echo "== real-world images"
  "$b/corpus_load" "$CORPUS" 7 > "$out/corpus.txt" 2>&1; echo "corpus_load: exit $?"; tail -34 "$out/corpus.txt"
fi
if [ -n "${CACHE_COMPARE:-}" ]; then
  echo "== compile cache"
  CUDYN_CACHE_DIR="$out/cache-compare" "$b/cache_compare" 7 > "$out/cache_compare.txt" 2>&1; cat "$out/cache_compare.txt"
  python3 benches/cuda_core_cache.py 5 > "$out/cuda_core_cache.txt" 2>&1; tail -6 "$out/cuda_core_cache.txt"
fi
echo "== compute-sanitizer"
bash scripts/gpu-sanitize.sh build-gpu > "$out/sanitize.txt" 2>&1
echo "sanitizers: exit $?"; grep -cE " rc=0 " "$out/sanitize.txt"
