//! nvJitLink through cudyn, on a machine without a GPU: LTO-IR units linked with -lto, cubin +
//! PTX, missing symbols, bad inputs, and the C ABI (`cudyn_link`).
//!
//! Run with `source scripts/env.sh && cargo test --test link_nvjitlink`.

mod common;

use common::*;
use cudyn::capi::compile::{cudyn_buffer, cudyn_buffer_free, cudyn_link, cudyn_link_input};
use cudyn::capi::error::{cudyn_component_path, cudyn_last_error_message};
use cudyn::compile::{compile_with, CompileOptions};
use cudyn::image::{code_kind_of, inspect, ArchCode, CodeKind};
use cudyn::link::{link, LinkInput, Linked};
use cudyn::Status;
use std::ffi::CStr;
use std::ptr;

/// A device function in one unit...
const DEV: &str = "__device__ float twice(float x) { return 2.0f * x; }\n";
/// ...called by a kernel in another (its mangled name is _Z5twicef).
const KERNEL: &str = "extern __device__ float twice(float x);\n\
                      extern \"C\" __global__ void use_twice(float* p) { p[threadIdx.x] = twice(p[threadIdx.x]); }\n";
const TWICE: &str = "_Z5twicef";

fn unit(src: &str, kind: CodeKind, options: &[&str]) -> Vec<u8> {
    let opts = CompileOptions { options: strings(options), target: Some(kind), ..Default::default() };
    match compile_with(src, "unit.cu", &opts, None) {
        Ok(c) => {
            assert_eq!(c.kind, kind);
            c.code
        }
        Err(f) => panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log),
    }
}

