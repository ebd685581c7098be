//! Options for loading a library: the JIT options CUDA takes when it compiles PTX at load
//! time, and the library options, checked here and turned into either API's arrays; and the
//! JIT logs every load asks for, so a refused PTX says which line ptxas refused.
//!
//! An option crosses the C boundary as an (id, value) pair in an array, as CUDA's own
//! `jitOptions` do: an option is given or not (zero-initialised memory means nothing), and new
//! ids extend the set without changing any struct's size.

use crate::enums::Api;
pub use crate::enums::{JitCacheMode, JitFallback, JitTarget, LoadOptionId};
use crate::error::{Error, Result};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use std::cell::Cell;
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
    pub const THREADS_PER_BLOCK: u32 = 1;
    pub const WALL_TIME: u32 = 2;
    pub const INFO_LOG_BUFFER: u32 = 3;
    pub const INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
    pub const ERROR_LOG_BUFFER: u32 = 5;
    pub const ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;
    pub const OPTIMIZATION_LEVEL: u32 = 7;
    pub const TARGET_FROM_CUCONTEXT: u32 = 8;
    pub const TARGET: u32 = 9;
    pub const FALLBACK_STRATEGY: u32 = 10;
    pub const GENERATE_DEBUG_INFO: u32 = 11;
    pub const LOG_VERBOSE: u32 = 12;
    pub const GENERATE_LINE_INFO: u32 = 13;
    pub const CACHE_MODE: u32 = 14;
    pub const GLOBAL_SYMBOL_NAMES: u32 = 17;
    pub const GLOBAL_SYMBOL_ADDRESSES: u32 = 18;
    pub const GLOBAL_SYMBOL_COUNT: u32 = 19;
    pub const POSITION_INDEPENDENT_CODE: u32 = 30;
    pub const MIN_CTA_PER_SM: u32 = 31;
    pub const MAX_THREADS_PER_BLOCK: u32 = 32;
    pub const OVERRIDE_DIRECTIVE_VALUES: u32 = 33;
    pub const SPLIT_COMPILE: u32 = 34;
}
/// CUDA's library option numbers (CU_LIBRARY_* == cudaLibrary*).
mod library {
    pub const HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE: u32 = 0;
    pub const BINARY_IS_PRESERVED: u32 = 1;
}
/// CU_LIBRARY_BINARY_IS_PRESERVED == cudaLibraryBinaryIsPreserved.
pub(crate) const LIBRARY_BINARY_IS_PRESERVED: u32 = library::BINARY_IS_PRESERVED;

