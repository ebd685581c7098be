//! Which NVRTC the library search would open, found without opening it, so that a compile the
//! cache answers never loads NVRTC: its `dlopen` (libnvrtc.so.13 is about 105 MB) is most of
//! what a cache hit costs in a fresh process.
//!
//! [`locate`] walks `dl::candidates` in the order `dl::open` tries them, with the same checks
//! (an explicit path must be absolute; a path must exist and pass `dl::untrusted_reason`). For
//! a bare soname — the system loader's turn — it finds what the loader would pick, without
//! loading it: a library of that soname already loaded (asked with `RTLD_NOLOAD`, which loads
//! nothing), else `LD_LIBRARY_PATH` (ignored in a secure process, as the loader does), else
//! `/etc/ld.so.cache`, else nothing. Whatever it cannot predict with certainty — the soname
//! present in a folder named by a loaded object's `DT_RPATH`/`DT_RUNPATH`, a `glibc-hwcaps` or
//! legacy hardware-capability subfolder, several ld.so.cache entries naming different files, a
//! file in a default folder but not in the cache, an unreadable cache — makes it give up, and
//! the compiler then loads NVRTC and keys on the library actually loaded, as before.
//!
//! A [`Toolchain`] names a file by its canonical path and (device, inode, size, mtime in ns):
//! any upgrade or replacement of NVRTC changes it. The compiler stores an entry under a
//! toolchain only after checking that the NVRTC it loaded is that very file, so a key never
//! names an NVRTC that did not make the code.

use crate::cuda::dl::{self, Component};
use std::ffi::{c_void, CStr, CString};
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
    L.get_or_init(|| locate(Component::Nvrtc).and_then(|p| Toolchain::of_file(&p))).as_ref()
}

/// The file `dl::open(c, ..)` (src/cuda/dl.rs) would open first, found without opening anything: the first
/// candidate that exists and passes the search's checks. None when that cannot be told (see
/// the module comment), or when nothing would be found.
pub fn locate(c: Component) -> Option<PathBuf> {
    if let Some(e) = dl::setting(c.env_var()) {
        if !Path::new(&e).is_absolute() {
            return None; // `dl::open` refuses it, with its message
        }
    }
    for cand in dl::candidates(c) {
        if !cand.contains('/') {
            match resolve_soname(&cand) {
                Found::At(p) => return Some(p),
                Found::Nowhere => continue,
                Found::CannotTell => return None,
            }
        }
        let p = Path::new(&cand);
        if !p.exists() || dl::untrusted_reason(p).is_some() {
            continue;
        }
        return Some(p.to_path_buf());
    }
    None
}

/// What the system loader would do with a bare soname.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The loader would open this file.
    At(PathBuf),
    /// The loader would find nothing by that name (the search moves on).
    Nowhere,
    /// The loader's choice cannot be predicted for certain (NVRTC is then loaded).
    CannotTell,
}

/// Subfolders the loader may prefer to a search folder, by the CPU's capabilities: glibc-hwcaps
/// (glibc 2.33+) and the legacy platform/hwcap names (before 2.37). A soname in any of them
/// cannot be predicted.
const HWCAP_SUBDIRS: &[&str] = &[
    "glibc-hwcaps/x86-64-v4",
    "glibc-hwcaps/x86-64-v3",
    "glibc-hwcaps/x86-64-v2",
    "tls",
    "x86_64",
    "haswell",
    "xeon_phi",
    "avx512_1",
    "tls/x86_64",
    "tls/haswell",
];

/// Folders the loader searches when the cache does not name the soname (the distributions'
/// choices differ: any of them holding it makes the answer uncertain).
const DEFAULT_DIRS: &[&str] =
    &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// `DEFAULT_DIRS` that exist, each folder once (`/lib` is `/usr/lib` on merged-/usr systems).
fn default_dirs() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in DEFAULT_DIRS {
        if let Ok(m) = std::fs::metadata(d) {
            if m.is_dir() && !seen.contains(&(m.dev(), m.ino())) {
                seen.push((m.dev(), m.ino()));
                out.push(PathBuf::from(d));
            }
        }
    }
    out
}

