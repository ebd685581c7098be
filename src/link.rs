//! Linking with nvJitLink: cubin, fatbin, PTX, LTO-IR, object and library inputs into one
//! cubin, with `-lto` for link-time optimisation; the logs come back either way.

use crate::error::{Error, Status};
use crate::image::CodeKind;
use crate::nvjitlink::{jitlink, JitLink};
use crate::sys;
use std::os::raw::c_char;
use std::ptr;

/// The nvJitLink input type of a code kind: cubin, fatbin, PTX, LTO-IR, a host object or a
/// static library with embedded device code; None for the kinds nvJitLink does not take.
fn input_type(k: CodeKind) -> Option<sys::nvJitLinkInputType> {
    use sys::nvJitLinkInputType as T;
    Some(match k {
        CodeKind::Cubin => T::NVJITLINK_INPUT_CUBIN,
        CodeKind::Fatbin => T::NVJITLINK_INPUT_FATBIN,
        CodeKind::Ptx => T::NVJITLINK_INPUT_PTX,
        CodeKind::LtoIr => T::NVJITLINK_INPUT_LTOIR,
        CodeKind::Object => T::NVJITLINK_INPUT_OBJECT,
        CodeKind::Library => T::NVJITLINK_INPUT_LIBRARY,
        CodeKind::Unknown | CodeKind::Source => return None,
    })
}

/// One input to [`link`]: its bytes, what they are, and a name for the log.
pub struct LinkInput<'a> {
    /// Any kind but `Unknown` and `Source`.
    pub kind: CodeKind,
    /// The input's bytes.
    pub data: &'a [u8],
    /// The input's name, as nvJitLink's log shows it.
    pub name: &'a str,
}

/// A link's result: the cubin and nvJitLink's info log.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The linked cubin.
    pub cubin: Vec<u8>,
    /// nvJitLink's info log.
    pub log: String,
}

/// A failed link: the error and nvJitLink's log.
#[derive(Debug, Clone)]
pub struct LinkFailure {
    /// What failed ([`Status::LinkFailed`] when nvJitLink refused the inputs).
    pub error: Error,
    /// nvJitLink's error and info log (empty when it never ran).
    pub log: String,
}

impl From<Error> for LinkFailure {
    fn from(error: Error) -> Self {
        LinkFailure { error, log: String::new() }
    }
}

/// The error's message, then nvJitLink's log (when there is one) on the lines after it.
impl std::fmt::Display for LinkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error.message)?;
        let log = self.log.trim_end();
        if !log.is_empty() {
            write!(f, "\n{log}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LinkFailure {}

/// The failure as a plain [`Error`], the log kept at the end of the message (as `Display`).
impl From<LinkFailure> for Error {
    fn from(f: LinkFailure) -> Self {
        let message = f.to_string();
        Error { message, ..f.error }
    }
}

struct Handle<'a> {
    jl: &'a JitLink,
    h: sys::nvJitLinkHandle,
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.jl.f.destroy {
            // SAFETY: h is a live handle from nvJitLinkCreate.
            unsafe { f(&mut self.h) };
        }
    }
}

fn logs(jl: &JitLink, h: sys::nvJitLinkHandle) -> (String, String) {
    type SizeFn = unsafe extern "C" fn(sys::nvJitLinkHandle, *mut usize) -> sys::nvJitLinkResult;
    type GetFn = unsafe extern "C" fn(sys::nvJitLinkHandle, *mut c_char) -> sys::nvJitLinkResult;
    let read = |size: Option<SizeFn>, get: Option<GetFn>| -> String {
        let (Some(size), Some(get)) = (size, get) else { return String::new() };
        crate::compile::read_log(
            // SAFETY: valid out-pointer on a live handle.
            |n| unsafe { size(h, n) }.0 == 0,
            // SAFETY: `read_log` passes a buffer of the size nvJitLink reported.
            |buf| unsafe { get(h, buf) }.0 == 0,
        )
    };
    (read(jl.f.error_log_size, jl.f.error_log), read(jl.f.info_log_size, jl.f.info_log))
}

