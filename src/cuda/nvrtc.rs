//! NVRTC (libnvrtc.so.13, else .so.12), opened at run time with its builtins library found
//! beside it; entry points resolved by name once. Its calls, as a [`Program`] that owns an
//! `nvrtcProgram` and methods returning `Result`.

use super::dl::{Component, Lib};
use super::open::{Lazy, Opened};
use super::sys;
use crate::error::{Error, Result, Status};
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;

super::dl::symbol_table! {
    pub struct NvrtcFns {
        nvrtcVersion: PFN_nvrtcVersion = "nvrtcVersion",
        nvrtcGetErrorString: PFN_nvrtcGetErrorString = "nvrtcGetErrorString",
        nvrtcCreateProgram: PFN_nvrtcCreateProgram = "nvrtcCreateProgram",
        nvrtcDestroyProgram: PFN_nvrtcDestroyProgram = "nvrtcDestroyProgram",
        nvrtcCompileProgram: PFN_nvrtcCompileProgram = "nvrtcCompileProgram",
        nvrtcGetProgramLogSize: PFN_nvrtcGetProgramLogSize = "nvrtcGetProgramLogSize",
        nvrtcGetProgramLog: PFN_nvrtcGetProgramLog = "nvrtcGetProgramLog",
        nvrtcGetCUBINSize: PFN_nvrtcGetCUBINSize = "nvrtcGetCUBINSize",
        nvrtcGetCUBIN: PFN_nvrtcGetCUBIN = "nvrtcGetCUBIN",
        nvrtcGetPTXSize: PFN_nvrtcGetPTXSize = "nvrtcGetPTXSize",
        nvrtcGetPTX: PFN_nvrtcGetPTX = "nvrtcGetPTX",
        nvrtcGetLTOIRSize: PFN_nvrtcGetLTOIRSize = "nvrtcGetLTOIRSize",
        nvrtcGetLTOIR: PFN_nvrtcGetLTOIR = "nvrtcGetLTOIR",
        nvrtcAddNameExpression: PFN_nvrtcAddNameExpression = "nvrtcAddNameExpression",
        nvrtcGetLoweredName: PFN_nvrtcGetLoweredName = "nvrtcGetLoweredName",
    }
}

/// NVRTC, opened.
pub type Nvrtc = Opened<NvrtcFns>;

static NVRTC: Lazy<NvrtcFns> = Lazy::new(Component::Nvrtc, accept);

/// The process's NVRTC, opened on first use.
pub fn nvrtc() -> Result<&'static Nvrtc> {
    NVRTC.get()
}

/// A candidate libnvrtc: one with nvrtcVersion, 12.0 or newer.
fn accept(lib: &Lib) -> Result<(i32, NvrtcFns, ())> {
    let f = NvrtcFns::resolve(lib);
    let (mut major, mut minor) = (0, 0);
    match f.nvrtcVersion {
        // SAFETY: valid out-pointers.
        Some(v) => unsafe { v(&mut major, &mut minor) },
        // Every NVRTC has nvrtcVersion: a file without it is something else.
        None => return Err(Error::new(Status::NvrtcNotFound, "not NVRTC: the library has no nvrtcVersion")),
    };
    if major < 12 {
        return Err(Error::new(
            Status::UnsupportedVersion,
            format!("NVRTC {major}.{minor} found, cudyn needs 12.0 or newer"),
        ));
    }
    // NVRTC opens its builtins by name when it compiles: the search opened the ones beside it
    // already, else they must come from nowhere cudyn does not trust.
    super::dl::guard_by_name(&format!("libnvrtc-builtins.so.{major}.{minor}"), super::dl::Ahead::Places)
        .map_err(|why| Error::new(Status::NvrtcNotFound, format!("NVRTC {major}.{minor} is not used: {why}")))?;
    Ok((major * 1000 + minor * 10, f, ()))
}

