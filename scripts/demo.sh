#!/usr/bin/env bash
# The demo: builds cudyn and its examples, then runs them. `versions` shows what cudyn found;
# the NVRTC SAXPY compiles everywhere; loading and launching run where there is a GPU, and
# the demo says what it skipped where there is none.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
cudyn_configure
cmake --build build >/dev/null
fatbin=build/c-examples/device/example_kernels.fatbin
run() {
  echo "\$ $*"
  local rc=0
  "$@" || rc=$?
  case $rc in
    0) ;;
    77) echo "  (skipped: needs a GPU)";;
    *) echo "  FAILED with exit code $rc"; exit $rc;;
  esac
  echo
}
run build/c-examples/versions
run build/c-examples/saxpy_nvrtc
run build/c-examples/load_and_launch "$fatbin"
run build/c-examples/interop_cast "$fatbin"
# The Rust API: compile, load, typed launch through both APIs (says what it skipped without a GPU).
run cargo run -q --example vec_add
