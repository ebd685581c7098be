//! cudyn.h section "Libraries": load from memory, file or source; kernels; globals; unload.
//!
//! The exports that take a library handle take it on the C caller's word that it is live (or
//! NULL, or one cudyn unloaded: both refused without calling CUDA): the contract of the
//! `unsafe fn`s of `library` they call, and why they are `unsafe extern "C"`.

use super::compile::{cudyn_buffer, give};
use super::{cstr, ffi, out, put, slice};
use crate::handles::{KernelHandle, LibraryHandle, ModuleHandle};
use crate::launch::RawApi;
use crate::library::{self, Api, Library};
use crate::load_options::{self, LoadOption};
use crate::Status;
use std::ffi::{c_char, c_void, CStr};
use std::path::Path;

/// A path argument: Unix paths are bytes, no UTF-8 assumed.
fn path_of(p: &CStr) -> &Path {
    Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p.to_bytes()))
}

/// Load a cubin, fatbin or PTX image from memory.
///
/// `size` is checked against the image's own headers before CUDA sees it, and a fatbin or
/// cubin with nothing the current GPU can run is refused with CUDYN_ERROR_NO_BINARY_FOR_DEVICE
/// naming both.
///
/// Contexts: loading needs none. An image that needs the JIT (PTX, or no SASS for this GPU) is
/// compiled now, in the current context, or on a thread without one in device 0's primary
/// context, current and retained for this call only.
///
/// @param image The image's bytes. They may be freed once this returns, but must not change
///              while it runs: cudyn checks them, then CUDA reads them again.
/// @param size Bytes at `image`.
/// @param api The API that loads it (a cudyn_api).
/// @param[out] library On success, a handle the caller owns: unload it with
///             cudyn_library_unload() and the same `api`. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (NULL, unknown api),
///         CUDYN_ERROR_INVALID_IMAGE, CUDYN_ERROR_NO_BINARY_FOR_DEVICE, a *_NOT_FOUND for a
///         missing component, or CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_data(
    image: *const c_void,
    size: usize,
    api: RawApi,
    library: *mut LibraryHandle,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: `image` points to `size` readable bytes (caller's contract).
        let bytes = unsafe { slice(image.cast::<u8>(), size, "image") }?;
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(library, "library") }?;
        *o = Library::load_data(bytes, api)?.into_raw();
        Ok(())
    })
}

/// cudyn_library_load_data() with load options and the JIT log.
///
/// Every load asks the JIT for its error log, so a PTX that ptxas refuses fails with its first
/// error line in cudyn_last_error_message(), with or without `log`.
///
/// @param image, size, api As for cudyn_library_load_data().
/// @param options `num_options` (id, value) pairs, each id at most once; NULL with 0 for none.
///        They are checked before anything is loaded: an option `api` does not take is refused
///        (CUDYN_ERROR_INVALID_ARGUMENT, nothing loaded). A pointer an option takes
///        (the GLOBAL_SYMBOL arrays, the host universal table) is cast to int64_t and must stay
///        valid until the library is unloaded: CUDA reads it whenever it loads the library into
///        a context. WALL_TIME's `float *` is written by cudyn during this call only.
/// @param num_options Entries at `options`.
/// @param[out] library As for cudyn_library_load_data().
/// @param[out] log NULL, or receives CUDA's JIT log for this load (the error log, then the
///             info log; empty for a cubin) on success and on a CUDA failure alike. The caller
///             frees it with cudyn_buffer_free(). Unchanged when the call fails before CUDA ran
///             (a bad argument or image).
/// @return As for cudyn_library_load_data().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_data_ex(
    image: *const c_void,
    size: usize,
    api: RawApi,
    options: *const LoadOption,
    num_options: usize,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: `image` points to `size` readable bytes, `options` to `num_options` entries
        // (caller's contract).
        let (bytes, opts) =
            unsafe { (slice(image.cast::<u8>(), size, "image")?, slice(options, num_options, "options")?) };
        // SAFETY: `library` and `log` are NULL or writable; the pointer-valued options point to
        // what their ids need, until the library is unloaded (caller's contract).
        unsafe {
            load_options::with_pointer_options(|| {
                load_ex(library, log, |text| Library::load_data_with(bytes, api, opts, Some(text)))
            })
        }
    })
}

/// The output side of the `_ex` loads: `*library` on success; `log` (nullable) gets the JIT
/// log whenever CUDA ran (success, or a failure with a log).
///
/// # Safety
/// `library` and `log` are NULL or writable.
unsafe fn load_ex(
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    load: impl FnOnce(&mut String) -> crate::Result<Library>,
) -> crate::Result<()> {
    // SAFETY: the caller's contract.
    let o = unsafe { out(library, "library") }?;
    let mut text = String::new();
    let r = load(&mut text);
    if !text.is_empty() || r.is_ok() {
        // SAFETY: the caller's contract.
        unsafe { give(log, text.as_bytes()) }?;
    }
    *o = r?.into_raw();
    Ok(())
}

