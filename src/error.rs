//! Errors: the `Status` every fallible call returns, the `Error` carrying its message and the
//! CUDA code behind it, and the thread-local "last error" the C API reads back.

use std::cell::RefCell;
use std::ffi::CString;
use std::fmt;

/// What went wrong, as a stable number (the C API's `cudyn_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Status {
    Success = 0,
    InvalidArgument = 1,
    DriverNotFound = 2,
    RuntimeNotFound = 3,
    NvrtcNotFound = 4,
    NvjitlinkNotFound = 5,
    UnsupportedVersion = 6,
    NoDevice = 7,
    InvalidImage = 8,
    NoBinaryForDevice = 9,
    NotFound = 10,
    CompileFailed = 11,
    LinkFailed = 12,
    ArgumentMismatch = 13,
    Io = 14,
    Cuda = 15,
    Internal = 16,
}

impl Status {
    /// Static, human text for the status.
    pub fn description(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::InvalidArgument => "invalid argument",
            Status::DriverNotFound => "the CUDA driver (libcuda.so.1) could not be opened",
            Status::RuntimeNotFound => "no CUDA runtime (libcudart 12.8+ or 13.x) could be opened",
            Status::NvrtcNotFound => "NVRTC (libnvrtc) could not be opened",
            Status::NvjitlinkNotFound => "nvJitLink (libnvJitLink) could not be opened",
            Status::UnsupportedVersion => "a CUDA component is too old for this call",
            Status::NoDevice => "no usable CUDA device",
            Status::InvalidImage => "not a well-formed cubin, fatbin, PTX or LTO-IR image",
            Status::NoBinaryForDevice => "the image has no code this GPU can run",
            Status::NotFound => "no kernel or global of that name",
            Status::CompileFailed => "NVRTC compilation failed (see the log)",
            Status::LinkFailed => "nvJitLink linking failed (see the log)",
            Status::ArgumentMismatch => "launch arguments do not match the kernel's parameters",
            Status::Io => "input/output error",
            Status::Cuda => "CUDA call failed (see cudyn_last_cuda_error)",
            Status::Internal => "internal error in cudyn (a bug; please report it)",
        }
    }
}

/// A failure: its status, a message saying what cudyn was doing and why it failed, and the
/// CUDA/NVRTC/nvJitLink result code behind it (0 when there is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
    pub cuda_code: i32,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error { status, message: message.into(), cuda_code: 0 }
    }
    pub fn with_code(status: Status, code: i32, message: impl Into<String>) -> Self {
        Error { status, message: message.into(), cuda_code: code }
    }
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

pub type Result<T, E = Error> = std::result::Result<T, E>;

struct LastError {
    message: CString,
    cuda_code: i32,
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError { message: CString::default(), cuda_code: 0 });
}

/// Record `e` as this thread's last failure.
pub fn set_last_error(e: &Error) {
    // An interior NUL cannot come from our own text; strip it rather than lose the message.
    let msg = CString::new(e.message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.message = msg;
            l.cuda_code = e.cuda_code;
        }
    });
}

/// Pointer to this thread's last message; valid until the thread's next failing cudyn call.
pub fn last_error_message_ptr() -> *const std::os::raw::c_char {
    LAST.with(|l| l.try_borrow().map(|l| l.message.as_ptr()).unwrap_or(c"".as_ptr()))
}

pub fn last_error_message() -> String {
    LAST.with(|l| l.try_borrow().map(|l| l.message.to_string_lossy().into_owned()).unwrap_or_default())
}

pub fn last_cuda_error() -> i32 {
    LAST.with(|l| l.try_borrow().map(|l| l.cuda_code).unwrap_or(0))
}
