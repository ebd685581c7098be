#!/usr/bin/env python3
"""The real-world corpus: every fatbin container and every bare device ELF in NVIDIA's wheels.
NVIDIA's binaries are not redistributed with cudyn; this script reads wheels (downloaded here
with pip, or already in a folder) and writes what it finds to a folder of your own.

  extract:  scripts/real_world_fatbins.py OUT [--wheels DIR]... [--max-mib N] [WHEEL_SPEC...]
  subset:   scripts/real_world_fatbins.py --subset MIB CORPUS OUT [--also LIST]
  list:     scripts/real_world_fatbins.py --campaign-list CORPUS [N] > LIST

extract: every file of every wheel is scanned: each section of an ELF shared object or object
(`.nv_fatbin`, `__nv_relfatbin`, `.cask_resource`, `.data`, `.rodata`, ... all of them, and the
bytes between sections), each member of a static archive (`.a`), and any other file as it is.
A fatbin container is its magic 0xBA55ED50 at an address that is a multiple of 8 (by sh_addr;
in an object file or archive member, from the start of its section), followed by a version 1,
16-byte header whose payload lies within the section; a bare device ELF is an ELF64 little-endian header with e_machine 190 (EM_CUDA) whose tables
lie within the section, outside any container. Each distinct one (by SHA-256) is written once,
as `<wheel>_<file>_<sha>.fatbin|.cubin`, and every place it was found is a line of
`OUT/.manifest.tsv` (wheel, file, section or member, offset in it, size, sha256, entry count,
the entries' codes). With no wheel named, the default set is the CUDA 11, 12 and 13 wheels
of every NVIDIA library that carries device code and the packages that load beside them
(DEFAULT below; over 40 GB of wheels, each deleted once read). --max-mib stops writing past
that many MiB (default: no limit); files are taken smallest first.

subset: a diverse selection of CORPUS (made by extract) of at most MIB MiB, for carrying to a
GPU machine (e.g. `--subset 48 /corpus .corpus`): for every wheel its smallest and largest
container that fit, one compressed and one plain where it has both, one of every kind of
place (section name) and, where CORPUS/.verdicts-baseline.tsv or CORPUS/.verdicts.tsv exists
(written by `cargo run --release --example corpus_verdicts -- CORPUS`), the smallest image of
every refusal class, the images named in LIST (one name a line: e.g. the evidence behind a
rule), then more of the smallest images of each wheel in turn until the budget is spent.
Writes OUT/.manifest.tsv for what it took, and OUT/.campaign/: for the structured mutation
campaign (scripts/gpu-structured.sh CAMPAIGN_DIR=OUT/.campaign), each LIST image of up to
256 KiB and its sm_90 ELF entry (else its first) as a bare cubin of up to 512 KiB, decompressed (with the `lz4`
and `zstandard` Python packages, where they are installed), so that every field of the real
cubins gets mutated.

campaign-list: per wheel, the N (1) smallest fatbins of up to 256 KiB with sm_90 code, one name
a line: the LIST of the campaign images for a campaign on the H200.

Used by tests/real_world_fatbins.rs (CUDYN_REAL_FATBINS=OUT), examples/corpus_verdicts.rs, the
GPU corpus load (corpus_load in scripts/gpu-report.sh) and the structured campaign
(CAMPAIGN_EXTRA in scripts/gpu-structured.sh).
"""
import collections
import hashlib
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile

