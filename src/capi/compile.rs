//! cudyn.h section "Compile and link": owned buffers, code kinds, NVRTC, loading from source,
//! nvJitLink.

use super::{ffi, out, slice, strings, utf8};
use crate::compile::{self, CompileOptions, Compiled};
use crate::handles::LibraryHandle;
use crate::image::{self, CodeKind};
use crate::launch::RawApi;
use crate::library::Api;
use crate::link::{self, LinkInput};
use crate::{Error, Result, Status};
use std::ffi::{c_char, c_void};

/// `cudyn_code_kind` as it arrives from C.
pub type RawCodeKind = u32;

/// Memory cudyn allocated and the caller owns: release it with cudyn_buffer_free().
/// `data` holds `size` bytes followed by a NUL that `size` does not count, so a text buffer
/// (a log) is also a C string.
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
        return Err(Error::new(Status::Internal, format!("out of memory allocating {} bytes", bytes.len() + 1)));
    }
    // SAFETY: p has room for len + 1 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
    }
    Ok(cudyn_buffer { data: p.cast(), size: bytes.len() })
}

/// Store into an optional output buffer (NULL: the caller does not want it).
///
/// # Safety
/// `dst` is NULL or points to a writable cudyn_buffer.
pub(crate) unsafe fn give(dst: *mut cudyn_buffer, bytes: &[u8]) -> Result<()> {
    // SAFETY: the caller's contract.
    if let Some(d) = unsafe { dst.as_mut() } {
        *d = buffer_from(bytes)?;
    }
    Ok(())
}

/// Free a buffer cudyn filled, and set it to {NULL, 0}.
///
/// @param buffer NULL, or a buffer cudyn filled, or one already freed here: both are no-ops.
#[no_mangle]
pub unsafe extern "C" fn cudyn_buffer_free(buffer: *mut cudyn_buffer) {
    ffi!(on_panic = (), {
        // SAFETY: NULL or a cudyn_buffer whose data came from cudyn (malloc) or is NULL.
        if let Some(b) = unsafe { buffer.as_mut() } {
            // SAFETY: as above.
            unsafe { libc::free(b.data) };
            b.data = std::ptr::null_mut();
            b.size = 0;
        }
    })
}

/// What kind of code a buffer holds, from its first bytes (cheap; loading checks it fully).
///
/// @param data The bytes.
/// @param size Bytes at `data`.
/// @param[out] kind The kind; CUDYN_CODE_UNKNOWN when it is none cudyn knows. Unchanged on
///             failure.
/// @return CUDYN_SUCCESS, or CUDYN_ERROR_INVALID_ARGUMENT for a NULL pointer.
#[no_mangle]
pub unsafe extern "C" fn cudyn_code_kind_of(data: *const c_void, size: usize, kind: *mut CodeKind) -> Status {
    ffi!({
        // SAFETY: `data` points to `size` readable bytes; `kind` is NULL or writable (caller's
        // contract).
        let (bytes, o) = unsafe { (slice(data.cast::<u8>(), size, "data")?, out(kind, "kind")?) };
        *o = image::code_kind_of(bytes);
        Ok(())
    })
}

/// Options for cudyn_compile_ex() and cudyn_library_load_source_ex(). Zero-initialise it, then
/// set what you need; later fields are carved from `reserved`, which must stay zero. cudyn
/// reads it, and the arrays it points to, during the call only.
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

/// # Safety
/// `o` is NULL or a readable cudyn_compile_options whose arrays hold their stated counts.
unsafe fn read_options(o: *const cudyn_compile_options) -> Result<CompileOptions> {
    // SAFETY: the caller's contract.
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
    // 0: the default (a cubin); any other kind is checked where it is used
    // (compile::effective_options).
    let target = match CodeKind::from_c_arg(o.target.into(), "target")? {
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
///
/// # Safety
/// `source` is NULL or NUL-terminated; `name` too.
unsafe fn source_and_name<'a>(source: *const c_char, name: *const c_char) -> Result<(&'a str, &'a str)> {
    // SAFETY: the caller's contract.
    let src = unsafe { utf8(source, "source") }?;
    // SAFETY: the caller's contract.
    let nm = if name.is_null() { "cudyn_program.cu" } else { unsafe { utf8(name, "name") }? };
    Ok((src, nm))
}

/// A successful compile's log and lowered names into the caller's optional buffers.
///
/// # Safety
/// `log` and `lowered` are NULL or writable.
unsafe fn give_log_and_names(log: *mut cudyn_buffer, lowered: *mut cudyn_buffer, c: &Compiled) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        give(log, c.log.as_bytes())?;
        give(lowered, &lowered_bytes(c))
    }
}

