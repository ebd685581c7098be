//! Errors: the `Status` every fallible call returns, the `Error` carrying its message and the
//! CUDA code behind it, the thread-local "last error" the C API reads back, and the quoting of
//! outside text (names and logs from images and loaded libraries) before a terminal shows it.

use std::borrow::Cow;
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
    ///
    /// Messages carry names and log lines that came from an image or a loaded library: any
    /// character a terminal would act on is quoted ([`quote_text`]).
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error { status, message: quoted(message.into()), cuda_code: 0 }
    }
    /// An error of `status` caused by CUDA (or NVRTC, nvJitLink) result `code`.
    pub fn with_code(status: Status, code: i32, message: impl Into<String>) -> Self {
        Error { status, message: quoted(message.into()), cuda_code: code }
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
        self.message = quoted(format!("{what}: {}", self.message));
        self
    }
}

/// The message as a terminal may show it: quoted again here, since `message` is a public field
/// that code may have set directly.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&quote_text(&self.message))
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

// ---------------------------------------------------------------------------------------------
// Quoting outside text. A kernel name, a fatbin entry's source name, a JIT or linker log line or
// a library's error string may hold bytes a terminal acts on (ESC starts a control sequence
// that can rewrite the screen or the window title, BEL rings, CR overwrites the line, and the
// Unicode bidirectional controls reorder what is shown, as in "Trojan Source"). Every message
// cudyn builds, and everything `cudyn` prints, passes such text through these functions.

/// Whether `c` is shown as an escape: a control character (C0, DEL, C1), or a Unicode
/// bidirectional control or line/paragraph separator (all in the Basic Multilingual Plane).
pub fn needs_quoting(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn quote(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_lines && matches!(c, '\n' | '\t');
    if !s.chars().any(|c| needs_quoting(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !needs_quoting(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// `s` with every character a terminal would act on written as an escape (`\x1b`, `\r`,
/// `\u{202e}`), except line feeds and tabs, which are kept: for messages and logs, which have
/// lines. Printable text (any script) is unchanged; the result has no control character but
/// `\n` and `\t`, so quoting it again changes nothing.
pub fn quote_text(s: &str) -> Cow<'_, str> {
    quote(s, true)
}

/// [`quote_text`] for a name or a path, which is one line: line feeds and tabs are written as
/// `\n` and `\t` too.
pub fn quote_name(s: &str) -> Cow<'_, str> {
    quote(s, false)
}

/// [`quote_name`] for bytes that need not be UTF-8 (names read from an image): a byte that is
/// not part of a UTF-8 character is written `\xNN`.
pub fn quote_name_bytes(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => quote_name(s),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            for chunk in b.utf8_chunks() {
                out.push_str(&quote_name(chunk.valid()));
                for byte in chunk.invalid() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            Cow::Owned(out)
        }
    }
}

fn quoted(s: String) -> String {
    match quote_text(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(q) => q,
    }
}

/// Record `e` as this thread's last failure. During thread exit (a pthread key destructor
/// that calls cudyn after Rust's thread-locals were destroyed) there is nowhere to record it:
/// the message is dropped rather than panicking, since a panic there would abort.
pub fn set_last_error(e: &Error) {
    // `message` is a public field: quote it again (a NUL, a control character, becomes an
    // escape, so the C string is never cut short either).
    let msg = CString::new(quote_text(&e.message).into_owned()).unwrap_or_default();
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

    #[test]
    fn text_a_terminal_acts_on_is_quoted_and_printable_text_is_kept() {
        // ESC (a colour or title sequence), BEL, CR, DEL, a C1 CSI, the bidi overrides.
        let hostile = "k\x1b]0;owned\x07\x1b[2J\rx\x7f\u{9b}1m\u{202e}gnp.exe\u{2066}";
        let q = quote_name(hostile);
        assert_eq!(q, "k\\x1b]0;owned\\x07\\x1b[2J\\rx\\x7f\\u{9b}1m\\u{202e}gnp.exe\\u{2066}");
        assert!(!q.chars().any(needs_quoting), "{q}");
        // Names are one line; messages and logs keep their lines and tabs.
        assert_eq!(quote_name("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(quote_text("a\nb\tc\x1b"), "a\nb\tc\\x1b");
        // Printable text of any script passes unchanged, borrowed; quoting twice is quoting once.
        for s in ["vec_add", "_Z6kernelPfi", "ядро ΣΑΣ 核 \\x1b", ""] {
            assert!(matches!(quote_name(s), Cow::Borrowed(_)), "{s}");
        }
        assert_eq!(quote_text(&quote_text(hostile)), quote_text(hostile));
        // Bytes that are not UTF-8 show as \xNN; valid characters around them stay.
        assert_eq!(quote_name_bytes(b"ok\xff\xfe\x1bz\xc3\xa9"), "ok\\xff\\xfe\\x1bz\u{e9}");
        assert_eq!(quote_name_bytes(b"plain"), "plain");
    }

    #[test]
    fn messages_and_the_last_error_never_carry_control_characters() {
        let e = Error::new(Status::NotFound, "no kernel named 'k\x1b[31m' in the image\nsecond line");
        assert_eq!(e.message, "no kernel named 'k\\x1b[31m' in the image\nsecond line");
        // A message set directly is quoted where it is shown and where C reads it.
        let mut e = Error::with_code(Status::Cuda, 700, "x");
        e.message = "bell\x07 and NUL\0 inside".into();
        assert_eq!(e.to_string(), "bell\\x07 and NUL\\x00 inside");
        set_last_error(&e);
        assert_eq!(last_error_message(), "bell\\x07 and NUL\\x00 inside");
        let e = Error::invalid("a").context("loading '\u{202e}x'");
        assert_eq!(e.message, "loading '\\u{202e}x': a");
    }
}

/// The body of `cold_format!` (src/lib.rs): out of line and cold, so that a caller's error
/// branch is laid out away from the code that runs when nothing is wrong.
#[cold]
#[inline(never)]
pub(crate) fn cold_format(args: std::fmt::Arguments<'_>) -> String {
    std::fmt::format(args)
}
