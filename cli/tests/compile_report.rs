//! `cudyn compile` reports what the output holds, read from the code, and which of several
//! architecture options won (issue 24, item 3); `--json` says the same for scripts.

mod common;

use common::*;

fn held(bytes: &[u8]) -> Vec<String> {
    cudyn::image::inspect(bytes).unwrap().codes.iter().map(|c| c.to_string()).collect()
}

#[test]
fn the_report_names_the_architecture_the_code_holds_and_the_option_that_won() {
    require_toolchain();
    let d = Dir::new("compile-arch");
    std::fs::write(d.path("k.cu"), KERNEL).unwrap();

    // --arch against an -arch among the NVRTC options: --arch wins, and the report says so.
    let o = cudyn(&d, &["compile", "k.cu", "-o", "a.cubin", "--arch", "90", "--", "-arch=sm_80"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.starts_with("a.cubin: cubin for sm_90, "), "{}", show(&o));
    assert!(out.contains("--arch 90 is used, not -arch=sm_80 from the options"), "{}", show(&o));
    assert_eq!(held(&std::fs::read(d.path("a.cubin")).unwrap()), ["sm_90"]);

    // Two in the NVRTC options: NVRTC takes the last, and so does the report.
    let o = cudyn(&d, &["compile", "k.cu", "-o", "b.cubin", "--", "-arch=sm_90", "-arch", "sm_80"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.starts_with("b.cubin: cubin for sm_80, "), "{}", show(&o));
    assert!(out.contains("the last architecture option, -arch sm_80, is used; the tool ignores -arch=sm_90"), "{out}");
    assert_eq!(held(&std::fs::read(d.path("b.cubin")).unwrap()), ["sm_80"]);

    // One option: nothing to choose, nothing said.
    let o = cudyn(&d, &["compile", "k.cu", "-o", "c.ptx", "--target", "ptx", "--", "--gpu-architecture=compute_86"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).starts_with("c.ptx: PTX for compute_86, "), "{}", show(&o));
    assert!(!text(&o.stdout).contains("is used"), "{}", show(&o));

    // The same as JSON, from the cache the second time.
    for from_cache in [false, true] {
        let o = cudyn(&d, &["compile", "k.cu", "-o", "j.cubin", "--arch", "sm_90", "--json", "--", "-arch=sm_75"]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let v = json(&o);
        assert_eq!(v["ok"], true);
        assert_eq!(v["arch"], "sm_90");
        assert_eq!(v["kind"], "cubin");
        assert_eq!(v["from_cache"], from_cache);
        assert_eq!(v["bytes"].as_u64(), Some(std::fs::metadata(d.path("j.cubin")).unwrap().len()));
        assert!(v["arch_choice"].as_str().unwrap().contains("not -arch=sm_75"), "{v}");
        assert!(v["log"].as_str().unwrap().contains("followed by"), "NVRTC's warning: {v}");
        assert!(o.stderr.is_empty(), "with --json the log is in the JSON: {}", show(&o));
    }
    // A failure as JSON: the status, the message and NVRTC's log; exit 1.
    std::fs::write(d.path("bad.cu"), "__global__ void f() { undefined_thing; }\n").unwrap();
    let o = cudyn(&d, &["compile", "bad.cu", "-o", "bad.cubin", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let v = json(&o);
    assert_eq!((v["ok"].as_bool(), v["status"].as_str()), (Some(false), Some("CUDYN_ERROR_COMPILE_FAILED")));
    assert!(v["log"].as_str().unwrap().contains("undefined_thing"), "{v}");
    assert!(!d.path("bad.cubin").exists());
}
