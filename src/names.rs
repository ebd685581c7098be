//! C++ names of kernels: a library's mangled kernel names demangled (cpp_demangle), and a C++
//! name or signature as a person writes it (`axpy<float>`, `ns::scale(float*, float)`) matched
//! to exactly one of them, with the candidates listed when it names none or several.
//!
//! Both sides are brought to one spelling before they are compared, never compared as raw
//! text: a kernel's name is demangled (cpp_demangle, without the return type and with literal
//! template arguments shown as plain numbers), the query is taken as written, and both go
//! through the same small tokenizer and rewrites:
//!
//! - whitespace does not matter (`float *` is `float*`, `> >` is `>>`);
//! - builtin types have one spelling (`unsigned` is `unsigned int`, `long int` is `long`,
//!   `signed char` stays apart from `char`), and the fixed-width and size typedefs are the types
//!   they stand for on a 64-bit Linux target, as nvcc mangles them (`int64_t` and `size_t` are
//!   `long` and `unsigned long`, `std::`, `cuda::std::` or unqualified); `half` is `__half`,
//!   `nv_bfloat16` is `__nv_bfloat16`;
//! - `const`/`volatile` go after what they qualify (`const float*` is `float const*`), and
//!   `restrict`, `struct`/`class`/`enum`/`typename` are dropped;
//! - integer literals lose their suffix and base (`16u`, `0x10` and `(unsigned int)16` are
//!   `16`; `'a'` is `97`);
//! - `{anonymous}` is `(anonymous namespace)`; a parameter's own top-level `const` is dropped
//!   (`float* const` is `float*`), as mangling drops it; `(void)` is `()`; a leading `void`
//!   return type is ignored.
//!
//! Then, among the kernels whose names parse, the closest match wins:
//!
//! 1. the exact symbol (a mangled or `extern "C"` name) — what CUDA itself finds;
//! 2. the full signature when the query has parameters (`axpy<float>(float*, float, int)`),
//!    else the name with its template arguments and without parameters (`axpy<float>`);
//! 3. within that, a fully qualified match beats one whose leading namespaces were left out
//!    (`axpy<float>` names `axpy<float>` before `ns::axpy<float>`; `::axpy<float>` names only
//!    the global one), which beats one that also skips versioned inline namespaces
//!    (`cuda::std::__4`, `cub::CUB_300001_SM_900`), which beats one whose trailing template
//!    arguments were left out (`fill<float>` for `fill<float, 4>`: default arguments are not
//!    in the binary, so any instance with those leading arguments matches).
//!
//! Template arguments are never deduced: `axpy` does not name `axpy<float>`. A query that
//! names no kernel is [`Status::NotFound`] listing the kernels of that base name, if any; one
//! that names several equally well is [`Status::AmbiguousName`] listing them, each with its
//! symbol (which always names exactly one). A declaration may be pasted as it is: parameter
//! names, `template`, `__global__`, `void` and a trailing `;` are ignored; default arguments
//! and array parameters (`int a[16]`) are not understood.
//!
//! For a loaded library the names are CUDA's own (cuLibraryEnumerateKernels, cuKernelGetName):
//! what CUDA finds by name is what counts, and it lists the symbols of the entry it picked for
//! the GPU (the GPU test checks that they are the symbol table's of that entry, which
//! [`resolve`] also takes, so all of this is tested without a GPU). The demangler is
//! cpp_demangle (gimli-rs): pure Rust, fuzzed, with bounded recursion, kept up to date for the
//! Itanium grammar nvcc writes (every mangled kernel name of NVIDIA's own libraries sampled in
//! tests/cxx_names.rs demangles), and one spelling for each construct, which the query is
//! brought to. A first lookup demangles and parses the kernels whose mangled names hold the
//! base name (measured on a loaded 2-core machine: some 10 us for a 160-character name, 0.7 ms
//! for a 9 KB CUTLASS one, so 0.3 s for cuSPARSELt's 422 instances of `cutlass::Kernel2`); the
//! last libraries' parsed names are kept, so later lookups in them only compare.

use crate::cuda::sys;
use crate::error::{Error, Result, Status};
use crate::kernel::Kernel;
use crate::library::{self, Api};
use std::borrow::Cow;
use std::ffi::CStr;

/// The longest query accepted (bytes): longer is refused before it is read.
pub const MAX_QUERY: usize = 64 * 1024;

/// Demangled text is cut off (and the name left undemangled) past this many bytes: a crafted
/// symbol can expand exponentially through substitutions.
const MAX_DEMANGLED: usize = 256 * 1024;

/// At most this many candidates are listed in a message.
const MAX_LISTED: usize = 10;

/// The C++ name of a kernel symbol: `axpy<float>(float*, float, int)` for
/// `_Z4axpyIfEvPT_S0_i` (no return type: kernels return void; literal template arguments as
/// plain numbers). `__nv_static_..._Z...` names (static kernels of relocatable device code)
/// are demangled without their prefix. None for a name that is not a mangled C++ name (an
/// `extern "C"` kernel) or that cannot be demangled within cpp_demangle's limits.
///
/// ```
/// assert_eq!(cudyn::names::demangle("_Z4axpyIfEvPT_S0_i").as_deref(), Some("axpy<float>(float*, float, int)"));
/// assert_eq!(cudyn::names::demangle("saxpy"), None);
/// ```
pub fn demangle(symbol: &str) -> Option<String> {
    let mangled = strip_static_prefix(symbol);
    if !mangled.starts_with("_Z") {
        return None;
    }
    let opts = cpp_demangle::DemangleOptions::new().no_return_type().hide_expression_literal_types();
    // cpp_demangle is fuzzed and bounds its recursion; a panic inside it all the same must not
    // become the caller's: the name is then shown as it is.
    std::panic::catch_unwind(|| {
        let sym = cpp_demangle::Symbol::new(mangled.as_bytes()).ok()?;
        let mut out = Capped(String::new());
        sym.structured_demangle(&mut out, &opts).ok()?;
        Some(out.0)
    })
    .ok()
    .flatten()
}

/// A `fmt::Write` that fails past `MAX_DEMANGLED` bytes.
struct Capped(String);

