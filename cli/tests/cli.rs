//! The `cudyn` command as a user runs it: output and exit status of every subcommand, on a
//! machine without a GPU. NVRTC and nvJitLink come from the project's toolchain
//! (`source scripts/env.sh`), as for the library's own tests.

mod common;

use std::path::Path;

use common::*;
use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF, FATBIN_KIND_PTX};

// ---------------------------------------------------------------------------------------------
// doctor

#[test]
fn doctor_finds_the_wheels_and_says_what_is_missing() {
    require_toolchain();
    let d = Dir::new("doctor");
    let o = cudyn(&d, &["doctor"]);
    let out = text(&o.stdout);
    for line in ["nvrtc      ok       NVRTC 13.", "nvjitlink  ok       nvJitLink 13.", "runtime    ok"] {
        assert!(out.contains(line), "{line}\n{}", show(&o));
    }
    assert!(out.contains(&format!("cache      on, {}", d.path("cache").display())), "{}", show(&o));
    if !driver_present() {
        // No driver: missing, what was tried, what to do, and a failing exit status.
        assert_eq!(o.status.code(), Some(1), "{}", show(&o));
        assert!(out.contains("driver     MISSING"), "{}", show(&o));
        assert!(out.contains("libcuda.so.1 comes with the NVIDIA driver"), "{}", show(&o));
        assert!(out.contains("missing: driver, gpu"), "{}", show(&o));
    }
    // Only what is asked for counts.
    let o = cudyn(&d, &["doctor", "--need", "nvrtc,nvjitlink,runtime"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains("everything needed was found"), "{}", show(&o));
    let o = cudyn(&d, &["doctor", "--need", "nothing"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

#[test]
fn doctor_without_the_wheels_names_the_packages_to_install() {
    let d = Dir::new("doctor-bare");
    let o = cmd(&d, &["doctor", "--need", "nvrtc"])
        .env_remove("PYTHONPATH")
        .env_remove("CUDA_PATH")
        .env_remove("CUDA_HOME")
        .env_remove("CUDYN_LIBNVRTC")
        .env("HOME", &d.0)
        .env("CUDYN_CACHE", "0")
        .output()
        .unwrap();
    let out = text(&o.stdout);
    if out.contains("nvrtc      ok") {
        return; // this machine has NVRTC on the system loader's path
    }
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(out.contains("nvrtc      MISSING"), "{}", show(&o));
    assert!(out.contains("nvidia-cuda-nvrtc for CUDA 13, nvidia-cuda-nvrtc-cu12 for CUDA 12"), "{}", show(&o));
    assert!(out.contains("CUDA_PATH"), "{}", show(&o));
    assert!(out.contains("cache      off: the cache is turned off by CUDYN_CACHE=0"), "{}", show(&o));
    assert!(out.contains("missing: nvrtc\n") || out.contains("missing: nvrtc "), "{}", show(&o));
    assert!(!out.contains("os error"), "{}", show(&o));
}

#[test]
fn doctor_json_lists_every_component() {
    require_toolchain();
    let d = Dir::new("doctor-json");
    let o = cudyn(&d, &["doctor", "--json", "--need", "nvrtc"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json(&o);
    let names: Vec<&str> = v["components"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["driver", "runtime", "nvrtc", "nvjitlink"]);
    let nvrtc = &v["components"][2];
    assert_eq!(nvrtc["usable"], true);
    assert!(nvrtc["path"].as_str().unwrap().contains("libnvrtc.so."), "{nvrtc}");
    assert!(nvrtc["version"].as_str().unwrap().starts_with("13."), "{nvrtc}");
    assert_eq!(v["cache"]["on"], true);
    assert_eq!(v["ok"], true);
    if !driver_present() {
        assert_eq!(v["components"][0]["usable"], false);
        assert!(v["components"][0]["install"].as_str().unwrap().contains("NVIDIA driver"));
        assert_eq!(v["gpus"]["count"], 0);
    }
}

// ---------------------------------------------------------------------------------------------
// inspect

#[test]
fn inspect_a_cubin_lists_its_kernels_with_parameter_layouts() {
    require_toolchain();
    let d = Dir::new("inspect-cubin");
    cubin(&d);
    let o = cudyn(&d, &["inspect", "k.cubin", "--sm", "sm_90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("k.cubin: cubin,"), "{out}");
    assert!(out.contains("verdict: accepted; holds sm_90"), "{out}");
    // char at 0, the 16-byte struct at 8, short at 24, pointer at 32: 40 bytes.
    assert!(out.contains("kernel mixed: 4 parameters, 40 bytes (offset:size) [0:1 8:16 24:2 32:8]"), "{out}");
    assert!(out.contains("kernel vec_add: 4 parameters, 28 bytes (offset:size) [0:8 8:8 16:8 24:4]"), "{out}");
    assert!(out.contains("sm_90 runs: the sm_90"), "{out}");
    let o = cudyn(&d, &["inspect", "k.cubin", "--sm", "80"]);
    assert!(text(&o.stdout).contains("sm_80 runs: nothing: no code for sm_80 (holds sm_90)"), "{}", show(&o));
    if !driver_present() {
        let o = cudyn(&d, &["inspect", "k.cubin"]);
        assert!(text(&o.stdout).contains("no GPU here (no CUDA driver found)"), "{}", show(&o));
    }
}

#[test]
fn inspect_a_fatbin_lists_every_entry_and_the_one_a_gpu_runs() {
    require_toolchain();
    let d = Dir::new("inspect-fatbin");
    let cub = std::fs::read(cubin(&d)).unwrap();
    let ptx = b".version 8.0\n.target sm_80\n.address_size 64\n";
    let f = fatbin(&[
        fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &cub, Packing::Zstd),
        fatbin_entry(FATBIN_KIND_PTX, 80, FATBIN_FLAGS_PLAIN, ptx, Packing::Plain),
    ]);
    std::fs::write(d.path("k.fatbin"), &f).unwrap();
    let o = cudyn(&d, &["inspect", "k.fatbin", "--sm", "sm_90", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json(&o);
    let r = &v[0];
    assert_eq!(r["kind"], "fatbin");
    assert_eq!(r["accepted"], true);
    let e = r["entries"].as_array().unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!((e[0]["kind"].as_str(), e[0]["arch"].as_str()), (Some("sass"), Some("sm_90")));
    assert_eq!((e[0]["compressed"].as_bool(), e[0]["compression"].as_str()), (Some(true), Some("zstd")));
    assert_eq!(e[0]["code_bytes"].as_u64(), Some(cub.len() as u64));
    assert_eq!(
        (e[1]["kind"].as_str(), e[1]["arch"].as_str(), e[1]["compressed"].as_bool()),
        (Some("ptx"), Some("compute_80"), Some(false))
    );
    let kernels: Vec<&str> = e[0]["kernels"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert!(kernels.contains(&"vec_add") && kernels.contains(&"mixed"), "{kernels:?}");
    assert_eq!(r["gpu"]["entry"], 0);
    // A GPU without SASS here JIT-compiles the PTX.
    let o = cudyn(&d, &["inspect", "k.fatbin", "--sm", "120"]);
    let out = text(&o.stdout);
    assert!(out.contains("entry 0: SASS sm_90"), "{out}");
    assert!(out.contains("zstd-compressed to"), "{out}");
    assert!(out.contains("entry 1: PTX compute_80"), "{out}");
    assert!(out.contains("sm_120 runs: entry 1 (compute_80)"), "{out}");
}

#[test]
fn inspect_refusals_and_missing_files_fail_with_the_reason() {
    let d = Dir::new("inspect-bad");
    let mut junk = vec![0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0];
    junk.extend_from_slice(&1000u64.to_le_bytes());
    std::fs::write(d.path("cut.fatbin"), &junk).unwrap();
    let o = cudyn(&d, &["inspect", "cut.fatbin"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stdout).contains("verdict: refused: the image is truncated"), "{}", show(&o));
    let o = cudyn(&d, &["inspect", "--json", "cut.fatbin"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v[0]["accepted"], false);
    assert!(v[0]["reason"].as_str().unwrap().contains("truncated"), "{v}");

    let o = cudyn(&d, &["inspect", "no-such.cubin"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("opening no-such.cubin: no such file or directory"), "{err}");
    assert!(!err.contains("os error"), "{err}");
    let o = cudyn(&d, &["inspect"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    // A bad --sm is a usage error (2), said by the argument parser with the usage line.
    let o = cudyn(&d, &["inspect", "cut.fatbin", "--sm", "banana"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(text(&o.stderr).contains("'banana' is not an architecture"), "{}", show(&o));
    assert!(o.stdout.is_empty(), "{}", show(&o));
}

// ---------------------------------------------------------------------------------------------
// compile and link

#[test]
fn compile_goes_through_the_cache_and_prints_the_log() {
    require_toolchain();
    let d = Dir::new("compile");
    std::fs::write(d.path("k.cu"), KERNEL).unwrap();
    let o = cudyn(&d, &["compile", "k.cu", "-o", "k.ptx", "--target", "ptx", "--arch", "compute_80"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains("k.ptx: PTX for compute_80"), "{}", show(&o));
    assert!(text(&o.stdout).contains("(compiled)"), "{}", show(&o));
    assert!(std::fs::read_to_string(d.path("k.ptx")).unwrap().contains(".target sm_80"));
    let o = cudyn(&d, &["compile", "k.cu", "-o", "k.ptx", "--target", "ptx", "--arch", "compute_80"]);
    assert!(text(&o.stdout).contains("(from the cache)"), "{}", show(&o));

    // NVRTC options after `--`; a failing compile prints NVRTC's log and exits 1.
    std::fs::write(d.path("bad.cu"), "__global__ void f() { undefined_thing; }\n").unwrap();
    let o = cudyn(&d, &["compile", "bad.cu", "-o", "bad.cubin", "--", "-DX=1"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("NVRTC log:") && err.contains("\"undefined_thing\" is undefined"), "{err}");
    assert!(err.contains("cudyn: compiling 'bad.cu'"), "{err}");
    assert!(!d.path("bad.cubin").exists());

    let o = cudyn(&d, &["compile", "k.cu", "-o", "x", "--target", "source"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let o = cudyn(&d, &["compile", "missing.cu", "-o", "x"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("missing.cu: no such file or directory"), "{}", show(&o));
}

#[test]
fn link_turns_lto_ir_into_a_cubin() {
    require_toolchain();
    let d = Dir::new("link");
    std::fs::write(d.path("k.cu"), KERNEL).unwrap();
    let o = cudyn(&d, &["compile", "k.cu", "-o", "k.ltoir", "--target", "ltoir", "--arch", "sm_90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = cudyn(&d, &["link", "k.ltoir", "-o", "k.cubin", "--arch", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).starts_with("k.cubin: cubin for sm_90, "), "{}", show(&o));
    let c = cudyn::image::contents::contents(&std::fs::read(d.path("k.cubin")).unwrap());
    assert!(c.verdict.is_ok(), "{:?}", c.verdict);
    assert!(c.kernels.iter().any(|k| k.name == "vec_add"), "{:?}", c.kernels);

    std::fs::write(d.path("junk.bin"), [0u8, 1, 2, 3]).unwrap();
    let o = cudyn(&d, &["link", "junk.bin", "-o", "x.cubin"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("junk.bin: not a cubin, fatbin, PTX, LTO-IR"), "{}", show(&o));
}

// ---------------------------------------------------------------------------------------------
// cache

#[test]
fn cache_dir_stats_and_clear() {
    require_toolchain();
    let d = Dir::new("cache");
    let o = cudyn(&d, &["cache", "dir"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(text(&o.stdout).trim_end(), d.path("cache").display().to_string());
    cubin(&d);
    let v = json(&cudyn(&d, &["cache", "stats", "--json"]));
    assert_eq!(v["on"], true);
    assert_eq!(v["entries"], 1, "{v}");
    assert!(v["bytes"].as_u64().unwrap() > 0, "{v}");
    let o = cudyn(&d, &["cache", "clear"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).starts_with("removed 1 entry from "), "{}", show(&o));
    let v = json(&cudyn(&d, &["cache", "stats", "--json"]));
    assert_eq!(v["entries"], 0, "{v}");
    let o = cudyn(&d, &["cache", "stats"]);
    assert!(text(&o.stdout).contains("entries  0"), "{}", show(&o));

    // Off: `dir` fails with the reason, `stats` says it is off.
    let o = cmd(&d, &["cache", "dir"]).env("CUDYN_CACHE", "off").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("turned off by CUDYN_CACHE=off"), "{}", show(&o));
    let o = cmd(&d, &["cache", "stats"]).env("CUDYN_CACHE", "off").output().unwrap();
    assert!(text(&o.stdout).starts_with("off: "), "{}", show(&o));
    let o = cmd(&d, &["cache", "dir"]).env("CUDYN_CACHE_DIR", "relative/dir").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("relative path"), "{}", show(&o));
}

#[test]
fn version_and_help() {
    let d = Dir::new("help");
    let o = cudyn(&d, &["--version"]);
    assert_eq!(text(&o.stdout).trim(), format!("cudyn {}", env!("CARGO_PKG_VERSION")));
    let o = cudyn(&d, &["--help"]);
    let out = text(&o.stdout);
    for sub in ["doctor", "inspect", "compile", "link", "cache"] {
        assert!(out.contains(sub), "{out}");
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_cudyn")).exists());
}
