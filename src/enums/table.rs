// The enums cudyn shares with C: one entry per value, `Variant = number => C_NAME, "text";`.
// Read by src/enums/mod.rs (the Rust enums) and by build.rs (the C enums of cudyn.h). Numbers
// are stable: a retired number is never reused. Only `c_enums!` input belongs in this file.

c_enums! {
    /// What went wrong, as a stable number: every fallible C call's result.
    pub enum Status as cudyn_status {
        /// The call did what it says.
        Success = 0 => CUDYN_SUCCESS, "success";
        /// NULL where a value is needed, a bad size or enum value.
        InvalidArgument = 1 => CUDYN_ERROR_INVALID_ARGUMENT, "invalid argument";
        /// libcuda.so.1 could not be opened.
        DriverNotFound = 2 => CUDYN_ERROR_DRIVER_NOT_FOUND, "the CUDA driver (libcuda.so.1) could not be opened";
        /// No libcudart 12.8+ / 13.x could be opened.
        RuntimeNotFound = 3 => CUDYN_ERROR_RUNTIME_NOT_FOUND, "no CUDA runtime (libcudart 12.8+ or 13.x) could be opened";
        /// No NVRTC could be opened.
        NvrtcNotFound = 4 => CUDYN_ERROR_NVRTC_NOT_FOUND, "NVRTC could not be opened";
        /// No nvJitLink could be opened.
        NvjitlinkNotFound = 5 => CUDYN_ERROR_NVJITLINK_NOT_FOUND, "nvJitLink could not be opened";
        /// The component is too old for this call.
        UnsupportedVersion = 6 => CUDYN_ERROR_UNSUPPORTED_VERSION, "a CUDA component is too old for this call";
        /// Driver present, no usable GPU.
        NoDevice = 7 => CUDYN_ERROR_NO_DEVICE, "no usable CUDA device";
        /// Not a well-formed cubin/fatbin/PTX/LTO-IR.
        InvalidImage = 8 => CUDYN_ERROR_INVALID_IMAGE, "not a well-formed cubin, fatbin, PTX or LTO-IR image";
        /// Well-formed, but nothing this GPU can run.
        NoBinaryForDevice = 9 => CUDYN_ERROR_NO_BINARY_FOR_DEVICE, "the image has no code this GPU can run";
        /// No kernel/global of that name.
        NotFound = 10 => CUDYN_ERROR_NOT_FOUND, "no kernel or global of that name";
        /// NVRTC said no; the log says why.
        CompileFailed = 11 => CUDYN_ERROR_COMPILE_FAILED, "compilation failed (see the log)";
        /// nvJitLink said no; the log says why.
        LinkFailed = 12 => CUDYN_ERROR_LINK_FAILED, "linking failed (see the log)";
        /// Launch arguments do not match the kernel's parameters.
        ArgumentMismatch = 13 => CUDYN_ERROR_ARGUMENT_MISMATCH, "launch arguments do not match the kernel's parameters";
        /// A file could not be opened or read, or the cache folder not used.
        Io = 14 => CUDYN_ERROR_IO, "input/output error";
        /// Any other CUDA failure; see cudyn_last_cuda_error.
        Cuda = 15 => CUDYN_ERROR_CUDA, "a CUDA call failed (see cudyn_last_cuda_error)";
        /// A bug in cudyn (a caught panic).
        Internal = 16 => CUDYN_ERROR_INTERNAL, "internal error in cudyn (a bug)";
        /// A C++ kernel name that fits more than one kernel; the message lists them.
        AmbiguousName = 17 => CUDYN_ERROR_AMBIGUOUS_NAME, "the name fits more than one kernel";
    }

    /// Which CUDA API does the work, chosen per call: load through one, launch through the other.
    pub enum Api as cudyn_api {
        /// cudaLibraryLoadData, cudaLaunchKernelExC, ... (needs libcudart 12.8+).
        Runtime = 0 => CUDYN_API_RUNTIME, "runtime";
        /// cuLibraryLoadData, cuLaunchKernelEx, ... (needs driver 12.0+).
        Driver = 1 => CUDYN_API_DRIVER, "driver";
    }

    /// What kind of code a buffer holds. Objects and libraries are link inputs only.
    pub enum CodeKind as cudyn_code_kind {
        /// None of the others (as a compile target: the default, a cubin).
        Unknown = 0 => CUDYN_CODE_UNKNOWN, "unknown";
        /// A cubin: device code (SASS) for one architecture, in an ELF file.
        Cubin = 1 => CUDYN_CODE_CUBIN, "cubin";
        /// A fatbin: cubins, PTX and LTO-IR for several architectures.
        Fatbin = 2 => CUDYN_CODE_FATBIN, "fatbin";
        /// PTX text, compiled by the driver's JIT at load time.
        Ptx = 3 => CUDYN_CODE_PTX, "PTX";
        /// NVVM IR for link-time optimisation with nvJitLink.
        LtoIr = 4 => CUDYN_CODE_LTOIR, "LTO-IR";
        /// CUDA C++ source text.
        Source = 5 => CUDYN_CODE_SOURCE, "CUDA source";
        /// A host object file with embedded device code (link input only).
        Object = 6 => CUDYN_CODE_OBJECT, "host object";
        /// A static library of such objects (link input only).
        Library = 7 => CUDYN_CODE_LIBRARY, "static library";
    }

    /// Kernel attributes, with CUDA's CU_FUNC_ATTRIBUTE_* numbers.
    pub enum Attribute as cudyn_kernel_attribute {
        /// Most threads a block of this kernel can have (read only).
        MaxThreadsPerBlock = 0 => CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK, "max threads per block";
        /// Static shared memory per block, in bytes (read only).
        SharedSizeBytes = 1 => CUDYN_KERNEL_ATTR_SHARED_SIZE_BYTES, "static shared memory bytes";
        /// Constant memory, in bytes (read only).
        ConstSizeBytes = 2 => CUDYN_KERNEL_ATTR_CONST_SIZE_BYTES, "constant memory bytes";
        /// Local memory per thread, in bytes (read only).
        LocalSizeBytes = 3 => CUDYN_KERNEL_ATTR_LOCAL_SIZE_BYTES, "local memory bytes";
        /// Registers per thread (read only).
        NumRegs = 4 => CUDYN_KERNEL_ATTR_NUM_REGS, "registers per thread";
        /// PTX virtual architecture it was compiled for, major*10+minor (read only).
        PtxVersion = 5 => CUDYN_KERNEL_ATTR_PTX_VERSION, "PTX version";
        /// Binary architecture, major*10+minor (read only).
        BinaryVersion = 6 => CUDYN_KERNEL_ATTR_BINARY_VERSION, "binary version";
        /// 1 if compiled with -Xptxas --dlcm=ca (read only).
        CacheModeCa = 7 => CUDYN_KERNEL_ATTR_CACHE_MODE_CA, "cache mode ca";
        /// Most dynamic shared memory a launch may ask for, in bytes (settable).
        MaxDynamicSharedSizeBytes = 8 => CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max dynamic shared memory bytes";
        /// Preferred shared memory carveout, percent of the maximum (settable).
        PreferredSharedMemoryCarveout = 9 => CUDYN_KERNEL_ATTR_PREFERRED_SHARED_MEMORY_CARVEOUT, "preferred shared memory carveout";
        /// 1 if the kernel must be launched with a cluster size (read only).
        ClusterSizeMustBeSet = 10 => CUDYN_KERNEL_ATTR_CLUSTER_SIZE_MUST_BE_SET, "cluster size must be set";
        /// Required cluster width in blocks (settable, unless the kernel was compiled with one).
        RequiredClusterWidth = 11 => CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_WIDTH, "required cluster width";
        /// Required cluster height in blocks (settable, unless the kernel was compiled with one).
        RequiredClusterHeight = 12 => CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_HEIGHT, "required cluster height";
        /// Required cluster depth in blocks (settable, unless the kernel was compiled with one).
        RequiredClusterDepth = 13 => CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_DEPTH, "required cluster depth";
        /// 1 if cluster sizes beyond the portable 8 blocks are allowed (settable).
        NonPortableClusterSizeAllowed = 14 => CUDYN_KERNEL_ATTR_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, "non-portable cluster size allowed";
        /// Cluster scheduling policy preference (settable).
        ClusterSchedulingPolicyPreference = 15 => CUDYN_KERNEL_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE, "cluster scheduling policy preference";
    }

    /// Which CUDA component cudyn_component_status and cudyn_component_path ask about.
    pub enum Component as cudyn_component {
        /// libcuda.so.1.
        Driver = 0 => CUDYN_COMPONENT_DRIVER, "driver";
        /// libcudart (12.8+ or 13.x).
        Runtime = 1 => CUDYN_COMPONENT_RUNTIME, "runtime";
        /// libnvrtc.
        Nvrtc = 2 => CUDYN_COMPONENT_NVRTC, "NVRTC";
        /// libnvJitLink.
        Nvjitlink = 3 => CUDYN_COMPONENT_NVJITLINK, "nvJitLink";
    }

    /// Load options (cudyn_load_option.id): the JIT options CUDA uses when it compiles PTX at
    /// load time, and library options; what each sets, its values, and which API takes it. An
    /// option an API does not take is refused with CUDYN_ERROR_INVALID_ARGUMENT, naming it. Id 3
    /// is retired (it was CU_JIT_FAST_COMPILE, which CUDA 13.0's cuda.h keeps for internal use).
    pub enum LoadOptionId as cudyn_load_option_id {
        /// JIT: registers per thread at most (1-255). Both APIs.
        MaxRegisters = 1 => CUDYN_LOAD_OPTION_MAX_REGISTERS, "max registers";
        /// JIT: optimisation level, 0-4 (CUDA's default is 4). Both APIs.
        OptimizationLevel = 2 => CUDYN_LOAD_OPTION_OPTIMIZATION_LEVEL, "optimization level";
        /// JIT: compile PTX for this target instead of the current context's device: a
        /// cudyn_jit_target, which is CUDA's CU_TARGET_* number (90, or 65626 for sm_90a).
        /// Not with THREADS_PER_BLOCK or TARGET_FROM_CUCONTEXT (CU_JIT_TARGET). Driver only.
        Target = 4 => CUDYN_LOAD_OPTION_TARGET, "target";
        /// JIT: 1 to generate line-number information. Both APIs.
        GenerateLineInfo = 5 => CUDYN_LOAD_OPTION_GENERATE_LINE_INFO, "generate line info";
        /// JIT: 1 to generate debug information. Both APIs.
        GenerateDebugInfo = 6 => CUDYN_LOAD_OPTION_GENERATE_DEBUG_INFO, "generate debug info";
        /// JIT: 1 for a verbose info log (ptxas's register and memory report). Both APIs.
        LogVerbose = 7 => CUDYN_LOAD_OPTION_LOG_VERBOSE, "log verbose";
        /// Library: 1 promises what CU_LIBRARY_BINARY_IS_PRESERVED promises CUDA: the image's
        /// bytes stay readable and unchanged until the library is unloaded, so CUDA may read
        /// them in place instead of keeping a copy of its own. cudyn hands CUDA its own copy of
        /// every cubin and fatbin (the entries it checked, decompressed), of a file's contents
        /// and of PTX that lacks its NUL, kept until the unload and loaded with this option set
        /// whatever the caller asks; the promise binds only NUL-terminated PTX passed from
        /// memory, which CUDA then reads from the caller's buffer. Both APIs.
        BinaryIsPreserved = 8 => CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED, "binary is preserved";
        /// JIT: the compiled code must run blocks of at least this many threads (1-1024), which
        /// bounds its registers. CUDA's answer (the number it targeted) is not reported. Not
        /// with TARGET (CU_JIT_THREADS_PER_BLOCK). Both APIs.
        ThreadsPerBlock = 9 => CUDYN_LOAD_OPTION_THREADS_PER_BLOCK, "threads per block";
        /// JIT: a `float *` that receives the milliseconds CUDA's compiler and linker took during
        /// the load (CUDA writes the time over the option's value; cudyn copies it there once
        /// the load returns). PTX is compiled during the load; a fatbin whose PTX CUDA compiles
        /// later, at first use, leaves the float as it was (CU_JIT_WALL_TIME). Both APIs.
        WallTime = 10 => CUDYN_LOAD_OPTION_WALL_TIME, "wall time";
        /// JIT: value 1 picks the target from the current context, CUDA's default
        /// (CU_JIT_TARGET_FROM_CUCONTEXT). Not with TARGET. Driver only.
        TargetFromContext = 11 => CUDYN_LOAD_OPTION_TARGET_FROM_CUCONTEXT, "target from context";
        /// Loading: what to use when no cubin matches the device exactly, a cudyn_jit_fallback
        /// (CU_JIT_FALLBACK_STRATEGY). Both APIs.
        FallbackStrategy = 12 => CUDYN_LOAD_OPTION_FALLBACK_STRATEGY, "fallback strategy";
        /// JIT: the L1 caching of global loads (-dlcm), a cudyn_jit_cache_mode
        /// (CU_JIT_CACHE_MODE). Both APIs.
        CacheMode = 13 => CUDYN_LOAD_OPTION_CACHE_MODE, "cache mode";
        /// JIT: 1 to generate position-independent code (CU_JIT_POSITION_INDEPENDENT_CODE). Both APIs.
        PositionIndependentCode = 14 => CUDYN_LOAD_OPTION_POSITION_INDEPENDENT_CODE, "position independent code";
        /// JIT: a hint of at least this many blocks per SM (1 or more); needs MAX_THREADS_PER_BLOCK,
        /// ignored with MAX_REGISTERS or THREADS_PER_BLOCK (CU_JIT_MIN_CTA_PER_SM). Both APIs.
        MinCtaPerSm = 15 => CUDYN_LOAD_OPTION_MIN_CTA_PER_SM, "min CTAs per SM";
        /// JIT: the most threads a block of any kernel will have, 1-1024
        /// (CU_JIT_MAX_THREADS_PER_BLOCK). Both APIs.
        MaxThreadsPerBlock = 16 => CUDYN_LOAD_OPTION_MAX_THREADS_PER_BLOCK, "max threads per block";
        /// JIT: 1 to let MAX_REGISTERS, THREADS_PER_BLOCK, MAX_THREADS_PER_BLOCK and
        /// MIN_CTA_PER_SM override the PTX's own directives (CU_JIT_OVERRIDE_DIRECTIVE_VALUES).
        /// Both APIs.
        OverrideDirectiveValues = 17 => CUDYN_LOAD_OPTION_OVERRIDE_DIRECTIVE_VALUES, "override directive values";
        /// JIT: threads the compiler may use, 0 for one per CPU (CU_JIT_SPLIT_COMPILE). Driver only.
        SplitCompile = 18 => CUDYN_LOAD_OPTION_SPLIT_COMPILE, "split compile";
        /// Linking: a `const char *const *` array of GLOBAL_SYMBOL_COUNT names of unresolved
        /// device globals, each relocated to the host address at the same index of
        /// GLOBAL_SYMBOL_ADDRESSES (CU_JIT_GLOBAL_SYMBOL_NAMES). The three come together; the
        /// arrays and the strings stay valid until the library is unloaded. Driver only.
        GlobalSymbolNames = 19 => CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_NAMES, "global symbol names";
        /// Linking: a `void *const *` array of GLOBAL_SYMBOL_COUNT host addresses
        /// (CU_JIT_GLOBAL_SYMBOL_ADDRESSES). Driver only.
        GlobalSymbolAddresses = 20 => CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_ADDRESSES, "global symbol addresses";
        /// Linking: the number of entries of both arrays, 1 or more (CU_JIT_GLOBAL_SYMBOL_COUNT).
        /// Driver only.
        GlobalSymbolCount = 21 => CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_COUNT, "global symbol count";
        /// Library: a pointer to a cudyn_host_universal_table (CUDA's
        /// CUlibraryHostUniversalFunctionAndDataTable), which stays valid until the library is
        /// unloaded (CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE). Both APIs.
        HostUniversalFunctionAndDataTable = 22 => CUDYN_LOAD_OPTION_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, "host universal function and data table";
    }

    /// The value of CUDYN_LOAD_OPTION_TARGET: CUDA's CU_TARGET_* numbers, exactly. The `A`
    /// targets (0x10000 plus the compute capability) use the architecture's accelerated
    /// features, the `F` targets (0x20000 plus it) its family's.
    pub enum JitTarget as cudyn_jit_target {
        /// compute_30 (CU_TARGET_COMPUTE_30).
        Compute30 = 30 => CUDYN_JIT_TARGET_COMPUTE_30, "compute_30";
        /// compute_32.
        Compute32 = 32 => CUDYN_JIT_TARGET_COMPUTE_32, "compute_32";
        /// compute_35.
        Compute35 = 35 => CUDYN_JIT_TARGET_COMPUTE_35, "compute_35";
        /// compute_37.
        Compute37 = 37 => CUDYN_JIT_TARGET_COMPUTE_37, "compute_37";
        /// compute_50.
        Compute50 = 50 => CUDYN_JIT_TARGET_COMPUTE_50, "compute_50";
        /// compute_52.
        Compute52 = 52 => CUDYN_JIT_TARGET_COMPUTE_52, "compute_52";
        /// compute_53.
        Compute53 = 53 => CUDYN_JIT_TARGET_COMPUTE_53, "compute_53";
        /// compute_60.
        Compute60 = 60 => CUDYN_JIT_TARGET_COMPUTE_60, "compute_60";
        /// compute_61.
        Compute61 = 61 => CUDYN_JIT_TARGET_COMPUTE_61, "compute_61";
        /// compute_62.
        Compute62 = 62 => CUDYN_JIT_TARGET_COMPUTE_62, "compute_62";
        /// compute_70.
        Compute70 = 70 => CUDYN_JIT_TARGET_COMPUTE_70, "compute_70";
        /// compute_72.
        Compute72 = 72 => CUDYN_JIT_TARGET_COMPUTE_72, "compute_72";
        /// compute_75.
        Compute75 = 75 => CUDYN_JIT_TARGET_COMPUTE_75, "compute_75";
        /// compute_80.
        Compute80 = 80 => CUDYN_JIT_TARGET_COMPUTE_80, "compute_80";
        /// compute_86.
        Compute86 = 86 => CUDYN_JIT_TARGET_COMPUTE_86, "compute_86";
        /// compute_87.
        Compute87 = 87 => CUDYN_JIT_TARGET_COMPUTE_87, "compute_87";
        /// compute_89.
        Compute89 = 89 => CUDYN_JIT_TARGET_COMPUTE_89, "compute_89";
        /// compute_90.
        Compute90 = 90 => CUDYN_JIT_TARGET_COMPUTE_90, "compute_90";
        /// compute_100.
        Compute100 = 100 => CUDYN_JIT_TARGET_COMPUTE_100, "compute_100";
        /// compute_103.
        Compute103 = 103 => CUDYN_JIT_TARGET_COMPUTE_103, "compute_103";
        /// compute_110.
        Compute110 = 110 => CUDYN_JIT_TARGET_COMPUTE_110, "compute_110";
        /// compute_120.
        Compute120 = 120 => CUDYN_JIT_TARGET_COMPUTE_120, "compute_120";
        /// compute_121.
        Compute121 = 121 => CUDYN_JIT_TARGET_COMPUTE_121, "compute_121";
        /// compute_90a (CU_TARGET_COMPUTE_90A, 0x10000 + 90).
        Compute90a = 65626 => CUDYN_JIT_TARGET_COMPUTE_90A, "compute_90a";
        /// compute_100a.
        Compute100a = 65636 => CUDYN_JIT_TARGET_COMPUTE_100A, "compute_100a";
        /// compute_103a.
        Compute103a = 65639 => CUDYN_JIT_TARGET_COMPUTE_103A, "compute_103a";
        /// compute_110a.
        Compute110a = 65646 => CUDYN_JIT_TARGET_COMPUTE_110A, "compute_110a";
        /// compute_120a.
        Compute120a = 65656 => CUDYN_JIT_TARGET_COMPUTE_120A, "compute_120a";
        /// compute_121a.
        Compute121a = 65657 => CUDYN_JIT_TARGET_COMPUTE_121A, "compute_121a";
        /// compute_100f (CU_TARGET_COMPUTE_100F, 0x20000 + 100).
        Compute100f = 131172 => CUDYN_JIT_TARGET_COMPUTE_100F, "compute_100f";
        /// compute_103f.
        Compute103f = 131175 => CUDYN_JIT_TARGET_COMPUTE_103F, "compute_103f";
        /// compute_110f.
        Compute110f = 131182 => CUDYN_JIT_TARGET_COMPUTE_110F, "compute_110f";
        /// compute_120f.
        Compute120f = 131192 => CUDYN_JIT_TARGET_COMPUTE_120F, "compute_120f";
        /// compute_121f.
        Compute121f = 131193 => CUDYN_JIT_TARGET_COMPUTE_121F, "compute_121f";
    }

    /// The value of CUDYN_LOAD_OPTION_FALLBACK_STRATEGY (CUjit_fallback).
    pub enum JitFallback as cudyn_jit_fallback {
        /// Compile the PTX when no cubin matches exactly (CU_PREFER_PTX).
        PreferPtx = 0 => CUDYN_JIT_PREFER_PTX, "prefer PTX";
        /// Use a compatible cubin when none matches exactly (CU_PREFER_BINARY).
        PreferBinary = 1 => CUDYN_JIT_PREFER_BINARY, "prefer binary";
    }

    /// The value of CUDYN_LOAD_OPTION_CACHE_MODE (CUjit_cacheMode).
    pub enum JitCacheMode as cudyn_jit_cache_mode {
        /// No -dlcm flag (CU_JIT_CACHE_OPTION_NONE).
        None = 0 => CUDYN_JIT_CACHE_OPTION_NONE, "no -dlcm";
        /// -dlcm=cg: L1 caching of global loads off (CU_JIT_CACHE_OPTION_CG).
        Cg = 1 => CUDYN_JIT_CACHE_OPTION_CG, "-dlcm=cg";
        /// -dlcm=ca: L1 caching of global loads on (CU_JIT_CACHE_OPTION_CA).
        Ca = 2 => CUDYN_JIT_CACHE_OPTION_CA, "-dlcm=ca";
    }

    /// Launch attributes (cudyn_launch_attribute.id), with CUDA's CU_LAUNCH_ATTRIBUTE_* numbers:
    /// every one CUDA 13.0 accepts at a launch. 3 (CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY) is
    /// a stream attribute and refused at a launch, as CUDA does; 15 is unassigned in CUDA 13.0.
    pub enum LaunchAttributeId as cudyn_launch_attribute_id {
        /// An entry to skip, any value (CU_LAUNCH_ATTRIBUTE_IGNORE); may appear any number of times.
        Ignore = 0 => CUDYN_LAUNCH_ATTRIBUTE_IGNORE, "ignore";
        /// value.access_policy_window: an L2 persistence window (CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW).
        AccessPolicyWindow = 1 => CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, "access policy window";
        /// value.cooperative: non-zero for a cooperative launch (CU_LAUNCH_ATTRIBUTE_COOPERATIVE).
        Cooperative = 2 => CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE, "cooperative";
        /// value.cluster_dim: the cluster shape, each extent at least 1 and dividing the grid's
        /// (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).
        ClusterDimension = 4 => CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, "cluster dimension";
        /// value.cluster_scheduling_policy_preference: a cudyn_cluster_scheduling_policy
        /// (CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE).
        ClusterSchedulingPolicyPreference = 5 => CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, "cluster scheduling policy preference";
        /// value.programmatic_stream_serialization_allowed: non-zero lets the kernel overlap the
        /// previous one in the stream (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).
        ProgrammaticStreamSerialization = 6 => CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, "programmatic stream serialization";
        /// value.programmatic_event: an event (created with timing disabled) recorded once every
        /// block triggered it (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT).
        ProgrammaticEvent = 7 => CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, "programmatic event";
        /// value.priority: the launch's priority, any int; lower is higher, CUDA clamps it to the
        /// device's range; 0 here is priority 0, not "unset" (CU_LAUNCH_ATTRIBUTE_PRIORITY).
        Priority = 8 => CUDYN_LAUNCH_ATTRIBUTE_PRIORITY, "priority";
        /// value.mem_sync_domain_map: domain ids for the default and remote domains
        /// (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP).
        MemSyncDomainMap = 9 => CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, "memory sync domain map";
        /// value.mem_sync_domain: a cudyn_mem_sync_domain (CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN).
        MemSyncDomain = 10 => CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN, "memory sync domain";
        /// value.preferred_cluster_dim: a substitute cluster shape, a multiple of the cluster
        /// dimension with the same z (CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION).
        PreferredClusterDimension = 11 => CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, "preferred cluster dimension";
        /// value.launch_completion_event: an event (created with timing disabled) recorded once
        /// every block has begun (CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT).
        LaunchCompletionEvent = 12 => CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, "launch completion event";
        /// value.device_updatable_kernel_node: 1 makes the graph node a launch captures
        /// device-updatable; its handle is written back into dev_node of the caller's entry.
        /// Only in a capturing stream (CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE).
        DeviceUpdatableKernelNode = 13 => CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, "device-updatable kernel node";
        /// value.shared_mem_carveout: the shared-memory carveout for this launch, percent 0-100
        /// (CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT).
        PreferredSharedMemoryCarveout = 14 => CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, "preferred shared memory carveout";
        /// value.nvlink_util_centric_scheduling: 1 to hint scheduling for NVLink traffic, 0 not
        /// (CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING).
        NvlinkUtilCentricScheduling = 16 => CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING, "NVLink-centric scheduling";
    }

    /// How an access policy window treats the lines it covers (CUaccessProperty).
    pub enum AccessProperty as cudyn_access_property {
        /// Normal cache persistence (CU_ACCESS_PROPERTY_NORMAL).
        Normal = 0 => CUDYN_ACCESS_PROPERTY_NORMAL, "normal";
        /// Streaming: less likely to persist (CU_ACCESS_PROPERTY_STREAMING).
        Streaming = 1 => CUDYN_ACCESS_PROPERTY_STREAMING, "streaming";
        /// Persisting: more likely to persist (CU_ACCESS_PROPERTY_PERSISTING).
        Persisting = 2 => CUDYN_ACCESS_PROPERTY_PERSISTING, "persisting";
    }

    /// Cluster scheduling policies (CUclusterSchedulingPolicy).
    pub enum ClusterSchedulingPolicy as cudyn_cluster_scheduling_policy {
        /// CUDA's default (CU_CLUSTER_SCHEDULING_POLICY_DEFAULT).
        Default = 0 => CUDYN_CLUSTER_SCHEDULING_POLICY_DEFAULT, "default";
        /// Spread a cluster's blocks over the SMs (CU_CLUSTER_SCHEDULING_POLICY_SPREAD).
        Spread = 1 => CUDYN_CLUSTER_SCHEDULING_POLICY_SPREAD, "spread";
        /// Let the hardware balance the load (CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING).
        LoadBalancing = 2 => CUDYN_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING, "load balancing";
    }

    /// Memory synchronisation domains (CUlaunchMemSyncDomain).
    pub enum MemSyncDomain as cudyn_mem_sync_domain {
        /// The default domain (CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT).
        Default = 0 => CUDYN_MEM_SYNC_DOMAIN_DEFAULT, "default";
        /// The remote domain (CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE).
        Remote = 1 => CUDYN_MEM_SYNC_DOMAIN_REMOTE, "remote";
    }

    /// A kernel's preferred split of L1 cache and shared memory (CUfunc_cache).
    pub enum FuncCache as cudyn_func_cache {
        /// No preference (CU_FUNC_CACHE_PREFER_NONE).
        PreferNone = 0 => CUDYN_FUNC_CACHE_PREFER_NONE, "prefer none";
        /// More shared memory, less L1 (CU_FUNC_CACHE_PREFER_SHARED).
        PreferShared = 1 => CUDYN_FUNC_CACHE_PREFER_SHARED, "prefer shared";
        /// More L1, less shared memory (CU_FUNC_CACHE_PREFER_L1).
        PreferL1 = 2 => CUDYN_FUNC_CACHE_PREFER_L1, "prefer L1";
        /// Equal L1 and shared memory (CU_FUNC_CACHE_PREFER_EQUAL).
        PreferEqual = 3 => CUDYN_FUNC_CACHE_PREFER_EQUAL, "prefer equal";
    }

    /// Flags of the occupancy calculator (CUoccupancy_flags).
    pub enum OccupancyFlags as cudyn_occupancy_flags {
        /// CUDA's default (CU_OCCUPANCY_DEFAULT).
        Default = 0 => CUDYN_OCCUPANCY_DEFAULT, "default";
        /// Where global caching affects occupancy, never fall back to computing without it
        /// (CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE).
        DisableCachingOverride = 1 => CUDYN_OCCUPANCY_DISABLE_CACHING_OVERRIDE, "disable caching override";
    }
}