/// # Safety
/// As `source_and_name` and `give_log_and_names`; `code` is NULL or writable.
unsafe fn compile_into(
    source: *const c_char,
    name: *const c_char,
    opts: CompileOptions,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
    lowered: *mut cudyn_buffer,
) -> Result<()> {
    // SAFETY: the caller's contract (all of it, in this block).
    unsafe {
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
}

/// Compile CUDA C++ with NVRTC, through the compile cache.
///
/// @param source The source text (UTF-8).
/// @param name Names the program in messages; NULL for "cudyn_program.cu".
/// @param options `num_options` NVRTC options; NULL with 0 for none.
/// @param num_options Entries at `options`.
/// @param target CUDYN_CODE_CUBIN (or 0), CUDYN_CODE_PTX or CUDYN_CODE_LTOIR.
/// @param[out] code On success, the compiled code; the caller frees it with
///             cudyn_buffer_free(). Unchanged on failure.
/// @param[out] log NULL, or NVRTC's log, on success and failure alike (empty when NVRTC never
///             ran); the caller frees it with cudyn_buffer_free(). Unchanged only when the
///             arguments themselves are refused (NULL source or code, bad options).
/// @return CUDYN_SUCCESS, CUDYN_ERROR_COMPILE_FAILED (the message quotes the first error line),
///         CUDYN_ERROR_INVALID_ARGUMENT, CUDYN_ERROR_NVRTC_NOT_FOUND.
#[no_mangle]
pub unsafe extern "C" fn cudyn_compile(
    source: *const c_char,
    name: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    target: RawCodeKind,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
) -> Status {
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
        // SAFETY: the struct was just built from the caller's arguments; the rest is the
        // caller's contract.
        unsafe {
            let opts = read_options(&o)?;
            compile_into(source, name, opts, code, log, std::ptr::null_mut())
        }
    })
}

/// cudyn_compile() with headers and name expressions.
///
/// @param source, name, code, log As for cudyn_compile().
/// @param options NULL for the defaults (a cubin for the present GPU).
/// @param[out] lowered_names NULL, or on success the lowered (mangled) name of each name
///             expression, each followed by a NUL, in order; the caller frees it with
///             cudyn_buffer_free(). Unchanged on failure.
/// @return As for cudyn_compile().
#[no_mangle]
pub unsafe extern "C" fn cudyn_compile_ex(
    source: *const c_char,
    name: *const c_char,
    options: *const cudyn_compile_options,
    code: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
    lowered_names: *mut cudyn_buffer,
) -> Status {
    ffi!({
        // SAFETY: the caller's contract.
        unsafe {
            let opts = read_options(options)?;
            compile_into(source, name, opts, code, log, lowered_names)
        }
    })
}

/// # Safety
/// As `compile_into`; `library` is NULL or writable.
unsafe fn load_source(
    source: *const c_char,
    name: *const c_char,
    opts: CompileOptions,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    lowered: *mut cudyn_buffer,
) -> Result<()> {
    let api = Api::from_c_arg(api.into(), "api")?;
    // SAFETY: the caller's contract (all of it, in this block).
    unsafe {
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
}

/// Compile CUDA C++ (through the cache) for the present GPU and load it.
///
/// @param source, name, options, num_options, log As for cudyn_compile().
/// @param api The API that loads it.
/// @param[out] library As for cudyn_library_load_data(): the caller unloads it with
///             cudyn_library_unload(). Unchanged on failure.
/// @return As for cudyn_compile() and cudyn_library_load_data().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_source(
    source: *const c_char,
    name: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
) -> Status {
    ffi!({
        // SAFETY: `options` holds `num_options` C strings; the rest is the caller's contract.
        unsafe {
            let options = strings(options, num_options, "options")?;
            let opts = CompileOptions { options, ..Default::default() };
            load_source(source, name, opts, api, library, log, std::ptr::null_mut())
        }
    })
}

/// cudyn_library_load_source() with headers and name expressions.
///
/// @param source, name, api, library, log As for cudyn_library_load_source().
/// @param options As for cudyn_compile_ex(); `target` must be 0 (a cubin).
/// @param[out] lowered_names As for cudyn_compile_ex(), ready for cudyn_library_get_kernel().
/// @return As for cudyn_library_load_source().
#[no_mangle]
pub unsafe extern "C" fn cudyn_library_load_source_ex(
    source: *const c_char,
    name: *const c_char,
    options: *const cudyn_compile_options,
    api: RawApi,
    library: *mut LibraryHandle,
    log: *mut cudyn_buffer,
    lowered_names: *mut cudyn_buffer,
) -> Status {
    ffi!({
        // SAFETY: the caller's contract.
        let opts = unsafe { read_options(options) }?;
        if !matches!(opts.target, None | Some(CodeKind::Cubin)) {
            return Err(Error::invalid("load_source compiles to a cubin; leave target 0"));
        }
        // SAFETY: the caller's contract.
        unsafe { load_source(source, name, opts, api, library, log, lowered_names) }
    })
}

