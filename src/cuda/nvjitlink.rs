//! nvJitLink (libnvJitLink.so.13, else .so.12), opened at run time; entry points resolved by
//! their unversioned exported names, whose prototypes match the header's versioned ones. Its
//! calls, as a [`Linker`] that owns an `nvJitLinkHandle` and methods returning `Result`.

use super::dl::{Component, Lib};
use super::nvrtc::{read_log, reported_buffer, MAX_CODE_BYTES};
use super::open::{Lazy, Opened};
use super::sys;
use crate::error::{Error, Result, Status};
use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr;

super::dl::symbol_table! {
    pub struct JitLinkFns {
        version: PFN_nvJitLinkVersion = "nvJitLinkVersion",
        create: PFN___nvJitLinkCreate_13_0 = "nvJitLinkCreate",
        destroy: PFN___nvJitLinkDestroy_13_0 = "nvJitLinkDestroy",
        add_data: PFN___nvJitLinkAddData_13_0 = "nvJitLinkAddData",
        complete: PFN___nvJitLinkComplete_13_0 = "nvJitLinkComplete",
        cubin_size: PFN___nvJitLinkGetLinkedCubinSize_13_0 = "nvJitLinkGetLinkedCubinSize",
        cubin: PFN___nvJitLinkGetLinkedCubin_13_0 = "nvJitLinkGetLinkedCubin",
        error_log_size: PFN___nvJitLinkGetErrorLogSize_13_0 = "nvJitLinkGetErrorLogSize",
        error_log: PFN___nvJitLinkGetErrorLog_13_0 = "nvJitLinkGetErrorLog",
        info_log_size: PFN___nvJitLinkGetInfoLogSize_13_0 = "nvJitLinkGetInfoLogSize",
        info_log: PFN___nvJitLinkGetInfoLog_13_0 = "nvJitLinkGetInfoLog",
    }
}

/// nvJitLink, opened.
pub type JitLink = Opened<JitLinkFns>;

static JITLINK: Lazy<JitLinkFns> = Lazy::new(Component::NvJitLink, accept);

/// The process's nvJitLink, opened on first use.
pub fn jitlink() -> Result<&'static JitLink> {
    JITLINK.get()
}

/// A candidate libnvJitLink: one with nvJitLinkVersion (12.3+) and the unversioned entry points.
fn accept(lib: &Lib) -> Result<(i32, JitLinkFns, ())> {
    let f = JitLinkFns::resolve(lib);
    let (mut major, mut minor) = (0u32, 0u32);
    match f.version {
        // SAFETY: valid out-pointers.
        Some(v) => unsafe { v(&mut major, &mut minor) },
        None => return Err(Error::new(Status::UnsupportedVersion, "library has no nvJitLinkVersion (needs 12.3+)")),
    };
    if f.create.is_none() || f.complete.is_none() {
        return Err(Error::new(
            Status::UnsupportedVersion,
            format!("nvJitLink {major}.{minor} lacks unversioned entry points"),
        ));
    }
    Ok(((major * 1000 + minor * 10) as i32, f, ()))
}

/// What a link input is, as nvJitLink names it.
pub use sys::nvJitLinkInputType as InputType;

/// A link in progress, destroyed on drop. The input names are kept by nvJitLink without a copy
/// (it quotes them in errors at `complete`), so the linker owns them.
pub struct Linker {
    jl: &'static JitLink,
    h: sys::nvJitLinkHandle,
    names: Vec<CString>,
}

impl Drop for Linker {
    fn drop(&mut self) {
        if let Some(f) = self.jl.f.destroy {
            // SAFETY: h is a live handle from nvJitLinkCreate (or NULL, which it refuses),
            // destroyed once.
            unsafe { f(&mut self.h) };
        }
    }
}

