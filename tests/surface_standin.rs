//! Contexts, launch attributes, JIT options, occupancy and interop calls against a stand-in
//! CUDA (tests/standin_surface/libcuda.c, the driver and the runtime in one library) that
//! records what cudyn asked of it: the thread's context stack and each device's primary-context
//! retain count after every call, the options a load passed, the attributes a launch passed.
//! Each scenario runs in a child process of its own (a process opens one libcuda).

mod common;

use common::{child_mode, expect_child_ok, spawn_child};
use cudyn::capi::launch::cudyn_launch;
use cudyn::launch::{
    AccessPolicyWindow, AccessProperty, ClusterSchedulingPolicy, Dim3, LaunchAttribute, LaunchConfig, MemSyncDomain,
    MemSyncDomainMap,
};
use cudyn::occupancy::{self, DynamicSmem, OccupancyFlags};
use cudyn::{Api, Library, LoadOption, Status};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

fn standin_path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        common::require_project_env();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("surface");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("libcuda.so.1");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/standin_surface/libcuda.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = std::process::Command::new(cc)
            .args(["-shared", "-fPIC", "-O1", "-pthread", "-Wall", "-Werror", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .expect("running the C compiler");
        assert!(st.success(), "building the stand-in CUDA failed");
        out
    })
}

/// Run test `name` as a child against the stand-in (as the driver and as the runtime).
fn in_child(name: &str) {
    let p = standin_path().to_str().unwrap().to_string();
    let child = spawn_child(name, "surface", &[("CUDYN_LIBCUDA", &p), ("CUDYN_LIBCUDART", &p), ("CUDYN_CACHE", "0")]);
    expect_child_ok(child, name);
}

/// The stand-in's `standin_call`, found in the copy cudyn opened.
fn call(what: &str, arg: i64) -> i64 {
    type F = unsafe extern "C" fn(*const i8, i64) -> i64;
    static F_: OnceLock<usize> = OnceLock::new();
    let f = *F_.get_or_init(|| {
        cudyn::cuda::driver::driver().expect("cudyn opens the stand-in driver");
        let path = CString::new(std::env::var("CUDYN_LIBCUDA").unwrap()).unwrap();
        // SAFETY: dlopen of a library already loaded; dlsym of a symbol it exports.
        unsafe {
            let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
            assert!(!h.is_null(), "the stand-in is loaded");
            let p = libc::dlsym(h, c"standin_call".as_ptr());
            assert!(!p.is_null());
            p as usize
        }
    });
    let what = CString::new(what).unwrap();
    // SAFETY: the stand-in's `long standin_call(const char *, long)`.
    unsafe { std::mem::transmute::<usize, F>(f)(what.as_ptr(), arg) }
}

/// The thread's context stack and the retain counts, as the stand-in sees them.
#[derive(Debug, PartialEq, Eq)]
struct Contexts {
    depth: i64,
    top: i64,
    retains: [i64; 2],
}

fn contexts() -> Contexts {
    Contexts { depth: call("depth", 0), top: call("top", 0), retains: [call("retains", 0), call("retains", 1)] }
}

const PTX: &[u8] =
    b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k0(.param .u32 a, .param .u32 b)\n{\n ret;\n}\n";

fn load(api: Api) -> Library {
    Library::load_data(PTX, api).expect("the stand-in loads the PTX")
}

fn driver_cfg() -> LaunchConfig {
    LaunchConfig { grid: Dim3::x(4), block: Dim3::x(32), api: Api::Driver as u32, ..Default::default() }
}

