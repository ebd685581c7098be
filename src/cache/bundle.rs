//! Bundles: a cache's entries in one integrity-checked file, to ship beside a program (as a
//! read-only layer) or to import into another cache. Pure format code plus bounded reads.
//!
//! | offset | size | field                                                        |
//! |--------|------|--------------------------------------------------------------|
//! | 0      | 8    | magic `b"CUDYNBDL"`                                          |
//! | 8      | 4    | format version, u32 LE (`1`)                                 |
//! | 12     | 4    | zero                                                         |
//! | 16     | 8    | entry count n, u64 LE                                        |
//! | 24     | 32   | SHA-256 of the index                                         |
//! | 56     | 8    | zero                                                         |
//! | 64     | 80·n | index: per entry its key (32), offset (8), length (8), SHA-256 of its bytes (32), keys ascending |
//! | …      | …    | the entries, each a cache entry file (`entry.rs`), in index order, back to back |
//! | end-40 | 8    | `b"CUDYNEND"`                                                |
//! | end-32 | 32   | SHA-256 of every byte before the trailer                     |
//!
//! Opening checks the header, the index's hash and that the index describes exactly the bytes
//! between it and the trailer; every entry read is checked against its index hash and as an
//! entry (magic, version, its own key, payload hash). `verify` reads everything (the trailer's
//! hash too): what `import` runs before it writes anything. The hashes find corruption,
//! truncation and edits; they do not prove who made the file (anyone can recompute them), so a
//! bundle is trusted as the program it is installed beside is (see `layer.rs`).

use super::entry::{decode_entry, ENTRY_HEADER_LEN};
use super::Key;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

/// Magic bytes at the start of every bundle.
pub const BUNDLE_MAGIC: [u8; 8] = *b"CUDYNBDL";
/// Current bundle format version.
pub const BUNDLE_VERSION: u32 = 1;
/// Magic bytes of the trailer.
pub const BUNDLE_END: [u8; 8] = *b"CUDYNEND";
/// The most entries a bundle may hold.
pub const MAX_BUNDLE_ENTRIES: u64 = 1 << 20;

const HEADER_LEN: u64 = 64;
const RECORD_LEN: u64 = 80;
const TRAILER_LEN: u64 = 40;

fn bad(path: &std::path::Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{} is not a usable cudyn bundle: {why}", path.display()))
}

/// One index record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The entry's key.
    pub key: Key,
    offset: u64,
    len: u64,
    sha: [u8; 32],
}

/// Writes a bundle of `entries` (each a key and its complete entry file bytes) to `out`, in key
/// order; a key given twice is written once.
pub fn write_bundle(out: &mut impl Write, entries: &mut Vec<(Key, Vec<u8>)>) -> io::Result<()> {
    entries.sort_by_key(|e| e.0 .0);
    entries.dedup_by(|a, b| a.0 == b.0);
    let n = entries.len() as u64;
    if n > MAX_BUNDLE_ENTRIES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{n} entries: a bundle holds at most {MAX_BUNDLE_ENTRIES}"),
        ));
    }
    let mut index = Vec::with_capacity(entries.len() * RECORD_LEN as usize);
    let mut at = HEADER_LEN + n * RECORD_LEN;
    for (k, bytes) in entries.iter() {
        index.extend_from_slice(&k.0);
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        index.extend_from_slice(&Sha256::digest(bytes));
        at += bytes.len() as u64;
    }
    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    header.extend_from_slice(&BUNDLE_MAGIC);
    header.extend_from_slice(&BUNDLE_VERSION.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&n.to_le_bytes());
    header.extend_from_slice(&Sha256::digest(&index));
    header.extend_from_slice(&0u64.to_le_bytes());
    let mut whole = Sha256::new();
    for part in [&header[..], &index[..]] {
        whole.update(part);
        out.write_all(part)?;
    }
    for (_, bytes) in entries.iter() {
        whole.update(bytes);
        out.write_all(bytes)?;
    }
    out.write_all(&BUNDLE_END)?;
    out.write_all(&whole.finalize())?;
    out.flush()
}

/// An open bundle: its index checked, its entries read (and checked) on demand.
#[derive(Debug)]
pub struct Bundle {
    file: File,
    path: std::path::PathBuf,
    index: Vec<Record>,
    len: u64,
}

