//! The checks' code, fetched ahead of a first-sight load.
//!
//! A program that loads many images (a plugin host, a JIT, a library's fatbins one after the
//! other) runs cudyn's checks between CUDA's loads of other images, which evict the checks'
//! code from the core's caches. On the GPU host (an H100's Xeon) a 4.6 KB cubin's checks then
//! cost about twice their warm time: the core fetches about 450 lines of code it runs one
//! after the other, each a wait on the shared cache. So the functions of the checks
//! (`cubin::sections`, `cubin::inspect_cubin`, the fatbin build and the memo's `remember`) are
//! gathered in one linker section, `cudyn_checks`, and a first-sight load asks for every line
//! of it at once, before checking: one prefetch a line, all in flight together, instead of a
//! wait for each line as the checks reach it. A prefetch is a hint: it reads nothing the
//! program sees and never faults.
//!
//! Measured on the H100 host (docs/performance.md, 2026-12-06 fifth session): the corpus's one
//! image over 1.3x at first sight went from about 2.1x to about 1.65x raw CUDA; a load the
//! memo finds (no checks) does not prefetch. Linux on x86-64 only (where the linker names the
//! section's bounds `__start_`/`__stop_` and the prefetch instruction is baseline); elsewhere
//! this does nothing and the attribute places nothing.

/// Asks for every line of the checks' code (section `cudyn_checks`) to be brought into the
/// core's second-level cache, without waiting for any of it.
#[inline]
pub(crate) fn fetch_checks_code() {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let (start, stop) = checks_code();
        let mut line = start & !63;
        while line < stop {
            // SAFETY: a prefetch reads nothing the program sees and never faults, whatever the
            // address (here, always one inside cudyn's own code).
            unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T1 }>(line as *const i8) };
            line += 64;
        }
    }
}

/// The bounds of section `cudyn_checks`, as the linker defines them.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn checks_code() -> (usize, usize) {
    extern "C" {
        static __start_cudyn_checks: u8;
        static __stop_cudyn_checks: u8;
    }
    // Only the symbols' addresses are taken; nothing is read through them.
    (core::ptr::addr_of!(__start_cudyn_checks) as usize, core::ptr::addr_of!(__stop_cudyn_checks) as usize)
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    /// The section holds the checks and nothing is lost from it: a function marked for it lies
    /// inside the bounds, and one that is not lies outside.
    #[test]
    fn the_checks_lie_in_their_section() {
        let (start, stop) = super::checks_code();
        assert!(start < stop, "empty section: {start:#x}..{stop:#x}");
        assert!(stop - start < 256 << 10, "the section is {} bytes: more than the checks", stop - start);
        let inside = crate::image::cubin::inspect_cubin as *const () as usize;
        assert!((start..stop).contains(&inside), "inspect_cubin at {inside:#x} outside {start:#x}..{stop:#x}");
        let outside = crate::image::memo::lookup as *const () as usize;
        assert!(!(start..stop).contains(&outside), "memo::lookup at {outside:#x} inside {start:#x}..{stop:#x}");
        super::fetch_checks_code();
    }
}
