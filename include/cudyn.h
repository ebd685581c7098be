/**
 * @file cudyn.h
 * cudyn: load CUDA device code at run time through the CUDA runtime or the driver, with
 * handles that are CUDA's own, and launch them through either API. C99 and C++ compatible;
 * needs no CUDA header.
 *
 * Reading order: status and diagnostics, libraries, kernels, launch, occupancy, compile and
 * link, the compile cache.
 *
 * @par Conventions
 * Every fallible call returns cudyn_status. Outputs come last and are written only on
 * success: on failure every output is left unchanged unless its function says otherwise (the
 * logs of the compile, link and _ex load calls). A buffer is followed by its size; every
 * pointer is checked; freeing or unloading NULL is a no-op. On failure,
 * cudyn_last_error_message() says what happened.
 *
 * @par Ownership
 * A handle a cudyn_library_load_* call returns belongs to the caller: unload it with
 * cudyn_library_unload(). Kernel and function handles belong to their library and are never
 * freed on their own. A cudyn_buffer cudyn fills belongs to the caller: free it with
 * cudyn_buffer_free(). Strings cudyn returns (const char *) belong to cudyn: never free them;
 * each function says how long one stays valid. cudyn never keeps a pointer the caller passed
 * beyond the call.
 *
 * @par Thread safety
 * Every function may be called from any thread, concurrently with any other, with these
 * limits:
 * - Handles (cudyn_library_t, cudyn_kernel_t, cudyn_function_t) are CUDA's and may be used
 *   from any thread. A cudyn call given a library or kernel (a lookup, a query, a launch)
 *   while another thread unloads that library through cudyn either finishes before CUDA's
 *   unload begins or is refused as unloaded: it never hands CUDA a handle being freed. CUDA
 *   calls you make yourself on such a handle meanwhile are your race, as in CUDA.
 * - The last error (cudyn_last_error_message(), cudyn_last_cuda_error()) is per thread: a
 *   failing call records it on the calling thread only, and the message string stays valid
 *   until that thread's next failing cudyn call.
 * - A cudyn_buffer, an options struct and the arrays passed in are not shared by cudyn: the
 *   caller must not change them while a call that reads or fills them runs.
 * - The compile cache may be used by many threads and processes at once.
 *
 * @par fork()
 * cudyn holds none of its locks across fork(): a pthread_atfork handler takes each of them
 * before the fork (waiting for the calls that hold one, and for a CUDA library being opened,
 * to finish) and releases them in the parent and in the child, so no cudyn call in a child
 * ever waits on a thread the child does not have. CUDA itself cannot be used in the child of a
 * process that initialised it (CUDA's rule): there, every call that reaches CUDA fails with
 * CUDA's error, and a call given one of the parent's libraries or kernels either answers from
 * what cudyn remembers (a parameter count) or fails so, changing nothing. What needs no CUDA
 * works as in any process: cudyn_code_kind_of(), the status and error functions,
 * cudyn_compile() and cudyn_link() (NVRTC and nvJitLink, as fork-safe as those libraries are),
 * the compile cache. A child that wants CUDA should exec() a fresh program.
 *
 * @par Naming
 * Handles, which are opaque pointers and CUDA's own types, end in _t (cudyn_kernel_t ==
 * CUkernel). Structs and enums do not (cudyn_launch_config, cudyn_status). Enum values are
 * CUDYN_ plus their group. Functions are cudyn_<topic>_<verb>.
 *
 * @par ABI evolution
 * Structs the caller allocates (cudyn_launch_config, cudyn_compile_options) have a fixed size
 * with zeroed `reserved` words that new fields are carved from, so always zero-initialise them
 * (`cudyn_launch_config cfg = {0};`); non-zero reserved words are refused. A launch grows the
 * way CUDA's does: cudyn_launch_config.attributes points to an array of cudyn_launch_attribute
 * (laid out as CUDA's CUlaunchAttribute) and counts it, so a launch attribute CUDA adds is a new
 * id, never a new field; a program built against an older header passes an empty list. Ids
 * cudyn does not know, values out of CUDA's range and an attribute given twice are refused with
 * CUDYN_ERROR_INVALID_ARGUMENT naming the entry. Load options work the same way (an array of
 * id, value pairs). Enums cross the boundary as ints, so an unknown value is refused with
 * CUDYN_ERROR_INVALID_ARGUMENT. The soname is libcudyn.so.0 until 1.0.
 *
 * @par Contexts
 * Loading, looking up kernels and launching through the runtime need no current context.
 * Where a driver call needs one and the thread has none, cudyn makes a primary context current
 * for that call only and pops it after: the thread's context stack is always as it was. That
 * context is retained for the call only (the JIT of a PTX load, occupancy), or, where the call hands out something that lives in it (a global's or
 * managed variable's address, a function, a module, a driver launch's queued work), for the rest
 * of the process, once per device. Each function says which; device 0 is used unless the
 * function takes a device or a stream. A kernel's name, parameter and attribute queries are
 * made with no context, and in one as above only if CUDA answers that they need one.
 */

#ifndef CUDYN_H
#define CUDYN_H

/* Generated by cbindgen from cudyn's Rust source (build.rs). Do not edit.
   Regenerate: CUDYN_UPDATE_HEADER=1 cargo build --features dev-header */

#include <stddef.h>
#include <stdint.h>
/* CUDA's own handle types, under cudyn's names: the struct tags are CUDA's, so
 * cudyn_kernel_t, CUkernel and cudaKernel_t are one type and need no cast. */
struct CUlib_st;
struct CUkern_st;
struct CUfunc_st;
struct CUstream_st;
struct CUmod_st;
struct CUevent_st;
struct CUgraphDeviceUpdatableNode_st;
typedef struct CUlib_st *cudyn_library_t;    /* == CUlibrary  == cudaLibrary_t  */
typedef struct CUkern_st *cudyn_kernel_t;    /* == CUkernel   == cudaKernel_t   */
typedef struct CUfunc_st *cudyn_function_t;  /* == CUfunction == cudaFunction_t */
typedef struct CUstream_st *cudyn_stream_t;  /* == CUstream   == cudaStream_t   */
typedef struct CUmod_st *cudyn_module_t;     /* == CUmodule (the runtime has none) */
typedef struct CUevent_st *cudyn_event_t;    /* == CUevent    == cudaEvent_t    */
typedef struct CUgraphDeviceUpdatableNode_st *cudyn_graph_device_node_t; /* == CUgraphDeviceNode */

/* The most entries cudyn_launch_config.attributes may hold (every launch attribute once is 14;
 * the rest can only be CUDYN_LAUNCH_ATTRIBUTE_IGNORE). */
#define CUDYN_MAX_LAUNCH_ATTRIBUTES 64

/* cudyn's version. CUDYN_VERSION is MAJOR*10000 + MINOR*100 + PATCH (0.1.0 is 100), the
 * number cudyn_versions() reports in `cudyn` at run time: compare the two to notice a program
 * built with one cudyn.h running against another library. All usable in #if. */
#define CUDYN_VERSION_MAJOR 0
#define CUDYN_VERSION_MINOR 1
#define CUDYN_VERSION_PATCH 0
#define CUDYN_VERSION (CUDYN_VERSION_MAJOR * 10000 + CUDYN_VERSION_MINOR * 100 + CUDYN_VERSION_PATCH)
#define CUDYN_VERSION_STRING "0.1.0"

/**
 * What went wrong, as a stable number: every fallible C call's result.
 */
typedef enum cudyn_status {
  /**
   * The call did what it says.
   */
  CUDYN_SUCCESS = 0,
  /**
   * NULL where a value is needed, a bad size or enum value.
   */
  CUDYN_ERROR_INVALID_ARGUMENT = 1,
  /**
   * libcuda.so.1 could not be opened.
   */
  CUDYN_ERROR_DRIVER_NOT_FOUND = 2,
  /**
   * No libcudart 12.8+ / 13.x could be opened.
   */
  CUDYN_ERROR_RUNTIME_NOT_FOUND = 3,
  /**
   * No NVRTC could be opened.
   */
  CUDYN_ERROR_NVRTC_NOT_FOUND = 4,
  /**
   * No nvJitLink could be opened.
   */
  CUDYN_ERROR_NVJITLINK_NOT_FOUND = 5,
  /**
   * The component is too old for this call.
   */
  CUDYN_ERROR_UNSUPPORTED_VERSION = 6,
  /**
   * Driver present, no usable GPU.
   */
  CUDYN_ERROR_NO_DEVICE = 7,
  /**
   * Not a well-formed cubin/fatbin/PTX/LTO-IR.
   */
  CUDYN_ERROR_INVALID_IMAGE = 8,
  /**
   * Well-formed, but nothing this GPU can run.
   */
  CUDYN_ERROR_NO_BINARY_FOR_DEVICE = 9,
  /**
   * No kernel/global of that name.
   */
  CUDYN_ERROR_NOT_FOUND = 10,
  /**
   * NVRTC said no; the log says why.
   */
  CUDYN_ERROR_COMPILE_FAILED = 11,
  /**
   * nvJitLink said no; the log says why.
   */
  CUDYN_ERROR_LINK_FAILED = 12,
  /**
   * Launch arguments do not match the kernel's parameters.
   */
  CUDYN_ERROR_ARGUMENT_MISMATCH = 13,
  /**
   * A file could not be opened or read, or the cache folder not used.
   */
  CUDYN_ERROR_IO = 14,
  /**
   * Any other CUDA failure; see cudyn_last_cuda_error.
   */
  CUDYN_ERROR_CUDA = 15,
  /**
   * A bug in cudyn (a caught panic).
   */
  CUDYN_ERROR_INTERNAL = 16,
  /**
   * A C++ kernel name that fits more than one kernel; the message lists them.
   */
  CUDYN_ERROR_AMBIGUOUS_NAME = 17,
} cudyn_status;

/**
 * Which CUDA API does the work, chosen per call: load through one, launch through the other.
 */
typedef enum cudyn_api {
  /**
   * cudaLibraryLoadData, cudaLaunchKernelExC, ... (needs libcudart 12.8+).
   */
  CUDYN_API_RUNTIME = 0,
  /**
   * cuLibraryLoadData, cuLaunchKernelEx, ... (needs driver 12.0+).
   */
  CUDYN_API_DRIVER = 1,
} cudyn_api;

/**
 * Kernel attributes, with CUDA's CU_FUNC_ATTRIBUTE_* numbers.
 */
