//! The C ABI: null checks, the panic boundary, status mapping; nothing of CUDA beyond calling
//! the core. One file per section of cudyn.h.
//!
//! Conventions: every fallible call returns `cudyn_status`; outputs come last and are written
//! only on success; a buffer is followed by its size; every pointer is checked; freeing or
//! unloading NULL is a no-op; no Rust panic crosses the boundary.

// Every exported function is `unsafe extern "C"` where it reads caller memory; its safety
// contract is the conventions above (valid pointers of the stated sizes, or NULL where allowed).
#![allow(clippy::missing_safety_doc)]

pub mod compile;
pub mod error;
pub mod kernel;
pub mod launch;
pub mod library;

use crate::error::{set_last_error, Error, Result, Status};
use error::cudyn_status;
use std::ffi::{c_char, CStr};

/// Run an exported function's body: a panic becomes CUDYN_ERROR_INTERNAL with its message,
/// an Err becomes its status with this thread's last error set.
#[inline(never)] // keeps the launch entry points small (scripts/check_no_panic.py)
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> cudyn_status {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => cudyn_status::CUDYN_SUCCESS,
        Ok(Err(e)) => {
            set_last_error(&e);
            e.status.into()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&Error::new(Status::Internal, format!("internal error (caught panic): {what}")));
            cudyn_status::CUDYN_ERROR_INTERNAL
        }
    }
}

/// Every exported body goes through here.
macro_rules! ffi {
    ($body:block) => {
        $crate::capi::guard(move || -> $crate::error::Result<()> { $body })
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
pub(crate) fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: non-NULL output pointers point to writable storage per the C contract.
    unsafe { p.as_mut() }.ok_or_else(|| Error::invalid(format!("{what} (output) is NULL")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_internal_with_a_message_and_the_process_lives() {
        let s = guard(|| panic!("deliberate test panic"));
        assert_eq!(s, cudyn_status::CUDYN_ERROR_INTERNAL);
        let msg = crate::error::last_error_message();
        assert!(msg.contains("deliberate test panic"), "{msg}");
        // and the next call works normally
        assert_eq!(guard(|| Ok(())), cudyn_status::CUDYN_SUCCESS);
    }

    #[test]
    fn errors_set_the_thread_local_message_and_code() {
        let s = guard(|| Err(Error::with_code(Status::NotFound, 500, "no kernel 'x'")));
        assert_eq!(s, cudyn_status::CUDYN_ERROR_NOT_FOUND);
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
        assert!(out::<u32>(std::ptr::null_mut(), "count").is_err());
    }
}
