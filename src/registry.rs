//! Which libraries and kernels cudyn knows, which it unloaded, and the parameter layouts that
//! launches are checked against: one reader/writer lock, under which every use of a handle is
//! decided *and* made, and under whose write side every unload runs.
//!
//! What it rests on (measured on an H200, driver 580, `cpp-tests/probes/dead_handles.cpp`):
//! - CUDA hands a freed library's kernel and library addresses to the next load almost every
//!   time (396 of 400 load/unload pairs), through either API, and with other allocations in
//!   between a 2- and a 4-parameter kernel took turns at one address 300 times in 400. An
//!   address is not an identity, and no CUDA call gives a kernel one.
//! - The driver does not validate handles of unloaded libraries or their kernels.
//!   `cuLibraryUnload`, `cudaLibraryUnload` and `cuLibraryGetKernelCount` on an unloaded
//!   library crash the process. On a kernel whose library is gone, every `cuKernel*` call
//!   answered `CUDA_ERROR_INVALID_HANDLE` in a process holding nothing else, but in the
//!   interop and wrapper suites `cuKernelGetName` said success for such a kernel and the next
//!   `cuKernelGetParamInfo` crashed inside the driver (a lock in the freed library).
//!
//! The invariants:
//! - A *known* kernel is one of a library cudyn loaded and has not unloaded (an *owned* one),
//!   or one the program *adopted* (it vouches the handle stays live until it releases it).
//!   While the read lock is held no unload through cudyn can run, so a known kernel is live
//!   for as long as the lock is held: its layout is read from CUDA and remembered under the
//!   read lock, and every CUDA call that uses it (a query, the full path's launch) is made
//!   under it too. A layout therefore belongs to the kernel its entry describes; an entry
//!   never outlives its library's unload, which runs under the write lock.
//! - The launch fast path takes no lock: it launches only kernels in the launch table under
//!   the current generation (`hot`), and an unload of a library any of whose kernels entered
//!   the table first retires the table and waits for fast launches under way (`hot`'s
//!   stripes), under the write lock, so no slow path can refill the table for it meanwhile.
//! - Kernels cudyn learns of lazily, so a load costs CUDA nothing but the load: a kernel
//!   becomes owned when cudyn hands it out (a lookup or listing through cudyn), or when a
//!   handle cudyn does not know is first used and `cuKernelGetLibrary` (driver 12.5+) names a
//!   library cudyn loaded (asked under the read lock: that library cannot go away meanwhile;
//!   asked again for the same handle only after a cudyn load).
//! - Any other kernel (*foreign*: `cudaGetKernel`, a raw `cuLibraryGetKernel` on the
//!   application's own library) is checked against CUDA's answer at each use: nothing cudyn
//!   sees tells it when such a kernel's library goes away, so nothing about it is remembered.
//! - A library or kernel cudyn unloaded is never handed to CUDA again: it is refused until
//!   cudyn sees its address live again (a cudyn load returns it, a lookup through cudyn finds
//!   it, the application adopts it, or a library cudyn loaded since lists it: see `revive`).

use crate::cuda::driver::{self, Param};
use crate::cuda::sys;
use crate::cuda::Api;
use crate::error::{Error, Result};
use crate::handles::AddressMap;
use crate::hot;
use crate::image::Built;
use std::ffi::CStr;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A library cudyn loaded and has not unloaded.
struct Loaded {
    api: Api,
    /// Which load this is: process-unique, unlike the address.
    id: u64,
    /// The kernels cudyn knows of it (each also in `Registry::kernels`).
    kernels: Vec<usize>,
    /// Whether CUDA's list of its kernels was read into `kernels` (see `revive`).
    listed: bool,
    /// Whether a kernel of it entered the launch table: its unload then retires the table.
    hot: AtomicBool,
    /// The image cudyn built for CUDA, which CUDA reads in place (loaded with
    /// BINARY_IS_PRESERVED) until the unload; its tables give the kernels' layouts.
    image: Option<Arc<Built>>,
    /// What else must live as long as the library: the JIT option arrays and log buffers CUDA
    /// may write into when it loads the library into another context.
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// Who vouches for a known kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A kernel of the library at this address, of this load (`Loaded::id`).
    Library { lib: usize, id: u64 },
    /// The program (`adopt`).
    Adopted,
}

