//! `source::load_source` end to end without a GPU: on this machine (no driver) it fails with a
//! clear status, and against a stand-in libcuda that reports CUDA 12.8 it applies
//! `compile::check_loadable` (PTX from NVRTC 13 is refused before compiling) and compiles for
//! the device the driver reports.
//!
//! The stand-in is a few C functions built here with the system C compiler (`$CC`, else `cc`;
//! the crate's build script needs one too) and chosen with CUDYN_LIBCUDA in a child process, so
//! nothing of it leaks into other tests.
//!
//! Run with `source scripts/env.sh && cargo test --test source_version_skew`.

mod common;

use common::*;
use cudyn::capi::compile::{cudyn_buffer, cudyn_library_load_source};
use cudyn::compile::CompileOptions;
use cudyn::image::{inspect, ArchCode, CodeKind};
use cudyn::source::load_source;
use cudyn::{Api, Status};
use std::path::{Path, PathBuf};
use std::ptr;

const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n\
                     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n";

#[test]
fn load_source_on_this_machine_is_a_clear_error() {
    if cudyn::cuda::driver::driver_if_usable().is_some() {
        // A GPU machine: the same call simply works.
        let (lib, c) = load_source(SAXPY, "saxpy.cu", &CompileOptions::default(), Api::Driver)
            .unwrap_or_else(|f| panic!("{}", f.error.message));
        assert_eq!(c.kind, CodeKind::Cubin);
        drop(lib);
        return;
    }
    // No usable driver: the code compiles, then loading says why it cannot go further.
    let f = load_source(SAXPY, "saxpy.cu", &CompileOptions::default(), Api::Driver).unwrap_err();
    assert!(
        matches!(f.error.status, Status::DriverNotFound | Status::NoDevice),
        "{:?}: {}",
        f.error.status,
        f.error.message
    );
    assert!(f.error.message.contains("saxpy.cu"), "{}", f.error.message);
    assert!(f.error.message.contains("libcuda.so.1") || f.error.message.contains("device"), "{}", f.error.message);

    // Through the runtime (found in the wheel): with no driver at all the CUDA 13 runtime says
    // cudaErrorInsufficientDriver (35); cudyn reports what is really missing, the driver.
    let f = load_source(SAXPY, "saxpy.cu", &CompileOptions::default(), Api::Runtime).unwrap_err();
    assert!(
        matches!(f.error.status, Status::DriverNotFound | Status::NoDevice),
        "{:?} ({}): {}",
        f.error.status,
        f.error.cuda_code,
        f.error.message
    );
    assert!(f.error.message.contains("libcuda.so.1"), "{}", f.error.message);

    // The C ABI: the same status, the library output left alone, and a compile error is still
    // a compile error (it comes before loading).
    let src = std::ffi::CString::new(SAXPY).unwrap();
    let mut lib = 0x42 as cudyn::handles::LibraryHandle;
    // SAFETY: valid strings and out-pointers; NULL name, options and log are allowed.
    let s =
        unsafe { cudyn_library_load_source(src.as_ptr(), ptr::null(), ptr::null(), 0, 1, &mut lib, ptr::null_mut()) };
    assert!(matches!(s, Status::DriverNotFound | Status::NoDevice), "{s:?}");
    assert_eq!(lib as usize, 0x42);
    let bad = std::ffi::CString::new("__global__ void k() { nope; }").unwrap();
    let mut log = cudyn_buffer { data: ptr::null_mut(), size: 0 };
    // SAFETY: as above.
    let s = unsafe { cudyn_library_load_source(bad.as_ptr(), ptr::null(), ptr::null(), 0, 1, &mut lib, &mut log) };
    assert_eq!(s, Status::CompileFailed);
    assert!(!log.data.is_null());
    // SAFETY: a buffer cudyn filled.
    unsafe { cudyn::capi::compile::cudyn_buffer_free(&mut log) };
    // A bad api value is refused.
    // SAFETY: as above.
    let s =
        unsafe { cudyn_library_load_source(src.as_ptr(), ptr::null(), ptr::null(), 0, 7, &mut lib, ptr::null_mut()) };
    assert_eq!(s, Status::InvalidArgument);
}

