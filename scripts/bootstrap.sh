#!/usr/bin/env bash
# Installs the build and test tools cudyn needs on a machine without a CUDA toolkit:
# the pinned CUDA 13.0 wheels (headers, NVRTC, nvJitLink, nvcc, crt, nvvm), cmake, ninja
# and libclang, all from PyPI, into the git-ignored folder .toolchain/ of this checkout.
#
# Idempotent: a second run that finds the same pins installed returns in well under a second.
# Prints, as its last line, nothing but the CUDA root it settled on (a toolkit already on the
# machine, or .toolchain/cuda), so scripts can `CUDA_ROOT=$(scripts/bootstrap.sh)`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tc="$here/.toolchain"
py=${PYTHON:-python3}

PINS=(
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-nvrtc==13.0.88
  nvidia-nvjitlink==13.0.88
  nvidia-cuda-nvcc==13.0.88
  nvidia-cuda-crt==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-cccl==13.0.85
)
TOOLS=(cmake==3.31.6 ninja==1.11.1.4 libclang==18.1.1)
stamp_text="${PINS[*]} ${TOOLS[*]} layout-v4"

log() { echo "bootstrap: $*" >&2; }

# A real toolkit wins: the wheels are only for machines that have none.
for cand in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$cand" ] && [ -f "$cand/include/cuda.h" ] && [ -x "$cand/bin/nvcc" ]; then
    if [ "${CUDYN_FORCE_WHEELS:-0}" != 1 ]; then
      log "using the CUDA toolkit at $cand"
      # cmake/ninja/libclang may still be missing; fetch only those.
      if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
        [ -f "$tc/tools.stamp" ] || { "$py" -m pip install -q --disable-pip-version-check --target "$tc/py" "${TOOLS[@]}" >&2 && touch "$tc/tools.stamp"; }
      fi
      echo "$cand"
      exit 0
    fi
  fi
done

if [ -f "$tc/stamp" ] && [ "$(cat "$tc/stamp")" = "$stamp_text" ]; then
  echo "$tc/cuda"
  exit 0
fi

log "installing the pinned CUDA 13.0 wheels, cmake, ninja and libclang into .toolchain/ (about 400 MB; once)"
rm -rf "$tc/py" "$tc/cuda"
mkdir -p "$tc"
# Progress: on a terminal, pip's own bars; otherwise (CI, a log) one line per package as pip
# collects, downloads and installs it, with the seconds since the start. Everything goes to
# stderr: stdout carries only the CUDA root.
pip_install() {
  "$py" -m pip install --disable-pip-version-check --no-warn-script-location --target "$tc/py" "$@"
}
if [ -t 2 ]; then
  pip_install "${PINS[@]}" "${TOOLS[@]}" >&2
else
  start=$SECONDS
  if ! pip_install --progress-bar off "${PINS[@]}" "${TOOLS[@]}" 2>&1 | tee "$tc/pip.log" | while IFS= read -r line; do
    case "$line" in
      Collecting*|*Downloading*|Installing*|Successfully*)
        log "[$((SECONDS - start)) s] ${line#"${line%%[! ]*}"}" ;;
    esac
  done; then
    log "pip failed; its output (also in .toolchain/pip.log):"
    cat "$tc/pip.log" >&2
    exit 1
  fi
fi

# The wheels spread the toolkit over nvidia/cu13/{bin,include,lib,nvvm}; give it a
# toolkit's shape so nvcc, CMake's FindCUDAToolkit and cc all find their pieces.
src="$tc/py/nvidia/cu13"
[ -d "$src" ] || { log "unexpected wheel layout: no nvidia/cu13 folder"; exit 1; }
ln -sfn "$src" "$tc/cuda"
cd "$src"
[ -e lib64 ] || ln -s lib lib64                      # nvcc links from lib64/
cd lib
# unversioned names for the linker and for FindCUDAToolkit
for f in libcudart.so.13 libnvrtc.so.13 libnvJitLink.so.13; do
  [ -e "$f" ] && [ ! -e "${f%.13}" ] && ln -s "$f" "${f%.13}"
done
touch "$tc/py/.keep"
echo "$stamp_text" > "$tc/stamp"
log "done"
echo "$tc/cuda"
