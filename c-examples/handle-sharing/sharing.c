/* Kernel handles shared between CUDA runtime instances (the scenario of NVIDIA's "Dynamic
 * Loading in the CUDA Runtime"). Three libraries, each with its own view of CUDA:
 *   libmatrix_mul  C++, its own static runtime; loads an embedded fatbin through the runtime
 *                  with cudyn and hands out the kernel as a cudaKernel_t;
 *   libvector_add  nvcc-compiled, its own static runtime; hands out its static __global__
 *                  kernel through cudaGetKernel;
 *   libcommon      C, linked with cudyn only; launches whatever handle it is given.
 * This program (a fourth static runtime, for memory) takes both handles, has libcommon launch
 * each through the runtime and through the driver, and checks every element.
 * Needs a GPU (exits 77 without one). */
#include <cuda_runtime_api.h>
#include <float.h>
#include <math.h>

#include "common.h"
#include "example_util.h"
#include "matrix_mul.h"
#include "vector_add.h"

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t cuda_ok_e_ = (call);                                                           \
    if (cuda_ok_e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                     \
              cudaGetErrorString(cuda_ok_e_));                                                 \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static const cudyn_api kApis[2] = {CUDYN_API_RUNTIME, CUDYN_API_DRIVER};

static const char *api_name(cudyn_api api) { return api == CUDYN_API_DRIVER ? "driver" : "runtime"; }

/* What libcommon (through cudyn) and this program's own runtime instance say about a handle. */
static void describe(const char *from, cudaKernel_t k) {
  char desc[256];
  CHECK(common_describe(k, desc, sizeof desc));
  const char *rt_name = NULL;
  CUDA_OK(cudaFuncGetName(&rt_name, (const void *)k));
  printf("%s handed out %p: libcommon sees %s; this program's runtime calls it %s\n", from, (void *)k,
         desc, rt_name);
}

static int check_vector_add(cudaKernel_t k) {
  enum { N = (1 << 20) + 3 }; /* not a multiple of the block size */
  const size_t bytes = N * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  if (!a || !b || !c) { fprintf(stderr, "out of memory\n"); exit(1); }
  unsigned seed = 2024;
  for (int i = 0; i < N; ++i) { a[i] = example_rand(&seed) * 100.0f; b[i] = example_rand(&seed); }
  float *da, *db, *dc;
  CUDA_OK(cudaMalloc((void **)&da, bytes));
  CUDA_OK(cudaMalloc((void **)&db, bytes));
  CUDA_OK(cudaMalloc((void **)&dc, bytes));
  CUDA_OK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
  int n = N, failed = 0;
  void *args[] = {&da, &db, &dc, &n};
  const size_t sizes[] = {sizeof da, sizeof db, sizeof dc, sizeof n};
  const cudyn_dim3 block = {256, 1, 1}, grid = {(N + 255) / 256, 1, 1};
  for (int t = 0; t < 2; ++t) {
    CUDA_OK(cudaMemset(dc, 0xff, bytes)); /* NaN: an element not written cannot pass */
    CUDA_OK(cudaDeviceSynchronize());
    CHECK(kApis[t] == CUDYN_API_RUNTIME ? common_launch_runtime(k, grid, block, args, sizes, 4)
                                        : common_launch_driver(k, grid, block, args, sizes, 4));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
    int bad = 0, first = -1;
    for (int i = 0; i < N; ++i) {
      if (c[i] != a[i] + b[i]) { /* one rounding on both sides: exact */
        if (first < 0) first = i;
        ++bad;
      }
    }
    printf("  vector_add, %d elements, launched by libcommon through the %s: %s", N, api_name(kApis[t]),
           bad ? "WRONG" : "all exact\n");
    if (bad) printf(" (%d elements; first [%d] = %g, expected %g)\n", bad, first, c[first], a[first] + b[first]);
    failed += bad != 0;
  }
  CUDA_OK(cudaFree(da)); CUDA_OK(cudaFree(db)); CUDA_OK(cudaFree(dc));
  free(a); free(b); free(c);
  return failed;
}

