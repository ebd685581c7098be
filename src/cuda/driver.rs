//! The CUDA driver (libcuda.so.1), opened at run time; every entry point is resolved once
//! through `cuGetProcAddress_v2` with the CUDA version whose ABI cudyn was written against.
//! Its calls, as typed functions returning `Result`: contexts and devices, libraries, kernels,
//! and the launch entry point.

use super::api::status_of_cu_result;
use super::api::{Loader, OptionArrays};
use super::dl::{Component, Lib};
use super::open::{fmt_version, Lazy, Opened};
use super::sys;
use crate::error::{Error, Result, Status};
use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Oldest driver cudyn accepts: the context-independent library API arrived in 12.0.
pub const MIN_DRIVER_VERSION: i32 = 12000;

macro_rules! driver_table {
    ($( $field:ident : $pfn:ident = $sym:literal @ $ver:literal ),* $(,)?) => {
        /// Driver entry points; None where this driver lacks the symbol (too old).
        #[allow(non_snake_case)]
        pub struct DriverFns { $( pub $field: Option<sys::$pfn>, )* }

        impl DriverFns {
            fn resolve(gpa: sys::PFN_cuGetProcAddress_v2) -> DriverFns {
                DriverFns { $( $field: {
                    let mut p: *mut c_void = ptr::null_mut();
                    let mut q = sys::CUdriverProcAddressQueryResult(0);
                    // SAFETY: gpa is cuGetProcAddress_v2; the symbol name is NUL-terminated and
                    // `p`/`q` are valid out-pointers. Legacy-stream flavour, as the runtime uses.
                    let r = unsafe { gpa(concat!($sym, "\0").as_ptr().cast(), &mut p, $ver, 1, &mut q) };
                    if r.0 == 0 && !p.is_null() {
                        // SAFETY: the driver returned the entry point for this symbol at the
                        // requested ABI version, whose prototype is `$pfn` (from the headers).
                        Some(unsafe { std::mem::transmute::<*mut c_void, sys::$pfn>(p) })
                    } else { None }
                }, )* }
            }
        }
    };
}

driver_table! {
    cuInit: PFN_cuInit = "cuInit" @ 2000,
    cuDriverGetVersion: PFN_cuDriverGetVersion = "cuDriverGetVersion" @ 2020,
    cuGetErrorName: PFN_cuGetErrorName = "cuGetErrorName" @ 6000,
    cuGetErrorString: PFN_cuGetErrorString = "cuGetErrorString" @ 6000,
    cuDeviceGetCount: PFN_cuDeviceGetCount = "cuDeviceGetCount" @ 2000,
    cuDeviceGetAttribute: PFN_cuDeviceGetAttribute = "cuDeviceGetAttribute" @ 2000,
    cuDeviceGet: PFN_cuDeviceGet = "cuDeviceGet" @ 2000,
    cuDeviceGetName: PFN_cuDeviceGetName = "cuDeviceGetName" @ 2000,
    cuDevicePrimaryCtxRetain: PFN_cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" @ 7000,
    cuDevicePrimaryCtxRelease: PFN_cuDevicePrimaryCtxRelease_v2 = "cuDevicePrimaryCtxRelease" @ 11000,
    cuCtxGetCurrent: PFN_cuCtxGetCurrent = "cuCtxGetCurrent" @ 4000,
    cuCtxSetCurrent: PFN_cuCtxSetCurrent = "cuCtxSetCurrent" @ 4000,
    cuCtxGetDevice: PFN_cuCtxGetDevice = "cuCtxGetDevice" @ 2000,
    cuStreamGetCtx: PFN_cuStreamGetCtx = "cuStreamGetCtx" @ 9020,
    cuLibraryLoadData: PFN_cuLibraryLoadData = "cuLibraryLoadData" @ 12000,
    cuLibraryUnload: PFN_cuLibraryUnload = "cuLibraryUnload" @ 12000,
    cuLibraryGetKernel: PFN_cuLibraryGetKernel = "cuLibraryGetKernel" @ 12000,
    cuLibraryGetKernelCount: PFN_cuLibraryGetKernelCount = "cuLibraryGetKernelCount" @ 12040,
    cuLibraryEnumerateKernels: PFN_cuLibraryEnumerateKernels = "cuLibraryEnumerateKernels" @ 12040,
    cuLibraryGetGlobal: PFN_cuLibraryGetGlobal = "cuLibraryGetGlobal" @ 12000,
    cuLibraryGetModule: PFN_cuLibraryGetModule = "cuLibraryGetModule" @ 12000,
    cuLibraryGetManaged: PFN_cuLibraryGetManaged = "cuLibraryGetManaged" @ 12000,
    cuLibraryGetUnifiedFunction: PFN_cuLibraryGetUnifiedFunction = "cuLibraryGetUnifiedFunction" @ 12000,
    cuKernelGetName: PFN_cuKernelGetName = "cuKernelGetName" @ 12030,
    cuKernelGetLibrary: PFN_cuKernelGetLibrary = "cuKernelGetLibrary" @ 12050,
    cuKernelGetParamInfo: PFN_cuKernelGetParamInfo = "cuKernelGetParamInfo" @ 12040,
    cuKernelGetFunction: PFN_cuKernelGetFunction = "cuKernelGetFunction" @ 12000,
    cuFuncLoad: PFN_cuFuncLoad = "cuFuncLoad" @ 12040,
    cuFuncIsLoaded: PFN_cuFuncIsLoaded = "cuFuncIsLoaded" @ 12040,
    cuKernelGetAttribute: PFN_cuKernelGetAttribute = "cuKernelGetAttribute" @ 12000,
    cuKernelSetAttribute: PFN_cuKernelSetAttribute = "cuKernelSetAttribute" @ 12000,
    cuKernelSetCacheConfig: PFN_cuKernelSetCacheConfig = "cuKernelSetCacheConfig" @ 12000,
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: PFN_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags =
        "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags" @ 7000,
    cuOccupancyMaxPotentialBlockSizeWithFlags: PFN_cuOccupancyMaxPotentialBlockSizeWithFlags =
        "cuOccupancyMaxPotentialBlockSizeWithFlags" @ 7000,
    cuOccupancyAvailableDynamicSMemPerBlock: PFN_cuOccupancyAvailableDynamicSMemPerBlock =
        "cuOccupancyAvailableDynamicSMemPerBlock" @ 10020,
    cuOccupancyMaxPotentialClusterSize: PFN_cuOccupancyMaxPotentialClusterSize = "cuOccupancyMaxPotentialClusterSize" @ 11070,
    cuOccupancyMaxActiveClusters: PFN_cuOccupancyMaxActiveClusters = "cuOccupancyMaxActiveClusters" @ 11070,
    cuLaunchKernelEx: PFN_cuLaunchKernelEx = "cuLaunchKernelEx" @ 11060,
}

