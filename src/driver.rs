//! The CUDA driver (libcuda.so.1), opened at run time; every entry point is resolved once
//! through `cuGetProcAddress_v2` with the CUDA version whose ABI cudyn was written against.

use crate::dl::{self, Component, Lib};
use crate::error::{Error, Result, Status};
use crate::sys;
use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::ptr;
use std::sync::{Mutex, OnceLock};

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
    cuDeviceGet: PFN_cuDeviceGet = "cuDeviceGet" @ 2000,
    cuDeviceGetCount: PFN_cuDeviceGetCount = "cuDeviceGetCount" @ 2000,
    cuDeviceGetAttribute: PFN_cuDeviceGetAttribute = "cuDeviceGetAttribute" @ 2000,
    cuDeviceGetName: PFN_cuDeviceGetName = "cuDeviceGetName" @ 2000,
    cuDevicePrimaryCtxRetain: PFN_cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" @ 7000,
    cuCtxGetCurrent: PFN_cuCtxGetCurrent = "cuCtxGetCurrent" @ 4000,
    cuCtxSetCurrent: PFN_cuCtxSetCurrent = "cuCtxSetCurrent" @ 4000,
    cuCtxGetDevice: PFN_cuCtxGetDevice = "cuCtxGetDevice" @ 2000,
    cuCtxSynchronize: PFN_cuCtxSynchronize = "cuCtxSynchronize" @ 2000,
    cuStreamGetCtx: PFN_cuStreamGetCtx = "cuStreamGetCtx" @ 9020,
    cuLibraryLoadData: PFN_cuLibraryLoadData = "cuLibraryLoadData" @ 12000,
    cuLibraryLoadFromFile: PFN_cuLibraryLoadFromFile = "cuLibraryLoadFromFile" @ 12000,
    cuLibraryUnload: PFN_cuLibraryUnload = "cuLibraryUnload" @ 12000,
    cuLibraryGetKernel: PFN_cuLibraryGetKernel = "cuLibraryGetKernel" @ 12000,
    cuLibraryGetKernelCount: PFN_cuLibraryGetKernelCount = "cuLibraryGetKernelCount" @ 12040,
    cuLibraryEnumerateKernels: PFN_cuLibraryEnumerateKernels = "cuLibraryEnumerateKernels" @ 12040,
    cuLibraryGetGlobal: PFN_cuLibraryGetGlobal = "cuLibraryGetGlobal" @ 12000,
    cuLibraryGetModule: PFN_cuLibraryGetModule = "cuLibraryGetModule" @ 12000,
    cuLibraryGetManaged: PFN_cuLibraryGetManaged = "cuLibraryGetManaged" @ 12000,
    cuLibraryGetUnifiedFunction: PFN_cuLibraryGetUnifiedFunction = "cuLibraryGetUnifiedFunction" @ 12000,
    cuKernelGetName: PFN_cuKernelGetName = "cuKernelGetName" @ 12030,
    cuKernelGetParamInfo: PFN_cuKernelGetParamInfo = "cuKernelGetParamInfo" @ 12040,
    cuKernelGetFunction: PFN_cuKernelGetFunction = "cuKernelGetFunction" @ 12000,
    cuKernelGetAttribute: PFN_cuKernelGetAttribute = "cuKernelGetAttribute" @ 12000,
    cuKernelSetAttribute: PFN_cuKernelSetAttribute = "cuKernelSetAttribute" @ 12000,
    cuKernelGetLibrary: PFN_cuKernelGetLibrary = "cuKernelGetLibrary" @ 12050,
    cuLaunchKernelEx: PFN_cuLaunchKernelEx = "cuLaunchKernelEx" @ 11060,
    cuLaunchKernel: PFN_cuLaunchKernel = "cuLaunchKernel" @ 4000,
}