// The numbers above are the headers' own, the driver's and the runtime's alike.
macro_rules! same_numbers {
    ($($ours:expr => $cu:ident $(, $rt:ident)?;)*) => {
        $(
            const_assert_eq!(crate::cuda::sys::CUjit_option_enum::$cu.0, $ours);
            $(const_assert_eq!(crate::cuda::sys::cudaJitOption::$rt.0, $ours);)?
        )*
    };
}
same_numbers! {
    jit::MAX_REGISTERS => CU_JIT_MAX_REGISTERS, cudaJitMaxRegisters;
    jit::THREADS_PER_BLOCK => CU_JIT_THREADS_PER_BLOCK, cudaJitThreadsPerBlock;
    jit::WALL_TIME => CU_JIT_WALL_TIME, cudaJitWallTime;
    jit::INFO_LOG_BUFFER => CU_JIT_INFO_LOG_BUFFER, cudaJitInfoLogBuffer;
    jit::INFO_LOG_BUFFER_SIZE_BYTES => CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, cudaJitInfoLogBufferSizeBytes;
    jit::ERROR_LOG_BUFFER => CU_JIT_ERROR_LOG_BUFFER, cudaJitErrorLogBuffer;
    jit::ERROR_LOG_BUFFER_SIZE_BYTES => CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, cudaJitErrorLogBufferSizeBytes;
    jit::OPTIMIZATION_LEVEL => CU_JIT_OPTIMIZATION_LEVEL, cudaJitOptimizationLevel;
    jit::TARGET_FROM_CUCONTEXT => CU_JIT_TARGET_FROM_CUCONTEXT;
    jit::TARGET => CU_JIT_TARGET;
    jit::FALLBACK_STRATEGY => CU_JIT_FALLBACK_STRATEGY, cudaJitFallbackStrategy;
    jit::GENERATE_DEBUG_INFO => CU_JIT_GENERATE_DEBUG_INFO, cudaJitGenerateDebugInfo;
    jit::LOG_VERBOSE => CU_JIT_LOG_VERBOSE, cudaJitLogVerbose;
    jit::GENERATE_LINE_INFO => CU_JIT_GENERATE_LINE_INFO, cudaJitGenerateLineInfo;
    jit::CACHE_MODE => CU_JIT_CACHE_MODE, cudaJitCacheMode;
    jit::GLOBAL_SYMBOL_NAMES => CU_JIT_GLOBAL_SYMBOL_NAMES;
    jit::GLOBAL_SYMBOL_ADDRESSES => CU_JIT_GLOBAL_SYMBOL_ADDRESSES;
    jit::GLOBAL_SYMBOL_COUNT => CU_JIT_GLOBAL_SYMBOL_COUNT;
    jit::POSITION_INDEPENDENT_CODE => CU_JIT_POSITION_INDEPENDENT_CODE, cudaJitPositionIndependentCode;
    jit::MIN_CTA_PER_SM => CU_JIT_MIN_CTA_PER_SM, cudaJitMinCtaPerSm;
    jit::MAX_THREADS_PER_BLOCK => CU_JIT_MAX_THREADS_PER_BLOCK, cudaJitMaxThreadsPerBlock;
    jit::OVERRIDE_DIRECTIVE_VALUES => CU_JIT_OVERRIDE_DIRECTIVE_VALUES, cudaJitOverrideDirectiveValues;
    jit::SPLIT_COMPILE => CU_JIT_SPLIT_COMPILE;
}
const_assert_eq!(crate::cuda::sys::CUlibraryOption_enum::CU_LIBRARY_BINARY_IS_PRESERVED.0, LIBRARY_BINARY_IS_PRESERVED);
const_assert_eq!(crate::cuda::sys::cudaLibraryOption::cudaLibraryBinaryIsPreserved.0, LIBRARY_BINARY_IS_PRESERVED);
const_assert_eq!(
    crate::cuda::sys::CUlibraryOption_enum::CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE.0,
    library::HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE
);
const_assert_eq!(
    crate::cuda::sys::cudaLibraryOption::cudaLibraryHostUniversalFunctionAndDataTable.0,
    library::HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE
);
const_assert_eq!(crate::cuda::sys::CUjit_fallback::CU_PREFER_BINARY.0, JitFallback::PreferBinary as u32);
const_assert_eq!(crate::cuda::sys::CUjit_cacheMode::CU_JIT_CACHE_OPTION_CA.0, JitCacheMode::Ca as u32);

/// The host table of CUDYN_LOAD_OPTION_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE:
/// `cudyn_host_universal_table`, CUDA's `CUlibraryHostUniversalFunctionAndDataTable`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostUniversalTable {
    /// The host function table.
    pub function_table: *mut c_void,
    /// Its size in bytes.
    pub function_window_size: usize,
    /// The host data table.
    pub data_table: *mut c_void,
    /// Its size in bytes.
    pub data_window_size: usize,
}

assert_eq_size!(HostUniversalTable, crate::cuda::sys::CUlibraryHostUniversalFunctionAndDataTable);
const_assert_eq!(
    offset_of!(HostUniversalTable, data_window_size),
    offset_of!(crate::cuda::sys::CUlibraryHostUniversalFunctionAndDataTable, dataWindowSize)
);

/// What CUDA does with an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// An integer in this range, passed in the pointer itself.
    Range(i64, i64),
    /// A CU_TARGET_* number.
    Target,
    /// A pointer CUDA reads until the library is unloaded (the wall time's, cudyn writes during
    /// the load).
    Pointer,
}

/// How each load option reaches CUDA: its key, what its value is, and whether the runtime's
/// cudaLibraryLoadData takes it.
#[derive(Debug, Clone, Copy)]
struct Spec {
    /// A JIT option number, or a library option number.
    key: Key,
    value: Value,
    driver_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Jit(u32),
    Library(u32),
}

const U32_MAX: i64 = u32::MAX as i64;

