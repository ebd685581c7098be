//! Which libraries and kernels cudyn loaded, which it unloaded, and the parameter layouts that
//! launches are checked against: one lock, so a load, an unload and a lookup never interleave.
//!
//! What it rests on (measured on an H200, driver 580, `cpp-tests/probes/dead_handles.cpp`):
//! - CUDA hands a freed library's kernel and library addresses to the next load almost every
//!   time (396 of 400 load/unload pairs), through either API, and with other allocations in
//!   between a 2- and a 4-parameter kernel took turns at one address 300 times in 400. An
//!   address is not an identity.
//! - The driver does not validate handles of unloaded libraries or their kernels.
//!   `cuLibraryUnload`, `cudaLibraryUnload` and `cuLibraryGetKernelCount` on an unloaded
//!   library crash the process. On a kernel whose library is gone, every `cuKernel*` call
//!   answered `CUDA_ERROR_INVALID_HANDLE` in a process holding nothing else, but in the
//!   interop and wrapper suites `cuKernelGetName` said success for such a kernel and the next
//!   `cuKernelGetParamInfo` crashed inside the driver (a lock in the freed library).
//!
//! Hence the rules:
//! - A layout is remembered only for an *owned* kernel: one of a library cudyn loaded and has
//!   not unloaded (its kernels are listed when it loads), or one the application *adopted*
//!   (`adopt`: it promises the handle stays live until it releases it). Unloading through
//!   cudyn drops a library's kernels under the lock, before CUDA can hand their addresses out
//!   again. Any other kernel (*foreign*: `cudaGetKernel`, a raw `cuLibraryGetKernel` on the
//!   application's own library) is asked for its layout on every launch: nothing cudyn sees
//!   tells it when such a kernel's library goes away, so no remembered layout could be trusted.
//! - A library or kernel cudyn unloaded is never handed to CUDA again: it is refused until
//!   cudyn sees its address live again (a cudyn load returns it, a kernel lookup through cudyn
//!   finds it, or the application adopts the handle).