/// Every call on a thread with no context leaves it with none; a primary context is retained
/// only by the calls whose result lives in it, once per device, and every other retain is
/// released again.
#[test]
fn a_thread_without_a_context_is_left_without_one() {
    if child_mode().is_none() {
        return in_child("a_thread_without_a_context_is_left_without_one");
    }
    let none = |retains: [i64; 2]| Contexts { depth: 0, top: 0, retains };
    let p0 = call("primary", 0);
    // A PTX load compiles in device 0's primary context, retained for the call only.
    let lib = load(Api::Driver);
    assert_eq!(contexts(), none([0, 0]), "after the load");
    assert_eq!(call("query_ctx", 0), p0, "the JIT ran in device 0's primary context");
    let k = lib.kernel(c"k0").unwrap();
    assert_eq!(k.name().unwrap().to_str().unwrap(), "k0");
    assert_eq!(k.param_count().unwrap(), 2);
    assert_eq!(k.attribute(cudyn::kernel::Attribute::NumRegs, 1).unwrap(), 401);
    assert_eq!(contexts(), none([0, 0]), "after the queries");
    // Occupancy on device 1: its primary context, for the call only.
    assert_eq!(occupancy::max_active_blocks_per_multiprocessor(*k, 1, 256, 0, OccupancyFlags::Default).unwrap(), 8);
    assert_eq!(call("occ_ctx", 0), call("primary", 1));
    assert_eq!(contexts(), none([0, 0]), "after an occupancy query");
    // A global's address lives in the context: retained for the process, once.
    let (g, n) = lib.global(c"g").unwrap();
    assert_eq!((g as i64, n), (call("global", 0), 4));
    assert_eq!(contexts(), none([1, 0]), "after get_global");
    lib.global(c"g").unwrap();
    assert_eq!(contexts(), none([1, 0]), "a second get_global retains nothing more");
    // So does a function, and it is device 0's.
    let f = k.function().unwrap();
    assert!(!f.is_null());
    assert_eq!(contexts(), none([1, 0]), "after kernel_function");
    // A driver launch on the NULL stream runs in device 0's primary context, current for it only.
    let args = [&mut 2i32 as *mut i32 as *mut c_void, &mut 2i32 as *mut i32 as *mut c_void];
    let launches = call("launches", 0);
    // SAFETY: the stand-in reads two ints.
    unsafe { cudyn::launch::launch(*k, &driver_cfg(), &args, None) }.unwrap();
    assert_eq!((call("launches", 0), call("last_ctx", 0)), (launches + 1, p0));
    assert_eq!(contexts(), none([1, 0]), "after a driver launch");
    // ... and again (the retry each launch of a context-less thread takes).
    // SAFETY: as above.
    unsafe { cudyn::launch::launch(*k, &driver_cfg(), &args, None) }.unwrap();
    assert_eq!(contexts(), none([1, 0]));
    // A stream's launch runs in the stream's context, retaining nothing.
    let cfg = LaunchConfig { stream: call("stream", 1) as *mut _, ..driver_cfg() };
    // SAFETY: as above; the stand-in's stream.
    unsafe { cudyn::launch::launch(*k, &cfg, &args, None) }.unwrap();
    assert_eq!(call("last_ctx", 0), call("user", 1));
    assert_eq!(contexts(), none([1, 0]), "after a launch on a stream");
    // A global of device 1: its primary context, retained for the process; then the module.
    // SAFETY: a live library.
    let (g1, _) = unsafe { cudyn::library::get_global_on_device(lib.as_raw(), c"g", 1) }.unwrap();
    assert_eq!(g1 as i64, call("global", 1));
    assert_eq!(contexts(), none([1, 1]));
    let m = lib.module().unwrap();
    assert_eq!(m as i64, call("module", 1), "device 0's primary context's module");
    // Managed variables through the driver: the context holding them stays retained (already).
    // SAFETY: a live library.
    let (mp, _) = unsafe { cudyn::library::get_managed(lib.as_raw(), c"m", Api::Driver) }.unwrap();
    assert!(!mp.is_null());
    assert_eq!(contexts(), none([1, 1]), "after everything");
    drop(lib);
    assert_eq!(contexts(), none([1, 1]), "unloading changes no context");
}