fn spec(id: LoadOptionId) -> Spec {
    use LoadOptionId as L;
    let (key, value, driver_only) = match id {
        L::MaxRegisters => (Key::Jit(jit::MAX_REGISTERS), Value::Range(1, 255), false),
        L::OptimizationLevel => (Key::Jit(jit::OPTIMIZATION_LEVEL), Value::Range(0, 4), false),
        L::Target => (Key::Jit(jit::TARGET), Value::Target, true),
        L::GenerateLineInfo => (Key::Jit(jit::GENERATE_LINE_INFO), Value::Range(0, 1), false),
        L::GenerateDebugInfo => (Key::Jit(jit::GENERATE_DEBUG_INFO), Value::Range(0, 1), false),
        L::LogVerbose => (Key::Jit(jit::LOG_VERBOSE), Value::Range(0, 1), false),
        L::BinaryIsPreserved => (Key::Library(library::BINARY_IS_PRESERVED), Value::Range(0, 1), false),
        L::ThreadsPerBlock => (Key::Jit(jit::THREADS_PER_BLOCK), Value::Range(1, 1024), false),
        L::WallTime => (Key::Jit(jit::WALL_TIME), Value::Pointer, false),
        L::TargetFromContext => (Key::Jit(jit::TARGET_FROM_CUCONTEXT), Value::Range(1, 1), true),
        L::FallbackStrategy => (Key::Jit(jit::FALLBACK_STRATEGY), Value::Range(0, 1), false),
        L::CacheMode => (Key::Jit(jit::CACHE_MODE), Value::Range(0, 2), false),
        L::PositionIndependentCode => (Key::Jit(jit::POSITION_INDEPENDENT_CODE), Value::Range(0, 1), false),
        L::MinCtaPerSm => (Key::Jit(jit::MIN_CTA_PER_SM), Value::Range(1, U32_MAX), false),
        L::MaxThreadsPerBlock => (Key::Jit(jit::MAX_THREADS_PER_BLOCK), Value::Range(1, 1024), false),
        L::OverrideDirectiveValues => (Key::Jit(jit::OVERRIDE_DIRECTIVE_VALUES), Value::Range(0, 1), false),
        L::SplitCompile => (Key::Jit(jit::SPLIT_COMPILE), Value::Range(0, U32_MAX), true),
        L::GlobalSymbolNames => (Key::Jit(jit::GLOBAL_SYMBOL_NAMES), Value::Pointer, true),
        L::GlobalSymbolAddresses => (Key::Jit(jit::GLOBAL_SYMBOL_ADDRESSES), Value::Pointer, true),
        L::GlobalSymbolCount => (Key::Jit(jit::GLOBAL_SYMBOL_COUNT), Value::Range(1, U32_MAX), true),
        L::HostUniversalFunctionAndDataTable => {
            (Key::Library(library::HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE), Value::Pointer, false)
        }
    };
    Spec { key, value, driver_only }
}

thread_local! {
    /// Whether this thread is inside `with_pointer_options`.
    static POINTERS_VOUCHED: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with pointer-valued load options allowed in the loads it makes on this thread
/// (CUDYN_LOAD_OPTION_WALL_TIME, the GLOBAL_SYMBOL arrays, the host universal table): safe
/// code cannot show that an integer is a pointer to what such an option needs, so outside this
/// call they are refused. The C API's loads run inside it (their callers' contract covers it).
///
/// # Safety
/// Every pointer-valued option given to a load while `f` runs points to what its id says (see
/// [`LoadOptionId`]), and that memory stays valid, and is not freed, until the library is
/// unloaded: CUDA reads it whenever it loads the library into a context (the wall time's
/// `float` is written by cudyn, during the load, on this thread).
pub unsafe fn with_pointer_options<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = POINTERS_VOUCHED.try_with(|v| v.set(self.0));
        }
    }
    let _restore = Restore(POINTERS_VOUCHED.try_with(|v| v.replace(true)).unwrap_or(false));
    f()
}

fn pointers_vouched() -> bool {
    POINTERS_VOUCHED.try_with(Cell::get).unwrap_or(false)
}

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
    /// CU_JIT_WALL_TIME: CUDA overwrites the option's value itself (the array's slot, at this
    /// index) with a float; the caller's `float *` is where cudyn copies it after the load.
    wall_time: Option<(usize, *mut f32)>,
}

