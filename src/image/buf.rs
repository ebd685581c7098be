//! The memory of the images cudyn builds for CUDA, kept apart from the C heap.
//!
//! Why: a program that loads images one after another runs CUDA's loads in between, and the
//! driver allocates and frees a great deal in the process's heap as it loads. glibc's `malloc`
//! defers sorting what was freed until a request it cannot serve from its per-thread cache
//! (more than 1,032 bytes, or a size class whose cache is empty); such a request first sorts
//! every chunk freed since the last one, a walk through memory nobody touched lately. The
//! image a load builds is such a request, so a load paid for tidying the driver's frees of
//! the loads before it. On the H100 host the phase of a load that made that request held
//! nearly all of a 4.6 KB cuRAND fatbin's cold excess over CUDA's own load (docs/performance.md,
//! the seventh session of 2026-12-06; that the request is the cause there is inferred); on
//! the CPU machine, 2,000 chunks allocated and half of them freed between loads made that one
//! request cost about 8 µs. On the H200's host, timed apart (the eighth session), the request
//! took 0.37 µs cold and a block 0.10 µs; the rest of that phase's cold excess there is the
//! section checks' code, cold.
//!
//! So an image of 1 KB to 128 KB lives in a block of cudyn's own: blocks of power-of-two sizes
//! (2 KB to 128 KB), carved from runs of 256 KB mapped from the kernel (pre-faulted, so a
//! block's first use does not fault either), handed out and taken back through one short lock
//! (a free list per size; a freed block is the next one given). A block is never given back to
//! the kernel; what is mapped in all is capped at 32 MiB, past which images come from the heap
//! as before, as do smaller and larger ones (a small request is served from glibc's per-thread
//! cache; a larger image costs CUDA tens of microseconds to load, against which the heap's
//! sorting is small). Where the kernel refuses the mapping, the heap again.
//!
//! The fatbin walk's list of entries is kept the same way ([`Buf`]): a fatbin of more than a
//! few entries grew it past 1 KB, which was such a request too (191 of 351 first sights over
//! the corpus's images on the CPU machine made one there, once the built image no longer did).
//!
//! This file and `warm.rs` are the image module's only `unsafe` code: the blocks are raw
//! memory, each owned by exactly one [`Buf`] between `take` and `give`.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// The smallest block: 2 KB (1 << 11); a request of at most [`HEAP_MAX`] bytes uses the heap.
const MIN_SHIFT: u32 = 11;
/// The largest block: 128 KB.
const MAX_SHIFT: u32 = 17;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// Up to this many bytes, glibc serves a request from its per-thread cache: the heap.
const HEAP_MAX: usize = 1024;
/// Blocks are carved from runs of this many bytes, mapped at once.
const RUN: usize = 256 << 10;
/// At most this many bytes are mapped in all.
const CAP: usize = 32 << 20;

/// The bytes of an image cudyn built: a byte vector whose memory is one of cudyn's blocks
/// (see the module's top) or, outside their sizes, the heap's. It dereferences to `[u8]`.
pub struct ImageBuf(Buf<u8>);

/// A vector of plain values (`Copy`: nothing to drop) whose memory, from 1 KB to 128 KB, is
/// one of cudyn's blocks: [`ImageBuf`]'s bytes, and the fatbin walk's list of entries.
pub(crate) struct Buf<T: Copy>(Store<T>);

enum Store<T> {
    Heap(Vec<T>),
    /// `len` values written at the start of block `at`, of size class `class`.
    Block {
        at: std::ptr::NonNull<T>,
        len: usize,
        class: usize,
    },
}

// SAFETY: a Buf owns its block as a Vec owns its buffer: nothing else points into it until it
// is given back (on drop), and `&Buf` allows only reads; the values are plain (`Copy`) and
// cross threads as a Vec<T> of them would.
unsafe impl<T: Copy + Send> Send for Buf<T> {}
// SAFETY: as above.
unsafe impl<T: Copy + Sync> Sync for Buf<T> {}

impl<T: Copy> Buf<T> {
    /// Blocks are aligned to 2 KB at least: more than any value stored here asks for.
    const FITS: () = assert!(std::mem::align_of::<T>() <= 1 << MIN_SHIFT && std::mem::size_of::<T>() > 0);

