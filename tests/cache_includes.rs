//! The compile cache is never stale: its key covers every header NVRTC could read from disk,
//! with no option (`#include "/abs/x.h"`, a quoted include found in the working directory),
//! through -I and -include, and CCCL found by default. A change to any such header between
//! two compiles makes the second one compile again and see the change.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_includes`.

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;
use std::path::Path;
use std::time::Instant;

fn cache_in(td: &TempDir) -> Cache {
    Cache::at(td.join("cache"), 64 << 20).expect("a cache in a fresh temp dir")
}

fn compile(cache: &Cache, src: &str, o: &CompileOptions) -> Compiled {
    compile_with(src, "inc.cu", o, Some(cache))
        .unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

/// A kernel whose code holds `VALUE` from a header: the cubin differs when the header does.
fn kernel_including(include_line: &str) -> String {
    format!("{include_line}\nextern \"C\" __global__ void k(int* out) {{ *out = VALUE; }}\n")
}

fn header(value: u32) -> String {
    format!("#pragma once\n#define VALUE {value}\n")
}

/// Whether `code` stores the constant `v` (0x12345 + n: distinctive in a cubin).
fn has_value(code: &[u8], v: u32) -> bool {
    contains(code, &v.to_le_bytes())
}

/// Compile, change the header, compile again: the second sees the change; a third with the
/// header unchanged is a hit.
fn change_between_compiles(c: &Cache, src: &str, o: &CompileOptions, header_path: &Path) {
    let (a, b) = (0x12345, 0x54321);
    fs::write(header_path, header(a)).unwrap();
    let first = compile(c, src, o);
    assert!(!first.from_cache);
    assert!(has_value(&first.code, a), "first compile does not hold {a:#x}");
    let hit = compile(c, src, o);
    assert!(hit.from_cache, "unchanged header: a hit");
    fs::write(header_path, header(b)).unwrap();
    let second = compile(c, src, o);
    assert!(!second.from_cache, "the header changed: the cache must not answer");
    assert!(has_value(&second.code, b) && !has_value(&second.code, a), "the second compile did not see the change");
    let again = compile(c, src, o);
    assert!(again.from_cache && again.code == second.code);
}

#[test]
fn absolute_header_change_is_seen() {
    require_project_env();
    let td = TempDir::new("abs");
    let c = cache_in(&td);
    let h = td.join("abs.h");
    let src = kernel_including(&format!("#include \"{}\"", h.display()));
    change_between_compiles(&c, &src, &CompileOptions::default(), &h);
}

#[test]
fn include_path_header_change_is_seen() {
    require_project_env();
    let td = TempDir::new("ipath");
    let c = cache_in(&td);
    fs::create_dir(td.join("inc")).unwrap();
    fs::create_dir(td.join("inc/sub")).unwrap();
    // A header found through -I that includes another beside itself.
    fs::write(td.join("inc/outer.h"), "#include \"sub/inner.h\"\n").unwrap();
    let o = CompileOptions { options: vec![format!("-I{}", td.join("inc").display())], ..Default::default() };
    change_between_compiles(&c, &kernel_including("#include <outer.h>"), &o, &td.join("inc/sub/inner.h"));
    // -include reads a file too.
    let pre = CompileOptions {
        options: vec!["-include".into(), td.join("pre.h").display().to_string()],
        ..Default::default()
    };
    change_between_compiles(&c, &kernel_including(""), &pre, &td.join("pre.h"));
}

#[test]
fn in_memory_header_including_a_disk_header() {
    require_project_env();
    let td = TempDir::new("mem");
    let c = cache_in(&td);
    let disk = td.join("disk.h");
    let o = CompileOptions {
        headers: vec![("mem.h".into(), format!("#include \"{}\"\n", disk.display()))],
        ..Default::default()
    };
    change_between_compiles(&c, &kernel_including("#include \"mem.h\""), &o, &disk);
}

#[test]
fn a_header_appearing_where_none_was_is_seen() {
    require_project_env();
    let td = TempDir::new("appear");
    let c = cache_in(&td);
    fs::create_dir(td.join("first")).unwrap();
    fs::create_dir(td.join("second")).unwrap();
    let o = CompileOptions {
        options: vec![format!("-I{}", td.join("first").display()), format!("-I{}", td.join("second").display())],
        ..Default::default()
    };
    let src = kernel_including("#include <v.h>");
    fs::write(td.join("second/v.h"), header(0x12345)).unwrap();
    assert!(has_value(&compile(&c, &src, &o).code, 0x12345));
    assert!(compile(&c, &src, &o).from_cache);
    // A v.h earlier in the search order now shadows the one used before.
    fs::write(td.join("first/v.h"), header(0x54321)).unwrap();
    let r = compile(&c, &src, &o);
    assert!(!r.from_cache && has_value(&r.code, 0x54321));
}

#[test]
fn macro_named_include_bypasses_the_cache() {
    require_project_env();
    let td = TempDir::new("macro");
    let c = cache_in(&td);
    let h = td.join("m.h");
    fs::write(&h, header(0x12345)).unwrap();
    // A function-like macro builds the name: beyond the scan, so never cached.
    let src = kernel_including(&format!("#define STR(x) #x\n#define HDR(x) STR(x)\n#include HDR({})", h.display()));
    for _ in 0..2 {
        let r = compile(&c, &src, &CompileOptions::default());
        assert!(!r.from_cache, "an include the scan cannot follow is never cached");
    }
    assert_eq!(c.stats().entries, 0);
}

#[test]
fn object_like_macro_include_is_followed() {
    require_project_env();
    let td = TempDir::new("objmacro");
    let c = cache_in(&td);
    let h = td.join("named.h");
    let src = kernel_including(&format!("#define HDR \"{}\"\n#include HDR", h.display()));
    change_between_compiles(&c, &src, &CompileOptions::default(), &h);
}

/// A quoted include found relative to the working directory (the program's name is
/// relative): run in a child whose working directory is a fresh folder.
#[test]
fn working_directory_header_change_is_seen() {
    const TEST: &str = "working_directory_header_change_is_seen";
    if child_mode().as_deref() == Some("cwd") {
        let cwd = std::env::current_dir().unwrap();
        let c = Cache::at(cwd.join("cache"), 64 << 20).unwrap();
        change_between_compiles(
            &c,
            &kernel_including("#include \"local.h\""),
            &CompileOptions::default(),
            Path::new("local.h"),
        );
        // The same source from another working directory with its own local.h is not served
        // the first folder's code.
        fs::create_dir("other").unwrap();
        fs::write("other/local.h", header(0x777777)).unwrap();
        std::env::set_current_dir("other").unwrap();
        let r = compile(&c, &kernel_including("#include \"local.h\""), &CompileOptions::default());
        assert!(!r.from_cache && has_value(&r.code, 0x777777));
        return;
    }
    require_project_env();
    let td = TempDir::new("cwd");
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "cwd")
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(td.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// CUB's BlockReduce compiles with no options (the CCCL headers are found where NVRTC was:
/// the wheels' nvidia/cu13/include/cccl here), and a second compile is a cache hit whose
/// key covered every CCCL header the scan found.
#[test]
fn cub_block_reduce_with_no_options_is_cached() {
    require_project_env();
    let td = TempDir::new("cub");
    let c = cache_in(&td);
    let src = r#"
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const int* in, int* out) {
    using Reduce = cub::BlockReduce<int, 128>;
    __shared__ typename Reduce::TempStorage tmp;
    int v = in[blockIdx.x * 128 + threadIdx.x];
    int s = Reduce(tmp).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"#;
    let nv = cudyn::cuda::nvrtc::nvrtc().unwrap();
    let includes = cudyn::compile::default_include_options(nv);
    assert!(includes.iter().any(|o| o.ends_with("include/cccl")), "{includes:?}");
    let cwd = std::env::current_dir().unwrap();
    let scan = cudyn::cache::scan_includes(src, "inc.cu", &[], includes, &[], &cwd)
        .unwrap_or_else(|e| panic!("the include scan gave up on CUB: {e}"));
    let t0 = Instant::now();
    let first = compile(&c, src, &CompileOptions::default());
    let cold = t0.elapsed();
    assert!(!first.from_cache);
    assert!(has_elf_string(&first.code, "block_sum"));
    let t1 = Instant::now();
    let second = compile(&c, src, &CompileOptions::default());
    let warm = t1.elapsed();
    assert!(second.from_cache, "the second CUB compile must be a cache hit");
    assert_eq!(second.code, first.code);
    assert!(
        scan.files.iter().any(|f| f.ends_with("cub/block/block_reduce.cuh")),
        "{:?}",
        &scan.files[..3.min(scan.files.len())]
    );
    eprintln!(
        "CUB BlockReduce: cold {:.1} ms, warm (disk hit, {} headers hashed, {} lookups) {:.2} ms",
        cold.as_secs_f64() * 1e3,
        scan.files.len(),
        scan.lookups,
        warm.as_secs_f64() * 1e3
    );
}

/// The memory tier: the same compile again on the same cache is answered without reading the
/// entry (its mtime, which a disk hit refreshes, stays as set), and stops answering as soon as
/// a header or the entry changes.
#[test]
fn memory_tier_answers_and_is_never_stale() {
    require_project_env();
    let td = TempDir::new("memory");
    let c = cache_in(&td);
    let h = td.join("mem-tier.h");
    fs::write(&h, header(0x12345)).unwrap();
    // Headers changed in the last 2 seconds are never remembered (their stamps could hide a
    // second write in the same tick): wait until this one is old enough.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let src = kernel_including(&format!("#include \"{}\"", h.display()));
    let o = CompileOptions::default();
    let first = compile(&c, &src, &o);
    assert!(!first.from_cache);
    let entry = fs::read_dir(c.dir())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".cudyn"))
        .unwrap()
        .path();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    fs::File::options().write(true).open(&entry).unwrap().set_modified(old).unwrap();
    // set_modified moved the entry's ctime: the memory tier lets the disk answer once...
    let disk = compile(&c, &src, &o);
    assert!(disk.from_cache);
    fs::File::options().write(true).open(&entry).unwrap().set_modified(old).unwrap();
    let disk = compile(&c, &src, &o);
    assert!(disk.from_cache && fs::metadata(&entry).unwrap().modified().unwrap() > old, "a disk hit refreshes mtime");
    // ...and then answers itself: the entry is not touched.
    let before = c.stats().hits;
    let t = Instant::now();
    let mem = compile(&c, &src, &o);
    let took = t.elapsed();
    assert!(mem.from_cache && mem.code == first.code && mem.log == first.log);
    assert_eq!(c.stats().hits, before + 1);
    let m1 = fs::metadata(&entry).unwrap().modified().unwrap();
    let mem2 = compile(&c, &src, &o);
    assert!(mem2.from_cache);
    assert_eq!(fs::metadata(&entry).unwrap().modified().unwrap(), m1, "answered from memory, not the entry");
    eprintln!("memory-tier hit: {:.1} us (debug build)", took.as_secs_f64() * 1e6);
    // A header change is seen at once.
    fs::write(&h, header(0x54321)).unwrap();
    let changed = compile(&c, &src, &o);
    assert!(!changed.from_cache && has_value(&changed.code, 0x54321));
    // So is a removed entry.
    fs::write(&h, header(0x12345)).unwrap();
    for e in fs::read_dir(c.dir()).unwrap().flatten() {
        fs::remove_file(e.path()).unwrap();
    }
    assert!(!compile(&c, &src, &o).from_cache);
}

