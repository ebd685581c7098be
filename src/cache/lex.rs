//! The include scanner's lexer: C++'s translation phases 1–3 as NVRTC 13.0 applies them, so that
//! no comment, string, raw string or character literal the scanner misreads can hide a directive.
//!
//! What NVRTC does (measured with a header whose `#error` fires when it is read; the cases are
//! the tests of `tests/cache_lexer.rs`): trigraphs in C++03/11/14 only (`-std=c++17` and later,
//! and the default, leave them); digit separators (`1'0`) from C++14 on (the default too); raw
//! strings from C++11 on, with line splices *not* reverted inside them (phase 2 runs first,
//! unlike the standard's wording); a backslash followed by spaces before the newline is no
//! splice; a CR alone is no newline; `/*` and `//` inside `<...>` of an `#include` are part of
//! the header name; a comment holding a newline before `#` still lets it start a directive, and
//! one inside a directive continues it on the next line. Where a file holds what would read
//! differently under another of these choices (`??`, `1'`, `R"`, a splice in a raw string,
//! `\ ` before a newline), it is lexed once more with that choice flipped and the directives of
//! every reading are kept: a superset, so a model mistake costs a lookup, never a stale entry.

/// The lexical choices that differ between C++ dialects and compilers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Dialect {
    /// `??=` and the other trigraphs are replaced in phase 1 (`??/` + newline splices).
    pub trigraphs: bool,
    /// `'` inside a pp-number is a digit separator, not the start of a character literal.
    pub digit_separators: bool,
    /// `R"d(...)d"` (and `LR`, `uR`, `UR`, `u8R`) are raw string literals.
    pub raw_strings: bool,
    /// Inside a raw string, phase 1–2 transformations are undone (the standard's rule).
    pub raw_reverts_splices: bool,
    /// A backslash followed by blanks, then a newline, is a splice (gcc's and C++23's rule).
    pub blank_splices: bool,
}

impl Dialect {
    /// NVRTC 13.0's reading under `-std=<std>` (None: no -std option given).
    pub fn for_std(std: Option<&str>) -> Dialect {
        let v = std.map(|s| s.trim().to_ascii_lowercase());
        let year = v.as_deref().map(|s| s.trim_start_matches("gnu++").trim_start_matches("c++"));
        let (trigraphs, digit_separators, raw_strings) = match year {
            Some("98" | "03") => (true, false, false),
            Some("11" | "0x") => (true, false, true),
            Some("14" | "1y") => (true, true, true),
            _ => (false, true, true),
        };
        Dialect { trigraphs, digit_separators, raw_strings, raw_reverts_splices: false, blank_splices: false }
    }

    /// A small number that tells dialects apart (for memo keys).
    pub fn bits(self) -> u8 {
        u8::from(self.trigraphs)
            | u8::from(self.digit_separators) << 1
            | u8::from(self.raw_strings) << 2
            | u8::from(self.raw_reverts_splices) << 3
            | u8::from(self.blank_splices) << 4
    }
}

/// The `-std` value in NVRTC options (the last one counts), if any.
pub(crate) fn std_option(options: &[String]) -> Option<&str> {
    let mut found = None;
    let mut it = options.iter();
    while let Some(o) = it.next() {
        for f in ["--std=", "-std="] {
            if let Some(v) = o.strip_prefix(f) {
                found = Some(v);
            }
        }
        if o == "-std" || o == "--std" {
            found = it.next().map(String::as_str);
        }
    }
    found
}

/// What the lexer keeps of a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lexed {
    /// Every directive, one per line: `#` then its tokens, comments as one space, literals and
    /// header names verbatim, splices removed, trigraphs and `%:` replaced.
    pub directives: String,
    /// `__DATE__`, `__TIME__` or `__TIMESTAMP__` appears as an identifier (outside comments and
    /// literals): the compile's output depends on the clock.
    pub time_macros: bool,
    /// `__FILE__` or `__builtin_FILE` appears as an identifier: the output can name the path a
    /// file was found at.
    pub path_macros: bool,
    /// What `##` could paste into one of those names.
    pub paste: PastePieces,
}