# Every NVIDIA wheel with device code in it, CUDA 13 and CUDA 12 flavours, and older releases
# of the big libraries (CUDA 12.1-12.4 and 13.0 era); then the CUDA 11 flavours, cuTENSOR,
# cuQuantum, CuPy and cuDF, and releases between those above; then a third set: cuDNN 8.9 and
# more CUDA 12 releases between, Warp, RAPIDS (RAFT, cuVS), and the device code of packages that
# load beside CUDA's own (PyTorch, ONNX Runtime, JAX, CuPy for CUDA 11 and 12, bitsandbytes);
# then a fourth: other toolchains and build systems (TensorFlow's clang-built kernels, vLLM,
# SGLang, xformers, FAISS, MXNet for CUDA 11.2), FlashInfer's standalone cubins, the
# compute-sanitizer patches, and NVIDIA releases between those above; then a fifth: RAPIDS'
# cuML and cuGraph (both flavours) and cuCIM, Transformer Engine (both flavours), cuEquivariance,
# CUTLASS's Python DSL, and the kernels of other frameworks' build systems (PaddlePaddle, FBGEMM,
# Open3D, spconv/cumm, CTranslate2, XGBoost, CatBoost, LMDeploy, ONNX Runtime GenAI, AutoAWQ,
# DeepSpeed's kernels, GPU4PySCF, torchaudio); then CUDA 8 to 12 era releases (a sixth, seventh
# and eighth set: FAISS 1.7.2, MXNet, CuPy for CUDA 8.0 to 11.6, TensorFlow 1.15 to 2.15, PyTorch
# 1.7.1 to 2.1.2); then a ninth: CV-CUDA, Holoscan, CUDA-Q, older cuTENSOR, cuQuantum and cuDF,
# torchao, and releases between the others' (cuBLAS 12.2/12.5, cuDNN 9.15, NCCL 2.19/2.23, ...); then a
# tenth: more releases between (NCCL 2.32.6 and 2.28.9, NVSHMEM, cuDSS 0.4, nvCOMP 5.3, cuSPARSELt 0.8.0,
# cuBLAS 13.8 and 12.3, cuFFT 12.2, cuSOLVER 11.5, NPP 12.3, cuDNN 9.23); then an eleventh: DALI for
# CUDA 12, MLX's CUDA back ends, vLLM's FlashAttention 2, AutoGPTQ, and releases between (CuPy 14.2
# for CUDA 12, ONNX Runtime 1.23, spconv/cumm for CUDA 12.6, SGLang's kernels 0.3.5, xformers
# 0.0.32, JAX's CUDA 13 plugin 0.9); then a twelfth: a sweep of the compilers between (CuPy for
# CUDA 11.3, 11.5 and 11.7, PyTorch 2.0.1/2.4.1/2.7.1, TensorFlow 2.13 to 2.19, cuDNN 8.9.2, 9.3
# and 9.8, NCCL 2.21 to 2.27, cuBLAS 12.0 and 12.9, ...) and cuTENSOR for CUDA 11, nvJPEG for
# CUDA 11, CTranslate2 3.24, Warp 1.0 and 1.5, vLLM 0.8.5, SGLang's kernels 0.1.9; then a
# thirteenth, for the sixteenth session's rules (`.nv.compat` tiling, the global 0x5d index):
# releases between the others' with sm_90 and sm_100 code (PyTorch 2.8, cuBLAS 12.8 and 13.1,
# cuDNN 9.7 and 9.16, cuFFT 11.3.3.41, NCCL 2.26, NPP 12.3.3, ...); then a fourteenth, a
# fifteenth, a sixteenth and a seventeenth: more releases between (cuBLAS 13.3 and 12.4.2, cuDNN
# 9.20 and 9.4, NCCL 2.30.7, 2.28.9 for CUDA 13 and 2.17, cuFFT 12.4 and 11.0.8, FlashInfer's
# cubins 0.5.3, 0.6.5 and 0.6.0, SGLang's kernels 0.3.14, 0.3.9 and 0.2.8, PyTorch 2.12.1, cuVS
# 26.6, xformers 0.0.30, cuDF and cuML 25.10, ONNX Runtime 1.25, Warp 1.10, CuPy 14.0 for CUDA
# 13, TensorFlow 2.12, 2.14 and 2.20, ...); then an eighteenth: TensorRT 8.5 and 8.6 (their
# plugin library's hand-assembled kernel), PyTorch 2.10, vLLM 0.11, and releases between (cuDNN
# 9.26, NCCL 2.31, cuBLAS 13.7, NPP 13.0.2, FlashInfer's cubins 0.4.1, xformers 0.0.27, ...);
# then a nineteenth, of older compilers and other build systems: TensorRT 8.4, cuDNN 8.6 and NCCL
# 2.14 for CUDA 11, DALI 1.26, bitsandbytes 0.41, JAX's CUDA 11 plugin 0.4.25, spconv/cumm for
# CUDA 11.7, ONNX Runtime 1.15, CuPy 12.0, vLLM 0.2.7, xformers 0.0.22.
DEFAULT = """
nvidia-cublas==13.10.0.20 nvidia-cublas-cu12==12.9.3.13 nvidia-cublas==13.0.0.19
nvidia-cublas-cu12==12.4.5.8 nvidia-cublas-cu12==12.1.3.1
nvidia-cufft==12.5.0.14 nvidia-cufft-cu12==11.4.1.4 nvidia-cufft==12.0.0.61 nvidia-cufft-cu12==11.0.2.54
nvidia-cusparse==12.9.4.2 nvidia-cusparse-cu12==12.5.10.65 nvidia-cusparse==12.6.3.3
nvidia-cusparse-cu12==12.1.0.106
nvidia-npp==13.2.0.93 nvidia-npp-cu12==12.4.1.87 nvidia-npp==13.0.1.2 nvidia-npp-cu12==12.0.2.50
nvidia-cudnn-cu13==9.28.1.4 nvidia-cudnn-cu12==9.28.0.42 nvidia-cudnn-cu13==9.13.0.50
nvidia-cudnn-cu12==9.1.0.70 nvidia-cudnn-jit-cu13==9.27.0.42
nvidia-nccl-cu13==2.32.3 nvidia-nccl-cu12==2.32.3 nvidia-nccl-cu13==2.27.7 nvidia-nccl-cu12==2.20.5
nvidia-cusolver==12.4.1.2 nvidia-cusolver-cu12==11.7.5.82 nvidia-cusolver==12.0.3.29
nvidia-cusolver-cu12==11.4.5.107
nvidia-cusparselt-cu13==0.10.0 nvidia-cusparselt-cu12==0.8.1
nvidia-cudss-cu13==1.0.0.35 nvidia-cudss-cu12==1.0.0.35
nvidia-libnvcomp-cu13==6.0.0.12 nvidia-libnvcomp-cu12==6.0.0.12
nvidia-nvshmem-cu13==3.8.0 nvidia-nvshmem-cu12==3.8.0
nvidia-cuda-cupti==13.5.25 nvidia-cuda-cupti-cu12==12.9.79 nvidia-cuda-cupti==13.0.85
nvidia-cuda-cupti-cu12==12.4.127
nvidia-cufftmp-cu13==12.1.3.2 nvidia-cufftmp-cu12==11.4.0.6.post1
nvidia-libmathdx-cu13==0.4.2.37 nvidia-libmathdx-cu12==0.3.1.9 nvidia-mathdx==25.6.0
nvidia-nvjpeg2k-cu13==0.11.0.51 nvidia-nvjpeg2k-cu12==0.11.0.51
nvidia-nvimgcodec-cu13==0.9.0.20 nvidia-nvimgcodec-cu12==0.9.0.20
nvidia-nvtiff-cu13==0.8.0.82 nvidia-nvtiff-cu12==0.8.0.82
nvidia-curand==10.4.5.25 nvidia-curand-cu12==10.3.10.19 nvidia-curand-cu12==10.3.2.106
nvidia-nvjpeg==13.3.2.43 nvidia-nvjpeg-cu12==12.4.0.76 nvidia-nvjpeg==13.0.1.86
nvidia-cuda-runtime==13.5.37 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-runtime==13.0.96
nvidia-cuda-runtime-cu12==12.1.105
nvidia-cuda-nvcc==13.5.37 nvidia-cuda-nvcc-cu12==12.9.86
nvidia-cusolvermp-cu13==0.9.1.9318.post1 nvidia-cusolvermp-cu12==0.9.1.9318.post1
nvidia-cublasmp-cu13==0.10.0.3695 nvidia-cublasmp-cu12==0.10.0.3695
nvidia-dali-cuda130==2.4.0
nvidia-cublas-cu11==11.11.3.6 nvidia-cufft-cu11==10.9.0.58 nvidia-cusparse-cu11==11.7.5.86
nvidia-cusolver-cu11==11.4.1.48 nvidia-curand-cu11==10.3.0.86 nvidia-npp-cu11==11.8.0.86
nvidia-nccl-cu11==2.21.5 nvidia-cudnn-cu11==9.10.2.21 nvidia-cuda-runtime-cu11==11.8.89
nvidia-cuda-cupti-cu11==11.8.87
cutensor-cu13==2.8.1 custatevec-cu13==1.15.0 cutensornet-cu13==2.14.0 cudensitymat-cu13==0.7.0
cupy-cuda13x==14.2.0 libcudf-cu13==26.10.2
nvidia-cublas==13.6.2.16 nvidia-cudnn-cu13==9.22.0.52 nvidia-nccl-cu13==2.29.7 nvidia-npp==13.1.2.81
nvidia-cufft==12.3.0.29 nvidia-cusparse==12.7.10.12 nvidia-cusolver==12.2.6.9
nvidia-cuda-cupti==13.3.75 nvidia-nvshmem-cu13==3.5.21 nvidia-cudss-cu13==0.7.1.6
nvidia-libnvcomp-cu13==5.2.0.13 nvidia-cusparselt-cu13==0.9.1 nvidia-cuda-runtime==13.2.86
nvidia-curand==10.4.2.66 nvidia-nvjpeg==13.2.3.58
nvidia-cudnn-cu12==8.9.7.29 nvidia-cudnn-cu12==9.10.2.21 nvidia-cublas-cu12==12.6.4.1
nvidia-cufft-cu12==11.3.0.4 nvidia-cusolver-cu12==11.6.1.9 nvidia-cusparse-cu12==12.3.1.170
nvidia-cusparselt-cu12==0.6.3 nvidia-nccl-cu12==2.26.5 nvidia-npp-cu12==12.3.1.54
nvidia-nvshmem-cu12==3.3.24 warp-lang==1.19.0 libraft-cu12==26.10.0 libcuvs-cu12==26.10.0
cupy-cuda12x==13.6.0 cupy-cuda11x==13.6.0 torch==2.15.0 onnxruntime-gpu==1.31.1
jax-cuda12-plugin==0.8.2 jax-cuda13-plugin==0.10.2 bitsandbytes==0.50.2
tensorflow==2.21.0 vllm==0.34.0 sgl-kernel==0.3.21 flashinfer-cubin==0.6.13 xformers==0.0.35
faiss-gpu-cu12==1.14.1.post1 torchvision==0.29.2 nvidia-cuda-sanitizer-api==13.5.25
nvidia-cuda-sanitizer-api-cu12==12.9.79 mxnet-cu112==1.9.1 nvidia-cublas==13.4.3.11
nvidia-cudnn-cu12==9.18.1.3 nvidia-nccl-cu12==2.24.3 nvidia-nvshmem-cu12==3.1.7
nvidia-cusparselt-cu12==0.7.1 nvidia-cudss-cu12==0.5.0.16 nvidia-libnvcomp-cu12==5.1.0.21
nvidia-npp-cu12==12.2.5.30 nvidia-cufft-cu12==11.2.6.59 cupy-cuda12x==12.3.0
libcuml-cu12==26.10.0 libcuml-cu13==26.10.0 libcugraph-cu12==26.10.0 libcugraph-cu13==26.10.0
cucim-cu12==26.10.0 transformer-engine-cu12==2.20.2 transformer-engine-cu13==2.20.2
cuequivariance-ops-cu12==0.13.0 cuequivariance-ops-torch-cu12==0.13.0
nvidia-cutlass-dsl-libs-base==4.8.1 paddlepaddle-gpu==2.6.2 fbgemm-gpu==1.9.0 open3d==0.20.0
spconv-cu120==2.3.6 cumm-cu120==0.6.3 ctranslate2==4.8.5 xgboost==3.2.0 catboost==1.2.10
lmdeploy==0.18.0 onnxruntime-genai-cuda==0.18.0 autoawq-kernels==0.0.9
deepspeed-kernels==0.0.1.dev1698255861 gpu4pyscf-cuda12x==1.9.2 gpu4pyscf-libxc-cuda12x==0.9.0
torchaudio==2.11.1
nvidia-cublas-cu12==12.8.4.1 nvidia-cudnn-cu12==9.5.1.17 nvidia-nccl-cu12==2.18.1
nvidia-npp-cu12==12.1.0.40 nvidia-cusolver-cu12==11.5.4.101 nvidia-cusparse-cu12==12.2.0.103
nvidia-nvshmem-cu12==3.4.5 nvidia-cuda-cupti-cu12==12.6.80 nvidia-curand-cu12==10.3.7.77
nvidia-cusparselt-cu12==0.8.1 nvidia-cudss-cu12==0.6.0.5 nvidia-nvcomp-cu12==4.2.0.14
onnxruntime-gpu==1.16.3 tensorflow==2.15.1 torch==2.1.2 jax-cuda12-plugin==0.4.30
jax-cuda12-pjrt==0.4.30 bitsandbytes==0.42.0 custatevec-cu11==1.9.0.post0
faiss-gpu==1.7.2@3.10 cupy-cuda102==12.3.0@3.9 cupy-cuda11x==11.6.0@3.9 spconv-cu118==2.3.8@3.9
cumm-cu118==0.8.2@3.9 mxnet-cu102==1.9.1@3.9
cupy-cuda80==7.8.0@3.8 cupy-cuda90==8.6.0@3.8 cupy-cuda91==7.8.0@3.7 cupy-cuda92==9.6.0@3.8
cupy-cuda100==9.6.0@3.8 cupy-cuda101==9.6.0@3.8 mxnet-cu92==1.5.1.post0@3.7
mxnet-cu101==1.8.0.post0@3.8 tensorflow-gpu==1.15.5@3.7 tensorflow-gpu==2.3.0@3.8 torch==1.7.1@3.8
cupy-cuda110==12.3.0@3.8 cupy-cuda111==12.3.0@3.8 cupy-cuda112==10.6.0@3.8 cupy-cuda114==10.6.0@3.8
cupy-cuda116==10.6.0@3.8 nvidia-cublas-cu11==11.10.3.66 nvidia-cudnn-cu11==8.5.0.96
paddlepaddle-gpu==2.5.2@3.8 tensorflow==2.11.0@3.8 torch==1.13.1@3.8
cvcuda-cu12==0.19.0 cvcuda-cu13==0.16.0 cvcuda-cu11==0.15.0 cuda-quantum-cu13==0.13.0
holoscan-cu12==4.6.0 holoscan-cu13==3.7.0 torchao==0.18.0 torchao==0.10.0
cutensor-cu12==2.0.2 cutensor-cu12==1.7.0 cutensornet-cu12==2.5.0 custatevec-cu12==1.6.0.post1
libcudf-cu12==24.12.0 spconv-cu124==2.3.8 nvidia-cublas-cu12==12.2.5.6 nvidia-cublas-cu12==12.5.3.2
nvidia-cudnn-cu12==9.15.1.9 nvidia-nccl-cu12==2.23.4 nvidia-nccl-cu12==2.19.3
nvidia-npp-cu12==12.2.1.4 nvidia-cufft-cu12==11.2.1.3 nvidia-cusparse-cu12==12.5.4.2
nvidia-cusparselt-cu12==0.6.2 nvidia-cusolver-cu12==11.6.4.69 nvidia-nvshmem-cu12==3.6.5
nvidia-cudss-cu12==0.8.0.10 nvidia-nvjpeg-cu12==12.2.0.2 torch==2.6.0 torch==2.9.1
tensorflow==2.18.1 jax-cuda12-plugin==0.6.2 cupy-cuda12x==13.3.0 cupy-cuda11x==13.3.0
xformers==0.0.29.post3 onnxruntime-gpu==1.21.1 vllm==0.20.0
nvidia-nccl-cu13==2.32.6 nvidia-nccl-cu12==2.28.9 nvidia-nvshmem-cu13==3.7.2 nvidia-nvshmem-cu12==3.2.5
nvidia-cudss-cu12==0.4.0.2 nvidia-libnvcomp-cu12==5.3.0.16 nvidia-cusparselt-cu12==0.8.0
nvidia-cublas==13.8.2.12 nvidia-cufft==12.2.0.57 nvidia-cusolver-cu12==11.5.2.141 nvidia-npp-cu12==12.3.3.100
nvidia-cublas-cu12==12.3.4.1 nvidia-cudnn-cu12==9.23.2.1
nvidia-dali-cuda120==2.4.0 mlx-cuda-12==0.32.4 mlx-cuda-13==0.32.4 vllm-flash-attn==2.6.2
cupy-cuda12x==14.2.0 auto-gptq==0.7.1 onnxruntime-gpu==1.23.2 spconv-cu126==2.3.8 cumm-cu126==0.8.2
sgl-kernel==0.3.5 xformers==0.0.32.post2 jax-cuda13-plugin==0.9.0
    cupy-cuda113==10.6.0@3.8 cupy-cuda115==10.6.0@3.8 cupy-cuda117==10.6.0@3.8 cutensor-cu11==2.2.0
    nvidia-nvjpeg-cu11==11.9.0.86 ctranslate2==3.24.0 bitsandbytes==0.45.5 bitsandbytes==0.43.3
    jax-cuda12-plugin==0.5.3 jax-cuda12-plugin==0.7.2 onnxruntime-gpu==1.19.2 onnxruntime-gpu==1.22.0
    nvidia-nccl-cu12==2.21.5 nvidia-nccl-cu12==2.22.3 nvidia-nccl-cu12==2.25.1 nvidia-nccl-cu12==2.27.3
    nvidia-cudnn-cu12==8.9.2.26 nvidia-cudnn-cu12==9.3.0.75 nvidia-cudnn-cu12==9.8.0.87
    torch==2.0.1 torch==2.4.1 torch==2.7.1 tensorflow==2.13.1 tensorflow==2.16.2 tensorflow==2.17.1
    tensorflow==2.19.0 nvidia-cublas-cu12==12.9.1.4 nvidia-cublas-cu12==12.0.2.224
    nvidia-cusolver-cu12==11.7.1.2 nvidia-cusparse-cu12==12.5.8.93 nvidia-curand-cu12==10.3.5.147
    nvidia-cufft-cu12==11.3.3.83 nvidia-npp-cu12==12.4.0.27 xformers==0.0.28.post3 vllm==0.8.5
    sgl-kernel==0.1.9 warp-lang==1.5.0 warp-lang==1.0.0 transformer-engine-cu12==2.4.0
    cuequivariance-ops-torch-cu12==0.5.0 nvidia-nvcomp-cu12==4.1.0.6 nvidia-cufile-cu12==1.13.1.3
    nvidia-nvshmem-cu12==3.3.9 cutensor-cu12==2.4.1 nvidia-cudss-cu12==0.7.0.20 cupy-cuda12x==13.0.0
    nvidia-cuda-cupti-cu12==12.8.90 nvidia-cuda-runtime-cu12==12.4.127
    torch==2.8.0 nvidia-cudnn-cu12==9.7.1.26 nvidia-cublas-cu12==12.8.3.14 nvidia-nccl-cu12==2.26.2
    nvidia-cusparse-cu12==12.5.7.53 nvidia-cusolver-cu12==11.7.3.90 nvidia-nvshmem-cu12==3.3.20
    xformers==0.0.31 cupy-cuda12x==13.4.1 nvidia-cublas==13.1.0.3 nvidia-cufft-cu12==11.3.3.41
    nvidia-npp-cu12==12.3.3.65 nvidia-cudnn-cu13==9.16.0.29 nvidia-curand-cu12==10.3.9.90
    nvidia-cublas==13.3.0.5 nvidia-cudnn-cu13==9.20.0.48 nvidia-nccl-cu13==2.30.7 nvidia-cufft==12.4.0.43
    nvidia-cusparse==12.8.6.72 nvidia-npp==13.0.3.3 nvidia-nvshmem-cu13==3.6.5 nvidia-cusolver==12.3.5.3
    nvidia-cudss-cu13==0.8.0.10 nvidia-libnvcomp-cu13==5.3.0.16 flashinfer-cubin==0.5.3 sgl-kernel==0.3.14
    nvidia-cusparselt-cu13==0.9.0 nvidia-cuda-cupti==13.2.86 torch==2.12.1 libcuvs-cu13==26.6.0
    nvidia-cufft-cu12==11.0.8.103 nvidia-cusparse-cu12==12.1.3.153 nvidia-curand-cu12==10.3.4.107
    nvidia-cusolver-cu12==11.6.3.83 nvidia-cuda-cupti-cu12==12.3.101 nvidia-npp-cu12==12.2.3.2
    nvidia-nccl-cu12==2.17.1 nvidia-nvjpeg-cu12==12.3.1.117 nvidia-cublas-cu12==12.4.2.65
    nvidia-cuda-runtime-cu12==12.6.77 sgl-kernel==0.3.9 flashinfer-cubin==0.6.5 nvidia-cudnn-cu12==9.4.0.58
    nvidia-cuda-cupti==13.1.115 nvidia-cusolver==12.1.0.51 nvidia-nccl-cu13==2.28.9
    nvidia-nvshmem-cu12==3.5.19 nvidia-cudss-cu12==0.7.1.4 nvidia-nvshmem-cu13==3.7.0 xformers==0.0.30
    nvidia-npp==13.1.0.59
    bitsandbytes==0.47.0 cupy-cuda13x==14.0.1 warp-lang==1.10.0 libcudf-cu12==25.10.0 jax-cuda12-plugin==0.6.0
    torchaudio==2.8.0 libcuml-cu12==25.10.0 nvidia-cublas-cu12==12.6.0.22 nvidia-cudnn-cu12==9.2.1.18
    nvidia-cufft-cu12==11.2.3.18 nvidia-cusparse-cu12==12.4.1.24 nvidia-npp-cu12==12.3.0.116
    nvidia-curand-cu12==10.3.6.82 nvidia-cusolver-cu12==11.6.0.99 nvidia-cudnn-cu13==9.14.0.64
    nvidia-cublas==13.2.0.9 nvidia-cufft==12.1.0.31 nvidia-cusparse==12.7.3.1 onnxruntime-gpu==1.25.1
    nvidia-nccl-cu12==2.16.5 nvidia-nccl-cu12==2.28.3
    tensorflow==2.12.1 tensorflow==2.14.1 tensorflow==2.20.0 jax-cuda12-plugin==0.5.0 cupy-cuda12x==13.2.0
    flashinfer-cubin==0.6.0 sgl-kernel==0.2.8 nvidia-cublas==13.5.1.27 nvidia-cudnn-cu13==9.18.0.77
    nvidia-cudnn-cu13==9.21.0.82 nvidia-cusolver==12.2.0.1 nvidia-npp==13.1.2.48 nvidia-nvjpeg==13.2.1.68
    tensorrt==8.6.0@3.10 tensorrt==8.5.3.1@3.10 torch==2.10.0 vllm==0.11.0 nvidia-cudnn-cu12==9.26.1.1
    nvidia-nccl-cu12==2.31.2 nvidia-cublas==13.7.0.27 nvidia-cufft==12.1.0.78 nvidia-cusparse==12.8.1.7
    nvidia-npp==13.0.2.21 xformers==0.0.27.post2 flashinfer-cubin==0.4.1 xgboost==2.1.4
    faiss-gpu-cu12==1.11.0 ctranslate2==4.5.0
    nvidia-tensorrt==8.4.1.5@3.10 nvidia-cudnn-cu11==8.6.0.163 nvidia-nccl-cu11==2.14.3
    nvidia-dali-cuda110==1.26.0 bitsandbytes==0.41.1 jax-cuda11-pjrt==0.4.25 jax-cuda11-plugin==0.4.25
    spconv-cu117==2.3.6 cumm-cu117==0.4.11 onnxruntime-gpu==1.15.1 cupy-cuda11x==12.0.0 vllm==0.2.7
    xformers==0.0.22
""".split()

FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190


# ---- where bytes lie: sections of an ELF, members of an archive ------------------------------

def elf_regions(b, base=0):
    """(start, end, label, address) of every section with file bytes of the ELF64 LE at b, and of
    the bytes outside them (label "(outside sections)"); `address` is where the start is loaded
    (sh_addr; 0 in an object file), for the alignment of what lies inside. None if b is no such
    ELF with a sane table."""
    if len(b) < 64 or b[:4] != ELF_MAGIC or b[4] != 2 or b[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(b):
        return None
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx] if shstrndx < shnum else None

    def name(h):
        if not names or names[4] + h[0] >= len(b):
            return "?"
        s = b[names[4] + h[0]:b.find(b"\0", names[4] + h[0])]
        return s.decode("utf-8", "replace") or "(unnamed)"

    spans = sorted((h[4], min(h[4] + h[5], len(b)), name(h), h[3]) for h in hdrs if h[1] != 8 and h[5] > 0 and h[4] < len(b))
    out, at = [], 0
    for lo, hi, n, addr in spans:
        start = max(lo, at)  # overlapping sections: each byte once
        if start > at:
            out.append((base + at, base + start, "(outside sections)", at))
        if hi > start:
            out.append((base + start, base + hi, n, addr + start - lo))
        at = max(at, hi)
    if at < len(b):
        out.append((base + at, base + len(b), "(outside sections)", at))
    return out


