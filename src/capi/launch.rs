//! cudyn.h section "Launching": any kernel handle, through the runtime or the driver.

use super::{entries, ffi, slice};
use crate::handles::KernelHandle;
use crate::kernel::Kernel;
use crate::launch::{failed, fast, launch_full, Fast, LaunchConfig};
use crate::{Error, Status};
use std::ffi::c_void;

/// The launch fast path, run *before* the panic guard: the one export code outside `ffi!`.
/// Why, and what keeps it safe, is written once, in docs/design-notes.md, "The launch fast
/// path runs before the panic guard"; scripts/check_no_panic.py checks it on the built library.
/// None: not the common case, nothing called. `sizes` None: no size check (a NULL `sizes` with
/// `nargs` > 0 is not the common case: the full path reports it).
///
/// # Safety
/// As `cudyn_launch_checked`.
#[inline(always)]
unsafe fn try_fast(
    kernel: KernelHandle,
    config: *const LaunchConfig,
    args: *mut *mut c_void,
    sizes: Option<*const usize>,
    nargs: usize,
) -> Option<Status> {
    // SAFETY: a non-NULL config is readable (caller's contract).
    let cfg = unsafe { config.as_ref() }?;
    // SAFETY: `args` (and a non-NULL `sizes`) hold `nargs` entries (caller's contract).
    let a = unsafe { entries(args.cast_const(), nargs) }?;
    let s = match sizes {
        None => None,
        // SAFETY: as above.
        Some(p) => Some(unsafe { entries(p, nargs) }?),
    };
    let k = Kernel(kernel);
    // SAFETY: the C caller's contract (cudyn_launch_checked).
    match unsafe { fast(k, cfg, a, s) } {
        Fast::Launched => Some(Status::Success),
        Fast::NotTaken => None,
        // SAFETY: as above; the launch `fast` made.
        Fast::Failed(api, code) => Some(ffi!({ unsafe { failed(api, code, k, cfg, a, s) } })),
    }
}

/// The full path's config argument.
///
/// # Safety
/// `cfg` is NULL or points to a readable cudyn_launch_config that outlives the reference.
unsafe fn config<'a>(cfg: *const LaunchConfig) -> crate::Result<&'a LaunchConfig> {
    // SAFETY: the caller's contract.
    unsafe { cfg.as_ref() }.ok_or_else(|| Error::invalid("config is NULL"))
}

/// Launch a kernel as `config` says, through `config->api` (cuLaunchKernelEx, or
/// cudaLaunchKernel / cudaLaunchKernelExC when there are launch attributes).
///
/// The kernel may come from anywhere: cudyn, cuLibraryGetKernel, cudaLibraryGetKernel or
/// cudaGetKernel.
///
/// Launch attributes: the named fields (`cluster`, `cooperative`, `priority`,
/// `programmatic_serialization`) and `config->attributes`, CUDA's own list, are checked (every
/// id one CUDA 13.0 takes at a launch, each at most once counting the named fields, each value
/// in CUDA's range, a cluster dividing the grid) and copied; a refusal is
/// CUDYN_ERROR_INVALID_ARGUMENT naming the entry, with nothing launched.
///
/// Contexts, through the driver: a thread with a current context launches in it. A thread with
/// none launches in the stream's context, or device 0's primary context for the NULL and the
/// special streams (as the runtime would); that context is current for this launch only, and a
/// primary context used so is retained for the rest of the process (the queued work lives in
/// it). The runtime uses its own rules (the current device's primary context, which it makes
/// current on the thread).
///
/// @param kernel A live kernel.
/// @param config How to launch (zero-initialised, then set; reserved words zero). Events and
///        streams in it and its attributes are CUDA's raw handles: live until the launch is
///        queued (CUDA does not check them).
/// @param args Like CUDA's kernelParams: one pointer per parameter, each pointing at the
///        argument's value. Read during the call only.
/// @param nargs Entries at `args`: checked against the kernel's parameter count.
/// @return CUDYN_SUCCESS (the launch was queued; a CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE
///         entry now holds its node), CUDYN_ERROR_ARGUMENT_MISMATCH (nothing launched),
///         CUDYN_ERROR_INVALID_ARGUMENT (bad config, attribute or kernel: nothing launched),
///         CUDYN_ERROR_CUDA (CUDA refused the launch).
#[no_mangle]
pub unsafe extern "C" fn cudyn_launch(
    kernel: KernelHandle,
    config: *const LaunchConfig,
    args: *mut *mut c_void,
    nargs: usize,
) -> Status {
    // SAFETY: as below.
    if let Some(done) = unsafe { try_fast(kernel, config, args, None, nargs) } {
        return done;
    }
    ffi!({
        // SAFETY: a readable config, `args` holds `nargs` pointers (caller's contract).
        let (cfg, a) = unsafe { (self::config(config)?, slice(args.cast_const(), nargs, "args")?) };
        // SAFETY: the C caller's contract: a live kernel, args pointing to values. `try_fast`
        // did not take the launch: straight to the full path.
        unsafe { launch_full(Kernel(kernel), cfg, a, None) }
    })
}

/// cudyn_launch(), also checking each argument's size against the parameter's.
///
/// @param kernel, config, args, nargs As for cudyn_launch().
/// @param arg_sizes `nargs` sizes, e.g. sizeof of each argument; a mismatch names the index
///        and both sizes (CUDYN_ERROR_ARGUMENT_MISMATCH), and nothing is launched.
/// @return As for cudyn_launch().
#[no_mangle]
pub unsafe extern "C" fn cudyn_launch_checked(
    kernel: KernelHandle,
    config: *const LaunchConfig,
    args: *mut *mut c_void,
    arg_sizes: *const usize,
    nargs: usize,
) -> Status {
    // SAFETY: as below.
    if let Some(done) = unsafe { try_fast(kernel, config, args, Some(arg_sizes), nargs) } {
        return done;
    }
    ffi!({
        // SAFETY: a readable config; `args` and `arg_sizes` hold `nargs` entries each (caller's
        // contract).
        let (cfg, a, s) = unsafe {
            (self::config(config)?, slice(args.cast_const(), nargs, "args")?, slice(arg_sizes, nargs, "arg_sizes")?)
        };
        // SAFETY: as for cudyn_launch; `try_fast` did not take the launch.
        unsafe { launch_full(Kernel(kernel), cfg, a, Some(s)) }
    })
}
