//! The entry points (kernels) and module-scope variables of a PTX text, read from its
//! module-scope statements: the kernels' parameter layouts and launch bounds, the globals'
//! sizes. The JIT compiler decides registers and memory, so PTX kernels report none of those.

// What is read (PTX ISA, "Module directives" and "Kernel and function directives"): comments
// (`//`, `/* */`) and string literals are skipped, statements are read at brace depth 0 up to
// their `;` or `{`, and a `{` body is skipped whole.
//
// * `[.visible|.weak] .entry NAME ( .param [.align N] .TYPE PNAME[[DIMS]], ... ) [.maxntid X[, Y[, Z]]]
//   [.reqntid X[, Y[, Z]]] ... {`: a kernel (one without a body is only declared here). Each
//   parameter lies at the next multiple of its alignment (`.align N`, else its type's size),
//   as the parameter buffer is laid out.
// * `[.visible|.weak] (.global|.const) [.attribute(...)] [.align N] [.v2|.v4] .TYPE NAME[[DIMS]] [= ...];`:
//   a variable defined here (`.extern` ones are defined elsewhere and left out).

use super::{GlobalInfo, KernelInfo, Param, Resources, Space};

/// The kernels and globals of the PTX text `d` (up to its first NUL).
pub(super) fn tables(d: &[u8]) -> (Vec<KernelInfo>, Vec<GlobalInfo>) {
    let text = d.split(|&b| b == 0).next().unwrap_or_default();
    let Ok(text) = std::str::from_utf8(text) else { return (Vec::new(), Vec::new()) };
    let mut kernels = Vec::new();
    let mut globals = Vec::new();
    for (statement, has_body) in statements(text) {
        let words = tokens(&statement);
        if let Some(at) = words.iter().position(|w| w == ".entry") {
            if has_body {
                if let Some(k) = entry(&words[at + 1..]) {
                    kernels.push(k);
                }
            }
        } else if !words.iter().any(|w| w == ".extern" || w == ".func") {
            // (An initialiser in braces reads as a body: `.const .b8 c[4] = {1, 2, 3, 4};`.)
            let space = match words.iter().find(|w| *w == ".global" || *w == ".const") {
                Some(w) if w == ".global" => Space::Global,
                Some(_) => Space::Constant,
                None => continue,
            };
            if let Some(g) = variable(&words, space) {
                globals.push(g);
            }
        }
    }
    (kernels, globals)
}

/// The module-scope statements of `text`, comments removed, each with whether a `{` body
/// followed it.
fn statements(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                current.push(' ');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                current.push(' ');
            }
            '"' => {
                // A string (a `.file` path): kept out of the statement, so nothing in it counts.
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
                current.push_str(" \"\" ");
            }
            '{' => {
                if depth == 0 {
                    out.push((std::mem::take(&mut current), true));
                }
                depth += 1;
            }
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => out.push((std::mem::take(&mut current), false)),
            _ if depth == 0 => current.push(c),
            _ => {}
        }
    }
    out
}

/// The words of a statement, with `(`, `)`, `[`, `]`, `,` and `=` as words of their own.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in s.chars() {
        if c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | ',' | '=') {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The size in bytes of a PTX fundamental type (`.u32`, `.f64`, `.b8`, ...).
fn type_size(t: &str) -> Option<u64> {
    Some(match t {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" | ".texref" | ".samplerref" | ".surfref" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// A declaration's type, alignment, vector width, name and array dimensions, from `words`
/// (everything after the name's `[`...`]` groups, such as an initialiser, is ignored).
struct Declaration {
    name: String,
    /// Bytes of the whole object; None for an array of unstated length.
    bytes: Option<u64>,
    align: Option<u64>,
}

fn declaration(words: &[String]) -> Option<Declaration> {
    let mut align = None;
    let mut elem = None;
    let mut vector = 1u64;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        match w {
            ".align" => {
                align = words.get(i + 1).and_then(|n| n.parse::<u64>().ok());
                i += 2;
                continue;
            }
            ".v2" => vector = 2,
            ".v4" => vector = 4,
            ".v8" => vector = 8,
            "(" => {
                // `.attribute(.managed)` and the like.
                while i < words.len() && words[i] != ")" {
                    i += 1;
                }
            }
            _ if w.starts_with('.') => {
                if let Some(n) = type_size(w) {
                    elem = Some(n);
                }
            }
            _ => {
                // The name, then its dimensions.
                let name = w.to_string();
                let mut bytes = elem.map(|e| e.saturating_mul(vector));
                let mut j = i + 1;
                while words.get(j).map(String::as_str) == Some("[") {
                    let n = words.get(j + 1).and_then(|n| n.parse::<u64>().ok());
                    bytes = match (bytes, n) {
                        (Some(b), Some(n)) => Some(b.saturating_mul(n)),
                        _ => None,
                    };
                    let close = words.get(j + 1).map(String::as_str) == Some("]");
                    j += if close { 2 } else { 3 };
                }
                return Some(Declaration { name, bytes, align });
            }
        }
        i += 1;
    }
    None
}

/// A `.global` or `.const` variable from its statement's words.
fn variable(words: &[String], space: Space) -> Option<GlobalInfo> {
    let at = words.iter().position(|w| w == ".global" || w == ".const")?;
    let d = declaration(&words[at + 1..])?;
    Some(GlobalInfo { name: d.name, bytes: d.bytes, space })
}

/// A kernel from the words after `.entry`: its name, parameter list and launch bounds.
fn entry(words: &[String]) -> Option<KernelInfo> {
    let name = words.first()?.clone();
    let mut params = Vec::new();
    let mut end = 0u64;
    let mut rest = &words[1..];
    if rest.first().map(String::as_str) == Some("(") {
        let close = rest.iter().position(|w| w == ")")?;
        for p in rest[1..close].split(|w| w == ",").filter(|p| !p.is_empty()) {
            let d = declaration(p.get(1..).unwrap_or_default())?;
            let size = d.bytes?;
            let align = d.align.unwrap_or(size).max(1);
            let offset = end.div_ceil(align).checked_mul(align)?;
            end = offset.checked_add(size)?;
            params.push(Param { offset: u32::try_from(offset).ok()?, size: u32::try_from(size).ok()? });
        }
        rest = &rest[close + 1..];
    }
    let mut resources = Resources::default();
    let dims = |at: usize| {
        let mut v = [1u32; 3];
        let mut n = 0;
        for w in rest.get(at + 1..).unwrap_or_default() {
            match w.parse::<u32>() {
                Ok(x) if n < 3 => {
                    v[n] = x;
                    n += 1;
                }
                _ if w == "," => {}
                _ => break,
            }
        }
        (n > 0).then_some(v)
    };
    for (i, w) in rest.iter().enumerate() {
        match w.as_str() {
            ".maxntid" => resources.max_threads = dims(i),
            ".reqntid" => resources.required_block = dims(i),
            _ => {}
        }
    }
    Some(KernelInfo { name, params, param_bytes: u32::try_from(end).ok()?, resources })
}