/// The pieces of the clock macros' names (`__DA`, `TE__`, `_`) a text holds where token pasting
/// could join them: a `##` pastes the spellings of tokens written in a macro's body or passed
/// as a macro's arguments, so those are the places that count (never a comment, a literal, or
/// a plain function's arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PastePieces {
    /// Some `#define` body holds `##`.
    pub pasting: bool,
    /// Names of the macros defined.
    pub defined: Vec<String>,
    /// Macros whose body leaves a parenthesis open or closes one it did not open
    /// (`#define LP (`): where one is used in code, any code may be a macro's arguments.
    pub unbalanced: Vec<String>,
    /// Per macro, the identifiers its body names (to follow `#define H LP`).
    pub mentions: Vec<(String, Vec<String>)>,
    /// Pieces in `#define` bodies (a macro's own parameters excluded).
    pub in_defines: Vec<String>,
    /// Pieces inside parenthesised groups in code, by the identifier before the group (a
    /// call, or a macro's arguments when that identifier is a macro).
    pub in_calls: Vec<(String, Vec<String>)>,
    /// Pieces anywhere in code.
    pub in_code: Vec<String>,
    /// Hashes of the identifiers used in code, sorted.
    pub code_idents: Vec<u64>,
}

fn add(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// A fixed hash of an identifier (the same in every process: lexing results are remembered).
fn ident_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

impl PastePieces {
    /// Everything of `other` added to this.
    pub fn merge(&mut self, other: &PastePieces) {
        self.pasting |= other.pasting;
        for (to, from) in [
            (&mut self.defined, &other.defined),
            (&mut self.unbalanced, &other.unbalanced),
            (&mut self.in_defines, &other.in_defines),
            (&mut self.in_code, &other.in_code),
        ] {
            for x in from {
                add(to, x);
            }
        }
        for c in &other.in_calls {
            if !self.in_calls.contains(c) {
                self.in_calls.push(c.clone());
            }
        }
        self.mentions.extend(other.mentions.iter().cloned());
        self.code_idents.extend_from_slice(&other.code_idents);
        self.code_idents.sort_unstable();
        self.code_idents.dedup();
    }

    /// Whether these pieces, pasted, could make `__DATE__`, `__TIME__` or `__TIMESTAMP__`.
    #[cfg(test)]
    pub fn can_make_time_macro(&self) -> bool {
        can_make_time_macro(&[self])
    }

    /// Whether these pieces, pasted, could make `__FILE__`.
    #[cfg(test)]
    pub fn can_make_path_macro(&self) -> bool {
        can_make_path_macro(&[self])
    }
}

/// Whether the pieces of all these texts (one translation unit's), pasted, could make
/// `__DATE__`, `__TIME__` or `__TIMESTAMP__`. Nothing is merged: each text's pieces are
/// looked at where they are.
pub(crate) fn can_make_time_macro(texts: &[&PastePieces]) -> bool {
    can_make(texts, &TIME_MACROS)
}

/// Whether the pieces of all these texts, pasted, could make `__FILE__`.
pub(crate) fn can_make_path_macro(texts: &[&PastePieces]) -> bool {
    can_make(texts, &PATH_MACROS)
}

/// Whether the pieces of all these texts, pasted, could make one of `names`.
fn can_make(texts: &[&PastePieces], names: &[&str]) -> bool {
    use std::collections::HashSet;
    if !texts.iter().any(|t| t.pasting) {
        return false;
    }
    let defined: HashSet<&str> = texts.iter().flat_map(|t| t.defined.iter().map(String::as_str)).collect();
    let mut pieces: Vec<&str> = texts.iter().flat_map(|t| t.in_defines.iter().map(String::as_str)).collect();
    for t in texts {
        for (callee, frags) in &t.in_calls {
            if defined.contains(callee.as_str()) {
                pieces.extend(frags.iter().map(String::as_str));
            }
        }
    }
    // The unbalanced macros, and every macro that names one (it may expand to it).
    let mut open: HashSet<&str> = texts.iter().flat_map(|t| t.unbalanced.iter().map(String::as_str)).collect();
    if !open.is_empty() {
        loop {
            let more: Vec<&str> = texts
                .iter()
                .flat_map(|t| t.mentions.iter())
                .filter(|(n, body)| !open.contains(n.as_str()) && body.iter().any(|b| open.contains(b.as_str())))
                .map(|(n, _)| n.as_str())
                .collect();
            if more.is_empty() {
                break;
            }
            open.extend(more);
        }
        let hashes: Vec<u64> = open.iter().map(|u| ident_hash(u)).collect();
        if texts.iter().any(|t| hashes.iter().any(|h| t.code_idents.binary_search(h).is_ok())) {
            pieces.extend(texts.iter().flat_map(|t| t.in_code.iter().map(String::as_str)));
        }
    }
    names.iter().any(|m| can_paste(m, &pieces))
}

/// Whether `w` is a piece of a clock macro's name or of `__FILE__` (not a whole name).
fn is_fragment(w: &str) -> bool {
    let first = w.as_bytes().first().copied().unwrap_or(0);
    (first == b'_' || first.is_ascii_uppercase())
        && w.len() < 13
        && w.bytes().all(|c| c == b'_' || c.is_ascii_uppercase())
        && !TIME_MACROS.contains(&w)
        && !PATH_MACROS.contains(&w)
        && TIME_MACROS.iter().chain(&PATH_MACROS).any(|m| m.contains(w))
}

/// What a `#define` line (as the lexer wrote it) tells about pasting.
fn define_pieces(line: &[u8], out: &mut PastePieces) {
    let s = String::from_utf8_lossy(line);
    let rest = s.trim_start().trim_start_matches('#').trim_start();
    let Some(rest) = rest.strip_prefix("define") else { return };
    let rest = rest.trim_start();
    let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).unwrap_or(rest.len());
    let (name, mut body) = rest.split_at(name_end);
    if name.is_empty() {
        return;
    }
    add(&mut out.defined, name);
    let mut params: Vec<&str> = Vec::new();
    if let Some(p) = body.strip_prefix('(') {
        if let Some(close) = p.find(')') {
            params = p[..close].split(',').map(str::trim).collect();
            body = &p[close + 1..];
        }
    }
    let b = body.as_bytes();
    let mut mentions: Vec<String> = Vec::new();
    let (mut open, mut lowest, mut i) = (0i64, 0i64, 0usize);
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            continue;
        }
        if c == b'#' && b.get(i + 1) == Some(&b'#') {
            out.pasting = true;
            i += 2;
            continue;
        }
        if ident_start(c) {
            let e = (i..b.len()).find(|&j| !ident_char(b[j])).unwrap_or(b.len());
            let w = &body[i..e];
            if !params.contains(&w) {
                if is_fragment(w) {
                    add(&mut out.in_defines, w);
                }
                add(&mut mentions, w);
            }
            i = e;
            continue;
        }
        if c.is_ascii_digit() {
            i = (i..b.len()).find(|&j| !ident_char(b[j]) && b[j] != b'.').unwrap_or(b.len());
            continue;
        }
        open += i64::from(c == b'(') - i64::from(c == b')');
        lowest = lowest.min(open);
        i += 1;
    }
    if open != 0 || lowest < 0 {
        add(&mut out.unbalanced, name);
    }
    if !mentions.is_empty() {
        out.mentions.push((name.to_string(), mentions));
    }
}

