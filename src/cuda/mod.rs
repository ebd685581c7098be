//! Everything that finds, opens and calls CUDA's libraries, and nothing else: the only place
//! with a raw CUDA call.
//!
//! - `dl`: the search order and `dlopen` (which files may be opened, and why one was refused);
//!   `ldso`: the system loader's search, done by cudyn; `trust`: the checks on every file opened;
//! - `sys`: the bindgen output for the pinned CUDA headers (types and function-pointer types);
//! - `open`: one lazily opened library with its resolved function table, for all four;
//! - `driver`, `runtime`, `nvrtc`, `nvjitlink`: each library's entry points as typed
//!   functions returning [`Result`](crate::Result) (the CUDA status and a message). A function
//!   that takes a handle CUDA cannot check (a library, a kernel, a stream) is an `unsafe fn`
//!   whose `# Safety` section says what it must be;
//! - `api`: the library calls both APIs ([`Api`]) offer, implemented once per API and
//!   chosen in one place.
//!
//! The layers above (library, kernel, launch, compile, link) call these functions; the launch
//! fast path calls the one `#[inline(always)]` launch function of its API with an entry point
//! it keeps in its own cache line (`hot`).
//!
//! Not public API: `#[doc(hidden)]`, public only for cudyn's integration tests.

mod api;
pub(crate) mod dl;
pub mod driver;
mod ldso;
pub mod nvjitlink;
pub mod nvrtc;
mod open;
pub mod runtime;
pub(crate) mod sys;
mod trust;

pub use api::{status_of_cu_result, status_of_cuda_error, Api};
pub(crate) use api::{Loader, OptionArrays};
pub use open::{fmt_version, Opened};

use crate::error::Result;

impl Api {
    /// This API's library calls, opening its library on first use: the one dispatch on `Api`
    /// for libraries.
    pub(crate) fn loader(self) -> Result<&'static dyn Loader> {
        Ok(match self {
            Api::Driver => driver::driver()?,
            Api::Runtime => runtime::runtime()?,
        })
    }
}

/// The number of kernels in `lib`: through the driver where it can count them (12.4+), else
/// through the runtime (12.8+).
///
/// # Safety
/// `lib` is a live library handle.
pub(crate) unsafe fn library_kernel_count(lib: sys::CUlibrary) -> Result<u32> {
    match driver::driver().ok().filter(|d| d.lists_kernels()) {
        // SAFETY: the caller's contract.
        Some(d) => unsafe { d.library_kernel_count(lib) },
        // SAFETY: as above.
        None => unsafe { runtime::runtime()?.library_kernel_count(lib) },
    }
}

/// The first `out.len()` kernels of `lib` into `out`, through the same API as
/// `library_kernel_count`.
///
/// # Safety
/// `lib` is a live library handle.
pub(crate) unsafe fn library_enumerate_kernels(lib: sys::CUlibrary, out: &mut [sys::CUkernel]) -> Result<()> {
    match driver::driver().ok().filter(|d| d.lists_kernels()) {
        // SAFETY: the caller's contract.
        Some(d) => unsafe { d.library_enumerate_kernels(lib, out) },
        // SAFETY: as above.
        None => unsafe { runtime::runtime()?.library_enumerate_kernels(lib, out) },
    }
}
