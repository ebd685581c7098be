//! cudyn.h section "Occupancy": cuOccupancy* on any kernel handle and a chosen device, and a
//! launch config sized from them.
//!
//! Every export takes a kernel handle on the C caller's word that it is live (or one of a
//! library cudyn unloaded, which cudyn refuses by itself): `Kernel::from_raw`'s contract.

use super::{ffi, out};
use crate::enums::OccupancyFlags;
use crate::handles::KernelHandle;
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::occupancy::{self, DynamicSmem};
use crate::{Error, Status};
use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};

/// The dynamic shared memory a block of `block_size` threads needs, for
/// cudyn_occupancy_max_potential_block_size(): called during that call, on the calling thread,
/// with the `user` pointer given to it, before CUDA is asked and outside every lock of cudyn's.
pub type BlockToSmem = Option<unsafe extern "C" fn(block_size: c_int, user: *mut c_void) -> usize>;

fn positive(v: c_int, what: &str) -> crate::Result<u32> {
    u32::try_from(v).map_err(|_| Error::invalid(format!("{what} is {v}: it cannot be negative")))
}

fn flags_of(flags: c_uint) -> crate::Result<OccupancyFlags> {
    OccupancyFlags::from_c_arg(flags.into(), "flags")
}

fn to_int(v: u32, what: &str) -> crate::Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::new(Status::Cuda, format!("the {what} {v} does not fit in an int")))
}

/// The most blocks of `kernel` that can be active on one SM of `device`
/// (cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags).
///
/// Contexts: the kernel's function is taken in `device`'s primary context, which is current
/// (and retained, unless cudyn holds it already) for this call only; the thread's context state
/// is as it was after.
///
/// @param kernel A live kernel, from anywhere.
/// @param device A CUDA device ordinal.
/// @param block_size Threads per block the launch would have.
/// @param dynamic_smem_bytes Dynamic shared memory per block the launch would have.
/// @param flags A cudyn_occupancy_flags (CUDYN_OCCUPANCY_DEFAULT: as
///        cuOccupancyMaxActiveBlocksPerMultiprocessor).
/// @param[out] num_blocks The number of blocks. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_NO_DEVICE (no such
///         device), CUDYN_ERROR_CUDA.
#[no_mangle]
pub unsafe extern "C" fn cudyn_occupancy_max_active_blocks(
    kernel: KernelHandle,
    device: c_int,
    block_size: c_int,
    dynamic_smem_bytes: usize,
    flags: c_uint,
    num_blocks: *mut c_int,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(num_blocks, "num_blocks") }?;
        let (b, f) = (positive(block_size, "block_size")?, flags_of(flags)?);
        // SAFETY: a live kernel (caller's contract).
        let k = unsafe { Kernel::from_raw(kernel) }?;
        *o = to_int(occupancy::max_active_blocks_per_multiprocessor(k, device, b, dynamic_smem_bytes, f)?, "count")?;
        Ok(())
    })
}

/// The per-block dynamic shared memory: a C callback with its user pointer, or a fixed size.
fn smem_of<'a>(fixed: usize, f: &'a Option<Box<dyn Fn(u32) -> usize + 'a>>) -> DynamicSmem<'a> {
    match f {
        Some(f) => DynamicSmem::PerBlock(f.as_ref()),
        None => DynamicSmem::Fixed(fixed),
    }
}

/// The C callback as a closure.
///
/// # Safety
/// `f`, when given, may be called with `user` (the C caller's contract).
unsafe fn closure<'a>(f: BlockToSmem, user: *mut c_void) -> Option<Box<dyn Fn(u32) -> usize + 'a>> {
    // SAFETY: this function's contract; the block sizes CUDA tries fit in an int.
    f.map(|f| {
        Box::new(move |b: u32| unsafe { f(b.min(c_int::MAX as u32) as c_int, user) }) as Box<dyn Fn(u32) -> usize>
    })
}

