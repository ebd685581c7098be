//! The handle types cudyn shares with CUDA: CUDA's own pointers under cudyn's names, so a
//! `cudyn_kernel_t` *is* a `CUkernel` and a `cudaKernel_t` (the same `struct CUkern_st *`).

use crate::sys;
use static_assertions::{assert_eq_align, assert_eq_size, assert_type_eq_all};

/// `cudyn_library_t` == `CUlibrary` == `cudaLibrary_t`.
pub type LibraryHandle = sys::CUlibrary;
/// `cudyn_kernel_t` == `CUkernel` == `cudaKernel_t`.
pub type KernelHandle = sys::CUkernel;
/// `cudyn_function_t` == `CUfunction` == `cudaFunction_t`.
pub type FunctionHandle = sys::CUfunction;
/// `cudyn_stream_t` == `CUstream` == `cudaStream_t`.
pub type StreamHandle = sys::CUstream;

// Identity, not mere likeness: each triple is one Rust type, as in C each is one struct tag.
assert_type_eq_all!(LibraryHandle, sys::CUlibrary, sys::cudaLibrary_t, *mut sys::CUlib_st);
assert_type_eq_all!(KernelHandle, sys::CUkernel, sys::cudaKernel_t, *mut sys::CUkern_st);
assert_type_eq_all!(FunctionHandle, sys::CUfunction, sys::cudaFunction_t, *mut sys::CUfunc_st);
assert_type_eq_all!(StreamHandle, sys::CUstream, sys::cudaStream_t, *mut sys::CUstream_st);
assert_eq_size!(KernelHandle, *mut std::ffi::c_void);
assert_eq_align!(KernelHandle, *mut std::ffi::c_void);
