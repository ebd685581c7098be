//! The memo of validated images (src/image/memo.rs): identical bytes skip the full check, any other
//! bytes are checked as if never seen, only images validated twice are copied, and the memo
//! stays bounded. CPU only (NVRTC makes the
//! cubins); with no driver, `validate` checks the bytes alone.
//!
//! Run with `source scripts/env.sh && cargo test --test validate_memo`.

use cudyn::compile::{compile_with, CompileOptions};
use cudyn::image::CodeKind;
use cudyn::library::validate;
use cudyn::test_hooks::memo;
use cudyn::Status;

fn cubin(kernel: &str) -> Vec<u8> {
    let src = format!("extern \"C\" __global__ void {kernel}(int *p) {{ p[threadIdx.x] += 1; }}\n");
    let opts =
        CompileOptions { options: vec!["-arch=sm_90".into()], target: Some(CodeKind::Cubin), ..Default::default() };
    match compile_with(&src, "memo.cu", &opts, None) {
        Ok(c) => c.code,
        Err(f) => panic!("compiling {kernel}: {}\n{}", f.error.message, f.log),
    }
}

/// One test, in order: the memo is process-wide.
#[test]
fn memo_skips_only_identical_bytes_and_stays_bounded() {
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