impl std::fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > MAX_DEMANGLED {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// `__nv_static_<n>_<n characters>_<mangled>` -> `<mangled>` (nvcc's name for a static kernel
/// in relocatable device code); anything else unchanged.
fn strip_static_prefix(symbol: &str) -> &str {
    let Some(rest) = symbol.strip_prefix("__nv_static_") else { return symbol };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(n) = rest[..digits].parse::<usize>() else { return symbol };
    let tail = &rest[digits..];
    match tail.get(1 + n..).and_then(|t| t.strip_prefix('_')) {
        Some(m) if tail.starts_with('_') && m.starts_with("_Z") => m,
        _ => symbol,
    }
}

/// The index of the one symbol in `symbols` that `query` names, by the rules of this module:
/// the exact symbol first, then the C++ name or signature.
///
/// ```
/// let names = ["_Z4axpyIfEvPT_S0_i", "_Z4axpyIdEvPT_S0_i", "_Z5scalePff", "_Z5scalePdd"];
/// assert_eq!(cudyn::names::resolve("axpy<float>", &names).unwrap(), 0);
/// assert_eq!(cudyn::names::resolve("axpy<double>(double *, double, int)", &names).unwrap(), 1);
/// assert_eq!(cudyn::names::resolve("scale(double*, double)", &names).unwrap(), 3);
/// let e = cudyn::names::resolve("scale", &names).unwrap_err();
/// assert_eq!(e.status, cudyn::Status::AmbiguousName);
/// assert!(e.message.contains("scale(float*, float)") && e.message.contains("_Z5scalePdd"), "{}", e.message);
/// ```
pub fn resolve<S: AsRef<str>>(query: &str, symbols: &[S]) -> Result<usize> {
    if let Some(i) = symbols.iter().position(|s| s.as_ref() == query) {
        return Ok(i);
    }
    Index::new(symbols.iter().map(|s| s.as_ref().to_string()).collect()).resolve(query)
}

/// A library's kernel symbols, each demangled and taken apart at most once, on the first
/// query that could name it: a library of thousands of instances of one template pays for
/// them once, not on every lookup.
pub(crate) struct Index {
    symbols: Vec<String>,
    parsed: Vec<std::sync::OnceLock<Option<Candidate>>>,
}

impl Index {
    pub(crate) fn new(symbols: Vec<String>) -> Index {
        let parsed = symbols.iter().map(|_| std::sync::OnceLock::new()).collect();
        Index { symbols, parsed }
    }

    /// `resolve` against these symbols.
    pub(crate) fn resolve(&self, query: &str) -> Result<usize> {
        let symbols = &self.symbols;
        if let Some(i) = symbols.iter().position(|s| s == query) {
            return Ok(i);
        }
        let q = Query::parse(query)?;
        // A mangled name holds each identifier as <length><identifier>, the kernel's own name
        // included (the grammar never abbreviates a function's unqualified name), so a symbol
        // without it cannot match and is not demangled.
        let needle = format!("{}{}", q.raw.base.len(), q.raw.base);
        let mut best: Option<u8> = None;
        let mut hits: Vec<usize> = Vec::new();
        let mut same_base: Vec<usize> = Vec::new();
        for (i, s) in symbols.iter().enumerate() {
            let mangled = strip_static_prefix(s).starts_with("_Z");
            if !s.contains(if mangled { needle.as_str() } else { q.raw.base.as_str() }) {
                continue;
            }
            let Some(k) = self.candidate(i) else { continue };
            if k.raw.base != q.raw.base {
                continue;
            }
            match q.rank(k) {
                Some(r) if best.is_none_or(|b| r < b) => {
                    best = Some(r);
                    hits.clear();
                    hits.push(i);
                }
                Some(r) if Some(r) == best => hits.push(i),
                Some(_) => {}
                None => same_base.push(i),
            }
        }
        let list = |v: &[usize]| {
            let mut s: Vec<String> = v
                .iter()
                .take(MAX_LISTED)
                .filter_map(|&i| self.candidate(i).map(|k| described(&k.shown, &symbols[i])))
                .collect();
            if v.len() > MAX_LISTED {
                s.push(format!("and {} more", v.len() - MAX_LISTED));
            }
            s.join("; ")
        };
        match hits.len() {
            1 => Ok(hits[0]),
            0 if same_base.is_empty() => {
                Err(Error::new(Status::NotFound, format!("no kernel of the library is named '{query}'")))
            }
            0 => Err(Error::new(
                Status::NotFound,
                format!(
                    "no kernel of the library is named '{query}'; kernels named '{}': {}",
                    q.raw.base,
                    list(&same_base)
                ),
            )),
            n => Err(Error::new(
                Status::AmbiguousName,
                format!(
                    "'{query}' names {n} kernels of the library: {}; give the parameters, the namespace or the symbol",
                    list(&hits)
                ),
            )),
        }
    }

    /// Symbol `i` demangled and taken apart (None: not a name this module understands, or one
    /// longer than a query may be: the image's to choose, so bounded like the caller's; such a
    /// kernel is still found by its exact symbol).
    fn candidate(&self, i: usize) -> Option<&Candidate> {
        crate::fork::once(&self.parsed[i], || {
            let s = &self.symbols[i];
            if s.len() > MAX_QUERY {
                return None;
            }
            let shown = if strip_static_prefix(s).starts_with("_Z") { demangle(s)? } else { s.clone() };
            Candidate::parse(shown)
        })
        .as_ref()
    }
}

/// "axpy<float>(float*, float, int) [_Z4axpyIfEvPT_S0_i]", or the symbol alone when it is
/// its own name.
fn described(shown: &str, symbol: &str) -> String {
    if shown == symbol {
        symbol.to_string()
    } else {
        format!("{shown} [{symbol}]")
    }
}

// ---- Tokens ---------------------------------------------------------------------------------

/// A token: a slice of the text it came from, or a rewritten spelling.
type Tok<'a> = Cow<'a, str>;

/// A word: an identifier, keyword or number (two words in a row are written with a space).
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()
}

fn is_word(t: &str) -> bool {
    t.chars().next().is_some_and(is_word_char)
}

fn is_number(t: &str) -> bool {
    t.bytes().next().is_some_and(|c| c.is_ascii_digit())
}

/// Split `s` into words, numbers (normalized: `16u`, `0x10` -> `16`), `::`, `...`, `&&`, `->`
/// and single characters; `>>` is two `>`.
fn tokenize(s: &str) -> std::result::Result<Vec<Tok<'_>>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word_byte = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (word_byte(b[i]) || (b[i] == b'\'' && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)))
            {
                i += 1;
            }
            out.push(number(&s[st..i]));
        } else if word_byte(c) {
            let st = i;
            while i < b.len() && word_byte(b[i]) {
                i += 1;
            }
            out.push(Cow::Borrowed(&s[st..i]));
        } else if c == b'\'' {
            // A character literal as a template argument: its code, as the demangler shows it.
            let (code, len) = match (b.get(i + 1), b.get(i + 2), b.get(i + 3)) {
                (Some(b'\\'), Some(&e), Some(b'\'')) => match e {
                    b'n' => (10, 4),
                    b't' => (9, 4),
                    b'r' => (13, 4),
                    b'0' => (0, 4),
                    b'\\' | b'\'' | b'"' => (e, 4),
                    _ => return Err(format!("unsupported character literal at byte {i}")),
                },
                (Some(&ch), Some(b'\''), _) if ch.is_ascii() && ch != b'\\' => (ch, 3),
                _ => return Err(format!("unsupported character literal at byte {i}")),
            };
            out.push(Cow::Owned(code.to_string()));
            i += len;
        } else {
            let rest = &s[i..];
            let t = ["::", "...", "&&", "->"].into_iter().find(|p| rest.starts_with(p)).unwrap_or(&rest[..1]);
            out.push(Cow::Borrowed(t));
            i += t.len();
        }
    }
    Ok(out)
}

