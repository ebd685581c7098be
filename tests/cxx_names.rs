//! C++ names on real nvcc output, without a GPU: the kernel names of an nvcc fatbin (read from
//! its sm_90 cubin, the names CUDA will list for it) are demangled and matched by
//! `cudyn::names::resolve` as a person would write them. Needs the project's nvcc
//! (scripts/bootstrap.sh); a missing nvcc fails the test.
//!
//! With `CUDYN_REAL_FATBINS` set (a folder of NVIDIA's fatbins, see docs/hardening.md), every
//! kernel name in them is also demangled and typed back: it must name its own kernel.

mod common;

use common::{nvcc, TempDir};
use cudyn::image::contents::contents;
use cudyn::names::{demangle, resolve};
use cudyn::Status;
use std::sync::OnceLock;

const SOURCE: &str = include_str!("../cpp-tests/kernels/peers_kernels.cu");

/// The kernel names of the sm_90 cubin in an nvcc fatbin of `SOURCE`, built once.
fn names() -> &'static [String] {
    static N: OnceLock<Vec<String>> = OnceLock::new();
    N.get_or_init(|| {
        let dir = TempDir::new("cxx_names");
        let fatbin = nvcc(
            &dir.join("peers_kernels.cu"),
            SOURCE,
            &dir.join("peers_kernels.fatbin"),
            &["-fatbin", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"],
        );
        kernel_names(&fatbin)
    })
}

/// Every kernel name of every SASS entry of a fatbin (or of a cubin).
fn kernel_names(image: &[u8]) -> Vec<String> {
    let c = contents(image);
    let mut v: Vec<String> = c.kernels.iter().map(|k| k.name.clone()).collect();
    for e in &c.entries {
        v.extend(e.kernels.iter().map(|k| k.name.clone()));
    }
    v.sort();
    v.dedup();
    v
}

/// The demangled name of the kernel `query` resolves to.
fn found(query: &str) -> String {
    let n = names();
    match resolve(query, n) {
        Ok(i) => demangle(&n[i]).unwrap_or_else(|| n[i].clone()),
        Err(e) => panic!("'{query}': {:?}: {}", e.status, e.message),
    }
}

fn refused(query: &str) -> cudyn::Error {
    let e = resolve(query, names()).expect_err(query);
    assert!(!e.message.is_empty());
    e
}

#[test]
fn the_fatbin_holds_what_the_source_says() {
    let n = names();
    assert_eq!(n.len(), 18, "{n:#?}");
    assert!(n.iter().any(|s| s == "plain"));
    assert!(n.iter().any(|s| s == "_Z4axpyIfEvPT_S0_i"));
}

#[test]
fn template_instances_by_name_and_by_signature() {
    let f = "axpy<float>(float*, float, int)";
    for q in [
        "axpy<float>",
        "axpy< float >",
        "::axpy<float>",
        "axpy<float>(float*, float, int)",
        "axpy<float>(float *, float, int)",
        "void axpy<float>(float*,float,int)",
        "axpy<float>(float* const, const float, signed int)",
        "template __global__ void axpy<float>(float* y, float a, int n);",
        "axpy<float>(float *const y, const float a, int n)",
        "_Z4axpyIfEvPT_S0_i",
    ] {
        assert_eq!(found(q), f, "{q}");
    }
    assert_eq!(found("axpy<double>"), "axpy<double>(double*, double, int)");
    for q in ["axpy<unsigned>", "axpy<unsigned int>", "axpy<uint32_t>", "axpy<std::uint32_t>"] {
        assert_eq!(found(q), "axpy<unsigned int>(unsigned int*, unsigned int, int)", "{q}");
    }
    // int64_t is long (LP64), and long long stays apart from it.
    for q in ["axpy<int64_t>", "axpy<long>", "axpy<long int>", "axpy<std::int64_t>(long*, long, int)"] {
        assert_eq!(found(q), "axpy<long>(long*, long, int)", "{q}");
    }
    assert_eq!(found("axpy<long long>"), "axpy<long long>(long long*, long long, int)");
    // A signature that does not fit is no match, even when the name alone would be.
    assert_eq!(refused("axpy<float>(float*, float)").status, Status::NotFound);
    assert_eq!(refused("axpy<float>(double*, float, int)").status, Status::NotFound);
}

#[test]
fn no_deduction_and_the_not_found_message_lists_the_instances() {
    for q in ["axpy", "axpy<half>", "axpy<int>"] {
        let e = refused(q);
        assert_eq!(e.status, Status::NotFound, "{q}: {}", e.message);
        assert!(e.message.contains(&format!("'{q}'")), "{}", e.message);
        assert!(e.message.contains("axpy<double>(double*, double, int) [_Z4axpyIdEvPT_S0_i]"), "{}", e.message);
    }
    let e = refused("no_such_kernel");
    assert_eq!(e.status, Status::NotFound);
    assert_eq!(e.message, "no kernel of the library is named 'no_such_kernel'");
}

