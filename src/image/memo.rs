//! Images built for CUDA (see `image::Plan`), kept with the bytes they were built from so that
//! loading the same image again (a plugin reloaded, one image loaded through both APIs,
//! per-device or per-thread loads) costs the header walk and one comparison instead of
//! decompressing and checking again, and hands CUDA the very buffer built the first time.
//!
//! The key is exact, never a hash: the plan's key parts (a fatbin's container and entry headers
//! and the payloads of the entries handed over; a cubin's bytes), compared byte for byte. The
//! payloads of entries that are not handed over are not part of it: they are never read, so
//! they cannot change what CUDA is given. Bounded: at most `ENTRIES` images and `BUDGET` bytes
//! (keys and built images together), keys no larger than `MAX_KEY`, least recently used
//! dropped first. A plugin host that reloads a dozen images in turn finds every one.
//!
//! A key is copied only when its image is built a second time while still among the last
//! `SEEN` images built (recognised by a sampled fingerprint, which only decides whether to
//! copy, never whether to trust): a process that loads each image once (a JIT) pays no copy.
//! A cubin handed over as it came is its own key: the built image is compared, nothing is
//! copied. Images alike in length and fingerprint (same-sized variants of one kernel, which
//! differ where the fingerprint does not look) share one entry, the latest: a lookup compares
//! bytes with at most one entry, whatever the images loaded before.

use crate::image::Built;
use std::sync::{Arc, Mutex};

/// How many images are remembered.
pub const ENTRIES: usize = 16;
/// Bytes the remembered images may hold, their keys and built images together (a built image
/// is shared with the libraries loaded from it, so this is an upper bound on what the memo
/// alone keeps alive).
pub const BUDGET: usize = 64 << 20;
/// Images whose key is larger are always built again (and their key not copied).
pub const MAX_KEY: usize = 16 << 20;
/// How many recently built images are recognised when built again.
pub const SEEN: usize = 32;

struct Entry {
    /// The key's bytes; None: the key is `built.image` itself.
    key: Option<crate::image::ImageBuf>,
    /// The key's (length, fingerprint).
    fp: (usize, u64),
    built: Arc<Built>,
    used: u64,
}

impl Entry {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn key(&self) -> &[u8] {
        self.key.as_deref().unwrap_or(&self.built.image)
    }

    /// What it counts against [`BUDGET`].
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn bytes(&self) -> usize {
        self.key.as_ref().map_or(0, |k| k.len()).saturating_add(self.built.image.len())
    }
}

struct Memo {
    entries: Vec<Entry>,
    clock: u64,
    hits: u64,
    /// (length, fingerprint) of the last `SEEN` keys built but not copied; a ring.
    seen: [(usize, u64); SEEN],
    seen_next: usize,
}

static MEMO: Mutex<Memo> =
    Mutex::new(Memo { entries: Vec::new(), clock: 0, hits: 0, seen: [(0, 0); SEEN], seen_next: 0 });

/// fork(): the memo is locked before a fork and given back after it (src/fork.rs), so a child
/// never inherits it held by a thread it does not have.
static FORK: crate::fork::Lock = crate::fork::Lock::new(crate::fork::Rank::Leaf, hold_for_fork, crate::fork::nothing);
crate::fork::enrol_at_load!(FORK);

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn hold_for_fork() {
    crate::fork::keep(MEMO.lock().unwrap_or_else(|p| p.into_inner()));
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn memo() -> std::sync::MutexGuard<'static, Memo> {
    crate::fork::watch(&FORK);
    MEMO.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn key_len(parts: &[&[u8]]) -> usize {
    parts.iter().map(|p| p.len()).fold(0, usize::saturating_add)
}

/// A cheap fingerprint of a key: its length, each part's length and first and last 16 bytes,
/// and 16 words spread over its largest part. Only used to notice "built this before"; equal
/// fingerprints prove nothing (the worst a collision does is copy a key early).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    let word =
        |p: &[u8], at: usize| p.get(at..at + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let mut h = key_len(parts) as u64;
    for p in parts {
        h = mix(h, p.len() as u64);
        for at in [0, 8, p.len().saturating_sub(16), p.len().saturating_sub(8)] {
            h = mix(h, word(p, at));
        }
    }
    if let Some(big) = parts.iter().max_by_key(|p| p.len()) {
        for k in 1..=16 {
            h = mix(h, word(big, big.len() / 17 * k));
        }
    }
    h
}

/// Whether the stored `key` is the concatenation of `parts`.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn same(key: &[u8], parts: &[&[u8]]) -> bool {
    let mut at = 0;
    for p in parts {
        match key.get(at..at + p.len()) {
            Some(k) if k == *p => at += p.len(),
            _ => return false,
        }
    }
    at == key.len()
}