/// A libcuda stand-in: driver version $FAKE_CUDA_VERSION, one device of compute capability 8.6,
/// and cuLibraryLoadData writing the image it is given to $FAKE_CUDA_DUMP (a cubin up to the end
/// of its section or program header table, whichever is last; PTX up to its NUL), then failing
/// with CUDA_ERROR_NOT_SUPPORTED (801).
const FAKE_LIBCUDA: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
typedef int CUresult;
static CUresult fake_init(unsigned flags) { (void)flags; return 0; }
static CUresult fake_version(int* v) { const char* e = getenv("FAKE_CUDA_VERSION"); *v = e ? atoi(e) : 12080; return 0; }
static CUresult fake_count(int* n) { *n = 1; return 0; }
static CUresult fake_get(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
static CUresult fake_attr(int* v, int attr, int dev) {
    if (dev != 0) return 101;
    if (attr == 75) { *v = 8; return 0; }
    if (attr == 76) { *v = 6; return 0; }
    *v = 0; return 0;
}
static CUresult fake_ctx_current(void** c) { *c = NULL; return 0; }
static CUresult fake_error_name(CUresult r, const char** s) { *s = r == 801 ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_UNKNOWN"; return 0; }
static CUresult fake_error_string(CUresult r, const char** s) { (void)r; *s = "stand-in driver"; return 0; }
static CUresult fake_load(void** lib, const void* code, void* a, void* b, unsigned c, void* d, void* e, unsigned f) {
    (void)lib; (void)a; (void)b; (void)c; (void)d; (void)e; (void)f;
    const unsigned char* p = code;
    size_t n;
    if (p[0] == 0x7f && p[1] == 'E') {
        uint64_t shoff, phoff, sh_end, ph_end; uint16_t shentsize, shnum, phentsize, phnum;
        memcpy(&phoff, p + 32, 8); memcpy(&phentsize, p + 54, 2); memcpy(&phnum, p + 56, 2);
        memcpy(&shoff, p + 40, 8); memcpy(&shentsize, p + 58, 2); memcpy(&shnum, p + 60, 2);
        sh_end = shoff + (uint64_t)shentsize * shnum;
        ph_end = phoff + (uint64_t)phentsize * phnum;
        n = (size_t)(sh_end > ph_end ? sh_end : ph_end);
    } else {
        n = strlen((const char*)p);
    }
    const char* out = getenv("FAKE_CUDA_DUMP");
    FILE* fp = out ? fopen(out, "wb") : NULL;
    if (fp) { fwrite(p, 1, n, fp); fclose(fp); }
    return 801;
}
CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int ver, uint64_t flags, int* status) {
    (void)ver; (void)flags;
    static const struct { const char* n; void* f; } t[] = {
        {"cuInit", (void*)fake_init}, {"cuDriverGetVersion", (void*)fake_version},
        {"cuDeviceGetCount", (void*)fake_count}, {"cuDeviceGet", (void*)fake_get},
        {"cuDeviceGetAttribute", (void*)fake_attr}, {"cuCtxGetCurrent", (void*)fake_ctx_current},
        {"cuGetErrorName", (void*)fake_error_name}, {"cuGetErrorString", (void*)fake_error_string},
        {"cuLibraryLoadData", (void*)fake_load},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (strcmp(sym, t[i].n) == 0) { *pfn = t[i].f; if (status) *status = 0; return 0; }
    }
    *pfn = NULL; if (status) *status = 1; return 500;
}
"#;

fn build_fake_libcuda(dir: &Path) -> PathBuf {
    let c = dir.join("fake_libcuda.c");
    let so = dir.join("libcuda.so.1");
    std::fs::write(&c, FAKE_LIBCUDA).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&so)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("running the C compiler '{cc}' (set CC): {e}"));
    assert!(out.status.success(), "building the stand-in libcuda failed:\n{}", String::from_utf8_lossy(&out.stderr));
    so
}