/// A kernel's name, parameter and attribute queries on a thread with no context are made with
/// none, and retain no primary context, where CUDA answers them so: a primary context retained
/// for one call and held by no one else is created and destroyed with it (on the GPU, a safe-Rust
/// loop asking a kernel's name on such a thread made a context per query). Where CUDA answers
/// CUDA_ERROR_INVALID_CONTEXT they run in device 0's primary context, retained for the call only.
#[test]
fn kernel_queries_take_a_context_only_when_cuda_asks() {
    if child_mode().is_none() {
        return in_child("kernel_queries_take_a_context_only_when_cuda_asks");
    }
    let none = || Contexts { depth: 0, top: 0, retains: [0, 0] };
    let lib = load(Api::Runtime);
    let k = lib.kernel(c"k0").unwrap();
    call("lax", 1);
    let before = [call("retain_calls", 0), call("retain_calls", 1)];
    for _ in 0..20 {
        assert_eq!(k.name().unwrap().to_str().unwrap(), "k0");
        assert_eq!(k.param_count().unwrap(), 2);
        assert_eq!(k.attribute(cudyn::kernel::Attribute::NumRegs, 1).unwrap(), 401);
    }
    assert_eq!([call("retain_calls", 0), call("retain_calls", 1)], before, "a query retained a primary context");
    assert_eq!((contexts(), call("query_ctx", 0)), (none(), 0), "a query ran in a context");
    // A driver that asks for a context gets device 0's primary context, for the call only.
    call("lax", 0);
    assert_eq!(k.name().unwrap().to_str().unwrap(), "k0");
    assert_eq!(call("query_ctx", 0), call("primary", 0));
    assert_eq!(k.attribute(cudyn::kernel::Attribute::NumRegs, 1).unwrap(), 401);
    assert_eq!([call("retain_calls", 0), call("retain_calls", 1)], [before[0] + 2, before[1]]);
    assert_eq!(contexts(), none(), "the retains were released");
}

/// A kernel of a cubin cudyn built the image for answers its parameters from that image's
/// tables (the ones CUDA reads when it loads those bytes): no CUDA call, no context. On driver
/// 580 `cuKernelGetParamInfo` needs a context, and on a thread with none each new kernel's
/// first query created and destroyed device 0's primary context (190 ms on the H100), so
/// safe Rust racing 3,000 loads against queries ran for many minutes. A PTX library is still
/// asked (the JIT decides its layout).
#[test]
fn a_cubins_layout_comes_from_its_tables_without_a_context() {
    if child_mode().is_none() {
        return in_child("a_cubins_layout_comes_from_its_tables_without_a_context");
    }
    let dir = common::TempDir::new("surface-layout");
    let cubin = common::nvcc(
        &dir.join("k.cu"),
        "extern \"C\" __global__ void k0(double a, char b, int *c) { if (b) c[0] = (int)a; }\n",
        &dir.join("k.cubin"),
        &["-cubin", "-arch=sm_90"],
    );
    call("lax", 2);
    for api in [Api::Driver, Api::Runtime] {
        let lib = Library::load_data(&cubin, api).expect("the stand-in loads the cubin");
        let k = lib.kernel(c"k0").unwrap();
        let before = (call("param_calls", 0), call("retain_calls", 0), call("retain_calls", 1));
        // The stand-in's own answer would be two ints; the image says (double, char, pointer).
        let got: Vec<(u32, u32)> = k.params().unwrap().iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(got, [(0, 8), (8, 1), (16, 8)], "{api:?}");
        let x: *mut i32 = std::ptr::null_mut();
        let wrong = k.validate_launch(&LaunchConfig::for_num_elems(16).with_api(api), &(1.0f64, 1i32, x));
        assert_eq!(wrong.map_err(|e| e.status), Err(Status::ArgumentMismatch), "{api:?}: an int for a char");
        k.validate_launch(&LaunchConfig::for_num_elems(16).with_api(api), &(1.0f64, 1i8, x)).unwrap();
        assert_eq!(
            (call("param_calls", 0), call("retain_calls", 0), call("retain_calls", 1)),
            before,
            "{api:?}: CUDA was asked, or a context retained"
        );
        assert_eq!(contexts(), Contexts { depth: 0, top: 0, retains: [0, 0] }, "{api:?}");
    }
    // PTX: asked of CUDA, in device 0's primary context for the call only (the stand-in, as
    // driver 580, wants one).
    let lib = load(Api::Driver);
    let k = lib.kernel(c"k0").unwrap();
    let before = (call("param_calls", 0), call("retain_calls", 0));
    assert_eq!(k.param_count().unwrap(), 2);
    assert!(call("param_calls", 0) > before.0, "the PTX kernel's layout was not asked of CUDA");
    assert_eq!(call("retain_calls", 0), before.1 + 1);
    assert_eq!(contexts(), Contexts { depth: 0, top: 0, retains: [0, 0] });
}

