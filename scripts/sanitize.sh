#!/usr/bin/env bash
# Runs what can run on a machine without a GPU under sanitizers:
#  1. the crate's unit tests (image, cache, compile's pure functions, error plumbing and the
#     C API's error paths, ...) and tests/fuzz_regression.rs (the fuzz corpus) under
#     AddressSanitizer (+ LeakSanitizer), built with the nightly toolchain
#     (-Zsanitizer=address; std itself is not rebuilt, so no rust-src is needed), and
#     tests/preserved_images.rs, whose stand-in driver reads preserved images at unload through
#     memcmp (which ASan checks: an image freed before its unload is reported), and the
#     handle, race and thread-exit tests against the stand-in driver (tests/handles.rs,
#     tests/handle_races.rs, tests/thread_exit.rs);
#  2. the C examples and the C++ suite built with -fsanitize=address,undefined in build-asan/
#     (libcudyn.so itself is Rust: uninstrumented, but its allocations go through ASan's
#     malloc), and their ctest tests; GPU tests skip (exit 77) there as they do in build/.
#  3. only when asked for (`thread`, not part of the default run nor of scripts/test.sh): the
#     crate's unit tests (the launch table's sequence lock, the registry, the memo, the blocks)
#     and the handle, race and thread-exit tests under ThreadSanitizer, with std rebuilt
#     instrumented (-Zbuild-std: needs the nightly's rust-src component, `rustup component add
#     rust-src --toolchain nightly`, and a few minutes more). The race tests' children run under
#     it too, and a report makes a child exit 66, which fails its test.
# Exits non-zero on the first failure. Uses target/sanitize/, target/tsan/ and build-asan/.
#   usage: scripts/sanitize.sh [rust|c|thread]   (default: rust and c)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh
what=${1:-all}
start=$SECONDS

# nightly_tests SANITIZER FOLDER [CARGO ARGS...]: the crate's tests built with -Zsanitizer=SANITIZER
# by the nightly toolchain in target/FOLDER (a folder of its own keeps these builds from replacing
# the ordinary ones); --target keeps the sanitizer off build scripts and proc macros.
nightly_tests() {
  local sanitizer=$1 folder=$2 host
  shift 2
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "sanitize.sh: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
    exit 1
  fi
  host=$(rustc +nightly -vV | sed -n 's/^host: //p')
  CARGO_TARGET_DIR="$PWD/target/$folder" RUSTFLAGS="-Zsanitizer=$sanitizer -Cforce-frame-pointers=yes" \
    cargo +nightly test --target "$host" "$@"
}

if [ "$what" = all ] || [ "$what" = rust ]; then
  echo "== Rust tests under AddressSanitizer (nightly)"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1" \
    nightly_tests address sanitize --lib --test fuzz_regression --test preserved_images \
      --test handles --test handle_races --test thread_exit
fi

if [ "$what" = thread ]; then
  echo "== Rust tests under ThreadSanitizer (nightly, std rebuilt instrumented)"
  if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
    echo "sanitize.sh: ThreadSanitizer needs the nightly's rust-src (rustup component add rust-src --toolchain nightly)" >&2
    exit 1
  fi
  TSAN_OPTIONS="halt_on_error=1" \
    nightly_tests thread tsan -Zbuild-std --lib --test handles --test handle_races --test thread_exit
fi

if [ "$what" = all ] || [ "$what" = c ]; then
  echo "== C/C++ suite with -fsanitize=address,undefined (build-asan)"
  san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
  # cudyn itself is built by cargo as in build/ (release, uninstrumented): reuse build/'s cargo
  # folder so that it is only checked, not built again.
  mkdir -p build-asan
  cmake -S . -B build-asan "${CUDYN_CMAKE_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCUDYN_CARGO_TARGET_DIR="$PWD/build/cargo" \
    >build-asan/configure.log 2>&1 || { cat build-asan/configure.log; exit 1; }
  cmake --build build-asan
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-asan --output-on-failure
fi
echo "== sanitize.sh: passed in $((SECONDS - start)) s"