/// Dependency manifests let a later process check the headers by `stat` alone; they never
/// make a process serve stale code, and a damaged one only costs a full scan.
#[test]
fn manifests_across_processes_are_never_stale() {
    const TEST: &str = "manifests_across_processes_are_never_stale";
    if child_mode().as_deref() == Some("compile") {
        let var = |k: &str| std::env::var(k).unwrap();
        let c = Cache::at(var("M_CACHE"), 64 << 20).unwrap();
        let src = kernel_including(&format!("#include \"{}\"", var("M_HEADER")));
        let r = compile(&c, &src, &CompileOptions::default());
        assert_eq!(r.from_cache, var("M_HIT") == "1", "from_cache");
        assert!(has_value(&r.code, u32::from_str_radix(&var("M_VALUE"), 16).unwrap()), "wrong code");
        return;
    }
    require_project_env();
    let td = TempDir::new("manifest");
    let (dir, h) = (td.join("cache"), td.join("dep.h"));
    let run = |hit: bool, value: u32| {
        let v = format!("{value:x}");
        let env = [
            ("M_CACHE", dir.to_str().unwrap()),
            ("M_HEADER", h.to_str().unwrap()),
            ("M_HIT", if hit { "1" } else { "0" }),
            ("M_VALUE", v.as_str()),
        ];
        expect_child_ok(spawn_child(TEST, "compile", &env), "manifest child");
    };
    let manifests = || {
        fs::read_dir(&dir)
            .map(|rd| rd.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".cudyn-deps")).count())
            .unwrap_or(0)
    };
    fs::write(&h, header(0x12345)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    run(false, 0x12345);
    assert_eq!(manifests(), 1, "a compile with header lookups leaves a manifest");
    run(true, 0x12345);
    fs::write(&h, header(0x54321)).unwrap();
    run(false, 0x54321);
    run(true, 0x54321);
    // A damaged manifest is a miss of the manifest only: the scan still finds the entry.
    for e in fs::read_dir(&dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".cudyn-deps") {
            fs::write(e.path(), b"garbage").unwrap();
        }
    }
    run(true, 0x54321);
}

