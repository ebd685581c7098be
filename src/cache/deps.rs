//! Every file a compile could read, found without NVRTC's help, so the cache key can cover
//! them all: NVRTC 13.0 has no dependency output, yet reads headers from disk with no option
//! at all (`#include "/abs/x.h"`, a quoted include found beside the program's name, which is
//! relative to the working directory) as well as through `-I` and `-include`.
//!
//! The scan is conservative rather than exact: every text is lexed as NVRTC lexes it
//! (`lex.rs`: raw strings, digit separators, splices, trigraphs), and for every `#include` /
//! `__has_include` in the source, the in-memory headers and every file found, the name is
//! looked up in every folder NVRTC might search (the including file's folder, the program's
//! and each in-memory header's folder, every include path), whatever the order; each outcome
//! (the file's bytes, "absent", "a folder") goes into a digest. Any change to any file that
//! could have been read, or a file appearing where none was, changes the digest and so the key.
//! A construct it cannot follow (an include named by a function-like macro, `#embed`,
//! precompiled headers, options files, options that write files) or the clock macros
//! (`__DATE__`, `__TIME__`, `__TIMESTAMP__`) make the scan fail, and the compile then bypasses
//! the cache: stale code is never an option.
//!
//! The digest names each lookup by where it is relative to its search root (`I0:sub/x.h`, the
//! first `-I` folder; `T1:cub/...`, the second toolkit include folder; `cwd:x.h`), never by an
//! absolute path, so the same sources in another folder give the same key (a bundle built in
//! one place hits in another). The checks that tell a later process nothing changed are by
//! absolute path: one per file, except in a toolkit include folder whose files only root can
//! write, which is checked as a whole by its folder's stamp (see `Check`).

use super::lex::{self, lex, Dialect, Lexed};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// More files than this, or more bytes, and the scan gives up (the compile is not cached).
const MAX_FILES: usize = 20_000;
const MAX_BYTES: u64 = 512 << 20;

/// The outcome of a successful scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeScan {
    /// SHA-256 over the portable options and every lookup made with its result, in a fixed
    /// order; no absolute path of a search folder goes in.
    pub digest: [u8; 32],
    /// The files found on disk (each hashed into `digest`).
    pub files: Vec<PathBuf>,
    /// Lookups made (found or not).
    pub lookups: usize,
    /// Each path looked up and what `stat` said, to tell later whether anything changed.
    pub checks: Vec<Check>,
    /// Some file found was changed in the last seconds (`TOO_NEW_SECS`): its stamp cannot be
    /// trusted to reveal a change, so this scan must not be remembered.
    pub fresh: bool,
}

/// One lookup of a scan: the path, and its kind (0: an error, with errno in `stamp[0]`;
/// 1: a file, with its stamp; 2: a folder; 3: something else; 4: a folder with its stamp,
/// standing for every name absent from it — see `listing` — or, in a sealed toolkit folder,
/// for every file in it; 5: names absent from one of the program's own folders, `names`: the
/// folder's stamp says they still are while it holds, and when it does not (that folder, often
/// the working directory, changes for other reasons) each name is checked, never a rescan).
///
/// A sealed folder is one of the toolkit's include folders (beside NVRTC) whose files the scan
/// found owned by root and writable by no one else. Adding, removing, renaming or replacing a
/// file in a folder moves its mtime, and installers, pip, conda and package managers change
/// files that way; editing a file in place does not, and only root can edit these. So one
/// `stat` of the folder stands for every header in it: a CUB compile's 719 header checks become
/// some 65 folder checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    path: PathBuf,
    kind: u8,
    stamp: [i64; 7],
    names: Vec<std::ffi::OsString>,
}

impl Check {
    fn now(path: &Path) -> Check {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => Check { path: path.to_path_buf(), kind: 1, stamp: stamp(&m), names: Vec::new() },
            Ok(m) if m.is_dir() => Check { path: path.to_path_buf(), kind: 2, stamp: [0; 7], names: Vec::new() },
            Ok(_) => Check { path: path.to_path_buf(), kind: 3, stamp: [0; 7], names: Vec::new() },
            Err(e) => Check {
                path: path.to_path_buf(),
                kind: 0,
                stamp: [e.raw_os_error().unwrap_or(0) as i64, 0, 0, 0, 0, 0, 0],
                names: Vec::new(),
            },
        }
    }

    /// Folder `dir` as it is now, when it is one: its stamp changes whenever an entry is
    /// added to it, removed or renamed (mtime), and when its permissions change (ctime).
    fn listing(dir: &Path) -> Option<Check> {
        let m = std::fs::metadata(dir).ok()?;
        m.is_dir().then(|| Check { path: dir.to_path_buf(), kind: 4, stamp: stamp(&m), names: Vec::new() })
    }

    /// Whether this lookup still gives the same answer.
    fn holds(&self) -> bool {
        match self.kind {
            4 => Check::listing(&self.path).is_some_and(|l| l.stamp == self.stamp),
            5 => {
                Check::listing(&self.path).is_some_and(|l| l.stamp == self.stamp)
                    || self.names.iter().all(|n| truly_absent(&self.path.join(n)))
            }
            _ => Check::now(&self.path) == *self,
        }
    }

    /// For a check of a folder (kinds 4 and 5), the folder and the names in it that matter
    /// (None: all of them): what change notices (`watch.rs`) can stand for, where a file's own
    /// stamp cannot. None for a file's check.
    pub(crate) fn folder(&self) -> Option<(&Path, Option<&[std::ffi::OsString]>)> {
        match self.kind {
            4 => Some((&self.path, None)),
            5 => Some((&self.path, Some(&self.names))),
            _ => None,
        }
    }

    /// The path this check looks at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it checks a folder as a whole (a sealed toolkit folder, or names absent from a
    /// folder), not one file.
    pub fn is_folder(&self) -> bool {
        self.folder().is_some()
    }
}

