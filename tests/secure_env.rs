//! A setuid program trusts nothing of its caller's environment: with AT_SECURE set, cudyn
//! ignores CUDYN_LIB*, CUDYN_CACHE*, CUDA_PATH/CUDA_HOME and PYTHONPATH-derived folders (as
//! secure_getenv does), so a planted library is never opened and the cache is off.
//!
//! The secure run needs a program the kernel marks AT_SECURE: as root, a setuid-root copy of
//! this test binary run as nobody; as another user who is in a group besides their own, a
//! setgid copy (the effective group then differs from the real one). The copy lies in a folder
//! every user can reach, whatever folder the checkout is in. A user with neither cannot make
//! such a program: the test says so, and checks the non-secure side.

mod common;

use common::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A group of ours other than `egid` (from getgroups), if any.
fn supplementary_group(egid: libc::gid_t) -> Option<u32> {
    let mut groups = vec![0 as libc::gid_t; 256];
    // SAFETY: the buffer holds 256 gids.
    let n = unsafe { libc::getgroups(256, groups.as_mut_ptr()) };
    groups.truncate(n.max(0) as usize);
    groups.into_iter().find(|&g| g != egid)
}

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
        let td = std::env::var("CUDA_PATH").unwrap();
        if let Err(e) = cudyn::cuda::nvrtc::nvrtc() {
            assert!(e.message.contains("setuid") && !e.message.contains("planted"), "{}", e.message);
            // Not even looked at through LD_LIBRARY_PATH (which names the planted folder).
            assert!(!e.message.contains(&td), "{}", e.message);
        }
        let _ = cudyn::cuda::runtime::runtime();
        println!("secure-child-done");
        return;
    }
    let td = TempDir::reachable_by_others("setuid");
    let mark = td.join("mark");
    let planted = build_planted(td.path(), &mark);
    // The same library under the sonames, where LD_LIBRARY_PATH (and CUDA_PATH) lead.
    for so in ["libnvrtc.so.13", "libcudart.so.13", "lib64/libnvrtc.so.13"] {
        fs::create_dir_all(td.join(so).parent().unwrap()).unwrap();
        fs::copy(&planted, td.join(so)).unwrap();
    }
    // A copy of this test binary that runs AT_SECURE: setuid root run as nobody (as root), or
    // setgid to a supplementary group of ours (as another user).
    // SAFETY: geteuid, getegid cannot fail.
    let (root, egid) = unsafe { (libc::geteuid() == 0, libc::getegid()) };
    let group = if root { None } else { supplementary_group(egid) };
    if root || group.is_some() {
        let exe = exe_copy_in(td.path());
        if root {
            std::os::unix::fs::chown(&exe, Some(0), Some(0)).unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o4755)).unwrap();
        } else {
            std::os::unix::fs::chown(&exe, None, group).unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o2755)).unwrap();
        }
        let p = planted.to_str().unwrap();
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(&exe);
        cmd.args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "secure")
            .env("PLANTED", p)
            .env("CUDYN_LIBNVRTC", p)
            .env("CUDYN_LIBCUDART", p)
            .env("CUDYN_CACHE_DIR", td.join("cache"))
            .env("CUDA_PATH", td.path())
            .env("PYTHONPATH", td.path())
            .env("LD_LIBRARY_PATH", td.path())
            .current_dir(td.path());
        if root {
            cmd.uid(65534).gid(65534);
        }
        let out = cmd.output().expect("running the secure copy of the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("secure-child-done"),
            "setuid/setgid child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!mark.exists(), "the planted library was loaded in the secure process");
        assert!(!td.join("cache").exists(), "the secure process made the cache folder it was told to");
    } else {
        eprintln!(
            "note: not root and in no group but our own: no AT_SECURE program can be made, so only the \
             non-secure side is checked"
        );
    }
    let p = planted.to_str().unwrap();

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
