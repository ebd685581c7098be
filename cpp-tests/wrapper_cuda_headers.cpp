// cudyn.hpp after cuda.h and cuda_runtime_api.h, built by a plain C++ compiler (no nvcc):
// its static_asserts prove cudyn_kernel_t is CUkernel and cudaKernel_t, the one conversion
// serves both, and kernel_of() compiles and reports cudaGetKernel's errors. Runs without a GPU.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cudyn.hpp"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_convertible<cudyn::kernel, CUkernel>::value, "kernel -> CUkernel");
static_assert(std::is_convertible<cudyn::kernel, cudaKernel_t>::value, "kernel -> cudaKernel_t");
static_assert(std::is_convertible<CUkernel, cudyn::kernel>::value, "CUkernel -> kernel");
static_assert(std::is_convertible<cudaStream_t, cudyn_stream_t>::value, "cudaStream_t is a cudyn_stream_t");

// A host function: cudaGetKernel must refuse it (it is no __global__ function).
void not_a_kernel(int* p, int n);
void not_a_kernel(int* p, int n) {
  if (p && n > 0) p[0] = n;
}

int main() {
  cudyn::kernel k;
  CUkernel ck = k;
  cudaKernel_t rk = k;
  cudyn::kernel back = ck;
  cudyn::launch_config cfg;
  cfg.grid(dim3(3, 2)).block(dim3(64)).stream(cudaStream_t{});
  if (ck != rk || back != k || cfg.get().grid.x != 3 || cfg.get().grid.y != 2 || cfg.get().block.x != 64 ||
      cfg.get().block.y != 1) {
    std::printf("FAIL: conversions or dim3\n");
    return 1;
  }
  auto r = cudyn::try_kernel_of(&not_a_kernel);
  std::printf("kernel_of(host function): %s (cuda code %d)\n", r.message().c_str(), r.cuda_code());
  if (r.ok() || r.status() != CUDYN_ERROR_CUDA || r.cuda_code() == 0 ||
      std::strstr(r.message().c_str(), "cudaGetKernel") == nullptr) {
    std::printf("FAIL: kernel_of on a host function should fail with CUDYN_ERROR_CUDA\n");
    return 1;
  }
#if CUDYN_HPP_EXCEPTIONS
  try {
    (void)cudyn::kernel_of(&not_a_kernel);
    std::printf("FAIL: kernel_of did not throw\n");
    return 1;
  } catch (const cudyn::error& e) {
    if (e.status() != CUDYN_ERROR_CUDA) return 1;
  }
#endif
  std::printf("PASS\n");
  return 0;
}
