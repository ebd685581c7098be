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
//! could read, for its key, lexing as NVRTC does (`lex`). Read-only layers (`layer`:
//! folders of entries, or bundles, `bundle`) are consulted before the folder and never
//! written. Everything in the folder under cudyn's names (entries, manifests, temp files
//! `.cudyn-tmp.<pid>.<tid>.<n>.<16 hex>`, set-aside obstacles `.cudyn-junk.<16 hex>`) is
//! cudyn's to replace or remove, whatever its type; nothing else there is ever touched.

mod bundle;
mod deps;
mod dirfd;
mod entry;
mod key;
mod layer;
mod lex;
pub mod toolchain;
pub mod trace;
pub(crate) mod watch;

pub use bundle::{write_bundle, Bundle, BUNDLE_MAGIC, BUNDLE_VERSION, MAX_BUNDLE_ENTRIES};
pub use deps::{blind_scan, decode_checks, encode_checks, scan_includes, unchanged, Check, IncludeScan};
pub use entry::{decode_entry, encode_entry, EntryError, ENTRY_HEADER_LEN, ENTRY_MAGIC, ENTRY_VERSION};
pub use key::{Key, KeyBuilder};
pub use layer::Layer;

use crate::error::{Error, Status};
use dirfd::{DirFd, Stat};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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
/// The most one entry may hold, whatever the size bound: NVRTC's output for one program is
/// far smaller, and an entry is read into memory whole.
pub const ENTRY_MAX_BYTES: u64 = 1 << 30;
/// File name extension of bundles that cudyn finds beside the running program
/// (`<program>.cudyn-bundle`).
pub const BUNDLE_EXT: &str = ".cudyn-bundle";

/// Name prefix of in-flight temp files (also recognised by `clear` and eviction).
const TMP_PREFIX: &str = ".cudyn-tmp.";
/// Name prefix of things found at an entry's name that could not be removed there and then:
/// moved aside so the name is free, removed later.
const JUNK_PREFIX: &str = ".cudyn-junk.";
/// Temp files older than this are considered abandoned and removed during eviction.
const STALE_TMP_AGE: Duration = Duration::from_secs(3600);
/// The most files and folders one removal of a planted folder visits, and how deep it goes.
const REMOVE_BUDGET: usize = 10_000;
const REMOVE_DEPTH: usize = 32;

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

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Entries written.
    pub added: u64,
    /// Entries the cache held already (left as they were).
    pub present: u64,
}

/// A cache directory with a size bound, and the read-only layers consulted before it. Cheap to
/// share between threads (`&Cache` is all that `get`/`put` need); safe against other processes
/// using the same directory at the same time. The directory is held open: every operation is
/// relative to the descriptor that was checked in [`Cache::at`].
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    /// None: no writable folder (a cache of layers only; `write_refused` says why).
    fd: Option<DirFd>,
    write_refused: Option<String>,
    max_bytes: u64,
    layers: std::sync::RwLock<Vec<std::sync::Arc<Layer>>>,
    /// Layers the environment named that were refused, with why.
    refused: std::sync::Mutex<Vec<String>>,
    hits: AtomicU64,
    misses: AtomicU64,
    seq: AtomicU64,
    /// The in-memory tier: what a caller (the compiler) keeps of recent hits, by its own key,
    /// type-erased so that this module knows nothing of compiling.
    memory: std::sync::Mutex<std::collections::HashMap<u64, std::sync::Arc<dyn std::any::Any + Send + Sync>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Entry,
    Manifest,
    Temp,
    Junk,
    Other,
}

fn is_hex(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit())
}

