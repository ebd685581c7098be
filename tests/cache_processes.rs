//! The cache store across processes and process limits: several processes reading and writing
//! one key, a write that hits the file size limit (a full disk), and a folder made read-only
//! under an unprivileged user. Each child is this test binary run again for one test
//! (`common::spawn_child`), never a `fork` of the threaded test harness.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_processes`.

mod common;

use std::fs;
use std::path::Path;

use common::{child_mode, expect_child_ok, spawn_child, TempDir};
use cudyn::cache::{Cache, Key, KeyBuilder};

/// The prefix of the cache's temporary files (`TMP_PREFIX` in src/cache/mod.rs).
const TMP_PREFIX: &str = ".cudyn-tmp.";

fn key(s: &str) -> Key {
    let mut b = KeyBuilder::new("cudyn.test");
    b.part("name", s.as_bytes());
    b.finish()
}

/// The names of the files in `dir`, in no particular order.
fn files(dir: &Path) -> impl Iterator<Item = String> {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
}

fn temp_files(dir: &Path) -> Vec<String> {
    files(dir).filter(|n| n.starts_with(TMP_PREFIX)).collect()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child without {name}"))
}

#[test]
fn concurrent_processes_same_key() {
    const TEST: &str = "concurrent_processes_same_key";
    let payload: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let k = key("shared");
    if child_mode().as_deref() == Some("worker") {
        let c = Cache::at(env("WORK_DIR"), 1 << 20).expect("opening the cache");
        for i in 0..50 {
            match c.get(&k) {
                Some(got) => assert!(got == payload, "read a torn or foreign entry"),
                None => c.put(&k, &payload).expect("put after a miss"),
            }
            if i % 4 == 0 {
                c.put(&k, &payload).expect("put");
            }
        }
        return;
    }
    let td = TempDir::new("procs");
    let dir = td.join("cache");
    let children: Vec<_> =
        (0..4).map(|_| spawn_child(TEST, "worker", &[("WORK_DIR", dir.to_str().unwrap())])).collect();
    for (i, child) in children.into_iter().enumerate() {
        expect_child_ok(child, &format!("worker {i}"));
    }
    let c = Cache::at(&dir, 1 << 20).unwrap();
    let entry = c.entry_path(&k).file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(files(c.dir()).collect::<Vec<_>>(), vec![entry], "one entry and nothing else (no temp file)");
    assert_eq!(c.get(&k), Some(payload));
}

#[test]
fn disk_full_put_leaves_no_temp_file() {
    const TEST: &str = "disk_full_put_leaves_no_temp_file";
    let k = key("big");
    if child_mode().as_deref() == Some("full") {
        let c = Cache::at(env("WORK_DIR"), 1 << 20).expect("opening the cache");
        // SAFETY: process-wide settings of this child process only; SIGXFSZ ignored so that
        // writes past the limit fail with EFBIG instead of killing it.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit { rlim_cur: 4096, rlim_max: 4096 };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0, "setrlimit");
        }
        let e = c.put(&k, &vec![7u8; 64 * 1024]).expect_err("a 64 KiB put under a 4 KiB file size limit");
        assert_eq!(e.raw_os_error(), Some(libc::EFBIG), "{e}");
        assert!(temp_files(c.dir()).is_empty(), "temp files left: {:?}", temp_files(c.dir()));
        assert!(!c.entry_path(&k).exists(), "a partial entry was left");
        // A small entry still fits.
        c.put(&k, b"small").expect("a small put under the limit");
        return;
    }
    let td = TempDir::new("diskfull");
    let c = Cache::at(td.join("cache"), 1 << 20).unwrap();
    expect_child_ok(spawn_child(TEST, "full", &[("WORK_DIR", c.dir().to_str().unwrap())]), "full disk");
    assert!(temp_files(c.dir()).is_empty());
    assert_eq!(c.get(&k), Some(b"small".to_vec()));
}

/// The read-only scenario, as an unprivileged user: Ok or a description.
fn readonly_scenario(base: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = base.join("ro");
    let c = Cache::at(&dir, 1 << 20).map_err(|e| format!("at: {e}"))?;
    let k = key("ro");
    c.put(&k, b"before").map_err(|e| format!("first put: {e}"))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).map_err(|e| e.to_string())?;
    if c.put(&k, b"after").is_ok() {
        return Err("put into 0500 dir succeeded".into());
    }
    if c.put(&key("other"), b"x").is_ok() {
        return Err("put of new key into 0500 dir succeeded".into());
    }
    if !temp_files(&dir).is_empty() {
        return Err(format!("temp files left: {:?}", temp_files(&dir)));
    }
    if c.get(&k).as_deref() != Some(&b"before"[..]) {
        return Err("old entry not readable".into());
    }
    Ok(())
}

#[test]
fn readonly_dir_put_fails_cleanly() {
    const TEST: &str = "readonly_dir_put_fails_cleanly";
    if child_mode().as_deref() == Some("unprivileged") {
        // SAFETY: plain credential syscalls; glibc applies them to every thread of the child.
        let dropped = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0 && libc::setgid(65534) == 0 && libc::setuid(65534) == 0
        };
        assert!(dropped, "root could not become uid 65534: {}", std::io::Error::last_os_error());
        readonly_scenario(Path::new(&env("WORK_DIR"))).unwrap();
        return;
    }
    // The child works in this folder as nobody: under a temp dir others can reach.
    let td = TempDir::reachable_by_others("readonly");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        readonly_scenario(td.path()).unwrap();
    } else {
        // Root ignores permission bits: run the scenario in a child that drops to an
        // unprivileged uid.
        std::os::unix::fs::chown(td.path(), Some(65534), Some(65534)).unwrap();
        let child = spawn_child(TEST, "unprivileged", &[("WORK_DIR", td.path().to_str().unwrap())]);
        expect_child_ok(child, "unprivileged");
        assert!(temp_files(&td.join("ro")).is_empty());
    }
    {
        use std::os::unix::fs::PermissionsExt;
        // So that the folder can be removed by a user who is not root.
        fs::set_permissions(td.join("ro"), fs::Permissions::from_mode(0o700)).unwrap();
    }
    // Any user: a cache whose directory became unusable after `at`.
    let c = Cache::at(td.join("cache"), 1 << 20).unwrap();
    fs::remove_dir(c.dir()).unwrap();
    fs::write(c.dir(), b"now a file").unwrap();
    assert!(c.put(&key("k"), b"payload").is_err());
    assert_eq!(fs::read(c.dir()).unwrap(), b"now a file");
    assert!(Cache::at(td.join("cache/sub"), 1 << 20).is_err(), "parent is a file");
}
