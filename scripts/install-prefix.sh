#!/usr/bin/env bash
# Builds cudyn (cargo, through CMake) and installs it into a prefix (default: .prefix/, git-
# ignored), ready to carry to a machine that has CUDA but no Rust (see scripts/gpu-suite.sh):
# lib/, include/, the CMake and pkg-config files, and bin/cudyn.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
prefix=${1:-.prefix}
cudyn_configure
# The library and the `cudyn` command (the GPU suite runs `cudyn doctor` and `inspect` from
# the prefix: the GPU machine has no Rust to build it).
cmake --build build --target cudyn_cargo_build cudyn_cli_build
rm -rf "$prefix"
cmake --install build --prefix "$prefix"
strip --strip-debug "$prefix"/lib/libcudyn.a "$prefix"/lib/libcudyn.so.* "$prefix"/bin/cudyn 2>/dev/null || true
du -sh "$prefix"
