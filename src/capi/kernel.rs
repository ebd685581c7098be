//! cudyn.h section "Kernels": name, parameters, attributes, function for a context, adoption.
//!
//! Every export takes a kernel handle on the C caller's word that it is a live kernel (or one
//! of a library cudyn unloaded, which cudyn refuses by itself): `Kernel::from_raw`'s contract,
//! which is why the exports are `unsafe extern "C"` and each `unsafe { Kernel::from_raw(..) }`
//! below rests on it. Each query decides and calls CUDA under the registry's lock, so an
//! unload through cudyn on another thread cannot come between (`registry`).

use super::{ffi, out, put};
use crate::enums::{Attribute, FuncCache};
use crate::handles::{FunctionHandle, KernelHandle, LibraryHandle};
use crate::kernel::Kernel;
use crate::Status;
use std::ffi::c_char;

/// `cudyn_kernel_attribute` as it arrives from C.
pub type RawKernelAttribute = u32;

/// The kernel's name.
///
/// Works for any kernel handle, wherever it came from.
///
/// Contexts (this call and the parameter and attribute queries below): the current context, or
/// on a thread without one none, unless CUDA answers that the call needs one: then device 0's
/// primary context, current and retained for the call only.
///
/// @param kernel A live kernel.
/// @param[out] name The name (mangled for C++). The string belongs to CUDA and lives as long
///             as the kernel's library: never free it. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_name(kernel: KernelHandle, name: *mut *const c_char) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a live kernel (caller's contract).
        let o = unsafe { out(name, "name") }?;
        *o = unsafe { Kernel::from_raw(kernel) }?.name_ptr()?;
        Ok(())
    })
}

/// The number of parameters the kernel takes, learned once per kernel: a kernel of a library
/// cudyn loaded from a cubin or fatbin reads it from the tables of the image cudyn handed CUDA
/// (CUDA reads the same ones; no CUDA call, no context); any other kernel, and one whose GPU
/// runs PTX, asks CUDA (cuKernelGetParamInfo, which on driver 580 needs a context: see
/// cudyn_kernel_name() for the one it gets).
///
/// @param kernel A live kernel.
/// @param[out] count The number. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_UNSUPPORTED_VERSION,
///         CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_param_count(kernel: KernelHandle, count: *mut usize) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a live kernel (caller's contract).
        let o = unsafe { out(count, "count") }?;
        *o = unsafe { Kernel::from_raw(kernel) }?.param_count()?;
        Ok(())
    })
}

/// The offset and size of one parameter.
///
/// @param kernel A live kernel.
/// @param index The parameter's index, from 0.
/// @param[out] offset NULL, or its offset in bytes in the parameter buffer. Unchanged on failure.
/// @param[out] size NULL, or its size in bytes. Unchanged on failure.
/// @return As for cudyn_kernel_param_count(); an index past the last parameter:
///         CUDYN_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_param_info(
    kernel: KernelHandle,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> Status {
    ffi!({
        // SAFETY: a live kernel (caller's contract).
        let p = unsafe { Kernel::from_raw(kernel) }?.param(index)?;
        // SAFETY: each output is NULL or writable (caller's contract).
        unsafe {
            put(offset, p.offset as usize);
            put(size, p.size as usize);
        }
        Ok(())
    })
}

/// The kernel's function in the current context (cuKernelGetFunction).
///
/// Contexts: with a current context, that one. A thread with none gets the function of device
/// 0's primary context, which cudyn then retains for the rest of the process (the function is
/// valid only while it lives); it is not left current.
///
/// @param kernel A live kernel.
/// @param[out] function A CUfunction (== cudaFunction_t), valid while the library is loaded
///             and the context lives; never freed on its own. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_function(kernel: KernelHandle, function: *mut FunctionHandle) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a live kernel (caller's contract).
        let o = unsafe { out(function, "function") }?;
        *o = unsafe { Kernel::from_raw(kernel) }?.function()?;
        Ok(())
    })
}

/// Read a kernel attribute.
///
/// @param kernel A live kernel.
/// @param attr A cudyn_kernel_attribute.
/// @param device The CUDA device ordinal it is read for.
/// @param[out] value The attribute's value. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown attribute), CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_get_attribute(
    kernel: KernelHandle,
    attr: RawKernelAttribute,
    device: i32,
    value: *mut i32,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(value, "value") }?;
        let attr = Attribute::from_c_arg(attr.into(), "attr")?;
        // SAFETY: a live kernel (caller's contract).
        *o = unsafe { Kernel::from_raw(kernel) }?.attribute(attr, device)?;
        Ok(())
    })
}

/// Set a kernel attribute, e.g. CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES before a launch
/// with more than 48 KiB of dynamic shared memory.
///
/// @param kernel A live kernel.
/// @param attr A settable cudyn_kernel_attribute.
/// @param value The new value.
/// @param device The CUDA device ordinal it is set for.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown attribute), CUDYN_ERROR_CUDA
///         (CUDA refused the value; the attribute is unchanged).
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_set_attribute(
    kernel: KernelHandle,
    attr: RawKernelAttribute,
    value: i32,
    device: i32,
) -> Status {
    ffi!({
        let attr = Attribute::from_c_arg(attr.into(), "attr")?;
        // SAFETY: a live kernel (caller's contract).
        unsafe { Kernel::from_raw(kernel) }?.set_attribute(attr, value, device)
    })
}