/// Absent, not even a dangling link (whose target can appear without its folder changing).
fn truly_absent(p: &Path) -> bool {
    matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// The check that stands for "`missing` is absent", when its folder's listing can: `missing`
/// is truly absent (not even a dangling link, whose target could appear elsewhere) from a
/// folder that was not changed in the last seconds (a stamp that could hide a change in the
/// same tick is not trusted; the absent name is then checked by itself, as before). One such
/// check serves every absent name in the folder: a CUB compile's hundreds of "not here"
/// lookups become one `stat` per folder.
fn listing_for(missing: &Path) -> Option<Check> {
    match std::fs::symlink_metadata(missing) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => return None,
    }
    let dir = missing.parent().filter(|d| !d.as_os_str().is_empty())?;
    let m = std::fs::metadata(dir).ok()?;
    (m.is_dir() && !too_new(&m)).then(|| Check {
        path: dir.to_path_buf(),
        kind: 4,
        stamp: stamp(&m),
        names: Vec::new(),
    })
}

/// `checks` as bytes (for a manifest on disk): per check its kind, stamp and path.
pub fn encode_checks(checks: &[Check]) -> Vec<u8> {
    let mut v = Vec::with_capacity(checks.len() * 120);
    v.extend_from_slice(&(checks.len() as u64).to_le_bytes());
    for c in checks {
        v.push(c.kind);
        for x in c.stamp {
            v.extend_from_slice(&x.to_le_bytes());
        }
        let mut put = |b: &[u8]| {
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            v.extend_from_slice(b);
        };
        put(c.path.as_os_str().as_bytes());
        if c.kind == 5 {
            v.extend_from_slice(&(c.names.len() as u32).to_le_bytes());
            for n in &c.names {
                v.extend_from_slice(&(n.len() as u32).to_le_bytes());
                v.extend_from_slice(n.as_bytes());
            }
        }
    }
    v
}

/// Bytes of the smallest encoded check (kind, stamp, length; an empty path).
const MIN_CHECK_BYTES: usize = 1 + 7 * 8 + 4;

/// The checks `encode_checks` wrote, and the bytes after them; None if malformed. What it
/// allocates is bounded by the bytes given, whatever the count field says.
pub fn decode_checks(b: &[u8]) -> Option<(Vec<Check>, &[u8])> {
    let take = |b: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        let (h, t) = (b.get(..n)?, b.get(n..)?);
        *b = t;
        Some(h.to_vec())
    };
    let mut b = b;
    let n = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
    if n > (b.len() / MIN_CHECK_BYTES) as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let kind = *take(&mut b, 1)?.first()?;
        let mut stamp = [0i64; 7];
        for x in stamp.iter_mut() {
            *x = i64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
        }
        let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(&take(&mut b, len)?));
        let mut names = Vec::new();
        if kind == 5 {
            let count = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
            if count > b.len() / 4 {
                return None;
            }
            for _ in 0..count {
                let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
                names.push(std::ffi::OsStr::from_bytes(&take(&mut b, len)?).to_os_string());
            }
        }
        out.push(Check { path, kind, stamp, names });
    }
    Some((out, b))
}

/// Whether every lookup of an earlier scan would give the same answer now: no header changed
/// (by its stat stamp, or its sealed folder's), appeared or vanished. One `stat` per check.
pub fn unchanged(checks: &[Check]) -> bool {
    checks.iter().all(Check::holds)
}

/// The first component of `p` below its deepest existing folder: absent while `p` is absent
/// because of it, so its state stands for `p`'s.
fn first_missing(p: &Path, known_dirs: &mut HashSet<PathBuf>) -> PathBuf {
    let mut cur = p.to_path_buf();
    while let Some(parent) = cur.parent() {
        if parent.as_os_str().is_empty() {
            break;
        }
        if known_dirs.contains(parent) || std::fs::metadata(parent).is_ok_and(|m| m.is_dir()) {
            known_dirs.insert(parent.to_path_buf());
            break;
        }
        cur = parent.to_path_buf();
    }
    cur
}

fn too_new(m: &std::fs::Metadata) -> bool {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
    let limit = now - i128::from(TOO_NEW_SECS) * 1_000_000_000;
    ns(m.ctime(), m.ctime_nsec()) >= limit || ns(m.mtime(), m.mtime_nsec()) >= limit
}

/// A file only root can change: owned by root, writable by neither group nor others.
fn root_only(m: &std::fs::Metadata) -> bool {
    m.uid() == 0 && m.mode() & 0o022 == 0
}

/// What the options tell the scan: include folders, pre-included files; Err for an option
/// that reads files the scan cannot follow or writes files a hit would not write.
struct SearchOptions {
    /// (root label, folder): the caller's include folders, then the toolkit's.
    dirs: Vec<(String, PathBuf)>,
    pre_includes: Vec<String>,
    /// -D definitions, for includes named by a macro.
    defines: Vec<(String, String)>,
    /// The options with every include folder named by its label: what the key holds of them.
    portable: Vec<String>,
    /// The options as given: what the key holds when the output can name paths.
    raw: Vec<String>,
    /// `-lineinfo` or `-G`: the output names every file read, by its absolute path (NVRTC
    /// makes relative names absolute with the working directory).
    line_info: bool,
    dialect: Dialect,
}