/// The driver's process-wide state beside its entry points.
pub struct DriverState {
    /// cuInit's outcome: a driver with no usable GPU loads, but calls that need one fail.
    init: std::result::Result<(), Error>,
    /// Primary contexts retained so far, per device (NULL: not yet).
    primary: Mutex<Vec<sys::CUcontext>>,
    /// Compute capability per device (0: not read yet); it never changes in a process.
    sm: [AtomicU32; 64],
    /// The compute capability every device shares (0: not read yet; u32::MAX: they differ or
    /// there is none).
    sm_all: AtomicU32,
    /// The compute capability of every device the process can see, in ordinal order.
    sms: std::sync::OnceLock<Vec<u32>>,
}

// SAFETY: the primary-context list is behind a Mutex, and CUcontext handles may be used from
// any thread; the rest is atomics and an error value.
unsafe impl Send for DriverState {}
unsafe impl Sync for DriverState {}

/// The CUDA driver, opened.
pub type Driver = Opened<DriverFns, DriverState>;

/// fork(): the list of retained contexts is locked before a fork and given back after it
/// (src/fork.rs), so a child never inherits it held.
static PRIMARY_FORK: crate::fork::Lock =
    crate::fork::Lock::new(crate::fork::Rank::Contexts, hold_primary_for_fork, crate::fork::nothing);
crate::fork::enrol_at_load!(PRIMARY_FORK);

fn hold_primary_for_fork() {
    if let Some(d) = DRIVER.ready() {
        crate::fork::keep(d.state.primary.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

static DRIVER: Lazy<DriverFns, DriverState> = Lazy::new(Component::Driver, accept);

/// The process's driver, opened on first use.
/// The most devices cudyn believes a driver reports (a count past it is an error, not a
/// table of that size).
const MAX_DEVICES: i32 = 1 << 16;

/// The most kernels cudyn lists of one library (8 MiB of handles): a count past it is not
/// believed (NVIDIA's largest libraries hold some thousands per fatbin).
pub(crate) const MAX_KERNELS: usize = 1 << 20;

pub fn driver() -> Result<&'static Driver> {
    DRIVER.get()
}

/// Open the driver if no one tried yet, reporting nothing (a call that needs it reports why
/// it is missing): for callers that must not open it later, under a lock.
pub fn open() {
    let _ = DRIVER.opened();
}

/// The driver if it is already open (the launch path: one load, no initialisation).
#[inline]
pub fn driver_ready() -> Option<&'static Driver> {
    DRIVER.ready()
}

/// The driver if it loaded and initialised a GPU, without ever erroring.
pub fn driver_if_usable() -> Option<&'static Driver> {
    driver().ok().filter(|d| d.state.init.is_ok())
}

/// A candidate libcuda: resolved through its cuGetProcAddress_v2, at least MIN_DRIVER_VERSION,
/// then initialised (a failed cuInit is kept, not a refusal: see `initialised`).
fn accept(lib: &Lib) -> Result<(i32, DriverFns, DriverState)> {
    let gpa = lib.sym(c"cuGetProcAddress_v2").ok_or_else(|| {
        Error::new(
            Status::UnsupportedVersion,
            "this libcuda has no cuGetProcAddress_v2 (cudyn needs driver 12.0 or newer)",
        )
    })?;
    // SAFETY: the exported cuGetProcAddress_v2 has this prototype (from cuda.h).
    let gpa: sys::PFN_cuGetProcAddress_v2 = unsafe { std::mem::transmute(gpa) };
    let f = DriverFns::resolve(gpa);
    let mut version = 0;
    if let Some(get) = f.cuDriverGetVersion {
        // SAFETY: valid out-pointer.
        unsafe { get(&mut version) };
    }
    if version < MIN_DRIVER_VERSION {
        return Err(Error::new(
            Status::UnsupportedVersion,
            format!(
                "driver supports CUDA {}, cudyn needs {} or newer",
                fmt_version(version),
                fmt_version(MIN_DRIVER_VERSION)
            ),
        ));
    }
    let init = match f.cuInit {
        // SAFETY: cuInit(0) is always valid to call, any number of times.
        Some(init) => check_with(&f, unsafe { init(0) }, "initialising the CUDA driver (cuInit)"),
        None => Err(Error::new(Status::UnsupportedVersion, "driver has no cuInit")),
    };
    let state = DriverState {
        init,
        primary: Mutex::new(Vec::new()),
        sm: [const { AtomicU32::new(0) }; 64],
        sm_all: AtomicU32::new(0),
        sms: std::sync::OnceLock::new(),
    };
    Ok((version, f, state))
}

/// cuda.h's CUDA_ERROR_INVALID_CONTEXT: the call needs a current context.
const CUDA_ERROR_INVALID_CONTEXT: i32 = 201;

/// CUDA_SUCCESS -> Ok; otherwise an Error naming the code, its text (from `f`) and what was
/// being done.
fn check_with(f: &DriverFns, r: sys::CUresult, what: impl std::fmt::Display) -> Result<()> {
    if r.0 == 0 {
        return Ok(());
    }
    Err(Error::with_code(status_of_cu_result(r.0), r.0 as i32, format!("{what}: {}", describe_with(f, r))))
}

/// "CUDA_ERROR_INVALID_VALUE (invalid argument)".
fn describe_with(f: &DriverFns, r: sys::CUresult) -> String {
    let mut name: *const c_char = ptr::null();
    let mut text: *const c_char = ptr::null();
    // SAFETY: valid out-pointers; the driver returns static strings or an error.
    unsafe {
        if let Some(g) = f.cuGetErrorName {
            g(r, &mut name);
        }
        if let Some(g) = f.cuGetErrorString {
            g(r, &mut text);
        }
    }
    let s = |p: *const c_char| {
        // SAFETY: non-null pointers from cuGetError* are static C strings.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    match (s(name), s(text)) {
        (Some(n), Some(t)) => format!("{n} ({t})"),
        (Some(n), None) => n,
        _ => format!("CUresult {}", r.0),
    }
}

