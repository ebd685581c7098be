"""cuda.core's persistent program cache beside cudyn's (cpp-tests/bench/cache_compare.cpp), the same
three kernels (small, large, CUB BlockReduce + BlockScan): a cold compile into a
FileStreamProgramCache, a hit in the same process, and a hit in a fresh Python process (the time
of Program(...).compile(cache=...) + get_kernel only; the interpreter's start and the import are
printed apart). Run on the GPU machine:
    python3 benches/cuda_core_cache.py [runs=7]
"""
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

T0 = time.perf_counter()
try:
    from cuda.core import Device, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Device, Program, ProgramOptions
try:
    from cuda.core import ObjectCode
    from cuda.core.utils import FileStreamProgramCache, make_program_cache_key
except ImportError:
    FileStreamProgramCache = None
T_IMPORT = time.perf_counter() - T0

SMALL = 'extern "C" __global__ void k_small(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2.0f + 1.0f; }\n'
CUB = ('#include <cub/block/block_reduce.cuh>\n#include <cub/block/block_scan.cuh>\n'
       'extern "C" __global__ void k_cub(const int *in, int *out) {\n'
       '  using R = cub::BlockReduce<int, 128>; using S = cub::BlockScan<int, 128>;\n'
       '  __shared__ union { typename R::TempStorage r; typename S::TempStorage s; } t;\n'
       '  int v = in[threadIdx.x]; int sum = R(t.r).Sum(v); __syncthreads(); int x; S(t.s).ExclusiveSum(v, x);\n'
       '  out[threadIdx.x] = x + (threadIdx.x == 0 ? sum : 0); }\n')


def large():
    s = "template <int N> __device__ float poly(float x) { float r = 0.f;\n#pragma unroll\n for (int i = 0; i < N; ++i) r = r * x + (float)(i % 7) * 0.5f; return r; }\n"
    s += 'extern "C" __global__ void k_large(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; float v = x[i];\n'
    for k in range(1, 49):
        s += f"  v += poly<{8 * k}>(v * 0.001f);\n"
    return s + "  x[i] = v; }\n"


KERNELS = [("small", SMALL, "k_small"), ("large", large(), "k_large"), ("CUB", CUB, "k_cub")]


def compile_once(dev, src, name, cache):
    """One compile through the cache, the way cuda.core's documentation says to when headers come
    from an include path: the caller supplies a digest of the headers (here the CCCL version
    headers' bytes, what a user would reasonably hash; cuda.core does not scan includes)."""
    inc = os.environ.get("CUDA_PATH", "/usr/local/cuda") + "/include"
    arch = "sm_" + "".join(str(x) for x in dev.compute_capability)
    t0 = time.perf_counter()
    if "#include" in src:
        opts = ProgramOptions(arch=arch, include_path=[inc, inc + "/cccl"])
        digest = hashlib.sha256()
        for h in ("cccl/cub/version.cuh", "cccl/cuda/std/__cccl/version.h"):
            with open(os.path.join(inc, h), "rb") as f:
                digest.update(f.read())
        key = make_program_cache_key(code=src, code_type="c++", options=opts, target_type="cubin", extra_digest=digest.digest())
        data = cache.get(key)
        if data is None:
            mod = Program(src, code_type="c++", options=opts).compile("cubin")
            cache[key] = mod
        else:
            mod = ObjectCode.from_cubin(data)
    else:
        opts = ProgramOptions(arch=arch)
        mod = Program(src, code_type="c++", options=opts).compile("cubin", cache=cache)
    mod.get_kernel(name)
    return (time.perf_counter() - t0) * 1e3


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        dev = Device(0)
        dev.set_current()
        _, src, name = KERNELS[int(sys.argv[2])]
        with FileStreamProgramCache(sys.argv[3]) as cache:
            ms = compile_once(dev, src, name, cache)
        print(f"{ms:.4f} {T_IMPORT * 1e3:.1f}")
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    if FileStreamProgramCache is None:
        print("this cuda.core has no cuda.core.utils.FileStreamProgramCache")
        return
    dev = Device(0)
    dev.set_current()
    print(f"cuda.core FileStreamProgramCache on {dev.name}; medians of {runs} runs; import took {T_IMPORT * 1e3:.0f} ms")
    for i, (label, src, name) in enumerate(KERNELS):
        with tempfile.TemporaryDirectory() as d:
            with FileStreamProgramCache(d) as cache:
                cold = compile_once(dev, src, name, cache)
                hot = statistics.median(compile_once(dev, src, name, cache) for _ in range(runs))
            fresh = []
            for _ in range(runs):
                out = subprocess.run([sys.executable, __file__, "--child", str(i), d], capture_output=True, text=True, check=True)
                fresh.append(float(out.stdout.split()[0]))
            print(f"{label:6s} cold compile + load {cold:10.3f} ms | hit, same process {hot:8.3f} ms | hit, fresh process {statistics.median(fresh):8.3f} ms")


main()