/// An integer literal as a decimal number without suffix; anything else as written.
fn number(t: &str) -> Tok<'_> {
    let plain: String = t.chars().filter(|&c| c != '\'').collect::<String>().to_ascii_lowercase();
    let (digits, radix) = if let Some(h) = plain.strip_prefix("0x") {
        (h, 16)
    } else if let Some(b) = plain.strip_prefix("0b") {
        (b, 2)
    } else if plain.len() > 1 && plain.starts_with('0') {
        (&plain[1..], 8)
    } else {
        (plain.as_ref(), 10)
    };
    let body = digits.trim_end_matches(['u', 'l', 'z']);
    match u128::from_str_radix(body, radix) {
        Ok(v) if v.to_string() == t => Cow::Borrowed(t),
        Ok(v) => Cow::Owned(v.to_string()),
        Err(_) => Cow::Borrowed(t),
    }
}

/// Tokens written back: a space only between two words.
fn join(toks: &[Tok<'_>]) -> String {
    let mut s = String::new();
    for t in toks {
        if s.chars().next_back().is_some_and(is_word_char) && is_word(t) {
            s.push(' ');
        }
        s.push_str(t);
    }
    s
}

// ---- Normalization --------------------------------------------------------------------------

const BUILTIN: &[&str] = &[
    "signed", "unsigned", "short", "long", "int", "char", "bool", "float", "double", "void", "wchar_t", "char8_t",
    "char16_t", "char32_t", "__int128",
];

fn is_builtin(t: &str) -> bool {
    BUILTIN.contains(&t)
}

fn is_cv(t: &str) -> bool {
    t == "const" || t == "volatile"
}

/// Words that say nothing the mangled name keeps.
const DROPPED: &[&str] =
    &["restrict", "__restrict", "__restrict__", "struct", "class", "enum", "union", "typename", "__global__"];

/// Typedefs as the types nvcc mangles them as (64-bit Linux: LP64).
const TYPEDEFS: &[(&str, &[&str])] = &[
    ("int8_t", &["signed", "char"]),
    ("uint8_t", &["unsigned", "char"]),
    ("int16_t", &["short"]),
    ("uint16_t", &["unsigned", "short"]),
    ("int32_t", &["int"]),
    ("uint32_t", &["unsigned", "int"]),
    ("int64_t", &["long"]),
    ("uint64_t", &["unsigned", "long"]),
    ("intptr_t", &["long"]),
    ("uintptr_t", &["unsigned", "long"]),
    ("intmax_t", &["long"]),
    ("uintmax_t", &["unsigned", "long"]),
    ("size_t", &["unsigned", "long"]),
    ("ssize_t", &["long"]),
    ("ptrdiff_t", &["long"]),
    ("half", &["__half"]),
    ("nv_bfloat16", &["__nv_bfloat16"]),
];

/// One spelling for a builtin type's words (any order), the one the demangler writes.
fn builtin_spelling(words: &[&str]) -> Vec<&'static str> {
    let has = |w: &str| words.contains(&w);
    let longs = words.iter().filter(|w| **w == "long").count();
    let uns = has("unsigned");
    let pick: &[&str] = if has("char") {
        if uns {
            &["unsigned", "char"]
        } else if has("signed") {
            &["signed", "char"]
        } else {
            &["char"]
        }
    } else if has("short") {
        if uns {
            &["unsigned", "short"]
        } else {
            &["short"]
        }
    } else if has("__int128") {
        if uns {
            &["unsigned", "__int128"]
        } else {
            &["__int128"]
        }
    } else if longs >= 2 {
        if uns {
            &["unsigned", "long", "long"]
        } else {
            &["long", "long"]
        }
    } else if longs == 1 && has("double") {
        &["long", "double"]
    } else if longs == 1 {
        if uns {
            &["unsigned", "long"]
        } else {
            &["long"]
        }
    } else if has("int") || uns || has("signed") {
        if uns {
            &["unsigned", "int"]
        } else {
            &["int"]
        }
    } else {
        return words.iter().filter_map(|w| BUILTIN.iter().find(|b| *b == w).copied()).collect();
    };
    pick.to_vec()
}

/// A versioned inline namespace that a person does not write: `std::__4`, `std::__cxx11`,
/// `cuda::__4`, `cub::CUB_300001_SM_900`, `thrust::THRUST_200500_NS`.
fn is_inline_namespace(outer: &str, inner: &str) -> bool {
    let numbered =
        |p: &str| inner.strip_prefix(p).is_some_and(|r| r.bytes().next().is_some_and(|c| c.is_ascii_digit()));
    match outer {
        "std" | "cuda" => {
            inner == "__cxx11"
                || inner.strip_prefix("__").is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()))
        }
        "cub" => numbered("CUB_"),
        "thrust" => numbered("THRUST_"),
        _ => false,
    }
}

