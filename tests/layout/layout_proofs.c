/* Compile-time proofs that cudyn.h agrees with CUDA's own headers. Compiled by build.rs (C11,
 * -Wall -Wextra -Wpedantic -Werror) and again by the CMake build; a broken proof breaks both.
 * Nothing here runs. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include "cudyn.h"

#define SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)

/* Handles: one type each, the same struct tag as the driver's and the runtime's. */
_Static_assert(SAME_TYPE(cudyn_library_t, CUlibrary), "cudyn_library_t is CUlibrary");
_Static_assert(SAME_TYPE(cudyn_library_t, cudaLibrary_t), "cudyn_library_t is cudaLibrary_t");
_Static_assert(SAME_TYPE(cudyn_kernel_t, CUkernel), "cudyn_kernel_t is CUkernel");
_Static_assert(SAME_TYPE(cudyn_kernel_t, cudaKernel_t), "cudyn_kernel_t is cudaKernel_t");
_Static_assert(SAME_TYPE(cudyn_function_t, CUfunction), "cudyn_function_t is CUfunction");
_Static_assert(SAME_TYPE(cudyn_function_t, cudaFunction_t), "cudyn_function_t is cudaFunction_t");
_Static_assert(SAME_TYPE(cudyn_stream_t, CUstream), "cudyn_stream_t is CUstream");
_Static_assert(SAME_TYPE(cudyn_stream_t, cudaStream_t), "cudyn_stream_t is cudaStream_t");

/* cudyn_dim3 is dim3. */
_Static_assert(sizeof(cudyn_dim3) == sizeof(dim3), "cudyn_dim3 size");
_Static_assert(_Alignof(cudyn_dim3) == _Alignof(dim3), "cudyn_dim3 alignment");
_Static_assert(offsetof(cudyn_dim3, x) == offsetof(dim3, x), "cudyn_dim3.x");
_Static_assert(offsetof(cudyn_dim3, y) == offsetof(dim3, y), "cudyn_dim3.y");
_Static_assert(offsetof(cudyn_dim3, z) == offsetof(dim3, z), "cudyn_dim3.z");

/* The launch config's frozen layout (the Rust side asserts the same numbers). */
_Static_assert(sizeof(cudyn_launch_config) == 104, "cudyn_launch_config size");
_Static_assert(_Alignof(cudyn_launch_config) == 8, "cudyn_launch_config alignment");
_Static_assert(offsetof(cudyn_launch_config, grid) == 0, "grid");
_Static_assert(offsetof(cudyn_launch_config, block) == 12, "block");
_Static_assert(offsetof(cudyn_launch_config, shared_mem_bytes) == 24, "shared_mem_bytes");
_Static_assert(offsetof(cudyn_launch_config, stream) == 32, "stream");
_Static_assert(offsetof(cudyn_launch_config, api) == 40, "api");
_Static_assert(offsetof(cudyn_launch_config, cluster) == 44, "cluster");
_Static_assert(offsetof(cudyn_launch_config, cooperative) == 56, "cooperative");
_Static_assert(offsetof(cudyn_launch_config, priority) == 60, "priority");
_Static_assert(offsetof(cudyn_launch_config, programmatic_serialization) == 64, "programmatic_serialization");
_Static_assert(offsetof(cudyn_launch_config, reserved) == 68, "reserved");
_Static_assert(sizeof(cudyn_compile_options) == 88, "cudyn_compile_options size");
_Static_assert(sizeof(cudyn_link_input) == 32, "cudyn_link_input size");

/* Enums cross as 32-bit ints. */
_Static_assert(sizeof(cudyn_status) == 4 && sizeof(cudyn_api) == 4 && sizeof(cudyn_code_kind) == 4, "enum sizes");

/* Kernel attributes use CUDA's numbers. */
_Static_assert((int)CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK == (int)CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "attr");
_Static_assert((int)CUDYN_KERNEL_ATTR_NUM_REGS == (int)CU_FUNC_ATTRIBUTE_NUM_REGS, "attr");
_Static_assert((int)CUDYN_KERNEL_ATTR_PTX_VERSION == (int)CU_FUNC_ATTRIBUTE_PTX_VERSION, "attr");
_Static_assert((int)CUDYN_KERNEL_ATTR_BINARY_VERSION == (int)CU_FUNC_ATTRIBUTE_BINARY_VERSION, "attr");
_Static_assert((int)CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES == (int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "attr");
_Static_assert((int)CUDYN_KERNEL_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE == (int)CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, "attr");

/* A TU must declare something. */
typedef int cudyn_layout_proofs_done;
_Static_assert(sizeof(cudyn_buffer) == 16 && offsetof(cudyn_buffer, size) == 8, "cudyn_buffer");
_Static_assert(offsetof(cudyn_compile_options, target) == 56 && offsetof(cudyn_compile_options, reserved) == 60, "options");
_Static_assert(offsetof(cudyn_link_input, data) == 8 && offsetof(cudyn_link_input, name) == 24, "link input");
_Static_assert(sizeof(cudyn_version_info) == 20 && sizeof(cudyn_cache_info) == 40, "versions, stats");
_Static_assert(sizeof(cudyn_load_option) == 16 && _Alignof(cudyn_load_option) == 8 &&
               offsetof(cudyn_load_option, id) == 0 && offsetof(cudyn_load_option, value) == 8, "load option");
_Static_assert(sizeof(cudyn_load_option_id) == 4, "load option id");
