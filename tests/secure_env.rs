//! A setuid program trusts nothing of its caller's environment: with AT_SECURE set, cudyn
//! ignores CUDYN_LIB*, CUDYN_CACHE*, CUDA_PATH/CUDA_HOME and PYTHONPATH-derived folders (as
//! secure_getenv does), so a planted library is never opened and the cache is off.
//!
//! The real run needs root: the test copies its own binary, makes it setuid root, and runs it
//! as nobody with a planted library named in every variable. Without root it says so and
//! checks only the non-secure side.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A shared library whose constructor leaves a mark: proof of whether it was ever loaded.
fn build_planted(dir: &Path, mark: &Path) -> std::path::PathBuf {
    let c = dir.join("planted.c");
    fs::write(
        &c,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {{\n\
             FILE* f = fopen(\"{}\", \"w\"); if (f) {{ fputs(\"loaded\", f); fclose(f); }} }}\n\
             int nvrtcCreateProgram(void) {{ return 0; }}\nint cudaRuntimeGetVersion(int* v) {{ *v = 99999; return 0; }}\n",
            mark.display()
        ),
    )
    .unwrap();
    let so = dir.join("libplanted.so");
    let st = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&c).status().expect("cc");
    assert!(st.success(), "building the planted library");
    so
}

#[test]
fn setuid_process_ignores_the_environment() {
    const TEST: &str = "setuid_process_ignores_the_environment";
    if child_mode().as_deref() == Some("secure") {
        assert!(cudyn::test_hooks::search::secure_process(), "AT_SECURE must be set in the setuid child");
        let planted = std::env::var("PLANTED").unwrap();
        for v in ["CUDYN_LIBNVRTC", "CUDYN_LIBCUDART", "CUDYN_CACHE_DIR", "CUDA_PATH", "PYTHONPATH"] {
            assert!(std::env::var_os(v).is_some(), "{v} reaches the child");
            assert!(cudyn::test_hooks::search::setting(v).is_none(), "{v} must be ignored");
        }
        for c in [cudyn::test_hooks::search::Component::Nvrtc, cudyn::test_hooks::search::Component::Runtime] {
            let cands = cudyn::test_hooks::search::candidates(c);
            assert!(!cands.iter().any(|x| x.contains(&planted) || x.contains("planted")), "{cands:?}");
        }
        let e = cudyn::compile::cache_status().expect_err("no cache in a setuid process");
        assert!(e.message.contains("setuid"), "{}", e.message);
        // NVRTC is searched for only where the system puts it; the message says why the
        // variables did not count.
        if let Err(e) = cudyn::cuda::nvrtc::nvrtc() {
            assert!(e.message.contains("setuid") && !e.message.contains("planted"), "{}", e.message);
        }
        let _ = cudyn::cuda::runtime::runtime();
        println!("secure-child-done");
        return;
    }
    let td = TempDir::new("setuid");
    let mark = td.join("mark");
    let planted = build_planted(td.path(), &mark);
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: not root; the setuid run is skipped");
        return;
    }
    // A setuid-root copy of this test binary in a folder nobody can reach.
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let exe = td.join("secure-probe");
    fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::os::unix::fs::chown(&exe, Some(0), Some(0)).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o4755)).unwrap();
    let p = planted.to_str().unwrap();
    use std::os::unix::process::CommandExt;
    let out = Command::new(&exe)
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "secure")
        .env("PLANTED", p)
        .env("CUDYN_LIBNVRTC", p)
        .env("CUDYN_LIBCUDART", p)
        .env("CUDYN_CACHE_DIR", td.join("cache"))
        .env("CUDA_PATH", td.path())
        .env("PYTHONPATH", td.path())
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(td.path())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("secure-child-done"),
        "setuid child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!mark.exists(), "the planted library was loaded in the setuid process");
    assert!(!td.join("cache").exists(), "the setuid process made the cache folder it was told to");

    // The same, not setuid: the planted library is what CUDYN_LIBNVRTC names, so it is opened
    // (its constructor runs), then refused as not NVRTC or too old: the variable counted.
    let plain = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "explicit_library_is_used_when_not_secure", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "plain")
        .env("CUDYN_LIBNVRTC", p)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(mark.exists(), "without AT_SECURE the explicit variable is honoured");
}

#[test]
fn explicit_library_is_used_when_not_secure() {
    if child_mode().as_deref() != Some("plain") {
        return;
    }
    assert!(!cudyn::test_hooks::search::secure_process());
    let e = cudyn::cuda::nvrtc::nvrtc().err().expect("the planted library is not a usable NVRTC");
    assert!(e.message.contains("planted"), "{}", e.message);
}