#[test]
fn overloads_need_their_parameters() {
    let e = refused("scale");
    assert_eq!(e.status, Status::AmbiguousName);
    assert!(e.message.contains("scale(float*, float) [_Z5scalePff]"), "{}", e.message);
    assert!(e.message.contains("scale(double*, double) [_Z5scalePdd]"), "{}", e.message);
    assert!(e.message.starts_with("'scale' names 2 kernels"), "{}", e.message);
    assert_eq!(found("scale(double*, double)"), "scale(double*, double)");
    assert_eq!(found("scale(float *, float)"), "scale(float*, float)");
    assert_eq!(refused("scale(int*, int)").status, Status::NotFound);
}

#[test]
fn namespaces_closest_match_first() {
    // The global axpy<float> is the closer match; the namespace's needs its namespace.
    assert_eq!(found("axpy<float>"), "axpy<float>(float*, float, int)");
    assert_eq!(found("other::axpy<float>"), "other::axpy<float>(float*, float, int)");
    assert_eq!(found("::other::axpy<float>"), "other::axpy<float>(float*, float, int)");
    // Only in the namespace: found without it, not as a global.
    assert_eq!(found("axpy<short>"), "other::axpy<short>(short*, short, int)");
    assert_eq!(refused("::axpy<short>").status, Status::NotFound);
    assert_eq!(refused("third::axpy<float>").status, Status::NotFound);
    for q in [
        "take",
        "ns::inner::take",
        "inner::take(ns::inner::Pair, const ns::inner::Pair*)",
        "take(ns::inner::Pair, ns::inner::Pair const*)",
    ] {
        assert_eq!(found(q), "ns::inner::take(ns::inner::Pair, ns::inner::Pair const*)", "{q}");
    }
    // Parameters are written as the kernel's scope sees them only when fully qualified.
    assert_eq!(refused("take(Pair, const Pair*)").status, Status::NotFound);
}

#[test]
fn default_template_arguments_and_anonymous_namespaces() {
    assert_eq!(found("ns::inner::fill<float, 4>"), "ns::inner::fill<float, 4>(float*, float)");
    assert_eq!(found("fill<float, 8>"), "ns::inner::fill<float, 8>(float*, float)");
    assert_eq!(found("inner::fill<float,8>(float*, float)"), "ns::inner::fill<float, 8>(float*, float)");
    // fill<float> is fill<float, 4> in C++, but the default is not in the binary: both fit.
    let e = refused("ns::inner::fill<float>");
    assert_eq!(e.status, Status::AmbiguousName, "{}", e.message);
    assert!(e.message.contains("fill<float, 4>") && e.message.contains("fill<float, 8>"), "{}", e.message);
    for q in ["hidden", "(anonymous namespace)::hidden", "{anonymous}::hidden(int*)", "hidden(int *)"] {
        assert_eq!(found(q), "(anonymous namespace)::hidden(int*)", "{q}");
    }
}

#[test]
fn literals_and_inline_namespaces() {
    for q in ["sized<16>", "sized<16u>", "sized<0x10>", "sized<16>(int (*)[16])", "sized<(unsigned int)16>"] {
        assert_eq!(found(q), "sized<16>(int (*) [16])", "{q}");
    }
    assert_eq!(found("flag<true>"), "flag<true>(int*)");
    assert_eq!(found("neg<-3>"), "neg<-3>(int*)");
    // libcu++'s versioned inline namespace (cuda::std::__4) is not written by people.
    let c = found("cx<cuda::std::complex<float>>");
    assert!(c.starts_with("cx<cuda::std::") && c.contains("complex<float>"), "{c}");
    assert_eq!(found(&c), c, "the full name, inline namespace and all, names it too");
    assert_eq!(found("plain"), "plain");
}

#[test]
fn bad_queries_change_nothing_and_say_why() {
    for q in ["axpy<float", "axpy<float>(float*", "axpy>", ""] {
        let e = refused(q);
        assert_eq!(e.status, Status::InvalidArgument, "{q:?}: {}", e.message);
    }
}

