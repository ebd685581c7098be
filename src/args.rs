//! Typed launch arguments: a tuple of `Copy` values becomes CUDA's `void*[]` (one pointer per
//! parameter) together with the size of each value, and the launch checks those sizes against
//! the kernel's own parameter layout before CUDA reads a byte.

use crate::enums::Api;
use crate::error::Result;
use crate::kernel::Kernel;
use crate::launch::{Dim3, LaunchConfig};
use std::ffi::c_void;

/// Arguments for a kernel launch: implemented for `()` and for tuples of up to 12 `Copy`
/// values, each passed by value as one kernel parameter (a device pointer is passed as the
/// pointer value, e.g. a `*mut f32` or a `u64` device address).
///
/// A typed launch ([`Kernel::launch`], [`LibraryKernel::launch`](crate::LibraryKernel::launch))
/// refuses, with [`Status::ArgumentMismatch`](crate::Status::ArgumentMismatch) and without
/// calling CUDA, a tuple whose length differs from the kernel's parameter count or any of whose
/// values differs in size from its parameter. Sizes are all that can be checked: a kernel's
/// parameter *types* are not recorded in its image.
///
/// ```
/// use cudyn::KernelArgs;
/// assert_eq!(<(f32, *mut f32, u32)>::SIZES, &[4, 8, 4]);
/// assert_eq!(<()>::SIZES, &[] as &[usize]);
/// ```
///
/// # Safety
/// An implementation must call `f` with exactly `SIZES.len()` pointers, the i-th pointing to a
/// value of `SIZES[i]` readable bytes that stays valid for the whole call: the launch tells CUDA
/// to read that many bytes through it.
pub unsafe trait KernelArgs {
    /// The size in bytes of each argument, in parameter order.
    const SIZES: &'static [usize];

    /// Call `f` with one pointer per argument, each to its value inside `self`.
    fn with_pointers<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R;
}

// SAFETY: no pointers, no sizes.
unsafe impl KernelArgs for () {
    const SIZES: &'static [usize] = &[];
    fn with_pointers<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
        f(&[])
    }
}

macro_rules! tuple_args {
    ($($T:ident $i:tt),+) => {
        // SAFETY: one pointer per tuple field, to that field (size_of::<T> readable bytes,
        // borrowed from `self` for the whole call), in the order of SIZES.
        unsafe impl<$($T: Copy),+> KernelArgs for ($($T,)+) {
            const SIZES: &'static [usize] = &[$(std::mem::size_of::<$T>()),+];
            fn with_pointers<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
                let p = [$(&self.$i as *const $T as *mut c_void),+];
                f(&p)
            }
        }
    };
}

tuple_args!(A 0);
tuple_args!(A 0, B 1);
tuple_args!(A 0, B 1, C 2);
tuple_args!(A 0, B 1, C 2, D 3);
tuple_args!(A 0, B 1, C 2, D 3, E 4);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

impl Kernel {
    /// Launch with typed arguments: `args` (a tuple, see [`KernelArgs`]) is checked against
    /// the kernel's parameters, count and each size, and refused with
    /// [`Status::ArgumentMismatch`](crate::Status::ArgumentMismatch) before CUDA is called
    /// when it does not match. Prefer [`LibraryKernel::launch`](crate::LibraryKernel::launch),
    /// whose kernel cannot outlive its library.
    ///
    /// # Safety
    /// - This handle is a live kernel, or one cudyn knew of a library cudyn unloaded (refused
    ///   without calling CUDA: see [`Kernel::from_raw`]); a handle of a library unloaded outside
    ///   cudyn reaches CUDA. An unload through cudyn on another thread during the launch is
    ///   not a race: the launch either reaches CUDA first or is refused.
    /// - The kernel, run with these arguments and `cfg`'s grid, block and shared memory, only
    ///   touches memory it may (device pointers in `args` point to allocations large enough,
    ///   of the element type the kernel expects, not freed before the kernel finishes): CUDA
    ///   cannot check what a kernel does with its arguments.
    /// - `cfg.stream` is NULL, a special stream, or a live stream.
    pub unsafe fn launch<A: KernelArgs>(self, cfg: &LaunchConfig, args: A) -> Result<()> {
        // SAFETY: the caller's contract, plus KernelArgs': one pointer per size, each valid for
        // the call; the launch checks the sizes against the kernel's parameters first.
        args.with_pointers(|p| unsafe { crate::launch::launch(self, cfg, p, Some(A::SIZES)) })
    }

    /// Check a typed launch as [`Kernel::launch`] would (config, argument count and sizes),
    /// without launching: for a test, or ahead of a hot loop.
    pub fn validate_launch<A: KernelArgs>(self, cfg: &LaunchConfig, args: &A) -> Result<()> {
        args.with_pointers(|p| crate::launch::validate(self, cfg, p, Some(A::SIZES)))
    }
}

impl LaunchConfig {
    /// A one-dimensional launch covering `n` elements with blocks of 256 threads (the grid
    /// rounded up: the kernel must skip indices at or past `n`), through the runtime.
    ///
    /// ```
    /// let cfg = cudyn::LaunchConfig::for_num_elems(1000);
    /// assert_eq!((cfg.grid.x, cfg.block.x), (4, 256));
    /// ```
    pub fn for_num_elems(n: u32) -> LaunchConfig {
        const BLOCK: u32 = 256;
        LaunchConfig { grid: Dim3::x(n.div_ceil(BLOCK).max(1)), block: Dim3::x(BLOCK), ..Default::default() }
    }

    /// This config, launched through `api`.
    pub fn with_api(mut self, api: Api) -> LaunchConfig {
        self.api = api as u32;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_pointers_follow_the_tuple() {
        assert_eq!(<(u8, f64, [u32; 3])>::SIZES, &[1, 8, 12]);
        let t = (7u8, 2.5f64, [1u32, 2, 3]);
        t.with_pointers(|p| {
            assert_eq!(p.len(), 3);
            // SAFETY: each pointer points at the tuple field of the type named.
            unsafe {
                assert_eq!(*(p[0] as *const u8), 7);
                assert_eq!(*(p[1] as *const f64), 2.5);
                assert_eq!(*(p[2] as *const [u32; 3]), [1, 2, 3]);
            }
        });
        type Twelve = (u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, usize, [u8; 5]);
        assert_eq!(Twelve::SIZES, &[1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 8, 5]);
        ().with_pointers(|p| assert!(p.is_empty()));
    }

    #[test]
    fn a_typed_launch_is_size_checked_against_the_layout() {
        use crate::kernel::Param;
        use crate::Status;
        let k = Kernel(0x7a00 as *mut _);
        let lib = 0x7a00_0000 as crate::cuda::sys::CUlibrary;
        // SAFETY: the kernel is never launched (validate only); the layout is the one checked.
        unsafe { crate::registry::prime(k.0, lib, &[Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]) };
        let cfg = LaunchConfig::for_num_elems(10).with_api(Api::Driver);
        k.validate_launch(&cfg, &(0u64, 1i32)).unwrap();
        k.validate_launch(&cfg, &(std::ptr::null_mut::<f32>(), 1u32)).unwrap();
        let e = k.validate_launch(&cfg, &(1i32, 1i32)).unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch);
        assert!(e.message.contains("argument 0 is 4 bytes but parameter 0 is 8 bytes"), "{}", e.message);
        let e = k.validate_launch(&cfg, &(0u64, 1i32, 2i32)).unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch);
        assert_eq!(k.validate_launch(&cfg, &()).unwrap_err().status, Status::ArgumentMismatch);
        crate::registry::unload(lib, Api::Driver, || Ok(())).unwrap();
    }
}