impl Driver {
    /// CUDA_SUCCESS -> Ok; otherwise an Error naming the code, its text and what was being done.
    pub fn check(&self, r: sys::CUresult, what: impl std::fmt::Display) -> Result<()> {
        check_with(&self.f, r, what)
    }

    /// "CUDA_ERROR_INVALID_VALUE (invalid argument)".
    pub fn describe(&self, r: sys::CUresult) -> String {
        describe_with(&self.f, r)
    }

    /// cuInit's result.
    pub fn initialised(&self) -> Result<()> {
        self.state.init.clone()
    }

    pub fn device_count(&self) -> Result<i32> {
        self.initialised()?;
        let f = self.need(self.f.cuDeviceGetCount, "cuDeviceGetCount")?;
        let mut n = 0;
        // SAFETY: valid out-pointer.
        self.check(unsafe { f(&mut n) }, "counting devices")?;
        // The driver's word, bounded before anything is sized by it.
        if !(0..=MAX_DEVICES).contains(&n) {
            return Err(Error::new(Status::Cuda, format!("the driver reported {n} devices")));
        }
        Ok(n)
    }

    pub fn attribute(&self, attr: sys::CUdevice_attribute, dev: i32) -> Result<i32> {
        self.initialised()?;
        let f = self.need(self.f.cuDeviceGetAttribute, "cuDeviceGetAttribute")?;
        let mut v = 0;
        // SAFETY: valid out-pointer; an out-of-range device is reported as an error.
        self.check(unsafe { f(&mut v, attr, dev) }, format_args!("reading attribute {} of device {dev}", attr.0))?;
        Ok(v)
    }

    /// The device's name, as the driver reports it ("NVIDIA H200").
    pub fn device_name(&self, index: i32) -> Result<String> {
        self.initialised()?;
        let get = self.need(self.f.cuDeviceGet, "cuDeviceGet")?;
        let name = self.need(self.f.cuDeviceGetName, "cuDeviceGetName")?;
        let mut dev = 0;
        // SAFETY: valid out-pointer; an out-of-range ordinal is reported as an error.
        self.check(unsafe { get(&mut dev, index) }, format_args!("getting device {index}"))?;
        let mut buf = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 chars and its length is passed; the driver writes a
        // NUL-terminated name into it.
        self.check(unsafe { name(buf.as_mut_ptr(), buf.len() as i32, dev) }, format_args!("naming device {index}"))?;
        buf[255] = 0;
        // SAFETY: NUL-terminated within the buffer (its last byte was just set to NUL).
        Ok(unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// Compute capability as major*10+minor (90 for an H200).
    pub fn device_sm(&self, dev: i32) -> Result<u32> {
        let major = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)?;
        let minor = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)?;
        Ok((major * 10 + minor) as u32)
    }

    /// `device_sm`, read once per device.
    pub fn device_sm_cached(&self, dev: i32) -> Result<u32> {
        let slot = usize::try_from(dev).ok().and_then(|i| self.state.sm.get(i));
        if let Some(v) = slot.map(|s| s.load(Ordering::Relaxed)).filter(|&v| v != 0) {
            return Ok(v);
        }
        let v = self.device_sm(dev)?;
        if let Some(s) = slot {
            s.store(v, Ordering::Relaxed);
        }
        Ok(v)
    }

    /// The compute capability of every device, when they all share one (most machines):
    /// then "which device will this run on" needs no driver call. Read once.
    pub fn uniform_sm(&self) -> Option<u32> {
        let v = match self.state.sm_all.load(Ordering::Relaxed) {
            0 => {
                let n = self.device_count().unwrap_or(0);
                let mut sms = (0..n).map(|dev| self.device_sm_cached(dev).ok());
                let first = sms.next().flatten();
                let v = match first {
                    Some(sm) if sms.all(|s| s == Some(sm)) => sm,
                    _ => u32::MAX,
                };
                self.state.sm_all.store(v, Ordering::Relaxed);
                v
            }
            v => v,
        };
        (v != u32::MAX).then_some(v)
    }

    /// The compute capability of every device this process can see (`CUDA_VISIBLE_DEVICES`
    /// applied), by ordinal; read once. Empty when there is none or they cannot be read.
    pub fn device_sms(&self) -> &[u32] {
        crate::fork::once(&self.state.sms, || {
            let n = self.device_count().unwrap_or(0);
            let sms: Option<Vec<u32>> = (0..n).map(|dev| self.device_sm_cached(dev).ok()).collect();
            sms.unwrap_or_default()
        })
        .as_slice()
    }

    /// The device of the current context, else 0.
    pub fn current_device(&self) -> Result<i32> {
        self.initialised()?;
        let cur = self.current_context()?;
        if cur.is_null() {
            return Ok(0);
        }
        let f = self.need(self.f.cuCtxGetDevice, "cuCtxGetDevice")?;
        let mut d = 0;
        // SAFETY: valid out-pointer; a context is current.
        self.check(unsafe { f(&mut d) }, "reading the current context's device")?;
        Ok(d)
    }

    pub fn current_context(&self) -> Result<sys::CUcontext> {
        let f = self.need(self.f.cuCtxGetCurrent, "cuCtxGetCurrent")?;
        let mut c: sys::CUcontext = ptr::null_mut();
        // SAFETY: valid out-pointer.
        self.check(unsafe { f(&mut c) }, "reading the current context")?;
        Ok(c)
    }