fn linked(inputs: &[LinkInput<'_>], options: &[&str]) -> Linked {
    link(inputs, &strings(options))
        .unwrap_or_else(|f| panic!("link failed: {:?}: {}\nlog:\n{}", f.error.status, f.error.message, f.log))
}

fn input<'a>(kind: CodeKind, data: &'a [u8], name: &'a str) -> LinkInput<'a> {
    LinkInput { kind, data, name }
}

fn expected_default_sm() -> u32 {
    if cudyn::cuda::driver::driver_if_usable().is_none() {
        assert_eq!(cudyn::compile::default_sm(), 90);
    }
    cudyn::compile::default_sm()
}

fn last_error() -> String {
    // SAFETY: cudyn's last error message is a valid C string.
    unsafe { CStr::from_ptr(cudyn_last_error_message()) }.to_string_lossy().into_owned()
}

#[test]
fn nvjitlink_is_found_in_the_wheel_folder() {
    require_project_env();
    let jl = cudyn::cuda::nvjitlink::jitlink().unwrap_or_else(|e| panic!("{:?}: {}", e.status, e.message));
    assert_eq!(jl.version / 1000, 13, "{}", jl.version);
    let p = cudyn_component_path(3);
    assert!(!p.is_null());
    // SAFETY: static C string from cudyn.
    let p = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    assert!(p.contains("nvidia/cu13/lib/libnvJitLink.so.13"), "{p}");
}

#[test]
fn two_lto_ir_units_link_with_lto_into_a_cubin() {
    let sm = expected_default_sm();
    // NVRTC's -dlto (added by cudyn for the LTO-IR target) makes relocatable IR; -rdc=true is
    // what separate compilation asks for and is accepted alongside.
    let dev = unit(DEV, CodeKind::LtoIr, &["-rdc=true"]);
    let ker = unit(KERNEL, CodeKind::LtoIr, &["-rdc=true"]);
    for u in [&dev, &ker] {
        assert_eq!(inspect(u).unwrap().codes, vec![ArchCode::lto_ir(sm)]);
    }
    let l =
        linked(&[input(CodeKind::LtoIr, &dev, "dev.ltoir"), input(CodeKind::LtoIr, &ker, "kernel.ltoir")], &["-lto"]);
    assert_eq!(code_kind_of(&l.cubin), CodeKind::Cubin);
    let info = inspect(&l.cubin).unwrap();
    assert_eq!(info.kind, CodeKind::Cubin);
    assert_eq!(info.codes, vec![ArchCode::sass(sm)]);
    assert!(has_elf_string(&l.cubin, "use_twice"), "the kernel is not in the linked cubin");

    // An explicit architecture is used as given, for the units and the link.
    let dev80 = unit(DEV, CodeKind::LtoIr, &["-rdc=true", "-arch=sm_80"]);
    let ker80 = unit(KERNEL, CodeKind::LtoIr, &["-rdc=true", "-arch=sm_80"]);
    let l = linked(
        &[input(CodeKind::LtoIr, &dev80, "dev"), input(CodeKind::LtoIr, &ker80, "kernel")],
        &["-lto", "-arch=sm_80"],
    );
    assert_eq!(inspect(&l.cubin).unwrap().codes, vec![ArchCode::sass(80)]);
    assert!(has_elf_string(&l.cubin, "use_twice"));

    // LTO-IR needs -lto: without it nvJitLink refuses the input, and says so.
    let f = link(&[input(CodeKind::LtoIr, &dev, "dev.ltoir")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed);
    assert!(f.error.message.contains("dev.ltoir") && f.error.message.contains("-lto"), "{}", f.error.message);
    assert!(f.log.contains("-lto"), "{}", f.log);
}

#[test]
fn separate_compilation_to_cubin_needs_rdc() {
    // Without relocatable device code, the kernel's call to a function defined elsewhere
    // cannot be left for the linker: ptxas refuses it at compile time.
    let opts = CompileOptions { target: Some(CodeKind::Cubin), ..Default::default() };
    let f = compile_with(KERNEL, "kernel.cu", &opts, None).unwrap_err();
    assert_eq!(f.error.status, Status::CompileFailed);
    assert!(f.log.contains("Unresolved extern function") && f.log.contains(TWICE), "{}", f.log);
    // With -rdc=true it compiles, keeping the call as a relocation.
    let c = unit(KERNEL, CodeKind::Cubin, &["-rdc=true"]);
    assert!(has_elf_string(&c, TWICE), "the unresolved callee is not named in the relocatable cubin");
}

#[test]
fn cubin_and_ptx_link_into_a_cubin() {
    let sm = expected_default_sm();
    let dev = unit(DEV, CodeKind::Cubin, &["-rdc=true"]);
    let ker = unit(KERNEL, CodeKind::Ptx, &["-rdc=true"]);
    assert_eq!(inspect(&ker).unwrap().codes, vec![ArchCode::ptx(sm)]);
    let l = linked(&[input(CodeKind::Cubin, &dev, "dev.cubin"), input(CodeKind::Ptx, &ker, "kernel.ptx")], &[]);
    let info = inspect(&l.cubin).unwrap();
    assert_eq!(info.kind, CodeKind::Cubin);
    assert_eq!(info.codes, vec![ArchCode::sass(sm)]);
    assert!(has_elf_string(&l.cubin, "use_twice"));
    assert!(has_elf_string(&l.cubin, TWICE), "without LTO the callee stays a function of its own");
    // Inputs may come in any order.
    let l2 = linked(&[input(CodeKind::Ptx, &ker, "kernel.ptx"), input(CodeKind::Cubin, &dev, "dev.cubin")], &[]);
    assert_eq!(inspect(&l2.cubin).unwrap().codes, vec![ArchCode::sass(sm)]);
    assert!(has_elf_string(&l2.cubin, "use_twice"));
}

#[test]
fn missing_symbol_is_link_failed_with_the_log() {
    let ker = unit(KERNEL, CodeKind::Ptx, &["-rdc=true"]);
    let f = link(&[input(CodeKind::Ptx, &ker, "kernel.ptx")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert_ne!(f.error.cuda_code, 0);
    let err_line = f
        .log
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or_else(|| panic!("no error line in the log: {}", f.log))
        .trim();
    assert!(err_line.contains(TWICE), "{err_line}");
    assert!(f.error.message.contains(err_line), "message {:?} lacks the log's error {err_line:?}", f.error.message);
    // nvJitLink names the input the reference is in: the name cudyn handed it must still be
    // alive when nvJitLinkComplete reports (it is not copied).
    assert!(err_line.contains("in 'kernel.ptx'"), "{err_line}");
}

#[test]
fn missing_symbol_with_lto_is_link_failed() {
    const TEST: &str = "missing_symbol_with_lto_is_link_failed";
    // nvJitLink 13.0 fails this link inside its ptxas ("ptxas fatal") and is left in a state
    // where a later link with a duplicate definition crashes (SIGSEGV in nvJitLinkAddData,
    // reproduced without cudyn), so it runs in a process of its own.
    if child_mode().as_deref() != Some("lto-missing") {
        expect_child_ok(spawn_child(TEST, "lto-missing", &[]), "lto-missing");
        return;
    }
    let ker = unit(KERNEL, CodeKind::LtoIr, &[]);
    let f = link(&[input(CodeKind::LtoIr, &ker, "kernel.ltoir")], &strings(&["-lto"])).unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert!(f.error.message.contains(TWICE), "{}", f.error.message);
    assert!(f.log.contains(TWICE), "{}", f.log);
}

#[test]
fn empty_and_bad_inputs() {
    let f = link(&[], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
    assert!(f.error.message.contains("no inputs"), "{}", f.error.message);

    let dev = unit(DEV, CodeKind::Cubin, &["-rdc=true"]);
    // Device code cudyn's image checks refuse never reaches nvJitLink (whose reader crashed the
    // process on malformed cubins): an empty PTX, bytes that are no cubin, a cubin cut short,
    // and code given as another kind than it is.
    let f = link(&[input(CodeKind::Cubin, &dev, "dev"), input(CodeKind::Ptx, &[], "empty.ptx")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidImage);
    assert!(f.error.message.contains("empty.ptx"), "{}", f.error.message);
    let cut = &dev[..dev.len() / 2];
    for (data, name) in [(&b"not a cubin at all"[..], "junk.cubin"), (cut, "cut.cubin")] {
        let f = link(&[input(CodeKind::Cubin, &dev, "dev"), input(CodeKind::Cubin, data, name)], &[]).unwrap_err();
        assert_eq!(f.error.status, Status::InvalidImage, "{name}: {}", f.error.message);
        assert!(f.error.message.contains("input 1") && f.error.message.contains(name), "{}", f.error.message);
        assert!(f.log.is_empty(), "nvJitLink never saw it: {}", f.log);
    }
    let f =
        link(&[input(CodeKind::Cubin, &dev, "dev"), input(CodeKind::LtoIr, &dev, "cubin-as-lto")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
    assert!(f.error.message.contains("given as"), "{}", f.error.message);

    // SASS for another architecture than the link's is refused before nvJitLink: nvJitLink 13.0
    // refuses it itself, and then hangs every later link in the process (a lock of its own left
    // held). The next link here must still complete.
    let dev80 =
        unit("__device__ float thrice(float x) { return 3.0f * x; }\n", CodeKind::Cubin, &["-rdc=true", "-arch=sm_80"]);
    let f = link(
        &[input(CodeKind::Cubin, &dev, "dev"), input(CodeKind::Cubin, &dev80, "other-arch.cubin")],
        &strings(&["-arch=sm_90"]),
    )
    .unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
    assert!(
        f.error.message.contains("input 1")
            && f.error.message.contains("other-arch.cubin")
            && f.error.message.contains("sm_80")
            && f.error.message.contains("sm_90"),
        "{}",
        f.error.message
    );
    assert!(f.log.is_empty(), "nvJitLink saw it: {}", f.log);
    let (tx, rx) = std::sync::mpsc::channel();
    let d = dev.clone();
    std::thread::spawn(move || {
        let _ =
            tx.send(link(&[input(CodeKind::Cubin, &d, "dev")], &[cudyn::link::ALLOW_NO_KERNELS.to_string()]).is_ok());
    });
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(60)),
        Ok(true),
        "the next link did not complete: nvJitLink is stuck"
    );

    // Code nvJitLink refuses itself: its log, by input (PTX its assembler rejects).
    let bad_ptx =
        b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tno_such_instruction;\n}\n\0";
    let f = link(
        &[input(CodeKind::Cubin, &dev, "dev"), input(CodeKind::Ptx, bad_ptx, "junk.ptx")],
        &strings(&["-arch=sm_90"]),
    )
    .unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert!(f.error.message.contains("input 1") && f.error.message.contains("junk.ptx"), "{}", f.error.message);
    assert!(!f.log.is_empty());
    // The input's type by its C name, and set apart from the file name (nvJitLink's own log
    // runs them together: "NVJITLINK_INPUT_PTXjunk.ptx").
    for text in [&f.error.message, &f.log] {
        assert!(!text.contains("NVJITLINK_INPUT_PTXjunk"), "{text}");
    }
    assert!(f.error.message.contains("NVJITLINK_INPUT_PTX"), "{}", f.error.message);
    assert!(!f.error.message.contains("Ptx)"), "{}", f.error.message);

    // Options nvJitLink does not know, and NUL bytes, are the caller's mistake.
    let f = link(&[input(CodeKind::Cubin, &dev, "dev")], &strings(&["-no-such-link-option"])).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
    assert!(f.error.message.contains("-no-such-link-option"), "{}", f.error.message);
    let f = link(&[input(CodeKind::Cubin, &dev, "dev")], &strings(&["-lto\0"])).unwrap_err();
    assert_eq!(f.error.status, Status::InvalidArgument);
    assert!(f.error.message.contains("NUL"), "{}", f.error.message);

    // A relocatable cubin of device functions alone links to no kernel: refused, unless asked
    // for (a library of device globals).
    let f = link(&[input(CodeKind::Cubin, &dev, "dev")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed);
    assert!(f.error.message.contains("holds no kernel"), "{}", f.error.message);
    let l = linked(&[input(CodeKind::Cubin, &dev, "dev")], &[cudyn::link::ALLOW_NO_KERNELS]);
    assert_eq!(code_kind_of(&l.cubin), CodeKind::Cubin);
}

// ---------------------------------------------------------------------------------------------
// The C ABI

fn c_input(kind: u32, data: &[u8]) -> cudyn_link_input {
    cudyn_link_input { kind, data: data.as_ptr().cast(), size: data.len(), name: ptr::null() }
}

#[test]
fn c_link_success_and_failures() {
    let dev = unit(DEV, CodeKind::LtoIr, &["-rdc=true"]);
    let ker = unit(KERNEL, CodeKind::LtoIr, &["-rdc=true"]);
    let inputs = [c_input(4, &dev), c_input(4, &ker)];
    let lto = [c"-lto".as_ptr()];
    let mut cubin = cudyn_buffer { data: ptr::null_mut(), size: 0 };
    // SAFETY: arrays of the stated lengths, live data, valid out-pointers; NULL log and names
    // are allowed.
    let s = unsafe { cudyn_link(inputs.as_ptr(), 2, lto.as_ptr(), 1, &mut cubin, ptr::null_mut()) };
    assert_eq!(s, Status::Success, "{}", last_error());
    // SAFETY: cudyn filled the buffer.
    let bytes = unsafe { std::slice::from_raw_parts(cubin.data as *const u8, cubin.size) }.to_vec();
    assert_eq!(inspect(&bytes).unwrap().codes, vec![ArchCode::sass(expected_default_sm())]);
    assert!(has_elf_string(&bytes, "use_twice"));
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn_buffer_free(&mut cubin) };

    let sentinel = 0x1234 as *mut std::ffi::c_void;
    let mut out = cudyn_buffer { data: sentinel, size: 0 };
    let invalid = |s: Status, out: &cudyn_buffer, what: &str, needle: &str| {
        assert_eq!(s, Status::InvalidArgument, "{what}");
        assert_eq!(out.data, sentinel, "{what}: output written on failure");
        let m = last_error();
        assert!(m.contains(needle), "{what}: {m:?} lacks {needle:?}");
    };
    let src_kind = [c_input(5, &dev)];
    let bad_kind = [c_input(99, &dev)];
    let null_data = [cudyn_link_input { kind: 1, data: ptr::null(), size: 16, name: ptr::null() }];
    // SAFETY: each call has one deliberately bad argument for cudyn to refuse.
    unsafe {
        invalid(cudyn_link(ptr::null(), 0, ptr::null(), 0, &mut out, ptr::null_mut()), &out, "no inputs", "no inputs");
        invalid(
            cudyn_link(ptr::null(), 2, ptr::null(), 0, &mut out, ptr::null_mut()),
            &out,
            "NULL inputs with a count",
            "inputs",
        );
        invalid(
            cudyn_link(inputs.as_ptr(), 2, ptr::null(), 1, &mut out, ptr::null_mut()),
            &out,
            "NULL options with a count",
            "options",
        );
        invalid(
            cudyn_link(src_kind.as_ptr(), 1, ptr::null(), 0, &mut out, ptr::null_mut()),
            &out,
            "source input",
            "cannot be linked",
        );
        invalid(cudyn_link(bad_kind.as_ptr(), 1, ptr::null(), 0, &mut out, ptr::null_mut()), &out, "kind 99", "99");
        invalid(
            cudyn_link(null_data.as_ptr(), 1, ptr::null(), 0, &mut out, ptr::null_mut()),
            &out,
            "NULL data",
            "input data",
        );
        assert_eq!(
            cudyn_link(inputs.as_ptr(), 2, lto.as_ptr(), 1, ptr::null_mut(), ptr::null_mut()),
            Status::InvalidArgument
        );
    }

    // A missing symbol: LINK_FAILED, the log in the buffer, the error in the message, and the
    // default input name ("input0") quoted by nvJitLink.
    let ker_ptx = unit(KERNEL, CodeKind::Ptx, &["-rdc=true"]);
    let alone = [c_input(3, &ker_ptx)];
    let mut log = cudyn_buffer { data: ptr::null_mut(), size: 0 };
    // SAFETY: as above.
    let s = unsafe { cudyn_link(alone.as_ptr(), 1, ptr::null(), 0, &mut out, &mut log) };
    assert_eq!(s, Status::LinkFailed);
    assert_eq!(out.data, sentinel);
    // SAFETY: cudyn filled the log buffer.
    let log_text =
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(log.data as *const u8, log.size) }).into_owned();
    assert!(log_text.contains(TWICE) && log_text.contains("'input0'"), "{log_text}");
    let m = last_error();
    assert!(m.contains(TWICE), "{m}");
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn_buffer_free(&mut log) };
}

// ---------------------------------------------------------------------------------------------
// What nvJitLink takes and drops without a word

/// A kernel with nothing to resolve: it links on its own when relocatable.
const SIMPLE: &str = "extern \"C\" __global__ void simple(float *p) { p[threadIdx.x] = 1.0f; }\n";

#[test]
fn inputs_nvjitlink_would_drop_are_refused_by_name() {
    let exec = unit(SIMPLE, CodeKind::Cubin, &[]);
    let rdc = unit(SIMPLE, CodeKind::Cubin, &["-rdc=true"]);
    let ptx = unit(KERNEL, CodeKind::Ptx, &["-rdc=true"]);
    assert!(has_elf_string(&linked(&[input(CodeKind::Cubin, &rdc, "rdc.cubin")], &[]).cubin, "simple"));
    // An executable cubin, alone or beside PTX: nvJitLink would keep none of its kernels.
    for inputs in [
        vec![input(CodeKind::Cubin, &exec, "exec.cubin")],
        vec![input(CodeKind::Ptx, &ptx, "kernel.ptx"), input(CodeKind::Cubin, &exec, "exec.cubin")],
    ] {
        let f = link(&inputs, &[]).unwrap_err();
        assert_eq!(f.error.status, Status::InvalidArgument, "{}", f.error.message);
        let i = inputs.len() - 1;
        assert!(f.error.message.contains(&format!("link input {i} ('exec.cubin')")), "{}", f.error.message);
        assert!(f.error.message.contains("executable cubin") && f.error.message.contains("-rdc=true"));
        assert!(f.log.is_empty(), "nvJitLink ran: {}", f.log);
    }
    // The same symbol twice: nvJitLink writes an error to standard error and says success;
    // cudyn says failure, naming both inputs, and before nvJitLink runs.
    let f = link(&[input(CodeKind::Cubin, &rdc, "a.cubin"), input(CodeKind::Cubin, &rdc, "b.cubin")], &[]).unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert!(
        f.error.message.contains("multiple definition of 'simple': link inputs 0 ('a.cubin') and 1 ('b.cubin')"),
        "{}",
        f.error.message
    );
    // Twice through PTX, which cudyn does not read for definitions: the result shows it.
    let simple_ptx = unit(SIMPLE, CodeKind::Ptx, &["-rdc=true"]);
    let f = link(&[input(CodeKind::Ptx, &simple_ptx, "a.ptx"), input(CodeKind::Ptx, &simple_ptx, "b.ptx")], &[])
        .unwrap_err();
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert!(f.error.message.contains("defines kernel 'simple' more than once"), "{}", f.error.message);

    // The C API says the same.
    let one = [c_input(1, &exec)];
    let mut out = cudyn_buffer { data: ptr::null_mut(), size: 0 };
    // SAFETY: an array of one live input, a valid out-pointer.
    let s = unsafe { cudyn_link(one.as_ptr(), 1, ptr::null(), 0, &mut out, ptr::null_mut()) };
    assert_eq!(s, Status::InvalidArgument);
    assert!(out.data.is_null());
    let m = last_error();
    assert!(m.contains("link input 0 ('input0')") && m.contains("executable cubin"), "{m}");
    // Device functions alone: no kernel, refused unless the header's option says so.
    let dev = unit(DEV, CodeKind::Cubin, &["-rdc=true"]);
    let lib = [c_input(1, &dev)];
    // SAFETY: as above.
    let s = unsafe { cudyn_link(lib.as_ptr(), 1, ptr::null(), 0, &mut out, ptr::null_mut()) };
    assert_eq!(s, Status::LinkFailed);
    assert!(last_error().contains("holds no kernel"), "{}", last_error());
    assert!(include_str!("../include/cudyn.h").contains(cudyn::link::ALLOW_NO_KERNELS));
    let allow = std::ffi::CString::new(cudyn::link::ALLOW_NO_KERNELS).unwrap();
    let opts = [allow.as_ptr()];
    // SAFETY: as above, one option.
    let s = unsafe { cudyn_link(lib.as_ptr(), 1, opts.as_ptr(), 1, &mut out, ptr::null_mut()) };
    assert_eq!(s, Status::Success, "{}", last_error());
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn_buffer_free(&mut out) };
}

#[test]
fn host_objects_fatbins_and_archives_link_only_with_relocatable_device_code() {
    let dir = TempDir::new("link-host");
    let src = dir.join("simple.cu");
    let sm = format!("-arch=sm_{}", expected_default_sm());
    let whole_fatbin = nvcc(&src, SIMPLE, &dir.join("whole.fatbin"), &["-fatbin", &sm]);
    let rdc_fatbin = nvcc(&src, SIMPLE, &dir.join("rdc.fatbin"), &["-fatbin", "-rdc=true", &sm]);
    let whole_obj = nvcc(&src, SIMPLE, &dir.join("whole.o"), &["-c", &sm]);
    let rdc_obj = nvcc(&src, SIMPLE, &dir.join("rdc.o"), &["-dc", &sm]);
    std::fs::write(dir.join("host.c"), "int host_only(int x) { return x + 1; }\n").unwrap();
    let cc = std::process::Command::new("cc")
        .args(["-c", "-o"])
        .arg(dir.join("host.o"))
        .arg(dir.join("host.c"))
        .status()
        .unwrap();
    assert!(cc.success());
    let host_obj = std::fs::read(dir.join("host.o")).unwrap();
    let archive = |name: &str, member: &str| {
        let _ = std::fs::remove_file(dir.join(name));
        let st = std::process::Command::new("ar").arg("rcs").arg(dir.join(name)).arg(dir.join(member)).status();
        assert!(st.unwrap().success());
        std::fs::read(dir.join(name)).unwrap()
    };
    let rdc_lib = archive("librdc.a", "rdc.o");
    let host_lib = archive("libhost.a", "host.o");

    for (kind, data, name) in [
        (CodeKind::Fatbin, &rdc_fatbin, "rdc.fatbin"),
        (CodeKind::Object, &rdc_obj, "rdc.o"),
        (CodeKind::Library, &rdc_lib, "librdc.a"),
    ] {
        let l = linked(&[input(kind, data, name)], &[]);
        assert!(has_elf_string(&l.cubin, "simple"), "{name}: the kernel is not in the linked cubin");
    }
    for (kind, data, name, why) in [
        (CodeKind::Fatbin, &whole_fatbin, "whole.fatbin", "is an executable cubin"),
        (CodeKind::Object, &whole_obj, "whole.o", "device code is not relocatable (.nv_fatbin)"),
        (CodeKind::Object, &host_obj, "host.o", "a host object with no device code"),
        (CodeKind::Library, &host_lib, "libhost.a", "no device code in any member"),
        (CodeKind::Library, &rdc_obj, "rdc.o", "not a static library"),
        (CodeKind::Object, &rdc_lib, "librdc.a", "not an ELF object file"),
    ] {
        let f = link(&[input(kind, data, name)], &[]).unwrap_err();
        assert_eq!(f.error.status, Status::InvalidArgument, "{name}: {}", f.error.message);
        assert!(f.error.message.contains(&format!("('{name}')")), "{}", f.error.message);
        assert!(f.error.message.contains(why), "{name}: {}", f.error.message);
    }
}
