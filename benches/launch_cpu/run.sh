#!/usr/bin/env bash
# Host instructions cudyn adds to one launch and to one library load + unload, counted by
# callgrind against a stand-in libcuda (no GPU needed; repeatable to the instruction). Needs a
# built build/ (scripts/test.sh or demo); the load rows use the test fatbin built there.
#   usage: benches/launch_cpu/run.sh [launches=100000]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O2 -o "$work/libcuda.so.1" "$here/stub_libcuda.c"
# CUDYN_LIB_DIR: another build's libcudyn.so (to compare two builds).
libdir=${CUDYN_LIB_DIR:-$root/build/cudyn-lib}
cc -O2 -I"$root/include" -o "$work/lo" "$here/main.c" -L"$libdir" -lcudyn -ldl -Wl,-rpath,"$libdir"
export CUDYN_LIBCUDA="$work/libcuda.so.1" LD_LIBRARY_PATH="$work"
image="$root/build/cpp-tests/device/interop_kernels.fatbin"
count() { valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$work/lo" "$1" "$2" "$image" 2>&1 | sed -n 's/.*Collected : //p'; }
for mode in ${LAUNCH_MODES:-0 1 2 5 6 7 8}; do
  small=$(count 1000 $mode); big=$(count $((n + 1000)) $mode)
  per=$(( (big - small) / n ))
  case $mode in
    0) name="stand-in cuLaunchKernelEx, called directly";;
    1) name="cudyn_launch (driver), foreign kernel";; 2) name="cudyn_launch_checked (driver), foreign";;
    5) name="cudyn_launch (driver), adopted: fast path";; 6) name="cudyn_launch_checked, adopted: fast path";;
    7) name="cudyn_launch, adopted, cooperative";; 8) name="cudyn_launch, adopted, 2 listed attributes";;
  esac
  printf '%-45s %6d instructions per launch\n' "$name" "$per"
done
loads=$((n / 100))
for mode in 3 4; do
  small=$(count 10 $mode); big=$(count $((loads + 10)) $mode)
  per=$(( (big - small) / loads ))
  case $mode in 3) name="stand-in cuLibraryLoadData + Unload, directly";; 4) name="cudyn_library_load_data + unload (driver)";; esac
  printf '%-45s %6d instructions per load (same image each time)\n' "$name" "$per"
done
