//! The on-disk compile cache in front of NVRTC, end to end through `compile_with(.., Some(&cache))`:
//! hits and misses, what goes into the key, damaged / truncated / empty / symlinked entries,
//! threads and processes sharing one entry, and `CUDYN_CACHE=0`.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_compile`.

mod common;

use common::*;
use cudyn::cache::{Cache, Key, ENTRY_HEADER_LEN};
use cudyn::compile::{compile_with, CompileOptions, Compiled};
use cudyn::image::CodeKind;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

/// The templated axpy that includes "my.h" (tests/common).
const SRC: &str = AXPY_WITH_HEADER;

fn opts() -> CompileOptions {
    CompileOptions {
        options: strings(&["-DUNUSED=1"]),
        headers: vec![("my.h".into(), MY_H.into()), ("unused.h".into(), "// nothing\n".into())],
        name_expressions: strings(&["axpy<float>"]),
        target: None,
    }
}

fn cache_in(td: &TempDir) -> Cache {
    Cache::at(td.join("cache"), 64 << 20).expect("a cache in a fresh temp dir")
}

fn compile(cache: &Cache, src: &str, name: &str, o: &CompileOptions) -> Compiled {
    compile_with(src, name, o, Some(cache))
        .unwrap_or_else(|f| panic!("{:?}: {}\n{}", f.error.status, f.error.message, f.log))
}

/// The entry files (`<64 hex>.cudyn`) in `dir`, sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cudyn")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".cudyn-tmp."))
                .collect()
        })
        .unwrap_or_default()
}

/// The only entry in the cache.
fn only_entry(c: &Cache) -> PathBuf {
    let e = entries(c.dir());
    assert_eq!(e.len(), 1, "expected one entry: {e:?}");
    e.into_iter().next().unwrap()
}

fn key_of(entry: &Path) -> Key {
    let stem = entry.file_stem().unwrap().to_str().unwrap();
    assert_eq!(stem.len(), 64, "{stem}");
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(&stem[2 * i..2 * i + 2], 16).unwrap();
    }
    let key = Key(k);
    assert_eq!(key.hex(), stem);
    key
}

#[test]
fn miss_then_hit() {
    let td = TempDir::new("hit");
    let c = cache_in(&td);
    let first = compile(&c, SRC, "axpy.cu", &opts());
    assert!(!first.from_cache);
    assert_eq!(first.kind, CodeKind::Cubin);
    let entry = only_entry(&c);
    assert!(entry.file_name().unwrap().to_str().unwrap().ends_with(".cudyn"));
    assert_eq!(
        fs::symlink_metadata(&entry).unwrap().len() as usize,
        ENTRY_HEADER_LEN
            + 4
            + 4
            + first.log.len()
            + 4
            + 4
            + "axpy<float>".len()
            + 4
            + first.lowered[0].1.len()
            + first.code.len()
    );

    let second = compile(&c, SRC, "axpy.cu", &opts());
    assert!(second.from_cache);
    assert_eq!(second.code, first.code);
    assert_eq!(second.kind, first.kind);
    assert_eq!(second.sm, first.sm);
    assert_eq!(second.lowered, first.lowered);
    assert!(second.lowered[0].1.starts_with("_Z4axpyIfE"), "{:?}", second.lowered);
    // The hit gives back the log of the compile that made the entry (issue 14: warnings survive).
    assert_eq!(second.log, first.log);
    let s = c.stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));

    // Another Cache on the same folder (another run of the program) hits too.
    let again = Cache::at(c.dir(), 64 << 20).unwrap();
    let third = compile(&again, SRC, "axpy.cu", &opts());
    assert!(third.from_cache);
    assert_eq!(third.code, first.code);
    assert_eq!(entries(c.dir()).len(), 1);
    assert!(temp_files(c.dir()).is_empty());
}