    /// Device `dev`'s primary context, retained once for the life of the process (the runtime
    /// shares the same one): for what is valid only while that context lives (a function, a
    /// global's address, a module, work queued on it).
    pub fn primary_context(&self, dev: i32) -> Result<sys::CUcontext> {
        self.initialised()?;
        let count = self.device_count()?;
        if dev < 0 || dev >= count {
            return Err(Error::new(Status::NoDevice, format!("device {dev} does not exist ({count} device(s))")));
        }
        crate::fork::watch(&PRIMARY_FORK);
        let mut list = self.state.primary.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() < count as usize {
            list.resize(count as usize, ptr::null_mut());
        }
        if list[dev as usize].is_null() {
            let f = self.need(self.f.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")?;
            let mut c: sys::CUcontext = ptr::null_mut();
            // SAFETY: valid out-pointer; dev checked above.
            self.check(unsafe { f(&mut c, dev) }, format_args!("retaining the primary context of device {dev}"))?;
            list[dev as usize] = c;
        }
        Ok(list[dev as usize])
    }

    /// The primary context cudyn holds for the process for `dev`, if it holds one.
    fn held_primary(&self, dev: i32) -> Option<sys::CUcontext> {
        let list = self.state.primary.lock().unwrap_or_else(|p| p.into_inner());
        usize::try_from(dev).ok().and_then(|i| list.get(i).copied()).filter(|c| !c.is_null())
    }

    /// Make device `dev`'s primary context current until the scope ends, when the thread's own
    /// current context (or none) is current again. `keep` says whether it is retained for the
    /// process (what a result that lives in the context needs) or only until the scope ends,
    /// when nothing cudyn handed out lives in it: a primary context no one else holds is then
    /// released again. (A driver without cuDevicePrimaryCtxRelease, older than any cudyn
    /// takes, would keep it for the process.)
    pub fn push_primary(&self, dev: i32, keep: Keep) -> Result<Scope<'_>> {
        let can_release = self.f.cuDevicePrimaryCtxRelease.is_some();
        let (ctx, release) = match (keep, self.held_primary(dev)) {
            (_, Some(c)) => (c, None),
            (Keep::ForCall, None) if can_release => {
                self.initialised()?;
                let count = self.device_count()?;
                if dev < 0 || dev >= count {
                    return Err(Error::new(
                        Status::NoDevice,
                        format!("device {dev} does not exist ({count} device(s))"),
                    ));
                }
                let f = self.need(self.f.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")?;
                let mut c: sys::CUcontext = ptr::null_mut();
                // SAFETY: valid out-pointer; dev checked above.
                self.check(unsafe { f(&mut c, dev) }, format_args!("retaining the primary context of device {dev}"))?;
                (c, Some(dev))
            }
            _ => (self.primary_context(dev)?, None),
        };
        let mut scope = Scope { d: self, restore: None, release };
        // SAFETY: `ctx` is a primary context retained (for the process, or by `scope`).
        unsafe { scope.make_current(ctx, format_args!("making device {dev}'s primary context current")) }?;
        Ok(scope)
    }

    /// The thread's current context if it has one (an empty scope), else device 0's primary
    /// context until the scope ends (see `push_primary`).
    pub fn current_or_primary(&self, keep: Keep) -> Result<Scope<'_>> {
        if !self.current_context()?.is_null() {
            return Ok(Scope { d: self, restore: None, release: None });
        }
        self.push_primary(0, keep)
    }

    /// Run `f` with some context current (queries like cuKernelGetName need one): the thread's
    /// own if it has one, else device 0's primary context for the duration only, retained for
    /// the call alone, so the thread's context state and the device's primary context are left
    /// as they were.
    pub fn with_context<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let _scope = self.current_or_primary(Keep::ForCall)?;
        f()
    }

    /// Run `f` as it is, and only if CUDA answers that it needs a context
    /// (CUDA_ERROR_INVALID_CONTEXT) again as `with_context` does. For the queries of a
    /// kernel (name, parameters, attributes): a primary context retained for one call and no
    /// one else's is created and destroyed with it, a hundred milliseconds and more, so a
    /// thread without a context that asked a kernel its name twenty times made twenty contexts.
    pub fn context_if_needed<R>(&self, mut f: impl FnMut() -> Result<R>) -> Result<R> {
        match f() {
            Err(e) if e.cuda_code == CUDA_ERROR_INVALID_CONTEXT && self.current_context()?.is_null() => {
                self.with_context(f)
            }
            other => other,
        }
    }

    /// Run `f` with device `dev`'s primary context current, then make the thread's own
    /// context (or none) current again. `keep` as for `push_primary`.
    pub fn with_device_context<R>(&self, dev: i32, keep: Keep, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let _scope = self.push_primary(dev, keep)?;
        f()
    }

    /// Give this thread a current context for work on `stream` until the scope ends: its own
    /// if it has one; else the stream's context, or device 0's primary context (retained for the
    /// process: the work queued lives in it) for the NULL and the special legacy / per-thread
    /// streams, as the runtime would.
    ///
    /// # Safety
    /// `stream` is NULL, a special stream (legacy, per-thread) or a live stream: CUDA does not
    /// check it.
    pub unsafe fn context_for_stream(&self, stream: sys::CUstream) -> Result<Scope<'_>> {
        if !self.current_context()?.is_null() {
            return Ok(Scope { d: self, restore: None, release: None });
        }
        self.initialised()?;
        if stream as usize <= 2 {
            return self.push_primary(0, Keep::ForProcess);
        }
        let f = self.need(self.f.cuStreamGetCtx, "cuStreamGetCtx")?;
        let mut c: sys::CUcontext = ptr::null_mut();
        // SAFETY: valid out-pointer; the stream is live (the caller's contract).
        self.check(unsafe { f(stream, &mut c) }, "finding the stream's context")?;
        let mut scope = Scope { d: self, restore: None, release: None };
        // SAFETY: the live stream's own context.
        unsafe { scope.make_current(c, "making the stream's context current") }?;
        Ok(scope)
    }
}

/// How long a primary context cudyn makes current for a call stays retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// For the rest of the process (once per device): the call hands out something that lives
    /// in the context.
    ForProcess,
    /// For the call only: nothing handed out lives in the context.
    ForCall,
}

/// A context cudyn made current for one call; when it ends the thread's context stack is as it
/// was (cuCtxSetCurrent replaces the stack's top, so setting the previous top back, or NULL,
/// which pops, restores it exactly) and a primary context retained for the call alone is
/// released.
#[must_use]
pub struct Scope<'d> {
    d: &'d Driver,
    /// The thread's current context before (NULL: none), once another was made current.
    restore: Option<sys::CUcontext>,
    release: Option<i32>,
}

impl Scope<'_> {
    /// Make `ctx` current until the scope ends.
    ///
    /// # Safety
    /// `ctx` is a live context (CUDA does not check it).
    unsafe fn make_current(&mut self, ctx: sys::CUcontext, what: impl std::fmt::Display) -> Result<()> {
        let set = self.d.need(self.d.f.cuCtxSetCurrent, "cuCtxSetCurrent")?;
        let before = self.d.current_context()?;
        // SAFETY: the caller's contract.
        self.d.check(unsafe { set(ctx) }, what)?;
        self.restore = Some(before);
        Ok(())
    }
}

