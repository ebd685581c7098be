//! Kernel handles (`CUkernel` == `cudaKernel_t`): name, parameters, attributes, the function
//! for the current context, and the per-kernel parameter-layout cache the launch path reads.

use crate::driver::{driver, Driver};
use crate::error::{Error, Result, Status};
use crate::handles::AddressMap;
use crate::hot;
use crate::sys;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// A kernel handle. Copy, non-owning: it is valid while its library is loaded. The pointer
/// is CUDA's own, so it converts to and from `CUkernel` / `cudaKernel_t` without a cast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Kernel(pub sys::CUkernel);

// SAFETY: a CUkernel is a context-independent handle usable from any thread.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

/// One parameter: its byte offset in the parameter buffer and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub offset: u32,
    pub size: u32,
}

pub(crate) struct Layout {
    /// The library the kernel belongs to (0 if unknown), to drop entries on unload.
    pub lib: usize,
    pub params: Arc<[Param]>,
}

/// Cached layouts by kernel, and how many each library has (so unloading a library none of
/// whose kernels was ever looked at costs one read lock, and retires no thread's hot entry).
#[derive(Default)]
struct Layouts {
    by_kernel: AddressMap<Layout>,
    per_lib: AddressMap<usize>,
}

impl Layouts {
    /// The entry for `key`, inserted as (`lib`, `params`) if there is none yet.
    fn get_or_insert(&mut self, key: usize, lib: usize, params: Arc<[Param]>) -> Arc<[Param]> {
        if let Some(e) = self.by_kernel.get(&key) {
            return e.params.clone();
        }
        if lib != 0 {
            *self.per_lib.entry(lib).or_insert(0) += 1;
        }
        self.by_kernel.insert(key, Layout { lib, params: params.clone() });
        params
    }
}

fn layouts() -> &'static RwLock<Layouts> {
    static L: OnceLock<RwLock<Layouts>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// How many kernels `unloaded` holds, readable without its lock.
static UNLOADED_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Kernels of libraries cudyn unloaded (kernel -> its library): using one is a clear error,
/// not a driver crash. Consulted only when a kernel is not in the layout caches.
fn unloaded() -> &'static Mutex<AddressMap<usize>> {
    static U: OnceLock<Mutex<AddressMap<usize>>> = OnceLock::new();
    U.get_or_init(Default::default)
}

/// Drop the cached layouts of `lib`'s kernels and remember those kernels as unloaded.
pub(crate) fn forget_library(lib: usize) {
    if lib == 0 || !layouts().read().unwrap_or_else(|p| p.into_inner()).per_lib.contains_key(&lib) {
        return; // none of its kernels was looked at: nothing cached, nothing to retire
    }
    let mut l = layouts().write().unwrap_or_else(|p| p.into_inner());
    if l.per_lib.remove(&lib).is_none() {
        return;
    }
    let gone: Vec<(usize, usize)> = l.by_kernel.iter().filter(|(_, v)| v.lib == lib).map(|(k, _)| (*k, lib)).collect();
    l.by_kernel.retain(|_, v| v.lib != lib);
    // Every entry of the launch table is retired: some may be kernels of `lib`.
    hot::LINE.generation.fetch_add(1, Ordering::Release);
    drop(l);
    if !gone.is_empty() {
        let mut u = unloaded().lock().unwrap_or_else(|p| p.into_inner());
        u.extend(gone);
        UNLOADED_COUNT.store(u.len(), Ordering::Release);
    }
}

/// Whether any unloaded kernel is remembered (a load only needs to revive handles then).
pub(crate) fn any_unloaded() -> bool {
    UNLOADED_COUNT.load(Ordering::Acquire) != 0
}

/// Forget `kernels` as unloaded (a new library reused their addresses).
pub(crate) fn revive(kernels: &[Kernel]) {
    if !any_unloaded() {
        return; // the common case: no lock
    }
    let mut u = unloaded().lock().unwrap_or_else(|p| p.into_inner());
    if !u.is_empty() {
        for k in kernels {
            u.remove(&(k.0 as usize));
        }
        UNLOADED_COUNT.store(u.len(), Ordering::Release);
    }
}

