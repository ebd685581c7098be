// libvector_add: a static __global__ kernel, registered with this library's own static CUDA
// runtime the usual way, and handed out as a cudaKernel_t.
#include <cstdio>

#include "vector_add.h"

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" cudaKernel_t vector_add_kernel(void) {
  cudaKernel_t kernel = nullptr;
  cudaError_t e = cudaGetKernel(&kernel, vector_add);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "libvector_add: cudaGetKernel failed: %s\n", cudaGetErrorString(e));
    return nullptr;
  }
  return kernel;
}