    /// An empty vector with room for `n` values; None where no memory is to be had.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn with_capacity(n: usize) -> Option<Buf<T>> {
        let () = Self::FITS;
        if let Some(class) = n.checked_mul(std::mem::size_of::<T>()).and_then(class_of) {
            if let Some(at) = pool::take(class) {
                return Some(Buf(Store::Block { at: at.cast(), len: 0, class }));
            }
        }
        let mut v = Vec::new();
        v.try_reserve_exact(n).ok()?;
        Some(Buf(Store::Heap(v)))
    }

    /// How many values it holds without growing.
    pub(crate) fn capacity(&self) -> usize {
        match &self.0 {
            Store::Heap(v) => v.capacity(),
            Store::Block { class, .. } => block_size(*class) / std::mem::size_of::<T>(),
        }
    }

    /// Whether its memory is one of cudyn's blocks (tests).
    pub(crate) fn in_block(&self) -> bool {
        matches!(self.0, Store::Block { .. })
    }

    /// Appends `values`, growing as a Vec grows (to twice the room, at least what is needed):
    /// into a larger block, or the heap past the largest.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn extend_from_slice(&mut self, values: &[T]) {
        let end = self.len().saturating_add(values.len());
        if end > self.capacity() {
            self.grow(end);
        }
        match &mut self.0 {
            Store::Heap(v) => v.extend_from_slice(values),
            Store::Block { at, len, .. } => {
                // SAFETY: `len..end` lies in this vector's block (grown above when it did not);
                // `values` cannot overlap it (no other reference into the block exists).
                unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), at.as_ptr().add(*len), values.len()) };
                *len = end;
            }
        }
    }

    /// Appends one value.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn push(&mut self, value: T) {
        self.extend_from_slice(std::slice::from_ref(&value));
    }

    /// Shortens to `n` values (nothing if it holds fewer).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn truncate(&mut self, n: usize) {
        match &mut self.0 {
            Store::Heap(v) => v.truncate(n),
            Store::Block { len, .. } => *len = (*len).min(n),
        }
    }

    /// Room for `need` values at least, twice the present room if that is more; the values
    /// move (the old block goes back). If no memory is to be had, the heap's own growth
    /// decides (it aborts, as a Vec's does).
    #[cold]
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn grow(&mut self, need: usize) {
        let want = need.max(self.capacity().saturating_mul(2));
        let mut bigger = Buf::with_capacity(want).unwrap_or_else(|| Buf(Store::Heap(Vec::new())));
        match &mut bigger.0 {
            Store::Heap(v) => v.extend_from_slice(self),
            Store::Block { at, len, .. } => {
                // SAFETY: the new block holds `want >= need > self.len()` values and is no one
                // else's; `self` is another allocation.
                unsafe { std::ptr::copy_nonoverlapping(self.as_ptr(), at.as_ptr(), self.len()) };
                *len = self.len();
            }
        }
        *self = bigger;
    }
}

impl ImageBuf {
    /// An empty buffer with room for `n` bytes; None where no memory is to be had.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn with_capacity(n: usize) -> Option<ImageBuf> {
        Buf::with_capacity(n).map(ImageBuf)
    }

    /// How many bytes it holds without growing.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Whether its memory is one of cudyn's blocks (tests).
    pub(crate) fn in_block(&self) -> bool {
        self.0.in_block()
    }

    /// Appends `bytes`. The builders reserve what they write, so this never has to grow; if it
    /// does, the bytes move as a `Vec`'s would.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// Grows to `n` bytes with zeros, or shortens to `n`.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn resize_zeroed(&mut self, n: usize) {
        let len = self.len();
        if n <= len {
            return self.0.truncate(n);
        }
        if n > self.capacity() {
            self.0.grow(n);
        }
        match &mut self.0 .0 {
            Store::Heap(v) => v.resize(n, 0),
            Store::Block { at, len, .. } => {
                // SAFETY: `len..n` lies in this buffer's block (grown above when it did not).
                unsafe { std::ptr::write_bytes(at.as_ptr().add(*len), 0, n - *len) };
                *len = n;
            }
        }
    }

    /// Shortens to `n` bytes (nothing if it holds fewer).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn truncate(&mut self, n: usize) {
        self.0.truncate(n);
    }

    /// Appends one byte.
    pub(crate) fn push(&mut self, b: u8) {
        self.0.push(b);
    }
}

/// The size class of a request of `n` bytes, None for the heap's.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn class_of(n: usize) -> Option<usize> {
    if n <= HEAP_MAX || n > 1 << MAX_SHIFT {
        return None;
    }
    let shift = usize::BITS - (n - 1).leading_zeros(); // the power of two at or above n
    Some(shift.max(MIN_SHIFT) as usize - MIN_SHIFT as usize)
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn block_size(class: usize) -> usize {
    1 << (class + MIN_SHIFT as usize)
}