fn read_at(f: &File, at: u64, n: u64) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n as usize).map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "no memory"))?;
    v.resize(n as usize, 0);
    f.read_exact_at(&mut v, at)?;
    Ok(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl Bundle {
    /// Opens `file` (named `path` in messages) as a bundle: header, index hash and layout are
    /// checked; no entry is read.
    pub fn open(file: File, path: &std::path::Path, max_entry: u64) -> io::Result<Bundle> {
        let len = file.metadata()?.len();
        if len < HEADER_LEN + TRAILER_LEN {
            return Err(bad(path, format!("{len} bytes, shorter than a bundle's header and trailer")));
        }
        let h = read_at(&file, 0, HEADER_LEN)?;
        if h[..8] != BUNDLE_MAGIC {
            return Err(bad(path, "it does not start with CUDYNBDL"));
        }
        let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if version != BUNDLE_VERSION {
            return Err(bad(path, format!("format version {version}; this cudyn reads version {BUNDLE_VERSION}")));
        }
        if h[12..16] != [0; 4] || h[56..64] != [0; 8] {
            return Err(bad(path, "its reserved header fields are not zero"));
        }
        let n = u64_at(&h, 16);
        let room = len - HEADER_LEN - TRAILER_LEN;
        if n > MAX_BUNDLE_ENTRIES || n.saturating_mul(RECORD_LEN) > room {
            return Err(bad(path, format!("its header claims {n} entries, more than the file can hold")));
        }
        let raw = read_at(&file, HEADER_LEN, n * RECORD_LEN)?;
        if Sha256::digest(&raw).as_slice() != &h[24..56] {
            return Err(bad(path, "its index does not match the index checksum (corrupted or edited)"));
        }
        let end = read_at(&file, len - TRAILER_LEN, 8)?;
        if end != BUNDLE_END {
            return Err(bad(path, "it does not end with the CUDYNEND trailer (truncated?)"));
        }
        let mut index = Vec::new();
        index.try_reserve_exact(n as usize).map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "no memory"))?;
        let mut next = HEADER_LEN + n * RECORD_LEN;
        for r in raw.chunks_exact(RECORD_LEN as usize) {
            let mut key = [0u8; 32];
            key.copy_from_slice(&r[..32]);
            let (offset, elen) = (u64_at(r, 32), u64_at(r, 40));
            let mut sha = [0u8; 32];
            sha.copy_from_slice(&r[48..80]);
            if let Some(prev) = index.last().map(|p: &Record| p.key.0) {
                if key <= prev {
                    return Err(bad(path, "its index is not in strictly ascending key order (a key twice?)"));
                }
            }
            if elen > max_entry {
                return Err(bad(
                    path,
                    format!("entry {} holds {elen} bytes, more than one entry may ({max_entry})", index.len()),
                ));
            }
            if offset != next || elen < ENTRY_HEADER_LEN as u64 {
                return Err(bad(path, format!("index record {} does not describe the bytes that follow", index.len())));
            }
            next = offset.checked_add(elen).ok_or_else(|| bad(path, "an entry runs past the end"))?;
            index.push(Record { key: Key(key), offset, len: elen, sha });
        }
        if next != len - TRAILER_LEN {
            return Err(bad(path, "its entries do not end where the trailer starts"));
        }
        Ok(Bundle { file, path: path.to_path_buf(), index, len })
    }

    /// The keys it holds, ascending.
    pub fn records(&self) -> &[Record] {
        &self.index
    }

    /// The file's path as opened.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Whether it holds `key`.
    pub fn contains(&self, key: &Key) -> bool {
        self.find(key).is_some()
    }

    fn find(&self, key: &Key) -> Option<&Record> {
        self.index.binary_search_by(|r| r.key.0.cmp(&key.0)).ok().map(|i| &self.index[i])
    }

    /// The complete entry bytes of `r`, checked against its index hash and as an entry.
    fn entry(&self, r: &Record) -> io::Result<Vec<u8>> {
        let bytes = read_at(&self.file, r.offset, r.len)?;
        if Sha256::digest(&bytes).as_slice() != r.sha {
            return Err(bad(&self.path, format!("entry {} does not match its index checksum", r.key)));
        }
        decode_entry(&r.key, &bytes).map_err(|e| bad(&self.path, format!("entry {}: {e}", r.key)))?;
        Ok(bytes)
    }

    /// The payload stored for `key`, checked; None when absent or damaged.
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        let r = self.find(key)?;
        let mut bytes = self.entry(r).ok()?;
        bytes.drain(..ENTRY_HEADER_LEN);
        Some(bytes)
    }

    /// Reads the whole file and checks the trailer's hash and every entry, calling `each` with
    /// every (key, payload): what an import runs before writing anything.
    pub fn verify(&self, mut each: impl FnMut(&Key, &[u8]) -> io::Result<()>) -> io::Result<()> {
        let mut whole = Sha256::new();
        let mut f = (&self.file).take(self.len - TRAILER_LEN);
        // Streamed in bounded pieces, so that a large bundle needs no memory of its size.
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        let prefix = HEADER_LEN + self.index.len() as u64 * RECORD_LEN;
        while at < self.len - TRAILER_LEN {
            let want = buf.len().min((self.len - TRAILER_LEN - at) as usize);
            f.read_exact(&mut buf[..want])?;
            whole.update(&buf[..want]);
            at += want as u64;
        }
        let mut tail = [0u8; 32];
        self.file.read_exact_at(&mut tail, self.len - 32)?;
        if whole.finalize().as_slice() != tail {
            return Err(bad(&self.path, "its contents do not match the trailer checksum (corrupted or edited)"));
        }
        debug_assert!(self.index.first().is_none_or(|r| r.offset == prefix));
        for r in &self.index {
            let bytes = self.entry(r)?;
            each(&r.key, &bytes[ENTRY_HEADER_LEN..])?;
        }
        Ok(())
    }

    /// The complete entry bytes for `key` (for import), checked.
    pub fn entry_bytes(&self, key: &Key) -> io::Result<Vec<u8>> {
        let r = self.find(key).ok_or_else(|| bad(&self.path, format!("no entry {key}")))?;
        self.entry(r)
    }

    /// (device, inode, size, ctime) of the open file: what a remembered hit from it depends on.
    pub fn stamp(&self) -> Option<[i64; 5]> {
        use std::os::unix::fs::MetadataExt;
        let m = self.file.metadata().ok()?;
        Some([m.dev() as i64, m.ino() as i64, m.size() as i64, m.ctime(), m.ctime_nsec()])
    }
}

