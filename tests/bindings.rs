//! The committed CUDA bindings (src/cuda/sys/cuda.rs) must be exactly what bindgen makes from the
//! pinned CUDA headers. `CUDYN_UPDATE_BINDINGS=1 cargo test --test bindings` rewrites them.

use std::path::PathBuf;

const HEADERS: &[&str] = &["cuda.h", "cuda_runtime_api.h", "nvrtc.h", "nvJitLink.h"];

/// Every CUDA function cudyn calls; each becomes a `PFN_<name>` pointer type.
const FUNCTIONS: &[&str] = &[
    // driver
    "cuGetProcAddress_v2",
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuStreamGetCtx",
    "cuLibraryLoadData",
    "cuLibraryUnload",
    "cuLibraryGetKernel",
    "cuLibraryGetKernelCount",
    "cuLibraryEnumerateKernels",
    "cuLibraryGetGlobal",
    "cuLibraryGetManaged",
    "cuLibraryGetModule",
    "cuLibraryGetUnifiedFunction",
    "cuKernelGetName",
    "cuKernelGetLibrary",
    "cuKernelGetParamInfo",
    "cuKernelGetFunction",
    "cuFuncLoad",
    "cuFuncIsLoaded",
    "cuKernelGetAttribute",
    "cuKernelSetAttribute",
    "cuKernelGetLibrary",
    "cuKernelSetCacheConfig",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cuOccupancyMaxPotentialBlockSizeWithFlags",
    "cuOccupancyAvailableDynamicSMemPerBlock",
    "cuOccupancyMaxPotentialClusterSize",
    "cuOccupancyMaxActiveClusters",
    "cuLaunchKernelEx",
    // runtime
    "cudaRuntimeGetVersion",
    "cudaGetErrorName",
    "cudaGetErrorString",
    "cudaLibraryLoadData",
    "cudaLibraryUnload",
    "cudaLibraryGetKernel",
    "cudaLibraryGetKernelCount",
    "cudaLibraryEnumerateKernels",
    "cudaLibraryGetManaged",
    "cudaLibraryGetUnifiedFunction",
    "cudaLaunchKernelExC",
    "cudaLaunchKernel",
    "cudaGetLastError",
    "cudaGetKernel",
    // NVRTC
    "nvrtcVersion",
    "nvrtcGetErrorString",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetLTOIRSize",
    "nvrtcGetLTOIR",
    "nvrtcAddNameExpression",
    "nvrtcGetLoweredName",
    // nvJitLink (the header's inline wrappers call these versioned exports)
    "nvJitLinkVersion",
    "__nvJitLinkCreate_13_0",
    "__nvJitLinkDestroy_13_0",
    "__nvJitLinkAddData_13_0",
    "__nvJitLinkComplete_13_0",
    "__nvJitLinkGetLinkedCubinSize_13_0",
    "__nvJitLinkGetLinkedCubin_13_0",
    "__nvJitLinkGetErrorLogSize_13_0",
    "__nvJitLinkGetErrorLog_13_0",
    "__nvJitLinkGetInfoLogSize_13_0",
    "__nvJitLinkGetInfoLog_13_0",
];

const TYPES: &[&str] = &[
    "CUresult",
    "cudaError_enum",
    "cudaError",
    "cudaError_t",
    "dim3",
    "CUlaunchConfig",
    "cudaLaunchConfig_t",
    "CUlaunchAttribute",
    "cudaLaunchAttribute",
    "CUlaunchAttributeID",
    "cudaLaunchAttributeID",
    "CUdevice_attribute",
    "CUfunction_attribute",
    "nvrtcResult",
    "nvJitLinkResult",
    "nvJitLinkInputType",
    "CUdriverProcAddressQueryResult",
    "cudaFunction_t",
    "cudaStream_t",
    "cudaKernel_t",
    "cudaLibrary_t",
    "CUkernel",
    "CUlibrary",
    "CUfunction",
    "CUstream",
    "CUmodule",
    "CUevent",
    "CUjit_target",
    "CUjit_fallback",
    "CUjit_cacheMode",
    "CUfunc_cache",
    "CUoccupancy_flags",
    "CUevent_record_flags",
    "CUlibraryHostUniversalFunctionAndDataTable",
    "cudaJitOption",
    "cudaLibraryOption",
];

