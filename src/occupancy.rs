//! Occupancy: how many blocks of a kernel fit on an SM of a chosen device, which block size
//! reaches the most, and a launch config sized from it; CUDA's cuOccupancy* calls on any
//! kernel handle.
//!
//! CUDA's calls take a function of a context: cudyn asks with the kernel's function in the
//! device's primary context, current (and retained, unless cudyn holds it already) for the call
//! only, so a query leaves the thread's context state and the device as they were.

use crate::cuda::{driver, sys};
use crate::error::{Error, Result, Status};
use crate::kernel::Kernel;
use crate::launch::{CudaAttrs, Dim3, LaunchConfig};
use std::cell::Cell;
use std::os::raw::c_int;

pub use crate::enums::OccupancyFlags;

/// The dynamic shared memory a block uses: fixed, or a function of the block size.
pub enum DynamicSmem<'a> {
    /// The same number of bytes whatever the block size.
    Fixed(usize),
    /// Bytes for a block of the given number of threads (called during the query, on the
    /// calling thread, for block sizes CUDA tries).
    PerBlock(&'a dyn Fn(u32) -> usize),
}

/// What [`max_potential_block_size`] suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize {
    /// Threads per block that reach the most occupancy (the fewest blocks per SM among ties).
    pub block_size: u32,
    /// The fewest blocks that reach that occupancy on the whole device.
    pub min_grid_size: u32,
}

fn int(v: u32, what: &str) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::invalid(format!("{what} {v} is larger than CUDA takes ({})", c_int::MAX)))
}

fn count(v: c_int, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::new(Status::Cuda, format!("CUDA reported {v} as the {what}")))
}

/// Runs `f` with `k`'s raw handle under the registry's read lock (`Kernel::query`): NULL and a
/// kernel of a library cudyn unloaded are refused, and no unload through cudyn runs until `f`
/// returns, so the function CUDA's occupancy calls work on stays live for all of them.
fn with_live<R>(k: Kernel, f: impl FnOnce(sys::CUkernel) -> Result<R>) -> Result<R> {
    k.query(|| f(k.as_raw()))
}

/// The most blocks of `k`, with `block_size` threads and `dynamic_smem` bytes of dynamic shared
/// memory each, that can be active on one SM of `device`
/// (cuOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]).
pub fn max_active_blocks_per_multiprocessor(
    k: Kernel,
    device: i32,
    block_size: u32,
    dynamic_smem: usize,
    flags: OccupancyFlags,
) -> Result<u32> {
    let b = int(block_size, "block size")?;
    // SAFETY: not a kernel cudyn knows is dead; any other handle is the caller's promise
    // (`Kernel::from_raw`).
    let n =
        with_live(k, |raw| unsafe { driver::occupancy_max_active_blocks(raw, device, b, dynamic_smem, flags as u32) })?;
    count(n, "number of active blocks")
}

thread_local! {
    /// The closure of the `max_potential_block_size` running on this thread (CUDA's callback
    /// takes no user data), and a panic it raised.
    static SMEM_OF_BLOCK: Cell<Option<*const (dyn Fn(u32) -> usize + 'static)>> = const { Cell::new(None) };
    static PANIC: Cell<Option<Box<dyn std::any::Any + Send>>> = const { Cell::new(None) };
}

/// CUDA's callback: the closure this thread set. A panic is kept for after CUDA returns
/// (unwinding through CUDA's frames would be undefined behaviour) and answered with 0.
extern "C" fn smem_trampoline(block_size: c_int) -> usize {
    let Some(f) = SMEM_OF_BLOCK.try_with(Cell::get).ok().flatten() else { return 0 };
    // SAFETY: set by `max_potential_block_size` for the duration of the CUDA call that calls
    // this, on this thread; the closure outlives that call.
    let f = unsafe { &*f };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(block_size.max(0) as u32))) {
        Ok(v) => v,
        Err(p) => {
            let _ = PANIC.try_with(|c| c.set(Some(p)));
            0
        }
    }
}