fn present(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// The capability subfolders (`HWCAP_SUBDIRS`) that exist in `d`, remembered for the process
/// (the location they serve is made once per process): a missing `glibc-hwcaps` or `tls`
/// answers for everything below it, so a folder costs a few `stat`s, not one per subfolder
/// and name.
fn capability_subdirs(d: &Path) -> Vec<PathBuf> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static MEMO: Mutex<Option<HashMap<PathBuf, Vec<PathBuf>>>> = Mutex::new(None);
    if let Some(v) = MEMO.lock().ok().and_then(|m| m.as_ref().and_then(|m| m.get(d).cloned())) {
        return v;
    }
    let is_dir = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_dir());
    let mut found = Vec::new();
    let mut tops: Vec<&str> = Vec::new();
    for s in HWCAP_SUBDIRS {
        let top = s.split('/').next().unwrap_or(s);
        if !tops.contains(&top) {
            tops.push(top);
        }
    }
    for top in tops {
        if !is_dir(&d.join(top)) {
            continue;
        }
        for s in HWCAP_SUBDIRS.iter().filter(|s| s.split('/').next() == Some(top)) {
            let p = d.join(s);
            if *s == top || is_dir(&p) {
                found.push(p);
            }
        }
    }
    if let Ok(mut m) = MEMO.lock() {
        m.get_or_insert_with(HashMap::new).insert(d.to_path_buf(), found.clone());
    }
    found
}

/// The soname in folder `d`: At when the loader would take `d/name`, CannotTell when a
/// capability subfolder holds it, Nowhere when `d` does not.
fn in_folder(d: &Path, name: &str) -> Found {
    if capability_subdirs(d).iter().any(|s| s.join(name).exists()) {
        return Found::CannotTell;
    }
    let p = d.join(name);
    if present(&p) {
        Found::At(p)
    } else {
        Found::Nowhere
    }
}

/// What `dlopen(name)` would open, predicted without opening anything.
pub fn resolve_soname(name: &str) -> Found {
    if let Some(r) = already_loaded(name) {
        return r;
    }
    // RPATH (searched before LD_LIBRARY_PATH) and RUNPATH (after it) of the loaded objects: a
    // superset of those that apply to this call. The soname in any of them: cannot tell.
    match run_path_dirs() {
        None => return Found::CannotTell,
        Some(dirs) => {
            if dirs.iter().any(|d| !matches!(in_folder(d, name), Found::Nowhere)) {
                return Found::CannotTell;
            }
        }
    }
    if !dl::secure_process() {
        if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
            let cwd = std::env::current_dir().ok();
            // glibc splits at ':' and ';'; an empty element is the working directory.
            for part in v.as_bytes().split(|&b| b == b':' || b == b';') {
                let part = Path::new(std::ffi::OsStr::from_bytes(part));
                let d = if part.is_absolute() {
                    part.to_path_buf()
                } else {
                    match &cwd {
                        Some(c) => c.join(part),
                        None => return Found::CannotTell,
                    }
                };
                match in_folder(&d, name) {
                    Found::Nowhere => {}
                    other => return other,
                }
            }
        }
    }
    let cache = match read_bounded(Path::new("/etc/ld.so.cache"), 64 << 20) {
        Ok(Some(b)) => ld_so_cache_lookup(&b, name),
        Ok(None) => CacheLookup::Absent, // no cache file: the loader skips it too
        Err(()) => return Found::CannotTell,
    };
    match cache {
        CacheLookup::At(p) => {
            let p = PathBuf::from(std::ffi::OsStr::from_bytes(&p));
            if present(&p) {
                return Found::At(p);
            }
        }
        CacheLookup::Absent => {}
        CacheLookup::Conflict | CacheLookup::Malformed => return Found::CannotTell,
    }
    if default_dirs().iter().any(|d| !matches!(in_folder(d, name), Found::Nowhere)) {
        return Found::CannotTell;
    }
    Found::Nowhere
}