impl Drop for Scope<'_> {
    fn drop(&mut self) {
        if let (Some(before), Some(set)) = (self.restore, self.d.f.cuCtxSetCurrent) {
            // SAFETY: the thread's previous current context (live: it was current until this
            // scope began) or NULL.
            unsafe { set(before) };
        }
        if let (Some(dev), Some(release)) = (self.release, self.d.f.cuDevicePrimaryCtxRelease) {
            // SAFETY: this scope retained device `dev`'s primary context once.
            unsafe { release(dev) };
        }
    }
}

// ---- Libraries ---------------------------------------------------------------------------
//
// Every `lib` below must be a live library handle: CUDA does not check library handles, and
// one that was unloaded crashes the process (see registry). Callers keep that promise by
// refusing the handles cudyn unloaded before calling.

impl Loader for Driver {
    unsafe fn load_data(&self, image: *const c_void, mut o: OptionArrays<'_>) -> Result<sys::CUlibrary> {
        self.initialised()?;
        let f = self.need(self.f.cuLibraryLoadData, "cuLibraryLoadData")?;
        let mut lib: sys::CUlibrary = ptr::null_mut();
        let (jk, jv, nj) = (o.jit_keys.as_mut_ptr(), o.jit_values.as_mut_ptr(), o.jit_keys.len() as u32);
        let (lk, lv, nl) = o.library_arrays();
        // SAFETY: the caller's contract (the image's own headers fit in its buffer; the option
        // values are what their keys need). CUjit_option and CUlibraryOption are u32 newtypes.
        let r = unsafe { f(&mut lib, image, jk.cast(), jv, nj, lk.cast(), lv, nl) };
        self.check(r, "loading the library through the driver (cuLibraryLoadData)")?;
        Ok(lib)
    }

    unsafe fn unload(&self, lib: sys::CUlibrary) -> Result<()> {
        let f = self.need(self.f.cuLibraryUnload, "cuLibraryUnload")?;
        // SAFETY: a live library handle (the caller's contract).
        self.check(unsafe { f(lib) }, "unloading the library (cuLibraryUnload)")
    }

    unsafe fn kernel(&self, lib: sys::CUlibrary, name: &CStr) -> Result<sys::CUkernel> {
        let f = self.need(self.f.cuLibraryGetKernel, "cuLibraryGetKernel")?;
        let mut k: sys::CUkernel = ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated name, a live library.
        let r = unsafe { f(&mut k, lib, name.as_ptr()) };
        self.check(r, format_args!("looking up kernel '{}'", name.to_string_lossy()))?;
        Ok(k)
    }

    unsafe fn managed(&self, lib: sys::CUlibrary, name: &CStr) -> Result<(*mut c_void, usize)> {
        self.initialised()?;
        let f = self.need(self.f.cuLibraryGetManaged, "cuLibraryGetManaged")?;
        let (mut p, mut n): (sys::CUdeviceptr, usize) = (0, 0);
        let what = || format!("looking up managed variable '{}'", name.to_string_lossy());
        // The variable lives in the library's module of the current context: with none, device
        // 0's primary context, retained for the process (not left current).
        let _scope = self.current_or_primary(Keep::ForProcess)?;
        // SAFETY: valid out-pointers, NUL-terminated name, a live library.
        self.check(unsafe { f(&mut p, &mut n, lib, name.as_ptr()) }, what())?;
        Ok((p as usize as *mut c_void, n))
    }

    unsafe fn unified_function(&self, lib: sys::CUlibrary, name: &CStr) -> Result<*mut c_void> {
        self.initialised()?;
        let f = self.need(self.f.cuLibraryGetUnifiedFunction, "cuLibraryGetUnifiedFunction")?;
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated name, a live library.
        let r = unsafe { f(&mut p, lib, name.as_ptr()) };
        let what = format_args!("looking up unified function '{}'", name.to_string_lossy());
        // The driver answers a name the library lacks with CUDA_ERROR_INVALID_VALUE (seen on
        // the H200, driver 580), as the runtime does, or CUDA_ERROR_NOT_FOUND: one status for
        // both (every other argument was checked).
        if matches!(r.0, 1 | 500) {
            return Err(self.check(r, what).unwrap_err().with_status(Status::NotFound));
        }
        self.check(r, what)?;
        Ok(p)
    }
}

impl Driver {
    /// Whether this driver can count and list a library's kernels (12.4+).
    pub fn lists_kernels(&self) -> bool {
        self.f.cuLibraryGetKernelCount.is_some() && self.f.cuLibraryEnumerateKernels.is_some()
    }

    /// The number of kernels in `lib`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    pub unsafe fn library_kernel_count(&self, lib: sys::CUlibrary) -> Result<u32> {
        let f = self.need(self.f.cuLibraryGetKernelCount, "cuLibraryGetKernelCount")?;
        let mut n: u32 = 0;
        // SAFETY: valid out-pointer, a live library.
        self.check(unsafe { f(&mut n, lib) }, "counting the library's kernels")?;
        Ok(n)
    }

    /// Write the first `out.len()` kernels of `lib` into `out` (at most as many as it has).
    ///
    /// # Safety
    /// `lib` is a live library handle.
    pub unsafe fn library_enumerate_kernels(&self, lib: sys::CUlibrary, out: &mut [sys::CUkernel]) -> Result<()> {
        let f = self.need(self.f.cuLibraryEnumerateKernels, "cuLibraryEnumerateKernels")?;
        let n = u32::try_from(out.len()).map_err(|_| Error::invalid("too many kernels to list"))?;
        // SAFETY: `out` has room for `n` handles; a live library.
        self.check(unsafe { f(out.as_mut_ptr(), n, lib) }, "listing the library's kernels")
    }
}

/// Make CUDA load `lib`'s module into the current context now (device 0's primary context,
/// retained for this call only, if the thread has none), compiling its PTX: CUDA loads lazily,
/// and would otherwise report a JIT error at first use instead of at the load.
///
/// # Safety
/// `lib` is a live library handle.
pub unsafe fn library_load_module(lib: sys::CUlibrary) -> Result<()> {
    let d = driver()?;
    let f = d.need(d.f.cuLibraryGetModule, "cuLibraryGetModule")?;
    let mut m: sys::CUmodule = ptr::null_mut();
    // SAFETY: valid out-pointer; a live library.
    d.with_context(|| d.check(unsafe { f(&mut m, lib) }, "compiling the library's PTX (JIT)"))
}

