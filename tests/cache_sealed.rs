//! Header-heavy hits, never stale: the headers of an installed toolkit (beside the NVRTC in
//! use, files only root can write) are checked by their folders' stamps, one `stat` per folder,
//! and a repeated compile in one process by change notices; the caller's own headers by their
//! own stamps. A header added, removed, replaced or renamed in a toolkit folder is seen by a new
//! process and by a running one; an edit in place is seen by a running one (notices report it;
//! a folder's stamp does not, which is why only files no one but root can write are sealed).
//!
//! Run with `source scripts/env.sh && cargo test --test cache_sealed`.

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SRC: &str = "#include <sealed_a.h>\n#include <sealed_b.h>\nextern \"C\" __global__ void k(int* out) { out[0] = A; out[1] = B; }\n";

fn header(name: &str, v: u32) -> String {
    format!("#pragma once\n#define {name} {v:#x}\n")
}

fn compile(c: &Cache) -> Compiled {
    compile_with(
        SRC,
        "sealed.cu",
        &CompileOptions { options: vec!["-arch=sm_90".into()], ..Default::default() },
        Some(c),
    )
    .unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

fn has(code: &[u8], v: u32) -> bool {
    contains(code, &v.to_le_bytes())
}

/// Replaces `path` the way installers do: a new file renamed over it.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

/// Old enough that folder stamps are trusted (a change in the same tick could hide in them).
fn settle() {
    std::thread::sleep(Duration::from_millis(2100));
}

fn var(k: &str) -> String {
    std::env::var(k).unwrap()
}

fn manifest_checks(dir: &Path) -> Vec<cudyn::cache::Check> {
    let m = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".cudyn-deps"))
        .unwrap();
    let bytes = fs::read(m.path()).unwrap();
    let (checks, _) = cudyn::cache::decode_checks(&bytes[cudyn::cache::ENTRY_HEADER_LEN + 32..]).unwrap();
    checks
}

/// The child runs under the toolkit copy (CUDYN_LIBNVRTC): `S_STEP` says what to do and expect.
fn child() {
    let inc = PathBuf::from(var("S_INCLUDE"));
    let c = Cache::at(var("S_CACHE"), 64 << 20).unwrap();
    match var("S_STEP").as_str() {
        "running" => {
            let first = compile(&c);
            assert!(!first.from_cache && has(&first.code, 0x11111) && has(&first.code, 0x22222));
            // The toolkit's headers are checked as folders, not one by one.
            let checks = manifest_checks(c.dir());
            assert!(checks.iter().any(|k| k.is_folder() && k.path() == inc), "{checks:?}");
            assert!(
                !checks.iter().any(|k| k.path().ends_with("sealed_a.h")),
                "a sealed header checked by itself: {checks:?}"
            );
            // Repeats: the memory tier, by notices.
            for _ in 0..3 {
                assert!(compile(&c).from_cache);
            }
            let hits = c.stats().hits;
            // A header replaced (a new file renamed over it): the next compile sees it.
            replace(&inc.join("sealed_a.h"), &header("A", 0x33333));
            let r = compile(&c);
            assert!(
                !r.from_cache && has(&r.code, 0x33333),
                "a replaced toolkit header was served stale by the memory tier"
            );
            assert_eq!(c.stats().hits, hits);
            settle();
            assert!(compile(&c).from_cache);
            assert!(compile(&c).from_cache);
            // Edited in place (same inode): notices report it to a running process.
            let ino = fs::metadata(inc.join("sealed_b.h")).unwrap().ino();
            fs::write(inc.join("sealed_b.h"), header("B", 0x44444)).unwrap();
            assert_eq!(fs::metadata(inc.join("sealed_b.h")).unwrap().ino(), ino);
            let r = compile(&c);
            assert!(!r.from_cache && has(&r.code, 0x44444), "an in-place edit was served stale by the memory tier");
            // Settled again: hits, and a manifest a new process can trust.
            settle();
            assert!(compile(&c).from_cache);
            assert!(compile(&c).from_cache);
        }
        "fresh" => {
            let r = compile(&c);
            assert_eq!(r.from_cache, var("S_HIT") == "1", "from_cache");
            assert!(has(&r.code, u32::from_str_radix(&var("S_VALUE"), 16).unwrap()), "wrong code");
        }
        "link-running" => {
            // sealed_a.h is a symlink into S_OTHER: its target replaced there is seen at once.
            let other = PathBuf::from(var("S_OTHER"));
            assert!(has(&compile(&c).code, 0x77777));
            assert!(compile(&c).from_cache);
            replace(&other.join("sealed_a.h"), &header("A", 0x88888));
            settle();
            let r = compile(&c);
            assert!(!r.from_cache && has(&r.code, 0x88888), "a symlinked header's new target served stale");
        }
        s => panic!("{s}"),
    }
}

