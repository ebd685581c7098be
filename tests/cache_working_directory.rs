//! NVRTC looks a `-include` name up in the working directory first, before the -I folders,
//! whatever folder the program's name is in. The include scan looked it up beside the
//! program's name and in the -I folders only, so when the name had a folder part
//! ("sub/prog.cu", "/abs/src/prog.cu") a header appearing in the working directory was never
//! looked at, and the cache kept serving the code built from the -I header. One test in its own
//! binary: it changes the process's working directory.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_working_directory`.

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;

fn compile(cache: Option<&Cache>, name: &str, o: &CompileOptions) -> Compiled {
    let src = "extern \"C\" __global__ void k(int* out) { *out = VALUE; }\n";
    compile_with(src, name, o, cache).unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

fn header(v: u32) -> String {
    format!("#pragma once\n#define VALUE {v}\n")
}

#[test]
fn a_pre_include_appearing_in_the_working_directory_is_seen() {
    require_project_env();
    let td = TempDir::new("preinc");
    fs::create_dir(td.join("work")).unwrap();
    fs::create_dir(td.join("inc")).unwrap();
    std::env::set_current_dir(td.join("work")).unwrap();
    let cache = Cache::at(td.join("cache"), 64 << 20).unwrap();
    fs::write(td.join("inc/q.h"), header(0x12345)).unwrap();
    let o = CompileOptions {
        options: vec!["-include".into(), "q.h".into(), format!("-I{}", td.join("inc").display())],
        ..Default::default()
    };
    let mut stale = Vec::new();
    for name in ["sub/prog.cu", &td.join("elsewhere/prog.cu").display().to_string()] {
        let _ = fs::remove_file(td.join("work/q.h"));
        let first = compile(Some(&cache), name, &o);
        assert!(contains(&first.code, &0x12345u32.to_le_bytes()));
        assert!(compile(Some(&cache), name, &o).from_cache);
        // A q.h in the working directory: NVRTC now reads it instead.
        fs::write(td.join("work/q.h"), header(0x54321)).unwrap();
        let fresh = compile(None, name, &o);
        assert!(contains(&fresh.code, &0x54321u32.to_le_bytes()), "NVRTC reads ./q.h first");
        let r = compile(Some(&cache), name, &o);
        if r.from_cache || !contains(&r.code, &0x54321u32.to_le_bytes()) {
            stale.push(format!(
                "name {name}: from_cache={}, holds the old value: {}",
                r.from_cache,
                contains(&r.code, &0x12345u32.to_le_bytes())
            ));
        }
    }
    assert!(stale.is_empty(), "stale: {stale:#?}");

    // A header that names its own path (`__FILE__`) through an absolute -I: the key holds the
    // options as given, not the working directory, so the same compile from another working
    // directory (a build folder and its sanitizer twin) still hits; with -lineinfo, where NVRTC
    // writes paths made absolute with the working directory, it compiles again, as NVRTC's
    // own output differs.
    fs::write(td.join("inc/named.h"), "#pragma once\n__device__ const char f[] = __FILE__;\n").unwrap();
    let src = "#include \"named.h\"\nextern \"C\" __global__ void k(char* o) { o[0] = f[threadIdx.x]; }\n";
    fs::create_dir(td.join("other")).unwrap();
    for (extra, hits) in [(None, true), (Some("-lineinfo"), false)] {
        let mut options = vec![format!("-I{}", td.join("inc").display())];
        options.extend(extra.map(String::from));
        let o = CompileOptions { options, ..Default::default() };
        std::env::set_current_dir(td.join("work")).unwrap();
        let first = compile_with(src, "named.cu", &o, Some(&cache)).unwrap_or_else(|f| panic!("{}", f.log));
        assert!(!first.from_cache);
        std::env::set_current_dir(td.join("other")).unwrap();
        let again = compile_with(src, "named.cu", &o, Some(&cache)).unwrap_or_else(|f| panic!("{}", f.log));
        assert_eq!(again.from_cache, hits, "{extra:?}");
        let fresh = compile_with(src, "named.cu", &o, None).unwrap_or_else(|f| panic!("{}", f.log));
        assert_eq!(again.code, fresh.code, "{extra:?}: NVRTC's own output from here");
    }
}