/// A thread with its own context: every call uses it and leaves the stack as it was.
#[test]
fn a_thread_with_a_context_keeps_it() {
    if child_mode().is_none() {
        return in_child("a_thread_with_a_context_keeps_it");
    }
    assert_eq!(call("push_user", 1), 0);
    let mine = Contexts { depth: 1, top: call("user", 1), retains: [0, 0] };
    assert_eq!(contexts(), mine);
    let lib = load(Api::Driver);
    assert_eq!(call("query_ctx", 0), call("user", 1), "the JIT ran in the thread's context");
    let k = lib.kernel(c"k0").unwrap();
    k.name().unwrap();
    lib.global(c"g").unwrap();
    assert_eq!(call("query_ctx", 0), call("user", 1));
    k.function().unwrap();
    let args = [&mut 2i32 as *mut i32 as *mut c_void, &mut 2i32 as *mut i32 as *mut c_void];
    // SAFETY: the stand-in reads two ints.
    unsafe { cudyn::launch::launch(*k, &driver_cfg(), &args, None) }.unwrap();
    assert_eq!(call("last_ctx", 0), call("user", 1));
    assert_eq!(contexts(), mine, "nothing retained, the stack unchanged");
    // Occupancy is asked in the device's primary context (pushed over the thread's, popped).
    occupancy::max_active_blocks_per_multiprocessor(*k, 0, 128, 0, OccupancyFlags::Default).unwrap();
    assert_eq!(call("occ_ctx", 0), call("primary", 0));
    assert_eq!(contexts(), mine);
    // A global of another device: pushed over the thread's context, popped after.
    // SAFETY: a live library.
    unsafe { cudyn::library::get_global_on_device(lib.as_raw(), c"g", 0) }.unwrap();
    assert_eq!(contexts(), Contexts { retains: [1, 0], ..mine });
}