impl Nvrtc {
    /// NVRTC's text for `r`.
    pub fn describe(&self, r: sys::nvrtcResult) -> String {
        let text = self
            .f
            .nvrtcGetErrorString
            // SAFETY: returns a static string for any code.
            .map(|f| unsafe { f(r) })
            // SAFETY: NULL or a NUL-terminated string of NVRTC's.
            .and_then(|p| unsafe { bounded_c_string(p, MAX_NAME_BYTES) });
        text.unwrap_or_else(|| format!("nvrtcResult {}", r.0))
    }

    /// NVRTC_SUCCESS -> Ok; otherwise an Error of `status` with the code, its text and what
    /// was being done.
    pub fn check(&self, r: sys::nvrtcResult, status: Status, what: impl std::fmt::Display) -> Result<()> {
        if r.0 == 0 {
            return Ok(());
        }
        Err(Error::with_code(status, r.0 as i32, format!("{what}: {}", self.describe(r))))
    }
}

/// The stack NVRTC compiles on (see `Program::compile`): 256 MiB of address space, of which a
/// compile touches a few hundred KiB unless its source nests deep.
const COMPILE_STACK: usize = 256 << 20;

/// `nvrtcCompileProgram`'s code for an option NVRTC does not know.
pub const NVRTC_ERROR_INVALID_OPTION: i32 = 5;

/// An NVRTC program, destroyed on drop.
pub struct Program {
    nv: &'static Nvrtc,
    p: sys::nvrtcProgram,
}

impl Drop for Program {
    fn drop(&mut self) {
        if let Some(f) = self.nv.f.nvrtcDestroyProgram {
            // SAFETY: p is a live program created by nvrtcCreateProgram, destroyed once.
            unsafe { f(&mut self.p) };
        }
    }
}

impl Program {
    /// A program of `source` (named `name` in NVRTC's messages), with `headers` it may
    /// #include by name: (name, contents).
    pub fn new(nv: &'static Nvrtc, source: &CStr, name: &CStr, headers: &[(CString, CString)]) -> Result<Program> {
        let create = nv.need(nv.f.nvrtcCreateProgram, "nvrtcCreateProgram")?;
        let hn: Vec<*const c_char> = headers.iter().map(|h| h.0.as_ptr()).collect();
        let hb: Vec<*const c_char> = headers.iter().map(|h| h.1.as_ptr()).collect();
        let n = i32::try_from(headers.len()).map_err(|_| Error::invalid("too many headers"))?;
        let mut prog = Program { nv, p: ptr::null_mut() };
        // SAFETY: all strings are NUL-terminated and outlive the call; the header arrays have
        // exactly `n` entries (or are NULL when there are none).
        let r = unsafe {
            create(
                &mut prog.p,
                source.as_ptr(),
                name.as_ptr(),
                n,
                if hb.is_empty() { ptr::null() } else { hb.as_ptr() },
                if hn.is_empty() { ptr::null() } else { hn.as_ptr() },
            )
        };
        nv.check(r, Status::CompileFailed, "creating the NVRTC program")?;
        Ok(prog)
    }

    /// Ask for the lowered name of `expr` (e.g. "axpy<float>") after compiling.
    pub fn add_name_expression(&self, expr: &CStr) -> Result<()> {
        let add = self.nv.need(self.nv.f.nvrtcAddNameExpression, "nvrtcAddNameExpression")?;
        // SAFETY: live program, NUL-terminated expression.
        let r = unsafe { add(self.p, expr.as_ptr()) };
        self.nv.check(r, Status::InvalidArgument, format_args!("adding name expression '{}'", expr.to_string_lossy()))
    }

