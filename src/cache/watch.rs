//! Change notices (inotify) for the folders a remembered compile depends on as wholes, so that
//! the in-memory tier answers a repeated compile with one `read` instead of a `stat` per folder.
//!
//! What a notice stands for: a folder check (a sealed toolkit folder's stamp, or names proved
//! absent by a folder's listing, `deps::Check`) holds while no entry of that folder is created,
//! removed, renamed or changed, and no folder on the path to it is renamed, removed or replaced:
//! inotify reports each of those, on the folder's own watch or on its parent's. A file's own
//! check (the caller's headers) is never left to notices — a write through a shared mapping is
//! not reported, while its `stat` shows it. Notices are used only on local filesystems (a
//! network filesystem does not report other hosts' changes), and every doubt — a full queue, a
//! watch the kernel dropped, a watch limit, a forked child — counts as a change, after which
//! the `stat` checks run again.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

struct Inner {
    fd: i32,
    pid: u32,
    generation: u64,
    /// Per watch, the names in it whose change matters (None: every name).
    relevant: HashMap<i32, Option<HashSet<OsString>>>,
    /// Folders watched as wholes.
    whole: HashSet<PathBuf>,
    /// (folder, name in it) watched on the way to a whole folder.
    on_path: HashSet<(PathBuf, OsString)>,
}

static WATCH: Mutex<Option<Inner>> = Mutex::new(None);

/// The most watches this process adds (each costs kernel memory; the user's limit is shared).
const MAX_WATCHES: usize = 4096;

const WHOLE_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_ATTRIB
    | libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;
const PATH_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

/// Filesystems whose changes all pass through this kernel (statfs f_type).
fn local_filesystem(p: &Path) -> bool {
    const LOCAL: [i64; 11] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0x7371_7368, // squashfs
        0x8584_58F6, // ramfs
        0x3153_464A, // jfs
        0x5265_4973, // reiserfs
    ];
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: an all-zero statfs is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    LOCAL.contains(&(st.f_type as i64))
}

fn pid() -> u32 {
    std::process::id()
}

impl Inner {
    fn new() -> Option<Inner> {
        // SAFETY: no pointers; the descriptor is owned by this process-wide state (never closed:
        // it lives as long as the process, like the libraries cudyn opens).
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        (fd >= 0).then(|| Inner {
            fd,
            pid: pid(),
            generation: 0,
            relevant: HashMap::new(),
            whole: HashSet::new(),
            on_path: HashSet::new(),
        })
    }

    fn add(&mut self, p: &Path, mask: u32, name: Option<&OsStr>) -> bool {
        if self.relevant.len() >= MAX_WATCHES {
            return false;
        }
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return false };
        // SAFETY: a live inotify descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd, c.as_ptr(), mask | libc::IN_MASK_ADD | libc::IN_ONLYDIR) };
        if wd < 0 {
            return false;
        }
        let e = self.relevant.entry(wd).or_insert_with(|| Some(HashSet::new()));
        match (e.as_mut(), name) {
            (Some(set), Some(n)) => {
                set.insert(n.to_os_string());
            }
            _ => *e = None,
        }
        true
    }

    /// Reads every pending notice; a relevant one (or any doubt) moves the generation.
    fn drain(&mut self) {
        let mut buf = [0u8; 16384];
        loop {
            // SAFETY: a live descriptor and a buffer of that many bytes.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                // EAGAIN: nothing more. Anything else is a doubt.
                if n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN) {
                    self.forget();
                }
                return;
            }
            let mut at = 0usize;
            let n = n as usize;
            while at + 16 <= n {
                let wd = i32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or_default());
                let mask = u32::from_ne_bytes(buf[at + 4..at + 8].try_into().unwrap_or_default());
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap_or_default()) as usize;
                let name_end = (at + 16 + len).min(n);
                let raw = &buf[at + 16..name_end];
                let name = OsStr::from_bytes(&raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())]);
                at = name_end;
                if mask & (libc::IN_Q_OVERFLOW | libc::IN_IGNORED) != 0 {
                    self.forget();
                    continue;
                }
                match self.relevant.get(&wd) {
                    Some(None) => self.generation += 1,
                    Some(Some(names))
                        if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 || names.contains(name) =>
                    {
                        self.generation += 1
                    }
                    _ => {}
                }
            }
        }
    }

    /// Drops what is known of the watches (they are added again on the next `arm`): a change.
    fn forget(&mut self) {
        self.generation += 1;
        self.relevant.clear();
        self.whole.clear();
        self.on_path.clear();
    }
}

