//! cudyn.h section "Status and diagnostics": status text, the thread's last error, versions
//! and the CUDA components cudyn found.

use super::{ffi, out};
use crate::enums::Component;
use crate::error::{last_cuda_error, last_error_message_ptr, Status};
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// A `cudyn_status` as it crosses into cudyn from C, where any int can arrive.
#[allow(non_camel_case_types)]
pub type cudyn_status_int = i32;

/// `cudyn_component` as it arrives from C.
pub type RawComponent = u32;

/// Static text for a status, its name then its meaning:
/// "CUDYN_ERROR_NOT_FOUND: no kernel or global of that name".
///
/// @param status Any int: a value that is no cudyn_status is answered, not refused.
/// @return Never NULL; "unknown cudyn_status" for an unknown value. Static storage: never free it.
#[no_mangle]
pub extern "C" fn cudyn_status_string(status: cudyn_status_int) -> *const c_char {
    ffi!(on_panic = c"unknown cudyn_status".as_ptr(), {
        Status::from_c(status.into()).map_or(c"unknown cudyn_status".as_ptr(), |s| s.c_text().as_ptr())
    })
}

/// This thread's last failure, in words: what cudyn was doing, why it failed, and the CUDA
/// error's name and text.
///
/// @return Never NULL; "" before this thread's first failure. The string belongs to cudyn and
///         stays valid until this thread's next failing cudyn call: copy it to keep it.
/// @note Per thread: another thread's failures never change it, and a successful call leaves
///       it as it was.
#[no_mangle]
pub extern "C" fn cudyn_last_error_message() -> *const c_char {
    ffi!(on_panic = c"".as_ptr(), { last_error_message_ptr() })
}

/// The CUDA result behind this thread's last failure.
///
/// @return The CUresult, cudaError_t, nvrtcResult or nvJitLinkResult of this thread's last
///         failing cudyn call; 0 when it had none (or before any failure). Per thread, as
///         cudyn_last_error_message().
#[no_mangle]
pub extern "C" fn cudyn_last_cuda_error() -> i32 {
    ffi!(on_panic = 0, { last_cuda_error() })
}

/// Versions of what cudyn found, as CUDA numbers them (13000 for 13.0); 0 for a component
/// that is absent. `cudyn` is cudyn's own (major*10000 + minor*100 + patch), as CUDYN_VERSION.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct cudyn_version_info {
    pub driver: i32,
    pub runtime: i32,
    pub nvrtc: i32,
    pub nvjitlink: i32,
    pub cudyn: i32,
}

/// cudyn's own version as an int: major*10000 + minor*100 + patch.
pub fn cudyn_version_int() -> i32 {
    let p = |s: &str| s.parse::<i32>().unwrap_or(0);
    p(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
        + p(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + p(env!("CARGO_PKG_VERSION_PATCH"))
}

fn version_info() -> cudyn_version_info {
    cudyn_version_info {
        driver: crate::cuda::driver::driver().map(|d| d.version).unwrap_or(0),
        runtime: crate::cuda::runtime::runtime().map(|r| r.version).unwrap_or(0),
        nvrtc: crate::cuda::nvrtc::nvrtc().map(|n| n.version).unwrap_or(0),
        nvjitlink: crate::cuda::nvjitlink::jitlink().map(|j| j.version).unwrap_or(0),
        cudyn: cudyn_version_int(),
    }
}

/// The versions of every component, opening each on first use.
///
/// @param[out] versions Receives the versions; caller-allocated.
/// @return CUDYN_SUCCESS for a non-NULL `versions`; CUDYN_ERROR_INVALID_ARGUMENT for NULL.
/// @note Why a component is 0 is told by cudyn_component_status() or by the failing call's own
///       status and message.
#[no_mangle]
pub unsafe extern "C" fn cudyn_versions(versions: *mut cudyn_version_info) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        *unsafe { out(versions, "versions") }? = version_info();
        Ok(())
    })
}

