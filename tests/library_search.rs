//! The library search refuses what an attacker or a typo could hand it: relative explicit
//! paths, files in folders others (group included) can write, files owned by someone else,
//! files that are not the library (closed again, reported as *_NOT_FOUND with the reason); a
//! symlink flipped in a folder another user controls while the search runs; the working
//! directory, also through an empty `LD_LIBRARY_PATH` entry and for the libraries a library
//! needs; an empty variable is unset; a library the program loaded is shared, not loaded
//! twice; and the not-found message says what to install.
//!
//! Each case runs in a child process (the search runs once per process; `LD_LIBRARY_PATH` is
//! read by the loader when a process starts).

mod common;

use common::*;
use cudyn::Status;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const TEST: &str = "search_cases";

/// A library whose constructor appends its name and a newline to `mark`; `symbols` is extra C
/// code (exported functions).
fn build_lib(dir: &Path, name: &str, mark: &Path, symbols: &str) -> PathBuf {
    build_lib_with(dir, name, mark, symbols, &[])
}

/// `build_lib` with extra linker arguments (a soname).
fn build_lib_with(dir: &Path, name: &str, mark: &Path, symbols: &str, args: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    fs::write(
        &c,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void ctor(void) {{\n\
             FILE* f = fopen(\"{}\", \"a\"); if (f) {{ fputs(\"{name}\\n\", f); fclose(f); }} }}\n{symbols}\n",
            mark.display()
        ),
    )
    .unwrap();
    let so = dir.join(name);
    let st = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&c).args(args).status().expect("cc");
    assert!(st.success());
    fs::set_permissions(&so, fs::Permissions::from_mode(0o755)).unwrap();
    so
}

/// C for a library that passes for NVRTC 13.0 (the symbols the search and `accept` look at).
const FAKE_NVRTC: &str = "int nvrtcCreateProgram(void) { return 0; }\n\
    int nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return 0; }";

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The marks left by planted constructors (one line per run).
fn marks(mark: &Path) -> Vec<String> {
    fs::read_to_string(mark).map(|s| s.lines().map(str::to_string).collect()).unwrap_or_default()
}

fn mapped(name: &str) -> bool {
    fs::read_to_string("/proc/self/maps").unwrap().contains(name)
}

/// Runs one case in a child; the child's checks are in `child_case`.
fn run(case: &str, env: &[(&str, &str)], cwd: &Path) {
    run_test(TEST, case, env, cwd);
}

/// Runs test `test` of this binary as a child in mode `case`, with `env` (which may set
/// LD_LIBRARY_PATH: it is removed otherwise) in `cwd`.
fn run_test(test: &str, case: &str, env: &[(&str, &str)], cwd: &Path) -> String {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(CHILD_ENV, case).env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.current_dir(cwd).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "case {case} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.into_owned()
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
    // The same folder writable by its group only.
    fs::set_permissions(&lib, fs::Permissions::from_mode(0o775)).unwrap();
    run("untrusted", &[("PYTHONPATH", site_s), ("MARK", m), ("WHY", "writable by its group")], td.path());
    fs::set_permissions(&lib, fs::Permissions::from_mode(0o755)).unwrap();
    // A group-writable library file in a folder that is fine, named explicitly.
    let file = lib.join("libnvrtc.so.13");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o664)).unwrap();
    let f = file.to_str().unwrap();
    run(
        "untrusted",
        &[("CUDYN_LIBNVRTC", f), ("MARK", m), ("WHY", "libnvrtc.so.13 is writable by its group")],
        td.path(),
    );
    fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(lib.join("libnvrtc.so.13"), Some(65534), Some(65534)).unwrap();
        run("untrusted", &[("PYTHONPATH", site_s), ("MARK", m), ("WHY", "owned by uid 65534")], td.path());
    }
    assert!(!mark.exists());

    let empty = td.join("empty-site");
    fs::create_dir(&empty).unwrap();
    run("missing", &[("PYTHONPATH", empty.to_str().unwrap()), ("HOME", empty.to_str().unwrap())], td.path());
}

/// Each race runs at least this many searches, and for at least `RACE_SECONDS`, while another
/// thread flips the link.
const RACE_ROUNDS: usize = 3000;
const RACE_SECONDS: f64 = 2.0;

