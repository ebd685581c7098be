//! The system loader's search for a library by bare name, done by cudyn so that each file it
//! would open can be checked first (`trust`): the folders and their order, from the dynamic
//! sections of the objects involved, `LD_LIBRARY_PATH` and `/etc/ld.so.cache`; and the names
//! a library file needs (`DT_NEEDED`), read from the file itself.
//!
//! The order is glibc's (elf/dl-load.c): a library of that name already loaded; the
//! requesting object's `DT_RPATH` unless it has a `DT_RUNPATH`, then its loaders' and the
//! program's `DT_RPATH`; `LD_LIBRARY_PATH` (not in a secure process); the requester's
//! `DT_RUNPATH`; `/etc/ld.so.cache`; the default folders. Where cudyn departs from it, it
//! only ever looks in fewer places: an empty or relative entry (the loader's working
//! directory) is skipped, and so named; a `glibc-hwcaps` variant is never preferred to the
//! folder's own file; of the loader chain only the requester and the program count.

use super::trust;
use std::ffi::{c_void, CStr, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What a loader-search step contributes: a folder to look in, or (ld.so.cache) a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Place {
    Folder(PathBuf),
    File(PathBuf),
}

impl Place {
    /// The file this place offers for `name`.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        match self {
            Place::Folder(d) => d.join(name),
            Place::File(f) => f.clone(),
        }
    }
}

/// The search paths of one object: its `DT_RPATH` and `DT_RUNPATH` elements (unexpanded) and
/// the folder `$ORIGIN` stands for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Paths {
    /// Named in messages.
    pub what: String,
    pub rpath: Vec<Vec<u8>>,
    pub runpath: Option<Vec<Vec<u8>>>,
    pub origin: Option<PathBuf>,
    pub nodeflib: bool,
}

/// The dynamic section of a library file, as far as loading it depends on it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dynamic {
    pub needed: Vec<OsString>,
    /// Its DT_SONAME: the name the loader matches a later request against.
    pub soname: Option<OsString>,
    pub paths: Paths,
}

/// Folders the loader searches last (its compiled-in list differs between distributions:
/// Debian's multiarch folders, then Fedora's lib64, then the plain ones).
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const DEFAULT_DIRS: &[&str] =
    &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"];
#[cfg(target_arch = "aarch64")]
pub(crate) const DEFAULT_DIRS: &[&str] =
    &["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"];
/// Debian's multiarch folder, one of the values of `$LIB`.
const MULTIARCH_LIB: &str =
    if cfg!(target_arch = "aarch64") { "lib/aarch64-linux-gnu" } else { "lib/x86_64-linux-gnu" };

/// The folders (and the ld.so.cache file) the loader would search for `name`, requested by
/// `chain[0]` (whose loaders follow it in `chain`, the program last), in order; and the entries
/// skipped because they mean the working directory.
pub(crate) fn places(name: &str, chain: &[&Paths], secure: bool) -> (Vec<Place>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let Some(req) = chain.first() else { return (out, skipped) };
    let mut add = |part: &[u8], origin: Option<&Path>, what: &str, out: &mut Vec<Place>| match expand(part, origin) {
        Ok(dirs) => out.extend(dirs.into_iter().map(Place::Folder)),
        Err(why) => skipped.push(format!("{what} entry '{}' ({why})", String::from_utf8_lossy(part))),
    };
    if req.runpath.is_none() {
        for o in chain {
            for part in &o.rpath {
                add(part, o.origin.as_deref(), &format!("the DT_RPATH of {}", o.what), &mut out);
            }
        }
    }
    if !secure {
        if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
            let program = chain.last().and_then(|p| p.origin.clone());
            for part in v.as_bytes().split(|&b| b == b':' || b == b';') {
                add(part, program.as_deref(), "an LD_LIBRARY_PATH", &mut out);
            }
        }
    }
    if let Some(rp) = &req.runpath {
        for part in rp {
            add(part, req.origin.as_deref(), &format!("the DT_RUNPATH of {}", req.what), &mut out);
        }
    }
    if !req.nodeflib {
        if let Some(f) = ld_so_cache_file(name) {
            out.push(Place::File(f));
        }
        out.extend(DEFAULT_DIRS.iter().map(|d| Place::Folder(PathBuf::from(d))));
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    (out, skipped)
}

/// Subfolders the loader may prefer to a search folder, by the CPU's capabilities: glibc-hwcaps
/// (glibc 2.33+) and the legacy platform/hwcap names (before 2.37).
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