typedef enum cudyn_kernel_attribute {
  /**
   * Most threads a block of this kernel can have (read only).
   */
  CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK = 0,
  /**
   * Static shared memory per block, in bytes (read only).
   */
  CUDYN_KERNEL_ATTR_SHARED_SIZE_BYTES = 1,
  /**
   * Constant memory, in bytes (read only).
   */
  CUDYN_KERNEL_ATTR_CONST_SIZE_BYTES = 2,
  /**
   * Local memory per thread, in bytes (read only).
   */
  CUDYN_KERNEL_ATTR_LOCAL_SIZE_BYTES = 3,
  /**
   * Registers per thread (read only).
   */
  CUDYN_KERNEL_ATTR_NUM_REGS = 4,
  /**
   * PTX virtual architecture it was compiled for, major*10+minor (read only).
   */
  CUDYN_KERNEL_ATTR_PTX_VERSION = 5,
  /**
   * Binary architecture, major*10+minor (read only).
   */
  CUDYN_KERNEL_ATTR_BINARY_VERSION = 6,
  /**
   * 1 if compiled with -Xptxas --dlcm=ca (read only).
   */
  CUDYN_KERNEL_ATTR_CACHE_MODE_CA = 7,
  /**
   * Most dynamic shared memory a launch may ask for, in bytes (settable).
   */
  CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  /**
   * Preferred shared memory carveout, percent of the maximum (settable).
   */
  CUDYN_KERNEL_ATTR_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  /**
   * 1 if the kernel must be launched with a cluster size (read only).
   */
  CUDYN_KERNEL_ATTR_CLUSTER_SIZE_MUST_BE_SET = 10,
  /**
   * Required cluster width in blocks (settable, unless the kernel was compiled with one).
   */
  CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_WIDTH = 11,
  /**
   * Required cluster height in blocks (settable, unless the kernel was compiled with one).
   */
  CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_HEIGHT = 12,
  /**
   * Required cluster depth in blocks (settable, unless the kernel was compiled with one).
   */
  CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_DEPTH = 13,
  /**
   * 1 if cluster sizes beyond the portable 8 blocks are allowed (settable).
   */
  CUDYN_KERNEL_ATTR_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
  /**
   * Cluster scheduling policy preference (settable).
   */
  CUDYN_KERNEL_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15,
} cudyn_kernel_attribute;

/**
 * Which CUDA component cudyn_component_status and cudyn_component_path ask about.
 */
typedef enum cudyn_component {
  /**
   * libcuda.so.1.
   */
  CUDYN_COMPONENT_DRIVER = 0,
  /**
   * libcudart (12.8+ or 13.x).
   */
  CUDYN_COMPONENT_RUNTIME = 1,
  /**
   * libnvrtc.
   */
  CUDYN_COMPONENT_NVRTC = 2,
  /**
   * libnvJitLink.
   */
  CUDYN_COMPONENT_NVJITLINK = 3,
} cudyn_component;

/**
 * What kind of code a buffer holds. Objects and libraries are link inputs only.
 */
typedef enum cudyn_code_kind {
  /**
   * None of the others (as a compile target: the default, a cubin).
   */
  CUDYN_CODE_UNKNOWN = 0,
  /**
   * A cubin: device code (SASS) for one architecture, in an ELF file.
   */
  CUDYN_CODE_CUBIN = 1,
  /**
   * A fatbin: cubins, PTX and LTO-IR for several architectures.
   */
  CUDYN_CODE_FATBIN = 2,
  /**
   * PTX text, compiled by the driver's JIT at load time.
   */
  CUDYN_CODE_PTX = 3,
  /**
   * NVVM IR for link-time optimisation with nvJitLink.
   */
  CUDYN_CODE_LTOIR = 4,
  /**
   * CUDA C++ source text.
   */
  CUDYN_CODE_SOURCE = 5,
  /**
   * A host object file with embedded device code (link input only).
   */
  CUDYN_CODE_OBJECT = 6,
  /**
   * A static library of such objects (link input only).
   */
  CUDYN_CODE_LIBRARY = 7,
} cudyn_code_kind;

/**
 * Load options (cudyn_load_option.id): the JIT options CUDA uses when it compiles PTX at
 * load time, and library options; what each sets, its values, and which API takes it. An
 * option an API does not take is refused with CUDYN_ERROR_INVALID_ARGUMENT, naming it. Id 3
 * is retired (it was CU_JIT_FAST_COMPILE, which CUDA 13.0's cuda.h keeps for internal use).
 */
typedef enum cudyn_load_option_id {
  /**
   * JIT: registers per thread at most (1-255). Both APIs.
   */
  CUDYN_LOAD_OPTION_MAX_REGISTERS = 1,
  /**
   * JIT: optimisation level, 0-4 (CUDA's default is 4). Both APIs.
   */
  CUDYN_LOAD_OPTION_OPTIMIZATION_LEVEL = 2,
  /**
   * JIT: compile PTX for this target instead of the current context's device: a
   * cudyn_jit_target, which is CUDA's CU_TARGET_* number (90, or 65626 for sm_90a).
   * Not with THREADS_PER_BLOCK or TARGET_FROM_CUCONTEXT (CU_JIT_TARGET). Driver only.
   */
  CUDYN_LOAD_OPTION_TARGET = 4,
  /**
   * JIT: 1 to generate line-number information. Both APIs.
   */
  CUDYN_LOAD_OPTION_GENERATE_LINE_INFO = 5,
  /**
   * JIT: 1 to generate debug information. Both APIs.
   */
  CUDYN_LOAD_OPTION_GENERATE_DEBUG_INFO = 6,
  /**
   * JIT: 1 for a verbose info log (ptxas's register and memory report). Both APIs.
   */
  CUDYN_LOAD_OPTION_LOG_VERBOSE = 7,
  /**
   * Library: 1 promises what CU_LIBRARY_BINARY_IS_PRESERVED promises CUDA: the image's
   * bytes stay readable and unchanged until the library is unloaded, so CUDA may read
   * them in place instead of keeping a copy of its own. cudyn hands CUDA its own copy of
   * every cubin and fatbin (the entries it checked, decompressed), of a file's contents
   * and of PTX that lacks its NUL, kept until the unload and loaded with this option set
   * whatever the caller asks; the promise binds only NUL-terminated PTX passed from
   * memory, which CUDA then reads from the caller's buffer. Both APIs.
   */
  CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED = 8,
  /**
   * JIT: the compiled code must run blocks of at least this many threads (1-1024), which
   * bounds its registers. CUDA's answer (the number it targeted) is not reported. Not
   * with TARGET (CU_JIT_THREADS_PER_BLOCK). Both APIs.
   */
  CUDYN_LOAD_OPTION_THREADS_PER_BLOCK = 9,
  /**
   * JIT: a `float *` that receives the milliseconds CUDA's compiler and linker took during
   * the load (CUDA writes the time over the option's value; cudyn copies it there once
   * the load returns). PTX is compiled during the load; a fatbin whose PTX CUDA compiles
   * later, at first use, leaves the float as it was (CU_JIT_WALL_TIME). Both APIs.
   */
  CUDYN_LOAD_OPTION_WALL_TIME = 10,
  /**
   * JIT: value 1 picks the target from the current context, CUDA's default
   * (CU_JIT_TARGET_FROM_CUCONTEXT). Not with TARGET. Driver only.
   */
  CUDYN_LOAD_OPTION_TARGET_FROM_CUCONTEXT = 11,
  /**
   * Loading: what to use when no cubin matches the device exactly, a cudyn_jit_fallback
   * (CU_JIT_FALLBACK_STRATEGY). Both APIs.
   */
  CUDYN_LOAD_OPTION_FALLBACK_STRATEGY = 12,
  /**
   * JIT: the L1 caching of global loads (-dlcm), a cudyn_jit_cache_mode
   * (CU_JIT_CACHE_MODE). Both APIs.
   */
  CUDYN_LOAD_OPTION_CACHE_MODE = 13,
  /**
   * JIT: 1 to generate position-independent code (CU_JIT_POSITION_INDEPENDENT_CODE). Both APIs.
   */
  CUDYN_LOAD_OPTION_POSITION_INDEPENDENT_CODE = 14,
  /**
   * JIT: a hint of at least this many blocks per SM (1 or more); needs MAX_THREADS_PER_BLOCK,
   * ignored with MAX_REGISTERS or THREADS_PER_BLOCK (CU_JIT_MIN_CTA_PER_SM). Both APIs.
   */
  CUDYN_LOAD_OPTION_MIN_CTA_PER_SM = 15,
  /**
   * JIT: the most threads a block of any kernel will have, 1-1024
   * (CU_JIT_MAX_THREADS_PER_BLOCK). Both APIs.
   */
  CUDYN_LOAD_OPTION_MAX_THREADS_PER_BLOCK = 16,
  /**
   * JIT: 1 to let MAX_REGISTERS, THREADS_PER_BLOCK, MAX_THREADS_PER_BLOCK and
   * MIN_CTA_PER_SM override the PTX's own directives (CU_JIT_OVERRIDE_DIRECTIVE_VALUES).
   * Both APIs.
   */
  CUDYN_LOAD_OPTION_OVERRIDE_DIRECTIVE_VALUES = 17,
  /**
   * JIT: threads the compiler may use, 0 for one per CPU (CU_JIT_SPLIT_COMPILE). Driver only.
   */
  CUDYN_LOAD_OPTION_SPLIT_COMPILE = 18,
  /**
   * Linking: a `const char *const *` array of GLOBAL_SYMBOL_COUNT names of unresolved
   * device globals, each relocated to the host address at the same index of
   * GLOBAL_SYMBOL_ADDRESSES (CU_JIT_GLOBAL_SYMBOL_NAMES). The three come together; the
   * arrays and the strings stay valid until the library is unloaded. Driver only.
   */
  CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_NAMES = 19,
  /**
   * Linking: a `void *const *` array of GLOBAL_SYMBOL_COUNT host addresses
   * (CU_JIT_GLOBAL_SYMBOL_ADDRESSES). Driver only.
   */
  CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_ADDRESSES = 20,
  /**
   * Linking: the number of entries of both arrays, 1 or more (CU_JIT_GLOBAL_SYMBOL_COUNT).
   * Driver only.
   */
  CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_COUNT = 21,
  /**
   * Library: a pointer to a cudyn_host_universal_table (CUDA's
   * CUlibraryHostUniversalFunctionAndDataTable), which stays valid until the library is
   * unloaded (CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE). Both APIs.
   */
  CUDYN_LOAD_OPTION_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 22,
} cudyn_load_option_id;

/**
 * The value of CUDYN_LOAD_OPTION_TARGET: CUDA's CU_TARGET_* numbers, exactly. The `A`
 * targets (0x10000 plus the compute capability) use the architecture's accelerated
 * features, the `F` targets (0x20000 plus it) its family's.
 */