/// Device address and size of the `__device__` global `name` of `lib`, in the current
/// context (with none: device 0's primary context, retained for the process since the address
/// lives in it, current for this call only).
///
/// # Safety
/// `lib` is a live library handle.
pub unsafe fn library_global(lib: sys::CUlibrary, name: &CStr) -> Result<(*mut c_void, usize)> {
    let d = driver()?;
    // The address lives in the current context: with none, device 0's primary context,
    // retained for the process (not left current).
    let _scope = d.current_or_primary(Keep::ForProcess)?;
    let f = d.need(d.f.cuLibraryGetGlobal, "cuLibraryGetGlobal")?;
    let (mut p, mut n): (sys::CUdeviceptr, usize) = (0, 0);
    // SAFETY: valid out-pointers, NUL-terminated name, a context is current, a live library.
    d.check(
        unsafe { f(&mut p, &mut n, lib, name.as_ptr()) },
        format_args!("looking up global '{}'", name.to_string_lossy()),
    )?;
    Ok((p as usize as *mut c_void, n))
}

/// `library_global` in device `device`'s primary context, made current for the lookup only
/// (the thread's own context is current again after).
///
/// # Safety
/// `lib` is a live library handle.
pub unsafe fn library_global_on_device(lib: sys::CUlibrary, name: &CStr, device: i32) -> Result<(*mut c_void, usize)> {
    let d = driver()?;
    d.with_device_context(device, Keep::ForProcess, || {
        // SAFETY: the caller's contract.
        unsafe { library_global(lib, name) }.map_err(|e| e.context(format_args!("device {device}")))
    })
}

// ---- Kernels -------------------------------------------------------------------------------
//
// Every `k` below must be a live kernel handle: on a kernel whose library is gone the driver
// may crash (see registry), so callers refuse the kernels cudyn knows are dead first.

/// One kernel parameter: its byte offset in the parameter buffer and its size, as
/// `cuKernelGetParamInfo` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub offset: u32,
    pub size: u32,
}

/// CUDA's own pointer to the kernel's name: valid while the kernel's library is loaded.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_name(k: sys::CUkernel) -> Result<*const c_char> {
    let d = driver()?;
    let f = d.need(d.f.cuKernelGetName, "cuKernelGetName")?;
    let mut p: *const c_char = ptr::null();
    // SAFETY: valid out-pointer; a live kernel.
    d.context_if_needed(|| d.check(unsafe { f(&mut p, k) }, "reading the kernel's name"))?;
    if p.is_null() {
        return Err(Error::new(Status::Cuda, "cuKernelGetName returned no name"));
    }
    Ok(p)
}

const PARAM_INFO: &str = "cuKernelGetParamInfo (driver 12.4+)";

/// `kernel_param_info` with the entry point at hand.
///
/// # Safety
/// `k` is a live kernel handle; `f` is `d`'s cuKernelGetParamInfo.
#[inline]
unsafe fn param_info(
    d: &Driver,
    f: sys::PFN_cuKernelGetParamInfo,
    k: sys::CUkernel,
    i: usize,
) -> Result<Option<(usize, usize)>> {
    let (mut off, mut size) = (0usize, 0usize);
    // SAFETY: valid out-pointers; a live kernel; past the last parameter CUDA returns
    // CUDA_ERROR_INVALID_VALUE.
    match unsafe { f(k, i, &mut off, &mut size) } {
        sys::CUresult(0) => Ok(Some((off, size))),
        sys::CUresult(1) => Ok(None),
        r => d.check(r, "reading the kernel's parameters").map(|()| None),
    }
}

/// Whether `k` has exactly `n` parameters and, when `sizes` is given (`n` of them), each of
/// that size, asking the driver about parameter `n - 1` and `n` (and, with sizes, each one):
/// false for every other answer, an error, or a driver not open yet (the launch path's
/// check of a foreign kernel, allocation-free; the full check then explains).
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_has_params(k: sys::CUkernel, n: usize, sizes: Option<&[usize]>) -> bool {
    let Some(f) = driver_ready().and_then(|d| d.f.cuKernelGetParamInfo) else { return false };
    let (mut o, mut s) = (0usize, 0usize);
    let ok = match sizes {
        // SAFETY: valid out-pointers; a live kernel (the caller's contract).
        None => n == 0 || unsafe { f(k, n - 1, &mut o, &mut s) }.0 == 0,
        Some(sizes) => {
            sizes.len() == n
                && sizes.iter().enumerate().all(|(i, &want)| {
                    // SAFETY: as above.
                    unsafe { f(k, i, &mut o, &mut s) }.0 == 0 && s == want
                })
        }
    };
    // SAFETY: as above. CUDA_ERROR_INVALID_VALUE: no parameter at that index.
    ok && unsafe { f(k, n, &mut o, &mut s) }.0 == 1
}

/// The library `k` belongs to (`cuKernelGetLibrary`, driver 12.5+); None where the driver is
/// not open yet or lacks the call. Needs no context.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_library_if_open(k: sys::CUkernel) -> Result<Option<sys::CUlibrary>> {
    let Some(d) = driver_ready() else { return Ok(None) };
    let Some(f) = d.f.cuKernelGetLibrary else { return Ok(None) };
    let mut lib: sys::CUlibrary = ptr::null_mut();
    // SAFETY: valid out-pointer; a live kernel (the caller's contract).
    d.check(unsafe { f(&mut lib, k) }, "finding the kernel's library")?;
    Ok((!lib.is_null()).then_some(lib))
}

/// Every parameter of `k` (with no context current, in none unless CUDA asks for one: see
/// `context_if_needed`).
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_params(k: sys::CUkernel) -> Result<Vec<Param>> {
    let d = driver()?;
    d.initialised()?;
    let f = d.need(d.f.cuKernelGetParamInfo, PARAM_INFO)?;
    d.context_if_needed(|| {
        let mut out = Vec::new();
        // SAFETY: the caller's contract.
        while let Some((off, size)) = unsafe { param_info(d, f, k, out.len()) }? {
            out.push(Param { offset: off as u32, size: size as u32 });
            if out.len() > 4096 {
                return Err(Error::new(Status::Internal, "kernel reports more than 4096 parameters"));
            }
        }
        Ok(out)
    })
}