def ar_members(b):
    """(start, end, name) of every member of a System V / GNU ar archive."""
    if not b.startswith(b"!<arch>\n"):
        return None
    out, at, longnames = [], 8, b""
    while at + 60 <= len(b):
        h = b[at:at + 60]
        name = h[:16].decode("latin-1").rstrip()
        try:
            size = int(h[48:58].decode("latin-1").strip() or "0")
        except ValueError:
            break
        lo, hi = at + 60, min(at + 60 + size, len(b))
        if name == "//":
            longnames = b[lo:hi]
        elif name.startswith("/") and name[1:].isdigit() and longnames:
            k = int(name[1:])
            name = longnames[k:longnames.find(b"\n", k)].decode("latin-1").rstrip("/")
        else:
            name = name.rstrip("/")
        if name not in ("", "/", "//", "/SYM64"):
            out.append((lo, hi, name))
        at = hi + (hi & 1)
    return out


def regions(b):
    """(start, end, place, address) of the parts of a file to scan: ELF sections, archive members'
    sections, or the whole file."""
    if is_device_elf(b):
        return [(0, len(b), "(file)", 0)]
    r = elf_regions(b)
    if r is not None:
        return r
    members = ar_members(b)
    if members is not None:
        out = []
        for lo, hi, name in members:
            m = b[lo:hi]
            sub = None if is_device_elf(m) else elf_regions(m, lo)
            out += [(a, z, f"{name}:{s}", addr) for a, z, s, addr in sub] if sub else [(lo, hi, name, 0)]
        return out
    return [(0, len(b), "(file)", 0)]


