//! What the launch fast path reads, laid out for it: its read-mostly words in one cache line,
//! a table of kernels' argument layouts that every thread reads without a lock, and the
//! stripes through which a fast launch tells an unload that it is under way.
//!
//! The table is direct-mapped by kernel address: 256 slots of one cache line each. A slot
//! holds one kernel's parameter count and, for kernels of up to 20 parameters, each
//! parameter's size (16 bits is enough: CUDA caps a kernel's parameters at 32,764 bytes). A
//! slot is written under a sequence lock, only when a launch missed it; a reader that
//! overlaps a write sees a miss, never a torn entry, and a miss only sends the launch down
//! the full path, which checks the same things under the registry's lock.
//!
//! Why a shared table rather than a per-thread entry: a loop that launches two kernels in
//! turn misses a one-entry cache on every launch, and a thread-local in a shared library
//! costs a call to the dynamic loader (`__tls_get_addr`) on every access. Slots are only
//! read on the fast path, so their cache lines stay shared between cores.
//!
//! The stripes make a fast launch and an unload exclude each other without a lock (read-copy-
//! update's scheme, with the unload as the writer): a fast launch takes a stripe (one atomic
//! exchange) before it reads the table and gives it back (a plain store) after CUDA returned;
//! an unload first retires every slot (bumps the generation), then waits until no stripe is
//! taken, and only then calls CUDA. Both sides order their two steps with sequentially
//! consistent operations, so either the unload sees the stripe taken and waits for the launch
//! to finish, or the launch sees the new generation and misses (then takes the full path,
//! which waits for the unload on the registry's lock). Either way no kernel reaches CUDA's
//! launch after CUDA began to free it. A thread picks its stripe by its stack address (no
//! thread-local): two threads that pick the same one only cost one of them the full path.

use crate::cuda::driver::Param;
use crate::cuda::sys;
use static_assertions::const_assert_eq;
use std::ffi::c_void;
use std::mem::{align_of, size_of};
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The fast path's read-mostly words, together in one cache line.
#[repr(C, align(64))]
pub(crate) struct Line {
    /// Bumped whenever remembered layouts are dropped (a library whose kernels entered the
    /// table is unloaded, an adopted kernel released): a slot written under an older
    /// generation is not trusted. Only `retire_all` changes it, under the registry's write
    /// lock; slots are written under its read lock (see `remember`).
    generation: AtomicU64,
    // The launch entry points, NULL until a launch resolved them; written only by the typed
    // setters below, so each holds NULL or a function of its type.
    cu_launch: AtomicPtr<c_void>,
    cuda_launch: AtomicPtr<c_void>,
    cuda_launch_ex: AtomicPtr<c_void>,
}

pub(crate) static LINE: Line = Line {
    generation: AtomicU64::new(0),
    cu_launch: AtomicPtr::new(std::ptr::null_mut()),
    cuda_launch: AtomicPtr::new(std::ptr::null_mut()),
    cuda_launch_ex: AtomicPtr::new(std::ptr::null_mut()),
};

/// Store an entry point, unless it is there already (a store would take the line away from
/// every core that reads it on each launch).
fn publish(slot: &AtomicPtr<c_void>, f: *mut c_void) {
    if slot.load(Ordering::Relaxed) != f {
        slot.store(f, Ordering::Relaxed);
    }
}