#[cfg(test)]
mod tests {
    use super::super::entry::encode_entry;
    use super::*;

    fn key(i: u8) -> Key {
        Key([i; 32])
    }

    fn bundle_bytes(n: u8) -> Vec<u8> {
        let mut entries: Vec<(Key, Vec<u8>)> =
            (0..n).map(|i| (key(i), encode_entry(&key(i), format!("payload {i}").as_bytes()))).collect();
        let mut out = Vec::new();
        write_bundle(&mut out, &mut entries).unwrap();
        out
    }

    fn open_bytes(b: &[u8]) -> io::Result<Bundle> {
        let p = std::env::temp_dir().join(format!(
            "cudyn-bundle-unit-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&p, b).unwrap();
        let f = File::open(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        Bundle::open(f, std::path::Path::new("test.bundle"), 1 << 20)
    }

    #[test]
    fn round_trip_and_every_cut_refused() {
        let b = bundle_bytes(3);
        let bd = open_bytes(&b).unwrap();
        assert_eq!(bd.records().len(), 3);
        assert_eq!(bd.get(&key(1)).unwrap(), b"payload 1");
        assert!(bd.get(&key(9)).is_none());
        let mut seen = 0;
        bd.verify(|_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 3);
        for cut in 0..b.len() {
            assert!(open_bytes(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn any_flipped_byte_is_caught_by_open_get_or_verify() {
        let b = bundle_bytes(2);
        for at in 0..b.len() {
            let mut m = b.clone();
            m[at] ^= 0x40;
            let caught = match open_bytes(&m) {
                Err(_) => true,
                Ok(bd) => {
                    bd.verify(|_, _| Ok(())).is_err()
                        && (0..2).all(|i| bd.get(&key(i)).is_none_or(|p| p == format!("payload {i}").as_bytes()))
                }
            };
            assert!(caught, "byte {at}");
        }
    }
}
