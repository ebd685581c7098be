//! The checks the fuzz targets (`fuzz/`, `cargo +nightly fuzz run <target>`) and the regression
//! test (`tests/fuzz_regression.rs`, over `tests/fuzz_corpus/<target>/`) run on one input.
//! Not part of the API: each function feeds arbitrary bytes to one of the parsers of untrusted
//! input and panics when an invariant does not hold (a parser that panics, reads out of bounds
//! or loops fails too, by itself).

use crate::cache::{decode_entry, encode_entry, EntryError, Key, ENTRY_HEADER_LEN, ENTRY_MAGIC, ENTRY_VERSION};
use crate::compile::decode_payload;
use crate::image::{code_kind_of, describe_codes, inspect, runnable_on, ArchCode, CodeKind, ImageError, ImageInfo};

/// One target's check: panics when an invariant fails.
pub type Check = fn(&[u8]);

/// The fuzz targets, by name (also the folder names under `tests/fuzz_corpus/`).
pub const TARGETS: &[(&str, Check)] = &[
    ("image_inspect", image_inspect),
    ("image_prepare", image_prepare),
    ("cache_entry", cache_entry),
    ("compile_payload", compile_payload),
];

/// The sniff window of [`code_kind_of`] for text (`image::SNIFF_WINDOW`).
const SNIFF_WINDOW: usize = 64 * 1024;

/// GPUs the `runnable_on` answers are checked for (and a few absurd ones).
const SMS: &[u32] = &[0, 1, 10, 50, 75, 80, 86, 89, 90, 100, 103, 110, 120, 121, u32::MAX];

/// `image::inspect` / `code_kind_of` / `runnable_on` / `describe_codes` on any bytes.
pub fn image_inspect(data: &[u8]) {
    let guess = code_kind_of(data);
    let result = inspect(data);
    match &result {
        Ok(info) => check_image_info(data, guess, info),
        Err(e) => check_image_error(data, guess, e),
    }
    // The cheap guess on any prefix, and inspect on the prefix the image says it occupies,
    // agree with the whole.
    if let Ok(info) = &result {
        let again = inspect(&data[..info.len]);
        assert_eq!(again.as_ref(), Ok(info), "inspect of the image's own {} bytes differs", info.len);
    }
    compressed_entry_agrees(data, &result);
    contents_agree(data, &result);
}

/// `image::contents::contents` (what `cudyn inspect` prints) on any bytes: the same verdict, and
/// for an accepted fatbin one entry per code, in order.
fn contents_agree(data: &[u8], result: &Result<ImageInfo, ImageError>) {
    let c = crate::image::contents::contents(data);
    assert_eq!(&c.verdict, result, "contents' verdict differs from inspect's");
    if let Ok(info) = result {
        if info.kind == CodeKind::Fatbin {
            let codes: Vec<ArchCode> = c.entries.iter().map(|e| e.code).collect();
            assert_eq!(codes, info.codes, "contents lists other entries than inspect");
        }
    }
}

/// A cubin compressed into a fatbin entry, either way, is accepted exactly when it is accepted
/// on its own: the decompressed bytes get the same checks (and the fuzzer reaches them).
fn compressed_entry_agrees(data: &[u8], alone: &Result<ImageInfo, ImageError>) {
    if !data.starts_with(b"\x7fELF") {
        return;
    }
    let sm = match alone {
        Ok(ImageInfo { codes, .. }) => codes.first().map_or(90, ArchCode::sm),
        Err(_) => 90,
    };
    let ok_alone = alone.as_ref().is_ok_and(|i| i.kind == CodeKind::Cubin);
    for packing in [Packing::Lz4, Packing::Zstd] {
        let f = fatbin(&[fatbin_entry(FATBIN_KIND_ELF, sm, FATBIN_FLAGS_PLAIN, data, packing)]);
        let wrapped = inspect(&f);
        assert_eq!(wrapped.is_ok(), ok_alone, "{packing:?}-compressed entry: {wrapped:?}, alone: {alone:?}");
        if let Ok(info) = wrapped {
            assert!(info.compressed);
            assert_eq!(info.len, f.len());
        }
    }
}

