//! Which NVRTC the library search would open, found without opening it, so that a compile the
//! cache answers never loads NVRTC: its `dlopen` (libnvrtc.so.13 is about 105 MB) is most of
//! what a cache hit costs in a fresh process.
//!
//! [`locate`] is the search itself (`dl::locate`), which does the system loader's part too
//! (src/cuda/ldso.rs) rather than leaving it to `dlopen`: what it names is what `dl::open`
//! tries first, with the same checks, and nothing is loaded to find it.
//!
//! A [`Toolchain`] names a file by its canonical path and (device, inode, size, mtime in ns):
//! any upgrade or replacement of NVRTC changes it. The compiler stores an entry under a
//! toolchain only after checking that the NVRTC it loaded is that very file, so a key never
//! names an NVRTC that did not make the code.

use crate::cuda::dl::{self, Component};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One NVRTC file, identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The file, canonical (symlinks resolved).
    pub path: PathBuf,
    /// (device, inode, size, mtime in nanoseconds) of that file.
    pub stamp: [i64; 4],
    /// `-I` options for the CUDA and CCCL headers beside it (`dl::header_dirs_beside`).
    pub include_options: Vec<String>,
}

impl Toolchain {
    /// The toolchain of the library file at `path` (followed to its canonical path); None if it
    /// cannot be resolved or is not a regular file.
    pub fn of_file(path: &Path) -> Option<Toolchain> {
        let real = std::fs::canonicalize(path).ok()?;
        let stamp = file_stamp(&real)?;
        let include_options = dl::header_dirs_beside(&real).into_iter().map(|d| format!("-I{}", d.display())).collect();
        Some(Toolchain { path: real, stamp, include_options })
    }

    /// The bytes that name this toolchain in a cache key.
    pub fn identity(&self) -> Vec<u8> {
        let p = self.path.as_os_str().as_bytes();
        let mut v = Vec::with_capacity(p.len() + 40);
        v.extend_from_slice(&(p.len() as u64).to_le_bytes());
        v.extend_from_slice(p);
        for x in self.stamp {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    /// Whether the library the loader mapped from `loaded` (its `Lib::path`) is this file,
    /// unchanged since it was identified.
    pub fn is_file(&self, loaded: Option<&Path>) -> bool {
        loaded.and_then(|p| std::fs::canonicalize(p).ok()).is_some_and(|p| p == self.path)
            && file_stamp(&self.path) == Some(self.stamp)
    }
}

fn file_stamp(p: &Path) -> Option<[i64; 4]> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    if !m.is_file() {
        return None;
    }
    let mtime_ns = m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec());
    Some([m.dev() as i64, m.ino() as i64, m.size() as i64, mtime_ns])
}

/// The NVRTC the library search would open, located once per process (like the loaded NVRTC,
/// which a process also opens once): None when it cannot be told without loading it.
pub fn located_nvrtc() -> Option<&'static Toolchain> {
    static L: OnceLock<Option<Toolchain>> = OnceLock::new();
    crate::fork::once(&L, || locate(Component::Nvrtc).and_then(|p| Toolchain::of_file(&p))).as_ref()
}

/// The file `dl::open(c, ..)` (src/cuda/dl.rs) would open first, found without opening
/// anything: the search itself, asked not to open (`dl::locate`). None when nothing would be
/// found, or the soname's library is loaded from a path the loader does not name.
pub fn locate(c: Component) -> Option<PathBuf> {
    dl::locate(c)
}
