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
/// as /dev/null, a FIFO) is written into as it is.
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.to_path_buf(),
        Err(e) => return Err(fail("", e)),
    };
    if let Ok(m) = std::fs::metadata(&target) {
        if m.is_dir() {
            return Err(format!("cannot write {shown}: it is a directory"));
        }
        if !m.is_file() {
            let mut f = std::fs::OpenOptions::new().write(true).open(&target).map_err(|e| fail("", e))?;
            return f.write_all(bytes).map_err(|e| fail("", e));
        }
    }
    let dir =
        target.parent().filter(|d| !d.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // A name no one else uses: this process's, and a number past any left by one that died.
    let (tmp, file) = (0..100)
        .map(|n| dir.join(format!(".{name}.cudyn-{}-{n}.tmp", std::process::id())))
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
