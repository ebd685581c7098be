//! On-disk cache of NVRTC output (cubin/PTX), content-addressed by a SHA-256 [`Key`] over
//! everything that affects compilation, so later runs load code instead of recompiling.
//!
//! Layout: one file per entry, `<dir>/<64 hex key chars>.cudyn`, holding a fixed
//! [`ENTRY_HEADER_LEN`]-byte header followed by the payload:
//!
//! | offset | size | field                                        |
//! |--------|------|----------------------------------------------|
//! | 0      | 8    | magic `b"CUDYNENT"`                          |
//! | 8      | 4    | format version, u32 little endian (`1`)      |
//! | 12     | 32   | the entry's [`Key`]                          |
//! | 44     | 8    | payload length, u64 little endian            |
//! | 52     | 32   | SHA-256 of the payload                       |
//! | 84     | n    | payload                                      |
//!
//! Writers create a uniquely named temp file (`.cudyn-tmp.*`) in the same
//! directory and `rename` it onto the entry name, so concurrent readers (threads
//! or processes) see either the old or the new complete file. Readers open with
//! `O_NOFOLLOW` and validate everything; anything invalid is a miss and is
//! removed so the caller recompiles and `put` replaces it.
//!
//! The directory is opened and checked once and every operation is relative to
//! that descriptor (`dirfd`), so a folder swapped in under the same name is never
//! used. Dependency manifests (`<key>.cudyn-deps`, same format) and an in-memory
//! tier serve the compiler (`crate::compile`); `deps` finds every file a compile
//! could read, for its key.

mod deps;
mod dirfd;
mod entry;
mod key;
pub mod toolchain;

pub use deps::{decode_checks, encode_checks, scan_includes, unchanged, Check, IncludeScan};
pub use entry::{decode_entry, encode_entry, EntryError, ENTRY_HEADER_LEN, ENTRY_MAGIC, ENTRY_VERSION};
pub use key::{Key, KeyBuilder};

use crate::error::{Error, Status};
use dirfd::{DirFd, Stat};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// File name extension of entry files.
pub const ENTRY_EXT: &str = ".cudyn";
/// File name extension of dependency manifests: for a compile's inputs, the key its include
/// scan gave and every lookup it made, so that a later process can check the headers by
/// `stat` instead of reading them (same format as an entry; evicted alike; not counted in
/// `entries`).
pub const MANIFEST_EXT: &str = ".cudyn-deps";
/// Default size bound when `CUDYN_CACHE_MAX_BYTES` is not set (256 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Name prefix of in-flight temp files (also recognised by `clear` and eviction).
const TMP_PREFIX: &str = ".cudyn-tmp.";
/// Temp files older than this are considered abandoned and removed during eviction.
const STALE_TMP_AGE: Duration = Duration::from_secs(3600);

/// Counters and on-disk totals of one [`Cache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// `get` calls of this instance that returned a payload.
    pub hits: u64,
    /// `get` calls of this instance that returned `None`.
    pub misses: u64,
    /// Total size in bytes of the entry files and dependency manifests now in the directory.
    pub bytes: u64,
    /// Number of entry files now in the directory (manifests not counted).
    pub entries: u64,
}

/// A cache directory with a size bound. Cheap to share between threads
/// (`&Cache` is all that `get`/`put` need); safe against other processes using
/// the same directory at the same time. The directory is held open: every
/// operation is relative to the descriptor that was checked in [`Cache::at`].
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    fd: DirFd,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    seq: AtomicU64,
    /// The in-memory tier: what a caller (the compiler) keeps of recent hits, by its own key,
    /// type-erased so that this module knows nothing of compiling.
    memory: std::sync::Mutex<std::collections::HashMap<u64, std::sync::Arc<dyn std::any::Any + Send + Sync>>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Entry,
    Manifest,
    Temp,
    Other,
}