/// The file's bytes, at most `max` of them (Err if larger or unreadable); Ok(None) if absent.
fn read_bounded(p: &Path, max: u64) -> Result<Option<Vec<u8>>, ()> {
    use std::io::Read;
    let f = match std::fs::File::open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    let mut v = Vec::new();
    f.take(max + 1).read_to_end(&mut v).map_err(|_| ())?;
    if v.len() as u64 > max {
        return Err(());
    }
    Ok(Some(v))
}

/// A library of soname `name` already in the process: `dlopen` returns it (RTLD_NOLOAD asks
/// without loading). None when there is none.
fn already_loaded(name: &str) -> Option<Found> {
    let c = CString::new(name).ok()?;
    // SAFETY: c is NUL-terminated; RTLD_NOLOAD never loads (no constructor runs).
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if h.is_null() {
        // SAFETY: clears this thread's dlerror state; the string is not kept.
        unsafe { libc::dlerror() };
        return None;
    }
    let mut map: *mut c_void = std::ptr::null_mut();
    // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map *` into `map` for a live handle.
    let rc = unsafe { libc::dlinfo(h, libc::RTLD_DI_LINKMAP, &mut map as *mut _ as *mut c_void) };
    let path = if rc == 0 && !map.is_null() {
        // SAFETY: glibc's link_map starts with l_addr (usize) then l_name (char *).
        let name = unsafe { *(map as *const usize).add(1) as *const libc::c_char };
        // SAFETY: l_name is NUL-terminated and owned by the loader (copied before dlclose).
        (!name.is_null())
            .then(|| PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(name) }.to_bytes())))
    } else {
        None
    };
    // SAFETY: drops the reference RTLD_NOLOAD added; the library stays loaded by its owner.
    unsafe { libc::dlclose(h) };
    Some(match path {
        Some(p) if p.is_absolute() => Found::At(p),
        _ => Found::CannotTell,
    })
}

