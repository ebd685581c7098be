//! Kernel and library handles against a stand-in libcuda that reuses addresses the way the
//! real driver does (tests/standin/libcuda.c): a launch is checked against the layout of the
//! kernel it launches, never one remembered for an earlier kernel at the same address; a
//! valid handle is never refused; a handle cudyn knows is dead is refused, and a library
//! cudyn unloaded is never handed to CUDA again. Each scenario runs in a child process of its
//! own (a process opens one libcuda), as a 13.0 driver and again posing as 12.4 (no
//! `cuKernelGetLibrary`).
//!
//! Most scenarios detach the bare handle (`lib.kernel(..)?.kernel()`) on purpose: it is the
//! handle C code holds, usable after its library is gone, so the run-time checks are what is
//! tested. The typed, borrowed launch (`LibraryKernel`) is tested at the end.

mod common;

use common::{child_mode, expect_child_ok, spawn_child};
use cudyn::launch::{launch, Dim3, LaunchConfig};
use cudyn::{Api, Kernel, Library, Status};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Built once per parent process: the stand-in library and a real cubin for cudyn to check
/// (the stand-in ignores the bytes; cudyn's image validation does not).
struct Fixture {
    standin: PathBuf,
    cubin: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        common::require_project_env();
        // Under cargo's own scratch folder: the fixture lives in a static (never dropped), so a
        // folder under /tmp would be left behind by every run.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("handles");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let standin = dir.join("libcuda.so.1");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/standin/libcuda.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = std::process::Command::new(cc)
            .args(["-shared", "-fPIC", "-O1", "-pthread", "-o"])
            .arg(&standin)
            .arg(src)
            .status()
            .expect("running the C compiler");
        assert!(st.success(), "building the stand-in libcuda failed");
        let opts = cudyn::CompileOptions { options: vec!["-arch=sm_90".into()], ..Default::default() };
        let code = cudyn::compile::compile("extern \"C\" __global__ void k0(int a, int b) {}\n", "k.cu", &opts)
            .expect("NVRTC compiles the placeholder kernel")
            .code;
        let cubin = dir.join("k.cubin");
        std::fs::write(&cubin, code).unwrap();
        Fixture { standin, cubin }
    })
}

/// Run test `name` as a child against the stand-in, as driver 13.0 and as driver 12.4.
fn in_children(name: &str) {
    let f = fixture();
    for version in ["13000", "12040"] {
        let child = spawn_child(
            name,
            version,
            &[
                ("CUDYN_LIBCUDA", f.standin.to_str().unwrap()),
                ("CUDYN_STANDIN_VERSION", version),
                ("CUDYN_TEST_CUBIN", f.cubin.to_str().unwrap()),
                ("CUDYN_CACHE", "0"),
            ],
        );
        expect_child_ok(child, &format!("{name} (driver {version})"));
    }
}

/// The stand-in's control functions and raw entry points, found in the copy cudyn opened.
struct Standin {
    next_library: unsafe extern "C" fn(i32, *const i32),
    dead_library_uses: unsafe extern "C" fn() -> i64,
    dead_kernel_uses: unsafe extern "C" fn() -> i64,
    wrong_layout_launches: unsafe extern "C" fn() -> i64,
    launches: unsafe extern "C" fn() -> i64,
    load: unsafe extern "C" fn(
        *mut *mut c_void,
        *const c_void,
        *mut c_void,
        *mut c_void,
        u32,
        *mut c_void,
        *mut c_void,
        u32,
    ) -> i32,
    unload: unsafe extern "C" fn(*mut c_void) -> i32,
    get_kernel: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const i8) -> i32,
}

fn standin() -> Standin {
    // Make cudyn open the driver first, so this finds the same copy.
    cudyn::cuda::driver::driver().expect("cudyn opens the stand-in driver");
    let path = CString::new(std::env::var("CUDYN_LIBCUDA").unwrap()).unwrap();
    // SAFETY: dlopen of a library already loaded; the symbols have the prototypes below (libcuda.c).
    unsafe {
        let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "the stand-in is loaded");
        let sym = |n: &str| {
            let c = CString::new(n).unwrap();
            let p = libc::dlsym(h, c.as_ptr());
            assert!(!p.is_null(), "{n}");
            p
        };
        Standin {
            next_library: std::mem::transmute(sym("standin_next_library")),
            dead_library_uses: std::mem::transmute(sym("standin_dead_library_uses")),
            dead_kernel_uses: std::mem::transmute(sym("standin_dead_kernel_uses")),
            wrong_layout_launches: std::mem::transmute(sym("standin_wrong_layout_launches")),
            launches: std::mem::transmute(sym("standin_launches")),
            load: std::mem::transmute(sym("cuLibraryLoadData")),
            unload: std::mem::transmute(sym("cuLibraryUnload")),
            get_kernel: std::mem::transmute(sym("cuLibraryGetKernel")),
        }
    }
}

