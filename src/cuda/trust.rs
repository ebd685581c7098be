//! Whether a library file may be opened: the path walked one component at a time on
//! descriptors, every folder and link on the way checked, the file opened once and checked.
//!
//! The rule: every folder the path passes through (each component as given, the folders of
//! every symlink's target too, and `/`) and every entry looked up in them is owned by root or
//! by us (the effective uid), and no folder is writable by its group or by others unless it is
//! sticky (`/tmp`: others may add names there but not rename or remove ours, and each name we
//! use must be ours or root's); the file itself is a regular file owned by root or by us that
//! neither its group nor others can write.
//!
//! Why that makes `dlopen(path)` load the file checked: `dlopen` resolves the path again. It
//! lands on another file only if some folder on the way, or some link in it, changed between
//! the check and the load; under the rule, only root and we can change any of them. The walk
//! itself cannot be raced either: each name is looked up (`openat` with `O_NOFOLLOW`) in the
//! descriptor of a folder already checked, symlinks are read from their own descriptor
//! (`readlinkat`) and followed by the walk, never by the kernel, so what is checked is what
//! the next step stands on. (`dlopen("/proc/self/fd/N")` would also load the descriptor's file,
//! but the loader then records that name: `dladdr`, debuggers and `$ORIGIN` see
//! `/proc/self/fd`, and a later `dlopen` of the same string, with `N` reused, would be handed
//! the old library by name. The rule keeps the name the caller gave.)

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why a path was not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nothing there (or a component that is not a folder): the search moves on quietly.
    Absent,
    /// Something is there but may not be used, and why (named in the not-found message).
    Untrusted(String),
}

/// A file that passed the checks, open for reading.
#[derive(Debug)]
pub(crate) struct Checked {
    pub fd: OwnedFd,
    /// The path walked, symlinks resolved (what `canonicalize` would say, without a second walk).
    #[allow(dead_code)] // read by the tests, which compare it with `canonicalize`
    pub resolved: PathBuf,
}

