//! What cudyn finds on this machine, for `cudyn doctor` and for programs that want to tell
//! their users why CUDA is not usable: each CUDA component (where it was found and its
//! version, or why not and what to install), the GPUs and their compute capability, and the
//! compile cache (its folder, whether it is on, and why not).
//!
//! Asking opens the components the way a load or compile would (the same search, the same
//! checks, once per process).

use std::path::PathBuf;

/// One of the CUDA libraries cudyn opens at run time (`cudyn_component` in C).
pub use crate::enums::Component;

impl Component {
    /// "driver", "runtime", "nvrtc", "nvjitlink".
    pub fn key(self) -> &'static str {
        match self {
            Component::Driver => "driver",
            Component::Runtime => "runtime",
            Component::Nvrtc => "nvrtc",
            Component::Nvjitlink => "nvjitlink",
        }
    }

    /// What it is for, in a few words.
    pub fn purpose(self) -> &'static str {
        match self {
            Component::Driver => "loads and launches on a GPU",
            Component::Runtime => "loads and launches through the CUDA runtime API",
            Component::Nvrtc => "compiles CUDA C++ source",
            Component::Nvjitlink => "links LTO-IR, cubins and PTX",
        }
    }

    fn inner(self) -> crate::cuda::dl::Component {
        match self {
            Component::Driver => crate::cuda::dl::Component::Driver,
            Component::Runtime => crate::cuda::dl::Component::Runtime,
            Component::Nvrtc => crate::cuda::dl::Component::Nvrtc,
            Component::Nvjitlink => crate::cuda::dl::Component::NvJitLink,
        }
    }

    /// The library's display name ("the CUDA driver", "NVRTC", ...).
    pub fn human(self) -> &'static str {
        self.inner().human()
    }

    /// The variable that names the library file explicitly (CUDYN_LIBCUDA, ...).
    pub fn env_var(self) -> &'static str {
        self.inner().env_var()
    }

    /// What to install (pip package names for CUDA 13 and 12, CUDA_PATH, the variable).
    pub fn install_hint(self) -> &'static str {
        crate::cuda::dl::install_hint(self.inner())
    }
}

/// What the search for one component found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentReport {
    /// Which component this is.
    pub component: Component,
    /// The file opened (or the soname, when the loader cannot tell the file); None if none.
    pub path: Option<String>,
    /// major*1000 + minor*10 (13000 for 13.0); 0 when not found.
    pub version: i32,
    /// Why it cannot be used (not found, too old, or found but no GPU works); None when usable.
    pub problem: Option<String>,
}

impl ComponentReport {
    /// Found and usable.
    pub fn ok(&self) -> bool {
        self.problem.is_none()
    }
}

/// Search for `c` the way cudyn does when it first needs it.
pub fn component(c: Component) -> ComponentReport {
    fn found(lib: &crate::cuda::dl::Lib) -> String {
        lib.path().map(|p| p.display().to_string()).unwrap_or_else(|| lib.origin.clone())
    }
    let (path, version, problem) = match c {
        Component::Driver => match crate::cuda::driver::driver() {
            Ok(d) => (Some(found(&d.lib)), d.version, d.initialised().err().map(|e| e.message)),
            Err(e) => (None, 0, Some(e.message)),
        },
        Component::Runtime => match crate::cuda::runtime::runtime() {
            Ok(r) => (Some(found(&r.lib)), r.version, None),
            Err(e) => (None, 0, Some(e.message)),
        },
        Component::Nvrtc => match crate::cuda::nvrtc::nvrtc() {
            Ok(n) => (Some(found(&n.lib)), n.version, None),
            Err(e) => (None, 0, Some(e.message)),
        },
        Component::Nvjitlink => match crate::cuda::nvjitlink::jitlink() {
            Ok(j) => (Some(found(&j.lib)), j.version, None),
            Err(e) => (None, 0, Some(e.message)),
        },
    };
    ComponentReport { component: c, path, version, problem }
}

/// "13.0" for 13000.
pub fn version_text(v: i32) -> String {
    crate::cuda::fmt_version(v)
}

/// One GPU the driver sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// The device's ordinal (as CUDA numbers devices).
    pub index: i32,
    /// The device's name, as the driver reports it.
    pub name: String,
    /// Compute capability as major*10+minor (90 for an H100/H200).
    pub sm: u32,
}

/// The GPUs the driver sees, or why none can be listed (no driver, no device, cuInit failed).
pub fn gpus() -> Result<Vec<Gpu>, String> {
    let d = crate::cuda::driver::driver().map_err(|e| e.message)?;
    d.initialised().map_err(|e| e.message)?;
    let n = d.device_count().map_err(|e| e.message)?;
    let mut v = Vec::new();
    for index in 0..n {
        let sm = d.device_sm(index).map_err(|e| e.message)?;
        v.push(Gpu { index, name: d.device_name(index).unwrap_or_default(), sm });
    }
    Ok(v)
}

/// The compile cache as this process sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReport {
    /// Its folder (also when it is off because of a bad setting, if one was named).
    pub dir: Option<PathBuf>,
    /// The size bound in bytes.
    pub max_bytes: u64,
    /// Why it is off; None when it is on.
    pub off_because: Option<String>,
    /// Entries and bytes in the folder now (zero when off).
    pub entries: u64,
    /// Bytes of the entries in the folder now (zero when off).
    pub bytes: u64,
}

/// The process's compile cache, configured from the environment (CUDYN_CACHE,
/// CUDYN_CACHE_DIR, CUDYN_CACHE_MAX_BYTES, XDG_CACHE_HOME, HOME).
pub fn cache() -> CacheReport {
    match crate::compile::cache_status() {
        Ok(c) => {
            let s = c.stats();
            CacheReport {
                dir: Some(c.dir().to_path_buf()),
                max_bytes: c.max_bytes(),
                off_because: None,
                entries: s.entries,
                bytes: s.bytes,
            }
        }
        Err(e) => {
            let cfg = crate::cache::config_from(|n| std::env::var_os(n), crate::cuda::dl::secure_process()).ok();
            CacheReport {
                dir: cfg.as_ref().map(|(d, _)| d.clone()),
                max_bytes: cfg.map_or(0, |(_, m)| m),
                off_because: Some(e.message.clone()),
                entries: 0,
                bytes: 0,
            }
        }
    }
}

/// The GPU a load would check code against (the one every GPU shares, else the current
/// device's, else device 0's); None without a usable GPU.
pub fn target_sm() -> Option<u32> {
    crate::library::target_sm()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_says_what_was_tried_and_what_to_install() {
        let r = component(Component::Driver);
        if r.ok() {
            return; // a machine with a working GPU: nothing to check here
        }
        let p = r.problem.unwrap();
        assert!(p.contains("libcuda.so.1"), "{p}");
        assert!(!p.contains("os error"), "{p}");
    }

    #[test]
    fn hints_name_the_pip_packages_for_both_cuda_versions() {
        let h = Component::Nvrtc.install_hint();
        assert!(h.contains("nvidia-cuda-nvrtc ") && h.contains("nvidia-cuda-nvrtc-cu12"), "{h}");
        assert!(h.contains("CUDA_PATH"), "{h}");
        assert_eq!(Component::Nvjitlink.env_var(), "CUDYN_LIBNVJITLINK");
    }
}