/// A known kernel: live while its entry exists (see the top).
pub(crate) struct Known {
    owner: Owner,
    /// Read from CUDA on first use, under the read lock.
    params: OnceLock<Box<[Param]>>,
    /// Adopted kernels only: whether it entered the launch table (owned kernels' libraries
    /// keep that flag).
    hot: AtomicBool,
}

impl Known {
    fn new(owner: Owner) -> Known {
        Known { owner, params: OnceLock::new(), hot: AtomicBool::new(false) }
    }
}

type Map<V> = AddressMap<V>;

const fn map<V>() -> Map<V> {
    std::collections::HashMap::with_hasher(BuildHasherDefault::new())
}

struct Registry {
    libs: Map<Loaded>,
    kernels: Map<Known>,
    /// Libraries cudyn unloaded whose address no cudyn load has returned since.
    dead_libs: Map<()>,
    /// Kernels cudyn knew of those libraries, whose address cudyn has not seen live since.
    dead_kernels: Map<()>,
    /// Handles `cuKernelGetLibrary` placed outside every library cudyn loaded, with the value
    /// of `loads` then: not asked again until a cudyn load (only a load can make one owned).
    foreign: Mutex<Map<u64>>,
    /// Loads through cudyn so far; a load's `Loaded::id`.
    loads: u64,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    libs: map(),
    kernels: map(),
    dead_libs: map(),
    dead_kernels: map(),
    foreign: Mutex::new(map()),
    loads: 0,
});

/// `dead_kernels.len()`, readable without the lock: most processes never unload, and then a
/// lookup of an unknown kernel needs no probe of the dead map.
static DEAD_KERNELS: AtomicUsize = AtomicUsize::new(0);

fn read() -> RwLockReadGuard<'static, Registry> {
    crate::fork::watch(&FORK);
    REGISTRY.read().unwrap_or_else(|p| p.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Registry> {
    crate::fork::watch(&FORK);
    REGISTRY.write().unwrap_or_else(|p| p.into_inner())
}

/// fork(): the write lock is taken before the fork and released on both sides after it, so a
/// child never inherits the registry locked by a thread it does not have (or its maps half
/// written); the launch stripes and table are reset in the child.
static FORK: crate::fork::Lock =
    crate::fork::Lock::new(crate::fork::Rank::Registry, hold_for_fork, hot::after_fork_in_child);
crate::fork::enrol_at_load!(FORK);

fn hold_for_fork() {
    crate::fork::keep(REGISTRY.write().unwrap_or_else(|p| p.into_inner()));
}

fn publish_dead(r: &Registry) {
    DEAD_KERNELS.store(r.dead_kernels.len(), Ordering::Release);
}

/// What cudyn knows of a library handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LibraryState {
    /// cudyn loaded it through this API and has not unloaded it; which load it is
    /// (`Loaded::id`), for `found_kernels`.
    Owned(Api, u64),
    /// Anything else: a library the application loaded itself (or a stray pointer; CUDA
    /// cannot tell those apart and neither can cudyn).
    Foreign,
}

/// The error for a library handle cudyn unloaded.
fn unloaded_library(lib: sys::CUlibrary) -> Error {
    Error::invalid(format!(
        "library {lib:p} was unloaded through cudyn (CUDA does not check library handles: \
         using one after unloading it would crash the process)"
    ))
}

/// Run `f` with library `lib` under the read lock (so no unload through cudyn runs until it
/// returns): NULL and a library cudyn unloaded are refused without calling `f`; any other
/// library is CUDA's to judge, on the caller's word that it is live.
pub(crate) fn with_library<R>(lib: sys::CUlibrary, f: impl FnOnce(LibraryState) -> Result<R>) -> Result<R> {
    if lib.is_null() {
        return Err(Error::invalid("library handle is NULL"));
    }
    let key = lib as usize;
    let r = read();
    if let Some(l) = r.libs.get(&key) {
        return f(LibraryState::Owned(l.api, l.id));
    }
    if r.dead_libs.contains_key(&key) {
        return Err(unloaded_library(lib));
    }
    f(LibraryState::Foreign)
}

