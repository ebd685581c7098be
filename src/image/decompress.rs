//! Decompression of compressed fatbin entries, strict enough that the bytes checked are the
//! bytes CUDA's loader will decompress: the input must be exactly one well-formed stream that
//! produces exactly the declared number of bytes, or the entry is refused.

// Two formats, told apart by the entry's flags (evidence: nvcc 13.0 writes both, and the
// fatbins in NVIDIA's CUDA 12 pip wheels use the first):
//
// * 0x2000: an LZ4 *block* (no frame header, no checksum): sequences of a token byte (literal
//   length in the high nibble, match length - 4 in the low one, 15 meaning "more length bytes
//   follow, each added, until one below 255"), the literals, a 2-byte little-endian match
//   offset and the match length's extra bytes; the last sequence has literals only.
//   `nvcc --compress-mode=speed` writes it; decoding nvcc's output reproduces the plain entry
//   byte for byte (tested).
// * 0x8000: one zstd frame (RFC 8878), nvcc 13's default (`--compress-mode=default|size|balance`),
//   decoded by the `ruzstd` crate after the frame header is checked here: no dictionary, a
//   content size that equals the declared one, a window no larger than the cap.

use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// The most bytes one entry may decompress to, and all the entries of one image together:
/// validation works through every byte, so this bounds its time and memory for a small image
/// that declares a huge payload. Real entries are kilobytes to a few megabytes.
pub(crate) const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Decodes the LZ4 block `src` into `out` (cleared first), which must come to exactly `size`
/// bytes with every byte of `src` used.
pub(crate) fn lz4_block(src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    out.try_reserve_exact(size).map_err(|_| format!("cannot allocate {size} bytes to decompress it"))?;
    let mut at = 0usize;
    // A length with its extension bytes.
    let length = |at: &mut usize, mut n: usize| -> Result<usize, String> {
        if n == 15 {
            loop {
                let b = *src.get(*at).ok_or("its LZ4 stream ends inside a length")?;
                *at += 1;
                n = n.checked_add(usize::from(b)).ok_or("an LZ4 length overflows")?;
                if b != 255 {
                    break;
                }
            }
        }
        Ok(n)
    };
    loop {
        let token = *src.get(at).ok_or("its LZ4 stream is empty or ends without literals")?;
        at += 1;
        let literals = length(&mut at, usize::from(token >> 4))?;
        let lit = at.checked_add(literals).and_then(|end| src.get(at..end)).ok_or("LZ4 literals run past its end")?;
        if out.len() + lit.len() > size {
            return Err(format!("its LZ4 stream decompresses to more than the declared {size} bytes"));
        }
        out.extend_from_slice(lit);
        at += literals;
        if at == src.len() {
            break; // the last sequence: literals only
        }
        let offset = src.get(at..at + 2).map(|o| usize::from(u16::from_le_bytes([o[0], o[1]])));
        let offset = offset.ok_or("its LZ4 stream ends inside a match offset")?;
        at += 2;
        let len = length(&mut at, usize::from(token & 15))?.checked_add(4).ok_or("an LZ4 length overflows")?;
        if offset == 0 || offset > out.len() {
            return Err(format!("an LZ4 match refers {offset} bytes back, before the start of the output"));
        }
        if out.len() + len > size {
            return Err(format!("its LZ4 stream decompresses to more than the declared {size} bytes"));
        }
        // An offset shorter than the match repeats the last `offset` bytes: copy in runs of it.
        let mut left = len;
        while left > 0 {
            let start = out.len() - offset;
            let run = left.min(offset);
            out.extend_from_within(start..start + run);
            left -= run;
        }
    }
    if out.len() != size {
        return Err(format!("its LZ4 stream decompresses to {} bytes, not the declared {size}", out.len()));
    }
    Ok(())
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;

/// Decodes the zstd frame `src` into `out` (cleared first): exactly one frame, all of `src`,
/// exactly `size` bytes out.
pub(crate) fn zstd_frame(src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    check_zstd_header(src, size as u64)?;
    out.try_reserve_exact(size).map_err(|_| format!("cannot allocate {size} bytes to decompress it"))?;
    // ruzstd is fuzzed upstream and should not panic on any input; a panic is turned into a
    // refusal all the same, so that none escapes through the Rust API.
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_zstd(src, size, out)));
    decoded.unwrap_or_else(|_| Err("the zstd decoder failed on it".into()))
}

fn decode_zstd(src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let mut input = src;
    let mut dec = FrameDecoder::new();
    dec.reset(&mut input).map_err(|e| format!("its zstd frame header is bad: {e}"))?;
    loop {
        // A bounded step at a time, so the decoder's buffer stays small and a stream that
        // produces more than it declares is stopped early.
        let done = dec
            .decode_blocks(&mut input, BlockDecodingStrategy::UptoBytes(1 << 20))
            .map_err(|e| format!("its zstd frame is corrupt: {e}"))?;
        dec.collect_to_writer(&mut *out).map_err(|e| format!("its zstd frame is corrupt: {e}"))?;
        if out.len() > size {
            return Err(format!("its zstd frame decompresses to more than the declared {size} bytes"));
        }
        if done {
            break;
        }
    }
    dec.collect_to_writer(&mut *out).map_err(|e| format!("its zstd frame is corrupt: {e}"))?;
    if !dec.is_finished() {
        return Err("its zstd frame is cut short".into());
    }
    if !input.is_empty() || dec.bytes_read_from_source() != src.len() as u64 {
        return Err(format!("{} bytes follow its zstd frame", input.len()));
    }
    if out.len() != size {
        return Err(format!("its zstd frame decompresses to {} bytes, not the declared {size}", out.len()));
    }
    Ok(())
}

