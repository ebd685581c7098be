//! The reference decoders (libzstd 1.5.7, liblz4 1.10, as the zstd-safe and lz4-sys crates
//! build them) and the comparison cudyn's decoders are held to; shared by the differential
//! test (tests/decoder_differential.rs) and the fuzz target (fuzz/fuzz_targets/decoders.rs).
#![allow(dead_code)]

/// What liblz4's `LZ4_decompress_safe` makes of `src` with `size` bytes of room, when it
/// makes exactly that many.
pub fn lz4(src: &[u8], size: usize) -> Option<Vec<u8>> {
    let (Ok(n), Ok(cap)) = (i32::try_from(src.len()), i32::try_from(size)) else { return None };
    let mut out = vec![0u8; size];
    // SAFETY: the pointers and lengths describe `src` and `out`, which outlive the call;
    // LZ4_decompress_safe reads at most `n` bytes and writes at most `cap`.
    let got = unsafe { lz4_sys::LZ4_decompress_safe(src.as_ptr().cast(), out.as_mut_ptr().cast(), n, cap) };
    (got == cap).then_some(out)
}

/// What libzstd makes of `src` as a fatbin's zstd entry of `size` bytes: exactly one frame
/// that fills `src`, from which both of libzstd's decoders make exactly `size` bytes, the same:
/// the one-shot one (`ZSTD_decompressDCtx`) and the streaming one (`ZSTD_decompressStream`,
/// windows up to 2^31 as one-shot allows, output offered 64 bytes at a time so that it really
/// streams). The streaming decoder holds every block to RFC 8878's Block_Maximum_Size
/// (min(window, 128 KiB)), in what it stores and what it makes; the one-shot decoder checks
/// that for compressed blocks' contents and literals, and for their output only where it
/// happens to keep the literals in the output buffer. A frame either refuses, cudyn refuses.
pub fn zstd(src: &[u8], size: usize) -> Option<Vec<u8>> {
    zstd_why(src, size).ok()
}

/// [`zstd`], with the reason for a refusal.
pub fn zstd_why(src: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let name = zstd_safe::get_error_name;
    let frame = zstd_safe::find_frame_compressed_size(src).map_err(|e| format!("frame size: {}", name(e)))?;
    if frame != src.len() {
        return Err(format!("one frame of {frame} bytes, not {}", src.len()));
    }
    if !blocks_within_maximum(src) {
        return Err("a block over Block_Maximum_Size".into());
    }
    let mut out = vec![0u8; size];
    let mut dctx = zstd_safe::DCtx::create();
    match dctx.decompress(&mut out[..], src) {
        Ok(n) if n == size => {}
        Ok(n) => return Err(format!("one-shot: {n} bytes, not {size}")),
        Err(e) => return Err(format!("one-shot: {}", name(e))),
    }
    let streamed = streaming(src, size).map_err(|e| format!("streaming: {e}"))?;
    assert!(streamed == out, "libzstd's one-shot and streaming decoders disagree on a frame's bytes");
    Ok(out)
}

fn streaming(src: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut dctx = zstd_safe::DCtx::create();
    dctx.set_parameter(zstd_safe::DParameter::WindowLogMax(31))
        .map_err(|e| zstd_safe::get_error_name(e).to_string())?;
    let mut out = vec![0u8; size + 64];
    let mut input = zstd_safe::InBuffer::around(src);
    let mut made = 0;
    loop {
        let end = (made + 64).min(out.len());
        let mut piece = zstd_safe::OutBuffer::around(&mut out[made..end]);
        let hint =
            dctx.decompress_stream(&mut piece, &mut input).map_err(|e| zstd_safe::get_error_name(e).to_string())?;
        let n = piece.pos();
        made += n;
        if hint == 0 {
            break;
        }
        if made > size {
            return Err("more than the declared size".into());
        }
        if n == 0 && input.pos() == src.len() {
            return Err("the frame is cut short".into());
        }
    }
    if input.pos() != src.len() || made != size {
        return Err(format!("{made} bytes from {} of {} input bytes", input.pos(), src.len()));
    }
    out.truncate(size);
    Ok(out)
}

/// Whether every block header of the frame `src` (whose layout libzstd has accepted) keeps to
/// Block_Maximum_Size: raw and compressed contents, and RLE blocks' decoded size.
fn blocks_within_maximum(src: &[u8]) -> bool {
    let Some(&fhd) = src.get(4) else { return false };
    let single = fhd & 0x20 != 0;
    let mut at = 5;
    let mut window = 0u64;
    if !single {
        let Some(&wd) = src.get(5) else { return false };
        let log = 10 + u32::from(wd >> 3);
        window = (1u64 << log) + ((1u64 << log) >> 3) * u64::from(wd & 7);
        at += 1;
    }
    at += [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_len = match fhd >> 6 {
        0 => usize::from(single),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    if single {
        let Some(f) = src.get(at..at + fcs_len) else { return false };
        window = f.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b)) + if fcs_len == 2 { 256 } else { 0 };
    }
    at += fcs_len;
    let max = window.min(128 << 10) as usize;
    loop {
        let Some(h) = src.get(at..at + 3) else { return false };
        let h = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        let (last, kind, n) = (h & 1 != 0, (h >> 1) & 3, h >> 3);
        if n > max {
            return false;
        }
        at += 3 + if kind == 1 { 1 } else { n };
        if last {
            return true;
        }
    }
}

/// Panics unless cudyn's decoder and the reference agree on `src` as an entry of `size`
/// bytes: both refuse, or both make the same bytes.
pub fn agree(zstd_method: bool, src: &[u8], size: usize) {
    let reference = if zstd_method { zstd(src, size) } else { lz4(src, size) };
    let mut out = vec![0u8; size];
    let ours = cudyn::fuzzing::decompress_into(zstd_method, src, &mut out).map(|()| out);
    let method = if zstd_method { "zstd" } else { "LZ4" };
    match (&ours, &reference) {
        (Ok(a), Some(b)) => {
            assert!(a == b, "{method}: cudyn and the reference decode {} bytes to different output", src.len())
        }
        (Err(_), None) => {}
        (Ok(_), None) => {
            let why = if zstd_method { zstd_why(src, size).err().unwrap_or_default() } else { String::new() };
            panic!("{method}: cudyn accepts {} bytes (as {size}) the reference refuses ({why}): {src:02x?}", src.len())
        }
        (Err(e), Some(_)) => {
            panic!("{method}: cudyn refuses {} bytes (as {size}) the reference accepts ({e}): {src:02x?}", src.len())
        }
    }
}