def is_device_elf(b):
    """Whether b is itself a device ELF (a `.cubin` file or archive member): scanned whole, as
    one image, not split into its own sections."""
    return len(b) >= 64 and b[:4] == ELF_MAGIC and struct.unpack_from("<H", b, 18)[0] == EM_CUDA


# ---- what is found in them --------------------------------------------------------------------

def entry_codes(c):
    """Entry count and codes ('sm_90', 'compute_90', 'lto_90', '+z'/'+l' for zstd/LZ4) of a container."""
    codes, off, total = [], 16, len(c)
    while off + 64 <= total:
        kind, _, hs, ps = struct.unpack_from("<HHIQ", c, off)
        arch, = struct.unpack_from("<I", c, off + 28)
        flags, = struct.unpack_from("<Q", c, off + 40)
        if hs < 64 or off + hs + ps > total:
            codes.append("?")
            break
        name = {1: "compute", 2: "sm", 8: "lto"}.get(kind, f"kind{kind}")
        suffix = "a" if flags & 0x100000 else ("f" if flags & 0x200000 else "")
        comp = "+l" if flags & 0x2000 else ("+z" if flags & 0x8000 else "")
        codes.append(f"{name}_{arch}{suffix}{comp}")
        off += hs + ps
    return codes


def device_elf_size(b, at, end):
    """Bytes of the device ELF at b[at:], as far as its tables reach; None if it is none."""
    if at + 64 > end or b[at + 4] != 2 or b[at + 5] != 1:
        return None
    if struct.unpack_from("<H", b, at + 18)[0] != EM_CUDA:
        return None
    phoff, shoff = struct.unpack_from("<QQ", b, at + 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", b, at + 54)
    size = 64
    if phnum:
        size = max(size, phoff + phnum * phentsize)
    if shnum:
        size = max(size, shoff + shnum * shentsize)
        if at + shoff + shnum * 64 > end or shentsize < 64:
            return None
        for i in range(shnum):
            _, ty, _, _, off, sz = struct.unpack_from("<IIQQQQ", b, at + shoff + i * shentsize)
            if ty != 8:
                size = max(size, off + sz)
    for i in range(phnum):
        if at + phoff + (i + 1) * 56 > end:
            return None
        off, = struct.unpack_from("<Q", b, at + phoff + i * 56 + 8)
        filesz, = struct.unpack_from("<Q", b, at + phoff + i * 56 + 32)
        size = max(size, off + filesz)
    return size if at + size <= end else None


def scan(b, lo, hi, addr):
    """(offset, size, kind) of every container and bare device ELF in b[lo:hi], which is loaded
    at `addr` (containers are 8-aligned there)."""
    found, covered = [], []
    at = b.find(FATBIN_MAGIC, lo, hi)
    while at >= 0:
        nxt = at + 4
        if (addr + at - lo) % 8 == 0 and at + 16 <= hi:
            ver, hsize, psize = struct.unpack_from("<HHQ", b, at + 4)
            if ver == 1 and hsize == 16 and at + 16 + psize <= hi:
                found.append((at, 16 + psize, "fatbin"))
                covered.append((at, at + 16 + psize))
                nxt = at + 16 + psize
        at = b.find(FATBIN_MAGIC, nxt, hi)
    # Device ELFs in the gaps between containers (those inside one are its entries).
    gaps, at = [], lo
    for a, z in covered:
        gaps.append((at, a))
        at = z
    gaps.append((at, hi))
    for glo, ghi in gaps:
        at = b.find(ELF_MAGIC, glo, ghi)
        while at >= 0:
            nxt = at + 4
            size = device_elf_size(b, at, ghi)
            if size:
                found.append((at, size, "cubin"))
                nxt = at + size
            at = b.find(ELF_MAGIC, nxt, ghi)
    return found


def wheel_name(path):
    base = os.path.basename(path)
    parts = base.split("-")
    return f"{parts[0]}-{parts[1]}" if len(parts) > 1 else base


def safe(s):
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", s)[:60]


def extract(out, wheels, cap):
    os.makedirs(out, exist_ok=True)
    rows, written, seen = [], 0, {}
    pending = []  # (size, filename, bytes) when a cap is set: smallest first
    for whl in wheels:
        wname = wheel_name(whl)
        n_here = 0
        with zipfile.ZipFile(whl) as z:
            for info in z.infolist():
                if info.is_dir() or info.file_size < 64:
                    continue
                with z.open(info) as f:
                    head = f.read(8)
                # Text, headers, Python: no device code (a fatbin inside would need 8-aligned binary bytes).
                if info.filename.endswith((".py", ".h", ".hpp", ".cuh", ".txt", ".md", ".json", ".pyi", ".cmake", ".pc")):
                    continue
                b = z.read(info)
                fname = info.filename
                for lo, hi, place, addr in regions(b):
                    for at, size, kind in scan(b, lo, hi, addr):
                        blob = b[at:at + size]
                        sha = hashlib.sha256(blob).hexdigest()
                        codes = entry_codes(blob) if kind == "fatbin" else ["elf"]
                        if sha not in seen:
                            ext = "fatbin" if kind == "fatbin" else "cubin"
                            lib = safe(os.path.basename(fname).split(".so")[0].split(".a")[0])
                            fn = f"{safe(wname)}_{lib}_{sha[:16]}.{ext}"
                            seen[sha] = fn
                            if cap is None:
                                with open(os.path.join(out, fn), "wb") as o:
                                    o.write(blob)
                                written += size
                            else:
                                pending.append((size, fn, blob))
                        rows.append((wname, fname, place, at - lo, size, sha, seen[sha], len(codes), ",".join(codes)))
                        n_here += 1
                del b
        print(f"{wname}: {n_here} containers/device ELFs", file=sys.stderr, flush=True)
    if cap is not None:
        keep = set()
        for size, fn, blob in sorted(pending, key=lambda p: p[0]):
            if written + size > cap << 20:
                continue
            with open(os.path.join(out, fn), "wb") as o:
                o.write(blob)
            written += size
            keep.add(fn)
        rows = [r for r in rows if r[6] in keep]
    with open(os.path.join(out, ".manifest.tsv"), "w") as m:
        m.write("wheel\tfile\tplace\toffset\tsize\tsha256\timage\tentries\tcodes\n")
        for r in rows:
            m.write("\t".join(map(str, r)) + "\n")
    distinct = len({r[5] for r in rows})
    print(f"{len(rows)} found, {distinct} distinct, {written / 2**20:.1f} MiB written to {out}")


# ---- subset -----------------------------------------------------------------------------------

def read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f]