pub struct Driver {
    pub lib: Lib,
    /// cuDriverGetVersion, e.g. 13000.
    pub version: i32,
    pub f: DriverFns,
    /// cuInit's outcome: a driver with no usable GPU loads, but calls that need one fail.
    init: std::result::Result<(), Error>,
    primary: Mutex<Vec<sys::CUcontext>>,
    /// Compute capability per device (0: not read yet); it never changes in a process.
    sm: [std::sync::atomic::AtomicU32; 64],
    /// The compute capability every device shares (0: not read yet; u32::MAX: they differ or
    /// there is none).
    sm_all: std::sync::atomic::AtomicU32,
}

// SAFETY: the function table is plain function pointers; the primary-context list is behind a
// Mutex; CUcontext handles may be used from any thread.
unsafe impl Send for Driver {}
unsafe impl Sync for Driver {}

static DRIVER: OnceLock<std::result::Result<Driver, Error>> = OnceLock::new();

/// The process's driver, opened on first use.
pub fn driver() -> Result<&'static Driver> {
    if let Some(d) = driver_ready() {
        return Ok(d); // no initialisation check, no clone
    }
    DRIVER.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The driver if it is already open (the launch fast path: one load, no initialisation).
#[inline]
pub fn driver_ready() -> Option<&'static Driver> {
    DRIVER.get()?.as_ref().ok()
}

/// The driver if it loaded and initialised a GPU, without ever erroring.
pub fn driver_if_usable() -> Option<&'static Driver> {
    driver().ok().filter(|d| d.init.is_ok())
}

fn load() -> Result<Driver> {
    dl::open(Component::Driver, |lib| {
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
        let mut d = Driver {
            lib,
            version,
            f,
            init: Ok(()),
            primary: Mutex::new(Vec::new()),
            sm: [const { std::sync::atomic::AtomicU32::new(0) }; 64],
            sm_all: std::sync::atomic::AtomicU32::new(0),
        };
        d.init = match d.f.cuInit {
            // SAFETY: cuInit(0) is always valid to call, any number of times.
            Some(init) => d.check(unsafe { init(0) }, "initialising the CUDA driver (cuInit)"),
            None => Err(Error::new(Status::UnsupportedVersion, "driver has no cuInit")),
        };
        Ok(d)
    })
}