const TIME_MACROS: [&str; 3] = ["__DATE__", "__TIME__", "__TIMESTAMP__"];
/// The macro that names the file it is expanded in (what `##` could paste; `__builtin_FILE`,
/// the builtin `std::source_location` uses, is matched as a whole identifier).
const PATH_MACROS: [&str; 1] = ["__FILE__"];

/// Lex `text` under `d` and under each flip of a choice the text is sensitive to; the union.
pub(crate) fn lex(text: &[u8], d: Dialect) -> Lexed {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    let mut variants = vec![d];
    let flip = |f: fn(&mut Dialect)| {
        let mut v = d;
        f(&mut v);
        v
    };
    if has_trigraph(text) {
        variants.push(flip(|v| v.trigraphs = !v.trigraphs));
    }
    if has_digit_separator(text) {
        variants.push(flip(|v| v.digit_separators = !v.digit_separators));
    }
    if contains(text, b"R\"") {
        variants.push(flip(|v| v.raw_strings = !v.raw_strings));
        if contains(text, b"\\\n") || contains(text, b"\\\r\n") || contains(text, b"??/") {
            variants.push(flip(|v| v.raw_reverts_splices = !v.raw_reverts_splices));
        }
    }
    if has_blank_splice(text) {
        variants.push(flip(|v| v.blank_splices = !v.blank_splices));
    }
    let mut out = lex_one(text, variants[0]);
    for v in &variants[1..] {
        let other = lex_one(text, *v);
        let known: std::collections::HashSet<&str> = out.directives.lines().collect();
        let extra: Vec<String> =
            other.directives.lines().filter(|l| !known.contains(l)).map(|l| format!("{l}\n")).collect();
        for l in extra {
            out.directives.push_str(&l);
        }
        out.time_macros |= other.time_macros;
        out.path_macros |= other.path_macros;
        out.paste.merge(&other.paste);
    }
    out
}