impl<T: Copy> Drop for Buf<T> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn drop(&mut self) {
        if let Store::Block { at, class, .. } = self.0 {
            // SAFETY: the block was taken for this vector and nothing else refers to it; its
            // values are plain, with nothing to drop.
            unsafe { pool::give(class, at.cast()) };
        }
    }
}

impl<T: Copy> Deref for Buf<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match &self.0 {
            Store::Heap(v) => v,
            // SAFETY: the first `len` values of the block are written, and the block is this
            // vector's for as long as the borrow of `self`.
            Store::Block { at, len, .. } => unsafe { std::slice::from_raw_parts(at.as_ptr(), *len) },
        }
    }
}

impl<T: Copy> DerefMut for Buf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            Store::Heap(v) => v,
            // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
            Store::Block { at, len, .. } => unsafe { std::slice::from_raw_parts_mut(at.as_ptr(), *len) },
        }
    }
}

impl<T: Copy> Default for Buf<T> {
    /// Empty, with no memory (a Vec's first growth is the heap's; its next ones may be blocks).
    fn default() -> Buf<T> {
        Buf(Store::Heap(Vec::new()))
    }
}

impl Deref for ImageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl DerefMut for ImageBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl AsRef<[u8]> for ImageBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for ImageBuf {
    /// The vector itself, on the heap (nothing is copied).
    fn from(v: Vec<u8>) -> ImageBuf {
        ImageBuf(Buf(Store::Heap(v)))
    }
}

impl Clone for ImageBuf {
    fn clone(&self) -> ImageBuf {
        let mut c = ImageBuf::with_capacity(self.len()).unwrap_or_else(|| ImageBuf::from(Vec::new()));
        c.extend_from_slice(self);
        c
    }
}

impl PartialEq for ImageBuf {
    fn eq(&self, other: &ImageBuf) -> bool {
        **self == **other
    }
}
impl Eq for ImageBuf {}

impl PartialEq<[u8]> for ImageBuf {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for ImageBuf {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl fmt::Debug for ImageBuf {
    /// Its length and where it lives, not its bytes (an image can be megabytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageBuf").field("len", &self.len()).field("in_block", &self.in_block()).finish()
    }
}

/// The blocks: per size class a free list (threaded through the free blocks' first word) and
/// the part of the current run not yet handed out; one lock for all of it, held for a few
/// instructions (and for the `mmap` of a new run).
#[cfg(unix)]
mod pool {
    use super::{block_size, CAP, CLASSES, RUN};
    use std::ptr::NonNull;
    use std::sync::{Mutex, MutexGuard};

    pub(super) struct Pool {
        /// First free block of each class (0: none); each free block's first word is the next.
        free: [usize; CLASSES],
        /// The current run of each class: next block to carve, and the run's end.
        next: [usize; CLASSES],
        end: [usize; CLASSES],
        /// Bytes mapped in all.
        mapped: usize,
    }

    static POOL: Mutex<Pool> = Mutex::new(Pool::new());

    /// fork(): taken before a fork and given back after it (src/fork.rs). The child's copy of
    /// the mapped runs is its own, so its lists stay right.
    static FORK: crate::fork::Lock =
        crate::fork::Lock::new(crate::fork::Rank::Memory, hold_for_fork, crate::fork::nothing);
    crate::fork::enrol_at_load!(FORK);

    fn hold_for_fork() {
        crate::fork::keep(POOL.lock().unwrap_or_else(|p| p.into_inner()));
    }

    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn pool() -> MutexGuard<'static, Pool> {
        crate::fork::watch(&FORK);
        POOL.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A block of class `class`, now the caller's; None past [`CAP`] or if mapping fails.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn take(class: usize) -> Option<NonNull<u8>> {
        pool().take(class)
    }