/// A file the system loader itself might take for `name` requested by `chain[0]`, in its
/// order, the working directory included where an empty or relative entry names it, and
/// capability subfolders too: for a library CUDA opens by name itself, which cudyn cannot
/// steer. None when it would find nothing.
pub(crate) fn loader_would_find(name: &str, chain: &[&Paths], secure: bool) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let raw = |part: &[u8], origin: Option<&Path>| -> Vec<PathBuf> {
        match element(part, origin) {
            Element::Folders(d) => d,
            // The loader takes an empty element as the working directory, a relative one
            // (whatever bytes it holds, a `$` that is no token included) relative to it.
            Element::Relative(r) => cwd.iter().flat_map(|c| r.iter().map(move |p| c.join(p))).collect(),
            Element::Dropped(_) => Vec::new(),
        }
    };
    let req = chain.first()?;
    let mut folders = Vec::new();
    if req.runpath.is_none() {
        for o in chain {
            for part in &o.rpath {
                folders.extend(raw(part, o.origin.as_deref()));
            }
        }
    }
    if !secure {
        if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
            let program = chain.last().and_then(|p| p.origin.clone());
            for part in v.as_bytes().split(|&b| b == b':' || b == b';') {
                folders.extend(raw(part, program.as_deref()));
            }
        }
    }
    if let Some(rp) = &req.runpath {
        for part in rp {
            folders.extend(raw(part, req.origin.as_deref()));
        }
    }
    let present = |p: &Path| std::fs::metadata(p).is_ok();
    for d in &folders {
        for sub in HWCAP_SUBDIRS {
            let f = d.join(sub).join(name);
            if present(&f) {
                return Some(f);
            }
        }
        let f = d.join(name);
        if present(&f) {
            return Some(f);
        }
    }
    if !req.nodeflib {
        if let Some(f) = ld_so_cache_file(name) {
            if present(&f) {
                return Some(f);
            }
        }
        for d in DEFAULT_DIRS {
            for sub in HWCAP_SUBDIRS.iter().chain(&[""]) {
                let f = Path::new(d).join(sub).join(name);
                if present(&f) {
                    return Some(f);
                }
            }
        }
    }
    None
}

/// One RPATH/RUNPATH/LD_LIBRARY_PATH element, as the system loader reads it.
#[derive(Debug, PartialEq, Eq)]
enum Element {
    /// Absolute folders (`$LIB` makes several).
    Folders(Vec<PathBuf>),
    /// Folders relative to the working directory (an empty element is the working directory
    /// itself: one empty path).
    Relative(Vec<PathBuf>),
    /// An element the loader drops, and why.
    Dropped(&'static str),
}

/// The dynamic string token at the start of `s` (just past a `$`), as glibc's `is_dst` reads
/// one: `NAME` not followed by a letter, digit or `_`, or `{NAME}`; and the bytes it takes.
/// Anything else after a `$` is no token, and the `$` is an ordinary byte of the path.
fn dst_at(s: &[u8]) -> Option<(&'static [u8], usize)> {
    const NAMES: [&[u8]; 3] = [b"ORIGIN", b"PLATFORM", b"LIB"];
    for name in NAMES {
        if let Some(rest) = s.strip_prefix(b"{") {
            if rest.starts_with(name) && rest.get(name.len()) == Some(&b'}') {
                return Some((name, name.len() + 2));
            }
        } else if s.starts_with(name) && !s.get(name.len()).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_') {
            return Some((name, name.len()));
        }
    }
    None
}

/// One element, its tokens substituted as the loader does (bytes, not text: a path need not be
/// UTF-8): `$ORIGIN` is the object's folder, `$LIB` each of `lib`, `lib64`, `lib/<multiarch>`
/// (distributions differ), `$PLATFORM` the machine; `$` before anything else is itself
/// (`$LD_LIBRARY_PATH` left unexpanded by a service manager is a folder of that name, relative
/// to the working directory). An element with `$ORIGIN` and no folder known is dropped.
fn element(part: &[u8], origin: Option<&Path>) -> Element {
    let mut outs: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < part.len() {
        if part[i] == b'$' {
            if let Some((name, len)) = dst_at(&part[i + 1..]) {
                match name {
                    b"ORIGIN" => {
                        let Some(o) = origin else {
                            return Element::Dropped("$ORIGIN of an object whose folder is unknown");
                        };
                        outs.iter_mut().for_each(|x| x.extend_from_slice(o.as_os_str().as_bytes()));
                    }
                    b"PLATFORM" => outs.iter_mut().for_each(|x| x.extend_from_slice(std::env::consts::ARCH.as_bytes())),
                    _ => {
                        outs = outs
                            .iter()
                            .flat_map(|x| {
                                ["lib", "lib64", MULTIARCH_LIB].map(|l| [x.as_slice(), l.as_bytes()].concat())
                            })
                            .collect()
                    }
                }
                i += 1 + len;
                continue;
            }
        }
        outs.iter_mut().for_each(|x| x.push(part[i]));
        i += 1;
    }
    let paths: Vec<PathBuf> = outs.into_iter().map(|x| PathBuf::from(OsStr::from_bytes(&x))).collect();
    if paths.iter().all(|p| p.is_absolute()) {
        Element::Folders(paths)
    } else {
        Element::Relative(paths)
    }
}

