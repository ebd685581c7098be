//! Kernel handles (`CUkernel` == `cudaKernel_t`): name, parameters, attributes, the function
//! for the current context, and the per-kernel parameter-layout cache the launch path reads.

use crate::driver::{driver, Driver};
use crate::error::{Error, Result, Status};
use crate::hot;
use crate::registry::{self, check_kernel as check_live};
use crate::sys;
use std::ffi::{CStr, CString};

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

/// One parameter: its byte offset in the parameter buffer and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Byte offset of the parameter in the kernel's parameter buffer.
    pub offset: u32,
    /// Size of the parameter in bytes: what a launch argument must match.
    pub size: u32,
}

pub use crate::enums::Attribute;

impl Kernel {
    /// Wrap a handle from anywhere: cudyn, `cuLibraryGetKernel`, `cudaLibraryGetKernel`,
    /// `cudaGetKernel`. NULL is refused.
    ///
    /// # Safety
    /// `k` must be a live kernel handle, or one of a library cudyn unloaded (cudyn refuses
    /// those without calling CUDA). Anything else reaches CUDA, which does not check it.
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

    /// The kernel's (mangled, for C++) name, copied: CUDA's string lives only as long as the
    /// kernel's library.
    pub fn name(self) -> Result<CString> {
        // SAFETY: the pointer is copied from at once, before this call returns.
        self.name_ptr().map(|p| unsafe { CStr::from_ptr(p) }.to_owned())
    }

    /// CUDA's own pointer to the kernel's name: valid while the kernel's library is loaded.
    pub(crate) fn name_ptr(self) -> Result<*const std::os::raw::c_char> {
        check_live(self)?;
        let d = driver()?;
        let f = d.need(d.f.cuKernelGetName, "cuKernelGetName")?;
        let mut p: *const std::os::raw::c_char = std::ptr::null();
        // SAFETY: valid out-pointer; an invalid handle is reported as an error.
        d.with_context(|| d.check(unsafe { f(&mut p, self.0) }, "reading the kernel's name"))?;
        if p.is_null() {
            return Err(Error::new(Status::Cuda, "cuKernelGetName returned no name"));
        }
        Ok(p)
    }

    /// Run `f` with this kernel's parameter layout: an owned kernel's from memory (CUDA is
    /// asked once, and the launch table learns it), a foreign kernel's from CUDA (see
    /// `registry`).
    pub(crate) fn with_params<R>(self, f: impl FnOnce(&[Param]) -> R) -> Result<R> {
        Ok(f(&registry::layout(self)?))
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
        unsafe { registry::prime(self, lib, params) }
    }

    /// Vouch that this handle is a live kernel, and stays live until `release` (or until its
    /// library, if cudyn loaded it, is unloaded through cudyn). cudyn then remembers its
    /// layout, so launches take the fast path, and accepts it even at an address where a
    /// kernel of a library cudyn unloaded used to be. For handles cudyn cannot see the
    /// origin of: `cudaGetKernel` of the program's own kernels, a library the program loaded.
    ///
    /// # Safety
    /// The kernel's library must stay loaded until `release` is called: after it is gone, a
    /// launch is checked against the remembered layout, whatever kernel CUDA has put at the
    /// address since.
    pub unsafe fn adopt(self) -> Result<()> {
        if self.0.is_null() {
            return Err(Error::invalid("kernel handle is NULL"));
        }
        registry::adopt(self);
        Ok(())
    }

    /// Undo `adopt`. True if the kernel was adopted.
    pub fn release(self) -> bool {
        registry::release(self)
    }

    /// How many parameters the kernel takes.
    pub fn param_count(self) -> Result<usize> {
        self.with_params(|p| p.len())
    }

    /// Parameter `index`'s offset and size; an error past the last parameter.
    pub fn param(self, index: usize) -> Result<Param> {
        self.with_params(|p| p.get(index).copied())?.ok_or_else(|| {
            Error::invalid(format!(
                "parameter index {index} is out of range ({} parameters)",
                self.param_count().unwrap_or(0)
            ))
        })
    }

    /// Every parameter's offset and size, in order.
    pub fn params(self) -> Result<Vec<Param>> {
        self.with_params(|p| p.to_vec())
    }

    /// The `CUfunction` of this kernel in the current context (device 0's primary context
    /// is made current if the thread has none).
    pub fn function(self) -> Result<sys::CUfunction> {
        check_live(self)?;
        let d = driver()?;
        d.ensure_context(std::ptr::null_mut())?;
        let f = d.need(d.f.cuKernelGetFunction, "cuKernelGetFunction")?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: valid out-pointer; a context is current.
        d.check(unsafe { f(&mut func, self.0) }, "getting the kernel's function for the current context")?;
        Ok(func)
    }

    /// Attribute `attr` of this kernel on device `device`.
    pub fn attribute(self, attr: Attribute, device: i32) -> Result<i32> {
        check_live(self)?;
        let d = driver()?;
        d.initialised()?;
        d.with_context(|| self.attribute_in_context(d, attr, device))
    }

    fn attribute_in_context(self, d: &Driver, attr: Attribute, device: i32) -> Result<i32> {
        let f = d.need(d.f.cuKernelGetAttribute, "cuKernelGetAttribute")?;
        let mut v = 0;
        // SAFETY: valid out-pointer; bad device or attribute is reported as an error.
        d.check(
            unsafe { f(&mut v, sys::CUfunction_attribute(attr as u32), self.0, device) },
            format_args!("reading attribute {attr:?} on device {device}"),
        )?;
        Ok(v)
    }

    /// Set attribute `attr` of this kernel on device `device` (only the settable ones).
    pub fn set_attribute(self, attr: Attribute, value: i32, device: i32) -> Result<()> {
        check_live(self)?;
        let d = driver()?;
        d.initialised()?;
        let f = d.need(d.f.cuKernelSetAttribute, "cuKernelSetAttribute")?;
        // SAFETY: plain values; CUDA validates them.
        d.check(
            unsafe { f(sys::CUfunction_attribute(attr as u32), value, self.0, device) },
            format_args!("setting attribute {attr:?} to {value} on device {device}"),
        )
    }
}