/// The `CUfunction` of `k` in the current context (with none: device 0's primary context,
/// retained for the process since the function lives in it, current for this call only).
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_function(k: sys::CUkernel) -> Result<sys::CUfunction> {
    let d = driver()?;
    // The function lives in the current context: with none, device 0's primary context,
    // retained for the process (not left current).
    let _scope = d.current_or_primary(Keep::ForProcess)?;
    let f = d.need(d.f.cuKernelGetFunction, "cuKernelGetFunction")?;
    let mut func: sys::CUfunction = ptr::null_mut();
    // SAFETY: valid out-pointer; a context is current; a live kernel.
    d.check(unsafe { f(&mut func, k) }, "getting the kernel's function for the current context")?;
    Ok(func)
}

/// Attribute `attr` (a CU_FUNC_ATTRIBUTE_* number) of `k` on device `device`.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_attribute(k: sys::CUkernel, attr: u32, device: i32) -> Result<i32> {
    let d = driver()?;
    d.initialised()?;
    let f = d.need(d.f.cuKernelGetAttribute, "cuKernelGetAttribute")?;
    let mut v = 0;
    d.context_if_needed(|| {
        // SAFETY: valid out-pointer; a live kernel; a bad device or attribute is an error.
        let r = unsafe { f(&mut v, sys::CUfunction_attribute(attr), k, device) };
        d.check(r, "cuKernelGetAttribute")
    })?;
    Ok(v)
}

/// Set attribute `attr` (a CU_FUNC_ATTRIBUTE_* number) of `k` on device `device`.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_set_attribute(k: sys::CUkernel, attr: u32, value: i32, device: i32) -> Result<()> {
    let d = driver()?;
    d.initialised()?;
    let f = d.need(d.f.cuKernelSetAttribute, "cuKernelSetAttribute")?;
    // SAFETY: plain values, validated by CUDA; a live kernel.
    let r = unsafe { f(sys::CUfunction_attribute(attr), value, k, device) };
    d.check(r, "cuKernelSetAttribute")
}

/// The library `k` belongs to (cuKernelGetLibrary, driver 12.5+).
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_library(k: sys::CUkernel) -> Result<sys::CUlibrary> {
    let d = driver()?;
    let f = d.need(d.f.cuKernelGetLibrary, "cuKernelGetLibrary (driver 12.5+)")?;
    let mut lib: sys::CUlibrary = ptr::null_mut();
    // SAFETY: valid out-pointer; a live kernel.
    d.check(unsafe { f(&mut lib, k) }, "finding the kernel's library (cuKernelGetLibrary)")?;
    Ok(lib)
}

/// Set `k`'s preferred cache configuration (a CUfunc_cache number) on device `device`.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn kernel_set_cache_config(k: sys::CUkernel, config: u32, device: i32) -> Result<()> {
    let d = driver()?;
    d.initialised()?;
    let f = d.need(d.f.cuKernelSetCacheConfig, "cuKernelSetCacheConfig")?;
    // SAFETY: plain values, validated by CUDA; a live kernel.
    d.check(unsafe { f(k, sys::CUfunc_cache(config), device) }, "cuKernelSetCacheConfig")
}

/// `lib`'s module in the current context (with none: device 0's primary context, retained for
/// the process since the module lives in it, current for this call only).
///
/// # Safety
/// `lib` is a live library handle.
pub unsafe fn library_module(lib: sys::CUlibrary) -> Result<sys::CUmodule> {
    let d = driver()?;
    let f = d.need(d.f.cuLibraryGetModule, "cuLibraryGetModule")?;
    let _scope = d.current_or_primary(Keep::ForProcess)?;
    let mut m: sys::CUmodule = ptr::null_mut();
    // SAFETY: valid out-pointer; a live library; a context is current.
    d.check(unsafe { f(&mut m, lib) }, "getting the library's module (cuLibraryGetModule)")?;
    Ok(m)
}

// ---- Occupancy ------------------------------------------------------------------------------
//
// CUDA's occupancy calls take a CUfunction: cudyn asks with the kernel's function in device
// `device`'s primary context, current (and retained, unless cudyn holds it already) for the
// call only; the function is used within the call and handed out nowhere.

/// Run `f` with `k`'s function in device `device`'s primary context.
///
/// # Safety
/// `k` is a live kernel handle.
unsafe fn with_function<R>(
    k: sys::CUkernel,
    device: i32,
    f: impl FnOnce(&Driver, sys::CUfunction) -> Result<R>,
) -> Result<R> {
    let d = driver()?;
    let get = d.need(d.f.cuKernelGetFunction, "cuKernelGetFunction")?;
    d.with_device_context(device, Keep::ForCall, || {
        let mut func: sys::CUfunction = ptr::null_mut();
        // SAFETY: valid out-pointer; a context is current; a live kernel.
        d.check(unsafe { get(&mut func, k) }, format_args!("getting the kernel's function on device {device}"))?;
        f(d, func)
    })
}

/// cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags of `k` on `device`.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn occupancy_max_active_blocks(
    k: sys::CUkernel,
    device: i32,
    block_size: i32,
    dynamic_smem: usize,
    flags: u32,
) -> Result<i32> {
    let query = |d: &Driver, func: sys::CUfunction| {
        let f = d.need(
            d.f.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        )?;
        let mut n = 0;
        // SAFETY: valid out-pointer; a function of the current context; plain values.
        d.check(
            unsafe { f(&mut n, func, block_size, dynamic_smem, flags) },
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        )?;
        Ok(n)
    };
    // SAFETY: the caller's contract.
    unsafe { with_function(k, device, query) }
}

/// cuOccupancyMaxPotentialBlockSizeWithFlags of `k` on `device`: (min grid size, block size).
///
/// # Safety
/// `k` is a live kernel handle; `smem_of_block`, when given, may be called (on this thread,
/// during the call) with any block size.
pub unsafe fn occupancy_max_potential_block_size(
    k: sys::CUkernel,
    device: i32,
    smem_of_block: sys::CUoccupancyB2DSize,
    dynamic_smem: usize,
    block_size_limit: i32,
    flags: u32,
) -> Result<(i32, i32)> {
    let query = |d: &Driver, func: sys::CUfunction| {
        let f = d.need(d.f.cuOccupancyMaxPotentialBlockSizeWithFlags, "cuOccupancyMaxPotentialBlockSizeWithFlags")?;
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; a function of the current context; the callback's
        // contract is the caller's.
        let r = unsafe { f(&mut grid, &mut block, func, smem_of_block, dynamic_smem, block_size_limit, flags) };
        d.check(r, "cuOccupancyMaxPotentialBlockSizeWithFlags")?;
        Ok((grid, block))
    };
    // SAFETY: the caller's contract.
    unsafe { with_function(k, device, query) }
}