fn check_live(k: Kernel) -> Result<()> {
    if k.0.is_null() {
        return Err(Error::invalid("kernel handle is NULL"));
    }
    if !any_unloaded() {
        return Ok(());
    }
    let key = k.0 as usize;
    let Some(dead_lib) = unloaded().lock().unwrap_or_else(|p| p.into_inner()).get(&key).copied() else {
        return Ok(());
    };
    // The address may have been reused for a kernel cudyn never saw (cudaGetKernel, a raw
    // cuLibraryGetKernel): if the driver places it in another library, it is alive.
    // Known limitation: when the library object's address is reused as well (seen on an H200
    // for a kernel cudaGetKernel created after cudyn unloaded libraries), a live kernel is
    // refused here; telling it from a dangling one needs more than the addresses.
    if let Ok(d) = driver() {
        let lib = library_of(d, k);
        if lib != 0 && lib != dead_lib {
            unloaded().lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
            return Ok(());
        }
    }
    Err(Error::invalid(format!("kernel {:p} belongs to a library that cudyn has unloaded", k.0)))
}

/// Attributes readable per device (CUDA's CU_FUNC_ATTRIBUTE_* numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Attribute {
    MaxThreadsPerBlock = 0,
    SharedSizeBytes = 1,
    ConstSizeBytes = 2,
    LocalSizeBytes = 3,
    NumRegs = 4,
    PtxVersion = 5,
    BinaryVersion = 6,
    CacheModeCa = 7,
    MaxDynamicSharedSizeBytes = 8,
    PreferredSharedMemoryCarveout = 9,
    ClusterSizeMustBeSet = 10,
    RequiredClusterWidth = 11,
    RequiredClusterHeight = 12,
    RequiredClusterDepth = 13,
    NonPortableClusterSizeAllowed = 14,
    ClusterSchedulingPolicyPreference = 15,
}

impl Attribute {
    pub fn from_raw(v: u32) -> Option<Attribute> {
        use Attribute::*;
        Some(match v {
            0 => MaxThreadsPerBlock,
            1 => SharedSizeBytes,
            2 => ConstSizeBytes,
            3 => LocalSizeBytes,
            4 => NumRegs,
            5 => PtxVersion,
            6 => BinaryVersion,
            7 => CacheModeCa,
            8 => MaxDynamicSharedSizeBytes,
            9 => PreferredSharedMemoryCarveout,
            10 => ClusterSizeMustBeSet,
            11 => RequiredClusterWidth,
            12 => RequiredClusterHeight,
            13 => RequiredClusterDepth,
            14 => NonPortableClusterSizeAllowed,
            15 => ClusterSchedulingPolicyPreference,
            _ => return None,
        })
    }
}

impl Kernel {
    /// Wrap a handle from anywhere: cudyn, `cuLibraryGetKernel`, `cudaLibraryGetKernel`,
    /// `cudaGetKernel`. NULL is refused.
    pub fn from_raw(k: sys::CUkernel) -> Result<Kernel> {
        if k.is_null() {
            return Err(Error::invalid("kernel handle is NULL"));
        }
        Ok(Kernel(k))
    }

    pub fn as_raw(self) -> sys::CUkernel {
        self.0
    }

