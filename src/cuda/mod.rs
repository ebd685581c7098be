//! Everything that finds, opens and calls CUDA's libraries, and nothing else: the only place
//! with a raw CUDA call.
//!
//! - `dl`: the search order and `dlopen` (which files may be opened, and why one was refused);
//! - `sys`: the bindgen output for the pinned CUDA headers (types and function-pointer types);
//! - `open`: one lazily opened library with its resolved function table, for all four;
//! - `driver`, `runtime`, `nvrtc`, `nvjitlink`: each library's entry points as typed
//!   functions returning [`Result`](crate::Result) (the CUDA status and a message). A function
//!   that takes a handle CUDA cannot check (a library, a kernel, a stream) is an `unsafe fn`
//!   whose `# Safety` section says what it must be;
//! - `api`: [`Api`], and the library calls both APIs offer, implemented once per API and
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
pub mod nvjitlink;
pub mod nvrtc;
mod open;
pub mod runtime;
pub(crate) mod sys;

pub use api::Api;
pub(crate) use api::{library_enumerate_kernels, library_kernel_count, OptionArrays};
pub(crate) use open::Lazy;
pub use open::Opened;

use crate::error::Status;

/// 12080 -> "12.8".
pub fn fmt_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The most specific cudyn status for a CUresult or cudaError_t (their numbers agree for
/// every code mapped here).
pub fn status_of_cuda_code(code: u32) -> Status {
    match code {
        1 | 400 | 201 | 709 => Status::InvalidArgument, // invalid value / handle / context
        35 | 222 => Status::UnsupportedVersion,         // insufficient driver, PTX too new
        34 => Status::DriverNotFound,                   // stub library
        100 | 101 | 46 => Status::NoDevice,             // no device, invalid device, unavailable
        200 | 218 | 220 | 300 => Status::InvalidImage,  // invalid image/PTX/source
        209 => Status::NoBinaryForDevice,
        500 => Status::NotFound,
        301 | 304 => Status::Io,
        _ => Status::Cuda,
    }
}
