// cudyn.hpp on a GPU: every wrapper call, through both APIs, with results checked on random
// data. Memory comes from the CUDA runtime this program links (cudaMalloc/cudaMemcpy); cudyn
// loads, compiles and launches. Without a GPU: exit 77 (skip), or 1 with CUDYN_REQUIRE_GPU=1.
#include <cuda.h>  // types only: cudyn.hpp proves CUkernel is cudyn_kernel_t
#include <cuda_runtime_api.h>

#include "cudyn.hpp"
#include "example_util.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#ifndef WRAPPER_FATBIN
#error "WRAPPER_FATBIN must name the fatbin built from wrapper_device.cu"
#endif

static int failures = 0;
#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond);  \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)
#define CUDA_CHECK(call)                                                                               \
  do {                                                                                                 \
    cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));      \
      std::exit(1);                                                                                    \
    }                                                                                                  \
  } while (0)

// The program's operator new calls so far (wrapper_new_counter.cpp replaces operator new, in
// host code), to show that a typed launch allocates nothing.
unsigned long wrapper_new_count();

static const cudyn::api kApis[] = {cudyn::api::runtime, cudyn::api::driver};
static const char* api_name(cudyn::api a) { return a == cudyn::api::driver ? "driver" : "runtime"; }

// --- device memory helpers (the CUDA runtime this program links) ----------------------------
template <class T>
struct dbuf {
  T* p = nullptr;
  size_t n = 0;
  explicit dbuf(size_t count) : n(count) { CUDA_CHECK(cudaMalloc(&p, n * sizeof(T))); }
  dbuf(const dbuf&) = delete;
  dbuf& operator=(const dbuf&) = delete;
  ~dbuf() { cudaFree(p); }
  void put(const std::vector<T>& h) { CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> get() const {
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n);
    CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

template <class T>
static std::vector<T> random_vector(size_t n, unsigned seed) {
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(example_rand(&seed));
  return v;
}

template <class T>
static bool approx_eq(T got, T want) {
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= 1e-5 * (1.0 + std::fabs(static_cast<double>(want)));
}

// --- kernels compiled into this program (for kernel_of) -------------------------------------
static __device__ int g_flag;
static __global__ void add_one(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}
static __global__ void set_flag() { g_flag = 42; }

// --- source compiled at run time ------------------------------------------------------------
static const char* kHeader = R"(
namespace ops {
template <class T> __device__ T mul_add(T a, T x, T y) { return a * x + y; }
}
)";

static const char* kSource = R"(
#include "ops.h"
template <class T>
__global__ void axpy(T a, const T* x, T* y, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = ops::mul_add(a, x[i], y[i]);
}

__device__ float scale_factor = 2.5f;
__device__ int table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

extern "C" __global__ void fill(float* p, float v, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

extern "C" __global__ void scale_by_factor(float* p, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) p[i] *= scale_factor;
}

// Each block sums its slice of x through dynamic shared memory.
extern "C" __global__ void block_sum(const float* x, float* out, unsigned per_thread) {
  extern __shared__ float s[];
  unsigned base = blockIdx.x * blockDim.x * per_thread;
  for (unsigned j = 0; j < per_thread; ++j)
    s[threadIdx.x * per_thread + j] = x[base + threadIdx.x * per_thread + j];
  __syncthreads();
  if (threadIdx.x == 0) {
    float acc = 0.0f;
    for (unsigned j = 0; j < blockDim.x * per_thread; ++j) acc += s[j];
    out[blockIdx.x] = acc;
  }
}
)";

template <class T>
static void check_axpy(cudyn::kernel k, cudyn::api launch_api, unsigned seed) {
  const size_t n = 100003;  // not a multiple of the block
  auto x = random_vector<T>(n, seed), y = random_vector<T>(n, seed * 7 + 1);
  dbuf<T> dx(n), dy(n);
  dx.put(x);
  dy.put(y);
  const T a = static_cast<T>(1.75);
  k.launch(cudyn::launch_config::linear(n, 128).api(launch_api), a, static_cast<const T*>(dx.p), dy.p, n);
  auto out = dy.get();
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!approx_eq(out[i], static_cast<T>(a * x[i] + y[i]))) ++bad;
  EXPECT(bad == 0);
  if (bad) std::fprintf(stderr, "  axpy<%s>: %zu of %zu wrong\n", sizeof(T) == 4 ? "float" : "double", bad, n);
}