/// Every kernel's demangled name, and its symbol, typed back names that kernel.
fn every_name_names_itself(symbols: &[String]) -> (usize, usize) {
    let mut demangled = 0;
    for (i, s) in symbols.iter().enumerate() {
        assert_eq!(resolve(s, symbols).unwrap(), i, "{s}");
        if let Some(d) = demangle(s) {
            demangled += 1;
            match resolve(&d, symbols) {
                Ok(j) => assert_eq!(j, i, "'{d}' names {} instead of {s}", symbols[j]),
                // Only another kernel of the very same C++ name makes it ambiguous (two static
                // kernels of one name in two translation units).
                Err(e) if e.status == Status::AmbiguousName => {
                    let same = symbols.iter().filter(|t| demangle(t).as_deref() == Some(d.as_str())).count();
                    assert!(same > 1, "'{d}' ({s}): {}", e.message);
                }
                Err(e) => panic!("'{d}' ({s}): {:?}: {}", e.status, e.message),
            }
        }
    }
    (symbols.len(), demangled)
}

#[test]
fn every_kernel_of_the_fatbin_is_found_by_its_demangled_name() {
    let (n, d) = every_name_names_itself(names());
    assert_eq!((n, d), (18, 17), "all but plain are C++ names");
}

/// Lambdas, CUB's kernels and relocatable device code's static kernels, which need flags of
/// their own.
#[test]
fn lambdas_cub_and_static_kernels() {
    let dir = TempDir::new("cxx_names_more");
    let src = r#"
#include <cub/device/device_reduce.cuh>
template <class F> __global__ void each(F f, int* p) { *p = f(1); }
void with_lambda(int* p) { auto f = [] __device__ (int x) { return x + 1; }; each<<<1, 1>>>(f, p); }
void reduce(float* in, float* out, int n) { void* t = nullptr; size_t b = 0; cub::DeviceReduce::Sum(t, b, in, out, n); }
static __global__ void lonely(int* p) { *p = 3; }
void* keep_lonely() { return (void*)lonely; }
"#;
    let cubin = nvcc(
        &dir.join("more.cu"),
        src,
        &dir.join("more.cubin"),
        &["-cubin", "-rdc=true", "-arch=sm_90", "--extended-lambda"],
    );
    let symbols = kernel_names(&cubin);
    let (n, d) = every_name_names_itself(&symbols);
    assert!(n >= 5 && d == n, "{symbols:#?}");
    let find =
        |q: &str| demangle(&symbols[resolve(q, &symbols).unwrap_or_else(|e| panic!("{q}: {}", e.message))]).unwrap();
    // The static kernel of relocatable code is __nv_static_<id>_<mangled>.
    assert!(symbols.iter().any(|s| s.starts_with("__nv_static_")), "{symbols:#?}");
    assert_eq!(find("lonely(int*)"), "lonely(int*)");
    assert_eq!(find("cub::detail::EmptyKernel<void>"), find("EmptyKernel<void>()"));
    let e = resolve("DeviceReduceSingleTileKernel", &symbols).unwrap_err();
    assert_eq!(e.status, Status::NotFound, "{}", e.message);
    assert!(e.message.contains("cub::"), "{}", e.message);
    let lambda = symbols.iter().find(|s| demangle(s).is_some_and(|d| d.starts_with("each<"))).unwrap();
    assert!(demangle(lambda).unwrap().contains("{lambda(int)#1}"), "{lambda}");
}

/// NVIDIA's libraries: every kernel name demangles (or is extern "C"), names its own kernel,
/// and the lookup costs little.
#[test]
fn real_world_kernel_names_name_themselves() {
    let Some(dir) = std::env::var_os("CUDYN_REAL_FATBINS") else {
        eprintln!("CUDYN_REAL_FATBINS not set: no real-world kernel names to check");
        return;
    };
    // A stride through the folder (CUDYN_NAMES_STRIDE, default 1: every file).
    let stride: usize = std::env::var("CUDYN_NAMES_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut kernels, mut demangled, mut undemangled, mut took) = (0, 0, Vec::new(), std::time::Duration::ZERO);
    for f in files.iter().step_by(stride) {
        let symbols = kernel_names(&std::fs::read(f).unwrap());
        let t = std::time::Instant::now();
        let (n, d) = every_name_names_itself(&symbols);
        took += t.elapsed();
        kernels += n;
        demangled += d;
        undemangled.extend(symbols.iter().filter(|s| s.starts_with("_Z") && demangle(s).is_none()).cloned());
    }
    eprintln!(
        "{} files, {kernels} kernels, {demangled} demangled, {} mangled names cpp_demangle refuses; \
         {took:?} for {} lookups",
        files.len().div_ceil(stride),
        undemangled.len(),
        kernels + demangled
    );
    assert!(
        undemangled.is_empty(),
        "{} undemangled, e.g. {:?}",
        undemangled.len(),
        &undemangled[..undemangled.len().min(5)]
    );
}
