//! Options for loading a library: the JIT options CUDA takes when it compiles PTX at load
//! time, and the library options, checked here and turned into either API's arrays; and the
//! JIT logs every load asks for, so a refused PTX says which line ptxas refused.
//!
//! An option crosses the C boundary as an (id, value) pair in an array, as CUDA's own
//! `jitOptions` do: an option is given or not (zero-initialised memory means nothing), and new
//! ids extend the set without changing any struct's size.

use crate::enums::Api;
pub use crate::enums::LoadOptionId;
use crate::error::{Error, Result};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use std::ffi::c_void;
use std::mem::offset_of;

/// One load option: `cudyn_load_option` in C.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOption {
    /// A `cudyn_load_option_id`, checked before use.
    pub id: RawLoadOptionId,
    /// The option's value (its meaning depends on `id`).
    pub value: i64,
}

assert_eq_size!(LoadOption, [u64; 2]);
assert_eq_align!(LoadOption, u64);
const_assert_eq!(offset_of!(LoadOption, id), 0);
const_assert_eq!(offset_of!(LoadOption, value), 8);

/// `cudyn_load_option_id` as it crosses the C boundary: a plain integer, checked before use.
/// The ids and what each sets are `LoadOptionId` (src/enums/table.rs).
pub type RawLoadOptionId = u32;

/// CUDA's JIT option numbers (the driver's CU_JIT_* and the runtime's cudaJit* agree).
mod jit {
    pub const MAX_REGISTERS: u32 = 0;
    pub const INFO_LOG_BUFFER: u32 = 3;
    pub const INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
    pub const ERROR_LOG_BUFFER: u32 = 5;
    pub const ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;
    pub const OPTIMIZATION_LEVEL: u32 = 7;
    pub const TARGET: u32 = 9;
    pub const GENERATE_DEBUG_INFO: u32 = 11;
    pub const LOG_VERBOSE: u32 = 12;
    pub const GENERATE_LINE_INFO: u32 = 13;
    pub const FAST_COMPILE: u32 = 16;
}
/// CU_LIBRARY_BINARY_IS_PRESERVED == cudaLibraryBinaryIsPreserved.
const LIBRARY_BINARY_IS_PRESERVED: u32 = 1;

// The numbers above are the headers' own.
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_MAX_REGISTERS.0, jit::MAX_REGISTERS);
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_ERROR_LOG_BUFFER.0, jit::ERROR_LOG_BUFFER);
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_TARGET.0, jit::TARGET);
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_LOG_VERBOSE.0, jit::LOG_VERBOSE);
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_GENERATE_LINE_INFO.0, jit::GENERATE_LINE_INFO);
const_assert_eq!(crate::cuda::sys::CUjit_option_enum::CU_JIT_FAST_COMPILE.0, jit::FAST_COMPILE);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitMaxRegisters.0, jit::MAX_REGISTERS);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitInfoLogBuffer.0, jit::INFO_LOG_BUFFER);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitErrorLogBufferSizeBytes.0, jit::ERROR_LOG_BUFFER_SIZE_BYTES);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitOptimizationLevel.0, jit::OPTIMIZATION_LEVEL);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitGenerateDebugInfo.0, jit::GENERATE_DEBUG_INFO);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitLogVerbose.0, jit::LOG_VERBOSE);
const_assert_eq!(crate::cuda::sys::cudaJitOption::cudaJitGenerateLineInfo.0, jit::GENERATE_LINE_INFO);
const_assert_eq!(crate::cuda::sys::CUlibraryOption_enum::CU_LIBRARY_BINARY_IS_PRESERVED.0, LIBRARY_BINARY_IS_PRESERVED);
const_assert_eq!(crate::cuda::sys::cudaLibraryOption::cudaLibraryBinaryIsPreserved.0, LIBRARY_BINARY_IS_PRESERVED);

/// Bytes of each JIT log cudyn asks CUDA for.
const LOG_BYTES: usize = 16 * 1024;

/// Options checked for one API, and the log buffers CUDA writes into: the arrays a load call
/// takes. Built by `prepare`; the pointers in `jit_values` point into `self`, so it must not
/// move between `prepare` and the load (it is boxed).
pub(crate) struct Prepared {
    pub jit_keys: Vec<u32>,
    pub jit_values: Vec<*mut c_void>,
    pub lib_keys: Vec<u32>,
    pub lib_values: Vec<*mut c_void>,
    info: Vec<u8>,
    error: Vec<u8>,
    /// Indices in `jit_values` of the two size entries CUDA overwrites with the bytes written.
    info_size_at: usize,
    error_size_at: usize,
}