/// Every launch attribute reaches CUDA as CUDA's own struct, through the driver and the runtime,
/// from Rust and from C; a list cudyn refuses never reaches CUDA; the device-updatable node CUDA
/// writes comes back into the caller's entry; priority 0 is a priority.
#[test]
fn launch_attributes_reach_cuda_through_both_apis() {
    if child_mode().is_none() {
        return in_child("launch_attributes_reach_cuda_through_both_apis");
    }
    let lib = load(Api::Runtime);
    let k = lib.kernel(c"k0").unwrap();
    let ev = 0x5151 as cudyn::handles::EventHandle;
    let mut args_v = [2i32, 2i32];
    let args = [&mut args_v[0] as *mut i32 as *mut c_void, &mut args_v[1] as *mut i32 as *mut c_void];
    for api in [Api::Driver, Api::Runtime] {
        let mut list = vec![
            LaunchAttribute::access_policy_window(AccessPolicyWindow {
                base_ptr: 0x1000 as *mut c_void,
                num_bytes: 4096,
                hit_ratio: 0.5,
                hit_prop: AccessProperty::Persisting as u32,
                miss_prop: AccessProperty::Normal as u32,
            }),
            LaunchAttribute::cluster_scheduling_policy(ClusterSchedulingPolicy::LoadBalancing),
            // SAFETY: the stand-in never touches the event.
            unsafe { LaunchAttribute::programmatic_event(ev, true) },
            LaunchAttribute::priority(0),
            LaunchAttribute::mem_sync_domain_map(MemSyncDomainMap { default_: 0, remote: 1 }),
            LaunchAttribute::mem_sync_domain(MemSyncDomain::Remote),
            LaunchAttribute::cluster_dimension(Dim3::x(2)),
            LaunchAttribute::preferred_cluster_dimension(Dim3::x(4)),
            // SAFETY: as above.
            unsafe { LaunchAttribute::launch_completion_event(ev) },
            LaunchAttribute::device_updatable_kernel_node(true),
            LaunchAttribute::preferred_shared_memory_carveout(25),
            LaunchAttribute::nvlink_util_centric_scheduling(true),
            LaunchAttribute::ignore(),
        ];
        let base = LaunchConfig {
            grid: Dim3::x(8),
            block: Dim3::x(32),
            api: api as u32,
            cooperative: 1,
            ..Default::default()
        };
        // SAFETY: `list` outlives the config.
        let cfg = unsafe { base.with_attributes(&mut list) }.unwrap();
        let before = call("launches", 0);
        // SAFETY: the stand-in reads two ints; the event is never used.
        unsafe { cudyn::launch::launch(*k, &cfg, &args, None) }.unwrap();
        assert_eq!(call("launches", 0), before + 1, "{api:?}");
        assert_eq!(call("last_api", 0), if api == Api::Driver { 1 } else { 0 });
        let ids: Vec<i64> = (0..call("nattr", 0)).map(|i| call("attr_id", i)).collect();
        assert_eq!(
            ids,
            vec![2, 1, 5, 7, 8, 9, 10, 4, 11, 12, 13, 14, 16],
            "{api:?}: the named one first, IGNORE dropped"
        );
        assert_eq!(call("attr_word", 0), 1, "cooperative");
        assert_eq!(call("attr_word", 1), 0x1000, "the window's base");
        assert_eq!(call("attr_word2", 1), 4096, "the window's size");
        assert_eq!(call("attr_word", 2), 2, "load balancing");
        assert_eq!(call("attr_word", 3), 0x5151, "the event");
        assert_eq!(call("attr_word", 4), 0, "priority 0");
        assert_eq!(call("attr_word", 6) as u32, 1, "remote");
        assert_eq!(call("attr_word", 11) as u32, 25, "carveout");
        assert_eq!(list[9].device_node(), Some(0xD00D as *mut _), "{api:?}: the node CUDA wrote, handed back");
        // The same list from C, through cudyn_launch.
        let before = call("launches", 0);
        // SAFETY: a readable config and two int arguments.
        let s = unsafe { cudyn_launch(k.as_raw(), &cfg, args.as_ptr() as *mut _, 2) };
        assert_eq!((s, call("launches", 0)), (Status::Success, before + 1));
        // Refused lists never reach CUDA.
        let mut bad = vec![LaunchAttribute::priority(1), LaunchAttribute::priority(2)];
        // SAFETY: as above.
        let cfg = unsafe { base.with_attributes(&mut bad) }.unwrap();
        let before = call("launches", 0);
        // SAFETY: as above.
        let s = unsafe { cudyn_launch(k.as_raw(), &cfg, args.as_ptr() as *mut _, 2) };
        assert_eq!(s, Status::InvalidArgument);
        assert!(cudyn::error::last_error_message().contains("given twice"), "{}", cudyn::error::last_error_message());
        let mut cluster = vec![LaunchAttribute::cluster_dimension(Dim3::x(2))];
        // SAFETY: as above.
        let cfg = unsafe { LaunchConfig { cluster: Dim3::x(2), ..base }.with_attributes(&mut cluster) }.unwrap();
        // SAFETY: as above.
        let e = unsafe { cudyn::launch::launch(*k, &cfg, &args, None) }.unwrap_err();
        assert!(e.message.contains("`cluster` field"), "{}", e.message);
        assert_eq!(call("launches", 0), before, "{api:?}: nothing reached CUDA");
    }
    // A config of nothing but IGNORE entries launches through the runtime's plain call.
    let mut ignore = vec![LaunchAttribute::ignore(); 3];
    let base = LaunchConfig { grid: Dim3::x(1), block: Dim3::x(1), api: Api::Runtime as u32, ..Default::default() };
    // SAFETY: as above.
    let cfg = unsafe { base.with_attributes(&mut ignore) }.unwrap();
    // SAFETY: as above.
    unsafe { cudyn::launch::launch(*k, &cfg, &args, None) }.unwrap();
    assert_eq!(call("nattr", 0), 0);
}

fn o(id: cudyn::load_options::LoadOptionId, value: i64) -> LoadOption {
    LoadOption { id: id as u32, value }
}

