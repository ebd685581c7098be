//! The load path's code, fetched ahead of a load.
//!
//! A program that loads many images (a plugin host, a JIT, a library's fatbins one after the
//! other) runs cudyn's walk and checks of an image between CUDA's loads of other images, which
//! evict that code from the core's caches. On the GPU host (an H100's Xeon) a 4.6 KB cubin's
//! first sight then cost about twice its warm time: the core fetches a few hundred lines of
//! code it runs one after the other, each a wait on the shared cache. So the functions of the
//! image path (`cubin`, `fatbin`, the plan and build in `image`, `info`, `memo`: about 69 KB) are
//! gathered in one linker section, `cudyn_load_path`, and a first sight asks for every line of
//! it at once before its copy and checks start: one prefetch a line, all in flight together,
//! instead of a wait for each line as the checks reach it. A prefetch is a hint: it reads
//! nothing the program sees and never faults. A memo hit (the same image loaded again) runs
//! none of those checks, so it asks for nothing: the loop over the section's 1,080 lines was
//! 1,500 of the 8,739 host instructions of such a load (callgrind, stand-in driver, the 23 KB
//! test fatbin; 7,237 without it), and 0.3-0.4 µs of a 7.7 µs load on the H200's host.
//! An image whose checks go through fewer than [`PREFETCH_MIN_CHECKED`] plain bytes asks for
//! nothing either: its checks reach too few lines for the prefetch to save what it costs.
//! Which lines are asked for, and in what order, was measured on an H100 (the ninth session):
//! only the functions a first sight runs (49 KB), or the cubin checks first, moved a cold
//! first sight no more than the runs' spread, and no prefetch at all made it the slowest; so
//! the whole section, in address order, stays.
//!
//! Measured on the H100 host (docs/performance.md, the fifth session of 2026-12-06), this very
//! arrangement against the same library without it: the corpus's one image over 1.3x at first
//! sight went from 2.09x and 2.15x to 1.66x and 1.62x raw CUDA, first sight summed over 430
//! images from 0.925 and 0.929 to 0.910 and 0.913, repeated loads within the runs' noise. The
//! section alone, without the prefetch, changed nothing. Linux on x86-64 only (where the linker
//! names the section's bounds `__start_`/`__stop_` and the prefetch instruction is baseline:
//! build.rs sets `cudyn_load_path_section` there);
//! elsewhere this does nothing and the attribute places nothing.

/// The fewest plain bytes (`image::Plan::checked_len`: the cubin, or the decompressed entries
/// handed over) whose first sight asks for the load path's code. The prefetch is about 1,500
/// host instructions and a thousand lines asked for at once; it pays only where the checks that
/// follow reach enough cold lines to wait on. Measured on an H100 host (docs/performance.md, the
/// twelfth session): LMDeploy's 952-byte fatbin took 5.1-5.2 µs warm with the prefetch against
/// 4.6 without (raw CUDA 3.6), and no less cold in its place; the 4.6 KB cuRAND fatbin took
/// 13.0-14.4 µs cold in its place with it against 17.0-17.7 without. The gate counts plain
/// bytes, not the image's: a gate on the compressed size (the memo key) stopped the prefetch for
/// zstd fatbins of 0.9-1.8 KB that check 2.3-7.4 KB of cubin, and the cuRAND fatbin loaded after
/// them in the corpus went from 1.67-1.94x to 2.08-2.27x raw.
pub(crate) const PREFETCH_MIN_CHECKED: u64 = 2 << 10;

/// Asks for every line of the load path's code (section `cudyn_load_path`) to be brought into
/// the core's second-level cache, without waiting for any of it.
#[inline]
pub(crate) fn fetch_load_path_code() {
    #[cfg(test)]
    FETCHES.with(|n| n.set(n.get() + 1));
    #[cfg(cudyn_load_path_section)]
    {
        let (start, stop) = load_path_code();
        let mut line = start & !63;
        // Eight lines a turn. One line a turn, the loop cost 3,064 instructions a load (callgrind,
        // the 64 KB section), a fifth of a small image's whole first sight; now 1,024. The last
        // turn may ask for up to seven lines past the section's end: a hint, harmless.
        while line < stop {
            for k in 0..8 {
                // SAFETY: a prefetch reads nothing the program sees and never faults, whatever
                // the address (here, cudyn's own code or the few lines after it).
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T1 }>(
                        (line + k * 64) as *const i8,
                    )
                };
            }
            line += 8 * 64;
        }
    }
}

#[cfg(test)]
thread_local! {
    /// How many times this thread asked for the load path's code (tests only).
    pub(crate) static FETCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The bounds of section `cudyn_load_path`, as the linker defines them.
#[cfg(cudyn_load_path_section)]
fn load_path_code() -> (usize, usize) {
    extern "C" {
        static __start_cudyn_load_path: u8;
        static __stop_cudyn_load_path: u8;
    }
    // Only the symbols' addresses are taken; nothing is read through them.
    (core::ptr::addr_of!(__start_cudyn_load_path) as usize, core::ptr::addr_of!(__stop_cudyn_load_path) as usize)
}

#[cfg(all(test, cudyn_load_path_section))]
mod tests {
    /// The section holds the load path and nothing else is in it: a function marked for it lies
    /// inside the bounds, and one that is not lies outside.
    #[test]
    fn the_load_path_lies_in_its_section() {
        let (start, stop) = super::load_path_code();
        assert!(start < stop, "empty section: {start:#x}..{stop:#x}");
        // 68 KB in a release build of 2026-12-07 (1.7 MB of code in all); an unoptimised,
        // instrumented build (the sanitizer run) makes every function several times larger.
        let bound = if cfg!(debug_assertions) { 1 << 20 } else { 256 << 10 };
        assert!(stop - start < bound, "the section is {} bytes: more than the load path", stop - start);
        for (name, f) in [
            ("inspect_cubin", crate::image::cubin::inspect_cubin as *const () as usize),
            ("memo::lookup", crate::image::memo::lookup as *const () as usize),
        ] {
            assert!((start..stop).contains(&f), "{name} at {f:#x} outside {start:#x}..{stop:#x}");
        }
        let outside = crate::image::contents::param_layouts as *const () as usize;
        assert!(
            !(start..stop).contains(&outside),
            "contents::param_layouts at {outside:#x} inside {start:#x}..{stop:#x}"
        );
        super::fetch_load_path_code();
    }
}
