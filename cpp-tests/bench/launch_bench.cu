// Benchmark (not a test): cudyn's launch, load and compile overhead against the raw CUDA calls,
// measured side by side in one process (BENCH_GROUPS picks groups, see below). Variants are interleaved round by round so drift in
// clocks or driver state hits them all alike; each figure is the median over rounds.
// Launches are timed in batches of 256 with the stream drained between batches (not timed),
// so the figure is the host's cost of submitting a launch, not the GPU's rate of running
// them (a full launch queue would make every variant wait for the GPU alike). The raw runtime
// calls go to the same shared libcudart that cudyn opens, so both use one runtime instance.
//   usage: launch_bench <fatbin> [out.json] [rounds=11] [launches=100000] [loads=100]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include "../test_util.hpp"
#include "cudyn.hpp"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Variant {
  std::string name, group, baseline;  // baseline: name of the raw variant it is compared with
  std::function<void()> once;          // one launch / load / compile
  std::vector<double> per_op_us;       // one entry per round
};

static const char *kSmallSrc = "extern \"C\" __global__ void k_small(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * 2.0f + 1.0f; }\n";

// A larger kernel: many template instantiations and unrolled math, so NVRTC works for a while.
static std::string large_source(const std::string &name = "k_large") {
  std::string s = "template <int N> __device__ float poly(float x) { float r = 0.f;\n#pragma unroll\n for (int i = 0; i < N; ++i) r = r * x + (float)(i % 7) * 0.5f; return r; }\n";
  s += "extern \"C\" __global__ void " + name + "(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; float v = x[i];\n";
  for (int k = 1; k <= 48; ++k) s += "  v += poly<" + std::to_string(8 * k) + ">(v * 0.001f);\n";
  s += "  x[i] = v; }\n";
  return s;
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s <fatbin> [out.json] [rounds] [launches] [loads]", argv[0]);
  require_gpu();
  const char *json_path = argc > 2 ? argv[2] : nullptr;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 11;
  const int launches = argc > 4 ? std::atoi(argv[4]) : 100000;
  const int loads = argc > 5 ? std::atoi(argv[5]) : 100;
  auto image = read_file(argv[1]);
  // BENCH_GROUPS (comma-separated: launch, alternate, foreign, cluster, calls, load, load-new, compile) runs
  // only those; unset, all of them.
  const char *only = std::getenv("BENCH_GROUPS");
  auto wanted = [&](const std::string &g) {
    if (!only || !*only) return true;
    std::string list = std::string(",") + only + ",";
    return list.find("," + g + ",") != std::string::npos;
  };

  auto cuLaunchKernelEx_ = DRIVER(cuLaunchKernelEx, 11060);
  auto cuLibraryLoadData_ = DRIVER(cuLibraryLoadData);
  auto cuLibraryUnload_ = DRIVER(cuLibraryUnload);
  auto cuCtxSetCurrent_ = DRIVER(cuCtxSetCurrent);
  auto cuDevicePrimaryCtxRetain_ = DRIVER(cuDevicePrimaryCtxRetain);

  CHECK_RT(cudaFree(nullptr));  // runtime initialised, primary context current
  CUcontext primary = nullptr;
  CHECK_CU(cuDevicePrimaryCtxRetain_(&primary, 0));
  CHECK_CU(cuCtxSetCurrent_(primary));
  cudaStream_t stream;
  CHECK_RT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  cudyn_library_t lib = nullptr;
  CHECK_CUDYN(cudyn_library_load_data(image.data(), image.size(), CUDYN_API_RUNTIME, &lib));
  cudyn_kernel_t k = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, "empty_kernel", CUDYN_API_RUNTIME, &k));
  cudyn_kernel_t kc = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, "cluster_report", CUDYN_API_RUNTIME, &kc));
  // Two kernels with arguments, launched in turn (n = 0: they return at once).
  cudyn_kernel_t ka = nullptr, kb = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, "add_one", CUDYN_API_RUNTIME, &ka));
  CHECK_CUDYN(cudyn_library_get_kernel(lib, "vec_add", CUDYN_API_RUNTIME, &kb));
  // A foreign kernel: the application's own load (raw runtime), launched through cudyn, whose
  // layout cudyn reads from CUDA on every launch (it cannot see that library's unload).
  cudaLibrary_t foreign_lib = nullptr;
  CHECK_RT(cudaLibraryLoadData(&foreign_lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t kfa = nullptr, kfv = nullptr;
  CHECK_RT(cudaLibraryGetKernel(&kfv, foreign_lib, "vec_add"));
  CHECK_CUDYN(cudyn_kernel_adopt(kfv));  // the program vouches it stays loaded: layout remembered
  CHECK_RT(cudaLibraryGetKernel(&kfa, foreign_lib, "add_one"));
  // A kernel of cudyn's library found outside cudyn (raw lookup): cudyn learns it is its own at
  // first use (cuKernelGetLibrary, driver 12.5+) and remembers its layout.
  auto cuLibraryGetKernel_ = DRIVER(cuLibraryGetKernel);
  CUkernel kfo = nullptr;
  CHECK_CU(cuLibraryGetKernel_(&kfo, lib, "add_one"));
  float *xp = nullptr;
  int zero = 0;
  void *args_a[] = {&xp, &zero};
  void *args_b[] = {&xp, &xp, &xp, &zero};
  unsigned *cluster_out = nullptr;
  CHECK_RT(cudaMalloc(&cluster_out, 16));
  void *cluster_args[] = {&cluster_out};

  // Raw launch configurations.
  CUlaunchConfig dcfg{};
  dcfg.gridDimX = dcfg.gridDimY = dcfg.gridDimZ = 1;
  dcfg.blockDimX = 32; dcfg.blockDimY = dcfg.blockDimZ = 1;
  dcfg.hStream = stream;
  CUlaunchAttribute dattr{};
  dattr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  dattr.value.clusterDim.x = 2; dattr.value.clusterDim.y = 1; dattr.value.clusterDim.z = 1;
  CUlaunchConfig dcfg_cluster = dcfg;
  dcfg_cluster.gridDimX = 2;
  dcfg_cluster.attrs = &dattr;
  dcfg_cluster.numAttrs = 1;
  cudaLaunchConfig_t rcfg_cluster{};
  rcfg_cluster.gridDim = dim3(2);
  rcfg_cluster.blockDim = dim3(32);
  rcfg_cluster.stream = stream;
  cudaLaunchAttribute rattr{};
  rattr.id = cudaLaunchAttributeClusterDimension;
  rattr.val.clusterDim.x = 2; rattr.val.clusterDim.y = 1; rattr.val.clusterDim.z = 1;
  rcfg_cluster.attrs = &rattr;
  rcfg_cluster.numAttrs = 1;

  cudyn_launch_config cd = config_1d(32, 32, CUDYN_API_DRIVER, stream);
  cudyn_launch_config cr = config_1d(32, 32, CUDYN_API_RUNTIME, stream);
  cudyn_launch_config cd_cl = cd, cr_cl = cr;
  cd_cl.grid.x = cr_cl.grid.x = 2;
  cd_cl.cluster = cr_cl.cluster = {2, 1, 1};

  std::vector<Variant> v;
  auto add = [&](const char *name, const char *group, const char *base, std::function<void()> f) {
    v.push_back({name, group, base, std::move(f), {}});
  };
  add("raw cuLaunchKernelEx", "launch", "", [&] { CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)k, nullptr, nullptr)); });
  add("raw cudaLaunchKernel", "launch", "", [&] { CHECK_RT(cudaLaunchKernel((const void *)k, dim3(1), dim3(32), nullptr, 0, stream)); });
  add("cudyn_launch (driver)", "launch", "raw cuLaunchKernelEx", [&] { CHECK_CUDYN(cudyn_launch(k, &cd, nullptr, 0)); });
  add("cudyn_launch (runtime)", "launch", "raw cudaLaunchKernel", [&] { CHECK_CUDYN(cudyn_launch(k, &cr, nullptr, 0)); });
  add("cudyn_launch_checked (driver)", "launch", "raw cuLaunchKernelEx", [&] { CHECK_CUDYN(cudyn_launch_checked(k, &cd, nullptr, nullptr, 0)); });
  add("cudyn_launch_checked (runtime)", "launch", "raw cudaLaunchKernel", [&] { CHECK_CUDYN(cudyn_launch_checked(k, &cr, nullptr, nullptr, 0)); });
  add("raw cuLaunchKernelEx, foreign 2-arg kernel", "foreign", "", [&] { CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)kfa, args_a, nullptr)); });
  add("raw cudaLaunchKernel, foreign 2-arg kernel", "foreign", "", [&] { CHECK_RT(cudaLaunchKernel((const void *)kfa, dim3(1), dim3(32), args_a, 0, stream)); });
  add("cudyn_launch (driver), foreign 2-arg kernel", "foreign", "raw cuLaunchKernelEx, foreign 2-arg kernel", [&] { CHECK_CUDYN(cudyn_launch(kfa, &cd, args_a, 2)); });
  add("cudyn_launch (runtime), foreign 2-arg kernel", "foreign", "raw cudaLaunchKernel, foreign 2-arg kernel", [&] { CHECK_CUDYN(cudyn_launch(kfa, &cr, args_a, 2)); });
  add("raw cuLaunchKernelEx, cudyn's kernel found raw", "foreign", "", [&] { CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)kfo, args_a, nullptr)); });
  add("cudyn_launch (driver), cudyn's kernel found raw", "foreign", "raw cuLaunchKernelEx, cudyn's kernel found raw", [&] { CHECK_CUDYN(cudyn_launch(kfo, &cd, args_a, 2)); });
  add("raw cuLaunchKernelEx, adopted 4-arg kernel", "foreign", "", [&] { CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)kfv, args_b, nullptr)); });
  add("raw cudaLaunchKernel, adopted 4-arg kernel", "foreign", "", [&] { CHECK_RT(cudaLaunchKernel((const void *)kfv, dim3(1), dim3(32), args_b, 0, stream)); });
  add("cudyn_launch (driver), adopted 4-arg kernel", "foreign", "raw cuLaunchKernelEx, adopted 4-arg kernel", [&] { CHECK_CUDYN(cudyn_launch(kfv, &cd, args_b, 4)); });
  add("cudyn_launch (runtime), adopted 4-arg kernel", "foreign", "raw cudaLaunchKernel, adopted 4-arg kernel", [&] { CHECK_CUDYN(cudyn_launch(kfv, &cr, args_b, 4)); });
  cudyn::kernel typed(k);
  add("C++ kernel.launch (runtime)", "launch", "raw cudaLaunchKernel", [&] { typed.launch(cudyn::launch_config(cr)); });
  add("raw cuLaunchKernelEx, 2 kernels in turn", "alternate", "", [&] {
    CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)ka, args_a, nullptr));
    CHECK_CU(cuLaunchKernelEx_(&dcfg, (CUfunction)kb, args_b, nullptr));
  });
  add("raw cudaLaunchKernel, 2 kernels in turn", "alternate", "", [&] {
    CHECK_RT(cudaLaunchKernel((const void *)ka, dim3(1), dim3(32), args_a, 0, stream));
    CHECK_RT(cudaLaunchKernel((const void *)kb, dim3(1), dim3(32), args_b, 0, stream));
  });
  add("cudyn_launch (driver), 2 kernels in turn", "alternate", "raw cuLaunchKernelEx, 2 kernels in turn", [&] {
    CHECK_CUDYN(cudyn_launch(ka, &cd, args_a, 2));
    CHECK_CUDYN(cudyn_launch(kb, &cd, args_b, 4));
  });
  add("cudyn_launch (runtime), 2 kernels in turn", "alternate", "raw cudaLaunchKernel, 2 kernels in turn", [&] {
    CHECK_CUDYN(cudyn_launch(ka, &cr, args_a, 2));
    CHECK_CUDYN(cudyn_launch(kb, &cr, args_b, 4));
  });
  // What each driver call a check of a foreign kernel could make costs (group "calls"; each row
  // is one call, compared with nothing): the count check takes the two cuKernelGetParamInfo
  // answers, an index that exists and the first that does not.
  auto cuKernelGetParamInfo_ = DRIVER(cuKernelGetParamInfo, 12040);
  auto cuKernelGetName_ = DRIVER(cuKernelGetName, 12030);
  auto cuKernelGetLibrary_ = DRIVER(cuKernelGetLibrary, 12050);
  size_t poff = 0, psize = 0;
  add("cuKernelGetParamInfo, an index that exists", "calls", "", [&] { CHECK_CU(cuKernelGetParamInfo_(kfa, 1, &poff, &psize)); });
  add("cuKernelGetParamInfo, past the last parameter", "calls", "", [&] { if (cuKernelGetParamInfo_(kfa, 2, &poff, &psize) != CUDA_ERROR_INVALID_VALUE) FAIL("index 2 of a 2-parameter kernel"); });
  add("cuKernelGetName", "calls", "", [&] { const char *nm; CHECK_CU(cuKernelGetName_(&nm, kfa)); });
  add("cuKernelGetLibrary", "calls", "", [&] { CUlibrary l; CHECK_CU(cuKernelGetLibrary_(&l, kfa)); });
  add("raw cuLaunchKernelEx + cluster", "cluster", "", [&] { CHECK_CU(cuLaunchKernelEx_(&dcfg_cluster, (CUfunction)kc, cluster_args, nullptr)); });
  add("raw cudaLaunchKernelExC + cluster", "cluster", "", [&] { CHECK_RT(cudaLaunchKernelExC(&rcfg_cluster, (const void *)kc, cluster_args)); });
  add("cudyn_launch (driver) + cluster", "cluster", "raw cuLaunchKernelEx + cluster", [&] { CHECK_CUDYN(cudyn_launch(kc, &cd_cl, cluster_args, 1)); });
  add("cudyn_launch (runtime) + cluster", "cluster", "raw cudaLaunchKernelExC + cluster", [&] { CHECK_CUDYN(cudyn_launch(kc, &cr_cl, cluster_args, 1)); });

  // Loads: load + unload of the same fatbin (a repeated load: see "images in turn" below).
  add("raw cudaLibraryLoadData", "load", "", [&] { cudaLibrary_t l; CHECK_RT(cudaLibraryLoadData(&l, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)); CHECK_RT(cudaLibraryUnload(l)); });
  add("cudyn_library_load_data (runtime)", "load", "raw cudaLibraryLoadData", [&] { cudyn_library_t l; CHECK_CUDYN(cudyn_library_load_data(image.data(), image.size(), CUDYN_API_RUNTIME, &l)); CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_RUNTIME)); });
  add("raw cuLibraryLoadData", "load", "", [&] { CUlibrary l; CHECK_CU(cuLibraryLoadData_(&l, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)); CHECK_CU(cuLibraryUnload_(l)); });
  add("cudyn_library_load_data (driver)", "load", "raw cuLibraryLoadData", [&] { cudyn_library_t l; CHECK_CUDYN(cudyn_library_load_data(image.data(), image.size(), CUDYN_API_DRIVER, &l)); CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_DRIVER)); });

  // Loads of images never seen before: cudyn keeps a copy of the last few images it validated
  // twice and skips the check for identical bytes, so the rows above measure a repeated load.
  // Here each variant cycles through its own cubins, so no variant loads an image another one
  // just loaded (the driver is as fresh to each as to the others). A raw variant cycles through
  // 8; a cudyn variant through 20, and the two cudyn variants alternate, so a cudyn row meets an
  // image again only after 39 other validations, beyond the 32 cudyn recognises: every cudyn load
  // here runs the full validation, the first-sight cost.
  // (Compiled only when the group runs: the variants of a group left out never run.)
  const int pool[4] = {8, 20, 8, 20};  // raw runtime, cudyn runtime, raw driver, cudyn driver
  std::vector<std::vector<char>> fresh;
  size_t first[5] = {0, 0, 0, 0, 0};
  for (int who = 0; who < 4 && wanted("load-new"); ++who) {
    first[who] = fresh.size();
    for (int i = 0; i < pool[who]; ++i) {
      std::string src = large_source("k_fresh_" + std::to_string(fresh.size()));
      cudyn_buffer code{}, log{};
      CHECK_CUDYN(cudyn_compile(src.c_str(), "fresh.cu", nullptr, 0, CUDYN_CODE_CUBIN, &code, &log));
      fresh.emplace_back((const char *)code.data, (const char *)code.data + code.size);
      cudyn_buffer_free(&code);
      cudyn_buffer_free(&log);
    }
  }
  size_t fr[4] = {0, 0, 0, 0};
  auto next_fresh = [&](int who) -> const std::vector<char> & { return fresh[first[who] + fr[who]++ % pool[who]]; };
  add("raw cudaLibraryLoadData, images in turn", "load-new", "", [&] { auto &im = next_fresh(0); cudaLibrary_t l; CHECK_RT(cudaLibraryLoadData(&l, im.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)); CHECK_RT(cudaLibraryUnload(l)); });
  add("cudyn load (runtime), images in turn", "load-new", "raw cudaLibraryLoadData, images in turn", [&] { auto &im = next_fresh(1); cudyn_library_t l; CHECK_CUDYN(cudyn_library_load_data(im.data(), im.size(), CUDYN_API_RUNTIME, &l)); CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_RUNTIME)); });
  add("raw cuLibraryLoadData, images in turn", "load-new", "", [&] { auto &im = next_fresh(2); CUlibrary l; CHECK_CU(cuLibraryLoadData_(&l, im.data(), nullptr, nullptr, 0, nullptr, nullptr, 0)); CHECK_CU(cuLibraryUnload_(l)); });
  add("cudyn load (driver), images in turn", "load-new", "raw cuLibraryLoadData, images in turn", [&] { auto &im = next_fresh(3); cudyn_library_t l; CHECK_CUDYN(cudyn_library_load_data(im.data(), im.size(), CUDYN_API_DRIVER, &l)); CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_DRIVER)); });

  // Run each variant that will be timed once first (parameter layouts cached, modules resident).
  for (auto &x : v)
    if (wanted(x.group)) x.once();
  CHECK_RT(cudaStreamSynchronize(stream));

  // Each round: for every batch, every variant of a group runs one batch, in an order that
  // rotates from batch to batch; so all variants share the same moments of the round, and the
  // ratio to the raw call is taken within the round.
  const int batch = 256;
  auto run_group = [&](const std::string &group, int reps, int per) {
    std::vector<Variant *> g;
    for (auto &x : v) if (x.group == group) g.push_back(&x);
    std::vector<double> us(g.size(), 0.0);
    for (int done = 0, b = 0; done < reps; done += per, ++b) {
      for (size_t j = 0; j < g.size(); ++j) {
        size_t idx = (j + b) % g.size();
        auto t0 = Clock::now();
        for (int i = 0; i < per; ++i) g[idx]->once();
        auto t1 = Clock::now();
        us[idx] += std::chrono::duration<double, std::micro>(t1 - t0).count();
        CHECK_RT(cudaStreamSynchronize(stream));
      }
    }
    for (size_t j = 0; j < g.size(); ++j) g[j]->per_op_us.push_back(us[j] / reps);
  };
  for (int r = 0; r < rounds; ++r) {
    for (const char *g : {"launch", "alternate", "foreign", "cluster", "calls"})
      if (wanted(g)) run_group(g, launches, batch);
    for (const char *g : {"load", "load-new"})
      if (wanted(g)) run_group(g, loads, 1);
  }
  v.erase(std::remove_if(v.begin(), v.end(), [](const Variant &x) { return x.per_op_us.empty(); }), v.end());

  // Compile: a cold NVRTC compile (cache off, through cudyn_compile) against
  // cudyn_library_load_source with a warm cache, small and large kernel.
  std::string large = large_source();
  struct CompileRow { std::string name; double cold_ms, warm_ms; };
  std::vector<CompileRow> crows;
  for (auto src : {std::string(kSmallSrc), large}) {
    if (!wanted("compile")) break;
    std::vector<double> cold, warm;
    const char *label = src.size() < 400 ? "small kernel" : "large kernel";
    for (int r = 0; r < 5; ++r) {
      // A unique define makes each cold compile a cache miss: NVRTC really runs.
      std::string opt = "-DCUDYN_BENCH_SALT=" + std::to_string(r) + std::to_string(Clock::now().time_since_epoch().count());
      const char *opts[] = {opt.c_str()};
      cudyn_buffer code{}, log{};
      auto t0 = Clock::now();
      CHECK_CUDYN(cudyn_compile(src.c_str(), "bench.cu", opts, 1, CUDYN_CODE_CUBIN, &code, &log));
      cudyn_library_t l;
      CHECK_CUDYN(cudyn_library_load_data(code.data, code.size, CUDYN_API_RUNTIME, &l));
      auto t1 = Clock::now();
      cold.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_RUNTIME));
      cudyn_buffer_free(&code);
      cudyn_buffer_free(&log);
    }
    cudyn_library_t l;
    CHECK_CUDYN(cudyn_library_load_source(src.c_str(), "bench.cu", nullptr, 0, CUDYN_API_RUNTIME, &l, nullptr));  // fill the cache
    CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_RUNTIME));
    for (int r = 0; r < 20; ++r) {
      auto t0 = Clock::now();
      CHECK_CUDYN(cudyn_library_load_source(src.c_str(), "bench.cu", nullptr, 0, CUDYN_API_RUNTIME, &l, nullptr));
      auto t1 = Clock::now();
      warm.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_RUNTIME));
    }
    crows.push_back({label, median(cold), median(warm)});
  }

  // Report.
  auto find = [&](const std::string &n) -> Variant * {
    for (auto &x : v) if (x.name == n) return &x;
    return nullptr;
  };
  char devname[256] = "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) std::snprintf(devname, sizeof devname, "%s", prop.name);
  int drv = 0, rtv = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rtv);
  std::printf("device: %s, driver %d, runtime %d; %d rounds x %d launches in batches of %d (%d loads), medians\n\n", devname, drv, rtv, rounds, launches, batch, loads);
  std::printf("%-44s %12s %10s   (vs raw: median over rounds of the in-round ratio)\n", "variant", "us/op", "vs raw");
  FILE *js = json_path ? std::fopen(json_path, "w") : nullptr;
  if (js) std::fprintf(js, "{\n  \"device\": \"%s\", \"driver\": %d, \"runtime\": %d, \"rounds\": %d, \"launches\": %d, \"loads\": %d,\n  \"variants\": [\n", devname, drv, rtv, rounds, launches, loads);
  for (size_t i = 0; i < v.size(); ++i) {
    auto &x = v[i];
    double m = median(x.per_op_us);
    double ratio = 1.0;
    if (!x.baseline.empty()) {
      std::vector<double> per_round;
      auto *b = find(x.baseline);
      for (size_t r = 0; r < x.per_op_us.size(); ++r) per_round.push_back(x.per_op_us[r] / b->per_op_us[r]);
      ratio = median(per_round);  // the ratio within each round, then the median over rounds
    }
    std::printf("%-44s %12.3f %9.3fx\n", x.name.c_str(), m, ratio);
    if (js) {
      std::fprintf(js, "    {\"name\": \"%s\", \"group\": \"%s\", \"baseline\": \"%s\", \"median_us\": %.4f, \"ratio\": %.4f, \"rounds_us\": [", x.name.c_str(), x.group.c_str(), x.baseline.c_str(), m, ratio);
      for (size_t r = 0; r < x.per_op_us.size(); ++r) std::fprintf(js, "%s%.4f", r ? ", " : "", x.per_op_us[r]);
      std::fprintf(js, "]}%s\n", i + 1 < v.size() ? "," : "");
    }
  }
  if (!crows.empty()) std::printf("\n%-36s %12s %12s %10s\n", "compile + load", "cold ms", "cached ms", "speed-up");
  if (js) std::fprintf(js, "  ],\n  \"compile\": [\n");
  for (size_t i = 0; i < crows.size(); ++i) {
    auto &c = crows[i];
    std::printf("%-36s %12.3f %12.3f %9.1fx\n", c.name.c_str(), c.cold_ms, c.warm_ms, c.cold_ms / c.warm_ms);
    if (js) std::fprintf(js, "    {\"name\": \"%s\", \"cold_ms\": %.4f, \"cached_ms\": %.4f, \"speedup\": %.2f}%s\n", c.name.c_str(), c.cold_ms, c.warm_ms, c.cold_ms / c.warm_ms, i + 1 < crows.size() ? "," : "");
  }
  if (js) { std::fprintf(js, "  ]\n}\n"); std::fclose(js); }
  cudaFree(cluster_out);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return 0;
}
