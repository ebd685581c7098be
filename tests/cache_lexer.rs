//! The compile cache is never stale however the source is written: the include scanner reads
//! every text as NVRTC does (C++'s translation phases, `src/cache/lex.rs`), so no raw string,
//! digit separator, line splice, trigraph, comment in a directive, `__has_include`, macro-named
//! header, `#include_next` or `_Pragma` hides a header from the key. Each case first proves
//! that NVRTC reads the header in that construct (a header that is an `#error` fails the
//! compile), then that a change to the header is compiled, never served from the cache. The
//! clock macros (`__DATE__`, `__TIME__`, `__TIMESTAMP__`, also pasted together with `##`) make
//! a compile bypass the cache.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_lexer`.

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;

const KERNEL: &str = "\nextern \"C\" __global__ void k(int* out) { *out = VALUE; }\n";
const PROBE: &str = "CUDYN_PROBE_THIS_HEADER_WAS_READ";

fn compile(cache: Option<&Cache>, src: &str, o: &CompileOptions) -> Result<Compiled, String> {
    compile_with(src, "lex.cu", o, cache).map_err(|f| format!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

fn header(value: u32) -> String {
    format!("#pragma once\n#define VALUE {value:#x}\n")
}

fn has_value(code: &[u8], v: u32) -> bool {
    contains(code, &v.to_le_bytes())
}

fn options(td: &TempDir, extra: &[&str]) -> CompileOptions {
    let mut o = vec![format!("-I{}", td.join("inc").display())];
    o.extend(extra.iter().map(|s| s.to_string()));
    CompileOptions { options: o, ..Default::default() }
}

/// `src` (the kernel is appended) reads `inc/<rel>` under NVRTC: proven with an `#error`
/// header; then the cache follows every change of that header.
fn never_stale(what: &str, src: &str, rel: &str, extra: &[&str]) {
    never_stale_with(what, src, rel, extra, &[])
}

/// `never_stale`, with the files `also` (name, text) created first.
fn never_stale_with(what: &str, src: &str, rel: &str, extra: &[&str], also: &[(&str, &str)]) {
    let td = TempDir::new("lexer");
    fs::create_dir_all(td.join("inc")).unwrap();
    for (a, text) in also {
        let p = td.join("inc").join(a);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
    }
    let h = td.join("inc").join(rel);
    fs::create_dir_all(h.parent().unwrap()).unwrap();
    let o = options(&td, extra);
    let src = format!("{src}{KERNEL}");
    fs::write(&h, format!("#error {PROBE}\n")).unwrap();
    match compile(None, &src, &o) {
        Err(log) => assert!(log.contains(PROBE), "{what}: NVRTC failed for another reason:\n{log}"),
        Ok(_) => panic!("{what}: NVRTC does not read {rel} in this construct; the case proves nothing"),
    }
    let c = Cache::at(td.join("cache"), 64 << 20).unwrap();
    let (a, b) = (0x12345, 0x54321);
    fs::write(&h, header(a)).unwrap();
    let first = compile(Some(&c), &src, &o).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(!first.from_cache && has_value(&first.code, a), "{what}: first compile");
    assert!(compile(Some(&c), &src, &o).unwrap().from_cache, "{what}: the unchanged header should give a hit");
    fs::write(&h, header(b)).unwrap();
    let second = compile(Some(&c), &src, &o).unwrap();
    assert!(!second.from_cache, "{what}: {rel} changed, yet the cache answered (stale)");
    assert!(has_value(&second.code, b), "{what}: the compile did not see the change");
}

#[test]
fn raw_strings_of_every_form_hide_no_include() {
    require_project_env();
    let forms = [
        r#"R"(" /*)""#,
        r#"R"abc( )" /* )abc""#,
        r#"R"!%^&*-+=:;,.?~|("/*)!%^&*-+=:;,.?~|""#,
        r#"R"0123456789abcdef("/*)0123456789abcdef""#,
        r#"u8R"xy(" /* )xy""#,
        r#"LR"(" /*)""#,
        r#"uR"(" /*)""#,
        r#"UR"(" /*)""#,
        "R\"(\n\" /*\n)\"",
        "R\\\n\"(\" /*)\"",
    ];
    for f in forms {
        let src = format!("__device__ const auto* s = {f};\n#include \"x.h\"\n// */\n");
        never_stale(&format!("raw string {f:?}"), &src, "x.h", &[]);
    }
}

#[test]
fn digit_separators_hide_no_include() {
    require_project_env();
    for n in ["1'0", "0x1'f", "0b1'01", "1'000'000", "0'7"] {
        let src = format!("__device__ int a = {n} + '/*';\n#include \"x.h\"\n// */\n");
        never_stale(&format!("digit separator {n}"), &src, "x.h", &[]);
    }
    // C++11 has no digit separators: there `1'a'` is `1` then 'a', and the include is real.
    let src = "#define F(...) 0\n__device__ int a = F(1'a') + '/*';\n#include \"x.h\"\n// */\n";
    never_stale("1'a' under -std=c++11", src, "x.h", &["-std=c++11"]);
}

#[test]
fn line_splices_in_every_position() {
    require_project_env();
    let cases = [
        ("#\\\ninclude \"x.h\"\n", "x.h"),
        ("#inc\\\nlude \"x.h\"\n", "x.h"),
        ("#include \\\n\"x.h\"\n", "x.h"),
        ("#include \"x\\\n.h\"\n", "x.h"),
        ("#include <x\\\n.h>\n", "x.h"),
        ("#inc\\\r\nlude \"x.h\"\n", "x.h"),
        ("# \\\n\\\n include \\\n\"x.h\"\n", "x.h"),
        ("/\\\n* a comment *\\\n/ #include \"x.h\"\n", "x.h"),
        ("#include \"x.h\" /\\\n/ a comment\n", "x.h"),
        // A blank after the backslash: NVRTC does not splice, so the comment ends there.
        ("// a comment \\ \n#include \"x.h\"\n", "x.h"),
        ("#if __has_\\\ninclude(\"x.h\")\n#include \"x.h\"\n#endif\n", "x.h"),
    ];
    for (src, rel) in cases {
        never_stale(&format!("splice in {src:?}"), src, rel, &[]);
    }
    // At the very end of a file: a header that ends in `#include "x.h"\`.
    never_stale_with("splice at a file's end", "#include \"mid.h\"\n", "x.h", &[], &[("mid.h", "#include \"x.h\"\\")]);
}

#[test]
fn trigraphs_as_the_dialect_has_them() {
    require_project_env();
    // C++14 and before replace trigraphs: `??=` is `#`, `??/` a backslash (so a splice), `??-` `~`.
    never_stale("??=include", "??=include \"x.h\"\n", "x.h", &["-std=c++14"]);
    never_stale("??/ splice", "#inc??/\nlude \"x.h\"\n", "x.h", &["-std=c++14"]);
    never_stale("??- in a name", "#include \"x??-.h\"\n", "x~.h", &["-std=c++14"]);
    // C++17 does not: `??/` before a newline ends nothing, so the comment ends at the newline.
    never_stale("??/ under c++17", "// a comment ??/\n#include \"x.h\"\n", "x.h", &["-std=c++17"]);
}

#[test]
fn comments_inside_directives() {
    require_project_env();
    let cases = [
        ("# /* a */ include /* b */ \"x.h\" /* c */\n", "x.h"),
        ("#include /*\n*/ \"x.h\"\n", "x.h"),
        ("/*\n*/ #include \"x.h\"\n", "x.h"),
        ("#include \"x.h\" // a comment\n", "x.h"),
        // `/*` inside `<...>` of an #include is part of the header's name, not a comment.
        ("#include <sub/*y.h>\n#include \"x.h\"\n// */\n", "x.h"),
    ];
    for (src, rel) in cases {
        never_stale_with(&format!("comment case {src:?}"), src, rel, &[], &[("sub/*y.h", "")]);
    }
}

#[test]
fn has_include_in_every_spelling() {
    require_project_env();
    never_stale_with(
        "`/*` in __has_include's header name",
        "#if __has_include(<sub/*y.h>)\n#endif\n#include \"x.h\"\n// */\n",
        "x.h",
        &[],
        &[("sub/*y.h", "")],
    );
    never_stale(
        "__has_include with comments",
        "#if __has_include( /* c */ \"x.h\" /* d */ )\n#include \"x.h\"\n#endif\n",
        "x.h",
        &[],
    );
    // A header appearing where __has_include looked changes the answer, and so the code.
    let td = TempDir::new("has-include");
    fs::create_dir_all(td.join("inc")).unwrap();
    let o = options(&td, &[]);
    let c = Cache::at(td.join("cache"), 64 << 20).unwrap();
    let src = format!(
        "__device__ const char* s = R\"(\" /*)\";\n#if __has_include(\"opt.h\")\n#include \"opt.h\"\n#else\n#define VALUE 0x11111\n#endif\n// */\n{KERNEL}"
    );
    let a = compile(Some(&c), &src, &o).unwrap();
    assert!(has_value(&a.code, 0x11111));
    assert!(compile(Some(&c), &src, &o).unwrap().from_cache);
    fs::write(td.join("inc/opt.h"), header(0x22222)).unwrap();
    let b = compile(Some(&c), &src, &o).unwrap();
    assert!(!b.from_cache && has_value(&b.code, 0x22222), "opt.h appeared, yet the cache answered");
}

#[test]
fn macros_that_name_the_header() {
    require_project_env();
    never_stale("#define H \"x.h\"", "#define H \"x.h\"\n#include H\n", "x.h", &[]);
    never_stale("#define H <x.h>", "#define H <x.h>\n#include H\n", "x.h", &[]);
    never_stale("a macro inside <...>", "#define D sub\n#define H <D/x.h>\n#include H\n", "sub/x.h", &[]);
    never_stale("through another macro", "#define A \"x.h\"\n#define H A\n#include H\n", "x.h", &[]);
    never_stale("defined with a comment", "#define H /* c */ \"x.h\" // d\n#include H\n", "x.h", &[]);
    never_stale("an empty macro before the name", "#define E\n#include E \"x.h\"\n", "x.h", &[]);
    never_stale("-D", "#include H\n", "x.h", &["-DH=\"x.h\""]);
    never_stale("%:define", "%:define H \"x.h\"\n%:include H\n", "x.h", &[]);
}

#[test]
fn include_next_follows_the_later_folder() {
    require_project_env();
    let td = TempDir::new("include-next");
    for d in ["a", "b"] {
        fs::create_dir_all(td.join(d)).unwrap();
    }
    fs::write(td.join("a/x.h"), "#include_next <x.h>\n").unwrap();
    let o = CompileOptions {
        options: vec![format!("-I{}", td.join("a").display()), format!("-I{}", td.join("b").display())],
        ..Default::default()
    };
    let src = format!("__device__ const char* s = R\"(\" /*)\";\n#include <x.h>\n// */\n{KERNEL}");
    let c = Cache::at(td.join("cache"), 64 << 20).unwrap();
    fs::write(td.join("b/x.h"), header(0x12345)).unwrap();
    let first = compile(Some(&c), &src, &o).unwrap();
    assert!(has_value(&first.code, 0x12345));
    fs::write(td.join("b/x.h"), header(0x54321)).unwrap();
    let second = compile(Some(&c), &src, &o).unwrap();
    assert!(!second.from_cache && has_value(&second.code, 0x54321), "the #include_next header changed: stale");
}

#[test]
fn pragma_operators_hide_no_include() {
    require_project_env();
    never_stale(
        "_Pragma with escapes",
        "_Pragma(\"message(\\\"\\\\\\\" /*\\\")\")\n#include \"x.h\"\n// */\n",
        "x.h",
        &[],
    );
    never_stale("_Pragma with a raw string", "_Pragma(R\"(message(\"/*\"))\")\n#include \"x.h\"\n// */\n", "x.h", &[]);
    never_stale(
        "character literals",
        "__device__ char c = '\"'; __device__ char d = '\\''; /* '\" */\n#include \"x.h\"\n",
        "x.h",
        &[],
    );
}

/// The clock macros make a compile's code depend on when it ran: such a compile is never
/// served from the cache nor stored, however the macro is reached.
#[test]
fn clock_macros_bypass_the_cache() {
    require_project_env();
    let td = TempDir::new("clock");
    fs::create_dir_all(td.join("inc")).unwrap();
    fs::write(td.join("inc/stamp.h"), "#define STAMP __DATE__\n").unwrap();
    fs::write(td.join("inc/cat.h"), "#define CAT(a, b) a##b\n#define XCAT(a, b) CAT(a, b)\n").unwrap();
    let use_it = "\nextern \"C\" __global__ void k(char* out) { *out = STAMP[0]; }\n";
    let cases: [(&str, String, &[&str]); 5] = [
        ("__TIME__ in the source", format!("#define STAMP __TIME__{use_it}"), &[]),
        ("__DATE__ in a header", format!("#include \"stamp.h\"{use_it}"), &[]),
        ("__DATE__ in -D", format!("#define X 1{use_it}"), &["-DSTAMP=__DATE__"]),
        ("__TIME__ pasted", format!("#include \"cat.h\"\n#define STAMP XCAT(XCAT(__, TI), ME__){use_it}"), &[]),
        (
            "__DATE__ pasted through macros in a header",
            format!("#include \"cat.h\"\n#define P1 __DA\n#define P2 TE__\n#define STAMP XCAT(P1, P2){use_it}"),
            &[],
        ),
    ];
    for (what, src, extra) in cases {
        let c = Cache::at(td.join(&format!("cache-{}", what.len())), 64 << 20).unwrap();
        let o = options(&td, extra);
        for round in 0..2 {
            let r = compile(Some(&c), &src, &o).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(!r.from_cache, "{what}: round {round} was served from the cache");
        }
        assert_eq!(c.stats().entries, 0, "{what}: a clock-dependent compile was stored");
    }
    // Pieces of those names where no paste can join them do not stop caching.
    let c = Cache::at(td.join("cache-plain"), 64 << 20).unwrap();
    let src = format!(
        "#include \"cat.h\"\n__device__ int f(int __DA, int TE__) {{ return __DA + TE__; }} // __DATE__\n__device__ const char* s = \"__TIME__\";\n#define VALUE 0x33333{KERNEL}"
    );
    let o = options(&td, &[]);
    assert!(!compile(Some(&c), &src, &o).unwrap().from_cache);
    assert!(compile(Some(&c), &src, &o).unwrap().from_cache, "plain identifiers and literals must not stop caching");
}

/// Every miss is held against NVRTC's own account of the headers it read (its time trace): a
/// header the scan did not find — here one it is made blind to — keeps the result out of the
/// cache, and the code a miss stores is the code an uncached compile makes.
#[test]
fn a_header_the_scan_missed_is_never_stored() {
    require_project_env();
    let td = TempDir::new("blind");
    fs::create_dir_all(td.join("inc")).unwrap();
    fs::write(td.join("inc/cudyn-blind-probe.h"), header(0x12345)).unwrap();
    let o = options(&td, &[]);
    let src = format!("#include \"cudyn-blind-probe.h\"{KERNEL}");
    let c = Cache::at(td.join("cache"), 64 << 20).unwrap();
    cudyn::cache::blind_scan(&["cudyn-blind-probe.h"]);
    let a = compile(Some(&c), &src, &o);
    let b = compile(Some(&c), &src, &o);
    cudyn::cache::blind_scan(&[]);
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(!a.from_cache && !b.from_cache, "a compile whose header the scan missed was stored");
    assert_eq!(c.stats().entries, 0);
    // Seen again, it is cached, and the stored code is what NVRTC makes without a cache.
    let stored = compile(Some(&c), &src, &o).unwrap();
    assert!(!stored.from_cache && c.stats().entries == 1);
    assert_eq!(stored.code, compile(None, &src, &o).unwrap().code);
    assert!(compile(Some(&c), &src, &o).unwrap().from_cache);
    // The trace NVRTC wrote is gone from the cache folder.
    assert!(fs::read_dir(c.dir()).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().ends_with(".json")));
}
