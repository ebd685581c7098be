// On-the-fly code on the GPU: LTO-IR units compiled by NVRTC and linked by nvJitLink, then
// launched; libraries loaded straight from source through each API (templates found by their
// C++ names); PTX from NVRTC loaded by the driver; the cache hit on the second load.
#include <map>
#include "test_util.hpp"

static const char *kDevFn = "__device__ float twice_plus(float x, float y) { return 2.0f * x + y; }\n";
static const char *kKernel =
    "__device__ float twice_plus(float x, float y);\n"
    "extern \"C\" __global__ void lto_kernel(const float *x, float *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = twice_plus(x[i], y[i]);\n"
    "}\n";
static const char *kTemplate =
    "template <typename T> __global__ void axpy(T a, const T *x, T *y, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static std::vector<char> compile(const char *src, const char *name, cudyn_code_kind kind, std::vector<const char *> opts = {}) {
  cudyn_buffer code{}, log{};
  cudyn_status s = cudyn_compile(src, name, opts.data(), opts.size(), kind, &code, &log);
  if (s != CUDYN_SUCCESS) FAIL("compile %s: %s\n%s", name, cudyn_last_error_message(), log.data ? (char *)log.data : "");
  std::vector<char> v((char *)code.data, (char *)code.data + code.size);
  cudyn_buffer_free(&code);
  cudyn_buffer_free(&log);
  return v;
}

static void check_y(const std::vector<float> &got, const std::vector<float> &want, const char *what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-5f * (1.0f + std::fabs(want[i]))) FAIL("%s: [%zu] = %.9g, want %.9g", what, i, got[i], want[i]);
}

static int lto_link_and_launch() {
  auto a = compile(kDevFn, "devfn.cu", CUDYN_CODE_LTOIR);
  auto b = compile(kKernel, "kernel.cu", CUDYN_CODE_LTOIR);
  cudyn_link_input in[2] = {{CUDYN_CODE_LTOIR, a.data(), a.size(), "devfn"}, {CUDYN_CODE_LTOIR, b.data(), b.size(), "kernel"}};
  const char *opts[] = {"-lto"};
  cudyn_buffer cubin{}, log{};
  CHECK_CUDYN(cudyn_link(in, 2, opts, 1, &cubin, &log));
  cudyn_code_kind kind;
  CHECK_CUDYN(cudyn_code_kind_of(cubin.data, cubin.size, &kind));
  EXPECT(kind == CUDYN_CODE_CUBIN, "linked kind %d", (int)kind);
  const int n = 50000;
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib;
    CHECK_CUDYN(cudyn_library_load_data(cubin.data, cubin.size, api, &lib));
    cudyn_kernel_t k;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "lto_kernel", api, &k));
    auto x = random_floats(n, 3), y = random_floats(n, 4);
    DevBuf dx(x), dy(y);
    int nn = n;
    void *args[] = {&dx.p, &dy.p, &nn};
    cudyn_launch_config cfg = config_1d(n, 256, api == CUDYN_API_RUNTIME ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 3));
    CHECK_RT(cudaDeviceSynchronize());
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) want[i] = 2.0f * x[i] + y[i];
    check_y(dy.get(), want, "lto_kernel");
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  cudyn_buffer_free(&cubin);
  cudyn_buffer_free(&log);
  std::printf("two LTO-IR units linked with -lto into a cubin; launched both ways: correct\n");
  return 0;
}