    /// Compile with `options`. Err: CompileFailed with NVRTC's code and text (the log says
    /// more: `log`).
    pub fn compile(&self, options: &[CString]) -> Result<()> {
        let comp = self.nv.need(self.nv.f.nvrtcCompileProgram, "nvrtcCompileProgram")?;
        let op: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
        let n = i32::try_from(op.len()).map_err(|_| Error::invalid("too many options"))?;
        let (p, list) = (self.p as usize, if op.is_empty() { ptr::null() } else { op.as_ptr() } as usize);
        let run = move || {
            // SAFETY: live program (joined before `self` can go); an array of `n`
            // NUL-terminated strings (or NULL for none) that outlives the call.
            unsafe { comp(p as _, n, list as *const *const c_char) }.0
        };
        // NVRTC's parser recurses per level of nesting in the source: on a 2 MiB thread stack
        // (a Rust thread's) 1,000 nested parentheses overflowed it and aborted the process. It
        // runs on a thread of its own with a large stack (address space: only what it touches
        // is used); where no such thread can be made, on this one.
        let r = std::thread::scope(|sc| {
            std::thread::Builder::new()
                .name("cudyn-nvrtc".into())
                .stack_size(COMPILE_STACK)
                .spawn_scoped(sc, run)
                .ok()
                .and_then(|h| h.join().ok())
        })
        .unwrap_or_else(run);
        let r = sys::nvrtcResult(r);
        if r.0 == 0 {
            return Ok(());
        }
        Err(Error::with_code(Status::CompileFailed, r.0 as i32, self.nv.describe(r)))
    }

    /// NVRTC's log ("" when there is none or it cannot be read).
    pub fn log(&self) -> String {
        let (Some(size), Some(get)) = (self.nv.f.nvrtcGetProgramLogSize, self.nv.f.nvrtcGetProgramLog) else {
            return String::new();
        };
        read_log(
            // SAFETY: valid out-pointer on a live program.
            |n| unsafe { size(self.p, n) }.0 == 0,
            // SAFETY: `read_log` passes a buffer of the size NVRTC reported.
            |buf| unsafe { get(self.p, buf) }.0 == 0,
        )
    }

    /// The compiled cubin.
    pub fn cubin(&self) -> Result<Vec<u8>> {
        self.code(self.nv.f.nvrtcGetCUBINSize, self.nv.f.nvrtcGetCUBIN, "cubin")
    }

    /// The compiled PTX (NUL-terminated).
    pub fn ptx(&self) -> Result<Vec<u8>> {
        self.code(self.nv.f.nvrtcGetPTXSize, self.nv.f.nvrtcGetPTX, "PTX")
    }

    /// The compiled LTO-IR.
    pub fn lto_ir(&self) -> Result<Vec<u8>> {
        self.code(self.nv.f.nvrtcGetLTOIRSize, self.nv.f.nvrtcGetLTOIR, "LTO-IR")
    }

    fn code(&self, size: Option<SizeFn>, get: Option<GetFn>, what: &str) -> Result<Vec<u8>> {
        let size = self.nv.need(size, what)?;
        let get = self.nv.need(get, what)?;
        let mut n = 0usize;
        // SAFETY: valid out-pointer on a live program.
        let r = unsafe { size(self.p, &mut n) };
        self.nv.check(r, Status::CompileFailed, format_args!("reading the {what} size"))?;
        if n == 0 {
            return Err(Error::invalid(format!(
                "NVRTC produced no {what} for these options (is the -arch right for this target?)"
            )));
        }
        let mut v = reported_buffer(n, MAX_CODE_BYTES, what).map_err(|why| Error::new(Status::CompileFailed, why))?;
        // SAFETY: v has exactly the size NVRTC reported.
        let r = unsafe { get(self.p, v.as_mut_ptr().cast()) };
        self.nv.check(r, Status::CompileFailed, format_args!("reading the {what}"))?;
        Ok(v)
    }

    /// The lowered (mangled) name of `expr`, added before compiling.
    pub fn lowered_name(&self, expr: &CStr) -> Result<String> {
        let getl = self.nv.need(self.nv.f.nvrtcGetLoweredName, "nvrtcGetLoweredName")?;
        let mut p: *const c_char = ptr::null();
        // SAFETY: live, compiled program; the returned string lives with the program.
        let r = unsafe { getl(self.p, expr.as_ptr(), &mut p) };
        self.nv.check(r, Status::NotFound, format_args!("lowered name of '{}'", expr.to_string_lossy()))?;
        if p.is_null() {
            return Ok(String::new());
        }
        // SAFETY: a C string owned by the program, copied before it is destroyed.
        unsafe { bounded_c_string(p, MAX_NAME_BYTES) }.ok_or_else(|| {
            Error::new(
                Status::CompileFailed,
                format!("NVRTC's lowered name of '{}' is longer than {MAX_NAME_BYTES} bytes", expr.to_string_lossy()),
            )
        })
    }
}

