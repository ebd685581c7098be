#!/usr/bin/env bash
# Runs every test that can run on this machine: the Rust tests (cargo test, the library and the
# cudyn command), the C/C++ suite (CMake + ctest), the sanitizers (scripts/sanitize.sh) and the
# README's outside-the-repository steps (scripts/outside-test.sh). Installs its own tools on
# first use (scripts/bootstrap.sh). GPU tests skip (ctest "Skipped", exit 77) without a GPU.
#
# Prints one line per step (and, within a long step, every 20 s how long it has run and the
# last line it wrote) and a summary: what ran, passed, failed, and what was skipped and why.
# Each step's full output is in build/test-logs/<step>.log; a failing step's log is printed.
# Every step runs even after one fails (a step that needs a failed one is skipped); the exit
# status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh || exit 1
source scripts/progress.sh
logs=build/test-logs
rm -rf "$logs"
mkdir -p "$logs"
start=$SECONDS
failed_steps=()
declare -A step_ok

# step NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log; prints a line (on a
# terminal the step's name shows at once and its progress updates in place).
step() {
  local name=$1
  shift
  local t0=$SECONDS result
  [ -t 1 ] && printf '%-22s ' "$name"
  if with_progress "$(printf '%-22s running,' "$name")" "$logs/$name.log" "$@"; then
    step_ok[$name]=1
    result="ok      $((SECONDS - t0)) s  $(scripts/test-summary.py line "$logs/$name.log")"
  else
    step_ok[$name]=0
    failed_steps+=("$name")
    result="FAILED  $((SECONDS - t0)) s  $(scripts/test-summary.py line "$logs/$name.log")"
  fi
  if [ -t 1 ]; then
    printf '\r\033[K%-22s %s\n' "$name" "$result"
  else
    printf '%-22s %s\n' "$name" "$result"
  fi
}

# needs STEP NAME: skips NAME (with a line saying why) unless STEP passed.
needs() {
  if [ "${step_ok[$1]:-0}" != 1 ]; then
    printf '%-22s skipped (needs %s, which failed)\n' "$2" "$1"
    return 1
  fi
}

# free_space: what the filesystems the suite writes to have left (the suite's build folders take
# about 8 GB on a fresh clone; a build that runs out says "could not compile" and little more).
free_space() {
  df -h . "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR == 1 || !seen[$1]++' | sed 's/^/    /'
}
# Incremental compilation pays only when the same tree is built again and again; a fresh clone
# (CI) is built once per configuration, and its incremental folders would take over a gigabyte.
if [ -n "${CI:-}" ] && [ -z "${CARGO_INCREMENTAL:-}" ]; then
  export CARGO_INCREMENTAL=0
fi

echo "== cudyn test suite (logs in $logs/)"
avail_kb=$(df -Pk . 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt $((10 * 1024 * 1024)) ]; then
  echo "warning: $((avail_kb / 1024 / 1024)) GB free here; the suite's build folders take about 8 GB:"
  free_space
fi
# --no-fail-fast: every test binary runs, so the summary counts them all. dev-header:
# generate cudyn.h (the drift test, tests/header.rs, needs it) and compile the C layout proofs;
# a crate depending on cudyn leaves it off.
step cargo-test cargo test --all-targets --features dev-header --no-fail-fast
step cargo-test-cli cargo test --package cudyn-cli --no-fail-fast
# The decoders the C library is built with (CMake's CUDYN_C_DECODERS): libzstd and liblz4,
# held to the same verdicts and bytes as the default pure-Rust ones.
step cargo-test-c-decoders cargo test --features c-decoders --no-fail-fast --lib --test decoder_differential \
  --test compressed_images --test decompress_memory --test fuzz_regression --test image_nvcc
# The code itself against the Rust minimum the manifests state (cli/tests/rust_version.rs
# holds that minimum to what the dependencies need): no std item newer than it.
step rust-minimum cargo clippy --workspace --all-targets --features dev-header -- -A clippy::all -D clippy::incompatible_msrv
step cmake-build bash -c 'source scripts/env.sh && cudyn_configure && cmake --build build'
if needs cmake-build ctest; then
  step ctest ctest --test-dir build --output-on-failure --output-junit "$PWD/$logs/ctest.xml"
fi
step sanitize-rust scripts/sanitize.sh rust
if needs cmake-build sanitize-c; then
  step sanitize-c scripts/sanitize.sh c
fi
if needs cmake-build outside-test; then
  step outside-test scripts/outside-test.sh
fi

for s in "${failed_steps[@]}"; do
  echo
  echo "== $s failed; from $logs/$s.log:"
  scripts/test-summary.py failures "$logs/$s.log"
done
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo
  echo "== free space now:"
  free_space
fi
echo
scripts/test-summary.py total "$logs" "$((SECONDS - start))"
[ ${#failed_steps[@]} -eq 0 ]
