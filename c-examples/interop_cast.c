/* One kernel handle, used by cudyn and by raw CUDA calls with no cast: cudyn_kernel_t,
 * CUkernel and cudaKernel_t are the same C type. Usage: interop_cast <file.fatbin>.
 * Raw driver calls come through cudaGetDriverEntryPointByVersion, so nothing links libcuda. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include "example_util.h"

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s <fatbin>\n", argv[0]); return 2; }
  example_require_gpu("interop_cast");

  size_t size;
  void *image = example_read_file(argv[1], &size);
  cudyn_library_t lib;
  CHECK(cudyn_library_load_data(image, size, CUDYN_API_DRIVER, &lib));
  free(image);

  /* The runtime looks the kernel up in a library the driver loaded... */
  cudaLibrary_t rt_lib = lib;
  cudaKernel_t rt_kernel;
  if (cudaLibraryGetKernel(&rt_kernel, rt_lib, "add_one") != cudaSuccess) { fprintf(stderr, "cudaLibraryGetKernel failed\n"); return 1; }
  /* ...cudyn's handle is the same pointer... */
  cudyn_kernel_t kernel;
  CHECK(cudyn_library_get_kernel(lib, "add_one", CUDYN_API_DRIVER, &kernel));
  if (kernel != rt_kernel) { fprintf(stderr, "handles differ\n"); return 1; }
  /* ...and the driver names it. */
  PFN_cuKernelGetName_v12030 get_name = NULL;
  enum cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuKernelGetName", (void **)&get_name, 12030, cudaEnableDefault, &q);
  const char *name = NULL;
  CUkernel cu_kernel = kernel;
  if (!get_name || get_name(&name, cu_kernel) != CUDA_SUCCESS) { fprintf(stderr, "cuKernelGetName failed\n"); return 1; }

  enum { N = 4096 };
  float host[N];
  for (int i = 0; i < N; ++i) host[i] = (float)i;
  float *d;
  cudaMalloc((void **)&d, sizeof host);
  cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice);
  int n = N;
  void *args[] = {&d, &n};
  /* Raw runtime launch of the handle, then a cudyn driver launch of the same handle. */
  cudaLaunchKernel((const void *)rt_kernel, (dim3){N / 256, 1, 1}, (dim3){256, 1, 1}, args, 0, NULL);
  cudyn_launch_config cfg = {0};
  cfg.grid = (cudyn_dim3){N / 256, 1, 1};
  cfg.block = (cudyn_dim3){256, 1, 1};
  cfg.api = CUDYN_API_DRIVER;
  size_t sizes[] = {sizeof d, sizeof n};
  CHECK(cudyn_launch_checked(kernel, &cfg, args, sizes, 2));
  cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < N; ++i) bad += host[i] != (float)i + 2.0f;
  printf("kernel '%s' (%p): launched by cudaLaunchKernel and by cudyn through the driver: %s\n",
         name, (void *)kernel, bad ? "WRONG" : "both applied");
  cudaFree(d);
  CHECK(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  return bad ? 1 : 0;
}
