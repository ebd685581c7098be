//! cudyn.h section "Preloading": one library's code loaded onto chosen GPUs now.

use super::{ffi, slice};
use crate::handles::LibraryHandle;
use crate::Status;

/// Load every kernel of a library onto each of the given GPUs now, instead of at each kernel's
/// first launch on each device (CUDA loads lazily by default), and say how long each took:
/// for one library and the devices named, what CUDA_MODULE_LOADING=EAGER does for every
/// library of the process at its start.
///
/// Per device, in the order given: the device's primary context (the one the runtime uses) is
/// made current, the library's code is loaded into it (cuLibraryGetModule: PTX is compiled
/// then), then every kernel's function (cuKernelGetFunction, and cuFuncLoad where the driver
/// has it, 12.4+). Contexts: each device's primary context is retained, once for the life of
/// the process as every cudyn call that needs a context does, and stays retained (the loaded
/// code lives in it); the thread's current context (or none) is current again when this
/// returns, on success and on failure; no other context is touched. A context you created
/// yourself (cuCtxCreate) gets nothing: make it current and use cudyn_kernel_function().
///
/// @param library A live library (loaded through either API).
/// @param devices `num_devices` CUDA device ordinals; NULL only with 0 (which loads nothing).
///        Listing a device twice loads it once. Every ordinal is checked before anything is
///        loaded.
/// @param num_devices Entries at `devices`.
/// @param[out] ms_per_device NULL, or room for `num_devices` doubles: the milliseconds each
///             device took, from its context being current (its creation, on a device's first
///             use, is not counted) to its last kernel loaded. Written only on success.
/// @return CUDYN_SUCCESS; CUDYN_ERROR_NO_DEVICE for an ordinal that does not exist (the
///         message names it; nothing loaded); otherwise the first failure, whose message names
///         the device ("preloading on device 1 (NVIDIA H200, sm_90)") and, where one failed,
///         the kernel: CUDYN_ERROR_NO_BINARY_FOR_DEVICE, CUDYN_ERROR_CUDA (e.g. out of
///         memory, or CUDA refusing the code in that context, whatever CUDA's code:
///         cudyn_last_cuda_error()), CUDYN_ERROR_INVALID_IMAGE (CUDA found the code malformed
///         there), CUDYN_ERROR_UNSUPPORTED_VERSION (listing kernels needs driver 12.4+ or
///         runtime 12.8+), CUDYN_ERROR_INVALID_ARGUMENT (NULL, an unloaded library). Devices
///         before the one that failed stay loaded.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_preload(
    library: LibraryHandle,
    devices: *const std::ffi::c_int,
    num_devices: usize,
    ms_per_device: *mut f64,
) -> Status {
    ffi!({
        // SAFETY: `devices` holds `num_devices` ints (caller's contract).
        let devs = unsafe { slice(devices, num_devices, "devices") }?;
        // SAFETY: a live library (caller's contract).
        let times = unsafe { crate::preload::preload(library, devs) }?;
        if !ms_per_device.is_null() {
            for (i, t) in times.iter().enumerate() {
                // SAFETY: room for `num_devices` doubles (caller's contract); times has one per
                // device.
                unsafe { *ms_per_device.add(i) = t.as_secs_f64() * 1e3 };
            }
        }
        Ok(())
    })
}
