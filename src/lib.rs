//! cudyn: load CUDA device code at run time, through the CUDA runtime or the driver, with
//! handles that are `cudaKernel_t` and `CUkernel` at once; launch through either API.
//!
//! Nothing CUDA is linked: libcuda, libcudart, NVRTC and nvJitLink are opened on first use,
//! and a missing one is a clear [`Error`], never a loader failure.
//!
//! - [`Library`] owns a loaded library (cubin, fatbin or PTX, checked before CUDA reads it) and
//!   unloads it on drop. Its kernels are [`LibraryKernel`]s, borrowed from it: they cannot
//!   outlive it.
//! - A launch takes a [`LaunchConfig`] and a tuple of `Copy` arguments ([`KernelArgs`]), whose
//!   count and sizes are checked against the kernel's parameters before CUDA is called.
//!   Launching is `unsafe`: the kernel runs with whatever pointers it is given, and nothing on
//!   the host can check what it does with them.
//! - [`compile`] turns CUDA C++ into a cubin, PTX or LTO-IR with NVRTC, through an on-disk
//!   [`cache`]; [`link`] links LTO-IR and cubins with nvJitLink; [`source::load_source`] does
//!   compile-and-load in one call.
//! - A kernel is found by its symbol or by its C++ name (`c"axpy<float>"`, see [`names`]);
//!   [`Library::preload`] loads a library's code onto chosen GPUs now, not at first launch.
//! - [`image`] inspects an image without loading it; [`handles`] names the CUDA handle types
//!   cudyn shares with C and CUDA ([`Kernel`] is the bare `CUkernel`, for interop).
//!
//! ```no_run
//! use cudyn::{Api, CompileOptions, LaunchConfig, Library};
//!
//! fn main() -> cudyn::Result<()> {
//!     let src = r#"extern "C" __global__ void scale(float* x, float a, unsigned n) {
//!         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= a;
//!     }"#;
//!     // NVRTC, through the cache; a failure carries NVRTC's log and converts into cudyn::Error.
//!     let compiled = cudyn::compile::compile(src, "scale.cu", &CompileOptions::default())?;
//!     let lib = Library::load_data(&compiled.code, Api::Runtime)?;
//!     let scale = lib.kernel(c"scale")?;
//!     assert_eq!(scale.param_count()?, 3);
//!
//!     let n: u32 = 1024;
//!     let x: *mut f32 = std::ptr::null_mut(); // a device buffer of n floats, from cudaMalloc
//!     // SAFETY: x holds n floats on the device; scale touches x[0..n) only.
//!     unsafe { scale.launch(&LaunchConfig::for_num_elems(n), (x, 2.0f32, n)) }?;
//!
//!     // A wrongly sized argument (n as a u64) is refused before CUDA is called.
//!     let e = unsafe { scale.launch(&LaunchConfig::for_num_elems(n), (x, 2.0f32, n as u64)) };
//!     assert_eq!(e.unwrap_err().status, cudyn::Status::ArgumentMismatch);
//!     Ok(())
//! }
//! ```
//!
//! The repository's `examples/vec_add.rs` runs the whole path (compile, load, typed launch
//! through both APIs) and exits cleanly on a machine without a GPU.

// CUDA handles (CUlibrary, CUkernel, CUstream, ...) are raw pointers that the core passes to
// CUDA and never dereferences; clippy cannot tell a handle from a pointer it would read.
#![allow(clippy::not_unsafe_ptr_arg_deref)]
// Every public item is documented; the exceptions are marked where their modules are declared.
#![warn(missing_docs)]

/// `format!` for messages built only when a check fails: the formatting is a call to one cold,
/// out-of-line function, so the code a check runs when the bytes are fine stays compact (a
/// first-sight load touches fewer cache lines of code; docs/performance.md).
macro_rules! cold_format {
    ($($arg:tt)*) => {
        $crate::error::cold_format(format_args!($($arg)*))
    };
}

mod args;
mod bound;
pub mod cache;
// The C API's exports, documented in include/cudyn.h; its visibility is the C API's business.
// Its comments are the C header's (cbindgen copies them), written for C readers, not rustdoc.
#[allow(missing_docs, rustdoc::invalid_html_tags, rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)]
pub mod capi;
pub mod compile;
#[doc(hidden)]
pub mod cuda;
pub mod diagnose;
pub mod enums;
pub mod error;
mod fork;
// The fuzz targets' checks: for the fuzz crate (fuzz/Cargo.toml) and the corpus replay test
// (a dev-dependency of the crate on itself turns the feature on), never part of the API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod handles;
mod hot;
pub mod image;
pub mod kernel;
pub mod launch;
pub mod library;
pub mod link;
pub mod load_options;
pub mod names;
pub mod occupancy;
pub mod preload;
mod registry;
pub mod source;

/// What the integration tests look into that is not public API: the validation memo's counters
/// (tests/validate_memo.rs) and the library search (tests/secure_env.rs).
#[doc(hidden)]
pub mod test_hooks {
    pub mod memo {
        pub use crate::image::memo::{clear, stats, ENTRIES};
    }
    pub mod search {
        pub use crate::cuda::dl::{candidates, locate, probe, secure_process, setting, Component};
    }
}

pub use args::KernelArgs;
pub use bound::LibraryKernel;
pub use compile::{CompileFailure, CompileOptions, Compiled};
pub use error::{Error, Result, Status};
pub use image::CodeKind;
pub use kernel::{Kernel, Param};
pub use launch::{Dim3, LaunchConfig};
pub use library::{Api, Library};
pub use load_options::LoadOption;
pub use source::load_source;

/// How many CUDA devices the driver sees. [`Status::DriverNotFound`] without a driver,
/// [`Status::NoDevice`] when it finds no GPU: the way to ask "can anything be loaded here?"
/// before loading.
///
/// ```
/// match cudyn::device_count() {
///     Ok(n) => println!("{n} GPU(s)"),
///     Err(e) => println!("no GPU: {}", e.message),
/// }
/// ```
pub fn device_count() -> Result<i32> {
    cuda::driver::driver()?.device_count()
}
