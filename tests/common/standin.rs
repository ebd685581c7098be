//! The stand-in libcuda of the handle tests (tests/standin/libcuda.c): built once per test
//! binary with a real cubin for cudyn to check, and its control functions and raw entry
//! points, found in the copy cudyn opened (tests/handles.rs, tests/handle_races.rs).

use cudyn::{Kernel, Library};
use std::ffi::{c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The stand-in library and a real cubin (the stand-in ignores the bytes; cudyn's image
/// validation does not).
pub struct Fixture {
    pub standin: PathBuf,
    pub cubin: PathBuf,
}

/// Built once per process, in cargo's scratch folder under this test binary's name (the
/// fixture lives in a static, never dropped: a folder under /tmp would be left behind).
pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        super::require_project_env();
        let exe = std::env::current_exe().unwrap();
        let tag = exe.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("standin-{tag}"));
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

/// What a child needs to run against the stand-in posing as driver `version` ("13000").
pub fn child_env(version: &str) -> Vec<(&'static str, String)> {
    let f = fixture();
    vec![
        ("CUDYN_LIBCUDA", f.standin.display().to_string()),
        ("CUDYN_STANDIN_VERSION", version.to_string()),
        ("CUDYN_TEST_CUBIN", f.cubin.display().to_string()),
        ("CUDYN_CACHE", "0".to_string()),
    ]
}

/// The fixture's cubin, in a child: `k0(int, int)`, as `cubin_for(&[2])`.
pub fn cubin() -> Vec<u8> {
    std::fs::read(std::env::var("CUDYN_TEST_CUBIN").unwrap()).unwrap()
}

/// A cubin whose kernels `k0`, `k1`, ... take `nparams[i]` ints each, as the stand-in says
/// its next library's do (`Standin::next`): cudyn reads an owned kernel's layout from the
/// image it built, so the image and the stand-in agree, as the image and CUDA do. Compiled
/// with NVRTC in the child, once per process for each list.
pub fn cubin_for(nparams: &[i32]) -> Vec<u8> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static MADE: OnceLock<Mutex<HashMap<Vec<i32>, Vec<u8>>>> = OnceLock::new();
    let mut made = MADE.get_or_init(Default::default).lock().unwrap();
    made.entry(nparams.to_vec())
        .or_insert_with(|| {
            let mut src = String::new();
            for (i, &n) in nparams.iter().enumerate() {
                let params: Vec<String> = (0..n).map(|j| format!("int a{j}")).collect();
                src += &format!("extern \"C\" __global__ void k{i}({}) {{}}\n", params.join(", "));
            }
            let opts = cudyn::CompileOptions { options: vec!["-arch=sm_90".into()], ..Default::default() };
            cudyn::compile::compile(&src, "k.cu", &opts).expect("NVRTC compiles the stand-in's kernels").code
        })
        .clone()
}

type LoadFn = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    *mut c_void,
    *mut c_void,
    u32,
    *mut c_void,
    *mut c_void,
    u32,
) -> i32;

/// The stand-in's control functions and raw entry points.
pub struct Standin {
    next_library: unsafe extern "C" fn(i32, *const i32),
    dead_library_uses: unsafe extern "C" fn() -> i64,
    dead_kernel_uses: unsafe extern "C" fn() -> i64,
    wrong_layout_launches: unsafe extern "C" fn() -> i64,
    launches: unsafe extern "C" fn() -> i64,
    list_calls: unsafe extern "C" fn() -> i64,
    param_calls: unsafe extern "C" fn() -> i64,
    calls: unsafe extern "C" fn() -> i64,
    occ_callbacks: unsafe extern "C" fn() -> i64,
    set_slow: unsafe extern "C" fn(i32),
    last_jit_options: unsafe extern "C" fn() -> i32,
    set_device_count: unsafe extern "C" fn(i32),
    set_kernel_count: unsafe extern "C" fn(u32),
    set_attribute_wait: unsafe extern "C" fn(i32),
    load: LoadFn,
    unload: unsafe extern "C" fn(*mut c_void) -> i32,
    get_kernel: unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const i8) -> i32,
}