typedef enum cudyn_jit_target {
  /**
   * compute_30 (CU_TARGET_COMPUTE_30).
   */
  CUDYN_JIT_TARGET_COMPUTE_30 = 30,
  /**
   * compute_32.
   */
  CUDYN_JIT_TARGET_COMPUTE_32 = 32,
  /**
   * compute_35.
   */
  CUDYN_JIT_TARGET_COMPUTE_35 = 35,
  /**
   * compute_37.
   */
  CUDYN_JIT_TARGET_COMPUTE_37 = 37,
  /**
   * compute_50.
   */
  CUDYN_JIT_TARGET_COMPUTE_50 = 50,
  /**
   * compute_52.
   */
  CUDYN_JIT_TARGET_COMPUTE_52 = 52,
  /**
   * compute_53.
   */
  CUDYN_JIT_TARGET_COMPUTE_53 = 53,
  /**
   * compute_60.
   */
  CUDYN_JIT_TARGET_COMPUTE_60 = 60,
  /**
   * compute_61.
   */
  CUDYN_JIT_TARGET_COMPUTE_61 = 61,
  /**
   * compute_62.
   */
  CUDYN_JIT_TARGET_COMPUTE_62 = 62,
  /**
   * compute_70.
   */
  CUDYN_JIT_TARGET_COMPUTE_70 = 70,
  /**
   * compute_72.
   */
  CUDYN_JIT_TARGET_COMPUTE_72 = 72,
  /**
   * compute_75.
   */
  CUDYN_JIT_TARGET_COMPUTE_75 = 75,
  /**
   * compute_80.
   */
  CUDYN_JIT_TARGET_COMPUTE_80 = 80,
  /**
   * compute_86.
   */
  CUDYN_JIT_TARGET_COMPUTE_86 = 86,
  /**
   * compute_87.
   */
  CUDYN_JIT_TARGET_COMPUTE_87 = 87,
  /**
   * compute_89.
   */
  CUDYN_JIT_TARGET_COMPUTE_89 = 89,
  /**
   * compute_90.
   */
  CUDYN_JIT_TARGET_COMPUTE_90 = 90,
  /**
   * compute_100.
   */
  CUDYN_JIT_TARGET_COMPUTE_100 = 100,
  /**
   * compute_103.
   */
  CUDYN_JIT_TARGET_COMPUTE_103 = 103,
  /**
   * compute_110.
   */
  CUDYN_JIT_TARGET_COMPUTE_110 = 110,
  /**
   * compute_120.
   */
  CUDYN_JIT_TARGET_COMPUTE_120 = 120,
  /**
   * compute_121.
   */
  CUDYN_JIT_TARGET_COMPUTE_121 = 121,
  /**
   * compute_90a (CU_TARGET_COMPUTE_90A, 0x10000 + 90).
   */
  CUDYN_JIT_TARGET_COMPUTE_90A = 65626,
  /**
   * compute_100a.
   */
  CUDYN_JIT_TARGET_COMPUTE_100A = 65636,
  /**
   * compute_103a.
   */
  CUDYN_JIT_TARGET_COMPUTE_103A = 65639,
  /**
   * compute_110a.
   */
  CUDYN_JIT_TARGET_COMPUTE_110A = 65646,
  /**
   * compute_120a.
   */
  CUDYN_JIT_TARGET_COMPUTE_120A = 65656,
  /**
   * compute_121a.
   */
  CUDYN_JIT_TARGET_COMPUTE_121A = 65657,
  /**
   * compute_100f (CU_TARGET_COMPUTE_100F, 0x20000 + 100).
   */
  CUDYN_JIT_TARGET_COMPUTE_100F = 131172,
  /**
   * compute_103f.
   */
  CUDYN_JIT_TARGET_COMPUTE_103F = 131175,
  /**
   * compute_110f.
   */
  CUDYN_JIT_TARGET_COMPUTE_110F = 131182,
  /**
   * compute_120f.
   */
  CUDYN_JIT_TARGET_COMPUTE_120F = 131192,
  /**
   * compute_121f.
   */
  CUDYN_JIT_TARGET_COMPUTE_121F = 131193,
} cudyn_jit_target;

/**
 * The value of CUDYN_LOAD_OPTION_FALLBACK_STRATEGY (CUjit_fallback).
 */
typedef enum cudyn_jit_fallback {
  /**
   * Compile the PTX when no cubin matches exactly (CU_PREFER_PTX).
   */
  CUDYN_JIT_PREFER_PTX = 0,
  /**
   * Use a compatible cubin when none matches exactly (CU_PREFER_BINARY).
   */
  CUDYN_JIT_PREFER_BINARY = 1,
} cudyn_jit_fallback;

/**
 * The value of CUDYN_LOAD_OPTION_CACHE_MODE (CUjit_cacheMode).
 */
typedef enum cudyn_jit_cache_mode {
  /**
   * No -dlcm flag (CU_JIT_CACHE_OPTION_NONE).
   */
  CUDYN_JIT_CACHE_OPTION_NONE = 0,
  /**
   * -dlcm=cg: L1 caching of global loads off (CU_JIT_CACHE_OPTION_CG).
   */
  CUDYN_JIT_CACHE_OPTION_CG = 1,
  /**
   * -dlcm=ca: L1 caching of global loads on (CU_JIT_CACHE_OPTION_CA).
   */
  CUDYN_JIT_CACHE_OPTION_CA = 2,
} cudyn_jit_cache_mode;

/**
 * Launch attributes (cudyn_launch_attribute.id), with CUDA's CU_LAUNCH_ATTRIBUTE_* numbers:
 * every one CUDA 13.0 accepts at a launch. 3 (CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY) is
 * a stream attribute and refused at a launch, as CUDA does; 15 is unassigned in CUDA 13.0.
 */
typedef enum cudyn_launch_attribute_id {
  /**
   * An entry to skip, any value (CU_LAUNCH_ATTRIBUTE_IGNORE); may appear any number of times.
   */
  CUDYN_LAUNCH_ATTRIBUTE_IGNORE = 0,
  /**
   * value.access_policy_window: an L2 persistence window (CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW).
   */
  CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
  /**
   * value.cooperative: non-zero for a cooperative launch (CU_LAUNCH_ATTRIBUTE_COOPERATIVE).
   */
  CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  /**
   * value.cluster_dim: the cluster shape, each extent at least 1 and dividing the grid's
   * (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).
   */
  CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  /**
   * value.cluster_scheduling_policy_preference: a cudyn_cluster_scheduling_policy
   * (CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE).
   */
  CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
  /**
   * value.programmatic_stream_serialization_allowed: non-zero lets the kernel overlap the
   * previous one in the stream (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).
   */
  CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  /**
   * value.programmatic_event: an event (created with timing disabled) recorded once every
   * block triggered it (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT).
   */
  CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
  /**
   * value.priority: the launch's priority, any int; lower is higher, CUDA clamps it to the
   * device's range; 0 here is priority 0, not "unset" (CU_LAUNCH_ATTRIBUTE_PRIORITY).
   */
  CUDYN_LAUNCH_ATTRIBUTE_PRIORITY = 8,
  /**
   * value.mem_sync_domain_map: domain ids for the default and remote domains
   * (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP).
   */
  CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = 9,
  /**
   * value.mem_sync_domain: a cudyn_mem_sync_domain (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN).
   */
  CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN = 10,
  /**
   * value.preferred_cluster_dim: a substitute cluster shape, a multiple of the cluster
   * dimension with the same z (CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION).
   */
  CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION = 11,
  /**
   * value.launch_completion_event: an event (created with timing disabled) recorded once
   * every block has begun (CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT).
   */
  CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12,
  /**
   * value.device_updatable_kernel_node: 1 makes the graph node a launch captures
   * device-updatable; its handle is written back into dev_node of the caller's entry.
   * Only in a capturing stream (CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE).
   */
  CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE = 13,
  /**
   * value.shared_mem_carveout: the shared-memory carveout for this launch, percent 0-100
   * (CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT).
   */
  CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 14,
  /**
   * value.nvlink_util_centric_scheduling: 1 to hint scheduling for NVLink traffic, 0 not
   * (CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING).
   */
  CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING = 16,
} cudyn_launch_attribute_id;

/**
 * How an access policy window treats the lines it covers (CUaccessProperty).
 */
typedef enum cudyn_access_property {
  /**
   * Normal cache persistence (CU_ACCESS_PROPERTY_NORMAL).
   */
  CUDYN_ACCESS_PROPERTY_NORMAL = 0,
  /**
   * Streaming: less likely to persist (CU_ACCESS_PROPERTY_STREAMING).
   */
  CUDYN_ACCESS_PROPERTY_STREAMING = 1,
  /**
   * Persisting: more likely to persist (CU_ACCESS_PROPERTY_PERSISTING).
   */
  CUDYN_ACCESS_PROPERTY_PERSISTING = 2,
} cudyn_access_property;

/**
 * Cluster scheduling policies (CUclusterSchedulingPolicy).
 */
typedef enum cudyn_cluster_scheduling_policy {
  /**
   * CUDA's default (CU_CLUSTER_SCHEDULING_POLICY_DEFAULT).
   */
  CUDYN_CLUSTER_SCHEDULING_POLICY_DEFAULT = 0,
  /**
   * Spread a cluster's blocks over the SMs (CU_CLUSTER_SCHEDULING_POLICY_SPREAD).
   */
  CUDYN_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
  /**
   * Let the hardware balance the load (CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING).
   */
  CUDYN_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING = 2,
} cudyn_cluster_scheduling_policy;

/**
 * Memory synchronisation domains (CUlaunchMemSyncDomain).
 */
typedef enum cudyn_mem_sync_domain {
  /**
   * The default domain (CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT).
   */
  CUDYN_MEM_SYNC_DOMAIN_DEFAULT = 0,
  /**
   * The remote domain (CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE).
   */
  CUDYN_MEM_SYNC_DOMAIN_REMOTE = 1,
} cudyn_mem_sync_domain;

/**
 * A kernel's preferred split of L1 cache and shared memory (CUfunc_cache).
 */
typedef enum cudyn_func_cache {
  /**
   * No preference (CU_FUNC_CACHE_PREFER_NONE).
   */
  CUDYN_FUNC_CACHE_PREFER_NONE = 0,
  /**
   * More shared memory, less L1 (CU_FUNC_CACHE_PREFER_SHARED).
   */
  CUDYN_FUNC_CACHE_PREFER_SHARED = 1,
  /**
   * More L1, less shared memory (CU_FUNC_CACHE_PREFER_L1).
   */
  CUDYN_FUNC_CACHE_PREFER_L1 = 2,
  /**
   * Equal L1 and shared memory (CU_FUNC_CACHE_PREFER_EQUAL).
   */
  CUDYN_FUNC_CACHE_PREFER_EQUAL = 3,
} cudyn_func_cache;

/**
 * Flags of the occupancy calculator (CUoccupancy_flags).
 */
typedef enum cudyn_occupancy_flags {
  /**
   * CUDA's default (CU_OCCUPANCY_DEFAULT).
   */
  CUDYN_OCCUPANCY_DEFAULT = 0,
  /**
   * Where global caching affects occupancy, never fall back to computing without it
   * (CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE).
   */
  CUDYN_OCCUPANCY_DISABLE_CACHING_OVERRIDE = 1,
} cudyn_occupancy_flags;

/**
 * Versions of what cudyn found, as CUDA numbers them (13000 for 13.0); 0 for a component
 * that is absent. `cudyn` is cudyn's own (major*10000 + minor*100 + patch), as CUDYN_VERSION.
 */
typedef struct cudyn_version_info {
  int32_t driver;
  int32_t runtime;
  int32_t nvrtc;
  int32_t nvjitlink;
  int32_t cudyn;
} cudyn_version_info;

/**
 * One load option: `cudyn_load_option` in C.
 */
typedef struct cudyn_load_option {
  /**
   * A `cudyn_load_option_id`, checked before use.
   */
  cudyn_load_option_id id;
  /**
   * The option's value (its meaning depends on `id`).
   */
  int64_t value;
} cudyn_load_option;

/**
 * Memory cudyn allocated and the caller owns: release it with cudyn_buffer_free().
 * `data` holds `size` bytes followed by a NUL that `size` does not count, so a text buffer
 * (a log) is also a C string.
 */
