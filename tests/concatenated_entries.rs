//! Concatenated fatbin entries (kind 0x100, `fatbinary --concat` of CUDA 13.5): several entries'
//! contents in one compressed run, described by member records that are each the entry header
//! the member would have on its own, with the member's offset in the run where the header size
//! would be. cudyn takes each member for an entry of its own: it lists it, chooses it for a GPU
//! that runs it, checks it, and hands CUDA a plain entry with exactly the header fatbinary
//! writes for that code alone; a concatenated entry that does not describe its run exactly is
//! refused. Built here from CUDA's own fatbinary output (the pinned 13.0 one, which cannot
//! concatenate): its plain entries' headers become the member records, as 13.5's --concat lays
//! them out. With CUDYN_FATBINARY_CONCAT naming a fatbinary that can (13.5), its own output is
//! checked too. CPU only; needs the project's nvcc (scripts/bootstrap.sh).

mod common;

use std::path::Path;
use std::process::Command;

use common::{cuda_tool, TempDir};
use cudyn::image::contents::contents;
use cudyn::image::{inspect, prepare, ArchCode, ImageError};

const KERNEL: &str = "extern \"C\" __global__ void add(float *a, const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n";

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(o.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// Cubins of KERNEL for sm_90, sm_100 and sm_120, and a plain fatbin of the three from `tool`
/// (fatbinary) with `extra` options.
fn build(dir: &Path, tool: &Path, extra: &[&str]) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut cubins = Vec::new();
    let mut cmd = Command::new(tool);
    cmd.arg("-64").arg(format!("--create={}", dir.join("plain.fatbin").display())).args(extra);
    for sm in [90, 100, 120] {
        let out = dir.join(format!("k{sm}.cubin"));
        cubins.push(common::nvcc(&dir.join("k.cu"), KERNEL, &out, &["-cubin", &format!("-arch=sm_{sm}")]));
        cmd.arg(format!("--image3=kind=elf,sm={sm},file={}", out.display()));
    }
    run(&mut cmd);
    (cubins, std::fs::read(dir.join("plain.fatbin")).unwrap())
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
}
fn u64_at(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}
fn put32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
/// Adds `n` to the u32 (`add32`) or u64 (`add64`) at `at`.
fn add32(d: &mut [u8], at: usize, n: u32) {
    let v = u32_at(d, at) + n;
    put32(d, at, v);
}
fn add64(d: &mut [u8], at: usize, n: u64) {
    let v = u64_at(d, at) + n;
    put64(d, at, v);
}