fn search_options(options: &[String], toolkit: &[PathBuf], cwd: &Path) -> Result<SearchOptions, String> {
    let mut dirs = Vec::new();
    let mut pre = Vec::new();
    let mut defines = Vec::new();
    let mut portable = Vec::new();
    let mut it = options.iter();
    // Spellings NVRTC and nvcc accept: "-Idir", "-I dir", "-I=dir", "--include-path=dir",
    // "--include-path dir", and the same for -include / --pre-include.
    const DIR_FLAGS: [&str; 4] = ["--include-path", "-I", "-isystem", "--system-include"];
    const PRE_FLAGS: [&str; 2] = ["--pre-include", "-include"];
    'next: while let Some(o) = it.next() {
        let lower = o.to_ascii_lowercase();
        if lower.contains("pch") || lower.starts_with("-optf") || lower.starts_with("--options-file") {
            return Err(format!("the option '{o}' reads files the cache cannot follow"));
        }
        // Options that write a file: a hit would not write it.
        if ["-time", "--time", "-fdevice-time-trace", "--fdevice-time-trace"]
            .iter()
            .any(|f| lower == *f || lower.strip_prefix(f).is_some_and(|r| r.starts_with('=')))
        {
            return Err(format!("the option '{o}' writes a file, which a cache hit would not"));
        }
        for f in ["--define-macro=", "--define-macro", "-D"] {
            let Some(rest) = o.strip_prefix(f) else { continue };
            let d = if rest.is_empty() { it.next().cloned().unwrap_or_default() } else { rest.to_string() };
            let (k, v) = d.split_once('=').unwrap_or((d.as_str(), "1"));
            defines.push((k.to_string(), v.to_string()));
            portable.push(format!("-D{d}"));
            continue 'next;
        }
        for (flags, is_dir) in [(&PRE_FLAGS[..], false), (&DIR_FLAGS[..], true)] {
            for f in flags {
                let Some(rest) = o.strip_prefix(f) else { continue };
                // "--include-pathX" is another option, not this one with a value.
                if f.starts_with("--") && !rest.is_empty() && !rest.starts_with('=') {
                    continue;
                }
                let rest = if f.starts_with("--") { rest.strip_prefix('=').unwrap_or(rest) } else { rest };
                let value = if rest.is_empty() {
                    match it.next() {
                        Some(v) => v.clone(),
                        None => return Err(format!("the option '{o}' has no value")),
                    }
                } else {
                    rest.to_string()
                };
                // "-I=dir" may mean "dir" or a folder named "=dir": keep both (a superset).
                let mut values = vec![value.clone()];
                if let Some(v) = value.strip_prefix('=').filter(|_| !f.starts_with("--")) {
                    values.push(v.to_string());
                }
                for v in values {
                    if is_dir {
                        let label = format!("I{}", dirs.len());
                        portable.push(format!("--include-path=<{label}>"));
                        dirs.push((label, cwd.join(v)));
                    } else {
                        portable.push(format!("--pre-include={v}"));
                        pre.push(v);
                    }
                }
                continue 'next;
            }
        }
        portable.push(o.clone());
    }
    for (k, d) in toolkit.iter().enumerate() {
        let label = format!("T{k}");
        portable.push(format!("--include-path=<{label}>"));
        dirs.push((label, d.clone()));
    }
    let dialect = Dialect::for_std(lex::std_option(options));
    let line_info =
        options.iter().any(|o| matches!(o.as_str(), "-lineinfo" | "--generate-line-info" | "-G" | "--device-debug"));
    Ok(SearchOptions { dirs, pre_includes: pre, defines, portable, raw: options.to_vec(), line_info, dialect })
}

/// One header name a file asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Wanted {
    name: String,
    quoted: bool,
}

/// `"x"` or `<x>` at the start of `s` (after spaces); None for anything else.
fn header_name(s: &str) -> Option<(Wanted, &str)> {
    let s = s.trim_start();
    let (close, quoted) = match s.as_bytes().first()? {
        b'"' => ('"', true),
        b'<' => ('>', false),
        _ => return None,
    };
    let end = s[1..].find(close)? + 1;
    let name = &s[1..end];
    if name.is_empty() || name.contains('\n') {
        return None;
    }
    Some((Wanted { name: name.to_string(), quoted }, &s[end + 1..]))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Byte offsets where the identifier `word` occurs in `line` as a whole identifier.
fn word_positions<'a>(line: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let b = line.as_bytes();
    line.match_indices(word)
        .map(|(i, _)| i)
        .filter(move |&i| (i == 0 || !is_ident(b[i - 1])) && b.get(i + word.len()).is_none_or(|&c| !is_ident(c)))
}

/// What one text asks the preprocessor to look up.
#[derive(Default)]
struct Found {
    wanted: Vec<Wanted>,
    /// Function-like macros that wrap a lookup (`#define HAS(x) __has_include(x)`, as CCCL's
    /// `_CCCL_HAS_INCLUDE`): their uses are lookups too.
    lookup_macros: Vec<String>,
    /// Object-like macros defined (`#define NAME replacement`), for includes named by a macro.
    defines: Vec<(String, String)>,
    /// `#include MACRO` arguments, resolved against every definition seen (`resolve_macro_include`).
    macro_includes: Vec<String>,
}

/// The header names `text` could make the preprocessor look up: #include lines, and uses of
/// `lookup_macros` (`__has_include` and wrappers of it found so far). Err names a construct
/// that cannot be resolved without preprocessing (a macro-named include, #embed).
#[cfg(test)]
fn includes_in(text: &str, what: &str, lookup_macros: &[String]) -> Result<Found, String> {
    includes_in_code(&lex(text.as_bytes(), Dialect::for_std(None)).directives, what, lookup_macros)
}

