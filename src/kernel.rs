//! Kernel handles (`CUkernel` == `cudaKernel_t`): name, parameters, attributes, the function
//! for the current context. Each query decides whether the handle may reach CUDA and makes
//! its CUDA call under the registry's read lock (`registry::with_kernel`), so an unload on
//! another thread cannot free the kernel between the two.

use crate::cuda::{driver, sys};
use crate::error::{Error, Result};
use crate::hot;
use crate::registry::{self, Access};
use std::ffi::{CStr, CString};

pub use crate::cuda::driver::Param;

/// A bare kernel handle. Copy, non-owning: it is valid while its library is loaded. The
/// pointer is CUDA's own, so it converts to and from `CUkernel` / `cudaKernel_t` without a cast.
///
/// A kernel found through a [`Library`](crate::Library) comes as a
/// [`LibraryKernel`](crate::LibraryKernel), which cannot outlive the library and dereferences
/// to this handle. A bare handle is checked at run time instead: its queries refuse a kernel of
/// a library cudyn unloaded, and its launch ([`Kernel::launch`]) is `unsafe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Kernel(pub(crate) sys::CUkernel);

// SAFETY: a CUkernel is a context-independent handle usable from any thread.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

pub use crate::enums::Attribute;

impl Kernel {
    /// Wrap a handle from anywhere: cudyn, `cuLibraryGetKernel`, `cudaLibraryGetKernel`,
    /// `cudaGetKernel`. NULL is refused.
    ///
    /// # Safety
    /// `k` must be a live kernel handle, or one cudyn knew of a library cudyn unloaded (cudyn
    /// refuses those without calling CUDA): one cudyn handed out, or, with a driver that has
    /// `cuKernelGetLibrary` (12.5+), one used through cudyn while its library was loaded.
    /// Anything else reaches CUDA, which does not check it. The handle may be unloaded
    /// through cudyn on another thread at any time: each use either finishes first or is
    /// refused.
    pub unsafe fn from_raw(k: sys::CUkernel) -> Result<Kernel> {
        if k.is_null() {
            return Err(Error::invalid("kernel handle is NULL"));
        }
        Ok(Kernel(k))
    }

    /// The bare `CUkernel` (== `cudaKernel_t`), for CUDA calls.
    pub fn as_raw(self) -> sys::CUkernel {
        self.0
    }

    /// The kernel's (mangled, for C++) name, copied (under the registry's lock: CUDA's string
    /// lives only as long as the kernel's library).
    pub fn name(self) -> Result<CString> {
        // SAFETY: the pointer is CUDA's name of a kernel that stays live while `query` runs,
        // and it is copied from before `query` returns.
        self.query(|| unsafe { driver::kernel_name(self.0) }.map(|p| unsafe { CStr::from_ptr(p) }.to_owned()))
    }

    /// CUDA's own pointer to the kernel's name: valid while the kernel's library is loaded.
    pub(crate) fn name_ptr(self) -> Result<*const std::os::raw::c_char> {
        // SAFETY: a kernel that stays live while `query` runs.
        self.query(|| unsafe { driver::kernel_name(self.0) })
    }

    /// Run `call` (CUDA calls on this kernel) under the registry's read lock, after refusing
    /// NULL and a kernel cudyn knows is dead: no unload through cudyn runs meanwhile, so a
    /// kernel of a library cudyn loaded stays live for the whole call. The driver is opened
    /// first (never under the lock).
    pub(crate) fn query<R>(self, call: impl FnOnce() -> Result<R>) -> Result<R> {
        self.open_driver()?;
        registry::with_kernel(self.0, |_| call())
    }

    /// Open the driver now if it is not yet, outside the registry's lock (a NULL handle is
    /// refused first, driver or not). A driver that cannot be opened is reported by the call
    /// that needs it (a remembered layout needs none).
    fn open_driver(self) -> Result<()> {
        if self.0.is_null() {
            return Err(Error::invalid("kernel handle is NULL"));
        }
        driver::open();
        Ok(())
    }

    /// Run `f` with this kernel's parameter layout, under the registry's read lock: a known
    /// kernel's from memory (CUDA is asked once, and the launch table learns it), a foreign
    /// kernel's from CUDA (see `registry`).
    pub(crate) fn with_params<R>(self, f: impl FnOnce(&[Param]) -> R) -> Result<R> {
        self.open_driver()?;
        registry::with_kernel(self.0, |a| match a {
            Access::Known(k) => Ok(f(k.layout()?)),
            // SAFETY: not a kernel cudyn knows is dead; any other handle is the caller's
            // promise (a live kernel: `Kernel::from_raw`).
            Access::Foreign => Ok(f(&unsafe { driver::kernel_params(self.0) }?)),
        })
    }

    /// The launch path's check, from the launch table alone (no lock): true when this
    /// kernel's layout is there (and current), it has `nargs` parameters and, when `sizes` is
    /// given, each size matches. False means "ask `with_params`": a miss, or a mismatch to
    /// describe; never a wrong answer.
    #[inline]
    pub(crate) fn args_match_hot(self, nargs: usize, sizes: Option<&[usize]>) -> bool {
        hot::args_match(self.0 as usize, nargs, sizes)
    }

    /// Record `params` as the layout of this kernel of library `lib`, which cudyn is taken to
    /// own, without asking CUDA (tests without a GPU).
    ///
    /// # Safety
    /// `params` must be this kernel's real layout until `lib` is unloaded through cudyn:
    /// launches are checked against it, and CUDA reads one argument per parameter it lists.
    #[doc(hidden)]
    pub unsafe fn prime_params(self, lib: sys::CUlibrary, params: &[Param]) {
        // SAFETY: the caller's contract is registry::prime's.
        unsafe { registry::prime(self.0, lib, params) }
    }

