//! The library search refuses what an attacker or a typo could hand it: relative explicit
//! paths, files in folders others can write, files owned by someone else, files that are not
//! the library (closed again, reported as *_NOT_FOUND with the reason); an empty variable is
//! unset; and the not-found message says what to install.
//!
//! Each case runs in a child process (the search runs once per process).

mod common;

use common::*;
use cudyn::Status;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const TEST: &str = "search_cases";

/// A library whose constructor writes `mark`; `symbols` is extra C code (exported functions).
fn build_lib(dir: &Path, name: &str, mark: &Path, symbols: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    fs::write(
        &c,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void ctor(void) {{\n\
             FILE* f = fopen(\"{}\", \"w\"); if (f) {{ fputs(\"loaded\", f); fclose(f); }} }}\n{symbols}\n",
            mark.display()
        ),
    )
    .unwrap();
    let so = dir.join(name);
    let st = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&c).status().expect("cc");
    assert!(st.success());
    so
}

fn mapped(name: &str) -> bool {
    fs::read_to_string("/proc/self/maps").unwrap().contains(name)
}

/// Runs one case in a child; the child's checks are in `child_case`.
fn run(case: &str, env: &[(&str, &str)], cwd: &Path) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", TEST, "--nocapture", "--test-threads=1"]).env(CHILD_ENV, case).env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.current_dir(cwd).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "case {case} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn child_case(case: &str) {
    let nv = cudyn::cuda::nvrtc::nvrtc();
    let mark = PathBuf::from(std::env::var("MARK").unwrap_or_default());
    match case {
        "relative" => {
            let e = nv.err().expect("a relative CUDYN_LIBNVRTC is refused");
            assert_eq!(e.status, Status::NvrtcNotFound);
            assert!(e.message.contains("relative"), "{}", e.message);
            assert!(!mark.exists(), "the file in the working directory was loaded");
        }
        "empty" => {
            let n =
                nv.unwrap_or_else(|e| panic!("an empty CUDYN_LIBNVRTC is unset, so the search goes on: {}", e.message));
            assert!(n.lib.origin.contains("nvidia/cu13/lib"), "{}", n.lib.origin);
        }
        "not-the-library" | "no-version" => {
            let e = nv.err().expect("a file that is not NVRTC is refused");
            assert_eq!(e.status, Status::NvrtcNotFound, "{}", e.message);
            let why = if case == "no-version" { "no nvrtcVersion" } else { "not NVRTC" };
            assert!(e.message.contains(why), "{}", e.message);
            assert!(mark.exists(), "the explicit file was opened (its constructor ran)");
            let file = std::env::var("CUDYN_LIBNVRTC").unwrap();
            let name = Path::new(&file).file_name().unwrap().to_str().unwrap().to_string();
            assert!(!mapped(&name), "the refused library stays loaded");
        }
        "untrusted" => {
            let e = nv.err().expect("nothing trustworthy to load");
            let why = std::env::var("WHY").unwrap();
            assert!(e.message.contains(&why), "{}", e.message);
            assert!(!mark.exists(), "an untrusted candidate was loaded");
        }
        "missing" => {
            // Only where the machine has no NVRTC the loader finds by itself.
            if let Err(e) = nv {
                assert_eq!(e.status, Status::NvrtcNotFound);
                for want in ["nvidia-cuda-nvrtc ", "nvidia-cuda-nvrtc-cu12", "CUDA_PATH"] {
                    assert!(e.message.contains(want), "'{want}' missing from: {}", e.message);
                }
            }
        }
        other => panic!("unknown case {other}"),
    }
}

#[test]
fn search_cases() {
    if let Some(case) = child_mode() {
        return child_case(&case);
    }
    require_project_env();
    let td = TempDir::new("search");
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mark = td.join("mark");
    let m = mark.to_str().unwrap();
    let reset = || {
        let _ = fs::remove_file(&mark);
    };
    let pythonpath = std::env::var("PYTHONPATH").unwrap();

    build_lib(td.path(), "librel.so", &mark, "");
    run("relative", &[("CUDYN_LIBNVRTC", "librel.so"), ("MARK", m)], td.path());
    reset();
    run("empty", &[("CUDYN_LIBNVRTC", ""), ("PYTHONPATH", &pythonpath)], td.path());

    let other = build_lib(td.path(), "libother.so", &mark, "int unrelated(void) { return 1; }");
    run("not-the-library", &[("CUDYN_LIBNVRTC", other.to_str().unwrap()), ("MARK", m)], td.path());
    reset();
    let fake = build_lib(td.path(), "libfakenvrtc.so", &mark, "int nvrtcCreateProgram(void) { return 0; }");
    run("no-version", &[("CUDYN_LIBNVRTC", fake.to_str().unwrap()), ("MARK", m)], td.path());
    reset();

    // A PYTHONPATH folder others can write supplies nvidia/cu13/lib/libnvrtc.so.13.
    let site = td.join("site");
    let lib = site.join("nvidia/cu13/lib");
    fs::create_dir_all(&lib).unwrap();
    build_lib(&lib, "libnvrtc.so.13", &mark, "int nvrtcCreateProgram(void) { return 0; }");
    fs::set_permissions(&lib, fs::Permissions::from_mode(0o777)).unwrap();
    let site_s = site.to_str().unwrap();
    run("untrusted", &[("PYTHONPATH", site_s), ("MARK", m), ("WHY", "writable by others")], td.path());
    fs::set_permissions(&lib, fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(lib.join("libnvrtc.so.13"), Some(65534), Some(65534)).unwrap();
        run("untrusted", &[("PYTHONPATH", site_s), ("MARK", m), ("WHY", "owned by uid 65534")], td.path());
    }
    assert!(!mark.exists());

    let empty = td.join("empty-site");
    fs::create_dir(&empty).unwrap();
    run("missing", &[("PYTHONPATH", empty.to_str().unwrap()), ("HOME", empty.to_str().unwrap())], td.path());
}