#[test]
fn load_source_applies_check_loadable() {
    const TEST: &str = "load_source_applies_check_loadable";
    if let Some(mode) = child_mode() {
        return skew_child(&mode);
    }
    let td = TempDir::new("skew");
    let so = build_fake_libcuda(td.path());
    let run = |mode: &str, version: &str| {
        let cache = td.join(&format!("cache-{mode}"));
        let dump = td.join(&format!("dump-{mode}"));
        let env = [
            ("CUDYN_LIBCUDA", so.to_str().unwrap()),
            ("FAKE_CUDA_VERSION", version),
            ("FAKE_CUDA_DUMP", dump.to_str().unwrap()),
            ("CUDYN_CACHE_DIR", cache.to_str().unwrap()),
            ("CUDYN_CACHE", "1"),
        ];
        spawn_child(TEST, mode, &env)
    };
    let older = run("older-driver", "12080");
    let same = run("same-driver", "13000");
    expect_child_ok(older, "older-driver");
    expect_child_ok(same, "same-driver");
}

fn skew_child(mode: &str) {
    let dump = PathBuf::from(std::env::var_os("FAKE_CUDA_DUMP").unwrap());
    let cache_dir = PathBuf::from(std::env::var_os("CUDYN_CACHE_DIR").unwrap());
    let d = cudyn::cuda::driver::driver_if_usable().expect("the stand-in driver is usable");
    assert_eq!(cudyn::compile::default_sm(), 86, "the default target is the driver's device");
    let nv = cudyn::cuda::nvrtc::nvrtc().unwrap();
    assert_eq!(nv.version, 13000, "this test assumes the pinned NVRTC 13.0");
    let ptx = CompileOptions { target: Some(CodeKind::Ptx), ..Default::default() };
    let cache_entries = || std::fs::read_dir(&cache_dir).map(|r| r.count()).unwrap_or(0);
    match mode {
        "older-driver" => {
            assert_eq!(d.version, 12080);
            // PTX from NVRTC 13.0 for a 12.8 driver: refused before anything is compiled.
            for (what, opts) in [
                ("PTX target", ptx),
                ("compute_ arch", CompileOptions { options: strings(&["-arch=compute_80"]), ..Default::default() }),
            ] {
                let f = load_source(SAXPY, "skew.cu", &opts, Api::Driver).unwrap_err();
                assert_eq!(f.error.status, Status::UnsupportedVersion, "{what}: {}", f.error.message);
                assert!(
                    f.error.message.contains("13.0") && f.error.message.contains("12.8"),
                    "{what}: {}",
                    f.error.message
                );
                assert!(!dump.exists(), "{what}: the driver was handed code");
                assert_eq!(cache_entries(), 0, "{what}: something was compiled");
            }
            // The default target (SASS for the device) is fine: compiled for sm_86 and handed to
            // the driver, whose refusal comes back as such.
            let f = load_source(SAXPY, "skew.cu", &CompileOptions::default(), Api::Driver).unwrap_err();
            assert_eq!(f.error.status, Status::Cuda, "{}", f.error.message);
            assert_eq!(f.error.cuda_code, 801);
            assert!(
                f.error.message.contains("skew.cu") && f.error.message.contains("CUDA_ERROR_NOT_SUPPORTED"),
                "{}",
                f.error.message
            );
            let code = std::fs::read(&dump).expect("the driver was handed the cubin");
            let info = inspect(&code).unwrap();
            assert_eq!((info.kind, info.codes), (CodeKind::Cubin, vec![ArchCode::sass(86)]));
        }
        "same-driver" => {
            assert_eq!(d.version, 13000);
            // A driver as new as NVRTC: the PTX is made and handed over.
            let f = load_source(SAXPY, "skew.cu", &ptx, Api::Driver).unwrap_err();
            assert_eq!(f.error.cuda_code, 801, "{}", f.error.message);
            let code = std::fs::read(&dump).expect("the driver was handed the PTX");
            let info = inspect(&code).unwrap();
            assert_eq!((info.kind, info.codes), (CodeKind::Ptx, vec![ArchCode::ptx(86)]));
            assert_eq!(cache_entries(), 1);
        }
        other => panic!("unknown child mode {other}"),
    }
}