/// A key: its parts, in order, and its (length, fingerprint), worked out once for both
/// [`lookup`] and [`remember`].
pub(crate) struct Key<'a> {
    parts: &'a [&'a [u8]],
    fp: (usize, u64),
}

impl<'a> Key<'a> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(crate) fn new(parts: &'a [&'a [u8]]) -> Key<'a> {
        let len = key_len(parts);
        // A key over MAX_KEY is never looked at: no fingerprint for it.
        let fp = if len > MAX_KEY { 0 } else { fingerprint(parts) };
        Key { parts, fp: (len, fp) }
    }
}

/// The image built before from a key equal to `key`, if remembered.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(crate) fn lookup(key: &Key<'_>) -> Option<Arc<Built>> {
    let (parts, fp) = (key.parts, key.fp);
    if fp.0 > MAX_KEY {
        return None;
    }
    let mut m = memo();
    m.clock += 1;
    let now = m.clock;
    // At most one entry has this (length, fingerprint): one comparison at most.
    let e = m.entries.iter_mut().find(|e| e.fp == fp)?;
    if !same(e.key(), parts) {
        return None;
    }
    e.used = now;
    let built = Arc::clone(&e.built);
    m.hits += 1;
    Some(built)
}

/// `built` was just made from `key`: remember it if this is its second time
/// (see the top). `key_is_image`: `built.image` is byte for byte the concatenation of the parts
/// (a cubin handed over as it came), so it serves as the key and nothing is copied.
/// Crate-private: a remembered image is handed to CUDA without being checked again, so only
/// the loaders, right after building, may vouch for one.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(crate) fn remember(key: &Key<'_>, built: &Arc<Built>, key_is_image: bool) {
    let fp = key.fp;
    if fp.0 > MAX_KEY {
        return;
    }
    let mut m = memo();
    let Some(slot) = m.seen.iter().position(|&s| s == fp) else {
        let next = m.seen_next;
        m.seen[next] = fp;
        m.seen_next = (next + 1) % SEEN;
        return;
    };
    m.seen[slot] = (0, 0);
    remember_again(&mut m, key, built, key_is_image);
}

/// The rest of [`remember`], for a key built a second time: out of line, so that a first
/// sight (which only notes the fingerprint) runs through a few lines of code.
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn remember_again(m: &mut Memo, key: &Key<'_>, built: &Arc<Built>, key_is_image: bool) {
    let (parts, fp) = (key.parts, key.fp);
    let len = fp.0;
    // One entry per (length, fingerprint): the same key is remembered already; another one
    // alike gives way to this newer one.
    if let Some(i) = m.entries.iter().position(|e| e.fp == fp) {
        if same(m.entries[i].key(), parts) {
            return;
        }
        m.entries.swap_remove(i);
    }
    let key = if key_is_image && built.image.len() == len {
        None
    } else {
        let Some(mut key) = crate::image::ImageBuf::with_capacity(len) else { return };
        for p in parts {
            key.extend_from_slice(p);
        }
        Some(key)
    };
    m.clock += 1;
    let entry = Entry { key, fp, built: Arc::clone(built), used: m.clock };
    if entry.bytes() > BUDGET {
        return;
    }
    // The least recently used go until the newcomer fits both bounds.
    let mut held: usize = m.entries.iter().map(Entry::bytes).sum();
    while m.entries.len() >= ENTRIES || held + entry.bytes() > BUDGET {
        let Some(oldest) = (0..m.entries.len()).min_by_key(|&i| m.entries[i].used) else { break };
        held -= m.entries.swap_remove(oldest).bytes();
    }
    m.entries.push(entry);
}

/// Forget everything (tests).
#[doc(hidden)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn clear() {
    let mut m = memo();
    m.entries.clear();
    m.seen = [(0, 0); SEEN];
}

/// Bytes the remembered images hold (keys and built images), for tests.
#[cfg(test)]
fn held() -> usize {
    memo().entries.iter().map(Entry::bytes).sum()
}

