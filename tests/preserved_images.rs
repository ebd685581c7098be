//! CU_LIBRARY_BINARY_IS_PRESERVED as CUDA defines it: the image handed to CUDA stays readable and
//! unchanged until the unload. cudyn hands CUDA its own copy (the entries it checked,
//! decompressed; a file's bytes; PTX it gave a NUL) with the option set, and must keep that copy
//! alive until the unload; the caller's own bytes reach CUDA only as NUL-terminated PTX, in place
//! only when the caller asked. The stand-in driver (tests/standin/preserving.c) reads a preserved
//! image again at unload — with memcmp, which AddressSanitizer checks (scripts/sanitize.sh runs
//! this test under it) — and fails the unload when the bytes changed. Each scenario runs in a
//! child process of its own (one libcuda per process).

mod common;

use common::{child_mode, expect_child_ok, spawn_child, TempDir};
use cudyn::load_options::LoadOptionId;
use cudyn::{Api, Library, LoadOption};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;

struct Fixture {
    standin: PathBuf,
    cubin: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        common::require_project_env();
        // Under cargo's own scratch folder: the fixture lives in a static (never dropped).
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("preserved");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let standin = dir.join("libcuda.so.1");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/standin/preserving.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = std::process::Command::new(cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&standin)
            .arg(src)
            .status()
            .expect("running the C compiler");
        assert!(st.success(), "building the stand-in libcuda failed");
        let opts = cudyn::CompileOptions { options: vec!["-arch=sm_90".into()], ..Default::default() };
        let code = cudyn::compile::compile("extern \"C\" __global__ void k(int *p) { *p = 1; }\n", "k.cu", &opts)
            .expect("NVRTC compiles the kernel")
            .code;
        let cubin = dir.join("k.cubin");
        std::fs::write(&cubin, code).unwrap();
        Fixture { standin, cubin }
    })
}

fn in_child(name: &str) {
    let f = fixture();
    let env = [
        ("CUDYN_LIBCUDA", f.standin.to_str().unwrap()),
        ("CUDYN_TEST_CUBIN", f.cubin.to_str().unwrap()),
        ("CUDYN_CACHE", "0"),
    ];
    expect_child_ok(spawn_child(name, "child", &env), name);
}

struct Standin {
    last_image: unsafe extern "C" fn() -> *const c_void,
    last_preserved: unsafe extern "C" fn() -> i32,
    bad_unloads: unsafe extern "C" fn() -> i64,
}

fn standin() -> Standin {
    cudyn::device_count().expect("cudyn opens the stand-in driver");
    let path = std::ffi::CString::new(std::env::var("CUDYN_LIBCUDA").unwrap()).unwrap();
    // SAFETY: dlopen of the library cudyn opened (RTLD_NOLOAD: only if already loaded); the
    // symbols have the prototypes written above (preserving.c).
    unsafe {
        let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "the stand-in is not loaded");
        let sym = |n: &std::ffi::CStr| {
            let p = libc::dlsym(h, n.as_ptr());
            assert!(!p.is_null(), "{n:?}");
            p
        };
        Standin {
            last_image: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *const c_void>(sym(
                c"standin_last_image",
            )),
            last_preserved: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i32>(sym(
                c"standin_last_preserved",
            )),
            bad_unloads: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i64>(sym(c"standin_bad_unloads")),
        }
    }
}

impl Standin {
    fn last(&self) -> (*const u8, bool) {
        // SAFETY: plain getters.
        unsafe { ((self.last_image)().cast(), (self.last_preserved)() == 1) }
    }
    fn bad_unloads(&self) -> i64 {
        // SAFETY: a plain getter.
        unsafe { (self.bad_unloads)() }
    }
}

fn preserved(v: i64) -> LoadOption {
    LoadOption { id: LoadOptionId::BinaryIsPreserved as u32, value: v }
}

/// Whether `p` points into `buf`.
fn within(p: *const u8, buf: &[u8]) -> bool {
    buf.as_ptr_range().contains(&p)
}

/// Reuses freed memory: a block the size of `n` bytes, many times, written over.
fn churn(n: usize) {
    let v: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; n]).collect();
    std::hint::black_box(v);
}

fn cubin() -> Vec<u8> {
    std::fs::read(std::env::var("CUDYN_TEST_CUBIN").unwrap()).unwrap()
}

