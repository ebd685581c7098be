//! cudyn.h section "Compile cache": counters, status, folder, clearing.

use super::{ffi, out, put};
use crate::compile;
use crate::{Error, Status};
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// Counters of this process's use of the compile cache, and what is on disk now.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, Default)]
pub struct cudyn_cache_info {
    pub hits: u64,
    pub misses: u64,
    /// Bytes of entries and dependency manifests in the cache folder.
    pub bytes: u64,
    pub entries: u64,
    /// 1 when the cache is on (CUDYN_CACHE is not 0 and its folder is usable); when 0,
    /// cudyn_cache_status() says why.
    pub enabled: i32,
}

/// Read the cache's counters.
///
/// @param[out] stats Receives the counters (all 0 when the cache is off). Unchanged on failure.
/// @return CUDYN_SUCCESS, or CUDYN_ERROR_INVALID_ARGUMENT for NULL.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_stats(stats: *mut cudyn_cache_info) -> Status {
    ffi!({
        // SAFETY: NULL or writable (caller's contract).
        let o = unsafe { out(stats, "stats") }?;
        *o = match compile::global_cache() {
            Some(c) => {
                let s = c.stats();
                cudyn_cache_info { hits: s.hits, misses: s.misses, bytes: s.bytes, entries: s.entries, enabled: 1 }
            }
            None => cudyn_cache_info::default(),
        };
        Ok(())
    })
}

/// Whether the compile cache is on, and if not, why. Compiles work either way.
///
/// @return CUDYN_SUCCESS when it is on; CUDYN_ERROR_NOT_FOUND when it was turned off
///         (CUDYN_CACHE=0, CUDYN_CACHE_MAX_BYTES=0, or a setuid/setgid process);
///         CUDYN_ERROR_INVALID_ARGUMENT for a setting cudyn cannot read
///         (CUDYN_CACHE_MAX_BYTES=lots, a relative CUDYN_CACHE_DIR); CUDYN_ERROR_IO for a folder
///         it cannot use (read-only, a file, a symlink, someone else's, group/world writable).
///         cudyn_last_error_message() then says which and why.
/// @note The answer is fixed for the life of the process: the cache is set up once, on first use.
#[no_mangle]
pub extern "C" fn cudyn_cache_status() -> Status {
    ffi!({ compile::cache_status().map(drop).map_err(Clone::clone) })
}

/// The compile cache's folder.
///
/// @return Its path, or NULL when the cache is off. Static storage: never free it.
#[no_mangle]
pub extern "C" fn cudyn_cache_dir() -> *const c_char {
    static D: OnceLock<Option<CString>> = OnceLock::new();
    ffi!(on_panic = std::ptr::null(), {
        crate::fork::once(&D, || {
            use std::os::unix::ffi::OsStrExt;
            compile::global_cache().and_then(|c| CString::new(c.dir().as_os_str().as_bytes()).ok())
        })
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr())
    })
}

/// Remove every cache entry and cudyn's temporary files from the cache folder; other files
/// and folders there are left alone.
///
/// @param[out] removed NULL, or the number of entries removed. Unchanged on failure.
/// @return CUDYN_SUCCESS (also when the cache is off: 0 removed), or CUDYN_ERROR_IO.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_clear(removed: *mut u64) -> Status {
    ffi!({
        let n = match compile::global_cache() {
            Some(c) => c.clear().map_err(|e| {
                Error::new(
                    Status::Io,
                    format!("clearing the cache at {}: {}", c.dir().display(), crate::error::io_text(&e)),
                )
            })?,
            None => 0,
        };
        // SAFETY: NULL or writable (caller's contract).
        unsafe { put(removed, n) };
        Ok(())
    })
}

const _: () = assert!(std::mem::size_of::<cudyn_cache_info>() == 40);