/// Whether `name` can be built by pasting pieces from `pieces` (two or more).
pub(crate) fn can_paste(name: &str, pieces: &[&str]) -> bool {
    fn build(s: &str, pieces: &[&str], depth: usize) -> bool {
        if s.is_empty() {
            return true;
        }
        depth < 16
            && pieces.iter().any(|p| !p.is_empty() && s.starts_with(p) && build(&s[p.len()..], pieces, depth + 1))
    }
    let parts: Vec<&str> = pieces.iter().copied().filter(|p| *p != name).collect();
    build(name, &parts, 0)
}

/// Whether the fragments seen can make a time macro through `##`.
#[cfg(test)]
pub(crate) fn time_macro_by_pasting(fragments: &[&str]) -> bool {
    TIME_MACROS.iter().any(|m| can_paste(m, fragments))
}

fn contains(h: &[u8], n: &[u8]) -> bool {
    let Some((&first, rest)) = n.split_first() else { return true };
    let mut at = 0;
    while let Some(p) = h[at..].iter().position(|&c| c == first) {
        let i = at + p;
        if h[i + 1..].starts_with(rest) {
            return true;
        }
        at = i + 1;
    }
    false
}

fn has_trigraph(t: &[u8]) -> bool {
    let mut at = 0;
    while let Some(p) = t[at..].iter().position(|&c| c == b'?') {
        let i = at + p;
        if t.get(i + 1) == Some(&b'?') && t.get(i + 2).is_some_and(|c| b"=/'()!<>-".contains(c)) {
            return true;
        }
        at = i + 1;
    }
    false
}

fn has_digit_separator(t: &[u8]) -> bool {
    let mut at = 0;
    while let Some(p) = t[at..].iter().position(|&c| c == b'\'') {
        let i = at + p;
        if i > 0
            && t[i - 1].is_ascii_alphanumeric()
            && t.get(i + 1).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
        {
            return true;
        }
        at = i + 1;
    }
    false
}
fn has_blank_splice(t: &[u8]) -> bool {
    let mut i = 0;
    while let Some(p) = t[i..].iter().position(|&c| c == b'\\') {
        let mut j = i + p + 1;
        let blanks = t[j..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
        j += blanks;
        if blanks > 0 && (t.get(j) == Some(&b'\n') || t.get(j..j + 2) == Some(b"\r\n")) {
            return true;
        }
        i = j.max(i + p + 1);
    }
    false
}

/// Phases 1–2: trigraphs replaced (if the dialect has them) and line splices removed. With
/// `map`, the source offset of each byte kept (to find a raw string's end in the source).
fn logical(src: &[u8], d: Dialect, map: bool) -> (std::borrow::Cow<'_, [u8]>, Vec<u32>) {
    // Most texts have nothing for phases 1–2 to do: no copy then.
    if !(map || src.contains(&b'\\') || d.trigraphs && contains(src, b"??")) {
        return (std::borrow::Cow::Borrowed(src), Vec::new());
    }
    let mut out = Vec::with_capacity(src.len());
    let mut pos = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let (c, len) = match (d.trigraphs, src.get(i..i + 3)) {
            (true, Some([b'?', b'?', t])) => match trigraph(*t) {
                Some(c) => (c, 3),
                None => (src[i], 1),
            },
            _ => (src[i], 1),
        };
        if c == b'\\' {
            let mut j = i + len;
            if d.blank_splices {
                j += src[j..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
            }
            if src.get(j) == Some(&b'\n') {
                i = j + 1;
                continue;
            }
            if src.get(j..j + 2) == Some(b"\r\n") {
                i = j + 2;
                continue;
            }
        }
        out.push(c);
        if map {
            pos.push(i as u32);
        }
        i += len;
    }
    (std::borrow::Cow::Owned(out), pos)
}

fn trigraph(c: u8) -> Option<u8> {
    Some(match c {
        b'=' => b'#',
        b'/' => b'\\',
        b'\'' => b'^',
        b'(' => b'[',
        b')' => b']',
        b'!' => b'|',
        b'<' => b'{',
        b'>' => b'}',
        b'-' => b'~',
        _ => return None,
    })
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80
}

fn ident_char(c: u8) -> bool {
    ident_start(c) || c.is_ascii_digit()
}

fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// Where a directive is in its reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Not in a directive.
    None,
    /// After `#`: the next identifier is the directive's name.
    Name,
    /// After `include`/`include_next`/`import`: a header name may follow.
    Header,
    /// In the rest of a directive.
    Body,
}