/// cuOccupancyAvailableDynamicSMemPerBlock of `k` on `device`.
///
/// # Safety
/// `k` is a live kernel handle.
pub unsafe fn occupancy_available_dynamic_smem(
    k: sys::CUkernel,
    device: i32,
    num_blocks: i32,
    block_size: i32,
) -> Result<usize> {
    let query = |d: &Driver, func: sys::CUfunction| {
        let f = d.need(
            d.f.cuOccupancyAvailableDynamicSMemPerBlock,
            "cuOccupancyAvailableDynamicSMemPerBlock (driver 11.0+)",
        )?;
        let mut n = 0usize;
        // SAFETY: valid out-pointer; a function of the current context; plain values.
        d.check(unsafe { f(&mut n, func, num_blocks, block_size) }, "cuOccupancyAvailableDynamicSMemPerBlock")?;
        Ok(n)
    };
    // SAFETY: the caller's contract.
    unsafe { with_function(k, device, query) }
}

/// Which cluster occupancy query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterQuery {
    /// cuOccupancyMaxPotentialClusterSize.
    MaxPotentialSize,
    /// cuOccupancyMaxActiveClusters.
    MaxActive,
}

/// A cluster occupancy query of `k` on `device` for the launch `cfg` describes.
///
/// # Safety
/// `k` is a live kernel handle; `cfg`'s stream is NULL, special or live, and its first
/// `numAttrs` attributes are written.
pub unsafe fn occupancy_cluster(
    k: sys::CUkernel,
    device: i32,
    cfg: &sys::CUlaunchConfig,
    q: ClusterQuery,
) -> Result<i32> {
    let query = |d: &Driver, func: sys::CUfunction| {
        let (f, name) = match q {
            ClusterQuery::MaxPotentialSize => {
                (d.f.cuOccupancyMaxPotentialClusterSize, "cuOccupancyMaxPotentialClusterSize (driver 11.8+)")
            }
            ClusterQuery::MaxActive => {
                (d.f.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters (driver 11.8+)")
            }
        };
        let f = d.need(f, name)?;
        let mut n = 0;
        // SAFETY: valid out-pointer; a function of the current context; the config's
        // contract is the caller's.
        d.check(unsafe { f(&mut n, func, cfg) }, name)?;
        Ok(n)
    };
    // SAFETY: the caller's contract.
    unsafe { with_function(k, device, query) }
}

// ---- Preloading ----------------------------------------------------------------------------
//
// Eager loading onto a device (src/preload.rs): the caller has made the device's context
// current; these load into it.

/// `lib`'s module in the current context, loaded now (cuLibraryGetModule): the code of the
/// library for this context's device, PTX compiled by the JIT if it has to be.
///
/// # Safety
/// `lib` is a live library handle; a context is current.
pub unsafe fn library_module_here(lib: sys::CUlibrary) -> Result<sys::CUmodule> {
    let d = driver()?;
    let f = d.need(d.f.cuLibraryGetModule, "cuLibraryGetModule")?;
    let mut m: sys::CUmodule = ptr::null_mut();
    // SAFETY: valid out-pointer; a live library; a context is current (the caller's contract).
    d.check(unsafe { f(&mut m, lib) }, "loading the library's code (cuLibraryGetModule)")?;
    Ok(m)
}

/// Finish loading `func` (cuFuncLoad, driver 12.4+): under lazy loading a function handle may
/// be only partly loaded. False when the driver has no cuFuncLoad (older drivers load the
/// function with its handle).
///
/// # Safety
/// `func` is a live function handle of the current context.
pub unsafe fn function_load(func: sys::CUfunction) -> Result<bool> {
    let d = driver()?;
    let Some(f) = d.f.cuFuncLoad else { return Ok(false) };
    // SAFETY: a live function handle (the caller's contract).
    d.check(unsafe { f(func) }, "loading the kernel's code (cuFuncLoad)")?;
    Ok(true)
}

/// Whether `func` is fully loaded (cuFuncIsLoaded, driver 12.4+); None without that call.
///
/// # Safety
/// `func` is a live function handle.
pub unsafe fn function_is_loaded(func: sys::CUfunction) -> Result<Option<bool>> {
    let d = driver()?;
    let Some(f) = d.f.cuFuncIsLoaded else { return Ok(None) };
    let mut state = sys::CUfunctionLoadingState::CU_FUNCTION_LOADING_STATE_UNLOADED;
    // SAFETY: valid out-pointer; a live function handle (the caller's contract).
    d.check(unsafe { f(&mut state, func) }, "asking whether the kernel is loaded (cuFuncIsLoaded)")?;
    Ok(Some(state == sys::CUfunctionLoadingState::CU_FUNCTION_LOADING_STATE_LOADED))
}

// ---- Launching ------------------------------------------------------------------------------

/// `cuLaunchKernelEx`, for the launch path to keep (opening the driver on first use).
pub fn launch_entry() -> Result<sys::PFN_cuLaunchKernelEx> {
    let d = driver()?;
    d.need(d.f.cuLaunchKernelEx, "cuLaunchKernelEx")
}

/// CUDA's launch through `f` (`launch_entry`'s), returning its CUresult as a number: the
/// launch fast path's one indirect call, inlined into it.
///
/// # Safety
/// `f` is `cuLaunchKernelEx`; `k` is a live kernel; `cfg`'s stream is NULL, special or live
/// and its first `numAttrs` attributes are written; `params` holds one pointer per parameter,
/// each to a value of the parameter's size (or is NULL for a kernel without parameters).
#[inline(always)]
pub unsafe fn launch_kernel_ex(
    f: sys::PFN_cuLaunchKernelEx,
    cfg: &sys::CUlaunchConfig,
    k: sys::CUkernel,
    params: *mut *mut c_void,
) -> u32 {
    // SAFETY: the caller's contract; a CUkernel may be passed as the CUfunction of
    // cuLaunchKernelEx.
    unsafe { f(cfg, k as sys::CUfunction, params, ptr::null_mut()) }.0
}

/// The error of a driver launch that returned `code` (not success).
pub fn launch_error(code: u32) -> Error {
    match driver() {
        Ok(d) => match d.check(sys::CUresult(code), "launching through the driver (cuLaunchKernelEx)") {
            Err(e) => e,
            Ok(()) => Error::new(Status::Internal, "a failed launch reported success"),
        },
        Err(e) => e,
    }
}