/// Record a library cudyn just loaded through `api` from `image` (None: the caller's bytes);
/// CUDA is asked nothing (its kernels are learned as they are used). `image` and `keep` stay
/// alive until the library is unloaded through cudyn.
pub(crate) fn loaded(
    lib: sys::CUlibrary,
    api: Api,
    image: Option<Arc<Built>>,
    keep: Option<Box<dyn std::any::Any + Send + Sync>>,
) {
    let key = lib as usize;
    let mut r = write();
    r.dead_libs.remove(&key);
    r.loads += 1;
    let id = r.loads;
    let fresh = Loaded { api, id, kernels: Vec::new(), listed: false, hot: AtomicBool::new(false), image, _keep: keep };
    // An entry already here means the library at this address was unloaded outside cudyn
    // (against the contract): its kernels are dead to cudyn, not the new library's.
    if let Some(old) = r.libs.insert(key, fresh) {
        for kk in old.kernels {
            if r.kernels.get(&kk).is_some_and(|k| k.owner == (Owner::Library { lib: key, id: old.id })) {
                r.kernels.remove(&kk);
                r.dead_kernels.insert(kk, ());
            }
        }
        if old.hot.load(Ordering::Relaxed) {
            hot::retire_all();
        }
        publish_dead(&r);
    }
}

/// Kernels CUDA just returned for `lib` through cudyn (a lookup or a listing), asked while
/// `seen` was what `with_library` saw of it: if cudyn owns `lib`, they are owned, and a dead
/// entry at their address is dropped. For a library cudyn does not own nothing is recorded:
/// the kernels stay foreign (and a dead address stays dead: cudyn cannot see that library go
/// away).
///
/// The lookup ran under the read lock, this runs after it: an unload through cudyn (on another
/// thread) may have come between. Then the kernels CUDA returned are of a library that is
/// gone: each is dead to cudyn (unless a load since put a kernel cudyn knows at its address)
/// and the lookup fails as if it had come after the unload, so no handle leaves cudyn that it
/// neither owns nor knows to be dead.
pub(crate) fn found_kernels(lib: sys::CUlibrary, seen: LibraryState, ks: &[sys::CUkernel]) -> Result<()> {
    let LibraryState::Owned(_, id) = seen else { return Ok(()) };
    let lk = lib as usize;
    let mine = Owner::Library { lib: lk, id };
    {
        let r = read();
        if r.libs.get(&lk).is_some_and(|l| l.id == id)
            && ks.iter().all(|&k| r.kernels.get(&(k as usize)).is_some_and(|o| o.owner == mine))
        {
            return Ok(());
        }
    }
    let mut r = write();
    if r.libs.get(&lk).is_some_and(|l| l.id == id) {
        for &k in ks {
            own(&mut r, lk, id, k as usize);
        }
        publish_dead(&r);
        return Ok(());
    }
    for &k in ks {
        let kk = k as usize;
        if kk != 0 && !r.kernels.contains_key(&kk) {
            r.dead_kernels.insert(kk, ());
        }
    }
    publish_dead(&r);
    Err(unloaded_library(lib))
}

/// Make `kk` a kernel of library `lk`'s load `id`, if that load is still the one at `lk`.
fn own(r: &mut Registry, lk: usize, id: u64, kk: usize) -> bool {
    if kk == 0 || r.libs.get(&lk).is_none_or(|l| l.id != id) {
        return false;
    }
    let mine = Owner::Library { lib: lk, id };
    if r.kernels.get(&kk).is_some_and(|o| o.owner == mine) {
        return true;
    }
    // An entry of another owner here would mean CUDA gave one address to two live kernels
    // (a library unloaded outside cudyn, or an adopted kernel whose library went away): the
    // kernel the address names now is this library's, and the launch table may hold the old
    // one's layout under the current generation.
    if let Some(old) = r.kernels.insert(kk, Known::new(mine)) {
        let hot = match old.owner {
            Owner::Adopted => old.hot.load(Ordering::Relaxed),
            Owner::Library { lib, .. } => r.libs.get(&lib).is_some_and(|l| l.hot.load(Ordering::Relaxed)),
        };
        if hot {
            hot::retire_all();
        }
    }
    r.dead_kernels.remove(&kk);
    if let Some(l) = r.libs.get_mut(&lk) {
        l.kernels.push(kk);
    }
    true
}