/// An open parenthesised group in code: the identifier before it, the nesting depth it
/// opened at, and the clock-name pieces inside it so far.
struct Group {
    callee: String,
    depth: usize,
    pieces: Vec<String>,
}

/// The most groups followed at once (deeper nesting is counted, not followed).
const MAX_GROUPS: usize = 256;

/// Phase 3 (and the start of 4) under one dialect.
fn lex_one(src: &[u8], d: Dialect) -> Lexed {
    let need_map = d.raw_strings && d.raw_reverts_splices;
    let (b, map) = logical(src, d, need_map);
    let n = b.len();
    let mut out = Lexed::default();
    let mut line: Vec<u8> = Vec::new();
    let mut dir = Dir::None;
    let mut line_start = true;
    // After `__has_include` in a directive: `(` then a header name may follow.
    let mut has_include = 0u8;
    // Code's parenthesised groups and the identifier (or closed group's callee) before a `(`.
    let mut groups: Vec<Group> = Vec::new();
    let mut depth = 0usize;
    let mut callee: Option<std::borrow::Cow<str>> = None;
    let mut idents: std::collections::HashSet<u64, std::hash::BuildHasherDefault<Prehashed>> = Default::default();
    let mut recent = [0u64; 256];
    let mut i = 0;
    let end_directive = |line: &mut Vec<u8>, out: &mut Lexed| {
        define_pieces(line, &mut out.paste);
        out.directives.push_str(&String::from_utf8_lossy(line));
        out.directives.push('\n');
        line.clear();
    };
    while i < n {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'\n' {
            if dir != Dir::None {
                end_directive(&mut line, &mut out);
                dir = Dir::None;
            }
            line_start = true;
            has_include = 0;
            i += 1;
            continue;
        }
        if c == b'/' && next == Some(b'/') {
            i = b[i..].iter().position(|&c| c == b'\n').map_or(n, |p| i + p);
            if dir != Dir::None {
                line.push(b' ');
            }
            continue;
        }
        if c == b'/' && next == Some(b'*') {
            let end = b[i + 2..].windows(2).position(|w| w == b"*/").map_or(n, |p| i + 2 + p + 2);
            // Outside a directive, a comment holding a newline leaves the next token at a line's
            // start (gcc's reading; a superset if NVRTC's differs).
            if dir == Dir::None && b[i..end.min(n)].contains(&b'\n') {
                line_start = true;
            }
            if dir != Dir::None {
                line.push(b' ');
            }
            i = end;
            continue;
        }
        if blank(c) {
            if dir != Dir::None {
                line.push(b' ');
            }
            i += 1;
            continue;
        }
        if line_start && dir == Dir::None && (c == b'#' || (c == b'%' && next == Some(b':'))) {
            dir = Dir::Name;
            line.push(b'#');
            i += if c == b'#' { 1 } else { 2 };
            line_start = false;
            continue;
        }
        line_start = false;
        let in_code = dir == Dir::None;
        // A header name: after #include, or `__has_include (`.
        let header_here = dir == Dir::Header || (has_include == 2 && dir != Dir::None);
        if header_here && (c == b'<' || c == b'"') {
            let close = if c == b'<' { b'>' } else { b'"' };
            let end = b[i + 1..].iter().position(|&x| x == close || x == b'\n').map_or(n, |p| i + 1 + p);
            let end = if b.get(end) == Some(&close) { end + 1 } else { end };
            line.extend_from_slice(&b[i..end]);
            i = end;
            dir = if dir == Dir::Header { Dir::Body } else { dir };
            has_include = 0;
            continue;
        }
        if has_include == 1 && c == b'(' {
            has_include = 2;
            line.push(c);
            i += 1;
            continue;
        }
        has_include = 0;
        if dir == Dir::Header {
            dir = Dir::Body;
        }
        if ident_start(c) || (c == b'\\' && matches!(next, Some(b'u' | b'U'))) {
            let (word, end) = identifier(&b, i);
            let after = b.get(end).copied();
            if matches!(after, Some(b'"')) && d.raw_strings && matches!(&*word, "R" | "LR" | "uR" | "UR" | "u8R") {
                if let Some(stop) = raw_string_end(&b, &map, src, end, d) {
                    if dir != Dir::None {
                        line.extend(b[i..stop].iter().map(|&c| if c == b'\n' { b' ' } else { c }));
                    }
                    callee = None;
                    i = stop;
                    continue;
                }
            }
            if matches!(after, Some(b'"' | b'\'')) && matches!(&*word, "L" | "u" | "U" | "u8") {
                // A prefix: the literal follows.
                if dir != Dir::None {
                    line.extend_from_slice(&b[i..end]);
                }
                i = end;
                continue;
            }
            if word.len() >= 8 && word.starts_with("__") {
                if TIME_MACROS.contains(&&*word) {
                    out.time_macros = true;
                }
                if PATH_MACROS.contains(&&*word) || &*word == "__builtin_FILE" {
                    out.path_macros = true;
                }
            }
            if in_code {
                if is_fragment(&word) {
                    add(&mut out.paste.in_code, &word);
                    for g in groups.iter_mut() {
                        add(&mut g.pieces, &word);
                    }
                }
                // Most identifiers repeat; a small direct-mapped memory of recent ones keeps
                // the set from seeing each occurrence.
                let h = ident_hash(&word);
                if recent[(h as usize) & 255] != h {
                    recent[(h as usize) & 255] = h;
                    idents.insert(h);
                }
                callee = Some(word);
            } else {
                line.extend_from_slice(word.as_bytes());
                if dir == Dir::Name {
                    dir = if matches!(&*word, "include" | "include_next" | "import") { Dir::Header } else { Dir::Body };
                } else if &*word == "__has_include" || &*word == "__has_include_next" {
                    has_include = 1;
                }
            }
            i = end;
            continue;
        }
        if dir == Dir::Name {
            dir = Dir::Body;
        }
        if c.is_ascii_digit() || (c == b'.' && next.is_some_and(|x| x.is_ascii_digit())) {
            let end = pp_number_end(&b, i, d);
            if dir != Dir::None {
                line.extend_from_slice(&b[i..end]);
            }
            callee = None;
            i = end;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < n && b[j] != c && b[j] != b'\n' {
                j += if b[j] == b'\\' && j + 1 < n && b[j + 1] != b'\n' { 2 } else { 1 };
            }
            if j < n && b[j] == c {
                j += 1;
            }
            if dir != Dir::None {
                line.extend_from_slice(&b[i..j]);
            }
            callee = None;
            i = j;
            continue;
        }
        if in_code {
            if c == b'(' {
                if let Some(name) = callee.take() {
                    if groups.len() < MAX_GROUPS {
                        groups.push(Group { callee: name.into_owned(), depth, pieces: Vec::new() });
                    }
                }
                depth += 1;
            } else if c == b')' {
                depth = depth.saturating_sub(1);
                callee = None;
                if groups.last().is_some_and(|g| g.depth == depth) {
                    let g = groups.pop().unwrap_or_else(|| unreachable!());
                    if !g.pieces.is_empty() && !out.paste.in_calls.iter().any(|(c, p)| *c == g.callee && *p == g.pieces)
                    {
                        out.paste.in_calls.push((g.callee.clone(), g.pieces));
                    }
                    // `PICK(CAT)(...)`: a group right after a group belongs to the same callee.
                    callee = Some(std::borrow::Cow::Owned(g.callee));
                }
            } else {
                callee = None;
            }
        } else {
            if c == b'%' && next == Some(b':') {
                line.push(b'#');
                i += 2;
                continue;
            }
            line.push(c);
        }
        i += 1;
    }
    if dir != Dir::None {
        end_directive(&mut line, &mut out);
    }
    // Groups still open at the end (unbalanced code) keep what they hold.
    for g in groups {
        if !g.pieces.is_empty() {
            out.paste.in_calls.push((g.callee, g.pieces));
        }
    }
    out.paste.code_idents = idents.into_iter().collect();
    out.paste.code_idents.sort_unstable();
    out
}

