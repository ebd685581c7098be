/* For ctest cli.resources: loads a fatbin on the GPU and prints, for each kernel, what CUDA
 * reports of it: "name registers shared local constant max_threads", one line each. Without a
 * GPU it prints "SKIP: ..." and exits 77 (1 under CUDYN_REQUIRE_GPU=1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cudyn.h"

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s <fatbin>\n", argv[0]); return 2; }
  if (cudyn_component_status(CUDYN_COMPONENT_DRIVER) != CUDYN_SUCCESS) {
    const char *req = getenv("CUDYN_REQUIRE_GPU");
    int required = req && strcmp(req, "1") == 0;
    printf("%s: kernel_attributes: %s\n", required ? "FAIL" : "SKIP", cudyn_last_error_message());
    return required ? 1 : 77;
  }
  cudyn_library_t lib;
  cudyn_kernel_t kernels[64];
  uint32_t n = 0;
  if (cudyn_library_load_file(argv[1], CUDYN_API_RUNTIME, &lib) != CUDYN_SUCCESS ||
      cudyn_library_kernels(lib, kernels, 64, &n) != CUDYN_SUCCESS) {
    fprintf(stderr, "%s\n", cudyn_last_error_message());
    return 1;
  }
  const cudyn_kernel_attribute attrs[] = {CUDYN_KERNEL_ATTR_NUM_REGS, CUDYN_KERNEL_ATTR_SHARED_SIZE_BYTES,
                                          CUDYN_KERNEL_ATTR_LOCAL_SIZE_BYTES, CUDYN_KERNEL_ATTR_CONST_SIZE_BYTES,
                                          CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK};
  for (uint32_t i = 0; i < n; ++i) {
    const char *name;
    if (cudyn_kernel_name(kernels[i], &name) != CUDYN_SUCCESS) { fprintf(stderr, "%s\n", cudyn_last_error_message()); return 1; }
    printf("%s", name);
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; ++a) {
      int32_t v;
      if (cudyn_kernel_get_attribute(kernels[i], attrs[a], 0, &v) != CUDYN_SUCCESS) {
        fprintf(stderr, "%s\n", cudyn_last_error_message());
        return 1;
      }
      printf(" %d", (int)v);
    }
    printf("\n");
  }
  cudyn_library_unload(lib, CUDYN_API_RUNTIME);
  return 0;
}