/// Load a cubin, fatbin or PTX file.
///
/// cudyn reads and checks the file and hands CUDA exactly the bytes it checked. Only a regular
/// file of at most 1 GiB is read: a directory, FIFO, device or socket gets
/// CUDYN_ERROR_INVALID_ARGUMENT at once (never a blocking open or an endless read), a file
/// that cannot be opened or read CUDYN_ERROR_IO.
///
/// @param path The file's path (bytes, as the system takes them).
/// @param api The API that loads it.
/// @param[out] library As for cudyn_library_load_data(). Unchanged on failure.
/// @return As for cudyn_library_load_data(), and CUDYN_ERROR_IO.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_file(
    path: *const c_char,
    api: RawApi,
    library: *mut LibraryHandle,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated path (caller's contract).
        let p = unsafe { cstr(path, "path") }?;
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(library, "library") }?;
        *o = Library::load_file(path_of(p), api)?.into_raw();
        Ok(())
    })
}

/// cudyn_library_load_file() with load options and the JIT log, as
/// cudyn_library_load_data_ex().
///
/// @param path, api As for cudyn_library_load_file().
/// @param options, num_options, library, log As for cudyn_library_load_data_ex().
/// @return As for cudyn_library_load_file().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_file_ex(
    path: *const c_char,
    api: RawApi,
    options: *const LoadOption,
    num_options: usize,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated path, `options` holds `num_options` entries (caller's contract).
        let (p, opts) = unsafe { (cstr(path, "path")?, slice(options, num_options, "options")?) };
        let path = path_of(p);
        // SAFETY: as for cudyn_library_load_data_ex().
        unsafe {
            load_options::with_pointer_options(|| {
                load_ex(library, log, |text| Library::load_file_with(path, api, opts, Some(text)))
            })
        }
    })
}

/// Unload a library through the API that loaded it.
///
/// A library cudyn loaded must be unloaded here, not with cuLibraryUnload/cudaLibraryUnload:
/// cudyn remembers its kernels' layouts until it sees the unload. After it, the library and
/// its kernels are *dead* to cudyn: every call given one (a second unload, a kernel lookup, a
/// launch) fails with CUDYN_ERROR_INVALID_ARGUMENT without reaching CUDA, whose driver crashes
/// on an unloaded library's handle. That lasts until cudyn sees the address live again: a
/// cudyn load returns it, a lookup through cudyn returns the kernel, a library cudyn loaded
/// since has a kernel there, or the program adopts the kernel (cudyn_kernel_adopt()). A library
/// of your own that you unload here is dead the same way.
///
/// @param library The library; NULL is a no-op (CUDYN_SUCCESS).
/// @param api The API that loaded it.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (dead library, unknown api: nothing
///         unloaded), or CUDYN_ERROR_CUDA.
/// @note A query or launch of one of its kernels on another thread at the same moment either
///       finishes before CUDA's unload starts or is refused as unloaded: none reaches CUDA with
///       a kernel being freed.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_unload(library: LibraryHandle, api: RawApi) -> Status {
    ffi!({
        if library.is_null() {
            return Ok(());
        }
        // SAFETY: a live library or one cudyn unloaded (caller's contract).
        unsafe { library::unload_raw(library, Api::from_c_arg(api.into(), "api")?) }
    })
}

/// Look up a kernel by name.
///
/// @param library A live library.
/// @param name The kernel's name: the mangled name for a C++ kernel without extern "C".
/// @param api The API that looks it up.
/// @param[out] kernel CUDA's own handle, a CUkernel and a cudaKernel_t at once; it lives as
///             long as the library and is never freed on its own. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_NOT_FOUND, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_kernel(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    kernel: *mut KernelHandle,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(kernel, "kernel")?) };
        // SAFETY: a live library (caller's contract).
        *o = unsafe { library::get_kernel(library, n, api) }?.as_raw();
        Ok(())
    })
}

/// The number of kernels in a library (driver 12.4+ or runtime 12.8+).
///
/// @param library A live library.
/// @param[out] count The number. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_UNSUPPORTED_VERSION, CUDYN_ERROR_INVALID_ARGUMENT,
///         CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_kernel_count(library: LibraryHandle, count: *mut u32) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(count, "count") }?;
        // SAFETY: a live library (caller's contract).
        *o = unsafe { library::kernel_count(library) }?;
        Ok(())
    })
}

/// The kernels of a library.
///
/// @param library A live library.
/// @param[out] kernels Room for `capacity` handles (NULL only when `capacity` is 0); receives
///             the first min(capacity, count) kernels. Unchanged on failure.
/// @param capacity Handles `kernels` has room for.
/// @param[out] written How many were written. Unchanged on failure.
/// @return As for cudyn_library_kernel_count().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_kernels(
    library: LibraryHandle,
    kernels: *mut KernelHandle,
    capacity: u32,
    written: *mut u32,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let w = unsafe { out(written, "written") }?;
        if capacity > 0 && kernels.is_null() {
            return Err(crate::Error::invalid("kernels is NULL but capacity is not 0"));
        }
        // As many as the library has (not `capacity`, which may be "no limit"), written out
        // only on success.
        // SAFETY: a live library (caller's contract).
        let all = unsafe { library::kernels_of(library) }?;
        let n = all.len().min(capacity as usize);
        for (i, k) in all.iter().take(n).enumerate() {
            // SAFETY: `kernels` has room for `capacity` >= n handles (caller's contract).
            unsafe { *kernels.add(i) = k.as_raw() };
        }
        *w = n as u32;
        Ok(())
    })
}