/// The effective uid: "us". A setuid-root program trusts only root's files.
fn me() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn fstat(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is a valid out-pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn openat(dir: &OwnedFd, name: &OsStr, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let c = CString::new(name.as_bytes()).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: dir is open, c is NUL-terminated; the returned descriptor is owned by us alone.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn open_root() -> Result<OwnedFd, Refusal> {
    // SAFETY: a constant NUL-terminated path.
    let fd = unsafe { libc::open(c"/".as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Refusal::Untrusted("cannot open /".into()));
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The target of the symlink open (O_PATH | O_NOFOLLOW) at `fd`.
fn readlink(fd: &OwnedFd) -> std::io::Result<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: an empty path with an O_PATH descriptor reads the link itself (Linux 2.6.39+);
    // buf has the length given.
    let n = unsafe { libc::readlinkat(fd.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= buf.len() {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidData));
    }
    buf.truncate(n);
    Ok(PathBuf::from(OsStr::from_bytes(&buf)))
}

fn kind(st: &libc::stat) -> u32 {
    st.st_mode & libc::S_IFMT
}

/// Who may change `st` besides root and us, if anyone: its owner, or (for a folder that is not
/// sticky, or a file) its group or everyone through the mode bits.
fn others_can_write(what: &Path, st: &libc::stat, is_folder: bool) -> Option<String> {
    let me = me();
    let mode = st.st_mode & 0o7777;
    let noun = if is_folder { "the folder" } else { "" };
    let name = format!("{noun}{}{}", if is_folder { " " } else { "" }, what.display());
    if st.st_uid != 0 && st.st_uid != me {
        return Some(format!("{name} is owned by uid {}, neither root nor us (uid {me})", st.st_uid));
    }
    let sticky = is_folder && mode & 0o1000 != 0;
    if !sticky {
        if mode & 0o002 != 0 {
            return Some(format!("{name} is writable by others (mode {mode:o})"));
        }
        if mode & 0o020 != 0 {
            return Some(format!("{name} is writable by its group, gid {} (mode {mode:o})", st.st_gid));
        }
    }
    None
}

/// At most this many symlinks on one path (the kernel's limit too).
const MAX_LINKS: usize = 40;

/// What a walk ends on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    File,
    Folder,
}

/// Where a walk ended: the final entry (O_PATH), the checked folder it was found in (None for
/// `/`), its name there, and the path walked with symlinks resolved.
struct Walked {
    fd: OwnedFd,
    parent: Option<(OwnedFd, std::ffi::OsString)>,
    resolved: PathBuf,
}

/// Walks absolute `path` from `/` as described in the module comment, to an entry of kind `end`.
fn walk(path: &Path, end: End) -> Result<Walked, Refusal> {
    if !path.is_absolute() {
        return Err(Refusal::Untrusted(format!("{} is a relative path", path.display())));
    }
    // The components still to walk, reversed: the next one is last.
    let mut todo: Vec<std::ffi::OsString> = Vec::new();
    let push_front = |todo: &mut Vec<std::ffi::OsString>, p: &Path| {
        let comps: Vec<std::ffi::OsString> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        todo.extend(comps.into_iter().rev());
    };
    push_front(&mut todo, path);
    let mut dir = open_root()?;
    let mut at = PathBuf::from("/");
    let root_st = fstat(&dir).map_err(|e| Refusal::Untrusted(format!("cannot stat /: {e}")))?;
    if let Some(why) = others_can_write(&at, &root_st, true) {
        return Err(Refusal::Untrusted(why));
    }
    let not_a_file = |at: &Path| Refusal::Untrusted(format!("{} is a folder, not a file", at.display()));
    let mut links = 0usize;
    while let Some(name) = todo.pop() {
        let fd = match openat(&dir, &name, libc::O_PATH | libc::O_NOFOLLOW) {
            Ok(fd) => fd,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                return Err(Refusal::Absent)
            }
            Err(e) => {
                return Err(Refusal::Untrusted(format!(
                    "cannot look up {}: {}",
                    at.join(&name).display(),
                    crate::error::io_text(&e)
                )))
            }
        };
        let here = if name == ".." { at.parent().unwrap_or(Path::new("/")).to_path_buf() } else { at.join(&name) };
        let st = fstat(&fd).map_err(|e| Refusal::Untrusted(format!("cannot stat {}: {e}", here.display())))?;
        match kind(&st) {
            libc::S_IFLNK => {
                // The link sits in a checked folder; it must be ours or root's too, since in a
                // sticky folder its owner may replace it.
                let me = me();
                if st.st_uid != 0 && st.st_uid != me {
                    return Err(Refusal::Untrusted(format!(
                        "the symlink {} is owned by uid {}, neither root nor us (uid {me})",
                        here.display(),
                        st.st_uid
                    )));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(Refusal::Untrusted(format!("{} has too many levels of symlinks", path.display())));
                }
                let target = readlink(&fd)
                    .map_err(|e| Refusal::Untrusted(format!("cannot read the symlink {}: {e}", here.display())))?;
                if target.is_absolute() {
                    dir = open_root()?;
                    at = PathBuf::from("/");
                }
                push_front(&mut todo, &target);
                if todo.is_empty() {
                    // A link to "/" or ".": the folder we stand in is the end.
                    if end == End::File {
                        return Err(not_a_file(&at));
                    }
                    let again = openat(&dir, OsStr::new("."), libc::O_PATH | libc::O_DIRECTORY)
                        .map_err(|e| Refusal::Untrusted(format!("cannot reopen {}: {e}", at.display())))?;
                    return Ok(Walked { fd: again, parent: None, resolved: at });
                }
            }
            libc::S_IFDIR => {
                if let Some(why) = others_can_write(&here, &st, true) {
                    return Err(Refusal::Untrusted(why));
                }
                if todo.is_empty() {
                    if end == End::File {
                        return Err(not_a_file(&here));
                    }
                    return Ok(Walked { fd, parent: Some((dir, name)), resolved: here });
                }
                dir = fd;
                at = here;
            }
            libc::S_IFREG if todo.is_empty() && end == End::File => {
                if let Some(why) = others_can_write(&here, &st, false) {
                    return Err(Refusal::Untrusted(why));
                }
                return Ok(Walked { fd, parent: Some((dir, name)), resolved: here });
            }
            // "a/file/b", or a file where a folder is wanted: nothing of that name.
            libc::S_IFREG => return Err(Refusal::Absent),
            _ => return Err(Refusal::Untrusted(format!("{} is not a regular file", here.display()))),
        }
    }
    // The path was "/" itself.
    if end == End::File {
        return Err(not_a_file(&at));
    }
    Ok(Walked { fd: dir, parent: None, resolved: at })
}

/// Open the library file at `path` (absolute) for reading if the rule holds for it.
pub(crate) fn open_file(path: &Path) -> Result<Checked, Refusal> {
    let w = walk(path, End::File)?;
    let shown = w.resolved.display();
    let before = fstat(&w.fd).map_err(|e| Refusal::Untrusted(format!("cannot stat {shown}: {e}")))?;
    // Open it for reading by its name in the folder checked (only root and we can change that
    // name), O_NOFOLLOW and O_NONBLOCK, and make sure it is still the inode checked.
    let Some((parent, name)) = &w.parent else { return Err(not_a_file_at(&w.resolved)) };
    let fd = openat(parent, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .map_err(|e| Refusal::Untrusted(format!("cannot open {shown}: {}", crate::error::io_text(&e))))?;
    let after = fstat(&fd).map_err(|e| Refusal::Untrusted(format!("cannot stat {shown}: {e}")))?;
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) || kind(&after) != libc::S_IFREG {
        return Err(Refusal::Untrusted(format!("{shown} changed while it was checked")));
    }
    if let Some(why) = others_can_write(&w.resolved, &after, false) {
        return Err(Refusal::Untrusted(why));
    }
    Ok(Checked { fd, resolved: w.resolved })
}

fn not_a_file_at(p: &Path) -> Refusal {
    Refusal::Untrusted(format!("{} is not a regular file", p.display()))
}

/// Whether the folder at `path` (absolute) passes the rule: its contents can be changed only
/// by root and us. Err says why not (or that it is absent).
pub(crate) fn folder(path: &Path) -> Result<PathBuf, Refusal> {
    walk(path, End::Folder).map(|w| w.resolved)
}

/// `len` bytes at `offset` of `fd` (fewer at the end of the file).
pub(crate) fn pread(fd: &OwnedFd, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    buf.resize(len, 0);
    let mut got = 0usize;
    while got < len {
        let off = i64::try_from(offset.saturating_add(got as u64))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: the buffer has `len - got` writable bytes at `got`.
        let n = unsafe { libc::pread(fd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), len - got, off) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    buf.truncate(got);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn tmp(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cudyn-trust-{}-{what}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn untrusted(r: Result<Checked, Refusal>) -> String {
        match r {
            Err(Refusal::Untrusted(w)) => w,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn every_folder_on_the_way_and_every_link_counts() {
        let d = tmp("walk");
        let good = d.join("good");
        std::fs::create_dir(&good).unwrap();
        std::fs::write(good.join("lib.so"), b"x").unwrap();
        std::fs::set_permissions(good.join("lib.so"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let ok = open_file(&good.join("lib.so")).unwrap();
        assert_eq!(ok.resolved, std::fs::canonicalize(good.join("lib.so")).unwrap());

        // A link in a folder others can write, pointing at the good file: refused for the
        // link's folder, though the file it names is fine.
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        symlink(good.join("lib.so"), open.join("lib.so")).unwrap();
        assert!(untrusted(open_file(&open.join("lib.so"))).contains("writable by others"));
        // A symlinked folder whose target's folder is group-writable.
        let grp = d.join("grp");
        std::fs::create_dir(&grp).unwrap();
        std::fs::write(grp.join("lib.so"), b"x").unwrap();
        std::fs::set_permissions(&grp, std::fs::Permissions::from_mode(0o775)).unwrap();
        symlink(&grp, good.join("via")).unwrap();
        assert!(untrusted(open_file(&good.join("via/lib.so"))).contains("writable by its group"));
        // "..": the folder it lands in is checked like any other.
        assert!(untrusted(open_file(&good.join("via/../grp/lib.so"))).contains("writable by its group"));
        // A group-writable file.
        std::fs::set_permissions(good.join("lib.so"), std::fs::Permissions::from_mode(0o664)).unwrap();
        assert!(untrusted(open_file(&good.join("lib.so"))).contains("writable by its group"));
        std::fs::set_permissions(good.join("lib.so"), std::fs::Permissions::from_mode(0o644)).unwrap();
        // Absent, and a path through a file.
        assert_eq!(open_file(&good.join("none.so")).unwrap_err(), Refusal::Absent);
        assert_eq!(open_file(&good.join("lib.so/x")).unwrap_err(), Refusal::Absent);
        // A folder, a FIFO: not files.
        assert!(untrusted(open_file(&good)).contains("not a file"));
        let fifo = CString::new(good.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(untrusted(open_file(&good.join("fifo"))).contains("not a regular file"));
        // A symlink loop.
        symlink(d.join("loop"), d.join("loop")).unwrap();
        assert!(untrusted(open_file(&d.join("loop"))).contains("too many levels"));
        // Relative paths are never walked.
        assert!(untrusted(open_file(Path::new("lib.so"))).contains("relative"));
        // A sticky world-writable folder (/tmp) on the way is fine for entries we own.
        let st = std::fs::metadata(std::env::temp_dir()).unwrap();
        if std::os::unix::fs::PermissionsExt::mode(&st.permissions()) & 0o1000 != 0 {
            assert!(open_file(&good.join("lib.so")).is_ok());
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A sticky folder others can write (/tmp's kind) is fine on the way, for entries owned by
    /// root or us; a symlink another user owns there is not (they may replace it).
    #[test]
    fn sticky_folders_protect_only_our_own_entries() {
        let d = tmp("sticky");
        let st = d.join("st");
        std::fs::create_dir(&st).unwrap();
        std::fs::set_permissions(&st, std::fs::Permissions::from_mode(0o1777)).unwrap();
        std::fs::write(st.join("lib.so"), b"x").unwrap();
        std::fs::set_permissions(st.join("lib.so"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(open_file(&st.join("lib.so")).is_ok());
        symlink(st.join("lib.so"), st.join("link.so")).unwrap();
        assert!(open_file(&st.join("link.so")).is_ok());
        // Not sticky: refused.
        std::fs::set_permissions(&st, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(untrusted(open_file(&st.join("lib.so"))).contains("writable by others"));
        std::fs::set_permissions(&st, std::fs::Permissions::from_mode(0o1777)).unwrap();
        if me() == 0 {
            std::os::unix::fs::lchown(st.join("link.so"), Some(65534), Some(65534)).unwrap();
            assert!(untrusted(open_file(&st.join("link.so"))).contains("the symlink"));
            std::os::unix::fs::chown(st.join("lib.so"), Some(65534), Some(65534)).unwrap();
            assert!(untrusted(open_file(&st.join("lib.so"))).contains("owned by uid 65534"));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn folders_are_checked_the_same_way() {
        let d = tmp("folder");
        assert!(folder(&d).is_ok());
        let sub = d.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o770)).unwrap();
        assert!(matches!(folder(&sub), Err(Refusal::Untrusted(w)) if w.contains("group")));
        assert_eq!(folder(&d.join("none")), Err(Refusal::Absent));
        let _ = std::fs::remove_dir_all(&d);
    }
}