fn cuda_root() -> PathBuf {
    let root = PathBuf::from(env!("CUDYN_CUDA_ROOT"));
    assert!(root.join("include/cuda.h").exists(), "no CUDA headers at {} (run scripts/bootstrap.sh)", root.display());
    root
}

/// bindgen prints `extern "C" { pub fn f(..) -> R; }`; cudyn never links these, it loads them,
/// so each prototype becomes a function-pointer type `PFN_f` with the same signature.
fn prototypes_to_pointer_types(src: &str) -> String {
    let mut out = String::new();
    let mut in_extern = false;
    for line in src.lines() {
        let t = line.trim_start();
        if !in_extern && (t == "extern \"C\" {" || t == "unsafe extern \"C\" {") {
            in_extern = true;
            continue;
        }
        if in_extern && line == "}" {
            in_extern = false;
            continue;
        }
        if in_extern {
            let body = line.strip_prefix("    ").unwrap_or(line);
            if let Some(rest) = body.strip_prefix("pub fn ") {
                let name_end = rest.find('(').expect("prototype without '('");
                let name = &rest[..name_end];
                out.push_str(&format!("pub type PFN_{name} = unsafe extern \"C\" fn{}\n", &rest[name_end..]));
            } else {
                out.push_str(body);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// pip's libclang has no resource folder, so stddef.h and friends come from the C compiler's.
fn compiler_builtin_includes() -> Option<String> {
    let out = std::process::Command::new("cc").arg("-print-file-name=include").output().ok()?;
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    std::path::Path::new(&dir).join("stddef.h").exists().then_some(dir)
}

fn generate() -> String {
    let inc = cuda_root().join("include");
    let mut wrapper = String::new();
    for h in HEADERS {
        wrapper.push_str(&format!("#include <{h}>\n"));
    }
    let mut b = bindgen::Builder::default()
        .header_contents("cudyn_bindings.h", &wrapper)
        .clang_arg(format!("-I{}", inc.display()))
        .clang_arg("-x")
        .clang_arg("c")
        .generate_comments(false)
        .layout_tests(true)
        .derive_default(true)
        .derive_debug(true)
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: false, is_global: false })
        .raw_line("// Generated by tests/bindings.rs from the pinned CUDA 13.0 headers. Do not edit.")
        .raw_line("// Regenerate: CUDYN_UPDATE_BINDINGS=1 cargo test --test bindings")
        .raw_line("#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, clippy::all)]");
    if let Some(dir) = compiler_builtin_includes() {
        b = b.clang_arg(format!("-isystem{dir}"));
    }
    for f in FUNCTIONS {
        b = b.allowlist_function(format!("^{f}$"));
    }
    for t in TYPES {
        b = b.allowlist_type(format!("^{t}$"));
    }
    let text = b.generate().expect("bindgen failed").to_string();
    prototypes_to_pointer_types(&text)
}

#[test]
fn bindings_match_pinned_headers() {
    let fresh = generate();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/cuda/sys/cuda.rs");
    if std::env::var("CUDYN_UPDATE_BINDINGS").as_deref() == Ok("1") {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "src/cuda/sys/cuda.rs differs from bindgen's output for the pinned headers (first at line {}).\n\
             committed: {:?}\nfresh:     {:?}\nRegenerate with CUDYN_UPDATE_BINDINGS=1 cargo test --test bindings",
            line + 1,
            committed.lines().nth(line),
            fresh.lines().nth(line)
        );
    }
}
