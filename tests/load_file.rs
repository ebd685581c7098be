//! `load_file` reads regular files only, within a size cap, and never blocks or fills memory:
//! `/dev/zero` (endless), a FIFO with no writer (blocks forever when opened the usual way), a
//! directory and a file over the cap each get CUDYN_ERROR_INVALID_ARGUMENT at once, through
//! the C API and the Rust one. CPU only: the file is refused before any CUDA library is opened.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use common::TempDir;
use cudyn::capi::library::cudyn_library_load_file;
use cudyn::error::Status;
use cudyn::library::{Api, Library, MAX_IMAGE_FILE};

/// Loads `path` through the C API on another thread; fails the test instead of hanging.
fn load_c(path: &Path) -> (Status, String) {
    let (tx, rx) = mpsc::channel();
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    std::thread::spawn(move || {
        let mut lib = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a valid out pointer.
        let status = unsafe { cudyn_library_load_file(c.as_ptr(), Api::Driver as _, &mut lib) };
        // SAFETY: cudyn's message is a valid C string until this thread's next failing call.
        let msg = unsafe { std::ffi::CStr::from_ptr(cudyn::capi::error::cudyn_last_error_message()) };
        let _ = tx.send((status, msg.to_string_lossy().into_owned()));
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("loading {} did not return in 10 s", path.display()))
}

fn refused(path: &Path, what: &str) {
    let (status, msg) = load_c(path);
    assert_eq!(status, Status::InvalidArgument, "{}: {msg}", path.display());
    assert!(msg.contains(what), "{}: {msg} (expected '{what}')", path.display());
    let Err(e) = Library::load_file(path, Api::Runtime) else { panic!("{} loaded through Rust", path.display()) };
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
}

#[test]
fn devices_are_refused() {
    refused(Path::new("/dev/zero"), "is a device");
    refused(Path::new("/dev/null"), "is a device");
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = TempDir::new("fifo");
    let fifo = dir.join("pipe");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    refused(&fifo, "is a FIFO");
}

#[test]
fn a_directory_is_refused() {
    let dir = TempDir::new("dir");
    refused(dir.path(), "is a directory");
}

#[test]
fn a_file_over_the_cap_is_refused_unread() {
    let dir = TempDir::new("big");
    let big = dir.join("big.cubin");
    // Sparse: no disk space, and the cap is checked before a byte is read.
    std::fs::File::create(&big).unwrap().set_len(MAX_IMAGE_FILE + 1).unwrap();
    refused(&big, "limit");
}

#[test]
fn a_missing_file_is_an_io_error() {
    let dir = TempDir::new("missing");
    let (status, msg) = load_c(&dir.join("nothing.cubin"));
    assert_eq!(status, Status::Io, "{msg}");
    assert!(msg.contains("nothing.cubin"), "{msg}");
}
