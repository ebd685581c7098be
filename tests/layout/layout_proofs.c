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
_Static_assert(offsetof(cudyn_launch_config, reserved0) == 68, "reserved0");
_Static_assert(offsetof(cudyn_launch_config, attributes) == 72, "attributes");
_Static_assert(offsetof(cudyn_launch_config, reserved) == 88, "reserved");
_Static_assert(sizeof(cudyn_launch_attributes) == 16 && _Alignof(cudyn_launch_attributes) == 8, "attribute list");
_Static_assert(offsetof(cudyn_launch_attributes, attrs) == 0 && offsetof(cudyn_launch_attributes, count) == 8 &&
               offsetof(cudyn_launch_attributes, reserved) == 12, "attribute list fields");
_Static_assert(CUDYN_MAX_LAUNCH_ATTRIBUTES == 64, "the Rust side's MAX_LAUNCH_ATTRIBUTES");

/* A launch attribute is CUDA's, driver and runtime alike: an array of either may be cast. */
#define SAME_LAYOUT(ours, theirs)                                                              \
  _Static_assert(sizeof(ours) == sizeof(theirs) && _Alignof(ours) == _Alignof(theirs), #ours)
SAME_LAYOUT(cudyn_launch_attribute, CUlaunchAttribute);
SAME_LAYOUT(cudyn_launch_attribute, cudaLaunchAttribute);
SAME_LAYOUT(cudyn_launch_attribute_value, CUlaunchAttributeValue);
SAME_LAYOUT(cudyn_access_policy_window, CUaccessPolicyWindow);
SAME_LAYOUT(cudyn_mem_sync_domain_map, CUlaunchMemSyncDomainMap);
SAME_LAYOUT(cudyn_host_universal_table, CUlibraryHostUniversalFunctionAndDataTable);
#define SAME_OFFSET(ours, f, theirs, g) _Static_assert(offsetof(ours, f) == offsetof(theirs, g), #ours "." #f)
SAME_OFFSET(cudyn_launch_attribute, id, CUlaunchAttribute, id);
SAME_OFFSET(cudyn_launch_attribute, value, CUlaunchAttribute, value);
SAME_OFFSET(cudyn_launch_attribute, value, cudaLaunchAttribute, val);
SAME_OFFSET(cudyn_launch_attribute, value.access_policy_window.num_bytes, CUlaunchAttribute, value.accessPolicyWindow.num_bytes);
SAME_OFFSET(cudyn_launch_attribute, value.access_policy_window.hit_ratio, CUlaunchAttribute, value.accessPolicyWindow.hitRatio);
SAME_OFFSET(cudyn_launch_attribute, value.access_policy_window.hit_prop, CUlaunchAttribute, value.accessPolicyWindow.hitProp);
SAME_OFFSET(cudyn_launch_attribute, value.access_policy_window.miss_prop, CUlaunchAttribute, value.accessPolicyWindow.missProp);
SAME_OFFSET(cudyn_launch_attribute, value.cluster_dim.z, CUlaunchAttribute, value.clusterDim.z);
SAME_OFFSET(cudyn_launch_attribute, value.programmatic_event.event, CUlaunchAttribute, value.programmaticEvent.event);
SAME_OFFSET(cudyn_launch_attribute, value.programmatic_event.flags, CUlaunchAttribute, value.programmaticEvent.flags);
SAME_OFFSET(cudyn_launch_attribute, value.programmatic_event.trigger_at_block_start, CUlaunchAttribute,
            value.programmaticEvent.triggerAtBlockStart);
SAME_OFFSET(cudyn_launch_attribute, value.launch_completion_event.flags, CUlaunchAttribute, value.launchCompletionEvent.flags);
SAME_OFFSET(cudyn_launch_attribute, value.mem_sync_domain_map.remote, CUlaunchAttribute, value.memSyncDomainMap.remote);
SAME_OFFSET(cudyn_launch_attribute, value.preferred_cluster_dim.y, CUlaunchAttribute, value.preferredClusterDim.y);
SAME_OFFSET(cudyn_launch_attribute, value.device_updatable_kernel_node.dev_node, CUlaunchAttribute,
            value.deviceUpdatableKernelNode.devNode);
SAME_OFFSET(cudyn_launch_attribute, value.device_updatable_kernel_node.dev_node, cudaLaunchAttribute,
            val.deviceUpdatableKernelNode.devNode);
SAME_OFFSET(cudyn_host_universal_table, data_window_size, CUlibraryHostUniversalFunctionAndDataTable, dataWindowSize);
_Static_assert(SAME_TYPE(cudyn_module_t, CUmodule), "cudyn_module_t is CUmodule");
_Static_assert(SAME_TYPE(cudyn_event_t, CUevent) && SAME_TYPE(cudyn_event_t, cudaEvent_t), "cudyn_event_t");
_Static_assert(SAME_TYPE(cudyn_graph_device_node_t, CUgraphDeviceNode) &&
               SAME_TYPE(cudyn_graph_device_node_t, cudaGraphDeviceNode_t), "cudyn_graph_device_node_t");

/* CUDA's numbers, driver and runtime: launch attributes and their values. */
#define SAME_NUMBER(ours, cu, rt) _Static_assert((int)(ours) == (int)(cu) && (int)(ours) == (int)(rt), #ours)
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_IGNORE, CU_LAUNCH_ATTRIBUTE_IGNORE, cudaLaunchAttributeIgnore);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, cudaLaunchAttributeAccessPolicyWindow);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, cudaLaunchAttributeCooperative);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, cudaLaunchAttributeClusterDimension);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
            cudaLaunchAttributeClusterSchedulingPolicyPreference);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            cudaLaunchAttributeProgrammaticStreamSerialization);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, cudaLaunchAttributeProgrammaticEvent);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY, CU_LAUNCH_ATTRIBUTE_PRIORITY, cudaLaunchAttributePriority);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, cudaLaunchAttributeMemSyncDomainMap);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, cudaLaunchAttributeMemSyncDomain);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
            cudaLaunchAttributePreferredClusterDimension);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
            cudaLaunchAttributeLaunchCompletionEvent);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE,
            cudaLaunchAttributeDeviceUpdatableKernelNode);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            cudaLaunchAttributePreferredSharedMemoryCarveout);