def subset(budget_mib, corpus, out, also=None):
    rows = read_tsv(os.path.join(corpus, ".manifest.tsv"))
    by_image = {}
    for r in rows:
        by_image.setdefault(r["image"], r)
    size = {i: int(r["size"]) for i, r in by_image.items()}
    verdicts = {}
    for name in (".verdicts-baseline.tsv", ".verdicts.tsv"):
        p = os.path.join(corpus, name)
        if os.path.exists(p):
            for v in read_tsv(p):
                verdicts.setdefault(v["class"], []).append(v["image"])
    budget, chosen, used = budget_mib << 20, [], 0

    def take(i):
        nonlocal used
        if i in chosen or i not in size or used + size[i] > budget or not os.path.exists(os.path.join(corpus, i)):
            return False
        chosen.append(i)
        used += size[i]
        return True

    # The smallest of every refusal class first: they are why the subset exists.
    for cls in sorted(verdicts):
        if cls != "accepted":
            for i in sorted(set(verdicts[cls]), key=lambda i: (size.get(i, 1 << 62), i)):
                if take(i):
                    break
    for name in open(also).read().split() if also else []:
        if name not in chosen and not take(name):
            print(f"not taken (absent, or past the budget): {name}", file=sys.stderr)
    per_wheel = collections.defaultdict(list)
    for r in rows:
        per_wheel[r["wheel"]].append(r["image"])
    for w in per_wheel:
        per_wheel[w] = sorted(set(per_wheel[w]), key=lambda i: (size[i], i))
    # Per wheel: smallest, compressed and plain, and the largest that fits a per-wheel share.
    share = budget // (4 * max(1, len(per_wheel)))
    for w, imgs in sorted(per_wheel.items()):
        take(imgs[0])
        comp = [i for i in imgs if "+z" in by_image[i]["codes"] or "+l" in by_image[i]["codes"]]
        plain = [i for i in imgs if i not in comp]
        for group in (comp, plain):
            if group:
                take(group[0])
        big = [i for i in imgs if size[i] <= share]
        if big:
            take(big[-1])
    # One of every place kind (the section or member a container came from).
    places = collections.defaultdict(list)
    for r in rows:
        places[re.sub(r"^.*:", "", r["place"])].append(r["image"])
    for p, imgs in sorted(places.items()):
        for i in sorted(set(imgs), key=lambda i: (size[i], i)):
            if take(i):
                break
    # Then round-robin over the wheels, smallest first, until nothing more fits.
    progress = True
    while progress:
        progress = False
        for w, imgs in sorted(per_wheel.items()):
            for i in imgs:
                if i not in chosen and size[i] <= share:
                    progress |= take(i)
                    break
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):  # a subset replaces the last one
        p = os.path.join(out, f)
        if os.path.isfile(p) and (f.endswith((".fatbin", ".cubin")) or f == ".manifest.tsv"):
            os.remove(p)
    for i in chosen:
        with open(os.path.join(corpus, i), "rb") as s, open(os.path.join(out, i), "wb") as d:
            d.write(s.read())
    with open(os.path.join(out, ".manifest.tsv"), "w") as m:
        cols = list(rows[0].keys())
        m.write("\t".join(cols) + "\n")
        for r in rows:
            if r["image"] in chosen:
                m.write("\t".join(r[c] for c in cols) + "\n")
    wheels = len({by_image[i]["wheel"] for i in chosen})
    print(f"{len(chosen)} images from {wheels} wheels, {used / 2**20:.1f} MiB in {out}")
    if also:
        campaign(corpus, os.path.join(out, ".campaign"), open(also).read().split())


