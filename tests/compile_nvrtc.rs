//! NVRTC through cudyn, on a machine without a GPU: every target, default and explicit
//! architectures, in-memory headers, name expressions, compile errors, bad arguments, where NVRTC
//! was found, and the C ABI (`cudyn_compile`, `cudyn_compile_ex`).
//!
//! Run with `source scripts/env.sh && cargo test --test compile_nvrtc`.

mod common;

use common::*;
use cudyn::capi::compile::{
    cudyn_buffer, cudyn_buffer_free, cudyn_code_kind_of, cudyn_compile, cudyn_compile_ex, cudyn_compile_options,
};
use cudyn::capi::error::{cudyn_component_path, cudyn_last_cuda_error, cudyn_last_error_message};
use cudyn::compile::{compile_with, CompileOptions, Compiled, DEFAULT_SM};
use cudyn::image::{code_kind_of, describe_codes, inspect, ArchCode, CodeKind};
use cudyn::Status;
use std::ffi::{c_char, CStr, CString};
use std::ptr;

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// NVRTC_ERROR_INVALID_OPTION and NVRTC_ERROR_COMPILATION (nvrtc.h).
const NVRTC_ERROR_INVALID_OPTION: i32 = 5;
const NVRTC_ERROR_COMPILATION: i32 = 6;

fn compile(src: &str, name: &str, opts: &CompileOptions) -> Compiled {
    match compile_with(src, name, opts, None) {
        Ok(c) => c,
        Err(f) => panic!("compiling {name} failed: {:?}: {}\nlog:\n{}", f.error.status, f.error.message, f.log),
    }
}

fn target(t: CodeKind, options: &[&str]) -> CompileOptions {
    CompileOptions { options: strings(options), target: Some(t), ..Default::default() }
}

/// The sm cudyn compiles for without -arch: the present GPU's, sm_90 without one.
fn expected_default_sm() -> u32 {
    if cudyn::cuda::driver::driver_if_usable().is_none() {
        assert_eq!(cudyn::compile::default_sm(), DEFAULT_SM);
        assert_eq!(DEFAULT_SM, 90);
    }
    cudyn::compile::default_sm()
}

