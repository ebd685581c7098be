// Shared by the C++ GPU tests: checks that print what failed, the GPU-or-skip rule, raw
// driver entry points fetched through the runtime (so no test links libcuda), and files.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "cudyn.h"

#define FAIL(...)                                          \
  do {                                                     \
    std::fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);   \
    std::fprintf(stderr, __VA_ARGS__);                     \
    std::fprintf(stderr, "\n");                            \
    std::exit(1);                                          \
  } while (0)

#define CHECK_CUDYN(call)                                                                    \
  do {                                                                                       \
    cudyn_status s_ = (call);                                                                \
    if (s_ != CUDYN_SUCCESS)                                                                 \
      FAIL("%s -> %s: %s", #call, cudyn_status_string(s_), cudyn_last_error_message());      \
  } while (0)

#define EXPECT_STATUS(call, want)                                                            \
  do {                                                                                       \
    cudyn_status s_ = (call);                                                                \
    if (s_ != (want))                                                                        \
      FAIL("%s -> %s, expected %s (%s)", #call, cudyn_status_string(s_),                     \
           cudyn_status_string(want), cudyn_last_error_message());                           \
  } while (0)

#define CHECK_RT(call)                                                                       \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) FAIL("%s -> %s", #call, cudaGetErrorName(e_));                    \
  } while (0)

#define CHECK_CU(call)                                                                       \
  do {                                                                                       \
    CUresult r_ = (call);                                                                    \
    if (r_ != CUDA_SUCCESS) FAIL("%s -> CUresult %d", #call, (int)r_);                       \
  } while (0)

#define EXPECT(cond, fmt, ...)                                     \
  do {                                                             \
    if (!(cond)) FAIL("expected %s: " fmt, #cond, ##__VA_ARGS__);  \
  } while (0)

constexpr int kSkip = 77;

// No usable GPU: print why and exit 77, unless CUDYN_REQUIRE_GPU=1 (then fail).
inline void require_gpu(int min_devices = 1) {
  const char *req = std::getenv("CUDYN_REQUIRE_GPU");
  bool required = req && std::strcmp(req, "1") == 0;
  if (cudyn_component_status(CUDYN_COMPONENT_DRIVER) != CUDYN_SUCCESS) {
    std::printf("%s: no usable GPU: %s\n", required ? "FAIL" : "SKIP", cudyn_last_error_message());
    std::exit(required ? 1 : kSkip);
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  if (n < min_devices) {
    // Fewer GPUs than the test needs is a property of the machine, never a failure.
    std::printf("SKIP: this test needs %d GPUs, the machine has %d\n", min_devices, n);
    std::exit(kSkip);
  }
}

// A driver entry point through the runtime: the test never links libcuda.
template <class F>
F driver_fn(const char *name, int version = 12000) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess || !p)
    FAIL("no driver entry point %s", name);
  return reinterpret_cast<F>(p);
}
#define DRIVER(fn, ...) driver_fn<decltype(&fn)>(#fn, ##__VA_ARGS__)

inline std::vector<char> read_file(const char *path) {
  FILE *f = std::fopen(path, "rb");
  if (!f) FAIL("cannot open %s", path);
  std::vector<char> v;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
  std::fclose(f);
  return v;
}

inline std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-100.f, 100.f);
  std::vector<float> v(n);
  for (auto &x : v) x = d(g);
  return v;
}

// Device buffer of floats, freed on scope exit.
struct DevBuf {
  float *p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) { CHECK_RT(cudaMalloc(reinterpret_cast<void **>(&p), n * sizeof(float))); }
  DevBuf(const std::vector<float> &h) : DevBuf(h.size()) {
    CHECK_RT(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  std::vector<float> get() const {
    std::vector<float> h(n);
    CHECK_RT(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }
};

inline cudyn_launch_config config_1d(unsigned n, unsigned block, cudyn_api api, cudyn_stream_t stream = nullptr) {
  cudyn_launch_config c;
  std::memset(&c, 0, sizeof c);
  c.grid = {(n + block - 1) / block, 1, 1};
  c.block = {block, 1, 1};
  c.api = api;
  c.stream = stream;
  return c;
}

inline const char *api_name(cudyn_api a) { return a == CUDYN_API_DRIVER ? "driver" : "runtime"; }
