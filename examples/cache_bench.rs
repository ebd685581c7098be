//! How long a compile costs through cudyn's cache: cold (NVRTC), a disk hit in a fresh process,
//! a disk hit in a process that has read the headers before, and a memory-tier hit — for a
//! small kernel, a large one, and a CUB BlockReduce + BlockScan kernel. Not a test: numbers.
//!
//! `source scripts/env.sh && cargo run --release --example cache_bench` (no GPU needed; the
//! compile target is the present GPU's, or sm_90). Prints a table; each figure is the median
//! of the runs shown.

use cudyn::cache::Cache;
use cudyn::compile::{compile_with, CompileOptions};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SMALL: &str = r#"extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#;

const CUB: &str = r#"#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
extern "C" __global__ void reduce_scan(const int* in, int* sums, int* scanned) {
    using Reduce = cub::BlockReduce<int, 256>;
    using Scan = cub::BlockScan<int, 256>;
    __shared__ union { typename Reduce::TempStorage r; typename Scan::TempStorage s; } tmp;
    int v = in[blockIdx.x * 256 + threadIdx.x];
    int s = Reduce(tmp.r).Sum(v);
    if (threadIdx.x == 0) sums[blockIdx.x] = s;
    __syncthreads();
    int out;
    Scan(tmp.s).ExclusiveSum(v, out);
    scanned[blockIdx.x * 256 + threadIdx.x] = out;
}"#;

/// A kernel with many unrolled, distinct statements: a large cubin.
fn large() -> String {
    let mut s = String::from("extern \"C\" __global__ void big(float* p, int n) {\n  float a = p[threadIdx.x];\n");
    s.push_str("  #pragma unroll 1\n  for (int k = 0; k < n; ++k) {\n");
    for i in 0..3000 {
        s.push_str(&format!("    a = a * {}.0f + p[(threadIdx.x + {}) & 1023];\n", i % 7 + 1, i));
    }
    s.push_str("  }\n  p[threadIdx.x] = a;\n}\n");
    s
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn compile(src: &str, cache: Option<&Cache>) -> (Duration, cudyn::Compiled) {
    let t = Instant::now();
    let r = compile_with(src, "bench.cu", &CompileOptions::default(), cache)
        .unwrap_or_else(|f| panic!("{}: {}\n{}", f.error.message, f.error.status.text(), f.log));
    (t.elapsed(), r)
}

/// A fresh process doing one compile through the cache in `dir`: its time, in microseconds.
fn in_fresh_process(which: &str, dir: &Path) -> Duration {
    let out = Command::new(std::env::current_exe().unwrap()).args(["--child", which]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Duration::from_nanos(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
}

fn source_of(which: &str) -> String {
    match which {
        "small" => SMALL.to_string(),
        "large" => large(),
        _ => CUB.to_string(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let c = Cache::at(&args[3], 1 << 30).unwrap();
        let (t, r) = compile(&source_of(&args[2]), Some(&c));
        assert!(r.from_cache, "the child expected a disk hit");
        println!("{}", t.as_nanos());
        return;
    }
    let dir = std::env::temp_dir().join(format!("cudyn-cache-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    println!("| kernel | cubin bytes | cold compile ms | disk hit, fresh process us | disk hit, headers known us | memory hit us |");
    println!("|---|---|---|---|---|---|");
    for which in ["small", "large", "cub"] {
        let src = source_of(which);
        let c = Cache::at(&dir, 1 << 30).unwrap();
        let (cold, first) = compile(&src, Some(&c));
        assert!(!first.from_cache);
        let fresh: Vec<Duration> = (0..5).map(|_| in_fresh_process(which, &dir)).collect();
        // Disk hits in this process: a new Cache each time has an empty memory tier; the
        // header hashes are remembered per process (by stat stamp).
        let disk: Vec<Duration> = (0..20)
            .map(|_| {
                let c2 = Cache::at(&dir, 1 << 30).unwrap();
                let (t, r) = compile(&src, Some(&c2));
                assert!(r.from_cache);
                t
            })
            .collect();
        let _ = compile(&src, Some(&c));
        let mem: Vec<Duration> = (0..200)
            .map(|_| {
                let (t, r) = compile(&src, Some(&c));
                assert!(r.from_cache);
                t
            })
            .collect();
        println!(
            "| {which} | {} | {:.1} | {} | {} | {} |",
            first.code.len(),
            cold.as_secs_f64() * 1e3,
            us(median(fresh)),
            us(median(disk)),
            us(median(mem))
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