/// One element as folders cudyn searches; Err (why it is skipped) for an element that means
/// the working directory (empty, or relative), or one the loader would drop.
fn expand(part: &[u8], origin: Option<&Path>) -> Result<Vec<PathBuf>, &'static str> {
    match element(part, origin) {
        Element::Folders(d) => Ok(d),
        Element::Relative(_) if part.is_empty() => {
            Err("empty: the working directory to the system loader; cudyn never searches it")
        }
        Element::Relative(_) => Err("relative: to the working directory, which cudyn never searches"),
        Element::Dropped(why) => Err(why),
    }
}

/// /etc/ld.so.cache, read once per process (as the loader maps it once); None if absent,
/// unreadable or over 64 MiB.
fn ld_so_cache() -> Option<&'static [u8]> {
    static C: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    crate::fork::once(&C, || {
        use std::io::Read;
        let f = std::fs::File::open("/etc/ld.so.cache").ok()?;
        let max = 64u64 << 20;
        let mut v = Vec::new();
        f.take(max + 1).read_to_end(&mut v).ok()?;
        (v.len() as u64 <= max).then_some(v)
    })
    .as_deref()
}

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// The x86-64 libc6 entries: FLAG_ELF_LIBC6 | FLAG_X8664_LIB64.
pub(crate) const FLAGS_X86_64: i32 = 0x0303;
/// The entries of this machine: x86-64's, or FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64.
const FLAGS_HOST: i32 = if cfg!(target_arch = "aarch64") { 0x0a03 } else { FLAGS_X86_64 };

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