def campaign_elf_entry(c, sm=90):
    """The cubin of container c's first ELF entry for `sm` (the GPU the campaign runs on: only
    such an entry reaches CUDA's loader), else of its first ELF entry, decompressed; None if it
    cannot be had."""
    off, first, chosen = 16, None, None
    while off + 64 <= len(c):
        kind, _, hs, ps = struct.unpack_from("<HHIQ", c, off)
        entry_sm, = struct.unpack_from("<I", c, off + 0x1c)
        if hs < 64:
            break
        if kind == 2:
            first = off if first is None else first
            if entry_sm == sm and chosen is None:
                chosen = off
        off += hs + ps
    off = chosen if chosen is not None else first
    if off is None:
        return None
    _, _, hs, ps = struct.unpack_from("<HHIQ", c, off)
    csize, = struct.unpack_from("<I", c, off + 16)
    flags, _, usize = struct.unpack_from("<QQQ", c, off + 40)
    p = c[off + hs:off + hs + ps]
    try:
        if flags & 0x2000:
            import lz4.block
            return lz4.block.decompress(p[:csize], uncompressed_size=usize)
        if flags & 0x8000:
            import zstandard
            return zstandard.ZstdDecompressor().decompress(p[:csize], max_output_size=usize)
    except ImportError:
        return None
    return p


