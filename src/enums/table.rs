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
    /// option an API does not take is refused with CUDYN_ERROR_INVALID_ARGUMENT.
    pub enum LoadOptionId as cudyn_load_option_id {
        /// JIT: registers per thread at most (1-255). Both APIs.
        MaxRegisters = 1 => CUDYN_LOAD_OPTION_MAX_REGISTERS, "max registers";
        /// JIT: optimisation level, 0-4 (CUDA's default is 4). Both APIs.
        OptimizationLevel = 2 => CUDYN_LOAD_OPTION_OPTIMIZATION_LEVEL, "optimization level";
        /// JIT: 1 to compile faster at the cost of code quality. Driver only.
        FastCompile = 3 => CUDYN_LOAD_OPTION_FAST_COMPILE, "fast compile";
        /// JIT: compile PTX for this compute capability, as major*10+minor (e.g. 90), instead
        /// of the current context's device. Driver only.
        Target = 4 => CUDYN_LOAD_OPTION_TARGET, "target";
        /// JIT: 1 to generate line-number information. Both APIs.
        GenerateLineInfo = 5 => CUDYN_LOAD_OPTION_GENERATE_LINE_INFO, "generate line info";
        /// JIT: 1 to generate debug information. Both APIs.
        GenerateDebugInfo = 6 => CUDYN_LOAD_OPTION_GENERATE_DEBUG_INFO, "generate debug info";
        /// JIT: 1 for a verbose info log (ptxas's register and memory report). Both APIs.
        LogVerbose = 7 => CUDYN_LOAD_OPTION_LOG_VERBOSE, "log verbose";
        /// Library: 1 to keep the image's bytes in CUDA's own memory, so the caller's copy need
        /// not outlive the load (CU_LIBRARY_BINARY_IS_PRESERVED). Both APIs.
        BinaryIsPreserved = 8 => CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED, "binary is preserved";
    }
}
