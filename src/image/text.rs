//! Text images: PTX (a `.version` and a `.target sm_XY` directive, ASCII only) and CUDA C++
//! source (plain UTF-8 text with a CUDA/C++ marker or a C-like function body), told apart and
//! checked. [`inspect_text`] is the entry point; the sniffing helpers serve `code_kind_of`, and
//! `is_ptx_byte` / `is_ptx_text` also hold PTX inside a fatbin to the same rule.

// The formats, as relied on here:
//
// * PTX: ASCII text (optionally NUL-terminated) with a line starting with the `.version X.Y`
//   directive and a `.target sm_XY[a|f][, ...]` directive; reported as Ptx { sm: XY }.
// * Source: UTF-8 text without control characters (other than tab, LF, CR, VT, FF), not PTX, and
//   containing a CUDA/C++ marker (`__global__`, `__device__`, `__host__`, `__shared__`,
//   `__constant__`, `__launch_bounds__`, `#include`, `#define`, `#pragma`, `#if`, `extern "C"`,
//   `template<`, `template <`, `namespace `) or else a C-like function body (a `)` followed
//   by `{` after optional whitespace, and a `;` and a `}` somewhere).

use super::info::{ArchCode, ArchVariant, CodeKind, ImageError, ImageInfo};

/// The bytes PTX may hold, in a fatbin or on its own: ptxas reads ASCII (tab, line ends and
/// the printable characters).
pub(super) fn is_ptx_byte(b: u8) -> bool {
    // Without short-circuits, so that a chunk's test below compiles to vector compares.
    (b == b'\t') | (b == b'\n') | (b == b'\r') | (b.wrapping_sub(0x20) < 0x5f)
}

/// Where the first byte PTX may not hold is (a NUL included), if anywhere. A chunk at a time,
/// each tested with no early exit (vector compares: a 236 KB PTX entry of cuFFT is checked
/// about 10x faster than byte by byte); only a chunk that fails is searched.
pub(super) fn first_non_ptx_byte(text: &[u8]) -> Option<usize> {
    const CHUNK: usize = 64;
    let mut at = 0;
    for c in text.chunks(CHUNK) {
        if !c.iter().fold(true, |ok, &b| ok & is_ptx_byte(b)) {
            return c.iter().position(|&b| !is_ptx_byte(b)).map(|i| at + i);
        }
        at += c.len();
    }
    None
}

pub(super) fn is_ptx_text(text: &[u8]) -> bool {
    first_non_ptx_byte(text).is_none()
}

/// Whether every byte is 0 (tested with no early exit, as above).
pub(super) fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |acc, &b| acc | b) == 0
}

/// The bytes before the first NUL, and the image length (through the NUL if there is one).
pub(super) fn split_at_nul(d: &[u8]) -> (&[u8], usize) {
    match d.iter().position(|&b| b == 0) {
        Some(i) => (d.get(..i).unwrap_or(&[]), i.saturating_add(1)),
        None => (d, d.len()),
    }
}

pub(super) fn is_plain_text(text: &str) -> bool {
    text.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

/// The rest of the first line whose first token is `name` (e.g. `.version`).
pub(super) fn find_directive<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
    })
}

fn strip_line_comment(s: &str) -> &str {
    s.split("//").next().unwrap_or(s).trim()
}

pub(super) fn looks_like_source(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "__global__",
        "__device__",
        "__host__",
        "__shared__",
        "__constant__",
        "__launch_bounds__",
        "#include",
        "#define",
        "#pragma",
        "#if",
        "extern \"C\"",
        "template<",
        "template <",
        "namespace ",
    ];
    MARKERS.iter().any(|m| text.contains(m)) || has_function_body(text)
}

/// A `)` followed (after whitespace) by `{`, plus a `;` and a `}` somewhere: `f(...) { ...; }`.
fn has_function_body(text: &str) -> bool {
    text.contains(';') && text.contains('}') && text.split(')').skip(1).any(|after| after.trim_start().starts_with('{'))
}

