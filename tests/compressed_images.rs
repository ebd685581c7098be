//! Compressed fatbin entries, as nvcc and fatbinary write them, are decompressed and checked
//! like plain ones: nvcc's output in every compression mode passes, and cubins cudyn refuses
//! are refused just the same when wrapped, compressed, into a fatbin (on the H200 such images
//! crashed CUDA's loader while cudyn skipped compressed payloads). CPU only; needs the
//! project's nvcc (scripts/bootstrap.sh).

mod common;

use std::path::Path;
use std::process::Command;

use common::{cuda_tool, TempDir};
use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF};
use cudyn::image::{inspect, ArchCode, CodeKind};

const KERNEL: &str = "extern \"C\" __global__ void add(float *a, const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n";

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&o.stderr));
}

fn nvcc(dir: &Path, out: &str, args: &[&str]) -> Vec<u8> {
    common::nvcc(&dir.join("k.cu"), KERNEL, &dir.join(out), args)
}

/// `cubin` wrapped by CUDA's own fatbinary into a one-entry fatbin, compressed in `mode`.
fn fatbinary(dir: &Path, cubin: &[u8], mode: &str) -> Vec<u8> {
    let (input, out) = (dir.join("in.cubin"), dir.join(format!("wrapped-{mode}.fatbin")));
    std::fs::write(&input, cubin).unwrap();
    let mut image = std::ffi::OsString::from("--image3=kind=elf,sm=90,file=");
    image.push(&input);
    run(Command::new(cuda_tool("fatbinary"))
        .arg(format!("--create={}", out.display()))
        .args(["-64", "-compress-all", &format!("-compress-mode={mode}")])
        .arg(image));
    std::fs::read(out).unwrap()
}

/// The flags word of the fatbin's first entry.
fn first_entry_flags(f: &[u8]) -> u64 {
    u64::from_le_bytes(f[16 + 40..16 + 48].try_into().unwrap())
}

#[test]
fn nvcc_output_in_every_compression_mode_passes() {
    let dir = TempDir::new("compressed");
    let multi =
        ["-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"];
    let want = [ArchCode::sass(80), ArchCode::sass(90), ArchCode::ptx(90)];
    // (mode, the compression flag nvcc 13.0 writes for it)
    for (mode, flag) in [("default", 0x8000), ("size", 0x8000), ("balance", 0x8000), ("speed", 0x2000), ("none", 0)] {
        let mut args = multi.to_vec();
        let opt = format!("--compress-mode={mode}");
        args.extend(["-Xfatbin=-compress-all", &opt]);
        let f = nvcc(dir.path(), &format!("{mode}.fatbin"), &args);
        let info = inspect(&f).unwrap_or_else(|e| panic!("--compress-mode={mode}: {e}"));
        assert_eq!(info.kind, CodeKind::Fatbin);
        assert_eq!(info.len, f.len());
        assert_eq!(info.codes, want, "--compress-mode={mode}");
        assert_eq!(info.compressed, flag != 0, "--compress-mode={mode}");
        assert_eq!(first_entry_flags(&f) & 0xa000, flag, "--compress-mode={mode}: nvcc's flag changed");
    }
    // A debug build (-G) and -lineinfo: a longer entry header with the source file's path (in
    // UTF-8, as nvcc writes it) and JIT options.
    let utf8 = dir.join("d\u{e9}");
    std::fs::create_dir_all(&utf8).unwrap();
    for (i, opt) in ["-G", "-lineinfo"].into_iter().enumerate() {
        let f = nvcc(&utf8, &format!("{i}.fatbin"), &["-fatbin", opt, "-arch=sm_90", "-Xfatbin=-compress-all"]);
        let info = inspect(&f).unwrap_or_else(|e| panic!("{opt}: {e}"));
        assert!(info.compressed);
        assert_eq!(info.codes, [ArchCode::sass(90), ArchCode::ptx(90)]);
        assert!(f.windows(3).any(|w| w == "d\u{e9}".as_bytes()), "{opt}: no path in the entry header");
    }
}

/// Cubins cudyn refuses, from one real cubin; each with the part of the refusal message it gets.
fn hostile_cubins(cubin: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let u16_at = |o: usize| u16::from_le_bytes([cubin[o], cubin[o + 1]]) as usize;
    let shoff = u64::from_le_bytes(cubin[40..48].try_into().unwrap()) as usize;
    let shnum = u16_at(60);
    let section = |i: usize| shoff + 64 * i;
    let with = |at: usize, v: &[u8]| {
        let mut c = cubin.to_vec();
        c[at..at + v.len()].copy_from_slice(v);
        c
    };
    let symtab = (1..shnum).find(|&i| cubin[section(i) + 4] == 2).expect("a symbol table");
    let symbols = u64::from_le_bytes(cubin[section(symtab) + 24..section(symtab) + 32].try_into().unwrap()) as usize;
    vec![
        // The section header table past the end, and somewhere it is not.
        ("truncated", with(40, &((cubin.len() + 4096) as u64).to_le_bytes())),
        ("", with(40, &64u64.to_le_bytes())),
        ("null section", with(section(0) + 24, &1u64.to_le_bytes())),
        ("outside the name table", with(section(3), &0x10000u32.to_le_bytes())),
        ("out of range", with(62, &((shnum + 3) as u16).to_le_bytes())),
        ("does not exist", with(symbols + 2 * 24 + 6, &0x9000u16.to_le_bytes())),
    ]
}

