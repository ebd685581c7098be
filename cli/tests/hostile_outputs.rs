//! Where the command writes, hostile places get an error, never a crash, a hang or a replaced
//! file: standard output that fails (a full device, a closed pipe) under `cudyn cache`; a
//! bundle exported over a device, a FIFO or through a symlink; a depfile that is a FIFO no one
//! reads; names as long as a file name may be; paths with control bytes, quoted.

mod common;

use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `c` to its end or for at most 60 s (then kills it: a hang fails the test), its
/// standard output read unless `c` sends it elsewhere already (`stdout_set`).
fn within(mut c: std::process::Command, stdout_set: bool) -> std::process::Output {
    if !stdout_set {
        c.stdout(Stdio::piped());
    }
    let mut child = c.stderr(Stdio::piped()).spawn().expect("running cudyn");
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("cudyn hung: {:?}", c);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn within_a_minute(c: std::process::Command) -> std::process::Output {
    within(c, false)
}

fn mkfifo(p: &std::path::Path) {
    assert!(std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo").success());
}

#[test]
fn cache_output_that_cannot_be_written_is_an_error_not_a_panic() {
    let d = Dir::new("cache-out");
    for args in [&["cache", "stats"][..], &["cache", "dir"], &["cache", "stats", "--json"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = within(
            {
                let mut c = cmd(&d, args);
                c.stdout(full);
                c
            },
            true,
        );
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", show(&o));
        assert!(!text(&o.stderr).contains("panicked"), "{args:?}: {}", show(&o));
        // A reader that went away: quietly, status 0.
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg(format!("{{ sleep 0.3; \"$0\" {}; }} | true", args.join(" ")))
            .arg(env!("CARGO_BIN_EXE_cudyn"));
        sh.current_dir(&d.0).env("CUDYN_CACHE_DIR", d.path("cache")).env_remove("CUDYN_CACHE");
        let o = within_a_minute(sh);
        assert!(!text(&o.stderr).contains("panicked"), "{args:?} into a closed pipe: {}", show(&o));
    }
}

#[test]
fn bundles_and_depfiles_go_only_where_a_file_may() {
    require_toolchain();
    let d = Dir::new("bundle-out");
    compile(&d, "k.cu", KERNEL, "k.cubin", &["--arch", "sm_90"]);
    // Over a device, and into a FIFO: refused, the device still a device. The device is one
    // made here (a null device, as root: a failure must never replace the system's /dev/null).
    mkfifo(&d.path("fifo"));
    let mut targets = vec![d.path("fifo").display().to_string()];
    let null = d.path("null");
    if std::process::Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().is_ok_and(|s| s.success()) {
        targets.push(null.display().to_string());
    }
    for target in targets {
        let o = within_a_minute(cmd(&d, &["cache", "export", &target]));
        assert_eq!(o.status.code(), Some(1), "{target}: {}", show(&o));
        assert!(text(&o.stderr).contains("other than a regular file"), "{target}: {}", show(&o));
        let ft = std::fs::metadata(&target).unwrap().file_type();
        use std::os::unix::fs::FileTypeExt;
        assert!(ft.is_char_device() || ft.is_fifo(), "{target} was replaced");
    }
    // Through a symlink to a file not there yet: the file is written, the link stays.
    std::os::unix::fs::symlink("real.bundle", d.path("link.bundle")).unwrap();
    let o = within_a_minute(cmd(&d, &["cache", "export", "link.bundle"]));
    assert!(o.status.success(), "{}", show(&o));
    assert!(std::fs::symlink_metadata(d.path("link.bundle")).unwrap().file_type().is_symlink());
    assert!(std::fs::metadata(d.path("real.bundle")).unwrap().is_file());
    // A depfile that is a FIFO no one reads: an error at once, not a wait.
    mkfifo(&d.path("deps"));
    let o =
        within_a_minute(cmd(&d, &["cache", "bundle", "k.cu", "-o", "b.bundle", "--arch", "90", "--depfile", "deps"]));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("no one reads"), "{}", show(&o));
    // Names as long as a file name may be: written (a temporary name made from them was not).
    let long = "a".repeat(245);
    let o = within_a_minute(cmd(&d, &["compile", "k.cu", "-o", &format!("{long}.cubin"), "--arch", "sm_90"]));
    assert!(o.status.success(), "{}", show(&o));
    let o = within_a_minute(cmd(&d, &["cache", "export", &format!("{long}.b")]));
    assert!(o.status.success(), "{}", show(&o));
    // A path with control bytes: quoted on the terminal.
    let o = within_a_minute(cmd(&d, &["cache", "export", "b\x1b[31mRED\nFAKE.bundle"]));
    assert!(o.status.success(), "{}", show(&o));
    assert!(!o.stdout.contains(&0x1b), "{}", show(&o));
    assert_eq!(text(&o.stdout).lines().count(), 1, "{}", show(&o));
}
