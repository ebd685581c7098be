// libmatrix_mul: loads its embedded fatbin through the CUDA runtime with cudyn and hands out
// the kernel. It links its own static CUDA runtime (its symbols stay private to this library)
// and uses it to check that the handle cudyn's runtime gave it is one it can use as well.
#include "matrix_mul.h"

#include <cstdio>
#include <cstring>

#include "cudyn.h"

// Generated at build time from the fatbin (embed_fatbin.cmake).
extern "C" const unsigned char matrix_mul_fatbin[];
extern "C" const unsigned long matrix_mul_fatbin_size;

namespace {
cudaKernel_t load() {
  cudyn_library_t lib = nullptr;
  if (cudyn_library_load_data(matrix_mul_fatbin, matrix_mul_fatbin_size, CUDYN_API_RUNTIME, &lib) != CUDYN_SUCCESS) {
    std::fprintf(stderr, "libmatrix_mul: loading the fatbin failed: %s\n", cudyn_last_error_message());
    return nullptr;
  }
  cudyn_kernel_t kernel = nullptr;
  if (cudyn_library_get_kernel(lib, "matrix_mul", CUDYN_API_RUNTIME, &kernel) != CUDYN_SUCCESS) {
    std::fprintf(stderr, "libmatrix_mul: no kernel matrix_mul: %s\n", cudyn_last_error_message());
    cudyn_library_unload(lib, CUDYN_API_RUNTIME);
    return nullptr;
  }
  // cudyn's runtime loaded it; this library's own runtime instance takes the same handle.
  const char *name = nullptr;
  cudaError_t e = cudaFuncGetName(&name, reinterpret_cast<const void *>(kernel));
  if (e != cudaSuccess || !name || std::strcmp(name, "matrix_mul") != 0) {
    std::fprintf(stderr, "libmatrix_mul: its own runtime does not know the handle: %s\n", cudaGetErrorString(e));
    cudyn_library_unload(lib, CUDYN_API_RUNTIME);
    return nullptr;
  }
  return kernel;  // cudyn_kernel_t is cudaKernel_t: no cast. The library stays loaded.
}
}  // namespace

extern "C" cudaKernel_t matrix_mul_kernel(void) {
  static const cudaKernel_t kernel = load();
  return kernel;
}