/// The (header, payload) of every entry of a fatbin of plain entries.
fn entries(f: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let end = 16 + u64_at(f, 8) as usize;
    let mut at = 16;
    let mut out = Vec::new();
    while at < end {
        let (hs, ps) = (u32_at(f, at + 4) as usize, u64_at(f, at + 8) as usize);
        out.push((f[at..at + hs].to_vec(), f[at + hs..at + hs + ps].to_vec()));
        at += hs + ps;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Method {
    Zstd,
    Lz4,
}

fn compress(m: Method, data: &[u8]) -> Vec<u8> {
    match m {
        Method::Zstd => {
            let mut out = vec![0u8; zstd_safe::compress_bound(data.len())];
            let n = zstd_safe::compress(&mut out[..], data, 3).expect("zstd compress");
            out.truncate(n);
            out
        }
        Method::Lz4 => {
            let cap = data.len() + data.len() / 255 + 16;
            let mut out = vec![0u8; cap];
            // SAFETY: the pointers and lengths describe `data` and `out`, which outlive the call.
            let n = unsafe {
                lz4_sys::LZ4_compress_default(
                    data.as_ptr().cast(),
                    out.as_mut_ptr().cast(),
                    data.len() as i32,
                    cap as i32,
                )
            };
            assert!(n > 0, "lz4 compress");
            out.truncate(n as usize);
            out
        }
    }
}

/// A concatenated entry of the plain entries `members` (header, payload), compressed with `m`,
/// laid out as fatbinary --concat lays it out.
fn concat_entry(members: &[(Vec<u8>, Vec<u8>)], m: Method) -> Vec<u8> {
    let mut records = Vec::new();
    let mut run = Vec::new();
    for (h, p) in members {
        let mut r = h.clone();
        put32(&mut r, 4, run.len() as u32); // word 1: the member's offset in the run
        records.extend_from_slice(&r);
        run.extend_from_slice(p);
    }
    let stream = compress(m, &run);
    let hs = 64 + 8 + records.len();
    let mut e = vec![0u8; 64];
    put32(&mut e, 0, 0x0101_0100);
    put32(&mut e, 4, hs as u32);
    put64(&mut e, 8, stream.len().next_multiple_of(8) as u64);
    put32(&mut e, 16, stream.len() as u32);
    put32(&mut e, 20, 64); // the member table's (count, bytes) at 0x40
    put32(&mut e, 24, 1); // layout 1
    put64(&mut e, 40, 0x11 | if m == Method::Zstd { 0x8000 } else { 0x2000 });
    put64(&mut e, 56, run.len() as u64);
    e.extend_from_slice(&(members.len() as u32).to_le_bytes());
    e.extend_from_slice(&((8 + records.len()) as u32).to_le_bytes());
    e.extend_from_slice(&records);
    e.extend_from_slice(&stream);
    e.resize(e.len().next_multiple_of(8), 0);
    e
}

fn fatbin(parts: &[&[u8]]) -> Vec<u8> {
    let payload = parts.concat();
    let mut d = vec![0u8; 16];
    put32(&mut d, 0, 0xBA55_ED50);
    d[4..6].copy_from_slice(&1u16.to_le_bytes());
    d[6..8].copy_from_slice(&16u16.to_le_bytes());
    put64(&mut d, 8, payload.len() as u64);
    d.extend_from_slice(&payload);
    d
}

/// sm_90 as a plain entry, then sm_100 and sm_120 concatenated (as --concat groups them).
fn image(plain: &[u8], m: Method) -> Vec<u8> {
    let es = entries(plain);
    let first = [es[0].0.clone(), es[0].1.clone()].concat();
    fatbin(&[&first, &concat_entry(&es[1..], m)])
}

fn refusal(d: &[u8]) -> String {
    match inspect(d) {
        Err(ImageError::Malformed(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn members_are_entries_of_their_own_and_reach_cuda_as_plain_entries() {
    let dir = TempDir::new("concat");
    let (cubins, plain) = build(dir.path(), &cuda_tool("fatbinary"), &[]);
    let es = entries(&plain);
    assert_eq!(es.len(), 3);
    for m in [Method::Zstd, Method::Lz4] {
        let d = image(&plain, m);
        let info = inspect(&d).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        assert_eq!(info.codes, [ArchCode::sass(90), ArchCode::sass(100), ArchCode::sass(120)], "{m:?}");
        assert!(info.compressed);
        // Listed member by member, each with its kernel.
        let c = contents(&d);
        let listed: Vec<ArchCode> = c.entries.iter().map(|e| e.code).collect();
        assert_eq!(listed, info.codes, "{m:?}");
        for e in &c.entries {
            assert_eq!(e.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["add"], "{m:?} {}", e.code);
        }
        // A GPU that runs a member gets it alone, as a plain entry with the very header and
        // payload fatbinary writes for that code on its own.
        for (gpu, entry) in [(100, 1), (120, 2), (90, 0)] {
            let built =
                prepare(&d, &[gpu], false).expect("a fatbin").unwrap_or_else(|e| panic!("{m:?} sm_{gpu}: {e:?}"));
            let want = fatbin(&[&[es[entry].0.clone(), es[entry].1.clone()].concat()]);
            assert!(built.image == want, "{m:?} sm_{gpu}: the image handed to CUDA is not fatbinary's plain entry");
            assert!(built.image.windows(cubins[entry].len()).any(|w| w == cubins[entry]));
        }
        // Two GPUs: the sm_90 entry and the sm_100 member, in order.
        let built = prepare(&d, &[90, 100], false).unwrap().unwrap();
        let want = fatbin(&[&[es[0].0.clone(), es[0].1.clone(), es[1].0.clone(), es[1].1.clone()].concat()]);
        assert!(built.image == want, "{m:?}: sm_90 + sm_100");
        assert_eq!(built.handed, [ArchCode::sass(90), ArchCode::sass(100)]);
    }
}

/// The concatenated entry's header starts at 16 + the first (plain) entry's length.
fn concat_at(plain: &[u8]) -> usize {
    let es = entries(plain);
    16 + es[0].0.len() + es[0].1.len()
}

#[test]
fn concatenated_entries_that_do_not_describe_their_run_are_refused() {
    let dir = TempDir::new("concat-bad");
    let (_, plain) = build(dir.path(), &cuda_tool("fatbinary"), &[]);
    let good = image(&plain, Method::Zstd);
    let c = concat_at(&plain);
    let hs = u32_at(&good, c + 4) as usize;
    let r0 = c + 72; // first member record
    let r1 = r0 + entries(&plain)[1].0.len(); // second member record
    type Edit = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("no members", Box::new(move |d| put32(d, c + 64, 0)), "member table"),
        ("table size off", Box::new(move |d| put32(d, c + 68, (hs - 64 - 8) as u32)), "member table"),
        ("unknown layout", Box::new(move |d| put32(d, c + 24, 2)), "layout 2"),
        ("an architecture", Box::new(move |d| put32(d, c + 28, 90)), "architecture 90"),
        ("not compressed", Box::new(move |d| put64(d, c + 40, 0x11)), "one compression method"),
        ("a gap before member 1", Box::new(move |d| add32(d, r1 + 4, 8)), "member 1: it starts at"),
        ("member 0 overlaps member 1", Box::new(move |d| add64(d, r0 + 8, 8)), "member 1: it starts at"),
        ("the last member past the run", Box::new(move |d| add64(d, r1 + 8, 8)), "run past the"),
        ("a run longer than its members", Box::new(move |d| add64(d, c + 56, 8)), "must end exactly"),
        ("a compressed member (its bit 0x8000 set)", Box::new(move |d| add64(d, r0 + 40, 0x8000)), "member 0:"),
        ("an LTO-IR member", Box::new(move |d| d[r1] = 8), "member 1:"),
        ("a member of architecture 5", Box::new(move |d| put32(d, r0 + 28, 5)), "member 0: architecture 5"),
        (
            "non-zero padding",
            Box::new(move |d| {
                let e = d.len() - 1;
                d[e] = 1;
            }),
            "padding",
        ),
    ];
    let mut seen = 0;
    for (what, edit, says) in &cases {
        let mut d = good.clone();
        edit(&mut d);
        if what == &"non-zero padding" && u64_at(&d, c + 8) == u32_at(&d, c + 16) as u64 {
            continue; // the stream happened to fill its payload: no padding to spoil
        }
        let m = refusal(&d);
        assert!(m.contains(says), "{what}: {m}");
        assert!(m.contains("fatbin entry 1"), "{what}: {m}");
        // A bad header anywhere refuses the image, whatever the GPU runs.
        assert!(prepare(&d, &[90], false).unwrap().is_err(), "{what}: loaded for sm_90");
        seen += 1;
    }
    assert!(seen >= cases.len() - 1);

    // A member whose bytes are not what its record says: refused when it is checked (always by
    // inspect; by a load for a GPU that runs it), never handed over.
    let mut d = good.clone();
    put32(&mut d, r0 + 28, 120); // the sm_100 cubin labelled sm_120
    put32(&mut d, r1 + 28, 100);
    let m = refusal(&d);
    assert!(m.contains("member 0") && m.contains("holds a cubin for sm_100, not for the entry's sm_120"), "{m}");
    assert!(prepare(&d, &[120], false).unwrap().is_err());
    // A run that does not decompress to its declared size.
    let mut d = good.clone();
    add64(&mut d, c + 56, 8);
    add64(&mut d, r1 + 8, 8);
    let m = refusal(&d);
    assert!(m.contains("concatenated entry's payload is refused"), "{m}");
    assert!(prepare(&d, &[100], false).unwrap().is_err());
}

/// What fatbinary --concat itself writes, where a fatbinary that can is named
/// (CUDYN_FATBINARY_CONCAT=/path/to/cuda-13.5/bin/fatbinary); without it, there is nothing to run.
#[test]
fn fatbinary_concat_output_where_available() {
    let Some(tool) = std::env::var_os("CUDYN_FATBINARY_CONCAT") else { return };
    let dir = TempDir::new("concat-real");
    for extra in [&["-compress-all", "-concat"][..], &["-compress-all", "-concat", "-compress-mode=speed"]] {
        let (cubins, d) = build(dir.path(), Path::new(&tool), extra);
        let info = inspect(&d).unwrap_or_else(|e| panic!("{extra:?}: {e}"));
        assert_eq!(info.codes, [ArchCode::sass(90), ArchCode::sass(100), ArchCode::sass(120)], "{extra:?}");
        let raw = contents(&d);
        assert!(raw.entries.iter().all(|e| e.kernels.len() == 1));
        for (i, gpu) in [90, 100, 120].into_iter().enumerate() {
            let built = prepare(&d, &[gpu], false).unwrap().unwrap_or_else(|e| panic!("{extra:?} sm_{gpu}: {e:?}"));
            assert!(built.image.windows(cubins[i].len()).any(|w| w == cubins[i]), "{extra:?} sm_{gpu}");
            assert_eq!(built.handed, [ArchCode::sass(gpu)]);
        }
    }
}

/// Bit flips anywhere in a concatenated image: never a panic, and whatever `prepare` builds from
/// a mutant is a well-formed image of exactly the code it says it handed over
/// (`cudyn::fuzzing::image_prepare`'s invariants); the listing never panics either.
#[test]
fn mutated_concatenated_images_never_panic_and_build_only_checked_images() {
    use cudyn::fuzzing::{check_image_invariants, image_prepare, Rng};
    let dir = TempDir::new("concat-mutants");
    let (_, plain) = build(dir.path(), &cuda_tool("fatbinary"), &[]);
    let c = concat_at(&plain);
    for (m, seed) in [(Method::Zstd, 0x9e37_79b9_7f4a_7c15u64), (Method::Lz4, 0x2545_f491_4f6c_dd1d)] {
        let good = image(&plain, m);
        let mut rng = Rng(seed);
        let mut accepted = 0;
        for round in 0..1500 {
            let mut d = good.clone();
            // Half the flips land in the concatenated entry's header, where the layout lives.
            for _ in 0..1 + rng.below(4) {
                let i = if round % 2 == 0 { c + rng.below(u32_at(&good, c + 4) as usize) } else { rng.below(d.len()) };
                d[i] ^= 1 << rng.below(8);
            }
            if check_image_invariants(&d).is_ok() {
                accepted += 1;
            }
            image_prepare(&d);
            let _ = contents(&d);
        }
        // Some flips (in the cubins' unchecked bytes, the options) leave an image that passes:
        // the walk was exercised past the header, not stopped at its first word.
        assert!(accepted > 0 && accepted < 1500, "{m:?}: {accepted} of 1500 mutants accepted");
    }
}