/// How [`fatbin_entry`] stores its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain,
    /// An LZ4 block of literals only (flag 0x2000).
    Lz4,
    /// A zstd frame of raw blocks (flag 0x8000).
    Zstd,
}

/// Entry kinds, for [`fatbin_entry`].
pub const FATBIN_KIND_PTX: u16 = 1;
pub const FATBIN_KIND_ELF: u16 = 2;
/// The flags every nvcc entry carries (64-bit, Linux host).
pub const FATBIN_FLAGS_PLAIN: u64 = 0x11;

/// A fatbin entry as nvcc lays it out: a 64-byte header, then the payload padded to 8 bytes,
/// compressed if asked (in a valid stream of either format, though not the one nvcc would
/// choose: the checks must not care).
pub fn fatbin_entry(kind: u16, arch: u32, flags: u64, data: &[u8], packing: Packing) -> Vec<u8> {
    match packing {
        Packing::Plain => fatbin_entry_of_stream(kind, arch, flags, data, None),
        Packing::Lz4 => fatbin_entry_of_stream(kind, arch, flags | 0x2000, &lz4_literals(data), Some(data.len())),
        Packing::Zstd => fatbin_entry_of_stream(kind, arch, flags | 0x8000, &zstd_raw(data), Some(data.len())),
    }
}

/// A fatbin entry whose payload is `stream` as given: compressed (its flag in `flags`) when
/// `plain_len` says how many bytes it decompresses to, else plain.
pub fn fatbin_entry_of_stream(kind: u16, arch: u32, flags: u64, stream: &[u8], plain_len: Option<usize>) -> Vec<u8> {
    let mut e = vec![0u8; 64];
    let mut put = |at: usize, v: &[u8]| e[at..at + v.len()].copy_from_slice(v);
    put(0, &kind.to_le_bytes());
    put(2, &0x0101u16.to_le_bytes());
    put(4, &64u32.to_le_bytes());
    put(8, &(stream.len().next_multiple_of(8) as u64).to_le_bytes());
    put(28, &arch.to_le_bytes());
    put(40, &flags.to_le_bytes());
    if let Some(n) = plain_len {
        put(16, &(stream.len() as u32).to_le_bytes());
        put(56, &(n as u64).to_le_bytes());
    }
    e.extend_from_slice(stream);
    e.resize(e.len().next_multiple_of(8), 0);
    e
}

/// A fatbin of these entries (from [`fatbin_entry`]).
pub fn fatbin(entries: &[Vec<u8>]) -> Vec<u8> {
    let payload = entries.concat();
    let mut d = Vec::with_capacity(16 + payload.len());
    d.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    d.extend_from_slice(&1u16.to_le_bytes());
    d.extend_from_slice(&16u16.to_le_bytes());
    d.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    d.extend_from_slice(&payload);
    d
}

/// `data` as one LZ4 block of literals.
fn lz4_literals(data: &[u8]) -> Vec<u8> {
    let n = data.len();
    let mut v = vec![(n.min(15) as u8) << 4];
    if n >= 15 {
        let mut rest = n - 15;
        while rest >= 255 {
            v.push(255);
            rest -= 255;
        }
        v.push(rest as u8);
    }
    v.extend_from_slice(data);
    v
}

/// `data` as one single-segment zstd frame of raw blocks, with its size recorded.
fn zstd_raw(data: &[u8]) -> Vec<u8> {
    zstd_frame(data, usize::MAX)
}

/// `data` as one single-segment zstd frame, its size recorded, with an RLE block for each run of
/// 32 or more equal bytes and raw blocks between: much smaller than `data` where it is mostly
/// such runs (a name table of NULs), as real compressed entries are smaller than their cubins.
pub fn zstd_runs(data: &[u8]) -> Vec<u8> {
    zstd_frame(data, 32)
}

