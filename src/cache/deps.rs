//! Every file a compile could read, found without NVRTC's help, so the cache key can cover
//! them all: NVRTC 13.0 has no dependency output, yet reads headers from disk with no option
//! at all (`#include "/abs/x.h"`, a quoted include found beside the program's name, which is
//! relative to the working directory) as well as through `-I` and `-include`.
//!
//! The scan is conservative rather than exact: for every `#include`/`__has_include` in the
//! source, the in-memory headers and every file found, it looks the name up in every folder
//! NVRTC might search (the including file's folder, the program's and each in-memory header's
//! folder, every include path), whatever the order, and feeds each outcome (the file's bytes,
//! "absent", "a folder") into a digest. Any change to any file that could have been read, or a
//! file appearing where none was, changes the digest and so the key. A construct it cannot
//! follow (an include named by a macro, `#embed`, precompiled headers, options files) makes the
//! scan fail, and the compile then bypasses the cache: stale code is never an option.

use sha2::{Digest, Sha256};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

/// More files than this, or more bytes, and the scan gives up (the compile is not cached).
const MAX_FILES: usize = 20_000;
const MAX_BYTES: u64 = 512 << 20;

/// The outcome of a successful scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludeScan {
    /// SHA-256 over every lookup made and its result, in a fixed order.
    pub digest: [u8; 32],
    /// The files found on disk (each hashed into `digest`).
    pub files: Vec<PathBuf>,
    /// Lookups made (found or not).
    pub lookups: usize,
}

/// What the options tell the scan: include folders, pre-included files; Err for an option
/// that reads files the scan cannot follow.
struct SearchOptions {
    dirs: Vec<PathBuf>,
    pre_includes: Vec<String>,
}

fn search_options(options: &[String], cwd: &Path) -> Result<SearchOptions, String> {
    let mut dirs = Vec::new();
    let mut pre = Vec::new();
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
                        dirs.push(cwd.join(v));
                    } else {
                        pre.push(v);
                    }
                }
                continue 'next;
            }
        }
    }
    Ok(SearchOptions { dirs, pre_includes: pre })
}

