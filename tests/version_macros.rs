//! The version macros of cudyn.h, as a C and a C++ compiler read them, are Cargo's version and
//! the number cudyn_versions() reports at run time; CMake's project version is the same.

use std::path::Path;
use std::process::Command;

/// What the macros expand to, compiled with `compiler` (a C or C++ driver) against the committed
/// include/cudyn.h: "MAJOR MINOR PATCH VERSION STRING".
fn macros_as_compiled(compiler: &str, lang_args: &[&str], tag: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("version_macros_{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("macros.c");
    // The #if lines fail the build if a macro is missing or not an integer constant expression
    // the preprocessor can evaluate (a cast or an enum would compile in main but not here).
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include "cudyn.h"
#if !defined(CUDYN_VERSION_MAJOR) || !defined(CUDYN_VERSION_MINOR) || !defined(CUDYN_VERSION_PATCH)
#error "a CUDYN_VERSION_* component is missing"
#endif
#if CUDYN_VERSION != CUDYN_VERSION_MAJOR * 10000 + CUDYN_VERSION_MINOR * 100 + CUDYN_VERSION_PATCH
#error "CUDYN_VERSION is not MAJOR*10000 + MINOR*100 + PATCH"
#endif
int main(void) {
  printf("%d %d %d %d %s\n", CUDYN_VERSION_MAJOR, CUDYN_VERSION_MINOR, CUDYN_VERSION_PATCH, CUDYN_VERSION,
         CUDYN_VERSION_STRING);
  return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("macros");
    let out = Command::new(compiler)
        .args(lang_args)
        .args(["-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    assert!(out.status.success(), "{compiler} rejected the macros:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().expect("running the compiled program");
    assert!(run.status.success());
    String::from_utf8(run.stdout).unwrap().trim_end().to_string()
}

fn expected_line() -> String {
    let mut v = cudyn::capi::error::cudyn_version_info::default();
    // SAFETY: a valid output struct.
    assert_eq!(unsafe { cudyn::capi::error::cudyn_versions(&mut v) }, cudyn::Status::Success);
    let (major, minor, patch) =
        (env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"), env!("CARGO_PKG_VERSION_PATCH"));
    // Cargo's version and the run-time number must agree on their own, or the line below would
    // compare the macros against two different things.
    let packed =
        major.parse::<i32>().unwrap() * 10000 + minor.parse::<i32>().unwrap() * 100 + patch.parse::<i32>().unwrap();
    assert_eq!(v.cudyn, packed, "cudyn_versions() reports {} for cudyn {}", v.cudyn, env!("CARGO_PKG_VERSION"));
    format!("{major} {minor} {patch} {} {}", v.cudyn, env!("CARGO_PKG_VERSION"))
}

#[test]
fn c_macros_match_cargo_and_cudyn_versions() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    assert_eq!(macros_as_compiled(&cc, &["-std=c99", "-x", "c"], "c"), expected_line());
}

#[test]
fn cxx_macros_match_cargo_and_cudyn_versions() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    assert_eq!(macros_as_compiled(&cxx, &["-std=c++17", "-x", "c++"], "cxx"), expected_line());
}

#[test]
fn version_string_starts_with_the_macro_string() {
    // SAFETY: cudyn_version_string returns a NUL-terminated string that lives as long as the
    // process (a static, or a static fallback text if building it failed).
    let s = unsafe { std::ffi::CStr::from_ptr(cudyn::capi::error::cudyn_version_string()) };
    let want = format!("cudyn {} (", env!("CARGO_PKG_VERSION"));
    assert!(s.to_str().unwrap().starts_with(&want), "cudyn_version_string() is {s:?}, want a start of {want:?}");
}

/// CMakeLists.txt names the version itself (project(... VERSION ...)): it sets the installed
/// file name libcudyn.so.X.Y.Z and what find_package(cudyn X.Y) accepts, so it must follow Cargo.
#[test]
fn cmake_project_version_is_cargos() {
    let cmake = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/CMakeLists.txt")).unwrap();
    let line = cmake.lines().find(|l| l.trim_start().starts_with("project(cudyn")).expect("project(cudyn ...) line");
    let version = line
        .split_whitespace()
        .skip_while(|w| *w != "VERSION")
        .nth(1)
        .unwrap_or_else(|| panic!("no VERSION in {line:?}"));
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "CMakeLists.txt says {version}, Cargo.toml says otherwise");
}