typedef struct cudyn_buffer {
  void *data;
  size_t size;
} cudyn_buffer;

/**
 * Grid, block or cluster extent; the same layout as CUDA's `dim3`.
 */
typedef struct cudyn_dim3 {
  /**
   * Extent in x.
   */
  uint32_t x;
  /**
   * Extent in y.
   */
  uint32_t y;
  /**
   * Extent in z.
   */
  uint32_t z;
} cudyn_dim3;

/**
 * An L2 access policy window: `cudyn_access_policy_window`, CUDA's `CUaccessPolicyWindow`.
 */
typedef struct cudyn_access_policy_window {
  /**
   * Start of the window (a device address).
   */
  void *base_ptr;
  /**
   * Bytes in the window (at most the device's CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE).
   */
  size_t num_bytes;
  /**
   * Share of the window's accesses that get `hit_prop`, 0.0 to 1.0.
   */
  float hit_ratio;
  /**
   * A cudyn_access_property for the hits.
   */
  uint32_t hit_prop;
  /**
   * A cudyn_access_property for the rest.
   */
  uint32_t miss_prop;
} cudyn_access_policy_window;

/**
 * The value of CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.
 */
typedef struct cudyn_programmatic_event {
  /**
   * A live event created with timing disabled (CU_EVENT_DISABLE_TIMING), not an
   * interprocess or interop event.
   */
  cudyn_event_t event;
  /**
   * Record flags: must be 0 (CUDA takes no other here).
   */
  int flags;
  /**
   * Non-zero: every block triggers the event as it starts.
   */
  int trigger_at_block_start;
} cudyn_programmatic_event;

/**
 * The value of CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT.
 */
typedef struct cudyn_launch_completion_event {
  /**
   * A live event created with timing disabled, not an interprocess or interop event.
   */
  cudyn_event_t event;
  /**
   * Record flags: must be 0.
   */
  int flags;
} cudyn_launch_completion_event;

/**
 * The value of CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: domain ids (below the device's
 * CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT).
 */
typedef struct cudyn_mem_sync_domain_map {
  /**
   * The domain id of the default domain.
   */
  uint8_t default_;
  /**
   * The domain id of the remote domain.
   */
  uint8_t remote;
} cudyn_mem_sync_domain_map;

/**
 * The value of CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE.
 */
typedef struct cudyn_device_updatable_kernel_node {
  /**
   * 1: make the captured node device-updatable (0 or 1).
   */
  int device_updatable;
  /**
   * Written by a successful launch: the node's handle for device-side updates.
   */
  cudyn_graph_device_node_t dev_node;
} cudyn_device_updatable_kernel_node;

/**
 * A launch attribute's value: `cudyn_launch_attribute_value`, CUDA's `CUlaunchAttributeValue`.
 * The member `id` names is the one read; the rest of the 64 bytes is never read.
 */
typedef union cudyn_launch_attribute_value {
  /**
   * The value's size, as CUDA pads it.
   */
  uint8_t pad[64];
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW.
   */
  struct cudyn_access_policy_window access_policy_window;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE.
   */
  int cooperative;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
   */
  struct cudyn_dim3 cluster_dim;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: a cudyn_cluster_scheduling_policy.
   */
  uint32_t cluster_scheduling_policy_preference;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
   */
  int programmatic_stream_serialization_allowed;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.
   */
  struct cudyn_programmatic_event programmatic_event;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT.
   */
  struct cudyn_launch_completion_event launch_completion_event;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_PRIORITY.
   */
  int priority;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP.
   */
  struct cudyn_mem_sync_domain_map mem_sync_domain_map;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: a cudyn_mem_sync_domain.
   */
  uint32_t mem_sync_domain;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION.
   */
  struct cudyn_dim3 preferred_cluster_dim;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE.
   */
  struct cudyn_device_updatable_kernel_node device_updatable_kernel_node;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: percent, 0-100.
   */
  uint32_t shared_mem_carveout;
  /**
   * CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING: 0 or 1.
   */
  uint32_t nvlink_util_centric_scheduling;
} cudyn_launch_attribute_value;

/**
 * One launch attribute: `cudyn_launch_attribute`, laid out exactly as CUDA's
 * `CUlaunchAttribute` and `cudaLaunchAttribute` (proven in Rust and in C), so an array of
 * CUDA's own may be passed by a cast.
 */
typedef struct cudyn_launch_attribute {
  /**
   * A cudyn_launch_attribute_id (CUDA's CU_LAUNCH_ATTRIBUTE_* number).
   */
  cudyn_launch_attribute_id id;
  /**
   * Padding, as in CUDA's struct; never read.
   */
  uint8_t pad[4];
  /**
   * The value, in the member `id` names.
   */
  union cudyn_launch_attribute_value value;
} cudyn_launch_attribute;

/**
 * The caller's launch attributes: a pointer to an array and its length, CUDA's own way
 * (CUlaunchConfig's `attrs` and `numAttrs`). Zero-initialised: none. Set in C as
 * `cfg.attributes.attrs = list; cfg.attributes.count = n;`.
 * The entries are copied at each launch, after they are checked; CUDA never reads the
 * caller's array, and cudyn writes to it only to hand back what CUDA returns (the node of
 * CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE).
 */
typedef struct cudyn_launch_attributes {
  /**
   * `count` entries; may be NULL when `count` is 0.
   */
  struct cudyn_launch_attribute *attrs;
  /**
   * Entries at `attrs`, at most CUDYN_MAX_LAUNCH_ATTRIBUTES (64).
   */
  uint32_t count;
  /**
   * Must be zero.
   */
  uint32_t reserved;
} cudyn_launch_attributes;

/**
 * How to launch. Zero-initialise it, then set what you need: every field added later is
 * carved from the reserved words, so zero keeps meaning "not set" and the size never changes.
 * Launch attributes beyond the named fields go in `attributes` (CUDA's way: an array and a
 * count), which is how the config grows from now on (in Rust: `LaunchConfig::with_attributes`).
 */
typedef struct cudyn_launch_config {
  /**
   * Blocks in the grid (each dimension at least 1).
   */
  struct cudyn_dim3 grid;
  /**
   * Threads per block (each dimension at least 1).
   */
  struct cudyn_dim3 block;
  /**
   * Dynamic shared memory per block, in bytes.
   */
  size_t shared_mem_bytes;
  /**
   * NULL: the legacy default stream.
   */
  cudyn_stream_t stream;
  /**
   * Who launches: CUDYN_API_RUNTIME (0) or CUDYN_API_DRIVER (1).
   */
  cudyn_api api;
  /**
   * Thread-block cluster shape; {0,0,0}: no cluster. The same as the attribute
   * CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (give one or the other).
   */
  struct cudyn_dim3 cluster;
  /**
   * Non-zero: a cooperative launch (grid-wide sync allowed). The same as
   * CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE.
   */
  int cooperative;
  /**
   * Launch priority (lower is higher priority, as in CUDA); 0: not set. Priority 0 itself
   * is asked for with the attribute CUDYN_LAUNCH_ATTRIBUTE_PRIORITY.
   */
  int priority;
  /**
   * Non-zero: allow programmatic stream serialization (programmatic dependent launch). The
   * same as CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
   */
  int programmatic_serialization;
  /**
   * Must be zero.
   */
  uint32_t reserved0;
  /**
   * Any further launch attributes (none when zeroed).
   */
  struct cudyn_launch_attributes attributes;
  /**
   * Must be zero.
   */
  uint32_t reserved[4];
} cudyn_launch_config;

/**
 * The dynamic shared memory a block of `block_size` threads needs, for
 * cudyn_occupancy_max_potential_block_size(): called during that call, on the calling thread,
 * with the `user` pointer given to it, before CUDA is asked and outside every lock of cudyn's.
 */
typedef size_t (*cudyn_block_to_smem)(int block_size, void *user);

/**
 * Options for cudyn_compile_ex() and cudyn_library_load_source_ex(). Zero-initialise it, then
 * set what you need; later fields are carved from `reserved`, which must stay zero. cudyn
 * reads it, and the arrays it points to, during the call only.
 */
typedef struct cudyn_compile_options {
  /**
   * NVRTC options ("-std=c++17", "-DN=4", "-arch=sm_90", ...). Without an -arch option the
   * code is SASS for the present GPU (sm_90 when there is none).
   */
  const char *const *options;
  size_t num_options;
  /**
   * Headers the source may #include by name: parallel arrays of names and contents.
   */
  const char *const *header_names;
  const char *const *header_sources;
  size_t num_headers;
  /**
   * C++ names to instantiate and find ("axpy<float>"); their lowered names come back.
   */
  const char *const *name_expressions;
  size_t num_name_expressions;
  /**
   * CUDYN_CODE_CUBIN (also 0), CUDYN_CODE_PTX or CUDYN_CODE_LTOIR.
   */
  cudyn_code_kind target;
  uint32_t reserved[7];
} cudyn_compile_options;

/**
 * One input to cudyn_link(): its kind, bytes and a name for messages. cudyn reads it during
 * the call only.
 */
typedef struct cudyn_link_input {
  /**
   * CUDYN_CODE_CUBIN, _FATBIN, _PTX, _LTOIR, _OBJECT or _LIBRARY.
   */
  cudyn_code_kind kind;
  const void *data;
  size_t size;
  /**
   * NULL: "input<i>".
   */
  const char *name;
} cudyn_link_input;

/**
 * Counters of this process's use of the compile cache, and what is on disk now.
 */
typedef struct cudyn_cache_info {
  uint64_t hits;
  uint64_t misses;
  /**
   * Bytes of entries and dependency manifests in the cache folder.
   */
  uint64_t bytes;
  uint64_t entries;
  /**
   * 1 when the cache is on (CUDYN_CACHE is not 0 and its folder is usable); when 0,
   * cudyn_cache_status() says why.
   */
  int32_t enabled;
} cudyn_cache_info;

/**
 * The host table of CUDYN_LOAD_OPTION_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE:
 * `cudyn_host_universal_table`, CUDA's `CUlibraryHostUniversalFunctionAndDataTable`.
 */
typedef struct cudyn_host_universal_table {
  /**
   * The host function table.
   */
  void *function_table;
  /**
   * Its size in bytes.
   */
  size_t function_window_size;
  /**
   * The host data table.
   */
  void *data_table;
  /**
   * Its size in bytes.
   */
  size_t data_window_size;
} cudyn_host_universal_table;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Static text for a status, its name then its meaning:
 * "CUDYN_ERROR_NOT_FOUND: no kernel or global of that name".
 *
 * @param status Any int: a value that is no cudyn_status is answered, not refused.
 * @return Never NULL; "unknown cudyn_status" for an unknown value. Static storage: never free it.
 */
const char *cudyn_status_string(cudyn_status status);

/**
 * This thread's last failure, in words: what cudyn was doing, why it failed, and the CUDA
 * error's name and text.
 *
 * @return Never NULL; "" before this thread's first failure. The string belongs to cudyn and
 *         stays valid until this thread's next failing cudyn call: copy it to keep it.
 * @note Per thread: another thread's failures never change it, and a successful call leaves
 *       it as it was.
 */
const char *cudyn_last_error_message(void);

