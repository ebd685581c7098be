//! cudyn.h section "Libraries": load from memory, file or source; kernels; globals; unload.

use super::error::cudyn_status;
use super::{cstr, ffi, out, slice};
use crate::handles::{KernelHandle, LibraryHandle};
use crate::launch::RawApi;
use crate::library::{self, Api, Library};
use std::ffi::{c_char, c_void};

/// Which CUDA API does the work. Per call: load through one, launch through the other.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cudyn_api {
    /// cudaLibraryLoadData, cudaLaunchKernelExC, ... (needs libcudart 12.8+).
    CUDYN_API_RUNTIME = 0,
    /// cuLibraryLoadData, cuLaunchKernelEx, ... (needs driver 12.0+).
    CUDYN_API_DRIVER = 1,
}

/// Load a cubin, fatbin or PTX image from memory through `api`. `size` is checked against the
/// image's own headers before CUDA sees it, and a fatbin/cubin with nothing the current GPU
/// can run is refused with CUDYN_ERROR_NO_BINARY_FOR_DEVICE naming both. On success `*library`
/// is a handle the caller owns: pass it to cudyn_library_unload with the same `api`. The image
/// may be freed once this returns, but must not change while the call runs: cudyn checks the
/// bytes, then CUDA reads them again, so bytes changed in between reach CUDA unchecked.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_data(
    image: *const c_void,
    size: usize,
    api: RawApi,
    library: *mut LibraryHandle,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: `image` points to `size` readable bytes (caller's contract).
        let bytes = unsafe { slice(image.cast::<u8>(), size, "image") }?;
        let o = out(library, "library")?;
        *o = Library::load_data(bytes, api)?.into_raw();
        Ok(())
    })
}

/// Load a cubin, fatbin or PTX file through `api`. cudyn reads and checks the file and hands
/// CUDA exactly the bytes it checked. Only a regular file of at most 1 GiB is read; a
/// directory, FIFO, device or socket gets CUDYN_ERROR_INVALID_ARGUMENT at once (never a
/// blocking open or an endless read), a file that cannot be opened or read CUDYN_ERROR_IO.
/// Ownership as for cudyn_library_load_data.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_file(
    path: *const c_char,
    api: RawApi,
    library: *mut LibraryHandle,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: NUL-terminated path (caller's contract).
        let p = unsafe { cstr(path, "path") }?;
        // Unix paths are bytes: no UTF-8 assumed.
        let path = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p.to_bytes()));
        let o = out(library, "library")?;
        *o = Library::load_file(path, api)?.into_raw();
        Ok(())
    })
}

/// Unload a library through the API that loaded it. NULL is a no-op. Kernels of an unloaded
/// library must not be used again; cudyn reports CUDYN_ERROR_INVALID_ARGUMENT for kernels it
/// knew rather than handing a dangling handle to CUDA.
#[no_mangle]
pub extern "C" fn cudyn_library_unload(library: LibraryHandle, api: RawApi) -> cudyn_status {
    ffi!({
        if library.is_null() {
            return Ok(());
        }
        library::unload_raw(library, Api::from_raw(api)?)
    })
}

/// Look up kernel `name` (the mangled name for C++ kernels without extern "C") through `api`.
/// The handle is CUDA's own: a CUkernel and a cudaKernel_t; it lives as long as the library.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_kernel(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    kernel: *mut KernelHandle,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: NUL-terminated name (caller's contract).
        let n = unsafe { cstr(name, "name") }?;
        let o = out(kernel, "kernel")?;
        *o = library::get_kernel(library, n, api)?.as_raw();
        Ok(())
    })
}

/// Number of kernels in the library (driver 12.4+ or runtime 12.8+).
#[no_mangle]
pub extern "C" fn cudyn_library_kernel_count(library: LibraryHandle, count: *mut u32) -> cudyn_status {
    ffi!({
        let o = out(count, "count")?;
        *o = library::kernel_count(library)?;
        Ok(())
    })
}

/// Write up to `capacity` kernel handles of the library to `kernels` and their number to
/// `*written`. `kernels` may be NULL only when `capacity` is 0.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_kernels(
    library: LibraryHandle,
    kernels: *mut KernelHandle,
    capacity: u32,
    written: *mut u32,
) -> cudyn_status {
    ffi!({
        let w = out(written, "written")?;
        if capacity > 0 && kernels.is_null() {
            return Err(crate::Error::invalid("kernels is NULL but capacity is not 0"));
        }
        // As many as the library has (not `capacity`, which may be "no limit"), written out
        // only on success.
        let all = library::kernels_of(library)?;
        let n = all.len().min(capacity as usize);
        for (i, k) in all.iter().take(n).enumerate() {
            // SAFETY: `kernels` has room for `capacity` >= n handles (caller's contract).
            unsafe { *kernels.add(i) = k.as_raw() };
        }
        *w = n as u32;
        Ok(())
    })
}

/// Device address and size in bytes of the `__device__` variable `name`, in the current
/// context (device 0's primary context is made current if the thread has none).
/// `bytes` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_global(
    library: LibraryHandle,
    name: *const c_char,
    dptr: *mut *mut c_void,
    bytes: *mut usize,
) -> cudyn_status {
    ffi!({
        // SAFETY: NUL-terminated name (caller's contract).
        let n = unsafe { cstr(name, "name") }?;
        let o = out(dptr, "dptr")?;
        let (p, size) = library::get_global(library, n)?;
        *o = p;
        if !bytes.is_null() {
            // SAFETY: non-NULL output pointer.
            unsafe { *bytes = size };
        }
        Ok(())
    })
}