/// One input to cudyn_link(): its kind, bytes and a name for messages. cudyn reads it during
/// the call only.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct cudyn_link_input {
    /// CUDYN_CODE_CUBIN, _FATBIN, _PTX, _LTOIR, _OBJECT or _LIBRARY.
    pub kind: RawCodeKind,
    pub data: *const c_void,
    pub size: usize,
    /// NULL: "input<i>".
    pub name: *const c_char,
}

/// Link inputs with nvJitLink into one cubin.
///
/// Inputs nvJitLink would take and drop are refused by name before it runs: an executable
/// (non-relocatable) cubin, a fatbin whose SASS for the target is one, a host object or
/// static library without relocatable device code (-rdc=true, nvcc -dc), and a symbol defined
/// by two cubin inputs. A result with no kernel is a failure unless the options hold
/// "--cudyn-allow-no-kernels" (device globals linked on purpose; cudyn's own option, not
/// passed to nvJitLink).
///
/// @param inputs `num_inputs` inputs.
/// @param num_inputs Entries at `inputs`; at least 1.
/// @param options `num_options` nvJitLink options (e.g. "-lto", "-arch=sm_90"; without -arch
///        the present GPU's), and "--cudyn-allow-no-kernels"; NULL with 0 for none.
/// @param num_options Entries at `options`.
/// @param[out] cubin On success, the linked cubin; the caller frees it with
///             cudyn_buffer_free(). Unchanged on failure.
/// @param[out] log NULL, or nvJitLink's log, on success and failure alike (empty when nvJitLink
///             never ran); the caller frees it with cudyn_buffer_free(). Unchanged only when
///             the arguments themselves are refused (NULL arrays, a bad kind or name).
/// @return CUDYN_SUCCESS, CUDYN_ERROR_LINK_FAILED (the message quotes the first error; also a
///         duplicate definition or a result without a kernel), CUDYN_ERROR_INVALID_ARGUMENT (also
///         an input that would link to nothing), CUDYN_ERROR_NVJITLINK_NOT_FOUND.
#[no_mangle]
pub unsafe extern "C" fn cudyn_link(
    inputs: *const cudyn_link_input,
    num_inputs: usize,
    options: *const *const c_char,
    num_options: usize,
    cubin: *mut cudyn_buffer,
    log: *mut cudyn_buffer,
) -> Status {
    ffi!({
        // SAFETY: arrays of the stated lengths, `cubin` NULL or writable (caller's contract).
        let (ins, opts) = unsafe { (slice(inputs, num_inputs, "inputs")?, strings(options, num_options, "options")?) };
        // SAFETY: as above.
        unsafe { out(cubin, "cubin") }?;
        let mut names = Vec::with_capacity(ins.len());
        for (i, inp) in ins.iter().enumerate() {
            names.push(if inp.name.is_null() {
                format!("input{i}")
            } else {
                // SAFETY: a non-NULL name is NUL-terminated (caller's contract).
                unsafe { utf8(inp.name, "input name") }?.to_string()
            });
        }
        let mut li = Vec::with_capacity(ins.len());
        for (i, inp) in ins.iter().enumerate() {
            let kind = CodeKind::from_c_arg(inp.kind.into(), &format!("input {i}: kind"))?;
            // SAFETY: each input's data points to size readable bytes (caller's contract).
            let data = unsafe { slice(inp.data.cast::<u8>(), inp.size, "input data") }?;
            li.push(LinkInput { kind, data, name: &names[i] });
        }
        let (result, text) = match link::link(&li, &opts) {
            Ok(l) => (Ok(l.cubin), l.log),
            Err(f) => (Err(f.error), f.log),
        };
        // SAFETY: `log` and `cubin` are NULL or writable (caller's contract).
        unsafe {
            give(log, text.as_bytes())?;
            give(cubin, &result?)
        }
    })
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
    const_assert_eq!(size_of::<super::super::error::cudyn_version_info>(), 20);
    const_assert_eq!(size_of::<CodeKind>(), 4);
    const_assert_eq!(size_of::<Status>(), 4);
}
