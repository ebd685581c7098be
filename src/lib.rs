//! cudyn: load CUDA device code at run time, through the CUDA runtime or the driver, with
//! handles that are `cudaKernel_t` and `CUkernel` at once; launch through either API.
//!
//! Nothing CUDA is linked: libcuda, libcudart, NVRTC and nvJitLink are opened on first use,
//! and a missing one is a clear error, never a loader failure.

// CUDA handles (CUlibrary, CUkernel, CUstream, ...) are raw pointers that the core passes to
// CUDA and never dereferences; clippy cannot tell a handle from a pointer it would read.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod args;
mod bound;
pub mod cache;
pub mod capi;
pub mod compile;
pub mod dl;
pub mod driver;
mod elf_check;
pub mod error;
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
pub mod memo;
pub mod nvjitlink;
pub mod nvrtc;
mod registry;
pub mod runtime;
pub mod source;
pub mod sys;

pub use args::KernelArgs;
pub use bound::LibraryKernel;
pub use compile::{CompileFailure, CompileOptions, Compiled};
pub use error::{Error, Result, Status};
pub use image::CodeKind;
pub use kernel::{Kernel, Param};
pub use launch::{Dim3, LaunchConfig};
pub use library::{Api, Library};
pub use load_options::LoadOption;
