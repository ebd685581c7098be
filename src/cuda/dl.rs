//! Finding and opening CUDA's shared libraries: one place, one search order.
//! Explicit variable, then the system loader's folders, then CUDA_PATH/CUDA_HOME, then NVIDIA's wheels.
//!
//! Nothing is handed to `dlopen` by bare name: the system loader would search folders no one
//! checked (an empty `LD_LIBRARY_PATH` entry is the working directory to it). cudyn does the
//! loader's search itself (`ldso`) and opens what it finds by path. Every file it opens passes
//! `trust` first (owned by root or by us, neither group nor others can write it, nor any folder
//! on the way, nor any link: then `dlopen` of the path loads the file checked), and so does
//! every library that file needs (`DT_NEEDED`): those are found the same way and opened first,
//! so that the loader, when it loads the file, finds each of them loaded and searches nothing.
//! A library of the name already loaded in the process is shared, not loaded again. Explicit
//! paths must be absolute; in a setuid/setgid process the environment is ignored. A library
//! that is opened but refused is closed again, with what was opened for it.

use super::ldso::{self, Paths};
use super::trust::{self, Refusal};
use crate::error::{Error, Status};
use std::ffi::{c_void, CStr, CString, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// An opened shared library. Never closed: CUDA libraries do not survive dlclose well, and
/// function pointers taken from it live for the whole process.
#[derive(Debug)]
pub struct Lib {
    handle: *mut c_void,
    /// What was opened: a path, or a soname resolved by the system loader.
    pub origin: String,
}

// SAFETY: a dlopen handle may be used from any thread; dlsym is thread-safe.
unsafe impl Send for Lib {}
unsafe impl Sync for Lib {}

impl Lib {
    /// Address of `name` in this library, or None.
    pub fn sym(&self, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: handle is a live dlopen handle (never closed); name is NUL-terminated.
        let p = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    }

    /// The file the loader actually mapped for this library, if it can tell.
    pub fn path(&self) -> Option<PathBuf> {
        let mut map: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map *` into `map`.
        let rc = unsafe { libc::dlinfo(self.handle, libc::RTLD_DI_LINKMAP, &mut map as *mut _ as *mut c_void) };
        if rc != 0 || map.is_null() {
            return None;
        }
        // SAFETY: glibc's link_map starts with l_addr (usize) then l_name (char *).
        let name = unsafe { *(map as *const usize).add(1) as *const libc::c_char };
        if name.is_null() {
            return None;
        }
        // SAFETY: l_name is a NUL-terminated string owned by the loader.
        let s = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        (!s.is_empty()).then(|| PathBuf::from(s))
    }
}

/// A table of entry points looked up by name in a library opened with `open`: one
/// `Option<PFN>` field per symbol, None where the library lacks it (reported when used).
/// `field: PFN_type = "exported_name"`.
macro_rules! symbol_table {
    ($vis:vis struct $name:ident { $( $field:ident : $pfn:ident = $sym:literal ),* $(,)? }) => {
        #[allow(non_snake_case)]
        $vis struct $name { $( pub $field: Option<$crate::cuda::sys::$pfn>, )* }
        impl $name {
            fn resolve(lib: &$crate::cuda::dl::Lib) -> $name {
                $name { $( $field: lib
                    .sym(::std::ffi::CStr::from_bytes_with_nul(concat!($sym, "\0").as_bytes()).unwrap_or(c"?"))
                    // SAFETY: the library exports `$sym` with the prototype `$pfn`, generated
                    // from the headers of the major version its soname names.
                    .map(|p| unsafe { ::std::mem::transmute::<*mut ::std::ffi::c_void, $crate::cuda::sys::$pfn>(p) }), )* }
            }
        }
    };
}
pub(crate) use symbol_table;

/// Which CUDA component a search is for; decides the names, folders and the status of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    Driver,
    Runtime,
    Nvrtc,
    NvJitLink,
}

impl Component {
    pub fn env_var(self) -> &'static str {
        match self {
            Component::Driver => "CUDYN_LIBCUDA",
            Component::Runtime => "CUDYN_LIBCUDART",
            Component::Nvrtc => "CUDYN_LIBNVRTC",
            Component::NvJitLink => "CUDYN_LIBNVJITLINK",
        }
    }
    pub fn not_found(self) -> Status {
        match self {
            Component::Driver => Status::DriverNotFound,
            Component::Runtime => Status::RuntimeNotFound,
            Component::Nvrtc => Status::NvrtcNotFound,
            Component::NvJitLink => Status::NvjitlinkNotFound,
        }
    }
    pub fn human(self) -> &'static str {
        match self {
            Component::Driver => "the CUDA driver",
            Component::Runtime => "the CUDA runtime",
            Component::Nvrtc => "NVRTC",
            Component::NvJitLink => "nvJitLink",
        }
    }
    /// Sonames to try, newest first.
    pub fn sonames(self) -> &'static [&'static str] {
        match self {
            Component::Driver => &["libcuda.so.1"],
            Component::Runtime => &["libcudart.so.13", "libcudart.so.12"],
            Component::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so.12"],
            Component::NvJitLink => &["libnvJitLink.so.13", "libnvJitLink.so.12"],
        }
    }
    /// Folders inside an NVIDIA wheel install (site-packages/nvidia/...) that hold it, per soname.
    fn wheel_subdirs(self, soname: &str) -> &'static [&'static str] {
        let v13 = soname.ends_with(".13");
        match (self, v13) {
            (Component::Driver, _) => &[],
            (_, true) => &["nvidia/cu13/lib"],
            (Component::Runtime, false) => &["nvidia/cuda_runtime/lib"],
            (Component::Nvrtc, false) => &["nvidia/cuda_nvrtc/lib"],
            (Component::NvJitLink, false) => &["nvidia/nvjitlink/lib"],
        }
    }
}

/// Whether this process runs with privileges its caller's environment must not steer
/// (setuid/setgid or file capabilities: the kernel's AT_SECURE, which `secure_getenv` and the
/// loader's own LD_LIBRARY_PATH rule use). Then cudyn ignores CUDYN_*, CUDA_PATH/CUDA_HOME and
/// the Python folders, as the loader ignores LD_LIBRARY_PATH.
pub fn secure_process() -> bool {
    // SAFETY: getauxval has no preconditions; 0 means "not secure" or "no such entry".
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a thread-local NUL-terminated string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        // SAFETY: non-NULL dlerror result is a valid C string.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// dlopen of `path` (absolute: never a bare name, which the loader would search for) with
/// RTLD_NOW, RTLD_GLOBAL or RTLD_LOCAL, and `extra`; Err carries dlerror's text.
fn dlopen(path: &Path, global: bool, extra: libc::c_int) -> Result<Lib, String> {
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| "name contains NUL".to_string())?;
    let flags = libc::RTLD_NOW | extra | if global { libc::RTLD_GLOBAL } else { libc::RTLD_LOCAL };
    // SAFETY: c is NUL-terminated and absolute; dlopen is thread-safe.
    let h = unsafe { libc::dlopen(c.as_ptr(), flags) };
    if h.is_null() {
        Err(dlerror_text())
    } else {
        Ok(Lib { handle: h, origin: path.display().to_string() })
    }
}

/// The environment variable `name`, unless it is empty or the process is secure
/// ([`secure_process`]): every variable cudyn reads to find files goes through here.
pub fn setting(name: &str) -> Option<std::ffi::OsString> {
    if secure_process() {
        return None;
    }
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Absolute folders from an environment variable holding a path list; relative entries are
/// dropped so that nothing is ever looked up in the current directory.
fn abs_dirs_from(var: &str) -> Vec<PathBuf> {
    setting(var).map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).collect()).unwrap_or_default()
}

/// site-packages folders where `pip` may have put NVIDIA's wheels. In a secure process only
/// the system prefixes (/usr/local, /usr), never the caller's PYTHONPATH, venv or home.
pub fn python_site_dirs() -> Vec<PathBuf> {
    let mut out = abs_dirs_from("PYTHONPATH");
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        prefixes.extend(abs_dirs_from(var));
    }
    if let Some(home) = setting("HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        prefixes.push(home.join(".local"));
    }
    prefixes.push("/usr/local".into());
    prefixes.push("/usr".into());
    for p in prefixes {
        let lib = p.join("lib");
        if let Ok(rd) = std::fs::read_dir(&lib) {
            let mut found: Vec<PathBuf> = rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .flat_map(|e| [e.path().join("site-packages"), e.path().join("dist-packages")])
                .filter(|d| d.is_dir())
                .collect();
            found.sort();
            found.reverse(); // newest Python first
            out.extend(found);
        }
        let deb = p.join("lib/python3/dist-packages");
        if deb.is_dir() {
            out.push(deb);
        }
    }
    out.dedup();
    out
}

/// Folders of CUDA headers (and CCCL's) that belong with the library at `lib` (a real path):
/// `<root>/include/cccl` and `<root>/include` for a toolkit (`<root>/lib64`, `<root>/lib`,
/// `<root>/targets/<arch>/lib`) or the CUDA 13 wheels (`nvidia/cu13/lib`), plus the CUDA 12
/// wheels' `nvidia/cuda_cccl/include` and `nvidia/cuda_runtime/include`. Only folders that
/// exist and pass the rule of the library search (`trust`): nothing on the way to them, and
/// they themselves, can be changed by others.
pub fn header_dirs_beside(lib: &Path) -> Vec<PathBuf> {
    let Some(root) = lib.parent().and_then(Path::parent) else { return Vec::new() };
    let mut dirs = vec![root.join("include/cccl"), root.join("include")];
    if let Some(nvidia) = root.parent().filter(|p| p.file_name().is_some_and(|n| n == "nvidia")) {
        dirs.push(nvidia.join("cuda_cccl/include"));
        dirs.push(nvidia.join("cuda_runtime/include"));
    }
    dirs.retain(|d| trust::folder(d).is_ok());
    dirs.dedup();
    dirs
}

/// The explicit choice for `c` (CUDYN_LIB*), if set: Err when it is not an absolute path.
fn explicit(c: Component) -> Result<Option<PathBuf>, Error> {
    let Some(v) = setting(c.env_var()) else { return Ok(None) };
    let p = PathBuf::from(v);
    if !p.is_absolute() {
        return Err(Error::new(
            c.not_found(),
            format!(
                "{}={} is a relative path; cudyn never loads from the working directory: give an absolute path",
                c.env_var(),
                p.display()
            ),
        ));
    }
    Ok(Some(p))
}

/// One step of the search for a component.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Candidate {
    /// The system loader's turn for this soname: a library of that soname already loaded,
    /// else the loader's folders in its order (`ldso::places`), each file checked.
    Soname(&'static str),
    /// A file (its folder given by a variable, or a fixed place).
    Path(PathBuf),
}

/// The ordered list of candidates for `c`.
fn candidate_list(c: Component) -> Vec<Candidate> {
    if let Ok(Some(e)) = explicit(c) {
        // An explicit choice is the only candidate: silently falling back would hide a typo.
        return vec![Candidate::Path(e)];
    }
    let mut v: Vec<Candidate> = c.sonames().iter().map(|s| Candidate::Soname(s)).collect();
    let mut roots = abs_dirs_from("CUDA_PATH");
    roots.extend(abs_dirs_from("CUDA_HOME"));
    for so in c.sonames() {
        if c == Component::Driver {
            // A toolkit's lib64/stubs/libcuda.so is a stub that fails every call: never use it.
            for d in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"] {
                v.push(Candidate::Path(Path::new(d).join(so)));
            }
            continue;
        }
        for r in &roots {
            for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
                v.push(Candidate::Path(r.join(sub).join(so)));
            }
        }
        for site in python_site_dirs() {
            for sub in c.wheel_subdirs(so) {
                v.push(Candidate::Path(site.join(sub).join(so)));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|x| seen.insert(x.clone()));
    v
}

/// The ordered list of candidates for `c`, as text: a bare soname for the system loader's
/// turn (searched by cudyn in the loader's folders), else an absolute path.
pub fn candidates(c: Component) -> Vec<String> {
    candidate_list(c)
        .into_iter()
        .map(|x| match x {
            Candidate::Soname(s) => s.to_string(),
            Candidate::Path(p) => p.display().to_string(),
        })
        .collect()
}

/// A library cudyn may open: the file at `path` passed `trust`, and `plan` lists what it needs
/// that is not loaded yet, each of those checked the same way, in the order to open them
/// (what a library needs before it).
struct Planned {
    path: PathBuf,
    plan: Vec<PathBuf>,
}

/// At most this many libraries opened ahead of one (and as deep): far more than any CUDA
/// library needs (NVRTC: five of glibc's).
const MAX_PLANNED: usize = 64;

/// Check the file at `path` and find what it needs (see [`Planned`]); with `deep` false, only
/// check the file.
fn plan_as(path: &Path, scan: &ldso::Scan, deep: bool) -> Result<Planned, Refusal> {
    let checked = trust::open_file(path)?;
    if !deep {
        return Ok(Planned { path: path.to_path_buf(), plan: Vec::new() });
    }
    let mut order = Vec::new();
    let mut seen: Vec<OsString> = Vec::new();
    let loaders = scan.chain();
    needs(&checked.fd, path, &loaders, scan, &mut order, &mut seen, 0).map_err(Refusal::Untrusted)?;
    Ok(Planned { path: path.to_path_buf(), plan: order })
}

fn plan(path: &Path, scan: &ldso::Scan) -> Result<Planned, Refusal> {
    plan_as(path, scan, true)
}

/// Append to `order` what the library open at `fd` (found at `path`, loaded by `loaders`)
/// needs and is not loaded: each found where the loader would look (`ldso::places`, with this
/// library's own search paths first), the first file there that passes `trust`, is a library
/// of this machine and answers to the name (its DT_SONAME), after what it needs in turn.
fn needs(
    fd: &OwnedFd,
    path: &Path,
    loaders: &[&Paths],
    scan: &ldso::Scan,
    order: &mut Vec<PathBuf>,
    seen: &mut Vec<OsString>,
    depth: usize,
) -> Result<(), String> {
    let d = ldso::read_dynamic(fd, &path.display().to_string(), path.parent().map(Path::to_path_buf))?;
    let mut chain: Vec<&Paths> = vec![&d.paths];
    chain.extend_from_slice(loaders);
    for name in &d.needed {
        if seen.contains(name) || scan.loaded(name).is_some() {
            continue;
        }
        if depth >= MAX_PLANNED || order.len() >= MAX_PLANNED {
            return Err(format!("{} needs more libraries than cudyn follows ({MAX_PLANNED})", path.display()));
        }
        seen.push(name.clone());
        let shown = name.to_string_lossy();
        if name.as_bytes().contains(&b'/') {
            let p = Path::new(name);
            if !p.is_absolute() {
                return Err(format!("it needs {shown}, a path relative to the working directory"));
            }
            let dep = trust::open_file(p).map_err(|r| match r {
                Refusal::Absent => format!("it needs {shown}, which does not exist"),
                Refusal::Untrusted(w) => format!("it needs {shown}, skipped: {w}"),
            })?;
            needs(&dep.fd, p, &chain, scan, order, seen, depth + 1)?;
            order.push(p.to_path_buf());
            continue;
        }
        let (places, skipped) = ldso::places(&shown, &chain, secure_process());
        let mut why_not: Vec<String> = skipped;
        let mut found = None;
        for place in places {
            let file = place.file(&shown);
            let dep = match trust::open_file(&file) {
                Ok(dep) => dep,
                Err(Refusal::Absent) => continue,
                Err(Refusal::Untrusted(w)) => {
                    why_not.push(format!("{} skipped: {w}", file.display()));
                    continue;
                }
            };
            // The loader passes over a file of another machine or class; so does cudyn, and
            // over one that does not answer to the name: the loader, asked for the name when
            // it loads the library, matches loaded objects by soname, and would search again.
            match ldso::read_dynamic(&dep.fd, &file.display().to_string(), None) {
                Ok(dd) if dd.soname.as_deref() == Some(name.as_os_str()) => {}
                Ok(dd) => {
                    let soname = dd.soname.map(|s| s.to_string_lossy().into_owned());
                    why_not.push(format!(
                        "{} skipped: its soname is {}",
                        file.display(),
                        soname.as_deref().unwrap_or("missing")
                    ));
                    continue;
                }
                Err(w) => {
                    why_not.push(format!("{} skipped: {w}", file.display()));
                    continue;
                }
            }
            needs(&dep.fd, &file, &chain, scan, order, seen, depth + 1)?;
            found = Some(file);
            break;
        }
        match found {
            Some(f) => order.push(f),
            None => {
                let mut msg = format!("it needs {shown}, found nowhere the search trusts");
                if !why_not.is_empty() {
                    msg.push_str(&format!(" ({})", why_not.join("; ")));
                }
                return Err(msg);
            }
        }
    }
    Ok(())
}

/// What `plan` found, opened: the library, and what was opened ahead of it (to close again if
/// it is refused).
struct LoadedLib {
    lib: Lib,
    ahead: Vec<Lib>,
}

impl LoadedLib {
    fn close(self) {
        close(&self.lib);
        for l in self.ahead.iter().rev() {
            close(l);
        }
    }
}

/// Open a planned library: what it needs first, then itself. Err: dlerror's text (what was
/// opened is closed again).
fn load(p: &Planned, global: bool) -> Result<LoadedLib, String> {
    let mut ahead = Vec::new();
    let fail = |ahead: Vec<Lib>, e: String| {
        for l in ahead.iter().rev() {
            close(l);
        }
        Err(e)
    };
    for dep in &p.plan {
        match dlopen(dep, false, 0) {
            Ok(l) => ahead.push(l),
            Err(e) => return fail(ahead, format!("its dependency {}: {e}", dep.display())),
        }
    }
    match dlopen(&p.path, global, 0) {
        Ok(lib) => Ok(LoadedLib { lib, ahead }),
        Err(e) => fail(ahead, e),
    }
}

/// The library of soname `so` already loaded in the process, as a new reference (by the name
/// the loader keeps for it, which it matches without searching), or None.
fn already_loaded(so: &str, scan: &ldso::Scan) -> Option<Lib> {
    let p = scan.loaded(OsStr::new(so))?;
    let mut lib = dlopen(p, false, libc::RTLD_NOLOAD).ok()?;
    lib.origin = format!("{so} (already loaded from {})", p.display());
    Some(lib)
}

/// What a search tried, for the message when nothing is taken.
#[derive(Default)]
struct Tried {
    tried: Vec<String>,
    absent: Vec<String>,
    skipped: Vec<String>,
    rejected: Option<Error>,
}

impl Tried {
    fn skip_entry(&mut self, s: String) {
        if !self.skipped.contains(&s) {
            self.skipped.push(s);
        }
    }
}

/// What the search offers `walk`'s caller: a file that may be opened, with what it needs, or
/// (the system loader's turn) a library of the soname already loaded, as a new reference.
enum Found {
    File(Planned),
    Loaded(Lib),
}

/// Every file the search for `c` would try, in order, with whether it may be opened, until `f`
/// takes one (returns Some).
fn walk<T>(c: Component, tried: &mut Tried, f: impl FnMut(Found, &mut Tried) -> Option<T>) -> Result<Option<T>, Error> {
    walk_as(c, tried, true, f)
}

/// `walk`, with `deep` as for `plan_as`.
fn walk_as<T>(
    c: Component,
    tried: &mut Tried,
    deep: bool,
    mut f: impl FnMut(Found, &mut Tried) -> Option<T>,
) -> Result<Option<T>, Error> {
    let explicit = explicit(c)?.is_some();
    let scan = ldso::scan();
    let secure = secure_process();
    // `in_loader_turn`: one of the many files the loader's folders might hold; its absence is
    // not worth a word.
    let try_path =
        |p: &Path, tried: &mut Tried, in_loader_turn: bool, f: &mut dyn FnMut(Found, &mut Tried) -> Option<T>| {
            match plan_as(p, &scan, deep) {
                Ok(planned) => f(Found::File(planned), tried),
                Err(Refusal::Absent) => {
                    if explicit {
                        tried.tried.push(format!("{} (no such file)", p.display()));
                    } else if !in_loader_turn {
                        tried.absent.push(p.display().to_string());
                    }
                    None
                }
                Err(Refusal::Untrusted(why)) => {
                    tried.tried.push(format!("{} (skipped: {why})", p.display()));
                    None
                }
            }
        };
    for cand in candidate_list(c) {
        match cand {
            Candidate::Path(p) => {
                if let Some(t) = try_path(&p, tried, false, &mut f) {
                    return Ok(Some(t));
                }
            }
            Candidate::Soname(so) => {
                if let Some(lib) = already_loaded(so, &scan) {
                    if let Some(t) = f(Found::Loaded(lib), tried) {
                        return Ok(Some(t));
                    }
                    // The loader would hand out the loaded one: no other file of that name.
                    continue;
                }
                let (places, skipped) = ldso::places(so, &scan.chain(), secure);
                skipped.into_iter().for_each(|s| tried.skip_entry(s));
                let before = tried.tried.len();
                for place in places {
                    if let Some(t) = try_path(&place.file(so), tried, true, &mut f) {
                        return Ok(Some(t));
                    }
                }
                if tried.tried.len() == before {
                    tried.tried.push(format!("{so} (the system loader's folders: not found)"));
                }
            }
        }
    }
    Ok(None)
}

/// The file `open(c, ..)` would open first, found without opening anything (for the compile
/// cache, which keys on it, in a process that may never load NVRTC): a library of the soname
/// already loaded (its path), else the first candidate that passes the checks. What it needs
/// is not followed (a file refused only for those is rare, and the compiler checks that the
/// NVRTC it loads is the one located before it keys on it).
pub fn locate(c: Component) -> Option<PathBuf> {
    let mut tried = Tried::default();
    walk_as(c, &mut tried, false, |found, _| match found {
        Found::File(p) => Some(Some(p.path)),
        Found::Loaded(lib) => {
            let p = lib.path().filter(|p| p.is_absolute());
            close(&lib);
            Some(p)
        }
    })
    .ok()
    .flatten()
    .flatten()
}

/// Symbols of which every build of the component defines at least one: a file with none of
/// them is not the component (whatever its version).
fn identity_symbols(c: Component) -> &'static [&'static CStr] {
    match c {
        Component::Driver => &[c"cuInit", c"cuGetProcAddress_v2", c"cuGetProcAddress"],
        Component::Runtime => &[c"cudaRuntimeGetVersion"],
        Component::Nvrtc => &[c"nvrtcCreateProgram"],
        Component::NvJitLink => &[c"nvJitLinkCreate"],
    }
}

/// glibc's `RTLD_DL_LINKMAP` (dlfcn.h): dladdr1 returns the symbol's `struct link_map *`.
const RTLD_DL_LINKMAP: libc::c_int = 2;

/// Whether `lib` itself defines `sym` (dlsym also finds symbols of the libraries it depends
/// on: a program linked with libcudart is not libcudart).
fn defines(lib: &Lib, sym: &CStr) -> bool {
    let Some(p) = lib.sym(sym) else { return false };
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let mut sym_map: *mut c_void = std::ptr::null_mut();
    // SAFETY: p is an address inside a loaded object; both out-pointers are valid.
    let ok = unsafe { libc::dladdr1(p, &mut info, &mut sym_map as *mut *mut c_void, RTLD_DL_LINKMAP) };
    let mut own_map: *mut c_void = std::ptr::null_mut();
    // SAFETY: RTLD_DI_LINKMAP writes a `struct link_map *` for a live handle.
    let rc = unsafe { libc::dlinfo(lib.handle, libc::RTLD_DI_LINKMAP, &mut own_map as *mut _ as *mut c_void) };
    ok != 0 && rc == 0 && !sym_map.is_null() && sym_map == own_map
}

fn close(lib: &Lib) {
    // SAFETY: a handle from dlopen, closed once, with nothing taken from it kept (the
    // candidate was refused). dlopen reference-counts, so a copy the program loaded itself
    // stays loaded.
    unsafe { libc::dlclose(lib.handle) };
}

/// What to install when `c` is missing.
pub fn install_hint(c: Component) -> &'static str {
    match c {
        Component::Driver => "libcuda.so.1 comes with the NVIDIA driver (not with pip or the toolkit): install the driver, or set CUDYN_LIBCUDA to the library file",
        Component::Runtime => "Install it with pip (nvidia-cuda-runtime for CUDA 13, nvidia-cuda-runtime-cu12 for CUDA 12), or set CUDA_PATH to a CUDA toolkit, or CUDYN_LIBCUDART to the library file",
        Component::Nvrtc => "Install it with pip (nvidia-cuda-nvrtc for CUDA 13, nvidia-cuda-nvrtc-cu12 for CUDA 12), or set CUDA_PATH to a CUDA toolkit, or CUDYN_LIBNVRTC to the library file",
        Component::NvJitLink => "Install it with pip (nvidia-nvjitlink for CUDA 13, nvidia-nvjitlink-cu12 for CUDA 12), or set CUDA_PATH to a CUDA toolkit, or CUDYN_LIBNVJITLINK to the library file",
    }
}

/// Open component `c` by the search order, trying each candidate until `accept` takes one.
/// `accept` checks e.g. the version; its Err is kept to explain a later total failure, and
/// the refused library is closed again.
pub fn open<T>(c: Component, mut accept: impl FnMut(Lib) -> Result<T, Error>) -> Result<T, Error> {
    let explicit = explicit(c)?.is_some();
    if c != Component::Driver {
        guard_by_name("libcuda.so.1", Ahead::SearchAs(Component::Driver))
            .map_err(|why| Error::new(c.not_found(), format!("{} is not opened: {why}", c.human())))?;
    }
    let mut tried = Tried::default();
    let taken = walk(c, &mut tried, |found, tried| {
        let (opened, label) = match found {
            Found::Loaded(lib) => {
                let label = lib.origin.clone();
                (LoadedLib { lib, ahead: Vec::new() }, label)
            }
            Found::File(planned) => {
                let label = planned.path.display().to_string();
                // NVRTC finds its builtins library by soname; make the one beside it known first.
                let builtins = if c == Component::Nvrtc { preload_nvrtc_builtins(&planned.path) } else { None };
                match load(&planned, false) {
                    Ok(mut o) => {
                        if let Some(b) = builtins {
                            let mut first = b.ahead;
                            first.push(b.lib);
                            first.append(&mut o.ahead);
                            o.ahead = first;
                        }
                        (o, label)
                    }
                    Err(e) => {
                        builtins.into_iter().for_each(|b| b.close());
                        tried.tried.push(format!("{label} ({e})"));
                        return None;
                    }
                }
            }
        };
        let ids = identity_symbols(c);
        if !ids.iter().any(|s| defines(&opened.lib, s)) {
            tried.tried.push(format!(
                "{label} (not {}: it defines none of {})",
                c.human(),
                ids.iter().map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(", ")
            ));
            opened.close();
            return None;
        }
        if c == Component::Driver {
            let file = opened.lib.path().unwrap_or_else(|| PathBuf::from(&label));
            if let Some(why) = driver_companions(&file).iter().find_map(|n| guard_by_name(n, Ahead::CheckOnly).err()) {
                tried.tried.push(format!("{label} (not used: {why})"));
                opened.close();
                return None;
            }
        }
        let LoadedLib { lib, ahead } = opened;
        let handle = Lib { handle: lib.handle, origin: String::new() };
        match accept(lib) {
            Ok(t) => Some(t),
            Err(e) => {
                tried.tried.push(format!("{label} ({})", e.message));
                LoadedLib { lib: handle, ahead }.close();
                if tried.rejected.is_none() {
                    tried.rejected = Some(e);
                }
                None
            }
        }
    })?;
    if let Some(t) = taken {
        return Ok(t);
    }
    let Tried { tried, absent, skipped, rejected } = tried;
    let mut msg = format!("{} could not be opened; tried: {}", c.human(), tried.join("; "));
    if !absent.is_empty() {
        msg.push_str(&format!("; not present: {}", absent.join(", ")));
    }
    if !skipped.is_empty() {
        msg.push_str(&format!("; not searched: {}", skipped.join("; ")));
    }
    if secure_process() {
        msg.push_str("; this is a setuid/setgid process, so CUDYN_*, CUDA_PATH, CUDA_HOME, PYTHONPATH and LD_LIBRARY_PATH were ignored");
    }
    if !explicit {
        msg.push_str(&format!(". {}", install_hint(c)));
    }
    match rejected {
        // A library was found but refused (too old): that is the more useful status.
        Some(e) if e.status == Status::UnsupportedVersion => Err(Error::with_code(e.status, e.cuda_code, msg)),
        _ => Err(Error::new(c.not_found(), msg)),
    }
}

/// How `guard_by_name` may make a library CUDA opens by name loaded before CUDA asks.
#[derive(Clone, Copy)]
pub(crate) enum Ahead {
    /// Open what the search for this component takes (only opened: no cuInit).
    SearchAs(Component),
    /// Open the first file of the name in the loader's places that passes the checks.
    Places,
    /// Open nothing (a large library most programs never need): only check.
    CheckOnly,
}

/// NVRTC, nvJitLink and libcudart each open libcuda.so.1 by name themselves, NVRTC its
/// builtins, the driver its PTX JIT compiler: through the system loader's own search, which
/// cudyn cannot steer (it would take `./libcuda.so.1` through an empty `LD_LIBRARY_PATH`
/// entry). So before such a library is used, `name` must be loaded already (the loader then
/// hands that one out and searches nothing), or be opened now as `ahead` says, or be what the
/// loader's own search takes first a file cudyn trusts, or be nowhere at all. Err: the file
/// the loader would take instead, and why cudyn does not trust it.
pub(crate) fn guard_by_name(name: &str, ahead: Ahead) -> Result<(), String> {
    let scan = ldso::scan();
    if let Some(p) = scan.loaded(OsStr::new(name)) {
        return companions_guarded(name, p);
    }
    // What is opened here is kept, like any library cudyn opened.
    let opened = match ahead {
        Ahead::SearchAs(c) => {
            let mut tried = Tried::default();
            let r = walk(c, &mut tried, |found, _| match found {
                Found::Loaded(lib) => Some(lib),
                Found::File(p) => load(&p, false).ok().map(|o| o.lib),
            });
            matches!(r, Ok(Some(_)))
        }
        Ahead::Places => {
            let (places, _) = ldso::places(name, &scan.chain(), secure_process());
            places.iter().any(|pl| plan(&pl.file(name), &scan).is_ok_and(|p| load(&p, true).is_ok()))
        }
        Ahead::CheckOnly => false,
    };
    if opened {
        if let Some(p) = ldso::scan().loaded(OsStr::new(name)) {
            return companions_guarded(name, p);
        }
    }
    let Some(p) = ldso::loader_would_find(name, &scan.chain(), secure_process()) else { return Ok(()) };
    let why = if std::env::current_dir().is_ok_and(|d| p.starts_with(d)) {
        "it is in the working directory".to_string()
    } else {
        match trust::open_file(&p) {
            Ok(_) | Err(Refusal::Absent) => return Ok(()), // the loader takes a file cudyn trusts
            Err(Refusal::Untrusted(w)) => w,
        }
    };
    Err(format!(
        "it opens {name} by name itself, and the system loader would take {} ({why}), which cudyn does not \
         trust; with no trusted {name} loaded, remove that file or the LD_LIBRARY_PATH entry that leads to it",
        p.display()
    ))
}

/// For a loaded driver (`name` libcuda.so.1, at `path`): what it opens by name itself must not
/// come from an untrusted place either, whoever uses it (libcudart JITs PTX through it too).
fn companions_guarded(name: &str, path: &Path) -> Result<(), String> {
    if name != "libcuda.so.1" {
        return Ok(());
    }
    for c in driver_companions(path) {
        guard_by_name(&c, Ahead::CheckOnly)
            .map_err(|why| format!("it uses {}, which {}", path.display(), why.trim_start_matches("it ")))?;
    }
    Ok(())
}

/// What the driver at `path` opens by name itself when it compiles: its PTX JIT compiler, its
/// NVVM (LTO JIT), and the compiler library of its own version (`libnvidia-gpucomp.so.<the
/// version in libcuda.so.<version>>`, newer drivers).
fn driver_companions(path: &Path) -> Vec<String> {
    let mut v = vec!["libnvidia-ptxjitcompiler.so.1".to_string(), "libnvidia-nvvm.so.4".to_string()];
    let real = std::fs::canonicalize(path).ok();
    if let Some(ver) = real.as_deref().and_then(Path::file_name).and_then(|n| n.to_str()?.strip_prefix("libcuda.so.")) {
        if ver.contains('.') {
            v.push(format!("libnvidia-gpucomp.so.{ver}"));
        }
    }
    v
}

/// NVRTC dlopens `libnvrtc-builtins.so.MAJOR.MINOR` by soname at compile time; when NVRTC itself
/// was opened by absolute path from a folder the loader does not search (a wheel), that fails
/// every compile, and where the loader does search, it may search the working directory.
/// Opening the builtins from the same folder first (checked like any library, with what they
/// need), globally, makes the later lookup by soname find the already-loaded copy. Returns
/// what it opened (to close it again if NVRTC is refused).
fn preload_nvrtc_builtins(nvrtc: &Path) -> Option<LoadedLib> {
    let dir = nvrtc.parent()?;
    trust::folder(dir).ok()?;
    let rd = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libnvrtc-builtins.so."))
        .collect();
    names.sort();
    let scan = ldso::scan();
    for n in names.iter().rev() {
        let Ok(p) = plan(&dir.join(n), &scan) else { continue };
        if let Ok(o) = load(&p, true) {
            return Some(o);
        }
    }
    None
}

/// The search with every library refused: the message a failed search gives, after every
/// candidate was opened and closed again (tests/library_search.rs).
#[doc(hidden)]
pub fn probe(c: Component) -> String {
    match open(c, |_| -> Result<(), Error> { Err(Error::new(c.not_found(), "refused by the probe")) }) {
        Ok(()) => String::new(),
        Err(e) => e.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_newest_first_and_no_relative_candidates() {
        for c in [Component::Runtime, Component::Nvrtc, Component::NvJitLink, Component::Driver] {
            let cands = candidates(c);
            assert_eq!(cands[0], c.sonames()[0]);
            for cand in &cands {
                assert!(!cand.starts_with('.'), "relative candidate {cand}");
                if cand.contains('/') {
                    assert!(cand.starts_with('/'), "relative candidate {cand}");
                }
            }
        }
    }

    #[test]
    fn driver_candidates_never_include_toolkit_stubs() {
        for cand in candidates(Component::Driver) {
            assert!(!cand.contains("stubs"), "{cand}");
        }
    }

    #[test]
    fn missing_library_names_every_place_tried() {
        let e = open(Component::Driver, |_| -> Result<(), Error> {
            Err(Error::new(Status::UnsupportedVersion, "refused for the test"))
        });
        // Either nothing was found (no driver on this machine) or what was found was refused.
        let e = e.unwrap_err();
        assert!(e.message.contains("libcuda.so.1"), "{}", e.message);
        assert!(matches!(e.status, Status::DriverNotFound | Status::UnsupportedVersion));
    }
}