/// The block size of `k` that reaches the most occupancy on `device`, and the fewest blocks
/// that reach it (cuOccupancyMaxPotentialBlockSize[WithFlags]). `block_size_limit` 0: the most
/// the device and the kernel allow. A panic in a `PerBlock` function is resumed after CUDA
/// returns.
pub fn max_potential_block_size(
    k: Kernel,
    device: i32,
    smem: DynamicSmem<'_>,
    block_size_limit: u32,
    flags: OccupancyFlags,
) -> Result<BlockSize> {
    let limit = int(block_size_limit, "block size limit")?;
    let (callback, fixed, f) = match smem {
        DynamicSmem::Fixed(n) => (None, n, None),
        DynamicSmem::PerBlock(f) => (Some(smem_trampoline as unsafe extern "C" fn(c_int) -> usize), 0, Some(f)),
    };
    // The closure, for the trampoline, for this call only (restored after: a closure may itself
    // ask again).
    let erased = f.map(|f| {
        let p: *const (dyn Fn(u32) -> usize + '_) = f;
        // SAFETY: only the lifetime is erased; the pointer is used while `f` is borrowed (this
        // call), then the previous value is put back.
        unsafe { std::mem::transmute::<*const (dyn Fn(u32) -> usize + '_), *const (dyn Fn(u32) -> usize + 'static)>(p) }
    });
    let before = SMEM_OF_BLOCK.with(|c| c.replace(erased));
    // SAFETY: a kernel not known dead (as above); the callback reads this thread's closure,
    // which lives through the call.
    let r = with_live(k, |raw| unsafe {
        driver::occupancy_max_potential_block_size(raw, device, callback, fixed, limit, flags as u32)
    });
    SMEM_OF_BLOCK.with(|c| c.set(before));
    if let Some(p) = PANIC.with(Cell::take) {
        std::panic::resume_unwind(p);
    }
    let (grid, block) = r?;
    Ok(BlockSize { block_size: count(block, "block size")?, min_grid_size: count(grid, "minimum grid size")? })
}

/// The most dynamic shared memory per block with which `num_blocks` blocks of `block_size`
/// threads of `k` fit on one SM of `device` (cuOccupancyAvailableDynamicSMemPerBlock).
pub fn available_dynamic_smem_per_block(k: Kernel, device: i32, num_blocks: u32, block_size: u32) -> Result<usize> {
    let (n, b) = (int(num_blocks, "number of blocks")?, int(block_size, "block size")?);
    // SAFETY: as for `max_active_blocks_per_multiprocessor`.
    with_live(k, |raw| unsafe { driver::occupancy_available_dynamic_smem(raw, device, n, b) })
}

/// A cluster query for the launch `cfg` describes (its grid, block, shared memory, stream and
/// attributes, the cluster shape included).
///
/// # Safety
/// As for [`max_potential_cluster_size`].
unsafe fn cluster_query(k: Kernel, device: i32, cfg: &LaunchConfig, q: driver::ClusterQuery) -> Result<u32> {
    // SAFETY: the config's list is readable (this function's contract).
    unsafe { crate::launch::check_config(cfg) }?;
    let mut attrs = CudaAttrs::new();
    // SAFETY: the config's list is readable (this function's contract); `check_config`
    // accepted it.
    if unsafe { attrs.fill(cfg) }.is_some() {
        return Err(Error::invalid("the launch attributes changed while they were read"));
    }
    let c = sys::CUlaunchConfig {
        gridDimX: cfg.grid.x,
        gridDimY: cfg.grid.y,
        gridDimZ: cfg.grid.z,
        blockDimX: cfg.block.x,
        blockDimY: cfg.block.y,
        blockDimZ: cfg.block.z,
        sharedMemBytes: cfg.shared_mem_bytes as u32,
        hStream: cfg.stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len(),
    };
    // SAFETY: a kernel not known dead; the stream's contract is the caller's; the attributes
    // were written by `fill`.
    let n = with_live(k, |raw| unsafe { driver::occupancy_cluster(raw, device, &c, q) })?;
    count(n, "cluster count")
}

/// The largest cluster (in blocks) `k` can be launched with as `cfg` describes (its cluster
/// shape is ignored; a kernel's required cluster size is what it reports)
/// (cuOccupancyMaxPotentialClusterSize). CUDA computes it in `cfg.stream`'s context when the
/// stream is not NULL, else in `device`'s primary context.
///
/// # Safety
/// `cfg.stream` is NULL, a special stream or a live stream; its attribute list, if any, is
/// readable (see [`crate::launch::LaunchAttributes::new`]).
pub unsafe fn max_potential_cluster_size(k: Kernel, device: i32, cfg: &LaunchConfig) -> Result<u32> {
    // SAFETY: this function's contract.
    unsafe { cluster_query(k, device, cfg, driver::ClusterQuery::MaxPotentialSize) }
}

/// The most clusters of `k` of `cfg`'s cluster shape (or the kernel's required one) that can
/// be active at once on the device (cuOccupancyMaxActiveClusters).
///
/// # Safety
/// As for [`max_potential_cluster_size`].
pub unsafe fn max_active_clusters(k: Kernel, device: i32, cfg: &LaunchConfig) -> Result<u32> {
    // SAFETY: this function's contract.
    unsafe { cluster_query(k, device, cfg, driver::ClusterQuery::MaxActive) }
}

/// A one-dimensional launch of `k` on `device` for `n` elements with the block size that reaches
/// the most occupancy ([`max_potential_block_size`]): grid = ceil(n / block). `n` 0: the fewest
/// blocks that fill the device (for a grid-stride loop). Launched through the runtime unless
/// changed ([`LaunchConfig::with_api`]), with `smem`'s bytes of dynamic shared memory.
pub fn launch_config(k: Kernel, device: i32, n: u64, smem: DynamicSmem<'_>) -> Result<LaunchConfig> {
    let per_block = |block: u32| match &smem {
        DynamicSmem::Fixed(b) => *b,
        DynamicSmem::PerBlock(f) => f(block),
    };
    let suggested = match &smem {
        DynamicSmem::Fixed(b) => {
            max_potential_block_size(k, device, DynamicSmem::Fixed(*b), 0, OccupancyFlags::Default)
        }
        DynamicSmem::PerBlock(f) => {
            max_potential_block_size(k, device, DynamicSmem::PerBlock(*f), 0, OccupancyFlags::Default)
        }
    }?;
    let block = suggested.block_size.max(1);
    let grid = if n == 0 { u64::from(suggested.min_grid_size.max(1)) } else { n.div_ceil(u64::from(block)) };
    let grid = u32::try_from(grid).map_err(|_| {
        Error::invalid(format!("{n} elements need {grid} blocks of {block}: more than a grid's x extent holds"))
    })?;
    Ok(LaunchConfig {
        grid: Dim3::x(grid),
        block: Dim3::x(block),
        shared_mem_bytes: per_block(block),
        ..Default::default()
    })
}
