//! The memo of images built for CUDA (src/image/memo.rs): identical bytes skip the full check, any
//! other bytes are checked as if never seen, only images built twice are copied, and the memo
//! stays bounded. CPU only (NVRTC makes the cubins): `validate_as_if` validates for an sm_90
//! GPU without a driver.
//!
//! Run with `source scripts/env.sh && cargo test --test validate_memo`.

use cudyn::compile::{compile_with, CompileOptions};
use cudyn::image::CodeKind;
use cudyn::library::validate_as_if;
use cudyn::test_hooks::memo;
use cudyn::Status;

fn validate(image: &[u8]) -> cudyn::Result<Vec<u8>> {
    validate_as_if(image, &[90])
}

fn cubin(kernel: &str) -> Vec<u8> {
    let src = format!("extern \"C\" __global__ void {kernel}(int *p) {{ p[threadIdx.x] += 1; }}\n");
    let opts =
        CompileOptions { options: vec!["-arch=sm_90".into()], target: Some(CodeKind::Cubin), ..Default::default() };
    match compile_with(&src, "memo.cu", &opts, None) {
        Ok(c) => c.code,
        Err(f) => panic!("compiling {kernel}: {}\n{}", f.error.message, f.log),
    }
}

/// The memo is process-wide: its tests take turns.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One test, in order: the memo is process-wide.
#[test]
fn memo_skips_only_identical_bytes_and_stays_bounded() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    memo::clear();
    let a = cubin("memo_a");
    let (n0, h0) = memo::stats();
    assert_eq!(n0, 0);

    // First sight: fully checked, not copied (a process that loads each image once pays no
    // copy). Second sight: checked again, now copied. Third: one comparison, a hit.
    validate(&a).expect("a valid cubin");
    assert_eq!(memo::stats(), (0, h0));
    validate(&a).expect("a valid cubin");
    assert_eq!(memo::stats(), (1, h0));
    let copy = a.clone();
    validate(&copy).expect("the same cubin");
    assert_eq!(memo::stats(), (1, h0 + 1));

    // Same length, one byte different, made invalid (a section header's offset points far
    // outside the file): not a hit, refused by the full check.
    let mut bad = a.clone();
    let shoff = u64::from_le_bytes(bad[40..48].try_into().unwrap()) as usize;
    let sec1 = shoff + 64;
    bad[sec1 + 24..sec1 + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let Err(e) = validate(&bad) else { panic!("a cubin whose section lies outside it was accepted") };
    assert_eq!(e.status, Status::InvalidImage, "{}", e.message);
    assert_eq!(memo::stats(), (1, h0 + 1), "a refused image is neither a hit nor remembered");

    // A truncated copy is another length: checked, refused.
    assert!(matches!(validate(&a[..a.len() - 1]), Err(e) if e.status == Status::InvalidImage));

    // Images validated once each (a JIT's pattern) are never copied.
    let others: Vec<Vec<u8>> = (0..memo::ENTRIES + 2).map(|i| cubin(&format!("memo_other_{i}"))).collect();
    for o in &others {
        validate(o).expect("a valid cubin");
    }
    assert_eq!(memo::stats().0, 1, "single loads copied nothing");

    // Bounded: more distinct images loaded repeatedly than it holds; the least recently used go.
    for o in &others {
        validate(o).expect("a valid cubin");
    }
    assert_eq!(memo::stats().0, memo::ENTRIES);
    let hits = memo::stats().1;
    validate(&a).expect("still valid");
    assert_eq!(memo::stats().1, hits, "the oldest image was dropped, so this is a miss");
    validate(others.last().unwrap()).expect("still valid");
    assert_eq!(memo::stats().1, hits + 1, "a recent image is still remembered");
}

/// A fatbin's key is its headers and the entries handed over: a fatbin that differs only in an
/// entry no GPU of the process runs (here an sm_80 cubin, on an sm_90 GPU) shares the image built
/// before, and one that differs in a chosen entry does not.
#[test]
fn a_fatbin_is_remembered_by_the_entries_handed_over() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    use cudyn::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF};
    let compile = |kernel: &str, arch: &str| {
        let src = format!("extern \"C\" __global__ void {kernel}(int *p) {{ p[threadIdx.x] += 2; }}\n");
        let opts = CompileOptions {
            options: vec![format!("-arch={arch}")],
            target: Some(CodeKind::Cubin),
            ..Default::default()
        };
        compile_with(&src, "memo.cu", &opts, None).unwrap_or_else(|f| panic!("{}", f.error.message)).code
    };
    let (c80, c90) = (compile("fat_k", "sm_80"), compile("fat_k", "sm_90"));
    let make = |c80: &[u8], c90: &[u8], packing: Packing| {
        fatbin(&[
            fatbin_entry(FATBIN_KIND_ELF, 80, FATBIN_FLAGS_PLAIN, c80, Packing::Plain),
            fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, c90, packing),
        ])
    };
    for packing in [Packing::Plain, Packing::Zstd, Packing::Lz4] {
        memo::clear();
        let f = make(&c80, &c90, packing);
        let first = validate(&f).expect("a valid fatbin");
        validate(&f).expect("a valid fatbin");
        let (n, hits) = memo::stats();
        assert_eq!(n, 1, "built twice: remembered");
        // The sm_80 cubin replaced by garbage of the same size: never read on sm_90, a hit, and the
        // very image built before.
        let mut other80 = c80.clone();
        other80[..64].fill(0xee);
        let g = make(&other80, &c90, packing);
        assert_ne!(f, g);
        assert_eq!(validate(&g).expect("the sm_90 entry is sound"), first);
        assert_eq!(memo::stats(), (1, hits + 1));
        // A byte of the sm_90 cubin changed: not a hit (checked again, and here refused).
        let mut bad90 = c90.clone();
        bad90[..4].copy_from_slice(b"XELF");
        let h = make(&c80, &bad90, packing);
        let e = validate(&h).expect_err("a ruined sm_90 cubin");
        assert_eq!(e.status, Status::InvalidImage, "{}", e.message);
        assert_eq!(memo::stats(), (1, hits + 1));
        // And on an sm_80 GPU the ruined sm_80 entry is what would be handed over: refused.
        let e = validate_as_if(&g, &[80]).expect_err("a ruined sm_80 cubin, handed over");
        assert_eq!(e.status, Status::InvalidImage, "{}", e.message);
    }
}