/// The tokens of a name in the one spelling both sides are compared in; `elide` also drops
/// versioned inline namespaces.
fn normalize(toks: Vec<Tok<'_>>, elide: bool) -> Vec<Tok<'_>> {
    // Dropped words, the anonymous namespace's other spellings, inline namespaces.
    let mut a: Vec<Tok> = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_ref();
        let next = |k: usize| toks.get(i + k).map(|t| t.as_ref());
        if DROPPED.contains(&t) {
            i += 1;
        } else if t == "{" && next(1) == Some("anonymous") && next(2) == Some("}") {
            a.extend(["(", "anonymous", "namespace", ")"].map(Cow::Borrowed));
            i += 3;
        } else if t == "`" && next(1) == Some("anonymous") && next(2) == Some("namespace") && next(3) == Some("'") {
            a.extend(["(", "anonymous", "namespace", ")"].map(Cow::Borrowed));
            i += 4;
        } else if elide
            && t == "::"
            && next(2) == Some("::")
            && a.last().is_some_and(|o| next(1).is_some_and(|n| is_inline_namespace(o, n)))
        {
            // `std :: __4 ::` -> `std ::`
            a.push(Cow::Borrowed("::"));
            i += 3;
        } else {
            a.push(toks[i].clone());
            i += 1;
        }
    }
    let b = move_leading_cv(&a);
    // Typedefs: unqualified, or qualified by std:: or cuda::std:: (and nothing else).
    let mut c: Vec<Tok> = Vec::with_capacity(b.len());
    for (i, t) in b.iter().enumerate() {
        let mapped = TYPEDEFS.iter().find(|(n, _)| n == t).map(|(_, m)| *m);
        let next = b.get(i + 1).map(|t| t.as_ref());
        if let Some(m) = mapped.filter(|_| next != Some("::") && next != Some("<")) {
            let n = c.len();
            let ends = |p: &[&str]| n >= p.len() && c[n - p.len()..].iter().zip(p).all(|(x, y)| x == y);
            let before = |k: usize| if n > k { Some(c[n - k - 1].as_ref()) } else { None };
            let qual = if ends(&["cuda", "::", "std", "::"]) && before(4) != Some("::") {
                Some(4)
            } else if ends(&["::", "std", "::"]) && before(3).is_none_or(|p| !is_word(p)) {
                Some(3)
            } else if ends(&["std", "::"]) && before(2) != Some("::") {
                Some(2)
            } else if c.last().is_some_and(|p| p == "::") {
                if before(1).is_none_or(|p| !is_word(p) && p != ">" && p != ")") {
                    Some(1) // `::int64_t`
                } else {
                    None // `ns::int64_t`: a type of its own
                }
            } else {
                Some(0)
            };
            if let Some(k) = qual {
                c.truncate(n - k);
                c.extend(m.iter().map(|w| Cow::Borrowed(*w)));
                continue;
            }
        }
        c.push(t.clone());
    }
    // Builtin types in one spelling, cv-qualifiers in one order.
    let mut d: Vec<Tok> = Vec::with_capacity(c.len());
    let mut i = 0;
    while i < c.len() {
        if is_builtin(&c[i]) || is_cv(&c[i]) {
            let st = i;
            while i < c.len() && (is_builtin(&c[i]) || is_cv(&c[i])) {
                i += 1;
            }
            let run = &c[st..i];
            let words: Vec<&str> = run.iter().map(|t| t.as_ref()).filter(|w| is_builtin(w)).collect();
            if !words.is_empty() {
                d.extend(builtin_spelling(&words).into_iter().map(Cow::Borrowed));
            }
            for q in ["const", "volatile"] {
                if run.iter().any(|w| w == q) {
                    d.push(Cow::Borrowed(q));
                }
            }
        } else {
            d.push(c[i].clone());
            i += 1;
        }
    }
    // A cast on a literal (`(unsigned int)16`) is the literal.
    let mut e: Vec<Tok> = Vec::with_capacity(d.len());
    let mut i = 0;
    while i < d.len() {
        if d[i] == "(" {
            let close = (i + 1..d.len()).find(|&j| !is_builtin(&d[j]));
            if let Some(j) = close.filter(|&j| j > i + 1 && d[j] == ")") {
                let lit = |k: usize| d.get(k).is_some_and(|t| is_number(t) || t == "true" || t == "false");
                if lit(j + 1) || (d.get(j + 1).is_some_and(|t| t == "-") && lit(j + 2)) {
                    i = j + 1;
                    continue;
                }
            }
        }
        e.push(d[i].clone());
        i += 1;
    }
    e
}

/// `const T` -> `T const` for a named type T (a qualified name with template arguments);
/// inside template arguments too. Builtin types are left to the builtin rewrite, which orders
/// their qualifiers itself.
///
/// One pass, no recursion (a symbol is the image's, a query the caller's: `const A<const A<...`
/// nested 100,000 deep overflowed the stack as a recursion, and each level scanned to the end):
/// the qualifiers of a named type wait on a stack until the pass reaches the type's end, and
/// where each bracket closes is found once for the whole name.
fn move_leading_cv<'a>(t: &[Tok<'a>]) -> Vec<Tok<'a>> {
    let closes = bracket_closes(t);
    let mut out: Vec<Tok> = Vec::with_capacity(t.len());
    // (where the named type ends, the qualifiers' range), innermost last.
    let mut waiting: Vec<(usize, usize, usize)> = Vec::new();
    let mut i = 0;
    loop {
        while let Some(&(_, st, en)) = waiting.last().filter(|w| w.0 == i) {
            out.extend(t[st..en].iter().cloned());
            waiting.pop();
        }
        // A named type's inside is read as a name of its own: nothing it holds reaches past it.
        let limit = waiting.last().map_or(t.len(), |w| w.0);
        if i >= limit {
            break;
        }
        let type_start = out.last().is_none_or(|p| matches!(p.as_ref(), "(" | "," | "<"));
        if is_cv(&t[i]) && type_start {
            let st = i;
            while i < limit && is_cv(&t[i]) {
                i += 1;
            }
            match named_type_end(&t[..limit], i, &closes) {
                Some(end) => waiting.push((end, st, i)),
                None => out.extend(t[st..i].iter().cloned()),
            }
            continue;
        }
        out.push(t[i].clone());
        i += 1;
    }
    out
}

