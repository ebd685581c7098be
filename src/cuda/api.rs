//! What the two CUDA APIs share: the library calls both offer (`Loader`,
//! implemented once per API: `impl Loader for Driver` in driver.rs, `for Runtime` in
//! runtime.rs, and chosen in one place, `Api::loader` in cuda/mod.rs), and their result codes.

use super::sys;
use crate::error::{Result, Status};
use std::ffi::{c_void, CStr};

/// Which CUDA API does the work (defined with the other enums shared with C).
pub use crate::enums::Api;

/// The option arrays of a library load, as `cuLibraryLoadData` / `cudaLibraryLoadData` take
/// them (their option enums are both u32): JIT options, then library options. Each value is
/// what its key needs (an integer, or a buffer that lives as long as the library: CUDA loads
/// into later contexts with the same options).
pub(crate) struct OptionArrays<'a> {
    pub jit_keys: &'a mut [u32],
    pub jit_values: &'a mut [*mut c_void],
    pub lib_keys: &'a mut [u32],
    pub lib_values: &'a mut [*mut c_void],
}

impl OptionArrays<'_> {
    /// The library options as pointers and a count: NULL arrays when there are none.
    pub(crate) fn library_arrays(&mut self) -> (*mut u32, *mut *mut c_void, u32) {
        if self.lib_keys.is_empty() {
            (std::ptr::null_mut(), std::ptr::null_mut(), 0)
        } else {
            (self.lib_keys.as_mut_ptr(), self.lib_values.as_mut_ptr(), self.lib_keys.len() as u32)
        }
    }
}

/// Library calls, through one API. Every `lib` must be a live library handle (CUDA does not
/// check library handles: one that was unloaded crashes the process), which is why each is an
/// `unsafe fn`.
pub(crate) trait Loader: Sync {
    /// Load an image from memory; returns the library.
    ///
    /// # Safety
    /// `image` holds a cubin, fatbin or NUL-terminated PTX whose own headers lie within its
    /// buffer (CUDA reads as far as they say); `o`'s values are what their keys need, and the
    /// buffers among them live as long as the library.
    unsafe fn load_data(&self, image: *const c_void, o: OptionArrays<'_>) -> Result<sys::CUlibrary>;

    /// # Safety
    /// `lib` is a live library handle, loaded through this API; it is dead after.
    unsafe fn unload(&self, lib: sys::CUlibrary) -> Result<()>;

    /// The kernel `name` of `lib`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    unsafe fn kernel(&self, lib: sys::CUlibrary, name: &CStr) -> Result<sys::CUkernel>;

    /// Address and size of the `__managed__` variable `name` of `lib`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    unsafe fn managed(&self, lib: sys::CUlibrary, name: &CStr) -> Result<(*mut c_void, usize)>;

    /// The unified function `name` of `lib`.
    ///
    /// # Safety
    /// `lib` is a live library handle.
    unsafe fn unified_function(&self, lib: sys::CUlibrary, name: &CStr) -> Result<*mut c_void>;
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
