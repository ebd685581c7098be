// Device code of libmatrix_mul: built by nvcc into a fatbin at build time, embedded into the
// library, and loaded at run time through the CUDA runtime by cudyn. Row-major
// C[m x n] = A[m x k] * B[k x n], in MATRIX_MUL_TILE x MATRIX_MUL_TILE thread blocks.
#include "matrix_mul.h"

extern "C" __global__ void matrix_mul(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float ta[MATRIX_MUL_TILE][MATRIX_MUL_TILE];
  __shared__ float tb[MATRIX_MUL_TILE][MATRIX_MUL_TILE];
  const int row = blockIdx.y * MATRIX_MUL_TILE + threadIdx.y;
  const int col = blockIdx.x * MATRIX_MUL_TILE + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < k; t += MATRIX_MUL_TILE) {
    const int ka = t + threadIdx.x, kb = t + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? a[(size_t)row * k + ka] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? b[(size_t)kb * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < MATRIX_MUL_TILE; ++i) sum += ta[threadIdx.y][i] * tb[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = sum;
}
