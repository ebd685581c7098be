//! Eager loading of one library onto chosen GPUs: every kernel's code is loaded into each
//! device's primary context now, instead of at its first launch on that device.
//!
//! CUDA loads lazily by default (CUDA_MODULE_LOADING=LAZY since 12.2): a library's code reaches
//! a device when a kernel is first used there, so the first launch on each GPU pays for it (a
//! JIT compile for PTX) and a failure (out of memory, no code for that GPU) surfaces there, in
//! the middle of the work. CUDA_MODULE_LOADING=EAGER moves that cost to program start for
//! every library of the process, cuBLAS's thousands of kernels included. This does it for one
//! library and the devices named, now, and says how long each device took.
//!
//! Per device, in the order given: the device's primary context is made current (retained
//! once for the process, as every cudyn call that needs a context does; the runtime uses the
//! same context), the library's module is loaded into it (cuLibraryGetModule), then each
//! kernel's function (cuKernelGetFunction, and cuFuncLoad where the driver has it, 12.4+: a
//! lazily loaded function handle may be only partly loaded). The thread's own current context
//! (or none) is current again afterwards, on success and on failure. The first failure stops
//! the preload and names the device and the kernel; devices before it stay loaded (CUDA cannot
//! unload a library from one context).

use crate::cuda::{driver, sys};
use crate::error::{Error, Result, Status};
use crate::kernel::Kernel;
use crate::library;
use std::time::{Duration, Instant};

/// Load every kernel of `lib` onto each of `devices` now (see the module documentation);
/// returns the time each device took, in the order given, from its context being current to
/// its last kernel loaded (the context's own creation, on a device's first use, not counted).
/// Every device number is checked before anything is loaded: one that does not exist is
/// [`Status::NoDevice`] and nothing is loaded. A device listed twice is loaded once and
/// reports a near-zero time the second time.
///
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn preload(lib: sys::CUlibrary, devices: &[i32]) -> Result<Vec<Duration>> {
    // SAFETY: the caller's contract (NULL and unloaded libraries are refused here).
    let kernels =
        unsafe { library::kernels_of(lib) }.map_err(|e| e.context("preloading: listing the library's kernels"))?;
    let d = driver::driver()?;
    d.initialised()?;
    let count = d.device_count()?;
    if let Some(bad) = devices.iter().find(|&&dev| dev < 0 || dev >= count) {
        return Err(Error::new(
            Status::NoDevice,
            format!("preloading on device {bad}: there is no such device ({count} device(s)); nothing was loaded"),
        ));
    }
    let mut times = Vec::with_capacity(devices.len());
    for &dev in devices {
        let took = d
            .with_device_context(dev, driver::Keep::ForProcess, || {
                let start = Instant::now();
                // SAFETY: a live library (checked above, still loaded: the caller holds it);
                // the device's primary context is current.
                unsafe { driver::library_module_here(lib) }.map_err(refused_in_context)?;
                for &k in &kernels {
                    // SAFETY: a kernel CUDA just listed for this live library; a context is
                    // current, so the function is this device's.
                    let loaded = unsafe { driver::kernel_function(k.as_raw()) }
                        .and_then(|f| unsafe { driver::function_load(f) });
                    loaded.map_err(|e| refused_in_context(e).context(kernel_named(k)))?;
                }
                Ok(start.elapsed())
            })
            .map_err(|e| e.context(device_named(d, dev)))?;
        times.push(took);
    }
    Ok(times)
}

/// A CUDA failure while the library's code loads into a context. The handles are cudyn's own
/// (the library checked live above, kernels CUDA listed for it) and the context is current, so
/// CUDA's "invalid value", "invalid handle" or "not found" there is about the code it read (an
/// H100 campaign saw both on damaged images), not about an argument of the caller: it is
/// reported as CUDYN_ERROR_CUDA with CUDA's code, not as an invalid argument or a missing name.
fn refused_in_context(e: Error) -> Error {
    if e.cuda_code != 0 && matches!(e.status, Status::InvalidArgument | Status::NotFound) {
        e.with_status(Status::Cuda).context("CUDA refused the library's code in the context")
    } else {
        e
    }
}

/// "preloading on device 1 (NVIDIA H200, sm_90)".
fn device_named(d: &driver::Driver, dev: i32) -> String {
    let name = d.device_name(dev).unwrap_or_else(|_| "?".into());
    match d.device_sm_cached(dev) {
        Ok(sm) => format!("preloading on device {dev} ({name}, sm_{sm})"),
        Err(_) => format!("preloading on device {dev} ({name})"),
    }
}

/// "kernel 'axpy<float>(float*, float, int)' [_Z4axpyIfEvPT_S0_i]", or "kernel 'plain'".
fn kernel_named(k: Kernel) -> String {
    match k.name() {
        Ok(n) => {
            let symbol = n.to_string_lossy();
            match crate::names::demangle(&symbol) {
                Some(d) => format!("kernel '{d}' [{symbol}]"),
                None => format!("kernel '{symbol}'"),
            }
        }
        Err(_) => format!("kernel {:p}", k.as_raw()),
    }
}