fn cstr_of(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: cudyn returns NUL-terminated strings it keeps alive.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn buffer_bytes(b: &cudyn_buffer) -> Vec<u8> {
    assert!(!b.data.is_null());
    // SAFETY: cudyn filled data with size bytes (and a NUL after them).
    unsafe { std::slice::from_raw_parts(b.data as *const u8, b.size) }.to_vec()
}

fn empty_buffer() -> cudyn_buffer {
    cudyn_buffer { data: ptr::null_mut(), size: 0 }
}

fn zeroed_options() -> cudyn_compile_options {
    cudyn_compile_options {
        options: ptr::null(),
        num_options: 0,
        header_names: ptr::null(),
        header_sources: ptr::null(),
        num_headers: 0,
        name_expressions: ptr::null(),
        num_name_expressions: 0,
        target: 0,
        reserved: [0; 7],
    }
}

// ---------------------------------------------------------------------------------------------
// Where NVRTC comes from

#[test]
fn nvrtc_is_found_in_the_wheel_folder_without_ld_library_path() {
    const TEST: &str = "nvrtc_is_found_in_the_wheel_folder_without_ld_library_path";
    if child_mode().as_deref() == Some("nvrtc-location") {
        require_ld_library_path_unset();
        return nvrtc_location_checks();
    }
    require_project_env();
    assert!(std::env::var_os("PYTHONPATH").is_some(), "PYTHONPATH is unset: run via scripts/env.sh");
    // Here, under cargo (whose own LD_LIBRARY_PATH entries hold no CUDA library)...
    nvrtc_location_checks();
    // ...and in a process where LD_LIBRARY_PATH is not set at all.
    expect_child_ok(spawn_child(TEST, "nvrtc-location", &[]), "nvrtc-location");
}

fn nvrtc_location_checks() {
    let nv = cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("NVRTC not found: {:?}: {}", e.status, e.message));
    assert_eq!(nv.version / 1000, 13, "the pinned NVRTC is 13.x, found {}", nv.version);
    // Opened by absolute path from the wheel (not by soname through the system loader).
    assert!(nv.lib.origin.starts_with('/'), "NVRTC opened as {:?}", nv.lib.origin);
    let path = nv.lib.path().expect("dlinfo gives the path of NVRTC");
    let dir = path.parent().unwrap().to_path_buf();
    assert!(dir.ends_with("nvidia/cu13/lib"), "NVRTC loaded from {}", path.display());
    // The C ABI agrees.
    let c_path = cstr_of(cudyn_component_path(2));
    assert!(c_path.contains("nvidia/cu13/lib/libnvrtc.so.13"), "{c_path}");
    assert_eq!(std::path::Path::new(&c_path), path.as_path());

    // A compile works: NVRTC found its builtins library, which it opens by soname at compile
    // time; with LD_LIBRARY_PATH unset that only works thanks to cudyn's preload from the same
    // folder (without it: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, 7).
    let c = compile_with(SAXPY, "builtins.cu", &CompileOptions::default(), None).unwrap_or_else(|f| {
        panic!(
            "{:?} (code {}): {}\n{}\n(code 7, NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, means libnvrtc-builtins was not \
                 found: see preload_nvrtc_builtins in src/cuda/dl.rs)",
            f.error.status, f.error.cuda_code, f.error.message, f.log
        )
    });
    assert_eq!(c.kind, CodeKind::Cubin);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let builtins: Vec<&str> =
        maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.contains("libnvrtc-builtins")).collect();
    assert!(!builtins.is_empty(), "libnvrtc-builtins is not mapped after a compile");
    // /proc/self/maps names files by their real path; the folder may be reached through a
    // symlink (a worktree whose .toolchain links to another checkout's).
    let real_dir = std::fs::canonicalize(&dir).unwrap();
    for b in builtins {
        assert!(
            b.starts_with(real_dir.to_str().unwrap()),
            "builtins mapped from {b}, NVRTC from {}",
            real_dir.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Targets and architectures

#[test]
fn each_target_for_the_default_arch() {
    let sm = expected_default_sm();
    let cases = [
        (CodeKind::Cubin, ArchCode::sass(sm), format!("sm_{sm}")),
        (CodeKind::Ptx, ArchCode::ptx(sm), format!("compute_{sm}")),
        (CodeKind::LtoIr, ArchCode::lto_ir(sm), format!("lto_{sm}")),
    ];
    for (kind, code, text) in cases {
        let c = compile(SAXPY, "default.cu", &target(kind, &[]));
        assert_eq!(c.kind, kind);
        assert_eq!(c.sm, sm, "{kind}");
        assert!(!c.from_cache);
        assert_eq!(code_kind_of(&c.code), kind);
        let info = inspect(&c.code).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(info.kind, kind);
        assert_eq!(info.codes, vec![code], "{kind}");
        assert_eq!(describe_codes(&info.codes), text);
        match kind {
            CodeKind::Cubin => assert!(has_elf_string(&c.code, "saxpy"), "kernel name not in the cubin"),
            CodeKind::Ptx => {
                let t = String::from_utf8_lossy(&c.code);
                assert!(t.contains(&format!(".target sm_{sm}")), "{t}");
                assert!(t.contains(".entry saxpy("), "{t}");
            }
            _ => {}
        }
    }
}

#[test]
fn explicit_arch_is_honoured() {
    let cases: [(CodeKind, &[&str], ArchCode); 4] = [
        (CodeKind::Cubin, &["-arch=sm_80"], ArchCode::sass(80)),
        (CodeKind::Cubin, &["--gpu-architecture", "sm_86"], ArchCode::sass(86)),
        (CodeKind::Ptx, &["-arch=compute_80"], ArchCode::ptx(80)),
        (CodeKind::LtoIr, &["-arch=sm_80"], ArchCode::lto_ir(80)),
    ];
    for (kind, opts, code) in cases {
        let c = compile(SAXPY, "explicit.cu", &target(kind, opts));
        assert_eq!(c.kind, kind);
        assert_eq!(c.sm, code.sm(), "{opts:?}");
        let info = inspect(&c.code).unwrap();
        assert_eq!(info.kind, kind);
        assert_eq!(info.codes, vec![code], "{opts:?}: {}", describe_codes(&info.codes));
    }
    // A cubin needs a real architecture: refused before NVRTC is asked.
    let f = compile_with(SAXPY, "virtual.cu", &target(CodeKind::Cubin, &["-arch=compute_80"]), None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
    assert!(f.error.message.contains("compute_80"), "{}", f.error.message);
    // Fatbin and source are not compile targets.
    for k in [CodeKind::Fatbin, CodeKind::Source] {
        assert_eq!(
            compile_with(SAXPY, "t.cu", &target(k, &[]), None).unwrap_err().error.status,
            Status::InvalidArgument
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Headers and name expressions

const TEMPLATED: &str = AXPY_WITH_HEADER;

#[test]
fn in_memory_headers_and_name_expressions() {
    let opts = CompileOptions {
        headers: vec![("my.h".into(), MY_H.into())],
        name_expressions: strings(&["axpy<float>", "axpy<double>"]),
        ..Default::default()
    };
    let c = compile(TEMPLATED, "templated.cu", &opts);
    assert_eq!(c.lowered.len(), 2);
    assert_eq!(c.lowered[0].0, "axpy<float>");
    assert_eq!(c.lowered[1].0, "axpy<double>");
    let (f, d) = (&c.lowered[0].1, &c.lowered[1].1);
    assert_ne!(f, d);
    for l in [f, d] {
        assert!(l.starts_with("_Z") && l.contains("axpy"), "not a mangled name: {l}");
        assert!(has_elf_string(&c.code, l), "{l} is not a symbol of the cubin");
    }
    // Itanium mangling of the template argument: float is 'f', double is 'd'.
    assert!(f.contains("IfE") && d.contains("IdE"), "{f} / {d}");
    // Only what was named is instantiated.
    assert!(!c.code.windows(6).any(|w| w == b"IiEvT_"), "axpy<int> was instantiated");

    // Without the in-memory header the #include fails, and the log says which file.
    let no_header = CompileOptions { headers: vec![], ..opts.clone() };
    let f = compile_with(TEMPLATED, "templated.cu", &no_header, None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    assert!(f.log.contains("my.h"), "{}", f.log);

    // A name expression that names nothing: an error, not a silent empty name.
    let bogus = CompileOptions { name_expressions: strings(&["no_such_kernel<float>"]), ..opts };
    let f = compile_with(TEMPLATED, "templated.cu", &bogus, None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    assert!(
        f.error.message.contains("no_such_kernel") && f.log.contains("no_such_kernel"),
        "{}\n{}",
        f.error.message,
        f.log
    );
}

// ---------------------------------------------------------------------------------------------
// Failures

const BAD: &str = "extern \"C\" __global__ void k(int* p) {\n    int a = 1;\n    p[0] = undefined_thing + a;\n    p[1] = another_missing;\n}\n";

#[test]
fn compile_error_gives_first_error_in_message_and_full_log() {
    let f = compile_with(BAD, "bad.cu", &CompileOptions::default(), None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    assert_eq!(f.error.cuda_code, NVRTC_ERROR_COMPILATION);
    let first = f.log.lines().find(|l| l.contains("error")).expect("an error line in the log").trim();
    assert!(first.contains("bad.cu(3)") && first.contains("undefined_thing"), "{first}");
    assert!(f.error.message.contains(first), "message {:?} lacks {first:?}", f.error.message);
    assert!(f.error.message.contains("bad.cu"), "{}", f.error.message);
    // The message has the first error only; the log has all of them.
    assert!(!f.error.message.contains("another_missing"), "{}", f.error.message);
    assert!(f.log.contains("bad.cu(4)") && f.log.contains("another_missing"), "{}", f.log);
    assert!(f.log.contains("2 errors detected"), "{}", f.log);

    // A warning before the error whose text mentions "error" is not taken for it.
    let warned = "__device__ void f() { int error_count = 0; }\n\
                  extern \"C\" __global__ void k(int* p) { p[0] = undefined_thing; }\n";
    let f = compile_with(warned, "warned.cu", &CompileOptions::default(), None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    let warning = f.log.lines().position(|l| l.contains("warning") && l.contains("error_count"));
    let error = f.log.lines().position(|l| l.contains("warned.cu(2): error"));
    assert!(
        matches!((warning, error), (Some(w), Some(e)) if w < e),
        "the log no longer has the warning first:\n{}",
        f.log
    );
    assert!(
        f.error.message.contains("warned.cu(2): error") && f.error.message.contains("undefined_thing"),
        "{}",
        f.error.message
    );
    assert!(!f.error.message.contains("error_count"), "the message quotes the warning: {}", f.error.message);

    // A missing #include is NVRTC's "catastrophic error".
    let f = compile_with("#include \"not_there.h\"\n", "inc.cu", &CompileOptions::default(), None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    assert!(
        f.error.message.contains("inc.cu(1): catastrophic error") && f.error.message.contains("not_there.h"),
        "{}",
        f.error.message
    );
}

#[test]
fn unknown_option_is_an_invalid_argument() {
    let f = compile_with(SAXPY, "opt.cu", &target(CodeKind::Cubin, &["--no-such-option-xyz"]), None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
    assert_eq!(f.error.cuda_code, NVRTC_ERROR_INVALID_OPTION, "{}", f.error.message);
    assert!(
        f.error.message.contains("no-such-option-xyz") || f.log.contains("no-such-option-xyz"),
        "neither message nor log names the option: {} / {}",
        f.error.message,
        f.log
    );
    // An architecture NVRTC does not know is the same kind of mistake.
    let f = compile_with(SAXPY, "opt.cu", &target(CodeKind::Cubin, &["-arch=sm_12"]), None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
}

#[test]
fn nul_bytes_are_invalid_arguments() {
    let base = CompileOptions::default();
    let cases: Vec<(&str, &str, CompileOptions)> = vec![
        ("source", "extern \"C\" __global__ void k() {}\0// tail", base.clone()),
        ("option", SAXPY, CompileOptions { options: strings(&["-DN=1\0-DM=2"]), ..base.clone() }),
        ("header name", SAXPY, CompileOptions { headers: vec![("a\0.h".into(), "int x;".into())], ..base.clone() }),
        ("header", SAXPY, CompileOptions { headers: vec![("a.h".into(), "int x;\0".into())], ..base.clone() }),
        ("name expression", SAXPY, CompileOptions { name_expressions: strings(&["saxpy\0"]), ..base.clone() }),
    ];
    for (what, src, opts) in cases {
        let f = compile_with(src, "nul.cu", &opts, None).unwrap_err();
        assert_eq!(f.error.status, Status::InvalidArgument, "{what}: {}", f.error.message);
        assert!(f.error.message.contains("NUL"), "{what}: {}", f.error.message);
        assert!(f.error.message.contains(what), "{what}: {}", f.error.message);
    }
    let f = compile_with(SAXPY, "nul\0.cu", &base, None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// The C ABI

#[test]
fn c_compile_with_null_log_and_each_target() {
    let src = CString::new(SAXPY).unwrap();
    for (t, kind) in [(0u32, CodeKind::Cubin), (1, CodeKind::Cubin), (3, CodeKind::Ptx), (4, CodeKind::LtoIr)] {
        let mut code = empty_buffer();
        // SAFETY: valid strings and out-pointers; NULL name, options and log are allowed.
        let s = unsafe { cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, t, &mut code, ptr::null_mut()) };
        assert_eq!(s, Status::Success, "target {t}: {}", cstr_of(cudyn_last_error_message()));
        let bytes = buffer_bytes(&code);
        assert_eq!(code_kind_of(&bytes), kind, "target {t}");
        // The buffer has a NUL after its bytes, not counted in size.
        // SAFETY: cudyn allocates size + 1 bytes.
        assert_eq!(unsafe { *(code.data as *const u8).add(code.size) }, 0);
        let mut k = CodeKind::Unknown;
        // SAFETY: the buffer cudyn filled.
        assert_eq!(unsafe { cudyn_code_kind_of(code.data, code.size, &mut k) }, Status::Success);
        assert_eq!(k, kind);
        // SAFETY: a buffer cudyn filled; freeing twice is a no-op.
        unsafe {
            cudyn_buffer_free(&mut code);
            assert!(code.data.is_null() && code.size == 0);
            cudyn_buffer_free(&mut code);
            cudyn_buffer_free(ptr::null_mut());
        }
    }
    // With options, and a log buffer.
    let opt = CString::new("-arch=sm_80").unwrap();
    let opts = [opt.as_ptr()];
    let (mut code, mut log) = (empty_buffer(), empty_buffer());
    // SAFETY: as above.
    let s = unsafe { cudyn_compile(src.as_ptr(), c"named.cu".as_ptr(), opts.as_ptr(), 1, 1, &mut code, &mut log) };
    assert_eq!(s, Status::Success);
    assert_eq!(inspect(&buffer_bytes(&code)).unwrap().codes, vec![ArchCode::sass(80)]);
    assert!(!log.data.is_null(), "a log buffer is filled even when the log is empty");
    // SAFETY: buffers cudyn filled.
    unsafe {
        cudyn_buffer_free(&mut code);
        cudyn_buffer_free(&mut log);
    }
}

#[test]
fn c_compile_refuses_bad_arguments_and_leaves_outputs_alone() {
    let src = CString::new(SAXPY).unwrap();
    let sentinel = 0x5a5a as *mut std::ffi::c_void;
    let check = |s: Status, code: &cudyn_buffer, what: &str, needle: &str| {
        assert_eq!(s, Status::InvalidArgument, "{what}");
        assert_eq!(code.data, sentinel, "{what}: output written on failure");
        let msg = cstr_of(cudyn_last_error_message());
        assert!(msg.contains(needle), "{what}: message {msg:?} lacks {needle:?}");
    };
    let mut code = cudyn_buffer { data: sentinel, size: 7 };
    // SAFETY: each call passes a deliberately bad argument that cudyn must check, and otherwise
    // valid pointers.
    unsafe {
        check(
            cudyn_compile(ptr::null(), ptr::null(), ptr::null(), 0, 0, &mut code, ptr::null_mut()),
            &code,
            "NULL source",
            "source",
        );
        assert_eq!(
            cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, 0, ptr::null_mut(), ptr::null_mut()),
            Status::InvalidArgument
        );
        check(
            cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 2, 0, &mut code, ptr::null_mut()),
            &code,
            "NULL options with a count",
            "options",
        );
        let with_null = [c"-DX=1".as_ptr(), ptr::null()];
        check(
            cudyn_compile(src.as_ptr(), ptr::null(), with_null.as_ptr(), 2, 0, &mut code, ptr::null_mut()),
            &code,
            "a NULL option",
            "options[1]",
        );
        check(
            cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, 5, &mut code, ptr::null_mut()),
            &code,
            "target source",
            "CUDYN_CODE_SOURCE",
        );
        check(
            cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, 2, &mut code, ptr::null_mut()),
            &code,
            "target fatbin",
            "CUDYN_CODE_FATBIN",
        );
        check(
            cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, 99, &mut code, ptr::null_mut()),
            &code,
            "target 99",
            "99",
        );
        let latin1 = b"__global__ void k() {} // \xe9\0";
        check(
            cudyn_compile(latin1.as_ptr().cast(), ptr::null(), ptr::null(), 0, 0, &mut code, ptr::null_mut()),
            &code,
            "non-UTF-8 source",
            "UTF-8",
        );
        let unknown = [c"--no-such-option-xyz".as_ptr()];
        let s = cudyn_compile(src.as_ptr(), ptr::null(), unknown.as_ptr(), 1, 0, &mut code, ptr::null_mut());
        check(s, &code, "unknown option", "no-such-option-xyz");
        assert_eq!(cudyn_last_cuda_error(), NVRTC_ERROR_INVALID_OPTION);

        let mut o = zeroed_options();
        o.reserved[6] = 1;
        check(
            cudyn_compile_ex(src.as_ptr(), ptr::null(), &o, &mut code, ptr::null_mut(), ptr::null_mut()),
            &code,
            "nonzero reserved",
            "reserved",
        );
        let mut o = zeroed_options();
        o.num_headers = 1;
        check(
            cudyn_compile_ex(src.as_ptr(), ptr::null(), &o, &mut code, ptr::null_mut(), ptr::null_mut()),
            &code,
            "NULL headers with a count",
            "header_names",
        );
        let mut o = zeroed_options();
        o.num_name_expressions = 1;
        check(
            cudyn_compile_ex(src.as_ptr(), ptr::null(), &o, &mut code, ptr::null_mut(), ptr::null_mut()),
            &code,
            "NULL name expressions with a count",
            "name_expressions",
        );
    }
}

#[test]
fn c_compile_failure_fills_log_and_last_error() {
    let src = CString::new(BAD).unwrap();
    let mut code = cudyn_buffer { data: 0x77 as *mut _, size: 0 };
    let mut log = empty_buffer();
    // SAFETY: valid strings and out-pointers.
    let s = unsafe { cudyn_compile(src.as_ptr(), c"bad.cu".as_ptr(), ptr::null(), 0, 0, &mut code, &mut log) };
    assert_eq!(s, Status::CompileFailed);
    assert_eq!(cudyn_last_cuda_error(), NVRTC_ERROR_COMPILATION);
    assert_eq!(code.data as usize, 0x77, "code written on failure");
    let log_text = String::from_utf8(buffer_bytes(&log)).unwrap();
    assert!(log_text.contains("undefined_thing") && log_text.contains("another_missing"), "{log_text}");
    let msg = cstr_of(cudyn_last_error_message());
    assert!(msg.contains("bad.cu(3): error") && msg.contains("undefined_thing"), "{msg}");
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn_buffer_free(&mut log) };

    // The same failure with a NULL log: same status, nothing to free.
    // SAFETY: as above.
    let s = unsafe { cudyn_compile(src.as_ptr(), ptr::null(), ptr::null(), 0, 0, &mut code, ptr::null_mut()) };
    assert_eq!(s, Status::CompileFailed);
    assert!(cstr_of(cudyn_last_error_message()).contains("cudyn_program.cu"), "the default program name is used");
}

#[test]
fn c_compile_ex_headers_and_lowered_names() {
    let src = CString::new(TEMPLATED).unwrap();
    let (hn, hs) = (CString::new("my.h").unwrap(), CString::new(MY_H).unwrap());
    let (e1, e2) = (CString::new("axpy<float>").unwrap(), CString::new("axpy<double>").unwrap());
    let names = [hn.as_ptr()];
    let sources = [hs.as_ptr()];
    let exprs = [e1.as_ptr(), e2.as_ptr()];
    let mut o = zeroed_options();
    o.header_names = names.as_ptr();
    o.header_sources = sources.as_ptr();
    o.num_headers = 1;
    o.name_expressions = exprs.as_ptr();
    o.num_name_expressions = 2;
    o.target = 1;
    let (mut code, mut lowered) = (empty_buffer(), empty_buffer());
    // SAFETY: arrays of the stated lengths, valid out-pointers; NULL log allowed.
    let s = unsafe {
        cudyn_compile_ex(src.as_ptr(), c"templated.cu".as_ptr(), &o, &mut code, ptr::null_mut(), &mut lowered)
    };
    assert_eq!(s, Status::Success, "{}", cstr_of(cudyn_last_error_message()));
    let l = buffer_bytes(&lowered);
    let parts: Vec<&[u8]> = l.split(|&b| b == 0).collect();
    assert_eq!(parts.len(), 3, "two NUL-terminated names: {:?}", String::from_utf8_lossy(&l));
    assert!(parts[2].is_empty());
    let cubin = buffer_bytes(&code);
    for p in &parts[..2] {
        let name = std::str::from_utf8(p).unwrap();
        assert!(name.starts_with("_Z4axpy"), "{name}");
        assert!(has_elf_string(&cubin, name), "{name} not in the cubin");
    }
    assert_ne!(parts[0], parts[1]);
    // SAFETY: buffers cudyn filled.
    unsafe {
        cudyn_buffer_free(&mut code);
        cudyn_buffer_free(&mut lowered);
    }
    // A NULL options struct means the defaults (cubin for the default arch).
    let plain = CString::new(SAXPY).unwrap();
    let mut code = empty_buffer();
    // SAFETY: as above.
    let s = unsafe {
        cudyn_compile_ex(plain.as_ptr(), ptr::null(), ptr::null(), &mut code, ptr::null_mut(), ptr::null_mut())
    };
    assert_eq!(s, Status::Success);
    assert_eq!(inspect(&buffer_bytes(&code)).unwrap().codes, vec![ArchCode::sass(expected_default_sm())]);
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn_buffer_free(&mut code) };
}

// ---------------------------------------------------------------------------------------------
// Deep nesting: NVRTC's parser recurses per level

/// A kernel whose one expression nests `depth` parentheses.
fn nested_parens(depth: usize) -> String {
    format!("extern \"C\" __global__ void deep(int* p) {{ p[0] = {}1{}; }}\n", "(".repeat(depth), ")".repeat(depth))
}

#[test]
fn deep_nesting_compiles_on_a_small_stack_or_is_refused() {
    // On a thread with a small stack (1 MiB, less than a Rust thread's default) 10,000 nested
    // parentheses compiled: NVRTC runs on a thread of cudyn's with room for it. Before, 1,000
    // overflowed a 2 MiB stack and aborted the process.
    let ok = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| compile_with(&nested_parens(10_000), "deep.cu", &CompileOptions::default(), None))
        .unwrap()
        .join()
        .expect("the compile did not return");
    let c = ok.unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log));
    assert!(has_elf_string(&c.code, "deep"), "no kernel 'deep' in the cubin");

    // Deeper than NVRTC's stack can take: refused by name before NVRTC sees it, never an abort.
    let f = compile_with(&nested_parens(60_000), "deeper.cu", &CompileOptions::default(), None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
    assert!(f.error.message.contains("deeper.cu") && f.error.message.contains("60001 deep"), "{}", f.error.message);
    assert!(f.log.is_empty(), "NVRTC ran: {}", f.log);

    // The same in an in-memory header, and in a name expression (whose '<' nest too).
    let opts = CompileOptions { headers: vec![("deep.h".into(), nested_parens(60_000))], ..Default::default() };
    let f = compile_with(SAXPY, "h.cu", &opts, None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
    assert!(f.error.message.contains("deep.h"), "{}", f.error.message);
    let expr = format!("saxpy{}{}", "<".repeat(60_000), ">".repeat(60_000));
    let opts = CompileOptions { name_expressions: vec![expr], ..Default::default() };
    let f = compile_with(SAXPY, "n.cu", &opts, None).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
    assert!(f.error.message.contains("saxpy<<<"), "{}", f.error.message);
}