#[test]
fn toolkit_folders_are_checked_whole_and_never_stale() {
    const TEST: &str = "toolkit_folders_are_checked_whole_and_never_stale";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    if unsafe_not_root() {
        eprintln!("note: the sealed-folder rule needs headers owned by root; run as root to test it");
        return;
    }
    let td = TempDir::new("sealed");
    // A toolkit of our own: the wheel's NVRTC copied, with an include folder beside it.
    let nvrtc = toolkit_copy(&td);
    let inc = td.join("toolkit/include");
    fs::create_dir_all(&inc).unwrap();
    fs::write(inc.join("sealed_a.h"), header("A", 0x11111)).unwrap();
    fs::write(inc.join("sealed_b.h"), header("B", 0x22222)).unwrap();
    settle();
    let cache = td.join("cache");
    let run = |step: &str, hit: bool, value: u32| {
        let v = format!("{value:x}");
        let env = [
            ("CUDYN_LIBNVRTC", nvrtc.to_str().unwrap()),
            ("S_INCLUDE", inc.to_str().unwrap()),
            ("S_CACHE", cache.to_str().unwrap()),
            ("S_STEP", step),
            ("S_HIT", if hit { "1" } else { "0" }),
            ("S_VALUE", v.as_str()),
        ];
        expect_child_ok(spawn_child(TEST, step, &env), step);
    };
    run("running", false, 0);
    // New processes: the manifest's folder stamps hold, a hit...
    run("fresh", true, 0x44444);
    // ...a header replaced, removed or added in the toolkit folder: each seen.
    replace(&inc.join("sealed_a.h"), &header("A", 0x55555));
    run("fresh", false, 0x55555);
    settle();
    run("fresh", true, 0x55555);
    fs::remove_file(inc.join("sealed_a.h")).unwrap();
    fs::create_dir(inc.join("sub")).unwrap();
    fs::write(inc.join("sealed_a.h"), header("A", 0x66666)).unwrap();
    run("fresh", false, 0x66666);
}

/// A toolkit of our own under `td`: the wheel's NVRTC (and its builtins) copied into
/// `toolkit/lib`, for an include folder `toolkit/include` beside it. Returns the NVRTC copy.
fn toolkit_copy(td: &TempDir) -> PathBuf {
    let wheel = fs::canonicalize(
        cudyn::cache::toolchain::locate(cudyn::test_hooks::search::Component::Nvrtc)
            .expect("the test environment's NVRTC"),
    )
    .unwrap();
    let lib = td.join("toolkit/lib");
    fs::create_dir_all(&lib).unwrap();
    for e in fs::read_dir(wheel.parent().unwrap()).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n == wheel.file_name().unwrap().to_string_lossy() || n.starts_with("libnvrtc-builtins.so.") {
            fs::copy(e.path(), lib.join(&n)).unwrap();
        }
    }
    lib.join(wheel.file_name().unwrap())
}

/// Whether this process runs as someone other than root (the toolkit copy is then not sealed).
fn unsafe_not_root() -> bool {
    fs::metadata("/proc/self").map(|m| m.uid() != 0).unwrap_or(true)
}

/// A toolkit header that is a symlink to a file in another folder (alternatives, a distribution's
/// `../share/...`): its folder's stamp does not show a change to the target, so the link is
/// checked by the file it reaches. The target replaced (renamed over, as installers do) is seen
/// by a new process and by a running one (both were served the old code).
#[test]
fn a_symlinked_toolkit_header_is_checked_through_its_link() {
    const TEST: &str = "a_symlinked_toolkit_header_is_checked_through_its_link";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    if unsafe_not_root() {
        eprintln!("note: the sealed-folder rule needs headers owned by root; run as root to test it");
        return;
    }
    let td = TempDir::new("sealed-link");
    let nvrtc = toolkit_copy(&td);
    let inc = td.join("toolkit/include");
    let other = td.join("other");
    fs::create_dir_all(&inc).unwrap();
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("sealed_a.h"), header("A", 0x11111)).unwrap();
    std::os::unix::fs::symlink(other.join("sealed_a.h"), inc.join("sealed_a.h")).unwrap();
    fs::write(inc.join("sealed_b.h"), header("B", 0x22222)).unwrap();
    settle();
    let cache = td.join("cache");
    let run = |step: &str, hit: bool, value: u32| {
        let v = format!("{value:x}");
        let env = [
            ("CUDYN_LIBNVRTC", nvrtc.to_str().unwrap()),
            ("S_INCLUDE", inc.to_str().unwrap()),
            ("S_OTHER", other.to_str().unwrap()),
            ("S_CACHE", cache.to_str().unwrap()),
            ("S_STEP", step),
            ("S_HIT", if hit { "1" } else { "0" }),
            ("S_VALUE", v.as_str()),
        ];
        expect_child_ok(spawn_child(TEST, step, &env), step);
    };
    run("fresh", false, 0x11111);
    run("fresh", true, 0x11111);
    replace(&other.join("sealed_a.h"), &header("A", 0x22222));
    settle();
    run("fresh", false, 0x22222);
    replace(&other.join("sealed_a.h"), &header("A", 0x77777));
    settle();
    run("link-running", false, 0);
}
