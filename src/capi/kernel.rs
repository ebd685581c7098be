//! cudyn.h section "Kernels": name, parameters, attributes, function for a context.
//!
//! Every export takes a kernel handle on the C caller's word that it is a live kernel (or one
//! of a library cudyn unloaded, which cudyn refuses by itself): `Kernel::from_raw`'s contract,
//! which is why the exports are `unsafe extern "C"` and each `unsafe { Kernel::from_raw(..) }`
//! below rests on it.

use super::error::cudyn_status;
use super::{ffi, out};
use crate::handles::{FunctionHandle, KernelHandle};
use crate::kernel::{Attribute, Kernel};
use crate::Error;
use std::ffi::c_char;

/// Kernel attributes, with CUDA's CU_FUNC_ATTRIBUTE_* numbers.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cudyn_kernel_attribute {
    CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK = 0,
    CUDYN_KERNEL_ATTR_SHARED_SIZE_BYTES = 1,
    CUDYN_KERNEL_ATTR_CONST_SIZE_BYTES = 2,
    CUDYN_KERNEL_ATTR_LOCAL_SIZE_BYTES = 3,
    CUDYN_KERNEL_ATTR_NUM_REGS = 4,
    CUDYN_KERNEL_ATTR_PTX_VERSION = 5,
    CUDYN_KERNEL_ATTR_BINARY_VERSION = 6,
    CUDYN_KERNEL_ATTR_CACHE_MODE_CA = 7,
    CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CUDYN_KERNEL_ATTR_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
    CUDYN_KERNEL_ATTR_CLUSTER_SIZE_MUST_BE_SET = 10,
    CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_WIDTH = 11,
    CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_HEIGHT = 12,
    CUDYN_KERNEL_ATTR_REQUIRED_CLUSTER_DEPTH = 13,
    CUDYN_KERNEL_ATTR_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
    CUDYN_KERNEL_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15,
}

/// `cudyn_kernel_attribute` as it arrives from C.
pub type RawKernelAttribute = u32;

fn attribute(a: RawKernelAttribute) -> crate::Result<Attribute> {
    Attribute::from_raw(a).ok_or_else(|| Error::invalid(format!("unknown kernel attribute {a}")))
}

/// The kernel's name (mangled for C++). The string belongs to CUDA and lives as long as the
/// kernel's library. Works for any kernel handle, wherever it came from.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_name(kernel: KernelHandle, name: *mut *const c_char) -> cudyn_status {
    ffi!({
        let o = out(name, "name")?;
        *o = unsafe { Kernel::from_raw(kernel) }?.name_ptr()?;
        Ok(())
    })
}

/// Number of parameters the kernel takes (cached per kernel after the first query).
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_param_count(kernel: KernelHandle, count: *mut usize) -> cudyn_status {
    ffi!({
        let o = out(count, "count")?;
        *o = unsafe { Kernel::from_raw(kernel) }?.param_count()?;
        Ok(())
    })
}

/// Offset and size in bytes of parameter `index`. Either output may be NULL.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_param_info(
    kernel: KernelHandle,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> cudyn_status {
    ffi!({
        let p = unsafe { Kernel::from_raw(kernel) }?.param(index)?;
        // SAFETY: each output is NULL or writable (caller's contract).
        unsafe {
            if let Some(o) = offset.as_mut() {
                *o = p.offset as usize;
            }
            if let Some(s) = size.as_mut() {
                *s = p.size as usize;
            }
        }
        Ok(())
    })
}

/// The kernel's CUfunction (== cudaFunction_t) in the current context; device 0's primary
/// context is made current first if the thread has none.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_function(kernel: KernelHandle, function: *mut FunctionHandle) -> cudyn_status {
    ffi!({
        let o = out(function, "function")?;
        *o = unsafe { Kernel::from_raw(kernel) }?.function()?;
        Ok(())
    })
}

/// Read a kernel attribute for `device`.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_get_attribute(
    kernel: KernelHandle,
    attr: RawKernelAttribute,
    device: i32,
    value: *mut i32,
) -> cudyn_status {
    ffi!({
        let o = out(value, "value")?;
        *o = unsafe { Kernel::from_raw(kernel) }?.attribute(attribute(attr)?, device)?;
        Ok(())
    })
}

/// Set a kernel attribute for `device` (e.g. CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES
/// before a launch with more than 48 KiB of dynamic shared memory).
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_set_attribute(
    kernel: KernelHandle,
    attr: RawKernelAttribute,
    value: i32,
    device: i32,
) -> cudyn_status {
    ffi!({ unsafe { Kernel::from_raw(kernel) }?.set_attribute(attribute(attr)?, value, device) })
}

/// Vouch that `kernel` is a live kernel handle and stays live until `cudyn_kernel_release`
/// (or, for a kernel of a library cudyn loaded, until that library is unloaded through cudyn).
///
/// Which handles cudyn checks and which it trusts:
/// - A kernel of a library cudyn loaded (however its handle was obtained): cudyn knows its
///   layout and when it is unloaded; launches take the fast path.
/// - Any other kernel (`cudaGetKernel`, `cudaLibraryGetKernel`/`cuLibraryGetKernel` on a library
///   your program loaded) is *foreign*: cudyn cannot see its library go away, so it reads the
///   kernel's parameter layout from CUDA on every launch (correct whatever CUDA later puts at
///   that address, but costing about 1.7 us per launch on an H200). The handle must be live,
///   as with CUDA itself.
/// - A kernel of a library cudyn unloaded is refused without being handed to CUDA (the
///   driver can crash on it), until cudyn sees the address live again: a cudyn load returns
///   it, `cudyn_library_get_kernel`/`cudyn_library_kernels` returns it, or you adopt it.
///
/// Adopting a foreign kernel makes cudyn remember its layout (fast launches) and accept it at
/// an address a kernel cudyn unloaded once had. Your duty in return: call
/// `cudyn_kernel_release` before its library is unloaded. Adopting a kernel cudyn already owns
/// changes nothing. NULL: INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_adopt(kernel: KernelHandle) -> cudyn_status {
    // SAFETY: the C caller's contract, stated above, is Kernel::adopt's.
    ffi!({ unsafe { Kernel::from_raw(kernel)?.adopt() } })
}

/// Undo `cudyn_kernel_adopt`: cudyn forgets the layout and treats the kernel as foreign again.
/// A kernel that was not adopted (or NULL) is left as it is; always CUDYN_SUCCESS.
#[no_mangle]
pub unsafe extern "C" fn cudyn_kernel_release(kernel: KernelHandle) -> cudyn_status {
    ffi!({
        if !kernel.is_null() {
            Kernel(kernel).release();
        }
        Ok(())
    })
}
