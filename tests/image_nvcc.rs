//! Image validation on real nvcc output: cubins (sm_80 to sm_120, `a` variants), multi-arch,
//! compressed and LTO-IR fatbins, PTX and LTO-IR are recognised with exactly the codes nvcc put
//! in them, and no prefix, bit flip or extreme header value of them makes inspect panic or
//! accept a cut image. CPU only; needs the project's nvcc (scripts/bootstrap.sh), which
//! scripts/test.sh and .ci provide: a missing nvcc fails the test.

mod common;

use std::process::Command;
use std::sync::OnceLock;

use common::cuda_tool;
use cudyn::fuzzing::{
    check_image_invariants as check_invariants, mutate_and_check, prefix_check, Rng, FATBIN_KIND_ELF,
};
use cudyn::image::{code_kind_of, describe_codes, inspect, runnable_on, ArchCode, ArchVariant, CodeKind, ImageInfo};

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];

/// The little-endian word at `off`, or None past the end.
fn word<const N: usize>(d: &[u8], off: usize) -> Option<[u8; N]> {
    d.get(off..off.checked_add(N)?)?.try_into().ok()
}
fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    word(d, off).map(u16::from_le_bytes)
}
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    word(d, off).map(u32::from_le_bytes)
}
fn u64_at(d: &[u8], off: usize) -> Option<u64> {
    word(d, off).map(u64::from_le_bytes)
}

/// Sets header fields of real images to extreme values.
fn extreme_fields(image: &[u8], fields: &[(usize, usize)]) {
    let extremes: [u64; 8] = [0, 1, 0x7f, 0xffff, u32::MAX as u64, image.len() as u64, u64::MAX - 1, u64::MAX];
    for &(off, width) in fields {
        if off + width > image.len() {
            continue;
        }
        for &v in &extremes {
            let mut m = image.to_vec();
            m[off..off + width].copy_from_slice(&v.to_le_bytes()[..width]);
            let _ = check_invariants(&m);
        }
    }
}

fn cubin_fields(base: usize, cubin: &[u8]) -> Vec<(usize, usize)> {
    let mut v = vec![(32, 8), (40, 8), (48, 4), (52, 2), (54, 2), (56, 2), (58, 2), (60, 2), (62, 2)];
    let shoff = u64_at(cubin, 40).unwrap_or(0) as usize;
    let shnum = u16_at(cubin, 60).unwrap_or(0) as usize;
    for s in 0..shnum.min(40) {
        let at = shoff + s * 64;
        v.extend([(at + 4, 4), (at + 24, 8), (at + 32, 8)]);
    }
    let phoff = u64_at(cubin, 32).unwrap_or(0) as usize;
    let phnum = u16_at(cubin, 56).unwrap_or(0) as usize;
    for p in 0..phnum.min(40) {
        let at = phoff + p * 56;
        v.extend([(at + 8, 8), (at + 32, 8)]);
    }
    v.into_iter().map(|(o, w)| (base + o, w)).collect()
}

fn fatbin_fields(f: &[u8]) -> Vec<(usize, usize)> {
    let mut v = vec![(4, 2), (6, 2), (8, 8)];
    let mut off = 16usize;
    while off + 64 <= f.len() {
        v.extend([
            (off + 4, 4),
            (off + 8, 8),
            (off + 16, 4),
            (off + 20, 4),
            (off + 28, 4),
            (off + 32, 4),
            (off + 36, 4),
            (off + 40, 8),
        ]);
        let ehs = u32_at(f, off + 4).unwrap_or(0) as usize;
        let ps = u64_at(f, off + 8).unwrap_or(0) as usize;
        if u16_at(f, off).unwrap_or(0) == FATBIN_KIND_ELF && f[off + ehs..].starts_with(&ELF_MAGIC) {
            v.extend(cubin_fields(off + ehs, &f[off + ehs..]));
        }
        let opts = u32_at(f, off + 20).unwrap_or(0) as usize;
        if opts != 0 {
            v.extend([(off + opts, 4), (off + opts + 4, 4)]);
        }
        off += ehs + ps;
    }
    v
}

// ---- real artifacts from nvcc ---------------------------------------------------------------

