//! Images that passed validation, kept byte for byte so that loading the same bytes again
//! (a plugin reloaded, one image loaded through both APIs, per-device or per-thread loads) costs
//! one comparison instead of the full check. Exact comparison, never a hash: an image that
//! differs in any byte is checked again. Bounded: a few images, none larger than
//! `MAX_IMAGE`, least recently used dropped first.
//!
//! An image is copied only when it passes validation a second time while still among the last
//! `SEEN` images validated (recognised by a sampled fingerprint, which only decides whether to
//! copy, never whether to trust): a process that loads each image once (a JIT) pays no copy.

use crate::image::ImageInfo;
use std::sync::Mutex;

/// How many images are remembered.
pub const ENTRIES: usize = 4;
/// Larger images are always checked (and not copied).
pub const MAX_IMAGE: usize = 16 << 20;
/// How many recently validated images are recognised when validated again.
pub const SEEN: usize = 8;

struct Entry {
    image: Box<[u8]>,
    info: ImageInfo,
    used: u64,
}

struct Memo {
    entries: Vec<Entry>,
    clock: u64,
    hits: u64,
    /// (length, fingerprint) of the last `SEEN` images validated but not copied; a ring.
    seen: [(usize, u64); SEEN],
    seen_next: usize,
}

static MEMO: Mutex<Memo> =
    Mutex::new(Memo { entries: Vec::new(), clock: 0, hits: 0, seen: [(0, 0); SEEN], seen_next: 0 });

/// fork(): the memo is locked before a fork and given back after it (src/fork.rs), so a child
/// never inherits it held by a thread it does not have.
static FORK: crate::fork::Lock = crate::fork::Lock::new(crate::fork::Rank::Leaf, hold_for_fork, crate::fork::nothing);

fn hold_for_fork() {
    crate::fork::keep(MEMO.lock().unwrap_or_else(|p| p.into_inner()));
}

fn lock() -> std::sync::MutexGuard<'static, Memo> {
    crate::fork::watch(&FORK);
    MEMO.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cheap fingerprint: the length, the first 1 KiB (where a cubin's section and symbol
/// names live, so kernels that differ only in name differ here), the last 64 bytes and 16
/// words spread between. Only used to notice "validated this before"; equal fingerprints prove
/// nothing (the worst a collision does is copy an image early).
fn fingerprint(image: &[u8]) -> u64 {
    let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    let word = |at: usize| image.get(at..at + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let n = image.len();
    // Four independent lanes over the head, so the multiplies overlap.
    let mut lanes = [n as u64, 1, 2, 3];
    for (i, chunk) in image[..n.min(1024)].chunks_exact(8).enumerate() {
        let lane = &mut lanes[i % 4];
        *lane = mix(*lane, u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])));
    }
    let mut h = lanes.iter().fold(0, |h, &l| mix(h, l));
    for at in (n.saturating_sub(64)..n).step_by(8) {
        h = mix(h, word(at));
    }
    for k in 1..=16 {
        h = mix(h, word(n / 17 * k));
    }
    h
}

/// If `image` is byte-identical to one that passed validation, `f` of what was found in it.
pub(crate) fn lookup<R>(image: &[u8], f: impl FnOnce(&ImageInfo) -> R) -> Option<R> {
    if image.len() > MAX_IMAGE {
        return None;
    }
    let mut m = lock();
    m.clock += 1;
    let now = m.clock;
    let e = m.entries.iter_mut().find(|e| e.image.len() == image.len() && *e.image == *image)?;
    e.used = now;
    let r = f(&e.info);
    m.hits += 1;
    Some(r)
}

/// `image` passed validation with `info`: copy it if this is its second time (see the top).
/// Crate-private: a remembered image is loaded without being checked again, so only the
/// validation itself may vouch for one (a public `remember` would let safe code skip it).
pub(crate) fn remember(image: &[u8], info: &ImageInfo) {
    if image.len() > MAX_IMAGE {
        return;
    }
    let fp = (image.len(), fingerprint(image));
    let mut m = lock();
    let Some(slot) = m.seen.iter().position(|&s| s == fp) else {
        let next = m.seen_next;
        m.seen[next] = fp;
        m.seen_next = (next + 1) % SEEN;
        return;
    };
    m.seen[slot] = (0, 0);
    if m.entries.iter().any(|e| *e.image == *image) {
        return;
    }
    m.clock += 1;
    let entry = Entry { image: image.into(), info: info.clone(), used: m.clock };
    if m.entries.len() < ENTRIES {
        m.entries.push(entry);
    } else if let Some(oldest) = m.entries.iter_mut().min_by_key(|e| e.used) {
        *oldest = entry;
    }
}

/// Forget everything (tests).
#[doc(hidden)]
pub fn clear() {
    let mut m = lock();
    m.entries.clear();
    m.seen = [(0, 0); SEEN];
}

/// (images remembered, lookups that found their image), for tests.
#[doc(hidden)]
pub fn stats() -> (usize, u64) {
    let m = lock();
    (m.entries.len(), m.hits)
}