/// A zstd frame of `data`: raw blocks, and an RLE block for each run of at least `rle_min`
/// equal bytes; every block at most 128 KiB.
fn zstd_frame(data: &[u8], rle_min: usize) -> Vec<u8> {
    const MAX_BLOCK: usize = 128 << 10;
    let mut v = vec![0x28, 0xb5, 0x2f, 0xfd, 0xa0];
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    if data.is_empty() {
        v.extend_from_slice(&[1, 0, 0]); // one empty last block
    }
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        let run = rest.iter().take_while(|&&b| b == rest[0]).count().min(MAX_BLOCK);
        let (kind, len) = if run >= rle_min {
            (1u32, run)
        } else {
            let raw = rest.windows(rle_min).position(|w| w.iter().all(|&b| b == w[0])).unwrap_or(rest.len());
            (0u32, raw.clamp(1, MAX_BLOCK))
        };
        at += len;
        let header = (len as u32) << 3 | kind << 1 | u32::from(at == data.len());
        v.extend_from_slice(&header.to_le_bytes()[..3]);
        v.extend_from_slice(if kind == 1 { &rest[..1] } else { &rest[..len] });
    }
    v
}

fn check_image_info(data: &[u8], guess: CodeKind, info: &ImageInfo) {
    assert!(info.len <= data.len(), "len {} > {} bytes given ({})", info.len, data.len(), info.kind);
    assert!(info.len > 0, "an accepted {} image of 0 bytes", info.kind);
    assert_ne!(info.kind, CodeKind::Unknown);
    match info.kind {
        // Binary kinds are told apart by magic numbers: the guess must agree.
        CodeKind::Cubin | CodeKind::Fatbin | CodeKind::LtoIr => {
            assert_eq!(guess, info.kind, "code_kind_of disagrees with inspect")
        }
        // Text is guessed from a window; when the text (up to its NUL) fits in it, the guess
        // sees exactly what inspect saw.
        CodeKind::Ptx | CodeKind::Source => {
            let body_len = data.iter().position(|&b| b == 0).unwrap_or(data.len());
            if body_len < SNIFF_WINDOW || data.len() <= SNIFF_WINDOW {
                assert_eq!(guess, info.kind, "code_kind_of disagrees with inspect");
            }
            // Past the window the guess may miss what is there, never see what is not: no
            // `.version` directive means no PTX guess.
            if info.kind == CodeKind::Source {
                assert_ne!(guess, CodeKind::Ptx, "code_kind_of sees a PTX directive the text does not have");
            }
        }
        // inspect never answers these (link inputs only).
        CodeKind::Unknown | CodeKind::Object | CodeKind::Library => unreachable!(),
    }
    match info.kind {
        CodeKind::Cubin => {
            assert!(matches!(info.codes[..], [ArchCode::Sass { sm, .. }] if sm >= 10), "{:?}", info.codes);
            assert!(!info.compressed);
        }
        CodeKind::Fatbin => {
            assert!(info.codes.iter().all(|c| c.sm() >= 10), "{:?}", info.codes);
            // A fatbin's entries are 64+ bytes each, after a 16-byte header.
            assert!(
                info.codes.len() <= info.len.saturating_sub(16) / 64,
                "{} codes in {} bytes",
                info.codes.len(),
                info.len
            );
        }
        CodeKind::Ptx => {
            assert!(matches!(info.codes[..], [ArchCode::Ptx { sm, .. }] if sm >= 10), "{:?}", info.codes);
            assert!(!info.compressed);
        }
        CodeKind::LtoIr => {
            assert!(matches!(info.codes[..], [] | [ArchCode::LtoIr { .. }]), "{:?}", info.codes);
            assert_eq!(info.len, data.len(), "LTO-IR records no size: it is the whole slice");
            assert!(!info.compressed);
        }
        CodeKind::Source => {
            assert!(info.codes.is_empty());
            assert!(!info.compressed);
        }
        CodeKind::Unknown | CodeKind::Object | CodeKind::Library => unreachable!(),
    }
    // Text images end at their first NUL (inclusive), else at the end of the slice.
    if matches!(info.kind, CodeKind::Ptx | CodeKind::Source) {
        let expect = data.iter().position(|&b| b == 0).map_or(data.len(), |i| i + 1);
        assert_eq!(info.len, expect);
    }
    for code in &info.codes {
        match code {
            // Code runs on the GPU it was built for; LTO-IR never runs without linking.
            ArchCode::Sass { sm, .. } | ArchCode::Ptx { sm, .. } => assert!(code.runs_on(*sm), "{code} not on sm {sm}"),
            ArchCode::LtoIr { sm, .. } => assert!(!code.runs_on(*sm)),
        }
        let text = code.to_string();
        assert!(text.starts_with("sm_") || text.starts_with("compute_") || text.starts_with("lto_"), "{text}");
    }
    for &sm in SMS {
        assert_eq!(runnable_on(info, sm), info.codes.iter().any(|c| c.runs_on(sm)));
    }
    let described = describe_codes(&info.codes);
    if info.codes.is_empty() {
        assert_eq!(described, "none");
    } else {
        assert_eq!(described.split(", ").count(), info.codes.len(), "{described}");
    }
}

