#!/usr/bin/env bash
# The images of the structured hostile-image campaign beyond the interop cubin and fatbin that
# scripts/gpu-structured.sh always uses: nvcc 13.0 output in the forms CUDA programs ship —
# plain, -G, -lineinfo and -rdc cubins for sm_80..sm_120, a multi-arch fatbin with PTX, a
# PTX-only fatbin, fatbins compressed in every --compress-mode nvcc offers, and a kernel whose
# .nv.info lists instruction offsets of many kinds (cpp-tests/kernels/offsets_kernels.cu) for
# sm_80, sm_90 and sm_100. Built here (nvcc needs no GPU) and carried to the GPU machine.
#   usage: scripts/campaign_corpus.sh OUT        (needs nvcc: CUDYN_CUDA_ROOT, CUDA_PATH or PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: campaign_corpus.sh OUT}
mkdir -p "$out"
nvcc=${CUDYN_CUDA_ROOT:-${CUDA_PATH:-/usr/local/cuda}}/bin/nvcc
[ -x "$nvcc" ] || nvcc=nvcc
src=cpp-tests/kernels/handles_two.cu
big=cpp-tests/kernels/interop_kernels.cu
"$nvcc" -cubin -arch=sm_80 -o "$out/sm80.cubin" "$src"
"$nvcc" -cubin -arch=sm_90 -G -o "$out/sm90-G.cubin" "$src"
"$nvcc" -cubin -arch=sm_90 -lineinfo -o "$out/sm90-lineinfo.cubin" "$src"
"$nvcc" -cubin -arch=sm_90 -rdc=true -o "$out/sm90-rdc.cubin" "$src"
"$nvcc" -cubin -arch=sm_100 -o "$out/sm100.cubin" "$src"
"$nvcc" -cubin -arch=sm_120 -o "$out/sm120.cubin" "$src"
"$nvcc" -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
  -gencode arch=compute_100,code=sm_100 -gencode arch=compute_120,code='[sm_120,compute_120]' \
  -o "$out/multiarch.fatbin" "$src"
"$nvcc" -fatbin -gencode arch=compute_90,code=compute_90 -o "$out/ptx-only.fatbin" "$src"
for a in 80 90 100; do
  "$nvcc" -cubin -arch=sm_$a -o "$out/offsets-sm$a.cubin" cpp-tests/kernels/offsets_kernels.cu
done
for m in size speed balance; do
  "$nvcc" -fatbin -compress-mode=$m -gencode arch=compute_90,code='[sm_90,compute_90]' \
    -o "$out/compress-$m.fatbin" "$big"
done
ls "$out"
