//! cudyn.h section "Compile cache": counters, status, folder, clearing, read-only layers and
//! bundles (export, import).

use super::{cstr, ffi, out, put};
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

/// The process-wide cache, or its reason for being off as the error.
fn cache() -> crate::Result<&'static crate::cache::Cache> {
    compile::cache_status().map_err(Clone::clone)
}

/// A required path argument (any bytes but NUL).
///
/// # Safety
/// As for `cstr`.
unsafe fn path_of<'a>(p: *const c_char, what: &str) -> crate::Result<&'a std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: forwarded contract.
    let c = unsafe { cstr(p, what) }?;
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(c.to_bytes())))
}

/// Add a read-only layer to the compile cache: a folder of entries, or a bundle file that
/// `cudyn_cache_export` (or `cudyn cache export`) wrote. Layers are consulted, in the order
/// added, before the cache's own folder, and never written. `CUDYN_CACHE_LAYERS` names layers
/// too, and a bundle named `<program>.cudyn-bundle` beside the running executable is added on
/// its own.
///
/// @param path An absolute path. The file or folder, and every folder above it, must be owned
///             by root or by the user and not writable by group or others.
/// @return CUDYN_SUCCESS; CUDYN_ERROR_INVALID_ARGUMENT for NULL; CUDYN_ERROR_IO when it cannot
///         be used (missing, relative, someone else's, writable by others); CUDYN_ERROR_INVALID_IMAGE
///         for a file that is not a bundle; the cache's status when the cache is off.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_add_layer(path: *const c_char) -> Status {
    ffi!({
        // SAFETY: NULL or NUL-terminated (caller's contract).
        let p = unsafe { path_of(path, "path") }?;
        cache()?.add_layer(p).map_err(|e| {
            let status = if e.kind() == std::io::ErrorKind::InvalidData { Status::InvalidImage } else { Status::Io };
            Error::new(status, crate::error::io_text(&e))
        })
    })
}

/// Write every entry of the compile cache's folder to one bundle file (a temp file beside it,
/// renamed into place when complete).
///
/// @param path Where to write it (an existing folder; the file is replaced).
/// @param[out] entries NULL, or the number of entries written. Unchanged on failure.
/// @return CUDYN_SUCCESS, CUDYN_ERROR_INVALID_ARGUMENT for NULL, CUDYN_ERROR_IO, or the cache's
///         status when the cache is off.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_export(path: *const c_char, entries: *mut u64) -> Status {
    ffi!({
        // SAFETY: NULL or NUL-terminated (caller's contract).
        let p = unsafe { path_of(path, "path") }?;
        let n = compile::export_bundle(cache()?, p)?;
        // SAFETY: NULL or writable (caller's contract).
        unsafe { put(entries, n) };
        Ok(())
    })
}

/// Import a bundle into the compile cache's folder. The whole bundle is checked first (every
/// checksum, every entry, and that each holds code cudyn's image checks accept); a bundle that
/// fails is refused with the reason and nothing is imported.
///
/// @param path The bundle.
/// @param[out] added NULL, or the number of entries added (entries already present are kept).
/// @return CUDYN_SUCCESS; CUDYN_ERROR_INVALID_IMAGE for a damaged or forged bundle;
///         CUDYN_ERROR_IO (unreadable, larger than CUDYN_CACHE_MAX_BYTES, a write failed);
///         CUDYN_ERROR_INVALID_ARGUMENT for NULL; the cache's status when the cache is off.
#[no_mangle]
pub unsafe extern "C" fn cudyn_cache_import(path: *const c_char, added: *mut u64) -> Status {
    ffi!({
        // SAFETY: NULL or NUL-terminated (caller's contract).
        let p = unsafe { path_of(path, "path") }?;
        let r = compile::import_bundle(cache()?, p)?;
        // SAFETY: NULL or writable (caller's contract).
        unsafe { put(added, r.added) };
        Ok(())
    })
}

const _: () = assert!(std::mem::size_of::<cudyn_cache_info>() == 40);
