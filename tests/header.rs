//! include/cudyn.h is committed; it must be exactly what cbindgen makes from the source now.
//! The header is generated only with the dev-header feature (Cargo.toml makes this test need
//! it); `CUDYN_UPDATE_HEADER=1 cargo build --features dev-header` rewrites it.

#[test]
fn committed_header_matches_fresh_generation() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/cudyn.h"));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/cudyn.h");
    let committed = std::fs::read_to_string(&path).expect("include/cudyn.h is missing");
    if committed != fresh {
        let line = committed.lines().zip(fresh.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "include/cudyn.h is stale (first difference at line {}):\n  committed: {:?}\n  generated: {:?}\n\
             Regenerate with: CUDYN_UPDATE_HEADER=1 cargo build --features dev-header",
            line + 1,
            committed.lines().nth(line),
            fresh.lines().nth(line)
        );
    }
}

#[test]
fn header_has_the_contract_names() {
    let h = include_str!(concat!(env!("OUT_DIR"), "/cudyn.h"));
    for name in [
        "cudyn_status_string",
        "cudyn_last_error_message",
        "cudyn_last_cuda_error",
        "typedef struct CUlib_st *cudyn_library_t",
        "typedef struct CUkern_st *cudyn_kernel_t",
        "typedef struct CUfunc_st *cudyn_function_t",
        "typedef struct CUstream_st *cudyn_stream_t",
        "cudyn_code_kind_of",
        "cudyn_buffer_free",
        "cudyn_library_load_data",
        "cudyn_library_load_file",
        "cudyn_library_load_source",
        "cudyn_library_unload",
        "cudyn_library_get_kernel",
        "cudyn_library_kernel_count",
        "cudyn_library_kernels",
        "cudyn_library_get_global",
        "cudyn_kernel_name",
        "cudyn_kernel_param_count",
        "cudyn_kernel_param_info",
        "cudyn_kernel_function",
        "cudyn_launch(",
        "cudyn_launch_checked",
        "cudyn_compile(",
        "cudyn_link(",
        "cudyn_versions(",
        "cudyn_version_string",
        "CUDYN_ERROR_INTERNAL = 16",
        "CUDYN_ERROR_AMBIGUOUS_NAME = 17",
        "CUDYN_API_DRIVER = 1",
        "CUDYN_CODE_SOURCE = 5",
        "CUDYN_CODE_LIBRARY = 7",
        "CUDYN_KERNEL_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15",
        "CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED = 8",
        "CUDYN_COMPONENT_NVJITLINK = 3",
        "typedef struct cudyn_launch_config",
        "typedef struct cudyn_dim3",
    ] {
        assert!(h.contains(name), "cudyn.h lacks {name}");
    }
    assert!(!h.contains("Raw"), "an internal Raw* alias leaked into cudyn.h");
    // The Rust names of the enums shared with C never reach the header.
    for rust in ["Status ", "CodeKind", "LoadOptionId", "enum Api", "Attribute "] {
        assert!(!h.contains(rust), "the Rust name {rust:?} leaked into cudyn.h");
    }
}

#[test]
fn header_enums_are_the_rust_tables() {
    let h = include_str!(concat!(env!("OUT_DIR"), "/cudyn.h"));
    let mut names = Vec::new();
    names.extend(cudyn::Status::ALL.iter().map(|&s| (s.c_name(), s as u32)));
    names.extend(cudyn::Api::ALL.iter().map(|&s| (s.c_name(), s as u32)));
    names.extend(cudyn::CodeKind::ALL.iter().map(|&s| (s.c_name(), s as u32)));
    names.extend(cudyn::kernel::Attribute::ALL.iter().map(|&s| (s.c_name(), s as u32)));
    names.extend(cudyn::load_options::LoadOptionId::ALL.iter().map(|&s| (s.c_name(), s as u32)));
    for (name, n) in names {
        assert!(h.contains(&format!("  {name} = {n},\n")), "cudyn.h lacks {name} = {n}");
    }
    let statuses = h.lines().filter(|l| l.trim_start().starts_with("CUDYN_ERROR_") && l.contains(" = ")).count();
    assert_eq!(statuses + 1, cudyn::Status::ALL.len(), "cudyn.h has a status the Rust table lacks");
}
