//! Text from a hostile image or tool reaches the terminal quoted (issue 22, item 8): a kernel
//! name with ESC sequences in a cubin, a fatbin entry's source name, NVRTC's log echoing the
//! source, a path; `cudyn` prints `\x1b` where the image says ESC, and never a control byte
//! but newline and tab.

mod common;

use common::*;
use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF};

/// No byte a terminal acts on: controls other than newline and tab, and the C1 controls and
/// bidirectional overrides as UTF-8.
fn assert_clean(what: &str, b: &[u8]) {
    if let Some(i) = b.iter().position(|&c| (c < 0x20 && c != b'\n' && c != b'\t') || c == 0x7f) {
        panic!("{what}: control byte {:#04x} at {i}: {:?}", b[i], text(b));
    }
    let s = text(b);
    if let Some(c) =
        s.chars().find(|&c| c.is_control() && c != '\n' && c != '\t' || ('\u{202a}'..='\u{202e}').contains(&c))
    {
        panic!("{what}: {c:?} in {s:?}");
    }
}

/// `b` with every `from` replaced by `to` (the same length).
fn replace(b: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = b.to_vec();
    let mut i = 0;
    while let Some(at) = out[i..].windows(from.len()).position(|w| w == from) {
        out[i + at..i + at + from.len()].copy_from_slice(to);
        i += at + from.len();
    }
    out
}

/// A fatbin entry (from `fatbin_entry`, 64-byte header) with a source name in its header, as
/// nvcc records it: after the fixed 64 bytes, then a NUL, the header padded to 8 bytes.
fn with_source_name(entry: Vec<u8>, name: &[u8]) -> Vec<u8> {
    let (head, body) = entry.split_at(64);
    let size = (64 + name.len() + 1).next_multiple_of(8);
    let mut h = head.to_vec();
    h[4..8].copy_from_slice(&(size as u32).to_le_bytes());
    h[32..36].copy_from_slice(&64u32.to_le_bytes());
    h[36..40].copy_from_slice(&(name.len() as u32).to_le_bytes());
    h.extend_from_slice(name);
    h.resize(size, 0);
    h.extend_from_slice(body);
    h
}

#[test]
fn kernel_and_entry_names_from_an_image_are_quoted() {
    require_toolchain();
    let d = Dir::new("escapes");
    let cub = std::fs::read(cubin(&d)).unwrap();
    // "vec_add" everywhere in the string tables (the kernel's symbol and its sections) becomes
    // ESC [2J ESC (clear the screen); "mixed" becomes a bidi override.
    let hostile = replace(&cub, b"vec_add", b"v\x1b[2J\x07x");
    let hostile = replace(&hostile, b"mixed", "\u{202e}ab".as_bytes());
    std::fs::write(d.path("hostile.cubin"), &hostile).unwrap();
    let o = cudyn(&d, &["inspect", "hostile.cubin", "--sm", "90"]);
    assert_eq!(o.status.code(), Some(0), "cudyn accepts the image (names are the image's business): {}", show(&o));
    assert_clean("inspect's output", &o.stdout);
    assert_clean("inspect's errors", &o.stderr);
    let out = text(&o.stdout);
    assert!(out.contains(r"kernel v\x1b[2J\x07x: 4 parameters"), "{out}");
    assert!(out.contains(r"kernel \u{202e}ab: 4 parameters"), "{out}");
    // JSON keeps the name as data (escaped by JSON itself, so no raw control byte either).
    let o = cudyn(&d, &["inspect", "hostile.cubin", "--json"]);
    assert_clean("inspect --json", &o.stdout);
    let v = json(&o);
    let names: Vec<&str> = v[0]["kernels"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"v\u{1b}[2J\u{7}x"), "{names:?}");

    // A fatbin entry whose recorded source name carries an OSC title sequence.
    let entry = fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &hostile, Packing::Plain);
    let f = fatbin(&[with_source_name(entry, b"/src/\x1b]0;pwned\x07k.cu")]);
    std::fs::write(d.path("hostile.fatbin"), &f).unwrap();
    let o = cudyn(&d, &["inspect", "hostile.fatbin", "--sm", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_clean("inspect of the fatbin", &o.stdout);
    assert!(text(&o.stdout).contains(r"from /src/\x1b]0;pwned\x07k.cu"), "{}", show(&o));
    assert!(text(&o.stdout).contains(r"kernel v\x1b[2J\x07x"), "{}", show(&o));

    // A refused image's reason, and a path with an escape in it.
    let bad = "bad\x1b]0;title\x07.cubin";
    std::fs::write(d.path(bad), &hostile[..200]).unwrap();
    let o = cudyn(&d, &["inspect", bad]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_clean("a refusal", &o.stdout);
    assert!(text(&o.stdout).starts_with(r"bad\x1b]0;title\x07.cubin: cubin"), "{}", show(&o));
    let o = cudyn(&d, &["inspect", "missing\x1b[31m.cubin"]);
    assert_clean("a missing file's message", &o.stderr);
    assert!(text(&o.stderr).contains(r"missing\x1b[31m.cubin"), "{}", show(&o));
}

#[test]
fn tool_logs_that_echo_the_source_are_quoted() {
    require_toolchain();
    let d = Dir::new("escapes-log");
    // NVRTC quotes the offending line in its log, and #error's text in its message.
    std::fs::write(d.path("e.cu"), "#error \x1b]0;owned\x07 \x1b[2J\n__global__ void f() {}\n").unwrap();
    let o = cudyn(&d, &["compile", "e.cu", "-o", "e.cubin"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_clean("NVRTC's log and the message", &o.stderr);
    assert!(text(&o.stderr).contains(r"\x1b]0;owned\x07"), "{}", show(&o));
    // The library's own message, as C reads it, has no control byte either.
    let src = std::fs::read_to_string(d.path("e.cu")).unwrap();
    let f = cudyn::compile::compile(&src, "e.cu", &cudyn::CompileOptions::default()).unwrap_err();
    assert_clean("CompileFailure's message", f.error.message.as_bytes());
    cudyn::error::set_last_error(&f.error);
    assert_clean("cudyn_last_error_message", cudyn::error::last_error_message().as_bytes());
}
