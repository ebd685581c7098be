//! cudyn.h section "Launching": any kernel handle, through the runtime or the driver.

use super::error::cudyn_status;
use super::{ffi, slice};
use crate::handles::KernelHandle;
use crate::kernel::Kernel;
use crate::launch::{launch, LaunchConfig};
use crate::Error;
use std::ffi::c_void;

fn config<'a>(cfg: *const LaunchConfig) -> crate::Result<&'a LaunchConfig> {
    // SAFETY: non-NULL config points to a readable cudyn_launch_config (caller's contract).
    unsafe { cfg.as_ref() }.ok_or_else(|| Error::invalid("config is NULL"))
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
    ffi!({
        let cfg = self::config(config)?;
        // SAFETY: `args` holds `nargs` pointers (caller's contract).
        let a = unsafe { slice(args.cast_const(), nargs, "args") }?;
        launch(Kernel(kernel), cfg, a, None)
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
    ffi!({
        let cfg = self::config(config)?;
        // SAFETY: `args` and `arg_sizes` hold `nargs` entries each (caller's contract).
        let a = unsafe { slice(args.cast_const(), nargs, "args") }?;
        // SAFETY: as above.
        let s = unsafe { slice(arg_sizes, nargs, "arg_sizes") }?;
        launch(Kernel(kernel), cfg, a, Some(s))
    })
}
