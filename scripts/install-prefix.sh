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
# What the install copies, and nothing of the test suite (the install carries no debug info:
# CMake strips it, see CUDYN_STRIP).
cmake --build build --target cudyn_install_files
rm -rf "$prefix"
cmake --install build --prefix "$prefix"
du -sh "$prefix"