fn check_image_error(data: &[u8], guess: CodeKind, e: &ImageError) {
    assert!(!e.to_string().is_empty());
    match e {
        ImageError::Empty => assert!(data.is_empty()),
        ImageError::Truncated { need, have, .. } => {
            assert_eq!(*have, data.len() as u64, "{e}");
            assert!(need > have, "{e}");
        }
        ImageError::Unrecognised => {
            // Every binary magic is recognised (and then accepted or refused as malformed).
            assert!(
                !matches!(guess, CodeKind::Cubin | CodeKind::Fatbin | CodeKind::LtoIr),
                "{guess} refused as unrecognised"
            );
        }
        ImageError::Malformed(why) => assert!(!why.is_empty()),
    }
    if data.is_empty() {
        assert_eq!(*e, ImageError::Empty);
    }
}

/// The key the `cache_entry` target decodes with (the seeds are encoded for it).
pub const CACHE_FUZZ_KEY: Key = Key(*b"cudyn fuzz key, 32 bytes long.!!");

/// `cache::decode_entry` on any bytes: with [`CACHE_FUZZ_KEY`], with the key the bytes carry
/// themselves (so the fuzzer gets past the key check), and with the first 32 bytes as the key
/// and the rest as the entry. Each answer is compared with a from-the-spec model.
pub fn cache_entry(data: &[u8]) {
    check_entry(&CACHE_FUZZ_KEY, data);
    if let Some(own) = data.get(12..44) {
        let mut k = [0u8; 32];
        k.copy_from_slice(own);
        check_entry(&Key(k), data);
    }
    if let Some((k, rest)) = data.split_first_chunk::<32>() {
        check_entry(&Key(*k), rest);
    }
}