struct Artifacts {
    cubin_sm80: Vec<u8>,
    cubin_sm90a: Vec<u8>,
    cubin_sm100a: Vec<u8>,
    cubin_sm120: Vec<u8>,
    fatbin_multi: Vec<u8>,
    fatbin_100f_compressed: Vec<u8>,
    fatbin_lto: Vec<u8>,
    ptx80: Vec<u8>,
    ltoir90: Vec<u8>,
}

const KERNEL: &str = "extern \"C\" __global__ void add(float *a, const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n";

fn build_artifacts() -> Result<Artifacts, String> {
    let nvcc = cuda_tool("nvcc");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("cudyn-image-test-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let src = dir.join("k.cu");
    std::fs::write(&src, KERNEL).map_err(|e| format!("writing {}: {e}", src.display()))?;

    let jobs: Vec<(&str, Vec<&str>)> = vec![
        ("sm80.cubin", vec!["-cubin", "-arch=sm_80"]),
        ("sm90a.cubin", vec!["-cubin", "-arch=sm_90a"]),
        ("sm100a.cubin", vec!["-cubin", "-arch=sm_100a"]),
        ("sm120.cubin", vec!["-cubin", "-arch=sm_120"]),
        (
            "multi.fatbin",
            vec![
                "-fatbin",
                "-Xfatbin",
                "-compress=false",
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=[sm_90,compute_90]",
            ],
        ),
        (
            "f100.fatbin",
            vec!["-fatbin", "-Xfatbin", "-compress-all", "-gencode", "arch=compute_100f,code=[sm_100f,compute_100f]"],
        ),
        ("lto.fatbin", vec!["-fatbin", "-gencode", "arch=compute_90,code=lto_90"]),
        ("k80.ptx", vec!["-ptx", "-arch=compute_80"]),
        ("k90.ltoir", vec!["-ltoir", "-dlto", "-arch=sm_90"]),
    ];
    let results: Vec<Result<Vec<u8>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(out, args)| {
                let (nvcc, dir, src) = (&nvcc, &dir, &src);
                s.spawn(move || {
                    let out = dir.join(out);
                    let o = Command::new(nvcc)
                        .args(args)
                        .arg("-o")
                        .arg(&out)
                        .arg(src)
                        .output()
                        .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
                    if !o.status.success() {
                        return Err(format!(
                            "{} {args:?} failed: {}\n{}",
                            nvcc.display(),
                            o.status,
                            String::from_utf8_lossy(&o.stderr)
                        ));
                    }
                    std::fs::read(&out).map_err(|e| format!("reading {}: {e}", out.display()))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("nvcc thread panicked".into()))).collect()
    });
    let _ = std::fs::remove_dir_all(&dir);
    let mut it = results.into_iter();
    let mut next = || it.next().unwrap_or_else(|| Err("missing artifact".into()));
    Ok(Artifacts {
        cubin_sm80: next()?,
        cubin_sm90a: next()?,
        cubin_sm100a: next()?,
        cubin_sm120: next()?,
        fatbin_multi: next()?,
        fatbin_100f_compressed: next()?,
        fatbin_lto: next()?,
        ptx80: next()?,
        ltoir90: next()?,
    })
}

/// The nvcc-built artifacts, built once per test process.
fn artifacts() -> &'static Artifacts {
    static CELL: OnceLock<Result<Artifacts, String>> = OnceLock::new();
    match CELL.get_or_init(build_artifacts) {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    }
}

fn expect(data: &[u8], kind: CodeKind, codes: &[ArchCode]) -> ImageInfo {
    let i = check_invariants(data).unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert_eq!(i.kind, kind);
    assert_eq!(code_kind_of(data), kind);
    assert_eq!(i.len, data.len(), "{kind}: len must equal the file size");
    assert_eq!(i.codes, codes, "{kind}: got {}", describe_codes(&i.codes));
    i
}

