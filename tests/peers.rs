//! Kernels by C++ name in a loaded library, and eager preloading across devices, against a
//! stand-in libcuda (tests/standin_peers/libcuda.c) that holds the kernel names of a real nvcc
//! cubin, has three devices and records what was loaded where: the fallback from the exact
//! symbol to the C++ name through Rust and C, and that a preload loads every kernel on the
//! devices named and no other, restores the thread's context, checks every device number
//! first, and fails naming the device and the kernel. Each scenario runs in a child process
//! of its own (a process opens one libcuda).
//!
//! The GPU half is at the end: it runs on a real GPU (it skips without one, and fails under
//! CUDYN_REQUIRE_GPU=1 when it cannot find one).

mod common;

use common::{child_mode, expect_child_ok, nvcc, spawn_child};
use cudyn::capi::library::cudyn_library_get_kernel;
use cudyn::capi::names::{cudyn_demangle, cudyn_library_find_kernel};
use cudyn::capi::preload::cudyn_library_preload;
use cudyn::{Api, Library, Status};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

const SOURCE: &str = include_str!("../cpp-tests/kernels/peers_kernels.cu");

struct Fixture {
    standin: PathBuf,
    cubin: PathBuf,
    kernels: String,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        common::require_project_env();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let standin = dir.join("libcuda.so.1");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/standin_peers/libcuda.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = std::process::Command::new(cc)
            .args(["-shared", "-fPIC", "-O1", "-pthread", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&standin)
            .arg(src)
            .status()
            .expect("running the C compiler");
        assert!(st.success(), "building the stand-in libcuda failed");
        let cubin = dir.join("peers_kernels.sm_90.cubin");
        let code = nvcc(&dir.join("peers_kernels.cu"), SOURCE, &cubin, &["-cubin", "-arch=sm_90"]);
        let names: Vec<String> = cudyn::image::contents::contents(&code).kernels.into_iter().map(|k| k.name).collect();
        assert_eq!(names.len(), 18, "{names:?}");
        Fixture { standin, cubin, kernels: names.join(",") }
    })
}

/// Run test `name` as a child against the stand-in with `env` added.
fn in_child(name: &str, env: &[(&str, &str)]) {
    let f = fixture();
    let mut all = vec![
        ("CUDYN_LIBCUDA", f.standin.to_str().unwrap()),
        ("CUDYN_STANDIN_KERNELS", f.kernels.as_str()),
        ("CUDYN_STANDIN_DEVICES", "3"),
        ("CUDYN_TEST_CUBIN", f.cubin.to_str().unwrap()),
        ("CUDYN_CACHE", "0"),
    ];
    all.extend_from_slice(env);
    expect_child_ok(spawn_child(name, "standin", &all), name);
}

/// The stand-in's observation and control functions, found in the copy cudyn opened.
struct Standin {
    loaded: unsafe extern "C" fn(i32, i32) -> i32,
    modules: unsafe extern "C" fn(i32, i32) -> i32,
    retains: unsafe extern "C" fn(i32) -> i32,
    dead_library_uses: unsafe extern "C" fn() -> i64,
    make_current: unsafe extern "C" fn(i32),
    current_device: unsafe extern "C" fn() -> i32,
    slot: unsafe extern "C" fn(*mut c_void) -> i32,
}

fn standin() -> Standin {
    cudyn::cuda::driver::driver().expect("cudyn opens the stand-in driver");
    let path = CString::new(std::env::var("CUDYN_LIBCUDA").unwrap()).unwrap();
    // SAFETY: dlopen of a library already loaded; the symbols have the prototypes below
    // (tests/standin_peers/libcuda.c).
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
            loaded: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(i32, i32) -> i32>(sym("standin_loaded")),
            modules: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(i32, i32) -> i32>(sym("standin_modules")),
            retains: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(i32) -> i32>(sym("standin_retains")),
            dead_library_uses: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i64>(sym(
                "standin_dead_library_uses",
            )),
            make_current: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(i32)>(sym("standin_make_current")),
            current_device: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i32>(sym(
                "standin_current_device",
            )),
            slot: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void) -> i32>(sym(
                "standin_library_slot",
            )),
        }
    }
}

