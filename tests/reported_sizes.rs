//! A library posing as NVRTC or nvJitLink that reports absurd sizes (a 2^40-byte log or
//! cubin, `SIZE_MAX`) gets a clear error or a note in the log, never an allocation of that
//! size and never an abort; a size under cudyn's bound whose memory cannot be had (an address
//! space limit in the child) is an error too.
//!
//! Each case runs in a child process with the fake library named by CUDYN_LIBNVRTC /
//! CUDYN_LIBNVJITLINK (the library search runs once per process).

mod common;

use common::*;
use cudyn::Status;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// C for a fake NVRTC 13.0 and nvJitLink 13.0 whose every size is the macro `SIZE`, with
/// writers that fill what they are given.
const FAKE: &str = r#"
#include <stddef.h>
#include <string.h>
#ifndef SIZE
#error SIZE
#endif
static const size_t size = (size_t)(SIZE);
int nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return 0; }
const char* nvrtcGetErrorString(int r) { return "fake error"; }
int nvrtcCreateProgram(void** p, const char* s, const char* n, int h, const char* const* b, const char* const* hn) { *p = (void*)1; return 0; }
int nvrtcDestroyProgram(void** p) { return 0; }
int nvrtcCompileProgram(void* p, int n, const char* const* o) { return 0; }
int nvrtcAddNameExpression(void* p, const char* e) { return 0; }
int nvrtcGetLoweredName(void* p, const char* e, const char** out) { *out = "_Z1fv"; return 0; }
int nvrtcGetProgramLogSize(void* p, size_t* n) { *n = size; return 0; }
int nvrtcGetProgramLog(void* p, char* b) { memset(b, 'L', size - 1); b[size - 1] = 0; return 0; }
int nvrtcGetCUBINSize(void* p, size_t* n) { *n = size; return 0; }
int nvrtcGetCUBIN(void* p, char* b) { memset(b, 0, size); return 0; }
int nvrtcGetPTXSize(void* p, size_t* n) { *n = size; return 0; }
int nvrtcGetPTX(void* p, char* b) { memset(b, 0, size); return 0; }
int nvrtcGetLTOIRSize(void* p, size_t* n) { *n = size; return 0; }
int nvrtcGetLTOIR(void* p, char* b) { memset(b, 0, size); return 0; }
int nvJitLinkVersion(unsigned* major, unsigned* minor) { *major = 13; *minor = 0; return 0; }
int nvJitLinkCreate(void** h, unsigned n, const char** o) { *h = (void*)1; return 0; }
int nvJitLinkDestroy(void** h) { return 0; }
int nvJitLinkAddData(void* h, int t, const void* d, size_t n, const char* name) { return 0; }
int nvJitLinkComplete(void* h) { return 0; }
int nvJitLinkGetLinkedCubinSize(void* h, size_t* n) { *n = size; return 0; }
int nvJitLinkGetLinkedCubin(void* h, void* b) { memset(b, 0, size); return 0; }
int nvJitLinkGetErrorLogSize(void* h, size_t* n) { *n = size; return 0; }
int nvJitLinkGetErrorLog(void* h, char* b) { memset(b, 'E', size - 1); b[size - 1] = 0; return 0; }
int nvJitLinkGetInfoLogSize(void* h, size_t* n) { *n = size; return 0; }
int nvJitLinkGetInfoLog(void* h, char* b) { memset(b, 'I', size - 1); b[size - 1] = 0; return 0; }
"#;

fn build_fake(dir: &Path, name: &str, size: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    fs::write(&c, FAKE).unwrap();
    let so = dir.join(format!("{name}.so"));
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(&c)
        .arg(format!("-DSIZE={size}"))
        .status()
        .expect("cc");
    assert!(st.success(), "building the fake library");
    fs::set_permissions(&so, fs::Permissions::from_mode(0o755)).unwrap();
    so
}

fn compile_fails(what: &str) {
    let f = cudyn::compile::compile_with(
        "__global__ void k() {}",
        "k.cu",
        &cudyn::CompileOptions { name_expressions: vec!["k".into()], ..Default::default() },
        None,
    )
    .expect_err("the fake NVRTC's cubin is refused");
    assert_eq!(f.error.status, Status::CompileFailed, "{}", f.error.message);
    assert!(f.error.message.contains(what), "'{what}' missing from: {}", f.error.message);
}

/// A real relocatable sm_90 cubin (made by the parent with nvcc, `CUDYN_TEST_LINK_CUBIN`): cudyn
/// checks link inputs before nvJitLink sees them, so the fake is reached only with real code.
fn link_input() -> Vec<u8> {
    fs::read(std::env::var("CUDYN_TEST_LINK_CUBIN").expect("the parent's cubin")).unwrap()
}