/// Link `inputs` into a cubin. Without an `-arch=sm_XY` option the present GPU's (sm_90
/// without a GPU) is used, as for compiling.
pub fn link(inputs: &[LinkInput<'_>], options: &[String]) -> std::result::Result<Linked, LinkFailure> {
    if inputs.is_empty() {
        return Err(Error::invalid("nothing to link: no inputs").into());
    }
    let mut types = Vec::with_capacity(inputs.len());
    for (i, inp) in inputs.iter().enumerate() {
        types.push(input_type(inp.kind).ok_or_else(|| {
            Error::invalid(format!("link input {i} ('{}'): {} cannot be linked", inp.name, inp.kind))
        })?);
    }
    let jl = jitlink()?;
    let mut opts = options.to_vec();
    if !opts.iter().any(|o| o.starts_with("-arch")) {
        opts.push(format!("-arch=sm_{}", crate::compile::default_sm()));
    }
    let copts = crate::compile::cstrings(opts.iter().map(String::as_str), "option")?;
    let op: Vec<*const c_char> = copts.iter().map(|c| c.as_ptr()).collect();
    // nvJitLink keeps the input names (it quotes them in errors at nvJitLinkComplete) without
    // copying them: they must outlive the handle, so they are made before it (dropped after).
    let names = crate::compile::cstrings(inputs.iter().map(|i| i.name), "link input name")?;
    let create = jl.need(jl.f.create, "nvJitLinkCreate")?;
    let mut h = Handle { jl, h: ptr::null_mut() };
    // SAFETY: options array of op.len() NUL-terminated strings, valid out-pointer.
    let r = unsafe { create(&mut h.h, op.len() as u32, op.as_ptr()) };
    if r.0 != 0 {
        return Err(Error::with_code(
            Status::InvalidArgument,
            r.0 as i32,
            format!("nvJitLinkCreate refused the options {opts:?} (nvJitLinkResult {})", r.0),
        )
        .into());
    }
    let add = jl.need(jl.f.add_data, "nvJitLinkAddData")?;
    for (i, inp) in inputs.iter().enumerate() {
        if inp.data.is_empty() {
            return Err(Error::invalid(format!("link input {i} ('{}') is empty", inp.name)).into());
        }
        // SAFETY: data/len describe a live buffer; the name is NUL-terminated and outlives h.
        let r = unsafe { add(h.h, types[i], inp.data.as_ptr().cast(), inp.data.len(), names[i].as_ptr()) };
        if r.0 != 0 {
            let (err, _) = logs(jl, h.h);
            let first = err.lines().next().unwrap_or("").to_string();
            return Err(LinkFailure {
                error: Error::with_code(
                    Status::LinkFailed,
                    r.0 as i32,
                    format!("adding link input {i} ('{}', {:?}): {first}", inp.name, inp.kind),
                ),
                log: err,
            });
        }
    }
    let complete = jl.need(jl.f.complete, "nvJitLinkComplete")?;
    // SAFETY: live handle.
    let r = unsafe { complete(h.h) };
    let (err, info) = logs(jl, h.h);
    if r.0 != 0 {
        let first =
            err.lines().find(|l| l.contains("error")).or_else(|| err.lines().next()).unwrap_or("").trim().to_string();
        return Err(LinkFailure {
            error: Error::with_code(
                Status::LinkFailed,
                r.0 as i32,
                format!("linking failed (nvJitLinkResult {}): {first}", r.0),
            ),
            log: if info.is_empty() { err } else { format!("{err}\n{info}") },
        });
    }
    let size = jl.need(jl.f.cubin_size, "nvJitLinkGetLinkedCubinSize")?;
    let get = jl.need(jl.f.cubin, "nvJitLinkGetLinkedCubin")?;
    let mut n = 0usize;
    // SAFETY: valid out-pointer on a completed link.
    if unsafe { size(h.h, &mut n) }.0 != 0 || n == 0 {
        return Err(Error::new(Status::LinkFailed, "nvJitLink produced no cubin").into());
    }
    let mut cubin = vec![0u8; n];
    // SAFETY: cubin has the size reported.
    let r = unsafe { get(h.h, cubin.as_mut_ptr().cast()) };
    if r.0 != 0 {
        return Err(Error::with_code(Status::LinkFailed, r.0 as i32, "reading the linked cubin").into());
    }
    Ok(Linked { cubin, log: info })
}
