// C++, on every GPU of the machine (one or more): eager preload of an nvcc fatbin onto all of
// them, then each kernel's function on each device is fully loaded (cuFuncIsLoaded) while a
// library not preloaded shows what lazy loading leaves; the thread's context is left as it
// was (none on a fresh thread, the caller's own otherwise); the first launch with and without
// a preload; axpy<float> found by its C++ name and launched on each device; an ambiguous name
// and a device that does not exist refused.
// Usage: peers_gpu <peers_kernels.fatbin>. Exits 77 without a GPU (fails under
// CUDYN_REQUIRE_GPU=1).
#include <chrono>
#include <thread>
#include "cudyn.hpp"
#include "test_util.hpp"

static double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

static CUcontext current_context() {
  static auto get = DRIVER(cuCtxGetCurrent);
  CUcontext c = nullptr;
  CHECK_CU(get(&c));
  return c;
}

// How many of `lib`'s kernels have a fully loaded function on device `dev` (its primary
// context is made current for the count).
static int loaded_on(const cudyn::library& lib, int dev, std::string* first_unloaded = nullptr) {
  static auto get_function = DRIVER(cuKernelGetFunction);
  static auto is_loaded = DRIVER(cuFuncIsLoaded, 12040);
  CHECK_RT(cudaSetDevice(dev));
  int n = 0;
  for (cudyn::kernel k : lib.kernels()) {
    CUfunction f = nullptr;
    CHECK_CU(get_function(&f, k));
    CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_UNLOADED;
    CHECK_CU(is_loaded(&st, f));
    if (st == CU_FUNCTION_LOADING_STATE_LOADED)
      ++n;
    else if (first_unloaded && first_unloaded->empty())
      *first_unloaded = k.name();
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc < 2) FAIL("usage: %s <peers_kernels.fatbin>", argv[0]);
  // What a preload is measured against: CUDA's default, set explicitly so that a
  // CUDA_MODULE_LOADING=EAGER in the environment cannot make the checks below vacuous.
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  require_gpu();
  int ndev = 0;
  CHECK_RT(cudaGetDeviceCount(&ndev));
  std::vector<int> all;
  for (int d = 0; d < ndev; ++d) all.push_back(d);

  auto lib = cudyn::library::from_file(argv[1]);
  auto control = cudyn::library::from_file(argv[1]);  // never preloaded
  auto cold = cudyn::library::from_file(argv[1]);     // untouched until its first launch
  const int nk = static_cast<int>(lib.kernel_count());
  EXPECT(nk == 18, "%d kernels", nk);

  // On a thread with no context: none is left behind. (The driver entry point is fetched
  // here, so that the thread makes no runtime call of its own.)
  (void)current_context();
  std::vector<double> ms;
  std::thread([&] {
    EXPECT(current_context() == nullptr, "a fresh thread has no context");
    ms = lib.preload(all);
    EXPECT(current_context() == nullptr, "preload left a context current on a thread that had none");
  }).join();
  EXPECT(ms.size() == all.size(), "%zu", ms.size());
  for (int d = 0; d < ndev; ++d) std::printf("preload on device %d: %.3f ms (%d kernels)\n", d, ms[d], nk);

  // Every kernel loaded on every device; the control library shows what lazy loading does.
  for (int d = 0; d < ndev; ++d) {
    std::string missing;
    int n = loaded_on(lib, d, &missing);
    EXPECT(n == nk, "device %d: %d of %d kernels loaded after the preload (not: %s)", d, n, nk, missing.c_str());
    int c = loaded_on(control, d);
    std::printf("device %d: preloaded library %d/%d kernels loaded; library not preloaded %d/%d%s\n", d, n, nk, c,
                nk, c < nk ? " (lazy loading at work)" : "");
  }

  // The caller's own context stays current: device 0's, with a preload onto the last device.
  CHECK_RT(cudaSetDevice(0));
  CUcontext mine = current_context();
  EXPECT(mine != nullptr, "cudaSetDevice made a context current");
  (void)lib.preload({ndev - 1});
  EXPECT(current_context() == mine, "preload changed the caller's current context");

  // The first launch of a kernel, preloaded and not (plain(int*, int) writes one int).
  {
    DevBuf out(1);
    auto time_first = [&](const cudyn::library& l) {
      cudyn::kernel plain = l.kernel("plain");
      auto t = std::chrono::steady_clock::now();
      plain.launch(cudyn::launch_config::linear(1), reinterpret_cast<int*>(out.p), 7);
      CHECK_RT(cudaDeviceSynchronize());
      return ms_since(t);
    };
    (void)time_first(control);  // the process's first launch pays for more than this kernel
    double warm = time_first(lib), lazy = time_first(cold);
    std::printf("device 0: first launch after a preload %.3f ms, without one %.3f ms\n", warm, lazy);
  }

  // axpy<float> by its C++ name, on every device: y = 0 + 2.
  cudyn::kernel axpy = lib.kernel("axpy<float>");
  EXPECT(std::strcmp(axpy.name(), "_Z4axpyIfEvPT_S0_i") == 0, "%s", axpy.name());
  EXPECT(cudyn::demangle(axpy.name()) == "axpy<float>(float*, float, int)", "demangled");
  EXPECT(lib.kernel("axpy<float>(float*, float, int)") == axpy, "by signature");
  EXPECT(lib.kernel("other::axpy<float>") != axpy, "the namespace's own");
  const int n = 1 << 16;
  for (int d = 0; d < ndev; ++d) {
    CHECK_RT(cudaSetDevice(d));
    DevBuf y(std::vector<float>(n, 0.0f));
    axpy.launch(cudyn::launch_config::linear(n), y.p, 2.0f, n);
    std::vector<float> h = y.get();
    int bad = 0;
    for (float v : h) bad += v != 2.0f;
    EXPECT(bad == 0, "device %d: %d wrong", d, bad);
    std::printf("device %d: axpy<float> by its C++ name: correct\n", d);
  }

  // Refusals.
  try {
    (void)lib.kernel("scale");
    FAIL("an overloaded name was accepted");
  } catch (const cudyn::error& e) {
    EXPECT(e.status() == CUDYN_ERROR_AMBIGUOUS_NAME, "%s", e.what());
    EXPECT(e.message().find("scale(double*, double) [_Z5scalePdd]") != std::string::npos, "%s", e.what());
  }
  auto r = lib.try_kernel("axpy<half>");
  EXPECT(r.status() == CUDYN_ERROR_NOT_FOUND, "%s", r.message().c_str());
  auto bad = lib.try_preload({0, ndev});
  EXPECT(bad.status() == CUDYN_ERROR_NO_DEVICE, "%s", bad.message().c_str());
  EXPECT(bad.message().find("device " + std::to_string(ndev) + ":") != std::string::npos, "%s", bad.message().c_str());
  std::printf("PASS\n");
  return 0;
}