#[test]
fn every_input_is_in_the_key() {
    let td = TempDir::new("key");
    let c = cache_in(&td);
    let base = opts();
    let first = compile(&c, SRC, "axpy.cu", &base);
    assert!(!first.from_cache);

    let mut variants: Vec<(&str, String, &str, CompileOptions)> = Vec::new();
    let v = |what, src: &str, name, o| (what, src.to_string(), name, o);
    variants.push(v(
        "source",
        &SRC.replace("int n)", "int count)").replace("< n)", "< count)"),
        "axpy.cu",
        base.clone(),
    ));
    variants.push(v("program name", SRC, "other.cu", base.clone()));
    variants.push(v(
        "header contents",
        SRC,
        "axpy.cu",
        CompileOptions {
            headers: vec![("my.h".into(), MY_H.replace("v + v", "2 * v")), base.headers[1].clone()],
            ..base.clone()
        },
    ));
    variants.push(v(
        "header name",
        SRC,
        "axpy.cu",
        CompileOptions {
            headers: vec![base.headers[0].clone(), ("unused2.h".into(), "// nothing\n".into())],
            ..base.clone()
        },
    ));
    variants.push(v("option", SRC, "axpy.cu", CompileOptions { options: strings(&["-DUNUSED=2"]), ..base.clone() }));
    variants.push(v(
        "architecture",
        SRC,
        "axpy.cu",
        CompileOptions { options: strings(&["-DUNUSED=1", "-arch=sm_80"]), ..base.clone() },
    ));
    variants.push(v(
        "name expression",
        SRC,
        "axpy.cu",
        CompileOptions { name_expressions: strings(&["axpy<double>"]), ..base.clone() },
    ));
    variants.push(v(
        "more name expressions",
        SRC,
        "axpy.cu",
        CompileOptions { name_expressions: strings(&["axpy<float>", "axpy<double>"]), ..base.clone() },
    ));
    variants.push(v("target PTX", SRC, "axpy.cu", CompileOptions { target: Some(CodeKind::Ptx), ..base.clone() }));
    variants.push(v("target LTO-IR", SRC, "axpy.cu", CompileOptions { target: Some(CodeKind::LtoIr), ..base.clone() }));

    for (i, (what, src, name, o)) in variants.iter().enumerate() {
        let r = compile(&c, src, name, o);
        assert!(!r.from_cache, "a change of {what} was served from the cache");
        assert_eq!(entries(c.dir()).len(), i + 2, "a change of {what} did not make a new entry");
        if let Some(t) = o.target {
            assert_eq!(r.kind, t, "{what}");
        }
        // ...and is a hit the second time.
        let again = compile(&c, src, name, o);
        assert!(again.from_cache, "{what}");
        assert_eq!(again.code, r.code, "{what}");
        assert_eq!(again.kind, r.kind, "{what}");
    }
    // The original is still a hit, with its own code.
    let back = compile(&c, SRC, "axpy.cu", &base);
    assert!(back.from_cache);
    assert_eq!(back.code, first.code);
    // Spelling the default target out is the same compilation: the same entry.
    let explicit = compile(&c, SRC, "axpy.cu", &CompileOptions { target: Some(CodeKind::Cubin), ..base });
    assert!(explicit.from_cache);
    assert_eq!(entries(c.dir()).len(), variants.len() + 1);
}

/// Damage the only entry with `damage`, then check the next compile recompiles (not served from
/// the damaged entry), puts back an entry identical to the original, and the one after hits.
fn damaged_entry_is_recompiled(what: &str, damage: impl FnOnce(&Path)) {
    let td = TempDir::new("damage");
    let c = cache_in(&td);
    let first = compile(&c, SRC, "axpy.cu", &opts());
    let entry = only_entry(&c);
    let original = fs::read(&entry).unwrap();
    damage(&entry);
    assert_ne!(fs::read(&entry).ok(), Some(original.clone()), "{what}: the damage did nothing");

    let r = compile(&c, SRC, "axpy.cu", &opts());
    assert!(!r.from_cache, "{what}: served from a damaged entry");
    assert_eq!(r.code, first.code, "{what}");
    assert_eq!(r.lowered, first.lowered, "{what}");
    assert_eq!(only_entry(&c), entry, "{what}");
    assert_eq!(fs::read(&entry).unwrap(), original, "{what}: the entry was not replaced by a good one");
    let hit = compile(&c, SRC, "axpy.cu", &opts());
    assert!(hit.from_cache, "{what}: no hit after the entry was replaced");
    assert_eq!(hit.code, first.code, "{what}");
    assert!(temp_files(c.dir()).is_empty(), "{what}");
}

#[test]
fn corrupted_entry_is_recompiled_and_replaced() {
    // A flipped byte in the code (the payload's end), in the lowered names (just after the
    // header's fields), and in the header's checksum.
    for (what, at) in
        [("code byte", None), ("lowered-name byte", Some(ENTRY_HEADER_LEN + 20)), ("checksum byte", Some(60))]
    {
        damaged_entry_is_recompiled(what, |p| {
            let mut b = fs::read(p).unwrap();
            let i = at.unwrap_or(b.len() - 1);
            b[i] ^= 0x40;
            fs::write(p, b).unwrap();
        });
    }
}

