#!/usr/bin/env bash
# Runs every test that can run on this machine: the Rust tests (cargo test), then the C/C++
# suite (CMake + ctest). Installs its own tools on first use (scripts/bootstrap.sh).
# GPU tests skip (ctest "Skipped", exit 77) without a GPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
echo "== cargo test"
# dev-header: generate cudyn.h (the drift test, tests/header.rs, needs it) and compile the C
# layout proofs; a crate depending on cudyn leaves it off.
cargo test --all-targets --features dev-header 2>&1
echo "== CMake + ctest"
cudyn_configure
cmake --build build
ctest --test-dir build --output-on-failure
echo "== sanitizers (AddressSanitizer/UBSan on the CPU-runnable tests)"
scripts/sanitize.sh