pub(super) fn inspect_text(d: &[u8]) -> Result<ImageInfo, ImageError> {
    let (body, len) = split_at_nul(d);
    let text = std::str::from_utf8(body).map_err(|_| ImageError::Unrecognised)?;
    if !is_plain_text(text) {
        return Err(ImageError::Unrecognised);
    }
    if let Some(version) = find_directive(text, ".version") {
        // The same rule as PTX in a fatbin: ptxas reads ASCII.
        if let Some(bad) = first_non_ptx_byte(body) {
            return Err(ImageError::Malformed(format!(
                "PTX text has a byte {:#04x} at {bad} that is not ASCII text (tab, line ends, printable)",
                body[bad]
            )));
        }
        let (code, isa) = parse_ptx(text, version)?;
        return Ok(ImageInfo { kind: CodeKind::Ptx, len, codes: vec![code], compressed: false, ptx_isa: isa });
    }
    if looks_like_source(text) {
        return Ok(ImageInfo { kind: CodeKind::Source, len, codes: Vec::new(), compressed: false, ptx_isa: None });
    }
    Err(ImageError::Unrecognised)
}

/// The code a PTX text holds, and its ISA version (None if a number overflows u32).
fn parse_ptx(text: &str, version: &str) -> Result<(ArchCode, Option<(u32, u32)>), ImageError> {
    let version = strip_line_comment(version);
    let Some((major, minor)) = version.split_once('.').filter(|(a, b)| is_decimal(a) && is_decimal(b)) else {
        return Err(ImageError::Malformed(format!(
            "PTX `.version` directive has {version:?}, expected a version such as 8.0"
        )));
    };
    let isa = major.parse().ok().zip(minor.parse().ok());
    let target = find_directive(text, ".target")
        .ok_or_else(|| ImageError::Malformed("PTX has no `.target sm_XY` directive".into()))?;
    let target = strip_line_comment(target);
    let arch = target
        .split(',')
        .map(str::trim)
        .find_map(|item| item.strip_prefix("sm_"))
        .ok_or_else(|| ImageError::Malformed(format!("PTX `.target {target}` names no sm_XY architecture")))?;
    let digits_end = arch.find(|c: char| !c.is_ascii_digit()).unwrap_or(arch.len());
    let (digits, suffix) = arch.split_at(digits_end);
    let sm = digits.parse::<u32>().ok().filter(|&sm| sm >= 10);
    let variant = match suffix {
        "" => Some(ArchVariant::None),
        "a" => Some(ArchVariant::A),
        "f" => Some(ArchVariant::F),
        _ => None,
    };
    match (sm, variant) {
        (Some(sm), Some(variant)) => Ok((ArchCode::Ptx { sm, variant }, isa)),
        _ => Err(ImageError::Malformed(format!("PTX `.target` has an unknown architecture sm_{arch}"))),
    }
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunked search finds what a byte-by-byte search finds, at every position of a chunk
    /// and across chunk boundaries, for every byte value.
    #[test]
    fn first_non_ptx_byte_is_the_first_one() {
        let naive = |t: &[u8]| t.iter().position(|&b| !is_ptx_byte(b));
        for len in [0usize, 1, 63, 64, 65, 200] {
            let base: Vec<u8> = (0..len).map(|i| b" .ab\tz\n~\r"[i % 9]).collect();
            assert_eq!(first_non_ptx_byte(&base), None);
            for at in 0..len {
                for b in [0u8, 8, 11, 12, 0x1f, 0x7f, 0x80, 0xff, b'A', b' '] {
                    let mut t = base.clone();
                    t[at] = b;
                    assert_eq!(first_non_ptx_byte(&t), naive(&t), "len {len}, byte {b:#x} at {at}");
                }
            }
        }
        assert!(all_zero(&[0; 100]) && !all_zero(&[0, 0, 1]) && all_zero(&[]));
    }
}