/// A hasher for values that are hashes already (`ident_hash`).
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// The identifier at `i` (universal character names decoded where they name ASCII) and where
/// it ends; borrowed from the text unless it holds a universal character name.
fn identifier(b: &[u8], i: usize) -> (std::borrow::Cow<'_, str>, usize) {
    let end = b[i..].iter().position(|&c| !ident_char(c)).map_or(b.len(), |p| i + p);
    if b.get(end) != Some(&b'\\') && end > i {
        return match std::str::from_utf8(&b[i..end]) {
            Ok(w) => (std::borrow::Cow::Borrowed(w), end),
            Err(_) => (String::from_utf8_lossy(&b[i..end]), end),
        };
    }
    let mut s = String::new();
    let mut j = i;
    while j < b.len() {
        let c = b[j];
        if c == b'\\' && matches!(b.get(j + 1), Some(b'u' | b'U')) {
            let digits = if b[j + 1] == b'u' { 4 } else { 8 };
            let hex = b.get(j + 2..j + 2 + digits).and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32) {
                Some(ch) => {
                    s.push(ch);
                    j += 2 + digits;
                    continue;
                }
                None => break,
            }
        }
        if !ident_char(c) {
            break;
        }
        s.push(c as char);
        j += 1;
    }
    if j == i {
        // A lone backslash: not an identifier; step over it.
        return (std::borrow::Cow::Borrowed("\\"), i + 1);
    }
    (std::borrow::Cow::Owned(s), j)
}