/// The JIT options a load is given reach CUDA under CUDA's numbers through both APIs; the
/// driver's own are refused for the runtime before CUDA is called; pointers reach it through
/// the C API.
#[test]
fn load_options_reach_cuda_under_their_numbers() {
    use cudyn::load_options::LoadOptionId as L;
    if child_mode().is_none() {
        return in_child("load_options_reach_cuda_under_their_numbers");
    }
    let jit =
        || -> Vec<(i64, i64)> { (0..call("jit_n", 0)).map(|i| (call("jit_key", i), call("jit_value", i))).collect() };
    let both = [
        o(L::MaxRegisters, 32),
        o(L::ThreadsPerBlock, 128),
        o(L::FallbackStrategy, 1),
        o(L::CacheMode, 2),
        o(L::PositionIndependentCode, 1),
        o(L::MinCtaPerSm, 2),
        o(L::MaxThreadsPerBlock, 256),
        o(L::OverrideDirectiveValues, 1),
        o(L::BinaryIsPreserved, 1),
    ];
    for api in [Api::Driver, Api::Runtime] {
        Library::load_data_with(PTX, api, &both, None).unwrap();
        // Then the two log buffers and their sizes (3..6), which every load asks for.
        let got: Vec<(i64, i64)> = jit().into_iter().take(8).collect();
        assert_eq!(got, vec![(0, 32), (1, 128), (10, 1), (14, 2), (30, 1), (31, 2), (32, 256), (33, 1)], "{api:?}");
        assert_eq!(jit()[8..].iter().map(|p| p.0).collect::<Vec<_>>(), vec![3, 4, 5, 6]);
        assert_eq!((call("lib_n", 0), call("lib_key", 0), call("lib_value", 0)), (1, 1, 1));
    }
    let driver_only = [o(L::Target, 65626), o(L::SplitCompile, 4)];
    Library::load_data_with(PTX, Api::Driver, &driver_only, None).unwrap();
    assert_eq!(jit()[..2], [(9, 65626), (34, 4)], "compute_90a and split compile");
    let loads = call("loads", 0);
    for bad in [o(L::Target, 90), o(L::TargetFromContext, 1), o(L::SplitCompile, 0), o(L::GlobalSymbolCount, 1)] {
        let e = Library::load_data_with(PTX, Api::Runtime, &[bad], None).unwrap_err();
        assert!(e.message.contains(L::from_c(bad.id.into()).unwrap().c_name()), "{}", e.message);
    }
    let e = Library::load_data_with(PTX, Api::Driver, &[LoadOption { id: 3, value: 1 }], None).unwrap_err();
    assert!(e.message.contains("retired"), "{}", e.message);
    assert_eq!(call("loads", 0), loads, "no refused load reached CUDA");
    // Pointers, through the C API: the host table and the wall time, and the symbol arrays.
    let table = cudyn::load_options::HostUniversalTable {
        function_table: std::ptr::null_mut(),
        function_window_size: 0,
        data_table: std::ptr::null_mut(),
        data_window_size: 0,
    };
    let mut ms = 0f32;
    let names = [c"sym".as_ptr()];
    let addrs = [&table as *const _ as *mut c_void];
    let opts = [
        o(L::WallTime, &mut ms as *mut f32 as i64),
        o(L::HostUniversalFunctionAndDataTable, &table as *const _ as i64),
        o(L::GlobalSymbolNames, names.as_ptr() as i64),
        o(L::GlobalSymbolAddresses, addrs.as_ptr() as i64),
        o(L::GlobalSymbolCount, 1),
    ];
    let mut h = std::ptr::null_mut();
    // SAFETY: the image, the options and the output are valid for the call; the pointers the
    // options carry outlive the library (never unloaded here).
    let s = unsafe {
        cudyn::capi::library::cudyn_library_load_data_ex(
            PTX.as_ptr().cast(),
            PTX.len(),
            Api::Driver as u32,
            opts.as_ptr(),
            opts.len(),
            &mut h,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(s, Status::Success, "{}", cudyn::error::last_error_message());
    // The wall time's slot is cudyn's (CUDA writes the float over the value itself), and the
    // float CUDA wrote there reaches the caller's pointer.
    assert_eq!(jit()[..4], [(2, -1), (17, names.as_ptr() as i64), (18, addrs.as_ptr() as i64), (19, 1)]);
    assert_eq!(ms, 1.5, "the wall time CUDA wrote into the option's slot");
    // The host table, then BINARY_IS_PRESERVED for the copy cudyn hands over (the PTX has no NUL).
    assert_eq!((call("lib_n", 0), call("lib_key", 0), call("lib_value", 0)), (2, 0, &table as *const _ as i64));
    assert_eq!((call("lib_key", 1), call("lib_value", 1)), (1, 1));
    // The same options from safe Rust: refused, naming why.
    let e = Library::load_data_with(PTX, Api::Driver, &opts, None).unwrap_err();
    assert!(e.message.contains("safe Rust cannot vouch"), "{}", e.message);
}

/// Occupancy on any kernel and a chosen device: CUDA's answers, the arguments it was given, the
/// per-block shared memory from a closure (and a C function), a panic in one resumed after
/// CUDA returns, and a launch config sized from it.
#[test]
fn occupancy_queries_and_the_sized_launch() {
    if child_mode().is_none() {
        return in_child("occupancy_queries_and_the_sized_launch");
    }
    let lib = load(Api::Runtime);
    let k = *lib.kernel(c"k0").unwrap();
    assert_eq!(
        occupancy::max_active_blocks_per_multiprocessor(k, 0, 512, 1024, OccupancyFlags::DisableCachingOverride)
            .unwrap(),
        4
    );
    assert_eq!((call("occ_flags", 0), call("occ_smem", 0), call("occ_block", 0)), (1, 1024, 512));
    let s = occupancy::max_potential_block_size(k, 1, DynamicSmem::Fixed(0), 0, OccupancyFlags::Default).unwrap();
    assert_eq!((s.block_size, s.min_grid_size), (1024, 132 * 2));
    // 64 bytes a thread: 48 KiB holds 768 threads.
    let calls = call("occ_callbacks", 0);
    let per_thread = |b: u32| b as usize * 64;
    let s = occupancy::max_potential_block_size(k, 1, DynamicSmem::PerBlock(&per_thread), 0, OccupancyFlags::Default)
        .unwrap();
    assert_eq!(s.block_size, 768);
    assert_eq!(call("occ_callbacks", 0) - calls, 32, "asked for every block size 32..=1024");
    let s = occupancy::max_potential_block_size(k, 1, DynamicSmem::PerBlock(&per_thread), 256, OccupancyFlags::Default)
        .unwrap();
    assert_eq!(s.block_size, 256, "the limit");
    // A panicking closure: resumed here, after CUDA returned; the next query works.
    let boom = |_: u32| -> usize { panic!("the closure panics") };
    let r = std::panic::catch_unwind(|| {
        occupancy::max_potential_block_size(k, 0, DynamicSmem::PerBlock(&boom), 0, OccupancyFlags::Default)
    });
    assert!(r.unwrap_err().downcast_ref::<&str>().is_some_and(|m| m.contains("panics")));
    assert_eq!(contexts(), Contexts { depth: 0, top: 0, retains: [0, 0] }, "the stack was unwound tidily");
    // A C callback with its user pointer, through the C API.
    unsafe extern "C" fn c_smem(block: i32, user: *mut c_void) -> usize {
        // SAFETY: `user` is the test's u64 counter.
        unsafe { *(user as *mut u64) += 1 };
        block as usize * 128
    }
    let (mut calls, mut grid, mut block) = (0u64, 0, 0);
    // SAFETY: a live kernel; the callback reads the counter given as `user`.
    let st = unsafe {
        cudyn::capi::occupancy::cudyn_occupancy_max_potential_block_size(
            k.as_raw(),
            0,
            0,
            Some(c_smem),
            &mut calls as *mut u64 as *mut c_void,
            0,
            0,
            &mut grid,
            &mut block,
        )
    };
    assert_eq!((st, block, calls), (Status::Success, 384, 32));
    // Flags cudyn does not know, a negative block size: refused before CUDA.
    let mut n = -1;
    // SAFETY: as above.
    let st = unsafe { cudyn::capi::occupancy::cudyn_occupancy_max_active_blocks(k.as_raw(), 0, 128, 0, 2, &mut n) };
    assert_eq!((st, n), (Status::InvalidArgument, -1));
    // SAFETY: as above.
    let st = unsafe { cudyn::capi::occupancy::cudyn_occupancy_max_active_blocks(k.as_raw(), 0, -1, 0, 0, &mut n) };
    assert_eq!((st, n), (Status::InvalidArgument, -1));
    assert_eq!(occupancy::available_dynamic_smem_per_block(k, 0, 3, 128).unwrap(), 3128);
    // Cluster queries get the config's attributes.
    let cfg = LaunchConfig { grid: Dim3::x(8), block: Dim3::x(128), cluster: Dim3::x(2), ..Default::default() };
    // SAFETY: the NULL stream, no list.
    assert_eq!(unsafe { occupancy::max_potential_cluster_size(k, 0, &cfg) }.unwrap(), 8);
    assert_eq!((call("occ_nattr", 0), call("attr_id", 0)), (1, 4));
    // SAFETY: as above.
    assert_eq!(unsafe { occupancy::max_active_clusters(k, 1, &cfg) }.unwrap(), 3);
    // A bad config is refused before CUDA.
    let bad = LaunchConfig { cluster: Dim3::x(3), ..cfg };
    // SAFETY: as above.
    assert!(unsafe { occupancy::max_active_clusters(k, 1, &bad) }.unwrap_err().message.contains("divide the grid"));
    // The sized launch: 10,000 elements in blocks of the suggested size; 0: the minimum grid.
    let c = occupancy::launch_config(k, 0, 10_000, DynamicSmem::PerBlock(&per_thread)).unwrap();
    assert_eq!((c.grid.x, c.block.x, c.shared_mem_bytes), (14, 768, 768 * 64));
    let c = occupancy::launch_config(k, 0, 0, DynamicSmem::Fixed(0)).unwrap();
    assert_eq!((c.grid.x, c.block.x), (264, 1024));
    assert_eq!(contexts(), Contexts { depth: 0, top: 0, retains: [0, 0] }, "no query left a retain");
}

/// cuKernelGetLibrary, cuKernelSetCacheConfig, cuLibraryGetModule, cudaGetKernel from C, and a
/// missing unified function: one status through both APIs.
#[test]
fn interop_calls() {
    if child_mode().is_none() {
        return in_child("interop_calls");
    }
    let lib = load(Api::Driver);
    let k = *lib.kernel(c"k0").unwrap();
    assert_eq!(k.library().unwrap() as i64, call("library", 0));
    k.set_cache_config(cudyn::enums::FuncCache::PreferShared, 1).unwrap();
    assert_eq!((call("cache_config", 0), call("cache_device", 0)), (1, 1));
    // SAFETY: a bad value, refused before CUDA.
    let st = unsafe { cudyn::capi::kernel::cudyn_kernel_set_cache_config(k.as_raw(), 4, 0) };
    assert_eq!(st, Status::InvalidArgument);
    // cudaGetKernel through cudyn's runtime: the stand-in's stub is a kernel, adopted.
    let mut h = std::ptr::null_mut();
    // SAFETY: an address in this process; a writable output.
    let st = unsafe { cudyn::capi::kernel::cudyn_kernel_of(call("stub", 0) as *const c_void, &mut h) };
    assert_eq!((st, h as i64), (Status::Success, call("kernel", 0)), "{}", cudyn::error::last_error_message());
    let mut h2 = std::ptr::null_mut();
    // SAFETY: as above: an address the runtime does not know.
    let st = unsafe { cudyn::capi::kernel::cudyn_kernel_of(interop_calls as *const c_void, &mut h2) };
    assert_eq!((st, h2), (Status::InvalidArgument, std::ptr::null_mut()));
    // SAFETY: NULL, refused.
    assert_eq!(unsafe { cudyn::capi::kernel::cudyn_kernel_of(std::ptr::null(), &mut h2) }, Status::InvalidArgument);
    // A unified function: found through both; a missing one is NOT_FOUND through both.
    // (One library, asked through each API: the stand-in holds one library object.)
    for api in [Api::Driver, Api::Runtime] {
        // SAFETY: a live library.
        let p = unsafe { cudyn::library::get_unified_function(lib.as_raw(), c"u", api) }.unwrap();
        assert_eq!(p as i64, call("unified", 0));
        // SAFETY: as above.
        let e = unsafe { cudyn::library::get_unified_function(lib.as_raw(), c"nope", api) }.unwrap_err();
        assert_eq!(e.status, Status::NotFound, "{api:?}: {}", e.message);
        assert_eq!(e.cuda_code, 1, "CUDA's own code is kept");
    }
    // The module, through C.
    let mut m = std::ptr::null_mut();
    // SAFETY: a live library, a writable output.
    let st = unsafe { cudyn::capi::library::cudyn_library_get_module(lib.as_raw(), &mut m) };
    assert_eq!((st, m as i64), (Status::Success, call("module", 1)));
    drop(lib);
}
