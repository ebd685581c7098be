#!/usr/bin/env bash
# Runs the interop suite's GPU cases (and the compile tests) under compute-sanitizer memcheck
# and racecheck, after scripts/gpu-suite.sh built them. Prints one line per case and tool;
# exits non-zero if any reports an error.
#   usage: scripts/gpu-sanitize.sh [build-dir=build-gpu]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-gpu}
cuda=${CUDA_PATH:-/usr/local/cuda}
san=$(command -v compute-sanitizer || echo "$cuda/bin/compute-sanitizer")
export CUDYN_REQUIRE_GPU=1 CUDA_PATH="$cuda" CUDYN_CACHE_DIR="$PWD/$build/cudyn-cache"
cases=(runtime_load_driver_launch driver_load_runtime_launch same_api_both_ways both_launches_one_stream
       foreign_handles handle_identity enumeration_and_params argument_mismatch cluster_launch
       cooperative_launch library_global contexts use_after_unload files_ptx_attributes cuda_errors)
# CUDA API calls that return an error are not memory errors: the suite makes many on purpose
# (bad handles, impossible launches) and cudyn finds a kernel's parameter count by asking
# for the parameter after the last one. Only memory and race errors count here.
extra=(--report-api-errors no)
bad=0
# run TOOL LABEL PROGRAM CASE: one line "TOOL LABEL rc=N SUMMARY"; the output's tail on failure.
run() {
  local out rc summary
  out=$("$san" --tool "$1" "${extra[@]}" --error-exitcode 99 "$build/cpp-tests/$3" "$4" 2>&1); rc=$?
  summary=$(echo "$out" | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
  printf '%-10s %-28s rc=%-3s %s\n' "$1" "$2" "$rc" "$summary"
  [ $rc -eq 0 ] || { bad=1; echo "$out" | tail -20; }
}
for tool in ${CUDYN_SANITIZE_TOOLS:-memcheck racecheck}; do
  for c in "${cases[@]}"; do run "$tool" "$c" interop "$c"; done
  for c in lto_link_and_launch load_source_each_api; do run "$tool" "compile.$c" compile_gpu "$c"; done
done
exit $bad
