/* Load a fatbin through the CUDA runtime, launch its kernel through the driver, check the
 * numbers. Usage: load_and_launch <file.fatbin>. Needs a GPU (exits 77 without one). */
#include <cuda_runtime_api.h>
#include "example_util.h"

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s <fatbin>\n", argv[0]); return 2; }
  example_require_gpu("load_and_launch");

  cudyn_library_t lib;
  CHECK(cudyn_library_load_file(argv[1], CUDYN_API_RUNTIME, &lib)); /* loaded by the runtime */
  cudyn_kernel_t vec_add;
  CHECK(cudyn_library_get_kernel(lib, "vec_add", CUDYN_API_RUNTIME, &vec_add));

  enum { N = 1 << 20 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
  unsigned seed = 42;
  for (int i = 0; i < N; ++i) { a[i] = example_rand(&seed); b[i] = example_rand(&seed); }
  float *da, *db, *dc;
  cudaMalloc((void **)&da, N * sizeof *a);
  cudaMalloc((void **)&db, N * sizeof *b);
  cudaMalloc((void **)&dc, N * sizeof *c);
  cudaMemcpy(da, a, N * sizeof *a, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, N * sizeof *b, cudaMemcpyHostToDevice);

  int n = N;
  void *args[] = {&da, &db, &dc, &n};
  cudyn_launch_config cfg = {0};          /* zero-initialised: every optional field unset */
  cfg.grid.x = (N + 255) / 256; cfg.grid.y = cfg.grid.z = 1;
  cfg.block.x = 256; cfg.block.y = cfg.block.z = 1;
  cfg.api = CUDYN_API_DRIVER;             /* ...launched by the driver */
  CHECK(cudyn_launch(vec_add, &cfg, args, 4));
  if (cudaMemcpy(c, dc, N * sizeof *c, cudaMemcpyDeviceToHost) != cudaSuccess) { fprintf(stderr, "copy back failed\n"); return 1; }

  int bad = 0;
  for (int i = 0; i < N; ++i) bad += c[i] != a[i] + b[i];
  printf("vec_add of %d elements, loaded through the runtime, launched through the driver: %s\n", N, bad ? "WRONG" : "correct");
  cudaFree(da); cudaFree(db); cudaFree(dc);
  free(a); free(b); free(c);
  CHECK(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return bad ? 1 : 0;
}
