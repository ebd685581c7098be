//! Finding and opening CUDA's shared libraries: one place, one search order.
//! Explicit variable, then the system loader, then CUDA_PATH/CUDA_HOME, then NVIDIA's wheels.

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
        $vis struct $name { $( pub $field: Option<$crate::sys::$pfn>, )* }
        impl $name {
            fn resolve(lib: &$crate::dl::Lib) -> $name {
                $name { $( $field: lib
                    .sym(::std::ffi::CStr::from_bytes_with_nul(concat!($sym, "\0").as_bytes()).unwrap_or(c"?"))
                    // SAFETY: the library exports `$sym` with the prototype `$pfn`, generated
                    // from the headers of the major version its soname names.
                    .map(|p| unsafe { ::std::mem::transmute::<*mut ::std::ffi::c_void, $crate::sys::$pfn>(p) }), )* }
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

/// Absolute folders from an environment variable holding a path list; relative entries are
/// dropped so that nothing is ever looked up in the current directory.
fn abs_dirs_from(var: &str) -> Vec<PathBuf> {
    std::env::var_os(var).map(|v| std::env::split_paths(&v).filter(|p| p.is_absolute()).collect()).unwrap_or_default()
}

/// site-packages folders where `pip` may have put NVIDIA's wheels.
pub fn python_site_dirs() -> Vec<PathBuf> {
    let mut out = abs_dirs_from("PYTHONPATH");
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        prefixes.extend(abs_dirs_from(var));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
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

/// The ordered list of candidates for `c`: what each is and how to open it.
pub fn candidates(c: Component) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(explicit) = std::env::var_os(c.env_var()) {
        // An explicit choice is the only candidate: silently falling back would hide a typo.
        return vec![explicit.to_string_lossy().into_owned()];
    }
    v.extend(c.sonames().iter().map(|s| s.to_string()));
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

/// Open component `c` by the search order, trying each candidate until `accept` takes one.
/// `accept` checks e.g. the version; its Err is kept to explain a later total failure.
pub fn open<T>(c: Component, mut accept: impl FnMut(Lib) -> Result<T, Error>) -> Result<T, Error> {
    let mut tried = Vec::new();
    let mut absent = Vec::new();
    let mut rejected: Option<Error> = None;
    for cand in candidates(c) {
        let is_path = cand.contains('/');
        if is_path && !Path::new(&cand).exists() {
            if std::env::var_os(c.env_var()).is_some() {
                tried.push(format!("{cand} (no such file)"));
            } else {
                absent.push(cand);
            }
            continue;
        }
        // NVRTC finds its builtins library by soname; make the one beside this file known first.
        if c == Component::Nvrtc && is_path {
            preload_nvrtc_builtins(Path::new(&cand));
        }
        match open_raw(&cand, false) {
            Ok(lib) => match accept(lib) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    tried.push(format!("{cand} ({})", e.message));
                    if rejected.is_none() {
                        rejected = Some(e);
                    }
                }
            },
            Err(e) => {
                tried.push(if is_path { format!("{cand} ({e})") } else { format!("{cand} (system loader: not found)") })
            }
        }
    }
    let explicit = std::env::var_os(c.env_var()).is_some();
    let mut msg = format!("{} could not be opened; tried: {}", c.human(), tried.join("; "));
    if !absent.is_empty() {
        msg.push_str(&format!("; not present: {}", absent.join(", ")));
    }
    if !explicit {
        msg.push_str(&format!(". Set {} to the library file", c.env_var()));
        if c != Component::Driver {
            msg.push_str(", or CUDA_PATH to a CUDA toolkit");
        }
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
/// lookup by soname find the already-loaded copy.
fn preload_nvrtc_builtins(nvrtc: &Path) {
    let Some(dir) = nvrtc.parent() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libnvrtc-builtins.so."))
        .collect();
    names.sort();
    for n in names.iter().rev() {
        if open_raw(&dir.join(n).to_string_lossy(), true).is_ok() {
            break;
        }
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
