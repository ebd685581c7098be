//! The CUDA runtime (libcudart.so.13, else .so.12 at 12.8 or newer), opened at run time;
//! entry points resolved by name once, a missing one reported when it is needed. Its calls,
//! as typed functions returning `Result`: libraries and the launch entry points.

use super::api::status_of_cuda_error;
use super::api::{Loader, OptionArrays};
use super::dl::{Component, Lib};
use super::open::{fmt_version, Lazy, Opened};
use super::sys;
use crate::error::{Error, Result, Status};
use std::ffi::{c_void, CStr};
use std::ptr;

/// Oldest runtime cudyn accepts: cudaLibraryLoadData and friends arrived in 12.8.
pub const MIN_RUNTIME_VERSION: i32 = 12080;

super::dl::symbol_table! {
    pub struct RuntimeFns {
        cudaRuntimeGetVersion: PFN_cudaRuntimeGetVersion = "cudaRuntimeGetVersion",
        cudaGetErrorName: PFN_cudaGetErrorName = "cudaGetErrorName",
        cudaGetErrorString: PFN_cudaGetErrorString = "cudaGetErrorString",
        cudaGetLastError: PFN_cudaGetLastError = "cudaGetLastError",
        cudaLibraryLoadData: PFN_cudaLibraryLoadData = "cudaLibraryLoadData",
        cudaLibraryUnload: PFN_cudaLibraryUnload = "cudaLibraryUnload",
        cudaLibraryGetKernel: PFN_cudaLibraryGetKernel = "cudaLibraryGetKernel",
        cudaLibraryGetKernelCount: PFN_cudaLibraryGetKernelCount = "cudaLibraryGetKernelCount",
        cudaLibraryEnumerateKernels: PFN_cudaLibraryEnumerateKernels = "cudaLibraryEnumerateKernels",
        cudaLibraryGetManaged: PFN_cudaLibraryGetManaged = "cudaLibraryGetManaged",
        cudaLibraryGetUnifiedFunction: PFN_cudaLibraryGetUnifiedFunction = "cudaLibraryGetUnifiedFunction",
        cudaLaunchKernelExC: PFN_cudaLaunchKernelExC = "cudaLaunchKernelExC",
        cudaLaunchKernel: PFN_cudaLaunchKernel = "cudaLaunchKernel",
        cudaGetKernel: PFN_cudaGetKernel = "cudaGetKernel",
    }
}

/// The CUDA runtime, opened.
pub type Runtime = Opened<RuntimeFns>;

static RUNTIME: Lazy<RuntimeFns> = Lazy::new(Component::Runtime, accept);

/// The process's CUDA runtime, opened on first use.
pub fn runtime() -> Result<&'static Runtime> {
    RUNTIME.get()
}

/// A candidate libcudart: at least MIN_RUNTIME_VERSION.
fn accept(lib: &Lib) -> Result<(i32, RuntimeFns, ())> {
    let f = RuntimeFns::resolve(lib);
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
    Ok((version, f, ()))
}

impl Runtime {
    /// cudaSuccess -> Ok; otherwise an Error naming the code, its text and what was being done.
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
        let mut status = status_of_cuda_error(r.0);
        let mut msg = format!("{what}: {}", self.describe(r));
        // With no driver at all the runtime says "insufficient driver" (35) or "no device"
        // (100); the driver's own search says what is really missing.
        if r.0 == 35 || r.0 == 100 {
            if let Err(e) = super::driver::driver() {
                status = e.status;
                msg = format!("{msg}; {}", e.message);
            }
        }
        Err(Error::with_code(status, r.0 as i32, msg))
    }

    /// "cudaErrorInvalidValue (invalid argument)".
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

    /// The number of kernels in `lib`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    pub unsafe fn library_kernel_count(&self, lib: sys::CUlibrary) -> Result<u32> {
        let f = self.need(self.f.cudaLibraryGetKernelCount, "cudaLibraryGetKernelCount")?;
        let mut n: u32 = 0;
        // SAFETY: valid out-pointer, a live library.
        self.check(unsafe { f(&mut n, lib) }, "counting the library's kernels")?;
        Ok(n)
    }

    /// Write the first `out.len()` kernels of `lib` into `out`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    pub unsafe fn library_enumerate_kernels(&self, lib: sys::CUlibrary, out: &mut [sys::CUkernel]) -> Result<()> {
        let f = self.need(self.f.cudaLibraryEnumerateKernels, "cudaLibraryEnumerateKernels")?;
        let n = u32::try_from(out.len()).map_err(|_| Error::invalid("too many kernels to list"))?;
        // SAFETY: `out` has room for `n` handles; a live library.
        self.check(unsafe { f(out.as_mut_ptr(), n, lib) }, "listing the library's kernels")
    }
}

impl Loader for Runtime {
    unsafe fn load_data(&self, image: *const c_void, mut o: OptionArrays<'_>) -> Result<sys::CUlibrary> {
        let f = self.need(self.f.cudaLibraryLoadData, "cudaLibraryLoadData")?;
        let mut lib: sys::CUlibrary = ptr::null_mut();
        let (jk, jv, nj) = (o.jit_keys.as_mut_ptr(), o.jit_values.as_mut_ptr(), o.jit_keys.len() as u32);
        let (lk, lv, nl) = o.library_arrays();
        // SAFETY: the caller's contract (the image's own headers fit in its buffer; the option
        // values are what their keys need). cudaJitOption and cudaLibraryOption are u32 newtypes.
        let r = unsafe { f(&mut lib, image, jk.cast(), jv, nj, lk.cast(), lv, nl) };
        self.check(r, "loading the library through the runtime (cudaLibraryLoadData)")?;
        Ok(lib)
    }

