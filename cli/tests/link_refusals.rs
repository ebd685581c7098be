//! `cudyn link` never reports success for a cubin that lost kernels: what nvJitLink would take
//! and drop is refused by name, a symbol defined twice and a result with no kernel are
//! failures, and nothing is written then (issue 24, item 1).

mod common;

use common::*;

const SIMPLE: &str = "extern \"C\" __global__ void simple(float *p) { p[threadIdx.x] = 1.0f; }\n";
const DEVICE_ONLY: &str = "__device__ float twice(float x) { return 2.0f * x; }\n\
                           __device__ float table[16];\n";

fn fails_naming(d: &Dir, args: &[&str], needles: &[&str]) {
    let o = cudyn(d, args);
    assert_eq!(o.status.code(), Some(1), "{args:?}\n{}", show(&o));
    let err = text(&o.stderr);
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}\n{}", show(&o));
    }
    assert!(!d.path("out.cubin").exists(), "{args:?}: a failed link wrote its output");
}

#[test]
fn link_refuses_what_would_lose_kernels_and_reports_what_it_kept() {
    require_toolchain();
    let d = Dir::new("link-refusals");
    compile(&d, "simple.cu", SIMPLE, "exec.cubin", &["--arch", "90"]);
    compile(&d, "simple.cu", SIMPLE, "rdc.cubin", &["--arch", "90", "--", "-rdc=true"]);
    compile(&d, "simple.cu", SIMPLE, "rdc.ptx", &["--arch", "90", "--target", "ptx", "--", "-rdc=true"]);
    compile(&d, "dev.cu", DEVICE_ONLY, "dev.cubin", &["--arch", "90", "--", "-rdc=true"]);
    std::fs::write(d.path("host.c"), "int host_only(int x) { return x + 1; }\n").unwrap();
    let cc = std::process::Command::new("cc").args(["-c", "host.c", "-o", "host.o"]).current_dir(&d.0).status();
    assert!(cc.unwrap().success());

    // The executable cubin `cudyn compile` makes by default, alone or beside PTX.
    let exec = ["link input 0 ('exec.cubin')", "executable cubin", "-rdc=true"];
    fails_naming(&d, &["link", "exec.cubin", "-o", "out.cubin", "--arch", "90"], &exec);
    fails_naming(
        &d,
        &["link", "rdc.ptx", "exec.cubin", "-o", "out.cubin", "--arch", "90"],
        &["link input 1 ('exec.cubin')", "executable cubin"],
    );
    // A host object with no device code.
    fails_naming(&d, &["link", "host.o", "-o", "out.cubin"], &["'host.o'", "a host object with no device code"]);
    // One relocatable cubin twice: nvJitLink would say success with 8 parameters for 4.
    fails_naming(
        &d,
        &["link", "rdc.cubin", "rdc.cubin", "-o", "out.cubin", "--arch", "90"],
        &["multiple definition of 'simple'", "inputs 0 ('rdc.cubin') and 1 ('rdc.cubin')"],
    );
    // Device code without a kernel: refused, unless asked for.
    fails_naming(&d, &["link", "dev.cubin", "-o", "out.cubin", "--arch", "90"], &["holds no kernel"]);
    let o = cudyn(&d, &["link", "dev.cubin", "-o", "dev-linked.cubin", "--arch", "90", "--allow-no-kernels"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains("dev-linked.cubin: cubin for sm_90, ") && text(&o.stdout).contains("no kernel"));

    // What links: the report names the architecture and the kernels the result holds.
    let o = cudyn(&d, &["link", "rdc.cubin", "-o", "out.cubin", "--arch", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).starts_with("out.cubin: cubin for sm_90, "), "{}", show(&o));
    assert!(text(&o.stdout).contains("kernels simple"), "{}", show(&o));

    // The same as JSON, failure included.
    let o = cudyn(&d, &["link", "exec.cubin", "-o", "x.cubin", "--arch", "90", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let v = json(&o);
    assert_eq!(v["ok"], false);
    assert_eq!(v["status"], "CUDYN_ERROR_INVALID_ARGUMENT");
    assert!(v["error"].as_str().unwrap().contains("executable cubin"), "{v}");
    let o = cudyn(&d, &["link", "rdc.cubin", "rdc.ptx", "-o", "x.cubin", "--arch", "90", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(json(&o)["status"], "CUDYN_ERROR_LINK_FAILED", "{}", show(&o));
    let o = cudyn(&d, &["link", "rdc.cubin", "-o", "x.cubin", "--arch", "90", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json(&o);
    assert_eq!((v["ok"].as_bool(), v["arch"].as_str()), (Some(true), Some("sm_90")), "{v}");
    assert_eq!(v["kernels"], serde_json::json!(["simple"]));
    assert_eq!(v["inputs"][0]["kind"], "cubin");
    assert_eq!(v["bytes"].as_u64(), Some(std::fs::metadata(d.path("x.cubin")).unwrap().len()));
}

#[test]
fn link_takes_objects_and_archives_with_relocatable_device_code() {
    require_toolchain();
    let nvcc = std::path::PathBuf::from(std::env::var_os("CUDYN_CUDA_ROOT").unwrap()).join("bin/nvcc");
    assert!(nvcc.is_file(), "{} is missing: run scripts/bootstrap.sh", nvcc.display());
    let d = Dir::new("link-objects");
    std::fs::write(d.path("simple.cu"), SIMPLE).unwrap();
    for (flag, out) in [("-dc", "rdc.o"), ("-c", "whole.o")] {
        let o = std::process::Command::new(&nvcc)
            .args([flag, "-arch=sm_90", "simple.cu", "-o", out])
            .current_dir(&d.0)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    assert!(std::process::Command::new("ar")
        .args(["rcs", "librdc.a", "rdc.o"])
        .current_dir(&d.0)
        .status()
        .unwrap()
        .success());
    for input in ["rdc.o", "librdc.a"] {
        let o = cudyn(&d, &["link", input, "-o", "out.cubin", "--arch", "90"]);
        assert_eq!(o.status.code(), Some(0), "{input}: {}", show(&o));
        assert!(text(&o.stdout).contains("kernels simple"), "{input}: {}", show(&o));
        std::fs::remove_file(d.path("out.cubin")).unwrap();
    }
    fails_naming(
        &d,
        &["link", "whole.o", "-o", "out.cubin", "--arch", "90"],
        &["'whole.o'", "not relocatable (.nv_fatbin)", "nvcc -dc"],
    );
}