/// The stand-in cudyn opened (in a child run with `child_env`).
pub fn standin() -> Standin {
    // Make cudyn open the driver first, so this finds the same copy.
    cudyn::cuda::driver::driver().expect("cudyn opens the stand-in driver");
    let path = CString::new(std::env::var("CUDYN_LIBCUDA").unwrap()).unwrap();
    // SAFETY: dlopen of a library already loaded; the symbols have the prototypes above
    // (libcuda.c).
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
            list_calls: std::mem::transmute(sym("standin_list_calls")),
            param_calls: std::mem::transmute(sym("standin_param_calls")),
            calls: std::mem::transmute(sym("standin_calls")),
            occ_callbacks: std::mem::transmute(sym("standin_occ_callbacks")),
            set_slow: std::mem::transmute(sym("standin_set_slow")),
            last_jit_options: std::mem::transmute(sym("standin_last_jit_options")),
            set_device_count: std::mem::transmute(sym("standin_set_device_count")),
            set_kernel_count: std::mem::transmute(sym("standin_set_kernel_count")),
            set_attribute_wait: std::mem::transmute(sym("standin_set_attribute_wait")),
            load: std::mem::transmute(sym("cuLibraryLoadData")),
            unload: std::mem::transmute(sym("cuLibraryUnload")),
            get_kernel: std::mem::transmute(sym("cuLibraryGetKernel")),
        }
    }
}

macro_rules! counter {
    ($($name:ident),*) => {$(
        pub fn $name(&self) -> i64 {
            // SAFETY: no arguments.
            unsafe { (self.$name)() }
        }
    )*};
}

impl Standin {
    counter!(
        dead_library_uses,
        dead_kernel_uses,
        wrong_layout_launches,
        launches,
        list_calls,
        param_calls,
        calls,
        occ_callbacks
    );

    /// The kernels of this thread's next load: names k0, k1, ..., with these parameter counts.
    pub fn next(&self, nparams: &[i32]) {
        // SAFETY: a count and that many ints.
        unsafe { (self.next_library)(nparams.len() as i32, nparams.as_ptr()) }
    }
    /// Widen every kernel query's and launch's window between entering and checking the handle
    /// (and cuKernelGetParamInfo's on its way back, cuLibraryGetKernel's and
    /// cuLibraryEnumerateKernels's before it) to about `us` microseconds.
    pub fn set_slow(&self, us: i32) {
        // SAFETY: a plain value.
        unsafe { (self.set_slow)(us) }
    }
    pub fn last_jit_options(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.last_jit_options)() }
    }
    /// The device count the driver reports (0: the real one, 1).
    pub fn set_device_count(&self, n: i32) {
        // SAFETY: a plain value.
        unsafe { (self.set_device_count)(n) }
    }
    /// The kernel count of every library the driver reports (0: the real one).
    pub fn set_kernel_count(&self, n: u32) {
        // SAFETY: a plain value.
        unsafe { (self.set_kernel_count)(n) }
    }
    /// How long each cuDeviceGetAttribute waits, in milliseconds.
    pub fn set_attribute_wait(&self, ms: i32) {
        // SAFETY: a plain value.
        unsafe { (self.set_attribute_wait)(ms) }
    }
    /// Load outside cudyn: a library of one kernel "k0" with `nparams` parameters.
    pub fn raw_load(&self, nparams: i32) -> (*mut c_void, Kernel) {
        self.next(&[nparams]);
        let mut l = std::ptr::null_mut();
        // SAFETY: valid out-pointers; the stand-in ignores the image.
        let r = unsafe {
            (self.load)(
                &mut l,
                [0u8; 4].as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(r, 0);
        let k = self.raw_kernel_in(l, c"k0");
        (l, k)
    }
    pub fn raw_unload(&self, l: *mut c_void) {
        // SAFETY: a live library this test loaded.
        assert_eq!(unsafe { (self.unload)(l) }, 0);
    }
    /// The raw `cuLibraryGetKernel` ("outside cudyn") of kernel `name` of library `lib`.
    pub fn raw_kernel_in(&self, lib: *mut c_void, name: &CStr) -> Kernel {
        let mut k = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, a live library, a NUL-terminated name.
        assert_eq!(unsafe { (self.get_kernel)(&mut k, lib, name.as_ptr()) }, 0);
        // SAFETY: a kernel the stand-in just returned for a live library.
        unsafe { Kernel::from_raw(k.cast()) }.unwrap()
    }
    /// `raw_kernel_in` for a library cudyn loaded.
    pub fn raw_kernel(&self, lib: &Library, name: &CStr) -> Kernel {
        self.raw_kernel_in(lib.as_raw().cast(), name)
    }
}
