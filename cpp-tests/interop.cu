// The interop suite: load through one API, launch through the other; foreign handles; handle
// identity; enumeration and parameter info; argument checks; clusters; cooperative launches;
// globals; contexts; two GPUs; bad images. One program, one case per ctest test (argv[1]).
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <thread>
#include "test_util.hpp"

struct ScaleParams {  // must match kernels/interop_kernels.cu
  float scale;
  int offset;
  double bias;
};

static const int N = 100000;

static cudyn_library_t load(cudyn_api api) {
  cudyn_library_t lib = nullptr;
  std::vector<char> img = read_file(FATBIN_PATH);
  CHECK_CUDYN(cudyn_library_load_data(img.data(), img.size(), api, &lib));
  EXPECT(lib != nullptr, "library handle");
  return lib;
}

static cudyn_kernel_t kernel(cudyn_library_t lib, const char *name, cudyn_api api) {
  cudyn_kernel_t k = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, name, api, &k));
  return k;
}

// c = a + b through `launch_api` on a kernel loaded through `load_api`; checks every element.
static void vec_add_via(cudyn_api load_api, cudyn_api launch_api, unsigned seed) {
  cudyn_library_t lib = load(load_api);
  cudyn_kernel_t k = kernel(lib, "vec_add", load_api);
  auto a = random_floats(N, seed), b = random_floats(N, seed + 1);
  DevBuf da(a), db(b), dc(N);
  int n = N;
  void *args[] = {&da.p, &db.p, &dc.p, &n};
  cudyn_launch_config cfg = config_1d(N, 256, launch_api);
  CHECK_CUDYN(cudyn_launch(k, &cfg, args, 4));
  CHECK_RT(cudaDeviceSynchronize());
  auto c = dc.get();
  for (int i = 0; i < N; ++i)
    if (c[i] != a[i] + b[i]) FAIL("c[%d] = %g, want %g (load %s, launch %s)", i, c[i], a[i] + b[i], api_name(load_api), api_name(launch_api));
  CHECK_CUDYN(cudyn_library_unload(lib, load_api));
  std::printf("vec_add: loaded through the %s, launched through the %s: %d elements correct\n",
              api_name(load_api), api_name(launch_api), N);
}

static int runtime_load_driver_launch() { vec_add_via(CUDYN_API_RUNTIME, CUDYN_API_DRIVER, 1); return 0; }
static int driver_load_runtime_launch() { vec_add_via(CUDYN_API_DRIVER, CUDYN_API_RUNTIME, 2); return 0; }
static int same_api_both_ways() {
  vec_add_via(CUDYN_API_RUNTIME, CUDYN_API_RUNTIME, 3);
  vec_add_via(CUDYN_API_DRIVER, CUDYN_API_DRIVER, 4);
  return 0;
}

// One kernel, launched through the runtime and then the driver on one user stream: both
// increments land, in order.
static int both_launches_one_stream() {
  cudyn_library_t lib = load(CUDYN_API_RUNTIME);
  cudyn_kernel_t k = kernel(lib, "add_one", CUDYN_API_RUNTIME);
  cudaStream_t s;
  CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto x = random_floats(N, 7);
  DevBuf dx(x);
  int n = N;
  void *args[] = {&dx.p, &n};
  for (int round = 0; round < 10; ++round) {
    cudyn_launch_config rt = config_1d(N, 128, CUDYN_API_RUNTIME, s);
    cudyn_launch_config drv = config_1d(N, 128, CUDYN_API_DRIVER, s);
    CHECK_CUDYN(cudyn_launch(k, &rt, args, 2));
    CHECK_CUDYN(cudyn_launch(k, &drv, args, 2));
  }
  CHECK_RT(cudaStreamSynchronize(s));
  auto y = dx.get();
  for (int i = 0; i < N; ++i)
    if (y[i] != x[i] + 20.0f) FAIL("x[%d] = %g, want %g", i, y[i], x[i] + 20.0f);
  CHECK_RT(cudaStreamDestroy(s));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  std::printf("20 launches alternating runtime/driver on one stream: all applied\n");
  return 0;
}