def campaign_list(corpus, per_wheel=1):
    """Per wheel, the smallest `per_wheel` fatbins of up to 256 KiB that hold sm_90 code (what a
    load on the H200 hands CUDA): a LIST for `--subset ... --also`."""
    by_wheel = collections.defaultdict(dict)
    for r in read_tsv(os.path.join(corpus, ".manifest.tsv")):
        codes = r["codes"].split(",")
        if r["image"].endswith(".fatbin") and int(r["size"]) <= 256 << 10 and any(c.split("+")[0] == "sm_90" for c in codes):
            by_wheel[r["wheel"]][r["image"]] = int(r["size"])
    for wheel in sorted(by_wheel):
        for name in sorted(by_wheel[wheel], key=lambda n: (by_wheel[wheel][n], n))[:per_wheel]:
            print(name)


def campaign(corpus, out, names):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    n = 0
    for name in names:
        p = os.path.join(corpus, name)
        if not os.path.exists(p):
            continue
        data = open(p, "rb").read()
        if len(data) <= 256 << 10:
            open(os.path.join(out, name), "wb").write(data)
            n += 1
        cubin = None if data[:4] == ELF_MAGIC else campaign_elf_entry(data)
        if cubin and len(cubin) <= 512 << 10 and cubin[:4] == ELF_MAGIC:
            open(os.path.join(out, name.rsplit(".", 1)[0] + ".e0.cubin"), "wb").write(cubin)
            n += 1
    print(f"{n} campaign images in {out}")


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    if args[0] == "--campaign-list":
        if len(args) not in (2, 3):
            sys.exit(__doc__)
        return campaign_list(args[1], int(args[2]) if len(args) == 3 else 1)
    if args[0] == "--subset":
        if len(args) not in (4, 6) or (len(args) == 6 and args[4] != "--also"):
            sys.exit(__doc__)
        return subset(int(args[1]), args[2], args[3], args[5] if len(args) == 6 else None)
    out, specs, dirs, cap = args[0], [], [], None
    i = 1
    while i < len(args):
        if args[i] == "--max-mib":
            cap = int(args[i + 1]); i += 2
        elif args[i] == "--wheels":
            dirs.append(args[i + 1]); i += 2
        else:
            specs.append(args[i]); i += 1
    wheels = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d) if f.endswith(".whl"))
    if not specs and not dirs:
        specs = DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            # SPEC@3.9: a wheel built only for an older Python (CUDA 10 and 11 era packages).
            spec, _, py = spec.partition("@")
            older = ["--python-version", py, "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                     "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux1_x86_64"] if py else []
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, *older, spec],
                           check=True)
        wheels += sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl"))
        extract(out, wheels, cap)


if __name__ == "__main__":
    main()
