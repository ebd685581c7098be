//! cudyn.h section "Code, compiling and linking": code kinds, owned buffers, NVRTC, nvJitLink,
//! loading from source, and the compile cache.

use super::error::cudyn_status;
use super::{ffi, out, slice, strings, utf8};
use crate::compile::{self, CompileOptions, Compiled};
use crate::handles::LibraryHandle;
use crate::image::{self, CodeKind};
use crate::launch::RawApi;
use crate::library::Api;
use crate::link::{self, InputKind, LinkInput};
use crate::{Error, Result};
use std::ffi::{c_char, c_void};

/// What kind of code a buffer holds.
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum cudyn_code_kind {
    CUDYN_CODE_UNKNOWN = 0,
    CUDYN_CODE_CUBIN = 1,
    CUDYN_CODE_FATBIN = 2,
    CUDYN_CODE_PTX = 3,
    CUDYN_CODE_LTOIR = 4,
    CUDYN_CODE_SOURCE = 5,
    /// A host object file with embedded device code (link input only).
    CUDYN_CODE_OBJECT = 6,
    /// A static library of such objects (link input only).
    CUDYN_CODE_LIBRARY = 7,
}

/// `cudyn_code_kind` as it arrives from C.
pub type RawCodeKind = u32;

impl From<CodeKind> for cudyn_code_kind {
    fn from(k: CodeKind) -> Self {
        match k {
            CodeKind::Unknown => cudyn_code_kind::CUDYN_CODE_UNKNOWN,
            CodeKind::Cubin => cudyn_code_kind::CUDYN_CODE_CUBIN,
            CodeKind::Fatbin => cudyn_code_kind::CUDYN_CODE_FATBIN,
            CodeKind::Ptx => cudyn_code_kind::CUDYN_CODE_PTX,
            CodeKind::LtoIr => cudyn_code_kind::CUDYN_CODE_LTOIR,
            CodeKind::Source => cudyn_code_kind::CUDYN_CODE_SOURCE,
        }
    }
}

fn code_kind(v: RawCodeKind) -> Result<CodeKind> {
    Ok(match v {
        0 => CodeKind::Unknown,
        1 => CodeKind::Cubin,
        2 => CodeKind::Fatbin,
        3 => CodeKind::Ptx,
        4 => CodeKind::LtoIr,
        5 => CodeKind::Source,
        _ => return Err(Error::invalid(format!("{v} is not a compile target (cubin, PTX or LTO-IR)"))),
    })
}

/// Memory cudyn allocated and the caller owns: release it with cudyn_buffer_free.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct cudyn_buffer {
    pub data: *mut c_void,
    pub size: usize,
}

/// A buffer holding `bytes` plus a NUL after them (not counted in size), so text is a C string.
fn buffer_from(bytes: &[u8]) -> Result<cudyn_buffer> {
    // SAFETY: malloc of a non-zero size; checked for NULL below.
    let p = unsafe { libc::malloc(bytes.len() + 1) } as *mut u8;
    if p.is_null() {
        return Err(Error::new(crate::Status::Internal, format!("out of memory allocating {} bytes", bytes.len() + 1)));
    }
    // SAFETY: p has room for len + 1 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
    }
    Ok(cudyn_buffer { data: p.cast(), size: bytes.len() })
}

/// Store into an optional output buffer (NULL: the caller does not want it).
pub(crate) fn give(dst: *mut cudyn_buffer, bytes: &[u8]) -> Result<()> {
    // SAFETY: NULL or a writable cudyn_buffer (caller's contract).
    if let Some(d) = unsafe { dst.as_mut() } {
        *d = buffer_from(bytes)?;
    }
    Ok(())
}

/// Free a buffer cudyn filled and set it to {NULL, 0}. NULL, or a buffer already freed, is a
/// no-op.
#[no_mangle]
pub unsafe extern "C" fn cudyn_buffer_free(buffer: *mut cudyn_buffer) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: NULL or a cudyn_buffer whose data came from cudyn (malloc) or is NULL.
        if let Some(b) = unsafe { buffer.as_mut() } {
            unsafe { libc::free(b.data) };
            b.data = std::ptr::null_mut();
            b.size = 0;
        }
    });
}

/// What kind of code `data` holds, from its first bytes (cheap; loading checks it fully).
#[no_mangle]
pub unsafe extern "C" fn cudyn_code_kind_of(
    data: *const c_void,
    size: usize,
    kind: *mut cudyn_code_kind,
) -> cudyn_status {
    ffi!({
        // SAFETY: `data` points to `size` readable bytes (caller's contract).
        let bytes = unsafe { slice(data.cast::<u8>(), size, "data") }?;
        let o = out(kind, "kind")?;
        *o = image::code_kind_of(bytes).into();
        Ok(())
    })
}