fn classify(name: &OsStr) -> Kind {
    let Some(name) = name.to_str() else {
        return Kind::Other;
    };
    // Exactly the names `create_temp` makes: a user's `.cudyn-tmp.notes` is not one.
    if let Some(rest) = name.strip_prefix(TMP_PREFIX) {
        // A trace NVRTC wrote for a compile (`trace_target`) ends in ".json".
        let rest = rest.strip_suffix(".json").unwrap_or(rest);
        let parts: Vec<&str> = rest.split('.').collect();
        return match parts[..] {
            [pid, tid, seq, rnd] if is_decimal(pid) && is_decimal(tid) && is_decimal(seq) && is_hex(rnd, 16) => {
                Kind::Temp
            }
            _ => Kind::Other,
        };
    }
    if name.strip_prefix(JUNK_PREFIX).is_some_and(|r| is_hex(r, 16)) {
        return Kind::Junk;
    }
    match (name.strip_suffix(ENTRY_EXT), name.strip_suffix(MANIFEST_EXT)) {
        (Some(stem), _) if is_hex(stem, 64) => Kind::Entry,
        (_, Some(stem)) if is_hex(stem, 64) => Kind::Manifest,
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

/// The free space a trace needs before NVRTC is asked to write one: the largest trace of the
/// test suite's compiles (CUB, CCCL) is under 1 MiB; 64 MiB leaves room for other writers too.
const TRACE_ROOM: u64 = 64 << 20;

/// Whether NVRTC can write a trace into the folder `fd`: that much free space for an
/// unprivileged writer, and no file size limit below it (NVRTC does not survive a failed write).
fn room_for_trace(fd: &DirFd) -> bool {
    // SAFETY: an all-zero rlimit and statvfs are valid values to be overwritten.
    let (mut rl, mut sv): (libc::rlimit, libc::statvfs) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl) } != 0
        || (rl.rlim_cur != libc::RLIM_INFINITY && (rl.rlim_cur as u64) < TRACE_ROOM)
    {
        return false;
    }
    // SAFETY: a live descriptor and a valid out-pointer.
    if unsafe { libc::fstatvfs(fd.raw(), &mut sv) } != 0 {
        return false;
    }
    (sv.f_bavail as u64).saturating_mul(sv.f_frsize as u64) >= TRACE_ROOM
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

/// The read-only layers configured by the environment: `CUDYN_CACHE_LAYERS` (absolute paths of
/// folders or bundle files, separated by `:`), then `<program>.cudyn-bundle` beside the running
/// executable when there is one. Relative entries are ignored (with the others named in
/// `cudyn cache stats`, like every layer that is refused).
pub fn layers_from(var: impl Fn(&str) -> Option<OsString>, exe: Option<PathBuf>) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut v: Vec<PathBuf> = Vec::new();
    if let Some(list) = var("CUDYN_CACHE_LAYERS") {
        for part in list.as_bytes().split(|&b| b == b':').filter(|p| !p.is_empty()) {
            v.push(PathBuf::from(OsStr::from_bytes(part)));
        }
    }
    if let Some(exe) = exe {
        let mut name = exe.into_os_string();
        name.push(BUNDLE_EXT);
        let p = PathBuf::from(name);
        if fs::symlink_metadata(&p).is_ok() && !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

impl Cache {
    /// The cache configured by the environment: directory `$CUDYN_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/cudyn`, else `$HOME/.cache/cudyn`; size bound
    /// `$CUDYN_CACHE_MAX_BYTES` (default 256 MiB; K/M/G suffixes); read-only layers
    /// (`layers_from`). `CUDYN_CACHE=0` (or `off`/`false`/`no`) disables caching, as does a
    /// secure (setuid) process. `Err` carries the reason the cache is disabled or unusable. A
    /// folder that cannot be used while layers can still gives a cache: of the layers alone.
    pub fn from_env() -> Result<Cache, Error> {
        let secure = crate::cuda::dl::secure_process();
        let (dir, max_bytes) = config_from(|name| std::env::var_os(name), secure)?;
        let layers = layers_from(|name| std::env::var_os(name), std::env::current_exe().ok());
        let mut c = match Cache::at(&dir, max_bytes) {
            Ok(c) => c,
            Err(e) => {
                let msg = crate::error::io_text(&e);
                let msg = if msg.starts_with("cache directory") {
                    format!("the cache is off: {msg}")
                } else {
                    format!("the cache is off: cache directory {}: {msg}", dir.display())
                };
                if layers.is_empty() {
                    return Err(Error::new(Status::Io, msg));
                }
                Cache::layers_only(dir, max_bytes, msg)
            }
        };
        for l in layers {
            // A refused layer is not an error of the cache: it is named in `refused_layers`.
            if let Err(e) = c.add_layer(&l) {
                c.refused.lock().unwrap_or_else(|e| e.into_inner()).push(crate::error::io_text(&e));
            }
        }
        if c.fd.is_none() && c.layers().is_empty() {
            return Err(Error::new(Status::Io, c.write_refused.take().unwrap_or_default()));
        }
        Ok(c)
    }

    /// A cache in `dir` bounded to `max_bytes` of entry files. Creates the
    /// directory (leaf mode 0700) if missing; refuses a leaf that is a symlink,
    /// not a directory, not owned by the effective uid, or group/world writable;
    /// and checks that it can write there, so that a read-only folder is reported
    /// now rather than failing every `put` in silence.
    pub fn at(dir: impl Into<PathBuf>, max_bytes: u64) -> io::Result<Cache> {
        let dir = dir.into();
        let fd = prepare_dir(&dir)?;
        fd.writable().map_err(|e| {
            io::Error::new(e.kind(), format!("cache directory {} cannot be written: {e}", dir.display()))
        })?;
        Ok(Cache { fd: Some(fd), ..Cache::layers_only(dir, max_bytes, String::new()) })
    }

    /// A cache with no folder of its own: only layers (added with `add_layer`) answer, and
    /// nothing is stored. `why` says why there is no folder.
    pub fn layers_only(dir: PathBuf, max_bytes: u64, why: String) -> Cache {
        Cache {
            dir,
            fd: None,
            write_refused: Some(why).filter(|w| !w.is_empty()),
            max_bytes,
            layers: Default::default(),
            refused: Default::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            memory: Default::default(),
        }
    }

    /// Adds a read-only layer (a folder of entries or a bundle file, absolute), consulted after
    /// those added before it and before the cache's own folder. Refused, with the reason, when
    /// it fails the checks of `Layer::open` or is not a bundle.
    pub fn add_layer(&self, path: &Path) -> io::Result<()> {
        let l = Layer::open(path, ENTRY_MAX_BYTES.min(self.max_bytes.max(ENTRY_HEADER_LEN as u64)));
        let mut g = self.layers.write().unwrap_or_else(|e| e.into_inner());
        match l {
            Ok(l) => {
                if !g.iter().any(|x| x.path() == l.path()) {
                    g.push(std::sync::Arc::new(l));
                }
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The layers in the order they are consulted.
    pub fn layers(&self) -> Vec<std::sync::Arc<Layer>> {
        self.layers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The layers the environment named that were refused, each with why.
    pub fn refused_layers(&self) -> Vec<String> {
        self.refused.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Why this cache stores nothing (no usable folder of its own), if so.
    pub fn write_refused(&self) -> Option<&str> {
        if self.fd.is_some() {
            None
        } else {
            Some(self.write_refused.as_deref().unwrap_or("the cache has no folder of its own"))
        }
    }

    fn fd(&self) -> io::Result<&DirFd> {
        self.fd.as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ReadOnlyFilesystem,
                self.write_refused.clone().unwrap_or_else(|| "the cache has no folder of its own".into()),
            )
        })
    }

    /// The in-memory tier's value under `slot`, if any (see `remember`).
    pub fn recall(&self, slot: u64) -> Option<std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        // Never waited for (here and below): a tier held by another thread is a miss, so a
        // child forked while a thread held it never blocks on it (src/fork.rs).
        self.memory.try_lock().ok()?.get(&slot).cloned()
    }

    /// What identifies the entry for `key` where `get` would find it now (a layer's entry or
    /// bundle, else the folder's file: device, inode, size, ctime), or None when there is none:
    /// a remembered hit is good only while its entry is unchanged.
    pub fn entry_stamp(&self, key: &Key) -> Option<[i64; 5]> {
        for l in self.layers.read().ok()?.iter() {
            if let Some(s) = l.stamp(key) {
                return Some(s);
            }
        }
        let st = self.fd.as_ref()?.stat(&Self::file_name(key, ENTRY_EXT)).ok().filter(|s| s.is_file())?;
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

    /// The most one entry may hold here: the bound, and never more than `ENTRY_MAX_BYTES`.
    fn entry_limit(&self) -> u64 {
        self.max_bytes.clamp(ENTRY_HEADER_LEN as u64, ENTRY_MAX_BYTES)
    }

    fn file_name(key: &Key, ext: &str) -> OsString {
        OsString::from(format!("{}{ext}", key.hex()))
    }

    /// Path of the entry file for `key` (under the name the directory was opened by).
    pub fn entry_path(&self, key: &Key) -> PathBuf {
        self.dir.join(Self::file_name(key, ENTRY_EXT))
    }

    /// The payload stored for `key`, or `None` (a miss): from the first layer that holds a
    /// valid entry, else from the folder. Invalid entries in the folder (corrupt, truncated,
    /// foreign, other version, symlink, not a regular file, over the size bound) are misses
    /// and are removed, best effort; layers are only ever read. A hit in the folder refreshes
    /// the entry's mtime, which is its LRU recency.
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        let limit = self.entry_limit();
        let from_layer = self.layers.read().ok().and_then(|ls| ls.iter().find_map(|l| l.get(key, limit)));
        let r = from_layer.or_else(|| self.lookup(key, ENTRY_EXT));
        let counter = if r.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        r
    }

    /// Removes `name` if it is still the file described by `st`, so that a
    /// fresh entry renamed into place by another writer is not thrown away.
    fn remove_if_same(&self, fd: &DirFd, name: &OsStr, st: &Stat) {
        if fd.stat(name).is_ok_and(|now| now.same_file(st)) {
            let _ = fd.unlink(name);
        }
    }

    /// Frees `name` (one of cudyn's names) of whatever is there that is not a regular file: a
    /// symlink or special file is unlinked; a folder is removed with what it holds (bounded:
    /// never through a symlink, at most `REMOVE_BUDGET` items and `REMOVE_DEPTH` levels), or,
    /// when that cannot be done, moved aside as junk so that the name is usable at once.
    fn clear_obstacle(&self, fd: &DirFd, name: &OsStr) {
        let Ok(st) = fd.stat(name) else { return };
        if !st.is_dir() {
            if !st.is_file() {
                let _ = fd.unlink(name);
            }
            return;
        }
        let mut budget = REMOVE_BUDGET;
        if remove_tree(fd, name, 0, &mut budget).is_ok() {
            return;
        }
        let junk =
            OsString::from(format!("{JUNK_PREFIX}{:016x}", random_u64(self.seq.fetch_add(1, Ordering::Relaxed))));
        let _ = fd.rename(name, &junk);
    }

    /// The dependency manifest stored for `key`, if any (validated as an entry is; not
    /// counted in the hit/miss statistics).
    pub fn get_manifest(&self, key: &Key) -> Option<Vec<u8>> {
        self.lookup(key, MANIFEST_EXT)
    }

    /// A place NVRTC can write a file to in this cache's folder, named by a path that reaches the
    /// folder through its open descriptor (`/proc/self/fd/N/...`, so a folder swapped in under
    /// the cache's name is never written), and the file's name there once NVRTC has appended
    /// ".json". None without a folder or /proc.
    pub fn trace_target(&self) -> Option<(String, OsString)> {
        let fd = self.fd.as_ref()?;
        // NVRTC crashes the process when it cannot write its trace (SIGSEGV in libnvrtc on a
        // full filesystem, or past RLIMIT_FSIZE): no trace unless there is room for it.
        if !room_for_trace(fd) {
            return None;
        }
        let proc_fd = PathBuf::from(format!("/proc/self/fd/{}", fd.raw()));
        if !proc_fd.is_dir() {
            return None;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let stem = format!("{TMP_PREFIX}{}.{}.{seq}.{:016x}", std::process::id(), thread_tid(), random_u64(seq));
        let path = proc_fd.join(&stem);
        Some((path.to_str()?.to_string(), OsString::from(format!("{stem}.json"))))
    }

    /// The file `name` in the folder (a regular file, at most `max` bytes), removed once read;
    /// None if it is not there or not such a file (it is removed all the same).
    pub fn take_file(&self, name: &OsStr, max: u64) -> Option<Vec<u8>> {
        let fd = self.fd.as_ref()?;
        let out = fd.open_file(name, libc::O_RDONLY | libc::O_NONBLOCK, 0).ok().and_then(|f| {
            let st = dirfd::fstat(&f).ok().filter(|s| s.is_file() && s.len <= max)?;
            let mut v = Vec::new();
            v.try_reserve_exact(st.len as usize + 1).ok()?;
            (&f).take(max + 1).read_to_end(&mut v).ok()?;
            Some(v)
        });
        self.clear_obstacle(fd, name);
        let _ = fd.unlink(name);
        out
    }

    /// Removes the dependency manifest stored under `key`, if any.
    pub fn remove_manifest(&self, key: &Key) {
        if let Some(fd) = self.fd.as_ref() {
            let name = Self::file_name(key, MANIFEST_EXT);
            if fd.stat(&name).is_ok_and(|s| !s.is_dir()) {
                let _ = fd.unlink(&name);
            }
        }
    }

    /// Stores a dependency manifest under `key` (as `put` stores an entry).
    pub fn put_manifest(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        self.store(key, payload, MANIFEST_EXT)
    }

    fn lookup(&self, key: &Key, ext: &str) -> Option<Vec<u8>> {
        let fd = self.fd.as_ref()?;
        let name = Self::file_name(key, ext);
        // O_NONBLOCK: never hang on a FIFO planted under an entry name.
        let file = match fd.open_file(&name, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
            Ok(f) => f,
            Err(e) => {
                // A symlink (ELOOP), a socket (ENXIO), ...: not an entry; free the name.
                if e.raw_os_error() != Some(libc::ENOENT) {
                    self.clear_obstacle(fd, &name);
                }
                return None;
            }
        };
        let st = dirfd::fstat(&file).ok()?;
        if !st.is_file() {
            drop(file);
            self.clear_obstacle(fd, &name);
            return None;
        }
        // Sized by what is on disk: bounded, and a failed allocation is a miss, not an abort.
        // The header first: a file that is not this key's entry of this length is never read.
        if st.len > self.entry_limit() || !header_fits(&file, key, st.len) {
            self.remove_if_same(fd, &name, &st);
            return None;
        }
        let mut bytes = Vec::new();
        if bytes.try_reserve_exact(st.len as usize + 1).is_err() {
            return None;
        }
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
                self.remove_if_same(fd, &name, &st);
                None
            }
        }
    }

    /// Stores `payload` under `key`: writes a private temp file in the cache
    /// directory and renames it onto the entry name (atomic; an existing entry,
    /// or a symlink in its place, is replaced, never written through; a folder planted
    /// there is removed first). Then evicts least recently used entries until the directory
    /// is within the bound. Errors (unwritable or missing directory, full disk, ...) leave no
    /// temp file behind. An entry that alone exceeds the bound is not stored
    /// and gives an error of kind `FileTooLarge`.
    pub fn put(&self, key: &Key, payload: &[u8]) -> io::Result<()> {
        self.store(key, payload, ENTRY_EXT)
    }

    fn store(&self, key: &Key, payload: &[u8], ext: &str) -> io::Result<()> {
        let fd = self.fd()?;
        let size = (ENTRY_HEADER_LEN + payload.len()) as u64;
        if size > self.entry_limit() {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "cache entry of {size} bytes exceeds the cache bound of {} bytes; not stored",
                    self.entry_limit()
                ),
            ));
        }
        let bytes = encode_entry(key, payload);
        let (mut file, tmp) = self.create_temp()?;
        let mut guard = TempGuard { dir: fd, name: &tmp, armed: true };
        file.write_all(&bytes)?;
        drop(file);
        let name = Self::file_name(key, ext);
        if let Err(e) = fd.rename(&tmp, &name) {
            // A folder at the entry's name (EISDIR, or ENOTEMPTY/EEXIST on some systems):
            // cudyn's name, so it goes, and the rename is tried once more.
            if !matches!(e.raw_os_error(), Some(libc::EISDIR | libc::ENOTEMPTY | libc::EEXIST)) {
                return Err(e);
            }
            self.clear_obstacle(fd, &name);
            fd.rename(&tmp, &name)?;
        }
        guard.armed = false;
        self.evict(&name);
        Ok(())
    }

    fn create_temp(&self) -> io::Result<(File, OsString)> {
        let fd = self.fd()?;
        let pid = std::process::id();
        let tid = thread_tid();
        let mut attempts = 0;
        loop {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            let name = OsString::from(format!("{TMP_PREFIX}{pid}.{tid}.{seq}.{:016x}", random_u64(seq)));
            match fd.open_file(&name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600) {
                Ok(f) => return Ok((f, name)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Lists regular entry files; with `sweep`, also removes stale temp files, junk, and
    /// whatever is at an entry's name that is not a regular file.
    fn scan(&self, sweep: bool) -> io::Result<Vec<EntryFile>> {
        let fd = self.fd()?;
        let mut out = Vec::new();
        let stale_before = SystemTime::now().checked_sub(STALE_TMP_AGE);
        for name in fd.list_matching(|n| classify(n) != Kind::Other)? {
            let kind = classify(&name);
            let Ok(st) = fd.stat(&name) else { continue };
            match kind {
                Kind::Entry | Kind::Manifest if st.is_file() => {
                    out.push(EntryFile { name, manifest: kind == Kind::Manifest, len: st.len, mtime: st.mtime })
                }
                Kind::Entry | Kind::Manifest | Kind::Junk => {
                    if sweep {
                        self.clear_obstacle(fd, &name);
                        if kind == Kind::Junk {
                            let _ = fd.unlink(&name);
                        }
                    }
                }
                Kind::Temp => {
                    if sweep && stale_before.is_some_and(|t| st.mtime < t) {
                        self.clear_obstacle(fd, &name);
                        let _ = fd.unlink(&name);
                    }
                }
                Kind::Other => {}
            }
        }
        Ok(out)
    }

    /// Best-effort LRU eviction down to `max_bytes`, never removing `keep`.
    fn evict(&self, keep: &OsStr) {
        let Ok(fd) = self.fd() else { return };
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
            match fd.unlink(&e.name) {
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

    /// Empties the in-memory tier, then removes every entry, manifest, temp file and junk in
    /// the directory, whatever its type (a folder planted at an entry's name goes too; symlinks
    /// are unlinked, never followed); leaves every other name alone (`.cudyn-tmp.notes` is not
    /// a temp file cudyn makes). Layers are never touched. Returns the number of entries removed.
    pub fn clear(&self) -> io::Result<u64> {
        // A tier held elsewhere keeps its values, which fail their entry check once the
        // entries are gone.
        if let Ok(mut m) = self.memory.try_lock() {
            m.clear();
        }
        let fd = self.fd()?;
        let mut removed = 0;
        let mut first_err = None;
        for name in fd.list_matching(|n| classify(n) != Kind::Other)? {
            let kind = classify(&name);
            let Ok(st) = fd.stat(&name) else { continue };
            if st.is_dir() {
                let mut budget = REMOVE_BUDGET;
                match remove_tree(fd, &name, 0, &mut budget) {
                    Ok(()) => removed += u64::from(kind == Kind::Entry),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
                continue;
            }
            match fd.unlink(&name) {
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

    /// Writes every valid entry of the folder (not the layers, not the manifests) to a bundle
    /// at `path`: to a temp file beside it, renamed into place when complete. Returns how many
    /// entries it holds.
    pub fn export(&self, path: &Path) -> io::Result<u64> {
        let fd = self.fd()?;
        let mut entries = Vec::new();
        let mut total: u64 = 0;
        for name in fd.list_matching(|n| classify(n) == Kind::Entry)? {
            let Some(key) = name.to_str().and_then(|n| n.strip_suffix(ENTRY_EXT)).and_then(Key::from_hex) else {
                continue;
            };
            let Ok(file) = fd.open_file(&name, libc::O_RDONLY | libc::O_NONBLOCK, 0) else { continue };
            let Ok(st) = dirfd::fstat(&file) else { continue };
            if !st.is_file() || st.len > self.entry_limit() {
                continue;
            }
            let mut bytes = Vec::new();
            if bytes.try_reserve_exact(st.len as usize + 1).is_err()
                || (&file).take(st.len + 1).read_to_end(&mut bytes).is_err()
            {
                continue;
            }
            if decode_entry(&key, &bytes).is_ok() {
                total += bytes.len() as u64;
                entries.push((key, bytes));
            }
        }
        let _ = total;
        let n = entries.len() as u64;
        // Through a symbolic link to the file it names, as writing to the path would; never
        // over something that is no regular file (renamed over, a device such as /dev/null
        // would have become a bundle).
        let target = match fs::canonicalize(path) {
            Ok(t) => t,
            // Nothing there yet, or a link to a file not there yet (written where it points).
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::read_link(path) {
                Ok(to) => path.parent().unwrap_or(Path::new("")).join(to),
                Err(_) => path.to_path_buf(),
            },
            Err(e) => return Err(e),
        };
        if fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: there is something other than a regular file there", path.display()),
            ));
        }
        let path = target.as_path();
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if path.file_name().is_none() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a bundle needs a file name"));
        }
        // Not made from the bundle's name, which may already be as long as a name can be.
        let tmp = dir.join(format!(
            ".cudyn-bundle.{}.{:016x}",
            std::process::id(),
            random_u64(self.seq.fetch_add(1, Ordering::Relaxed))
        ));
        let result = (|| {
            let mut f =
                std::io::BufWriter::new(fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(&tmp)?);
            write_bundle(&mut f, &mut entries)?;
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map(|()| n)
    }

    /// Imports the bundle at `path` into the folder. Everything is checked before anything is
    /// written (the bundle's every hash and entry, and `accept` on every payload: the compiler
    /// checks that each is code it could have made); a bundle that fails, or one larger than
    /// the cache's bound, imports nothing. Entries the folder holds already are kept; if a
    /// write fails midway, the entries this import added are removed again.
    pub fn import(&self, path: &Path, accept: impl Fn(&Key, &[u8]) -> Result<(), String>) -> io::Result<ImportReport> {
        let fd = self.fd()?;
        // Non-blocking, and only a regular file: a FIFO (or a device) at the path would block
        // the open, or the read, forever.
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {}", path.display(), crate::error::io_text(&e))))?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a regular file (a bundle is one)", path.display()),
            ));
        }
        let b = Bundle::open(file, path, ENTRY_MAX_BYTES)?;
        let mut total: u64 = 0;
        b.verify(|k, payload| {
            total += (ENTRY_HEADER_LEN + payload.len()) as u64;
            accept(k, payload).map_err(|why| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: entry {k}: {why}; nothing imported", path.display()),
                )
            })
        })?;
        if total > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "{} holds {total} bytes of entries, more than this cache's bound of {} bytes (CUDYN_CACHE_MAX_BYTES); nothing imported (a bundle can be used as a read-only layer instead: CUDYN_CACHE_LAYERS)",
                    path.display(),
                    self.max_bytes
                ),
            ));
        }
        let mut report = ImportReport::default();
        let mut added: Vec<OsString> = Vec::new();
        for r in b.records() {
            let name = Self::file_name(&r.key, ENTRY_EXT);
            if self.lookup(&r.key, ENTRY_EXT).is_some() {
                report.present += 1;
                continue;
            }
            let step = b.entry_bytes(&r.key).and_then(|bytes| self.put(&r.key, &bytes[ENTRY_HEADER_LEN..]));
            if let Err(e) = step {
                for n in &added {
                    let _ = fd.unlink(n);
                }
                return Err(io::Error::new(e.kind(), format!("importing {}: {e}; nothing imported", path.display())));
            }
            added.push(name);
            report.added += 1;
        }
        Ok(report)
    }
}

