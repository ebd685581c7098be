//! The C ABI: null checks, the panic boundary, status mapping; nothing of CUDA beyond calling
//! the core. One file per section of cudyn.h, declared below in the header's reading order
//! (cbindgen emits functions in source order).
//!
//! Conventions: every fallible call returns `cudyn_status` (the Rust `Status`); outputs come
//! last and are written only on success; a buffer is followed by its size; every pointer is
//! checked; freeing or unloading NULL is a no-op; no Rust panic crosses the boundary: every
//! export runs its body through `boundary` (the `ffi!` macro), with the one exception of the
//! launch fast path, documented at `launch::try_fast`.
//!
//! Every export that reads or writes caller memory, or takes a handle on the caller's word, is
//! `unsafe extern "C"`: its `# Safety` contract is the header's (valid pointers of the stated
//! sizes, or NULL where allowed; live handles).

// The exports' safety contracts are the header's function comments, not `# Safety` sections.
#![allow(clippy::missing_safety_doc)]

// In cudyn.h's reading order: status and diagnostics, libraries, kernels, launch, occupancy,
// compile and link, cache. (Separate groups keep rustfmt from sorting them.)
pub mod error;

pub mod library;

pub mod names;

pub mod preload;

pub mod kernel;

pub mod launch;

pub mod occupancy;

pub mod compile;

pub mod cache;

use crate::error::{set_last_error, Error, Result, Status};
use std::ffi::{c_char, CStr};

/// The panic boundary every export goes through: runs `body`; a panic is caught, recorded as
/// this thread's last error (CUDYN_ERROR_INTERNAL, with the panic's message) and answered with
/// `on_panic`. For exports that return a pointer, a number or nothing.
pub(crate) fn boundary<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            // Recording can itself fail (during thread exit); it never panics.
            set_last_error(&Error::new(Status::Internal, format!("internal error (caught panic): {what}")));
            on_panic
        }
    }
}

/// `boundary` for the exports that return a status: an Err becomes its status with this
/// thread's last error set, a panic CUDYN_ERROR_INTERNAL.
#[inline(never)] // keeps the launch entry points small (scripts/check_no_panic.py names it)
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> Status {
    boundary(Status::Internal, || match body() {
        Ok(()) => Status::Success,
        Err(e) => {
            set_last_error(&e);
            e.status
        }
    })
}

/// Every exported body goes through here: `ffi!({ ... })` for a body returning `Result<()>`
/// (the export returns its status), `ffi!(on_panic = value, { ... })` for any other return
/// type (the body returns the value itself).
macro_rules! ffi {
    ($body:block) => {
        $crate::capi::guard(move || -> $crate::error::Result<()> { $body })
    };
    (on_panic = $on_panic:expr, $body:block) => {
        $crate::capi::boundary($on_panic, move || $body)
    };
}
pub(crate) use ffi;

/// A required C string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives the returned reference.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a CStr> {
    if p.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// A required UTF-8 C string argument.
///
/// # Safety
/// As for `cstr`.
pub(crate) unsafe fn utf8<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded contract.
    unsafe { cstr(p, what) }?.to_str().map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// A (pointer, count) pair as a slice; NULL is fine only for count 0.
///
/// # Safety
/// `p` is NULL or points to `n` readable elements that outlive the returned slice.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    // SAFETY: the caller's contract.
    unsafe { entries(p, n) }.ok_or_else(|| {
        Error::invalid(if p.is_null() {
            format!("{what} is NULL but its count is {n}")
        } else {
            format!("{what}: count {n} is impossibly large")
        })
    })
}

/// As `slice`, with no message: None where `slice` is an error (the launch fast path, which
/// must not allocate, leaves those to the full path).
///
/// # Safety
/// As `slice`.
#[inline(always)]
pub(crate) unsafe fn entries<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if n == 0 {
        Some(&[])
    } else if p.is_null() || n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        None
    } else {
        // SAFETY: non-NULL, n elements readable per the caller's contract, size checked above.
        Some(unsafe { std::slice::from_raw_parts(p, n) })
    }
}

/// An array of C strings as owned Strings.
///
/// # Safety
/// `p` is NULL or points to `n` pointers, each NULL or a NUL-terminated string.
pub(crate) unsafe fn strings(p: *const *const c_char, n: usize, what: &str) -> Result<Vec<String>> {
    // SAFETY: forwarded contract.
    let ptrs = unsafe { slice(p, n, what) }?;
    ptrs.iter()
        .enumerate()
        // SAFETY: each entry is NULL or NUL-terminated, per the contract.
        .map(|(i, &s)| unsafe { utf8(s, &format!("{what}[{i}]")) }.map(str::to_owned))
        .collect()
}

/// A required output pointer.
///
/// # Safety
/// `p` is NULL or points to writable storage for a `T` that outlives the returned reference.
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_mut() }.ok_or_else(|| Error::invalid(format!("{what} (output) is NULL")))
}

/// Write `value` to an optional output (NULL: the caller does not want it).
///
/// # Safety
/// `p` is NULL or points to writable storage for a `T`.
pub(crate) unsafe fn put<T>(p: *mut T, value: T) {
    // SAFETY: the caller's contract.
    if let Some(o) = unsafe { p.as_mut() } {
        *o = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_internal_with_a_message_and_the_process_lives() {
        let s = guard(|| panic!("deliberate test panic"));
        assert_eq!(s, Status::Internal);
        let msg = crate::error::last_error_message();
        assert!(msg.contains("deliberate test panic"), "{msg}");
        // and the next call works normally
        assert_eq!(guard(|| Ok(())), Status::Success);
        // Every return type goes through the same boundary.
        let p: *const c_char = ffi!(on_panic = std::ptr::null(), { panic!("pointer export panics") });
        assert!(p.is_null());
        assert!(crate::error::last_error_message().contains("pointer export panics"));
        assert_eq!(ffi!(on_panic = -1i32, { 7 }), 7);
    }

    #[test]
    fn errors_set_the_thread_local_message_and_code() {
        let s = guard(|| Err(Error::with_code(Status::NotFound, 500, "no kernel 'x'")));
        assert_eq!(s, Status::NotFound);
        assert_eq!(crate::error::last_error_message(), "no kernel 'x'");
        assert_eq!(crate::error::last_cuda_error(), 500);
        // Another thread has its own last error.
        std::thread::spawn(|| assert_eq!(crate::error::last_error_message(), "")).join().unwrap();
    }

    #[test]
    fn null_pointers_are_refused() {
        // SAFETY: NULL is the case under test.
        assert!(unsafe { cstr(std::ptr::null(), "name") }.is_err());
        assert!(unsafe { slice::<u8>(std::ptr::null(), 3, "data") }.is_err());
        assert!(unsafe { slice::<u8>(std::ptr::null(), 0, "data") }.unwrap().is_empty());
        // SAFETY: NULL is the case under test.
        assert!(unsafe { out::<u32>(std::ptr::null_mut(), "count") }.is_err());
    }
}
