#!/usr/bin/env bash
# What a first-sight load through cudyn costs the host with its caches warm and cold, against
# the stand-in libcuda of benches/launch_cpu (no GPU): wall-clock medians, then callgrind's
# cache simulation of the cold case (8 MiB written between loads, a 4 MiB last-level cache), which
# counts the 64-byte lines of code and data a cold load touches: the part of a first sight that
# grows when the driver's own work between loads has evicted cudyn's code (docs/performance.md).
# The third line churns the C heap between loads (main.c's CHURN), as a driver's loads do.
# Give it images of one kind, more than 32 (e.g. scripts/real_world_fatbins.py output). Needs a
# built build/ (scripts/test.sh or demo), or CUDYN_LIB_DIR naming another build's libcudyn.so.
#   usage: benches/load_cold/run.sh IMAGE...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -gt 0 ] || { echo "usage: $0 IMAGE..." >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -o "$work/libcuda.so.1" "$root/benches/launch_cpu/stub_libcuda.c"
libdir=${CUDYN_LIB_DIR:-$root/build/cudyn-lib}
cc -O2 -I"$root/include" -o "$work/cold" "$here/main.c" -L"$libdir" -lcudyn -Wl,-rpath,"$libdir"
export CUDYN_LIBCUDA="$work/libcuda.so.1" LD_LIBRARY_PATH="$work"
for mib in 0 32; do EVICT_MIB=$mib "$work/cold" "$@"; done
CHURN=2000 "$work/cold" "$@"
if command -v valgrind >/dev/null; then
  ROUNDS=2 EVICT_MIB=8 valgrind --tool=callgrind --collect-atstart=no --cache-sim=yes --LL=4194304,16,64 \
    --callgrind-out-file="$work/cg.out" "$work/cold" "$@" >/dev/null 2>&1
  callgrind_annotate "$work/cg.out" 2>/dev/null | grep "PROGRAM TOTALS" | sed -E 's/\([0-9. %]+\)//g' | tr -d , |
    awk -v n=$(($# * 2)) '{printf "cold, simulated: %d instructions, %d lines of code and %d of data from memory a load\n", $1/n, $7/n, ($8+$9)/n}'
fi