impl Linker {
    /// A link with `options` (e.g. "-arch=sm_90", "-lto"). Err: InvalidArgument when
    /// nvJitLink refuses them (its code in `cuda_code`).
    pub fn new(jl: &'static JitLink, options: &[CString]) -> Result<Linker> {
        let create = jl.need(jl.f.create, "nvJitLinkCreate")?;
        let op: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
        let n = u32::try_from(op.len()).map_err(|_| Error::invalid("too many link options"))?;
        let mut l = Linker { jl, h: ptr::null_mut(), names: Vec::new() };
        // SAFETY: an array of `n` NUL-terminated strings; valid out-pointer.
        let r = unsafe { create(&mut l.h, n, op.as_ptr()) };
        if r.0 != 0 {
            return Err(Error::with_code(
                Status::InvalidArgument,
                r.0 as i32,
                format!(
                    "nvJitLinkCreate refused the options {:?} (nvJitLinkResult {})",
                    options.iter().map(|o| o.to_string_lossy()).collect::<Vec<_>>(),
                    r.0
                ),
            ));
        }
        Ok(l)
    }

    /// Add an input of `kind` named `name`. Err: LinkFailed with nvJitLink's code (the error
    /// log says why: `error_log`).
    pub fn add(&mut self, kind: InputType, data: &[u8], name: CString) -> Result<()> {
        let add = self.jl.need(self.jl.f.add_data, "nvJitLinkAddData")?;
        self.names.push(name);
        let name = self.names.last().map_or(ptr::null(), |n| n.as_ptr());
        // SAFETY: live handle; data/len describe a live buffer (copied by nvJitLink); the name
        // is NUL-terminated and lives as long as the handle (it is in `self.names`).
        let r = unsafe { add(self.h, kind, data.as_ptr().cast(), data.len(), name) };
        if r.0 != 0 {
            return Err(Error::with_code(Status::LinkFailed, r.0 as i32, format!("nvJitLinkResult {}", r.0)));
        }
        Ok(())
    }

    /// Link. Err: LinkFailed with nvJitLink's code (the error log says why).
    pub fn complete(&mut self) -> Result<()> {
        let complete = self.jl.need(self.jl.f.complete, "nvJitLinkComplete")?;
        // SAFETY: live handle.
        let r = unsafe { complete(self.h) };
        if r.0 != 0 {
            return Err(Error::with_code(Status::LinkFailed, r.0 as i32, format!("nvJitLinkResult {}", r.0)));
        }
        Ok(())
    }

    /// The linked cubin (after `complete`).
    pub fn cubin(&self) -> Result<Vec<u8>> {
        let size = self.jl.need(self.jl.f.cubin_size, "nvJitLinkGetLinkedCubinSize")?;
        let get = self.jl.need(self.jl.f.cubin, "nvJitLinkGetLinkedCubin")?;
        let mut n = 0usize;
        // SAFETY: valid out-pointer on a live handle.
        if unsafe { size(self.h, &mut n) }.0 != 0 || n == 0 {
            return Err(Error::new(Status::LinkFailed, "nvJitLink produced no cubin"));
        }
        let mut cubin =
            reported_buffer(n, MAX_CODE_BYTES, "linked cubin").map_err(|why| Error::new(Status::LinkFailed, why))?;
        // SAFETY: cubin has the size reported.
        let r = unsafe { get(self.h, cubin.as_mut_ptr().cast()) };
        if r.0 != 0 {
            return Err(Error::with_code(Status::LinkFailed, r.0 as i32, "reading the linked cubin"));
        }
        Ok(cubin)
    }

    /// nvJitLink's error log ("" when there is none or it cannot be read).
    pub fn error_log(&self) -> String {
        self.log(self.jl.f.error_log_size, self.jl.f.error_log)
    }

    /// nvJitLink's info log.
    pub fn info_log(&self) -> String {
        self.log(self.jl.f.info_log_size, self.jl.f.info_log)
    }

    fn log(&self, size: Option<SizeFn>, get: Option<GetFn>) -> String {
        let (Some(size), Some(get)) = (size, get) else { return String::new() };
        read_log(
            // SAFETY: valid out-pointer on a live handle.
            |n| unsafe { size(self.h, n) }.0 == 0,
            // SAFETY: `read_log` passes a buffer of the size nvJitLink reported.
            |buf| unsafe { get(self.h, buf) }.0 == 0,
        )
    }
}

type SizeFn = unsafe extern "C" fn(sys::nvJitLinkHandle, *mut usize) -> sys::nvJitLinkResult;
type GetFn = unsafe extern "C" fn(sys::nvJitLinkHandle, *mut c_char) -> sys::nvJitLinkResult;