// A library the test loads itself with raw cuLibraryLoadData: cudyn launches its kernel; and a
// cudyn-loaded kernel launched by raw cuLaunchKernel and raw cudaLaunchKernel.
static int foreign_handles() {
  auto img = read_file(FATBIN_PATH);
  auto cuLibraryLoadData_ = DRIVER(cuLibraryLoadData);
  auto cuLibraryGetKernel_ = DRIVER(cuLibraryGetKernel);
  auto cuLibraryUnload_ = DRIVER(cuLibraryUnload);
  auto cuLaunchKernel_ = DRIVER(cuLaunchKernel);
  CUlibrary raw = nullptr;
  CHECK_CU(cuLibraryLoadData_(&raw, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel rk = nullptr;
  CHECK_CU(cuLibraryGetKernel_(&rk, raw, "add_one"));
  auto x = random_floats(N, 11);
  DevBuf dx(x);
  int n = N;
  void *args[] = {&dx.p, &n};
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_launch_config cfg = config_1d(N, 256, api);
    CHECK_CUDYN(cudyn_launch(rk, &cfg, args, 2));  // CUkernel passed as cudyn_kernel_t: same type
  }
  CHECK_RT(cudaDeviceSynchronize());
  auto y = dx.get();
  for (int i = 0; i < N; ++i)
    if (y[i] != x[i] + 2.0f) FAIL("foreign kernel via cudyn: x[%d] = %g, want %g", i, y[i], x[i] + 2.0f);

  // The other way round: cudyn's handle in raw CUDA calls.
  cudyn_library_t lib = load(CUDYN_API_DRIVER);
  cudyn_kernel_t k = kernel(lib, "add_one", CUDYN_API_DRIVER);
  CUkernel as_cu = k;          // no cast: the same type
  cudaKernel_t as_rt = k;      // no cast: the same type
  CHECK_CU(cuLaunchKernel_(reinterpret_cast<CUfunction>(as_cu), (N + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CHECK_RT(cudaLaunchKernel(reinterpret_cast<const void *>(as_rt), dim3((N + 255) / 256), dim3(256), args, 0, nullptr));
  CHECK_RT(cudaDeviceSynchronize());
  y = dx.get();
  for (int i = 0; i < N; ++i)
    if (y[i] != x[i] + 4.0f) FAIL("cudyn kernel via raw CUDA: x[%d] = %g, want %g", i, y[i], x[i] + 4.0f);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  CHECK_CU(cuLibraryUnload_(raw));
  std::printf("foreign CUkernel launched by cudyn both ways; cudyn kernel launched by raw cuLaunchKernel and cudaLaunchKernel\n");
  return 0;
}

// The same library and name give the same pointer through both APIs; driver queries work on a
// runtime-loaded kernel.
static int handle_identity() {
  auto cuLibraryGetKernel_ = DRIVER(cuLibraryGetKernel);
  auto cuKernelGetName_ = DRIVER(cuKernelGetName, 12030);
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib = load(api);
    cudaKernel_t from_rt = nullptr;
    CHECK_RT(cudaLibraryGetKernel(&from_rt, lib, "vec_add"));
    CUkernel from_cu = nullptr;
    CHECK_CU(cuLibraryGetKernel_(&from_cu, lib, "vec_add"));
    cudyn_kernel_t from_cudyn_rt = kernel(lib, "vec_add", CUDYN_API_RUNTIME);
    cudyn_kernel_t from_cudyn_drv = kernel(lib, "vec_add", CUDYN_API_DRIVER);
    EXPECT(from_rt == from_cu, "cudaLibraryGetKernel %p vs cuLibraryGetKernel %p", (void *)from_rt, (void *)from_cu);
    EXPECT(from_cudyn_rt == from_cu && from_cudyn_drv == from_cu, "cudyn handles agree");
    const char *name = nullptr;
    CHECK_CU(cuKernelGetName_(&name, from_rt));
    EXPECT(std::strcmp(name, "vec_add") == 0, "cuKernelGetName on a %s-loaded kernel gave %s", api_name(api), name);
    const char *ours = nullptr;
    CHECK_CUDYN(cudyn_kernel_name(from_rt, &ours));
    EXPECT(std::strcmp(ours, "vec_add") == 0, "cudyn_kernel_name gave %s", ours);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  std::printf("cudaLibraryGetKernel == cuLibraryGetKernel == cudyn for libraries loaded through either API\n");
  return 0;
}

static int enumeration_and_params() {
  const std::map<std::string, std::vector<size_t>> expected = {
      {"vec_add", {8, 8, 8, 4}},      {"add_one", {8, 4}},       {"scale_struct", {8, sizeof(ScaleParams), 4}},
      {"read_global", {8, 4}},        {"cluster_report", {8}},   {"coop_sum", {8, 8, 8, 4}},
      {"empty_kernel", {}},           {"smem_copy", {8, 8, 4}},
  };
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib = load(api);
    unsigned count = 0;
    CHECK_CUDYN(cudyn_library_kernel_count(lib, &count));
    EXPECT(count == expected.size(), "%u kernels, want %zu", count, expected.size());
    std::vector<cudyn_kernel_t> ks(count + 3, nullptr);
    unsigned written = 0;
    CHECK_CUDYN(cudyn_library_kernels(lib, ks.data(), (unsigned)ks.size(), &written));
    EXPECT(written == count, "written %u", written);
    std::map<std::string, int> seen;
    for (unsigned i = 0; i < written; ++i) {
      const char *name = nullptr;
      CHECK_CUDYN(cudyn_kernel_name(ks[i], &name));
      auto it = expected.find(name);
      EXPECT(it != expected.end(), "unexpected kernel %s", name);
      seen[name]++;
      size_t np = 99;
      CHECK_CUDYN(cudyn_kernel_param_count(ks[i], &np));
      EXPECT(np == it->second.size(), "%s: %zu params, want %zu", name, np, it->second.size());
      size_t prev_end = 0;
      for (size_t p = 0; p < np; ++p) {
        size_t off = 0, size = 0;
        CHECK_CUDYN(cudyn_kernel_param_info(ks[i], p, &off, &size));
        EXPECT(size == it->second[p], "%s param %zu: size %zu, want %zu", name, p, size, it->second[p]);
        EXPECT(off >= prev_end && off % (size >= 8 ? 8 : size) == 0, "%s param %zu offset %zu", name, p, off);
        prev_end = off + size;
      }
      EXPECT_STATUS(cudyn_kernel_param_info(ks[i], np, nullptr, nullptr), CUDYN_ERROR_INVALID_ARGUMENT);
    }
    EXPECT(seen.size() == expected.size(), "every kernel seen once");
    // A smaller buffer gets the first `capacity` handles.
    unsigned two = 0;
    CHECK_CUDYN(cudyn_library_kernels(lib, ks.data(), 2, &two));
    EXPECT(two == 2, "capacity 2 wrote %u", two);
    EXPECT_STATUS(cudyn_library_kernels(lib, nullptr, 2, &two), CUDYN_ERROR_INVALID_ARGUMENT);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  // scale_struct with the by-value struct really receives it.
  cudyn_library_t lib = load(CUDYN_API_DRIVER);
  cudyn_kernel_t k = kernel(lib, "scale_struct", CUDYN_API_DRIVER);
  auto x = random_floats(1000, 5);
  DevBuf dx(x);
  ScaleParams sp{2.5f, 3, 0.25};
  int n = 1000;
  void *args[] = {&dx.p, &sp, &n};
  size_t sizes[] = {sizeof(float *), sizeof sp, sizeof n};
  cudyn_launch_config cfg = config_1d(n, 128, CUDYN_API_RUNTIME);
  CHECK_CUDYN(cudyn_launch_checked(k, &cfg, args, sizes, 3));
  CHECK_RT(cudaDeviceSynchronize());
  auto y = dx.get();
  for (int i = 0; i < n; ++i) {
    // The device may fuse the multiply-add; allow one float rounding of difference.
    float want = (float)(x[i] * sp.scale + sp.offset + sp.bias);
    if (std::fabs(y[i] - want) > 1e-5f * (1.0f + std::fabs(want))) FAIL("scale_struct x[%d] = %.9g, want %.9g", i, y[i], want);
  }
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  std::printf("enumeration found all %zu kernels both ways; parameter sizes/offsets match the signatures\n", expected.size());
  return 0;
}

// Wrong argument count or size: ARGUMENT_MISMATCH, nothing launched, output untouched.
static int argument_mismatch() {
  cudyn_library_t lib = load(CUDYN_API_RUNTIME);
  cudyn_kernel_t k = kernel(lib, "vec_add", CUDYN_API_RUNTIME);
  std::vector<float> sentinel(N, 42.0f);
  DevBuf da(random_floats(N, 1)), db(random_floats(N, 2)), dc(sentinel);
  int n = N;
  long long wrong = N;
  void *args[] = {&da.p, &db.p, &dc.p, &n};
  void *args_wrong[] = {&da.p, &db.p, &dc.p, &wrong};
  size_t sizes_ok[] = {8, 8, 8, 4};
  size_t sizes_wrong[] = {8, 8, 8, sizeof wrong};
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_launch_config cfg = config_1d(N, 256, api);
    // Launched once first (n = 0 writes nothing), so every check below meets a kernel the
    // fast path knows: it must refuse exactly what the full path refuses.
    int zero = 0;
    void *args_zero[] = {&da.p, &db.p, &dc.p, &zero};
    CHECK_CUDYN(cudyn_launch(k, &cfg, args_zero, 4));
    EXPECT_STATUS(cudyn_launch_checked(k, &cfg, args, nullptr, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT(std::strstr(cudyn_last_error_message(), "arg_sizes") != nullptr, "message: %s", cudyn_last_error_message());
    EXPECT_STATUS(cudyn_launch(k, &cfg, nullptr, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(cudyn_launch(k, &cfg, args, 3), CUDYN_ERROR_ARGUMENT_MISMATCH);
    EXPECT(std::strstr(cudyn_last_error_message(), "4 parameter") != nullptr, "message: %s", cudyn_last_error_message());
    EXPECT_STATUS(cudyn_launch(k, &cfg, args, 5), CUDYN_ERROR_ARGUMENT_MISMATCH);
    EXPECT_STATUS(cudyn_launch_checked(k, &cfg, args_wrong, sizes_wrong, 4), CUDYN_ERROR_ARGUMENT_MISMATCH);
    const char *m = cudyn_last_error_message();
    EXPECT(std::strstr(m, "argument 3") && std::strstr(m, "8 bytes") && std::strstr(m, "4 bytes"), "message names index and sizes: %s", m);
    void *with_null[] = {&da.p, nullptr, &dc.p, &n};
    EXPECT_STATUS(cudyn_launch_checked(k, &cfg, with_null, sizes_ok, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(cudyn_launch(k, nullptr, args, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    cfg.reserved[2] = 1;
    EXPECT_STATUS(cudyn_launch(k, &cfg, args, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    cfg.reserved[2] = 0;
    cfg.api = (cudyn_api)7;
    EXPECT_STATUS(cudyn_launch(k, &cfg, args, 4), CUDYN_ERROR_INVALID_ARGUMENT);
  }
  CHECK_RT(cudaDeviceSynchronize());
  auto c = dc.get();
  for (int i = 0; i < N; ++i)
    if (c[i] != 42.0f) FAIL("output changed at %d: %g", i, c[i]);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  std::printf("argument count/size mismatches refused with both APIs; output untouched\n");
  return 0;
}

static int cluster_launch() {
  int major = 0;
  CHECK_RT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) { std::printf("SKIP: clusters need sm_90+\n"); return kSkip; }
  cudyn_library_t lib = load(CUDYN_API_DRIVER);
  cudyn_kernel_t k = kernel(lib, "cluster_report", CUDYN_API_DRIVER);
  unsigned *d = nullptr;
  CHECK_RT(cudaMalloc(&d, 4 * sizeof(unsigned)));
  const unsigned shapes[][3] = {{2, 1, 1}, {4, 1, 1}, {2, 2, 1}};
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    for (auto &sh : shapes) {
      CHECK_RT(cudaMemset(d, 0, 4 * sizeof(unsigned)));
      cudyn_launch_config cfg{};
      cfg.grid = {8, 4, 1};
      cfg.block = {32, 1, 1};
      cfg.cluster = {sh[0], sh[1], sh[2]};
      cfg.api = api;
      void *args[] = {&d};
      CHECK_CUDYN(cudyn_launch(k, &cfg, args, 1));
      CHECK_RT(cudaDeviceSynchronize());
      unsigned h[4];
      CHECK_RT(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
      EXPECT(h[0] == sh[0] && h[1] == sh[1] && h[2] == sh[2] && h[3] == sh[0] * sh[1] * sh[2],
             "%s: kernel saw cluster {%u,%u,%u} (%u blocks), launched with {%u,%u,%u}", api_name(api), h[0], h[1], h[2], h[3], sh[0], sh[1], sh[2]);
    }
  }
  cudaFree(d);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  std::printf("cluster launches: the kernel saw each requested cluster shape, both APIs\n");
  return 0;
}

static int cooperative_launch() {
  cudyn_library_t lib = load(CUDYN_API_RUNTIME);
  cudyn_kernel_t k = kernel(lib, "coop_sum", CUDYN_API_RUNTIME);
  int sms = 0;
  CHECK_RT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int n = 1 << 20;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = (float)(i % 7);
  double want = 0;
  for (float v : in) want += v;
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    DevBuf din(in), partial(std::vector<float>(sms, 0.f)), out(1);
    int nn = n;
    void *args[] = {&din.p, &partial.p, &out.p, &nn};
    cudyn_launch_config cfg{};
    cfg.grid = {(unsigned)sms, 1, 1};
    cfg.block = {256, 1, 1};
    cfg.cooperative = 1;
    cfg.api = api;
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 4));
    CHECK_RT(cudaDeviceSynchronize());
    float got = out.get()[0];
    EXPECT(std::abs(got - want) < 1e-3 * want, "%s: cooperative sum %g, want %g", api_name(api), got, want);
  }
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  std::printf("cooperative launch with grid-wide sync over %d blocks: sum correct, both APIs\n", sms);
  return 0;
}

static int library_global() {
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib = load(api);
    void *g = nullptr;
    size_t bytes = 0;
    CHECK_CUDYN(cudyn_library_get_global(lib, "g_factor", &g, &bytes));
    EXPECT(g != nullptr && bytes == sizeof(float), "global %p, %zu bytes", g, bytes);
    float f = api == CUDYN_API_DRIVER ? 3.5f : -1.25f;
    CHECK_RT(cudaMemcpy(g, &f, sizeof f, cudaMemcpyHostToDevice));
    cudyn_kernel_t k = kernel(lib, "read_global", api);
    DevBuf out(1000);
    int n = 1000;
    void *args[] = {&out.p, &n};
    cudyn_launch_config cfg = config_1d(n, 128, api);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 2));
    CHECK_RT(cudaDeviceSynchronize());
    auto h = out.get();
    for (int i = 0; i < n; ++i)
      if (h[i] != f * (float)i) FAIL("read_global[%d] = %g, want %g", i, h[i], f * i);
    EXPECT_STATUS(cudyn_library_get_global(lib, "no_such_global", &g, &bytes), CUDYN_ERROR_NOT_FOUND);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  std::printf("library global written from the host and read by a kernel, both APIs\n");
  return 0;
}

// Driver launches on a thread with no current context use device 0's primary context; a
// thread that set a context keeps it.
static int contexts() {
  auto cuCtxGetCurrent_ = DRIVER(cuCtxGetCurrent);
  auto cuCtxSetCurrent_ = DRIVER(cuCtxSetCurrent);
  auto cuDevicePrimaryCtxRetain_ = DRIVER(cuDevicePrimaryCtxRetain);
  auto cuDevicePrimaryCtxRelease_ = DRIVER(cuDevicePrimaryCtxRelease, 11000);
  cudyn_library_t lib = load(CUDYN_API_DRIVER);
  cudyn_kernel_t k = kernel(lib, "add_one", CUDYN_API_DRIVER);
  DevBuf dx(std::vector<float>(N, 1.0f));  // allocated on device 0 (the runtime's primary context)
  std::atomic<int> failed{0};
  std::thread t([&] {
    CUcontext cur = reinterpret_cast<CUcontext>(1);
    if (cuCtxGetCurrent_(&cur) != CUDA_SUCCESS || cur != nullptr) { failed = 1; return; }
    int n = N;
    void *args[] = {&dx.p, &n};
    cudyn_launch_config cfg = config_1d(N, 256, CUDYN_API_DRIVER);
    if (cudyn_launch(k, &cfg, args, 2) != CUDYN_SUCCESS) { std::fprintf(stderr, "%s\n", cudyn_last_error_message()); failed = 2; return; }
    // The launch used device 0's primary context for itself only: none is current after.
    if (cuCtxGetCurrent_(&cur) != CUDA_SUCCESS || cur != nullptr) failed = 3;
  });
  t.join();
  EXPECT(failed == 0, "fresh-thread driver launch (stage %d)", failed.load());
  // A thread with its own context current keeps it (here: the primary context set explicitly).
  CUcontext primary = nullptr, before = nullptr, after = nullptr;
  CHECK_CU(cuDevicePrimaryCtxRetain_(&primary, 0));
  CHECK_CU(cuCtxSetCurrent_(primary));
  CHECK_CU(cuCtxGetCurrent_(&before));
  int n = N;
  void *args[] = {&dx.p, &n};
  cudyn_launch_config cfg = config_1d(N, 256, CUDYN_API_DRIVER);
  CHECK_CUDYN(cudyn_launch(k, &cfg, args, 2));
  CHECK_CU(cuCtxGetCurrent_(&after));
  EXPECT(before == after, "the current context changed");
  CHECK_RT(cudaDeviceSynchronize());
  auto h = dx.get();
  for (int i = 0; i < N; ++i)
    if (h[i] != 3.0f) FAIL("x[%d] = %g, want 3", i, h[i]);
  CHECK_CU(cuDevicePrimaryCtxRelease_(0));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  std::printf("driver launch from a context-less thread used device 0's primary context and left none current; a set context was kept\n");
  return 0;
}

// One library, its kernel launched on each of two GPUs.
static int two_gpus() {
  require_gpu(2);
  cudyn_library_t lib = load(CUDYN_API_RUNTIME);
  cudyn_kernel_t k = kernel(lib, "vec_add", CUDYN_API_RUNTIME);
  for (int dev = 0; dev < 2; ++dev) {
    CHECK_RT(cudaSetDevice(dev));
    auto a = random_floats(N, 100 + dev), b = random_floats(N, 200 + dev);
    DevBuf da(a), db(b), dc(N);
    cudaStream_t s;
    CHECK_RT(cudaStreamCreate(&s));
    int n = N;
    void *args[] = {&da.p, &db.p, &dc.p, &n};
    // Runtime launch on the current device, then a driver launch on this device's stream.
    cudyn_launch_config rt = config_1d(N, 256, CUDYN_API_RUNTIME, s);
    CHECK_CUDYN(cudyn_launch(k, &rt, args, 4));
    CHECK_RT(cudaStreamSynchronize(s));
    auto c = dc.get();
    for (int i = 0; i < N; ++i)
      if (c[i] != a[i] + b[i]) FAIL("device %d runtime: c[%d] wrong", dev, i);
    CHECK_RT(cudaMemset(dc.p, 0, N * sizeof(float)));
    cudyn_launch_config drv = config_1d(N, 256, CUDYN_API_DRIVER, s);
    CHECK_CUDYN(cudyn_launch(k, &drv, args, 4));
    CHECK_RT(cudaStreamSynchronize(s));
    c = dc.get();
    for (int i = 0; i < N; ++i)
      if (c[i] != a[i] + b[i]) FAIL("device %d driver: c[%d] wrong", dev, i);
    CHECK_RT(cudaStreamDestroy(s));
    std::printf("device %d: loaded once, launched through runtime and driver: correct\n", dev);
  }
  CHECK_RT(cudaSetDevice(0));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return 0;
}

// Malformed images never reach CUDA: these run with or without a GPU.
static int bad_images() {
  auto fat = read_file(FATBIN_PATH);
  auto cub = read_file(CUBIN_PATH);
  cudyn_library_t lib = reinterpret_cast<cudyn_library_t>(0x1);
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    EXPECT_STATUS(cudyn_library_load_data(nullptr, 100, api, &lib), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(cudyn_library_load_data(fat.data(), 0, api, &lib), CUDYN_ERROR_INVALID_IMAGE);
    std::vector<char> noise(4096);
    std::mt19937 g(1);
    for (auto &c : noise) c = (char)g();
    EXPECT_STATUS(cudyn_library_load_data(noise.data(), noise.size(), api, &lib), CUDYN_ERROR_INVALID_IMAGE);
    EXPECT_STATUS(cudyn_library_load_data(fat.data(), fat.size() / 2, api, &lib), CUDYN_ERROR_INVALID_IMAGE);
    EXPECT(std::strstr(cudyn_last_error_message(), "truncated") != nullptr, "%s", cudyn_last_error_message());
    EXPECT_STATUS(cudyn_library_load_data(cub.data(), cub.size() - 100, api, &lib), CUDYN_ERROR_INVALID_IMAGE);
    EXPECT_STATUS(cudyn_library_load_data(cub.data(), 63, api, &lib), CUDYN_ERROR_INVALID_IMAGE);
    EXPECT_STATUS(cudyn_library_load_file("/nonexistent/file.cubin", api, &lib), CUDYN_ERROR_IO);
    EXPECT_STATUS(cudyn_library_load_data(fat.data(), fat.size(), (cudyn_api)5, &lib), CUDYN_ERROR_INVALID_ARGUMENT);
  }
  EXPECT(lib == reinterpret_cast<cudyn_library_t>(0x1), "output written on failure");
  std::printf("NULL, empty, random, truncated fatbin and cubin, bad api: clear statuses, output untouched\n");
  return 0;
}

// A cubin for another architecture is refused before CUDA sees it, naming both.
static int wrong_arch() {
  auto other = read_file(CUBIN_OTHER_ARCH_PATH);
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib = nullptr;
    EXPECT_STATUS(cudyn_library_load_data(other.data(), other.size(), api, &lib), CUDYN_ERROR_NO_BINARY_FOR_DEVICE);
    const char *m = cudyn_last_error_message();
    EXPECT(std::strstr(m, "sm_100a") && std::strstr(m, "sm_90"), "message names both archs: %s", m);
  }
  std::printf("sm_100a cubin refused on this GPU: %s\n", cudyn_last_error_message());
  return 0;
}

// A fatbin with plain sm_90 and sm_90a SASS of one source: cudyn hands CUDA only the entry CUDA
// picks on this GPU (the sm_90a one on an sm_90, in either order), so the kernels found and the
// code that runs are raw CUDA's on the whole fatbin: `only_in_*` tell which kernels the loaded
// entry has, `which_entry` (in both, different bodies) which code ran.
static int arch_pick() {
  int major = 0, minor = 0;
  CHECK_RT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_RT(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  if (major * 10 + minor != 90) {
    std::printf("SKIP: the fatbins hold sm_90 and sm_90a code; this GPU is sm_%d%d\n", major, minor);
    return kSkip;
  }
  auto cuLibraryLoadData_ = DRIVER(cuLibraryLoadData);
  auto cuLibraryGetKernel_ = DRIVER(cuLibraryGetKernel);
  auto cuLibraryUnload_ = DRIVER(cuLibraryUnload);
  auto cuLaunchKernel_ = DRIVER(cuLaunchKernel);
  int *d = nullptr;
  CHECK_RT(cudaMalloc(&d, sizeof(int)));
  auto ran = [&](auto launch) {
    CHECK_RT(cudaMemset(d, 0, sizeof(int)));
    launch();
    CHECK_RT(cudaDeviceSynchronize());
    int v = 0;
    CHECK_RT(cudaMemcpy(&v, d, sizeof(int), cudaMemcpyDeviceToHost));
    return v;
  };
  const char *only[] = {"only_in_sm_90", "only_in_sm_90a"};
  for (const char *path : {ARCH_PICK_PLAIN_FIRST, ARCH_PICK_A_FIRST}) {
    auto img = read_file(path);
    CUlibrary raw = nullptr;
    CHECK_CU(cuLibraryLoadData_(&raw, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    bool raw_has[2];
    for (int i = 0; i < 2; ++i) {
      CUkernel k = nullptr;
      raw_has[i] = cuLibraryGetKernel_(&k, raw, only[i]) == CUDA_SUCCESS;
    }
    EXPECT(raw_has[0] != raw_has[1], "raw CUDA loads one entry: %d %d", raw_has[0], raw_has[1]);
    CUkernel rk = nullptr;
    CHECK_CU(cuLibraryGetKernel_(&rk, raw, "which_entry"));
    void *args[] = {&d};
    int raw_tag = ran([&] { CHECK_CU(cuLaunchKernel_(reinterpret_cast<CUfunction>(rk), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr)); });
    EXPECT(raw_tag == (raw_has[1] ? 901 : 90), "raw CUDA's which_entry wrote %d", raw_tag);
    for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
      cudyn_library_t lib = nullptr;
      CHECK_CUDYN(cudyn_library_load_data(img.data(), img.size(), api, &lib));
      for (int i = 0; i < 2; ++i) {
        cudyn_kernel_t k = nullptr;
        cudyn_status st = cudyn_library_get_kernel(lib, only[i], api, &k);
        EXPECT((st == CUDYN_SUCCESS) == raw_has[i], "%s: %s through cudyn: %s, raw CUDA: %s", path, only[i],
               st == CUDYN_SUCCESS ? "found" : "not found", raw_has[i] ? "found" : "not found");
      }
      cudyn_kernel_t k = kernel(lib, "which_entry", api);
      cudyn_launch_config cfg = config_1d(1, 1, api);
      int tag = ran([&] { CHECK_CUDYN(cudyn_launch(k, &cfg, args, 1)); });
      EXPECT(tag == raw_tag, "%s: cudyn ran the entry of tag %d, raw CUDA %d", path, tag, raw_tag);
      CHECK_CUDYN(cudyn_library_unload(lib, api));
    }
    CHECK_CU(cuLibraryUnload_(raw));
    std::printf("%s: raw CUDA and cudyn (both APIs) load the sm_90%s entry\n", path, raw_has[1] ? "a" : "");
  }
  CHECK_RT(cudaFree(d));
  return 0;
}

// Kernels of an unloaded library are refused, not handed to CUDA.
static int use_after_unload() {
  cudyn_library_t lib = load(CUDYN_API_DRIVER);
  cudyn_kernel_t k = kernel(lib, "add_one", CUDYN_API_DRIVER);
  size_t np = 0;
  CHECK_CUDYN(cudyn_kernel_param_count(k, &np));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  DevBuf dx(16);
  int n = 16;
  void *args[] = {&dx.p, &n};
  cudyn_launch_config cfg = config_1d(16, 16, CUDYN_API_RUNTIME);
  EXPECT_STATUS(cudyn_launch(k, &cfg, args, 2), CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(std::strstr(cudyn_last_error_message(), "unloaded") != nullptr, "%s", cudyn_last_error_message());
  EXPECT_STATUS(cudyn_kernel_param_count(k, &np), CUDYN_ERROR_INVALID_ARGUMENT);
  // Unloading through the other API than the one that loaded it is refused.
  cudyn_library_t lib2 = load(CUDYN_API_RUNTIME);
  EXPECT_STATUS(cudyn_library_unload(lib2, CUDYN_API_DRIVER), CUDYN_ERROR_INVALID_ARGUMENT);
  CHECK_CUDYN(cudyn_library_unload(lib2, CUDYN_API_RUNTIME));
  CHECK_CUDYN(cudyn_library_unload(nullptr, CUDYN_API_RUNTIME));
  std::printf("launch and query after unload refused: %s\n", "ok");
  return 0;
}

// File and PTX loading; attributes; dynamic shared memory over 48 KiB.
static int files_ptx_attributes() {
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    for (const char *path : {FATBIN_PATH, CUBIN_PATH, PTX_PATH}) {
      cudyn_library_t lib = nullptr;
      CHECK_CUDYN(cudyn_library_load_file(path, api, &lib));
      cudyn_kernel_t k = kernel(lib, "smem_copy", api);
      int regs = -1, maxthreads = -1, binver = -1;
      CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_NUM_REGS, 0, &regs));
      CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK, 0, &maxthreads));
      CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_BINARY_VERSION, 0, &binver));
      EXPECT(regs > 0 && maxthreads >= 256 && binver >= 90, "regs %d maxthreads %d binary %d", regs, maxthreads, binver);
      EXPECT_STATUS(cudyn_kernel_get_attribute(k, (cudyn_kernel_attribute)99, 0, &regs), CUDYN_ERROR_INVALID_ARGUMENT);
      const int block = 16384;  // 64 KiB of floats: needs the opt-in attribute
      CHECK_CUDYN(cudyn_kernel_set_attribute(k, CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, block * 4, 0));
      int got = 0;
      CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0, &got));
      EXPECT(got == block * 4, "max dynamic smem %d", got);
      auto in = random_floats(4096, 9);
      DevBuf din(in), dout(4096);
      int n = 4096;
      void *args[] = {&din.p, &dout.p, &n};
      cudyn_launch_config cfg = config_1d(n, 1024, api);
      cfg.shared_mem_bytes = block * 4;
      CHECK_CUDYN(cudyn_launch(k, &cfg, args, 3));
      CHECK_RT(cudaDeviceSynchronize());
      auto out = dout.get();
      for (int i = 0; i < n; ++i)
        if (out[i] != in[i] * 2.0f) FAIL("%s smem_copy[%d]", path, i);
      CHECK_CUDYN(cudyn_library_unload(lib, api));
    }
  }
  std::printf("fatbin, cubin and PTX files load through both APIs; attributes read and set; 64 KiB dynamic smem launch\n");
  return 0;
}

