//! Read-only layers: folders of entries or bundle files that a cache consults before its own
//! folder and never writes — how a program ships the code for its kernels.
//!
//! A layer is trusted as the program's own files are: the file or folder and every folder above
//! it must be owned by root or the user and not writable by group or others (a sticky folder
//! such as /tmp above it is fine), so that no one else can put an entry there. A folder layer's
//! entry files are held to the same rule when opened (by descriptor, never through a symlink).
//! Nothing in a layer is ever removed, refreshed or rewritten: a damaged entry is a miss.

use super::bundle::Bundle;
use super::dirfd::DirFd;
use super::entry::{decode_entry, ENTRY_HEADER_LEN};
use super::{euid, Key, ENTRY_EXT};
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A read-only layer: a folder of entry files (`<key>.cudyn`, as a cache folder holds them) or
/// a bundle file (`cudyn cache export`).
#[derive(Debug)]
pub struct Layer(Inner);

#[derive(Debug)]
enum Inner {
    Folder { path: PathBuf, fd: DirFd },
    Bundle(Bundle),
}

fn refused(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("cache layer {}: {why}; not used", path.display()))
}

/// Why `m` (of `what`) cannot be trusted, if it cannot: owned by someone else, or writable by
/// group or others (a sticky folder excepted when `folder`).
fn untrusted(m: &std::fs::Metadata, folder: bool) -> Option<String> {
    let me = euid();
    if m.uid() != 0 && m.uid() != me {
        return Some(format!("owned by uid {}, neither root nor us (uid {me})", m.uid()));
    }
    let sticky = folder && m.mode() & 0o1000 != 0;
    if m.mode() & 0o022 != 0 && !sticky {
        return Some(format!("writable by group or others (mode {:o})", m.mode() & 0o7777));
    }
    None
}

/// Checks every folder above `real` (a canonical path).
fn folders_trusted(real: &Path) -> Result<(), String> {
    let mut cur = real.parent();
    while let Some(d) = cur {
        let m = std::fs::metadata(d).map_err(|e| format!("{}: {}", d.display(), crate::error::io_text(&e)))?;
        if let Some(why) = untrusted(&m, true) {
            return Err(format!("the folder {} above it is {why}", d.display()));
        }
        cur = d.parent();
    }
    Ok(())
}

impl Layer {
    /// Opens `path` (absolute: a folder of entries or a bundle file) as a layer, after the
    /// checks above; `max_entry` bounds what one entry may hold.
    pub fn open(path: &Path, max_entry: u64) -> io::Result<Layer> {
        if !path.is_absolute() {
            return Err(refused(path, "not an absolute path"));
        }
        let real = std::fs::canonicalize(path).map_err(|e| refused(path, crate::error::io_text(&e)))?;
        folders_trusted(&real).map_err(|w| refused(path, w))?;
        let m = std::fs::metadata(&real).map_err(|e| refused(path, crate::error::io_text(&e)))?;
        if m.is_dir() {
            let fd = DirFd::open(&real).map_err(|e| refused(path, crate::error::io_text(&e)))?;
            let st = fd.stat_self()?;
            let m2 = std::fs::metadata(&real)?;
            // The folder opened is the one checked (same inode), and it passes by itself.
            if st.ino != m2.ino() || st.dev != m2.dev() {
                return Err(refused(path, "it changed while it was opened"));
            }
            if let Some(why) = untrusted(&m2, false) {
                return Err(refused(path, format!("it is {why}")));
            }
            return Ok(Layer(Inner::Folder { path: path.to_path_buf(), fd }));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&real)
            .map_err(|e| refused(path, crate::error::io_text(&e)))?;
        let fm = file.metadata()?;
        if !fm.is_file() {
            return Err(refused(path, "neither a folder nor a regular file"));
        }
        if let Some(why) = untrusted(&fm, false) {
            return Err(refused(path, format!("it is {why}")));
        }
        Ok(Layer(Inner::Bundle(Bundle::open(file, path, max_entry)?)))
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        match &self.0 {
            Inner::Folder { path, .. } => path,
            Inner::Bundle(b) => b.path(),
        }
    }

    fn entry_name(key: &Key) -> OsString {
        OsString::from(format!("{}{ENTRY_EXT}", key.hex()))
    }

    /// The payload for `key`, if this layer holds a valid one. Reads only.
    pub fn get(&self, key: &Key, max_entry: u64) -> Option<Vec<u8>> {
        match &self.0 {
            Inner::Bundle(b) => b.get(key),
            Inner::Folder { fd, .. } => {
                let file = fd.open_file(&Self::entry_name(key), libc::O_RDONLY | libc::O_NONBLOCK, 0).ok()?;
                let m = file.metadata().ok()?;
                if !m.is_file() || untrusted(&m, false).is_some() || m.len() > max_entry {
                    return None;
                }
                let mut bytes = Vec::new();
                bytes.try_reserve_exact(m.len() as usize).ok()?;
                (&file).take(m.len() + 1).read_to_end(&mut bytes).ok()?;
                let n = decode_entry(key, &bytes).ok()?.len();
                bytes.drain(..ENTRY_HEADER_LEN);
                debug_assert_eq!(bytes.len(), n);
                Some(bytes)
            }
        }
    }

    /// What identifies the entry for `key` here as it is now, or None when this layer has none.
    pub fn stamp(&self, key: &Key) -> Option<[i64; 5]> {
        match &self.0 {
            Inner::Bundle(b) => b.contains(key).then(|| b.stamp()).flatten(),
            Inner::Folder { fd, .. } => {
                let st = fd.stat(&Self::entry_name(key)).ok().filter(|s| s.is_file())?;
                Some([st.dev as i64, st.ino as i64, st.len as i64, st.ctime.0, st.ctime.1])
            }
        }
    }

    /// Whether it is a bundle file (else a folder).
    pub fn is_bundle(&self) -> bool {
        matches!(self.0, Inner::Bundle(_))
    }

    /// How many entries it holds (a folder: entry-named regular files).
    pub fn entries(&self) -> u64 {
        match &self.0 {
            Inner::Bundle(b) => b.records().len() as u64,
            Inner::Folder { fd, .. } => fd
                .list_matching(|n| super::classify(n) == super::Kind::Entry)
                .map(|v| v.iter().filter(|n| fd.stat(n).is_ok_and(|s| s.is_file())).count() as u64)
                .unwrap_or(0),
        }
    }
}