impl Standin {
    fn next(&self, nparams: &[i32]) {
        // SAFETY: a count and that many ints.
        unsafe { (self.next_library)(nparams.len() as i32, nparams.as_ptr()) }
    }
    /// Load outside cudyn: a library of one kernel "k0" with `nparams` parameters.
    fn raw_load(&self, nparams: i32) -> (*mut c_void, Kernel) {
        self.next(&[nparams]);
        let (mut l, mut k) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid out-pointers; the stand-in ignores the image.
        unsafe {
            assert_eq!(
                (self.load)(
                    &mut l,
                    [0u8; 4].as_ptr().cast(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0
                ),
                0
            );
            assert_eq!((self.get_kernel)(&mut k, l, c"k0".as_ptr()), 0);
        }
        // SAFETY: a kernel the stand-in just returned for a live library.
        (l, unsafe { Kernel::from_raw(k.cast()) }.unwrap())
    }
    fn raw_unload(&self, l: *mut c_void) {
        // SAFETY: a live library this test loaded.
        assert_eq!(unsafe { (self.unload)(l) }, 0);
    }
    fn dead_library_uses(&self) -> i64 {
        // SAFETY: no arguments.
        unsafe { (self.dead_library_uses)() }
    }
    fn dead_kernel_uses(&self) -> i64 {
        // SAFETY: no arguments.
        unsafe { (self.dead_kernel_uses)() }
    }
    fn wrong_layout_launches(&self) -> i64 {
        // SAFETY: no arguments.
        unsafe { (self.wrong_layout_launches)() }
    }
    fn launches(&self) -> i64 {
        // SAFETY: no arguments.
        unsafe { (self.launches)() }
    }
}

/// `n` argument pointers ending exactly at a guard page: CUDA reading one more faults.
struct GuardedArgs {
    base: *mut c_void,
    page: usize,
    value: Box<i32>,
}

impl GuardedArgs {
    fn new(value: i32) -> GuardedArgs {
        // SAFETY: plain anonymous mapping of two pages; the second made inaccessible.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let base = libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(base, libc::MAP_FAILED);
            assert_eq!(libc::mprotect((base as *mut u8).add(page).cast(), page, libc::PROT_NONE), 0);
            GuardedArgs { base, page, value: Box::new(value) }
        }
    }
    /// `n` pointers to the value, the last one just before the guard page.
    fn args(&mut self, n: usize) -> &[*mut c_void] {
        let v = &mut *self.value as *mut i32 as *mut c_void;
        // SAFETY: n pointers fit in the first page (n is small), ending at its end.
        unsafe {
            let p = (self.base as *mut u8).add(self.page - n * 8) as *mut *mut c_void;
            for i in 0..n {
                p.add(i).write(v);
            }
            std::slice::from_raw_parts(p, n)
        }
    }
}

impl Drop for GuardedArgs {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.base, 2 * self.page) };
    }
}

fn driver_cfg() -> LaunchConfig {
    LaunchConfig { grid: Dim3::x(1), block: Dim3::x(1), api: Api::Driver as u32, ..Default::default() }
}

/// Launch `k` with `n` arguments, each holding `value` (the stand-in checks it against the
/// kernel's parameter count), the array ending at a guard page.
fn launch_n(k: Kernel, n: usize, value: i32) -> cudyn::Result<()> {
    let mut g = GuardedArgs::new(value);
    let args = g.args(n);
    // SAFETY: every argument points to a live int; k is a kernel of the stand-in (live, or one
    // cudyn unloaded: cudyn refuses those itself).
    unsafe { launch(k, &driver_cfg(), args, None) }
}

fn load_cudyn(s: &Standin, nparams: &[i32]) -> Library {
    s.next(nparams);
    let bytes = std::fs::read(std::env::var("CUDYN_TEST_CUBIN").unwrap()).unwrap();
    Library::load_data(&bytes, Api::Driver).expect("cudyn loads through the stand-in")
}