/// The block size of `kernel` that reaches the most occupancy on `device`, and the fewest
/// blocks that reach it (cuOccupancyMaxPotentialBlockSizeWithFlags).
///
/// Contexts: as for cudyn_occupancy_max_active_blocks().
///
/// @param kernel A live kernel.
/// @param device A CUDA device ordinal.
/// @param dynamic_smem_bytes Dynamic shared memory per block, whatever the block size; ignored
///        when `smem_of_block` is given.
/// @param smem_of_block NULL, or a function giving the dynamic shared memory a block of a
///        given size needs. cudyn calls it during this call, on this thread, with `user`, once
///        for each block size CUDA's calculator tries (every multiple of 32 up to the limit,
///        1024 without one, and the limit), before CUDA is asked and with no lock of cudyn's
///        held: it may call cudyn (even unload a library) or fork. CUDA's own callback is
///        answered from those answers, so the same size must give the same bytes. It must not
///        unwind (longjmp, C++ exception) out of the call.
/// @param user Passed to `smem_of_block`.
/// @param block_size_limit The largest block the kernel handles; 0: the device's and the
///        kernel's own limit.
/// @param flags A cudyn_occupancy_flags.
/// @param[out] min_grid_size NULL, or the fewest blocks that reach the occupancy. Unchanged on
///             failure.
/// @param[out] block_size The suggested threads per block. Unchanged on failure.
/// @return As for cudyn_occupancy_max_active_blocks().
#[no_mangle]
pub unsafe extern "C" fn cudyn_occupancy_max_potential_block_size(
    kernel: KernelHandle,
    device: c_int,
    dynamic_smem_bytes: usize,
    smem_of_block: BlockToSmem,
    user: *mut c_void,
    block_size_limit: c_int,
    flags: c_uint,
    min_grid_size: *mut c_int,
    block_size: *mut c_int,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(block_size, "block_size") }?;
        let (limit, f) = (positive(block_size_limit, "block_size_limit")?, flags_of(flags)?);
        // SAFETY: a live kernel; the callback may be called with `user` (caller's contract).
        let (k, cb) = unsafe { (Kernel::from_raw(kernel)?, closure(smem_of_block, user)) };
        let s = occupancy::max_potential_block_size(k, device, smem_of(dynamic_smem_bytes, &cb), limit, f)?;
        let (b, g) = (to_int(s.block_size, "block size")?, to_int(s.min_grid_size, "grid size")?);
        *o = b;
        // SAFETY: NULL or writable (caller's contract).
        unsafe { super::put(min_grid_size, g) };
        Ok(())
    })
}

/// The most dynamic shared memory per block with which `num_blocks` blocks of `block_size`
/// threads of `kernel` fit on one SM of `device` (cuOccupancyAvailableDynamicSMemPerBlock).
///
/// Contexts: as for cudyn_occupancy_max_active_blocks().
///
/// @param kernel A live kernel.
/// @param device A CUDA device ordinal.
/// @param num_blocks Blocks per SM.
/// @param block_size Threads per block.
/// @param[out] bytes The bytes. Unchanged on failure.
/// @return As for cudyn_occupancy_max_active_blocks().
#[no_mangle]
pub unsafe extern "C" fn cudyn_occupancy_available_dynamic_smem(
    kernel: KernelHandle,
    device: c_int,
    num_blocks: c_int,
    block_size: c_int,
    bytes: *mut usize,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(bytes, "bytes") }?;
        let (n, b) = (positive(num_blocks, "num_blocks")?, positive(block_size, "block_size")?);
        // SAFETY: a live kernel (caller's contract).
        let k = unsafe { Kernel::from_raw(kernel) }?;
        *o = occupancy::available_dynamic_smem_per_block(k, device, n, b)?;
        Ok(())
    })
}

/// The config argument of the cluster queries.
///
/// # Safety
/// `cfg` is NULL or points to a readable cudyn_launch_config that outlives the reference.
unsafe fn config<'a>(cfg: *const LaunchConfig) -> crate::Result<&'a LaunchConfig> {
    // SAFETY: the caller's contract.
    unsafe { cfg.as_ref() }.ok_or_else(|| Error::invalid("config is NULL"))
}

