//! What a load hands CUDA (`image::plan` / `Plan::build`): a fatbin of exactly the entries the
//! GPUs of the process can run, each decompressed and checked — so the bytes CUDA reads are the
//! bytes cudyn checked — chosen by CUDA's compatibility rules for every GPU present, whatever the
//! other entries hold. CPU only: nvcc (scripts/bootstrap.sh) builds the fatbins.

mod common;

use common::TempDir;
use cudyn::image::{inspect, plan, prepare, select_for, ArchCode, ArchVariant, Built, PlanError};

const KERNEL: &str = "extern \"C\" __global__ void add(float *a, const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n__device__ int counter;\n";

/// One fatbin entry as a test reads it (independently of cudyn's parser).
#[derive(Debug)]
struct Entry {
    at: usize,
    kind: u16,
    sm: u32,
    flags: u64,
    header: Vec<u8>,
    payload: Vec<u8>,
}

fn entries(f: &[u8]) -> Vec<Entry> {
    let u16_at = |o: usize| u16::from_le_bytes(f[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(f[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(f[o..o + 8].try_into().unwrap());
    let end = 16 + u64_at(8) as usize;
    let mut at = 16;
    let mut v = Vec::new();
    while at + 64 <= end {
        let hs = u32_at(at + 4) as usize;
        let ps = u64_at(at + 8) as usize;
        v.push(Entry {
            at,
            kind: u16_at(at),
            sm: u32_at(at + 28),
            flags: u64_at(at + 40),
            header: f[at..at + hs].to_vec(),
            payload: f[at + hs..at + hs + ps].to_vec(),
        });
        at += hs + ps;
    }
    v
}

/// Where a cubin's section table ends (a lower bound of its length).
fn elf_len(c: &[u8]) -> usize {
    let shoff = u64::from_le_bytes(c[40..48].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes(c[60..62].try_into().unwrap()) as usize;
    shoff + 64 * shnum
}

struct Images {
    _dir: TempDir,
    /// Entries sm_80, sm_90, compute_90, sm_90a, sm_100, compute_100; per compress mode.
    by_mode: Vec<(&'static str, Vec<u8>)>,
}

fn build() -> Images {
    let dir = TempDir::new("image-select");
    let mut by_mode = Vec::new();
    for mode in ["none", "default", "speed"] {
        let opt = format!("--compress-mode={mode}");
        let args = [
            "-fatbin",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-gencode",
            "arch=compute_100,code=[sm_100,compute_100]",
            "-Xfatbin=-compress-all",
            &opt,
        ];
        let f = common::nvcc(&dir.join("k.cu"), KERNEL, &dir.join(&format!("{mode}.fatbin")), &args);
        by_mode.push((mode, f));
    }
    Images { _dir: dir, by_mode }
}

fn built(f: &[u8], gpus: &[u32], force_ptx: bool) -> Built {
    match prepare(f, gpus, force_ptx).expect("a fatbin") {
        Ok(b) => b,
        Err(e) => panic!("preparing for {gpus:?}: {e:?}"),
    }
}

const S80: ArchCode = ArchCode::sass(80);
const S90: ArchCode = ArchCode::sass(90);
const S90A: ArchCode = ArchCode::Sass { sm: 90, variant: ArchVariant::A };
const P90: ArchCode = ArchCode::ptx(90);
const S100: ArchCode = ArchCode::sass(100);
const P100: ArchCode = ArchCode::ptx(100);

#[test]
fn the_entries_each_gpu_runs_are_chosen() {
    let codes = [S80, S90, S90A, P90, S100, P100];
    let chosen = |gpus: &[u32], force: bool| {
        let s = select_for(&codes, gpus, force);
        let picked: Vec<ArchCode> = codes.iter().zip(&s.chosen).filter(|(_, &c)| c).map(|(c, _)| *c).collect();
        (picked, s.jit)
    };
    // An H200: the sm_90a SASS, which CUDA picks over the plain sm_90 piece (H100, driver 580:
    // in either order); the PTX of the same level is not needed.
    assert_eq!(chosen(&[90], false), (vec![S90A], false));
    // An A100 and an A10 (sm_86 runs sm_80 SASS), an sm_103 (sm_100 SASS runs within the major).
    assert_eq!(chosen(&[80], false), (vec![S80], false));
    assert_eq!(chosen(&[86], false), (vec![S80], false));
    assert_eq!(chosen(&[103], false), (vec![S100], false));
    // No SASS for sm_120: the newest PTX it can JIT.
    assert_eq!(chosen(&[120], false), (vec![P100], true));
    // Two GPUs: what either runs.
    assert_eq!(chosen(&[80, 90], false), (vec![S80, S90A], false));
    assert_eq!(chosen(&[90, 120], false), (vec![S90A, P100], true));
    // Nothing for an sm_75.
    assert_eq!(chosen(&[75], false), (vec![], false));
    // CUDA_FORCE_PTX_JIT: the PTX too, and the JIT runs.
    assert_eq!(chosen(&[90], true), (vec![S90A, P90], true));
    // PTX newer than every SASS a GPU runs is kept beside the SASS (whichever CUDA prefers).
    let older = [S80, ArchCode::ptx(86)];
    let s = select_for(&older, &[89], false);
    assert_eq!(s.chosen, vec![true, true]);
    assert!(!s.jit);
    // Plain SASS of the GPU's own architecture is dropped only beside an 'a' piece for it: every
    // 'a' piece is kept (CUDA takes the first), plain pieces of an earlier minor version are
    // kept, and so are 'f' pieces.
    let dup = [S90A, S90, S90A, ArchCode::sass(86)];
    assert_eq!(select_for(&dup, &[90], false).chosen, vec![true, false, true, false]);
    assert_eq!(select_for(&[S90], &[90], false).chosen, vec![true]);
    let minor = [ArchCode::sass(80), ArchCode::sass(86), ArchCode::Sass { sm: 86, variant: ArchVariant::A }];
    assert_eq!(select_for(&minor, &[86], false).chosen, vec![true, false, true]);
    assert_eq!(select_for(&minor, &[89], false).chosen, vec![true, true, false]);
    let family = [
        ArchCode::Sass { sm: 100, variant: ArchVariant::F },
        ArchCode::sass(100),
        ArchCode::Sass { sm: 100, variant: ArchVariant::A },
    ];
    assert_eq!(select_for(&family, &[100], false).chosen, vec![true, false, true]);
    assert_eq!(select_for(&family, &[103], false).chosen, vec![true, true, false]);
    // 'a' PTX only on exactly its architecture; 'f' SASS within its family.
    let special =
        [ArchCode::Ptx { sm: 90, variant: ArchVariant::A }, ArchCode::Sass { sm: 100, variant: ArchVariant::F }];
    assert_eq!(select_for(&special, &[90], false).chosen, vec![true, false]);
    assert_eq!(select_for(&special, &[103], false).chosen, vec![false, true]);
    assert_eq!(select_for(&special, &[120], false).chosen, vec![false, false]);
}

#[test]
fn the_built_image_is_the_chosen_entries_uncompressed() {
    let imgs = build();
    let plain = &imgs.by_mode[0].1;
    let plain_entries = entries(plain);
    assert_eq!(plain_entries.len(), 6);
    for (mode, f) in &imgs.by_mode {
        let e = entries(f);
        if *mode != "none" {
            assert!(e.iter().all(|e| e.flags & 0xa000 != 0), "--compress-mode={mode} compressed every entry");
        }
        for (gpus, want) in
            [(&[90][..], vec![S90A]), (&[80], vec![S80]), (&[120], vec![P100]), (&[80, 103], vec![S80, S100])]
        {
            let b = built(f, gpus, false);
            assert_eq!(b.handed, want, "{mode} for {gpus:?}");
            assert_eq!(b.info.codes, [S80, S90, P90, S90A, S100, P100]);
            // The built image is a fatbin of just those entries, none compressed, checked in full.
            let info = inspect(&b.image).unwrap_or_else(|e| panic!("{mode} {gpus:?}: built image refused: {e}"));
            assert_eq!(info.codes, want);
            assert!(!info.compressed);
            assert_eq!(info.len, b.image.len());
            // Entry by entry: the header is the original's but for the compression fields, and the
            // payload holds the same code as nvcc's uncompressed build of the same source.
            for (got, code) in entries(&b.image).iter().zip(&want) {
                assert_eq!(got.flags & 0xa000, 0);
                assert_eq!(got.payload.len() % 8, 0);
                let orig =
                    e.iter().find(|o| o.sm == got.sm && o.kind == got.kind && o.flags & !0xa000 == got.flags).unwrap();
                assert_eq!(got.header[..8], orig.header[..8], "kind, magic, header size");
                assert_eq!(got.header[20..40], orig.header[20..40], "options, arch, name");
                assert_eq!(got.header[48..56], orig.header[48..56]);
                assert_eq!(got.header[64..], orig.header[64..], "name and options");
                assert_eq!(u32::from_le_bytes(got.header[16..20].try_into().unwrap()), 0, "no compressed size");
                assert_eq!(u64::from_le_bytes(got.header[56..64].try_into().unwrap()), 0, "no uncompressed size");
                let reference =
                    plain_entries.iter().find(|o| o.sm == got.sm && o.kind == got.kind && o.flags == got.flags);
                let reference = reference.unwrap_or_else(|| panic!("{code} in the plain build"));
                if got.kind == 2 {
                    // Equal up to the shorter; past it, zero padding only.
                    let n = got.payload.len().min(reference.payload.len());
                    assert_eq!(
                        got.payload[..n],
                        reference.payload[..n],
                        "{mode}: {code}'s cubin differs from nvcc's plain one"
                    );
                    assert!(got.payload[n..].iter().chain(&reference.payload[n..]).all(|&b| b == 0));
                    assert!(n >= elf_len(&reference.payload));
                } else {
                    let text = |p: &[u8]| p.iter().position(|&b| b == 0).map_or(p.to_vec(), |n| p[..n].to_vec());
                    assert_eq!(text(&got.payload), text(&reference.payload), "{mode}: {code}'s PTX differs");
                }
            }
        }
        // Nothing any GPU runs: refused before anything is decompressed, naming what it holds.
        match prepare(f, &[75], false).unwrap() {
            Err(PlanError::NoBinary { codes }) => assert_eq!(codes.len(), 6),
            other => panic!("{mode} for sm_75: {other:?}"),
        }
    }
}

#[test]
fn entries_not_handed_over_need_only_a_sound_header() {
    let imgs = build();
    for (mode, f) in &imgs.by_mode {
        let e = entries(f);
        let s80 = e.iter().find(|e| e.sm == 80 && e.kind == 2).unwrap();
        // Ruin the sm_80 entry's payload (its first bytes: the ELF magic, or the compressed
        // stream's frame header).
        let mut bad = f.clone();
        let p = s80.at + s80.header.len();
        bad[p..p + 8].copy_from_slice(&[0xee; 8]);
        assert!(inspect(&bad).is_err(), "{mode}: the full check refuses the ruined entry");
        // On an H200 it is never read: the image built is the same as from the sound fatbin.
        let good = built(f, &[90], false);
        let from_bad = built(&bad, &[90], false);
        assert_eq!(from_bad.image, good.image, "{mode}");
        // The key the memo compares does not include it, so both share one built image.
        let concat = |d: &[u8]| plan(d, &[90], false).unwrap().unwrap().key_parts().concat();
        assert_eq!(concat(&bad), concat(f), "{mode}");
        // Where it would be handed over, it is refused.
        match prepare(&bad, &[80], false).unwrap() {
            Err(PlanError::Image(err)) => assert!(err.to_string().contains("entry 0"), "{mode}: {err}"),
            other => panic!("{mode}: the ruined sm_80 entry was handed over: {other:?}"),
        }
        // So is the plain sm_90 entry beside the sm_90a one, which CUDA never picks on an sm_90.
        let s90 = e.iter().find(|e| e.sm == 90 && e.kind == 2 && e.flags & 0x10_0000 == 0).unwrap();
        let mut plain90 = f.clone();
        let p = s90.at + s90.header.len();
        plain90[p..p + 8].copy_from_slice(&[0xee; 8]);
        assert!(inspect(&plain90).is_err(), "{mode}: the full check refuses the ruined entry");
        assert_eq!(built(&plain90, &[90], false).image, good.image, "{mode}");
        assert_eq!(concat(&plain90), concat(f), "{mode}");
        // A ruined payload of a chosen entry changes the key.
        let s90a = e.iter().find(|e| e.sm == 90 && e.kind == 2 && e.flags & 0x10_0000 != 0).unwrap();
        let mut other = f.clone();
        let q = s90a.at + s90a.header.len() + 16;
        other[q] ^= 1;
        assert_ne!(concat(&other), concat(f), "{mode}");
        // A bad header refuses the image wherever it is, chosen or not.
        let mut bad_header = f.clone();
        bad_header[s80.at + 2] = 0x07;
        match prepare(&bad_header, &[90], false).unwrap() {
            Err(PlanError::Image(err)) => assert!(err.to_string().contains("header word 2"), "{mode}: {err}"),
            other => panic!("{mode}: a bad entry header was passed over: {other:?}"),
        }
    }
}

#[test]
fn a_cubin_is_handed_over_as_it_is() {
    let dir = TempDir::new("image-select-cubin");
    let c = common::nvcc(&dir.join("k.cu"), KERNEL, &dir.join("k.cubin"), &["-cubin", "-arch=sm_90"]);
    let b = built(&c, &[90], false);
    assert_eq!(b.image, c);
    assert_eq!(b.handed, [S90]);
    let mut padded = c.clone();
    padded.extend_from_slice(&[0; 24]);
    assert_eq!(built(&padded, &[90], false).image, c, "bytes past the cubin's end are not handed over");
    match prepare(&c, &[80, 100], false).unwrap() {
        Err(PlanError::NoBinary { codes }) => assert_eq!(codes, [S90]),
        other => panic!("{other:?}"),
    }
}