/// A cubin or fatbin from memory: CUDA reads cudyn's copy in place, whatever the caller asked,
/// and the caller may reuse their buffer at once.
#[test]
fn an_image_cudyn_built_outlives_the_callers_bytes() {
    if child_mode().is_none() {
        return in_child("an_image_cudyn_built_outlives_the_callers_bytes");
    }
    let s = standin();
    let c = cubin();
    let fat = cudyn::fuzzing::fatbin(&[cudyn::fuzzing::fatbin_entry(
        cudyn::fuzzing::FATBIN_KIND_ELF,
        90,
        cudyn::fuzzing::FATBIN_FLAGS_PLAIN,
        &c,
        cudyn::fuzzing::Packing::Zstd,
    )]);
    for (what, image) in [("cubin", c.clone()), ("zstd fatbin", fat)] {
        for opts in [vec![], vec![preserved(0)], vec![preserved(1)]] {
            let mut mine = image.clone();
            let lib =
                Library::load_data_with(&mine, Api::Driver, &opts, None).unwrap_or_else(|e| panic!("{what}: {e}"));
            let (p, kept) = s.last();
            assert!(kept, "{what} {opts:?}: cudyn's own copy is loaded with BINARY_IS_PRESERVED");
            assert!(!within(p, &mine), "{what} {opts:?}: CUDA was handed the caller's buffer");
            mine.fill(0xdd);
            drop(mine);
            churn(image.len());
            lib.unload().unwrap_or_else(|e| panic!("{what} {opts:?}: CUDA found its image changed: {e}"));
        }
    }
    assert_eq!(s.bad_unloads(), 0);
}

/// A file's bytes are cudyn's: freed when the load returns, so never handed over in place.
#[test]
fn a_files_bytes_are_not_read_after_the_load() {
    if child_mode().is_none() {
        return in_child("a_files_bytes_are_not_read_after_the_load");
    }
    let s = standin();
    let dir = TempDir::new("preserved-file");
    let ptx = dir.join("k.ptx");
    std::fs::write(&ptx, b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n\0")
        .unwrap();
    let cub = dir.join("k.cubin");
    std::fs::write(&cub, cubin()).unwrap();
    for path in [&ptx, &cub] {
        for opts in [vec![], vec![preserved(1)]] {
            let lib = Library::load_file_with(path, Api::Driver, &opts, None).unwrap_or_else(|e| panic!("{e}"));
            assert!(s.last().1, "{}: cudyn's copy is preserved", path.display());
            churn(4096);
            lib.unload().unwrap_or_else(|e| panic!("{} {opts:?}: {e}", path.display()));
        }
    }
    assert_eq!(s.bad_unloads(), 0);
}

/// PTX from memory: with its NUL, the caller's own bytes, in place only when the caller promised
/// (and the promise is theirs to keep); without it, cudyn's copy.
#[test]
fn ptx_is_read_in_place_only_when_the_caller_says_so() {
    if child_mode().is_none() {
        return in_child("ptx_is_read_in_place_only_when_the_caller_says_so");
    }
    let s = standin();
    let text = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
    let with_nul: Vec<u8> = text.iter().copied().chain([0]).collect();
    // Promised: CUDA reads the caller's buffer, which the caller keeps until the unload.
    let lib = Library::load_data_with(&with_nul, Api::Driver, &[preserved(1)], None).unwrap();
    assert_eq!(s.last(), (with_nul.as_ptr(), true));
    lib.unload().unwrap();
    // Not promised: handed over for CUDA to copy; the caller may reuse the buffer at once.
    let mut reused = with_nul.clone();
    let lib = Library::load_data_with(&reused, Api::Driver, &[], None).unwrap();
    assert_eq!(s.last(), (reused.as_ptr(), false));
    reused.fill(b' ');
    lib.unload().unwrap();
    // No NUL: cudyn's copy, preserved, whatever was asked.
    for opts in [vec![], vec![preserved(1)]] {
        let mut bare = text.to_vec();
        let lib = Library::load_data_with(&bare, Api::Driver, &opts, None).unwrap();
        let (p, kept) = s.last();
        assert!(kept && !within(p, &bare), "{opts:?}");
        bare.fill(b' ');
        drop(bare);
        churn(text.len() + 1);
        lib.unload().unwrap();
    }
    assert_eq!(s.bad_unloads(), 0);
}