/// Watches each folder given — as a whole (None), or for the names given in it — and each
/// folder on the way to it for the name that leads there. Returns the generation to give
/// `unchanged_since`, which the caller must take only after checking, now, that the folders
/// are as it recorded them (notices from before this call are not reported). None when notices
/// cannot stand for them.
pub(crate) fn arm<'a>(folders: impl IntoIterator<Item = (&'a Path, Option<&'a [OsString]>)>) -> Option<u64> {
    let mut g = WATCH.lock().ok()?;
    if g.as_ref().is_some_and(|w| w.pid != pid()) {
        // A forked child: the descriptor is shared with the parent; never read it here.
        return None;
    }
    if g.is_none() {
        *g = Some(Inner::new()?);
    }
    let w = g.as_mut()?;
    for (f, names) in folders {
        if !f.is_absolute() || !local_filesystem(f) {
            return None;
        }
        match names {
            None => {
                if !w.whole.contains(f) {
                    if !w.add(f, WHOLE_MASK, None) {
                        return None;
                    }
                    w.whole.insert(f.to_path_buf());
                }
            }
            Some(names) => {
                for n in names {
                    let key = (f.to_path_buf(), n.clone());
                    if !w.on_path.contains(&key) {
                        if !w.add(f, PATH_MASK, Some(n)) {
                            return None;
                        }
                        w.on_path.insert(key);
                    }
                }
            }
        }
        let mut child = f;
        while let Some(parent) = child.parent() {
            let Some(name) = child.file_name() else { break };
            let key = (parent.to_path_buf(), name.to_os_string());
            if !w.on_path.contains(&key) {
                if !w.add(parent, PATH_MASK, Some(name)) {
                    return None;
                }
                w.on_path.insert(key);
            }
            child = parent;
        }
    }
    w.drain();
    Some(w.generation)
}

/// Whether no relevant notice arrived since `arm` gave `generation`.
pub(crate) fn unchanged_since(generation: u64) -> bool {
    let Ok(mut g) = WATCH.lock() else { return false };
    match g.as_mut() {
        Some(w) if w.pid == pid() => {
            w.drain();
            w.generation == generation
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_move_the_generation_only_for_what_matters() {
        let base = std::env::temp_dir().join(format!("cudyn-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let inc = base.join("a/inc");
        std::fs::create_dir_all(&inc).unwrap();
        std::fs::create_dir_all(base.join("a/other")).unwrap();
        let Some(g) = arm([(inc.as_path(), None)]) else {
            eprintln!("note: no inotify on this filesystem; nothing to test");
            return;
        };
        assert!(unchanged_since(g));
        // A sibling of a folder on the path: not relevant.
        std::fs::write(base.join("a/other/x.h"), "").unwrap();
        std::fs::write(base.join("a/unrelated"), "").unwrap();
        assert!(unchanged_since(g), "a change beside the path moved the generation");
        // A file appearing in the watched folder: relevant.
        std::fs::write(inc.join("new.h"), "").unwrap();
        assert!(!unchanged_since(g));
        let g = arm([(inc.as_path(), None)]).unwrap();
        // The folder replaced through a rename of a folder above it: relevant.
        std::fs::rename(base.join("a"), base.join("b")).unwrap();
        std::fs::create_dir_all(&inc).unwrap();
        assert!(!unchanged_since(g));
        // Names watched in a folder: another name there is not relevant, one of them is.
        let own = base.join("own");
        std::fs::create_dir_all(&own).unwrap();
        let names = [OsString::from("wanted.h")];
        let g = arm([(own.as_path(), Some(&names[..]))]).unwrap();
        std::fs::write(own.join("build-output.o"), "").unwrap();
        assert!(unchanged_since(g), "an unrelated file in a folder watched by name moved the generation");
        std::fs::write(own.join("wanted.h"), "").unwrap();
        assert!(!unchanged_since(g));
        let _ = std::fs::remove_dir_all(&base);
    }
}
