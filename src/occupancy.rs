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
    /// Bytes for a block of the given number of threads: called on the calling thread, before
    /// CUDA is asked and outside every lock of cudyn's, for each block size CUDA's calculator
    /// tries (see [`max_potential_block_size`]); the same size must give the same bytes.
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

/// What a `PerBlock` function answered, for CUDA's callback (which takes no user data: a
/// thread-local points at the table of the query running on this thread), and the block sizes
/// CUDA asked that the table lacked.
struct Sizes {
    /// (block size, bytes), sorted by block size.
    table: Vec<(u32, usize)>,
    missed: [Cell<u32>; 32],
    n_missed: Cell<usize>,
}

thread_local! {
    /// The table of the `max_potential_block_size` under way on this thread. No destructor, so
    /// it is there even while the thread exits.
    static SIZES: Cell<*const Sizes> = const { Cell::new(std::ptr::null()) };
}

/// CUDA's callback: the answer from this thread's table; a block size it lacks is noted (the
/// query is asked again with it) and answered 0. Calls no user code, takes no lock, cannot
/// panic.
extern "C" fn smem_trampoline(block_size: c_int) -> usize {
    let Some(p) = SIZES.try_with(Cell::get).ok().filter(|p| !p.is_null()) else { return 0 };
    // SAFETY: set by `max_potential_block_size` to a table that lives through the CUDA call
    // that calls this, on this thread.
    let s = unsafe { &*p };
    let b = u32::try_from(block_size).unwrap_or(0);
    match s.table.binary_search_by_key(&b, |e| e.0) {
        Ok(i) => s.table.get(i).map_or(0, |e| e.1),
        Err(_) => {
            let n = s.n_missed.get();
            if let Some(c) = s.missed.get(n) {
                c.set(b);
            }
            s.n_missed.set(n.saturating_add(1));
            0
        }
    }
}

/// The block sizes CUDA's calculator tries for a limit of `limit` threads: every multiple of
/// the warp size up to it, and the limit itself (the device's 1,024 where the caller gives
/// none).
fn sizes_tried(limit: u32) -> Vec<u32> {
    let cap = if limit == 0 || limit > 1024 { 1024 } else { limit };
    let mut v: Vec<u32> = (1..=cap / 32).map(|i| i * 32).collect();
    if cap % 32 != 0 {
        v.push(cap);
    }
    v
}

/// The block size of `k` that reaches the most occupancy on `device`, and the fewest blocks
/// that reach it (cuOccupancyMaxPotentialBlockSize[WithFlags]). `block_size_limit` 0: the most
/// the device and the kernel allow.
///
/// A `PerBlock` function is called here, before CUDA is asked and outside every lock of
/// cudyn's, once for each block size CUDA's calculator tries (every multiple of 32 up to the
/// limit, 1,024 without one, and the limit); CUDA's callback is then answered from those
/// answers. So the function may call cudyn (even drop a library) or fork, and a panic in it
/// unwinds to the caller; it must give the same bytes for the same block size. Should CUDA
/// ask a size not foreseen, the function is asked that size too and CUDA asked again.
pub fn max_potential_block_size(
    k: Kernel,
    device: i32,
    smem: DynamicSmem<'_>,
    block_size_limit: u32,
    flags: OccupancyFlags,
) -> Result<BlockSize> {
    let limit = int(block_size_limit, "block size limit")?;
    let done = |(grid, block): (c_int, c_int)| -> Result<BlockSize> {
        Ok(BlockSize { block_size: count(block, "block size")?, min_grid_size: count(grid, "minimum grid size")? })
    };
    let f = match smem {
        DynamicSmem::Fixed(n) => {
            // SAFETY: a kernel not known dead; any other handle is the caller's promise; no
            // callback.
            return done(with_live(k, |raw| unsafe {
                driver::occupancy_max_potential_block_size(raw, device, None, n, limit, flags as u32)
            })?);
        }
        DynamicSmem::PerBlock(f) => f,
    };
    let mut table: Vec<(u32, usize)> = Vec::new();
    let mut wanted = sizes_tried(block_size_limit);
    for _ in 0..4 {
        // The user's function, with no lock of cudyn's held and no CUDA call under way.
        for b in wanted.drain(..) {
            if let Err(at) = table.binary_search_by_key(&b, |e| e.0) {
                table.insert(at, (b, f(b)));
            }
        }
        let sizes = Sizes { table, missed: Default::default(), n_missed: Cell::new(0) };
        let before = SIZES
            .try_with(|c| c.replace(&sizes))
            .map_err(|_| Error::new(Status::Internal, "this thread's storage is gone (the thread is exiting)"))?;
        // SAFETY: a kernel not known dead (as above); the callback reads `sizes`, which lives
        // through the call.
        let r = with_live(k, |raw| unsafe {
            driver::occupancy_max_potential_block_size(
                raw,
                device,
                Some(smem_trampoline as unsafe extern "C" fn(c_int) -> usize),
                0,
                limit,
                flags as u32,
            )
        });
        let _ = SIZES.try_with(|c| c.set(before));
        let n = sizes.n_missed.get();
        if n == 0 {
            return done(r?);
        }
        wanted = sizes.missed.iter().take(n).map(Cell::get).collect();
        table = sizes.table;
    }
    Err(Error::new(
        Status::Internal,
        "CUDA kept asking the dynamic shared memory of block sizes its calculator does not try",
    ))
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