/// Whether `file` starts with an entry header for `key` whose payload length makes the file
/// `len` bytes long (read with one bounded `pread`).
fn header_fits(file: &File, key: &Key, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; ENTRY_HEADER_LEN];
    if len < ENTRY_HEADER_LEN as u64 || file.read_exact_at(&mut h, 0).is_err() {
        return false;
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&h[entry::OFF_LEN..entry::OFF_HASH]);
    h[..8] == ENTRY_MAGIC
        && h[entry::OFF_VERSION..entry::OFF_KEY] == ENTRY_VERSION.to_le_bytes()
        && h[entry::OFF_KEY..entry::OFF_LEN] == key.0
        && u64::from_le_bytes(n).checked_add(ENTRY_HEADER_LEN as u64) == Some(len)
}

/// Removes the folder `name` in `dir` and everything in it, never following a symlink, within
/// `budget` items and `REMOVE_DEPTH` levels.
fn remove_tree(dir: &DirFd, name: &OsStr, depth: usize, budget: &mut usize) -> io::Result<()> {
    if depth > REMOVE_DEPTH {
        return Err(io::Error::other("a planted folder nested too deep"));
    }
    let sub = dir.open_dir(name)?;
    for child in sub.list()? {
        if *budget == 0 {
            return Err(io::Error::other("a planted folder holding too much"));
        }
        *budget -= 1;
        match sub.stat(&child) {
            Ok(st) if st.is_dir() => remove_tree(&sub, &child, depth + 1, budget)?,
            Ok(_) => sub.unlink(&child)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    drop(sub);
    dir.remove_dir(name)
}

#[cfg(test)]
mod tests;
