//! cudyn: load CUDA device code at run time, through the CUDA runtime or the driver, with
//! handles that are `cudaKernel_t` and `CUkernel` at once; launch through either API.
//!
//! Nothing CUDA is linked: libcuda, libcudart, NVRTC and nvJitLink are opened on first use,
//! and a missing one is a clear error, never a loader failure.

// CUDA handles (CUlibrary, CUkernel, CUstream, ...) are raw pointers that the core passes to
// CUDA and never dereferences; clippy cannot tell a handle from a pointer it would read.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod cache;
pub mod capi;
pub mod compile;
#[doc(hidden)]
pub mod cuda;
pub mod diagnose;
pub mod enums;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod handles;
mod hot;
pub mod image;
pub mod image_contents;
pub mod kernel;
pub mod launch;
pub mod library;
pub mod link;
pub mod load_options;
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
        pub use crate::cuda::dl::{candidates, secure_process, setting, Component};
    }
}

pub use compile::{CompileOptions, Compiled};
pub use error::{Error, Result, Status};
pub use image::CodeKind;
pub use kernel::{Kernel, Param};
pub use launch::{Dim3, LaunchConfig};
pub use library::{Api, Library};
pub use load_options::LoadOption;