/// Vouch that `kernel` is a live kernel handle and stays live until cudyn_kernel_release()
/// (or, for a kernel of a library cudyn loaded, until that library is unloaded through cudyn).
///
/// Which handles cudyn checks and which it trusts:
/// - A kernel of a library cudyn loaded, however its handle was obtained (through cudyn, or
///   cuLibraryGetKernel on that library: cudyn asks cuKernelGetLibrary once, driver 12.5+):
///   cudyn knows its layout and when it is unloaded; launches take the fast path.
/// - Any other kernel (`cudaGetKernel`, `cudaLibraryGetKernel`/`cuLibraryGetKernel` on a library
///   your program loaded) is *foreign*: cudyn cannot see its library go away, and no CUDA call
///   tells one kernel from another at the same address, so it asks CUDA for the parameter
///   count on every launch (two cuKernelGetParamInfo answers; one more per argument with
///   cudyn_launch_checked()). Correct whatever CUDA later puts at that address, but each
///   launch pays for those calls. The handle must be live, as with CUDA itself.
/// - A kernel of a library cudyn unloaded is refused without being handed to CUDA (the
///   driver can crash on it), until cudyn sees the address live again: a cudyn load returns
///   it, cudyn_library_get_kernel()/cudyn_library_kernels() returns it, a library cudyn loaded
///   since has a kernel there (cudyn lists such libraries, each once), or you adopt it.
///
/// Adopting a foreign kernel makes cudyn remember its layout (fast launches) and accept it at
/// an address a kernel cudyn unloaded once had. Adopting a kernel cudyn already owns changes
/// nothing; nor does adopting one of a library cudyn loaded that it has not seen yet, beyond
/// making it known as that library's: cudyn asks cuKernelGetLibrary (driver 12.5+, only while
/// libraries cudyn loaded are loaded), and the library's unload through cudyn ends it.
///
/// @param kernel A live kernel.
/// @return CUDYN_SUCCESS; NULL: CUDYN_ERROR_INVALID_ARGUMENT. Nothing else is asked of CUDA
///         here.
/// @note Your duty in return: call cudyn_kernel_release() before its library is unloaded,
///       unless cudyn loaded that library and unloads it (with a driver older than 12.5,
///       release it before that unload too).
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_adopt(kernel: KernelHandle) -> Status {
    // SAFETY: the C caller's contract, stated above, is Kernel::adopt's.
    ffi!({ unsafe { Kernel::from_raw(kernel)?.adopt() } })
}

/// Undo cudyn_kernel_adopt(): cudyn forgets the layout and treats the kernel as foreign again.
/// When this returns, no launch through cudyn that used the remembered layout is still under
/// way, so the library may be unloaded at once.
///
/// @param kernel A kernel; one that was not adopted (or NULL) is left as it is.
/// @return Always CUDYN_SUCCESS.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_release(kernel: KernelHandle) -> Status {
    ffi!({
        if !kernel.is_null() {
            Kernel(kernel).release();
        }
        Ok(())
    })
}

/// `cudyn_func_cache` as it arrives from C.
pub type RawFuncCache = u32;

/// The library a kernel belongs to (cuKernelGetLibrary; driver 12.5+).
///
/// @param kernel A live kernel.
/// @param[out] library CUDA's handle (a CUlibrary and a cudaLibrary_t), owned by whoever loaded
///             it: a library cudyn loaded is still unloaded with cudyn_library_unload(). Unchanged
///             on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_UNSUPPORTED_VERSION (an
///         older driver), CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_get_library(kernel: KernelHandle, library: *mut LibraryHandle) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a live kernel (caller's contract).
        let o = unsafe { out(library, "library") }?;
        *o = unsafe { Kernel::from_raw(kernel) }?.library()?;
        Ok(())
    })
}

/// Set a kernel's preferred split of L1 cache and shared memory on a device
/// (cuKernelSetCacheConfig; a preference CUDA may not follow).
///
/// @param kernel A live kernel.
/// @param config A cudyn_func_cache.
/// @param device The CUDA device ordinal it is set for.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (unknown config), CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_set_cache_config(
    kernel: KernelHandle,
    config: RawFuncCache,
    device: i32,
) -> Status {
    ffi!({
        let config = FuncCache::from_c_arg(config.into(), "config")?;
        // SAFETY: a live kernel (caller's contract).
        unsafe { Kernel::from_raw(kernel) }?.set_cache_config(config, device)
    })
}

/// The kernel handle of a `__global__` function compiled into the program, from its host
/// function pointer (cudaGetKernel), adopted as by cudyn_kernel_adopt().
///
/// cudaGetKernel is asked of the CUDA runtime cudyn opened: it knows the program's kernels when
/// the program links that shared runtime (nvcc -cudart shared; CMake
/// CUDA_RUNTIME_LIBRARY Shared). A program linked with the static runtime registers its kernels
/// there instead: call cudaGetKernel itself (C++: cudyn::kernel_of) and adopt the handle.
///
/// @param entry The function, as `(const void *)my_kernel`.
/// @param[out] kernel The handle (a CUkernel and a cudaKernel_t). Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT (NULL, or an address that is no kernel
///         of this runtime: cudaErrorInvalidDeviceFunction), CUDYN_ERROR_RUNTIME_NOT_FOUND,
///         CUDYN_ERROR_CUDA.
/// @note As with cudyn_kernel_adopt(): call cudyn_kernel_release() before unloading (dlclose)
///       a shared library that holds the function.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_of(entry: *const std::ffi::c_void, kernel: *mut KernelHandle) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(kernel, "kernel") }?;
        // SAFETY: the C caller's contract, stated above, is Kernel::of_host_function's.
        *o = unsafe { Kernel::of_host_function(entry) }?.as_raw();
        Ok(())
    })
}