/// An id's C name, for messages.
fn name(id: u32) -> &'static str {
    LoadOptionId::from_c(id.into()).map_or("an unknown load option", LoadOptionId::c_name)
}

/// Check `options` for `api`: known ids, each at most once, values in range, and taken by that
/// API. Nothing is opened or loaded; an error names the option and says why.
pub fn check(options: &[LoadOption], api: Api) -> Result<()> {
    let mut seen = 0u32;
    for (i, o) in options.iter().enumerate() {
        if LoadOptionId::from_c(o.id.into()).is_none() {
            return Err(Error::invalid(format!("load option {i}: unknown id {}", o.id)));
        }
        if seen & (1 << o.id) != 0 {
            return Err(Error::invalid(format!("load option {i}: {} is given twice", name(o.id))));
        }
        seen |= 1 << o.id;
        let (lo, hi) = match o.id {
            1 => (1, 255),
            2 => (0, 4),
            4 => (30, 1210),
            _ => (0, 1),
        };
        if o.value < lo || o.value > hi {
            return Err(Error::invalid(format!(
                "load option {i}: {} must be {lo}..={hi}, not {}",
                name(o.id),
                o.value
            )));
        }
        if api == Api::Runtime && (o.id == 3 || o.id == 4) {
            return Err(Error::invalid(format!(
                "load option {i}: {} is a driver JIT option the runtime's cudaLibraryLoadData does not take; \
                 load through CUDYN_API_DRIVER",
                name(o.id)
            )));
        }
    }
    Ok(())
}

/// `prepare`, or None when there is nothing to give CUDA: no options, and a load that does not
/// compile now (no JIT log to read). Most loads: nothing allocated.
pub(crate) fn prepare_for(options: &[LoadOption], api: Api, jit: bool) -> Result<Option<Box<Prepared>>> {
    if options.is_empty() && !jit {
        return Ok(None);
    }
    prepare(options, api).map(Some)
}

/// The arrays for a load through `api` with `options` (checked here), plus the two log buffers.
pub(crate) fn prepare(options: &[LoadOption], api: Api) -> Result<Box<Prepared>> {
    check(options, api)?;
    let mut p = Box::new(Prepared {
        jit_keys: Vec::with_capacity(options.len() + 4),
        jit_values: Vec::with_capacity(options.len() + 4),
        lib_keys: Vec::new(),
        lib_values: Vec::new(),
        info: vec![0; LOG_BYTES],
        error: vec![0; LOG_BYTES],
        info_size_at: 0,
        error_size_at: 0,
    });
    // Values are passed in the pointer itself, as CUDA's option arrays expect for integers.
    let as_value = |v: i64| v as usize as *mut c_void;
    for o in options {
        let key = match o.id {
            1 => jit::MAX_REGISTERS,
            2 => jit::OPTIMIZATION_LEVEL,
            3 => jit::FAST_COMPILE,
            4 => jit::TARGET,
            5 => jit::GENERATE_LINE_INFO,
            6 => jit::GENERATE_DEBUG_INFO,
            7 => jit::LOG_VERBOSE,
            _ => {
                p.lib_keys.push(LIBRARY_BINARY_IS_PRESERVED);
                p.lib_values.push(as_value(o.value));
                continue;
            }
        };
        p.jit_keys.push(key);
        p.jit_values.push(as_value(o.value));
    }
    let info = p.info.as_mut_ptr().cast();
    let error = p.error.as_mut_ptr().cast();
    p.jit_keys.extend([jit::INFO_LOG_BUFFER, jit::INFO_LOG_BUFFER_SIZE_BYTES]);
    p.jit_values.extend([info, as_value(LOG_BYTES as i64)]);
    p.info_size_at = p.jit_values.len() - 1;
    p.jit_keys.extend([jit::ERROR_LOG_BUFFER, jit::ERROR_LOG_BUFFER_SIZE_BYTES]);
    p.jit_values.extend([error, as_value(LOG_BYTES as i64)]);
    p.error_size_at = p.jit_values.len() - 1;
    Ok(p)
}

