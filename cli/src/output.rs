//! Where the command's words go: standard output through [`out!`], which ends the command
//! quietly when the reader has gone (`cudyn inspect FILE | head`), standard error through
//! [`err!`], and outside text (names, paths, logs) quoted before a terminal sees it.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

/// A line on standard output; a reader that closed the pipe ends the command (status 0, as
/// for the Rust command-line tools that set the convention: the reader asked for no more).
macro_rules! out {
    () => { $crate::output::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::output::line(format_args!($($arg)*)) };
}

/// A line on standard error (a failure to write there is ignored: there is nowhere left to say it).
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) use {err, out};

pub fn line(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.write_all(b"\n")) {
        write_failed(&e);
    }
}

/// Bytes on standard output (`-o -`), flushed.
pub fn bytes(b: &[u8]) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(b).and_then(|()| o.flush()) {
        write_failed(&e);
    }
}

/// Flushes standard output before the command exits, with the same rules as [`line`].
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        write_failed(&e);
    }
}

/// The end of the command when standard output cannot be written: quietly for a closed pipe,
/// else with the reason (a full disk: what was printed is incomplete, so the status says so).
pub fn write_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    err!("cudyn: cannot write to standard output: {}", cudyn::error::io_text(e));
    std::process::exit(1);
}

/// A name or path from outside (an image, a library, the file system) for one line of text.
pub fn q(s: &str) -> Cow<'_, str> {
    cudyn::error::quote_name(s)
}

/// A message or log for text with lines.
pub fn qt(s: &str) -> Cow<'_, str> {
    cudyn::error::quote_text(s)
}

/// An input path as text: its bytes, quoted ([`q`]); "-" is standard input.
pub fn qp(p: &Path) -> String {
    if p.as_os_str() == "-" {
        return "(standard input)".into();
    }
    path_text(p)
}

/// An output path as text; "-" is standard output.
pub fn qo(p: &Path) -> String {
    if p.as_os_str() == "-" {
        return "(standard output)".into();
    }
    path_text(p)
}

fn path_text(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    cudyn::error::quote_name_bytes(p.as_os_str().as_bytes()).into_owned()
}