/// A foreign 2-parameter kernel launched through cudyn, its library unloaded outside cudyn,
/// then a cudyn load puts a 4-parameter kernel at the same address: the launch is checked
/// against 4 parameters, not the 2 seen before.
#[test]
fn a_reused_address_is_checked_against_the_new_kernel() {
    if child_mode().is_none() {
        return in_children("a_reused_address_is_checked_against_the_new_kernel");
    }
    let s = standin();
    let (l, foreign) = s.raw_load(2);
    launch_n(foreign, 2, 2).expect("a foreign kernel launches");
    launch_n(foreign, 2, 2).expect("and again");
    assert_eq!(launch_n(foreign, 3, 2).unwrap_err().status, Status::ArgumentMismatch);
    s.raw_unload(l);
    let lib = load_cudyn(&s, &[4]);
    let k = lib.kernel(c"k0").unwrap().kernel();
    assert_eq!(k, foreign, "the stand-in reuses the address, as CUDA does");
    launch_n(k, 4, 4).expect("the new kernel's own layout is the one checked");
    let e = launch_n(k, 2, 4).unwrap_err();
    assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
    assert!(e.message.contains("takes 4"), "{}", e.message);
    lib.unload().unwrap();
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// A cudyn load, launch and unload; the application then loads a library of its own that
/// gets the same kernel address. cudyn cannot tell that live handle from the dead one without
/// handing a possibly dead handle to CUDA (which can crash), so it refuses it with a message
/// that says what to do; once adopted, it launches, checked against its own layout.
#[test]
fn a_foreign_handle_at_a_dead_address_launches_once_adopted() {
    if child_mode().is_none() {
        return in_children("a_foreign_handle_at_a_dead_address_launches_once_adopted");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let old = lib.kernel(c"k0").unwrap().kernel();
    launch_n(old, 2, 2).unwrap();
    lib.unload().unwrap();
    let (l, k) = s.raw_load(4);
    assert_eq!(k, old, "the address was reused");
    let e = launch_n(k, 4, 4).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("cudyn_kernel_adopt"), "{}", e.message);
    // SAFETY: the library stays loaded until after release below.
    unsafe { k.adopt() }.unwrap();
    launch_n(k, 4, 4).expect("an adopted live handle launches");
    launch_n(k, 4, 4).expect("and again, from the remembered layout");
    assert_eq!(k.param_count().unwrap(), 4);
    assert_eq!(launch_n(k, 2, 4).unwrap_err().status, Status::ArgumentMismatch);
    assert!(k.release());
    s.raw_unload(l);
    assert_eq!(s.dead_kernel_uses(), 0, "a dead kernel was handed to CUDA");
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.dead_kernel_uses(), 0);
}

/// Use after unload through cudyn: the kernel is refused, the library is never handed to
/// CUDA again (the real driver crashes on a dead library handle), a second unload is refused.
#[test]
fn handles_cudyn_unloaded_are_refused_without_reaching_cuda() {
    if child_mode().is_none() {
        return in_children("handles_cudyn_unloaded_are_refused_without_reaching_cuda");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2, 3]);
    let raw = lib.as_raw();
    let k = lib.kernel(c"k1").unwrap().kernel();
    launch_n(k, 3, 3).unwrap();
    let before = s.launches();
    lib.unload().unwrap();
    let e = launch_n(k, 3, 3).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert_eq!(s.launches(), before, "nothing reached the launch");
    // SAFETY: a library cudyn unloaded: the contract allows it (refused without CUDA).
    let e = unsafe { cudyn::library::unload_raw(raw, Api::Driver) }.unwrap_err();
    assert!(e.message.contains("unloaded through cudyn"), "{}", e.message);
    // SAFETY: as above.
    unsafe {
        assert!(cudyn::library::get_kernel(raw, c"k0", Api::Driver).is_err());
        assert!(cudyn::library::kernel_count(raw).is_err());
        assert!(cudyn::library::kernels_of(raw).is_err());
    }
    assert_eq!(s.dead_library_uses(), 0, "a library cudyn unloaded was handed to CUDA");
    assert_eq!(s.dead_kernel_uses(), 0, "a kernel cudyn unloaded was handed to CUDA");
    // A cudyn load at the same addresses makes both live again, with the new layouts.
    let lib = load_cudyn(&s, &[1, 5]);
    assert_eq!(lib.as_raw(), raw);
    let k1 = lib.kernel(c"k1").unwrap().kernel();
    assert_eq!(k1, k);
    launch_n(k1, 5, 5).unwrap();
    assert_eq!(launch_n(k1, 3, 5).unwrap_err().status, Status::ArgumentMismatch);
    lib.unload().unwrap();
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.wrong_layout_launches(), 0);
}