/**
 * The CUDA result behind this thread's last failure.
 *
 * @return The CUresult, cudaError_t, nvrtcResult or nvJitLinkResult of this thread's last
 *         failing cudyn call; 0 when it had none (or before any failure). Per thread, as
 *         cudyn_last_error_message().
 */
int32_t cudyn_last_cuda_error(void);

/**
 * The versions of every component, opening each on first use.
 *
 * @param[out] versions Receives the versions; caller-allocated.
 * @return CUDYN_SUCCESS for a non-NULL `versions`; CUDYN_ERROR_INVALID_ARGUMENT for NULL.
 * @note Why a component is 0 is told by cudyn_component_status() or by the failing call's own
 *       status and message.
 */
cudyn_status cudyn_versions(struct cudyn_version_info *versions);

/**
 * Open `component` (once per process) and say whether it is usable.
 *
 * @param component A cudyn_component.
 * @return CUDYN_SUCCESS; or the status why not (e.g. CUDYN_ERROR_DRIVER_NOT_FOUND), with
 *         cudyn_last_error_message() naming every place searched. For the driver, success
 *         also means cuInit found a GPU. An unknown component: CUDYN_ERROR_INVALID_ARGUMENT.
 */
cudyn_status cudyn_component_status(cudyn_component component);

/**
 * Where `component` was loaded from.
 *
 * @param component A cudyn_component.
 * @return The path of the library file, or the soname it was found by; NULL when the
 *         component is absent or unknown. Static storage, valid for the life of the process:
 *         never free it.
 */
const char *cudyn_component_path(cudyn_component component);

/**
 * cudyn's version and the components it found, in words:
 * "cudyn 0.1.0 (driver 13.0, runtime 13.0, NVRTC 13.0, nvJitLink 13.0)"; an absent component
 * says "absent".
 *
 * @return Never NULL. Static storage, computed on the first call: never free it.
 */
const char *cudyn_version_string(void);

/**
 * Load a cubin, fatbin or PTX image from memory.
 *
 * `size` is checked against the image's own headers before CUDA sees it, and a fatbin or
 * cubin with nothing the current GPU can run is refused with CUDYN_ERROR_NO_BINARY_FOR_DEVICE
 * naming both.
 *
 * Contexts: loading needs none. An image that needs the JIT (PTX, or no SASS for this GPU) is
 * compiled now, in the current context, or on a thread without one in device 0's primary
 * context, current and retained for this call only.
 *
 * @param image The image's bytes. They may be freed once this returns, but must not change
 *              while it runs: cudyn checks them, then CUDA reads them again.
 * @param size Bytes at `image`.
 * @param api The API that loads it (a cudyn_api).
 * @param[out] library On success, a handle the caller owns: unload it with
 *             cudyn_library_unload() and the same `api`. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (NULL, unknown api),
 *         CUDYN_ERROR_INVALID_IMAGE, CUDYN_ERROR_NO_BINARY_FOR_DEVICE, a *_NOT_FOUND for a
 *         missing component, or CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_load_data(const void *image,
                                     size_t size,
                                     cudyn_api api,
                                     cudyn_library_t *library);

/**
 * cudyn_library_load_data() with load options and the JIT log.
 *
 * Every load asks the JIT for its error log, so a PTX that ptxas refuses fails with its first
 * error line in cudyn_last_error_message(), with or without `log`.
 *
 * @param image, size, api As for cudyn_library_load_data().
 * @param options `num_options` (id, value) pairs, each id at most once; NULL with 0 for none.
 *        They are checked before anything is loaded: an option `api` does not take is refused
 *        (CUDYN_ERROR_INVALID_ARGUMENT, nothing loaded). A pointer an option takes
 *        (the GLOBAL_SYMBOL arrays, the host universal table) is cast to int64_t and must stay
 *        valid until the library is unloaded: CUDA reads it whenever it loads the library into
 *        a context. WALL_TIME's `float *` is written by cudyn during this call only.
 * @param num_options Entries at `options`.
 * @param[out] library As for cudyn_library_load_data().
 * @param[out] log NULL, or receives CUDA's JIT log for this load (the error log, then the
 *             info log; empty for a cubin) on success and on a CUDA failure alike. The caller
 *             frees it with cudyn_buffer_free(). Unchanged when the call fails before CUDA ran
 *             (a bad argument or image).
 * @return As for cudyn_library_load_data().
 */
cudyn_status cudyn_library_load_data_ex(const void *image,
                                        size_t size,
                                        cudyn_api api,
                                        const struct cudyn_load_option *options,
                                        size_t num_options,
                                        cudyn_library_t *library,
                                        struct cudyn_buffer *log);

/**
 * Load a cubin, fatbin or PTX file.
 *
 * cudyn reads and checks the file and hands CUDA exactly the bytes it checked. Only a regular
 * file of at most 1 GiB is read: a directory, FIFO, device or socket gets
 * CUDYN_ERROR_INVALID_ARGUMENT at once (never a blocking open or an endless read), a file
 * that cannot be opened or read CUDYN_ERROR_IO.
 *
 * @param path The file's path (bytes, as the system takes them).
 * @param api The API that loads it.
 * @param[out] library As for cudyn_library_load_data(). Unchanged on failure.
 * @return As for cudyn_library_load_data(), and CUDYN_ERROR_IO.
 */
cudyn_status cudyn_library_load_file(const char *path, cudyn_api api, cudyn_library_t *library);

/**
 * cudyn_library_load_file() with load options and the JIT log, as
 * cudyn_library_load_data_ex().
 *
 * @param path, api As for cudyn_library_load_file().
 * @param options, num_options, library, log As for cudyn_library_load_data_ex().
 * @return As for cudyn_library_load_file().
 */
cudyn_status cudyn_library_load_file_ex(const char *path,
                                        cudyn_api api,
                                        const struct cudyn_load_option *options,
                                        size_t num_options,
                                        cudyn_library_t *library,
                                        struct cudyn_buffer *log);

/**
 * Unload a library through the API that loaded it.
 *
 * A library cudyn loaded must be unloaded here, not with cuLibraryUnload/cudaLibraryUnload:
 * cudyn remembers its kernels' layouts until it sees the unload. After it, the library and
 * its kernels are *dead* to cudyn: every call given one (a second unload, a kernel lookup, a
 * launch) fails with CUDYN_ERROR_INVALID_ARGUMENT without reaching CUDA, whose driver crashes
 * on an unloaded library's handle. That lasts until cudyn sees the address live again: a
 * cudyn load returns it, a lookup through cudyn returns the kernel, a library cudyn loaded
 * since has a kernel there, or the program adopts the kernel (cudyn_kernel_adopt()). A library
 * of your own that you unload here is dead the same way.
 *
 * @param library The library; NULL is a no-op (CUDYN_SUCCESS).
 * @param api The API that loaded it.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (dead library, unknown api: nothing
 *         unloaded), or CUDYN_ERROR_CUDA.
 * @note A query or launch of one of its kernels on another thread at the same moment either
 *       finishes before CUDA's unload starts or is refused as unloaded: none reaches CUDA with
 *       a kernel being freed.
 */
cudyn_status cudyn_library_unload(cudyn_library_t library, cudyn_api api);

/**
 * Look up a kernel by name.
 *
 * @param library A live library.
 * @param name The kernel's name: the mangled name for a C++ kernel without extern "C".
 * @param api The API that looks it up.
 * @param[out] kernel CUDA's own handle, a CUkernel and a cudaKernel_t at once; it lives as
 *             long as the library and is never freed on its own. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_NOT_FOUND, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_get_kernel(cudyn_library_t library,
                                      const char *name,
                                      cudyn_api api,
                                      cudyn_kernel_t *kernel);

/**
 * The number of kernels in a library (driver 12.4+ or runtime 12.8+).
 *
 * @param library A live library.
 * @param[out] count The number. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_UNSUPPORTED_VERSION, CUDYN_ERROR_INVALID_ARGUMENT,
 *         CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_kernel_count(cudyn_library_t library, uint32_t *count);

/**
 * The kernels of a library.
 *
 * @param library A live library.
 * @param[out] kernels Room for `capacity` handles (NULL only when `capacity` is 0); receives
 *             the first min(capacity, count) kernels. Unchanged on failure.
 * @param capacity Handles `kernels` has room for.
 * @param[out] written How many were written. Unchanged on failure.
 * @return As for cudyn_library_kernel_count().
 */
cudyn_status cudyn_library_kernels(cudyn_library_t library,
                                   cudyn_kernel_t *kernels,
                                   uint32_t capacity,
                                   uint32_t *written);

/**
 * The device address and size of a `__device__` variable, in the current context.
 *
 * Contexts: with a current context, that one. A thread with none gets the address in device
 * 0's primary context, which cudyn then retains for the rest of the process (the address is
 * valid only while it lives); it is not left current.
 *
 * @param library A live library.
 * @param name The variable's name.
 * @param[out] dptr Its device address. Unchanged on failure.
 * @param[out] bytes NULL, or its size in bytes. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_NOT_FOUND, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_get_global(cudyn_library_t library,
                                      const char *name,
                                      void **dptr,
                                      size_t *bytes);

/**
 * The address and size of a `__managed__` variable (cuLibraryGetManaged /
 * cudaLibraryGetManaged). The memory is managed (unified): the host reads and writes it
 * directly once the device work that touches it is finished. It lives as long as the library.
 *
 * Contexts, through the driver: as for cudyn_library_get_global(). The runtime uses its own
 * rules (the current device's primary context, made current on the thread as any runtime
 * call does).
 *
 * @param library A live library.
 * @param name The variable's name.
 * @param api The API that looks it up.
 * @param[out] ptr Its address, valid on host and device. Unchanged on failure.
 * @param[out] bytes NULL, or its size in bytes. Unchanged on failure.
 * @return As for cudyn_library_get_global().
 */
cudyn_status cudyn_library_get_managed(cudyn_library_t library,
                                       const char *name,
                                       cudyn_api api,
                                       void **ptr,
                                       size_t *bytes);

/**
 * A unified function of the library (cuLibraryGetUnifiedFunction /
 * cudaLibraryGetUnifiedFunction): a pointer callable from host and device code on systems
 * with unified function support.
 *
 * @param library A live library.
 * @param name The function's name.
 * @param api The API that looks it up.
 * @param[out] function The function pointer. Unchanged on failure.
 * @return CUDYN_SUCCESS; a name the library does not hold is an error (the driver says
 *         CUDA_ERROR_NOT_FOUND, the runtime cudaErrorInvalidValue).
 */
cudyn_status cudyn_library_get_unified_function(cudyn_library_t library,
                                                const char *name,
                                                cudyn_api api,
                                                void **function);

/**
 * cudyn_library_get_global() for device `device`, without the caller switching contexts: the
 * device's primary context is current for the lookup only, and the thread's own context (or
 * none) is restored after. That primary context is retained for the rest of the process (the
 * address is valid only while it lives).
 *
 * @param library A live library.
 * @param name The variable's name.
 * @param device A CUDA device ordinal.
 * @param[out] dptr, bytes As for cudyn_library_get_global().
 * @return As for cudyn_library_get_global(); a device that does not exist:
 *         CUDYN_ERROR_NO_DEVICE.
 */
