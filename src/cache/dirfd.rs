//! A directory held open by descriptor, and every file operation the cache makes relative to
//! it (`openat`, `renameat`, `unlinkat`, `fstatat`), so the folder that was checked is the one used.
//!
//! Why: checking a folder by path and then building paths from its name lets anyone who can
//! write the parent swap the folder between check and use. Through the descriptor, a swap of
//! the name changes nothing: cudyn keeps reading and writing the folder it checked.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `fstat`/`fstatat` says about a file, the fields the cache uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub mode: u32,
    pub uid: u32,
    pub len: u64,
    pub dev: u64,
    pub ino: u64,
    pub mtime: SystemTime,
    /// Change time (seconds, nanoseconds): every write or rename of the file moves it.
    pub ctime: (i64, i64),
}

impl Stat {
    fn from_raw(st: &libc::stat) -> Stat {
        let secs = st.st_mtime;
        let mtime = if secs >= 0 {
            UNIX_EPOCH + Duration::new(secs as u64, st.st_mtime_nsec.clamp(0, 999_999_999) as u32)
        } else {
            UNIX_EPOCH
        };
        Stat {
            mode: st.st_mode,
            uid: st.st_uid,
            len: st.st_size.max(0) as u64,
            dev: st.st_dev,
            ino: st.st_ino,
            mtime,
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn same_file(&self, other: &Stat) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// `fstat` of an open file.
pub(crate) fn fstat(fd: &impl AsRawFd) -> io::Result<Stat> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor and a valid out-pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Stat::from_raw(&st))
}

/// A single name inside the directory: never a path, so nothing resolves outside it.
fn leaf(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not a plain file name")));
    }
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name contains NUL"))
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The most names `list` returns (a small bound in the unit tests, which fill a folder past it).
#[cfg(not(test))]
pub(crate) const MAX_LISTING: usize = 1 << 20;
#[cfg(test)]
pub(crate) const MAX_LISTING: usize = 1 << 10;

/// An open directory; every operation names a file inside it.
#[derive(Debug)]
pub(crate) struct DirFd(OwnedFd);

impl DirFd {
    /// Opens `path` as a directory, refusing a symlink in the last component.
    pub fn open(path: &Path) -> io::Result<DirFd> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        // SAFETY: NUL-terminated path; the returned descriptor is owned below.
        let fd = cvt(unsafe {
            libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        })?;
        // SAFETY: fd was just opened and is owned by nobody else.
        Ok(DirFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The descriptor's number (for `/proc/self/fd/N`, a path that reaches this very folder).
    pub fn raw(&self) -> i32 {
        self.0.as_raw_fd()
    }

    pub fn stat_self(&self) -> io::Result<Stat> {
        fstat(&self.0)
    }

    pub fn chmod_self(&self, mode: u32) -> io::Result<()> {
        // SAFETY: a live descriptor.
        cvt(unsafe { libc::fchmod(self.0.as_raw_fd(), mode) }).map(drop)
    }

    /// `openat(dir, name, flags | O_CLOEXEC | O_NOFOLLOW, mode)`.
    pub fn open_file(&self, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
        let c = leaf(name)?;
        // SAFETY: a live directory descriptor and a NUL-terminated leaf name.
        let fd = cvt(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                mode as libc::c_uint,
            )
        })?;
        // SAFETY: fd was just opened and is owned by nobody else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: a symlink is described, never followed.
    pub fn stat(&self, name: &OsStr) -> io::Result<Stat> {
        let c = leaf(name)?;
        // SAFETY: an all-zero `stat` is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: live descriptor, NUL-terminated name, valid out-pointer.
        cvt(unsafe { libc::fstatat(self.0.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
        Ok(Stat::from_raw(&st))
    }

    /// `renameat(dir, from, dir, to)`: atomic within the directory.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (leaf(from)?, leaf(to)?);
        let fd = self.0.as_raw_fd();
        // SAFETY: live descriptor, NUL-terminated names.
        cvt(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(drop)
    }

    /// `unlinkat(dir, name, 0)`: removes a file or a symlink itself, never a directory.
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        let c = leaf(name)?;
        // SAFETY: live descriptor, NUL-terminated name.
        cvt(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// `openat(dir, name, O_DIRECTORY | O_NOFOLLOW)`: a folder inside this one, never through a
    /// symlink.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<DirFd> {
        let c = leaf(name)?;
        // SAFETY: a live directory descriptor and a NUL-terminated leaf name.
        let fd = cvt(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: fd was just opened and is owned by nobody else.
        Ok(DirFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// `unlinkat(dir, name, AT_REMOVEDIR)`: removes an empty folder.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        let c = leaf(name)?;
        // SAFETY: live descriptor, NUL-terminated name.
        cvt(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) }).map(drop)
    }

    /// Whether this process may create files here (`faccessat(W_OK | X_OK, AT_EACCESS)`: the
    /// effective ids, a read-only mount included), without creating one.
    pub fn writable(&self) -> io::Result<()> {
        // SAFETY: live descriptor, static NUL-terminated name.
        cvt(unsafe { libc::faccessat(self.0.as_raw_fd(), c".".as_ptr(), libc::W_OK | libc::X_OK, libc::AT_EACCESS) })
            .map(drop)
    }

    /// The names in the directory (without "." and "..").
    pub fn list(&self) -> io::Result<Vec<OsString>> {
        self.list_matching(|_| true)
    }

    /// The names in the directory that `keep` takes: only those count toward the bound, so
    /// names of no interest to the caller (another program's files, however many) never stop
    /// a listing of the caller's own.
    pub fn list_matching(&self, keep: impl Fn(&std::ffi::OsStr) -> bool) -> io::Result<Vec<OsString>> {
        // A fresh open file description, so that listing never moves a shared offset.
        // SAFETY: live descriptor, static NUL-terminated name.
        let fd = cvt(unsafe {
            libc::openat(self.0.as_raw_fd(), c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        })?;
        // SAFETY: fd is a fresh directory descriptor; fdopendir takes ownership of it on success.
        let d = unsafe { libc::fdopendir(fd) };
        if d.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so fd is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let mut out = Vec::new();
        let result = loop {
            // SAFETY: errno is thread-local; cleared to tell the end from an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: d is a live DIR stream used by this thread only.
            let ent = unsafe { libc::readdir(d) };
            if ent.is_null() {
                let e = io::Error::last_os_error();
                break if e.raw_os_error().unwrap_or(0) == 0 { Ok(()) } else { Err(e) };
            }
            // SAFETY: d_name is NUL-terminated inside the dirent readdir returned.
            let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
            if name != b"." && name != b".." && keep(std::ffi::OsStr::from_bytes(name)) {
                // A folder of millions of names is not a cache cudyn made: bounded, not a
                // listing that grows with whatever was put there.
                if out.len() >= MAX_LISTING {
                    break Err(io::Error::other(format!("more than {MAX_LISTING} names in the cache folder")));
                }
                out.push(OsString::from_vec(name.to_vec()));
            }
        };
        // SAFETY: d is live and closed exactly once.
        unsafe { libc::closedir(d) };
        result.map(|()| out)
    }
}