#[test]
fn truncated_and_empty_entries_are_recompiled() {
    damaged_entry_is_recompiled("truncated in the payload", |p| {
        let b = fs::read(p).unwrap();
        fs::write(p, &b[..b.len() / 2]).unwrap();
    });
    damaged_entry_is_recompiled("truncated in the header", |p| {
        let b = fs::read(p).unwrap();
        fs::write(p, &b[..40]).unwrap();
    });
    damaged_entry_is_recompiled("zero length", |p| fs::write(p, b"").unwrap());
    damaged_entry_is_recompiled("padded", |p| {
        let mut b = fs::read(p).unwrap();
        b.extend_from_slice(b"trailing junk");
        fs::write(p, b).unwrap();
    });
}

#[test]
fn well_formed_entry_with_a_bad_payload_is_recompiled() {
    // Entries that pass the cache's own checks (written by Cache::put under the right key) but
    // whose payload is not a compilation of the asked kind.
    let ptx_payload = {
        let mut p = Vec::new();
        p.extend_from_slice(&90u32.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(b"//\n.version 9.0\n.target sm_90\n.address_size 64\n\0");
        p
    };
    for (what, payload) in [
        ("garbage payload", b"\xff\xff\xff\xff garbage".to_vec()),
        ("a lowered-name count past the end", [90u32.to_le_bytes(), 1000u32.to_le_bytes()].concat()),
        ("PTX under a cubin key", ptx_payload),
    ] {
        damaged_entry_is_recompiled(what, |p| {
            let c = Cache::at(p.parent().unwrap(), 64 << 20).unwrap();
            c.put(&key_of(p), &payload).unwrap();
            assert_eq!(c.get(&key_of(p)), Some(payload.clone()), "{what}: the entry is well formed");
        });
    }
}

#[test]
fn symlinked_entry_is_not_followed() {
    let td = TempDir::new("symlink");
    let c = cache_in(&td);
    let first = compile(&c, SRC, "axpy.cu", &opts());
    let entry = only_entry(&c);
    let good = fs::read(&entry).unwrap();

    // A symlink to a perfectly valid copy of the entry: following it would be a hit.
    let outside = td.join("valid-copy.cudyn");
    fs::write(&outside, &good).unwrap();
    fs::remove_file(&entry).unwrap();
    symlink(&outside, &entry).unwrap();
    let r = compile(&c, SRC, "axpy.cu", &opts());
    assert!(!r.from_cache, "the cache followed a symlink");
    assert_eq!(r.code, first.code);
    assert_eq!(fs::read(&outside).unwrap(), good, "the symlink's target changed");
    assert!(fs::symlink_metadata(&entry).unwrap().file_type().is_file(), "the entry is not a regular file again");
    assert_eq!(fs::read(&entry).unwrap(), good);
    assert!(compile(&c, SRC, "axpy.cu", &opts()).from_cache);

    // A symlink to some other file of the user's: never read, never written through.
    let precious = td.join("precious.txt");
    fs::write(&precious, b"do not touch").unwrap();
    fs::remove_file(&entry).unwrap();
    symlink(&precious, &entry).unwrap();
    let r = compile(&c, SRC, "axpy.cu", &opts());
    assert!(!r.from_cache);
    assert_eq!(fs::read(&precious).unwrap(), b"do not touch");
    assert!(fs::symlink_metadata(&entry).unwrap().file_type().is_file());
    assert!(compile(&c, SRC, "axpy.cu", &opts()).from_cache);

    // A dangling symlink: nothing is created at its target.
    fs::remove_file(&entry).unwrap();
    symlink(td.join("nowhere"), &entry).unwrap();
    assert!(!compile(&c, SRC, "axpy.cu", &opts()).from_cache);
    assert!(!td.join("nowhere").exists(), "a file was created through a dangling symlink");
    assert!(compile(&c, SRC, "axpy.cu", &opts()).from_cache);
}

#[test]
fn eight_threads_make_one_entry() {
    let td = TempDir::new("threads");
    let c = Arc::new(cache_in(&td));
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (c, b) = (c.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                compile(&c, SRC, "axpy.cu", &opts())
            })
        })
        .collect();
    let results: Vec<Compiled> = handles.into_iter().map(|h| h.join().expect("a compiling thread panicked")).collect();
    for r in &results {
        assert_eq!(r.code, results[0].code);
        assert_eq!(r.lowered, results[0].lowered);
    }
    assert!(results.iter().any(|r| !r.from_cache), "someone compiled");
    let entry = only_entry(&c);
    assert!(temp_files(c.dir()).is_empty(), "{:?}", temp_files(c.dir()));
    let hit = compile(&c, SRC, "axpy.cu", &opts());
    assert!(hit.from_cache);
    assert_eq!(hit.code, results[0].code);
    assert_eq!(only_entry(&c), entry);
}