/// The child of `a_symlink_flipped_in_a_folder_others_control_never_loads`: the search for
/// NVRTC (CUDYN_LIBNVRTC names the link) run `RACE_ROUNDS` times while a thread flips the link
/// between a harmless library and a planted one as fast as it can. Prints how often the
/// planted constructor ran; fails if it ever did, or if a search did not refuse the link for
/// its folder. (Before the search checked what it opens, the constructor ran in about 1 of
/// 1,000 searches on a loaded 2-core machine.)
fn race_child() {
    let link = PathBuf::from(std::env::var("CUDYN_LIBNVRTC").unwrap());
    let good = PathBuf::from(std::env::var("GOOD").unwrap());
    let evil = PathBuf::from(std::env::var("EVIL").unwrap());
    let mark = PathBuf::from(std::env::var("MARK").unwrap());
    let why = std::env::var("WHY").unwrap();
    let dir = link.parent().unwrap().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flips = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let flipper = {
        let (stop, flips, link) = (stop.clone(), flips.clone(), link.clone());
        std::thread::spawn(move || {
            // Two links, swapped atomically with one syscall per flip (RENAME_EXCHANGE), so the
            // name flips as often as the machine allows.
            let spare = dir.join(".spare");
            let _ = fs::remove_file(&spare);
            std::os::unix::fs::symlink(&evil, &spare).unwrap();
            let (a, b) = (
                std::ffi::CString::new(link.to_str().unwrap()).unwrap(),
                std::ffi::CString::new(spare.to_str().unwrap()).unwrap(),
            );
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: two NUL-terminated paths; renameat2 touches nothing else.
                let r = unsafe {
                    libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                };
                if r != 0 {
                    // A filesystem without RENAME_EXCHANGE: a new link renamed over the name.
                    let tmp = dir.join(".flip");
                    let _ = fs::remove_file(&tmp);
                    std::os::unix::fs::symlink(if n % 2 == 0 { &evil } else { &good }, &tmp).unwrap();
                    fs::rename(&tmp, &link).unwrap();
                }
                n += 1;
                flips.store(n, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let (mut refused_for_the_folder, mut rounds) = (0, 0);
    let start = std::time::Instant::now();
    while rounds < RACE_ROUNDS || start.elapsed().as_secs_f64() < RACE_SECONDS {
        let msg = cudyn::test_hooks::search::probe(cudyn::test_hooks::search::Component::Nvrtc);
        if msg.contains(&why) {
            refused_for_the_folder += 1;
        }
        rounds += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    let ran = marks(&mark).len();
    println!(
        "race: planted constructor ran {ran} of {rounds} searches ({} flips); refused for the folder: {refused_for_the_folder}",
        flips.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(flips.load(std::sync::atomic::Ordering::Relaxed) > 100, "the link hardly flipped");
    assert_eq!(ran, 0, "the planted library ran in {ran} of {rounds} searches");
    assert_eq!(refused_for_the_folder, rounds, "every search refuses the link for its folder ({why})");
}

/// 3a: a symlink in a folder another user controls, flipped between a harmless library and a
/// planted one while cudyn searches: the planted constructor never runs, because the link's
/// folder is checked (not only the file the link named when it was looked at) and what is
/// opened is what was checked. The planted library sits in a folder others can write, so a
/// search that sees it is never fooled; only a search that checks one file and opens another
/// runs it. As root the folder belongs to nobody (uid 65534); as any user, also a folder
/// everyone can write.
#[test]
fn a_symlink_flipped_in_a_folder_others_control_never_loads() {
    const TEST: &str = "a_symlink_flipped_in_a_folder_others_control_never_loads";
    if child_mode().as_deref() == Some("race") {
        return race_child();
    }
    let td = TempDir::new("race");
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mark = td.join("mark");
    let good_dir = td.join("good");
    fs::create_dir(&good_dir).unwrap();
    let good = build_lib(&good_dir, "libgood.so", &td.join("good-mark"), "int unrelated(void) { return 1; }");
    let evil_dir = td.join("evil");
    fs::create_dir(&evil_dir).unwrap();
    let evil = build_lib(&evil_dir, "libevil.so", &mark, FAKE_NVRTC);
    fs::set_permissions(&evil_dir, fs::Permissions::from_mode(0o777)).unwrap();
    let mut folders = vec![("open", 0o777, None, "writable by others")];
    if is_root() {
        folders.push(("nobodys", 0o755, Some(65534), "owned by uid 65534"));
    }
    for (name, mode, owner, why) in folders {
        let flip = td.join(name);
        fs::create_dir(&flip).unwrap();
        let link = flip.join("libnvrtc.so.13");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        if let Some(uid) = owner {
            std::os::unix::fs::chown(&flip, Some(uid), Some(uid)).unwrap();
        }
        fs::set_permissions(&flip, fs::Permissions::from_mode(mode)).unwrap();
        let out = run_test(
            TEST,
            "race",
            &[
                ("CUDYN_LIBNVRTC", link.to_str().unwrap()),
                ("GOOD", good.to_str().unwrap()),
                ("EVIL", evil.to_str().unwrap()),
                ("MARK", mark.to_str().unwrap()),
                ("WHY", why),
            ],
            td.path(),
        );
        eprintln!("{name}: {}", out.lines().find_map(|l| l.find("race:").map(|i| &l[i..])).unwrap_or("?"));
        assert!(marks(&mark).is_empty());
    }
}

/// The child of `the_working_directory_is_never_searched`. "cwd": NVRTC, nvJitLink and the
/// runtime are found in the wheels (PYTHONPATH), never in the working directory that
/// LD_LIBRARY_PATH's empty or relative entries name to the loader, nor in a folder on it that
/// others can write; the libraries they need are not taken from there either; a compile works
/// (NVRTC's builtins and what they need, libstdc++, come from trusted places too).
/// "cwd-driver": the working directory also holds a libcuda.so.1, which NVRTC, nvJitLink and
/// libcudart would open by name themselves (this machine has no driver cudyn trusts): none of
/// them is opened, and the message says why.
fn cwd_child(case: &str) {
    let mark = PathBuf::from(std::env::var("MARK").unwrap());
    if case == "runtime-ptxjit" {
        // A driver (a fake with the soname, named by CUDYN_LIBCUDA) is loaded for NVRTC's and
        // the runtime's sake; its PTX JIT compiler would come from the working directory.
        for e in [
            cudyn::cuda::nvrtc::nvrtc().err().expect("NVRTC is not opened"),
            cudyn::cuda::runtime::runtime().err().expect("the runtime is not opened"),
        ] {
            assert!(e.message.contains("opens libnvidia-ptxjitcompiler.so.1 by name itself"), "{}", e.message);
        }
        // Only the fake drivers (explicit, trusted) ever ran.
        assert!(marks(&mark).iter().all(|m| m.starts_with("libcuda")), "planted libraries ran: {:?}", marks(&mark));
        return;
    }
    if case == "cwd-ptxjit" || case == "no-ptxjit" {
        // The driver (a fake that passes for one up to its version check, named by CUDYN_LIBCUDA)
        // opens its PTX JIT compiler by name itself when it compiles PTX.
        let e = cudyn::cuda::driver::driver().err().expect("the fake driver is refused");
        let refused = e.message.contains("opens libnvidia-ptxjitcompiler.so.1 by name itself");
        assert_eq!(refused, case == "cwd-ptxjit", "{}", e.message);
        if refused {
            assert!(e.message.contains("working directory"), "{}", e.message);
        } else {
            assert!(e.message.contains("cuGetProcAddress_v2"), "{}", e.message);
        }
        assert!(marks(&mark).iter().all(|m| m == "libcuda-fake.so"), "planted libraries ran: {:?}", marks(&mark));
        return;
    }
    if case == "cwd-driver" {
        let e = cudyn::cuda::nvrtc::nvrtc().err().expect("NVRTC is not opened");
        let e2 = cudyn::cuda::nvjitlink::jitlink().err().expect("nvJitLink is not opened");
        let e3 = cudyn::cuda::runtime::runtime().err().expect("the runtime is not opened");
        for (e, s) in [(e, Status::NvrtcNotFound), (e2, Status::NvjitlinkNotFound), (e3, Status::RuntimeNotFound)] {
            assert_eq!(e.status, s, "{}", e.message);
            assert!(e.message.contains("opens libcuda.so.1 by name itself"), "{}", e.message);
            assert!(
                e.message.contains("working directory") || e.message.contains("writable by others"),
                "{}",
                e.message
            );
        }
        assert!(marks(&mark).is_empty(), "planted libraries ran: {:?}", marks(&mark));
        return;
    }
    let nv = cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("NVRTC: {}", e.message));
    let path = nv.lib.path().unwrap();
    assert!(path.parent().unwrap().ends_with("nvidia/cu13/lib"), "NVRTC loaded from {}", path.display());
    let c = cudyn::compile::compile_with(
        "extern \"C\" __global__ void k(int* p) { p[0] = 1; }",
        "k.cu",
        &cudyn::CompileOptions::default(),
        None,
    )
    .unwrap_or_else(|f| panic!("{}: {}", f.error.message, f.log));
    assert!(!c.code.is_empty());
    let jl = cudyn::cuda::nvjitlink::jitlink().unwrap_or_else(|e| panic!("nvJitLink: {}", e.message));
    assert!(jl.lib.path().unwrap().parent().unwrap().ends_with("nvidia/cu13/lib"));
    let rt = cudyn::cuda::runtime::runtime().unwrap_or_else(|e| panic!("runtime: {}", e.message));
    assert!(rt.lib.path().unwrap().parent().unwrap().ends_with("nvidia/cu13/lib"));
    assert!(marks(&mark).is_empty(), "planted libraries ran: {:?}", marks(&mark));
    // Every mapped file is from a trusted place, not the working directory.
    let cwd = std::fs::canonicalize(".").unwrap();
    let maps = fs::read_to_string("/proc/self/maps").unwrap();
    for l in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        assert!(!Path::new(l).starts_with(&cwd), "{l} is mapped");
    }
    // The message of a search that takes nothing names what it did not search, and why.
    let msg = cudyn::test_hooks::search::probe(cudyn::test_hooks::search::Component::Nvrtc);
    for want in std::env::var("WANT").unwrap().split('|') {
        assert!(msg.contains(want), "'{want}' missing from: {msg}");
    }
    assert!(marks(&mark).is_empty(), "planted libraries ran in the probe: {:?}", marks(&mark));
}

/// 3c: an empty (or relative) `LD_LIBRARY_PATH` entry is the working directory to the system
/// loader. cudyn does the loader's search itself, skips such entries, and opens what it finds
/// by path, so neither `./libnvrtc.so.13` nor a library NVRTC needs (`./libdl.so.2`: glibc's
/// libdl is not loaded in a Rust program, so the loader would search for it) is ever loaded
/// from there; a folder on `LD_LIBRARY_PATH` that others can write is skipped the same way.
/// A libcuda.so.1 there, which CUDA's libraries would open by name themselves, keeps them
/// closed.
#[test]
fn the_working_directory_is_never_searched() {
    const TEST: &str = "the_working_directory_is_never_searched";
    if let Some(case) = child_mode() {
        return cwd_child(&case);
    }
    require_project_env();
    let pythonpath = std::env::var("PYTHONPATH").expect("PYTHONPATH: run via scripts/env.sh");
    let td = TempDir::new("cwd");
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mark = td.join("mark");
    let cwd = td.join("cwd");
    let open = td.join("open");
    for d in [&cwd, &open] {
        fs::create_dir(d).unwrap();
        for (name, code) in [
            ("libnvrtc.so.13", FAKE_NVRTC),
            ("libnvJitLink.so.13", "int nvJitLinkCreate(void) { return 0; }"),
            ("libcudart.so.13", "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }"),
        ] {
            build_lib(d, name, &mark, code);
        }
        // What NVRTC (and its builtins) need, which a Rust program has not loaded.
        for name in ["libdl.so.2", "librt.so.1", "libpthread.so.0", "libm.so.6", "libstdc++.so.6"] {
            build_lib_with(d, name, &mark, "", &[&format!("-Wl,-soname,{name}")]);
        }
    }
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let o = open.to_str().unwrap();
    let m = mark.to_str().unwrap();
    for (ld, want) in [
        (":/nonexistent-cudyn".to_string(), "an LD_LIBRARY_PATH entry '' (empty: the working directory"),
        ("/nonexistent-cudyn::".to_string(), "an LD_LIBRARY_PATH entry '' (empty: the working directory"),
        (".".to_string(), "an LD_LIBRARY_PATH entry '.' (relative"),
        (format!("{o}:lib"), "an LD_LIBRARY_PATH entry 'lib' (relative"),
        // A `$` before no token is a byte of the path (glibc's is_dst): a service manager's
        // unexpanded `$LD_LIBRARY_PATH`, or `$ORIGINAL`, is a folder under the working directory.
        ("$LD_LIBRARY_PATH:/nonexistent-cudyn".to_string(), "an LD_LIBRARY_PATH entry '$LD_LIBRARY_PATH' (relative"),
        ("$ORIGINAL/lib".to_string(), "an LD_LIBRARY_PATH entry '$ORIGINAL/lib' (relative"),
    ] {
        let want = if ld.starts_with(o) { format!("{want}|{o} is writable by others") } else { want.to_string() };
        let env = [("LD_LIBRARY_PATH", ld.as_str()), ("PYTHONPATH", &pythonpath), ("MARK", m), ("WANT", &want)];
        run_test(TEST, "cwd", &env, &cwd);
        assert!(marks(&mark).is_empty(), "LD_LIBRARY_PATH={ld}: {:?}", marks(&mark));
    }
    // Only where no driver cudyn trusts is present (this machine, CI): else that one is
    // opened first and the planted one never looked at.
    if cudyn::test_hooks::search::locate(cudyn::test_hooks::search::Component::Driver).is_none() {
        build_lib(&cwd, "libcuda.so.1", &mark, "int cuInit(int f) { return 0; }");
        for ld in [":/nonexistent-cudyn", "."] {
            run_test(TEST, "cwd-driver", &[("LD_LIBRARY_PATH", ld), ("PYTHONPATH", &pythonpath), ("MARK", m)], &cwd);
        }
        fs::remove_file(cwd.join("libcuda.so.1")).unwrap();
        // The folders those entries name under the working directory, each holding one.
        for (ld, dir) in [
            ("$LD_LIBRARY_PATH:/nonexistent-cudyn", "$LD_LIBRARY_PATH"),
            ("$ORIGINAL/lib", "$ORIGINAL/lib"),
            ("${LIBRARY}", "${LIBRARY}"),
        ] {
            let d = cwd.join(dir);
            fs::create_dir_all(&d).unwrap();
            build_lib(&d, "libcuda.so.1", &mark, "int cuInit(int f) { return 0; }");
            run_test(TEST, "cwd-driver", &[("LD_LIBRARY_PATH", ld), ("PYTHONPATH", &pythonpath), ("MARK", m)], &cwd);
            assert!(marks(&mark).is_empty(), "LD_LIBRARY_PATH={ld}: {:?}", marks(&mark));
            fs::remove_file(d.join("libcuda.so.1")).unwrap();
        }
        build_lib(&open, "libcuda.so.1", &mark, "int cuInit(int f) { return 0; }");
        run_test(TEST, "cwd-driver", &[("LD_LIBRARY_PATH", o), ("PYTHONPATH", &pythonpath), ("MARK", m)], &cwd);
        assert!(marks(&mark).is_empty(), "{:?}", marks(&mark));
        fs::remove_file(open.join("libcuda.so.1")).unwrap();
    }
    // The driver's PTX JIT compiler, which it opens by name itself: a driver is not used while
    // the loader would take that from the working directory.
    let drv_dir = td.join("driver");
    fs::create_dir(&drv_dir).unwrap();
    let drv = build_lib(&drv_dir, "libcuda-fake.so", &mark, "int cuInit(int f) { return 0; }");
    let d = drv.to_str().unwrap();
    run_test(TEST, "no-ptxjit", &[("LD_LIBRARY_PATH", ":"), ("CUDYN_LIBCUDA", d), ("MARK", m)], &cwd);
    build_lib(&cwd, "libnvidia-ptxjitcompiler.so.1", &mark, "");
    run_test(TEST, "cwd-ptxjit", &[("LD_LIBRARY_PATH", ":"), ("CUDYN_LIBCUDA", d), ("MARK", m)], &cwd);
    assert!(marks(&mark).iter().all(|m| m == "libcuda-fake.so"), "{:?}", marks(&mark));
    let with_soname = build_lib_with(
        &drv_dir,
        "libcuda.so.1",
        &mark,
        "int cuInit(int f) { return 0; }",
        &["-Wl,-soname,libcuda.so.1"],
    );
    let env = [
        ("LD_LIBRARY_PATH", ":"),
        ("CUDYN_LIBCUDA", with_soname.to_str().unwrap()),
        ("PYTHONPATH", &pythonpath),
        ("MARK", m),
    ];
    run_test(TEST, "runtime-ptxjit", &env, &cwd);
    assert!(marks(&mark).iter().all(|m| m.starts_with("libcuda")), "{:?}", marks(&mark));
}

/// The child of `a_library_the_program_loaded_is_shared`.
fn shared_child(case: &str) {
    let fake = PathBuf::from(std::env::var("FAKE").unwrap());
    let c = std::ffi::CString::new(fake.to_str().unwrap()).unwrap();
    let count_mapped = || {
        let maps = fs::read_to_string("/proc/self/maps").unwrap();
        let mut files: Vec<&str> =
            maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.contains("libnvrtc")).collect();
        files.sort();
        files.dedup();
        files.len()
    };
    let version = |h: *mut std::ffi::c_void| {
        // SAFETY: h is a live handle; the symbol, if any, is the fake's nvrtcVersion.
        unsafe { libc::dlsym(h, c"nvrtcVersion".as_ptr()) }
    };
    match case {
        "program-first" => {
            // SAFETY: the fake library's constructor only appends to a file.
            let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            assert!(!h.is_null());
            let nv = cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("{}", e.message));
            assert_eq!(nv.version, 13000, "the program's (fake) NVRTC is the one used");
            assert_eq!(nv.lib.path().as_deref(), Some(fake.as_path()));
            assert!(nv.lib.origin.contains("already loaded"), "{}", nv.lib.origin);
            assert_eq!(nv.lib.sym(c"nvrtcVersion"), Some(version(h)));
            assert_eq!(count_mapped(), 1, "one NVRTC in the process");
        }
        "cudyn-first" => {
            let nv = cudyn::cuda::nvrtc::nvrtc().unwrap_or_else(|e| panic!("{}", e.message));
            // The loader records the path the search gave (a name debuggers and dladdr can use).
            assert_eq!(nv.lib.path().as_deref(), Some(fake.as_path()));
            // The program asks by soname and gets the same library.
            // SAFETY: as above.
            let h = unsafe { libc::dlopen(c"libnvrtc.so.13".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            assert!(!h.is_null(), "libnvrtc.so.13 is known to the loader by its soname");
            assert_eq!(nv.lib.sym(c"nvrtcVersion"), Some(version(h)));
            assert_eq!(count_mapped(), 1);
        }
        other => panic!("unknown case {other}"),
    }
    assert_eq!(marks(Path::new(&std::env::var("MARK").unwrap())).len(), 1, "the fake NVRTC was loaded once");
}

/// A library of the soname the program loaded itself is shared (not loaded a second time from
/// the wheels), and one cudyn loaded by path is what the program gets when it asks by soname.
#[test]
fn a_library_the_program_loaded_is_shared() {
    const TEST: &str = "a_library_the_program_loaded_is_shared";
    if let Some(case) = child_mode() {
        return shared_child(&case);
    }
    require_project_env();
    let pythonpath = std::env::var("PYTHONPATH").expect("PYTHONPATH: run via scripts/env.sh");
    let td = TempDir::new("shared");
    fs::set_permissions(td.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mark = td.join("mark");
    let fake = build_lib_with(td.path(), "libnvrtc.so.13", &mark, FAKE_NVRTC, &["-Wl,-soname,libnvrtc.so.13"]);
    let (f, m) = (fake.to_str().unwrap(), mark.to_str().unwrap());
    run_test(TEST, "program-first", &[("FAKE", f), ("MARK", m), ("PYTHONPATH", &pythonpath)], td.path());
    fs::remove_file(&mark).unwrap();
    run_test(TEST, "cudyn-first", &[("FAKE", f), ("MARK", m), ("CUDYN_LIBNVRTC", f)], td.path());
}
