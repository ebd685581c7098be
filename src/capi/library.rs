//! cudyn.h section "Libraries": load from memory, file or source; kernels; globals; unload.
//!
//! The exports that take a library handle take it on the C caller's word that it is live (or
//! NULL, or one cudyn unloaded: both refused without calling CUDA): the contract of the
//! `unsafe fn`s of `library` they call, and why they are `unsafe extern "C"`.

use super::compile::{cudyn_buffer, give};
use super::error::cudyn_status;
use super::{cstr, ffi, out, slice};
use crate::handles::{KernelHandle, LibraryHandle};
use crate::launch::RawApi;
use crate::library::{self, Api, Library};
use crate::load_options::LoadOption;
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

/// Load options (cudyn_load_option.id): the JIT options CUDA uses when it compiles PTX at
/// load time, and library options; what each sets, its values, and which API takes it.
/// An option an API does not take is refused with CUDYN_ERROR_INVALID_ARGUMENT.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum cudyn_load_option_id {
    /// JIT: registers per thread at most (1-255). Both APIs.
    CUDYN_LOAD_OPTION_MAX_REGISTERS = 1,
    /// JIT: optimisation level, 0-4 (CUDA's default is 4). Both APIs.
    CUDYN_LOAD_OPTION_OPTIMIZATION_LEVEL = 2,
    /// JIT: 1 to compile faster at the cost of code quality. Driver only.
    CUDYN_LOAD_OPTION_FAST_COMPILE = 3,
    /// JIT: compile PTX for this compute capability, as major*10+minor (e.g. 90), instead of
    /// the current context's device. Driver only.
    CUDYN_LOAD_OPTION_TARGET = 4,
    /// JIT: 1 to generate line-number information. Both APIs.
    CUDYN_LOAD_OPTION_GENERATE_LINE_INFO = 5,
    /// JIT: 1 to generate debug information. Both APIs.
    CUDYN_LOAD_OPTION_GENERATE_DEBUG_INFO = 6,
    /// JIT: 1 for a verbose info log (ptxas's register and memory report). Both APIs.
    CUDYN_LOAD_OPTION_LOG_VERBOSE = 7,
    /// Library: 1 to keep the image's bytes in CUDA's own memory, so the caller's copy need not
    /// outlive the load (CU_LIBRARY_BINARY_IS_PRESERVED). Both APIs.
    CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED = 8,
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

/// The outputs of the variable lookups: the address, and the size when `bytes` is not NULL.
///
/// # Safety
/// `bytes` is NULL or points to a writable size_t.
unsafe fn give_address(o: &mut *mut c_void, bytes: *mut usize, p: *mut c_void, size: usize) {
    *o = p;
    if !bytes.is_null() {
        // SAFETY: non-NULL output pointer (this function's contract).
        unsafe { *bytes = size };
    }
}

/// The options of a `_ex` load as a slice: NULL with 0 is none.
///
/// # Safety
/// `options` points to `num_options` readable cudyn_load_option (or is NULL with 0).
unsafe fn options<'a>(options: *const LoadOption, num_options: usize) -> crate::Result<&'a [LoadOption]> {
    if num_options == 0 {
        return Ok(&[]);
    }
    // SAFETY: the caller's contract.
    unsafe { slice(options, num_options, "options") }
}

/// cudyn_library_load_data with load options and the JIT log.
///
/// `options`: `num_options` (id, value) pairs, each id at most once (NULL with 0: none); they
/// are checked before anything is loaded, and one `api` does not take is refused
/// (CUDYN_ERROR_INVALID_ARGUMENT, nothing loaded). `log` (nullable): receives CUDA's JIT log
/// for this load, the error log then the info log (empty for a cubin, which needs no JIT),
/// on success and on a CUDA failure alike; free it with cudyn_buffer_free. It is left
/// unchanged when the call fails before CUDA ran (a bad argument or image). Every load asks
/// the JIT for its error log, so a PTX that ptxas refuses fails with its first error line in
/// cudyn_last_error_message(), with or without `log`.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_data_ex(
    image: *const c_void,
    size: usize,
    api: RawApi,
    options: *const LoadOption,
    num_options: usize,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: `image` points to `size` readable bytes (caller's contract).
        let bytes = unsafe { slice(image.cast::<u8>(), size, "image") }?;
        // SAFETY: as documented above.
        let opts = unsafe { self::options(options, num_options) }?;
        load_ex(library, log, |text| Library::load_data_with(bytes, api, opts, Some(text)))
    })
}

