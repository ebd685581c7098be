/* libvector_add: a CUDA library compiled by nvcc with its own (static) CUDA runtime. Its
 * kernel is an ordinary __global__ function; the library hands out its handle, which
 * cudaGetKernel gives, for anyone to launch through any runtime instance or the driver. */
#ifndef VECTOR_ADD_H
#define VECTOR_ADD_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
#define VECTOR_ADD_API __attribute__((visibility("default")))
/* vector_add(const float *a, const float *b, float *c, int n): c[i] = a[i] + b[i], one thread
 * per element. NULL, with the reason on stderr, when the runtime has no handle for it. */
VECTOR_ADD_API cudaKernel_t vector_add_kernel(void);
#ifdef __cplusplus
}
#endif
#endif