#[test]
fn nvcc_cubins() {
    let a = artifacts();
    let i = expect(&a.cubin_sm80, CodeKind::Cubin, &[ArchCode::sass(80)]);
    assert!(runnable_on(&i, 80) && runnable_on(&i, 86) && runnable_on(&i, 89));
    assert!(!runnable_on(&i, 75) && !runnable_on(&i, 90));
    assert!(!i.compressed);
    let i = expect(&a.cubin_sm90a, CodeKind::Cubin, &[ArchCode::sass(90).with_variant(ArchVariant::A)]);
    assert!(runnable_on(&i, 90) && !runnable_on(&i, 89) && !runnable_on(&i, 100));
    let i = expect(&a.cubin_sm100a, CodeKind::Cubin, &[ArchCode::sass(100).with_variant(ArchVariant::A)]);
    assert!(runnable_on(&i, 100) && !runnable_on(&i, 103));
    let i = expect(&a.cubin_sm120, CodeKind::Cubin, &[ArchCode::sass(120)]);
    assert!(runnable_on(&i, 120) && runnable_on(&i, 121) && !runnable_on(&i, 100));
    assert_eq!(describe_codes(&i.codes), "sm_120");
}

#[test]
fn nvcc_fatbins() {
    let a = artifacts();
    let i = expect(&a.fatbin_multi, CodeKind::Fatbin, &[ArchCode::sass(80), ArchCode::sass(90), ArchCode::ptx(90)]);
    assert!(!i.compressed);
    assert!(runnable_on(&i, 90));
    assert!(runnable_on(&i, 86));
    assert!(runnable_on(&i, 100), "compute_90 PTX JITs on sm_100");
    assert!(!runnable_on(&i, 75));
    assert_eq!(describe_codes(&i.codes), "sm_80, sm_90, compute_90");

    let i = expect(
        &a.fatbin_100f_compressed,
        CodeKind::Fatbin,
        &[ArchCode::sass(100).with_variant(ArchVariant::F), ArchCode::ptx(100).with_variant(ArchVariant::F)],
    );
    assert!(i.compressed);
    assert!(runnable_on(&i, 100) && runnable_on(&i, 103));
    assert!(!runnable_on(&i, 110) && !runnable_on(&i, 120) && !runnable_on(&i, 90));

    let i = expect(&a.fatbin_lto, CodeKind::Fatbin, &[ArchCode::lto_ir(90)]);
    assert!(!runnable_on(&i, 90), "LTO-IR alone needs linking");
}

#[test]
fn nvcc_ptx_and_lto_ir() {
    let a = artifacts();
    let i = expect(&a.ptx80, CodeKind::Ptx, &[ArchCode::ptx(80)]);
    assert!(runnable_on(&i, 90) && runnable_on(&i, 80) && !runnable_on(&i, 75));
    let i = expect(&a.ltoir90, CodeKind::LtoIr, &[ArchCode::lto_ir(90)]);
    assert!(!runnable_on(&i, 90));
}

#[test]
fn nvcc_prefixes_never_panic() {
    let a = artifacts();
    for image in [&a.cubin_sm90a, &a.cubin_sm120, &a.fatbin_multi, &a.fatbin_100f_compressed, &a.ptx80, &a.ltoir90] {
        for len in 0..image.len() {
            prefix_check(image, len);
        }
    }
    // A cut cubin or fatbin is never accepted.
    for image in [&a.cubin_sm90a, &a.fatbin_multi] {
        for len in 0..image.len() {
            assert!(inspect(&image[..len]).is_err(), "prefix {len} accepted");
        }
    }
}

#[test]
fn nvcc_mutations_never_panic() {
    let a = artifacts();
    let mut rng = Rng(0xC0FF_EE00_1234_5678);
    for image in [
        &a.cubin_sm80,
        &a.cubin_sm100a,
        &a.fatbin_multi,
        &a.fatbin_100f_compressed,
        &a.fatbin_lto,
        &a.ltoir90,
        &a.ptx80,
    ] {
        mutate_and_check(image, &mut rng, 2000);
    }
    for cubin in [&a.cubin_sm80, &a.cubin_sm90a, &a.cubin_sm100a] {
        extreme_fields(cubin, &cubin_fields(0, cubin));
    }
    for f in [&a.fatbin_multi, &a.fatbin_100f_compressed, &a.fatbin_lto] {
        extreme_fields(f, &fatbin_fields(f));
    }
    extreme_fields(&a.ltoir90, &[(12, 2), (14, 2), (16, 4), (20, 4), (24, 2), (26, 2)]);
}
