//! Errors: the `Status` every fallible call returns, the `Error` carrying its message and the
//! CUDA code behind it, and the thread-local "last error" the C API reads back.

use std::cell::RefCell;
use std::ffi::CString;
use std::fmt;

/// What went wrong, as a stable number (the C API's `cudyn_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Status {
    /// No error (never the status of an `Err`; the C API's success value).
    Success = 0,
    /// An argument was invalid: a NULL or unknown handle, a bad value, a config not zeroed.
    InvalidArgument = 1,
    /// The CUDA driver (libcuda.so.1) could not be opened.
    DriverNotFound = 2,
    /// No CUDA runtime (libcudart 12.8+ or 13.x) could be opened.
    RuntimeNotFound = 3,
    /// NVRTC could not be opened.
    NvrtcNotFound = 4,
    /// nvJitLink could not be opened.
    NvjitlinkNotFound = 5,
    /// A CUDA component is too old for this call.
    UnsupportedVersion = 6,
    /// No usable CUDA device.
    NoDevice = 7,
    /// Not a well-formed cubin, fatbin, PTX or LTO-IR image.
    InvalidImage = 8,
    /// The image has no code this GPU can run.
    NoBinaryForDevice = 9,
    /// No kernel or global of that name.
    NotFound = 10,
    /// Compilation failed (see the log).
    CompileFailed = 11,
    /// Linking failed (see the log).
    LinkFailed = 12,
    /// Launch arguments do not match the kernel's parameters (count or sizes).
    ArgumentMismatch = 13,
    /// An input/output error (reading an image file, the compile cache).
    Io = 14,
    /// A CUDA call failed; [`Error::cuda_code`] holds its result code.
    Cuda = 15,
    /// An internal error in cudyn (a bug).
    Internal = 16,
}

/// Each status's C name and text, in status order (the C API's `cudyn_status_string`).
pub(crate) const STATUS_TEXT: [&std::ffi::CStr; 17] = [
    c"CUDYN_SUCCESS: success",
    c"CUDYN_ERROR_INVALID_ARGUMENT: invalid argument",
    c"CUDYN_ERROR_DRIVER_NOT_FOUND: the CUDA driver (libcuda.so.1) could not be opened",
    c"CUDYN_ERROR_RUNTIME_NOT_FOUND: no CUDA runtime (libcudart 12.8+ or 13.x) could be opened",
    c"CUDYN_ERROR_NVRTC_NOT_FOUND: NVRTC could not be opened",
    c"CUDYN_ERROR_NVJITLINK_NOT_FOUND: nvJitLink could not be opened",
    c"CUDYN_ERROR_UNSUPPORTED_VERSION: a CUDA component is too old for this call",
    c"CUDYN_ERROR_NO_DEVICE: no usable CUDA device",
    c"CUDYN_ERROR_INVALID_IMAGE: not a well-formed cubin, fatbin, PTX or LTO-IR image",
    c"CUDYN_ERROR_NO_BINARY_FOR_DEVICE: the image has no code this GPU can run",
    c"CUDYN_ERROR_NOT_FOUND: no kernel or global of that name",
    c"CUDYN_ERROR_COMPILE_FAILED: compilation failed (see the log)",
    c"CUDYN_ERROR_LINK_FAILED: linking failed (see the log)",
    c"CUDYN_ERROR_ARGUMENT_MISMATCH: launch arguments do not match the kernel's parameters",
    c"CUDYN_ERROR_IO: input/output error",
    c"CUDYN_ERROR_CUDA: a CUDA call failed (see cudyn_last_cuda_error)",
    c"CUDYN_ERROR_INTERNAL: internal error in cudyn (a bug)",
];

impl Status {
    /// Static, human text for the status (the text of `cudyn_status_string`, without the name).
    pub fn description(self) -> &'static str {
        let full = STATUS_TEXT[self as usize].to_str().unwrap_or_default();
        full.split_once(": ").map_or(full, |(_, text)| text)
    }
}

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
    fn descriptions_are_the_c_texts() {
        assert_eq!(Status::NotFound.description(), "no kernel or global of that name");
        assert_eq!(Status::Success.description(), "success");
        let c = STATUS_TEXT[Status::Internal as usize].to_str().unwrap();
        assert!(c.starts_with("CUDYN_ERROR_INTERNAL: ") && c.ends_with(Status::Internal.description()));
    }
}