fn check_entry(key: &Key, data: &[u8]) {
    let got = decode_entry(key, data);
    assert_eq!(got, model_decode_entry(key, data), "decode_entry disagrees with the format");
    match got {
        Ok(payload) => {
            // The payload is the input's tail, in place, of the length the header declares.
            let tail = &data[ENTRY_HEADER_LEN..];
            assert_eq!(payload.as_ptr(), tail.as_ptr());
            assert_eq!(payload.len(), tail.len());
            let declared = u64::from_le_bytes(data[44..52].try_into().unwrap());
            assert_eq!(payload.len() as u64, declared);
            assert_eq!(encode_entry(key, payload), data, "re-encoding differs");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// The entry format as documented in `cache.rs`, spelled out independently.
fn model_decode_entry<'a>(key: &Key, d: &'a [u8]) -> Result<&'a [u8], EntryError> {
    use sha2::{Digest, Sha256};
    if d.len() < 8 {
        return Err(EntryError::TooShort);
    }
    if d[..8] != ENTRY_MAGIC {
        return Err(EntryError::BadMagic);
    }
    if d.len() < 12 {
        return Err(EntryError::TooShort);
    }
    if u32::from_le_bytes([d[8], d[9], d[10], d[11]]) != ENTRY_VERSION {
        return Err(EntryError::BadVersion);
    }
    if d.len() < 84 {
        return Err(EntryError::TooShort);
    }
    if d[12..44] != key.0 {
        return Err(EntryError::ForeignKey);
    }
    let n = u64::from_le_bytes(d[44..52].try_into().unwrap());
    if n != (d.len() - 84) as u64 {
        return Err(EntryError::LengthMismatch);
    }
    if Sha256::digest(&d[84..])[..] != d[52..84] {
        return Err(EntryError::HashMismatch);
    }
    Ok(&d[84..])
}

/// `compile::decode_payload` on any bytes, for every kind: what it accepts re-encodes to the
/// same bytes, and its code is of the kind asked for.
pub fn compile_payload(data: &[u8]) {
    for kind in [CodeKind::Cubin, CodeKind::Ptx, CodeKind::LtoIr, CodeKind::Fatbin, CodeKind::Source, CodeKind::Unknown]
    {
        let Some(c) = decode_payload(data, kind) else { continue };
        assert_eq!(c.kind, kind);
        assert!(c.from_cache);
        assert!(!c.code.is_empty());
        assert_eq!(code_kind_of(&c.code), kind);
        assert!(data.ends_with(&c.code), "the code is not the payload's tail");
        assert_eq!(model_encode_payload(c.sm, &c.log, &c.lowered, &c.code), data, "re-encoding differs");
    }
}

/// `compile::encode_payload`'s format: u32 sm, (u32 len, bytes) NVRTC's log, u32 count,
/// (u32 len, bytes) x 2 per name, code.
fn model_encode_payload(sm: u32, log: &str, lowered: &[(String, String)], code: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&sm.to_le_bytes());
    v.extend_from_slice(&(log.len() as u32).to_le_bytes());
    v.extend_from_slice(log.as_bytes());
    v.extend_from_slice(&(lowered.len() as u32).to_le_bytes());
    for (a, b) in lowered {
        for s in [a, b] {
            v.extend_from_slice(&(s.len() as u32).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
    }
    v.extend_from_slice(code);
    v
}

// ---------------------------------------------------------------------------------------------
// Helpers the image tests share (unit and integration tests)

/// xorshift64*: small, deterministic random numbers for the image tests (unit tests in
/// src/image/tests.rs and tests/image_nvcc.rs).
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Inspects and checks the invariants that hold for any input.
pub fn check_image_invariants(data: &[u8]) -> Result<ImageInfo, ImageError> {
    let kind = code_kind_of(data);
    let r = inspect(data);
    if let Ok(info) = &r {
        assert!(info.len <= data.len(), "len {} > {} for {:?}", info.len, data.len(), info.kind);
        assert_ne!(info.kind, CodeKind::Unknown);
        // For whole images the cheap guess agrees with the full check, except that text may
        // be judged on a window only.
        if !matches!(info.kind, CodeKind::Ptx | CodeKind::Source) {
            assert_eq!(kind, info.kind);
        }
    }
    // Exercising the other functions must not panic either.
    if let Ok(info) = &r {
        let _ = describe_codes(&info.codes);
        for sm in [0, 50, 75, 80, 90, 100, 120, u32::MAX] {
            let _ = runnable_on(info, sm);
        }
    }
    if let Err(e) = &r {
        let _ = e.to_string();
    }
    r
}

/// `check_image_invariants` on the first `len` bytes of `image`; an accepted prefix claims no
/// more than `len` bytes.
pub fn prefix_check(image: &[u8], len: usize) {
    let prefix = &image[..len];
    if let Ok(i) = check_image_invariants(prefix) {
        assert!(i.len <= len);
    }
}

/// `rounds` copies of `image`, each with 1 to 8 random bits flipped, through
/// `check_image_invariants`.
pub fn mutate_and_check(image: &[u8], rng: &mut Rng, rounds: usize) {
    for _ in 0..rounds {
        let mut m = image.to_vec();
        for _ in 0..1 + rng.below(8) {
            let i = rng.below(m.len());
            m[i] ^= 1 << rng.below(8);
        }
        let _ = check_image_invariants(&m);
    }
}

/// The sets of GPUs (compute capabilities) images are prepared for in [`image_prepare`].
const GPU_SETS: &[&[u32]] = &[&[90], &[80, 90], &[86], &[100], &[103], &[120], &[75], &[90, 120]];

/// Whether `image::prepare` builds an image from `data` for one of the GPU sets [`image_prepare`]
/// tries (for the regression corpus's `ok-*` inputs).
pub fn prepares_for_some_gpus(data: &[u8]) -> bool {
    GPU_SETS.iter().any(|gpus| matches!(crate::image::prepare(data, gpus, false), Some(Ok(_))))
}

/// `image::prepare` on any bytes, for several sets of GPUs: what it builds for CUDA is itself a
/// well-formed image (the full check passes on it), holds exactly the code it says it handed
/// over, uncompressed, all of it runnable there; preparing it again hands over all of it,
/// byte for byte the same; and nothing it hands over was refused by the plan's own parts.
pub fn image_prepare(data: &[u8]) {
    for &gpus in GPU_SETS {
        for force_ptx in [false, true] {
            let Some(r) = crate::image::prepare(data, gpus, force_ptx) else { continue };
            let built = match r {
                Ok(b) => b,
                Err(crate::image::PlanError::NoBinary { codes }) => {
                    assert!(
                        !codes.iter().any(|c| gpus.iter().any(|&g| c.runs_on(g))),
                        "NoBinary for {gpus:?} but {codes:?} holds code one of them runs"
                    );
                    continue;
                }
                Err(crate::image::PlanError::Image(_)) => continue,
            };
            let again =
                inspect(&built.image).unwrap_or_else(|e| panic!("the image built for {gpus:?} is refused: {e}"));
            assert_eq!(again.codes, built.handed, "the built image's entries are not the ones handed over");
            assert!(!again.compressed, "a built image holds a compressed entry");
            assert_eq!(again.len, built.image.len());
            assert!(built.handed.iter().all(|c| gpus.iter().any(|&g| c.runs_on(g))), "{:?} for {gpus:?}", built.handed);
            // Every handed piece is one of the image's own.
            assert!(built.handed.iter().all(|c| built.info.codes.contains(c)));
            if again.kind == CodeKind::Fatbin {
                let rebuilt = crate::image::prepare(&built.image, gpus, force_ptx)
                    .expect("a fatbin")
                    .unwrap_or_else(|e| panic!("preparing the built image again: {e:?}"));
                assert_eq!(rebuilt.handed, built.handed);
                assert_eq!(rebuilt.image, built.image, "preparing a built image again changed it");
            }
        }
    }
}

/// cudyn's decoder of compressed fatbin entries (zstd when `zstd`, else LZ4) into `out`, for
/// the differential test and fuzz target that hold it to the reference decoders.
pub fn decompress_into(zstd: bool, src: &[u8], out: &mut [u8]) -> Result<(), String> {
    use crate::image::decompress::{decode_into, Method};
    decode_into(if zstd { Method::Zstd } else { Method::Lz4 }, src, out)
}