fn classify(name: &OsStr) -> Kind {
    let Some(name) = name.to_str() else {
        return Kind::Other;
    };
    if name.starts_with(TMP_PREFIX) {
        return Kind::Temp;
    }
    let hex = |stem: &str| stem.len() == 64 && stem.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match (name.strip_suffix(ENTRY_EXT), name.strip_suffix(MANIFEST_EXT)) {
        (Some(stem), _) if hex(stem) => Kind::Entry,
        (_, Some(stem)) if hex(stem) => Kind::Manifest,
        _ => Kind::Other,
    }
}

struct EntryFile {
    name: OsString,
    manifest: bool,
    len: u64,
    mtime: SystemTime,
}

/// Removes a temp file on drop unless disarmed (after a successful rename).
struct TempGuard<'a> {
    dir: &'a DirFd,
    name: &'a OsStr,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.dir.unlink(self.name);
        }
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn thread_tid() -> i64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i64 }
}

fn random_u64(seq: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS; mixing in time and a sequence number
    // keeps values distinct even where the seed is reused (e.g. after fork).
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.write_u64(seq);
    h.write_u32(std::process::id());
    h.finish()
}

fn dir_error(kind: io::ErrorKind, dir: &Path, what: &str) -> io::Error {
    io::Error::new(kind, format!("cache directory {} {what}; refusing to use it", dir.display()))
}

/// Creates `dir` (mode 0700 for the leaf, if we create it), opens it and checks, through the
/// descriptor that is then kept, that it is a real directory (not a symlink), owned by us, and
/// not group/world writable.
fn prepare_dir(dir: &Path) -> io::Result<DirFd> {
    let mut created = false;
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent)?;
            }
            match fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => created = true,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    }
    let fd = DirFd::open(dir).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP | libc::ENOTDIR) if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) => {
            dir_error(io::ErrorKind::PermissionDenied, dir, "is a symlink")
        }
        Some(libc::ENOTDIR) => dir_error(io::ErrorKind::NotADirectory, dir, "is not a directory"),
        _ => e,
    })?;
    if created {
        fd.chmod_self(0o700)?;
    }
    let st = fd.stat_self()?;
    if !st.is_dir() {
        return Err(dir_error(io::ErrorKind::NotADirectory, dir, "is not a directory"));
    }
    if st.uid != euid() {
        return Err(dir_error(
            io::ErrorKind::PermissionDenied,
            dir,
            &format!("is owned by uid {}, not by us (uid {})", st.uid, euid()),
        ));
    }
    if st.mode & 0o022 != 0 {
        return Err(dir_error(
            io::ErrorKind::PermissionDenied,
            dir,
            &format!("is group or world writable (mode {:o})", st.mode & 0o7777),
        ));
    }
    Ok(fd)
}

/// `"256M"` -> 268435456: a byte count with an optional K/M/G/T suffix (binary, 1K = 1024;
/// "KiB", "MB" and the like are read the same way). None for anything else or an overflow.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    let n: u64 = num.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let shift = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    if unit == "bb" || unit == "ib" {
        return None;
    }
    n.checked_mul(1u64 << shift)
}

/// The cache configuration read through `var` (an environment lookup). `secure`: the process
/// runs with privileges its environment must not steer (AT_SECURE), so the cache is off.
/// The `Err` says why there is no cache, with the status `cudyn_cache_status` reports:
/// NotFound when it was turned off on purpose, InvalidArgument for a bad setting.
pub fn config_from(var: impl Fn(&str) -> Option<OsString>, secure: bool) -> Result<(PathBuf, u64), Error> {
    if secure {
        return Err(Error::new(
            Status::NotFound,
            "the cache is off in a setuid/setgid (secure) process: its environment cannot choose a cache folder",
        ));
    }
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(v) = set("CUDYN_CACHE") {
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        if matches!(v.as_str(), "0" | "off" | "false" | "no") {
            return Err(Error::new(Status::NotFound, format!("the cache is turned off by CUDYN_CACHE={v}")));
        }
    }
    let max_bytes = match set("CUDYN_CACHE_MAX_BYTES") {
        None => DEFAULT_MAX_BYTES,
        Some(v) => {
            let s = v.to_string_lossy();
            match parse_size(&s) {
                Some(0) => {
                    return Err(Error::new(Status::NotFound, "the cache is turned off by CUDYN_CACHE_MAX_BYTES=0"))
                }
                Some(n) => n,
                None => {
                    return Err(Error::invalid(format!(
                        "the cache is off: CUDYN_CACHE_MAX_BYTES={s:?} is not a size (a byte count, or with a K, M or G suffix: 256M)"
                    )))
                }
            }
        }
    };
    let dir = if let Some(d) = set("CUDYN_CACHE_DIR") {
        let d = PathBuf::from(d);
        if !d.is_absolute() {
            return Err(Error::invalid(format!(
                "the cache is off: CUDYN_CACHE_DIR={} is a relative path (name an absolute folder)",
                d.display()
            )));
        }
        d
    } else if let Some(x) = set("XDG_CACHE_HOME").filter(|x| Path::new(x).is_absolute()) {
        PathBuf::from(x).join("cudyn")
    } else if let Some(h) = set("HOME").filter(|h| Path::new(h).is_absolute()) {
        PathBuf::from(h).join(".cache").join("cudyn")
    } else {
        return Err(Error::new(
            Status::Io,
            "the cache is off: no cache folder (none of CUDYN_CACHE_DIR, XDG_CACHE_HOME, HOME is set)",
        ));
    };
    Ok((dir, max_bytes))
}