    /// Gives block `at` of class `class` back.
    ///
    /// # Safety
    /// `at` came from `take(class)` and is not used after this.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) unsafe fn give(class: usize, at: NonNull<u8>) {
        // SAFETY: the caller's contract.
        unsafe { pool().give(class, at) }
    }

    impl Pool {
        pub(super) const fn new() -> Pool {
            Pool { free: [0; CLASSES], next: [0; CLASSES], end: [0; CLASSES], mapped: 0 }
        }

        #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
        pub(super) fn take(&mut self, class: usize) -> Option<NonNull<u8>> {
            let size = block_size(class);
            if let Some(at) = NonNull::new(self.free[class] as *mut u8) {
                // SAFETY: a free block's first word holds the next free block (`give` wrote
                // it); the block is mapped, aligned to 2 KB at least (power-of-two blocks in a
                // page-aligned run), and no one else uses it.
                self.free[class] = unsafe { at.as_ptr().cast::<usize>().read() };
                return Some(at);
            }
            if self.next[class] == self.end[class] {
                let run = RUN.max(size);
                if self.mapped.saturating_add(run) > CAP {
                    return None;
                }
                let at = map(run)?;
                self.mapped += run;
                self.next[class] = at;
                self.end[class] = at + run;
            }
            let at = self.next[class];
            self.next[class] += size;
            NonNull::new(at as *mut u8)
        }

        /// # Safety
        /// `at` came from `self.take(class)` and is not used after this.
        #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
        pub(super) unsafe fn give(&mut self, class: usize, at: NonNull<u8>) {
            // SAFETY: the block is mapped, at least 2 KB, aligned to 2 KB at least, and ours again.
            unsafe { at.as_ptr().cast::<usize>().write(self.free[class]) };
            self.free[class] = at.as_ptr() as usize;
        }

        /// Bytes mapped so far.
        #[cfg(test)]
        pub(super) fn mapped(&self) -> usize {
            self.mapped
        }
    }

    /// `len` bytes of fresh memory from the kernel, faulted in; None if refused.
    #[cold]
    fn map(len: usize) -> Option<usize> {
        #[cfg(target_os = "linux")]
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
        #[cfg(not(target_os = "linux"))]
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        // SAFETY: an anonymous private mapping at an address the kernel picks; nothing else
        // is affected.
        let at = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        (at != libc::MAP_FAILED && !at.is_null()).then_some(at as usize)
    }
}

/// Elsewhere: the heap for every image.
#[cfg(not(unix))]
mod pool {
    use std::ptr::NonNull;
    pub(super) fn take(_class: usize) -> Option<NonNull<u8>> {
        None
    }
    /// # Safety
    /// Never called: `take` hands out nothing.
    pub(super) unsafe fn give(_class: usize, _at: NonNull<u8>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_pick_their_class() {
        assert_eq!(class_of(0), None);
        assert_eq!(class_of(1024), None);
        assert_eq!(class_of(1025), Some(0));
        assert_eq!(class_of(2048), Some(0));
        assert_eq!(class_of(2049), Some(1));
        assert_eq!(class_of(4700), Some(2));
        assert_eq!(class_of(128 << 10), Some(CLASSES - 1));
        assert_eq!(class_of((128 << 10) + 1), None);
        for n in [1025, 2048, 2049, 4096, 4700, 65536, 100_000, 128 << 10] {
            let c = class_of(n).expect("a class");
            assert!(block_size(c) >= n && block_size(c) / 2 < n.max(2048), "{n} in class of {}", block_size(c));
        }
    }

    #[test]
    fn a_buffer_holds_what_was_written() {
        let mut b = ImageBuf::with_capacity(4700).expect("memory");
        assert!(b.is_empty());
        assert!(b.capacity() >= 4700);
        let data: Vec<u8> = (0..4700u32).map(|i| (i * 7) as u8).collect();
        b.extend_from_slice(&data[..100]);
        b.resize_zeroed(200);
        b.extend_from_slice(&data[200..]);
        assert_eq!(b.len(), 4700);
        assert_eq!(&b[..100], &data[..100]);
        assert!(b[100..200].iter().all(|&x| x == 0));
        assert_eq!(&b[200..], &data[200..]);
        b[150] = 9;
        assert_eq!(b[150], 9);
        b.truncate(120);
        assert_eq!(b.len(), 120);
        let c = b.clone();
        assert_eq!(c, b);
        assert_eq!(c, data[..100].iter().copied().chain([0; 20]).collect::<Vec<u8>>());
    }

    #[test]
    fn writing_past_the_room_grows_into_a_larger_block_then_the_heap() {
        let mut b = ImageBuf::with_capacity(3000).expect("memory");
        let cap = b.capacity();
        b.extend_from_slice(&vec![1; cap]);
        b.push(2);
        assert_eq!(b.len(), cap + 1);
        assert!(b.capacity() >= 2 * cap);
        assert_eq!(b.in_block(), cfg!(unix));
        assert!(b[..cap].iter().all(|&x| x == 1) && b[cap] == 2);
        let mut z = ImageBuf::with_capacity(1500).expect("memory");
        z.extend_from_slice(&[5; 10]);
        z.resize_zeroed(5000);
        assert_eq!(z.len(), 5000);
        assert!(z[..10].iter().all(|&x| x == 5) && z[10..].iter().all(|&x| x == 0));
        z.resize_zeroed(200_000);
        assert!(!z.in_block(), "past the largest block, the heap");
        assert!(z[..10].iter().all(|&x| x == 5) && z[10..].iter().all(|&x| x == 0));
        z.resize_zeroed(7);
        assert_eq!(&z[..], &[5; 7]);
    }

    /// A vector of records (as the fatbin walk keeps its entries): pushed one by one from the
    /// heap's first few into blocks as it grows, every value kept in order.
    #[test]
    fn a_vector_of_records_grows_through_the_blocks() {
        #[derive(Clone, Copy, PartialEq, Debug)]
        struct Rec<'a> {
            n: u64,
            name: &'a [u8],
            more: [u32; 20],
        }
        let name = b"entry".as_slice();
        let mut v: Buf<Rec<'_>> = Buf::with_capacity(4).unwrap_or_default();
        assert!(!v.in_block(), "four records are the heap's");
        for n in 0..2000u64 {
            v.push(Rec { n, name, more: [n as u32; 20] });
            if n == 100 {
                assert_eq!(v.in_block(), cfg!(unix));
            }
        }
        assert!(!v.in_block(), "2,000 records are past the largest block");
        assert!(v.iter().enumerate().all(|(i, r)| *r == Rec { n: i as u64, name, more: [i as u32; 20] }));
        let mut w: Buf<Rec<'_>> = Buf::default();
        w.extend_from_slice(&v[..50]);
        w.truncate(30);
        assert_eq!(&w[..], &v[..30]);
    }