// SAFETY: the raw pointers in the arrays point into the same boxed value (its own log
// buffers) or are plain integers; nothing in it is tied to a thread.
unsafe impl Send for Prepared {}
unsafe impl Sync for Prepared {}

impl Prepared {
    fn text(&self, buf: &[u8], size_at: usize) -> String {
        // CUDA writes back the bytes it used; never trust it past the buffer.
        let n = (self.jit_values[size_at] as usize).min(buf.len());
        let b = &buf[..n];
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).trim_end().to_string()
    }
    /// The JIT's error log (empty when CUDA wrote none).
    pub fn error_log(&self) -> String {
        self.text(&self.error, self.error_size_at)
    }
    /// The JIT's info log.
    pub fn info_log(&self) -> String {
        self.text(&self.info, self.info_size_at)
    }
    /// Both logs, as handed to the caller: the error log first.
    pub fn log(&self) -> String {
        let (e, i) = (self.error_log(), self.info_log());
        match (e.is_empty(), i.is_empty()) {
            (true, _) => i,
            (false, true) => e,
            (false, false) => format!("{e}\n{i}"),
        }
    }
    /// The first line of the error log that says "error", else its first line.
    pub fn first_error(&self) -> Option<String> {
        let e = self.error_log();
        let line = e.lines().find(|l| l.contains("error")).or_else(|| e.lines().next())?;
        let mut line = line.trim().to_string();
        if line.len() > 300 {
            let mut cut = 300;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str("...");
        }
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;

    fn o(id: u32, value: i64) -> LoadOption {
        LoadOption { id, value }
    }

    #[test]
    fn options_are_checked_before_anything_is_loaded() {
        assert!(check(&[], Api::Runtime).is_ok());
        assert!(check(&[o(1, 32), o(2, 3), o(5, 1), o(6, 0), o(7, 1), o(8, 1)], Api::Runtime).is_ok());
        assert!(check(&[o(3, 1), o(4, 90)], Api::Driver).is_ok());
        for (bad, why) in [
            (vec![o(0, 1)], "unknown id 0"),
            (vec![o(9, 1)], "unknown id 9"),
            (vec![o(1, 0)], "1..=255"),
            (vec![o(1, 256)], "1..=255"),
            (vec![o(2, 5)], "0..=4"),
            (vec![o(2, -1)], "0..=4"),
            (vec![o(5, 2)], "0..=1"),
            (vec![o(4, 29)], "30..=1210"),
            (vec![o(1, 32), o(1, 64)], "given twice"),
        ] {
            let e = check(&bad, Api::Driver).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument);
            assert!(e.message.contains(why), "{bad:?}: {}", e.message);
        }
        for driver_only in [o(3, 1), o(4, 90)] {
            let e = check(&[driver_only], Api::Runtime).unwrap_err();
            assert!(e.message.contains("CUDYN_API_DRIVER"), "{}", e.message);
        }
    }

    #[test]
    fn prepared_arrays_carry_values_and_log_buffers() {
        let p = prepare(&[o(1, 40), o(8, 1)], Api::Driver).unwrap();
        assert_eq!(p.jit_keys[0], jit::MAX_REGISTERS);
        assert_eq!(p.jit_values[0] as usize, 40);
        assert_eq!(p.lib_keys, vec![LIBRARY_BINARY_IS_PRESERVED]);
        assert_eq!(p.lib_values[0] as usize, 1);
        assert_eq!(&p.jit_keys[1..], &[3, 4, 5, 6]);
        assert_eq!(p.jit_values[2] as usize, LOG_BYTES);
        assert_eq!(p.jit_keys.len(), p.jit_values.len());
        assert_eq!(p.log(), "");
        assert_eq!(p.first_error(), None);
    }

    #[test]
    fn the_first_error_line_is_quoted() {
        let mut p = prepare(&[], Api::Driver).unwrap();
        let text = b"ptxas application ptx input, line 12; error   : Unknown symbol 'x'\nptxas fatal   : failed\0";
        p.error[..text.len()].copy_from_slice(text);
        let at = p.error_size_at;
        p.jit_values[at] = text.len() as *mut c_void;
        assert_eq!(p.first_error().unwrap(), "ptxas application ptx input, line 12; error   : Unknown symbol 'x'");
        assert!(p.log().starts_with("ptxas application"));
        // A size CUDA reports past the buffer is clamped.
        p.jit_values[at] = usize::MAX as *mut c_void;
        assert!(p.error_log().contains("line 12"));
    }
}