/// A name absent from an include folder is checked through the folder's listing (one `stat`
/// for all of its absent names): a header that appears there is seen at once, by the memory
/// tier and by a new `Cache` alike; a dangling link there is checked by itself, since its
/// target can appear elsewhere without the folder changing.
#[test]
fn absent_names_are_checked_through_their_folder_never_stale() {
    require_project_env();
    let td = TempDir::new("listing");
    let c = cache_in(&td);
    let (first, second, elsewhere) = (td.join("first"), td.join("second"), td.join("elsewhere"));
    for d in [&first, &second, &elsewhere] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(second.join("v.h"), header(0x11111)).unwrap();
    fs::write(second.join("w.h"), header(0x22222)).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("w.h"), first.join("w.h")).unwrap();
    // Old enough that the folders' stamps are trusted.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let o = CompileOptions {
        options: vec![format!("-I{}", first.display()), format!("-I{}", second.display())],
        ..Default::default()
    };
    // The link first: `first` must be old enough for its listing to be trusted.
    for (name, old, new, appear) in
        [("w.h", 0x22222, 0x44444, elsewhere.join("w.h")), ("v.h", 0x11111, 0x33333, first.join("v.h"))]
    {
        let src = kernel_including(&format!("#include \"{name}\""));
        let a = compile(&c, &src, &o);
        assert!(has_value(&a.code, old) && !a.from_cache, "{name}");
        let hits = c.stats().hits;
        let again = compile(&c, &src, &o);
        assert!(again.from_cache && has_value(&again.code, old), "{name}");
        assert_eq!(c.stats().hits, hits + 1, "{name}: the memory tier answers");
        // The shadowing header appears: in `first` itself, or behind the dangling link.
        fs::write(&appear, header(new)).unwrap();
        let b = compile(&c, &src, &o);
        assert!(!b.from_cache && has_value(&b.code, new), "{name}: stale after {} appeared", appear.display());
        fs::remove_file(&appear).unwrap();
        // A new Cache (no memory tier: the manifest's checks) sees it go again.
        let c2 = Cache::at(c.dir(), 64 << 20).unwrap();
        let back = compile(&c2, &src, &o);
        assert!(has_value(&back.code, old), "{name}: stale after {} went", appear.display());
    }
}