/// The largest cluster, in blocks, `kernel` can be launched with as `config` describes
/// (cuOccupancyMaxPotentialClusterSize; the config's cluster shape is ignored, a kernel's
/// required cluster size is what it reports).
///
/// Contexts: as for cudyn_occupancy_max_active_blocks(); CUDA computes in the config's
/// stream's context when the stream is not NULL.
///
/// @param kernel A live kernel.
/// @param device A CUDA device ordinal.
/// @param config A launch config as for cudyn_launch() (grid, block, shared memory, stream,
///        attributes; `api` is not used).
/// @param[out] cluster_size The number of blocks. Unchanged on failure.
/// @return As for cudyn_occupancy_max_active_blocks().
#[no_mangle]
pub unsafe extern "C" fn cudyn_occupancy_max_potential_cluster_size(
    kernel: KernelHandle,
    device: c_int,
    config: *const LaunchConfig,
    cluster_size: *mut c_int,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a readable config; a live kernel (caller's contract).
        let (o, cfg, k) =
            unsafe { (out(cluster_size, "cluster_size")?, self::config(config)?, Kernel::from_raw(kernel)?) };
        // SAFETY: the config's stream and attributes are the C caller's contract.
        *o = to_int(unsafe { occupancy::max_potential_cluster_size(k, device, cfg) }?, "cluster size")?;
        Ok(())
    })
}

/// The most clusters of `kernel`, of the config's cluster shape (or the kernel's required one),
/// that can be active at once (cuOccupancyMaxActiveClusters).
///
/// @param kernel, device, config As for cudyn_occupancy_max_potential_cluster_size(); the
///        config gives the cluster shape (the `cluster` field or the attribute).
/// @param[out] num_clusters The number of clusters. Unchanged on failure.
/// @return As for cudyn_occupancy_max_active_blocks().
#[no_mangle]
pub unsafe extern "C" fn cudyn_occupancy_max_active_clusters(
    kernel: KernelHandle,
    device: c_int,
    config: *const LaunchConfig,
    num_clusters: *mut c_int,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable; a readable config; a live kernel (caller's contract).
        let (o, cfg, k) =
            unsafe { (out(num_clusters, "num_clusters")?, self::config(config)?, Kernel::from_raw(kernel)?) };
        // SAFETY: as above.
        *o = to_int(unsafe { occupancy::max_active_clusters(k, device, cfg) }?, "cluster count")?;
        Ok(())
    })
}

/// A one-dimensional launch config of `kernel` on `device` for `n` elements, with the block
/// size cudyn_occupancy_max_potential_block_size() suggests: grid = ceil(n / block); `n` 0:
/// the fewest blocks that fill the device (for a grid-stride loop). The config is a whole new
/// one (zeroed, through the runtime, NULL stream, shared memory as given or as `smem_of_block`
/// says for the block size chosen): set `api`, `stream` and the rest on it after.
///
/// @param kernel, device As for cudyn_occupancy_max_potential_block_size().
/// @param n Elements to cover.
/// @param dynamic_smem_bytes, smem_of_block, user As for
///        cudyn_occupancy_max_potential_block_size().
/// @param[out] config The config. Unchanged on failure.
/// @return As for cudyn_occupancy_max_active_blocks(); too many elements for one grid:
///         CUDYN_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn cudyn_launch_config_for_occupancy(
    kernel: KernelHandle,
    device: c_int,
    n: u64,
    dynamic_smem_bytes: usize,
    smem_of_block: BlockToSmem,
    user: *mut c_void,
    config: *mut LaunchConfig,
) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(config, "config") }?;
        // SAFETY: a live kernel; the callback may be called with `user` (caller's contract).
        let (k, cb) = unsafe { (Kernel::from_raw(kernel)?, closure(smem_of_block, user)) };
        *o = occupancy::launch_config(k, device, n, smem_of(dynamic_smem_bytes, &cb))?;
        Ok(())
    })
}
