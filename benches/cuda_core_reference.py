"""Reference row from NVIDIA's cuda.core, timed the way cpp-tests/bench/launch_bench.cu times
cudyn: the same empty-kernel launch loop (median over rounds of per-launch host time) and the
same small/large source compile + load, cold. Run on the GPU machine:
    python3 benches/cuda_core_reference.py [out.json] [rounds=9] [launches=100000]
"""
import json
import statistics
import sys
import time

try:  # cuda.core >= 0.4 exports at the top level; older releases under .experimental
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
except ImportError:
    from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch

SMALL = 'extern "C" __global__ void k_small(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2.0f + 1.0f; }\n'


def large_source():
    s = "template <int N> __device__ float poly(float x) { float r = 0.f;\n#pragma unroll\n for (int i = 0; i < N; ++i) r = r * x + (float)(i % 7) * 0.5f; return r; }\n"
    s += 'extern "C" __global__ void k_large(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; float v = x[i];\n'
    for k in range(1, 49):
        s += f"  v += poly<{8 * k}>(v * 0.001f);\n"
    s += "  x[i] = v; }\n"
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    arch = "".join(str(x) for x in dev.compute_capability)
    opts = ProgramOptions(arch=f"sm_{arch}")
    empty = Program('extern "C" __global__ void empty_kernel() {}', code_type="c++", options=opts).compile("cubin")
    k = empty.get_kernel("empty_kernel")
    cfg = LaunchConfig(grid=1, block=32)
    launch(stream, cfg, k)
    stream.sync()
    per_launch = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(launches):
            launch(stream, cfg, k)
        t1 = time.perf_counter()
        stream.sync()
        per_launch.append((t1 - t0) / launches * 1e6)
    compile_rows = []
    for name, src, kname in (("small kernel", SMALL, "k_small"), ("large kernel", large_source(), "k_large")):
        times = []
        for r in range(5):
            salted = f"#define CUDYN_BENCH_SALT {r}{time.time_ns()}\n" + src
            t0 = time.perf_counter()
            mod = Program(salted, code_type="c++", options=opts).compile("cubin")
            mod.get_kernel(kname)  # cuda.core loads lazily: force the load
            t1 = time.perf_counter()
            times.append((t1 - t0) * 1e3)
        compile_rows.append({"name": name, "cold_ms": statistics.median(times)})
    res = {
        "cuda_core_launch_us": statistics.median(per_launch),
        "rounds_us": per_launch,
        "compile": compile_rows,
    }
    print(f"cuda.core launch (empty kernel):      {res['cuda_core_launch_us']:.3f} us/launch")
    for c in compile_rows:
        print(f"cuda.core compile + load, {c['name']}: {c['cold_ms']:.3f} ms (cold, no cache)")
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