/// Unload `lib` through `api` with `unload` (CUDA's call), keeping the books under the write
/// lock: no use of any of its kernels is under way or can start until they are marked dead,
/// and no load can slip a kernel in at a freed address before its predecessor is.
pub(crate) fn unload(lib: sys::CUlibrary, api: Api, unload: impl FnOnce() -> Result<()>) -> Result<()> {
    let key = lib as usize;
    let mut r = write();
    if r.dead_libs.contains_key(&key) {
        return Err(unloaded_library(lib));
    }
    if let Some(l) = r.libs.get(&key) {
        if l.api != api {
            return Err(Error::invalid(format!(
                "library {lib:p} was loaded through the {} API; unload it through the same one",
                l.api.text()
            )));
        }
        // Fast launches of its kernels may be under way: retire the table and wait for them.
        if l.hot.load(Ordering::Relaxed) {
            hot::retire_all();
        }
    }
    // Every kernel of it, also those cudyn has not seen (a raw cuLibraryGetKernel on it, or a
    // kernel adopted where the driver could not say whose it is): once it is gone they are all
    // dead, and a query of one that comes after the unload is refused, not handed to CUDA.
    let unseen = match r.libs.get(&key) {
        Some(l) if !l.listed => list_unseen(lib, l.kernels.len()),
        _ => Vec::new(),
    };
    unload()?;
    if let Some(l) = r.libs.remove(&key) {
        let mine = Owner::Library { lib: key, id: l.id };
        for kk in l.kernels {
            if r.kernels.get(&kk).is_some_and(|k| k.owner == mine) {
                r.kernels.remove(&kk);
                r.dead_kernels.insert(kk, ());
            }
        }
    }
    for kk in unseen {
        match r.kernels.get(&kk) {
            Some(k) if k.owner == Owner::Adopted => {
                if k.hot.load(Ordering::Relaxed) {
                    hot::retire_all();
                }
                r.kernels.remove(&kk);
            }
            // Another live library's: CUDA gave it the address (cannot be while both live).
            Some(_) => continue,
            None => {}
        }
        r.dead_kernels.insert(kk, ());
    }
    // A library the application loaded and unloaded through cudyn: its handle is as dead.
    r.dead_libs.insert(key, ());
    publish_dead(&r);
    Ok(())
}

/// A kernel handle, as the registry sees it while its read lock is held (see `with_kernel`).
pub(crate) enum Access<'a> {
    /// Owned or adopted: live until the lock is released; its layout may be remembered.
    Known(KnownKernel<'a>),
    /// Any other handle: live on the caller's word; nothing of it is remembered.
    Foreign,
}

/// A known kernel, borrowed under the read lock.
pub(crate) struct KnownKernel<'a> {
    key: usize,
    entry: &'a Known,
    registry: &'a Registry,
}

impl KnownKernel<'_> {
    /// The kernel's layout: remembered, or learned now and remembered; either way entered in
    /// the launch table, under the generation current while the lock is held. A kernel of an
    /// image cudyn built is read from that image's tables, which CUDA loaded (no CUDA call, no
    /// context: on a thread without one, `cuKernelGetParamInfo` needs device 0's primary
    /// context, and creating it for one query cost 190 ms on the H100); any other is asked of
    /// CUDA (the kernel is live: the lock is held).
    pub(crate) fn layout(&self) -> Result<&[Param]> {
        let p = match self.entry.params.get() {
            Some(p) => p,
            None => {
                let v = match self.image_layout() {
                    Some(v) => v,
                    // SAFETY: a known kernel is live while the read lock is held (see the top).
                    None => unsafe { driver::kernel_params(self.key as sys::CUkernel) }?,
                };
                // Another thread may have set it meanwhile: same kernel, same answer.
                let _ = self.entry.params.set(v.into_boxed_slice());
                self.entry.params.get().map_or(&[][..], |p| &p[..])
            }
        };
        // The flag first: an unload reads it under the write lock to know it must retire
        // the table, and the slot is written only after it is set.
        let flag = match self.entry.owner {
            Owner::Library { lib, .. } => self.registry.libs.get(&lib).map(|l| &l.hot),
            Owner::Adopted => Some(&self.entry.hot),
        };
        if let Some(f) = flag {
            if !f.load(Ordering::Relaxed) {
                f.store(true, Ordering::Relaxed);
            }
            hot::remember(self.key, hot::generation(), p);
        }
        Ok(p)
    }

    /// The layout the tables of the image cudyn built give this kernel, for a kernel of a
    /// library loaded from one (see `Built::param_layout`).
    fn image_layout(&self) -> Option<Vec<Param>> {
        let Owner::Library { lib, .. } = self.entry.owner else { return None };
        let built = self.registry.libs.get(&lib)?.image.as_ref()?;
        // SAFETY: a known kernel is live while the read lock is held; its name lives as long.
        let name = unsafe { CStr::from_ptr(driver::kernel_name(self.key as sys::CUkernel).ok()?) };
        let p = built.param_layout(name.to_bytes())?;
        Some(p.iter().map(|p| Param { offset: p.offset, size: p.size }).collect())
    }
}

