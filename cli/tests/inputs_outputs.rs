//! The command reads and writes like a well-behaved Unix tool: files by the library's rules
//! (regular files only, a size cap, no blocking on a FIFO), `-` for standard input and
//! output, a closed pipe ends it quietly, a full disk is a failure, and usage errors exit 2
//! (issue 24, item 2).

mod common;

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Runs `cudyn ARGS` and waits at most `limit`; panics (killing it) if it takes longer.
fn within(d: &Dir, args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = cmd(d, args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("cudyn {args:?} ran for more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn only_regular_files_within_the_cap_are_read_and_nothing_blocks() {
    let d = Dir::new("inputs");
    // A FIFO with no writer: opening it must not wait for one.
    let fifo = d.path("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A sparse file over the 1 GiB cap: refused from its size, not read (2 GiB would take
    // seconds and 2 GiB of memory).
    let sparse = d.path("sparse.cubin");
    std::fs::File::create(&sparse).unwrap().set_len(2 << 30).unwrap();
    for (arg, why) in [
        ("/dev/zero", "/dev/zero is a device: an image file must be a regular file"),
        ("fifo", "fifo is a FIFO: an image file must be a regular file"),
        (".", ". is a directory"),
        ("sparse.cubin", "over the 1073741824-byte limit"),
    ] {
        let o = within(&d, &["inspect", arg], Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(1), "{arg}: {}", show(&o));
        assert!(text(&o.stderr).contains(why), "{arg}: {}", show(&o));
        // The same rules for compile and link inputs.
        let o = within(&d, &["compile", arg, "-o", "x.cubin"], Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(1), "compile {arg}: {}", show(&o));
        assert!(text(&o.stderr).contains(why), "compile {arg}: {}", show(&o));
        let o = within(&d, &["link", arg, "-o", "x.cubin"], Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(1), "link {arg}: {}", show(&o));
        assert!(text(&o.stderr).contains(why), "link {arg}: {}", show(&o));
    }
    assert!(!d.path("x.cubin").exists());
}

#[test]
fn dash_is_standard_input_and_output() {
    require_toolchain();
    let d = Dir::new("dash");
    let cub = std::fs::read(cubin(&d)).unwrap();
    // inspect -
    let mut child =
        cmd(&d, &["inspect", "-", "--sm", "90"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&cub).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).starts_with(&format!("(standard input): cubin, {} bytes", cub.len())), "{}", show(&o));
    assert!(text(&o.stdout).contains("kernel vec_add: 4 parameters"), "{}", show(&o));
    // compile - -o -: the code on standard output, the report on standard error.
    let mut child = cmd(&d, &["compile", "-", "-o", "-", "--target", "ptx", "--arch", "compute_80"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(KERNEL.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains(".target sm_80") && text(&o.stdout).contains(".entry vec_add"), "{}", show(&o));
    assert!(text(&o.stderr).contains("(standard output): PTX for compute_80"), "{}", show(&o));
    // link - -o -
    let mut child = cmd(&d, &["link", "-", "-o", "-", "--allow-no-kernels"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"not device code").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    require_toolchain();
    let d = Dir::new("pipe");
    cubin(&d);
    // Enough output to fill the pipe several times over; the reader takes one line and goes.
    let mut args = vec!["inspect", "--sm", "90"];
    args.extend(std::iter::repeat_n("k.cubin", 400));
    let mut child = cmd(&d, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = [0u8; 64];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(text(&first).starts_with("k.cubin: cubin"));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stderr.is_empty(), "said something on a closed pipe: {}", show(&o));
    // JSON too.
    args.push("--json");
    let mut child = cmd(&d, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(o.stderr.is_empty(), "{}", show(&o));
}

#[test]
fn a_full_disk_is_a_failure_and_leaves_no_half_written_output() {
    require_toolchain();
    let d = Dir::new("full");
    cubin(&d);
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = cmd(&d, &["inspect", "k.cubin", "--sm", "90"]).stdout(full).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("cannot write to standard output: no space left on device"), "{}", show(&o));
    // A compile whose output cannot be written: exit 1, the old file untouched, no temporary left.
    std::fs::write(d.path("old.cubin"), b"old").unwrap();
    std::fs::create_dir(d.path("ro")).unwrap();
    let o = cudyn(&d, &["compile", "k.cu", "-o", "ro/"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("cannot write ro/: it is a directory"), "{}", show(&o));
    let o = cudyn(&d, &["compile", "k.cu", "-o", "no-such-dir/k.cubin"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("cannot write no-such-dir/k.cubin: no such file or directory"), "{}", show(&o));
    // A device is written into as it is.
    let o = cudyn(&d, &["compile", "k.cu", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // A file is replaced whole.
    let o = cudyn(&d, &["compile", "k.cu", "-o", "old.cubin"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(std::fs::read(d.path("old.cubin")).unwrap().starts_with(b"\x7fELF"));
    let left: Vec<_> = std::fs::read_dir(&d.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().contains(".tmp")), "{left:?}");
}

#[test]
fn usage_errors_exit_2_before_doing_anything() {
    let d = Dir::new("usage");
    for args in [
        &["inspect", "--sm", "abc", "x"][..],
        &["inspect", "-", "-"],
        &["inspect"],
        &["compile", "k.cu", "-o", "x", "--arch", "abc"],
        &["compile", "k.cu", "-o", "-", "--json"],
        &["compile", "k.cu"],
        &["link", "a", "-o", "x", "--arch", "sm_"],
        &["link", "-", "-", "-o", "x"],
        &["link", "a", "-o", "-", "--json"],
        &["no-such-command"],
        &["doctor", "--need", "gpus"],
        &["completions", "tcsh"],
    ] {
        let o = cudyn(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        assert!(text(&o.stderr).starts_with("error: "), "{args:?}: {}", show(&o));
        assert!(o.stdout.is_empty(), "{args:?}: {}", show(&o));
    }
    assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 0, "a usage error did something");
}