/// `includes_in` on the directives the lexer kept.
fn includes_in_code(code: &str, what: &str, lookup_macros: &[String]) -> Result<Found, String> {
    let mut macros: Vec<&str> = vec!["__has_include", "__has_include_next"];
    macros.extend(lookup_macros.iter().map(String::as_str));
    // Most headers use none of them: look for each on a line only if the text has it at all.
    macros.retain(|m| code.contains(m));
    let mut out = Found::default();
    for line in code.lines() {
        let t = line.trim_start();
        let rest = t.strip_prefix('#').or_else(|| t.strip_prefix("%:")).or_else(|| t.strip_prefix("??=")).unwrap_or("");
        let rest = rest.trim_start();
        let word_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (word, arg) = rest.split_at(word_end);
        let mut params: Vec<&str> = Vec::new();
        let mut defining = None;
        match word {
            "include" | "include_next" | "import" => match header_name(arg) {
                Some((w, _)) => out.wanted.push(w),
                None => out.macro_includes.push(arg.trim().to_string()),
            },
            "embed" => return Err(format!("{what}: #embed reads files the cache cannot follow")),
            "define" => {
                // `#define NAME(a, b) body`: a lookup of a parameter makes NAME a lookup macro.
                let d = arg.trim_start();
                let name_end = d.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(d.len());
                let (name, after) = d.split_at(name_end);
                if let Some(p) = after.strip_prefix('(') {
                    if let Some(close) = p.find(')') {
                        params = p[..close].split(',').map(str::trim).filter(|x| !x.is_empty()).collect();
                    }
                } else if !name.is_empty() {
                    out.defines.push((name.to_string(), after.trim().to_string()));
                }
                defining = Some(name);
            }
            _ => {}
        }
        for &m in &macros {
            if !line.contains(m) {
                continue;
            }
            for at in word_positions(line, m) {
                let after = line[at + m.len()..].trim_start();
                // `#ifdef __has_include`, `defined(__has_include)`: a test of the feature.
                let Some(arg) = after.strip_prefix('(') else { continue };
                if let Some((w, _)) = header_name(arg) {
                    out.wanted.push(w);
                    continue;
                }
                let a = arg.trim_start();
                let ident_end = a.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(a.len());
                let (ident, close) = a.split_at(ident_end);
                if let Some(name) = defining.filter(|_| params.contains(&ident) && close.trim_start().starts_with(')'))
                {
                    if name != m && !out.lookup_macros.iter().any(|x| x == name) {
                        out.lookup_macros.push(name.to_string());
                    }
                    continue;
                }
                return Err(format!("{what}: a {m}(...) the cache cannot resolve: {}", t.trim()));
            }
        }
    }
    Ok(out)
}