/// (images remembered, lookups that found their image), for tests.
#[doc(hidden)]
pub fn stats() -> (usize, u64) {
    let m = memo();
    (m.entries.len(), m.hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built image of `n` bytes (its contents do not matter to the memo).
    fn built(n: usize) -> Arc<Built> {
        let ptx = b".version 8.0\n.target sm_90\n.address_size 64\n".to_vec();
        let info = crate::image::inspect(&ptx).expect("a PTX header");
        Arc::new(Built::new(vec![0; n], info, Vec::new(), false))
    }

    /// Remembered only at its second build (the first is only seen).
    fn build_twice(parts: &[&[u8]], b: &Arc<Built>) {
        remember(parts, b, false);
        remember(parts, b, false);
    }

    // The tests speak of keys by their parts.
    fn lookup(parts: &[&[u8]]) -> Option<Arc<Built>> {
        super::lookup(&Key::new(parts))
    }

    fn remember(parts: &[&[u8]], b: &Arc<Built>, key_is_image: bool) {
        super::remember(&Key::new(parts), b, key_is_image)
    }

    /// The memo is process-wide: its tests take turns.
    static TURN: Mutex<()> = Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        let t = TURN.lock().unwrap_or_else(|p| p.into_inner());
        clear();
        t
    }

    #[test]
    fn alike_keys_share_one_entry() {
        let _t = turn();
        // Same length, one byte apart where the fingerprint does not look (same-sized variants
        // of one kernel): each new one takes the place of the one before.
        let base = vec![0x5au8; 4096];
        let variants: Vec<Vec<u8>> = (0..3 * ENTRIES as u8)
            .map(|i| {
                let mut v = base.clone();
                v[100] = i;
                v
            })
            .collect();
        assert_eq!(fingerprint(&[&variants[0]]), fingerprint(&[&variants[1]]), "the test's premise");
        let images: Vec<Arc<Built>> = variants.iter().map(|_| built(64)).collect();
        for (v, b) in variants.iter().zip(&images) {
            build_twice(&[v], b);
            assert_eq!(stats().0, 1, "alike keys piled up");
        }
        let last = lookup(&[variants.last().unwrap()]).expect("the latest is remembered");
        assert!(Arc::ptr_eq(&last, images.last().unwrap()));
        assert!(lookup(&[&variants[0]]).is_none(), "an earlier one gave way");
        // Another length, or the same length elsewhere different: entries of their own.
        let other = vec![1u8; 4096];
        build_twice(&[&other], &built(64));
        assert_eq!(stats().0, 2);
        assert!(lookup(&[variants.last().unwrap()]).is_some() && lookup(&[&other]).is_some());
    }

    #[test]
    fn a_key_that_is_the_image_is_not_copied() {
        let _t = turn();
        let bytes = vec![7u8; 1 << 20];
        let info = crate::image::inspect(b".version 8.0\n.target sm_90\n.address_size 64\n").expect("PTX");
        let b = Arc::new(Built::new(bytes.clone(), info, Vec::new(), false));
        remember(&[&bytes], &b, true);
        remember(&[&bytes], &b, true);
        assert_eq!(held(), bytes.len(), "the image alone is held");
        let found = lookup(&[&bytes]).expect("remembered");
        assert!(Arc::ptr_eq(&found, &b));
        let mut other = bytes.clone();
        other[bytes.len() / 2 + 3] ^= 1;
        assert!(lookup(&[&other]).is_none(), "compared with the image, byte for byte");
    }

    #[test]
    fn the_byte_budget_drops_the_least_recently_used() {
        let _t = turn();
        // Six images of 12 MiB of key and 512 KiB built: five fit the 64 MiB budget, not six.
        let keys: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 12 << 20]).collect();
        let b = built(512 << 10);
        for k in &keys {
            build_twice(&[k.as_slice()], &b);
            assert!(held() <= BUDGET, "{} bytes held, over the budget of {BUDGET}", held());
        }
        assert!(lookup(&[keys[0].as_slice()]).is_none(), "the oldest image was dropped for the budget");
        for k in &keys[1..] {
            assert!(lookup(&[k.as_slice()]).is_some(), "an image within the budget was dropped");
        }
        // One image alone over the budget is never remembered.
        let huge = built(BUDGET);
        let k = [7u8; 64];
        build_twice(&[&k], &huge);
        assert!(lookup(&[&k]).is_none());
        assert!(held() <= BUDGET);
    }
}
