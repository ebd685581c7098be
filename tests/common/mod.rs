//! Helpers shared by the NVRTC / nvJitLink / cache integration tests (CPU only: no GPU needed).
#![allow(dead_code)]

pub mod standin;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// A templated kernel that includes an in-memory header, "my.h" (`MY_H`): for tests of
/// headers, name expressions and the cache key.
pub const AXPY_WITH_HEADER: &str = r#"
#include "my.h"
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = my::twice(a) * x[i] + y[i];
}
"#;

/// The header `AXPY_WITH_HEADER` includes.
pub const MY_H: &str =
    "#pragma once\nnamespace my { template <typename T> __device__ T twice(T v) { return v + v; } }\n";

/// Environment variable that turns a re-run of this test binary into a child of one test.
pub const CHILD_ENV: &str = "CUDYN_TEST_CHILD";

/// A fresh folder under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), what)
    }

    /// A fresh folder under `base`.
    pub fn new_in(base: &Path, what: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = base.join(format!("cudyn-it-{}-{what}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    /// A fresh folder (mode 0755) that every user can reach, for a test whose child runs as
    /// another user: under the system temp dir when every folder above it lets others pass
    /// (a private TMPDIR, like the 0700 folder `mktemp -d` makes for a checkout, does not),
    /// else under /tmp, /var/tmp or /dev/shm. Fails, saying so, when none does.
    pub fn reachable_by_others(what: &str) -> TempDir {
        use std::os::unix::fs::PermissionsExt;
        let others_pass = |p: &Path| {
            p.ancestors().all(|a| std::fs::metadata(a).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0))
        };
        let bases = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into(), "/dev/shm".into()];
        let base = bases.iter().find(|b| others_pass(b)).unwrap_or_else(|| {
            panic!("no folder other users can reach among {bases:?}: this test runs a child as another user")
        });
        let t = TempDir::new_in(base, what);
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        t
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A copy of this test binary in `dir` (mode 0755), for a child run as another user: the
/// binary itself may lie where only its owner can reach it (a checkout in a 0700 folder).
pub fn exe_copy_in(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let exe = dir.join("test-binary-copy");
    std::fs::copy(std::env::current_exe().expect("current_exe"), &exe).expect("copying the test binary");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// Whether `needle` occurs in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Like `contains`, but the match must be a whole NUL-terminated string (as names are in an ELF
/// string table): preceded by a NUL and followed by one.
pub fn has_elf_string(hay: &[u8], name: &str) -> bool {
    let mut pat = vec![0u8];
    pat.extend_from_slice(name.as_bytes());
    pat.push(0);
    contains(hay, &pat)
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The child-mode selector of this process, when it was spawned by `run_child`.
pub fn child_mode() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Run this test binary again, only test `test` in it, with `CHILD_ENV=mode` and `env` set.
/// LD_LIBRARY_PATH is removed from the child's environment (cargo's entries are not needed by
/// a test binary, which links cudyn statically).
pub fn spawn_child(test: &str, mode: &str, env: &[(&str, &str)]) -> std::process::Child {
    let exe = std::env::current_exe().expect("current_exe");
    let mut c = Command::new(exe);
    c.env_remove("LD_LIBRARY_PATH");
    c.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(CHILD_ENV, mode);
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    c.spawn().expect("spawning the test binary as a child")
}

/// Wait for a child from `spawn_child` and fail with its output unless it succeeded and really
/// ran the test (libtest says "1 passed").
pub fn expect_child_ok(child: std::process::Child, what: &str) -> Output {
    let out = child.wait_with_output().expect("waiting for the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child '{what}' failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    out
}

/// The project's test environment (scripts/env.sh) finds NVRTC and nvJitLink in the pip wheels
/// through PYTHONPATH, with LD_LIBRARY_PATH unset. `cargo test` itself then sets
/// LD_LIBRARY_PATH to its own folders (the target dir and the Rust toolchain's libraries), so
/// only those entries are accepted here; anything else means the tests were not run the
/// project's way and could pass for the wrong reason. Panics with how to run them.
pub fn require_project_env() {
    let Some(v) = std::env::var_os("LD_LIBRARY_PATH") else { return };
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test binary> -> target
    let target_dir = exe.ancestors().nth(3).map(Path::to_path_buf);
    let cargos_own = |p: &Path| {
        target_dir.as_ref().is_some_and(|t| p.starts_with(t))
            || p.components().any(|c| c.as_os_str() == "rustlib" || c.as_os_str() == "toolchains")
    };
    let foreign: Vec<PathBuf> =
        std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty() && !cargos_own(p)).collect();
    assert!(
        foreign.is_empty(),
        "LD_LIBRARY_PATH is set to {foreign:?}: these tests check that cudyn finds NVRTC and nvJitLink in \
         the wheel folder by itself, with LD_LIBRARY_PATH unset. Run them via scripts/env.sh: \
         `source scripts/env.sh && cargo test`"
    );
}

/// What a child of `spawn_child` asserts first: LD_LIBRARY_PATH is really unset.
pub fn require_ld_library_path_unset() {
    if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
        panic!(
            "LD_LIBRARY_PATH is set ({v:?}); run the tests via scripts/env.sh: `source scripts/env.sh && cargo test`"
        );
    }
}

/// `bin/<name>` of the project's CUDA toolkit (where build.rs found it: scripts/bootstrap.sh
/// installs it, scripts/test.sh and .ci run the tests with it). A test that calls this needs
/// the tool and fails, saying how to get it, when it is missing: there is no switch to skip.
pub fn cuda_tool(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CUDYN_CUDA_ROOT"));
    let p = root.join("bin").join(name);
    assert!(
        p.is_file(),
        "{} not found: these tests need the project's CUDA toolkit (run scripts/bootstrap.sh, or build with \
         CUDYN_CUDA_ROOT set to a CUDA toolkit)",
        p.display()
    );
    p
}

/// Writes `source` to `src`, compiles it with nvcc `args` into `out` and returns the output's bytes.
pub fn nvcc(src: &Path, source: &str, out: &Path, args: &[&str]) -> Vec<u8> {
    std::fs::write(src, source).unwrap_or_else(|e| panic!("writing {}: {e}", src.display()));
    let o = Command::new(cuda_tool("nvcc"))
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(src)
        .output()
        .unwrap_or_else(|e| panic!("running nvcc: {e}"));
    assert!(o.status.success(), "nvcc {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(out).unwrap_or_else(|e| panic!("reading {}: {e}", out.display()))
}