type SizeFn = unsafe extern "C" fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult;
type GetFn = unsafe extern "C" fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult;

/// The most bytes of code (cubin, PTX, LTO-IR) cudyn takes from NVRTC or nvJitLink: what the
/// image checks accept at most (`image::decompress::MAX_DECOMPRESSED`). A size reported above
/// it is an error, not an allocation.
pub const MAX_CODE_BYTES: usize = 1 << 30;
/// The most bytes of a log cudyn reads; a longer one is replaced by a note saying so.
pub const MAX_LOG_BYTES: usize = 64 << 20;
/// The most bytes of a name or message string cudyn copies out of NVRTC.
const MAX_NAME_BYTES: usize = 1 << 20;

/// A zeroed buffer for `n` bytes that a loaded library reported it will write: Err (why) when
/// `n` is over `max` or the memory cannot be had, never an abort.
pub(crate) fn reported_buffer(n: usize, max: usize, what: &str) -> std::result::Result<Vec<u8>, String> {
    if n > max {
        return Err(format!("the library reported a {what} of {n} bytes, more than the {max} bytes cudyn accepts"));
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| format!("cannot allocate {n} bytes for the {what}"))?;
    v.resize(n, 0);
    Ok(v)
}

/// `v` as text, invalid UTF-8 replaced by U+FFFD, with the memory for it reserved fallibly
/// (None when it cannot be had).
fn text_of(v: Vec<u8>) -> Option<String> {
    match String::from_utf8(v) {
        Ok(s) => Some(s),
        Err(e) => {
            let v = e.into_bytes();
            let need: usize =
                v.utf8_chunks().map(|c| c.valid().len() + if c.invalid().is_empty() { 0 } else { 3 }).sum();
            let mut s = String::new();
            s.try_reserve_exact(need).ok()?;
            for c in v.utf8_chunks() {
                s.push_str(c.valid());
                if !c.invalid().is_empty() {
                    s.push(char::REPLACEMENT_CHARACTER);
                }
            }
            Some(s)
        }
    }
}

/// A copy of the C string at `p`, if it ends within `max` bytes.
///
/// # Safety
/// `p` is NULL or points at a NUL-terminated string (or at least `max` readable bytes).
unsafe fn bounded_c_string(p: *const c_char, max: usize) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: strnlen reads at most `max` bytes.
    let n = unsafe { libc::strnlen(p, max) };
    if n == max {
        return None;
    }
    // SAFETY: `n` bytes before the NUL are readable.
    let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    Some(String::from_utf8_lossy(b).into_owned())
}

/// A log read the NVRTC / nvJitLink way: `size` reports its length (true: success), `get`
/// fills a buffer of that length. Trailing NULs are dropped; "" when either call fails; a
/// note instead of the log when its size is over `MAX_LOG_BYTES` or the memory cannot be had.
pub(crate) fn read_log(size: impl FnOnce(&mut usize) -> bool, get: impl FnOnce(*mut c_char) -> bool) -> String {
    let mut n = 0usize;
    if !size(&mut n) || n == 0 {
        return String::new();
    }
    let mut v = match reported_buffer(n, MAX_LOG_BYTES, "log") {
        Ok(v) => v,
        Err(why) => return format!("(log not read: {why})"),
    };
    if !get(v.as_mut_ptr().cast()) {
        return String::new();
    }
    while v.last() == Some(&0) {
        v.pop();
    }
    text_of(v).unwrap_or_else(|| format!("(log not read: cannot allocate {n} bytes to convert it)"))
}
