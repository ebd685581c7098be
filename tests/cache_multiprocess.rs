//! Many processes, one cache folder: eight processes compile the same, pairwise-shared and
//! their own sources at once. No entry is torn or lost, the size bound holds once they are
//! done, no temp file is left, and every process gets exactly the code NVRTC makes without a
//! cache. (What cudyn assumes of the filesystem: docs/hardening.md, "Compile cache".)
//!
//! Run with `source scripts/env.sh && cargo test --test cache_multiprocess`.

mod common;

use common::*;
use cudyn::cache::{decode_entry, Cache, Key, ENTRY_HEADER_LEN};
use cudyn::compile::{compile_with, CompileOptions};
use std::fs;
use std::path::Path;

const N: usize = 8;
const TEST: &str = "eight_processes_share_one_cache";

fn source(value: u32) -> String {
    format!("extern \"C\" __global__ void k(int* out) {{ out[threadIdx.x] = {value} + threadIdx.x; }}\n")
}

/// The sources process `i` compiles: one all share, one it shares with its neighbour, its own.
fn values_of(i: usize) -> [u32; 3] {
    [0x10000, 0x20000 + (i / 2) as u32, 0x30000 + i as u32]
}

fn entry_keys(dir: &Path) -> Vec<(Key, Vec<u8>)> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".cudyn") else { continue };
        let mut k = [0u8; 32];
        for (j, b) in k.iter_mut().enumerate() {
            *b = u8::from_str_radix(&stem[2 * j..2 * j + 2], 16).unwrap();
        }
        v.push((Key(k), fs::read(e.path()).unwrap()));
    }
    v
}

fn run_round(td: &TempDir, round: &str, max_bytes: u64) -> std::path::PathBuf {
    let dir = td.join(&format!("cache-{round}"));
    let go = td.join(&format!("go-{round}"));
    let children: Vec<_> = (0..N)
        .map(|i| {
            spawn_child(
                TEST,
                "worker",
                &[
                    ("WORK_DIR", dir.to_str().unwrap()),
                    ("WORK_GO", go.to_str().unwrap()),
                    ("WORK_OUT", td.join(&format!("out-{round}-{i}")).to_str().unwrap()),
                    ("WORK_INDEX", &i.to_string()),
                    ("WORK_MAX", &max_bytes.to_string()),
                ],
            )
        })
        .collect();
    fs::write(&go, b"").unwrap();
    for ch in children {
        expect_child_ok(ch, "worker");
    }
    dir
}

#[test]
fn eight_processes_share_one_cache() {
    if child_mode().as_deref() == Some("worker") {
        let var = |k: &str| std::env::var(k).unwrap();
        let i: usize = var("WORK_INDEX").parse().unwrap();
        let c = Cache::at(var("WORK_DIR"), var("WORK_MAX").parse().unwrap()).unwrap();
        while !Path::new(&var("WORK_GO")).exists() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let out = std::path::PathBuf::from(var("WORK_OUT"));
        fs::create_dir_all(&out).unwrap();
        // Twice over, in an order that differs between processes.
        let vals = values_of(i);
        for pass in 0..2 {
            for j in 0..3 {
                let v = vals[(i + j + pass) % 3];
                let r = compile_with(&source(v), "mp.cu", &CompileOptions::default(), Some(&c))
                    .unwrap_or_else(|f| panic!("{}: {}", f.error.message, f.log));
                fs::write(out.join(format!("{v:x}-{pass}")), &r.code).unwrap();
            }
        }
        return;
    }
    require_project_env();
    let td = TempDir::new("multiproc");
    let mut reference = std::collections::HashMap::new();
    for i in 0..N {
        for v in values_of(i) {
            reference
                .entry(v)
                .or_insert_with(|| compile_with(&source(v), "mp.cu", &CompileOptions::default(), None).unwrap().code);
        }
    }
    let distinct = reference.len();
    let check_outputs = |round: &str| {
        for i in 0..N {
            for v in values_of(i) {
                for pass in 0..2 {
                    let got = fs::read(td.join(&format!("out-{round}-{i}/{v:x}-{pass}"))).unwrap();
                    assert!(got == reference[&v], "round {round}: process {i} got wrong code for {v:#x} (pass {pass})");
                }
            }
        }
    };
    let temps = |d: &Path| {
        fs::read_dir(d)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".cudyn-tmp."))
            .count()
    };

    // Room for everything: every distinct compile is there at the end, none torn.
    let dir = run_round(&td, "roomy", 64 << 20);
    check_outputs("roomy");
    let entries = entry_keys(&dir);
    assert_eq!(entries.len(), distinct, "lost or extra entries");
    for (k, bytes) in &entries {
        assert!(decode_entry(k, bytes).is_ok(), "a torn entry");
    }
    assert_eq!(temps(&dir), 0);
    let entry_size = entries.iter().map(|(_, b)| b.len()).max().unwrap() as u64;
    assert!(entry_size > ENTRY_HEADER_LEN as u64);

    // Room for three entries: eviction races with writers; the bound holds at the end and
    // every process still got the right code.
    let bound = 3 * entry_size + entry_size / 2;
    let dir = run_round(&td, "tight", bound);
    check_outputs("tight");
    let entries = entry_keys(&dir);
    let total: u64 = entries.iter().map(|(_, b)| b.len() as u64).sum();
    assert!(total <= bound, "{total} bytes in the cache, bound {bound}");
    assert!(!entries.is_empty());
    for (k, bytes) in &entries {
        assert!(decode_entry(k, bytes).is_ok(), "a torn entry");
    }
    assert_eq!(temps(&dir), 0);
}
