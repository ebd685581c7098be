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
    /// The folders of `include_options`.
    pub include_dirs: Vec<PathBuf>,
    /// The file's GNU build ID (`.note.gnu.build-id`), if it has one: the same on every machine
    /// that has this build of NVRTC.
    pub build_id: Option<Vec<u8>>,
}

impl Toolchain {
    /// The toolchain of the library file at `path` (followed to its canonical path); None if it
    /// cannot be resolved or is not a regular file.
    pub fn of_file(path: &Path) -> Option<Toolchain> {
        let real = std::fs::canonicalize(path).ok()?;
        let stamp = file_stamp(&real)?;
        let include_dirs = dl::header_dirs_beside(&real);
        let include_options = include_dirs.iter().map(|d| format!("-I{}", d.display())).collect();
        let build_id = std::fs::File::open(&real).ok().and_then(|f| elf_build_id(&f));
        Some(Toolchain { path: real, stamp, include_options, include_dirs, build_id })
    }

    /// The bytes that name this NVRTC in a cache key, wherever it is installed: its build ID
    /// and size (a file without a build ID is named by `identity`, which holds only here).
    pub fn portable_identity(&self) -> Vec<u8> {
        match &self.build_id {
            Some(id) => {
                let mut v = b"gnu-build-id:".to_vec();
                v.extend_from_slice(id);
                v.extend_from_slice(&self.stamp[2].to_le_bytes());
                v
            }
            None => self.identity(),
        }
    }

    /// The bytes that name this file here (path, device, inode, size, mtime): what a manifest,
    /// which records paths and stamps of this machine, is filed under.
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

/// The GNU build ID of the ELF file `f` (x86-64 and aarch64: 64-bit little endian), read from
/// its PT_NOTE segments with bounded reads; None if it has none or is not such a file.
pub fn elf_build_id(f: &std::fs::File) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let read = |at: u64, n: usize| -> Option<Vec<u8>> {
        let mut v = vec![0u8; n];
        f.read_exact_at(&mut v, at).ok()?;
        Some(v)
    };
    let u16_at = |b: &[u8], at: usize| Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], at: usize| Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?));
    let eh = read(0, 64)?;
    if eh[..4] != *b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(&eh, 0x20)?, u16_at(&eh, 0x36)? as usize, u16_at(&eh, 0x38)? as usize);
    if phentsize < 56 || phnum > 512 {
        return None;
    }
    let ph = read(phoff, phentsize * phnum)?;
    for i in 0..phnum {
        let p = &ph[i * phentsize..];
        if u32_at(p, 0)? != 4 {
            continue; // not PT_NOTE
        }
        let (off, size) = (u64_at(p, 0x08)?, u64_at(p, 0x20)?);
        if size > 1 << 16 {
            continue;
        }
        let notes = read(off, size as usize)?;
        let mut at = 0usize;
        while at + 12 <= notes.len() {
            let (namesz, descsz, kind) =
                (u32_at(&notes, at)? as usize, u32_at(&notes, at + 4)? as usize, u32_at(&notes, at + 8)?);
            let name_at = at + 12;
            let desc_at = name_at.checked_add(namesz.checked_add(3)? & !3)?;
            let next = desc_at.checked_add(descsz.checked_add(3)? & !3)?;
            if next > notes.len() {
                break;
            }
            // NT_GNU_BUILD_ID, owner "GNU".
            if kind == 3 && notes.get(name_at..name_at + namesz)? == b"GNU\0" && (1..=64).contains(&descsz) {
                return Some(notes[desc_at..desc_at + descsz].to_vec());
            }
            at = next;
        }
    }
    None
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