static void source_suite(cudyn::api load_api) {
  std::printf("-- from_source through the %s\n", api_name(load_api));
  cudyn::source_options opts{"-std=c++17"};
  opts.add_header("ops.h", kHeader)
      .add_name_expression("axpy<float>")
      .add_name_expression("axpy<double>")
      .program_name("wrapper_gpu_source.cu");
  cudyn::library lib = cudyn::library::from_source(kSource, opts, load_api);
  EXPECT(lib && lib.loaded_by() == load_api);

  // Name expressions and their lowered names.
  EXPECT(lib.lowered_names().size() == 2);
  const char* low_f = lib.lowered_name("axpy<float>");
  const char* low_d = lib.lowered_name("axpy<double>");
  EXPECT(low_f && std::strncmp(low_f, "_Z", 2) == 0);
  EXPECT(low_d && std::strncmp(low_d, "_Z", 2) == 0 && std::strcmp(low_f, low_d) != 0);
  cudyn::kernel axpy_f = lib.kernel_by_expression("axpy<float>");
  cudyn::kernel axpy_d = lib.kernel_by_expression("axpy<double>");
  EXPECT(axpy_f && axpy_d && axpy_f != axpy_d);
  EXPECT(std::strcmp(axpy_f.name(), low_f) == 0);
  EXPECT(lib.kernel(low_f) == axpy_f);  // the lowered name finds the same handle
  EXPECT(lib.try_kernel_by_expression("axpy<int>").status() == CUDYN_ERROR_NOT_FOUND);
  try {
    (void)lib.kernel("no_such_kernel");
    EXPECT(false);
  } catch (const cudyn::error& e) {
    EXPECT(e.status() == CUDYN_ERROR_NOT_FOUND);
  }

  // Parameters.
  EXPECT(axpy_f.param_count() == 4 && axpy_d.param_count() == 4);
  EXPECT(axpy_f.param_info(0).offset == 0 && axpy_f.param_info(0).size == sizeof(float));
  EXPECT(axpy_d.param_info(0).size == sizeof(double));
  EXPECT(axpy_f.param_info(3).size == 8 && axpy_f.param_info(3).offset == 24);
  EXPECT(axpy_f.try_param_info(4).status() != CUDYN_SUCCESS);

  // Typed launches, through both launch APIs whichever loaded the library.
  for (cudyn::api la : kApis) {
    check_axpy<float>(axpy_f, la, 11);
    check_axpy<double>(axpy_d, la, 23);
  }

  // Wrong arguments: ARGUMENT_MISMATCH, nothing launched, the output untouched.
  {
    const size_t n = 4096;
    auto x = random_vector<float>(n, 5), y = random_vector<float>(n, 6);
    dbuf<float> dx(n), dy(n);
    dx.put(x);
    dy.put(y);
    auto cfg = cudyn::launch_config::linear(n);
    const float* cx = dx.p;
    auto r = axpy_f.try_launch(cfg, 2.0 /* a double for a float */, cx, dy.p, n);
    EXPECT(r.status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
    EXPECT(r.message().find("argument 0") != std::string::npos);
    std::printf("   wrong type: %s\n", r.message().c_str());
    auto r2 = axpy_f.try_launch(cfg, 2.0f, cx, dy.p, static_cast<int>(n) /* an int for a 64-bit count */);
    EXPECT(r2.status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
    auto r3 = axpy_f.try_launch(cfg.api(cudyn::api::driver), 2.0f, cx, dy.p);  // one short
    EXPECT(r3.status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
    try {
      axpy_f.launch(cfg, 2.0, cx, dy.p, n);
      EXPECT(false);
    } catch (const cudyn::error& e) {
      EXPECT(e.status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
    }
    EXPECT(dy.get() == y);
  }

  // extern "C" kernels by name; zero-copy of a __device__ global through global<T>.
  {
    const size_t n = 5000;
    dbuf<float> d(n);
    cudyn::kernel fill = lib.kernel("fill");
    EXPECT(std::strcmp(fill.name(), "fill") == 0);
    fill.launch(cudyn::launch_config::linear(n).api(load_api), d.p, 3.0f, n);
    auto g = lib.global<float>("scale_factor");
    EXPECT(g.ptr != nullptr && g.bytes == sizeof(float) && g.count() == 1);
    float factor = 0.0f;
    CUDA_CHECK(cudaMemcpy(&factor, g.ptr, sizeof factor, cudaMemcpyDeviceToHost));
    EXPECT(factor == 2.5f);
    factor = -4.0f;  // write it through the pointer, then use it in a kernel
    CUDA_CHECK(cudaMemcpy(g.ptr, &factor, sizeof factor, cudaMemcpyHostToDevice));
    lib.kernel("scale_by_factor").launch(cudyn::launch_config::linear(n), d.p, n);
    auto out = d.get();
    size_t bad = 0;
    for (float v : out) bad += v != -12.0f;
    EXPECT(bad == 0);
    auto t = lib.global<int>("table");
    EXPECT(t.count() == 8);
    int table[8] = {};
    CUDA_CHECK(cudaMemcpy(table, t.ptr, sizeof table, cudaMemcpyDeviceToHost));
    EXPECT(table[0] == 1 && table[7] == 8);
    EXPECT(lib.try_global<double>("scale_factor").status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
    EXPECT(lib.try_global<float>("no_such_global").status() == CUDYN_ERROR_NOT_FOUND);
    EXPECT(lib.try_global<void>("table").value().bytes == sizeof table);
  }

  // Enumeration.
  {
    auto ks = lib.kernels();
    EXPECT(ks.size() == lib.kernel_count());
    std::set<std::string> names;
    for (cudyn::kernel k : ks) names.insert(k.name());
    EXPECT(names.count("fill") && names.count("scale_by_factor") && names.count("block_sum"));
    EXPECT(names.count(low_f) && names.count(low_d));
    std::printf("   %zu kernels\n", ks.size());
  }

  // Attributes; more than 48 KiB of dynamic shared memory once allowed.
  {
    cudyn::kernel bs = lib.kernel("block_sum");
    int32_t max_threads = bs.attribute(CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK);
    int32_t regs = bs.attribute(CUDYN_KERNEL_ATTR_NUM_REGS);
    int32_t binary = bs.attribute(CUDYN_KERNEL_ATTR_BINARY_VERSION);
    std::printf("   block_sum: max threads %d, %d registers, binary version %d\n", max_threads, regs, binary);
    EXPECT(max_threads >= 32 && max_threads <= 1024 && regs > 0 && binary >= 50);
    const unsigned threads = 256, per_thread = 64, blocks = 7;  // 64 KiB of shared memory per block
    const size_t shared = threads * per_thread * sizeof(float);
    bs.set_attribute(CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int32_t>(shared));
    EXPECT(bs.attribute(CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES) == static_cast<int32_t>(shared));
    const size_t n = size_t{blocks} * threads * per_thread;
    auto x = random_vector<float>(n, 99);
    dbuf<float> dx(n), dout(blocks);
    dx.put(x);
    for (cudyn::api la : kApis) {
      CUDA_CHECK(cudaMemset(dout.p, 0, blocks * sizeof(float)));
      bs.launch(cudyn::launch_config().grid(blocks).block(threads).shared_mem(shared).api(la),
                static_cast<const float*>(dx.p), dout.p, per_thread);
      auto out = dout.get();
      for (unsigned b = 0; b < blocks; ++b) {
        double want = 0;
        for (size_t j = 0; j < size_t{threads} * per_thread; ++j) want += x[b * threads * per_thread + j];
        EXPECT(std::fabs(out[b] - want) < 1e-2);
      }
    }
    EXPECT(bs.function() != nullptr);
  }

  // Moving and releasing keep the same library; handles stay valid.
  {
    cudyn::library moved = std::move(lib);
    EXPECT(!lib && moved && moved.kernel_by_expression("axpy<float>") == axpy_f);
    cudyn_library_t raw = moved.release();
    EXPECT(raw != nullptr && !moved);
    cudyn::library adopted(raw, load_api);
    EXPECT(adopted.kernel("fill") != nullptr);
    EXPECT(adopted.try_unload().ok() && !adopted);
  }
}

static void fatbin_suite(cudyn::api load_api) {
  std::printf("-- from_file / from_data (%s) through the %s\n", WRAPPER_FATBIN, api_name(load_api));
  size_t size = 0;
  void* image = example_read_file(WRAPPER_FATBIN, &size);
  cudyn::library from_data = cudyn::library::from_data(image, size, load_api);
  std::free(image);  // the library does not need it any more
  cudyn::library from_file = cudyn::library::from_file(std::string(WRAPPER_FATBIN), load_api);
  EXPECT(from_data.get() != from_file.get());
  EXPECT(from_file.kernels().size() == 2 && from_data.kernel_count() == 2);

  const size_t n = 77777;
  auto x = random_vector<float>(n, 3);
  dbuf<float> d(n);
  for (cudyn::library* lib : {&from_data, &from_file}) {
    for (cudyn::api la : kApis) {
      d.put(x);
      cudyn::kernel k = lib->kernel("scale_add_bias");
      k.launch(cudyn::launch_config::linear(n).api(la), d.p, -3.0f, n);
      auto out = d.get();
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += !approx_eq(out[i], x[i] * -3.0f + 0.25f);
      EXPECT(bad == 0);
    }
    auto bias = lib->global<float>("bias");
    EXPECT(bias.count() == 1);
  }

  // A kernel of an unloaded library is refused, not handed to CUDA.
  cudyn::kernel stale;
  {
    cudyn::library tmp = cudyn::library::from_file(WRAPPER_FATBIN, load_api);
    stale = tmp.kernel("scale");
    EXPECT(stale.param_count() == 3);
  }  // unloaded here
  auto r = stale.try_launch(cudyn::launch_config(), d.p, 1.0f, n);
  EXPECT(r.status() == CUDYN_ERROR_INVALID_ARGUMENT);
  std::printf("   stale kernel: %s\n", r.message().c_str());
}

static void kernel_of_suite() {
  std::printf("-- kernel_of(&static __global__ function)\n");
  cudyn::kernel k = cudyn::kernel_of(&add_one);
  CUkernel as_driver = k;  // the same handle, as CUDA's own types
  cudaKernel_t as_runtime = k;
  EXPECT(as_driver == as_runtime && as_driver != nullptr);
  EXPECT(std::strstr(k.name(), "add_one") != nullptr);
  EXPECT(k.param_count() == 2);
  const int n = 3000;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i;
  dbuf<int> d(n);
  d.put(h);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  for (cudyn::api la : kApis) {
    const unsigned long news = wrapper_new_count();
    k.launch(cudyn::launch_config::linear(n).api(la).stream(stream), d.p, n);
    EXPECT(wrapper_new_count() == news);  // the typed launch allocated nothing
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  auto out = d.get();
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += out[i] != i + 2;
  EXPECT(bad == 0);
  EXPECT(k.try_launch(cudyn::launch_config(), d.p, size_t{1}).status() == CUDYN_ERROR_ARGUMENT_MISMATCH);
  EXPECT(cudyn::try_kernel_of(&add_one).value() == k);

  // No arguments at all.
  cudyn::kernel f = cudyn::kernel_of(&set_flag);
  EXPECT(f.param_count() == 0);
  for (cudyn::api la : kApis) {
    int zero = 0, flag = 0;
    CUDA_CHECK(cudaMemcpyToSymbol(g_flag, &zero, sizeof zero));
    f.launch(cudyn::launch_config().api(la));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpyFromSymbol(&flag, g_flag, sizeof flag));
    EXPECT(flag == 42);
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

int main() {
  example_require_gpu("wrapper_gpu");
  std::printf("%s\n", cudyn::version_string());
  try {
    for (cudyn::api a : kApis) source_suite(a);
    for (cudyn::api a : kApis) fatbin_suite(a);
    // kernel_of last, after libraries were unloaded: the CUkernel cudaGetKernel creates can
    // reuse the address of an unloaded kernel (seen on an H200, library address and all),
    // and that live handle must launch.
    kernel_of_suite();
  } catch (const cudyn::error& e) {
    std::fprintf(stderr, "unexpected cudyn::error: %s\n%s", e.what(), e.log().c_str());
    return 1;
  }
  if (failures) {
    std::printf("FAIL: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}
