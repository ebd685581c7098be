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

/// The most specific cudyn status for a driver result (CUresult). Every value of CUDA 13.0's
/// cuda.h is decided here or falls to `Status::Cuda` on purpose; tests/status_mapping.rs walks
/// the header and fails on a value it has no verdict for.
pub fn status_of_cu_result(code: u32) -> Status {
    match code {
        0 => Status::Success,
        // CUDA_ERROR_INVALID_VALUE, _INVALID_CONTEXT, _INVALID_HANDLE, _CONTEXT_IS_DESTROYED,
        // _INVALID_CLUSTER_SIZE: what the caller passed is wrong.
        1 | 201 | 400 | 709 | 912 => Status::InvalidArgument,
        // CUDA_ERROR_STUB_LIBRARY: the toolkit's stub, not a driver.
        34 => Status::DriverNotFound,
        // CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, _UNSUPPORTED_PTX_VERSION.
        36 | 222 => Status::UnsupportedVersion,
        // CUDA_ERROR_DEVICE_UNAVAILABLE, _NO_DEVICE, _INVALID_DEVICE, _DEVICE_NOT_LICENSED.
        46 | 100 | 101 | 102 => Status::NoDevice,
        // CUDA_ERROR_INVALID_IMAGE, _INVALID_PTX, _INVALID_SOURCE.
        200 | 218 | 300 => Status::InvalidImage,
        // CUDA_ERROR_NO_BINARY_FOR_GPU.
        209 => Status::NoBinaryForDevice,
        // CUDA_ERROR_FILE_NOT_FOUND, _OPERATING_SYSTEM.
        301 | 304 => Status::Io,
        // CUDA_ERROR_NOT_FOUND.
        500 => Status::NotFound,
        _ => Status::Cuda,
    }
}

/// The most specific cudyn status for a runtime result (cudaError_t). Its numbers are not the
/// driver's everywhere (201 is cudaErrorDeviceUninitialized, 35 cudaErrorInsufficientDriver,
/// 9, 13, 17, 98 have no driver twin), hence a table of its own, walked against CUDA 13.0's
/// driver_types.h by tests/status_mapping.rs.
pub fn status_of_cuda_error(code: u32) -> Status {
    match code {
        0 => Status::Success,
        // cudaErrorInvalidValue, _InvalidConfiguration, _InvalidDevicePointer,
        // _InvalidDeviceFunction, _DeviceUninitialized (no or a destroyed context),
        // _InvalidResourceHandle, _ContextIsDestroyed, _InvalidClusterSize.
        1 | 9 | 17 | 98 | 201 | 400 | 709 | 912 => Status::InvalidArgument,
        // cudaErrorStubLibrary.
        34 => Status::DriverNotFound,
        // cudaErrorInsufficientDriver, _CallRequiresNewerDriver, _UnsupportedPtxVersion.
        35 | 36 | 222 => Status::UnsupportedVersion,
        // cudaErrorDevicesUnavailable, _NoDevice, _InvalidDevice, _DeviceNotLicensed.
        46 | 100 | 101 | 102 => Status::NoDevice,
        // cudaErrorInvalidKernelImage, _InvalidPtx, _InvalidSource.
        200 | 218 | 300 => Status::InvalidImage,
        // cudaErrorNoKernelImageForDevice.
        209 => Status::NoBinaryForDevice,
        // cudaErrorFileNotFound, _OperatingSystem.
        301 | 304 => Status::Io,
        // cudaErrorInvalidSymbol, _SymbolNotFound.
        13 | 500 => Status::NotFound,
        _ => Status::Cuda,
    }
}