use crate::cuda::driver;
use crate::cuda::driver::Param;
use crate::cuda::sys;
use crate::cuda::Api;
use crate::error::{Error, Result};
use crate::handles::AddressMap;
use crate::hot;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A library cudyn loaded and has not unloaded.
struct Loaded {
    api: Api,
    kernels: Vec<usize>,
    /// What must live as long as the library: the JIT option arrays and log buffers CUDA may
    /// write into when it loads the library into another context, and the image cudyn built
    /// for CUDA, which CUDA reads in place (loaded with BINARY_IS_PRESERVED) until the unload.
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// A kernel of a library in `Registry::libs`.
struct Owned {
    lib: usize,
    /// Read from CUDA on first use.
    params: Option<Arc<[Param]>>,
}

#[derive(Default)]
struct Registry {
    libs: AddressMap<Loaded>,
    kernels: AddressMap<Owned>,
    /// Libraries cudyn unloaded whose address no cudyn load has returned since.
    dead_libs: AddressMap<()>,
    /// Kernels of those libraries (kernel -> library), likewise.
    dead_kernels: AddressMap<usize>,
}

fn registry() -> &'static RwLock<Registry> {
    static R: OnceLock<RwLock<Registry>> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn read() -> RwLockReadGuard<'static, Registry> {
    registry().read().unwrap_or_else(|p| p.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Registry> {
    registry().write().unwrap_or_else(|p| p.into_inner())
}

/// `dead_kernels.len()`, readable without the lock: most processes never unload, and then a
/// lookup of a foreign kernel needs no second map probe.
static DEAD_KERNELS: AtomicUsize = AtomicUsize::new(0);

/// What cudyn knows of a library handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LibraryState {
    /// cudyn loaded it through this API and has not unloaded it.
    Owned(Api),
    /// cudyn unloaded it, and no cudyn load has returned this address since.
    Unloaded,
    /// Anything else: a library the application loaded itself (or a stray pointer; CUDA
    /// cannot tell those apart and neither can cudyn).
    Foreign,
}

pub(crate) fn library_state(lib: sys::CUlibrary) -> LibraryState {
    let r = read();
    let key = lib as usize;
    if let Some(l) = r.libs.get(&key) {
        LibraryState::Owned(l.api)
    } else if r.dead_libs.contains_key(&key) {
        LibraryState::Unloaded
    } else {
        LibraryState::Foreign
    }
}

/// The error for a library handle cudyn unloaded.
pub(crate) fn unloaded_library(lib: sys::CUlibrary) -> Error {
    Error::invalid(format!(
        "library {lib:p} was unloaded through cudyn (CUDA does not check library handles: \
         using one after unloading it would crash the process)"
    ))
}

/// Refuse a library cudyn knows it unloaded (CUDA would crash on it); any other is CUDA's to judge.
pub(crate) fn check_library(lib: sys::CUlibrary) -> Result<()> {
    if lib.is_null() {
        return Err(Error::invalid("library handle is NULL"));
    }
    if library_state(lib) == LibraryState::Unloaded {
        return Err(unloaded_library(lib));
    }
    Ok(())
}

/// Record a library cudyn just loaded through `api`, with its kernels (as listed by CUDA;
/// empty when this CUDA cannot list them: kernels then join as `get_kernel` hands them out).
/// `keep` stays alive until the library is unloaded through cudyn.
pub(crate) fn loaded(
    lib: sys::CUlibrary,
    api: Api,
    kernels: &[sys::CUkernel],
    keep: Option<Box<dyn std::any::Any + Send + Sync>>,
) {
    let key = lib as usize;
    let mut r = write();
    r.dead_libs.remove(&key);
    let mut mine = Vec::with_capacity(kernels.len());
    for k in kernels {
        let kk = *k as usize;
        if kk == 0 {
            continue;
        }
        r.dead_kernels.remove(&kk);
        // A stale entry here would mean CUDA gave one address to two live kernels; the new
        // library's kernel is the one the address names now.
        r.kernels.insert(kk, Owned { lib: key, params: None });
        mine.push(kk);
    }
    DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
    r.libs.insert(key, Loaded { api, kernels: mine, _keep: keep });
}

/// Kernels CUDA just returned for `lib` (a lookup or a listing through cudyn): they are live,
/// so a dead entry at their address is dropped; if cudyn owns `lib`, they are owned too (they
/// are already, unless this CUDA could not list the library's kernels at load).
pub(crate) fn found_kernels(lib: sys::CUlibrary, ks: &[sys::CUkernel]) {
    let lk = lib as usize;
    let settled = |r: &Registry, kk: usize| {
        !r.dead_kernels.contains_key(&kk)
            && (!r.libs.contains_key(&lk) || r.kernels.get(&kk).is_some_and(|o| o.lib == lk))
    };
    {
        let r = read();
        if ks.iter().all(|&k| settled(&r, k as usize)) {
            return;
        }
    }
    let mut r = write();
    for &k in ks {
        let kk = k as usize;
        r.dead_kernels.remove(&kk);
        if let Some(l) = r.libs.get_mut(&lk) {
            if !l.kernels.contains(&kk) {
                l.kernels.push(kk);
            }
            r.kernels.insert(kk, Owned { lib: lk, params: None });
        }
    }
    DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
}

/// Unload `lib` through `api` with `unload` (CUDA's call), keeping the books under the lock:
/// no load can slip a kernel in at a freed address before its predecessor is marked dead, and
/// no lookup sees a layout of an unloaded kernel.
pub(crate) fn unload(lib: sys::CUlibrary, api: Api, unload: impl FnOnce() -> Result<()>) -> Result<()> {
    let key = lib as usize;
    let mut r = write();
    if r.dead_libs.contains_key(&key) {
        return Err(unloaded_library(lib));
    }
    if let Some(was) = r.libs.get(&key).map(|l| l.api) {
        if was != api {
            return Err(Error::invalid(format!(
                "library {lib:p} was loaded through the {} API; unload it through the same one",
                was.text()
            )));
        }
    }
    unload()?;
    if let Some(l) = r.libs.remove(&key) {
        for kk in l.kernels {
            r.kernels.remove(&kk);
            r.dead_kernels.insert(kk, key);
        }
        // Every launch-table entry is retired: some were this library's kernels.
        hot::LINE.generation.fetch_add(1, Ordering::Release);
    }
    // A library the application loaded and unloaded through cudyn: its handle is as dead.
    r.dead_libs.insert(key, ());
    DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
    Ok(())
}

/// Whether `k` may be handed to CUDA: NULL is refused, and so is a kernel of a library cudyn
/// unloaded whose address cudyn has not seen live since (CUDA itself may crash on it).
pub(crate) fn check_kernel(k: sys::CUkernel) -> Result<()> {
    if k.is_null() {
        return Err(Error::invalid("kernel handle is NULL"));
    }
    if DEAD_KERNELS.load(Ordering::Acquire) == 0 || !read().dead_kernels.contains_key(&(k as usize)) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "kernel {:p} belongs to a library that cudyn has unloaded (if your program has since loaded a library \
         that reuses this address, vouch for the handle with cudyn_kernel_adopt)",
        k
    )))
}

/// Adopt `k`: the caller vouches that it is a live kernel and stays so until `release`.
/// Its layout is then remembered like an owned kernel's, and a dead entry at its address is
/// dropped.
pub(crate) fn adopt(k: sys::CUkernel) {
    let kk = k as usize;
    let mut r = write();
    if r.dead_kernels.remove(&kk).is_some() {
        DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
    }
    // A kernel cudyn already knows (owned, or adopted before) keeps its entry.
    r.kernels.entry(kk).or_insert(Owned { lib: ADOPTED, params: None });
}