cudyn_status cudyn_library_get_global_on_device(cudyn_library_t library,
                                                const char *name,
                                                int32_t device,
                                                void **dptr,
                                                size_t *bytes);

/**
 * The library's module in the current context (cuLibraryGetModule), for calls that take a
 * CUmodule.
 *
 * Contexts: as for cudyn_library_get_global(): with no current context, device 0's primary
 * context's module; that context is then retained for the rest of the process.
 *
 * @param library A live library (loaded through either API).
 * @param[out] module A CUmodule, valid while the library is loaded and the context lives;
 *             never unloaded on its own. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_get_module(cudyn_library_t library, cudyn_module_t *module);

/**
 * Look up a kernel by its symbol or, failing that, by its C++ name or signature.
 *
 * First exactly as cudyn_library_get_kernel() (CUDA's own lookup of the extern "C" or
 * mangled name, as fast). If CUDA finds no kernel of that name, `name` is read as C++ and
 * matched against the demangled names of the library's kernels, both written in one
 * spelling (whitespace, `unsigned` for `unsigned int`, `const T` for `T const`, `int64_t` for
 * `long`, `16u` for `16`, ...):
 *   - "axpy<float>" names the instance axpy<float> of a template (template arguments are
 *     never deduced: "axpy" alone does not);
 *   - "scale(double*, double)" names one overload by its parameters;
 *   - namespaces may be left out ("take" for ns::inner::take) or given from the root
 *     ("::axpy<float>"), and so may versioned inline namespaces (cuda::std::__4) and
 *     trailing template arguments (the defaults, which the binary does not record);
 *   - when several kernels fit, the closest fit wins (all namespaces given beats some left
 *     out, which beats inline namespaces skipped, which beats template arguments left out);
 *     a tie is CUDYN_ERROR_AMBIGUOUS_NAME and the message lists the kernels that fit, each
 *     with its symbol.
 *
 * The names come from CUDA (cuLibraryEnumerateKernels and cuKernelGetName: driver 12.4+ or
 * runtime 12.8+), so they are the names CUDA finds in this library on this GPU; the last
 * libraries' names are kept demangled, so naming many kernels of one library demangles each
 * once. A declaration may be given as it is written: parameter names, `template`,
 * `__global__`, `void` and a trailing `;` are ignored.
 *
 * @param library A live library.
 * @param name A symbol, or a C++ name or signature (UTF-8, at most 64 KiB).
 * @param api The API that looks the kernel up.
 * @param[out] kernel CUDA's own handle, as from cudyn_library_get_kernel(). Unchanged on
 *             failure.
 * @return CUDYN_SUCCESS; CUDYN_ERROR_NOT_FOUND (no kernel fits; the message lists the kernels
 *         of that base name, if any); CUDYN_ERROR_AMBIGUOUS_NAME (several fit equally well);
 *         CUDYN_ERROR_INVALID_ARGUMENT (NULL, an unloaded library, a name that is neither a
 *         symbol of the library nor C++, such as "axpy<float"); CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_library_find_kernel(cudyn_library_t library,
                                       const char *name,
                                       cudyn_api api,
                                       cudyn_kernel_t *kernel);

/**
 * The C++ name of a kernel symbol, as cudyn_library_find_kernel() shows and matches it:
 * "axpy<float>(float*, float, int)" for "_Z4axpyIfEvPT_S0_i" (no return type: kernels return
 * void), with relocatable device code's "__nv_static_..." prefix removed. Needs no GPU.
 *
 * @param symbol A kernel's symbol, e.g. from cudyn_kernel_name().
 * @param[out] name Receives the C++ name, NUL-terminated; free it with cudyn_buffer_free().
 *             Unchanged on failure.
 * @return CUDYN_SUCCESS; CUDYN_ERROR_NOT_FOUND when `symbol` is not a mangled C++ name (an
 *         extern "C" kernel's name is its own C name) or cannot be demangled within
 *         cpp_demangle's limits; CUDYN_ERROR_INVALID_ARGUMENT (NULL, not UTF-8).
 */
cudyn_status cudyn_demangle(const char *symbol, struct cudyn_buffer *name);

/**
 * Load every kernel of a library onto each of the given GPUs now, instead of at each kernel's
 * first launch on each device (CUDA loads lazily by default), and say how long each took:
 * for one library and the devices named, what CUDA_MODULE_LOADING=EAGER does for every
 * library of the process at its start.
 *
 * Per device, in the order given: the device's primary context (the one the runtime uses) is
 * made current, the library's code is loaded into it (cuLibraryGetModule: PTX is compiled
 * then), then every kernel's function (cuKernelGetFunction, and cuFuncLoad where the driver
 * has it, 12.4+). Contexts: each device's primary context is retained, once for the life of
 * the process as every cudyn call that needs a context does, and stays retained (the loaded
 * code lives in it); the thread's current context (or none) is current again when this
 * returns, on success and on failure; no other context is touched. A context you created
 * yourself (cuCtxCreate) gets nothing: make it current and use cudyn_kernel_function().
 *
 * @param library A live library (loaded through either API).
 * @param devices `num_devices` CUDA device ordinals; NULL only with 0 (which loads nothing).
 *        Listing a device twice loads it once. Every ordinal is checked before anything is
 *        loaded.
 * @param num_devices Entries at `devices`.
 * @param[out] ms_per_device NULL, or room for `num_devices` doubles: the milliseconds each
 *             device took, from its context being current (its creation, on a device's first
 *             use, is not counted) to its last kernel loaded. Written only on success.
 * @return CUDYN_SUCCESS; CUDYN_ERROR_NO_DEVICE for an ordinal that does not exist (the
 *         message names it; nothing loaded); otherwise the first failure, whose message names
 *         the device ("preloading on device 1 (NVIDIA H200, sm_90)") and, where one failed,
 *         the kernel: CUDYN_ERROR_NO_BINARY_FOR_DEVICE, CUDYN_ERROR_CUDA (e.g. out of
 *         memory, or CUDA refusing the code in that context, whatever CUDA's code:
 *         cudyn_last_cuda_error()), CUDYN_ERROR_INVALID_IMAGE (CUDA found the code malformed
 *         there), CUDYN_ERROR_UNSUPPORTED_VERSION (listing kernels needs driver 12.4+ or
 *         runtime 12.8+), CUDYN_ERROR_INVALID_ARGUMENT (NULL, an unloaded library). Devices
 *         before the one that failed stay loaded.
 */
cudyn_status cudyn_library_preload(cudyn_library_t library,
                                   const int *devices,
                                   size_t num_devices,
                                   double *ms_per_device);

/**
 * The kernel's name.
 *
 * Works for any kernel handle, wherever it came from.
 *
 * Contexts (this call and the parameter and attribute queries below): the current context, or
 * on a thread without one none, unless CUDA answers that the call needs one: then device 0's
 * primary context, current and retained for the call only.
 *
 * @param kernel A live kernel.
 * @param[out] name The name (mangled for C++). The string belongs to CUDA and lives as long
 *             as the kernel's library: never free it. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_name(cudyn_kernel_t kernel, const char **name);

/**
 * The number of parameters the kernel takes, learned once per kernel: a kernel of a library
 * cudyn loaded from a cubin or fatbin reads it from the tables of the image cudyn handed CUDA
 * (CUDA reads the same ones; no CUDA call, no context); any other kernel, and one whose GPU
 * runs PTX, asks CUDA (cuKernelGetParamInfo, which on driver 580 needs a context: see
 * cudyn_kernel_name() for the one it gets).
 *
 * @param kernel A live kernel.
 * @param[out] count The number. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_UNSUPPORTED_VERSION,
 *         CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_param_count(cudyn_kernel_t kernel, size_t *count);

/**
 * The offset and size of one parameter.
 *
 * @param kernel A live kernel.
 * @param index The parameter's index, from 0.
 * @param[out] offset NULL, or its offset in bytes in the parameter buffer. Unchanged on failure.
 * @param[out] size NULL, or its size in bytes. Unchanged on failure.
 * @return As for cudyn_kernel_param_count(); an index past the last parameter:
 *         CUDYN_ERROR_INVALID_ARGUMENT.
 */
cudyn_status cudyn_kernel_param_info(cudyn_kernel_t kernel,
                                     size_t index,
                                     size_t *offset,
                                     size_t *size);

/**
 * The kernel's function in the current context (cuKernelGetFunction).
 *
 * Contexts: with a current context, that one. A thread with none gets the function of device
 * 0's primary context, which cudyn then retains for the rest of the process (the function is
 * valid only while it lives); it is not left current.
 *
 * @param kernel A live kernel.
 * @param[out] function A CUfunction (== cudaFunction_t), valid while the library is loaded
 *             and the context lives; never freed on its own. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_function(cudyn_kernel_t kernel, cudyn_function_t *function);

/**
 * Read a kernel attribute.
 *
 * @param kernel A live kernel.
 * @param attr A cudyn_kernel_attribute.
 * @param device The CUDA device ordinal it is read for.
 * @param[out] value The attribute's value. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown attribute), CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_get_attribute(cudyn_kernel_t kernel,
                                        cudyn_kernel_attribute attr,
                                        int32_t device,
                                        int32_t *value);

/**
 * Set a kernel attribute, e.g. CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES before a launch
 * with more than 48 KiB of dynamic shared memory.
 *
 * @param kernel A live kernel.
 * @param attr A settable cudyn_kernel_attribute.
 * @param value The new value.
 * @param device The CUDA device ordinal it is set for.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown attribute), CUDYN_ERROR_CUDA
 *         (CUDA refused the value; the attribute is unchanged).
 */
cudyn_status cudyn_kernel_set_attribute(cudyn_kernel_t kernel,
                                        cudyn_kernel_attribute attr,
                                        int32_t value,
                                        int32_t device);

/**
 * Vouch that `kernel` is a live kernel handle and stays live until cudyn_kernel_release()
 * (or, for a kernel of a library cudyn loaded, until that library is unloaded through cudyn).
 *
 * Which handles cudyn checks and which it trusts:
 * - A kernel of a library cudyn loaded, however its handle was obtained (through cudyn, or
 *   cuLibraryGetKernel on that library: cudyn asks cuKernelGetLibrary once, driver 12.5+):
 *   cudyn knows its layout and when it is unloaded; launches take the fast path.
 * - Any other kernel (`cudaGetKernel`, `cudaLibraryGetKernel`/`cuLibraryGetKernel` on a library
 *   your program loaded) is *foreign*: cudyn cannot see its library go away, and no CUDA call
 *   tells one kernel from another at the same address, so it asks CUDA for the parameter
 *   count on every launch (two cuKernelGetParamInfo answers; one more per argument with
 *   cudyn_launch_checked()). Correct whatever CUDA later puts at that address, but each
 *   launch pays for those calls. The handle must be live, as with CUDA itself.
 * - A kernel of a library cudyn unloaded is refused without being handed to CUDA (the
 *   driver can crash on it), until cudyn sees the address live again: a cudyn load returns
 *   it, cudyn_library_get_kernel()/cudyn_library_kernels() returns it, a library cudyn loaded
 *   since has a kernel there (cudyn lists such libraries, each once), or you adopt it.
 *
 * Adopting a foreign kernel makes cudyn remember its layout (fast launches) and accept it at
 * an address a kernel cudyn unloaded once had. Adopting a kernel cudyn already owns changes
 * nothing; nor does adopting one of a library cudyn loaded that it has not seen yet, beyond
 * making it known as that library's: cudyn asks cuKernelGetLibrary (driver 12.5+, only while
 * libraries cudyn loaded are loaded), and the library's unload through cudyn ends it.
 *
 * @param kernel A live kernel.
 * @return CUDYN_SUCCESS; NULL: CUDYN_ERROR_INVALID_ARGUMENT. Nothing else is asked of CUDA
 *         here.
 * @note Your duty in return: call cudyn_kernel_release() before its library is unloaded,
 *       unless cudyn loaded that library and unloads it (with a driver older than 12.5,
 *       release it before that unload too).
 */