// CUDA's own failures come back with the error's name and what cudyn was doing.
static int cuda_errors() {
  cudyn_library_t lib = load(CUDYN_API_RUNTIME);
  cudyn_kernel_t k = kernel(lib, "empty_kernel", CUDYN_API_RUNTIME);
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_launch_config cfg = config_1d(1, 1, api);
    cfg.block = {4096, 1, 1};  // over the 1024-thread limit
    cudyn_status s = cudyn_launch(k, &cfg, nullptr, 0);
    EXPECT(s != CUDYN_SUCCESS, "an impossible block size launched");
    const char *m = cudyn_last_error_message();
    EXPECT(std::strstr(m, "launching through the") && std::strstr(m, "nvalid"), "%s", m);
    EXPECT(cudyn_last_cuda_error() != 0, "CUDA code recorded");
    std::printf("%s: %s -> %s\n", api_name(api), cudyn_status_string(s), m);
  }
  EXPECT(cudaGetLastError() == cudaSuccess, "cudyn left a runtime error behind");
  cudyn_kernel_t none = nullptr;
  EXPECT_STATUS(cudyn_library_get_kernel(lib, "no_such_kernel", CUDYN_API_DRIVER, &none), CUDYN_ERROR_NOT_FOUND);
  EXPECT_STATUS(cudyn_library_get_kernel(lib, "no_such_kernel", CUDYN_API_RUNTIME, &none), CUDYN_ERROR_NOT_FOUND);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return 0;
}

