//! What CUDA C++ engineers reach for (issue 24, item 8): `inspect` with C++ names and each
//! kernel's registers, shared, local and constant memory and launch bounds from the cubin's
//! tables; PTX kernels and globals; shell completions and a manual page from the command's own
//! definition; help text for every argument.

mod common;

use common::*;
use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF, FATBIN_KIND_PTX};

const RESOURCES: &str = r#"
__constant__ float coeffs[64];
__device__ int counter;
__device__ float table[128];
extern "C" __global__ void __launch_bounds__(256) with_shared(float *out, int n) {
  __shared__ float tile[512];
  tile[threadIdx.x] = out[threadIdx.x] * coeffs[threadIdx.x % 64];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 256] + table[n % 128];
  atomicAdd(&counter, 1);
}
extern "C" __global__ void with_local(float *out, int n) {
  float buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = out[i * n];
  out[threadIdx.x] = buf[n & 255] + buf[(n * 7) & 255];
}
template <typename T> __global__ void scale(T *p, T a) { p[threadIdx.x] *= a; }
template __global__ void scale<float>(float *, float);
"#;

#[test]
fn inspect_shows_resources_launch_bounds_cxx_names_and_globals() {
    require_toolchain();
    let d = Dir::new("resources");
    compile(&d, "r.cu", RESOURCES, "r.cubin", &["--arch", "90"]);
    let o = cudyn(&d, &["inspect", "r.cubin", "--sm", "90"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    // The layout line names the symbol cudyn_library_get_kernel takes; the C++ name follows.
    assert!(out.contains("kernel _Z5scaleIfEvPT_S0_: 2 parameters, 12 bytes (offset:size) [0:8 8:4]"), "{out}");
    assert!(out.contains("C++ name: scale<float>(float*, float)"), "{out}");
    let block = |name: &str| -> String {
        let at = out.find(&format!("kernel {name}:")).unwrap_or_else(|| panic!("no kernel {name}: {out}"));
        out[at..].lines().take_while(|l| !l.trim_start().starts_with("global")).take(4).collect::<Vec<_>>().join("\n")
    };
    let shared = block("with_shared");
    assert!(shared.contains("2048 bytes shared"), "{shared}");
    assert!(shared.contains("block: at most 256×1×1 threads (launch bound)"), "{shared}");
    assert!(shared.contains("registers") && shared.contains("bytes constant bank 0"), "{shared}");
    let local = block("with_local");
    assert!(local.contains("1024 bytes local"), "the dynamically indexed array lives in local memory: {local}");
    assert!(!local.contains("launch bound"), "{local}");
    for g in [
        "global coeffs: 256 bytes, constant memory",
        "global counter: 4 bytes, global memory",
        "global table: 512 bytes, global memory",
    ] {
        assert!(out.contains(g), "{g}\n{out}");
    }

    // JSON: the same numbers, as numbers.
    let v = json(&cudyn(&d, &["inspect", "r.cubin", "--json"]));
    let kernels = v[0]["kernels"].as_array().unwrap();
    let k = kernels.iter().find(|k| k["name"] == "with_shared").unwrap();
    assert_eq!(k["shared_bytes"], 2048);
    assert_eq!(k["max_threads"], serde_json::json!([256, 1, 1]));
    assert!(k["registers"].as_u64().is_some_and(|r| r > 0 && r <= 255), "{k}");
    assert!(k["constant_bytes"].as_u64().is_some_and(|c| c >= 12), "{k}");
    assert_eq!(kernels.iter().find(|k| k["name"] == "with_local").unwrap()["local_bytes"], 1024);
    let s = kernels.iter().find(|k| k["name"] == "_Z5scaleIfEvPT_S0_").unwrap();
    assert_eq!(s["demangled"], "scale<float>(float*, float)");
    assert_eq!(v[0]["globals"].as_array().unwrap().len(), 3, "{}", v[0]["globals"]);
    assert_eq!(v[0]["relocatable"], false);

    // Its PTX: the same kernels with the same layouts, the launch bound, the same globals; the
    // JIT compiler decides the rest.
    compile(&d, "r.cu", RESOURCES, "r.ptx", &["--arch", "compute_90", "--target", "ptx"]);
    let o = cudyn(&d, &["inspect", "r.ptx"]);
    let ptx = text(&o.stdout);
    assert!(ptx.contains("kernel with_shared: 2 parameters, 12 bytes (offset:size) [0:8 8:4]"), "{ptx}");
    assert!(ptx.contains("block: at most 256×1×1 threads (launch bound)"), "{ptx}");
    assert!(ptx.contains("uses: decided when the PTX is compiled"), "{ptx}");
    assert!(ptx.contains("global table: 512 bytes, global memory"), "{ptx}");
    let vp = json(&cudyn(&d, &["inspect", "r.ptx", "--json"]));
    let vc = &v[0];
    for name in ["with_shared", "with_local", "_Z5scaleIfEvPT_S0_"] {
        let find = |v: &serde_json::Value| v["kernels"].as_array().unwrap().iter().find(|k| k["name"] == name).cloned();
        let (p, c) = (find(&vp[0]).unwrap(), find(vc).unwrap());
        assert_eq!(p["params"], c["params"], "{name}: PTX and cubin disagree on the layout");
        assert_eq!(p["registers"], serde_json::Value::Null);
    }

    // In a fatbin: SASS and PTX entries each with their kernels, compressed or not.
    let cub = std::fs::read(d.path("r.cubin")).unwrap();
    let ptx_bytes = std::fs::read(d.path("r.ptx")).unwrap();
    let mut ptx_padded = ptx_bytes.clone();
    ptx_padded.resize(ptx_bytes.len().div_ceil(8) * 8 + 8, 0);
    let f = fatbin(&[
        fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &cub, Packing::Lz4),
        fatbin_entry(FATBIN_KIND_PTX, 90, FATBIN_FLAGS_PLAIN, &ptx_padded, Packing::Zstd),
    ]);
    std::fs::write(d.path("r.fatbin"), f).unwrap();
    let v = json(&cudyn(&d, &["inspect", "r.fatbin", "--json"]));
    assert_eq!(v[0]["accepted"], true, "{v}");
    for e in v[0]["entries"].as_array().unwrap() {
        assert_eq!(e["kernels"].as_array().unwrap().len(), 3, "{e}");
        assert_eq!(e["globals"].as_array().unwrap().len(), 3, "{e}");
    }
}

#[test]
fn completions_and_the_manual_page_come_from_the_command_itself() {
    let d = Dir::new("docs");
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef cudyn"), ("fish", "complete -c cudyn")] {
        let o = cudyn(&d, &["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", show(&o));
        let s = text(&o.stdout);
        assert!(s.contains(marker), "{shell}: {s}");
        for word in ["inspect", "compile", "link", "doctor", "allow-no-kernels", "completions"] {
            assert!(s.contains(word), "{shell} completion lacks {word}");
        }
    }
    let o = cudyn(&d, &["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let man = text(&o.stdout);
    assert!(man.starts_with(".ie") || man.contains(".TH cudyn 1"), "{man}");
    for word in ["inspect", "compile", "link", "doctor", "cache", "Exit status"] {
        assert!(man.contains(word), "the manual page lacks {word}");
    }
    // Every argument of every subcommand has help text (the unit test walks the definition;
    // here, as a user sees it).
    let o = cudyn(&d, &["inspect", "--help"]);
    let help = text(&o.stdout);
    assert!(help.contains("Cubin, fatbin, PTX, LTO-IR or CUDA source files to describe"), "{help}");
    let o = cudyn(&d, &["link", "--help"]);
    assert!(text(&o.stdout).contains("Accept a result with no kernel"), "{}", show(&o));
}
