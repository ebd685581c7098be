//! Images that passed validation, kept byte for byte so that loading the same bytes again
//! (a plugin reloaded, one image loaded through both APIs, per-device or per-thread loads) costs
//! one comparison instead of the full check. Exact comparison, never a hash: an image that
//! differs in any byte is checked again. Bounded: a few images, none larger than
//! `MAX_IMAGE`, least recently used dropped first.

use crate::image::ImageInfo;
use std::sync::Mutex;

/// How many images are remembered.
pub const ENTRIES: usize = 4;
/// Larger images are always checked (and not copied).
pub const MAX_IMAGE: usize = 16 << 20;

struct Entry {
    image: Box<[u8]>,
    info: ImageInfo,
    used: u64,
}

struct Memo {
    entries: Vec<Entry>,
    clock: u64,
    hits: u64,
}

static MEMO: Mutex<Memo> = Mutex::new(Memo { entries: Vec::new(), clock: 0, hits: 0 });

/// If `image` is byte-identical to one that passed validation, `f` of what was found in it.
pub fn lookup<R>(image: &[u8], f: impl FnOnce(&ImageInfo) -> R) -> Option<R> {
    if image.len() > MAX_IMAGE {
        return None;
    }
    let mut m = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    m.clock += 1;
    let now = m.clock;
    let e = m.entries.iter_mut().find(|e| e.image.len() == image.len() && *e.image == *image)?;
    e.used = now;
    let r = f(&e.info);
    m.hits += 1;
    Some(r)
}

/// Remember that `image` passed validation with `info`.
pub fn remember(image: &[u8], info: &ImageInfo) {
    if image.len() > MAX_IMAGE {
        return;
    }
    let mut m = MEMO.lock().unwrap_or_else(|p| p.into_inner());
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
    MEMO.lock().unwrap_or_else(|p| p.into_inner()).entries.clear();
}

/// (images remembered, lookups that found their image), for tests.
#[doc(hidden)]
pub fn stats() -> (usize, u64) {
    let m = MEMO.lock().unwrap_or_else(|p| p.into_inner());
    (m.entries.len(), m.hits)
}
