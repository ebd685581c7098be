//! Finding and opening CUDA's shared libraries: one place, one search order.
//! Explicit variable, then the system loader, then CUDA_PATH/CUDA_HOME, then NVIDIA's wheels.
//!
//! Every file found by path is checked before it is opened (dlopen runs its constructors):
//! owned by root or by us, not writable by others, in a folder chain others cannot change;
//! explicit paths must be absolute; in a setuid/setgid process the environment is ignored.
//! A library that is opened but refused is closed again.

use crate::error::{Error, Status};
use std::ffi::{c_void, CStr, CString};
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

/// dlopen with RTLD_NOW | `extra`; Err carries dlerror's text.
pub fn open_raw(name: &str, global: bool) -> Result<Lib, String> {
    let c = CString::new(name).map_err(|_| "name contains NUL".to_string())?;
    let flags = libc::RTLD_NOW | if global { libc::RTLD_GLOBAL } else { libc::RTLD_LOCAL };
    // SAFETY: c is NUL-terminated; dlopen is thread-safe.
    let h = unsafe { libc::dlopen(c.as_ptr(), flags) };
    if h.is_null() {
        Err(dlerror_text())
    } else {
        Ok(Lib { handle: h, origin: name.to_string() })
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

/// Why a file found by path may not be opened: None when it may. The file (after symlinks)
/// must be a regular file owned by root or by us and not writable by others; its
/// folder must not be writable by others; no folder above it may be writable by others
/// unless sticky (/tmp), where others can add files but not rename ours.
pub fn untrusted_reason(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let real = match std::fs::canonicalize(path) {
        Ok(r) => r,
        Err(e) => return Some(format!("cannot resolve it: {}", crate::error::io_text(&e))),
    };
    let m = match std::fs::metadata(&real) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot stat it: {}", crate::error::io_text(&e))),
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !m.is_file() {
        return Some(format!("{} is not a regular file", real.display()));
    }
    if m.uid() != 0 && m.uid() != me {
        return Some(format!("{} is owned by uid {}, neither root nor us (uid {me})", real.display(), m.uid()));
    }
    // World-writable only: group-writable installs (a shared conda environment) are common
    // and the group is chosen by the owner.
    if m.mode() & 0o002 != 0 {
        return Some(format!("{} is writable by others (mode {:o})", real.display(), m.mode() & 0o7777));
    }
    let mut dir = real.parent();
    let mut first = true;
    while let Some(d) = dir {
        if let Ok(dm) = std::fs::metadata(d) {
            let sticky = dm.mode() & 0o1000 != 0;
            if dm.mode() & 0o002 != 0 && (first || !sticky) {
                return Some(format!(
                    "its folder {} is writable by others (mode {:o})",
                    d.display(),
                    dm.mode() & 0o7777
                ));
            }
        }
        first = false;
        dir = d.parent();
    }
    None
}

/// Folders of CUDA headers (and CCCL's) that belong with the library at `lib` (a real path):
/// `<root>/include/cccl` and `<root>/include` for a toolkit (`<root>/lib64`, `<root>/lib`,
/// `<root>/targets/<arch>/lib`) or the CUDA 13 wheels (`nvidia/cu13/lib`), plus the CUDA 12
/// wheels' `nvidia/cuda_cccl/include` and `nvidia/cuda_runtime/include`. Only folders that
/// exist and that others cannot write.
pub fn header_dirs_beside(lib: &Path) -> Vec<PathBuf> {
    let Some(root) = lib.parent().and_then(Path::parent) else { return Vec::new() };
    let mut dirs = vec![root.join("include/cccl"), root.join("include")];
    if let Some(nvidia) = root.parent().filter(|p| p.file_name().is_some_and(|n| n == "nvidia")) {
        dirs.push(nvidia.join("cuda_cccl/include"));
        dirs.push(nvidia.join("cuda_runtime/include"));
    }
    dirs.retain(|d| d.is_dir() && folder_trusted(d));
    dirs.dedup();
    dirs
}

/// A folder no one else can write, nor swap through a folder above it.
fn folder_trusted(d: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(real) = std::fs::canonicalize(d) else { return false };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut first = true;
    let mut cur = Some(real.as_path());
    while let Some(c) = cur {
        let Ok(m) = std::fs::metadata(c) else { return false };
        if first && m.uid() != 0 && m.uid() != me {
            return false;
        }
        if m.mode() & 0o002 != 0 && (first || m.mode() & 0o1000 == 0) {
            return false;
        }
        first = false;
        cur = c.parent();
    }
    true
}

/// The explicit choice for `c` (CUDYN_LIB*), if set: Err when it is not an absolute path.
fn explicit(c: Component) -> Result<Option<String>, Error> {
    let Some(v) = setting(c.env_var()) else { return Ok(None) };
    let v = v.to_string_lossy().into_owned();
    if !Path::new(&v).is_absolute() {
        return Err(Error::new(
            c.not_found(),
            format!(
                "{}={v} is a relative path; cudyn never loads from the working directory: give an absolute path",
                c.env_var()
            ),
        ));
    }
    Ok(Some(v))
}

/// The ordered list of candidates for `c`: what each is and how to open it.
pub fn candidates(c: Component) -> Vec<String> {
    if let Ok(Some(e)) = explicit(c) {
        // An explicit choice is the only candidate: silently falling back would hide a typo.
        return vec![e];
    }
    let mut v: Vec<String> = c.sonames().iter().map(|s| s.to_string()).collect();
    let mut roots = abs_dirs_from("CUDA_PATH");
    roots.extend(abs_dirs_from("CUDA_HOME"));
    for so in c.sonames() {
        if c == Component::Driver {
            // A toolkit's lib64/stubs/libcuda.so is a stub that fails every call: never use it.
            for d in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"] {
                v.push(format!("{d}/{so}"));
            }
            continue;
        }
        for r in &roots {
            for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
                v.push(r.join(sub).join(so).to_string_lossy().into_owned());
            }
        }
        for site in python_site_dirs() {
            for sub in c.wheel_subdirs(so) {
                v.push(site.join(sub).join(so).to_string_lossy().into_owned());
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|x| seen.insert(x.clone()));
    v
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
    let mut tried = Vec::new();
    let mut absent = Vec::new();
    let mut rejected: Option<Error> = None;
    for cand in candidates(c) {
        let is_path = cand.contains('/');
        if is_path && !Path::new(&cand).exists() {
            if explicit {
                tried.push(format!("{cand} (no such file)"));
            } else {
                absent.push(cand);
            }
            continue;
        }
        if is_path {
            if let Some(why) = untrusted_reason(Path::new(&cand)) {
                tried.push(format!("{cand} (skipped: {why})"));
                continue;
            }
        }
        // NVRTC finds its builtins library by soname; make the one beside this file known first.
        let builtins = if c == Component::Nvrtc && is_path { preload_nvrtc_builtins(Path::new(&cand)) } else { None };
        match open_raw(&cand, false) {
            Ok(lib) => {
                let ids = identity_symbols(c);
                if !ids.iter().any(|s| defines(&lib, s)) {
                    tried.push(format!(
                        "{cand} (not {}: it defines none of {})",
                        c.human(),
                        ids.iter().map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(", ")
                    ));
                    close(&lib);
                    builtins.iter().for_each(close);
                    continue;
                }
                let handle = Lib { handle: lib.handle, origin: String::new() };
                match accept(lib) {
                    Ok(t) => return Ok(t),
                    Err(e) => {
                        tried.push(format!("{cand} ({})", e.message));
                        close(&handle);
                        builtins.iter().for_each(close);
                        if rejected.is_none() {
                            rejected = Some(e);
                        }
                    }
                }
            }
            Err(e) => {
                builtins.iter().for_each(close);
                tried.push(if is_path { format!("{cand} ({e})") } else { format!("{cand} (system loader: not found)") })
            }
        }
    }
    let mut msg = format!("{} could not be opened; tried: {}", c.human(), tried.join("; "));
    if !absent.is_empty() {
        msg.push_str(&format!("; not present: {}", absent.join(", ")));
    }
    if secure_process() {
        msg.push_str("; this is a setuid/setgid process, so CUDYN_*, CUDA_PATH, CUDA_HOME and PYTHONPATH were ignored");
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

/// NVRTC dlopens `libnvrtc-builtins.so.MAJOR.MINOR` by soname at compile time; when NVRTC itself
/// was opened by absolute path from a folder the loader does not search (a wheel), that fails
/// every compile. Opening the builtins from the same folder first, globally, makes the later
/// lookup by soname find the already-loaded copy. Returns what it opened (to close it again
/// if NVRTC is refused).
fn preload_nvrtc_builtins(nvrtc: &Path) -> Option<Lib> {
    let dir = nvrtc.parent()?;
    let rd = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libnvrtc-builtins.so."))
        .collect();
    names.sort();
    for n in names.iter().rev() {
        let p = dir.join(n);
        if untrusted_reason(&p).is_some() {
            continue;
        }
        if let Ok(lib) = open_raw(&p.to_string_lossy(), true) {
            return Some(lib);
        }
    }
    None
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