impl Standin {
    /// Kernels of `lib` loaded on `dev`, and its module loads there.
    fn on(&self, lib: &Library, dev: i32) -> (i32, i32) {
        // SAFETY: plain values; the library handle is only compared.
        unsafe {
            let s = (self.slot)(lib.as_raw().cast());
            ((self.loaded)(s, dev), (self.modules)(s, dev))
        }
    }
    fn set_current(&self, dev: i32) {
        // SAFETY: a plain value.
        unsafe { (self.make_current)(dev) }
    }
    fn current(&self) -> i32 {
        // SAFETY: no arguments.
        unsafe { (self.current_device)() }
    }
    fn retains(&self, dev: i32) -> i32 {
        // SAFETY: a plain value.
        unsafe { (self.retains)(dev) }
    }
    fn dead_uses(&self) -> i64 {
        // SAFETY: no arguments.
        unsafe { (self.dead_library_uses)() }
    }
}

fn load() -> Library {
    let bytes = std::fs::read(std::env::var("CUDYN_TEST_CUBIN").unwrap()).unwrap();
    Library::load_data(&bytes, Api::Driver).expect("cudyn loads through the stand-in")
}

const NKERNELS: i32 = 18;

#[test]
fn cxx_names_find_kernels_of_a_loaded_library() {
    if child_mode().is_none() {
        return in_child("cxx_names_find_kernels_of_a_loaded_library", &[]);
    }
    let s = standin();
    let lib = load();
    let by_symbol = lib.kernel(c"_Z4axpyIfEvPT_S0_i").unwrap();
    assert_eq!(lib.kernel(c"axpy<float>").unwrap(), by_symbol);
    assert_eq!(lib.kernel(c"axpy<float>(float*, float, int)").unwrap(), by_symbol);
    assert_eq!(lib.kernel(c"plain").unwrap().name().unwrap().to_str().unwrap(), "plain");
    assert_eq!(lib.kernel(c"scale(double *, double)").unwrap().name().unwrap().to_str().unwrap(), "_Z5scalePdd");
    let e = lib.kernel(c"scale").unwrap_err();
    assert_eq!(e.status, Status::AmbiguousName, "{}", e.message);
    assert!(e.message.contains("[_Z5scalePff]") && e.message.contains("[_Z5scalePdd]"), "{}", e.message);
    let e = lib.kernel(c"no_such_kernel").unwrap_err();
    assert_eq!((e.status, e.cuda_code), (Status::NotFound, 500), "{}", e.message);
    assert_eq!(lib.kernel(c"axpy<float").unwrap_err().status, Status::InvalidArgument);

    // C: find falls back, get_kernel stays exact; outputs unchanged on failure.
    let raw = lib.as_raw();
    let mut k = std::ptr::null_mut();
    let api = Api::Driver as u32;
    // SAFETY: a live library, NUL-terminated names, valid outputs.
    unsafe {
        assert_eq!(cudyn_library_find_kernel(raw, c"axpy<float>".as_ptr(), api, &mut k), Status::Success);
        assert_eq!(k, by_symbol.kernel().as_raw());
        let mut other = std::ptr::null_mut();
        assert_eq!(cudyn_library_get_kernel(raw, c"axpy<float>".as_ptr(), api, &mut other), Status::NotFound);
        assert!(other.is_null());
        assert_eq!(cudyn_library_find_kernel(raw, c"scale".as_ptr(), api, &mut other), Status::AmbiguousName);
        assert!(other.is_null());
        assert!(cudyn::error::last_error_message().contains("scale(float*, float) [_Z5scalePff]"));
        assert_eq!(cudyn_library_find_kernel(raw, std::ptr::null(), api, &mut other), Status::InvalidArgument);
        assert_eq!(cudyn_library_find_kernel(raw, c"plain".as_ptr(), 7, &mut other), Status::InvalidArgument);
        assert_eq!(
            cudyn_library_find_kernel(raw, c"plain".as_ptr(), api, std::ptr::null_mut()),
            Status::InvalidArgument
        );
        assert!(other.is_null());
    }
    // An unloaded library is refused without a CUDA call.
    lib.unload().unwrap();
    let before = s.dead_uses();
    // SAFETY: a library cudyn unloaded (refused by cudyn).
    let st = unsafe { cudyn_library_find_kernel(raw, c"axpy<float>".as_ptr(), api, &mut k) };
    assert_eq!(st, Status::InvalidArgument);
    assert_eq!(s.dead_uses(), before, "CUDA never saw the dead library");
}

