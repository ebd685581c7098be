//! The CUDA runtime (libcudart.so.13, else .so.12 at 12.8 or newer), opened at run time;
//! entry points resolved by name once, a missing one reported when it is needed.

use crate::dl::{self, Component, Lib};
use crate::driver::{fmt_version, status_of_cuda_code};
use crate::error::{Error, Result, Status};
use crate::sys;
use std::ffi::CStr;
use std::sync::OnceLock;

/// Oldest runtime cudyn accepts: cudaLibraryLoadData and friends arrived in 12.8.
pub const MIN_RUNTIME_VERSION: i32 = 12080;

crate::dl::symbol_table! {
    pub struct RuntimeFns {
        cudaRuntimeGetVersion: PFN_cudaRuntimeGetVersion = "cudaRuntimeGetVersion",
        cudaDriverGetVersion: PFN_cudaDriverGetVersion = "cudaDriverGetVersion",
        cudaGetErrorName: PFN_cudaGetErrorName = "cudaGetErrorName",
        cudaGetErrorString: PFN_cudaGetErrorString = "cudaGetErrorString",
        cudaGetDeviceCount: PFN_cudaGetDeviceCount = "cudaGetDeviceCount",
        cudaGetDevice: PFN_cudaGetDevice = "cudaGetDevice",
        cudaSetDevice: PFN_cudaSetDevice = "cudaSetDevice",
        cudaDeviceGetAttribute: PFN_cudaDeviceGetAttribute = "cudaDeviceGetAttribute",
        cudaFree: PFN_cudaFree = "cudaFree",
        cudaLibraryLoadData: PFN_cudaLibraryLoadData = "cudaLibraryLoadData",
        cudaLibraryLoadFromFile: PFN_cudaLibraryLoadFromFile = "cudaLibraryLoadFromFile",
        cudaLibraryUnload: PFN_cudaLibraryUnload = "cudaLibraryUnload",
        cudaLibraryGetKernel: PFN_cudaLibraryGetKernel = "cudaLibraryGetKernel",
        cudaLibraryGetKernelCount: PFN_cudaLibraryGetKernelCount = "cudaLibraryGetKernelCount",
        cudaLibraryEnumerateKernels: PFN_cudaLibraryEnumerateKernels = "cudaLibraryEnumerateKernels",
        cudaLibraryGetGlobal: PFN_cudaLibraryGetGlobal = "cudaLibraryGetGlobal",
        cudaLibraryGetManaged: PFN_cudaLibraryGetManaged = "cudaLibraryGetManaged",
        cudaLibraryGetUnifiedFunction: PFN_cudaLibraryGetUnifiedFunction = "cudaLibraryGetUnifiedFunction",
        cudaLaunchKernelExC: PFN_cudaLaunchKernelExC = "cudaLaunchKernelExC",
        cudaLaunchKernel: PFN_cudaLaunchKernel = "cudaLaunchKernel",
        cudaKernelSetAttributeForDevice: PFN_cudaKernelSetAttributeForDevice = "cudaKernelSetAttributeForDevice",
        cudaGetLastError: PFN_cudaGetLastError = "cudaGetLastError",
        cudaGetDriverEntryPointByVersion: PFN_cudaGetDriverEntryPointByVersion = "cudaGetDriverEntryPointByVersion",
    }
}

pub struct Runtime {
    pub lib: Lib,
    /// cudaRuntimeGetVersion, e.g. 13000.
    pub version: i32,
    pub f: RuntimeFns,
}

static RUNTIME: OnceLock<std::result::Result<Runtime, Error>> = OnceLock::new();

/// The process's CUDA runtime, opened on first use.
pub fn runtime() -> Result<&'static Runtime> {
    if let Some(r) = runtime_ready() {
        return Ok(r);
    }
    RUNTIME.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// The runtime if it is already open (the launch fast path).
#[inline]
pub fn runtime_ready() -> Option<&'static Runtime> {
    RUNTIME.get()?.as_ref().ok()
}

fn load() -> Result<Runtime> {
    dl::open(Component::Runtime, |lib| {
        let f = RuntimeFns::resolve(&lib);
        let mut version = 0;
        if let Some(get) = f.cudaRuntimeGetVersion {
            // SAFETY: valid out-pointer; cudaRuntimeGetVersion needs no device.
            unsafe { get(&mut version) };
        }
        if version < MIN_RUNTIME_VERSION {
            return Err(Error::new(
                Status::UnsupportedVersion,
                format!(
                    "runtime is CUDA {}, cudyn needs {} or newer",
                    fmt_version(version),
                    fmt_version(MIN_RUNTIME_VERSION)
                ),
            ));
        }
        Ok(Runtime { lib, version, f })
    })
}

impl Runtime {
    pub fn check(&self, r: sys::cudaError_t, what: impl std::fmt::Display) -> Result<()> {
        if r.0 == 0 {
            return Ok(());
        }
        // The runtime keeps a sticky-free "last error" too; read it so it does not leak into
        // the caller's next cudaGetLastError.
        if let Some(f) = self.f.cudaGetLastError {
            // SAFETY: no arguments.
            unsafe { f() };
        }
        let mut status = status_of_cuda_code(r.0);
        let mut msg = format!("{what}: {}", self.describe(r));
        // With no driver at all the runtime says "insufficient driver" (35) or "no device"
        // (100); the driver's own search says what is really missing.
        if r.0 == 35 || r.0 == 100 {
            if let Err(e) = crate::driver::driver() {
                status = e.status;
                msg = format!("{msg}; {}", e.message);
            }
        }
        Err(Error::with_code(status, r.0 as i32, msg))
    }

    pub fn describe(&self, r: sys::cudaError_t) -> String {
        let s = |f: Option<sys::PFN_cudaGetErrorName>| {
            // SAFETY: cudaGetErrorName/String return static strings for any code.
            f.map(|f| unsafe { f(r) })
                .filter(|p| !p.is_null())
                .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        match (s(self.f.cudaGetErrorName), s(self.f.cudaGetErrorString)) {
            (Some(n), Some(t)) => format!("{n} ({t})"),
            (Some(n), None) => n,
            _ => format!("cudaError_t {}", r.0),
        }
    }

    pub fn need<T: Copy>(&self, f: Option<T>, name: &str) -> Result<T> {
        f.ok_or_else(|| {
            Error::new(
                Status::UnsupportedVersion,
                format!("{name} is missing from this runtime (CUDA {})", fmt_version(self.version)),
            )
        })
    }

    pub fn device_count(&self) -> Result<i32> {
        let f = self.need(self.f.cudaGetDeviceCount, "cudaGetDeviceCount")?;
        let mut n = 0;
        // SAFETY: valid out-pointer.
        self.check(unsafe { f(&mut n) }, "counting devices")?;
        Ok(n)
    }
}