impl Cache {
    /// The cache configured by the environment: directory `$CUDYN_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/cudyn`, else `$HOME/.cache/cudyn`; size bound
    /// `$CUDYN_CACHE_MAX_BYTES` (default 256 MiB; K/M/G suffixes). `CUDYN_CACHE=0`
    /// (or `off`/`false`/`no`) disables caching, as does a secure (setuid) process.
    /// `Err` carries the reason the cache is disabled or unusable.
    pub fn from_env() -> Result<Cache, Error> {
        let (dir, max_bytes) = config_from(|name| std::env::var_os(name), crate::cuda::dl::secure_process())?;
        Cache::at(&dir, max_bytes).map_err(|e| {
            let msg = crate::error::io_text(&e);
            let msg = if msg.starts_with("cache directory") {
                format!("the cache is off: {msg}")
            } else {
                format!("the cache is off: cache directory {}: {msg}", dir.display())
            };
            Error::new(Status::Io, msg)
        })
    }

    /// A cache in `dir` bounded to `max_bytes` of entry files. Creates the
    /// directory (leaf mode 0700) if missing; refuses a leaf that is a symlink,
    /// not a directory, not owned by the effective uid, or group/world writable;
    /// and checks that it can write there, so that a read-only folder is reported
    /// now rather than failing every `put` in silence.
    pub fn at(dir: impl Into<PathBuf>, max_bytes: u64) -> io::Result<Cache> {
        let dir = dir.into();
        let fd = prepare_dir(&dir)?;
        let c = Cache {
            dir,
            fd,
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            memory: Default::default(),
        };
        let (file, tmp) = c.create_temp().map_err(|e| {
            io::Error::new(e.kind(), format!("cache directory {} cannot be written: {e}", c.dir.display()))
        })?;
        drop(file);
        let _ = c.fd.unlink(&tmp);
        Ok(c)
    }