#[test]
fn demangle_through_c() {
    let mut b = cudyn::capi::compile::cudyn_buffer { data: std::ptr::null_mut(), size: 0 };
    // SAFETY: NUL-terminated symbols, a valid buffer, freed below.
    unsafe {
        assert_eq!(cudyn_demangle(c"_Z5scalePdd".as_ptr(), &mut b), Status::Success);
        let text = std::slice::from_raw_parts(b.data.cast::<u8>(), b.size);
        assert_eq!(text, b"scale(double*, double)");
        assert_eq!(*b.data.cast::<u8>().add(b.size), 0, "NUL-terminated");
        let kept = b.data;
        assert_eq!(cudyn_demangle(c"plain".as_ptr(), &mut b), Status::NotFound);
        assert_eq!(b.data, kept, "unchanged on failure");
        assert_eq!(cudyn_demangle(std::ptr::null(), &mut b), Status::InvalidArgument);
        assert_eq!(cudyn_demangle(c"_Z5scalePdd".as_ptr(), std::ptr::null_mut()), Status::InvalidArgument);
        cudyn::capi::compile::cudyn_buffer_free(&mut b);
    }
}

#[test]
fn preload_loads_every_kernel_on_the_devices_named_only() {
    if child_mode().is_none() {
        return in_child("preload_loads_every_kernel_on_the_devices_named_only", &[]);
    }
    let s = standin();
    let lib = load();
    assert_eq!(s.current(), -1, "the thread starts with no context");
    let times = lib.preload(&[0, 2]).unwrap();
    assert_eq!(times.len(), 2);
    assert_eq!(s.on(&lib, 0), (NKERNELS, 1), "every kernel and the module on device 0");
    assert_eq!(s.on(&lib, 1), (0, 0), "nothing on device 1");
    assert_eq!(s.on(&lib, 2), (NKERNELS, 1));
    assert_eq!(s.current(), -1, "and no context is left current");
    // With a context of its own current, the thread has it back.
    s.set_current(1);
    let mut ms = [-1.0f64; 3];
    let devs = [1, 0, 1];
    // SAFETY: a live library, 3 devices and room for 3 doubles.
    let st = unsafe { cudyn_library_preload(lib.as_raw(), devs.as_ptr(), 3, ms.as_mut_ptr()) };
    assert_eq!(st, Status::Success, "{}", cudyn::error::last_error_message());
    assert!(ms.iter().all(|m| m.is_finite() && *m >= 0.0), "{ms:?}");
    assert_eq!(s.current(), 1);
    assert_eq!(s.on(&lib, 1), (NKERNELS, 2), "device 1 loaded (twice asked)");
    // Each primary context was retained once for the process, however often it was used.
    assert_eq!((s.retains(0), s.retains(1), s.retains(2)), (1, 1, 1));
    // Nothing asked, nothing done; NULL for the times is fine.
    assert!(lib.preload(&[]).unwrap().is_empty());
    // SAFETY: as above, without the times.
    assert_eq!(unsafe { cudyn_library_preload(lib.as_raw(), devs.as_ptr(), 1, std::ptr::null_mut()) }, Status::Success);
    s.set_current(-1);
}

#[test]
fn preload_fails_fast_naming_the_device_and_the_kernel() {
    if child_mode().is_none() {
        return in_child(
            "preload_fails_fast_naming_the_device_and_the_kernel",
            &[("CUDYN_STANDIN_FAIL", "1:_Z5scalePdd")],
        );
    }
    let s = standin();
    let lib = load();
    s.set_current(2);
    let e = lib.preload(&[0, 1, 2]).unwrap_err();
    assert_eq!((e.status, e.cuda_code), (Status::Cuda, 2), "{}", e.message);
    for part in [
        "preloading on device 1 (Stand-in GPU 1, sm_90)",
        "kernel 'scale(double*, double)' [_Z5scalePdd]",
        "CUDA_ERROR_OUT_OF_MEMORY",
    ] {
        assert!(e.message.contains(part), "{part}: {}", e.message);
    }
    assert_eq!(s.on(&lib, 0).0, NKERNELS, "device 0 came first and stays loaded");
    assert_eq!(s.on(&lib, 2), (0, 0), "device 2 was never reached");
    assert_eq!(s.current(), 2, "the thread's context is back");
    let mut ms = [-1.0f64; 2];
    let devs = [0, 1];
    // SAFETY: a live library, 2 devices and room for 2 doubles.
    let st = unsafe { cudyn_library_preload(lib.as_raw(), devs.as_ptr(), 2, ms.as_mut_ptr()) };
    assert_eq!(st, Status::Cuda);
    assert_eq!(ms, [-1.0, -1.0], "the times are written only on success");
    assert!(cudyn::error::last_error_message().contains("device 1"));
    s.set_current(-1);
}