SAME_NUMBER(CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING, CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING,
            cudaLaunchAttributeNvlinkUtilCentricScheduling);
SAME_NUMBER(CUDYN_ACCESS_PROPERTY_NORMAL, CU_ACCESS_PROPERTY_NORMAL, cudaAccessPropertyNormal);
SAME_NUMBER(CUDYN_ACCESS_PROPERTY_STREAMING, CU_ACCESS_PROPERTY_STREAMING, cudaAccessPropertyStreaming);
SAME_NUMBER(CUDYN_ACCESS_PROPERTY_PERSISTING, CU_ACCESS_PROPERTY_PERSISTING, cudaAccessPropertyPersisting);
SAME_NUMBER(CUDYN_CLUSTER_SCHEDULING_POLICY_DEFAULT, CU_CLUSTER_SCHEDULING_POLICY_DEFAULT, cudaClusterSchedulingPolicyDefault);
SAME_NUMBER(CUDYN_CLUSTER_SCHEDULING_POLICY_SPREAD, CU_CLUSTER_SCHEDULING_POLICY_SPREAD, cudaClusterSchedulingPolicySpread);
SAME_NUMBER(CUDYN_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING, CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING,
            cudaClusterSchedulingPolicyLoadBalancing);
SAME_NUMBER(CUDYN_MEM_SYNC_DOMAIN_DEFAULT, CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT, cudaLaunchMemSyncDomainDefault);
SAME_NUMBER(CUDYN_MEM_SYNC_DOMAIN_REMOTE, CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE, cudaLaunchMemSyncDomainRemote);
SAME_NUMBER(CUDYN_FUNC_CACHE_PREFER_NONE, CU_FUNC_CACHE_PREFER_NONE, cudaFuncCachePreferNone);
SAME_NUMBER(CUDYN_FUNC_CACHE_PREFER_SHARED, CU_FUNC_CACHE_PREFER_SHARED, cudaFuncCachePreferShared);
SAME_NUMBER(CUDYN_FUNC_CACHE_PREFER_L1, CU_FUNC_CACHE_PREFER_L1, cudaFuncCachePreferL1);
SAME_NUMBER(CUDYN_FUNC_CACHE_PREFER_EQUAL, CU_FUNC_CACHE_PREFER_EQUAL, cudaFuncCachePreferEqual);
SAME_NUMBER(CUDYN_OCCUPANCY_DEFAULT, CU_OCCUPANCY_DEFAULT, cudaOccupancyDefault);
SAME_NUMBER(CUDYN_OCCUPANCY_DISABLE_CACHING_OVERRIDE, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE, cudaOccupancyDisableCachingOverride);
SAME_NUMBER(CUDYN_JIT_PREFER_PTX, CU_PREFER_PTX, cudaPreferPtx);
SAME_NUMBER(CUDYN_JIT_PREFER_BINARY, CU_PREFER_BINARY, cudaPreferBinary);
SAME_NUMBER(CUDYN_JIT_CACHE_OPTION_NONE, CU_JIT_CACHE_OPTION_NONE, cudaJitCacheOptionNone);
SAME_NUMBER(CUDYN_JIT_CACHE_OPTION_CG, CU_JIT_CACHE_OPTION_CG, cudaJitCacheOptionCG);
SAME_NUMBER(CUDYN_JIT_CACHE_OPTION_CA, CU_JIT_CACHE_OPTION_CA, cudaJitCacheOptionCA);
/* The JIT targets are CUDA's CU_TARGET_* (every one: tests of load_options read cuda.h). */
_Static_assert((int)CUDYN_JIT_TARGET_COMPUTE_90 == (int)CU_TARGET_COMPUTE_90, "target 90");
_Static_assert((int)CUDYN_JIT_TARGET_COMPUTE_90A == (int)CU_TARGET_COMPUTE_90A, "target 90a");
_Static_assert((int)CUDYN_JIT_TARGET_COMPUTE_100F == (int)CU_TARGET_COMPUTE_100F, "target 100f");
_Static_assert((int)CUDYN_JIT_TARGET_COMPUTE_121A == (int)CU_TARGET_COMPUTE_121A, "target 121a");
_Static_assert((int)CUDYN_JIT_TARGET_COMPUTE_121F == (int)CU_TARGET_COMPUTE_121F, "target 121f");
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