/// Open `component` (once per process) and say whether it is usable.
///
/// @param component A cudyn_component.
/// @return CUDYN_SUCCESS; or the status why not (e.g. CUDYN_ERROR_DRIVER_NOT_FOUND), with
///         cudyn_last_error_message() naming every place searched. For the driver, success
///         also means cuInit found a GPU. An unknown component: CUDYN_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn cudyn_component_status(component: RawComponent) -> Status {
    ffi!({
        match Component::from_c_arg(component.into(), "component")? {
            Component::Driver => crate::cuda::driver::driver().and_then(|d| d.initialised()),
            Component::Runtime => crate::cuda::runtime::runtime().map(drop),
            Component::Nvrtc => crate::cuda::nvrtc::nvrtc().map(drop),
            Component::Nvjitlink => crate::cuda::nvjitlink::jitlink().map(drop),
        }
    })
}

/// Where `component` was loaded from.
///
/// @param component A cudyn_component.
/// @return The path of the library file, or the soname it was found by; NULL when the
///         component is absent or unknown. Static storage, valid for the life of the process:
///         never free it.
#[no_mangle]
pub extern "C" fn cudyn_component_path(component: RawComponent) -> *const c_char {
    static PATHS: [OnceLock<Option<CString>>; 4] = [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    ffi!(on_panic = std::ptr::null(), {
        let Some(c) = Component::from_c(component.into()) else { return std::ptr::null() };
        let path = crate::fork::once(&PATHS[c as usize], || {
            let lib = match c {
                Component::Driver => crate::cuda::driver::driver().ok().map(|d| &d.lib),
                Component::Runtime => crate::cuda::runtime::runtime().ok().map(|r| &r.lib),
                Component::Nvrtc => crate::cuda::nvrtc::nvrtc().ok().map(|n| &n.lib),
                Component::Nvjitlink => crate::cuda::nvjitlink::jitlink().ok().map(|j| &j.lib),
            }?;
            let s = lib.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| lib.origin.clone());
            CString::new(s).ok()
        });
        path.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
    })
}

/// cudyn's version and the components it found, in words:
/// "cudyn 0.1.0 (driver 13.0, runtime 13.0, NVRTC 13.0, nvJitLink 13.0)"; an absent component
/// says "absent".
///
/// @return Never NULL. Static storage, computed on the first call: never free it.
#[no_mangle]
pub extern "C" fn cudyn_version_string() -> *const c_char {
    static S: OnceLock<CString> = OnceLock::new();
    ffi!(on_panic = c"cudyn".as_ptr(), {
        crate::fork::once(&S, || {
            let v = version_info();
            let f = |x: i32| if x == 0 { "absent".to_string() } else { crate::cuda::fmt_version(x) };
            CString::new(format!(
                "cudyn {} (driver {}, runtime {}, NVRTC {}, nvJitLink {})",
                env!("CARGO_PKG_VERSION"),
                f(v.driver),
                f(v.runtime),
                f(v.nvrtc),
                f(v.nvjitlink)
            ))
            .unwrap_or_default()
        })
        .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_text_and_numbers_are_stable() {
        for s in Status::ALL {
            // SAFETY: static C strings.
            let t = unsafe { std::ffi::CStr::from_ptr(cudyn_status_string(*s as i32)) }.to_str().unwrap();
            assert_eq!(t, format!("{}: {}", s.c_name(), s.text()));
        }
        // SAFETY: static C strings.
        let unknown = unsafe { std::ffi::CStr::from_ptr(cudyn_status_string(99)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown cudyn_status");
        assert!(!cudyn_status_string(-1).is_null());
        assert_eq!(Status::Internal as i32, 16);
        assert_eq!(Status::AmbiguousName as i32, 17);
        assert_eq!(Status::ALL.len(), 18);
    }

    #[test]
    fn versions_needs_an_output() {
        // SAFETY: NULL (refused) and a valid output struct.
        assert_eq!(unsafe { cudyn_versions(std::ptr::null_mut()) }, Status::InvalidArgument);
        let mut v = cudyn_version_info::default();
        // SAFETY: as above.
        assert_eq!(unsafe { cudyn_versions(&mut v) }, Status::Success);
        assert_eq!(v.cudyn, cudyn_version_int());
        assert_eq!(cudyn_component_status(9), Status::InvalidArgument);
        assert!(cudyn_component_path(9).is_null());
    }
}
