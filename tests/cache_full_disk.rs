//! The cache folder where NVRTC cannot write its time trace (cudyn asks for one, in the cache
//! folder, on every miss under NVRTC 13, to check its include scan): a full filesystem or a file
//! size limit crashed the process inside libnvrtc (SIGSEGV). cudyn now asks for no trace
//! without room for it; each compile runs in a child, so a crash shows as a signal.
//!
//! Run with `source scripts/env.sh && cargo test --test cache_full_disk` (as root for the full
//! filesystem).

mod common;

use common::*;
use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

const CUB: &str = r#"
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const int* in, int* out) {
    using Reduce = cub::BlockReduce<int, 128>;
    __shared__ typename Reduce::TempStorage tmp;
    int v = in[blockIdx.x * 128 + threadIdx.x];
    int s = Reduce(tmp).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = s + VAL;
}
"#;

const SMALL: &str = "#include <cuda/std/cstdint>\nextern \"C\" __global__ void k(int* o) { o[0] = VAL; }\n";

struct Mount(std::path::PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A tmpfs of `size` mounted at `at` (unmounted on drop); None where mounting is refused (a
/// container without the capability).
fn mount_tmpfs(at: &Path, size: &str) -> Option<Mount> {
    fs::create_dir_all(at).unwrap();
    let st =
        Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(at).status().ok()?;
    st.success().then(|| Mount(at.to_path_buf()))
}

/// Fill the filesystem at `dir` leaving about `leave` bytes free.
fn fill(dir: &Path, leave: u64) {
    let mut f = fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![1u8; 4096];
    while free(dir) > leave + 4096 {
        if f.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = f.sync_all();
}

fn free(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
    s.f_bavail as u64 * s.f_frsize as u64
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn spawn_child_cmd(test: &str, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.env_remove("LD_LIBRARY_PATH");
    c.args(["--exact", test, "--nocapture", "--test-threads=1"]).env("CUDYN_TEST_CHILD", "c");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn child() {
    let dir = std::env::var("R_CACHE").unwrap();
    let src = if std::env::var("R_SRC").unwrap() == "cub" { CUB } else { SMALL };
    let cached = std::env::var("R_CACHED").unwrap() == "1";
    let c = match Cache::at(&dir, 64 << 20) {
        Ok(c) => c,
        Err(e) => {
            println!("RESULT Cache::at refused: {e}");
            return;
        }
    };
    let opts = CompileOptions { options: vec!["-DVAL=4242".into()], ..Default::default() };
    let r = compile_with(src, "k.cu", &opts, cached.then_some(&c));
    match &r {
        Ok(x) => println!("RESULT Ok from_cache={} code={} folder={:?}", x.from_cache, x.code.len(), listing(c.dir())),
        Err(f) => println!("RESULT Err {:?}: {}", f.error.status, f.error.message),
    }
    assert!(r.is_ok());
}

/// A file size limit below what NVRTC's trace needs (SIGXFSZ ignored, so writes fail with
/// EFBIG): each compile through the cache succeeds (NVRTC was asked for its trace anyway, failed
/// to write it and crashed the process in libnvrtc). No root needed.
#[test]
fn a_file_size_limit_never_crashes_a_compile() {
    const TEST: &str = "a_file_size_limit_never_crashes_a_compile";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    let td = TempDir::new("fsize");
    let mut bad = Vec::new();
    for src in ["small", "cub"] {
        let cache = td.join(&format!("cache-{src}"));
        Cache::at(&cache, 64 << 20).unwrap();
        let mut cmd = spawn_child_cmd(TEST, &[("R_CACHE", cache.to_str().unwrap()), ("R_SRC", src), ("R_CACHED", "1")]);
        use std::os::unix::process::CommandExt;
        // SAFETY: async-signal-safe calls only, between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit { rlim_cur: 4096, rlim_max: libc::RLIM_INFINITY };
                libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        if !out.status.success() {
            bad.push(format!("{src}: {}\n{}", out.status, String::from_utf8_lossy(&out.stdout)));
        }
    }
    assert!(bad.is_empty(), "compiles that did not succeed: {bad:#?}");
}

/// The cache folder on a full filesystem (a 4 MiB tmpfs filled to 0, 16 KiB and 1 MiB free):
/// compiles through the cache succeed, as they do without one. Needs root (to mount); says so
/// and returns otherwise.
#[test]
fn a_full_filesystem_never_crashes_a_compile() {
    const TEST: &str = "a_full_filesystem_never_crashes_a_compile";
    if child_mode().is_some() {
        return child();
    }
    require_project_env();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: mounting a small filesystem needs root; run as root to test a full one");
        return;
    }
    let td = TempDir::new("enospc");
    let mut bad = Vec::new();
    let mut i = 0;
    for src in ["small", "cub"] {
        for leave in [0u64, 16 << 10, 1 << 20] {
            i += 1;
            let mnt = td.join(&format!("m{i}"));
            let Some(_m) = mount_tmpfs(&mnt, "4m") else {
                eprintln!("note: this machine lets no tmpfs be mounted here; nothing tested");
                return;
            };
            let cache = mnt.join("cache");
            Cache::at(&cache, 64 << 20).unwrap();
            fill(&mnt, leave);
            let out =
                spawn_child(TEST, "c", &[("R_CACHE", cache.to_str().unwrap()), ("R_SRC", src), ("R_CACHED", "1")])
                    .wait_with_output()
                    .unwrap();
            if !out.status.success() {
                bad.push(format!("{src}, {leave} bytes free: {}", out.status));
            }
        }
    }
    assert!(bad.is_empty(), "compiles that did not succeed: {bad:#?}");
}