int main(int argc, char **argv) {
  const std::map<std::string, std::pair<bool, std::function<int()>>> cases = {
      {"runtime_load_driver_launch", {true, runtime_load_driver_launch}},
      {"driver_load_runtime_launch", {true, driver_load_runtime_launch}},
      {"same_api_both_ways", {true, same_api_both_ways}},
      {"both_launches_one_stream", {true, both_launches_one_stream}},
      {"foreign_handles", {true, foreign_handles}},
      {"handle_identity", {true, handle_identity}},
      {"enumeration_and_params", {true, enumeration_and_params}},
      {"argument_mismatch", {true, argument_mismatch}},
      {"cluster_launch", {true, cluster_launch}},
      {"cooperative_launch", {true, cooperative_launch}},
      {"library_global", {true, library_global}},
      {"contexts", {true, contexts}},
      {"two_gpus", {true, two_gpus}},
      {"bad_images", {false, bad_images}},
      {"wrong_arch", {true, wrong_arch}},
      {"arch_pick", {true, arch_pick}},
      {"use_after_unload", {true, use_after_unload}},
      {"files_ptx_attributes", {true, files_ptx_attributes}},
      {"cuda_errors", {true, cuda_errors}},
  };
  if (argc < 2 || !cases.count(argv[1])) {
    std::fprintf(stderr, "usage: %s <case>; cases:", argv[0]);
    for (auto &c : cases) std::fprintf(stderr, " %s", c.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  auto &c = cases.at(argv[1]);
  if (c.first) require_gpu();
  return c.second();
}