static int load_source_each_api() {
  const char *exprs[] = {"axpy<float>", "axpy<double>"};
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_compile_options o{};
    o.name_expressions = exprs;
    o.num_name_expressions = 2;
    cudyn_library_t lib;
    cudyn_buffer log{}, lowered{};
    CHECK_CUDYN(cudyn_library_load_source_ex(kTemplate, "axpy.cu", &o, api, &lib, &log, &lowered));
    const char *fname = (const char *)lowered.data;
    const char *dname = fname + std::strlen(fname) + 1;
    EXPECT(std::strncmp(fname, "_Z", 2) == 0 && std::strcmp(fname, dname) != 0, "lowered %s / %s", fname, dname);
    cudyn_kernel_t kf, kd;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, fname, api, &kf));
    CHECK_CUDYN(cudyn_library_get_kernel(lib, dname, api, &kd));
    const int n = 10000;
    auto x = random_floats(n, 5), y = random_floats(n, 6);
    DevBuf dx(x), dy(y);
    float a = 1.5f;
    int nn = n;
    void *args[] = {&a, &dx.p, &dy.p, &nn};
    size_t sizes[] = {sizeof a, sizeof dx.p, sizeof dy.p, sizeof nn};
    cudyn_launch_config cfg = config_1d(n, 128, api);
    CHECK_CUDYN(cudyn_launch_checked(kf, &cfg, args, sizes, 4));
    CHECK_RT(cudaDeviceSynchronize());
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) want[i] = a * x[i] + y[i];
    check_y(dy.get(), want, "axpy<float>");
    // The double instantiation takes a double: the float argument is refused by size.
    EXPECT_STATUS(cudyn_launch_checked(kd, &cfg, args, sizes, 4), CUDYN_ERROR_ARGUMENT_MISMATCH);
    cudyn_buffer_free(&log);
    cudyn_buffer_free(&lowered);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  // The second load of the same source is a cache hit.
  cudyn_cache_info before{}, after{};
  CHECK_CUDYN(cudyn_cache_stats(&before));
  cudyn_library_t lib;
  CHECK_CUDYN(cudyn_library_load_source(kTemplate, "axpy.cu", nullptr, 0, CUDYN_API_RUNTIME, &lib, nullptr));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  CHECK_CUDYN(cudyn_library_load_source(kTemplate, "axpy.cu", nullptr, 0, CUDYN_API_DRIVER, &lib, nullptr));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  CHECK_CUDYN(cudyn_cache_stats(&after));
  EXPECT(after.enabled == 1 && after.hits >= before.hits + 1, "cache hits %llu -> %llu", (unsigned long long)before.hits, (unsigned long long)after.hits);
  // A compile error is a compile error, with the log.
  cudyn_buffer log{};
  EXPECT_STATUS(cudyn_library_load_source("__global__ void broken( {", "broken.cu", nullptr, 0, CUDYN_API_RUNTIME, &lib, &log), CUDYN_ERROR_COMPILE_FAILED);
  EXPECT(log.data && std::strstr((char *)log.data, "error"), "log: %s", log.data ? (char *)log.data : "(none)");
  cudyn_buffer_free(&log);
  std::printf("template kernels loaded from source through both APIs, found by C++ name, launched; cache hit on reload\n");
  return 0;
}

static int ptx_from_nvrtc() {
  std::string src = std::string("extern \"C\" __global__ void scale(float *x, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= s; }\n");
  auto ptx = compile(src.c_str(), "scale.cu", CUDYN_CODE_PTX);
  for (cudyn_api api : {CUDYN_API_DRIVER, CUDYN_API_RUNTIME}) {
    cudyn_library_t lib;
    CHECK_CUDYN(cudyn_library_load_data(ptx.data(), ptx.size(), api, &lib));
    cudyn_kernel_t k;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "scale", api, &k));
    auto x = random_floats(4096, 8);
    DevBuf dx(x);
    float s = -0.5f;
    int n = 4096;
    void *args[] = {&dx.p, &s, &n};
    cudyn_launch_config cfg = config_1d(n, 256, api);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 3));
    CHECK_RT(cudaDeviceSynchronize());
    std::vector<float> want(n);
    for (int i = 0; i < n; ++i) want[i] = x[i] * s;
    check_y(dx.get(), want, "scale (PTX)");
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  std::printf("PTX from NVRTC (JIT-compiled by the driver) loaded and launched both ways\n");
  return 0;
}

int main(int argc, char **argv) {
  const std::map<std::string, int (*)()> cases = {
      {"lto_link_and_launch", lto_link_and_launch},
      {"load_source_each_api", load_source_each_api},
      {"ptx_from_nvrtc", ptx_from_nvrtc},
  };
  if (argc < 2 || !cases.count(argv[1])) FAIL("usage: %s <case>", argv[0]);
  require_gpu();
  return cases.at(argv[1])();
}