#[test]
fn four_processes_make_one_entry() {
    const TEST: &str = "four_processes_make_one_entry";
    if child_mode().as_deref() == Some("cache-process") {
        let dir = PathBuf::from(std::env::var_os("CUDYN_TEST_CACHE").unwrap());
        let out = PathBuf::from(std::env::var_os("CUDYN_TEST_OUT").unwrap());
        let go = dir.parent().unwrap().join("go");
        let c = Cache::at(&dir, 64 << 20).unwrap();
        // Start together (the parent creates `go` once all four are running).
        let t0 = std::time::Instant::now();
        while !go.exists() {
            assert!(t0.elapsed().as_secs() < 30, "no go signal");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let r = compile(&c, SRC, "axpy.cu", &opts());
        fs::write(&out, &r.code).unwrap();
        return;
    }
    let td = TempDir::new("procs");
    let dir = td.join("cache");
    Cache::at(&dir, 64 << 20).unwrap();
    let children: Vec<_> = (0..4)
        .map(|i| {
            let out = td.join(&format!("out{i}"));
            spawn_child(
                TEST,
                "cache-process",
                &[("CUDYN_TEST_CACHE", dir.to_str().unwrap()), ("CUDYN_TEST_OUT", out.to_str().unwrap())],
            )
        })
        .collect();
    fs::write(td.join("go"), b"").unwrap();
    for ch in children {
        expect_child_ok(ch, "cache-process");
    }
    let c = Cache::at(&dir, 64 << 20).unwrap();
    only_entry(&c);
    assert!(temp_files(&dir).is_empty(), "{:?}", temp_files(&dir));
    let hit = compile(&c, SRC, "axpy.cu", &opts());
    assert!(hit.from_cache);
    for i in 0..4 {
        assert_eq!(fs::read(td.join(&format!("out{i}"))).unwrap(), hit.code, "process {i} got other code");
    }
}

#[test]
fn cache_from_the_environment() {
    const TEST: &str = "cache_from_the_environment";
    use cudyn::capi::cache::{cudyn_cache_dir, cudyn_cache_info, cudyn_cache_stats, cudyn_cache_status};
    let last = || cudyn::error::last_error_message();
    match child_mode().as_deref() {
        // Each way the cache can be off keeps its reason (issue 14): status + message.
        Some("reason-bad-size") => {
            assert_eq!(cudyn_cache_status() as u32, 1, "INVALID_ARGUMENT");
            assert!(last().contains("CUDYN_CACHE_MAX_BYTES") && last().contains("lots"), "{}", last());
            return;
        }
        Some("reason-file") => {
            assert_eq!(cudyn_cache_status() as u32, 14, "IO");
            assert!(last().contains("not a directory"), "{}", last());
            let mut s = cudyn_cache_info { enabled: 7, ..Default::default() };
            // SAFETY: a valid output struct.
            assert_eq!(unsafe { cudyn_cache_stats(&mut s) } as u32, 0);
            assert_eq!(s.enabled, 0);
            return;
        }
        Some("reason-readonly") => {
            assert_eq!(cudyn_cache_status() as u32, 14, "IO");
            assert!(last().contains("cannot be written"), "{}", last());
            return;
        }
        Some("suffix") => {
            assert_eq!(cudyn_cache_status() as u32, 0, "{}", last());
            assert_eq!(cudyn::compile::global_cache().unwrap().max_bytes(), 256 << 20);
            return;
        }
        Some("cache-off") => {
            let dir = PathBuf::from(std::env::var_os("CUDYN_CACHE_DIR").unwrap());
            assert_eq!(cudyn_cache_status() as u32, 10, "NOT_FOUND");
            assert!(last().contains("CUDYN_CACHE=0"), "{}", last());
            let e = Cache::from_env().expect_err("CUDYN_CACHE=0 must turn the cache off");
            assert!(e.message.contains("CUDYN_CACHE"), "{e}");
            assert!(cudyn::compile::global_cache().is_none());
            assert!(cudyn_cache_dir().is_null());
            for _ in 0..2 {
                let r =
                    cudyn::compile::compile(SRC, "axpy.cu", &opts()).unwrap_or_else(|f| panic!("{}", f.error.message));
                assert!(!r.from_cache);
            }
            let mut s = cudyn_cache_info { enabled: 7, ..Default::default() };
            // SAFETY: a valid output struct.
            assert_eq!(unsafe { cudyn_cache_stats(&mut s) } as u32, 0);
            assert_eq!((s.enabled, s.hits, s.misses, s.entries), (0, 0, 0, 0));
            assert!(entries(&dir).is_empty(), "a disabled cache wrote {:?}", entries(&dir));
            return;
        }
        Some("cache-on") => {
            let dir = PathBuf::from(std::env::var_os("CUDYN_CACHE_DIR").unwrap());
            let c = cudyn::compile::global_cache().expect("the cache is on");
            assert_eq!(c.dir(), dir.as_path());
            // SAFETY: a static C string from cudyn.
            let cdir = unsafe { std::ffi::CStr::from_ptr(cudyn_cache_dir()) };
            assert_eq!(cdir.to_str().unwrap(), dir.to_str().unwrap());
            let a = cudyn::compile::compile(SRC, "axpy.cu", &opts()).unwrap_or_else(|f| panic!("{}", f.error.message));
            let b = cudyn::compile::compile(SRC, "axpy.cu", &opts()).unwrap_or_else(|f| panic!("{}", f.error.message));
            assert!(!a.from_cache && b.from_cache);
            assert_eq!(a.code, b.code);
            assert_eq!(entries(&dir).len(), 1);
            let mut s = cudyn_cache_info::default();
            // SAFETY: a valid output struct.
            assert_eq!(unsafe { cudyn_cache_stats(&mut s) } as u32, 0);
            assert_eq!((s.enabled, s.hits, s.misses, s.entries), (1, 1, 1, 1));
            return;
        }
        _ => {}
    }
    let td = TempDir::new("env");
    let (off, on) = (td.join("off"), td.join("on"));
    let a = spawn_child(TEST, "cache-off", &[("CUDYN_CACHE", "0"), ("CUDYN_CACHE_DIR", off.to_str().unwrap())]);
    let b = spawn_child(TEST, "cache-on", &[("CUDYN_CACHE", "1"), ("CUDYN_CACHE_DIR", on.to_str().unwrap())]);
    expect_child_ok(a, "cache-off");
    expect_child_ok(b, "cache-on");
    assert!(entries(&off).is_empty());
    assert_eq!(entries(&on).len(), 1);

    let dir = td.join("ok");
    let d = dir.to_str().unwrap();
    expect_child_ok(
        spawn_child(TEST, "reason-bad-size", &[("CUDYN_CACHE_DIR", d), ("CUDYN_CACHE_MAX_BYTES", "lots")]),
        "bad size",
    );
    expect_child_ok(
        spawn_child(TEST, "suffix", &[("CUDYN_CACHE_DIR", d), ("CUDYN_CACHE_MAX_BYTES", "256M")]),
        "suffix",
    );
    fs::write(td.join("a-file"), b"x").unwrap();
    expect_child_ok(
        spawn_child(TEST, "reason-file", &[("CUDYN_CACHE_DIR", td.join("a-file").to_str().unwrap())]),
        "file",
    );
    // A read-only folder: as root (which writes anyway) the child runs as nobody, from a copy
    // of this binary in a folder that user can reach (the checkout may be in a private folder).
    let shared = TempDir::reachable_by_others("env-ro");
    let ro = shared.join("ro");
    fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o500)).unwrap();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let exe = if root { exe_copy_in(shared.path()) } else { std::env::current_exe().unwrap() };
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "reason-readonly")
        .env("CUDYN_CACHE_DIR", &ro)
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(shared.path());
    if root {
        use std::os::unix::process::CommandExt;
        std::os::unix::fs::chown(&ro, Some(65534), Some(65534)).unwrap();
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().expect("running the read-only case");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
}
