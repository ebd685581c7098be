// C++ layout proofs: every cudyn handle is the same type as its CUDA driver and runtime twin,
// and the shared structs agree with CUDA's. Compile-time only; main() just reports.
#include <cstddef>
#include <cstdio>
#include <type_traits>
#include "cudyn.h"
#ifdef CUDYN_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <cuda_runtime_api.h>

static_assert(std::is_same_v<cudyn_library_t, CUlibrary> && std::is_same_v<cudyn_library_t, cudaLibrary_t>, "library handles");
static_assert(std::is_same_v<cudyn_kernel_t, CUkernel> && std::is_same_v<cudyn_kernel_t, cudaKernel_t>, "kernel handles");
static_assert(std::is_same_v<cudyn_function_t, CUfunction> && std::is_same_v<cudyn_function_t, cudaFunction_t>, "function handles");
static_assert(std::is_same_v<cudyn_stream_t, CUstream> && std::is_same_v<cudyn_stream_t, cudaStream_t>, "stream handles");
static_assert(sizeof(cudyn_dim3) == sizeof(dim3) && alignof(cudyn_dim3) == alignof(dim3), "dim3");
static_assert(offsetof(cudyn_dim3, x) == offsetof(dim3, x) && offsetof(cudyn_dim3, y) == offsetof(dim3, y) &&
              offsetof(cudyn_dim3, z) == offsetof(dim3, z), "dim3 fields");
static_assert(static_cast<int>(CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES) ==
              static_cast<int>(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), "attribute numbers");
#define PROOFS_AGAINST "cuda.h and cuda_runtime_api.h"
#else
#define PROOFS_AGAINST "cudyn's own frozen layout only (no CUDA headers found)"
#endif

static_assert(sizeof(cudyn_launch_config) == 104 && alignof(cudyn_launch_config) == 8, "launch config");
static_assert(offsetof(cudyn_launch_config, stream) == 32 && offsetof(cudyn_launch_config, api) == 40 &&
              offsetof(cudyn_launch_config, cluster) == 44 && offsetof(cudyn_launch_config, reserved) == 68,
              "launch config fields");
static_assert(sizeof(cudyn_compile_options) == 88 && sizeof(cudyn_link_input) == 32 && sizeof(cudyn_buffer) == 16,
              "other structs");
static_assert(sizeof(cudyn_load_option) == 16 && alignof(cudyn_load_option) == 8 &&
              offsetof(cudyn_load_option, id) == 0 && offsetof(cudyn_load_option, value) == 8, "load option");
// The JIT and library option numbers cudyn passes on are CUDA's own.
static_assert(CU_JIT_MAX_REGISTERS == 0 && CU_JIT_OPTIMIZATION_LEVEL == 7 && CU_JIT_TARGET == 9 &&
              CU_JIT_GENERATE_DEBUG_INFO == 11 && CU_JIT_LOG_VERBOSE == 12 && CU_JIT_GENERATE_LINE_INFO == 13 &&
              CU_JIT_FAST_COMPILE == 16 && CU_JIT_INFO_LOG_BUFFER == 3 && CU_JIT_ERROR_LOG_BUFFER == 5 &&
              (int)cudaJitMaxRegisters == 0 && (int)cudaJitOptimizationLevel == 7 && (int)cudaJitLogVerbose == 12 &&
              (int)CU_LIBRARY_BINARY_IS_PRESERVED == (int)cudaLibraryBinaryIsPreserved,
              "JIT option numbers");

int main() {
  std::printf("layout proofs hold against %s\n", PROOFS_AGAINST);
  return 0;
}
