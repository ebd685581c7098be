#!/usr/bin/env bash
# Follows the README's "Using cudyn in your project" section step by step, in an empty
# temporary folder, as someone outside this repository would: install into a prefix, then a
# CMake consumer, a pkg-config consumer and a cargo consumer that compile and run (no GPU
# needed), then `cudyn doctor` with and without the CUDA wheels.
#
# The steps are read from README.md itself: a fenced block after `<!-- outside-test: run -->`
# runs in bash (and must succeed), after `<!-- outside-test: run-fails -->` must fail, and after
# `<!-- outside-test: file PATH -->` is written to PATH. So the README cannot drift from what is
# tested. Two things differ from a user's run, neither changing what is built: NVIDIA's wheels
# come from this checkout's .toolchain (through PYTHONPATH, as scripts/env.sh sets it, rather
# than a fresh virtualenv), and cargo reuses this checkout's build folders so nothing is
# compiled twice.
#   usage: scripts/outside-test.sh [--keep]   (--keep: leave the temporary folder)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/scripts/env.sh"
keep=${1:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/cudyn-outside.XXXXXX")
cleanup() { if [ "$keep" = --keep ]; then echo "outside-test: left $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# The user's checkout is "cudyn" in the folder they work in.
ln -s "$repo" "$work/cudyn"
export PREFIX="$work/prefix"
# Reuse the build folders (see above): cargo's target folder for the CMake build, and for the
# cargo consumer.
cmake_reuse="-DCUDYN_CARGO_TARGET_DIR=$repo/build/cargo"
export CARGO_TARGET_DIR="$repo/target"
export CUDYN_CACHE_DIR="$work/cache"

steps="$work/steps"
mkdir -p "$steps"
python3 - "$repo/README.md" "$steps" <<'EOF'
import re, sys, os
readme, out = sys.argv[1], sys.argv[2]
text = open(readme).read()
pat = re.compile(r"<!-- outside-test: (run-fails|run|file) ?(\S*) -->\n```[a-z]*\n(.*?)```\n", re.S)
n = 0
for m in pat.finditer(text):
    kind, arg, body = m.groups()
    n += 1
    with open(os.path.join(out, f"{n:03d}.{kind}"), "w") as f:
        f.write((arg + "\n" if kind == "file" else "") + body)
if n == 0:
    sys.exit("outside-test: no steps found in README.md")
EOF

cd "$work"
passed=0
for s in "$steps"/*; do
  kind=${s##*.}
  case "$kind" in
    file)
      path=$(head -n 1 "$s")
      mkdir -p "$(dirname "$path")"
      tail -n +2 "$s" >"$path"
      echo "outside-test: wrote $path"
      ;;
    run|run-fails)
      body=$(sed "s|^cmake -S cudyn -B cudyn-build|& $cmake_reuse|" "$s")
      echo "outside-test: \$ ${body//$'\n'/$'\n'outside-test: \$ }"
      set +e
      bash -euo pipefail -c "$body"
      rc=$?
      set -e
      if [ "$kind" = run ] && [ $rc -ne 0 ]; then
        echo "outside-test: FAILED: the step above exited $rc"
        exit 1
      fi
      if [ "$kind" = run-fails ] && [ $rc -eq 0 ]; then
        echo "outside-test: FAILED: the step above should have failed but exited 0"
        exit 1
      fi
      ;;
  esac
  passed=$((passed + 1))
done

# What the README promises of the install.
for f in bin/cudyn lib/libcudyn.so.0 lib/libcudyn.a include/cudyn.h include/cudyn.hpp \
         lib/cmake/cudyn/cudynConfig.cmake lib/pkgconfig/cudyn.pc share/doc/cudyn/LICENSE-MIT; do
  [ -e "$PREFIX/$f" ] || { echo "outside-test: FAILED: the install lacks $f"; exit 1; }
done
# Relocatable: the moved prefix still builds and runs the CMake consumer.
mv "$PREFIX" "$work/moved"
cmake -S app -B app-moved -DCMAKE_PREFIX_PATH="$work/moved" >/dev/null
cmake --build app-moved >/dev/null
app-moved/app >/dev/null
passed=$((passed + 2))
echo "outside-test: $passed steps passed"