/// The frame header (RFC 8878 section 3.1.1.1), checked before the decoder allocates anything
/// by it: a frame (not a skippable one), no reserved bit, no dictionary, a content size equal
/// to `size`, and a window within the cap.
fn check_zstd_header(src: &[u8], size: u64) -> Result<(), String> {
    let magic = src.first_chunk::<4>().map(|m| u32::from_le_bytes(*m));
    if magic != Some(ZSTD_MAGIC) {
        return Err("its payload is not a zstd frame (no zstd magic number)".into());
    }
    let fhd = *src.get(4).ok_or("its zstd frame header is cut short")?;
    let (fcs_flag, single_segment, reserved, dict_flag) = (fhd >> 6, fhd & 0x20 != 0, fhd & 0x08 != 0, fhd & 3);
    if reserved {
        return Err("its zstd frame header sets the reserved bit".into());
    }
    if dict_flag != 0 {
        return Err("its zstd frame needs a dictionary".into());
    }
    let mut at = 5;
    let window = if single_segment {
        None
    } else {
        let wd = *src.get(at).ok_or("its zstd frame header is cut short")?;
        at += 1;
        let base = 1u64 << (10 + (wd >> 3));
        Some(base + base / 8 * u64::from(wd & 7))
    };
    let fcs_len = match (fcs_flag, single_segment) {
        (0, false) => return Err("its zstd frame does not record its content size".into()),
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let field = src.get(at..at + fcs_len).ok_or("its zstd frame header is cut short")?;
    let mut bytes = [0u8; 8];
    bytes[..fcs_len].copy_from_slice(field);
    let content = u64::from_le_bytes(bytes) + if fcs_len == 2 { 256 } else { 0 };
    if content != size {
        return Err(format!("its zstd frame holds {content} bytes, but the entry declares {size}"));
    }
    if let Some(w) = window.filter(|&w| w > MAX_DECOMPRESSED) {
        return Err(format!("its zstd frame asks for a {w}-byte window, more than the {MAX_DECOMPRESSED}-byte cap"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lz4_literals_and_overlapping_matches() {
        // "abc" then a match of 9 at offset 3 ("abcabcabc"), then literals "xy".
        let src = [0x35, b'a', b'b', b'c', 3, 0, 0x20, b'x', b'y'];
        let mut out = Vec::new();
        lz4_block(&src, 14, &mut out).unwrap();
        assert_eq!(out, b"abcabcabcabcxy");
        // Any other declared size is refused, as is a stream cut anywhere or with a byte more.
        assert!(lz4_block(&src, 13, &mut out).is_err());
        assert!(lz4_block(&src, 15, &mut out).is_err());
        for cut in 0..src.len() {
            assert!(lz4_block(&src[..cut], 14, &mut out).is_err(), "cut at {cut}");
        }
        // Offset 0 and an offset before the output's start.
        assert!(lz4_block(&[0x35, b'a', b'b', b'c', 0, 0, 0x20, b'x', b'y'], 14, &mut out).is_err());
        assert!(lz4_block(&[0x35, b'a', b'b', b'c', 4, 0, 0x20, b'x', b'y'], 14, &mut out).is_err());
    }

    #[test]
    fn lz4_length_extensions() {
        // 15 + 255 + 3 = 273 literal bytes.
        let mut src = vec![0xf0, 255, 3];
        src.extend(std::iter::repeat_n(b'q', 273));
        let mut out = Vec::new();
        lz4_block(&src, 273, &mut out).unwrap();
        assert_eq!(out.len(), 273);
        // A length whose extension bytes run off the end.
        assert!(lz4_block(&[0xf0, 255], 300, &mut out).is_err());
    }

    #[test]
    fn zstd_headers() {
        let mut out = Vec::new();
        // Not a frame, a skippable frame, a dictionary, the reserved bit, no content size.
        assert!(zstd_frame(b"\0\0\0\0\0\0", 1, &mut out).unwrap_err().contains("not a zstd frame"));
        assert!(zstd_frame(&[0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0], 0, &mut out).is_err());
        let frame = |fhd: u8, rest: &[u8]| [&[0x28, 0xb5, 0x2f, 0xfd, fhd][..], rest].concat();
        assert!(zstd_frame(&frame(0x21, &[0, 4]), 4, &mut out).unwrap_err().contains("dictionary"));
        assert!(zstd_frame(&frame(0x28, &[4]), 4, &mut out).unwrap_err().contains("reserved"));
        assert!(zstd_frame(&frame(0x00, &[0]), 4, &mut out).unwrap_err().contains("content size"));
        // A single-segment frame of one raw block "abcd" (block header: last, raw, size 4).
        let ok = frame(0x20, &[4, 0x21, 0, 0, b'a', b'b', b'c', b'd']);
        zstd_frame(&ok, 4, &mut out).unwrap();
        assert_eq!(out, b"abcd");
        assert!(zstd_frame(&ok, 5, &mut out).unwrap_err().contains("declares 5"));
        assert!(zstd_frame(&[&ok[..], &[0]].concat(), 4, &mut out).unwrap_err().contains("follow"));
        for cut in 0..ok.len() {
            assert!(zstd_frame(&ok[..cut], 4, &mut out).is_err(), "cut at {cut}");
        }
        // A frame whose content size lies about its blocks (says 4, holds 5).
        let lie = frame(0x20, &[4, 0x29, 0, 0, b'a', b'b', b'c', b'd', b'e']);
        assert!(zstd_frame(&lie, 4, &mut out).is_err());
        // A window of 2^41 bytes is refused before anything is allocated for it.
        let huge = frame(0x40, &[0xf8, 4, 0, 0x21, 0, 0, b'a', b'b', b'c', b'd']);
        assert!(zstd_frame(&huge, 260, &mut out).is_err());
    }
}
