/* C, on a GPU: a kernel of an nvcc fatbin found by its C++ name (axpy<float>), launched on
 * every device after an eager preload onto all of them, through both APIs; the exact lookup
 * stays exact, an overloaded name is ambiguous, a device that does not exist is named.
 * Usage: peers_gpu_c <peers_kernels.fatbin>. Exits 77 without a GPU (fails under
 * CUDYN_REQUIRE_GPU=1). */
#include <cuda_runtime_api.h>
#include "example_util.h"

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #cond,          \
              cudyn_last_error_message());                                             \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

enum { N = 4096, MAX_DEVICES = 16 };

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s <fatbin>\n", argv[0]); return 2; }
  example_require_gpu("peers_gpu_c");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) { fprintf(stderr, "no device\n"); return 1; }
  if (ndev > MAX_DEVICES) ndev = MAX_DEVICES;

  cudyn_library_t lib;
  CHECK(cudyn_library_load_file(argv[1], CUDYN_API_RUNTIME, &lib));
  cudyn_kernel_t axpy = NULL, by_driver = NULL, other = NULL;
  CHECK(cudyn_library_find_kernel(lib, "axpy<float>", CUDYN_API_RUNTIME, &axpy));
  CHECK(cudyn_library_find_kernel(lib, "axpy<float>(float *, float, int)", CUDYN_API_DRIVER, &by_driver));
  EXPECT(axpy != NULL && axpy == by_driver);
  const char *name = NULL;
  CHECK(cudyn_kernel_name(axpy, &name));
  EXPECT(strcmp(name, "_Z4axpyIfEvPT_S0_i") == 0);
  /* The exact lookup stays exact; the C++ one refuses what is unclear. */
  EXPECT(cudyn_library_get_kernel(lib, "axpy<float>", CUDYN_API_RUNTIME, &other) == CUDYN_ERROR_NOT_FOUND);
  EXPECT(cudyn_library_find_kernel(lib, "scale", CUDYN_API_RUNTIME, &other) == CUDYN_ERROR_AMBIGUOUS_NAME);
  EXPECT(strstr(cudyn_last_error_message(), "[_Z5scalePdd]") != NULL);
  EXPECT(cudyn_library_find_kernel(lib, "axpy", CUDYN_API_DRIVER, &other) == CUDYN_ERROR_NOT_FOUND);
  EXPECT(strstr(cudyn_last_error_message(), "axpy<double>(double*, double, int)") != NULL);
  EXPECT(other == NULL);

  /* Preload onto every device; a device that does not exist is named and nothing is loaded. */
  int devs[MAX_DEVICES + 1];
  double ms[MAX_DEVICES + 1];
  for (int d = 0; d <= ndev; d++) { devs[d] = d; ms[d] = -1.0; }
  EXPECT(cudyn_library_preload(lib, devs, (size_t)ndev + 1, ms) == CUDYN_ERROR_NO_DEVICE);
  char want[64];
  snprintf(want, sizeof want, "device %d: there is no such device", ndev);
  EXPECT(strstr(cudyn_last_error_message(), want) != NULL);
  EXPECT(ms[0] == -1.0);
  CHECK(cudyn_library_preload(lib, devs, (size_t)ndev, ms));
  for (int d = 0; d < ndev; d++) {
    EXPECT(ms[d] >= 0.0);
    printf("preload on device %d: %.3f ms\n", d, ms[d]);
  }

  /* axpy<float> by its C++ name on every device, once through each API: y = 0 + 1.5 + 2.5. */
  for (int d = 0; d < ndev; d++) {
    if (cudaSetDevice(d) != cudaSuccess) { fprintf(stderr, "cudaSetDevice(%d) failed\n", d); return 1; }
    float *dy = NULL;
    if (cudaMalloc((void **)&dy, N * sizeof(float)) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
    cudaMemset(dy, 0, N * sizeof(float));
    int n = N;
    float a = 1.5f;
    void *args[] = {&dy, &a, &n};
    cudyn_launch_config cfg = {0};
    cfg.grid.x = (N + 255) / 256; cfg.grid.y = cfg.grid.z = 1;
    cfg.block.x = 256; cfg.block.y = cfg.block.z = 1;
    cfg.api = CUDYN_API_RUNTIME;
    CHECK(cudyn_launch(axpy, &cfg, args, 3));
    a = 2.5f;
    cfg.api = CUDYN_API_DRIVER;
    CHECK(cudyn_launch(axpy, &cfg, args, 3));
    static float y[N];
    if (cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost) != cudaSuccess) { fprintf(stderr, "copy failed\n"); return 1; }
    int bad = 0;
    for (int i = 0; i < N; i++) bad += y[i] != 4.0f;
    cudaFree(dy);
    printf("device %d: axpy<float> found by its C++ name, launched through the runtime and the driver: %s\n", d,
           bad ? "WRONG" : "correct");
    if (bad) return 1;
  }
  CHECK(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  printf("PASS\n");
  return 0;
}