/// What ld.so.cache says of a soname.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheLookup {
    /// Every matching entry names this file.
    At(Vec<u8>),
    /// No entry for it.
    Absent,
    /// Entries for it name different files (by hardware capability): cannot tell.
    Conflict,
    /// Not a cache this parser understands.
    Malformed,
}

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// The x86-64 libc6 entries: FLAG_ELF_LIBC6 | FLAG_X8664_LIB64.
const FLAGS_X86_64: i32 = 0x0303;

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn cstr_at(b: &[u8], at: usize) -> Option<&[u8]> {
    let rest = b.get(at..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(&rest[..end])
}

/// Look `name` up in the bytes of an ld.so.cache (glibc's "new" format, alone or after the
/// old one; little-endian): the x86-64 entries whose key is `name`. Never panics; anything
/// out of bounds or unexpected is Malformed.
pub fn ld_so_cache_lookup(b: &[u8], name: &str) -> CacheLookup {
    match lookup_inner(b, name.as_bytes()) {
        Some(r) => r,
        None => CacheLookup::Malformed,
    }
}

fn lookup_inner(b: &[u8], name: &[u8]) -> Option<CacheLookup> {
    let mut start = 0usize;
    if b.starts_with(OLD_MAGIC) {
        // struct cache_file: magic (11 bytes, padded to 12), nlibs, then 12-byte entries; the
        // new format follows, aligned to 8.
        let nlibs = u32_at(b, 12)? as usize;
        let end = nlibs.checked_mul(12)?.checked_add(16)?;
        start = end.checked_add(7)? & !7;
    }
    let hdr = b.get(start..)?;
    if !hdr.starts_with(NEW_MAGIC) {
        return None;
    }
    // struct cache_file_new: magic+version (20), nlibs, len_strings, flags (u8), padding (3),
    // extension_offset, unused[3]: 48 bytes; then 24-byte entries (flags i32, key u32, value
    // u32, osversion u32, hwcap u64). String offsets count from the new header.
    let nlibs = u32_at(hdr, 20)? as usize;
    let endian = *hdr.get(28)?;
    // 0: unknown (older ldconfig, native order), 2: little endian; 3 would be big endian.
    if endian != 0 && endian != 2 {
        return None;
    }
    let entries_end = nlibs.checked_mul(24)?.checked_add(48)?;
    if entries_end > hdr.len() {
        return None;
    }
    let mut found: Option<&[u8]> = None;
    for i in 0..nlibs {
        let e = 48 + i * 24;
        let flags = u32_at(hdr, e)? as i32;
        if flags != FLAGS_X86_64 {
            continue;
        }
        let key = cstr_at(hdr, u32_at(hdr, e + 4)? as usize)?;
        if key != name {
            continue;
        }
        let value = cstr_at(hdr, u32_at(hdr, e + 8)? as usize)?;
        if value.is_empty() || value[0] != b'/' {
            return None;
        }
        match found {
            None => found = Some(value),
            Some(v) if v == value => {}
            Some(_) => return Some(CacheLookup::Conflict),
        }
    }
    Some(match found {
        Some(v) => CacheLookup::At(v.to_vec()),
        None => CacheLookup::Absent,
    })
}

/// Every folder a `dlopen` by soname from cudyn may search through a dynamic section: the
/// DT_RUNPATH of the object holding cudyn's code (the caller: libcudyn.so, or the program it is
/// linked into) — a DT_RUNPATH applies only to its own object's lookups — and the DT_RPATH of
/// every loaded object (a superset of the caller's and its loaders' chain, which glibc searches
/// when the caller has no DT_RUNPATH). `$ORIGIN` is expanded and `$LIB` taken both ways; None
/// when one cannot be read or names `$PLATFORM`.
fn run_path_dirs() -> Option<Vec<PathBuf>> {
    struct State {
        dirs: Vec<PathBuf>,
        failed: bool,
        /// An address inside cudyn's own code: the object whose segments hold it is the caller.
        me: usize,
    }
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const DT_NULL: i64 = 0;
    const DT_STRTAB: i64 = 5;
    const DT_STRSZ: i64 = 10;
    const DT_RPATH: i64 = 15;
    const DT_RUNPATH: i64 = 29;

    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our State for the call's duration.
        let (info, st) = unsafe { (&*info, &mut *(data as *mut State)) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers of a loaded object.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        // Readable file-backed ranges of the object, to bound every read below.
        let loads: Vec<(usize, usize)> = phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .filter_map(|p| {
                let lo = base.checked_add(p.p_vaddr as usize)?;
                Some((lo, lo.checked_add(p.p_filesz as usize)?))
            })
            .collect();
        let mapped: Vec<(usize, usize)> = phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .filter_map(|p| {
                let lo = base.checked_add(p.p_vaddr as usize)?;
                Some((lo, lo.checked_add(p.p_memsz as usize)?))
            })
            .collect();
        let within = |r: &[(usize, usize)], a: usize, len: usize| {
            r.iter().any(|&(lo, hi)| a >= lo && a.checked_add(len).is_some_and(|e| e <= hi))
        };
        let inside = |a: usize, len: usize| within(&loads, a, len);
        let is_caller = within(&mapped, st.me, 1);
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else { return 0 };
        let Some(dyn_at) = base.checked_add(dynamic.p_vaddr as usize) else {
            st.failed = true;
            return 0;
        };
        let count = (dynamic.p_memsz as usize / 16).min(1 << 16);
        let (mut strtab, mut strsz, mut offsets) = (None, None, Vec::new());
        for i in 0..count {
            let at = dyn_at.wrapping_add(i * 16);
            if !within(&mapped, at, 16) {
                st.failed = true;
                return 0;
            }
            // SAFETY: inside one of the object's PT_LOAD segments, mapped while it is loaded.
            let (tag, val) =
                unsafe { ((at as *const i64).read_unaligned(), ((at + 8) as *const u64).read_unaligned()) };
            match tag {
                DT_NULL => break,
                DT_STRTAB => strtab = Some(val as usize),
                DT_STRSZ => strsz = Some(val as usize),
                DT_RPATH => offsets.push(val as usize),
                DT_RUNPATH if is_caller => offsets.push(val as usize),
                _ => {}
            }
        }
        if offsets.is_empty() {
            return 0;
        }
        let (Some(tab), Some(size)) = (strtab, strsz) else {
            st.failed = true;
            return 0;
        };
        // The loader relocates the dynamic section's addresses in place on most systems; not
        // everywhere (read-only dynamic sections, the vDSO): take whichever lies in the object.
        let tab = if inside(tab, size) {
            tab
        } else if base.checked_add(tab).is_some_and(|t| inside(t, size)) {
            base + tab
        } else {
            st.failed = true;
            return 0;
        };
        // SAFETY: [tab, tab+size) lies in a file-backed PT_LOAD segment of a loaded object.
        let strings = unsafe { std::slice::from_raw_parts(tab as *const u8, size) };
        let origin = if info.dlpi_name.is_null() {
            None
        } else {
            // SAFETY: dlpi_name is NUL-terminated.
            let n = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
            if n.is_empty() {
                std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf))
            } else {
                Path::new(std::ffi::OsStr::from_bytes(n)).parent().map(Path::to_path_buf)
            }
        };
        for off in offsets {
            let Some(s) = cstr_at(strings, off) else {
                st.failed = true;
                return 0;
            };
            for part in s.split(|&b| b == b':') {
                match expand(part, origin.as_deref()) {
                    Some(ds) => st.dirs.extend(ds),
                    None => st.failed = true,
                }
            }
        }
        0
    }

    let mut st = State { dirs: Vec::new(), failed: false, me: run_path_dirs as fn() -> Option<Vec<PathBuf>> as usize };
    // SAFETY: `each` only reads the loader's data for the call and writes into `st`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut st as *mut State as *mut c_void) };
    (!st.failed).then_some(st.dirs)
}