/// The same header text in two folders, compiled through -I from each: where the output names
/// the path a header was found at, the second compile is NVRTC's own output for that folder,
/// never the first folder's served from the cache — `__FILE__` in the header (also pasted
/// together with `##`), `assert` (which expands to `__FILE__`), line information (`-lineinfo`:
/// every file by its absolute path). Where nothing names a path, the key stays the same in
/// both folders (a bundle made in one hits in another).
#[test]
fn output_that_names_a_headers_path_is_never_served_from_another_folder() {
    require_project_env();
    let ptx = |d: &Path, extra: &[&str]| {
        let mut options = vec![format!("-I{}", d.display()), "-arch=compute_90".to_string()];
        options.extend(extra.iter().map(|s| s.to_string()));
        CompileOptions { options, target: Some(cudyn::image::CodeKind::Ptx), ..Default::default() }
    };
    let src = "#include <x.h>\nextern \"C\" __global__ void k(char* out) { out[0] = where(threadIdx.x); }\n";
    let cases: [(&str, &str, &[&str]); 5] = [
        ("__FILE__", "__device__ const char f[] = __FILE__;\n__device__ char where(int i) { return f[i]; }\n", &[]),
        (
            "__FILE__ pasted",
            "#define CAT(a, b) a##b\n__device__ const char f[] = CAT(__FI, LE__);\n__device__ char where(int i) { return f[i]; }\n",
            &[],
        ),
        ("assert", "#include <cuda/std/cassert>\n__device__ char where(int i) { assert(i < 64); return (char)i; }\n", &[]),
        ("-lineinfo", "__device__ __noinline__ char where(int i) { return (char)(i * 2); }\n", &["-lineinfo"]),
        ("nothing", "__device__ __noinline__ char where(int i) { return (char)(i * 3); }\n", &[]),
    ];
    for (what, body, extra) in cases {
        let td = TempDir::new("where");
        let c = cache_in(&td);
        let (a, b) = (td.join("alpha_folder_one"), td.join("bravo_folder_two"));
        for d in [&a, &b] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("x.h"), format!("#pragma once\n{body}")).unwrap();
        }
        let first = compile(&c, src, &ptx(&a, extra));
        assert!(!first.from_cache);
        let fresh = compile_with(src, "inc.cu", &ptx(&b, extra), None)
            .unwrap_or_else(|f| panic!("{what}: {}\n{}", f.error.message, f.log));
        let second = compile(&c, src, &ptx(&b, extra));
        if what == "nothing" {
            assert!(second.from_cache, "{what}: a key that holds no path hits in another folder");
            assert_eq!(second.code, fresh.code, "{what}: and the code is the same");
        } else {
            assert_ne!(first.code, fresh.code, "{what}: NVRTC's output names the folder");
            assert!(!second.from_cache, "{what}: served from the other folder's entry");
            assert_eq!(second.code, fresh.code, "{what}");
        }
    }
}
