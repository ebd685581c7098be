// A program using the header-only vecmath library: built by a plain C++ compiler, with no
// CUDA header, linked against cudyn alone. For device memory it borrows five functions of the
// CUDA driver that cudyn already opened (dlopen of cudyn_component_path, dlsym), so the binary
// has no CUDA library among its NEEDED entries and no undefined cu*/cuda* symbol.
// Without a GPU: exit 77 (skip), or 1 with CUDYN_REQUIRE_GPU=1.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "example_util.h"
#include "vecmath.hpp"

namespace {

// The few driver entry points this program needs, declared by hand (CUDA's ABI, stable).
using CUresult = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
using CUcontext = CUctx_st*;

struct driver_memory {
  CUresult (*device_primary_ctx_retain)(CUcontext*, int) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;

  template <class F>
  static void sym(void* lib, const char* name, F& f) {
    void* p = dlsym(lib, name);
    if (!p) {
      std::fprintf(stderr, "no %s in the driver\n", name);
      std::exit(1);
    }
    f = reinterpret_cast<F>(p);
  }

  // The driver cudyn found (example_require_gpu has made sure there is one).
  void open() {
    const char* path = cudyn_component_path(CUDYN_COMPONENT_DRIVER);
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (!lib && path) lib = dlopen(path, RTLD_NOW);
    if (!lib) {
      std::fprintf(stderr, "cannot open the driver at %s\n", path ? path : "(none)");
      std::exit(1);
    }
    sym(lib, "cuDevicePrimaryCtxRetain", device_primary_ctx_retain);
    sym(lib, "cuCtxSetCurrent", ctx_set_current);
    sym(lib, "cuMemAlloc_v2", mem_alloc);
    sym(lib, "cuMemFree_v2", mem_free);
    sym(lib, "cuMemcpyHtoD_v2", htod);
    sym(lib, "cuMemcpyDtoH_v2", dtoh);
    sym(lib, "cuCtxSynchronize", ctx_synchronize);
    CUcontext ctx = nullptr;
    check(device_primary_ctx_retain(&ctx, 0), "cuDevicePrimaryCtxRetain");
    check(ctx_set_current(ctx), "cuCtxSetCurrent");
  }
  static void check(CUresult r, const char* what) {
    if (r != 0) {
      std::fprintf(stderr, "%s failed: CUresult %d\n", what, r);
      std::exit(1);
    }
  }
};

void check(const cudyn::result<void>& r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s failed: %s\n%s", what, r.error_details().describe().c_str(), r.log().c_str());
    std::exit(1);
  }
}

}  // namespace

int main() {
  example_require_gpu("header-only vecmath");
  driver_memory cu;
  cu.open();

  check(vecmath::init(), "vecmath::init");

  const size_t n = (size_t{1} << 20) + 3;
  CUdeviceptr dx = 0, dy = 0;
  driver_memory::check(cu.mem_alloc(&dx, n * sizeof(float)), "cuMemAlloc");
  driver_memory::check(cu.mem_alloc(&dy, n * sizeof(float)), "cuMemAlloc");
  float* x = reinterpret_cast<float*>(dx);
  float* y = reinterpret_cast<float*>(dy);

  std::vector<float> hy(n);
  unsigned seed = 2024;
  for (auto& v : hy) v = example_rand(&seed);
  driver_memory::check(cu.htod(dy, hy.data(), n * sizeof(float)), "cuMemcpyHtoD");

  // x = 0.5 * i; x *= -2; y = 3 * x + y   =>   y[i] = hy[i] - 3 * i
  check(vecmath::iota(x, n, 0.0f, 0.5f), "vecmath::iota");
  check(vecmath::scale(x, n, -2.0f), "vecmath::scale");
  check(vecmath::axpy(3.0f, x, y, n), "vecmath::axpy");
  driver_memory::check(cu.ctx_synchronize(), "cuCtxSynchronize");

  std::vector<float> out(n), xs(n);
  driver_memory::check(cu.dtoh(out.data(), dy, n * sizeof(float)), "cuMemcpyDtoH");
  driver_memory::check(cu.dtoh(xs.data(), dx, n * sizeof(float)), "cuMemcpyDtoH");
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const float xi = (0.0f + 0.5f * static_cast<float>(i)) * -2.0f;
    const float want = 3.0f * xi + hy[i];
    if (xs[i] != xi || std::fabs(out[i] - want) > 1e-6f * (1.0f + std::fabs(want))) {
      if (bad < 5) std::fprintf(stderr, "i=%zu: x=%g (want %g), y=%g (want %g)\n", i, xs[i], xi, out[i], want);
      ++bad;
    }
  }
  cu.mem_free(dx);
  cu.mem_free(dy);
  if (bad) {
    std::printf("FAIL: %zu of %zu wrong\n", bad, n);
    return 1;
  }
  std::printf("vecmath on %zu floats: PASS (%s)\n", n, cudyn::version_string());
  return 0;
}
