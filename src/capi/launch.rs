//! cudyn.h section "Launching": any kernel handle, through the runtime or the driver.

use super::error::cudyn_status;
use super::{entries, ffi, slice};
use crate::handles::KernelHandle;
use crate::kernel::Kernel;
use crate::launch::{failed, fast, launch_full, Fast, LaunchConfig};
use crate::Error;
use std::ffi::c_void;

fn config<'a>(cfg: *const LaunchConfig) -> crate::Result<&'a LaunchConfig> {
    // SAFETY: non-NULL config points to a readable cudyn_launch_config (caller's contract).
    unsafe { cfg.as_ref() }.ok_or_else(|| Error::invalid("config is NULL"))
}

/// The common launch, before the panic guard and its error plumbing. `launch::fast` calls
/// nothing that can panic (scripts/check_no_panic.py checks the built library), so it
/// runs outside the guard. None: not the common case, nothing called. `sizes` None: no size
/// check (a NULL `sizes` with `nargs` > 0 is not the common case: the full path reports it).
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
) -> Option<cudyn_status> {
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
        Fast::Launched => Some(cudyn_status::CUDYN_SUCCESS),
        Fast::NotTaken => None,
        // SAFETY: as above; the launch `fast` made.
        Fast::Failed(api, code) => Some(ffi!({ unsafe { failed(api, code, k, cfg, a) } })),
    }
}

/// Launch `kernel` as `config` says, through `config->api`. `args` is like CUDA's
/// kernelParams: one pointer per parameter, each pointing at the argument's value. `nargs` is
/// checked against the kernel's parameter count (CUDYN_ERROR_ARGUMENT_MISMATCH, nothing
/// launched). The kernel may come from anywhere: cudyn, cuLibraryGetKernel,
/// cudaLibraryGetKernel or cudaGetKernel. Through the driver, a thread with no current context
/// uses the stream's context, or device 0's primary context for the NULL stream.
#[no_mangle]
pub unsafe extern "C" fn cudyn_launch(
    kernel: KernelHandle,
    config: *const LaunchConfig,
    args: *mut *mut c_void,
    nargs: usize,
) -> cudyn_status {
    // SAFETY: as below.
    if let Some(done) = unsafe { try_fast(kernel, config, args, None, nargs) } {
        return done;
    }
    ffi!({
        let cfg = self::config(config)?;
        // SAFETY: `args` holds `nargs` pointers (caller's contract).
        let a = unsafe { slice(args.cast_const(), nargs, "args") }?;
        // SAFETY: the C caller's contract (cudyn_launch): a live kernel, args pointing to values.
        // `try_fast` did not take the launch: straight to the full path.
        unsafe { launch_full(Kernel(kernel), cfg, a, None) }
    })
}

/// As cudyn_launch, and also checks each argument's size (`arg_sizes[i]`, e.g. sizeof) against
/// the parameter's; a mismatch names the index and both sizes, and nothing is launched.
#[no_mangle]
pub unsafe extern "C" fn cudyn_launch_checked(
    kernel: KernelHandle,
    config: *const LaunchConfig,
    args: *mut *mut c_void,
    arg_sizes: *const usize,
    nargs: usize,
) -> cudyn_status {
    // SAFETY: as below.
    if let Some(done) = unsafe { try_fast(kernel, config, args, Some(arg_sizes), nargs) } {
        return done;
    }
    ffi!({
        let cfg = self::config(config)?;
        // SAFETY: `args` and `arg_sizes` hold `nargs` entries each (caller's contract).
        let a = unsafe { slice(args.cast_const(), nargs, "args") }?;
        // SAFETY: as above.
        let s = unsafe { slice(arg_sizes, nargs, "arg_sizes") }?;
        // SAFETY: as for cudyn_launch; `try_fast` did not take the launch.
        unsafe { launch_full(Kernel(kernel), cfg, a, Some(s)) }
    })
}