    /// No two live buffers share memory, on many threads at once (each keeps its own pattern).
    #[test]
    fn live_buffers_never_share_a_block() {
        let sizes = [1100usize, 3000, 4700, 9000, 20_000, 70_000, 128 << 10];
        let run = |seed: usize| {
            let mut live: Vec<(ImageBuf, u8)> = Vec::new();
            for i in 0..2000 {
                let n = sizes[(i * 7 + seed) % sizes.len()];
                let tag = (i + seed) as u8;
                let mut b = ImageBuf::with_capacity(n).expect("memory");
                b.resize_zeroed(n);
                b.fill(tag);
                live.push((b, tag));
                if live.len() > 12 {
                    let (b, tag) = live.swap_remove((i * 5) % live.len());
                    assert!(b.iter().all(|&x| x == tag), "a block was shared");
                }
            }
            for (b, tag) in live {
                assert!(b.iter().all(|&x| x == tag), "a block was shared");
            }
        };
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || run(t));
            }
        });
    }

    /// A pool of its own: a block given back is the next one handed out, a run is mapped only
    /// when the class has none free, and nothing is mapped past the cap.
    #[cfg(unix)]
    #[test]
    fn blocks_are_reused_before_more_is_mapped() {
        let mut p = pool::Pool::new();
        let a = p.take(2).expect("a block");
        let run = p.mapped();
        assert_eq!(run, RUN);
        let b = p.take(2).expect("a block");
        assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, block_size(2), "carved in order");
        assert_eq!(a.as_ptr() as usize % block_size(0).min(4096), 0, "aligned to 2 KB at least");
        // SAFETY: `b` came from this pool and is not used again.
        unsafe { p.give(2, b) };
        assert_eq!(p.take(2), Some(b), "the block given back comes first");
        // Many take-and-give rounds map nothing more.
        for _ in 0..10_000 {
            let c = p.take(2).expect("a block");
            // SAFETY: as above.
            unsafe { p.give(2, c) };
        }
        assert_eq!(p.mapped(), run);
        // A run of the largest class holds two blocks; the cap stops the mapping.
        let mut held = Vec::new();
        while let Some(c) = p.take(CLASSES - 1) {
            held.push(c);
        }
        assert_eq!(p.mapped(), CAP);
        assert_eq!(held.len(), (CAP - RUN) / block_size(CLASSES - 1));
        for c in held {
            // SAFETY: as above.
            unsafe { p.give(CLASSES - 1, c) };
        }
        assert!(p.take(CLASSES - 1).is_some(), "a block given back is handed out past the cap");
    }

    #[test]
    fn outside_the_classes_the_heap() {
        for n in [0, 10, 1024, (128 << 10) + 1, 1 << 20] {
            let b = ImageBuf::with_capacity(n).expect("memory");
            assert!(!b.in_block(), "{n} bytes in a block");
        }
        assert!(ImageBuf::with_capacity(4700).expect("memory").in_block() || !cfg!(unix));
    }
}