#[test]
fn preload_without_code_for_a_device_names_it() {
    if child_mode().is_none() {
        return in_child("preload_without_code_for_a_device_names_it", &[("CUDYN_STANDIN_FAIL", "2:")]);
    }
    let s = standin();
    let lib = load();
    let e = lib.preload(&[2]).unwrap_err();
    assert_eq!(e.status, Status::NoBinaryForDevice, "{}", e.message);
    assert!(e.message.starts_with("preloading on device 2 (Stand-in GPU 2, sm_90): "), "{}", e.message);
    assert!(e.message.contains("cuLibraryGetModule"), "{}", e.message);
    assert_eq!(s.current(), -1);
}

/// CUDA answering "invalid value" or "not found" while it loads a live library's code into a
/// context (an H100 campaign saw both on damaged images, then reported as an invalid argument
/// and a missing name) is CUDA refusing the code: CUDYN_ERROR_CUDA with CUDA's code, through
/// Rust and C, at the module and at a kernel's function.
#[test]
fn preload_reports_cuda_refusing_the_code_as_a_cuda_error() {
    const NAME: &str = "preload_reports_cuda_refusing_the_code_as_a_cuda_error";
    if child_mode().is_none() {
        for fail in ["1:", "1:_Z5scalePdd"] {
            for code in ["1", "400", "500"] {
                in_child(NAME, &[("CUDYN_STANDIN_FAIL", fail), ("CUDYN_STANDIN_FAIL_CODE", code)]);
            }
        }
        return;
    }
    let code: i32 = std::env::var("CUDYN_STANDIN_FAIL_CODE").unwrap().parse().unwrap();
    let at_kernel = std::env::var("CUDYN_STANDIN_FAIL").unwrap().len() > 2;
    let s = standin();
    let lib = load();
    let e = lib.preload(&[0, 1]).unwrap_err();
    assert_eq!((e.status, e.cuda_code), (Status::Cuda, code), "{}", e.message);
    assert!(e.message.starts_with("preloading on device 1 (Stand-in GPU 1, sm_90): "), "{}", e.message);
    assert!(e.message.contains("CUDA refused the library's code in the context"), "{}", e.message);
    assert_eq!(e.message.contains("kernel 'scale(double*, double)'"), at_kernel, "{}", e.message);
    assert_eq!(s.on(&lib, 0).0, NKERNELS, "device 0 came first and stays loaded");
    // SAFETY: a live library and one device.
    let st = unsafe { cudyn_library_preload(lib.as_raw(), [1].as_ptr(), 1, std::ptr::null_mut()) };
    assert_eq!(st, Status::Cuda);
    assert_eq!(cudyn::error::last_cuda_error(), code);
    assert_eq!(s.current(), -1);
}

#[test]
fn preload_checks_every_device_first_and_refuses_bad_arguments() {
    if child_mode().is_none() {
        return in_child("preload_checks_every_device_first_and_refuses_bad_arguments", &[]);
    }
    let s = standin();
    let lib = load();
    for devs in [&[0, 3][..], &[-1], &[0, 1, 2, 99]] {
        let e = lib.preload(devs).unwrap_err();
        assert_eq!(e.status, Status::NoDevice, "{devs:?}: {}", e.message);
        let bad = devs.iter().find(|d| !(0..3).contains(*d)).unwrap();
        assert!(e.message.contains(&format!("device {bad}: there is no such device (3 device(s))")), "{}", e.message);
    }
    assert_eq!(s.on(&lib, 0), (0, 0), "nothing was loaded anywhere");
    let raw = lib.as_raw();
    // SAFETY: NULL devices with a count (refused), then a valid call.
    unsafe {
        assert_eq!(cudyn_library_preload(raw, std::ptr::null(), 2, std::ptr::null_mut()), Status::InvalidArgument);
        assert_eq!(
            cudyn_library_preload(std::ptr::null_mut(), [0].as_ptr(), 1, std::ptr::null_mut()),
            Status::InvalidArgument
        );
    }
    lib.unload().unwrap();
    let before = s.dead_uses();
    // SAFETY: a library cudyn unloaded (refused by cudyn).
    assert_eq!(unsafe { cudyn_library_preload(raw, [0].as_ptr(), 1, std::ptr::null_mut()) }, Status::InvalidArgument);
    assert_eq!(s.dead_uses(), before, "CUDA never saw the dead library");
}

// ---- On a GPU ---------------------------------------------------------------------------------

