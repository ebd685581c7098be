//! The handle types cudyn shares with CUDA: CUDA's own pointers under cudyn's names, so a
//! `cudyn_kernel_t` *is* a `CUkernel` and a `cudaKernel_t` (the same `struct CUkern_st *`).

use crate::cuda::sys;
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

/// Hashing for maps keyed by a CUDA handle's address: one multiply (Fibonacci hashing), since
/// the keys are addresses the driver chose, not input an attacker picks to collide.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (v as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by handle address.
pub(crate) type AddressMap<V> = std::collections::HashMap<usize, V, std::hash::BuildHasherDefault<AddressHasher>>;

/// `cudyn_module_t` == `CUmodule` (the runtime has no module type): a library's module in one
/// context, valid while that context and the library live.
pub type ModuleHandle = sys::CUmodule;
/// `cudyn_event_t` == `CUevent` == `cudaEvent_t`: the events some launch attributes record.
pub type EventHandle = sys::CUevent;
/// `cudyn_graph_device_node_t` == `CUgraphDeviceNode` == `cudaGraphDeviceNode_t`: a
/// device-updatable graph node, written back by a launch that asked for one.
pub type GraphDeviceNodeHandle = sys::CUgraphDeviceNode;

assert_type_eq_all!(ModuleHandle, *mut sys::CUmod_st);
assert_type_eq_all!(EventHandle, sys::cudaEvent_t, *mut sys::CUevent_st);
assert_type_eq_all!(GraphDeviceNodeHandle, sys::cudaGraphDeviceNode_t, *mut sys::CUgraphDeviceUpdatableNode_st);