/// Where the named type starting at `i` ends: `[::] id [<...>] (:: id [<...>])*`. None when
/// no identifier starts there (or a builtin type does). `closes`: `bracket_closes` of a name
/// `t` is the start of.
fn named_type_end(t: &[Tok<'_>], i: usize, closes: &[Option<usize>]) -> Option<usize> {
    let mut j = i;
    if t.get(j).is_some_and(|s| s == "::") {
        j += 1;
    }
    let ident = |s: &Tok| is_word(s) && !is_number(s) && !is_builtin(s) && !is_cv(s);
    loop {
        if !t.get(j).is_some_and(ident) {
            return None;
        }
        j += 1;
        if t.get(j).is_some_and(|s| s == "<") {
            j = closes.get(j).copied().flatten().filter(|&c| c < t.len())? + 1;
        }
        if t.get(j).is_some_and(|s| s == "::") && t.get(j + 1).is_some_and(ident) {
            j += 1;
            continue;
        }
        return Some(j);
    }
}

/// For every opening bracket of `t`, what `close_of` says closes it, found in one pass: the
/// tokens a bracket's own scan would see are those after it, and a bracket is closed when the
/// stack it starts (which is the top of this pass's stack from it on) empties.
fn bracket_closes(t: &[Tok<'_>]) -> Vec<Option<usize>> {
    let mut closes = vec![None; t.len()];
    let mut stack: Vec<(&str, usize)> = Vec::new();
    for (j, s) in t.iter().enumerate() {
        match s.as_ref() {
            "<" | "(" | "[" | "{" => stack.push((s, j)),
            ">" => {
                if stack.last().is_some_and(|(o, _)| *o == "<") {
                    if let Some((_, at)) = stack.pop() {
                        closes[at] = Some(j);
                    }
                }
            }
            ")" | "]" | "}" => {
                let want = match s.as_ref() {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                while let Some((o, at)) = stack.pop() {
                    closes[at] = Some(j);
                    if o == want {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    closes
}

/// The index of the bracket closing the one opened at `open` (`<`, `(`, `[` or `{`).
fn close_of(t: &[Tok<'_>], open: usize) -> Option<usize> {
    let mut stack: Vec<&str> = Vec::new();
    for (j, s) in t.iter().enumerate().skip(open) {
        match s.as_ref() {
            "<" | "(" | "[" | "{" => stack.push(s),
            ">" => {
                if stack.last() == Some(&"<") {
                    stack.pop();
                } else {
                    continue;
                }
            }
            ")" | "]" | "}" => {
                let want = match s.as_ref() {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                while let Some(o) = stack.pop() {
                    if o == want {
                        break;
                    }
                }
            }
            _ => continue,
        }
        if stack.is_empty() {
            return Some(j);
        }
    }
    None
}

/// The index of the bracket that the last token of `t` closes (one pass: names can be long).
fn opener_of_last(t: &[Tok<'_>]) -> Option<usize> {
    let mut stack: Vec<(&str, usize)> = Vec::new();
    let mut last = None;
    for (j, s) in t.iter().enumerate() {
        last = None;
        match s.as_ref() {
            "<" | "(" | "[" | "{" => stack.push((s, j)),
            ">" if stack.last().is_some_and(|(o, _)| *o == "<") => last = stack.pop(),
            ")" | "]" | "}" => {
                let want = match s.as_ref() {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                while let Some(o) = stack.pop() {
                    if o.0 == want {
                        last = Some(o);
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    last.map(|(_, at)| at)
}

/// Pieces of `t` between the top-level `sep` tokens (`,` or `::`).
fn split_top<'a, 'b>(t: &'b [Tok<'a>], sep: &str) -> std::result::Result<Vec<&'b [Tok<'a>]>, String> {
    let mut parts = Vec::new();
    let (mut st, mut j) = (0, 0);
    while j < t.len() {
        match t[j].as_ref() {
            "<" | "(" | "[" | "{" => {
                j = close_of(t, j).ok_or_else(|| format!("'{}' is not closed", t[j]))? + 1;
                continue;
            }
            ")" | "]" | "}" | ">" => return Err(format!("unmatched '{}'", t[j])),
            s if s == sep => {
                parts.push(&t[st..j]);
                st = j + 1;
            }
            _ => {}
        }
        j += 1;
    }
    parts.push(&t[st..]);
    Ok(parts)
}

// ---- Signatures -----------------------------------------------------------------------------

/// A name taken apart: `ns::inner::fill<float,4>(float*,float)` is scope [ns, inner], base
/// fill, template arguments [float, 4], parameters [float*, float]. Every piece is in the one
/// spelling (`normalize`, `join`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sig {
    rooted: bool,
    scope: Vec<String>,
    base: String,
    targs: Option<Vec<String>>,
    params: Option<Vec<String>>,
}

impl Sig {
    fn parse(toks: &[Tok<'_>]) -> std::result::Result<Sig, String> {
        let mut t = toks;
        // A demangler's clone suffix: `f() [clone .cold]`.
        if let Some(p) = t.windows(2).position(|w| w[0] == "[" && w[1] == "clone") {
            t = &t[..p];
        }
        // A declaration as written: `template __global__ void axpy<float>(float*, float, int);`
        // (`__global__` is dropped with the other words that say nothing).
        if t.last().is_some_and(|s| s == ";") {
            t = &t[..t.len() - 1];
        }
        if t.first().is_some_and(|s| s == "template") && t.get(1).is_some_and(|s| s != "<") {
            t = &t[1..];
        }
        if t.first().is_some_and(|s| s == "void") && t.get(1).is_some_and(|s| is_word(s) || s == "::" || s == "(") {
            t = &t[1..];
        }
        // Every bracket must be closed (a stray '>' is an operator only inside parentheses).
        split_top(t, ",")?;
        let (name, params) = match t.last().map(|t| t.as_ref()) {
            Some(")") => match opener_of_last(t) {
                Some(o) if o > 0 => (&t[..o], Some(params_of(&t[o + 1..t.len() - 1])?)),
                _ => (t, None),
            },
            _ => (t, None),
        };
        let rooted = name.first().is_some_and(|s| s == "::");
        let name = if rooted { &name[1..] } else { name };
        let mut comps = split_top(name, "::")?;
        let last = comps.pop().filter(|l| !l.is_empty()).ok_or("no name")?;
        if comps.iter().any(|c| c.is_empty()) {
            return Err("an empty namespace".into());
        }
        let (base, targs) = match last.last().map(|t| t.as_ref()) {
            Some(">") => {
                let open = opener_of_last(last).ok_or("unmatched '>'")?;
                let args = split_top(&last[open + 1..last.len() - 1], ",")?;
                // An empty pack shows as an empty argument (`f<int, >`).
                (&last[..open], Some(args.into_iter().filter(|a| !a.is_empty()).map(join).collect()))
            }
            _ => (last, None),
        };
        // One identifier (a demangler may add an ABI tag: `f[abi:cxx11]`).
        if !base.first().is_some_and(|b| is_word(b) && !is_number(b)) || (base.len() > 1 && base[1] != "[") {
            return Err(format!("'{}' is not a name", join(base)));
        }
        Ok(Sig { rooted, scope: comps.into_iter().map(join).collect(), base: join(base), targs, params })
    }

    /// How closely `self` (a query) names `k` (a kernel): None for not at all, else lower is
    /// closer (see the module's rules). `extra` is added (the inline-namespace step).
    fn rank(&self, k: &Sig, extra: u8) -> Option<u8> {
        if self.base != k.base {
            return None;
        }
        if let Some(p) = &self.params {
            if k.params.as_ref() != Some(p) {
                return None;
            }
        }
        let mut r = extra;
        if self.scope.len() > k.scope.len() || !k.scope.ends_with(&self.scope) {
            return None;
        }
        if self.scope.len() < k.scope.len() {
            if self.rooted {
                return None;
            }
            r += 1;
        }
        match (&self.targs, &k.targs) {
            (None, None) => {}
            (Some(q), Some(a)) if q == a => {}
            (Some(q), Some(a)) if a.starts_with(q) => r += 4,
            _ => return None,
        }
        Some(r)
    }
}

/// A parameter list's pieces, each without its own top-level cv-qualifiers; `(void)` is `()`.
fn params_of<'a, 'b>(t: &'b [Tok<'a>]) -> std::result::Result<Vec<String>, String> {
    if t.is_empty() || (t.len() == 1 && t[0] == "void") {
        return Ok(Vec::new());
    }
    split_top(t, ",")?
        .into_iter()
        .map(|p| {
            let mut p = p;
            let trim_cv = |mut p: &'b [Tok<'a>]| {
                while p.last().is_some_and(|s| is_cv(s)) {
                    p = &p[..p.len() - 1];
                }
                p
            };
            p = trim_cv(p);
            // A parameter's name (`float* y`, `ns::Pair p`, `unsigned n`): an identifier right
            // after a complete type. No type ends in two words unless both are builtin.
            if let [.., before, last] = p {
                let ident =
                    is_word(last) && !is_number(last) && !is_builtin(last) && !NOT_NAMES.contains(&last.as_ref());
                let after_type =
                    (is_word(before) && !is_number(before)) || matches!(before.as_ref(), "*" | "&" | "&&" | ">");
                if ident && after_type {
                    p = trim_cv(&p[..p.len() - 1]);
                }
            }
            if p.is_empty() {
                Err("an empty parameter".to_string())
            } else {
                Ok(join(p))
            }
        })
        .collect()
}

/// Words that end a type, not name a parameter (`float _Complex`).
const NOT_NAMES: &[&str] = &["_Complex", "_Imaginary"];

/// A kernel's name: as shown, taken apart, and (only when it has a versioned inline
/// namespace) taken apart without it.
struct Candidate {
    shown: String,
    raw: Sig,
    elided: Option<Sig>,
}

/// Both spellings of a name: as it is, and without its versioned inline namespaces (None when
/// it has none, the common case: nothing to compare twice).
fn spellings(name: &str) -> std::result::Result<(Sig, Option<Sig>), String> {
    let toks = tokenize(name)?;
    let has_inline = toks.windows(4).any(|w| w[1] == "::" && w[3] == "::" && is_inline_namespace(&w[0], &w[2]));
    let elided = if has_inline { Some(Sig::parse(&normalize(toks.clone(), true))?) } else { None };
    Ok((Sig::parse(&normalize(toks, false))?, elided))
}

impl Candidate {
    fn parse(shown: String) -> Option<Candidate> {
        let (raw, elided) = spellings(&shown).ok()?;
        Some(Candidate { shown, raw, elided })
    }
}

/// A parsed query.
struct Query {
    raw: Sig,
    elided: Option<Sig>,
}

impl Query {
    fn parse(query: &str) -> Result<Query> {
        if query.len() > MAX_QUERY {
            return Err(Error::invalid(format!(
                "a kernel name of {} bytes is over the {MAX_QUERY}-byte limit",
                query.len()
            )));
        }
        if query.trim().is_empty() {
            return Err(Error::invalid("the kernel name is empty"));
        }
        let (raw, elided) = spellings(query)
            .map_err(|why| Error::invalid(format!("'{query}' is not a C++ name or signature: {why}")))?;
        Ok(Query { raw, elided })
    }

    /// The closer of the two spellings' ranks; skipping an inline namespace costs 2.
    fn rank(&self, k: &Candidate) -> Option<u8> {
        self.raw.rank(&k.raw, 0).or_else(|| {
            let q = self.elided.as_ref().unwrap_or(&self.raw);
            let c = k.elided.as_ref().unwrap_or(&k.raw);
            if self.elided.is_none() && k.elided.is_none() {
                return None;
            }
            q.rank(c, 2)
        })
    }
}

// ---- A loaded library's kernels by C++ name -------------------------------------------------

/// The indexes of the libraries looked up last, most recent first, keyed by their kernel names
/// (not by handle: CUDA reuses the addresses of unloaded libraries), so that naming many
/// kernels of one library demangles each name once.
static INDEXES: std::sync::Mutex<Vec<(u64, std::sync::Arc<Index>)>> = std::sync::Mutex::new(Vec::new());

/// Libraries whose indexes are kept.
const INDEXES_KEPT: usize = 8;

/// The index of these symbols: a kept one, or a new one kept from now on.
fn index_of(symbols: Vec<String>) -> std::sync::Arc<Index> {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    symbols.hash(&mut h);
    let key = h.finish();
    let mut kept = INDEXES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(at) = kept.iter().position(|(k, ix)| *k == key && ix.symbols == symbols) {
        let e = kept.remove(at);
        kept.insert(0, e.clone());
        return e.1;
    }
    let ix = std::sync::Arc::new(Index::new(symbols));
    kept.insert(0, (key, ix.clone()));
    kept.truncate(INDEXES_KEPT);
    ix
}

/// Whether a failed exact lookup means "no kernel of that name" (the driver says
/// CUDA_ERROR_NOT_FOUND, the runtime cudaErrorInvalidValue), so a C++ name is worth trying;
/// a refusal by cudyn itself (a NULL or unloaded library) is not.
fn not_there(e: &Error) -> bool {
    e.status == Status::NotFound || (e.status == Status::InvalidArgument && e.cuda_code == 1)
}

/// Kernel `name` of `lib` through `api`: the exact symbol (CUDA's own lookup, as fast as
/// before), else the C++ name or signature of one of its kernels (this module's rules), whose
/// names CUDA lists (driver 12.4+ or runtime 12.8+).
///
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA).
pub(crate) unsafe fn kernel_by_name(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<Kernel> {
    // SAFETY: the caller's contract.
    let exact = match unsafe { library::get_kernel(lib, name, api) } {
        Err(e) if not_there(&e) => e,
        r => return r,
    };
    let Ok(query) = name.to_str() else { return Err(exact) };
    // SAFETY: the caller's contract (and CUDA just accepted the handle).
    let kernels = match unsafe { library::kernels_of(lib) } {
        Ok(k) => k,
        Err(e) => {
            let message = format!(
                "{}; the library's kernels could not be listed to find a C++ name: {}",
                exact.message, e.message
            );
            return Err(Error { message, ..exact });
        }
    };
    let symbols =
        kernels.iter().map(|k| k.name().map(|n| n.to_string_lossy().into_owned())).collect::<Result<Vec<_>>>()?;
    let ix = index_of(symbols);
    match ix.resolve(query) {
        Ok(i) => {
            let symbol = std::ffi::CString::new(ix.symbols[i].as_str())
                .map_err(|_| Error::new(Status::Internal, "a kernel name holds a NUL"))?;
            // SAFETY: as above.
            unsafe { library::get_kernel(lib, &symbol, api) }
        }
        Err(mut e) => {
            if e.status == Status::NotFound {
                e.cuda_code = exact.cuda_code;
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `move_leading_cv` as it was written first (recursive, each level scanning for its
    /// close): the one-pass version must give the same tokens.
    fn move_leading_cv_recursive<'a>(t: &[Tok<'a>]) -> Vec<Tok<'a>> {
        fn end_of(t: &[Tok<'_>], i: usize) -> Option<usize> {
            let mut j = i;
            if t.get(j).is_some_and(|s| s == "::") {
                j += 1;
            }
            let ident = |s: &Tok| is_word(s) && !is_number(s) && !is_builtin(s) && !is_cv(s);
            loop {
                if !t.get(j).is_some_and(ident) {
                    return None;
                }
                j += 1;
                if t.get(j).is_some_and(|s| s == "<") {
                    j = close_of(t, j)? + 1;
                }
                if t.get(j).is_some_and(|s| s == "::") && t.get(j + 1).is_some_and(ident) {
                    j += 1;
                    continue;
                }
                return Some(j);
            }
        }
        let mut out: Vec<Tok> = Vec::with_capacity(t.len());
        let mut i = 0;
        while i < t.len() {
            let type_start = out.last().is_none_or(|p| matches!(p.as_ref(), "(" | "," | "<"));
            if is_cv(&t[i]) && type_start {
                let st = i;
                while i < t.len() && is_cv(&t[i]) {
                    i += 1;
                }
                if let Some(end) = end_of(t, i) {
                    out.extend(move_leading_cv_recursive(&t[i..end]));
                    out.extend(t[st..i].iter().cloned());
                    i = end;
                } else {
                    out.extend(t[st..i].iter().cloned());
                }
                continue;
            }
            out.push(t[i].clone());
            i += 1;
        }
        out
    }

    #[test]
    fn moving_qualifiers_in_one_pass_is_the_recursive_rewrite() {
        const ALPHABET: [&str; 16] =
            ["const", "volatile", "A", "B", "::", "<", ">", "(", ")", ",", "int", "[", "]", "{", "}", "*"];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in 0..40_000 {
            let len = (next() % 24) as usize;
            let t: Vec<Tok> = (0..len).map(|_| Cow::Borrowed(ALPHABET[(next() % 16) as usize])).collect();
            assert_eq!(move_leading_cv(&t), move_leading_cv_recursive(&t), "case {n}: {t:?}");
        }
    }

    /// A name nested 100,000 deep (`const k<const k<...`, closed or not), as a query or as an
    /// image's symbol: answered in linear time on a small stack.
    #[test]
    fn deeply_nested_names_neither_overflow_nor_crawl() {
        let h = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let deep = 100_000;
                let t0 = std::time::Instant::now();
                let open: String = "const k<".repeat(deep);
                for name in [format!("{open}int{}", ">".repeat(deep)), open.clone()] {
                    let toks = tokenize(&name).unwrap();
                    let moved = move_leading_cv(&toks);
                    assert_eq!(moved.len(), toks.len());
                    let _ = Index::new(vec![name.clone(), "k".into()]).resolve("k<float>");
                }
                // As a query (under the 64 KiB limit).
                let q = format!("{}int{}", "const k<".repeat(7000), ">".repeat(7000));
                assert!(q.len() <= MAX_QUERY);
                let _ = resolve(&q, &["k"]);
                t0.elapsed()
            })
            .unwrap();
        let took = h.join().expect("no stack overflow");
        assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    }

    fn canon(s: &str) -> String {
        join(&normalize(tokenize(s).unwrap(), false))
    }

    #[test]
    fn builtin_types_have_one_spelling() {
        for (a, b) in [
            ("unsigned", "unsigned int"),
            ("unsigned int", "unsigned int"),
            ("int unsigned", "unsigned int"),
            ("signed", "int"),
            ("signed int", "int"),
            ("long int", "long"),
            ("long unsigned int", "unsigned long"),
            ("unsigned long long int", "unsigned long long"),
            ("long long", "long long"),
            ("short int", "short"),
            ("unsigned short int", "unsigned short"),
            ("signed char", "signed char"),
            ("char", "char"),
            ("unsigned char", "unsigned char"),
            ("long double", "long double"),
            ("unsigned __int128", "unsigned __int128"),
            ("int64_t", "long"),
            ("std::uint64_t", "unsigned long"),
            ("::std::size_t", "unsigned long"),
            ("cuda::std::int32_t", "int"),
            ("half", "__half"),
            ("f<uint8_t>", "f<unsigned char>"),
        ] {
            assert_eq!(canon(a), b, "{a}");
        }
        // A type of that name in another namespace is that type.
        assert_eq!(canon("ns::int64_t"), "ns::int64_t");
        assert_eq!(canon("ns::size_t<int>"), "ns::size_t<int>");
    }

    #[test]
    fn qualifiers_go_after_what_they_qualify() {
        for (a, b) in [
            ("const float*", "float const*"),
            ("float const *", "float const*"),
            ("const volatile int*", "int const volatile*"),
            ("volatile int const*", "int const volatile*"),
            ("unsigned const int", "unsigned int const"),
            ("const ns::Pair*", "ns::Pair const*"),
            ("const Op<const int>&", "Op<int const>const&"),
            ("const std::uint32_t*", "unsigned int const*"),
            ("float* __restrict__", "float*"),
            ("struct Pair", "Pair"),
            ("const float * const *", "float const*const*"),
        ] {
            assert_eq!(canon(a), b, "{a}");
        }
    }

    #[test]
    fn literals_and_brackets() {
        for (a, b) in [
            ("sized<16u>", "sized<16>"),
            ("sized<0x10>", "sized<16>"),
            ("sized<(unsigned int)16>", "sized<16>"),
            ("neg<(int)-3>", "neg<-3>"),
            ("c<'a'>", "c<97>"),
            ("Op<Op<int>>", "Op<Op<int>>"),
            ("Op<Op<int> >", "Op<Op<int>>"),
            ("{anonymous}::f", "(anonymous namespace)::f"),
            ("int (*) [16]", "int(*)[16]"),
        ] {
            assert_eq!(canon(a), b, "{a}");
        }
    }

    #[test]
    fn signatures_come_apart() {
        let s =
            Sig::parse(&normalize(tokenize("void ns::inner::fill<float, 4>(float *, const float)").unwrap(), false))
                .unwrap();
        assert_eq!(s.scope, ["ns", "inner"]);
        assert_eq!(s.base, "fill");
        assert_eq!(s.targs.as_deref(), Some(&["float".to_string(), "4".to_string()][..]));
        assert_eq!(s.params.as_deref(), Some(&["float*".to_string(), "float".to_string()][..]));
        let p = |q: &str| Sig::parse(&normalize(tokenize(q).unwrap(), false));
        assert_eq!(p("f(void)").unwrap().params, Some(vec![]));
        assert_eq!(p("f()").unwrap().params, Some(vec![]));
        assert_eq!(p("f").unwrap().params, None);
        assert!(p("::f").unwrap().rooted);
        assert_eq!(p("(anonymous namespace)::hidden(int*)").unwrap().scope, ["(anonymous namespace)"]);
        let l = p("each<launch_lambda(int*)::{lambda(int)#1}>(launch_lambda(int*)::{lambda(int)#1}, int*)").unwrap();
        assert_eq!(l.base, "each");
        assert_eq!(l.params.unwrap().len(), 2);
        // Declarations as written: parameter names, `template`, `;`.
        let decl = p("template __global__ void ns::f<float>(float* const y, const ns::Pair p, unsigned n, Op<int> o);")
            .unwrap();
        assert_eq!(decl.scope, ["ns"]);
        assert_eq!(decl.params.unwrap(), ["float*", "ns::Pair", "unsigned int", "Op<int>"]);
        assert_eq!(p("f(float _Complex)").unwrap().params.unwrap(), ["float _Complex"]);
        assert_eq!(p("f(ns::Pair, Pair)").unwrap().params.unwrap(), ["ns::Pair", "Pair"]);
        for bad in ["f<int", "f(int", "f>", "f)", "::", "a::::b", "<int>", "f(int,)", "axpy<float> extra", "3f"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn static_prefixes_are_stripped() {
        let s = "__nv_static_25__d6e6ae20_4_k_cu_ba88ac67__Z6stat_kPi";
        assert_eq!(strip_static_prefix(s), "_Z6stat_kPi");
        assert_eq!(demangle(s).as_deref(), Some("stat_k(int*)"));
        for odd in ["__nv_static_", "__nv_static_99__x", "__nv_static_3_abc_x", "__nv_static_x"] {
            assert_eq!(strip_static_prefix(odd), odd);
        }
    }

    #[test]
    fn bad_queries_are_invalid_arguments() {
        let names = ["_Z4axpyIfEvPT_S0_i"];
        for q in ["", "   ", "axpy<float", "axpy<float>(float*", "'", "c<'ab'>"] {
            assert_eq!(resolve(q, &names).unwrap_err().status, Status::InvalidArgument, "{q:?}");
        }
        let long = "a".repeat(MAX_QUERY + 1);
        assert_eq!(resolve(&long, &names).unwrap_err().status, Status::InvalidArgument);
    }

    /// Mutated real names and queries (cut, spliced, bytes flipped, brackets stacked): every
    /// answer is a status, never a panic, and an Ok names one of the symbols.
    #[test]
    fn mutated_names_and_queries_never_panic() {
        let seeds = [
            "_Z4axpyIfEvPT_S0_i",
            "_ZN2ns5inner4fillIfLi8EEEvPT_S2_",
            "_ZN49_GLOBAL__N__95e3dfa7_16_peers_kernels_cu_ba88ac676hiddenEPi",
            "_Z2cxIN4cuda3std3__47complexIfEEEvPT_",
            "_Z4eachIZ13launch_lambdaPiEUliE_EvT_S0_",
            "__nv_static_25__d6e6ae20_4_k_cu_ba88ac67__Z6stat_kPi",
            "_Z5sizedILj16EEvPAT__i",
            "plain",
        ];
        let queries = [
            "axpy<float>(float*, float, int)",
            "ns::inner::fill<float, 8>",
            "cx<cuda::std::complex<float>>",
            "sized<(unsigned int)16>(int (*)[16])",
            "{anonymous}::hidden(int* p)",
            "template __global__ void axpy<float>(float* y, float a, int n);",
        ];
        const ALPHABET: &[u8] = b"<>()[]{},:*&'0123456789_ZNEILSTvifdj aAxz#~-";
        let mut rng = crate::fuzzing::Rng(0x9e37_79b9_7f4a_7c15);
        let mutate = |s: &str, rng: &mut crate::fuzzing::Rng| -> String {
            let mut b = s.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                match rng.below(5) {
                    0 if !b.is_empty() => b.truncate(rng.below(b.len())),
                    1 if !b.is_empty() => {
                        let i = rng.below(b.len());
                        b[i] = ALPHABET[rng.below(ALPHABET.len())];
                    }
                    2 => {
                        let i = rng.below(b.len() + 1);
                        let what: &[u8] =
                            [&b"<"[..], b">", b"(", b")", b"::", b"const ", b"'", b"S_", b"T_", b"I"][rng.below(10)];
                        b.splice(i..i, what.iter().copied());
                    }
                    3 => b.extend_from_within(..b.len() / 2),
                    _ if !b.is_empty() => {
                        let i = rng.below(b.len());
                        b[i] ^= 1 << rng.below(8);
                    }
                    _ => {}
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        };
        for round in 0..3000 {
            let symbols: Vec<String> =
                (0..1 + rng.below(6)).map(|_| mutate(seeds[rng.below(seeds.len())], &mut rng)).collect();
            for s in &symbols {
                if let Some(d) = demangle(s) {
                    assert!(d.len() <= MAX_DEMANGLED);
                }
            }
            let q = if round % 2 == 0 {
                mutate(queries[rng.below(queries.len())], &mut rng)
            } else {
                symbols[rng.below(symbols.len())].clone()
            };
            if let Ok(i) = resolve(&q, &symbols) {
                assert!(i < symbols.len());
            }
            // A symbol's own demangled name, mutated, as the query.
            if let Some(d) = demangle(&symbols[0]) {
                let _ = resolve(&mutate(&d, &mut rng), &symbols);
            }
        }
    }

    #[test]
    fn demangled_output_is_capped() {
        // Each level doubles the text (a template of two copies of the previous type).
        let mut m = String::from("_Z1fI");
        let mut t = String::from("i");
        for _ in 0..30 {
            t = format!("1AI{t}S_E");
            if t.len() > 2000 {
                break;
            }
        }
        m.push_str(&t);
        m.push_str("EEvv");
        // Whatever cpp_demangle makes of it, the answer is bounded (or None), never huge.
        if let Some(d) = demangle(&m) {
            assert!(d.len() <= MAX_DEMANGLED);
        }
    }
}
