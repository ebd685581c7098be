// Benchmark (not a test): cudyn's compile cache against jitify2's, side by side on one GPU.
// For three kernels (small, large, and one using CUB's BlockReduce + BlockScan) it prints:
//   - the raw load of the kernel's cubin (cudaLibraryLoadData), the baseline;
//   - in one process, a repeated compile lookup (memory tier) and a cached compile + load;
//   - in a fresh process (this program re-run as a child, the cache folder already filled by an
//     earlier process, CUDA already initialised as in a program about to launch), the first
//     compile lookup: a disk hit, with whatever the cache must open first, and the time from
//     main() to that first kernel;
//   - the same for jitify2 when it is built in (-DCUDYN_JITIFY2_DIR=<folder with jitify2.hpp>):
//     its in-memory hit and its file-cache hit in a fresh process (the program preprocessed by
//     the parent and handed to the child serialized, as an application preprocesses offline).
// Each figure is the median of several runs.
//   usage: cache_compare [runs=7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>
#include <cuda_runtime.h>
#include "cudyn.h"
#ifdef CUDYN_BENCH_JITIFY2
#include "jitify2.hpp"
#endif

using Clock = std::chrono::steady_clock;
static const auto g_start = Clock::now();

static double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0.0;
}
#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudyn_status s_ = (call);                                                                 \
    if (s_ != CUDYN_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudyn_last_error_message()); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

static const char *kSmall = "extern \"C\" __global__ void k_small(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2.0f + 1.0f; }\n";
static std::string large_source() {
  std::string s = "template <int N> __device__ float poly(float x) { float r = 0.f;\n#pragma unroll\n for (int i = 0; i < N; ++i) r = r * x + (float)(i % 7) * 0.5f; return r; }\n";
  s += "extern \"C\" __global__ void k_large(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; float v = x[i];\n";
  for (int k = 1; k <= 48; ++k) s += "  v += poly<" + std::to_string(8 * k) + ">(v * 0.001f);\n";
  return s + "  x[i] = v; }\n";
}
static const char *kCub =
    "#include <cub/block/block_reduce.cuh>\n#include <cub/block/block_scan.cuh>\n"
    "extern \"C\" __global__ void k_cub(const int *in, int *out) {\n"
    "  using R = cub::BlockReduce<int, 128>; using S = cub::BlockScan<int, 128>;\n"
    "  __shared__ union { typename R::TempStorage r; typename S::TempStorage s; } t;\n"
    "  int v = in[threadIdx.x]; int sum = R(t.r).Sum(v); __syncthreads(); int x; S(t.s).ExclusiveSum(v, x);\n"
    "  out[threadIdx.x] = x + (threadIdx.x == 0 ? sum : 0); }\n";

struct Kern { const char *label, *name; std::string src; };
static std::vector<Kern> kernels() { return {{"small", "k_small", kSmall}, {"large", "k_large", large_source()}, {"CUB", "k_cub", kCub}}; }

// ---- child: one fresh process, one first lookup -------------------------------------------
static int child(const std::string &who, int ki, const std::string &arg) {
  const Kern k = kernels()[ki];
  if (who == "cudyn") {
    // The program has CUDA up already (it is about to launch), as jitify2 requires below: the
    // driver's start is not the cache's cost. "main() to kernel" still includes it.
    cudaFree(nullptr);
    auto t0 = Clock::now();
    cudyn_buffer code{}, log{};
    CHECK(cudyn_compile(k.src.c_str(), "bench.cu", nullptr, 0, CUDYN_CODE_CUBIN, &code, &log));
    double lookup = ms_since(t0);
    cudyn_library_t lib;
    CHECK(cudyn_library_load_data(code.data, code.size, CUDYN_API_DRIVER, &lib));
    cudyn_kernel_t kern;
    CHECK(cudyn_library_get_kernel(lib, k.name, CUDYN_API_DRIVER, &kern));
    std::printf("%.4f %.4f %.4f\n", lookup, ms_since(t0), ms_since(g_start));
    return 0;
  }
#ifdef CUDYN_BENCH_JITIFY2
  if (who == "jitify2") {
    std::ifstream f(arg + "/preprocessed.bin", std::ios::binary);
    jitify2::PreprocessedProgram pre = jitify2::PreprocessedProgram::deserialize(f);
    if (!pre) { std::fprintf(stderr, "jitify2: %s\n", pre.error().c_str()); return 1; }
    cudaFree(nullptr);  // a current context, as jitify2 requires (cudyn makes its own)
    auto t0 = Clock::now();
    jitify2::ProgramCache<> cache(16, *pre, nullptr, arg + "/cache");
    jitify2::Kernel kern = cache.get_kernel(k.name);
    if (!kern) { std::fprintf(stderr, "jitify2: %s\n", kern.error().c_str()); return 1; }
    double t = ms_since(t0);
    std::printf("%.4f %.4f %.4f\n", t, t, ms_since(g_start));
    return 0;
  }
#endif
  return 2;
}

static std::vector<double> run_child(const char *self, const std::string &who, int ki, const std::string &arg) {
  std::string cmd = std::string(self) + " --child " + who + " " + std::to_string(ki) + " '" + arg + "'";
  FILE *p = popen(cmd.c_str(), "r");
  double a = 0, b = 0, c = 0;
  std::vector<double> r;
  if (p && std::fscanf(p, "%lf %lf %lf", &a, &b, &c) == 3) r = {a, b, c};
  if (p) pclose(p);
  if (r.empty()) { std::fprintf(stderr, "child %s %d failed\n", who.c_str(), ki); std::exit(1); }
  return r;
}