    /// The in-memory tier's value under `slot`, if any (see `remember`).
    pub fn recall(&self, slot: u64) -> Option<std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        // Never waited for (here and below): a tier held by another thread is a miss, so a
        // child forked while a thread held it never blocks on it (src/fork.rs).
        self.memory.try_lock().ok()?.get(&slot).cloned()
    }

    /// What identifies the entry file for `key` as it is now (device, inode, size, ctime), or
    /// None when there is none: a remembered hit is good only while its entry is unchanged.
    pub fn entry_stamp(&self, key: &Key) -> Option<[i64; 5]> {
        let st = self.fd.stat(&Self::file_name(key, ENTRY_EXT)).ok().filter(|s| s.is_file())?;
        Some([st.dev as i64, st.ino as i64, st.len as i64, st.ctime.0, st.ctime.1])
    }

    /// Counts a hit answered from the in-memory tier.
    pub fn count_memory_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps `value` in this instance's memory under `slot` (bounded: at most 1,024 slots; the
    /// tier is emptied when full). The caller checks, on `recall`, that it is still valid.
    pub fn remember(&self, slot: u64, value: std::sync::Arc<dyn std::any::Any + Send + Sync>) {
        if let Ok(mut m) = self.memory.try_lock() {
            if m.len() >= 1024 {
                m.clear();
            }
            m.insert(slot, value);
        }
    }

    /// The cache directory's path when it was opened (informational: the cache keeps using
    /// the directory it opened even if this name is later moved or replaced).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size bound in bytes (entry files, headers included).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    fn file_name(key: &Key, ext: &str) -> OsString {
        OsString::from(format!("{}{ext}", key.hex()))
    }

    /// Path of the entry file for `key` (under the name the directory was opened by).
    pub fn entry_path(&self, key: &Key) -> PathBuf {
        self.dir.join(Self::file_name(key, ENTRY_EXT))
    }

    /// The payload stored for `key`, or `None` (a miss). Invalid entries
    /// (corrupt, truncated, foreign, other version, symlink, not a regular
    /// file, over the size bound) are misses and are removed, best effort.
    /// A hit refreshes the entry's mtime, which is its LRU recency.
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        let r = self.lookup(key, ENTRY_EXT);
        let counter = if r.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Removes `name` if it is still the file described by `st`, so that a
    /// fresh entry renamed into place by another writer is not thrown away.
    fn remove_if_same(&self, name: &OsStr, st: &Stat) {
        if self.fd.stat(name).is_ok_and(|now| now.same_file(st)) {
            let _ = self.fd.unlink(name);
        }
    }

    /// The dependency manifest stored for `key`, if any (validated as an entry is; not
    /// counted in the hit/miss statistics).
    pub fn get_manifest(&self, key: &Key) -> Option<Vec<u8>> {
        self.lookup(key, MANIFEST_EXT)
    }

    /// Stores a dependency manifest under `key` (as `put` stores an entry).
    pub fn put_manifest(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        self.store(key, payload, MANIFEST_EXT)
    }

    fn lookup(&self, key: &Key, ext: &str) -> Option<Vec<u8>> {
        let name = Self::file_name(key, ext);
        // O_NONBLOCK: never hang on a FIFO planted under an entry name.
        let file = match self.fd.open_file(&name, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
            Ok(f) => f,
            Err(e) => {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    // A symlink: remove the link itself (never its target).
                    if self.fd.stat(&name).is_ok_and(|m| m.is_symlink()) {
                        let _ = self.fd.unlink(&name);
                    }
                }
                return None;
            }
        };
        let st = dirfd::fstat(&file).ok()?;
        if !st.is_file() {
            if !st.is_dir() {
                self.remove_if_same(&name, &st);
            }
            return None;
        }
        if st.len > self.max_bytes.max(ENTRY_HEADER_LEN as u64) {
            self.remove_if_same(&name, &st);
            return None;
        }
        let mut bytes = Vec::with_capacity(st.len as usize);
        if (&file).take(st.len + 1).read_to_end(&mut bytes).is_err() {
            return None;
        }
        match decode_entry(key, &bytes) {
            Ok(payload) => {
                let n = payload.len();
                bytes.drain(..ENTRY_HEADER_LEN);
                debug_assert_eq!(bytes.len(), n);
                // Recency for LRU; failure only makes the entry look older.
                let _ = file.set_modified(SystemTime::now());
                Some(bytes)
            }
            Err(_) => {
                self.remove_if_same(&name, &st);
                None
            }
        }
    }

    /// Stores `payload` under `key`: writes a private temp file in the cache
    /// directory and renames it onto the entry name (atomic; an existing entry,
    /// or a symlink in its place, is replaced, never written through). Then
    /// evicts least recently used entries until the directory is within the
    /// bound. Errors (unwritable or missing directory, full disk, ...) leave no
    /// temp file behind. An entry that alone exceeds the bound is not stored
    /// and gives an error of kind `FileTooLarge`.
    pub fn put(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        self.store(key, payload, ENTRY_EXT)
    }

    fn store(&self, key: &Key, payload: &[u8], ext: &str) -> io::Result<()> {
        let size = (ENTRY_HEADER_LEN + payload.len()) as u64;
        if size > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("cache entry of {size} bytes exceeds the cache bound of {} bytes; not stored", self.max_bytes),
            ));
        }
        let bytes = encode_entry(key, payload);
        let (mut file, tmp) = self.create_temp()?;
        let mut guard = TempGuard { dir: &self.fd, name: &tmp, armed: true };
        file.write_all(&bytes)?;
        drop(file);
        let name = Self::file_name(key, ext);
        self.fd.rename(&tmp, &name)?;
        guard.armed = false;
        self.evict(&name);
        Ok(())
    }

    fn create_temp(&self) -> io::Result<(File, OsString)> {
        let pid = std::process::id();
        let tid = thread_tid();
        let mut attempts = 0;
        loop {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            let name = OsString::from(format!("{TMP_PREFIX}{pid}.{tid}.{seq}.{:016x}", random_u64(seq)));
            match self.fd.open_file(&name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600) {
                Ok(f) => return Ok((f, name)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Lists regular entry files; with `sweep`, also removes stale temp files.
    fn scan(&self, sweep: bool) -> io::Result<Vec<EntryFile>> {
        let mut out = Vec::new();
        let stale_before = SystemTime::now().checked_sub(STALE_TMP_AGE);
        for name in self.fd.list()? {
            let kind = classify(&name);
            if kind == Kind::Other {
                continue;
            }
            let Ok(st) = self.fd.stat(&name) else { continue };
            if !st.is_file() {
                continue;
            }
            match kind {
                Kind::Entry | Kind::Manifest => {
                    out.push(EntryFile { name, manifest: kind == Kind::Manifest, len: st.len, mtime: st.mtime })
                }
                Kind::Temp => {
                    if sweep && stale_before.is_some_and(|t| st.mtime < t) {
                        let _ = self.fd.unlink(&name);
                    }
                }
                Kind::Other => {}
            }
        }
        Ok(out)
    }

    /// Best-effort LRU eviction down to `max_bytes`, never removing `keep`.
    fn evict(&self, keep: &OsStr) {
        let Ok(mut entries) = self.scan(true) else {
            return;
        };
        let mut total: u64 = entries.iter().map(|e| e.len).sum();
        if total <= self.max_bytes {
            return;
        }
        entries.sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.name.cmp(&b.name)));
        for e in entries {
            if total <= self.max_bytes {
                break;
            }
            if e.name == keep {
                continue;
            }
            match self.fd.unlink(&e.name) {
                Ok(()) => total = total.saturating_sub(e.len),
                Err(err) if err.kind() == io::ErrorKind::NotFound => total = total.saturating_sub(e.len),
                Err(_) => {}
            }
        }
    }

    /// Total size of the entry files now on disk (0 if the directory is unreadable).
    pub fn bytes(&self) -> u64 {
        self.scan(false).map(|v| v.iter().map(|e| e.len).sum()).unwrap_or(0)
    }

    /// This instance's hit/miss counts and the directory's current totals.
    pub fn stats(&self) -> CacheStats {
        let entries = self.scan(false).unwrap_or_default();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: entries.iter().map(|e| e.len).sum(),
            entries: entries.iter().filter(|e| !e.manifest).count() as u64,
        }
    }

    /// Empties the in-memory tier, then removes every entry and temp file in the directory (symlinks under
    /// entry names are unlinked, never followed); leaves other files and
    /// subdirectories alone. Returns the number of entries removed.
    pub fn clear(&self) -> io::Result<u64> {
        // A tier held elsewhere keeps its values, which fail their entry check once the
        // entries are gone.
        if let Ok(mut m) = self.memory.try_lock() {
            m.clear();
        }
        let mut removed = 0;
        let mut first_err = None;
        for name in self.fd.list()? {
            let kind = classify(&name);
            if kind == Kind::Other || self.fd.stat(&name).map_or(true, |s| s.is_dir()) {
                continue;
            }
            match self.fd.unlink(&name) {
                Ok(()) => removed += u64::from(kind == Kind::Entry),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(removed),
        }
    }
}

#[cfg(test)]
mod tests;
