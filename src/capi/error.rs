//! cudyn.h section "Errors and versions": statuses, the thread's last error, versions.

use super::{ffi, out};
use crate::error::{last_cuda_error, last_error_message_ptr, Status};
use std::ffi::c_char;

/// Every fallible call's result. Numbers are stable; a retired number is never reused.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cudyn_status {
    CUDYN_SUCCESS = 0,
    /// NULL where a value is needed, a bad size or enum value.
    CUDYN_ERROR_INVALID_ARGUMENT = 1,
    /// libcuda.so.1 could not be opened.
    CUDYN_ERROR_DRIVER_NOT_FOUND = 2,
    /// No libcudart 12.8+ / 13.x could be opened.
    CUDYN_ERROR_RUNTIME_NOT_FOUND = 3,
    CUDYN_ERROR_NVRTC_NOT_FOUND = 4,
    CUDYN_ERROR_NVJITLINK_NOT_FOUND = 5,
    /// The component is too old for this call.
    CUDYN_ERROR_UNSUPPORTED_VERSION = 6,
    /// Driver present, no usable GPU.
    CUDYN_ERROR_NO_DEVICE = 7,
    /// Not a well-formed cubin/fatbin/PTX/LTO-IR.
    CUDYN_ERROR_INVALID_IMAGE = 8,
    /// Well-formed, but nothing this GPU can run.
    CUDYN_ERROR_NO_BINARY_FOR_DEVICE = 9,
    /// No kernel/global of that name.
    CUDYN_ERROR_NOT_FOUND = 10,
    /// NVRTC said no; the log says why.
    CUDYN_ERROR_COMPILE_FAILED = 11,
    CUDYN_ERROR_LINK_FAILED = 12,
    /// Launch arguments do not match the kernel's parameters.
    CUDYN_ERROR_ARGUMENT_MISMATCH = 13,
    CUDYN_ERROR_IO = 14,
    /// Any other CUDA failure; see cudyn_last_cuda_error.
    CUDYN_ERROR_CUDA = 15,
    /// A bug in cudyn (a caught panic).
    CUDYN_ERROR_INTERNAL = 16,
}

impl From<Status> for cudyn_status {
    fn from(s: Status) -> Self {
        use cudyn_status::*;
        match s {
            Status::Success => CUDYN_SUCCESS,
            Status::InvalidArgument => CUDYN_ERROR_INVALID_ARGUMENT,
            Status::DriverNotFound => CUDYN_ERROR_DRIVER_NOT_FOUND,
            Status::RuntimeNotFound => CUDYN_ERROR_RUNTIME_NOT_FOUND,
            Status::NvrtcNotFound => CUDYN_ERROR_NVRTC_NOT_FOUND,
            Status::NvjitlinkNotFound => CUDYN_ERROR_NVJITLINK_NOT_FOUND,
            Status::UnsupportedVersion => CUDYN_ERROR_UNSUPPORTED_VERSION,
            Status::NoDevice => CUDYN_ERROR_NO_DEVICE,
            Status::InvalidImage => CUDYN_ERROR_INVALID_IMAGE,
            Status::NoBinaryForDevice => CUDYN_ERROR_NO_BINARY_FOR_DEVICE,
            Status::NotFound => CUDYN_ERROR_NOT_FOUND,
            Status::CompileFailed => CUDYN_ERROR_COMPILE_FAILED,
            Status::LinkFailed => CUDYN_ERROR_LINK_FAILED,
            Status::ArgumentMismatch => CUDYN_ERROR_ARGUMENT_MISMATCH,
            Status::Io => CUDYN_ERROR_IO,
            Status::Cuda => CUDYN_ERROR_CUDA,
            Status::Internal => CUDYN_ERROR_INTERNAL,
        }
    }
}

/// Static text for a status: "CUDYN_ERROR_NOT_FOUND: no kernel or global of that name".
/// Never NULL; an unknown value gives "unknown cudyn_status". Takes an int so that any value
/// a C caller passes is safe.
#[no_mangle]
pub extern "C" fn cudyn_status_string(status: cudyn_status_int) -> *const c_char {
    usize::try_from(status)
        .ok()
        .and_then(|i| crate::error::STATUS_TEXT.get(i))
        .map_or(c"unknown cudyn_status".as_ptr(), |s| s.as_ptr())
}

/// A `cudyn_status` as it crosses into cudyn from C, where any int can arrive.
#[allow(non_camel_case_types)]
pub type cudyn_status_int = i32;

/// This thread's last failure, in words: what cudyn was doing, why it failed, and the CUDA
/// error's name and text. Never NULL ("" before any failure). The string belongs to cudyn and
/// stays valid until this thread's next failing cudyn call.
#[no_mangle]
pub extern "C" fn cudyn_last_error_message() -> *const c_char {
    std::panic::catch_unwind(last_error_message_ptr).unwrap_or(c"".as_ptr())
}

/// The CUresult / cudaError_t / nvrtcResult / nvJitLinkResult behind this thread's last
/// failure; 0 if none.
#[no_mangle]
pub extern "C" fn cudyn_last_cuda_error() -> i32 {
    std::panic::catch_unwind(last_cuda_error).unwrap_or(0)
}

/// Versions of what cudyn found, as CUDA numbers them (13000 for 13.0); 0 for a component
/// that is absent. `cudyn` is cudyn's own (major*10000 + minor*100 + patch).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct cudyn_versions_t {
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