    unsafe fn unload(&self, lib: sys::CUlibrary) -> Result<()> {
        let f = self.need(self.f.cudaLibraryUnload, "cudaLibraryUnload")?;
        // SAFETY: a live library handle (the caller's contract).
        self.check(unsafe { f(lib) }, "unloading the library (cudaLibraryUnload)")
    }

    unsafe fn kernel(&self, lib: sys::CUlibrary, name: &CStr) -> Result<sys::CUkernel> {
        let f = self.need(self.f.cudaLibraryGetKernel, "cudaLibraryGetKernel")?;
        let mut k: sys::CUkernel = ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated name, a live library.
        let r = unsafe { f(&mut k, lib, name.as_ptr()) };
        self.check(r, format_args!("looking up kernel '{}'", name.to_string_lossy()))?;
        Ok(k)
    }

    unsafe fn managed(&self, lib: sys::CUlibrary, name: &CStr) -> Result<(*mut c_void, usize)> {
        let f = self.need(self.f.cudaLibraryGetManaged, "cudaLibraryGetManaged")?;
        let (mut p, mut n): (*mut c_void, usize) = (ptr::null_mut(), 0);
        // SAFETY: valid out-pointers, NUL-terminated name, a live library.
        let r = unsafe { f(&mut p, &mut n, lib, name.as_ptr()) };
        self.check(r, format_args!("looking up managed variable '{}'", name.to_string_lossy()))?;
        Ok((p, n))
    }

    unsafe fn unified_function(&self, lib: sys::CUlibrary, name: &CStr) -> Result<*mut c_void> {
        let f = self.need(self.f.cudaLibraryGetUnifiedFunction, "cudaLibraryGetUnifiedFunction")?;
        let mut p: *mut c_void = ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated name, a live library.
        let r = unsafe { f(&mut p, lib, name.as_ptr()) };
        let what = format_args!("looking up unified function '{}'", name.to_string_lossy());
        // The runtime answers a name the library lacks with cudaErrorInvalidValue, as the driver
        // does: one status, NOT_FOUND, for both (every other argument was checked).
        if r.0 == 1 {
            return Err(self.check(r, what).unwrap_err().with_status(Status::NotFound));
        }
        self.check(r, what)?;
        Ok(p)
    }
}

/// The kernel handle of `entry`, a `__global__` function's host stub registered with this
/// runtime (cudaGetKernel).
///
/// # Safety
/// `entry` is the address of a `__global__` function's host stub in this process, or any other
/// address (the runtime looks it up and refuses one it does not know).
pub unsafe fn kernel_of(entry: *const c_void) -> Result<sys::CUkernel> {
    let rt = runtime()?;
    let f = rt.need(rt.f.cudaGetKernel, "cudaGetKernel")?;
    let mut k: sys::CUkernel = ptr::null_mut();
    // SAFETY: valid out-pointer; the runtime checks the address against its registrations.
    rt.check(unsafe { f(&mut k, entry) }, "finding the kernel of a host function (cudaGetKernel)")?;
    if k.is_null() {
        return Err(Error::new(Status::Cuda, "cudaGetKernel returned no kernel"));
    }
    Ok(k)
}

// ---- Launching ------------------------------------------------------------------------------

/// `cudaLaunchKernel` (launches without attributes), for the launch path to keep.
pub fn launch_entry() -> Result<sys::PFN_cudaLaunchKernel> {
    let rt = runtime()?;
    rt.need(rt.f.cudaLaunchKernel, "cudaLaunchKernel")
}

/// `cudaLaunchKernelExC` (launches with attributes), for the launch path to keep.
pub fn launch_ex_entry() -> Result<sys::PFN_cudaLaunchKernelExC> {
    let rt = runtime()?;
    rt.need(rt.f.cudaLaunchKernelExC, "cudaLaunchKernelExC")
}

/// The error of a runtime launch that returned `code` (not success).
pub fn launch_error(code: u32) -> Error {
    match runtime() {
        Ok(rt) => match rt.check(sys::cudaError_t(code), "launching through the runtime (cudaLaunchKernel[ExC])") {
            Err(e) => e,
            Ok(()) => Error::new(Status::Internal, "a failed launch reported success"),
        },
        Err(e) => e,
    }
}

/// CUDA's launch through `f` (`launch_entry`'s), returning its cudaError_t as a number: the
/// launch fast path's one indirect call, inlined into it.
///
/// # Safety
/// `f` is `cudaLaunchKernel`; `k` is a live kernel; `stream` is NULL, special or live;
/// `params` holds one pointer per parameter, each to a value of the parameter's size (or is
/// NULL for a kernel without parameters).
#[inline(always)]
pub unsafe fn launch_kernel(
    f: sys::PFN_cudaLaunchKernel,
    k: sys::CUkernel,
    grid: sys::dim3,
    block: sys::dim3,
    params: *mut *mut c_void,
    shared_mem_bytes: usize,
    stream: sys::CUstream,
) -> u32 {
    // SAFETY: the caller's contract; a cudaKernel_t may be passed as the function of a runtime
    // launch.
    unsafe { f(k as *const c_void, grid, block, params, shared_mem_bytes, stream) }.0
}

/// CUDA's launch with attributes through `f` (`launch_ex_entry`'s), returning its cudaError_t
/// as a number.
///
/// # Safety
/// `f` is `cudaLaunchKernelExC`; as `launch_kernel`, and `cfg`'s first `numAttrs` attributes
/// are written.
#[inline(always)]
pub unsafe fn launch_kernel_ex(
    f: sys::PFN_cudaLaunchKernelExC,
    cfg: &sys::cudaLaunchConfig_t,
    k: sys::CUkernel,
    params: *mut *mut c_void,
) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { f(cfg, k as *const c_void, params) }.0
}