fn cstr_at(b: &[u8], at: usize) -> Option<&[u8]> {
    let rest = b.get(at..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(&rest[..end])
}

/// The file an ld.so.cache (glibc's "new" format, alone or after the old one; little-endian)
/// names for `name` among the entries of this machine: the baseline entry (no hardware capability),
/// else the first. None when it names none, or when the bytes are not a cache this parser
/// understands (the loader then finds nothing there either). Never panics.
pub(crate) fn ld_so_cache_lookup(b: &[u8], name: &str) -> Option<Vec<u8>> {
    let name = name.as_bytes();
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
    let mut want = name.to_vec();
    want.push(0);
    let mut first: Option<&[u8]> = None;
    for e in hdr[48..entries_end].chunks_exact(24) {
        let word = |at: usize| u32::from_le_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
        if word(0) as i32 != FLAGS_HOST {
            continue;
        }
        // The key compared in place (name, then its NUL): no scan of every key for its end.
        let k = word(4) as usize;
        if hdr.get(k..k.checked_add(want.len())?) != Some(&want[..]) {
            continue;
        }
        let value = cstr_at(hdr, word(8) as usize)?;
        if value.first() != Some(&b'/') {
            return None;
        }
        if word(16) == 0 && word(20) == 0 {
            return Some(value.to_vec());
        }
        first.get_or_insert(value);
    }
    first.map(<[u8]>::to_vec)
}

/// What this system's ld.so.cache names for `name`.
fn ld_so_cache_file(name: &str) -> Option<PathBuf> {
    ld_so_cache().and_then(|c| ld_so_cache_lookup(c, name)).map(|v| PathBuf::from(OsStr::from_bytes(&v)))
}

/// The machine this build of cudyn runs on, as ELF names it.
const EM_HOST: u16 = if cfg!(target_arch = "aarch64") { 183 } else { 62 };

/// At most this many entries of a dynamic section, and this many names needed: far more than
/// any real library has; a file claiming more is refused rather than read.
const MAX_DYNAMIC: usize = 1 << 16;
const MAX_PHDRS: usize = 1024;
const MAX_NEEDED: usize = 1024;
const MAX_STRING: usize = 4096;

/// The dynamic section of the shared library open at `fd`: what it needs and where it looks.
/// Err (why it is no library this process can load) for anything but a 64-bit little-endian
/// ELF shared object of this machine, or a section out of bounds. Reads only what it names,
/// each read bounded.
pub(crate) fn read_dynamic(fd: &OwnedFd, what: &str, origin: Option<PathBuf>) -> Result<Dynamic, String> {
    let bad = |why: &str| Err(format!("not a shared library of this machine: {why}"));
    let io = |e: std::io::Error| format!("cannot read it: {}", crate::error::io_text(&e));
    let eh = trust::pread(fd, 0, 64).map_err(io)?;
    if eh.len() < 64 || &eh[..4] != b"\x7fELF" {
        return bad("no ELF header");
    }
    if eh[4] != 2 || eh[5] != 1 {
        return bad("not a 64-bit little-endian ELF file");
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    if u16_at(&eh, 16) != 3 {
        return bad("not a shared object (ET_DYN)");
    }
    if u16_at(&eh, 18) != EM_HOST {
        return bad("built for another machine");
    }
    let phoff = u64_at(&eh, 32).unwrap_or(0);
    let (phentsize, phnum) = (u16_at(&eh, 54) as usize, u16_at(&eh, 56) as usize);
    if phentsize != 56 || phnum > MAX_PHDRS {
        return bad("unexpected program headers");
    }
    let ph = trust::pread(fd, phoff, phnum * 56).map_err(io)?;
    if ph.len() != phnum * 56 {
        return bad("program headers beyond the end of the file");
    }
    // (offset, vaddr, filesz) of each PT_LOAD; the PT_DYNAMIC's (offset, filesz).
    let mut loads = Vec::new();
    let mut dynamic = None;
    for i in 0..phnum {
        let p = &ph[i * 56..(i + 1) * 56];
        let (ty, off, vaddr, filesz) = (u32_at(p, 0), u64_at(p, 8), u64_at(p, 16), u64_at(p, 32));
        let (Some(ty), Some(off), Some(vaddr), Some(filesz)) = (ty, off, vaddr, filesz) else { return bad("short") };
        match ty {
            1 => loads.push((off, vaddr, filesz)),
            2 => dynamic = Some((off, filesz)),
            _ => {}
        }
    }
    let mut out = Dynamic {
        needed: Vec::new(),
        soname: None,
        paths: Paths { what: what.to_string(), origin, ..Paths::default() },
    };
    let Some((doff, dsize)) = dynamic else { return Ok(out) };
    let count = usize::try_from(dsize / 16).unwrap_or(usize::MAX);
    if count > MAX_DYNAMIC {
        return bad("a dynamic section too large");
    }
    let d = trust::pread(fd, doff, count * 16).map_err(io)?;
    let (mut strtab, mut strsz, mut soname) = (None, None, None);
    let (mut needed, mut rpath, mut runpath) = (Vec::new(), Vec::new(), Vec::new());
    let mut has_runpath = false;
    for e in d.chunks_exact(16) {
        let (tag, val) = (u64_at(e, 0).unwrap_or(0) as i64, u64_at(e, 8).unwrap_or(0));
        match tag {
            0 => break,
            1 => needed.push(val),
            5 => strtab = Some(val),
            10 => strsz = Some(val),
            14 => soname = Some(val),
            15 => rpath.push(val),
            29 => {
                has_runpath = true;
                runpath.push(val)
            }
            0x6fff_fffb => out.paths.nodeflib = val & 0x800 != 0, // DT_FLAGS_1 & DF_1_NODEFLIB
            _ => {}
        }
    }
    if needed.is_empty() && rpath.is_empty() && runpath.is_empty() && soname.is_none() {
        return Ok(out);
    }
    let (Some(strtab), Some(strsz)) = (strtab, strsz) else { return bad("a dynamic section without strings") };
    // The string table's file offset, through the PT_LOAD that maps its address.
    let Some(str_off) = loads
        .iter()
        .find(|(_, v, n)| strtab >= *v && strtab - v < *n)
        .and_then(|(o, v, n)| (strsz <= n - (strtab - v)).then(|| o + (strtab - v)))
    else {
        return bad("its string table lies outside the file");
    };
    let string = |at: u64| -> Result<Vec<u8>, String> {
        if at >= strsz {
            return Err("not a shared library of this machine: a name outside its string table".into());
        }
        let len = (strsz - at).min(MAX_STRING as u64) as usize;
        let b = trust::pread(fd, str_off + at, len).map_err(io)?;
        match b.iter().position(|&c| c == 0) {
            Some(end) => Ok(b[..end].to_vec()),
            None => Err("not a shared library of this machine: an unterminated name".into()),
        }
    };
    if needed.len() > MAX_NEEDED {
        return bad("too many needed libraries");
    }
    for at in needed {
        out.needed.push(OsString::from(OsStr::from_bytes(&string(at)?)));
    }
    if let Some(at) = soname {
        out.soname = Some(OsString::from(OsStr::from_bytes(&string(at)?)));
    }
    let split = |v: Vec<u8>| v.split(|&c| c == b':').map(<[u8]>::to_vec).collect::<Vec<_>>();
    for at in rpath {
        out.paths.rpath.extend(split(string(at)?));
    }
    if has_runpath {
        let mut all = Vec::new();
        for at in runpath {
            all.extend(split(string(at)?));
        }
        out.paths.runpath = Some(all);
    }
    Ok(out)
}

/// What the loaded objects tell the search.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The search paths of the object holding cudyn's code: the caller of its `dlopen`
    /// (libcudyn.so, or the program it is linked into).
    pub caller: Paths,
    /// The program's.
    pub program: Paths,
    /// (DT_SONAME, the name the loader keeps for it) of every loaded library but the program.
    pub sonames: Vec<(OsString, PathBuf)>,
}

impl Scan {
    /// The loaded library whose soname is `name`: the loader hands it out for a request of
    /// that name without searching. Its name as the loader keeps it (absolute).
    pub(crate) fn loaded(&self, name: &OsStr) -> Option<&Path> {
        self.sonames.iter().find(|(s, p)| s == name && p.is_absolute()).map(|(_, p)| p.as_path())
    }

    /// The loader chain of cudyn's own `dlopen`: the caller, then the program.
    pub(crate) fn chain(&self) -> Vec<&Paths> {
        if self.caller.what == self.program.what {
            vec![&self.program]
        } else {
            vec![&self.caller, &self.program]
        }
    }
}

/// The loaded objects, read from their dynamic sections in memory; an object whose section
/// cannot be read counts as having no search paths and no soname (which only drops folders
/// from the search, never adds one, and at worst opens a second copy of a library).
pub(crate) fn scan() -> Scan {
    struct State {
        caller: Option<Paths>,
        program: Option<Paths>,
        sonames: Vec<(OsString, PathBuf)>,
        /// An address inside cudyn's own code: the object whose segments hold it is the caller.
        me: usize,
        first: bool,
    }
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const DT_NULL: i64 = 0;
    const DT_STRTAB: i64 = 5;
    const DT_STRSZ: i64 = 10;
    const DT_RPATH: i64 = 15;
    const DT_RUNPATH: i64 = 29;
    const DT_FLAGS_1: i64 = 0x6fff_fffb;

    const DT_SONAME: i64 = 14;

    /// One object's paths and soname, None when its dynamic section cannot be read within its
    /// segments.
    ///
    /// # Safety
    /// `info` describes a loaded object (dl_iterate_phdr's argument).
    unsafe fn paths_of(info: &libc::dl_phdr_info, what: String) -> Option<(Paths, Option<OsString>)> {
        if info.dlpi_phdr.is_null() {
            return None;
        }
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers of a loaded object.
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        let ranges = |mem: bool| -> Vec<(usize, usize)> {
            phdrs
                .iter()
                .filter(|p| p.p_type == PT_LOAD)
                .filter_map(|p| {
                    let lo = base.checked_add(p.p_vaddr as usize)?;
                    Some((lo, lo.checked_add(if mem { p.p_memsz } else { p.p_filesz } as usize)?))
                })
                .collect()
        };
        let (loads, mapped) = (ranges(false), ranges(true));
        let within = |r: &[(usize, usize)], a: usize, len: usize| {
            r.iter().any(|&(lo, hi)| a >= lo && a.checked_add(len).is_some_and(|e| e <= hi))
        };
        let origin = if info.dlpi_name.is_null() {
            None
        } else {
            // SAFETY: dlpi_name is NUL-terminated.
            let n = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
            if n.is_empty() {
                std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf))
            } else {
                Path::new(OsStr::from_bytes(n)).parent().map(Path::to_path_buf)
            }
        };
        let mut out = Paths { what, origin, ..Paths::default() };
        let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else { return Some((out, None)) };
        let dyn_at = base.checked_add(dynamic.p_vaddr as usize)?;
        let count = (dynamic.p_memsz as usize / 16).min(MAX_DYNAMIC);
        let (mut strtab, mut strsz, mut rpath, mut runpath) = (None, None, Vec::new(), None::<Vec<usize>>);
        let mut soname = None;
        for i in 0..count {
            let at = dyn_at.wrapping_add(i * 16);
            if !within(&mapped, at, 16) {
                return None;
            }
            // SAFETY: inside one of the object's PT_LOAD segments, mapped while it is loaded.
            let (tag, val) =
                unsafe { ((at as *const i64).read_unaligned(), ((at + 8) as *const u64).read_unaligned()) };
            match tag {
                DT_NULL => break,
                DT_STRTAB => strtab = Some(val as usize),
                DT_STRSZ => strsz = Some(val as usize),
                DT_RPATH => rpath.push(val as usize),
                DT_SONAME => soname = Some(val as usize),
                DT_RUNPATH => runpath.get_or_insert_with(Vec::new).push(val as usize),
                DT_FLAGS_1 => out.nodeflib = val & 0x800 != 0,
                _ => {}
            }
        }
        if rpath.is_empty() && runpath.is_none() && soname.is_none() {
            return Some((out, None));
        }
        let (tab, size) = (strtab?, strsz?);
        // The loader relocates the dynamic section's addresses in place on most systems; not
        // everywhere (read-only dynamic sections, the vDSO): take whichever lies in the object.
        let tab = if within(&loads, tab, size) {
            tab
        } else if base.checked_add(tab).is_some_and(|t| within(&loads, t, size)) {
            base + tab
        } else {
            return None;
        };
        // SAFETY: [tab, tab+size) lies in a file-backed PT_LOAD segment of a loaded object.
        let strings = unsafe { std::slice::from_raw_parts(tab as *const u8, size) };
        let parts = |offs: &[usize]| -> Option<Vec<Vec<u8>>> {
            let mut v = Vec::new();
            for &o in offs {
                v.extend(cstr_at(strings, o)?.split(|&c| c == b':').map(<[u8]>::to_vec));
            }
            Some(v)
        };
        out.rpath = parts(&rpath)?;
        out.runpath = match runpath {
            Some(r) => Some(parts(&r)?),
            None => None,
        };
        let soname = match soname {
            Some(o) => Some(OsString::from(OsStr::from_bytes(cstr_at(strings, o)?))),
            None => None,
        };
        Some((out, soname))
    }

    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our State for the call's duration.
        let (info, st) = unsafe { (&*info, &mut *(data as *mut State)) };
        let first = std::mem::replace(&mut st.first, false);
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points at dlpi_phnum program headers of a loaded object.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let base = info.dlpi_addr as usize;
        let is_caller = phdrs.iter().filter(|p| p.p_type == PT_LOAD).any(|p| {
            let lo = base.wrapping_add(p.p_vaddr as usize);
            st.me >= lo && st.me < lo.wrapping_add(p.p_memsz as usize)
        });
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: dlpi_name is NUL-terminated.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy().into_owned()
        };
        // The program is the first object reported.
        let what = if first { "the program".to_string() } else { name.clone() };
        // SAFETY: info is dl_iterate_phdr's.
        let Some((paths, soname)) = (unsafe { paths_of(info, what) }) else { return 0 };
        if let Some(s) = soname.filter(|_| !first) {
            st.sonames.push((s, PathBuf::from(name)));
        }
        if is_caller {
            st.caller = Some(paths.clone());
        }
        if first {
            st.program = Some(paths);
        }
        0
    }

    let mut st =
        State { caller: None, program: None, sonames: Vec::new(), me: scan as fn() -> Scan as usize, first: true };
    // SAFETY: `each` only reads the loader's data for the call and writes into `st`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut st as *mut State as *mut c_void) };
    Scan { caller: st.caller.unwrap_or_default(), program: st.program.unwrap_or_default(), sonames: st.sonames }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new-format cache (optionally behind an old-format one) with the given entries
    /// (flags, key, value, hwcap).
    fn cache(entries: &[(i32, &str, &str, u64)], old_prefix: bool) -> Vec<u8> {
        let mut strings = Vec::new();
        let str_base = 48 + entries.len() * 24;
        let mut recs = Vec::new();
        for (flags, k, v, hw) in entries {
            let ko = str_base + strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = str_base + strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            recs.push((*flags, ko as u32, vo as u32, *hw));
        }
        let mut n = Vec::new();
        n.extend_from_slice(NEW_MAGIC);
        n.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        n.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        n.push(2);
        n.extend_from_slice(&[0; 3]);
        n.extend_from_slice(&[0; 16]);
        for (f, k, v, hw) in recs {
            n.extend_from_slice(&f.to_le_bytes());
            n.extend_from_slice(&k.to_le_bytes());
            n.extend_from_slice(&v.to_le_bytes());
            n.extend_from_slice(&[0; 4]);
            n.extend_from_slice(&hw.to_le_bytes());
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
    fn the_cache_names_the_x86_64_baseline_entry() {
        let c = cache(
            &[
                (0x0003, "libnvrtc.so.13", "/lib32/libnvrtc.so.13", 0),
                (FLAGS_X86_64, "libm.so.6", "/lib/libm.so.6", 0),
                (FLAGS_X86_64, "libnvrtc.so.13", "/opt/cuda/lib64/glibc-hwcaps/x86-64-v3/libnvrtc.so.13", 1 << 62),
                (FLAGS_X86_64, "libnvrtc.so.13", "/opt/cuda/lib64/libnvrtc.so.13", 0),
            ],
            false,
        );
        assert_eq!(ld_so_cache_lookup(&c, "libnvrtc.so.13").as_deref(), Some(&b"/opt/cuda/lib64/libnvrtc.so.13"[..]));
        assert_eq!(ld_so_cache_lookup(&c, "libnvrtc.so.12"), None);
        assert_eq!(ld_so_cache_lookup(&c, "libm.so.6").as_deref(), Some(&b"/lib/libm.so.6"[..]));
        let only_hw = cache(&[(FLAGS_X86_64, "libx.so.1", "/a/x86-64-v3/libx.so.1", 1 << 62)], false);
        assert_eq!(ld_so_cache_lookup(&only_hw, "libx.so.1").as_deref(), Some(&b"/a/x86-64-v3/libx.so.1"[..]));
        let old = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "/x/libnvrtc.so.13", 0)], true);
        assert_eq!(ld_so_cache_lookup(&old, "libnvrtc.so.13").as_deref(), Some(&b"/x/libnvrtc.so.13"[..]));
        let relative = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "libnvrtc.so.13", 0)], false);
        assert_eq!(ld_so_cache_lookup(&relative, "libnvrtc.so.13"), None);
    }

    #[test]
    fn truncated_and_garbage_caches_name_nothing_and_never_panic() {
        let c = cache(&[(FLAGS_X86_64, "libnvrtc.so.13", "/opt/cuda/lib64/libnvrtc.so.13", 0)], true);
        for cut in 0..c.len() {
            assert_eq!(ld_so_cache_lookup(&c[..cut], "libnvrtc.so.13"), None, "cut at {cut}");
        }
        assert_eq!(ld_so_cache_lookup(b"", "x"), None);
        assert_eq!(ld_so_cache_lookup(&[0xff; 4096], "x"), None);
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
        assert_eq!(ld_so_cache_lookup(&huge, "x"), None);
        let mut big_endian = cache(&[], false);
        big_endian[28] = 3;
        assert_eq!(ld_so_cache_lookup(&big_endian, "x"), None);
    }

    #[test]
    fn this_systems_cache_names_libc() {
        if let Some(b) = ld_so_cache() {
            // libc itself is always in the cache of a glibc system that has one.
            let p = ld_so_cache_lookup(b, "libc.so.6").expect("libc.so.6 in /etc/ld.so.cache");
            assert!(Path::new(OsStr::from_bytes(&p)).is_file(), "{p:?}");
        }
    }

    #[test]
    fn elements_that_mean_the_working_directory_are_skipped() {
        let o = Path::new("/opt/app/bin");
        assert_eq!(expand(b"$ORIGIN/../lib", Some(o)), Ok(vec![PathBuf::from("/opt/app/bin/../lib")]));
        assert_eq!(expand(b"${ORIGIN}", Some(o)), Ok(vec![PathBuf::from("/opt/app/bin")]));
        assert_eq!(expand(b"/x/$LIB", None).map(|v| v.len()), Ok(3));
        assert_eq!(expand(b"/x/$PLATFORM", None), Ok(vec![PathBuf::from(format!("/x/{}", std::env::consts::ARCH))]));
        assert!(expand(b"$ORIGIN", None).is_err());
        assert!(expand(b"", None).unwrap_err().contains("working directory"));
        assert!(expand(b"lib", None).unwrap_err().contains("working directory"));
        assert!(expand(b"./lib", None).unwrap_err().contains("working directory"));
        // Tokens as glibc's is_dst reads them: a `$` before anything else is a byte of the
        // path, so these are folders relative to the working directory, as the loader takes
        // them (a service manager's unexpanded `$LD_LIBRARY_PATH`, `$ORIGINAL`, non-UTF-8).
        let rel = |p: &[u8]| Element::Relative(vec![PathBuf::from(OsStr::from_bytes(p))]);
        assert_eq!(element(b"$LD_LIBRARY_PATH", Some(o)), rel(b"$LD_LIBRARY_PATH"));
        assert_eq!(element(b"$ORIGINAL/lib", Some(o)), rel(b"$ORIGINAL/lib"));
        assert_eq!(element(b"lib\xff", None), rel(b"lib\xff"));
        assert_eq!(element(b"$LIBX", None), rel(b"$LIBX"));
        assert_eq!(element(b"$LIB_", None), rel(b"$LIB_"));
        assert_eq!(element(b"", None), rel(b""));
        assert!(expand(b"$LD_LIBRARY_PATH", Some(o)).unwrap_err().contains("working directory"));
        assert_eq!(element(b"/x/$ORIGINAL", Some(o)), Element::Folders(vec!["/x/$ORIGINAL".into()]));
        assert_eq!(
            element(b"/x/${LIB}y/$", None),
            Element::Folders(["lib", "lib64", MULTIARCH_LIB].map(|l| PathBuf::from(format!("/x/{l}y/$"))).to_vec())
        );
        assert_eq!(element(b"$ORIGIN/a", None), Element::Dropped("$ORIGIN of an object whose folder is unknown"));
        assert_eq!(element(b"$ORIGIN-x", Some(o)), Element::Folders(vec!["/opt/app/bin-x".into()]));
        // In the search: LD_LIBRARY_PATH is read from the environment, so only the requester's
        // own paths are checked here.
        let req = Paths {
            what: "x".into(),
            rpath: vec![b"/r".to_vec(), b"".to_vec(), b"rel".to_vec()],
            runpath: None,
            origin: None,
            nodeflib: true,
        };
        let (found, skipped) = places("libz.so.1", &[&req], true);
        assert_eq!(found, vec![Place::Folder("/r".into())]);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        // A DT_RUNPATH turns the requester's (and its loaders') DT_RPATH off.
        let rp = Paths { runpath: Some(vec![b"/run".to_vec()]), rpath: vec![b"/r".to_vec()], ..req.clone() };
        let (found, _) = places("libz.so.1", &[&rp, &req], true);
        assert_eq!(found, vec![Place::Folder("/run".into())]);
        // Without NODEFLIB: the default folders come last.
        let plain = Paths { nodeflib: false, rpath: Vec::new(), ..req };
        let (p, _) = places("libz.so.1", &[&plain], true);
        assert_eq!(p.last(), Some(&Place::Folder(PathBuf::from("/usr/lib"))));
    }

    /// Another object's DT_RUNPATH does not apply to cudyn's dlopen (only the caller's does):
    /// this test binary is the caller, with neither; its paths read as empty.
    #[test]
    fn the_caller_the_program_and_loaded_sonames_are_found() {
        let s = scan();
        assert_eq!(s.program.what, "the program");
        assert_eq!(s.caller.what, "the program", "cudyn is linked into the test binary");
        assert_eq!(s.chain().len(), 1);
        assert!(s.program.origin.as_deref().is_some_and(Path::is_absolute), "{:?}", s.program);
        let libc = s.loaded(OsStr::new("libc.so.6")).expect("libc is loaded in every process");
        assert!(libc.is_absolute() && libc.exists(), "{libc:?}");
        assert_eq!(s.loaded(OsStr::new("libcudyn-no-such-library.so.7")), None);
    }

    #[test]
    fn a_library_files_needs_are_read() {
        let libc = ld_so_cache().and_then(|c| ld_so_cache_lookup(c, "libm.so.6")).expect("libm.so.6 in the cache");
        let f = std::fs::File::open(OsStr::from_bytes(&libc)).unwrap();
        let d = read_dynamic(&OwnedFd::from(f), "libm", None).unwrap();
        assert!(d.needed.iter().any(|n| n == "libc.so.6"), "{:?}", d.needed);
        let exe = std::fs::File::open("/proc/self/exe").unwrap();
        let e = read_dynamic(&OwnedFd::from(exe), "exe", None);
        // A PIE test binary is ET_DYN too; either way no panic, and libc among its needs.
        if let Ok(e) = e {
            assert!(e.needed.iter().any(|n| n == "libc.so.6"), "{:?}", e.needed);
        }
        let text = std::env::temp_dir().join(format!("cudyn-ldso-{}", std::process::id()));
        std::fs::write(&text, b"GROUP ( /lib/libc.so.6 )\n").unwrap();
        let t = std::fs::File::open(&text).unwrap();
        assert!(read_dynamic(&OwnedFd::from(t), "t", None).unwrap_err().contains("no ELF header"));
        let _ = std::fs::remove_file(&text);
    }
}
