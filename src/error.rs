//! Errors: the `Status` every fallible call returns, the `Error` carrying its message and the
//! CUDA code behind it, and the thread-local "last error" the C API reads back.

use std::cell::RefCell;
use std::ffi::CString;
use std::fmt;

pub use crate::enums::Status;
use crate::enums::{
    AccessProperty, Api, Attribute, ClusterSchedulingPolicy, CodeKind, Component, FuncCache, JitCacheMode, JitFallback,
    JitTarget, LaunchAttributeId, LoadOptionId, MemSyncDomain, OccupancyFlags,
};

crate::enums::c_enum_conversions!(
    Status,
    Api,
    CodeKind,
    Attribute,
    Component,
    LoadOptionId,
    JitTarget,
    JitFallback,
    JitCacheMode,
    LaunchAttributeId,
    AccessProperty,
    ClusterSchedulingPolicy,
    MemSyncDomain,
    FuncCache,
    OccupancyFlags
);

/// A failure: its status, a message saying what cudyn was doing and why it failed, and the
/// CUDA/NVRTC/nvJitLink result code behind it (0 when there is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, as a stable number.
    pub status: Status,
    /// What cudyn was doing and why it failed, for a person to read.
    pub message: String,
    /// The CUDA, NVRTC or nvJitLink result code behind the failure; 0 when there is none.
    pub cuda_code: i32,
}

impl Error {
    /// An error of `status` with `message` and no CUDA code.
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error { status, message: message.into(), cuda_code: 0 }
    }
    /// An error of `status` caused by CUDA (or NVRTC, nvJitLink) result `code`.
    pub fn with_code(status: Status, code: i32, message: impl Into<String>) -> Self {
        Error { status, message: message.into(), cuda_code: code }
    }
    /// An [`Status::InvalidArgument`] error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(Status::InvalidArgument, message)
    }
    /// The same error under another status.
    pub fn with_status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }
    /// Prefix the message with what was being done ("loading library: ...").
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// cudyn's result type: [`Error`] unless another error type is named.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An I/O error in cudyn's words: "no such file or directory", not "No such file or directory
/// (os error 2)" (the error number means nothing to a user, and the text follows a colon).
pub fn io_text(e: &std::io::Error) -> String {
    let mut s = e.to_string();
    // Also inside messages that quote an OS error ("...cannot be written: Permission denied
    // (os error 13)").
    while let Some(i) = s.find(" (os error ") {
        match s[i..].find(')') {
            Some(j) => s.replace_range(i..i + j + 1, ""),
            None => break,
        }
    }
    if e.raw_os_error().is_some() {
        if let Some(first) = s.get(..1) {
            s.replace_range(..1, &first.to_lowercase());
        }
    }
    s
}

struct LastError {
    message: CString,
    cuda_code: i32,
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError { message: CString::default(), cuda_code: 0 });
}

/// Record `e` as this thread's last failure. During thread exit (a pthread key destructor
/// that calls cudyn after Rust's thread-locals were destroyed) there is nowhere to record it:
/// the message is dropped rather than panicking, since a panic there would abort.
pub fn set_last_error(e: &Error) {
    // An interior NUL cannot come from our own text; strip it rather than lose the message.
    let msg = CString::new(e.message.replace('\0', " ")).unwrap_or_default();
    let _ = LAST.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.message = msg;
            l.cuda_code = e.cuda_code;
        }
    });
}

/// Pointer to this thread's last message; valid until the thread's next failing cudyn call.
/// "" when there is none, or during thread exit.
pub fn last_error_message_ptr() -> *const std::os::raw::c_char {
    LAST.try_with(|l| l.try_borrow().map(|l| l.message.as_ptr()).unwrap_or(c"".as_ptr())).unwrap_or(c"".as_ptr())
}

/// This thread's last failure message (as the C API's `cudyn_last_error_message`), owned.
pub fn last_error_message() -> String {
    LAST.try_with(|l| l.try_borrow().map(|l| l.message.to_string_lossy().into_owned()).unwrap_or_default())
        .unwrap_or_default()
}

/// The CUDA code of this thread's last failure (0 if it had none).
pub fn last_cuda_error() -> i32 {
    LAST.try_with(|l| l.try_borrow().map(|l| l.cuda_code).unwrap_or(0)).unwrap_or(0)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_words_without_error_numbers() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(io_text(&e), "no such file or directory");
        let inner = std::io::Error::from_raw_os_error(libc::EACCES);
        let e = std::io::Error::new(inner.kind(), format!("folder x cannot be written: {inner}"));
        assert_eq!(io_text(&e), "folder x cannot be written: Permission denied");
        let e = std::io::Error::other("plain text (os error");
        assert_eq!(io_text(&e), "plain text (os error");
    }
}

/// `error`'s message, then `log` (a compiler's or linker's, when not empty) on the lines after
/// it: how [`CompileFailure`](crate::compile::CompileFailure) and
/// [`LinkFailure`](crate::link::LinkFailure) display.
pub(crate) fn write_with_log(f: &mut std::fmt::Formatter<'_>, error: &Error, log: &str) -> std::fmt::Result {
    f.write_str(&error.message)?;
    let log = log.trim_end();
    if !log.is_empty() {
        write!(f, "\n{log}")?;
    }
    Ok(())
}
