#!/usr/bin/env bash
# Follows the README's "Using cudyn in your project" section step by step, in an empty
# temporary folder, as someone outside this repository would: install into a prefix, then a
# CMake consumer, a pkg-config consumer and a cargo consumer that compile and run (no GPU
# needed), `cudyn doctor` with and without the CUDA wheels, every whole program the README
# shows (C, C++, Rust) compiled against the install, and the uninstall.
#
# The steps are read from README.md itself, from the marker before each fenced block:
#   <!-- outside-test: run -->          run it in bash; it must succeed
#   <!-- outside-test: run-fails -->    run it in bash; it must fail
#   <!-- outside-test: file PATH -->    write it to PATH
#   <!-- outside-test: build c|cpp|rust --> a whole program: compiled and linked against the
#                                       install (Rust: as a src/bin/ program of app-rs), then
#                                       run (without kernels.fatbin it must fail, saying so)
#   <!-- outside-test: run-at-end -->   run it in bash after everything else (the uninstall)
#   <!-- outside-test: fragment ... --> a piece shown for reading, not built
# A fenced block with no marker fails the test: every block is a whole program or says it is
# not, so README cannot drift from what is tested. Two things differ from a user's run, neither
# changing what is built: NVIDIA's wheels come from this checkout's .toolchain (through
# PYTHONPATH, as scripts/env.sh sets it, rather than a fresh virtualenv), and cargo reuses this
# checkout's build folders so nothing is compiled twice.
#   usage: scripts/outside-test.sh [--keep]          (--keep: leave the temporary folder)
#          scripts/outside-test.sh --check-readme    (only check that every block is marked;
#                                                     CUDYN_README names another file to check)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# README's blocks as numbered step files in $1 (none written without it); fails naming every
# block that has no marker.
readme_steps() {
  python3 - "${CUDYN_README:-$repo/README.md}" "${1:-}" <<'PY'
import os, re, sys
readme, out = sys.argv[1], sys.argv[2]
lines = open(readme).read().split("\n")
fence = re.compile(r"^(\s*)```(\w*)\s*$")
marker = re.compile(r"^\s*<!-- outside-test: (run-fails|run-at-end|run|file|build|fragment)\b ?(\S*)[^>]*-->\s*$")
problems, n, i = [], 0, 0
while i < len(lines):
    m = fence.match(lines[i])
    if not m:
        i += 1
        continue
    indent, lang = m.groups()
    j = i + 1
    while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
        j += 1
    body = "".join((l[len(indent):] if l.startswith(indent) else l) + "\n" for l in lines[i + 1:j])
    k = i - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    mk = marker.match(lines[k]) if k >= 0 else None
    if not mk:
        problems.append(f"README.md:{i + 1}: a ```{lang} block with no outside-test marker")
    elif mk.group(1) != "fragment":
        kind, arg = mk.groups()
        if kind == "build" and arg not in ("c", "cpp", "rust"):
            problems.append(f"README.md:{k + 1}: build {arg!r}: say c, cpp or rust")
        n += 1
        if out:
            with open(os.path.join(out, f"{n:03d}.{kind}"), "w") as f:
                f.write((arg + "\n" if kind in ("file", "build") else "") + body)
    i = j + 1
if problems:
    sys.exit("outside-test: every fenced block in README.md is a whole program or is marked as a fragment:\n  "
             + "\n  ".join(problems))
if n == 0:
    sys.exit("outside-test: no steps found in README.md")
PY
}

if [ "${1:-}" = --check-readme ]; then
  readme_steps
  echo "outside-test: every block of README.md is marked"
  exit 0
fi

