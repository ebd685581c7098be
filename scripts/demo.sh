#!/usr/bin/env bash
# The demo: builds cudyn and its examples, then runs them. `versions` shows what cudyn found;
# the NVRTC SAXPY compiles everywhere; loading and launching run where there is a GPU, and
# the demo says what it skipped where there is none. Long builds say how far they are; a long
# message several examples repeat (the driver's "could not be opened; tried: ...") is said once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
source scripts/progress.sh
mkdir -p build
seen=$(mktemp)
trap 'rm -f "$seen"' EXIT

# build LABEL COMMAND...: quietly, with progress; the log is shown if it fails.
build() {
  local label=$1
  shift
  echo "$label"
  if ! with_progress "  building," build/demo-build.log "$@"; then
    cat build/demo-build.log
    echo "  FAILED: $*"
    exit 1
  fi
}
build "building cudyn and the examples (cmake; the first time takes a few minutes)" \
  bash -c 'source scripts/env.sh && cudyn_configure && cmake --build build'
fatbin=build/c-examples/device/example_kernels.fatbin
run() {
  echo "\$ $*"
  local rc=0
  "$@" 2>&1 | say_once "$seen" || rc=${PIPESTATUS[0]}
  case $rc in
    0) ;;
    77) echo "  (skipped: needs a GPU)" ;;
    *)
      echo "  FAILED with exit code $rc"
      exit $rc
      ;;
  esac
  echo
}
run build/c-examples/versions
run build/c-examples/saxpy_nvrtc
run build/c-examples/load_and_launch "$fatbin"
run build/c-examples/interop_cast "$fatbin"
# The Rust API: compile, load, typed launch through both APIs (says what it skipped without a GPU).
build "building the Rust example (cargo)" cargo build --example vec_add
run cargo run -q --example vec_add
echo "demo done"