/// 12080 -> "12.8".
pub fn fmt_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The most specific cudyn status for a CUresult or cudaError_t (their numbers agree for
/// every code mapped here).
pub fn status_of_cuda_code(code: u32) -> Status {
    match code {
        1 | 400 | 201 | 709 => Status::InvalidArgument, // invalid value / handle / context
        35 | 222 => Status::UnsupportedVersion,         // insufficient driver, PTX too new
        34 => Status::DriverNotFound,                   // stub library
        100 | 101 | 46 => Status::NoDevice,             // no device, invalid device, unavailable
        200 | 218 | 220 | 300 => Status::InvalidImage,  // invalid image/PTX/source
        209 => Status::NoBinaryForDevice,
        500 => Status::NotFound,
        301 | 304 => Status::Io,
        _ => Status::Cuda,
    }
}

impl Driver {
    /// CUDA_SUCCESS -> Ok; otherwise an Error naming the code, its text and what was being done.
    pub fn check(&self, r: sys::CUresult, what: impl std::fmt::Display) -> Result<()> {
        if r.0 == 0 {
            return Ok(());
        }
        Err(Error::with_code(status_of_cuda_code(r.0), r.0 as i32, format!("{what}: {}", self.describe(r))))
    }

    /// "CUDA_ERROR_INVALID_VALUE (invalid argument)".
    pub fn describe(&self, r: sys::CUresult) -> String {
        let mut name: *const c_char = ptr::null();
        let mut text: *const c_char = ptr::null();
        // SAFETY: valid out-pointers; the driver returns static strings or an error.
        unsafe {
            if let Some(f) = self.f.cuGetErrorName {
                f(r, &mut name);
            }
            if let Some(f) = self.f.cuGetErrorString {
                f(r, &mut text);
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

    /// The entry point, or UnsupportedVersion naming it and the driver's version.
    pub fn need<T: Copy>(&self, f: Option<T>, name: &str) -> Result<T> {
        f.ok_or_else(|| {
            Error::new(
                Status::UnsupportedVersion,
                format!("{name} is missing from this driver (CUDA {})", fmt_version(self.version)),
            )
        })
    }

    /// cuInit's result.
    pub fn initialised(&self) -> Result<()> {
        self.init.clone()
    }

    pub fn device_count(&self) -> Result<i32> {
        self.initialised()?;
        let f = self.need(self.f.cuDeviceGetCount, "cuDeviceGetCount")?;
        let mut n = 0;
        // SAFETY: valid out-pointer.
        self.check(unsafe { f(&mut n) }, "counting devices")?;
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

    /// Compute capability as major*10+minor (90 for an H200).
    pub fn device_sm(&self, dev: i32) -> Result<u32> {
        let major = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)?;
        let minor = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)?;
        Ok((major * 10 + minor) as u32)
    }

    /// `device_sm`, read once per device.
    pub fn device_sm_cached(&self, dev: i32) -> Result<u32> {
        use std::sync::atomic::Ordering;
        let slot = usize::try_from(dev).ok().and_then(|i| self.sm.get(i));
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
        use std::sync::atomic::Ordering;
        let v = match self.sm_all.load(Ordering::Relaxed) {
            0 => {
                let n = self.device_count().unwrap_or(0);
                let mut sms = (0..n).map(|dev| self.device_sm_cached(dev).ok());
                let first = sms.next().flatten();
                let v = match first {
                    Some(sm) if sms.all(|s| s == Some(sm)) => sm,
                    _ => u32::MAX,
                };
                self.sm_all.store(v, Ordering::Relaxed);
                v
            }
            v => v,
        };
        (v != u32::MAX).then_some(v)
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
    /// shares the same one).
    pub fn primary_context(&self, dev: i32) -> Result<sys::CUcontext> {
        self.initialised()?;
        let count = self.device_count()?;
        if dev < 0 || dev >= count {
            return Err(Error::new(Status::NoDevice, format!("device {dev} does not exist ({count} device(s))")));
        }
        let mut list = self.primary.lock().unwrap_or_else(|p| p.into_inner());
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

    /// Run `f` with some context current (queries like cuKernelGetParamInfo need one): the
    /// thread's own if it has one, else device 0's primary context for the duration only, so
    /// the thread's context state is left as it was.
    pub fn with_context<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        if !self.current_context()?.is_null() {
            return f();
        }
        let set = self.need(self.f.cuCtxSetCurrent, "cuCtxSetCurrent")?;
        let ctx = self.primary_context(0)?;
        // SAFETY: ctx is device 0's retained primary context.
        self.check(unsafe { set(ctx) }, "making a context current")?;
        let r = f();
        // SAFETY: NULL unbinds the context from this thread, restoring what it had.
        unsafe { set(ptr::null_mut()) };
        r
    }

    /// Make sure this thread has a current context for work on `stream`: if it has one, keep
    /// it; else use the stream's own context, or device 0's primary context for the NULL
    /// (and the special legacy / per-thread) stream — what the runtime would do.
    pub(crate) fn ensure_context(&self, stream: sys::CUstream) -> Result<()> {
        if !self.current_context()?.is_null() {
            return Ok(());
        }
        self.initialised()?;
        let set = self.need(self.f.cuCtxSetCurrent, "cuCtxSetCurrent")?;
        let special = stream as usize <= 2;
        let ctx = if special {
            self.primary_context(0)?
        } else {
            let f = self.need(self.f.cuStreamGetCtx, "cuStreamGetCtx")?;
            let mut c: sys::CUcontext = ptr::null_mut();
            // SAFETY: valid out-pointer; an invalid stream is reported as an error.
            self.check(unsafe { f(stream, &mut c) }, "finding the stream's context")?;
            c
        };
        // SAFETY: ctx is a live context (primary, retained; or the stream's).
        self.check(unsafe { set(ctx) }, "making a context current")
    }
}