/// Every header name `arg` (the text after `#include`, not a literal header name) could
/// become by expanding the object-like macros in `defs`, each to every definition seen, or left
/// alone (a superset: the scan cannot know which definition is active). Empty when none of the
/// expansions is a header name.
fn resolve_macro_include(arg: &str, defs: &HashMap<String, Vec<String>>) -> Vec<Wanted> {
    const MAX_VARIANTS: usize = 256;
    let mut variants: Vec<String> = vec![arg.to_string()];
    let mut i = 0;
    while i < variants.len() && variants.len() < MAX_VARIANTS {
        let v = variants[i].clone();
        i += 1;
        let b = v.as_bytes();
        let mut at = 0;
        let mut in_str = false;
        while at < b.len() {
            let c = b[at];
            if c == b'"' {
                in_str = !in_str;
            }
            if in_str || !(c.is_ascii_alphabetic() || c == b'_') || (at > 0 && is_ident(b[at - 1])) {
                at += 1;
                continue;
            }
            let end = (at..b.len()).find(|&j| !is_ident(b[j])).unwrap_or(b.len());
            if let Some(reps) = defs.get(&v[at..end]) {
                for r in reps {
                    let nv = format!("{}{}{}", &v[..at], r, &v[end..]);
                    if !variants.contains(&nv) && variants.len() < MAX_VARIANTS {
                        variants.push(nv);
                    }
                }
            }
            at = end;
        }
    }
    let mut out = Vec::new();
    for v in &variants {
        if let Some((w, rest)) = header_name(v) {
            if rest.trim().is_empty() && !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// A header read before, known by what `stat` said of it then.
struct Memo {
    stamp: [i64; 7],
    digest: [u8; 32],
    lexed: Arc<Lexed>,
}

fn stamp(m: &std::fs::Metadata) -> [i64; 7] {
    [m.dev() as i64, m.ino() as i64, m.size() as i64, m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()]
}

/// Seconds within which a file's change time is too recent to trust a memo of it: a write in
/// the same timestamp tick as our read would leave the stamp unchanged (ccache's "too new").
const TOO_NEW_SECS: i64 = 2;

/// A header's SHA-256 and what the lexer kept of it. Remembered for the process while its stat
/// stamp (device, inode, size, mtime and ctime to the nanosecond) stays the same: every write
/// changes ctime, which no one can set back, so a file with the stamp of a memo has its
/// content. Files changed in the last TOO_NEW_SECS seconds are read every time.
fn read_header(path: &Path, m: &std::fs::Metadata, d: Dialect) -> Result<([u8; 32], Arc<Lexed>), String> {
    type Memos = HashMap<(PathBuf, u8), Memo>;
    static MEMO: Mutex<Option<Memos>> = Mutex::new(None);
    let st = stamp(m);
    let slot = (path.to_path_buf(), d.bits());
    // Never waited for: a memo held by another thread is a miss (the file is read), so a
    // child forked while a thread held it never blocks on it (src/fork.rs).
    if let Ok(g) = MEMO.try_lock() {
        if let Some(memo) = g.as_ref().and_then(|map| map.get(&slot)).filter(|memo| memo.stamp == st) {
            return Ok((memo.digest, memo.lexed.clone()));
        }
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("reading {}: {}", path.display(), crate::error::io_text(&e)))?;
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    let lexed = Arc::new(lex(&bytes, d));
    // The stamp must still be the one read before the content, and old enough to trust.
    let after = std::fs::metadata(path).ok().map(|m| stamp(&m));
    if after == Some(st) && !too_new(m) {
        if let Ok(mut g) = MEMO.try_lock() {
            let map = g.get_or_insert_with(HashMap::new);
            if map.len() > 100_000 {
                map.clear();
            }
            map.insert(slot, Memo { stamp: st, digest, lexed: lexed.clone() });
        }
    }
    Ok((digest, lexed))
}

/// Where a folder or file is: the label of the search root it was reached from (`I0`, `T1`,
/// `cwd`, `/` for an absolute name), the path below that root, and the path on disk.
#[derive(Clone)]
struct Pos {
    label: Arc<str>,
    rel: PathBuf,
    abs: PathBuf,
}

impl Pos {
    fn join(&self, name: &Path) -> Pos {
        Pos { label: self.label.clone(), rel: self.rel.join(name), abs: self.abs.join(name) }
    }
    fn parent(&self) -> Option<Pos> {
        Some(Pos {
            label: self.label.clone(),
            rel: self.rel.parent().map_or_else(PathBuf::new, Path::to_path_buf),
            abs: self.abs.parent()?.to_path_buf(),
        })
    }
    /// The name the digest knows it by.
    fn portable(&self) -> Vec<u8> {
        let mut v = self.label.as_bytes().to_vec();
        v.push(b':');
        v.extend_from_slice(self.rel.as_os_str().as_bytes());
        v
    }
    /// Inside a toolkit root, by a path with no `..` in it.
    fn in_toolkit(&self) -> bool {
        self.label.starts_with('T')
            && self
                .rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
    }
}

/// What a file to scan is: text in memory (the program or a header given by name), or a file.
struct Item {
    lexed: Arc<Lexed>,
    dir: Option<Pos>,
    what: String,
}

/// Scan `source` (named `name`), the in-memory `headers` and every file they could include,
/// given the compile `options` and the `toolkit` include folders searched after them, with
/// relative names resolved against `cwd`.
pub fn scan_includes(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    toolkit: &[PathBuf],
    cwd: &Path,
) -> Result<IncludeScan, String> {
    let so = search_options(options, toolkit, cwd)?;
    // A wrapper of __has_include may be defined in a header scanned after ones that use it:
    // scan again, knowing it from the start, until no new one appears (then the digest is
    // that of one complete pass, the same whatever the order of discovery).
    let mut known = Knowledge::default();
    for (k, v) in &so.defines {
        known.add_define(k, v);
    }
    for _ in 0..8 {
        let (scan, learned) = scan_pass(source, name, headers, &so, cwd, &known)?;
        match learned {
            None => return Ok(scan),
            Some(k) => known = k,
        }
    }
    Err("the include scan did not settle".into())
}

/// What one pass learned about macros, used from the start of the next.
#[derive(Default, Clone, PartialEq, Eq)]
struct Knowledge {
    lookup_macros: Vec<String>,
    defines: HashMap<String, Vec<String>>,
}

impl Knowledge {
    fn add_define(&mut self, name: &str, value: &str) {
        // `#`/`##` in a replacement (stringizing, pasting) is beyond this scan.
        if value.contains('#') {
            return;
        }
        let v = self.defines.entry(name.to_string()).or_default();
        if !v.iter().any(|x| x == value) && v.len() < 16 {
            v.push(value.to_string());
        }
    }
}

/// Header names the scan is made not to see (`blind_scan`): how tests show that a header the
/// scan misses never yields a stored entry.
static BLIND: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes every later scan in this process ignore `#include`s of `names` (empty: none). For
/// tests of the cross-check against NVRTC's own report only.
#[doc(hidden)]
pub fn blind_scan(names: &[&str]) {
    if let Ok(mut b) = BLIND.lock() {
        *b = names.iter().map(|s| s.to_string()).collect();
    }
}

fn feed(h: &mut Sha256, tag: &[u8], bytes: &[u8]) {
    h.update(tag);
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

const CLOCK: &str =
    "uses __DATE__, __TIME__ or __TIMESTAMP__: its code depends on the clock, so it is compiled every time";

fn scan_pass(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    so: &SearchOptions,
    cwd: &Path,
    known: &Knowledge,
) -> Result<(IncludeScan, Option<Knowledge>), String> {
    let cwd_label: Arc<str> = Arc::from("cwd");
    let parent = |n: &str| {
        let rel = Path::new(n).parent().unwrap_or(Path::new("")).to_path_buf();
        Pos { label: cwd_label.clone(), abs: cwd.join(&rel), rel }
    };
    // Folders NVRTC adds for its inputs: the program's and, conservatively, each in-memory
    // header's (by its name), beside the including file's own.
    let mut source_dirs = vec![parent(name)];
    for (n, _) in headers {
        let d = parent(n);
        if !source_dirs.iter().any(|s| s.abs == d.abs) {
            source_dirs.push(d);
        }
    }
    let roots: Vec<Pos> = so
        .dirs
        .iter()
        .map(|(l, d)| Pos { label: Arc::from(l.as_str()), rel: PathBuf::new(), abs: d.clone() })
        .collect();
    let mut learned = known.clone();
    let mut unresolved: Option<String> = None;
    let mut h = Sha256::new();
    for o in &so.portable {
        feed(&mut h, b"O", o.as_bytes());
    }
    let mut files = Vec::new();
    let mut lookups = 0usize;
    let mut checks: Vec<Check> = Vec::new();
    let mut checked: HashSet<PathBuf> = HashSet::new();
    let mut known_dirs: HashSet<PathBuf> = HashSet::new();
    let mut listed: HashSet<PathBuf> = HashSet::new();
    let mut by_name: HashMap<PathBuf, usize> = HashMap::new();
    let mut fresh = false;
    let mut total: u64 = 0;
    let mut texts: Vec<Arc<Lexed>> = Vec::new();
    let mut seen_paths: HashSet<PathBuf> = HashSet::new();
    let mut seen_lookups: HashSet<(Option<PathBuf>, Wanted)> = HashSet::new();
    let mut seen_memory: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<Item> = VecDeque::new();
    let mut path_sensitive = false;
    let mut pre_source = String::new();
    for (k, v) in &so.defines {
        pre_source.push_str(&format!("#define {k} {v}\n"));
    }
    for p in &so.pre_includes {
        pre_source.push_str(&format!("#include \"{p}\"\n"));
    }
    let lexed = |t: &str| Arc::new(lex(t.as_bytes(), so.dialect));
    // NVRTC looks a `-include` name up in the working directory first, whatever folder the
    // program's name is in (then where a quoted include of the program would look).
    let options_dir = Pos { label: cwd_label.clone(), rel: PathBuf::new(), abs: cwd.to_path_buf() };
    queue.push_back(Item { lexed: lexed(&pre_source), dir: Some(options_dir), what: "(the options)".into() });
    queue.push_back(Item { lexed: lexed(source), dir: None, what: name.to_string() });

    while let Some(item) = queue.pop_front() {
        if item.lexed.time_macros {
            return Err(format!("{} {CLOCK}", item.what));
        }
        texts.push(item.lexed.clone());
        let mut found = includes_in_code(&item.lexed.directives, &item.what, &known.lookup_macros)?;
        for m in found.lookup_macros {
            if !learned.lookup_macros.contains(&m) {
                learned.lookup_macros.push(m);
            }
        }
        for (k, v) in &found.defines {
            learned.add_define(k, v);
        }
        // Includes named by a macro: resolved with what was known when this pass began, so
        // the digest does not depend on the order in which definitions were met.
        for arg in &found.macro_includes {
            let names = resolve_macro_include(arg, &known.defines);
            if names.is_empty() && unresolved.is_none() {
                unresolved = Some(format!("{}: an #include the cache cannot resolve: #include {arg}", item.what));
            }
            found.wanted.extend(names);
        }
        let blind = BLIND.lock().map(|b| b.clone()).unwrap_or_default();
        for w in found.wanted {
            let base = Path::new(&w.name).file_name().and_then(|n| n.to_str()).unwrap_or("");
            path_sensitive |= matches!(base, "assert.h" | "cassert" | "source_location");
            if !seen_lookups.insert((item.dir.as_ref().map(|d| d.abs.clone()), w.clone())) || blind.contains(&w.name) {
                continue;
            }
            // An in-memory header of that name: its text is in the key already; scan it.
            if let Some((n, body)) = headers.iter().find(|(n, _)| *n == w.name) {
                if seen_memory.insert(n.clone()) {
                    queue.push_back(Item { lexed: lexed(body), dir: None, what: n.clone() });
                }
            }
            let mut candidates: Vec<Pos> = Vec::new();
            let p = Path::new(&w.name);
            if p.is_absolute() {
                candidates.push(Pos { label: Arc::from("/"), rel: p.to_path_buf(), abs: p.to_path_buf() });
            } else {
                let dirs = item.dir.iter().chain(&source_dirs).chain(&roots);
                for d in dirs {
                    let c = d.join(p);
                    if !candidates.iter().any(|x| x.abs == c.abs) {
                        candidates.push(c);
                    }
                }
            }
            for cand in candidates {
                let c = &cand.abs;
                lookups += 1;
                feed(&mut h, b"L", &cand.portable());
                let meta = std::fs::metadata(c);
                if !checked.contains(c) {
                    checked.insert(c.clone());
                    match &meta {
                        Ok(m) if m.is_file() => {
                            // A sealed toolkit folder: its stamp stands for the file, unless
                            // the name is a symlink (its file lives in another folder, whose
                            // changes the stamp of this one does not show): then the file's
                            // own stamp, through the link.
                            let link = std::fs::symlink_metadata(c).is_ok_and(|l| l.file_type().is_symlink());
                            let folder = (cand.in_toolkit() && root_only(m) && !link)
                                .then(|| c.parent().and_then(Check::listing))
                                .flatten()
                                .filter(|l| std::fs::metadata(&l.path).is_ok_and(|dm| !too_new(&dm)));
                            match folder {
                                Some(l) => {
                                    if listed.insert(l.path.clone()) {
                                        checks.push(l);
                                    }
                                }
                                None => {
                                    checks.push(Check { path: c.clone(), kind: 1, stamp: stamp(m), names: Vec::new() })
                                }
                            }
                        }
                        Ok(m) if m.is_dir() => {
                            checks.push(Check { path: c.clone(), kind: 2, stamp: [0; 7], names: Vec::new() })
                        }
                        Ok(_) => checks.push(Check { path: c.clone(), kind: 3, stamp: [0; 7], names: Vec::new() }),
                        // Not there: what proves it is the first component missing (or not a
                        // folder) on the way — `dir/cuda` absent covers every `dir/cuda/...` —
                        // so that many lookups share one check.
                        Err(_) => {
                            let w = first_missing(c, &mut known_dirs);
                            if w == *c || checked.insert(w.clone()) {
                                let parent = w.parent().map(Path::to_path_buf).unwrap_or_default();
                                let mut by_folder = false;
                                // The program's own folders (usually the working directory,
                                // whose listing changes often for other reasons): by name, with
                                // the folder's stamp as the fast answer.
                                if source_dirs.iter().any(|s| s.abs == parent) && truly_absent(&w) {
                                    let name = w.file_name().map(|n| n.to_os_string()).unwrap_or_default();
                                    match by_name.get(&parent) {
                                        Some(&i) => checks[i].names.push(name),
                                        None => {
                                            let folder = std::fs::metadata(&parent).ok();
                                            // A stamp that could hide a change is never matched.
                                            let st = folder
                                                .filter(|m| m.is_dir() && !too_new(m))
                                                .map_or([-1; 7], |m| stamp(&m));
                                            by_name.insert(parent.clone(), checks.len());
                                            checks.push(Check { path: parent, kind: 5, stamp: st, names: vec![name] });
                                        }
                                    }
                                    by_folder = true;
                                }
                                if !by_folder {
                                    match listing_for(&w).filter(|l| !source_dirs.iter().any(|s| s.abs == l.path)) {
                                        Some(l) => {
                                            if listed.insert(l.path.clone()) {
                                                checks.push(l);
                                            }
                                        }
                                        None => checks.push(Check::now(&w)),
                                    }
                                }
                            }
                        }
                    }
                }
                match meta {
                    Ok(m) if m.is_file() => {
                        fresh |= too_new(&m);
                        if seen_paths.contains(c) {
                            feed(&mut h, b"S", b"");
                            continue;
                        }
                        total += m.len();
                        if seen_paths.len() >= MAX_FILES || total > MAX_BYTES {
                            return Err(format!("more than {MAX_FILES} headers or {MAX_BYTES} bytes to hash"));
                        }
                        let (digest, lexed) = read_header(c, &m, so.dialect)?;
                        feed(&mut h, b"F", &digest);
                        seen_paths.insert(c.clone());
                        files.push(c.clone());
                        queue.push_back(Item { lexed, dir: cand.parent(), what: c.display().to_string() });
                    }
                    Ok(m) if m.is_dir() => feed(&mut h, b"D", b""),
                    Ok(_) => feed(&mut h, b"O", b""),
                    Err(e) => feed(&mut h, b"E", &e.raw_os_error().unwrap_or(0).to_le_bytes()),
                }
            }
        }
    }
    let pieces: Vec<&lex::PastePieces> = texts.iter().map(|t| &t.paste).collect();
    if lex::can_make_time_macro(&pieces) {
        return Err(format!("{name}: a `##` can paste pieces of a clock macro's name into one, and that {CLOCK}"));
    }
    // The key is the same wherever the files are (a bundle made in one folder hits in
    // another), unless the output can name where they are: `__FILE__` (a header's name as NVRTC
    // formed it: the include folder as given, or the toolkit's, then the name),
    // `std::source_location`, or `assert` (which expands to `__FILE__`, from a header that may
    // be NVRTC's own); line information names every file by its absolute path (NVRTC makes a
    // relative one absolute with the working directory). Then the options as given and the
    // toolkit's folders are in the key too, and for line information the working directory.
    let path_macros = path_sensitive || texts.iter().any(|t| t.path_macros) || lex::can_make_path_macro(&pieces);
    if so.line_info || path_macros {
        for o in &so.raw {
            feed(&mut h, b"P", o.as_bytes());
        }
        for (label, d) in so.dirs.iter().filter(|(l, _)| l.starts_with('T')) {
            feed(&mut h, b"T", label.as_bytes());
            feed(&mut h, b"R", d.as_os_str().as_bytes());
        }
        if so.line_info {
            feed(&mut h, b"W", cwd.as_os_str().as_bytes());
        }
    }
    if learned != *known {
        return Ok((IncludeScan { digest: [0; 32], files, lookups, checks, fresh }, Some(learned)));
    }
    if let Some(e) = unresolved {
        return Err(e);
    }
    Ok((IncludeScan { digest: h.finalize().into(), files, lookups, checks, fresh }, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(name: &str, quoted: bool) -> Wanted {
        Wanted { name: name.into(), quoted }
    }

    #[test]
    fn finds_includes_and_ignores_comments() {
        let src = "#include \"a.h\"\n  #  include <b/c.h>\n// #include \"no.h\"\n/* #include \"no2.h\" */\n\
                   %:include \"d.h\"\n#if __has_include(<e.h>) && defined(__has_include)\n#endif\n\
                   const char* s = \"#include \\\"lit.h\\\"\";\n#include_next <f.h>\n#pragma once\n";
        let v = includes_in(src, "t", &[]).unwrap().wanted;
        assert_eq!(v, vec![w("a.h", true), w("b/c.h", false), w("d.h", true), w("e.h", false), w("f.h", false)]);
    }

    #[test]
    fn continued_lines_and_block_comments_spanning_lines() {
        let src = "#inc\\\nlude \"x.h\"\n/* start\n#include \"hidden.h\"\nend */ #include \"y.h\"\n";
        // "y.h" after a block comment on the same line is still an include.
        let v = includes_in(src, "t", &[]).unwrap().wanted;
        assert!(v.contains(&w("x.h", true)), "{v:?}");
        assert!(!v.contains(&w("hidden.h", true)), "{v:?}");
    }

    #[test]
    fn unresolvable_constructs_are_refused() {
        let cwd = std::env::temp_dir();
        assert!(scan_includes("#include MACRO(x)\n", "p.cu", &[], &[], &[], &cwd).is_err());
        assert!(scan_includes("#include UNDEFINED\n", "p.cu", &[], &[], &[], &cwd).is_err());
        assert!(includes_in("#embed \"data.bin\"\n", "t", &[]).is_err());
        assert!(includes_in("#if __has_include(HDR)\n#endif\n", "t", &[]).is_err());
        let cwd = std::env::temp_dir();
        for o in [&["--pch"][..], &["--use-pch=x.pch"], &["-I"]] {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            assert!(scan_includes("", "p.cu", &[], &o, &[], &cwd).is_err(), "{o:?}");
        }
    }

    #[test]
    fn wrapped_has_include_is_followed() {
        let def = "#ifdef __has_include\n#define HAS(_X) __has_include(_X)\n#endif\n";
        let f = includes_in(def, "t", &[]).unwrap();
        assert_eq!(f.lookup_macros, vec!["HAS".to_string()]);
        assert!(f.wanted.is_empty());
        let known = vec!["HAS".to_string()];
        let f = includes_in("#if HAS(<x.h>) || defined(HAS)\n#endif\n", "t", &known).unwrap();
        assert_eq!(f.wanted, vec![w("x.h", false)]);
        assert!(includes_in("#if HAS(NAME)\n#endif\n", "t", &known).is_err());
        // MY_HAS is another identifier, not a use of HAS.
        assert!(includes_in("#if MY_HAS(NAME)\n#endif\n", "t", &known).is_ok());
    }

    #[test]
    fn macro_named_includes_take_every_definition() {
        let mut k = Knowledge::default();
        k.add_define("ROOT", "sys/A");
        k.add_define("ROOT", "sys/B");
        k.add_define("HDR", "<ROOT/x.h>");
        let v = resolve_macro_include("HDR", &k.defines);
        for want in ["sys/A/x.h", "sys/B/x.h"] {
            assert!(v.contains(&w(want, false)), "{v:?}");
        }
        assert!(resolve_macro_include("NOPE", &k.defines).is_empty());
        let cwd = std::env::temp_dir();
        let src = "#include HDR\n#define HDR \"/nonexistent/q.h\"\n";
        let s = scan_includes(src, "p.cu", &[], &[], &[], &cwd).unwrap();
        assert_eq!(s.lookups, 1);
        let d: Vec<String> = ["-DH2=\"/nonexistent/r.h\""].iter().map(|s| s.to_string()).collect();
        assert_eq!(scan_includes("#include H2\n", "p.cu", &[], &d, &[], &cwd).unwrap().lookups, 1);
    }

    #[test]
    fn checks_round_trip_and_absent_prefixes_are_shared() {
        let td = std::env::temp_dir().join(format!("cudyn-deps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&td);
        std::fs::create_dir_all(td.join("inc")).unwrap();
        std::fs::write(td.join("inc/a.h"), "#include <sub/b.h>\n#include <sub/c.h>\n#include <sub/d/e.h>\n").unwrap();
        let o = vec![format!("-I{}", td.join("inc").display())];
        let s = scan_includes("#include <a.h>\n", "p.cu", &[], &o, &[], &td).unwrap();
        // sub/b.h, sub/c.h, sub/d/e.h are absent in each folder because sub is: one check per folder.
        let subs = s.checks.iter().filter(|c| c.path.ends_with("sub")).count();
        assert!(subs >= 1 && s.checks.iter().all(|c| !c.path.ends_with("b.h")), "{:?}", s.checks);
        assert!(unchanged(&s.checks));
        let bytes = encode_checks(&s.checks);
        let (back, rest) = decode_checks(&bytes).unwrap();
        assert_eq!(back, s.checks);
        assert!(rest.is_empty());
        for cut in 0..bytes.len() {
            let _ = decode_checks(&bytes[..cut]);
        }
        // A header appearing under the absent folder is a change.
        std::fs::create_dir_all(td.join("inc/sub")).unwrap();
        std::fs::write(td.join("inc/sub/c.h"), "").unwrap();
        assert!(!unchanged(&s.checks));
        // Names absent from the program's own folder: one check for them all, which survives the
        // folder changing for other reasons and fails when one of the names appears.
        let s = scan_includes("#include \"n1.h\"\n#include \"n2.h\"\n", "p.cu", &[], &[], &[], &td).unwrap();
        let own: Vec<&Check> = s.checks.iter().filter(|c| c.kind == 5).collect();
        assert_eq!(own.len(), 1, "{:?}", s.checks);
        assert_eq!(own[0].names.len(), 2);
        let (back, _) = decode_checks(&encode_checks(&s.checks)).unwrap();
        assert_eq!(back, s.checks);
        std::fs::write(td.join("unrelated.txt"), "").unwrap();
        assert!(unchanged(&s.checks), "an unrelated file in the program's folder is no change");
        std::fs::write(td.join("n2.h"), "").unwrap();
        assert!(!unchanged(&s.checks), "a header appearing in the program's folder is a change");
        let _ = std::fs::remove_dir_all(&td);
    }

    #[test]
    fn option_spellings() {
        let cwd = Path::new("/w");
        let o: Vec<String> = [
            "-I/a",
            "-I",
            "b",
            "--include-path=/c",
            "--include-path",
            "/d",
            "-include",
            "p.h",
            "--pre-include=q.h",
            "-DX=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let so = search_options(&o, &[], cwd).unwrap();
        assert_eq!(
            so.dirs.iter().map(|d| d.1.clone()).collect::<Vec<_>>(),
            ["/a", "/w/b", "/c", "/d"].map(PathBuf::from)
        );
        assert_eq!(so.pre_includes, ["p.h", "q.h"]);
    }
}