/// The error for a kernel handle cudyn knows is dead.
fn dead_kernel(k: sys::CUkernel) -> Error {
    Error::invalid(format!(
        "kernel {k:p} belongs to a library that cudyn has unloaded (if your program has since loaded a library \
         that reuses this address, vouch for the handle with cudyn_kernel_adopt)"
    ))
}

/// Run `f` with kernel `k` under the read lock: no unload through cudyn runs until `f`
/// returns, so a known kernel stays live for all of `f`, and `f` makes its CUDA calls there.
/// NULL and a kernel cudyn knows is dead are refused without calling `f` (or CUDA). A handle
/// cudyn does not know is first put to `cuKernelGetLibrary` (once per cudyn load) to learn
/// whether it is a kernel of a library cudyn loaded.
///
/// Opens nothing under the lock: the caller has opened the driver where `f` needs it.
pub(crate) fn with_kernel<R>(k: sys::CUkernel, f: impl FnOnce(Access<'_>) -> Result<R>) -> Result<R> {
    if k.is_null() {
        return Err(Error::invalid("kernel handle is NULL"));
    }
    let key = k as usize;
    // At most one round learns and one revives; the next finds the kernel known, dead or
    // foreign.
    let (mut learned, mut revived) = (false, false);
    for _ in 0..4 {
        let r = read();
        if let Some(entry) = r.kernels.get(&key) {
            return f(Access::Known(KnownKernel { key, entry, registry: &r }));
        }
        if DEAD_KERNELS.load(Ordering::Acquire) != 0 && r.dead_kernels.contains_key(&key) {
            drop(r);
            if !revived {
                revived = true;
                if revive(key) {
                    continue;
                }
            }
            return Err(dead_kernel(k));
        }
        if !learned {
            learned = true;
            if let Some((lib, id)) = library_of(&r, k) {
                drop(r);
                let mut w = write();
                // The read lock was let go: an unload through cudyn may have run since, and
                // then the library CUDA named (that load of it) is gone, and the kernel with
                // it, unless something cudyn knows has taken the address meanwhile.
                if !own(&mut w, lib, id, key) && !w.kernels.contains_key(&key) {
                    w.dead_kernels.insert(key, ());
                    publish_dead(&w);
                }
                continue;
            }
        }
        return f(Access::Foreign);
    }
    Err(Error::new(crate::Status::Internal, "the kernel registry changed under three lookups in a row"))
}

/// For a handle cudyn does not know: the library cudyn loaded that it belongs to (address and
/// load), asking `cuKernelGetLibrary` unless it answered "none of cudyn's" since the last load.
fn library_of(r: &Registry, k: sys::CUkernel) -> Option<(usize, u64)> {
    let key = k as usize;
    if r.libs.is_empty() {
        return None;
    }
    let mut foreign = r.foreign.lock().unwrap_or_else(|p| p.into_inner());
    if foreign.get(&key) == Some(&r.loads) {
        return None;
    }
    // SAFETY: not a kernel cudyn knows is dead; any other handle is the caller's promise (a
    // live kernel). Under the read lock: the library it names cannot be unloaded through
    // cudyn before the answer is used.
    let lib = unsafe { driver::kernel_library_if_open(k) }.ok().flatten().map(|l| l as usize);
    if let Some(l) = lib.and_then(|l| r.libs.get(&l).map(|x| (l, x.id))) {
        return Some(l);
    }
    // Bounded: the map is emptied when it grows past 4,096 handles (they are asked again).
    if foreign.len() >= 4096 {
        foreign.clear();
    }
    foreign.insert(key, r.loads);
    None
}

/// Every kernel of `lib` (cuLibraryGetKernelCount and cuLibraryEnumerateKernels, driver
/// 12.4+), as addresses; empty where the driver cannot list them or the listing fails.
/// Called with the write lock held, on a library cudyn loaded and has not unloaded.
fn list_live(lib: sys::CUlibrary) -> Vec<usize> {
    list_unseen(lib, usize::MAX)
}

/// `list_live`, unless the library has exactly `known` kernels (cudyn knows them all: one
/// call, the count).
fn list_unseen(lib: sys::CUlibrary, known: usize) -> Vec<usize> {
    let Some(d) = driver::driver_ready().filter(|d| d.lists_kernels()) else { return Vec::new() };
    // SAFETY: a library cudyn loaded and has not unloaded (the caller holds the write lock, so
    // no unload runs).
    let listed = unsafe { d.library_kernel_count(lib) }.and_then(|n| {
        let mut v = Vec::new();
        if n as usize != known {
            v = vec![std::ptr::null_mut(); (n as usize).min(driver::MAX_KERNELS)];
            // SAFETY: as above; `v` has room for the count asked.
            unsafe { d.library_enumerate_kernels(lib, &mut v) }?;
        }
        Ok(v)
    });
    listed.unwrap_or_default().into_iter().map(|k| k as usize).filter(|&k| k != 0).collect()
}

/// A handle at an address where a kernel cudyn unloaded was: it may be that dead handle, or a
/// live kernel of a library loaded since. Handing it to CUDA could crash, so instead every
/// library cudyn loaded and has not listed yet is listed (each library once; CUDA is asked
/// about live libraries only): true if one of them has this kernel (it is owned now).
fn revive(key: usize) -> bool {
    if !driver::driver_ready().is_some_and(|d| d.lists_kernels()) {
        return false;
    }
    let mut r = write();
    if r.kernels.contains_key(&key) {
        return true;
    }
    let todo: Vec<(usize, u64)> = r.libs.iter().filter(|(_, l)| !l.listed).map(|(&k, l)| (k, l.id)).collect();
    for (lk, id) in todo {
        let listed = list_live(lk as sys::CUlibrary);
        if let Some(l) = r.libs.get_mut(&lk) {
            l.listed = true;
        }
        for k in listed {
            own(&mut r, lk, id, k);
        }
    }
    publish_dead(&r);
    r.kernels.contains_key(&key)
}

/// Adopt `k`: the caller vouches that it is a live kernel and stays so until `release` (or,
/// for a kernel of a library cudyn loaded, until that library's unload through cudyn).
/// Its layout is then remembered like an owned kernel's, and a dead entry at its address is
/// dropped. A kernel of a library cudyn loaded (`cuKernelGetLibrary`, asked only while cudyn
/// has libraries loaded) becomes that library's, as if cudyn had handed it out: its unload
/// ends it, as it ends every kernel cudyn knows of it. Anything else is adopted.
pub(crate) fn adopt(k: sys::CUkernel) {
    let kk = k as usize;
    let mut r = write();
    if r.dead_kernels.remove(&kk).is_some() {
        publish_dead(&r);
    }
    // A kernel cudyn already knows (owned, or adopted before) keeps its entry.
    if r.kernels.contains_key(&kk) {
        return;
    }
    if !r.libs.is_empty() {
        // SAFETY: a live kernel (the caller's promise). Under the write lock: no unload
        // through cudyn runs before the answer is used.
        let lib = unsafe { driver::kernel_library_if_open(k) }.ok().flatten().map(|l| l as usize);
        if let Some((lk, id)) = lib.and_then(|l| r.libs.get(&l).map(|x| (l, x.id))) {
            own(&mut r, lk, id, kk);
            return;
        }
    }
    r.kernels.insert(kk, Known::new(Owner::Adopted));
}

/// Undo `adopt`: forget the layout (retiring the launch table if the kernel entered it, and
/// waiting for fast launches of it under way, so the program may unload its library as soon
/// as this returns). A kernel of a library cudyn loaded is not affected.
pub(crate) fn release(k: sys::CUkernel) -> bool {
    let kk = k as usize;
    let mut r = write();
    match r.kernels.get(&kk) {
        Some(e) if e.owner == Owner::Adopted => {
            if e.hot.load(Ordering::Relaxed) {
                hot::retire_all();
            }
            r.kernels.remove(&kk);
            true
        }
        _ => false,
    }
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
    if !r.libs.contains_key(&lk) {
        r.loads += 1;
        let id = r.loads;
        let l = Loaded {
            api: Api::Driver,
            id,
            kernels: Vec::new(),
            listed: true,
            hot: AtomicBool::new(false),
            image: None,
            _keep: None,
        };
        r.libs.insert(lk, l);
    }
    let id = r.libs.get(&lk).map_or(0, |l| l.id);
    own(&mut r, lk, id, kk);
    if let Some(e) = r.kernels.get(&kk) {
        let _ = e.params.set(params.into());
    }
    publish_dead(&r);
}