/// cuCtxSynchronize of the driver cudyn opened (cudyn has no call of its own for it).
fn synchronize() {
    // SAFETY: the driver is loaded (cudyn opened it); cuCtxSynchronize takes no arguments.
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "libcuda.so.1 is loaded");
        let f = libc::dlsym(h, c"cuCtxSynchronize".as_ptr());
        assert!(!f.is_null());
        let sync = std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> i32>(f);
        assert_eq!(sync(), 0, "cuCtxSynchronize");
    }
}

/// On every GPU of the machine: the names CUDA lists are the image's (the names the CPU tests
/// match against), a preload onto all devices, and axpy<float> found by its C++ name and
/// launched on each. Skips without a GPU; fails under CUDYN_REQUIRE_GPU=1. The fatbin is
/// `$CUDYN_PEERS_FATBIN` (the CMake build's device/peers_kernels.fatbin), else built with the
/// project's nvcc.
#[test]
fn gpu_kernels_by_cxx_name_after_a_preload() {
    if child_mode().is_some() {
        return;
    }
    let ndev = match cudyn::device_count() {
        Ok(n) if n > 0 => n,
        other => {
            let why = format!("{:?}", other.map_err(|e| e.message));
            assert!(std::env::var("CUDYN_REQUIRE_GPU").as_deref() != Ok("1"), "no usable GPU: {why}");
            eprintln!("SKIP: no usable GPU: {why}");
            return;
        }
    };
    let bytes = match std::env::var_os("CUDYN_PEERS_FATBIN") {
        Some(p) => std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")),
        None => {
            let dir = common::TempDir::new("peers_gpu");
            nvcc(
                &dir.join("peers_kernels.cu"),
                SOURCE,
                &dir.join("peers_kernels.fatbin"),
                &["-fatbin", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"],
            )
        }
    };
    let lib = Library::load_data(&bytes, Api::Runtime).unwrap();

    // What CUDA lists is what the image's symbol tables hold for this GPU.
    let d = cudyn::cuda::driver::driver().unwrap();
    let sm = d.device_sm(0).unwrap();
    let c = cudyn::image::contents::contents(&bytes);
    let entry = cudyn::image::contents::entry_for_gpu(&c.entries.iter().map(|e| e.code).collect::<Vec<_>>(), sm)
        .expect("an entry for device 0");
    let mut from_image: Vec<String> = c.entries[entry].kernels.iter().map(|k| k.name.clone()).collect();
    let mut from_cuda: Vec<String> =
        lib.kernels().unwrap().iter().map(|k| k.name().unwrap().into_string().unwrap()).collect();
    from_image.sort();
    from_cuda.sort();
    assert_eq!(from_cuda, from_image);

    let devices: Vec<i32> = (0..ndev).collect();
    let times = lib.preload(&devices).unwrap();
    for (dev, t) in devices.iter().zip(&times) {
        println!("device {dev}: preload {:.3} ms", t.as_secs_f64() * 1e3);
    }
    let axpy = lib.kernel(c"axpy<float>").unwrap();
    assert_eq!(axpy.name().unwrap().to_str().unwrap(), "_Z4axpyIfEvPT_S0_i");
    assert_eq!(lib.kernel(c"scale").unwrap_err().status, Status::AmbiguousName);
    // SAFETY: a live library; the variable's memory lives as long as it.
    let (y, size) = unsafe { cudyn::library::get_managed(lib.as_raw(), c"peers_y", Api::Runtime) }.unwrap();
    assert_eq!(size, 256 * 4);
    let y = y.cast::<f32>();
    for dev in devices {
        d.with_device_context(dev, cudyn::cuda::driver::Keep::ForProcess, || {
            // SAFETY: managed memory of 256 floats, no kernel running on it (synchronized).
            unsafe { std::ptr::write_bytes(y, 0, 256) };
            for api in [Api::Runtime, Api::Driver] {
                let cfg = cudyn::LaunchConfig::for_num_elems(256).with_api(api);
                // SAFETY: y holds 256 floats; axpy<float>(y, a, n) touches y[0..n).
                unsafe { axpy.launch(&cfg, (y, 1.5f32, 256i32)) }?;
            }
            synchronize();
            // SAFETY: as above, synchronized.
            let got = unsafe { std::slice::from_raw_parts(y, 256) };
            assert!(got.iter().all(|&v| v == 3.0), "device {dev}: {:?}", &got[..4]);
            Ok(())
        })
        .unwrap();
        println!("device {dev}: axpy<float> by its C++ name, through both APIs: correct");
    }
}
