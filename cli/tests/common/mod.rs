//! What the tests of the `cudyn` command share: a folder per test, running the command with
//! its own cache folder, reading what it printed, and a cubin made by the command itself.
#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

pub const KERNEL: &str = "struct pair { double a; char b; };\n\
    extern \"C\" __global__ void vec_add(const float *a, const float *b, float *c, int n) {\n\
      int i = threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n\
    extern \"C\" __global__ void mixed(char c, pair s, short h, double *p) { if (p) *p = s.a + c + h; }\n";

/// A fresh folder for one test (removed again when the test passes).
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Dir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "cudyn-cli-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `cudyn ARGS` with its own cache folder under `dir`.
pub fn cudyn(dir: &Dir, args: &[&str]) -> Output {
    cmd(dir, args).output().expect("running cudyn")
}

pub fn cmd(dir: &Dir, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cudyn"));
    c.args(args).current_dir(&dir.0).env("CUDYN_CACHE_DIR", dir.path("cache")).env_remove("CUDYN_CACHE");
    c
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn show(o: &Output) -> String {
    format!("status {:?}\nstdout:\n{}\nstderr:\n{}", o.status.code(), text(&o.stdout), text(&o.stderr))
}

pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", show(o)))
}

/// NVRTC and nvJitLink are there: the project's toolchain is on the environment.
pub fn require_toolchain() {
    assert!(
        std::env::var_os("CUDYN_CUDA_ROOT").is_some(),
        "run these tests after `source scripts/env.sh` (it points cudyn at the CUDA wheels)"
    );
}

/// Writes `source` to `name` in `dir` and compiles it with the command itself into `out`
/// (extra arguments after); returns the output's bytes.
pub fn compile(dir: &Dir, name: &str, source: &str, out: &str, args: &[&str]) -> Vec<u8> {
    std::fs::write(dir.path(name), source).unwrap();
    let mut a = vec!["compile", name, "-o", out];
    a.extend_from_slice(args);
    let o = cudyn(dir, &a);
    assert!(o.status.success(), "{}", show(&o));
    std::fs::read(dir.path(out)).unwrap()
}

/// Compile KERNEL for sm_90 with the command itself; returns the cubin's path.
pub fn cubin(dir: &Dir) -> PathBuf {
    compile(dir, "k.cu", KERNEL, "k.cubin", &["--arch", "sm_90"]);
    dir.path("k.cubin")
}

pub fn driver_present() -> bool {
    cudyn::diagnose::component(cudyn::diagnose::Component::Driver).path.is_some()
}