/// Fill `out` with the versions of every component (opening each on first use). Always
/// succeeds for a non-NULL `out`; why a component is 0 is told by the component's own calls
/// (e.g. cudyn_library_load_data's status and message) or by cudyn_component_status.
#[no_mangle]
pub unsafe extern "C" fn cudyn_versions(versions: *mut cudyn_versions_t) -> cudyn_status {
    ffi!({
        let v = cudyn_versions_t {
            driver: crate::cuda::driver::driver().map(|d| d.version).unwrap_or(0),
            runtime: crate::cuda::runtime::runtime().map(|r| r.version).unwrap_or(0),
            nvrtc: crate::cuda::nvrtc::nvrtc().map(|n| n.version).unwrap_or(0),
            nvjitlink: crate::cuda::nvjitlink::jitlink().map(|j| j.version).unwrap_or(0),
            cudyn: cudyn_version_int(),
        };
        *out(versions, "versions")? = v;
        Ok(())
    })
}

/// Which CUDA component `cudyn_component_status` asks about.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cudyn_component {
    CUDYN_COMPONENT_DRIVER = 0,
    CUDYN_COMPONENT_RUNTIME = 1,
    CUDYN_COMPONENT_NVRTC = 2,
    CUDYN_COMPONENT_NVJITLINK = 3,
}

/// `cudyn_component` as it arrives from C.
pub type RawComponent = u32;

/// Open `component` (once) and say whether it is usable: CUDYN_SUCCESS, or the status and
/// message (cudyn_last_error_message) that explain why not, naming every place searched.
/// For the driver, success also means cuInit found a GPU.
#[no_mangle]
pub extern "C" fn cudyn_component_status(component: RawComponent) -> cudyn_status {
    ffi!({
        match component {
            0 => crate::cuda::driver::driver().and_then(|d| d.initialised()),
            1 => crate::cuda::runtime::runtime().map(|_| ()),
            2 => crate::cuda::nvrtc::nvrtc().map(|_| ()),
            3 => crate::cuda::nvjitlink::jitlink().map(|_| ()),
            other => Err(crate::Error::invalid(format!("unknown component {other}"))),
        }
    })
}

/// The path of the library file loaded for `component`, or the soname it was found by; NULL
/// when the component is absent. Static storage, valid for the life of the process.
#[no_mangle]
pub extern "C" fn cudyn_component_path(component: RawComponent) -> *const c_char {
    use std::sync::OnceLock;
    static PATHS: [OnceLock<Option<std::ffi::CString>>; 4] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let Some(slot) = PATHS.get(component as usize) else { return std::ptr::null() };
    std::panic::catch_unwind(|| {
        let p = slot.get_or_init(|| {
            let lib = match component {
                0 => crate::cuda::driver::driver().ok().map(|d| &d.lib),
                1 => crate::cuda::runtime::runtime().ok().map(|r| &r.lib),
                2 => crate::cuda::nvrtc::nvrtc().ok().map(|n| &n.lib),
                _ => crate::cuda::nvjitlink::jitlink().ok().map(|j| &j.lib),
            }?;
            let s = lib.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| lib.origin.clone());
            std::ffi::CString::new(s).ok()
        });
        p.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
    })
    .unwrap_or(std::ptr::null())
}

/// "cudyn 0.1.0 (driver 13.0, runtime 13.0, NVRTC 13.0, nvJitLink 13.0)"; absent components
/// say "absent". Static storage, computed once.
#[no_mangle]
pub extern "C" fn cudyn_version_string() -> *const c_char {
    use std::sync::OnceLock;
    static S: OnceLock<std::ffi::CString> = OnceLock::new();
    std::panic::catch_unwind(|| {
        S.get_or_init(|| {
            let mut v = cudyn_versions_t::default();
            // SAFETY: a valid output struct.
            unsafe { cudyn_versions(&mut v) };
            let f = |x: i32| if x == 0 { "absent".to_string() } else { crate::cuda::fmt_version(x) };
            std::ffi::CString::new(format!(
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
    .unwrap_or(c"cudyn".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_text_and_numbers_are_stable() {
        for i in 0..17 {
            // SAFETY: static C strings.
            let s = unsafe { std::ffi::CStr::from_ptr(cudyn_status_string(i)) }.to_str().unwrap();
            assert!(s.starts_with("CUDYN_"), "{s}");
        }
        // SAFETY: static C strings.
        let unknown = unsafe { std::ffi::CStr::from_ptr(cudyn_status_string(99)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown cudyn_status");
        assert!(!cudyn_status_string(-1).is_null());
        assert_eq!(cudyn_status::CUDYN_ERROR_INTERNAL as i32, 16);
        assert_eq!(cudyn_status::from(Status::ArgumentMismatch) as i32, Status::ArgumentMismatch as i32);
        for s in [Status::Success, Status::Io, Status::Cuda, Status::Internal, Status::NoBinaryForDevice] {
            assert_eq!(cudyn_status::from(s) as u32, s as u32);
        }
    }

    #[test]
    fn versions_needs_an_output() {
        // SAFETY: NULL (refused) and a valid output struct.
        assert_eq!(unsafe { cudyn_versions(std::ptr::null_mut()) }, cudyn_status::CUDYN_ERROR_INVALID_ARGUMENT);
        let mut v = cudyn_versions_t::default();
        // SAFETY: as above.
        assert_eq!(unsafe { cudyn_versions(&mut v) }, cudyn_status::CUDYN_SUCCESS);
        assert_eq!(v.cudyn, cudyn_version_int());
        assert_eq!(cudyn_component_status(9), cudyn_status::CUDYN_ERROR_INVALID_ARGUMENT);
        assert!(cudyn_component_path(9).is_null());
    }
}