/// Options for cudyn_compile_ex and cudyn_library_load_source_ex. Zero-initialise it, then
/// set what you need; later fields are carved from `reserved`, which must stay zero.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct cudyn_compile_options {
    /// NVRTC options ("-std=c++17", "-DN=4", "-arch=sm_90", ...). Without an -arch option the
    /// code is SASS for the present GPU (sm_90 when there is none).
    pub options: *const *const c_char,
    pub num_options: usize,
    /// Headers the source may #include by name: parallel arrays of names and contents.
    pub header_names: *const *const c_char,
    pub header_sources: *const *const c_char,
    pub num_headers: usize,
    /// C++ names to instantiate and find ("axpy<float>"); their lowered names come back.
    pub name_expressions: *const *const c_char,
    pub num_name_expressions: usize,
    /// CUDYN_CODE_CUBIN (also 0), CUDYN_CODE_PTX or CUDYN_CODE_LTOIR.
    pub target: RawCodeKind,
    pub reserved: [u32; 7],
}

unsafe fn read_options(o: *const cudyn_compile_options) -> Result<CompileOptions> {
    // SAFETY: NULL or a readable struct (caller's contract).
    let Some(o) = (unsafe { o.as_ref() }) else { return Ok(CompileOptions::default()) };
    if o.reserved.iter().any(|&r| r != 0) {
        return Err(Error::invalid("cudyn_compile_options.reserved is not zero: zero-initialise the struct"));
    }
    // SAFETY: each array has the stated count of C strings (caller's contract).
    let (options, names, bodies, exprs) = unsafe {
        (
            strings(o.options, o.num_options, "options")?,
            strings(o.header_names, o.num_headers, "header_names")?,
            strings(o.header_sources, o.num_headers, "header_sources")?,
            strings(o.name_expressions, o.num_name_expressions, "name_expressions")?,
        )
    };
    // 0: the default (a cubin); anything else is checked where it is used
    // (compile::effective_options).
    let target = match code_kind(o.target)? {
        CodeKind::Unknown => None,
        k => Some(k),
    };
    Ok(CompileOptions { options, headers: names.into_iter().zip(bodies).collect(), name_expressions: exprs, target })
}

/// The lowered names, each followed by a NUL, in the order of the name expressions.
fn lowered_bytes(c: &Compiled) -> Vec<u8> {
    let mut v = Vec::new();
    for (_, l) in &c.lowered {
        v.extend_from_slice(l.as_bytes());
        v.push(0);
    }
    v
}

/// The source text and the program name (NULL: a default) of a compile call.
fn source_and_name<'a>(source: *const c_char, name: *const c_char) -> Result<(&'a str, &'a str)> {
    // SAFETY: NUL-terminated strings (caller's contract); name may be NULL.
    let src = unsafe { utf8(source, "source") }?;
    let nm = if name.is_null() { "cudyn_program.cu" } else { unsafe { utf8(name, "name") }? };
    Ok((src, nm))
}

/// A successful compile's log and lowered names into the caller's optional buffers.
fn give_log_and_names(log: *mut cudyn_buffer, lowered: *mut cudyn_buffer, c: &Compiled) -> Result<()> {
    give(log, c.log.as_bytes())?;
    give(lowered, &lowered_bytes(c))
}

fn compile_into(
    source: *const c_char,
    name: *const c_char,
    opts: CompileOptions,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
    lowered: *mut cudyn_buffer,
) -> Result<()> {
    let (src, nm) = source_and_name(source, name)?;
    out(code, "code")?;
    match compile::compile(src, nm, &opts) {
        Ok(c) => {
            give_log_and_names(log, lowered, &c)?;
            give(code, &c.code)
        }
        Err(f) => {
            give(log, f.log.as_bytes())?;
            Err(f.error)
        }
    }
}

/// Compile CUDA C++ `source` with NVRTC (through the cache) to `target` (CUDYN_CODE_CUBIN,
/// _PTX or _LTOIR). `name` names the program in messages (may be NULL). On success `*code`
/// holds the result; `*log`, when `log` is not NULL, holds NVRTC's log on success and on
/// failure (CUDYN_ERROR_COMPILE_FAILED, whose message quotes the first error line). Free both
/// with cudyn_buffer_free.
#[no_mangle]
pub unsafe extern "C" fn cudyn_compile(
    source: *const c_char,
    name: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    target: RawCodeKind,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        let o = cudyn_compile_options {
            options,
            num_options,
            header_names: std::ptr::null(),
            header_sources: std::ptr::null(),
            num_headers: 0,
            name_expressions: std::ptr::null(),
            num_name_expressions: 0,
            target,
            reserved: [0; 7],
        };
        // SAFETY: the struct was just built from the caller's arguments.
        let opts = unsafe { read_options(&o) }?;
        compile_into(source, name, opts, code, log, std::ptr::null_mut())
    })
}