source "$repo/scripts/env.sh"
keep=${1:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/cudyn-outside.XXXXXX")
cleanup() { if [ "$keep" = --keep ]; then echo "outside-test: left $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# The user's checkout is "cudyn" in the folder they work in.
ln -s "$repo" "$work/cudyn"
export PREFIX="$work/prefix"
# Reuse the build folders (see above): cargo's target folder for the CMake build, and one of
# its own for the cargo consumer. Not target/ itself: cudyn is a cdylib, whose rlib cargo names
# without a hash, so a build with other features (the consumer has no `fuzzing`) would replace
# the one the repository's tests link against.
cmake_reuse="-DCUDYN_CARGO_TARGET_DIR=$repo/build/cargo"
export CARGO_TARGET_DIR="$repo/target/outside-test"
export CUDYN_CACHE_DIR="$work/cache"

steps="$work/steps"
mkdir -p "$steps"
readme_steps "$steps"

cd "$work"
passed=0
run_step() { # KIND FILE
  local body rc
  body=$(sed "s|^cmake -S cudyn -B cudyn-build|& $cmake_reuse|" "$2")
  echo "outside-test: \$ ${body//$'\n'/$'\n'outside-test: \$ }"
  set +e
  bash -euo pipefail -c "$body" 2>&1 | tee -a "$work/steps.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$1" != run-fails ] && [ $rc -ne 0 ]; then
    echo "outside-test: FAILED: the step above exited $rc"
    exit 1
  fi
  if [ "$1" = run-fails ] && [ $rc -eq 0 ]; then
    echo "outside-test: FAILED: the step above should have failed but exited 0"
    exit 1
  fi
  passed=$((passed + 1))
}
for s in "$steps"/*; do
  kind=${s##*.}
  case "$kind" in
    file)
      path=$(head -n 1 "$s")
      mkdir -p "$(dirname "$path")"
      tail -n +2 "$s" >"$path"
      echo "outside-test: wrote $path"
      passed=$((passed + 1))
      ;;
    run | run-fails) run_step "$kind" "$s" ;;
  esac
done

# The whole programs: compiled against the install as a user's would be, the compiler's
# warnings as errors, then run: without kernels.fatbin each must fail, and say why.
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
mkdir -p snippets
for s in "$steps"/*.build; do
  [ -e "$s" ] || continue
  lang=$(head -n 1 "$s")
  name=readme_$(basename "$s" .build)
  case "$lang" in
    c)
      tail -n +2 "$s" >"snippets/$name.c"
      echo "outside-test: cc snippets/$name.c (README's C program)"
      # shellcheck disable=SC2046 # pkg-config's words
      cc -std=c11 -Wall -Wextra -Wpedantic -Werror "snippets/$name.c" -o "snippets/$name" \
        $(pkg-config --cflags --libs cudyn) -Wl,-rpath,"$PREFIX/lib"
      exe="snippets/$name"
      ;;
    cpp)
      tail -n +2 "$s" >"snippets/$name.cpp"
      echo "outside-test: c++ snippets/$name.cpp (README's C++ program)"
      # shellcheck disable=SC2046
      c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror "snippets/$name.cpp" -o "snippets/$name" \
        $(pkg-config --cflags --libs cudyn) -Wl,-rpath,"$PREFIX/lib"
      exe="snippets/$name"
      ;;
    rust)
      mkdir -p app-rs/src/bin
      tail -n +2 "$s" >"app-rs/src/bin/$name.rs"
      echo "outside-test: cargo build --bin $name (README's Rust program)"
      cargo build --quiet --manifest-path app-rs/Cargo.toml --bin "$name"
      exe="$CARGO_TARGET_DIR/debug/$name"
      ;;
  esac
  set +e
  err=$("$exe" 2>&1 >/dev/null)
  rc=$?
  set -e
  if [ $rc -eq 0 ] || [[ "$err" != *kernels.fatbin* ]]; then
    echo "outside-test: FAILED: $name without kernels.fatbin exited $rc, saying: $err"
    exit 1
  fi
  echo "outside-test: $name runs, and without kernels.fatbin says: ${err%%$'\n'*}"
  passed=$((passed + 1))
done

# What the README promises of the install.
for f in bin/cudyn lib/libcudyn.so.0 lib/libcudyn.a include/cudyn.h include/cudyn.hpp \
  lib/cmake/cudyn/cudynConfig.cmake lib/pkgconfig/cudyn.pc share/doc/cudyn/LICENSE-MIT \
  share/man/man1/cudyn.1 share/bash-completion/completions/cudyn; do
  [ -e "$PREFIX/$f" ] || {
    echo "outside-test: FAILED: the install lacks $f"
    exit 1
  }
done
# Relocatable: the moved prefix still builds and runs the CMake consumer.
mv "$PREFIX" "$work/moved"
cmake -S app -B app-moved -DCMAKE_PREFIX_PATH="$work/moved" >/dev/null
cmake --build app-moved >/dev/null
app-moved/app >/dev/null
mv "$work/moved" "$PREFIX"
passed=$((passed + 2))

# Last, the uninstall: nothing of cudyn's is left in the prefix.
for s in "$steps"/*.run-at-end; do
  [ -e "$s" ] || continue
  run_step run "$s"
done
left=$(find "$PREFIX" -type f -o -type l)
if [ -n "$left" ]; then
  echo "outside-test: FAILED: the uninstall left: $left"
  exit 1
fi
# A plain install and a plain dependency build quietly: no warning of cudyn's own (such as "no
# CUDA headers found", which only the test suite's layout proofs care about).
if grep -n "warning: cudyn" "$work/steps.log"; then
  echo "outside-test: FAILED: the steps above printed a warning of cudyn's"
  exit 1
fi
echo "outside-test: $passed steps passed"