    /// The kernel's (mangled, for C++) name; the string lives as long as the library.
    pub fn name(self) -> Result<&'static CStr> {
        check_live(self)?;
        let d = driver()?;
        let f = d.need(d.f.cuKernelGetName, "cuKernelGetName")?;
        let mut p: *const std::os::raw::c_char = std::ptr::null();
        // SAFETY: valid out-pointer; an invalid handle is reported as an error.
        d.with_context(|| d.check(unsafe { f(&mut p, self.0) }, "reading the kernel's name"))?;
        if p.is_null() {
            return Err(Error::new(Status::Cuda, "cuKernelGetName returned no name"));
        }
        // SAFETY: the driver's string lives as long as the library that owns the kernel.
        Ok(unsafe { CStr::from_ptr(p) })
    }

    /// Run `f` with this kernel's parameter layout, querying and caching it on first use
    /// (a read lock once cached; no allocation), and record it in the launch table.
    pub(crate) fn with_params<R>(self, f: impl FnOnce(&[Param]) -> R) -> Result<R> {
        let key = self.0 as usize;
        let generation = hot::LINE.generation.load(Ordering::Acquire);
        // 1. The shared table; 2. CUDA, once per kernel.
        let found = layouts().read().unwrap_or_else(|p| p.into_inner()).by_kernel.get(&key).map(|e| e.params.clone());
        let params = match found {
            Some(p) => p,
            None => {
                check_live(self)?;
                let d = driver()?;
                d.initialised()?;
                let params: Arc<[Param]> = d.with_context(|| query_params(d, self))?.into();
                let lib = library_of(d, self);
                layouts().write().unwrap_or_else(|p| p.into_inner()).get_or_insert(key, lib, params)
            }
        };
        hot::remember(key, generation, &params);
        Ok(f(&params))
    }

    /// The launch path's check, from the launch table alone (no lock): true when this
    /// kernel's layout is there (and current), it has `nargs` parameters and, when `sizes` is
    /// given, each size matches. False means "ask `with_params`": a miss, or a mismatch to
    /// describe; never a wrong answer.
    #[inline]
    pub(crate) fn args_match_hot(self, nargs: usize, sizes: Option<&[usize]>) -> bool {
        hot::args_match(self.0 as usize, nargs, sizes)
    }

    /// Record a parameter layout without asking CUDA (for tests without a GPU, and for
    /// callers that know the layout already). An existing entry is kept.
    #[doc(hidden)]
    pub fn prime_params(self, params: &[Param]) {
        self.prime_params_of(0, params);
    }

    /// As `prime_params`, for a kernel of library `lib` (tests of unloading without a GPU).
    #[doc(hidden)]
    pub fn prime_params_of(self, lib: usize, params: &[Param]) {
        layouts().write().unwrap_or_else(|p| p.into_inner()).get_or_insert(self.0 as usize, lib, params.into());
    }

    pub fn param_count(self) -> Result<usize> {
        self.with_params(|p| p.len())
    }

    pub fn param(self, index: usize) -> Result<Param> {
        self.with_params(|p| p.get(index).copied())?.ok_or_else(|| {
            Error::invalid(format!(
                "parameter index {index} is out of range ({} parameters)",
                self.param_count().unwrap_or(0)
            ))
        })
    }

    pub fn params(self) -> Result<Vec<Param>> {
        self.with_params(|p| p.to_vec())
    }

    /// The `CUfunction` of this kernel in the current context (device 0's primary context
    /// is made current if the thread has none).
    pub fn function(self) -> Result<sys::CUfunction> {
        check_live(self)?;
        let d = driver()?;
        d.ensure_context(std::ptr::null_mut())?;
        let f = d.need(d.f.cuKernelGetFunction, "cuKernelGetFunction")?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: valid out-pointer; a context is current.
        d.check(unsafe { f(&mut func, self.0) }, "getting the kernel's function for the current context")?;
        Ok(func)
    }

    pub fn attribute(self, attr: Attribute, device: i32) -> Result<i32> {
        check_live(self)?;
        let d = driver()?;
        d.initialised()?;
        d.with_context(|| self.attribute_in_context(d, attr, device))
    }

    fn attribute_in_context(self, d: &Driver, attr: Attribute, device: i32) -> Result<i32> {
        let f = d.need(d.f.cuKernelGetAttribute, "cuKernelGetAttribute")?;
        let mut v = 0;
        // SAFETY: valid out-pointer; bad device or attribute is reported as an error.
        d.check(
            unsafe { f(&mut v, sys::CUfunction_attribute(attr as u32), self.0, device) },
            format_args!("reading attribute {attr:?} on device {device}"),
        )?;
        Ok(v)
    }

    pub fn set_attribute(self, attr: Attribute, value: i32, device: i32) -> Result<()> {
        check_live(self)?;
        let d = driver()?;
        d.initialised()?;
        let f = d.need(d.f.cuKernelSetAttribute, "cuKernelSetAttribute")?;
        // SAFETY: plain values; CUDA validates them.
        d.check(
            unsafe { f(sys::CUfunction_attribute(attr as u32), value, self.0, device) },
            format_args!("setting attribute {attr:?} to {value} on device {device}"),
        )
    }
}

fn query_params(d: &Driver, k: Kernel) -> Result<Vec<Param>> {
    let f = d.need(d.f.cuKernelGetParamInfo, "cuKernelGetParamInfo (driver 12.4+)")?;
    let mut out = Vec::new();
    loop {
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers; past the last parameter CUDA returns INVALID_VALUE.
        let r = unsafe { f(k.0, out.len(), &mut off, &mut size) };
        if r.0 != 0 {
            if out.is_empty() && r.0 != 1 {
                d.check(r, "reading the kernel's parameters")?;
            }
            // INVALID_VALUE after the last parameter; on a bad handle it is the first call's
            // error, which for a parameterless kernel reads the same: accept an empty list.
            break;
        }
        out.push(Param { offset: off as u32, size: size as u32 });
        if out.len() > 4096 {
            return Err(Error::new(Status::Internal, "kernel reports more than 4096 parameters"));
        }
    }
    Ok(out)
}

fn library_of(d: &Driver, k: Kernel) -> usize {
    let Some(f) = d.f.cuKernelGetLibrary else { return 0 };
    let mut lib: sys::CUlibrary = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    if unsafe { f(&mut lib, k.0) }.0 == 0 {
        lib as usize
    } else {
        0
    }
}