/// The source with comments blanked (newlines kept), string and character literals intact.
fn strip_comments(text: &str) -> String {
    #[derive(PartialEq)]
    enum S {
        Code,
        Line,
        Block,
        Str(u8),
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut s = S::Code;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match s {
            S::Code => {
                if c == b'/' && next == Some(b'/') {
                    s = S::Line;
                    i += 2;
                    out.push(b' ');
                    continue;
                }
                if c == b'/' && next == Some(b'*') {
                    s = S::Block;
                    i += 2;
                    out.push(b' ');
                    continue;
                }
                if c == b'"' || c == b'\'' {
                    s = S::Str(c);
                }
                out.push(c);
            }
            S::Line => {
                if c == b'\\' && next == Some(b'\n') {
                    i += 2;
                    out.push(b'\n');
                    continue;
                }
                if c == b'\n' {
                    s = S::Code;
                    out.push(c);
                }
            }
            S::Block => {
                if c == b'*' && next == Some(b'/') {
                    s = S::Code;
                    i += 2;
                    continue;
                }
                if c == b'\n' {
                    out.push(c);
                }
            }
            S::Str(q) => {
                if c == b'\\' && next.is_some() {
                    out.push(c);
                    out.push(b[i + 1]);
                    i += 2;
                    continue;
                }
                // An unterminated literal ends at the line's end, as the preprocessor's does.
                if c == q || c == b'\n' {
                    s = S::Code;
                }
                out.push(c);
            }
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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

/// Every header name `text` could make the preprocessor look up; Err names a construct that
/// cannot be resolved without preprocessing (a macro-named include, #embed).
fn includes_in(text: &str, what: &str) -> Result<Vec<Wanted>, String> {
    let joined = text.replace("\\\r\n", "").replace("\\\n", "");
    let code = strip_comments(&joined);
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let t = line.trim_start();
        let rest = if let Some(r) = t.strip_prefix('#') {
            r
        } else if let Some(r) = t.strip_prefix("%:") {
            r
        } else if let Some(r) = t.strip_prefix("??=") {
            r
        } else {
            ""
        };
        let rest = rest.trim_start();
        let word_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let (word, arg) = rest.split_at(word_end);
        match word {
            "include" | "include_next" | "import" => match header_name(arg) {
                Some((w, _)) => out.push(w),
                None => return Err(format!("{what}:{}: an #include the cache cannot resolve: {}", n + 1, t.trim())),
            },
            "embed" => return Err(format!("{what}:{}: #embed reads files the cache cannot follow", n + 1)),
            _ => {}
        }
        // __has_include("x") / __has_include(<x>) looks files up too, anywhere on a line.
        let mut l = line;
        while let Some(at) = l.find("__has_include") {
            let after = l[at + "__has_include".len()..].trim_start_matches("_next");
            let arg = after.trim_start().strip_prefix('(');
            match arg.and_then(header_name) {
                Some((w, rest)) => {
                    out.push(w);
                    l = rest;
                }
                None => {
                    // `#ifdef __has_include` and `defined(__has_include)` only test the feature.
                    let a = after.trim_start();
                    if a.is_empty() || a.starts_with(')') || a.starts_with("&&") || a.starts_with("||") {
                        l = after;
                        continue;
                    }
                    return Err(format!("{what}:{}: a __has_include the cache cannot resolve: {}", n + 1, t.trim()));
                }
            }
        }
    }
    Ok(out)
}

/// What a file to scan is: text in memory (the program or a header given by name), or a file.
struct Item {
    text: String,
    dir: Option<PathBuf>,
    what: String,
}

/// Scan `source` (named `name`), the in-memory `headers` and every file they could include,
/// given the compile `options`, with relative names resolved against `cwd`.
pub fn scan_includes(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    cwd: &Path,
) -> Result<IncludeScan, String> {
    let so = search_options(options, cwd)?;
    let parent = |n: &str| cwd.join(Path::new(n).parent().unwrap_or(Path::new("")));
    // Folders NVRTC adds for its inputs: the program's and, conservatively, each in-memory
    // header's (by its name), beside the including file's own.
    let mut source_dirs = vec![parent(name)];
    for (n, _) in headers {
        let d = parent(n);
        if !source_dirs.contains(&d) {
            source_dirs.push(d);
        }
    }
    let mut h = Sha256::new();
    let mut files = Vec::new();
    let mut lookups = 0usize;
    let mut total: u64 = 0;
    let mut seen_paths: HashSet<PathBuf> = HashSet::new();
    let mut seen_lookups: HashSet<(Option<PathBuf>, Wanted)> = HashSet::new();
    let mut seen_memory: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<Item> = VecDeque::new();
    let mut pre_source = String::new();
    for p in &so.pre_includes {
        pre_source.push_str(&format!("#include \"{p}\"\n"));
    }
    queue.push_back(Item { text: pre_source, dir: None, what: "(-include options)".into() });
    queue.push_back(Item { text: source.to_string(), dir: None, what: name.to_string() });

    let feed = |h: &mut Sha256, tag: &[u8], bytes: &[u8]| {
        h.update(tag);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };

    while let Some(item) = queue.pop_front() {
        for w in includes_in(&item.text, &item.what)? {
            if !seen_lookups.insert((item.dir.clone(), w.clone())) {
                continue;
            }
            // An in-memory header of that name: its text is in the key already; scan it.
            if let Some((n, body)) = headers.iter().find(|(n, _)| *n == w.name) {
                if seen_memory.insert(n.clone()) {
                    queue.push_back(Item { text: body.clone(), dir: None, what: n.clone() });
                }
            }
            let mut candidates: Vec<PathBuf> = Vec::new();
            let p = Path::new(&w.name);
            if p.is_absolute() {
                candidates.push(p.to_path_buf());
            } else {
                let mut dirs: Vec<&PathBuf> = Vec::new();
                dirs.extend(item.dir.as_ref());
                dirs.extend(&source_dirs);
                dirs.extend(&so.dirs);
                for d in dirs {
                    let c = d.join(p);
                    if !candidates.contains(&c) {
                        candidates.push(c);
                    }
                }
            }
            for c in candidates {
                lookups += 1;
                use std::os::unix::ffi::OsStrExt;
                feed(&mut h, b"L", c.as_os_str().as_bytes());
                match std::fs::metadata(&c) {
                    Ok(m) if m.is_file() => {
                        if seen_paths.contains(&c) {
                            feed(&mut h, b"S", b"");
                            continue;
                        }
                        let bytes = std::fs::read(&c).map_err(|e| format!("reading {}: {e}", c.display()))?;
                        total += bytes.len() as u64;
                        if seen_paths.len() >= MAX_FILES || total > MAX_BYTES {
                            return Err(format!("more than {MAX_FILES} headers or {MAX_BYTES} bytes to hash"));
                        }
                        feed(&mut h, b"F", &Sha256::digest(&bytes));
                        seen_paths.insert(c.clone());
                        files.push(c.clone());
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        let dir = c.parent().map(Path::to_path_buf);
                        queue.push_back(Item { text, dir, what: c.display().to_string() });
                    }
                    Ok(m) if m.is_dir() => feed(&mut h, b"D", b""),
                    Ok(_) => feed(&mut h, b"O", b""),
                    Err(e) => feed(&mut h, b"E", &e.raw_os_error().unwrap_or(0).to_le_bytes()),
                }
            }
        }
    }
    Ok(IncludeScan { digest: h.finalize().into(), files, lookups })
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
        let v = includes_in(src, "t").unwrap();
        assert_eq!(v, vec![w("a.h", true), w("b/c.h", false), w("d.h", true), w("e.h", false), w("f.h", false)]);
    }

    #[test]
    fn continued_lines_and_block_comments_spanning_lines() {
        let src = "#inc\\\nlude \"x.h\"\n/* start\n#include \"hidden.h\"\nend */ #include \"y.h\"\n";
        // "y.h" after a block comment on the same line is still an include.
        let v = includes_in(src, "t").unwrap();
        assert!(v.contains(&w("x.h", true)), "{v:?}");
        assert!(!v.contains(&w("hidden.h", true)), "{v:?}");
    }

    #[test]
    fn unresolvable_constructs_are_refused() {
        assert!(includes_in("#define H \"a.h\"\n#include H\n", "t").is_err());
        assert!(includes_in("#include MACRO(x)\n", "t").is_err());
        assert!(includes_in("#embed \"data.bin\"\n", "t").is_err());
        assert!(includes_in("#if __has_include(HDR)\n#endif\n", "t").is_err());
        let cwd = std::env::temp_dir();
        for o in [&["--pch"][..], &["--use-pch=x.pch"], &["-I"]] {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            assert!(scan_includes("", "p.cu", &[], &o, &cwd).is_err(), "{o:?}");
        }
    }

    #[test]
    fn option_spellings() {
        let cwd = Path::new("/w");
        let o: Vec<String> = ["-I/a", "-I", "b", "--include-path=/c", "--include-path", "/d", "-include", "p.h", "--pre-include=q.h", "-DX=1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let so = search_options(&o, cwd).unwrap();
        assert_eq!(so.dirs, ["/a", "/w/b", "/c", "/d"].map(PathBuf::from));
        assert_eq!(so.pre_includes, ["p.h", "q.h"]);
    }
}
