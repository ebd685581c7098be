//! cudyn's decoders of compressed fatbin entries against the reference decoders (libzstd,
//! liblz4; see tests/decoders/reference.rs): over streams the reference encoders write and
//! thousands of seeded mutations of them, both refuse or both make the same bytes. Plus one
//! test per class of stream the decoders used to accept where the reference refuses, and
//! the real entries of `$CUDYN_REAL_FATBINS` (a folder of fatbins) when it is set.

#[path = "decoders/reference.rs"]
mod reference;

use cudyn::fuzzing::Rng;
use reference::agree;

/// Bytes shaped a little like device code: zero runs, instruction-like 16-byte words from a
/// small pool, random bytes, text, and copies of earlier stretches (near and far).
fn sample(rng: &mut Rng, len: usize) -> Vec<u8> {
    let pool: Vec<Vec<u8>> = (0..24).map(|_| rng.bytes(16)).collect();
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let n = 1 + rng.below(300);
        match rng.below(6) {
            0 => v.extend(std::iter::repeat_n(0, n)),
            1 => v.extend(rng.bytes(n.min(40))),
            2 => v.extend(b".visible .entry kernel(.param .u64 p) { ret; }\n".iter().take(n)),
            3 if v.len() > 16 => {
                let from = rng.below(v.len() - 8);
                let k = n.min(v.len() - from);
                v.extend_from_within(from..from + k);
            }
            _ => (0..1 + n / 16).for_each(|_| v.extend_from_slice(&pool[rng.below(pool.len())])),
        }
    }
    v.truncate(len);
    v
}

fn size(rng: &mut Rng) -> usize {
    match rng.below(10) {
        0 => 1 + rng.below(32),
        1..=6 => 32 + rng.below(4000),
        7 | 8 => 4000 + rng.below(40_000),
        _ => 100_000 + rng.below(200_000), // several blocks
    }
}

fn zstd_compress(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    use zstd_safe::CParameter::*;
    let mut cctx = zstd_safe::CCtx::create();
    let level = [1, 3, 7, 12, 19][rng.below(5)];
    cctx.set_parameter(CompressionLevel(level)).unwrap();
    cctx.set_parameter(ChecksumFlag(rng.below(2) == 0)).unwrap();
    cctx.set_parameter(ContentSizeFlag(rng.below(4) != 0)).unwrap();
    if rng.below(3) == 0 {
        cctx.set_parameter(WindowLog(10 + rng.below(8) as u32)).unwrap();
    }
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
    cctx.compress2(&mut out, data).unwrap();
    out
}

fn lz4_compress(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    let cap = data.len() + data.len() / 255 + 16;
    let mut out = vec![0u8; cap];
    let (src, dst, n, c) = (data.as_ptr().cast(), out.as_mut_ptr().cast(), data.len() as i32, cap as i32);
    // SAFETY: the pointers and lengths describe `data` and `out`; the encoders write at most `c`.
    let got = unsafe {
        match rng.below(3) {
            0 => lz4_sys::LZ4_compress_default(src, dst, n, c),
            1 => lz4_sys::LZ4_compress_fast(src, dst, n, c, 1 + rng.below(20) as i32),
            _ => lz4_sys::LZ4_compress_HC(src, dst, n, c, 1 + rng.below(12) as i32),
        }
    };
    assert!(got > 0, "the reference LZ4 encoder failed");
    out.truncate(got as usize);
    out
}