// SAFETY (each getter): the slot holds NULL or a function of the getter's type, stored by the
// matching setter; an Option of a function pointer has a pointer's layout, NULL being None.
impl Line {
    /// `cuLaunchKernelEx`, once a driver launch resolved it.
    #[inline(always)]
    pub fn cu_launch(&self) -> Option<sys::PFN_cuLaunchKernelEx> {
        // SAFETY: as above the impl.
        unsafe { std::mem::transmute(self.cu_launch.load(Ordering::Relaxed)) }
    }
    pub fn set_cu_launch(&self, f: sys::PFN_cuLaunchKernelEx) {
        publish(&self.cu_launch, f as *mut c_void);
    }
    /// `cudaLaunchKernel` (runtime launches without attributes), once resolved.
    #[inline(always)]
    pub fn cuda_launch(&self) -> Option<sys::PFN_cudaLaunchKernel> {
        // SAFETY: as above the impl.
        unsafe { std::mem::transmute(self.cuda_launch.load(Ordering::Relaxed)) }
    }
    pub fn set_cuda_launch(&self, f: sys::PFN_cudaLaunchKernel) {
        publish(&self.cuda_launch, f as *mut c_void);
    }
    /// `cudaLaunchKernelExC` (runtime launches with attributes), once resolved.
    #[inline(always)]
    pub fn cuda_launch_ex(&self) -> Option<sys::PFN_cudaLaunchKernelExC> {
        // SAFETY: as above the impl.
        unsafe { std::mem::transmute(self.cuda_launch_ex.load(Ordering::Relaxed)) }
    }
    pub fn set_cuda_launch_ex(&self, f: sys::PFN_cudaLaunchKernelExC) {
        publish(&self.cuda_launch_ex, f as *mut c_void);
    }
}

/// Parameter sizes a slot holds (four 16-bit sizes per word).
const SIZES: usize = 20;
const SLOTS: usize = 256;
/// In a slot's `count`: the sizes are held (at most SIZES parameters, each < 64 KiB).
const HELD: u32 = 1 << 31;

#[repr(C, align(64))]
struct Slot {
    /// Even: stable; odd: being written.
    seq: AtomicU32,
    /// Parameter count, with HELD set when `sizes` holds every parameter's size.
    count: AtomicU32,
    /// The kernel's address; 0: empty.
    key: AtomicUsize,
    /// LINE.generation when the layout was read.
    generation: AtomicU64,
    sizes: [AtomicU64; SIZES / 4],
}

const_assert_eq!(size_of::<Slot>(), 64);
const_assert_eq!(align_of::<Slot>(), 64);
const_assert_eq!(size_of::<Line>(), 64);
const_assert_eq!(SLOTS & (SLOTS - 1), 0);

#[allow(clippy::declare_interior_mutable_const)] // each slot of the table is its own copy
const EMPTY: Slot = Slot {
    seq: AtomicU32::new(0),
    count: AtomicU32::new(0),
    key: AtomicUsize::new(0),
    // No generation ever reaches this one, so an empty slot never matches.
    generation: AtomicU64::new(u64::MAX),
    sizes: [const { AtomicU64::new(0) }; SIZES / 4],
};

/// The slots. A type of its own so tests use private tables, with private generations: a test
/// that unloads (and so retires the process's entries) cannot disturb another's.
struct Table {
    slots: [Slot; SLOTS],
}

static TABLE: Table = Table { slots: [EMPTY; SLOTS] };

/// True when the process's table holds kernel `key` under the current generation, with
/// `nargs` parameters and, when `sizes` is given, each of those sizes. False means "ask the
/// full path": a miss, a write in progress, or a mismatch to describe; never a wrong yes.
#[inline]
pub(crate) fn args_match(key: usize, nargs: usize, sizes: Option<&[usize]>) -> bool {
    TABLE.args_match(&LINE.generation, key, nargs, sizes)
}

/// Record `params` as kernel `key`'s layout, read under `generation`. Skipped when the slot
/// already holds it (its cache line then stays shared) or another thread is writing it.
pub(crate) fn remember(key: usize, generation: u64, params: &[Param]) {
    TABLE.remember(key, generation, params)
}

/// The current generation, for `remember`: read under the registry's read lock, which
/// `retire_all` excludes, so a slot written with it is retired by the next `retire_all`.
pub(crate) fn generation() -> u64 {
    LINE.generation.load(Ordering::SeqCst)
}