fn link_fails(what: &str) {
    let cubin = link_input();
    let input = cudyn::link::LinkInput { kind: cudyn::CodeKind::Cubin, data: &cubin, name: "a.cubin" };
    let f =
        cudyn::link::link(&[input], &["-arch=sm_90".to_string()]).expect_err("the fake nvJitLink's cubin is refused");
    assert_eq!(f.error.status, Status::LinkFailed, "{}", f.error.message);
    assert!(f.error.message.contains(what), "'{what}' missing from: {}", f.error.message);
}

/// Limits the child's address space to what it uses now plus `extra` bytes.
fn limit_address_space(extra: u64) {
    let maps = fs::read_to_string("/proc/self/status").unwrap();
    let vm_kib: u64 = maps
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status");
    let lim = libc::rlimit { rlim_cur: vm_kib * 1024 + extra, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: a valid rlimit; only this child process is limited.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
}

fn child(case: &str) {
    match case {
        // 2^40 and SIZE_MAX: over the bound; the log becomes a note, the code an error.
        "huge" => {
            let nv = cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("the fake NVRTC: {}", e.message));
            assert_eq!(nv.version, 13000);
            compile_fails("more than the 1073741824 bytes cudyn accepts");
            let f = cudyn::compile::compile_with("__global__ void k() {}", "k.cu", &Default::default(), None)
                .expect_err("refused");
            assert!(f.log.starts_with("(log not read: the library reported a log of"), "{}", f.log);
            link_fails("more than the 1073741824 bytes cudyn accepts");
        }
        // Under the bound (900 MiB of code, a 60 MiB log) with only 256 MiB of address space
        // left: the allocations fail, cleanly.
        "no-memory" => {
            cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("the fake NVRTC: {}", e.message));
            cudyn::cuda::nvjitlink::jitlink().unwrap_or_else(|e| panic!("the fake nvJitLink: {}", e.message));
            limit_address_space(256 << 20);
            compile_fails("cannot allocate 943718400 bytes for the cubin");
            link_fails("cannot allocate 943718400 bytes for the linked cubin");
        }
        // Sizes under the bound are read in full.
        "small" => {
            let c = cudyn::compile::compile_with("__global__ void k() {}", "k.cu", &Default::default(), None)
                .unwrap_or_else(|f| panic!("{f}"));
            assert_eq!(c.code.len(), 4096);
            assert_eq!(c.log, "L".repeat(4095));
            let cubin = link_input();
            let input = cudyn::link::LinkInput { kind: cudyn::CodeKind::Cubin, data: &cubin, name: "a.cubin" };
            // The fake's 4096 bytes are read in full, then checked as what a link must give (a
            // cubin holding a kernel): they are none, so the link fails on their contents,
            // with both logs read in full.
            let f = cudyn::link::link(&[input], &["-arch=sm_90".to_string()])
                .expect_err("the fake link's output is no cubin");
            assert!(
                f.error.message.contains("nvJitLink's output is not an image cudyn accepts"),
                "{}",
                f.error.message
            );
            assert!(f.log.ends_with(&"I".repeat(4095)), "the info log, read in full");
        }
        other => panic!("unknown case {other}"),
    }
}

#[test]
fn sizes_reported_by_nvrtc_and_nvjitlink_are_bounded_and_fallible() {
    const TEST: &str = "sizes_reported_by_nvrtc_and_nvjitlink_are_bounded_and_fallible";
    if let Some(case) = child_mode() {
        return child(&case);
    }
    let td = TempDir::new("sizes");
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let cubin = td.join("input.cubin");
    nvcc(
        &td.join("input.cu"),
        "__device__ int twice(int x) { return 2 * x; }\n",
        &cubin,
        &["-cubin", "-dc", "-arch=sm_90"],
    );
    let cubin = cubin.to_str().unwrap().to_string();
    for (case, sizes) in
        [("huge", &["(1ull << 40)", "(~(size_t)0)"][..]), ("no-memory", &["(900ull << 20)"]), ("small", &["4096"])]
    {
        for (i, size) in sizes.iter().enumerate() {
            let fake = build_fake(td.path(), &format!("fake-{case}-{i}"), size);
            let f = fake.to_str().unwrap();
            let child = spawn_child(
                TEST,
                case,
                &[
                    ("CUDYN_LIBNVRTC", f),
                    ("CUDYN_LIBNVJITLINK", f),
                    ("CUDYN_CACHE", "0"),
                    ("CUDYN_TEST_LINK_CUBIN", &cubin),
                ],
            );
            expect_child_ok(child, &format!("{case} with size {size}"));
        }
    }
}