/// One RPATH/RUNPATH element as folders: `$ORIGIN` is the object's folder, `$LIB` both `lib`
/// and `lib64`; `$PLATFORM` (or `$ORIGIN` with no folder known): None. Relative elements are
/// relative to the working directory, as the loader takes them.
fn expand(part: &[u8], origin: Option<&Path>) -> Option<Vec<PathBuf>> {
    let s = std::str::from_utf8(part).ok()?;
    if s.contains("PLATFORM") {
        return None;
    }
    let mut outs = vec![s.to_string()];
    for tok in ["${ORIGIN}", "$ORIGIN"] {
        if s.contains(tok) {
            let o = origin?.to_str()?.to_string();
            outs = outs.iter().map(|x| x.replace(tok, &o)).collect();
        }
    }
    for tok in ["${LIB}", "$LIB"] {
        if outs.iter().any(|x| x.contains(tok)) {
            outs =
                outs.iter().flat_map(|x| ["lib", "lib64", "lib/x86_64-linux-gnu"].map(|l| x.replace(tok, l))).collect();
        }
    }
    if outs.iter().any(|x| x.contains('$')) {
        return None;
    }
    let cwd = std::env::current_dir().ok();
    outs.into_iter()
        .map(|x| {
            let p = PathBuf::from(x);
            if p.is_absolute() {
                Some(p)
            } else {
                cwd.as_ref().map(|c| c.join(p))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new-format cache (optionally behind an old-format one) with the given entries.
    fn cache(entries: &[(i32, &str, &str)], old_prefix: bool) -> Vec<u8> {
        let mut strings = Vec::new();
        let str_base = 48 + entries.len() * 24;
        let mut recs = Vec::new();
        for (flags, k, v) in entries {
            let ko = str_base + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = str_base + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            recs.push((*flags, ko as u32, vo as u32));
        }
        let mut n = Vec::new();
        n.extend_from_slice(NEW_MAGIC);
        n.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        n.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        n.push(2);
        n.extend_from_slice(&[0; 3]);
        n.extend_from_slice(&[0; 16]);
        for (f, k, v) in recs {
            n.extend_from_slice(&f.to_le_bytes());
            n.extend_from_slice(&k.to_le_bytes());
            n.extend_from_slice(&v.to_le_bytes());
            n.extend_from_slice(&[0; 12]);
        }
        n.extend_from_slice(&strings);
        if !old_prefix {
            return n;
        }
        let mut o = Vec::new();
        o.extend_from_slice(OLD_MAGIC);
        o.push(0);
        o.extend_from_slice(&1u32.to_le_bytes());
        o.extend_from_slice(&[0; 12]);
        while o.len() % 8 != 0 {
            o.push(0);
        }
        o.extend_from_slice(&n);
        o
    }

    #[test]
    fn finds_the_x86_64_entry() {
        let c = cache(
            &[
                (0x0003, "libnvrtc.so.13", "/lib32/libnvrtc.so.13"),
                (FLAGS_X86_64, "libm.so.6", "/lib/libm.so.6"),
                (FLAGS_X86_64, "libnvrtc.so.13", "/opt/cuda/lib64/libnvrtc.so.13"),
            ],
            false,
        );
        assert_eq!(
            ld_so_cache_lookup(&c, "libnvrtc.so.13"),
            CacheLookup::At(b"/opt/cuda/lib64/libnvrtc.so.13".to_vec())
        );
        assert_eq!(ld_so_cache_lookup(&c, "libnvrtc.so.12"), CacheLookup::Absent);
        assert_eq!(ld_so_cache_lookup(&c, "libm.so.6"), CacheLookup::At(b"/lib/libm.so.6".to_vec()));
        let old = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "/x/libnvrtc.so.13")], true);
        assert_eq!(ld_so_cache_lookup(&old, "libnvrtc.so.13"), CacheLookup::At(b"/x/libnvrtc.so.13".to_vec()));
    }

    #[test]
    fn entries_naming_different_files_cannot_be_told_apart() {
        let c = cache(
            &[
                (FLAGS_X86_64, "libnvrtc.so.13", "/a/libnvrtc.so.13"),
                (FLAGS_X86_64, "libnvrtc.so.13", "/b/libnvrtc.so.13"),
            ],
            false,
        );
        assert_eq!(ld_so_cache_lookup(&c, "libnvrtc.so.13"), CacheLookup::Conflict);
        let same = cache(
            &[
                (FLAGS_X86_64, "libnvrtc.so.13", "/a/libnvrtc.so.13"),
                (FLAGS_X86_64, "libnvrtc.so.13", "/a/libnvrtc.so.13"),
            ],
            false,
        );
        assert_eq!(ld_so_cache_lookup(&same, "libnvrtc.so.13"), CacheLookup::At(b"/a/libnvrtc.so.13".to_vec()));
        let relative = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "libnvrtc.so.13")], false);
        assert_eq!(ld_so_cache_lookup(&relative, "libnvrtc.so.13"), CacheLookup::Malformed);
    }

    #[test]
    fn truncated_and_garbage_caches_are_malformed_never_a_panic() {
        let c = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "/opt/cuda/lib64/libnvrtc.so.13")], true);
        for cut in 0..c.len() {
            let r = ld_so_cache_lookup(&c[..cut], "libnvrtc.so.13");
            assert!(matches!(r, CacheLookup::Malformed), "cut at {cut}: {r:?}");
        }
        assert_eq!(ld_so_cache_lookup(b"", "x"), CacheLookup::Malformed);
        assert_eq!(ld_so_cache_lookup(&[0xff; 4096], "x"), CacheLookup::Malformed);
        // Counts and offsets pointing anywhere.
        let mut rng = 0x9e3779b97f4a7c15u64;
        for _ in 0..2000 {
            let mut m = c.clone();
            for _ in 0..4 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let at = (rng as usize) % m.len();
                m[at] = (rng >> 32) as u8;
            }
            let _ = ld_so_cache_lookup(&m, "libnvrtc.so.13");
        }
        let mut huge = cache(&[], false);
        huge[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(ld_so_cache_lookup(&huge, "x"), CacheLookup::Malformed);
        let mut big_endian = cache(&[], false);
        big_endian[28] = 3;
        assert_eq!(ld_so_cache_lookup(&big_endian, "x"), CacheLookup::Malformed);
    }

    #[test]
    fn this_systems_cache_parses() {
        if let Ok(Some(b)) = read_bounded(Path::new("/etc/ld.so.cache"), 64 << 20) {
            // libc itself is always in the cache of a glibc system that has one.
            match ld_so_cache_lookup(&b, "libc.so.6") {
                CacheLookup::At(p) => assert!(present(Path::new(std::ffi::OsStr::from_bytes(&p))), "{p:?}"),
                other => panic!("libc.so.6 in /etc/ld.so.cache: {other:?}"),
            }
        }
    }

    #[test]
    fn already_loaded_libraries_are_found_as_the_loader_would() {
        // libc is loaded in every process: the loader's answer is the mapped file.
        match resolve_soname("libc.so.6") {
            Found::At(p) => assert!(p.is_absolute() && present(&p), "{p:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(resolve_soname("libcudyn-no-such-library.so.7"), Found::Nowhere);
    }

    /// Another object's DT_RUNPATH does not apply to cudyn's dlopen (only the caller's does),
    /// while any object's DT_RPATH may (the loader chain): a library built with each, loaded
    /// into this process, shows in run_path_dirs exactly so.
    #[test]
    fn only_the_callers_runpath_and_any_rpath_count() {
        let dir = std::env::temp_dir().join(format!("cudyn-rpath-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("x.c");
        std::fs::write(&src, "int cudyn_rpath_probe(void) { return 1; }\n").unwrap();
        let mut libs = Vec::new();
        for (name, tags, folder) in [
            ("runpath", "--enable-new-dtags", "/cudyn-test/runpath-only"),
            ("rpath", "--disable-new-dtags", "/cudyn-test/rpath-only"),
        ] {
            let so = dir.join(format!("lib{name}.so"));
            let st = std::process::Command::new("cc")
                .args(["-shared", "-fPIC", "-o"])
                .arg(&so)
                .arg(&src)
                .arg(format!("-Wl,{tags},-rpath,{folder}"))
                .status()
                .expect("cc (the test builds two small shared libraries)");
            assert!(st.success());
            let c = std::ffi::CString::new(so.as_os_str().as_bytes()).unwrap();
            // SAFETY: a library built just above, with no constructors.
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            assert!(!h.is_null(), "dlopen {so:?}");
            libs.push(h);
        }
        let dirs = run_path_dirs().expect("readable");
        assert!(!dirs.contains(&PathBuf::from("/cudyn-test/runpath-only")), "{dirs:?}");
        assert!(dirs.contains(&PathBuf::from("/cudyn-test/rpath-only")), "{dirs:?}");
        for h in libs {
            // SAFETY: handles from dlopen above; nothing of them is kept.
            unsafe { libc::dlclose(h) };
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn build_ids_are_read_from_elf_notes() {
        // The test binary itself: linked with a build ID by default on Linux toolchains; the
        // answer must be what readelf would print, and garbage must never be read as one.
        let exe = std::env::current_exe().unwrap();
        let f = std::fs::File::open(&exe).unwrap();
        if let Some(id) = elf_build_id(&f) {
            assert!((8..=64).contains(&id.len()), "{id:?}");
        }
        let td = std::env::temp_dir().join(format!("cudyn-buildid-{}", std::process::id()));
        std::fs::write(&td, [0x7f, b'E', b'L', b'F', 2, 1, 1, 0].repeat(40)).unwrap();
        assert_eq!(elf_build_id(&std::fs::File::open(&td).unwrap()), None);
        let _ = std::fs::remove_file(&td);
    }

    #[test]
    fn origin_and_lib_expand() {
        let o = Path::new("/opt/app/bin");
        assert_eq!(expand(b"$ORIGIN/../lib", Some(o)), Some(vec![PathBuf::from("/opt/app/bin/../lib")]));
        assert_eq!(expand(b"${ORIGIN}", Some(o)), Some(vec![PathBuf::from("/opt/app/bin")]));
        assert_eq!(expand(b"/x/$LIB", None).map(|v| v.len()), Some(3));
        assert_eq!(expand(b"/x/$PLATFORM", None), None);
        assert_eq!(expand(b"$ORIGIN", None), None);
        assert!(run_path_dirs().is_some(), "the test binary's objects must be readable");
    }
}
