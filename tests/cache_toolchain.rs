//! A cache hit never loads NVRTC: the key names the NVRTC file the library search would open,
//! found without opening it (`cudyn::cache::toolchain`). Checked in fresh processes (the
//! located NVRTC is memoized per process): a hit maps no libnvrtc and gives the same code; a
//! miss loads NVRTC and stores; the key names NVRTC by its build (GNU build ID), so the same
//! build elsewhere hits and another build misses.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_toolchain`.

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;
use std::path::{Path, PathBuf};

fn source(value: u32) -> String {
    format!("#include \"v.h\"\nextern \"C\" __global__ void k(int* out) {{ out[threadIdx.x] = V + {value}; }}\n")
}

fn opts() -> CompileOptions {
    CompileOptions { headers: vec![("v.h".into(), "#define V 7\n".into())], ..Default::default() }
}

fn compile_in(dir: &Path, value: u32) -> Compiled {
    let c = Cache::at(dir, 64 << 20).expect("a cache folder");
    compile_with(&source(value), "t.cu", &opts(), Some(&c))
        .unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

/// Whether any NVRTC library (or its builtins) is mapped into this process.
fn nvrtc_mapped() -> bool {
    fs::read_to_string("/proc/self/maps").expect("/proc/self/maps").lines().any(|l| l.contains("libnvrtc"))
}

fn entry_count(dir: &Path) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    rd.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "cudyn")).count()
}

fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"))
}

/// The child's side of both tests: compile `WORK_VALUE` through the cache in `WORK_DIR`, check
/// whether it was a hit (`WORK_EXPECT`: "hit" or "miss") and whether NVRTC got loaded, and
/// write the code to `WORK_OUT`.
fn child() {
    require_ld_library_path_unset();
    assert!(!nvrtc_mapped(), "NVRTC mapped before any compile");
    let dir = PathBuf::from(env("WORK_DIR"));
    let before = entry_count(&dir);
    let r = compile_in(&dir, env("WORK_VALUE").parse().unwrap());
    match env("WORK_EXPECT").as_str() {
        "hit" => {
            assert!(r.from_cache, "expected a hit");
            assert!(!nvrtc_mapped(), "a cache hit loaded NVRTC");
            assert_eq!(entry_count(&dir), before);
        }
        _ => {
            assert!(!r.from_cache, "expected a miss");
            assert!(nvrtc_mapped(), "a miss compiled without NVRTC?");
            assert_eq!(entry_count(&dir), before + 1, "the miss was not stored");
        }
    }
    fs::write(env("WORK_OUT"), &r.code).unwrap();
}

fn run(test: &str, td: &TempDir, dir: &Path, value: u32, expect: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let out = td.join(&format!("out-{value}-{expect}"));
    let _ = fs::remove_file(&out);
    let v = value.to_string();
    let mut e: Vec<(&str, &str)> = vec![
        ("WORK_DIR", dir.to_str().unwrap()),
        ("WORK_VALUE", &v),
        ("WORK_EXPECT", expect),
        ("WORK_OUT", out.to_str().unwrap()),
    ];
    e.extend_from_slice(extra);
    expect_child_ok(spawn_child(test, "child", &e), &format!("{expect} of {value}"));
    fs::read(&out).unwrap()
}

#[test]
fn a_hit_in_a_fresh_process_does_not_load_nvrtc() {
    const TEST: &str = "a_hit_in_a_fresh_process_does_not_load_nvrtc";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    let td = TempDir::new("tc-hit");
    let dir = td.join("cache");
    // This process compiles first: NVRTC is loaded here, and the entry stored.
    let first = compile_in(&dir, 1);
    assert!(!first.from_cache);
    assert!(nvrtc_mapped());
    assert_eq!(entry_count(&dir), 1);
    // A fresh process: the same compile is a hit, the same code, and no NVRTC in it.
    assert_eq!(run(TEST, &td, &dir, 1, "hit", &[]), first.code);
    // A fresh process that misses loads NVRTC and stores under the located NVRTC's key...
    let second = run(TEST, &td, &dir, 2, "miss", &[]);
    // ... which the next fresh process hits without NVRTC, and which this one agrees with.
    assert_eq!(run(TEST, &td, &dir, 2, "hit", &[]), second);
    let here = compile_in(&dir, 2);
    assert!(here.from_cache);
    assert_eq!(here.code, second);
}

/// The wheel's NVRTC as the library search finds it here (the test environment has it through
/// PYTHONPATH), with its builtins beside it.
fn wheel_nvrtc() -> PathBuf {
    let nv = cudyn::cache::toolchain::locate(cudyn::test_hooks::search::Component::Nvrtc)
        .expect("the test environment's NVRTC");
    fs::canonicalize(nv).unwrap()
}

#[test]
fn the_key_follows_the_nvrtc_file() {
    const TEST: &str = "the_key_follows_the_nvrtc_file";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    let td = TempDir::new("tc-file");
    let lib = td.join("lib");
    fs::create_dir_all(&lib).unwrap();
    let wheel = wheel_nvrtc();
    let copy = lib.join(wheel.file_name().unwrap());
    fs::copy(&wheel, &copy).unwrap();
    for e in fs::read_dir(wheel.parent().unwrap()).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("libnvrtc-builtins.so.") {
            fs::copy(e.path(), lib.join(e.file_name())).unwrap();
        }
    }
    // The toolkit's headers beside the copy, as beside the wheel's NVRTC (the same folders by
    // another path): the copy is the same toolchain installed elsewhere.
    std::os::unix::fs::symlink(wheel.parent().unwrap().parent().unwrap().join("include"), td.join("include")).unwrap();
    let dir = td.join("cache");
    let explicit = [("CUDYN_LIBNVRTC", copy.to_str().unwrap())];
    let a = run(TEST, &td, &dir, 3, "miss", &explicit);
    assert_eq!(run(TEST, &td, &dir, 3, "hit", &explicit), a);
    // The same bytes under another name (the wheel's): the same build of NVRTC (its GNU build
    // ID), so the same key, wherever it is installed: a hit that loads no NVRTC.
    assert_eq!(run(TEST, &td, &dir, 3, "hit", &[]), a);
    // The copy touched (its modification time only): still that build, still a hit.
    let f = fs::OpenOptions::new().write(true).open(&copy).unwrap();
    let m = f.metadata().unwrap().modified().unwrap();
    f.set_modified(m + std::time::Duration::from_secs(10)).unwrap();
    drop(f);
    assert_eq!(run(TEST, &td, &dir, 3, "hit", &explicit), a);
    // Another build (the copy's build ID changed, as any rebuild changes it): another key, a
    // miss that loads NVRTC, then a hit.
    let id = cudyn::cache::toolchain::elf_build_id(&fs::File::open(&copy).unwrap()).expect("NVRTC has a build ID");
    let mut bytes = fs::read(&copy).unwrap();
    let at = bytes.windows(id.len()).position(|w| w == &id[..]).expect("the build ID's bytes in the file");
    bytes[at] ^= 0x5a;
    fs::write(&copy, &bytes).unwrap();
    drop(bytes);
    assert_ne!(cudyn::cache::toolchain::elf_build_id(&fs::File::open(&copy).unwrap()), Some(id));
    assert_eq!(run(TEST, &td, &dir, 3, "miss", &explicit), a);
    assert_eq!(run(TEST, &td, &dir, 3, "hit", &explicit), a);
    assert_eq!(entry_count(&dir), 2);
}