int main(int argc, char **argv) {
  if (argc > 4 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], std::atoi(argv[3]), argv[4]);
  const int runs = argc > 1 ? std::atoi(argv[1]) : 7;
  if (cudyn_component_status(CUDYN_COMPONENT_DRIVER) != CUDYN_SUCCESS || cudaFree(nullptr) != cudaSuccess) {
    std::printf("SKIP: no usable GPU: %s\n", cudyn_last_error_message());
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s; cudyn cache folder %s; medians of %d runs\n", prop.name, cudyn_cache_dir(), runs);
  std::printf("%-6s %-44s %12s %10s\n", "kernel", "what", "ms", "vs raw load");
  for (int ki = 0; ki < 3; ++ki) {
    const Kern k = kernels()[ki];
    // Fill the cache (a cold compile, or a hit from an earlier run) and get the cubin.
    cudyn_buffer code{}, log{};
    CHECK(cudyn_compile(k.src.c_str(), "bench.cu", nullptr, 0, CUDYN_CODE_CUBIN, &code, &log));
    std::vector<double> raw, mem, load_src, fresh, fresh_first, fresh_total;
    for (int r = 0; r < runs; ++r) {
      cudaLibrary_t l;
      auto t0 = Clock::now();
      if (cudaLibraryLoadData(&l, code.data, nullptr, nullptr, 0, nullptr, nullptr, 0) != cudaSuccess) { std::printf("raw load failed\n"); return 1; }
      cudaKernel_t rk;
      cudaLibraryGetKernel(&rk, l, k.name);
      raw.push_back(ms_since(t0));
      cudaLibraryUnload(l);
      // Memory tier: the same compile again in this process, 100 times.
      t0 = Clock::now();
      for (int i = 0; i < 100; ++i) {
        cudyn_buffer c2{}, l2{};
        CHECK(cudyn_compile(k.src.c_str(), "bench.cu", nullptr, 0, CUDYN_CODE_CUBIN, &c2, &l2));
        cudyn_buffer_free(&c2);
        cudyn_buffer_free(&l2);
      }
      mem.push_back(ms_since(t0) / 100);
      cudyn_library_t lib;
      t0 = Clock::now();
      CHECK(cudyn_library_load_source(k.src.c_str(), "bench.cu", nullptr, 0, CUDYN_API_DRIVER, &lib, nullptr));
      cudyn_kernel_t kern;
      CHECK(cudyn_library_get_kernel(lib, k.name, CUDYN_API_DRIVER, &kern));
      load_src.push_back(ms_since(t0));
      CHECK(cudyn_library_unload(lib, CUDYN_API_DRIVER));
      auto c = run_child(argv[0], "cudyn", ki, "");
      fresh.push_back(c[0]);
      fresh_first.push_back(c[1]);
      fresh_total.push_back(c[2]);
    }
    double base = median(raw);
    auto row = [&](const char *what, double ms, bool ratio) {
      if (ratio) std::printf("%-6s %-44s %12.4f %9.2fx\n", k.label, what, ms, ms / base);
      else std::printf("%-6s %-44s %12.4f\n", k.label, what, ms);
    };
    row("raw cudaLibraryLoadData + GetKernel (cubin)", base, true);
    row("cudyn compile, memory hit", median(mem), false);
    row("cudyn cached compile + load + get_kernel", median(load_src), true);
    row("cudyn fresh process: first compile (disk hit)", median(fresh), false);
    row("cudyn fresh process: + load + get_kernel", median(fresh_first), false);
    row("cudyn fresh process: main() to kernel", median(fresh_total), false);
#ifdef CUDYN_BENCH_JITIFY2
    {
      char tmpl[] = "/tmp/cudyn-jitify2-XXXXXX";
      std::string dir = mkdtemp(tmpl);
      std::string inc = std::string(CUDYN_BENCH_CUDA_INCLUDE);
      auto t0 = Clock::now();
      jitify2::PreprocessedProgram pre = jitify2::Program("bench.cu", k.src)->preprocess({"-I" + inc, "-I" + inc + "/cccl", "-arch=sm_" + std::to_string(prop.major * 10 + prop.minor)});
      double pre_ms = ms_since(t0);
      if (!pre) { std::printf("jitify2 preprocess failed: %s\n", pre.error().c_str()); return 1; }
      { std::ofstream f(dir + "/preprocessed.bin", std::ios::binary); pre->serialize(f); }
      jitify2::ProgramCache<> cache(16, *pre, nullptr, dir + "/cache");
      t0 = Clock::now();
      jitify2::Kernel jk = cache.get_kernel(k.name);  // miss: compiles, fills the file cache
      double cold_ms = ms_since(t0);
      if (!jk) { std::printf("jitify2: %s\n", jk.error().c_str()); return 1; }
      std::vector<double> jmem, jfresh, jtotal;
      for (int r = 0; r < runs; ++r) {
        t0 = Clock::now();
        for (int i = 0; i < 100; ++i) { jitify2::Kernel again = cache.get_kernel(k.name); (void)again; }
        jmem.push_back(ms_since(t0) / 100);
        auto c = run_child(argv[0], "jitify2", ki, dir);
        jfresh.push_back(c[0]);
        jtotal.push_back(c[2]);
      }
      row("jitify2 preprocess (once; offline in practice)", pre_ms, false);
      row("jitify2 cold compile + load", cold_ms, false);
      row("jitify2 memory hit (get_kernel again)", median(jmem), false);
      row("jitify2 fresh process: file hit + load", median(jfresh), true);
      row("jitify2 fresh process: main() to kernel", median(jtotal), false);
      std::string rm = "rm -rf '" + dir + "'";
      if (std::system(rm.c_str()) != 0) std::printf("could not remove %s\n", dir.c_str());
    }
#endif
    cudyn_buffer_free(&code);
    cudyn_buffer_free(&log);
  }
  return 0;
}