cudyn_status cudyn_kernel_adopt(cudyn_kernel_t kernel);

/**
 * Undo cudyn_kernel_adopt(): cudyn forgets the layout and treats the kernel as foreign again.
 * When this returns, no launch through cudyn that used the remembered layout is still under
 * way, so the library may be unloaded at once.
 *
 * @param kernel A kernel; one that was not adopted (or NULL) is left as it is.
 * @return Always CUDYN_SUCCESS.
 */
cudyn_status cudyn_kernel_release(cudyn_kernel_t kernel);

/**
 * The library a kernel belongs to (cuKernelGetLibrary; driver 12.5+).
 *
 * @param kernel A live kernel.
 * @param[out] library CUDA's handle (a CUlibrary and a cudaLibrary_t), owned by whoever loaded
 *             it: a library cudyn loaded is still unloaded with cudyn_library_unload(). Unchanged
 *             on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_UNSUPPORTED_VERSION (an
 *         older driver), CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_get_library(cudyn_kernel_t kernel, cudyn_library_t *library);

/**
 * Set a kernel's preferred split of L1 cache and shared memory on a device
 * (cuKernelSetCacheConfig; a preference CUDA may not follow).
 *
 * @param kernel A live kernel.
 * @param config A cudyn_func_cache.
 * @param device The CUDA device ordinal it is set for.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown config), CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_kernel_set_cache_config(cudyn_kernel_t kernel,
                                           cudyn_func_cache config,
                                           int32_t device);

/**
 * The kernel handle of a `__global__` function compiled into the program, from its host
 * function pointer (cudaGetKernel), adopted as by cudyn_kernel_adopt().
 *
 * cudaGetKernel is asked of the CUDA runtime cudyn opened: it knows the program's kernels when
 * the program links that shared runtime (nvcc -cudart shared; CMake
 * CUDA_RUNTIME_LIBRARY Shared). A program linked with the static runtime registers its kernels
 * there instead: call cudaGetKernel itself (C++: cudyn::kernel_of) and adopt the handle.
 *
 * @param entry The function, as `(const void *)my_kernel`.
 * @param[out] kernel The handle (a CUkernel and a cudaKernel_t). Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (NULL, or an address that is no kernel
 *         of this runtime: cudaErrorInvalidDeviceFunction), CUDYN_ERROR_RUNTIME_NOT_FOUND,
 *         CUDYN_ERROR_CUDA.
 * @note As with cudyn_kernel_adopt(): call cudyn_kernel_release() before unloading (dlclose)
 *       a shared library that holds the function.
 */
cudyn_status cudyn_kernel_of(const void *entry, cudyn_kernel_t *kernel);

/**
 * Launch a kernel as `config` says, through `config->api` (cuLaunchKernelEx, or
 * cudaLaunchKernel / cudaLaunchKernelExC when there are launch attributes).
 *
 * The kernel may come from anywhere: cudyn, cuLibraryGetKernel, cudaLibraryGetKernel or
 * cudaGetKernel.
 *
 * Launch attributes: the named fields (`cluster`, `cooperative`, `priority`,
 * `programmatic_serialization`) and `config->attributes`, CUDA's own list, are checked (every
 * id one CUDA 13.0 takes at a launch, each at most once counting the named fields, each value
 * in CUDA's range, a cluster dividing the grid) and copied; a refusal is
 * CUDYN_ERROR_INVALID_ARGUMENT naming the entry, with nothing launched.
 *
 * Contexts, through the driver: a thread with a current context launches in it. A thread with
 * none launches in the stream's context, or device 0's primary context for the NULL and the
 * special streams (as the runtime would); that context is current for this launch only, and a
 * primary context used so is retained for the rest of the process (the queued work lives in
 * it). The runtime uses its own rules (the current device's primary context, which it makes
 * current on the thread).
 *
 * @param kernel A live kernel.
 * @param config How to launch (zero-initialised, then set; reserved words zero). Events and
 *        streams in it and its attributes are CUDA's raw handles: live until the launch is
 *        queued (CUDA does not check them).
 * @param args Like CUDA's kernelParams: one pointer per parameter, each pointing at the
 *        argument's value. Read during the call only.
 * @param nargs Entries at `args`: checked against the kernel's parameter count.
 * @return CUDYN_SUCCESS (the launch was queued; a CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE
 *         entry now holds its node), CUDYN_ERROR_ARGUMENT_MISMATCH (nothing launched),
 *         CUDYN_ERROR_INVALID_ARGUMENT (bad config, attribute or kernel: nothing launched),
 *         CUDYN_ERROR_CUDA (CUDA refused the launch).
 */
cudyn_status cudyn_launch(cudyn_kernel_t kernel,
                          const struct cudyn_launch_config *config,
                          void **args,
                          size_t nargs);

/**
 * cudyn_launch(), also checking each argument's size against the parameter's.
 *
 * @param kernel, config, args, nargs As for cudyn_launch().
 * @param arg_sizes `nargs` sizes, e.g. sizeof of each argument; a mismatch names the index
 *        and both sizes (CUDYN_ERROR_ARGUMENT_MISMATCH), and nothing is launched.
 * @return As for cudyn_launch().
 */
cudyn_status cudyn_launch_checked(cudyn_kernel_t kernel,
                                  const struct cudyn_launch_config *config,
                                  void **args,
                                  const size_t *arg_sizes,
                                  size_t nargs);

/**
 * The most blocks of `kernel` that can be active on one SM of `device`
 * (cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags).
 *
 * Contexts: the kernel's function is taken in `device`'s primary context, which is current
 * (and retained, unless cudyn holds it already) for this call only; the thread's context state
 * is as it was after.
 *
 * @param kernel A live kernel, from anywhere.
 * @param device A CUDA device ordinal.
 * @param block_size Threads per block the launch would have.
 * @param dynamic_smem_bytes Dynamic shared memory per block the launch would have.
 * @param flags A cudyn_occupancy_flags (CUDYN_OCCUPANCY_DEFAULT: as
 *        cuOccupancyMaxActiveBlocksPerMultiprocessor).
 * @param[out] num_blocks The number of blocks. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_NO_DEVICE (no such
 *         device), CUDYN_ERROR_CUDA.
 */
cudyn_status cudyn_occupancy_max_active_blocks(cudyn_kernel_t kernel,
                                               int device,
                                               int block_size,
                                               size_t dynamic_smem_bytes,
                                               unsigned int flags,
                                               int *num_blocks);

/**
 * The block size of `kernel` that reaches the most occupancy on `device`, and the fewest
 * blocks that reach it (cuOccupancyMaxPotentialBlockSizeWithFlags).
 *
 * Contexts: as for cudyn_occupancy_max_active_blocks().
 *
 * @param kernel A live kernel.
 * @param device A CUDA device ordinal.
 * @param dynamic_smem_bytes Dynamic shared memory per block, whatever the block size; ignored
 *        when `smem_of_block` is given.
 * @param smem_of_block NULL, or a function giving the dynamic shared memory a block of a
 *        given size needs. cudyn calls it during this call, on this thread, with `user`, once
 *        for each block size CUDA's calculator tries (every multiple of 32 up to the limit,
 *        1024 without one, and the limit), before CUDA is asked and with no lock of cudyn's
 *        held: it may call cudyn (even unload a library) or fork. CUDA's own callback is
 *        answered from those answers, so the same size must give the same bytes. It must not
 *        unwind (longjmp, C++ exception) out of the call.
 * @param user Passed to `smem_of_block`.
 * @param block_size_limit The largest block the kernel handles; 0: the device's and the
 *        kernel's own limit.
 * @param flags A cudyn_occupancy_flags.
 * @param[out] min_grid_size NULL, or the fewest blocks that reach the occupancy. Unchanged on
 *             failure.
 * @param[out] block_size The suggested threads per block. Unchanged on failure.
 * @return As for cudyn_occupancy_max_active_blocks().
 */
cudyn_status cudyn_occupancy_max_potential_block_size(cudyn_kernel_t kernel,
                                                      int device,
                                                      size_t dynamic_smem_bytes,
                                                      cudyn_block_to_smem smem_of_block,
                                                      void *user,
                                                      int block_size_limit,
                                                      unsigned int flags,
                                                      int *min_grid_size,
                                                      int *block_size);

/**
 * The most dynamic shared memory per block with which `num_blocks` blocks of `block_size`
 * threads of `kernel` fit on one SM of `device` (cuOccupancyAvailableDynamicSMemPerBlock).
 *
 * Contexts: as for cudyn_occupancy_max_active_blocks().
 *
 * @param kernel A live kernel.
 * @param device A CUDA device ordinal.
 * @param num_blocks Blocks per SM.
 * @param block_size Threads per block.
 * @param[out] bytes The bytes. Unchanged on failure.
 * @return As for cudyn_occupancy_max_active_blocks().
 */
cudyn_status cudyn_occupancy_available_dynamic_smem(cudyn_kernel_t kernel,
                                                    int device,
                                                    int num_blocks,
                                                    int block_size,
                                                    size_t *bytes);

/**
 * The largest cluster, in blocks, `kernel` can be launched with as `config` describes
 * (cuOccupancyMaxPotentialClusterSize; the config's cluster shape is ignored, a kernel's
 * required cluster size is what it reports).
 *
 * Contexts: as for cudyn_occupancy_max_active_blocks(); CUDA computes in the config's
 * stream's context when the stream is not NULL.
 *
 * @param kernel A live kernel.
 * @param device A CUDA device ordinal.
 * @param config A launch config as for cudyn_launch() (grid, block, shared memory, stream,
 *        attributes; `api` is not used).
 * @param[out] cluster_size The number of blocks. Unchanged on failure.
 * @return As for cudyn_occupancy_max_active_blocks().
 */
cudyn_status cudyn_occupancy_max_potential_cluster_size(cudyn_kernel_t kernel,
                                                        int device,
                                                        const struct cudyn_launch_config *config,
                                                        int *cluster_size);

/**
 * The most clusters of `kernel`, of the config's cluster shape (or the kernel's required one),
 * that can be active at once (cuOccupancyMaxActiveClusters).
 *
 * @param kernel, device, config As for cudyn_occupancy_max_potential_cluster_size(); the
 *        config gives the cluster shape (the `cluster` field or the attribute).
 * @param[out] num_clusters The number of clusters. Unchanged on failure.
 * @return As for cudyn_occupancy_max_active_blocks().
 */