/// Undo `adopt`: forget the layout (the launch table's entries are retired). A kernel of a
/// library cudyn loaded is not affected.
pub(crate) fn release(k: sys::CUkernel) -> bool {
    let kk = k as usize;
    let mut r = write();
    if r.kernels.get(&kk).is_some_and(|o| o.lib == ADOPTED) {
        r.kernels.remove(&kk);
        hot::LINE.generation.fetch_add(1, Ordering::Release);
        return true;
    }
    false
}

/// `Owned::lib` of an adopted kernel (no library address is all ones).
const ADOPTED: usize = usize::MAX;

/// The layout a launch of `k` is checked against.
pub(crate) enum Layout {
    /// An owned kernel's layout, remembered until cudyn unloads its library.
    Owned(Arc<[Param]>),
    /// A foreign kernel's layout, read from CUDA for this call only.
    Foreign(Vec<Param>),
}

impl std::ops::Deref for Layout {
    type Target = [Param];
    fn deref(&self) -> &[Param] {
        match self {
            Layout::Owned(p) => p,
            Layout::Foreign(p) => p,
        }
    }
}

/// The layout of an owned kernel if it is known already (recording it in the launch table),
/// without calling CUDA.
fn known(key: usize) -> Option<Arc<[Param]>> {
    let r = read();
    let p = r.kernels.get(&key)?.params.clone()?;
    // Read under the lock that an unload takes to retire entries: a slot written with this
    // generation belongs to a kernel that was owned when it was read.
    let generation = hot::LINE.generation.load(Ordering::Acquire);
    hot::remember(key, generation, &p);
    Some(p)
}

/// `k`'s parameter layout: owned kernels' from memory (CUDA asked once), foreign kernels'
/// from CUDA each time.
pub(crate) fn layout(k: sys::CUkernel) -> Result<Layout> {
    let key = k as usize;
    if let Some(p) = known(key) {
        return Ok(Layout::Owned(p));
    }
    check_kernel(k)?;
    let owned_by = read().kernels.get(&key).map(|o| o.lib);
    // SAFETY: not a kernel cudyn unloaded; any other handle is the caller's promise (a live
    // kernel: `Kernel::from_raw`).
    let params = unsafe { driver::kernel_params(k) }?;
    let Some(lib) = owned_by else {
        return Ok(Layout::Foreign(params));
    };
    let params: Arc<[Param]> = params.into();
    let mut r = write();
    match r.kernels.get_mut(&key) {
        // Still the same library's kernel (no unload and reload in between): keep it.
        Some(o) if o.lib == lib => {
            let p = o.params.get_or_insert(params).clone();
            let generation = hot::LINE.generation.load(Ordering::Acquire);
            hot::remember(key, generation, &p);
            Ok(Layout::Owned(p))
        }
        _ => Ok(Layout::Foreign(params.to_vec())),
    }
}

/// The cheap form of the launch check for a kernel with no remembered layout: true when `k`
/// has exactly `nargs` parameters, asking CUDA for parameters `nargs - 1` and `nargs` only.
/// False covers every other answer (the full path then explains it).
pub(crate) fn has_param_count(k: sys::CUkernel, nargs: usize) -> bool {
    // SAFETY: the launch path checked `k` is not a kernel cudyn unloaded; any other handle is
    // its caller's promise (a live kernel).
    unsafe { driver::kernel_has_param_count(k, nargs) }
}

/// Whether `k` is owned: its layout is (or will be) remembered.
pub(crate) fn is_owned(k: sys::CUkernel) -> bool {
    read().kernels.contains_key(&(k as usize))
}

/// Record `params` as the layout of kernel `k` of library `lib`, which cudyn is taken to own,
/// without asking CUDA: for tests without a GPU.
///
/// # Safety
/// `params` must be `k`'s real layout for as long as the entry stays (until `lib` is unloaded
/// through cudyn): launches of `k` are checked against it, and CUDA reads one argument per
/// parameter it lists.
#[doc(hidden)]
pub unsafe fn prime(k: sys::CUkernel, lib: sys::CUlibrary, params: &[Param]) {
    let (kk, lk) = (k as usize, lib as usize);
    let mut r = write();
    r.dead_libs.remove(&lk);
    r.libs.entry(lk).or_insert_with(|| Loaded { api: Api::Driver, kernels: Vec::new(), _keep: None }).kernels.push(kk);
    r.kernels.insert(kk, Owned { lib: lk, params: Some(params.into()) });
    if r.dead_kernels.remove(&kk).is_some() {
        DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
    }
}
