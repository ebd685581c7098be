/* libmatrix_mul: a C++ library with its own (static) CUDA runtime. Its matrix-multiply kernel
 * is a fatbin embedded in the library, loaded at run time through the CUDA runtime by cudyn;
 * the library hands the kernel out as a cudaKernel_t for anyone to launch. */
#ifndef MATRIX_MUL_H
#define MATRIX_MUL_H

/* Block shape the kernel expects: MATRIX_MUL_TILE x MATRIX_MUL_TILE threads, one block per
 * output tile (grid.x over columns, grid.y over rows). */
#define MATRIX_MUL_TILE 16

#ifndef __CUDACC__
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif
#define MATRIX_MUL_API __attribute__((visibility("default")))
/* matrix_mul(const float *a, const float *b, float *c, int m, int n, int k): row-major
 * c[m x n] = a[m x k] * b[k x n]. Loaded on first call (thread-safe) and kept for the life of
 * the process; NULL, with the reason on stderr, when it cannot be loaded. */
MATRIX_MUL_API cudaKernel_t matrix_mul_kernel(void);
#ifdef __cplusplus
}
#endif
#endif
#endif