cudyn_status cudyn_occupancy_max_active_clusters(cudyn_kernel_t kernel,
                                                 int device,
                                                 const struct cudyn_launch_config *config,
                                                 int *num_clusters);

/**
 * A one-dimensional launch config of `kernel` on `device` for `n` elements, with the block
 * size cudyn_occupancy_max_potential_block_size() suggests: grid = ceil(n / block); `n` 0:
 * the fewest blocks that fill the device (for a grid-stride loop). The config is a whole new
 * one (zeroed, through the runtime, NULL stream, shared memory as given or as `smem_of_block`
 * says for the block size chosen): set `api`, `stream` and the rest on it after.
 *
 * @param kernel, device As for cudyn_occupancy_max_potential_block_size().
 * @param n Elements to cover.
 * @param dynamic_smem_bytes, smem_of_block, user As for
 *        cudyn_occupancy_max_potential_block_size().
 * @param[out] config The config. Unchanged on failure.
 * @return As for cudyn_occupancy_max_active_blocks(); too many elements for one grid:
 *         CUDYN_ERROR_INVALID_ARGUMENT.
 */
cudyn_status cudyn_launch_config_for_occupancy(cudyn_kernel_t kernel,
                                               int device,
                                               uint64_t n,
                                               size_t dynamic_smem_bytes,
                                               cudyn_block_to_smem smem_of_block,
                                               void *user,
                                               struct cudyn_launch_config *config);

/**
 * Free a buffer cudyn filled, and set it to {NULL, 0}.
 *
 * @param buffer NULL, or a buffer cudyn filled, or one already freed here: both are no-ops.
 */
void cudyn_buffer_free(struct cudyn_buffer *buffer);

/**
 * What kind of code a buffer holds, from its first bytes (cheap; loading checks it fully).
 *
 * @param data The bytes.
 * @param size Bytes at `data`.
 * @param[out] kind The kind; CUDYN_CODE_UNKNOWN when it is none cudyn knows. Unchanged on
 *             failure.
 * @return CUDYN_SUCCESS, or CUDYN_ERROR_INVALID_ARGUMENT for a NULL pointer.
 */
cudyn_status cudyn_code_kind_of(const void *data, size_t size, cudyn_code_kind *kind);

/**
 * Compile CUDA C++ with NVRTC, through the compile cache.
 *
 * @param source The source text (UTF-8).
 * @param name Names the program in messages; NULL for "cudyn_program.cu".
 * @param options `num_options` NVRTC options; NULL with 0 for none.
 * @param num_options Entries at `options`.
 * @param target CUDYN_CODE_CUBIN (or 0), CUDYN_CODE_PTX or CUDYN_CODE_LTOIR.
 * @param[out] code On success, the compiled code; the caller frees it with
 *             cudyn_buffer_free(). Unchanged on failure.
 * @param[out] log NULL, or NVRTC's log, on success and failure alike (empty when NVRTC never
 *             ran); the caller frees it with cudyn_buffer_free(). Unchanged only when the
 *             arguments themselves are refused (NULL source or code, bad options).
 * @return CUDYN_SUCCESS, CUDYN_ERROR_COMPILE_FAILED (the message quotes the first error line),
 *         CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_NVRTC_NOT_FOUND.
 */
cudyn_status cudyn_compile(const char *source,
                           const char *name,
                           const char *const *options,
                           size_t num_options,
                           cudyn_code_kind target,
                           struct cudyn_buffer *code,
                           struct cudyn_buffer *log);

/**
 * cudyn_compile() with headers and name expressions.
 *
 * @param source, name, code, log As for cudyn_compile().
 * @param options NULL for the defaults (a cubin for the present GPU).
 * @param[out] lowered_names NULL, or on success the lowered (mangled) name of each name
 *             expression, each followed by a NUL, in order; the caller frees it with
 *             cudyn_buffer_free(). Unchanged on failure.
 * @return As for cudyn_compile().
 */
cudyn_status cudyn_compile_ex(const char *source,
                              const char *name,
                              const struct cudyn_compile_options *options,
                              struct cudyn_buffer *code,
                              struct cudyn_buffer *log,
                              struct cudyn_buffer *lowered_names);

/**
 * Compile CUDA C++ (through the cache) for the present GPU and load it.
 *
 * @param source, name, options, num_options, log As for cudyn_compile().
 * @param api The API that loads it.
 * @param[out] library As for cudyn_library_load_data(): the caller unloads it with
 *             cudyn_library_unload(). Unchanged on failure.
 * @return As for cudyn_compile() and cudyn_library_load_data().
 */
cudyn_status cudyn_library_load_source(const char *source,
                                       const char *name,
                                       const char *const *options,
                                       size_t num_options,
                                       cudyn_api api,
                                       cudyn_library_t *library,
                                       struct cudyn_buffer *log);

/**
 * cudyn_library_load_source() with headers and name expressions.
 *
 * @param source, name, api, library, log As for cudyn_library_load_source().
 * @param options As for cudyn_compile_ex(); `target` must be 0 (a cubin).
 * @param[out] lowered_names As for cudyn_compile_ex(), ready for cudyn_library_get_kernel().
 * @return As for cudyn_library_load_source().
 */
cudyn_status cudyn_library_load_source_ex(const char *source,
                                          const char *name,
                                          const struct cudyn_compile_options *options,
                                          cudyn_api api,
                                          cudyn_library_t *library,
                                          struct cudyn_buffer *log,
                                          struct cudyn_buffer *lowered_names);

/**
 * Link inputs with nvJitLink into one cubin.
 *
 * Inputs nvJitLink would take and drop are refused by name before it runs: an executable
 * (non-relocatable) cubin, a fatbin whose SASS for the target is one, a host object or
 * static library without relocatable device code (-rdc=true, nvcc -dc), and a symbol defined
 * by two cubin inputs. A result with no kernel is a failure unless the options hold
 * "--cudyn-allow-no-kernels" (device globals linked on purpose; cudyn's own option, not
 * passed to nvJitLink).
 *
 * @param inputs `num_inputs` inputs.
 * @param num_inputs Entries at `inputs`; at least 1.
 * @param options `num_options` nvJitLink options (e.g. "-lto", "-arch=sm_90"; without -arch
 *        the present GPU's), and "--cudyn-allow-no-kernels"; NULL with 0 for none.
 * @param num_options Entries at `options`.
 * @param[out] cubin On success, the linked cubin; the caller frees it with
 *             cudyn_buffer_free(). Unchanged on failure.
 * @param[out] log NULL, or nvJitLink's log, on success and failure alike (empty when nvJitLink
 *             never ran); the caller frees it with cudyn_buffer_free(). Unchanged only when
 *             the arguments themselves are refused (NULL arrays, a bad kind or name).
 * @return CUDYN_SUCCESS, CUDYN_ERROR_LINK_FAILED (the message quotes the first error; also a
 *         duplicate definition or a result without a kernel), CUDYN_ERROR_INVALID_ARGUMENT (also
 *         an input that would link to nothing), CUDYN_ERROR_NVJITLINK_NOT_FOUND.
 */
cudyn_status cudyn_link(const struct cudyn_link_input *inputs,
                        size_t num_inputs,
                        const char *const *options,
                        size_t num_options,
                        struct cudyn_buffer *cubin,
                        struct cudyn_buffer *log);

/**
 * Read the cache's counters.
 *
 * @param[out] stats Receives the counters (all 0 when the cache is off). Unchanged on failure.
 * @return CUDYN_SUCCESS, or CUDYN_ERROR_INVALID_ARGUMENT for NULL.
 */
cudyn_status cudyn_cache_stats(struct cudyn_cache_info *stats);

/**
 * Whether the compile cache is on, and if not, why. Compiles work either way.
 *
 * @return CUDYN_SUCCESS when it is on; CUDYN_ERROR_NOT_FOUND when it was turned off
 *         (CUDYN_CACHE=0, CUDYN_CACHE_MAX_BYTES=0, or a setuid/setgid process);
 *         CUDYN_ERROR_INVALID_ARGUMENT for a setting cudyn cannot read
 *         (CUDYN_CACHE_MAX_BYTES=lots, a relative CUDYN_CACHE_DIR); CUDYN_ERROR_IO for a folder
 *         it cannot use (read-only, a file, a symlink, someone else's, group/world writable).
 *         cudyn_last_error_message() then says which and why.
 * @note The answer is fixed for the life of the process: the cache is set up once, on first use.
 */
cudyn_status cudyn_cache_status(void);

/**
 * The compile cache's folder.
 *
 * @return Its path, or NULL when the cache is off. Static storage: never free it.
 */
const char *cudyn_cache_dir(void);

/**
 * Remove every cache entry and cudyn's temporary files from the cache folder; other files
 * and folders there are left alone.
 *
 * @param[out] removed NULL, or the number of entries removed. Unchanged on failure.
 * @return CUDYN_SUCCESS (also when the cache is off: 0 removed), or CUDYN_ERROR_IO.
 */
cudyn_status cudyn_cache_clear(uint64_t *removed);

/**
 * Add a read-only layer to the compile cache: a folder of entries, or a bundle file that
 * `cudyn_cache_export` (or `cudyn cache export`) wrote. Layers are consulted, in the order
 * added, before the cache's own folder, and never written. `CUDYN_CACHE_LAYERS` names layers
 * too, and a bundle named `<program>.cudyn-bundle` beside the running executable is added on
 * its own.
 *
 * @param path An absolute path. The file or folder, and every folder above it, must be owned
 *             by root or by the user and not writable by group or others.
 * @return CUDYN_SUCCESS; CUDYN_ERROR_INVALID_ARGUMENT for NULL; CUDYN_ERROR_IO when it cannot
 *         be used (missing, relative, someone else's, writable by others); CUDYN_ERROR_INVALID_IMAGE
 *         for a file that is not a bundle; the cache's status when the cache is off.
 */
cudyn_status cudyn_cache_add_layer(const char *path);

/**
 * Write every entry of the compile cache's folder to one bundle file (a temp file beside it,
 * renamed into place when complete).
 *
 * @param path Where to write it (an existing folder; the file is replaced).
 * @param[out] entries NULL, or the number of entries written. Unchanged on failure.
 * @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT for NULL, CUDYN_ERROR_IO, or the cache's
 *         status when the cache is off.
 */
cudyn_status cudyn_cache_export(const char *path, uint64_t *entries);

/**
 * Import a bundle into the compile cache's folder. The whole bundle is checked first (every
 * checksum, every entry, and that each holds code cudyn's image checks accept); a bundle that
 * fails is refused with the reason and nothing is imported.
 *
 * @param path The bundle.
 * @param[out] added NULL, or the number of entries added (entries already present are kept).
 * @return CUDYN_SUCCESS; CUDYN_ERROR_INVALID_IMAGE for a damaged or forged bundle;
 *         CUDYN_ERROR_IO (unreadable, larger than CUDYN_CACHE_MAX_BYTES, a write failed);
 *         CUDYN_ERROR_INVALID_ARGUMENT for NULL; the cache's status when the cache is off.
 */
cudyn_status cudyn_cache_import(const char *path, uint64_t *added);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* CUDYN_H */