/// cudyn_compile with headers and name expressions (`options` may be NULL for defaults).
/// `*lowered_names`, when not NULL, receives the lowered (mangled) name of each name
/// expression, each followed by a NUL, in order.
#[no_mangle]
pub unsafe extern "C" fn cudyn_compile_ex(
    source: *const c_char,
    name: *const c_char,
    options: *const cudyn_compile_options,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
    lowered_names: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        // SAFETY: forwarded contract.
        let opts = unsafe { read_options(options) }?;
        compile_into(source, name, opts, code, log, lowered_names)
    })
}

fn load_source(
    source: *const c_char,
    name: *const c_char,
    opts: CompileOptions,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    lowered: *mut cudyn_buffer,
) -> Result<()> {
    let api = Api::from_raw(api)?;
    let (src, nm) = source_and_name(source, name)?;
    let o = out(library, "library")?;
    match crate::source::load_source(src, nm, &opts, api) {
        Ok((lib, c)) => {
            give_log_and_names(log, lowered, &c)?;
            *o = lib.into_raw();
            Ok(())
        }
        Err(f) => {
            give(log, f.log.as_bytes())?;
            Err(f.error)
        }
    }
}

/// Compile `source` (through the cache) for the present GPU and load it through `api`.
/// Ownership as for cudyn_library_load_data; `log` as for cudyn_compile.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_source(
    source: *const c_char,
    name: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        // SAFETY: `options` holds `num_options` C strings (caller's contract).
        let options = unsafe { strings(options, num_options, "options") }?;
        load_source(
            source,
            name,
            CompileOptions { options, ..Default::default() },
            api,
            library,
            log,
            std::ptr::null_mut(),
        )
    })
}

/// cudyn_library_load_source with headers and name expressions; `lowered_names` as for
/// cudyn_compile_ex, ready for cudyn_library_get_kernel.
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_source_ex(
    source: *const c_char,
    name: *const c_char,
    options: *const cudyn_compile_options,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    lowered_names: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        // SAFETY: forwarded contract.
        let opts = unsafe { read_options(options) }?;
        if !matches!(opts.target, None | Some(CodeKind::Cubin)) {
            return Err(Error::invalid("load_source compiles to a cubin; leave target 0"));
        }
        load_source(source, name, opts, api, library, log, lowered_names)
    })
}

/// One input to cudyn_link: its kind, bytes and a name for messages (may be NULL).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct cudyn_link_input {
    pub kind: RawCodeKind,
    pub data: *const c_void,
    pub size: usize,
    pub name: *const c_char,
}

/// Link `inputs` with nvJitLink into one cubin (`options` e.g. "-lto", "-arch=sm_90"; without
/// -arch the present GPU's). `*log`, when not NULL, receives nvJitLink's log on success and on
/// failure (CUDYN_ERROR_LINK_FAILED, whose message quotes the first error).
#[no_mangle]
pub unsafe extern "C" fn cudyn_link(
    inputs: *const cudyn_link_input,
    num_inputs: usize,
    options: *const *const c_char,
    num_options: usize,
    cubin: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
) -> cudyn_status {
    ffi!({
        // SAFETY: arrays of the stated lengths (caller's contract).
        let ins = unsafe { slice(inputs, num_inputs, "inputs") }?;
        let opts = unsafe { strings(options, num_options, "options") }?;
        out(cubin, "cubin")?;
        let mut names = Vec::with_capacity(ins.len());
        for (i, inp) in ins.iter().enumerate() {
            names.push(if inp.name.is_null() {
                format!("input{i}")
            } else {
                unsafe { utf8(inp.name, "input name") }?.to_string()
            });
        }
        let mut li = Vec::with_capacity(ins.len());
        for (i, inp) in ins.iter().enumerate() {
            let kind = match inp.kind {
                6 => InputKind::Object,
                7 => InputKind::Library,
                k => InputKind::from_code_kind(code_kind(k)?)
                    .ok_or_else(|| Error::invalid(format!("input {i}: kind {k} cannot be linked")))?,
            };
            // SAFETY: each input's data points to size readable bytes (caller's contract).
            let data = unsafe { slice(inp.data.cast::<u8>(), inp.size, "input data") }?;
            li.push(LinkInput { kind, data, name: &names[i] });
        }
        match link::link(&li, &opts) {
            Ok(l) => {
                give(log, l.log.as_bytes())?;
                give(cubin, &l.cubin)
            }
            Err(f) => {
                give(log, f.log.as_bytes())?;
                Err(f.error)
            }
        }
    })
}