/// Eight threads load, launch and unload libraries of different layouts at once, through
/// cudyn and around it; addresses are reused all the time. Every launch with the right
/// count succeeds and reaches CUDA with the kernel's own layout; wrong counts are refused.
#[test]
fn eight_threads_load_launch_and_unload() {
    if child_mode().is_none() {
        return in_children("eight_threads_load_launch_and_unload");
    }
    let s = standin();
    std::thread::scope(|sc| {
        for t in 0..8i32 {
            let s = &s;
            sc.spawn(move || {
                for i in 0..300i32 {
                    let n = 1 + (t + i) % 6;
                    if (t + i) % 3 == 0 {
                        // The program's own library, its kernel adopted (it may sit at an
                        // address a kernel cudyn unloaded had) and released before unloading.
                        let (l, k) = s.raw_load(n);
                        // SAFETY: released below, before the library is unloaded.
                        unsafe { k.adopt() }.unwrap();
                        launch_n(k, n as usize, n).unwrap();
                        assert_eq!(launch_n(k, n as usize + 1, n).unwrap_err().status, Status::ArgumentMismatch);
                        assert!(k.release());
                        s.raw_unload(l);
                    } else {
                        let lib = load_cudyn(s, &[n]);
                        let k = lib.kernel(c"k0").unwrap().kernel();
                        launch_n(k, n as usize, n).unwrap();
                        launch_n(k, n as usize, n).unwrap();
                        let e = launch_n(k, n as usize - 1, n).unwrap_err();
                        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
                        lib.unload().unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(s.wrong_layout_launches(), 0, "a launch was checked against another kernel's layout");
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.dead_kernel_uses(), 0);
}

/// The typed launch checks each argument's size against the kernel's parameter, not only the
/// count: a tuple of the right length with a wrongly sized value is refused before CUDA is
/// called, as is a tuple of the wrong length; a well-typed one launches.
#[test]
fn a_typed_launch_refuses_wrongly_sized_arguments() {
    if child_mode().is_none() {
        return in_children("a_typed_launch_refuses_wrongly_sized_arguments");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2, 3]);
    let k0 = lib.kernel(c"k0").unwrap();
    let k1 = lib.kernel(c"k1").unwrap();
    let cfg = driver_cfg();
    // SAFETY (every launch below): the stand-in's kernels read their int arguments only.
    unsafe { k0.launch(&cfg, (2i32, 2i32)) }.expect("two ints for two int parameters");
    unsafe { k1.launch(&cfg, (3i32, 3u32, 3i32)) }.expect("three 4-byte values for three int parameters");
    let before = s.launches();
    assert_eq!(before, 2);
    for _ in 0..2 {
        // Twice: the second time the layout comes from the launch table (the fast path).
        let e = unsafe { k0.launch(&cfg, (2i64, 2i32)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("argument 0 is 8 bytes but parameter 0 is 4 bytes"), "{}", e.message);
        let e = unsafe { k1.launch(&cfg, (3i32, 3i32, 3u8)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("argument 2 is 1 bytes"), "{}", e.message);
        let e = unsafe { k0.launch(&cfg, (2i32,)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("takes 2"), "{}", e.message);
        assert_eq!(unsafe { k0.launch(&cfg, ()) }.unwrap_err().status, Status::ArgumentMismatch);
        assert_eq!(k0.validate_launch(&cfg, &(2u64, 2i32)).unwrap_err().status, Status::ArgumentMismatch);
    }
    assert_eq!(s.launches(), before, "a refused launch reached CUDA");
    unsafe { k0.launch(&cfg, (2i32, 2i32)) }.expect("the right types still launch");
    assert_eq!(s.launches(), before + 1);
    drop(lib);
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// A kernel borrowed from its library works for as long as the library lives (queries, typed
/// launches, the listing); the bare handle detached from it is refused once the library is
/// dropped, without reaching CUDA. (That a borrowed kernel cannot outlive its library at all
/// is shown at compile time: the `compile_fail` doctests on `LibraryKernel`.)
#[test]
fn a_library_kernel_lives_as_long_as_its_library() {
    if child_mode().is_none() {
        return in_children("a_library_kernel_lives_as_long_as_its_library");
    }
    let s = standin();
    let cfg = driver_cfg();
    let lib = load_cudyn(&s, &[2, 4]);
    let k = lib.kernel(c"k0").unwrap();
    assert_eq!(k.name().unwrap().as_c_str(), c"k0");
    assert_eq!(k.param_count().unwrap(), 2);
    let all = lib.kernels().unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&k));
    let k1 = *all.iter().find(|x| **x != k).unwrap();
    assert_eq!(k1.param_count().unwrap(), 4);
    // SAFETY: the stand-in's kernels read their int arguments only.
    unsafe { k1.launch(&cfg, (4i32, 4i32, 4i32, 4i32)) }.unwrap();
    // SAFETY: as above.
    unsafe { k.launch(&cfg, (2i32, 2i32)) }.unwrap();
    let detached = k.kernel();
    let launched = s.launches();
    drop(lib);
    let e = detached.param_count().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert!(detached.name().is_err());
    // SAFETY: a kernel of a library cudyn unloaded: refused without calling CUDA.
    let e = unsafe { detached.launch(&cfg, (2i32, 2i32)) }.unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert_eq!(s.launches(), launched, "a kernel of a dropped library reached the launch");
    assert_eq!(s.dead_kernel_uses(), 0, "a kernel cudyn unloaded was handed to CUDA");
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.wrong_layout_launches(), 0);
}
