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
static_assert(std::is_same_v<cudyn_module_t, CUmodule>, "module handles");
static_assert(std::is_same_v<cudyn_event_t, CUevent> && std::is_same_v<cudyn_event_t, cudaEvent_t>, "event handles");
static_assert(std::is_same_v<cudyn_graph_device_node_t, CUgraphDeviceNode> &&
              std::is_same_v<cudyn_graph_device_node_t, cudaGraphDeviceNode_t>, "graph device nodes");
// A launch attribute is CUDA's struct, driver and runtime alike.
static_assert(sizeof(cudyn_launch_attribute) == sizeof(CUlaunchAttribute) &&
              alignof(cudyn_launch_attribute) == alignof(CUlaunchAttribute) &&
              sizeof(cudyn_launch_attribute) == sizeof(cudaLaunchAttribute), "launch attribute");
static_assert(offsetof(cudyn_launch_attribute, value) == offsetof(CUlaunchAttribute, value) &&
              offsetof(cudyn_launch_attribute, value) == offsetof(cudaLaunchAttribute, val), "launch attribute value");
static_assert(sizeof(cudyn_launch_attribute_value) == sizeof(CUlaunchAttributeValue), "launch attribute value size");
static_assert(sizeof(cudyn_access_policy_window) == sizeof(CUaccessPolicyWindow) &&
              offsetof(cudyn_access_policy_window, miss_prop) == offsetof(CUaccessPolicyWindow, missProp), "window");
static_assert(offsetof(cudyn_programmatic_event, trigger_at_block_start) ==
              offsetof(CUlaunchAttributeValue, programmaticEvent.triggerAtBlockStart), "programmatic event");
static_assert(offsetof(cudyn_device_updatable_kernel_node, dev_node) ==
              offsetof(CUlaunchAttributeValue, deviceUpdatableKernelNode.devNode), "device-updatable node");
static_assert(sizeof(cudyn_host_universal_table) == sizeof(CUlibraryHostUniversalFunctionAndDataTable), "host table");
static_assert(static_cast<int>(CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING) ==
                  static_cast<int>(CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING) &&
              static_cast<int>(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) ==
                  static_cast<int>(cudaLaunchAttributePreferredSharedMemoryCarveout) &&
              static_cast<int>(CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE) ==
                  static_cast<int>(CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE),
              "launch attribute numbers");
static_assert(static_cast<int>(CUDYN_JIT_TARGET_COMPUTE_90A) == static_cast<int>(CU_TARGET_COMPUTE_90A) &&
              static_cast<int>(CUDYN_JIT_TARGET_COMPUTE_120F) == static_cast<int>(CU_TARGET_COMPUTE_120F),
              "JIT targets");
static_assert(static_cast<int>(CUDYN_FUNC_CACHE_PREFER_EQUAL) == static_cast<int>(CU_FUNC_CACHE_PREFER_EQUAL) &&
              static_cast<int>(CUDYN_OCCUPANCY_DISABLE_CACHING_OVERRIDE) ==
                  static_cast<int>(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE),
              "cache config and occupancy flags");
#define PROOFS_AGAINST "cuda.h and cuda_runtime_api.h"
#else
#define PROOFS_AGAINST "cudyn's own frozen layout only (no CUDA headers found)"
#endif

static_assert(sizeof(cudyn_launch_config) == 104 && alignof(cudyn_launch_config) == 8, "launch config");
static_assert(offsetof(cudyn_launch_config, stream) == 32 && offsetof(cudyn_launch_config, api) == 40 &&
              offsetof(cudyn_launch_config, cluster) == 44 && offsetof(cudyn_launch_config, reserved0) == 68 &&
              offsetof(cudyn_launch_config, attributes) == 72 && offsetof(cudyn_launch_config, reserved) == 88,
              "launch config fields");
static_assert(sizeof(cudyn_launch_attributes) == 16 && offsetof(cudyn_launch_attributes, count) == 8 &&
                  CUDYN_MAX_LAUNCH_ATTRIBUTES == 64,
              "attribute list");
static_assert(sizeof(cudyn_compile_options) == 88 && sizeof(cudyn_link_input) == 32 && sizeof(cudyn_buffer) == 16,
              "other structs");
static_assert(sizeof(cudyn_load_option) == 16 && alignof(cudyn_load_option) == 8 &&
              offsetof(cudyn_load_option, id) == 0 && offsetof(cudyn_load_option, value) == 8, "load option");
// The JIT and library option numbers cudyn passes on are CUDA's own.
static_assert(CU_JIT_MAX_REGISTERS == 0 && CU_JIT_OPTIMIZATION_LEVEL == 7 && CU_JIT_TARGET == 9 &&
              CU_JIT_GENERATE_DEBUG_INFO == 11 && CU_JIT_LOG_VERBOSE == 12 && CU_JIT_GENERATE_LINE_INFO == 13 &&
              CU_JIT_INFO_LOG_BUFFER == 3 && CU_JIT_ERROR_LOG_BUFFER == 5 && CU_JIT_THREADS_PER_BLOCK == 1 &&
              CU_JIT_WALL_TIME == 2 && CU_JIT_TARGET_FROM_CUCONTEXT == 8 && CU_JIT_FALLBACK_STRATEGY == 10 &&
              CU_JIT_CACHE_MODE == 14 && CU_JIT_GLOBAL_SYMBOL_NAMES == 17 && CU_JIT_GLOBAL_SYMBOL_ADDRESSES == 18 &&
              CU_JIT_GLOBAL_SYMBOL_COUNT == 19 && CU_JIT_POSITION_INDEPENDENT_CODE == 30 &&
              CU_JIT_MIN_CTA_PER_SM == 31 && CU_JIT_MAX_THREADS_PER_BLOCK == 32 &&
              CU_JIT_OVERRIDE_DIRECTIVE_VALUES == 33 && CU_JIT_SPLIT_COMPILE == 34 &&
              (int)CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE == 0 &&
              (int)cudaJitMaxRegisters == 0 && (int)cudaJitOptimizationLevel == 7 && (int)cudaJitLogVerbose == 12 &&
              (int)CU_LIBRARY_BINARY_IS_PRESERVED == (int)cudaLibraryBinaryIsPreserved,
              "JIT option numbers");

int main() {
  std::printf("layout proofs hold against %s\n", PROOFS_AGAINST);
  return 0;
}
