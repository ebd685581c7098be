//! Kernels borrowed from the [`Library`] that holds them: the borrow checker keeps the library
//! loaded for as long as any of its kernels is in use.
//!
//! Why a lifetime and not a reference count: a [`Kernel`] is CUDA's own handle (the same
//! pointer the C API hands out), `Copy`, and checked at run time by the registry, which
//! already refuses kernels of a library cudyn unloaded. A `LibraryKernel<'lib>` adds the
//! compile-time half at no cost: it is that handle plus a borrow of its `Library`, so it stays
//! one pointer wide and `Copy`, `Library` keeps its plain `Drop` and its consuming
//! [`Library::unload`] (which cannot run while a kernel is borrowed, rather than having to
//! fail at run time when an `Arc` is still shared), and the launch path is unchanged.

use crate::args::KernelArgs;
use crate::error::Result;
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::library::Library;
use std::ffi::CStr;
use std::marker::PhantomData;

/// A kernel of a [`Library`], borrowed from it: it cannot outlive the library, so while it
/// exists the library is loaded. It dereferences to the [`Kernel`] handle for the queries
/// (name, parameters, attributes); [`LibraryKernel::kernel`] detaches that handle when one is
/// needed without the borrow (it is then checked at run time instead).
///
/// A kernel cannot be used after its library is dropped:
///
/// ```compile_fail,E0505
/// fn after_drop(lib: cudyn::Library) {
///     let k = lib.kernel(c"k").unwrap();
///     drop(lib);
///     let _ = k.name();
/// }
/// ```
///
/// nor after it is unloaded:
///
/// ```compile_fail,E0505
/// fn after_unload(lib: cudyn::Library) {
///     let k = lib.kernel(c"k").unwrap();
///     lib.unload().unwrap();
///     let _ = k.param_count();
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LibraryKernel<'lib> {
    kernel: Kernel,
    _lib: PhantomData<&'lib Library>,
}

impl<'lib> LibraryKernel<'lib> {
    /// `kernel` of a library that `_lib` keeps loaded.
    pub(crate) fn new(kernel: Kernel, _lib: &'lib Library) -> LibraryKernel<'lib> {
        LibraryKernel { kernel, _lib: PhantomData }
    }

    /// The bare handle (`CUkernel` == `cudaKernel_t`), without the borrow: for the C API or
    /// CUDA. Its queries then check at run time that the library is still loaded, and its
    /// launch is the caller's to vouch for ([`Kernel::launch`]).
    pub fn kernel(self) -> Kernel {
        self.kernel
    }

    /// Launch with typed arguments, checked against the kernel's parameters (count and each
    /// size) before CUDA is called: a mismatch is
    /// [`Status::ArgumentMismatch`](crate::Status::ArgumentMismatch) and launches nothing.
    ///
    /// ```no_run
    /// # fn main() -> cudyn::Result<()> {
    /// let lib = cudyn::Library::load_file("scale.cubin".as_ref(), cudyn::Api::Runtime)?;
    /// let k = lib.kernel(c"scale")?;
    /// let (x, n): (*mut f32, u32) = (std::ptr::null_mut(), 0); // a device buffer and its length
    /// // SAFETY: x holds n floats on the device, which `scale` reads and writes in bounds.
    /// unsafe { k.launch(&cudyn::LaunchConfig::for_num_elems(n), (2.0f32, x, n)) }?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// Launching runs arbitrary device code: the kernel, with these arguments and `cfg`'s
    /// grid, block and shared memory, must only touch memory it may (device pointers in `args`
    /// point to live allocations large enough for what the kernel does with them, of the types
    /// it expects), and `cfg.stream` is NULL, a special stream, or a live stream. The library
    /// being loaded and the argument sizes are checked; nothing else can be.
    pub unsafe fn launch<A: KernelArgs>(&self, cfg: &LaunchConfig, args: A) -> Result<()> {
        // SAFETY: the kernel is live (its library is borrowed); the rest is the caller's.
        unsafe { self.kernel.launch(cfg, args) }
    }
}

impl std::ops::Deref for LibraryKernel<'_> {
    type Target = Kernel;
    fn deref(&self) -> &Kernel {
        &self.kernel
    }
}

impl From<LibraryKernel<'_>> for Kernel {
    fn from(k: LibraryKernel<'_>) -> Kernel {
        k.kernel
    }
}

impl PartialEq<Kernel> for LibraryKernel<'_> {
    fn eq(&self, other: &Kernel) -> bool {
        self.kernel == *other
    }
}

/// A library's kernels, borrowed from it (here rather than in `library.rs`, so that the library
/// module does not depend on this one).
impl Library {
    /// The kernel named `name`, borrowed from this library: it cannot outlive it (see
    /// [`LibraryKernel`]). `name` is the kernel's symbol (its `extern "C"` or mangled name:
    /// CUDA's own lookup, tried first), else its C++ name or signature, as
    /// [`names`](crate::names) matches them: `c"axpy<float>"`, `c"scale(double*, double)"`.
    /// A C++ name that fits several kernels is
    /// [`Status::AmbiguousName`](crate::Status::AmbiguousName), listing them.
    pub fn kernel(&self, name: &CStr) -> Result<LibraryKernel<'_>> {
        // SAFETY: a Library holds a live handle until it is dropped or unloaded.
        unsafe { crate::names::kernel_by_name(self.as_raw(), name, self.api()) }.map(|k| LibraryKernel::new(k, self))
    }

    /// Load every kernel's code onto each of `devices` now, into each device's primary context,
    /// rather than at its first launch there: a failure (no code for that GPU, out of memory)
    /// comes now, naming the device and the kernel, and the first launch on each device pays
    /// nothing. Returns the time each device took, in the order given. The thread's current
    /// context is left as it was. See [`preload`](crate::preload) for what is touched.
    ///
    /// ```no_run
    /// # fn main() -> cudyn::Result<()> {
    /// let lib = cudyn::Library::load_file("kernels.fatbin".as_ref(), cudyn::Api::Runtime)?;
    /// let all: Vec<i32> = (0..cudyn::device_count()?).collect();
    /// for (dev, t) in all.iter().zip(lib.preload(&all)?) {
    ///     println!("device {dev}: {:.2} ms", t.as_secs_f64() * 1e3);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn preload(&self, devices: &[i32]) -> Result<Vec<std::time::Duration>> {
        // SAFETY: as above.
        unsafe { crate::preload::preload(self.as_raw(), devices) }
    }

    /// Every kernel of the library, borrowed from it (driver 12.4+, else runtime 12.8+).
    pub fn kernels(&self) -> Result<Vec<LibraryKernel<'_>>> {
        // SAFETY: as above.
        unsafe { crate::library::kernels_of(self.as_raw()) }
            .map(|v| v.into_iter().map(|k| LibraryKernel::new(k, self)).collect())
    }
}