/// Retire every slot and wait until no fast launch that may have read one is still under
/// way: after this, until the caller's write lock is released, nothing can launch a kernel the
/// caller is about to unload. Called under the registry's write lock only.
pub(crate) fn retire_all() {
    LINE.generation.fetch_add(1, Ordering::SeqCst);
    for s in &STRIPES {
        let mut waited = 0u32;
        while s.taken.load(Ordering::SeqCst) != 0 {
            // A fast launch holds a stripe for the length of one CUDA launch call (a few
            // microseconds, longer when CUDA's launch queue is full): spin briefly, then sleep.
            waited += 1;
            if waited < 64 {
                std::hint::spin_loop();
            } else if waited < 256 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

/// How many stripes; a power of two.
const STRIPES_N: usize = 64;

#[repr(C, align(64))]
struct Stripe {
    /// 1 while a fast launch holds it.
    taken: AtomicU32,
}

const_assert_eq!(size_of::<Stripe>(), 64);
const_assert_eq!(STRIPES_N & (STRIPES_N - 1), 0);

#[allow(clippy::declare_interior_mutable_const)] // each stripe is its own copy
const FREE: Stripe = Stripe { taken: AtomicU32::new(0) };
static STRIPES: [Stripe; STRIPES_N] = [FREE; STRIPES_N];

/// A fast launch in progress (see the top of this module): while it lives, no unload through
/// cudyn gets past `retire_all`. Dropping it gives the stripe back.
pub(crate) struct Section(&'static Stripe);

impl Drop for Section {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: the launch's reads and CUDA's call happen before the stripe reads free.
        self.0.taken.store(0, Ordering::Release);
    }
}

/// Take this thread's stripe (or its neighbour), or None when both are taken (another thread
/// on the same stripes: the caller takes the full path instead). One atomic exchange; no call,
/// no panic (the C launch entry points run this before their panic guard).
#[inline(always)]
pub(crate) fn enter() -> Option<Section> {
    // A thread's stack is its own, so the address of a local picks a stripe per thread (stacks
    // are at least 16 KiB apart); Fibonacci hashing spreads neighbouring stacks.
    let here = 0u8;
    let at = std::hint::black_box(&here) as *const u8 as usize;
    let h = ((at >> 14) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - STRIPES_N.trailing_zeros());
    let first = h as usize;
    for i in [first, first ^ 1] {
        let s = &STRIPES[i & (STRIPES_N - 1)];
        // SeqCst: ordered before the generation read in `args_match` (see the top).
        if s.taken.swap(1, Ordering::SeqCst) == 0 {
            return Some(Section(s));
        }
    }
    None
}

/// In a child after fork(): only the forking thread lives on, and it is not inside a fast
/// launch, so every stripe is free; a slot a vanished thread was writing is emptied.
pub(crate) fn after_fork_in_child() {
    for s in &STRIPES {
        s.taken.store(0, Ordering::Relaxed);
    }
    for s in &TABLE.slots {
        let seq = s.seq.load(Ordering::Relaxed);
        if seq & 1 != 0 {
            s.key.store(0, Ordering::Relaxed);
            s.generation.store(u64::MAX, Ordering::Relaxed);
            s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        }
    }
}

impl Table {
    #[inline]
    fn slot(&self, key: usize) -> &Slot {
        // Fibonacci hashing: the top bits of the product spread aligned addresses evenly.
        let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros());
        &self.slots[h as usize]
    }

    /// Parameter `i`'s size; usize::MAX (no parameter's size) past the held ones.
    #[inline]
    fn size_at(s: &Slot, i: usize) -> usize {
        s.sizes.get(i / 4).map_or(usize::MAX, |w| ((w.load(Ordering::Relaxed) >> (16 * (i % 4))) & 0xffff) as usize)
    }

    /// `args_match` against this table, with `generation` as the current generation.
    #[inline]
    fn args_match(&self, generation: &AtomicU64, key: usize, nargs: usize, sizes: Option<&[usize]>) -> bool {
        let s = self.slot(key);
        let seq = s.seq.load(Ordering::Acquire);
        let c = s.count.load(Ordering::Relaxed);
        let ok = s.key.load(Ordering::Relaxed) == key
            // SeqCst: ordered after the stripe's exchange (see the top of this module).
            && s.generation.load(Ordering::Relaxed) == generation.load(Ordering::SeqCst)
            && (c & !HELD) as usize == nargs
            && sizes.is_none_or(|g| {
                c & HELD != 0 && g.len() == nargs && g.iter().enumerate().all(|(i, &g)| g == Self::size_at(s, i))
            });
        // Sequence lock, reader side: the loads above happen before the second read of `seq`; if
        // it is unchanged (and even), no write overlapped them.
        fence(Ordering::Acquire);
        ok && seq & 1 == 0 && s.seq.load(Ordering::Relaxed) == seq
    }

    /// `remember` in this table.
    fn remember(&self, key: usize, generation: u64, params: &[Param]) {
        if key == 0 {
            return;
        }
        let s = self.slot(key);
        let seq = s.seq.load(Ordering::Relaxed);
        if seq & 1 != 0 {
            return;
        }
        if s.key.load(Ordering::Relaxed) == key && s.generation.load(Ordering::Relaxed) == generation {
            return;
        }
        store(s, seq, key, generation, params);
    }
}

/// Write the slot, unless another thread took it since `seq` was read.
fn store(s: &Slot, seq: u32, key: usize, generation: u64, params: &[Param]) {
    if s.seq.compare_exchange(seq, seq.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed).is_err() {
        return;
    }
    // Sequence lock, writer side: `seq` is odd before any field changes.
    fence(Ordering::Release);
    let held = params.len() <= SIZES && params.iter().all(|p| p.size <= 0xffff);
    let count = u32::try_from(params.len()).unwrap_or(u32::MAX).min(HELD - 1);
    s.key.store(key, Ordering::Relaxed);
    s.generation.store(generation, Ordering::Relaxed);
    s.count.store(if held { count | HELD } else { count }, Ordering::Relaxed);
    if held {
        for (w, word) in s.sizes.iter().enumerate() {
            let packed = params
                .iter()
                .skip(w * 4)
                .take(4)
                .enumerate()
                .fold(0u64, |acc, (j, p)| acc | (p.size as u64) << (16 * j));
            word.store(packed, Ordering::Relaxed);
        }
    }
    s.seq.store(seq.wrapping_add(2), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(sizes: &[u32]) -> Vec<Param> {
        sizes
            .iter()
            .scan(0, |off, &size| {
                let p = Param { offset: *off, size };
                *off += size;
                Some(p)
            })
            .collect()
    }

    fn private_table() -> Box<Table> {
        Box::new(Table { slots: [EMPTY; SLOTS] })
    }

    #[test]
    fn slots_hold_counts_and_sizes() {
        let t = private_table();
        let gen = AtomicU64::new(7);
        let g = gen.load(Ordering::Acquire);
        let args_match = |k, n, s| t.args_match(&gen, k, n, s);
        let remember = |k, g, p: &[Param]| t.remember(k, g, p);
        let slot = |k| t.slot(k);
        let a = 0x51_0000usize;
        assert!(!args_match(a, 0, None), "an empty slot matches nothing");
        remember(a, g, &params(&[8, 4, 16]));
        assert!(args_match(a, 3, None));
        assert!(args_match(a, 3, Some(&[8, 4, 16])));
        assert!(!args_match(a, 2, None));
        assert!(!args_match(a, 3, Some(&[8, 4, 8])));
        assert!(!args_match(a, 3, Some(&[8, 4])));
        // Twenty sizes are held; one more, and only the count is.
        let twenty: Vec<u32> = (1..=20).collect();
        let b = 0x52_0000usize;
        remember(b, g, &params(&twenty));
        let given: Vec<usize> = twenty.iter().map(|&s| s as usize).collect();
        assert!(args_match(b, 20, Some(&given)));
        let mut wrong = given.clone();
        wrong[19] = 21;
        assert!(!args_match(b, 20, Some(&wrong)));
        let c = 0x53_0000usize;
        remember(c, g, &params(&(1..=21).collect::<Vec<_>>()));
        assert!(args_match(c, 21, None));
        let sizes21: Vec<usize> = (1..=21).collect();
        assert!(!args_match(c, 21, Some(&sizes21)), "sizes not held: ask the full path");
        // A slot written under an older generation is not trusted.
        let d = 0x54_0000usize;
        remember(d, g.wrapping_sub(1), &params(&[8]));
        assert!(!args_match(d, 1, None));
        // A slot being written is a miss.
        remember(a, g, &params(&[8, 4, 16]));
        let s = slot(a);
        s.seq.fetch_add(1, Ordering::AcqRel);
        assert!(!args_match(a, 3, None));
        s.seq.fetch_add(1, Ordering::AcqRel);
        assert!(args_match(a, 3, None));
    }

    #[test]
    fn slots_spread_aligned_addresses() {
        // Kernel handles are aligned heap addresses: 256 of them, 16 or 64 bytes apart, should
        // use most of the table rather than pile onto a few slots.
        for stride in [16usize, 64, 4096] {
            let mut used = [false; SLOTS];
            for i in 0..SLOTS {
                used[(TABLE.slot(0x7f00_0000_0000 + i * stride) as *const Slot as usize
                    - TABLE.slots.as_ptr() as usize)
                    / 64] = true;
            }
            let n = used.iter().filter(|&&u| u).count();
            assert!(n > SLOTS / 2, "stride {stride}: {n} of {SLOTS} slots used");
        }
    }

    /// `retire_all` returns only once every fast launch that entered before it has left, and a
    /// launch that enters after it began sees the new generation.
    #[test]
    fn retiring_waits_for_launches_under_way() {
        use std::sync::atomic::AtomicBool;
        let left = AtomicBool::new(false);
        let entered = AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let s = enter().expect("a free stripe");
                entered.store(true, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(30));
                left.store(true, Ordering::SeqCst);
                drop(s);
            });
            while !entered.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            let before = generation();
            retire_all();
            assert!(left.load(Ordering::SeqCst), "retire_all returned while a launch was under way");
            assert_ne!(generation(), before);
        });
        // Sections on many threads at once: each gets a stripe or is told to take the full path,
        // and every stripe is free again afterwards.
        std::thread::scope(|sc| {
            for _ in 0..8 {
                sc.spawn(|| {
                    for _ in 0..10_000 {
                        drop(enter());
                    }
                });
            }
        });
        assert!(STRIPES.iter().all(|s| s.taken.load(Ordering::SeqCst) == 0));
    }

    /// Readers never see a torn entry while writers swap two layouts into one slot.
    #[test]
    fn concurrent_readers_see_whole_entries() {
        let t = private_table();
        let gen = AtomicU64::new(3);
        let g = gen.load(Ordering::Acquire);
        let t = &*t;
        let gen = &gen;
        let key = 0x55_0000usize;
        let one = params(&[8, 8]);
        let other = params(&[4, 4, 4]);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for i in 0..200_000 {
                    let s = t.slot(key);
                    store(s, s.seq.load(Ordering::Relaxed) & !1, key, g, if i % 2 == 0 { &one } else { &other });
                }
            });
            for _ in 0..2 {
                sc.spawn(|| {
                    for _ in 0..200_000 {
                        // Each layout's count only ever comes with its own sizes.
                        assert!(
                            !t.args_match(gen, key, 3, Some(&[8, 8, 0])),
                            "sizes of one layout with the count of the other"
                        );
                        assert!(
                            !t.args_match(gen, key, 2, Some(&[4, 4])),
                            "sizes of one layout with the count of the other"
                        );
                    }
                });
            }
        });
    }
}