/// Offsets of the zstd frame's block headers (walked without checks; a mutant may cut it).
fn zstd_blocks(f: &[u8]) -> Vec<usize> {
    let Some(&fhd) = f.get(4) else { return Vec::new() };
    let single = fhd & 0x20 != 0;
    let fcs = match fhd >> 6 {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut at = 5 + usize::from(!single) + [0, 1, 2, 4][usize::from(fhd & 3)] + fcs;
    let mut v = Vec::new();
    while let Some(h) = f.get(at..at + 3) {
        v.push(at);
        let h = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        at += 3 + if (h >> 1) & 3 == 1 { 1 } else { h >> 3 };
        if h & 1 != 0 {
            break;
        }
    }
    v
}

/// Offsets of each LZ4 sequence's token, and of its match offset (none for the last).
fn lz4_sequences(b: &[u8]) -> Vec<(usize, Option<usize>)> {
    let mut v = Vec::new();
    let mut at = 0;
    let ext = |at: &mut usize, mut n: usize| {
        if n == 15 {
            while let Some(&x) = b.get(*at) {
                *at += 1;
                n += usize::from(x);
                if x != 255 {
                    break;
                }
            }
        }
        n
    };
    while at < b.len() {
        let token = b[at];
        let t = at;
        at += 1;
        at += ext(&mut at, usize::from(token >> 4));
        if at >= b.len() {
            v.push((t, None));
            break;
        }
        v.push((t, Some(at)));
        at += 2;
        ext(&mut at, usize::from(token & 15));
    }
    v
}

/// One mutation of `s` (an entry of `size` bytes, `zstd` or LZ4); returns the declared size.
fn mutate(rng: &mut Rng, s: &mut Vec<u8>, size: usize, zstd: bool) -> usize {
    let len = s.len();
    if len < 8 {
        s.push(rng.next_u64() as u8); // what is left of an earlier cut
        return size;
    }
    let at = rng.below(len);
    match rng.below(12) {
        0 => (0..1 + rng.below(3)).for_each(|_| {
            let i = rng.below(len);
            s[i] ^= 1 << rng.below(8)
        }),
        1 => s[at] = rng.next_u64() as u8,
        2 => s.truncate(at),
        3 => {
            let n = 1 + rng.below(16);
            let tail = if rng.below(2) == 0 { vec![0; n] } else { rng.bytes(n) };
            s.extend(tail);
        }
        4 => return if rng.below(2) == 0 { size.saturating_sub(1 + rng.below(4)) } else { size + 1 + rng.below(4) },
        5 => {
            // Splice: a stretch of the stream repeated or removed.
            let (a, b) = (at, (at + 1 + rng.below(16)).min(len));
            let piece = s[a..b].to_vec();
            if rng.below(2) == 0 {
                s.splice(a..a, piece);
            } else {
                s.drain(a..b);
            }
        }
        _ if zstd => mutate_zstd(rng, s),
        _ => mutate_lz4(rng, s),
    }
    size
}

/// Edits at the places that matter in a zstd frame: header, window, block headers, literals
/// and sequence sections, checksum.
fn mutate_zstd(rng: &mut Rng, s: &mut [u8]) {
    let blocks = zstd_blocks(s);
    match rng.below(6) {
        0 => s[4] ^= 1 << rng.below(8), // frame header descriptor
        1 => s[5 + rng.below(4).min(s.len() - 6)] = rng.next_u64() as u8, // window / dictionary / size
        2 | 3 if !blocks.is_empty() => {
            let b = blocks[rng.below(blocks.len())];
            match rng.below(4) {
                0 => s[b] ^= 1 << rng.below(3),                              // last bit, block type
                1 => s[b] = s[b].wrapping_add(8 * (1 + rng.below(4)) as u8), // size, a little
                2 => s[b + 2] ^= 1 << rng.below(8),                          // size, a lot (past 128 KiB)
                _ => {
                    // Literals or sequences header, just after the block header or near its end.
                    let i = (b + 3 + rng.below(6)).min(s.len() - 1);
                    s[i] = rng.next_u64() as u8;
                }
            }
        }
        4 => {
            let n = s.len();
            s[n - 1 - rng.below(4.min(n - 1))] ^= 1 << rng.below(8); // checksum, or the last block's end
        }
        _ => {
            // A smaller window: single segment off, window descriptor small.
            s[4] &= !0x20;
            if s.len() > 5 {
                s[5] = (rng.below(8) as u8) << 3 | rng.below(8) as u8;
            }
        }
    }
}

/// Edits of LZ4 tokens, lengths and offsets, the last sequence most of all.
fn mutate_lz4(rng: &mut Rng, s: &mut Vec<u8>) {
    let seqs = lz4_sequences(s);
    if seqs.is_empty() {
        return;
    }
    let pick = if rng.below(2) == 0 { seqs.len() - 1 - rng.below(seqs.len().min(3)) } else { rng.below(seqs.len()) };
    let (token, offset) = seqs[pick];
    match rng.below(5) {
        0 => s[token] = (s[token] & 0x0f) | (rng.below(16) as u8) << 4, // literal length
        1 => s[token] = (s[token] & 0xf0) | rng.below(16) as u8,        // match length
        2 if offset.is_some_and(|o| o + 2 <= s.len()) => {
            let o = offset.unwrap_or_default();
            let v = [0u16, 1, 2, 3, 7, 8, 15, 16, rng.next_u64() as u16][rng.below(9)];
            s[o..o + 2].copy_from_slice(&v.to_le_bytes());
        }
        3 => {
            // Move the end: drop or add last literals.
            if rng.below(2) == 0 && s.len() > 1 {
                s.pop();
            } else {
                s.push(rng.next_u64() as u8);
            }
        }
        _ => s[token] = rng.next_u64() as u8,
    }
}

/// `CUDYN_DIFF_SCALE` (a number, default 1) multiplies the streams of a campaign and varies
/// its seed, for longer runs than CI's.
fn scale() -> (usize, u64) {
    let n = std::env::var("CUDYN_DIFF_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1usize);
    (n.max(1), if n > 1 { n as u64 } else { 0 })
}

fn campaign(zstd: bool, seed: u64, streams: usize, mutants: usize) -> usize {
    let (times, salt) = scale();
    let streams = streams * times;
    let mut rng = Rng(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut cases = 0;
    for _ in 0..streams {
        let n = size(&mut rng);
        let data = sample(&mut rng, n);
        let s = if zstd { zstd_compress(&data, &mut rng) } else { lz4_compress(&data, &mut rng) };
        // The unmutated stream decodes, to the original bytes.
        agree(zstd, &s, data.len());
        let mut out = vec![0u8; data.len()];
        cudyn::fuzzing::decompress_into(zstd, &s, &mut out).unwrap();
        assert!(out == data);
        for _ in 0..mutants {
            let mut m = s.clone();
            let declared = mutate(&mut rng, &mut m, data.len(), zstd);
            if rng.below(4) == 0 {
                mutate(&mut rng, &mut m, declared, zstd); // several edits at once
            }
            agree(zstd, &m, declared);
            cases += 1;
        }
    }
    cases
}

#[test]
fn lz4_mutants_agree_with_liblz4() {
    let t = std::time::Instant::now();
    let cases = campaign(false, 0x1234_5678_9abc_def1, 400, 25);
    eprintln!("{cases} LZ4 mutants in {:?}", t.elapsed());
}

#[test]
fn zstd_mutants_agree_with_libzstd() {
    let t = std::time::Instant::now();
    let cases = campaign(true, 0x0fed_cba9_8765_4321, 300, 25);
    eprintln!("{cases} zstd mutants in {:?}", t.elapsed());
}

/// Every LZ4 block up to 80 bytes out that ends in a way the end-of-block rules care about:
/// literals, a match of 4 to 40 bytes at offsets 0 to 20, and last literals of 0 to 14
/// bytes, with the match's length written both in its token and in an extension byte.
#[test]
fn lz4_block_endings_agree_with_liblz4() {
    let mut cases = 0;
    for lead in [1usize, 8, 12, 20, 40, 60] {
        for ml in 4..=40usize {
            for offset in [0usize, 1, 2, 3, 4, 7, 8, 9, 15, 16, 20] {
                for tail in 0..=14usize {
                    for extended in [false, true] {
                        if extended && ml < 19 {
                            continue;
                        }
                        let mut s = vec![];
                        let nib = if extended { 15 } else { (ml - 4).min(15) };
                        if nib == 15 && !extended {
                            continue;
                        }
                        s.push((lead.min(15) as u8) << 4 | nib as u8);
                        if lead >= 15 {
                            s.push((lead - 15) as u8);
                        }
                        s.extend((0..lead).map(|i| b'a' + (i % 26) as u8));
                        s.extend((offset as u16).to_le_bytes());
                        if extended {
                            s.push((ml - 19) as u8);
                        }
                        s.push((tail as u8) << 4);
                        s.extend((0..tail).map(|i| b'A' + i as u8));
                        let size = lead + ml + tail;
                        for declared in [size - 1, size, size + 1] {
                            agree(false, &s, declared);
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    eprintln!("{cases} LZ4 block endings");
}

// One test per class the decoders accepted where the reference decoders refuse (issue 21).

#[test]
fn zstd_wrong_content_checksum_is_refused() {
    let mut rng = Rng(7);
    let data = sample(&mut rng, 5000);
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(zstd_safe::CParameter::ChecksumFlag(true)).unwrap();
    let mut f = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
    cctx.compress2(&mut f, &data).unwrap();
    assert!(f[4] & 4 != 0);
    agree(true, &f, data.len());
    let n = f.len();
    for bit in 0..32 {
        let mut m = f.clone();
        m[n - 4 + bit / 8] ^= 1 << (bit % 8);
        let mut out = vec![0; data.len()];
        let e = cudyn::fuzzing::decompress_into(true, &m, &mut out).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        agree(true, &m, data.len());
    }
}

/// A frame of raw blocks of `n` bytes each (`window`: its descriptor byte, or single-segment).
fn raw_frame(blocks: &[usize], wd: Option<u8>, content: usize) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd];
    match wd {
        Some(w) => f.extend([0x80, w]), // 4-byte content size, a window descriptor
        None => f.push(0xa0),           // 4-byte content size, single segment
    }
    f.extend((content as u32).to_le_bytes());
    for (i, &n) in blocks.iter().enumerate() {
        let h = n << 3 | usize::from(i + 1 == blocks.len());
        f.extend(&h.to_le_bytes()[..3]);
        f.extend((0..n).map(|j| (j * 7) as u8));
    }
    f
}

#[test]
fn zstd_block_over_128_kib_is_refused() {
    let ok = raw_frame(&[128 << 10, 1000], None, (128 << 10) + 1000);
    agree(true, &ok, (128 << 10) + 1000);
    let big = raw_frame(&[(128 << 10) + 1], None, (128 << 10) + 1);
    let mut out = vec![0; (128 << 10) + 1];
    let e = cudyn::fuzzing::decompress_into(true, &big, &mut out).unwrap_err();
    assert!(e.contains("block maximum"), "{e}");
    agree(true, &big, (128 << 10) + 1);
    // A compressed block too: one that libzstd wrote, its size field raised past 128 KiB.
    let mut rng = Rng(11);
    let data = sample(&mut rng, 300_000);
    let f = zstd_compress(&data, &mut Rng(3));
    let b = zstd_blocks(&f)[0];
    let mut m = f.clone();
    m[b + 2] |= 0x80; // size += 2^20
    agree(true, &m, data.len());
    assert!(cudyn::fuzzing::decompress_into(true, &m, &mut vec![0; data.len()]).is_err());
}

#[test]
fn zstd_window_smaller_than_its_blocks_is_refused() {
    // Window 2^10 (descriptor 0): blocks of 1 KiB pass, of 1 KiB + 1 do not.
    let ok = raw_frame(&[1024, 1024], Some(0), 2048);
    agree(true, &ok, 2048);
    assert!(cudyn::fuzzing::decompress_into(true, &ok, &mut vec![0; 2048]).is_ok());
    let big = raw_frame(&[1025], Some(0), 1025);
    let e = cudyn::fuzzing::decompress_into(true, &big, &mut vec![0; 1025]).unwrap_err();
    assert!(e.contains("block maximum"), "{e}");
    agree(true, &big, 1025);
}

/// A compressed block whose few stored bytes make more than the window: libzstd's blocks of a
/// 2 KiB single-segment frame, under a header that declares a 1 KiB window. Each decoder
/// must hold the block's output, not only what it stores, to Block_Maximum_Size.
#[test]
fn zstd_compressed_block_making_more_than_the_window_is_refused() {
    use zstd_safe::CParameter::*;
    let data: Vec<u8> = (0..2048).map(|i| (i % 16) as u8 * 3).collect();
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(WindowLog(11)).unwrap();
    cctx.set_parameter(ChecksumFlag(false)).unwrap();
    let mut f = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
    cctx.compress2(&mut f, &data).unwrap();
    let first = zstd_blocks(&f)[0];
    assert_eq!(zstd_blocks(&f).len(), 1, "libzstd wrote more than one block");
    let block = &f[first..];
    assert_eq!((block[0] >> 1) & 3, 2, "libzstd did not compress the block");
    assert!(block.len() < 1024);
    // Not single segment, window descriptor 0 (1 KiB), a 4-byte content size.
    let header = |wd: u8| {
        let mut h = vec![0x28, 0xb5, 0x2f, 0xfd, 0x80, wd];
        h.extend(2048u32.to_le_bytes());
        h.extend(block);
        h
    };
    // With a 2 KiB window (descriptor 8: 2^11), every decoder makes the data.
    let ok = header(8);
    agree(true, &ok, 2048);
    let mut out = vec![0; 2048];
    cudyn::fuzzing::decompress_into(true, &ok, &mut out).unwrap();
    assert!(out == data);
    let small = header(0);
    let e = cudyn::fuzzing::decompress_into(true, &small, &mut vec![0; 2048]).unwrap_err();
    eprintln!("a 1 KiB window's block making 2 KiB: {e}");
    agree(true, &small, 2048);
}

#[test]
fn lz4_match_reaching_the_last_byte_is_refused() {
    // 64 literals, then a match of 30 at offset 16 ending on the block's last byte.
    let mut s = vec![0xf0 | 15, 64 - 15];
    s.extend((0..64).map(|i| i as u8));
    s.extend(16u16.to_le_bytes());
    s.push(30 - 19);
    for size in [94, 95, 99] {
        agree(false, &s, size);
        assert!(cudyn::fuzzing::decompress_into(false, &s, &mut vec![0; size]).is_err());
    }
    // With 5 literals after it, it is a valid block.
    let mut ok = s.clone();
    ok.push(0x50);
    ok.extend(b"vwxyz");
    agree(false, &ok, 99);
    assert!(cudyn::fuzzing::decompress_into(false, &ok, &mut [0; 99]).is_ok());
}

/// The compressed entries of the fatbins in `$CUDYN_REAL_FATBINS` (NVIDIA's, not shipped
/// here): every one decodes, to the reference's bytes.
#[test]
fn real_entries_agree() {
    let Some(dir) = std::env::var_os("CUDYN_REAL_FATBINS") else {
        eprintln!("CUDYN_REAL_FATBINS not set: no real entries to compare");
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut n, mut bytes) = (0, 0);
    for f in &files {
        let d = std::fs::read(f).unwrap();
        for (zstd, stream, size) in compressed_entries(&d) {
            let mut out = vec![0; size];
            cudyn::fuzzing::decompress_into(zstd, stream, &mut out).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let reference = if zstd { reference::zstd(stream, size) } else { reference::lz4(stream, size) };
            assert!(reference.as_ref() == Some(&out), "{}: differs from the reference", f.display());
            n += 1;
            bytes += size;
        }
    }
    eprintln!("{n} real entries, {bytes} bytes decompressed, agree with the reference");
}

/// (zstd?, stream, uncompressed size) of each compressed entry of the fatbin `d`.
fn compressed_entries(d: &[u8]) -> Vec<(bool, &[u8], usize)> {
    let u32_at = |o: usize| d.get(o..o + 4).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap())) as usize;
    let u64_at = |o: usize| d.get(o..o + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap())) as usize;
    let mut v = Vec::new();
    if u32_at(0) != 0xBA55_ED50 {
        return v;
    }
    let end = 16 + u64_at(8);
    let mut at = 16;
    while at + 64 <= end.min(d.len()) {
        let (hs, ps, cs, flags, us) =
            (u32_at(at + 4), u64_at(at + 8), u32_at(at + 16), u64_at(at + 40), u64_at(at + 56));
        if hs < 64 {
            break;
        }
        let body = at + hs;
        if flags & 0x1_0000 == 0 && flags & 0xa000 != 0 {
            if let Some(s) = d.get(body..body + cs) {
                v.push((flags & 0x8000 != 0, s, us));
            }
        }
        at = body + ps;
    }
    v
}