/// The output side of the `_ex` loads: `*library` on success; `log` (nullable) gets the JIT
/// log whenever CUDA ran (success, or a failure with a log).
fn load_ex(
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    load: impl FnOnce(&mut String) -> crate::Result<Library>,
) -> crate::Result<()> {
    let o = out(library, "library")?;
    let mut text = String::new();
    let r = load(&mut text);
    if !text.is_empty() || r.is_ok() {
        give(log, text.as_bytes())?;
    }
    *o = r?.into_raw();
    Ok(())
}

/// cudyn_library_load_file with load options and the JIT log, as cudyn_library_load_data_ex.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_file_ex(
    path: *const c_char,
    api: RawApi,
    options: *const LoadOption,
    num_options: usize,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: NUL-terminated path (caller's contract).
        let p = unsafe { cstr(path, "path") }?;
        let path = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p.to_bytes()));
        // SAFETY: as documented for cudyn_library_load_data_ex.
        let opts = unsafe { self::options(options, num_options) }?;
        load_ex(library, log, |text| Library::load_file_with(path, api, opts, Some(text)))
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

/// Unload a library through the API that loaded it. NULL is a no-op.
///
/// A library cudyn loaded must be unloaded here, not with cuLibraryUnload/cudaLibraryUnload:
/// cudyn remembers its kernels' layouts until it sees the unload. After it, the library and
/// its kernels are *dead* to cudyn: every call given one (a second unload, a kernel lookup, a
/// launch) fails with CUDYN_ERROR_INVALID_ARGUMENT without reaching CUDA, whose driver crashes
/// on an unloaded library's handle. That lasts until cudyn sees the address live again: a
/// cudyn load returns it, a lookup through cudyn returns the kernel, or the program adopts
/// the kernel (cudyn_kernel_adopt). A library of your own that you unload here is dead the same
/// way. Concurrent with launches of the library's kernels: the caller's race, as in CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_unload(library: LibraryHandle, api: RawApi) -> cudyn_status {
    ffi!({
        if library.is_null() {
            return Ok(());
        }
        unsafe { library::unload_raw(library, Api::from_raw(api)?) }
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
        *o = unsafe { library::get_kernel(library, n, api) }?.as_raw();
        Ok(())
    })
}

/// Number of kernels in the library (driver 12.4+ or runtime 12.8+).
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_kernel_count(library: LibraryHandle, count: *mut u32) -> cudyn_status {
    ffi!({
        let o = out(count, "count")?;
        *o = unsafe { library::kernel_count(library) }?;
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
        let (p, size) = unsafe { library::get_global(library, n) }?;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { give_address(o, bytes, p, size) };
        Ok(())
    })
}

/// Host-and-device address and size in bytes of the `__managed__` variable `name`, through
/// `api` (cuLibraryGetManaged / cudaLibraryGetManaged). The memory is managed (unified): the
/// host reads and writes it directly once the device work that touches it is finished. It
/// lives as long as the library. `bytes` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_managed(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    ptr: *mut *mut c_void,
    bytes: *mut usize,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: NUL-terminated name (caller's contract).
        let n = unsafe { cstr(name, "name") }?;
        let o = out(ptr, "ptr")?;
        let (p, size) = unsafe { library::get_managed(library, n, api) }?;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { give_address(o, bytes, p, size) };
        Ok(())
    })
}

/// The unified function `name` of the library, through `api` (cuLibraryGetUnifiedFunction /
/// cudaLibraryGetUnifiedFunction): a pointer callable from host and device code on systems
/// with unified function support. A name the library does not hold is an error (the driver
/// says CUDA_ERROR_NOT_FOUND, the runtime cudaErrorInvalidValue).
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_unified_function(
    library: LibraryHandle,
    name: *const c_char,
    api: RawApi,
    function: *mut *mut c_void,
) -> cudyn_status {
    ffi!({
        let api = Api::from_raw(api)?;
        // SAFETY: NUL-terminated name (caller's contract).
        let n = unsafe { cstr(name, "name") }?;
        let o = out(function, "function")?;
        *o = unsafe { library::get_unified_function(library, n, api) }?;
        Ok(())
    })
}

/// cudyn_library_get_global for device `device`, without the caller switching contexts: the
/// device's primary context is current for the lookup only, and the thread's own context (or
/// none) is restored after. A device that does not exist: CUDYN_ERROR_NO_DEVICE.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_get_global_on_device(
    library: LibraryHandle,
    name: *const c_char,
    device: i32,
    dptr: *mut *mut c_void,
    bytes: *mut usize,
) -> cudyn_status {
    ffi!({
        // SAFETY: NUL-terminated name (caller's contract).
        let n = unsafe { cstr(name, "name") }?;
        let o = out(dptr, "dptr")?;
        let (p, size) = unsafe { library::get_global_on_device(library, n, device) }?;
        // SAFETY: NULL or a writable size_t (caller's contract).
        unsafe { give_address(o, bytes, p, size) };
        Ok(())
    })
}