/// The device address and size of a `__device__` variable, in the current context.
///
/// Contexts: with a current context, that one. A thread with none gets the address in device
/// 0's primary context, which cudyn then retains for the rest of the process (the address is
/// valid only while it lives); it is not left current.
///
/// @param library A live library.
/// @param name The variable's name.
/// @param[out] dptr Its device address. Unchanged on failure.
/// @param[out] bytes NULL, or its size in bytes. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_NOT_FOUND, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_global(
    library: LibraryHandle,
    name: *const c_char,
    dptr: *mut *mut c_void,
    bytes: *mut usize,
) -> Status {
    ffi!({
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(dptr, "dptr")?) };
        // SAFETY: a live library (caller's contract).
        let (p, size) = unsafe { library::get_global(library, n) }?;
        *o = p;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { put(bytes, size) };
        Ok(())
    })
}

/// The address and size of a `__managed__` variable (cuLibraryGetManaged /
/// cudaLibraryGetManaged). The memory is managed (unified): the host reads and writes it
/// directly once the device work that touches it is finished. It lives as long as the library.
///
/// Contexts, through the driver: as for cudyn_library_get_global(). The runtime uses its own
/// rules (the current device's primary context, made current on the thread as any runtime
/// call does).
///
/// @param library A live library.
/// @param name The variable's name.
/// @param api The API that looks it up.
/// @param[out] ptr Its address, valid on host and device. Unchanged on failure.
/// @param[out] bytes NULL, or its size in bytes. Unchanged on failure.
/// @return As for cudyn_library_get_global().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_managed(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    ptr: *mut *mut c_void,
    bytes: *mut usize,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(ptr, "ptr")?) };
        // SAFETY: a live library (caller's contract).
        let (p, size) = unsafe { library::get_managed(library, n, api) }?;
        *o = p;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { put(bytes, size) };
        Ok(())
    })
}

/// A unified function of the library (cuLibraryGetUnifiedFunction /
/// cudaLibraryGetUnifiedFunction): a pointer callable from host and device code on systems
/// with unified function support.
///
/// @param library A live library.
/// @param name The function's name.
/// @param api The API that looks it up.
/// @param[out] function The function pointer. Unchanged on failure.
/// @return CUDYN_SUCCESS; a name the library does not hold is an error (the driver says
///         CUDA_ERROR_NOT_FOUND, the runtime cudaErrorInvalidValue).
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_unified_function(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    function: *mut *mut c_void,
) -> Status {
    ffi!({
        let api = Api::from_c_arg(api.into(), "api")?;
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(function, "function")?) };
        // SAFETY: a live library (caller's contract).
        *o = unsafe { library::get_unified_function(library, n, api) }?;
        Ok(())
    })
}

/// cudyn_library_get_global() for device `device`, without the caller switching contexts: the
/// device's primary context is current for the lookup only, and the thread's own context (or
/// none) is restored after. That primary context is retained for the rest of the process (the
/// address is valid only while it lives).
///
/// @param library A live library.
/// @param name The variable's name.
/// @param device A CUDA device ordinal.
/// @param[out] dptr, bytes As for cudyn_library_get_global().
/// @return As for cudyn_library_get_global(); a device that does not exist:
///         CUDYN_ERROR_NO_DEVICE.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_global_on_device(
    library: LibraryHandle,
    name: *const c_char,
    device: i32,
    dptr: *mut *mut c_void,
    bytes: *mut usize,
) -> Status {
    ffi!({
        // SAFETY: NUL-terminated name, writable or NULL output (caller's contract).
        let (n, o) = unsafe { (cstr(name, "name")?, out(dptr, "dptr")?) };
        // SAFETY: a live library (caller's contract).
        let (p, size) = unsafe { library::get_global_on_device(library, n, device) }?;
        *o = p;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { put(bytes, size) };
        Ok(())
    })
}

/// The library's module in the current context (cuLibraryGetModule), for calls that take a
/// CUmodule.
///
/// Contexts: as for cudyn_library_get_global(): with no current context, device 0's primary
/// context's module; that context is then retained for the rest of the process.
///
/// @param library A live library (loaded through either API).
/// @param[out] module A CUmodule, valid while the library is loaded and the context lives;
///             never unloaded on its own. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_module(library: LibraryHandle, module: *mut ModuleHandle) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(module, "module") }?;
        // SAFETY: a live library (caller's contract).
        *o = unsafe { library::get_module(library) }?;
        Ok(())
    })
}