    /// Vouch that this handle is a live kernel, and stays live until `release` (or until its
    /// library, if cudyn loaded it, is unloaded through cudyn). cudyn then remembers its
    /// layout, so launches take the fast path, and accepts it even at an address where a
    /// kernel of a library cudyn unloaded used to be. For handles cudyn cannot see the
    /// origin of: `cudaGetKernel` of the program's own kernels, a library the program loaded.
    ///
    /// A kernel of a library cudyn loaded becomes known as that library's (cudyn asks
    /// `cuKernelGetLibrary`, driver 12.5+), so that library's unload through cudyn ends it.
    ///
    /// # Safety
    /// The handle is a live kernel. Its library must stay loaded until `release` is called
    /// (unless cudyn loaded it and the driver is 12.5 or newer: then its unload through cudyn
    /// ends the adoption): after it is gone, a launch is checked against the remembered
    /// layout, whatever kernel CUDA has put at the address since.
    pub unsafe fn adopt(self) -> Result<()> {
        if self.0.is_null() {
            return Err(Error::invalid("kernel handle is NULL"));
        }
        // Opened outside the registry's lock: adoption asks the driver which library it is of.
        driver::open();
        registry::adopt(self.0);
        Ok(())
    }

    /// Undo `adopt`. True if the kernel was adopted.
    pub fn release(self) -> bool {
        registry::release(self.0)
    }

    /// How many parameters the kernel takes.
    pub fn param_count(self) -> Result<usize> {
        self.with_params(|p| p.len())
    }

    /// Parameter `index`'s offset and size; an error past the last parameter.
    pub fn param(self, index: usize) -> Result<Param> {
        let (p, n) = self.with_params(|p| (p.get(index).copied(), p.len()))?;
        p.ok_or_else(|| Error::invalid(format!("parameter index {index} is out of range ({n} parameters)")))
    }

    /// Every parameter's offset and size, in order.
    pub fn params(self) -> Result<Vec<Param>> {
        self.with_params(|p| p.to_vec())
    }

    /// The `CUfunction` of this kernel in the current context (with none: device 0's primary
    /// context, retained for the process since the function lives in it, current for this call
    /// only).
    pub fn function(self) -> Result<sys::CUfunction> {
        // SAFETY: as for `name_ptr`.
        self.query(|| unsafe { driver::kernel_function(self.0) })
    }

    /// Attribute `attr` of this kernel on device `device`.
    pub fn attribute(self, attr: Attribute, device: i32) -> Result<i32> {
        // SAFETY: as for `name_ptr`.
        self.query(|| unsafe { driver::kernel_attribute(self.0, attr as u32, device) })
            .map_err(|e| e.context(format_args!("reading attribute {} on device {device}", attr.c_name())))
    }

    /// Set attribute `attr` of this kernel on device `device` (only the settable ones).
    pub fn set_attribute(self, attr: Attribute, value: i32, device: i32) -> Result<()> {
        // SAFETY: as for `name_ptr`.
        self.query(|| unsafe { driver::kernel_set_attribute(self.0, attr as u32, value, device) })
            .map_err(|e| e.context(format_args!("setting attribute {} to {value} on device {device}", attr.c_name())))
    }
}

/// Interop with CUDA's own kernel calls: the library a kernel came from, its cache preference,
/// and the kernel of a `__global__` function compiled into the program.
impl Kernel {
    /// The library this kernel belongs to (cuKernelGetLibrary, driver 12.5+): CUDA's handle,
    /// which is a `CUlibrary` and a `cudaLibrary_t`; owned by whoever loaded it.
    pub fn library(self) -> Result<sys::CUlibrary> {
        // SAFETY: as for `name_ptr`.
        self.query(|| unsafe { driver::kernel_library(self.0) })
    }

    /// Set the kernel's preferred split of L1 cache and shared memory on device `device`
    /// (cuKernelSetCacheConfig; a hint).
    pub fn set_cache_config(self, config: crate::enums::FuncCache, device: i32) -> Result<()> {
        // SAFETY: as for `name_ptr`.
        self.query(|| unsafe { driver::kernel_set_cache_config(self.0, config as u32, device) }).map_err(|e| {
            e.context(format_args!("setting the cache configuration {} on device {device}", config.c_name()))
        })
    }

    /// The kernel of `entry`, a `__global__` function's host stub registered with the CUDA
    /// runtime cudyn opened (cudaGetKernel), adopted ([`Kernel::adopt`]) so that launches take
    /// the fast path. The program's own kernels are registered with that runtime only when the
    /// program links the shared libcudart cudyn finds (nvcc -cudart shared); with a static
    /// runtime, call cudaGetKernel in the program (C++: `cudyn::kernel_of`) and adopt the handle.
    ///
    /// # Safety
    /// `entry` is an address in this process (the runtime refuses one it does not know), and
    /// the code registering its kernel stays loaded until [`Kernel::release`] (a shared library
    /// holding it is not unloaded before): [`Kernel::adopt`]'s contract.
    pub unsafe fn of_host_function(entry: *const std::ffi::c_void) -> Result<Kernel> {
        if entry.is_null() {
            return Err(Error::invalid("host function is NULL"));
        }
        // SAFETY: this function's contract.
        let k = Kernel(unsafe { crate::cuda::runtime::kernel_of(entry) }?);
        // SAFETY: this function's contract is adopt's.
        unsafe { k.adopt() }?;
        Ok(k)
    }
}