#[test]
fn refused_cubins_are_refused_compressed() {
    let dir = TempDir::new("hostile");
    let cubin = nvcc(dir.path(), "k.cubin", &["-cubin", "-arch=sm_90"]);
    assert!(inspect(&cubin).is_ok());
    // The wrapping itself is sound: the good cubin wrapped each way passes.
    for mode in ["default", "speed"] {
        let f = fatbinary(dir.path(), &cubin, mode);
        assert!(inspect(&f).is_ok(), "fatbinary {mode}: {:?}", inspect(&f));
    }
    for (why, bad) in hostile_cubins(&cubin) {
        let alone = inspect(&bad).expect_err(why).to_string();
        assert!(alone.contains(why), "alone: {alone} (expected {why})");
        let mut wrapped = vec![
            ("fatbinary zstd", fatbinary(dir.path(), &bad, "default")),
            ("fatbinary lz4", fatbinary(dir.path(), &bad, "speed")),
        ];
        for packing in [Packing::Lz4, Packing::Zstd] {
            wrapped.push(("cudyn", fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &bad, packing)])));
        }
        for (how, f) in wrapped {
            assert_ne!(first_entry_flags(&f) & 0xa000, 0, "{how}: not compressed");
            match inspect(&f) {
                Ok(_) => panic!("{how}: a cubin refused alone ({alone}) passed compressed"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(e.contains("bad cubin") && e.contains(why), "{how}: {e} (alone: {alone})");
                }
            }
        }
    }
}

/// A large fatbin's entries are checked by several threads; the verdict — which entry is
/// reported, and why — must be the one an in-order pass gives. Mutants of a multi-entry fatbin
/// (plain, LZ4 and zstd entries; some with a bad cubin planted, some with header words
/// corrupted) are checked both ways, all threads forced on whatever the size.
#[test]
fn parallel_entry_checks_give_the_in_order_verdict() {
    use cudyn::fuzzing::Rng;
    use cudyn::image::inspect_with_threads;
    let dir = TempDir::new("parallel");
    let cubin = nvcc(dir.path(), "k.cubin", &["-cubin", "-arch=sm_90"]);
    let bad = hostile_cubins(&cubin);
    let mut rng = Rng(0x5eed_cafe);
    let (mut refused, mut passed, mut by_entry) = (0, 0, std::collections::BTreeSet::new());
    for round in 0..300 {
        // 6 to 12 entries, each plain or compressed, a few of them hostile.
        let n = 6 + rng.below(7);
        let entries: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let packing = [Packing::Plain, Packing::Lz4, Packing::Zstd][rng.below(3)];
                let body = if rng.below(16) == 0 { &bad[rng.below(bad.len())].1 } else { &cubin };
                fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, body, packing)
            })
            .collect();
        let mut f = fatbin(&entries);
        // Now and then a flipped byte anywhere (headers included).
        if rng.below(3) == 0 {
            let at = rng.below(f.len());
            f[at] ^= 1 << rng.below(8);
        }
        let one = inspect_with_threads(&f, 1).map(|i| i.codes.len()).map_err(|e| e.to_string());
        // The image built for CUDA (here every entry is chosen: all are sm_90), in order and
        // with the threads forced on: the same bytes, or the same refusal.
        let build = |threads: usize, min: usize| match cudyn::image::plan(&f, &[90], false) {
            Some(Ok(p)) => p.build_with(&[90], threads, min).map(|b| b.image).map_err(|e| format!("{e:?}")),
            Some(Err(e)) => Err(format!("{e:?}")),
            None => Err("not a fatbin".into()),
        };
        let built_in_order = build(1, usize::MAX);
        for threads in [2, 4, 8] {
            let many = inspect_with_threads(&f, threads).map(|i| i.codes.len()).map_err(|e| e.to_string());
            assert_eq!(one, many, "round {round}, {threads} threads");
            assert_eq!(built_in_order, build(threads, 0), "round {round}: the build, {threads} threads");
        }
        assert_eq!(
            one.is_ok(),
            built_in_order.is_ok(),
            "round {round}: every entry is handed over, so the verdicts agree"
        );
        match &one {
            Ok(_) => passed += 1,
            Err(e) => {
                refused += 1;
                by_entry.insert(e.split(" at offset").next().unwrap_or("").to_string());
            }
        }
    }
    // The test means something only if both verdicts occur and failures sit in various entries.
    assert!(refused > 50 && passed > 50, "refused {refused}, passed {passed}");
    assert!(by_entry.len() >= 5, "failures in too few entries: {by_entry:?}");
}