/// What the wall time's slot holds until CUDA writes a float over it (a NaN in its low half).
const WALL_TIME_UNWRITTEN: usize = usize::MAX;

/// The id CUDYN_LOAD_OPTION_FAST_COMPILE had: retired, never reused.
const RETIRED_FAST_COMPILE: u32 = 3;

/// Check `options` for `api`: known ids, each at most once, values in range, taken by that
/// API, and combined as CUDA allows. Nothing is opened or loaded; an error names the option
/// and says why.
pub fn check(options: &[LoadOption], api: Api) -> Result<()> {
    let mut seen = 0u64;
    let bit = |id: LoadOptionId| 1u64 << (id as u32);
    for (i, o) in options.iter().enumerate() {
        let Some(id) = LoadOptionId::from_c(o.id.into()) else {
            if o.id == RETIRED_FAST_COMPILE {
                return Err(Error::invalid(format!(
                    "load option {i}: id 3 (formerly CUDYN_LOAD_OPTION_FAST_COMPILE) is retired: CUDA 13.0's \
                     cuda.h keeps CU_JIT_FAST_COMPILE for its internal use"
                )));
            }
            return Err(Error::invalid(format!("load option {i}: unknown id {}", o.id)));
        };
        if seen & bit(id) != 0 {
            return Err(Error::invalid(format!("load option {i}: {} is given twice", id.c_name())));
        }
        seen |= bit(id);
        let sp = spec(id);
        match sp.value {
            Value::Range(lo, hi) if o.value < lo || o.value > hi => {
                return Err(Error::invalid(format!(
                    "load option {i}: {} must be {lo}..={hi}, not {}",
                    id.c_name(),
                    o.value
                )));
            }
            Value::Target if JitTarget::from_c(o.value).is_none() => {
                return Err(Error::invalid(format!(
                    "load option {i}: {} must be a cudyn_jit_target (CUDA's CU_TARGET_* numbers: 30..121, \
                     0x10000 + the capability for an `a` target, 0x20000 + it for an `f` target), not {}",
                    id.c_name(),
                    o.value
                )));
            }
            Value::Pointer if o.value == 0 => {
                return Err(Error::invalid(format!(
                    "load option {i}: {} is a pointer and may not be NULL",
                    id.c_name()
                )));
            }
            Value::Pointer if !pointers_vouched() => {
                return Err(Error::invalid(format!(
                    "load option {i}: {} takes a pointer, which safe Rust cannot vouch for: load inside \
                     cudyn::load_options::with_pointer_options (unsafe), or through the C API",
                    id.c_name()
                )));
            }
            _ => {}
        }
        if api == Api::Runtime && sp.driver_only {
            return Err(Error::invalid(format!(
                "load option {i}: {} is a driver JIT option the runtime's cudaLibraryLoadData does not take; \
                 load through CUDYN_API_DRIVER",
                id.c_name()
            )));
        }
    }
    use LoadOptionId as L;
    // CUDA's own rules for combining them.
    let both = |a: LoadOptionId, b: LoadOptionId| seen & bit(a) != 0 && seen & bit(b) != 0;
    for (a, b) in [(L::Target, L::ThreadsPerBlock), (L::Target, L::TargetFromContext)] {
        if both(a, b) {
            return Err(Error::invalid(format!("load options {} and {} cannot be combined", a.c_name(), b.c_name())));
        }
    }
    let symbols = [L::GlobalSymbolNames, L::GlobalSymbolAddresses, L::GlobalSymbolCount];
    let given = symbols.iter().filter(|&&s| seen & bit(s) != 0).count();
    if given != 0 && given != symbols.len() {
        return Err(Error::invalid(
            "load options CUDYN_LOAD_OPTION_GLOBAL_SYMBOL_NAMES, _ADDRESSES and _COUNT come together: give all three",
        ));
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
        wall_time: None,
    });
    // Values are passed in the pointer itself, as CUDA's option arrays expect for integers.
    let as_value = |v: i64| v as usize as *mut c_void;
    for o in options {
        // `check` accepted every id.
        let Some(id) = LoadOptionId::from_c(o.id.into()) else { continue };
        match spec(id).key {
            Key::Jit(key) if key == jit::WALL_TIME => {
                // CUDA writes the float into the slot, not through a pointer in it.
                p.wall_time = Some((p.jit_values.len(), o.value as usize as *mut f32));
                p.jit_keys.push(key);
                p.jit_values.push(WALL_TIME_UNWRITTEN as *mut c_void);
            }
            Key::Jit(key) => {
                p.jit_keys.push(key);
                p.jit_values.push(as_value(o.value));
            }
            Key::Library(key) => {
                p.lib_keys.push(key);
                p.lib_values.push(as_value(o.value));
            }
        }
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
// buffers) or are plain integers or the caller's pointers, which cudyn itself writes through
// only on the loading thread during the load (the wall time); nothing in it is tied to a thread.
unsafe impl Send for Prepared {}
unsafe impl Sync for Prepared {}

impl Prepared {
    /// The image handed over is cudyn's own and lives until the unload: CUDA may read it in
    /// place (BINARY_IS_PRESERVED, set to 1 whatever the caller asked about their own bytes,
    /// which CUDA never sees).
    pub fn preserve_binary(&mut self) {
        match self.lib_keys.iter().position(|&k| k == LIBRARY_BINARY_IS_PRESERVED) {
            Some(i) => self.lib_values[i] = 1 as *mut c_void,
            None => {
                self.lib_keys.push(LIBRARY_BINARY_IS_PRESERVED);
                self.lib_values.push(1 as *mut c_void);
            }
        }
    }

    /// Copies the JIT's wall time, which CUDA wrote into its option's slot, to the caller's
    /// `float` (CUDYN_LOAD_OPTION_WALL_TIME). Called once the load (and any JIT it ran) is done.
    pub fn report_wall_time(&self) {
        if let Some((at, out)) = self.wall_time {
            if self.jit_values[at] as usize == WALL_TIME_UNWRITTEN {
                return; // no JIT ran during the load: the caller's float is left as it was
            }
            let bits = self.jit_values[at] as usize as u32;
            // SAFETY: the option's value is a `float *` the caller vouched for (`check` takes
            // pointer options only inside `with_pointer_options` or through the C API), valid
            // until the library is unloaded; it is written only on this thread, now.
            unsafe { out.write_unaligned(f32::from_bits(bits)) };
        }
    }

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
        assert!(check(&[o(4, 90)], Api::Driver).is_ok());
        // Every option the runtime takes, together; and the driver's own.
        let both = [o(9, 256), o(12, 1), o(13, 2), o(14, 1), o(15, 2), o(16, 1024), o(17, 1)];
        assert!(check(&both, Api::Runtime).is_ok());
        assert!(check(&[o(11, 1), o(18, 0)], Api::Driver).is_ok());
        for (bad, why) in [
            (vec![o(0, 1)], "unknown id 0"),
            (vec![o(23, 1)], "unknown id 23"),
            (vec![o(3, 1)], "retired"),
            (vec![o(1, 0)], "1..=255"),
            (vec![o(1, 256)], "1..=255"),
            (vec![o(2, 5)], "0..=4"),
            (vec![o(2, -1)], "0..=4"),
            (vec![o(5, 2)], "0..=1"),
            (vec![o(9, 0)], "1..=1024"),
            (vec![o(9, 1025)], "1..=1024"),
            (vec![o(11, 0)], "1..=1"),
            (vec![o(12, 2)], "0..=1"),
            (vec![o(13, 3)], "0..=2"),
            (vec![o(15, 0)], "1..=4294967295"),
            (vec![o(16, 2000)], "1..=1024"),
            (vec![o(18, -1)], "0..=4294967295"),
            (vec![o(18, 1 << 32)], "0..=4294967295"),
            (vec![o(21, 0)], "1..=4294967295"),
            (vec![o(1, 32), o(1, 64)], "given twice"),
            (vec![o(4, 90), o(9, 128)], "cannot be combined"),
            (vec![o(4, 90), o(11, 1)], "cannot be combined"),
            (vec![o(21, 2)], "give all three"),
            (vec![o(10, 0)], "may not be NULL"),
            (vec![o(10, 0x1000)], "safe Rust cannot vouch"),
            (vec![o(19, 0x1000)], "safe Rust cannot vouch"),
            (vec![o(22, 0x1000)], "safe Rust cannot vouch"),
        ] {
            let e = check(&bad, Api::Driver).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument);
            assert!(e.message.contains(why), "{bad:?}: {}", e.message);
        }
        for driver_only in [o(4, 90), o(11, 1), o(18, 4), o(21, 1)] {
            let e = check(&[driver_only], Api::Runtime).unwrap_err();
            assert!(e.message.contains("CUDYN_API_DRIVER"), "{}", e.message);
        }
        // Pointers, vouched for: taken (CUDA is never reached here).
        // SAFETY: nothing is loaded; the pointers are only checked.
        unsafe {
            with_pointer_options(|| {
                let syms = [o(19, 0x1000), o(20, 0x2000), o(21, 1), o(10, 0x3000), o(22, 0x4000)];
                check(&syms, Api::Driver).unwrap();
                check(&[o(10, 0x3000), o(22, 0x4000)], Api::Runtime).unwrap();
                assert!(check(&[o(19, 0x1000), o(20, 0x2000), o(21, 1)], Api::Runtime).is_err());
                assert!(check(&[o(19, 0x1000), o(20, 0)], Api::Driver).unwrap_err().message.contains("NULL"));
            })
        };
        // ... and no longer once the call is over.
        assert!(check(&[o(10, 0x3000)], Api::Driver).is_err());
    }

    /// The target option takes exactly CUDA's CU_TARGET_* numbers: the ones of cuda.h (read here,
    /// so that a CUDA with new targets shows up), and nothing between them.
    #[test]
    fn the_target_is_exactly_a_cu_target() {
        let root = std::path::PathBuf::from(env!("CUDYN_CUDA_ROOT"));
        let text = std::fs::read_to_string(root.join("include/cuda.h")).expect("the pinned cuda.h");
        let body = &text[text.find("typedef enum CUjit_target_enum").unwrap()..];
        let body = &body[..body.find("} CUjit_target;").unwrap()];
        let mut header: Vec<i64> = Vec::new();
        for line in body.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("CU_TARGET_COMPUTE_") else { continue };
            let value = rest.split('=').nth(1).unwrap().split(',').next().unwrap().trim();
            let v = if let Some(plus) = value.split_once('+') {
                let base = match plus.0.trim() {
                    "CU_COMPUTE_ACCELERATED_TARGET_BASE" => 0x10000,
                    "CU_COMPUTE_FAMILY_TARGET_BASE" => 0x20000,
                    other => panic!("unknown base {other}"),
                };
                base + plus.1.trim().trim_start_matches("CU_TARGET_COMPUTE_").parse::<i64>().unwrap()
            } else {
                value.parse().unwrap()
            };
            header.push(v);
        }
        header.sort();
        let mut ours: Vec<i64> = JitTarget::ALL.iter().map(|&t| t as i64).collect();
        ours.sort();
        assert_eq!(ours, header, "cudyn_jit_target is CUjit_target");
        for v in 0..=0x30000i64 {
            let ok = check(&[o(4, v)], Api::Driver).is_ok();
            assert_eq!(ok, header.binary_search(&v).is_ok(), "target {v}");
        }
    }

    /// CUDA writes the wall time over the option's slot; cudyn copies it to the caller's
    /// float, and leaves the float alone when no JIT ran (the slot still holds its mark).
    #[test]
    fn wall_time_is_copied_from_its_slot() {
        let mut ms = -1f32;
        let id = LoadOptionId::WallTime as u32;
        // SAFETY: the option points to `ms`, which outlives `p`.
        let mut p =
            unsafe { with_pointer_options(|| prepare(&[o(id, &mut ms as *mut f32 as i64)], Api::Driver)) }.unwrap();
        assert_eq!(p.jit_keys[0], jit::WALL_TIME);
        p.report_wall_time();
        assert_eq!(ms, -1.0, "no JIT ran: unchanged");
        p.jit_values[0] = 2.5f32.to_bits() as usize as *mut c_void;
        p.report_wall_time();
        assert_eq!(ms, 2.5);
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
