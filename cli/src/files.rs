//! Reading the command's inputs and writing its outputs: files by the library's own rules
//! (regular files only, opened without blocking, at most `MAX_IMAGE_FILE` bytes), `-` for
//! standard input or output, and outputs replaced whole or not at all.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cudyn::library::MAX_IMAGE_FILE;

use crate::output::qo;

/// Whether `p` names standard input or output.
pub fn is_std(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// The bytes of `p` (standard input for `-`), or why not, in words.
pub fn read(p: &Path) -> Result<Vec<u8>, String> {
    if !is_std(p) {
        return cudyn::library::read_image_file(p).map_err(|e| e.message);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_IMAGE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading standard input: {}", cudyn::error::io_text(&e)))?;
    if bytes.len() as u64 > MAX_IMAGE_FILE {
        return Err(format!("standard input holds more than the {MAX_IMAGE_FILE}-byte limit for an image"));
    }
    Ok(bytes)
}

/// Writes `bytes` to `out` (standard output for `-`). A file is replaced whole: the bytes go to
/// a new file beside it that is then renamed over it, so a failed write leaves the old file
/// (or none) rather than a cut one. A path that exists and is no regular file (a device such
/// as /dev/null, a FIFO) is written into as it is; a FIFO no one reads is an error, not a wait.
pub fn write(out: &Path, bytes: &[u8]) -> Result<(), String> {
    if is_std(out) {
        crate::output::bytes(bytes);
        return Ok(());
    }
    let shown = qo(out);
    let fail = |what: &str, e: std::io::Error| format!("cannot write {shown}: {what}{}", cudyn::error::io_text(&e));
    // Through a symbolic link to the file it names, as writing to the path would.
    let target = match std::fs::canonicalize(out) {
        Ok(t) => t,
        // Nothing there yet, or a link to a file not there yet (written where it points).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read_link(out) {
            Ok(to) => out.parent().unwrap_or(Path::new("")).join(to),
            Err(_) => out.to_path_buf(),
        },
        Err(e) => return Err(fail("", e)),
    };
    if let Ok(m) = std::fs::metadata(&target) {
        if m.is_dir() {
            return Err(format!("cannot write {shown}: it is a directory"));
        }
        if !m.is_file() {
            use std::os::unix::fs::OpenOptionsExt;
            // Linux's O_NONBLOCK and ENXIO (the same on every architecture cudyn builds for).
            const O_NONBLOCK: i32 = 0o4000;
            const ENXIO: i32 = 6;
            // Opened without waiting: a FIFO no one reads answers ENXIO at once, where a plain
            // open would wait for a reader forever. Written as the reader takes it (a full
            // pipe answers "would block": wait a little and go on).
            let mut f =
                std::fs::OpenOptions::new().write(true).custom_flags(O_NONBLOCK).open(&target).map_err(|e| {
                    if e.raw_os_error() == Some(ENXIO) {
                        format!("cannot write {shown}: a FIFO that no one reads")
                    } else {
                        fail("", e)
                    }
                })?;
            let mut rest = bytes;
            while !rest.is_empty() {
                match f.write(rest) {
                    Ok(0) => return Err(format!("cannot write {shown}: it takes no more bytes")),
                    Ok(n) => rest = &rest[n..],
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(fail("", e)),
                }
            }
            return Ok(());
        }
    }
    let dir =
        target.parent().filter(|d| !d.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // A name no one else uses: this process's, and a number past any left by one that died;
    // not made from the output's name, which may already be as long as a name can be.
    let (tmp, file) = (0..100)
        .map(|n| dir.join(format!(".cudyn-out-{}-{n}.tmp", std::process::id())))
        .find_map(|t| match std::fs::OpenOptions::new().write(true).create_new(true).open(&t) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
            r => Some((t, r)),
        })
        .ok_or_else(|| format!("cannot write {shown}: no free temporary name beside it"))?;
    let result = file
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &target));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail("", e));
    }
    Ok(())
}