static int check_matrix_mul(cudaKernel_t k) {
  enum { M = 301, N = 177, K = 259 }; /* none a multiple of the tile */
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
  double *ref = malloc(sizeof(double) * M * N), *tol = malloc(sizeof(double) * M * N);
  if (!a || !b || !c || !ref || !tol) { fprintf(stderr, "out of memory\n"); exit(1); }
  unsigned seed = 7;
  for (int i = 0; i < M * K; ++i) a[i] = example_rand(&seed);
  for (int i = 0; i < K * N; ++i) b[i] = example_rand(&seed);
  /* Reference in double. The GPU sums K float products in float (maybe fused): its error is
   * at most about K * FLT_EPSILON / 2 * sum |a_ik b_kj|; allow K * FLT_EPSILON times that sum. */
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double s = 0.0, s_abs = 0.0;
      for (int kk = 0; kk < K; ++kk) {
        double p = (double)a[i * K + kk] * (double)b[kk * N + j];
        s += p;
        s_abs += fabs(p);
      }
      ref[i * N + j] = s;
      tol[i * N + j] = (double)K * FLT_EPSILON * s_abs + FLT_MIN;
    }
  }
  float *da, *db, *dc;
  CUDA_OK(cudaMalloc((void **)&da, sizeof(float) * M * K));
  CUDA_OK(cudaMalloc((void **)&db, sizeof(float) * K * N));
  CUDA_OK(cudaMalloc((void **)&dc, sizeof(float) * M * N));
  CUDA_OK(cudaMemcpy(da, a, sizeof(float) * M * K, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b, sizeof(float) * K * N, cudaMemcpyHostToDevice));
  int m = M, n = N, kd = K, failed = 0;
  void *args[] = {&da, &db, &dc, &m, &n, &kd};
  const size_t sizes[] = {sizeof da, sizeof db, sizeof dc, sizeof m, sizeof n, sizeof kd};
  const cudyn_dim3 block = {MATRIX_MUL_TILE, MATRIX_MUL_TILE, 1};
  const cudyn_dim3 grid = {(N + MATRIX_MUL_TILE - 1) / MATRIX_MUL_TILE, (M + MATRIX_MUL_TILE - 1) / MATRIX_MUL_TILE, 1};
  for (int t = 0; t < 2; ++t) {
    CUDA_OK(cudaMemset(dc, 0xff, sizeof(float) * M * N));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK(common_launch(k, kApis[t], grid, block, args, sizes, 6));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(c, dc, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
    int bad = 0, first = -1;
    double worst = 0.0; /* largest error as a fraction of its tolerance */
    for (int i = 0; i < M * N; ++i) {
      double err = fabs((double)c[i] - ref[i]);
      if (!(err <= tol[i])) { /* NaN fails too */
        if (first < 0) first = i;
        ++bad;
      } else if (err / tol[i] > worst) {
        worst = err / tol[i];
      }
    }
    printf("  matrix_mul, %dx%d = %dx%d * %dx%d, launched by libcommon through the %s: ", M, N, M, K, K, N,
           api_name(kApis[t]));
    if (bad)
      printf("WRONG (%d elements; first [%d][%d] = %.9g, expected %.9g +- %.3g)\n", bad, first / N, first % N,
             c[first], ref[first], tol[first]);
    else
      printf("all within tolerance (worst error %.3f of it)\n", worst);
    failed += bad != 0;
  }
  CUDA_OK(cudaFree(da)); CUDA_OK(cudaFree(db)); CUDA_OK(cudaFree(dc));
  free(a); free(b); free(c); free(ref); free(tol);
  return failed;
}

int main(void) {
  example_require_gpu("handle sharing");

  cudaKernel_t mm = matrix_mul_kernel();
  cudaKernel_t va = vector_add_kernel();
  if (!mm || !va) { fprintf(stderr, "a library could not hand out its kernel (see above)\n"); return 1; }
  describe("libmatrix_mul (loaded through the runtime by cudyn)", mm);
  describe("libvector_add (cudaGetKernel of its own runtime)", va);

  int failed = check_vector_add(va) + check_matrix_mul(mm);
  printf("%s: 2 kernels from 2 runtime instances, each launched by libcommon through the runtime and the driver\n",
         failed ? "FAILED" : "OK");
  return failed ? 1 : 0;
}