/// The end of the pp-number starting at `i`.
fn pp_number_end(b: &[u8], i: usize, d: Dialect) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        let c = b[j];
        let sign = matches!(c, b'e' | b'E' | b'p' | b'P') && matches!(b.get(j + 1), Some(b'+' | b'-'));
        let separator = c == b'\'' && d.digit_separators && b.get(j + 1).is_some_and(|&x| ident_char(x));
        if sign || separator {
            j += 2;
        } else if ident_char(c) || c == b'.' {
            j += 1;
        } else {
            break;
        }
    }
    j
}

/// Where the raw string whose opening quote is at `q` ends (after its closing quote); None when
/// its delimiter is not a valid one (it then reads as an ordinary string). An unterminated raw
/// string runs to the end of the text.
fn raw_string_end(b: &[u8], map: &[u32], src: &[u8], q: usize, d: Dialect) -> Option<usize> {
    let open = q + 1 + b[q + 1..].iter().take(17).position(|&c| c == b'(')?;
    let delim = &b[q + 1..open];
    if delim.len() > 16 || delim.iter().any(|&c| c <= b' ' || c == b')' || c == b'\\' || c == 0x7f) {
        return None;
    }
    let mut close = Vec::with_capacity(delim.len() + 2);
    close.push(b')');
    close.extend_from_slice(delim);
    close.push(b'"');
    if d.raw_reverts_splices && !map.is_empty() {
        // The content is the source's own characters: find the closing sequence there, then the
        // first byte of the logical text at or after it.
        let from = *map.get(open)? as usize + 1;
        let at = src[from..].windows(close.len()).position(|w| w == &close[..]);
        let Some(at) = at else { return Some(b.len()) };
        let src_end = from + at + close.len();
        return Some(map.partition_point(|&p| (p as usize) < src_end));
    }
    match b[open + 1..].windows(close.len()).position(|w| w == &close[..]) {
        Some(p) => Some(open + 1 + p + close.len()),
        None => Some(b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(src: &str, std: Option<&str>) -> Vec<String> {
        lex(src.as_bytes(), Dialect::for_std(std))
            .directives
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn directives_and_comments() {
        assert_eq!(dirs("# /* a */ include /* b */ \"x.h\" /* c */\n", None), ["# include \"x.h\""]);
        assert_eq!(dirs("#include /*\n*/ \"x.h\"\n", None), ["#include \"x.h\""]);
        assert_eq!(dirs("/*\n*/ #include \"x.h\"\n", None), ["#include \"x.h\""]);
        assert_eq!(
            dirs("#include <a/*b.h>\n#include \"x.h\"\n// */\n", None),
            ["#include <a/*b.h>", "#include \"x.h\""]
        );
        assert_eq!(dirs("E #include \"x.h\"\n", None), Vec::<String>::new());
        assert_eq!(dirs("%:include \"x.h\"\n", None), ["#include \"x.h\""]);
        assert_eq!(dirs("#if __has_include(<a//b.h>)\n", None), ["#if __has_include(<a//b.h>)"]);
    }

    #[test]
    fn raw_strings_digit_separators_trigraphs() {
        assert!(
            dirs("const char* s = R\"(\" /*)\";\n#include \"x.h\"\n// */\n", None).contains(&"#include \"x.h\"".into())
        );
        assert!(dirs("int a = 1'0 + '/*';\n#include \"x.h\"\n// */\n", None).contains(&"#include \"x.h\"".into()));
        assert!(
            dirs("int a = 1'0 + '/*';\n#include \"x.h\"\n// */\n", Some("c++11")).contains(&"#include \"x.h\"".into())
        );
        assert!(dirs("??=include \"x.h\"\n", Some("c++14")).contains(&"#include \"x.h\"".into()));
        assert!(dirs("??=include \"x.h\"\n", Some("c++17")).contains(&"#include \"x.h\"".into()));
    }

    #[test]
    fn time_macros_and_pasting() {
        let d = Dialect::for_std(None);
        assert!(lex(b"int d = __DATE__[0];", d).time_macros);
        assert!(!lex(b"// __DATE__\nconst char* s = \"__TIME__\";", d).time_macros);
        let l = lex(b"#define C(a,b) a##b\n#define X(a,b) C(a,b)\nint x = X(X(__,DA),TE__)[0];\n", d);
        assert!(l.paste.pasting && !l.time_macros);
        assert!(l.paste.can_make_time_macro(), "{:?}", l.paste);
        // The same pieces as a plain function's arguments, or in comments and literals: no.
        let f = lex(b"#define C(a,b) a##b\nint x = f(g(__,DA),TE__); // __DATE__\n", d);
        assert!(!f.paste.can_make_time_macro(), "{:?}", f.paste);
        // In a macro's body, or through a macro that opens a group it does not close: yes.
        assert!(lex(b"#define C(a,b) a##b\n#define A __DA\n#define B TE__\n", d).paste.can_make_time_macro());
        let open = lex(b"#define C(a,b) a##b\n#define OPEN C(\nint x = OPEN __DA, TE__)[0];\n", d);
        assert!(open.paste.can_make_time_macro(), "{:?}", open.paste);
        let lp =
            lex(b"#define C(a,b) a##b\n#define LP (\n#define RP )\n#define H LP\nint x = C H __DA, TE__ RP[0];\n", d);
        assert!(lp.paste.can_make_time_macro(), "{:?}", lp.paste);
        // Such macros defined but not used in code change nothing.
        let unused = lex(b"#define C(a,b) a##b\n#define LP (\nint x = f(__DA, TE__);\n", d);
        assert!(!unused.paste.can_make_time_macro(), "{:?}", unused.paste);
        // `PICK(C)(...)`: the second group is PICK's too.
        let pick = lex(b"#define C(a,b) a##b\n#define PICK(m) m\nint x = PICK(C)(__DA, TE__)[0];\n", d);
        assert!(pick.paste.can_make_time_macro(), "{:?}", pick.paste);
        assert!(!time_macro_by_pasting(&["__DA"]));
    }

    #[test]
    fn path_macros_and_pasting() {
        let d = Dialect::for_std(None);
        assert!(lex(b"const char* f = __FILE__;", d).path_macros);
        assert!(lex(b"auto l = __builtin_FILE();", d).path_macros);
        assert!(!lex(b"// __FILE__\nconst char* f = \"__FILE__\";", d).path_macros);
        assert!(!lex(b"int __FILE__x;", d).path_macros);
        let pasted = lex(b"#define C(a,b) a##b\nconst char* f = C(__FI, LE__);\n", d);
        assert!(!pasted.path_macros && pasted.paste.can_make_path_macro(), "{:?}", pasted.paste);
        assert!(!pasted.paste.can_make_time_macro());
        let apart = lex(b"#define C(a,b) a##b\nint x = f(__FI, LE__);\n", d);
        assert!(!apart.paste.can_make_path_macro(), "{:?}", apart.paste);
    }
}