/// Counters of this process's use of the compile cache, and what is on disk now.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, Default)]
pub struct cudyn_cache_stats_t {
    pub hits: u64,
    pub misses: u64,
    /// Bytes of entries and dependency manifests in the cache folder.
    pub bytes: u64,
    pub entries: u64,
    /// 1 when the cache is on (CUDYN_CACHE is not 0 and its folder is usable); when 0,
    /// cudyn_cache_status says why.
    pub enabled: i32,
}

/// Read the cache's counters.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_stats(stats: *mut cudyn_cache_stats_t) -> cudyn_status {
    ffi!({
        let o = out(stats, "stats")?;
        *o = match compile::global_cache() {
            Some(c) => {
                let s = c.stats();
                cudyn_cache_stats_t { hits: s.hits, misses: s.misses, bytes: s.bytes, entries: s.entries, enabled: 1 }
            }
            None => cudyn_cache_stats_t::default(),
        };
        Ok(())
    })
}

/// Whether the compile cache is on, and if not, why: CUDYN_SUCCESS when it is; otherwise
/// CUDYN_ERROR_NOT_FOUND when it was turned off (CUDYN_CACHE=0, CUDYN_CACHE_MAX_BYTES=0, or a
/// setuid/setgid process), CUDYN_ERROR_INVALID_ARGUMENT for a setting cudyn cannot read
/// (CUDYN_CACHE_MAX_BYTES=lots, a relative CUDYN_CACHE_DIR), CUDYN_ERROR_IO for a folder it
/// cannot use (read-only, a file, a symlink, someone else's, group/world writable); then
/// cudyn_last_error_message says which and why. The answer is fixed for the life of the
/// process (the cache is set up once, on first use). Compiles work either way.
#[no_mangle]
pub extern "C" fn cudyn_cache_status() -> cudyn_status {
    ffi!({ compile::cache_status().map(drop).map_err(Clone::clone) })
}

/// Remove every cache entry (only cudyn's own files). `removed` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_clear(removed: *mut u64) -> cudyn_status {
    ffi!({
        let n = match compile::global_cache() {
            Some(c) => c.clear().map_err(|e| {
                Error::new(crate::Status::Io, format!("clearing the cache at {}: {e}", c.dir().display()))
            })?,
            None => 0,
        };
        // SAFETY: NULL or writable.
        if let Some(r) = unsafe { removed.as_mut() } {
            *r = n;
        }
        Ok(())
    })
}

/// The compile cache's folder, or NULL when the cache is off. Static storage.
#[no_mangle]
pub extern "C" fn cudyn_cache_dir() -> *const c_char {
    use std::sync::OnceLock;
    static D: OnceLock<Option<std::ffi::CString>> = OnceLock::new();
    std::panic::catch_unwind(|| {
        D.get_or_init(|| {
            use std::os::unix::ffi::OsStrExt;
            compile::global_cache().and_then(|c| std::ffi::CString::new(c.dir().as_os_str().as_bytes()).ok())
        })
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr())
    })
    .unwrap_or(std::ptr::null())
}

// Layout proofs (the C side asserts the same numbers in tests/layout/layout_proofs.c).
mod layout {
    use super::*;
    use static_assertions::const_assert_eq;
    use std::mem::{offset_of, size_of};
    const_assert_eq!(size_of::<cudyn_buffer>(), 16);
    const_assert_eq!(offset_of!(cudyn_buffer, size), 8);
    const_assert_eq!(size_of::<cudyn_compile_options>(), 88);
    const_assert_eq!(offset_of!(cudyn_compile_options, target), 56);
    const_assert_eq!(offset_of!(cudyn_compile_options, reserved), 60);
    const_assert_eq!(size_of::<cudyn_link_input>(), 32);
    const_assert_eq!(offset_of!(cudyn_link_input, data), 8);
    const_assert_eq!(offset_of!(cudyn_link_input, name), 24);
    const_assert_eq!(size_of::<cudyn_cache_stats_t>(), 40);
    const_assert_eq!(size_of::<super::super::error::cudyn_versions_t>(), 20);
    const_assert_eq!(size_of::<cudyn_code_kind>(), 4);
    const_assert_eq!(size_of::<super::super::error::cudyn_status>(), 4);
}
