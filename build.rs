//! Build script: finds the CUDA headers used for the layout proofs and the bindings test,
//! generates include/cudyn.h with cbindgen (its version macros from Cargo.toml), compiles the C
//! layout proofs, sets the soname.

use std::env;
use std::path::{Path, PathBuf};

fn cuda_root(manifest: &Path) -> Option<PathBuf> {
    let mut cands: Vec<PathBuf> = Vec::new();
    for var in ["CUDYN_CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"] {
        if let Some(v) = env::var_os(var) {
            cands.push(v.into());
        }
    }
    cands.push(manifest.join(".toolchain/cuda"));
    cands.push("/usr/local/cuda".into());
    cands.into_iter().find(|p| p.join("include/cuda.h").is_file())
}

/// The version macros of cudyn.h, taken from Cargo.toml so they cannot drift from the crate.
/// CUDYN_VERSION packs the numbers as cudyn_versions() does (major*10000 + minor*100 + patch),
/// which only stays unambiguous while minor and patch are below 100.
fn version_macros() -> String {
    let num = |var: &str| -> u32 {
        let v = env::var(var).unwrap();
        v.parse().unwrap_or_else(|_| panic!("{var}={v:?} is not a number"))
    };
    let (major, minor, patch) =
        (num("CARGO_PKG_VERSION_MAJOR"), num("CARGO_PKG_VERSION_MINOR"), num("CARGO_PKG_VERSION_PATCH"));
    assert!(
        minor < 100 && patch < 100,
        "CUDYN_VERSION packs minor and patch into two decimal digits each; {major}.{minor}.{patch} does not fit"
    );
    let full = env::var("CARGO_PKG_VERSION").unwrap();
    format!(
        "
/* cudyn's version. CUDYN_VERSION is MAJOR*10000 + MINOR*100 + PATCH (0.1.0 is 100), the
 * number cudyn_versions() reports in `cudyn` at run time: compare the two to notice a program
 * built with one cudyn.h running against another library. All usable in #if. */
#define CUDYN_VERSION_MAJOR {major}
#define CUDYN_VERSION_MINOR {minor}
#define CUDYN_VERSION_PATCH {patch}
#define CUDYN_VERSION (CUDYN_VERSION_MAJOR * 10000 + CUDYN_VERSION_MINOR * 100 + CUDYN_VERSION_PATCH)
#define CUDYN_VERSION_STRING \"{full}\""
    )
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for var in ["CUDYN_CUDA_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDYN_REQUIRE_CUDA_HEADERS", "CUDYN_UPDATE_HEADER"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=tests/layout/layout_proofs.c");

    // The shared library is libcudyn.so.0 until 1.0.
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcudyn.so.0");
    }

    // 1. The header. Generated into OUT_DIR always; include/cudyn.h is only rewritten on request,
    //    and tests/header.rs fails when the two differ.
    let mut config = cbindgen::Config::from_file(manifest.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut after_includes = config.after_includes.take().unwrap_or_default();
    after_includes.push_str(&version_macros());
    config.after_includes = Some(after_includes);
    let header = out.join("cudyn.h");
    cbindgen::Builder::new()
        .with_crate(&manifest)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate cudyn.h")
        .write_to_file(&header);
    if env::var("CUDYN_UPDATE_HEADER").as_deref() == Ok("1") {
        std::fs::copy(&header, manifest.join("include/cudyn.h")).unwrap();
    }

    // 2. The C layout proofs: cudyn.h against cuda.h and cuda_runtime_api.h. Breaking a proof
    //    breaks the build. Without CUDA headers they are skipped with a warning, unless
    //    CUDYN_REQUIRE_CUDA_HEADERS=1 (set by the project's test command) makes that an error.
    match cuda_root(&manifest) {
        Some(root) => {
            println!("cargo:rustc-env=CUDYN_CUDA_ROOT={}", root.display());
            let mut proofs = cc::Build::new();
            proofs
                .file(manifest.join("tests/layout/layout_proofs.c"))
                .include(root.join("include"))
                .include(&out) // the freshly generated cudyn.h wins over include/
                .std("c11")
                .warnings(true)
                .extra_warnings(true)
                .flag("-Wpedantic")
                .warnings_into_errors(true);
            // `cargo check --target <other>` needs no linker, so it should not need a cross C
            // compiler either: the proofs are then skipped with a warning. A compiler that runs
            // and rejects a proof still fails the build.
            let cross = env::var("TARGET").ok() != env::var("HOST").ok();
            let compiler_runs = || {
                proofs.try_get_compiler().is_ok_and(|c| {
                    std::process::Command::new(c.path()).arg("--version").output().is_ok_and(|o| o.status.success())
                })
            };
            if cross && !compiler_runs() {
                println!(
                    "cargo:warning=no C compiler for {}: the C layout proofs were not compiled (set CC_<target>)",
                    env::var("TARGET").unwrap_or_default()
                );
            } else {
                let objs = proofs.compile_intermediates();
                assert!(!objs.is_empty());
            }
        }
        None => {
            if env::var("CUDYN_REQUIRE_CUDA_HEADERS").as_deref() == Ok("1") {
                panic!("CUDYN_REQUIRE_CUDA_HEADERS=1 but no CUDA headers were found (run scripts/bootstrap.sh)");
            }
            println!("cargo:warning=no CUDA headers found: the C layout proofs were not compiled");
            println!("cargo:rustc-env=CUDYN_CUDA_ROOT=");
        }
    }
}
