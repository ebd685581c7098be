//! Decompression of compressed fatbin entries straight into a buffer of the declared size,
//! refusing what the reference decoders (liblz4's `LZ4_decompress_safe`, libzstd) refuse.
//! [`decode_into`] is the entry point; [`check_declared`] refuses a bomb before any decoding.

// Two formats, told apart by the entry's flags (evidence: nvcc 13.0 writes both; of the 100,578
// compressed entries in 37 of NVIDIA's pip wheels, 70,045 are LZ4 (CUDA 12 builds) and 30,533
// zstd (CUDA 13 builds)). In every one the compressed size is the stream's exact length, with
// 0 to 7 zero bytes of payload padding after it (checked by the fatbin walk, not here).
//
// * 0x2000: one LZ4 *block* (no frame, no checksum): sequences of a token byte (literal length
//   in the high nibble, match length - 4 in the low one, 15 meaning "more length bytes follow,
//   each added, until one below 255"), the literals, a 2-byte little-endian match offset and the
//   match length's extra bytes; the last sequence has literals only. Decoded here (`lz4`) with
//   the end-of-block rules liblz4 1.10's `LZ4_decompress_safe` applies on x86-64, which are not
//   quite the format document's: see `lz4` for them. The differential test
//   (tests/decoder_differential.rs) holds the two to the same verdicts and bytes.
// * 0x8000: one zstd frame (RFC 8878), nvcc 13's default (`--compress-mode=default|size|balance`).
//   Its header and every block header are checked here first (`zstd_layout`): libzstd's rules
//   (magic, reserved bit, window log <= 31, dictionary id 0, block type, content size equal to
//   the declared size), plus the RFC's Block_Maximum_Size for every block (libzstd's streaming
//   decoder enforces it for all block types, its one-shot decoder for compressed blocks only)
//   and exactly one frame filling the stream. The frame is then decoded by libzstd itself
//   (cargo feature `c-decoders`, which the CMake build turns on: the reference, a C library, and
//   7-9x faster on NVIDIA's cubins) or by the pure-Rust `ruzstd` (the default, so that a crate
//   depending on cudyn builds without a C compiler), whose remaining differences from libzstd
//   are bridged here: a content checksum is verified, a dictionary id of 0 is no dictionary,
//   and a window over ruzstd's 100 MiB limit is lowered (`for_ruzstd`).

/// The most bytes one entry may declare it decompresses to. The largest real entry found, in
/// 37 wheels: 159,484,120 bytes (NCCL 2.32 for CUDA 13, `libnccl.so.2`, sm_110); 512 MiB
/// leaves 3.3× room. Validation works through every byte, so this bounds time and memory for
/// a small image that declares a huge payload.
pub(crate) const MAX_ENTRY: u64 = 512 << 20;

/// The most bytes all the compressed entries of one image may declare together (checked from
/// the entry headers, before anything is decoded). The largest real image: 826,634,168 bytes
/// in 7 entries (the same NCCL fatbin, every entry decompressed); 2 GiB leaves 2.6× room.
pub(crate) const MAX_IMAGE: u64 = 2 << 30;

/// A compressed entry's method (its flags: 0x2000 LZ4, 0x8000 zstd).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Lz4,
    Zstd,
}

/// Refuses, from the sizes alone, an entry that declares more than [`MAX_ENTRY`], or more than
/// an LZ4 block of `compressed` bytes can possibly make: at most 255 bytes per input byte (one
/// length byte adds 255), so the bound refuses nothing liblz4 could accept. (A zstd frame has
/// no such bound: libzstd's one-shot decoder lets one compressed block make gigabytes.)
pub(crate) fn check_declared(method: Method, compressed: usize, size: u64) -> Result<(), String> {
    if size > MAX_ENTRY {
        return Err(format!("it declares {size} bytes decompressed, more than the {MAX_ENTRY}-byte cap"));
    }
    if method == Method::Lz4 && size > (compressed as u64).saturating_mul(255) {
        return Err(format!("{compressed} compressed bytes cannot decompress to the declared {size}"));
    }
    Ok(())
}

/// Decodes `src`, one whole LZ4 block or zstd frame, into `out`: it must produce exactly
/// `out.len()` bytes and use every byte of `src`. Nothing is allocated by the input's say-so
/// (zstd decoded by ruzstd: its window, at most that of the frame and 96 MiB). On an error
/// `out` holds garbage.
pub(crate) fn decode_into(method: Method, src: &[u8], out: &mut [u8]) -> Result<(), String> {
    check_declared(method, src.len(), out.len() as u64)?;
    match method {
        Method::Lz4 => lz4_into(src, out),
        Method::Zstd => zstd_frame_into(src, out),
    }
}

/// One LZ4 block into `out`, by cudyn's own decoder (the rules of liblz4's
/// `LZ4_decompress_safe`, see `lz4`).
#[cfg(not(feature = "c-decoders"))]
fn lz4_into(src: &[u8], out: &mut [u8]) -> Result<(), String> {
    lz4::decode(src, out)
}

/// One LZ4 block into `out`, by liblz4's `LZ4_decompress_safe` itself (feature `c-decoders`):
/// it must fill `out` exactly (the block is refused otherwise, whatever it made).
#[cfg(feature = "c-decoders")]
fn lz4_into(src: &[u8], out: &mut [u8]) -> Result<(), String> {
    let (Ok(n), Ok(cap)) = (i32::try_from(src.len()), i32::try_from(out.len())) else {
        return Err("its LZ4 block is larger than liblz4 takes".into());
    };
    // SAFETY: the pointers and lengths describe `src` and `out`, which outlive the call;
    // LZ4_decompress_safe reads at most `n` bytes of `src` and writes at most `cap` to `out`.
    let got = unsafe { lz4_sys::LZ4_decompress_safe(src.as_ptr().cast(), out.as_mut_ptr().cast(), n, cap) };
    match got {
        g if g == cap => Ok(()),
        g if g < 0 => Err(format!(
            "its LZ4 block does not decode to the declared {cap} bytes (liblz4 stops at byte {})",
            -(g + 1)
        )),
        g => Err(format!("its LZ4 block decodes to {g} bytes, not the declared {cap}")),
    }
}

/// [`decode_into`] a vector that is resized (fallibly) to `size` bytes, kept for the callers
/// that check one entry at a time.
fn decode_to_vec(method: Method, src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    check_declared(method, src.len(), size as u64)?;
    if method == Method::Zstd {
        zstd_layout(src, size)?; // a frame that cannot make `size` bytes gets nothing allocated
    }
    out.try_reserve_exact(size).map_err(|_| format!("cannot allocate {size} bytes to decompress it"))?;
    out.resize(size, 0);
    decode_into(method, src, out)
}

/// Decodes the LZ4 block `src` into `out` (resized to `size`).
pub(crate) fn lz4_block(src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    decode_to_vec(Method::Lz4, src, size, out)
}

/// Decodes the zstd frame `src` into `out` (resized to `size`).
pub(crate) fn zstd_frame(src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    decode_to_vec(Method::Zstd, src, size, out)
}

#[cfg_attr(feature = "c-decoders", allow(dead_code))] // liblz4 decodes instead
mod lz4 {
    //! An LZ4 block decoder that accepts and refuses what liblz4 1.10's `LZ4_decompress_safe`
    //! does on x86-64 (with the output capacity the declared size, which it must fill).
    //!
    //! liblz4 decodes in two modes. *Fast* while at least 64 bytes of output are left (checked
    //! once at the start, then kept by leaving the mode whenever a match would end within 64
    //! bytes of the end, or literals within 32 bytes of either end); *safe* for the rest. The
    //! rules that follow from its code, beyond "lengths, literals and offsets stay in bounds":
    //!
    //! * a literal run that ends within 12 bytes of the output's end, or leaves fewer than 8
    //!   input bytes after it, ends the block: it must end exactly at the input's end;
    //! * a match (in safe mode) that ends within 12 bytes of the output's end must end at least
    //!   5 bytes before it — except through safe mode's shortcut: a token with under 15
    //!   literals and a match of 4 to 18 bytes at an offset of at least 8, at an input position
    //!   more than 16 bytes before the end and an output position at least 32 bytes before it,
    //!   is copied without that check (so a block may end with such a match, then a token with
    //!   no literals);
    //! * a literal length's extension bytes must leave more than 15 input bytes; a match
    //!   length's must leave at least 4;
    //! * offset 0 is not refused: the match reads as zeros (liblz4 clears the bytes before its
    //!   overlapping copy);
    //! * an empty output is made only by the one-byte block `00`.

    use super::{check_range, copy_match};

    pub(super) fn decode(src: &[u8], out: &mut [u8]) -> Result<(), String> {
        let (iend, oend) = (src.len(), out.len());
        if oend == 0 {
            return if src == [0] { Ok(()) } else { Err("its LZ4 block does not decode to 0 bytes".into()) };
        }
        if iend == 0 {
            return Err("its LZ4 block is empty".into());
        }
        let (mut ip, mut op) = (0usize, 0usize);
        let mut fast = oend >= 64;
        let byte = |at: usize| src.get(at).copied().ok_or_else(cut);
        loop {
            let token = byte(ip)?;
            ip += 1;
            let mut lit = usize::from(token >> 4);
            let mut nibble = usize::from(token & 15);
            let offset: usize;
            // Where the match's checks begin: (length complete, checks as in safe mode).
            if fast {
                if lit == 15 {
                    lit += extension(src, &mut ip, iend.checked_sub(15), true)?;
                    if op + lit + 32 > oend || ip + lit + 32 > iend {
                        fast = false;
                        if literals(src, out, &mut ip, &mut op, lit)? {
                            return finish(op, oend);
                        }
                        offset = read_offset(src, &mut ip)?;
                        let len = match_length(src, &mut ip, nibble)?;
                        safe_match(out, &mut op, offset, len)?;
                        continue;
                    }
                } else if ip + 17 > iend {
                    fast = false;
                    if literals(src, out, &mut ip, &mut op, lit)? {
                        return finish(op, oend);
                    }
                    offset = read_offset(src, &mut ip)?;
                    let len = match_length(src, &mut ip, nibble)?;
                    safe_match(out, &mut op, offset, len)?;
                    continue;
                }
                copy_literals(src, out, &mut ip, &mut op, lit)?;
                offset = read_offset(src, &mut ip)?;
                let len = match_length(src, &mut ip, nibble)?;
                if op + len + 64 >= oend {
                    fast = false;
                    safe_match(out, &mut op, offset, len)?;
                    continue;
                }
                check_range(offset, op)?;
                copy_match(out, op, offset, len);
                op += len;
                continue;
            }
            // Safe mode, and first its shortcut.
            if lit != 15 && ip + 16 < iend && op + 32 <= oend {
                copy_literals(src, out, &mut ip, &mut op, lit)?;
                offset = read_offset(src, &mut ip)?;
                if nibble != 15 && offset >= 8 && offset <= op {
                    copy_match(out, op, offset, nibble + 4);
                    op += nibble + 4;
                    continue;
                }
            } else {
                if lit == 15 {
                    lit += extension(src, &mut ip, iend.checked_sub(15), true)?;
                }
                if literals(src, out, &mut ip, &mut op, lit)? {
                    return finish(op, oend);
                }
                offset = read_offset(src, &mut ip)?;
            }
            if nibble == 15 {
                nibble += extension(src, &mut ip, iend.checked_sub(4), false)?;
            }
            safe_match(out, &mut op, offset, nibble + 4)?;
        }
    }

    fn cut() -> String {
        "its LZ4 block ends inside a sequence".into()
    }

    /// A length's extension bytes, summed; liblz4 refuses them once the input position passes
    /// `limit` (and, with `before`, when it starts at or past it). No limit: the input is
    /// shorter than the margin, so the length is refused.
    fn extension(src: &[u8], ip: &mut usize, limit: Option<usize>, before: bool) -> Result<usize, String> {
        let Some(limit) = limit else { return Err("an LZ4 length runs into the end of its block".into()) };
        if before && *ip >= limit {
            return Err("an LZ4 length runs into the end of its block".into());
        }
        let mut sum = 0usize;
        loop {
            let b = *src.get(*ip).ok_or_else(cut)?;
            *ip += 1;
            if *ip > limit {
                return Err("an LZ4 length runs into the end of its block".into());
            }
            sum = sum.checked_add(usize::from(b)).ok_or("an LZ4 length overflows")?;
            if b != 255 {
                return Ok(sum);
            }
        }
    }

    /// A match's length from its token nibble and extension bytes.
    fn match_length(src: &[u8], ip: &mut usize, nibble: usize) -> Result<usize, String> {
        let extra = if nibble == 15 { extension(src, ip, src.len().checked_sub(4), false)? } else { 0 };
        Ok(nibble + extra + 4)
    }

    fn read_offset(src: &[u8], ip: &mut usize) -> Result<usize, String> {
        let o = src.get(*ip..*ip + 2).ok_or_else(cut)?;
        *ip += 2;
        Ok(usize::from(u16::from_le_bytes([o[0], o[1]])))
    }

    /// A literal run in safe mode; true when it is the last sequence (and then it ended
    /// exactly at the input's end, within the output).
    fn literals(src: &[u8], out: &mut [u8], ip: &mut usize, op: &mut usize, lit: usize) -> Result<bool, String> {
        let (iend, oend) = (src.len(), out.len());
        let (cpy, iafter) = (op.saturating_add(lit), ip.saturating_add(lit));
        if cpy + 12 > oend || iafter + 8 > iend {
            if iafter != iend {
                return Err(if iafter > iend {
                    "LZ4 literals run past the end of its block".into()
                } else {
                    "its LZ4 block's last literals end before the block does".into()
                });
            }
            if cpy > oend {
                return Err(format!("its LZ4 block decompresses to more than the declared {oend} bytes"));
            }
            copy_literals(src, out, ip, op, lit)?;
            return Ok(true);
        }
        copy_literals(src, out, ip, op, lit)?;
        Ok(false)
    }

    fn copy_literals(src: &[u8], out: &mut [u8], ip: &mut usize, op: &mut usize, lit: usize) -> Result<(), String> {
        let from = src.get(*ip..*ip + lit).ok_or("LZ4 literals run past the end of its block")?;
        let to = out.get_mut(*op..*op + lit).ok_or("LZ4 literals run past the declared size")?;
        to.copy_from_slice(from);
        *ip += lit;
        *op += lit;
        Ok(())
    }

    /// A match in safe mode: within the output so far, and ending 5 or more bytes before the
    /// end when it ends within 12.
    fn safe_match(out: &mut [u8], op: &mut usize, offset: usize, len: usize) -> Result<(), String> {
        check_range(offset, *op)?;
        let oend = out.len();
        let end = op.checked_add(len).ok_or("an LZ4 length overflows")?;
        if end + 12 > oend && end + 5 > oend {
            return Err(if end > oend {
                format!("its LZ4 block decompresses to more than the declared {oend} bytes")
            } else {
                "an LZ4 match reaches into the last 5 bytes of its block (which must be literals)".into()
            });
        }
        copy_match(out, *op, offset, len);
        *op = end;
        Ok(())
    }

    fn finish(op: usize, oend: usize) -> Result<(), String> {
        if op != oend {
            return Err(format!("its LZ4 block decompresses to {op} bytes, not the declared {oend}"));
        }
        Ok(())
    }
}

/// An LZ4 match's offset against the bytes written so far.
#[cfg_attr(feature = "c-decoders", allow(dead_code))]
fn check_range(offset: usize, written: usize) -> Result<(), String> {
    if offset > written {
        return Err(format!("an LZ4 match refers {offset} bytes back, before the start of the output"));
    }
    Ok(())
}

/// Copies `len` bytes from `offset` back to `at` (overlapping: a run shorter than the match
/// repeats; offset 0 writes zeros, as liblz4 does). The caller has checked `offset <= at` and
/// `at + len <= out.len()`; past either, nothing is written.
#[cfg_attr(feature = "c-decoders", allow(dead_code))]
fn copy_match(out: &mut [u8], at: usize, offset: usize, len: usize) {
    let Some(end) = at.checked_add(len).filter(|&e| e <= out.len() && offset <= at) else { return };
    if offset == 0 {
        out[at..end].fill(0);
    } else if offset >= len {
        out.copy_within(at - offset..end - offset, at);
    } else {
        // The bytes already copied repeat with period `offset`: copy from the run's start,
        // doubling each time, always a multiple of `offset` ahead.
        let start = at - offset;
        let mut done = 0;
        while done < len {
            let n = (offset + done).min(len - done);
            out.copy_within(start..start + n, at + done);
            done += n;
        }
    }
}

/// RFC 8878's largest block (Block_Maximum_Size is this or the window, if smaller).
const BLOCK_MAX: usize = 128 << 10;
const ZSTD_MAGIC: u32 = 0xFD2F_B528;
/// libzstd's largest window (its streaming decoder's, with `ZSTD_d_windowLogMax` raised to 31).
const ZSTD_WINDOW_LOG_MAX: u32 = 31;

/// What the frame header says, checked with every block header before any block is decoded.
#[derive(Debug)]
#[cfg_attr(feature = "c-decoders", allow(dead_code))] // libzstd reads the frame's own header
struct ZstdLayout {
    /// Bytes of the frame header (magic included).
    header_len: usize,
    checksum: bool,
    /// Block_Maximum_Size: the window, or 128 KiB if smaller.
    block_max: usize,
}

/// Decodes the one zstd frame `src` into `out`.
fn zstd_frame_into(src: &[u8], out: &mut [u8]) -> Result<(), String> {
    let layout = zstd_layout(src, out.len())?;
    zstd_blocks(src, &layout, out)
}

/// The frame header (RFC 8878 section 3.1.1.1) and then every block header, under libzstd's
/// rules and the RFC's block size limit; refuses a frame that cannot produce `size` bytes.
fn zstd_layout(src: &[u8], size: usize) -> Result<ZstdLayout, String> {
    const CUT: &str = "its zstd frame is cut short";
    let magic = src.first_chunk::<4>().map(|m| u32::from_le_bytes(*m));
    match magic {
        Some(ZSTD_MAGIC) => {}
        Some(m) if m & 0xFFFF_FFF0 == 0x184D_2A50 => {
            return Err("its payload is a skippable zstd frame, not a frame of content".into())
        }
        _ => return Err("its payload is not a zstd frame (no zstd magic number)".into()),
    }
    let fhd = *src.get(4).ok_or(CUT)?;
    let (fcs_flag, single_segment, checksum, dict_flag) = (fhd >> 6, fhd & 0x20 != 0, fhd & 0x04 != 0, fhd & 3);
    if fhd & 0x08 != 0 {
        return Err("its zstd frame header sets the reserved bit".into());
    }
    let mut at = 5;
    let mut window = 0;
    if !single_segment {
        let wd = *src.get(at).ok_or(CUT)?;
        at += 1;
        let log = 10 + u32::from(wd >> 3);
        window = (1u64 << log) + (1u64 << log) / 8 * u64::from(wd & 7);
        // One-shot libzstd takes windows to 2^31 + 7/8 of it; its streaming decoder, at most.
        if window > 1 << ZSTD_WINDOW_LOG_MAX {
            return Err(format!("its zstd frame asks for a {window}-byte window, more than libzstd's 2^31"));
        }
    }
    let dict_len = [0, 1, 2, 4][usize::from(dict_flag)];
    let dict = src.get(at..at + dict_len).ok_or(CUT)?;
    at += dict_len;
    let fcs_len = match (fcs_flag, single_segment) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let fcs = src.get(at..at + fcs_len).ok_or(CUT)?;
    at += fcs_len;
    let le = |b: &[u8]| b.iter().rev().fold(0u64, |v, &x| v << 8 | u64::from(x));
    // A dictionary id of 0 names no dictionary (libzstd decodes such a frame without one).
    let dict_id = le(dict);
    if dict_id != 0 {
        return Err(format!("its zstd frame needs dictionary {dict_id}"));
    }
    let content_size = (fcs_len > 0).then(|| le(fcs) + if fcs_len == 2 { 256 } else { 0 });
    if let Some(c) = content_size.filter(|&c| c != size as u64) {
        return Err(format!("its zstd frame holds {c} bytes, but the entry declares {size}"));
    }
    if single_segment {
        window = content_size.unwrap_or(0);
    }
    let block_max = window.min(BLOCK_MAX as u64) as usize;
    let layout = ZstdLayout { header_len: at, checksum, block_max };

    let mut least = 0usize; // bytes the raw and RLE blocks make
    loop {
        let (last, kind, n) = zstd_block_header(src, at).ok_or(CUT)?;
        at += 3;
        let (stored, made) = match kind {
            0 => (n, n),
            1 => (1, n),
            2 => (n, 0),
            _ => return Err("a zstd block has the reserved block type".into()),
        };
        if n > block_max {
            let what = ["raw", "RLE", "compressed"][kind];
            return Err(format!(
                "a {what} zstd block of {n} bytes exceeds the block maximum of {block_max} (128 KiB or the window, if smaller)"
            ));
        }
        let content = src.get(at..at.saturating_add(stored)).ok_or(CUT)?;
        if kind == 2 {
            check_block_sections(content, block_max)?;
        }
        at += stored;
        least = least.saturating_add(made);
        if least > size {
            return Err(format!("its zstd frame decompresses to more than the declared {size} bytes"));
        }
        if last {
            break;
        }
    }
    if checksum {
        at = at.checked_add(4).filter(|&end| end <= src.len()).ok_or(CUT)?;
    }
    if at != src.len() {
        return Err(format!("{} bytes follow its zstd frame", src.len() - at));
    }
    Ok(layout)
}

/// The block header at `at` of a zstd frame, a `u24`: (last block (bit 0), type (bits 1-2),
/// size (bits 3-23)); None past the end of `src`.
fn zstd_block_header(src: &[u8], at: usize) -> Option<(bool, usize, usize)> {
    let h = src.get(at..at.checked_add(3)?)?;
    let h = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    Some((h & 1 != 0, (h >> 1) & 3, h >> 3))
}

/// The section headers of a compressed block (RFC 8878 section 3.1.1.3), held to what libzstd
/// checks and ruzstd does not: at most `block_max` literals, at least 6 when they are
/// Huffman-coded in 4 streams; a sequences section, whose reserved bits are 0 and which ends
/// at once when it has no sequences.
fn check_block_sections(block: &[u8], block_max: usize) -> Result<(), String> {
    let b = |i: usize| block.get(i).map_or(0, |&x| usize::from(x));
    let (kind, format) = (b(0) & 3, (b(0) >> 2) & 3);
    let le = |n: usize| (0..n).fold(0usize, |v, i| v | b(i) << (8 * i));
    // (literals, Huffman streams, bytes of the literals section)
    let (count, streams, section) = match (kind, format) {
        (0 | 1, 0 | 2) => (b(0) >> 3, 1, 1),
        (0 | 1, 1) => (le(2) >> 4, 1, 2),
        (0 | 1, _) => (le(3) >> 4, 1, 3),
        (_, 0 | 1) => ((le(3) >> 4) & 0x3ff, if format == 0 { 1 } else { 4 }, 3 + ((le(3) >> 14) & 0x3ff)),
        (_, 2) => ((le(4) >> 4) & 0x3fff, 4, 4 + (le(4) >> 18)),
        _ => ((le(4) >> 4) & 0x3ffff, 4, 5 + (le(4) >> 22) + (b(4) << 10)),
    };
    if count > block_max {
        return Err(format!("a zstd block has {count} literals, more than the block maximum of {block_max}"));
    }
    if streams == 4 && count < 6 {
        return Err(format!("a zstd block codes {count} literals in 4 Huffman streams (6 at least)"));
    }
    let section = match kind {
        0 => section + count,
        1 => section + 1,
        _ => section,
    };
    // Past the block's end: the decoder refuses it.
    let Some(seq) = block.get(section..) else { return Ok(()) };
    let Some(&n0) = seq.first() else { return Err("a zstd block has no sequences section".into()) };
    if n0 == 0 && seq.len() > 1 {
        return Err(format!("{} bytes follow a zstd block's empty sequences section", seq.len() - 1));
    }
    let modes_at = match n0 {
        0 => return Ok(()),
        1..=0x7f => 1,
        0x80..=0xfe => 2,
        _ => 3,
    };
    if seq.get(modes_at).is_some_and(|&m| m & 3 != 0) {
        return Err("a zstd block's sequences section sets its reserved bits".into());
    }
    Ok(())
}

/// The frame whose layout was checked, decoded by libzstd's streaming decoder (feature
/// `c-decoders`): the reference decoder, straight into `out`, which it keeps as its window
/// (`ZSTD_d_stableOutBuffer`): besides `out`, libzstd holds its context and at most a block of
/// input, whatever window the frame declares, so decoding an entry costs its decompressed
/// size and a constant. It must fill `out` exactly and use all of `src`.
#[cfg(feature = "c-decoders")]
fn zstd_blocks(src: &[u8], layout: &ZstdLayout, out: &mut [u8]) -> Result<(), String> {
    use zstd_safe::DParameter::{StableOutBuffer, WindowLogMax};
    let size = out.len();
    let name = zstd_safe::get_error_name;
    let refused = |code| match name(code) {
        // libzstd's ZSTD_error_dstSize_tooSmall: the frame makes more than `out` holds.
        "Destination buffer is too small" => {
            format!("its zstd frame decompresses to more than the declared {size} bytes")
        }
        why => format!("its zstd frame does not decode: {why}"),
    };
    let mut dctx = contexts::lend();
    dctx.set_parameter(WindowLogMax(ZSTD_WINDOW_LOG_MAX)).map_err(refused)?;
    dctx.set_parameter(StableOutBuffer(true)).map_err(refused)?;
    let mut output = zstd_safe::OutBuffer::around(out);
    // The input is offered up to the end of the frame header, then a block at a time, then
    // the checksum. Offered the whole frame at once, libzstd decodes it in one pass, as its
    // one-shot decoder does, and no longer holds each block's output to Block_Maximum_Size;
    // offered one block, it makes that block's output, which is held to it here.
    let mut ends = zstd_block_ends(src, layout.header_len);
    let (mut end, mut used, mut block) = (layout.header_len, 0, false);
    loop {
        let mut input = zstd_safe::InBuffer::around(&src[..end]);
        input.set_pos(used);
        let before = output.pos();
        let hint = dctx.decompress_stream(&mut output, &mut input).map_err(refused)?;
        let made = output.pos() - before;
        if block && made > layout.block_max {
            return Err(format!(
                "a zstd block decompresses to {made} bytes, more than the block maximum of {}",
                layout.block_max
            ));
        }
        if input.pos() != end {
            // Offered a whole block (or the header, or the checksum), libzstd takes it all.
            return Err("its zstd frame does not decode: libzstd stopped inside a block".into());
        }
        used = end;
        if hint == 0 {
            break;
        }
        match ends.next() {
            Some((next, is_block)) => (end, block) = (next, is_block),
            None => return Err("its zstd frame is cut short".into()),
        }
    }
    let made = output.pos();
    if made != size {
        return Err(format!("its zstd frame decompresses to {made} bytes, not the declared {size}"));
    }
    if used != src.len() {
        return Err(format!("{} bytes follow its zstd frame", src.len() - used));
    }
    Ok(())
}

/// libzstd's decoding contexts, kept between decodes. Making one costs more than decoding a
/// small entry with it (about 7.6 µs against 0.7 µs for a 20 KB frame on the CPU machine: some
/// 100 KB that glibc maps and unmaps each time), and a load of a CUDA 13 fatbin decodes one zstd
/// entry or more. A context lent out is reset (session and parameters) when it comes back, or
/// dropped if its decode panicked; up to [`contexts::KEEP`] are kept, one per thread that may
/// be checking entries at once. A context holds about 96 KB, whatever it decoded: with the
/// entry's own buffer as its window it keeps no buffer of the frame's size (a 64 MB frame left
/// it at 96 KB). ruzstd's decoders (without `c-decoders`) are not kept: one keeps a buffer that
/// grows with what it decoded.
#[cfg(feature = "c-decoders")]
mod contexts {
    use std::ops::{Deref, DerefMut};
    use std::sync::Mutex;

    type Context = zstd_safe::DCtx<'static>;

    /// The most contexts kept: as many as threads check a fatbin's entries (`check_threads`).
    pub(super) const KEEP: usize = 8;

    static KEPT: Mutex<Vec<Context>> = Mutex::new(Vec::new());

    /// fork(): taken before a fork and given back after it (src/fork.rs).
    static FORK: crate::fork::Lock =
        crate::fork::Lock::new(crate::fork::Rank::Memory, hold_for_fork, crate::fork::nothing);
    crate::fork::enrol_at_load!(FORK);

    fn hold_for_fork() {
        crate::fork::keep(KEPT.lock().unwrap_or_else(|p| p.into_inner()));
    }

    fn kept() -> std::sync::MutexGuard<'static, Vec<Context>> {
        crate::fork::watch(&FORK);
        KEPT.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A context, fresh or as tidied when it was given back.
    pub(super) struct Lent(Option<Context>);

    pub(super) fn lend() -> Lent {
        let kept = kept().pop();
        Lent(Some(kept.unwrap_or_else(zstd_safe::DCtx::create)))
    }

    impl Drop for Lent {
        fn drop(&mut self) {
            let Some(mut c) = self.0.take() else { return };
            if !std::thread::panicking() && c.reset(zstd_safe::ResetDirective::SessionAndParameters).is_ok() {
                let mut kept = kept();
                if kept.len() < KEEP {
                    kept.push(c);
                }
            }
        }
    }

    impl Deref for Lent {
        type Target = Context;
        fn deref(&self) -> &Context {
            self.0.as_ref().unwrap_or_else(|| unreachable!("lent until dropped"))
        }
    }

    impl DerefMut for Lent {
        fn deref_mut(&mut self) -> &mut Context {
            self.0.as_mut().unwrap_or_else(|| unreachable!("lent until dropped"))
        }
    }

    /// How many are kept (tests).
    #[cfg(test)]
    pub(super) fn count() -> usize {
        kept().len()
    }
}

/// Where each block of the frame `src` (checked by [`zstd_layout`]) ends, with `true`, from
/// its first block at `at`; then the end of the frame's checksum, if any, with `false`.
#[cfg(feature = "c-decoders")]
fn zstd_block_ends(src: &[u8], mut at: usize) -> impl Iterator<Item = (usize, bool)> + '_ {
    let mut last = false;
    std::iter::from_fn(move || {
        if last {
            return (at < src.len()).then(|| {
                at = src.len();
                (at, false)
            });
        }
        let (is_last, kind, n) = zstd_block_header(src, at)?;
        let stored = if kind == 1 { 1 } else { n };
        last = is_last;
        at = (at + 3 + stored).min(src.len());
        Some((at, true))
    })
}

/// The blocks of a frame whose layout was checked, decoded by ruzstd. ruzstd is fuzzed
/// upstream and should not panic on any input; a panic is turned into a refusal all the
/// same, so that none escapes through the Rust API.
#[cfg(not(feature = "c-decoders"))]
fn zstd_blocks(src: &[u8], layout: &ZstdLayout, out: &mut [u8]) -> Result<(), String> {
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ruzstd_blocks(src, layout, out)));
    decoded.unwrap_or_else(|_| Err("the zstd decoder failed on it".into()))
}

/// The frame header ruzstd is given in place of the frame's own: single segment, content
/// size 0, so its window is 0 bytes. ruzstd then reports every byte it has made as ready to
/// collect (the size of each block's output, which libzstd's streaming decoder holds to
/// Block_Maximum_Size), follows a match back to the start of the output as libzstd's one-shot
/// decoder does (ruzstd bounds offsets by what it holds, which is everything until collected),
/// and has neither its 100 MiB window limit nor a dictionary id to look up (0 means none,
/// but ruzstd would ask for dictionary 0). The checksum flag is the frame's.
#[cfg(not(feature = "c-decoders"))]
fn for_ruzstd(layout: &ZstdLayout) -> [u8; 6] {
    let fhd = 0x20 | if layout.checksum { 0x04 } else { 0 };
    let m = ZSTD_MAGIC.to_le_bytes();
    [m[0], m[1], m[2], m[3], fhd, 0]
}

#[cfg(not(feature = "c-decoders"))]
fn ruzstd_blocks(src: &[u8], layout: &ZstdLayout, out: &mut [u8]) -> Result<(), String> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    use std::io::Read;
    let size = out.len();
    let over = || format!("its zstd frame decompresses to more than the declared {size} bytes");
    let header = for_ruzstd(layout);
    let mut body = src.get(layout.header_len..).unwrap_or_default();
    let mut dec = FrameDecoder::new();
    {
        let mut input = header.chain(&mut body);
        dec.reset(&mut input).map_err(|e| format!("its zstd frame header is bad: {e}"))?;
        // A block at a time: each block's output is held to the block maximum, and a stream
        // that makes more than it declares is stopped within a block of it.
        let mut made = 0usize;
        loop {
            let done = dec
                .decode_blocks(&mut input, BlockDecodingStrategy::UptoBlocks(1))
                .map_err(|e| format!("its zstd frame is corrupt: {e}"))?;
            let now = dec.can_collect();
            let block = now.saturating_sub(made);
            if block > layout.block_max {
                return Err(format!(
                    "a zstd block decompresses to {block} bytes, more than the block maximum of {}",
                    layout.block_max
                ));
            }
            if now > size {
                return Err(over());
            }
            made = now;
            if done {
                break;
            }
        }
    }
    let mut to = &mut out[..];
    dec.collect_to_writer(&mut to).map_err(|_| over())?;
    let left = to.len();
    if dec.can_collect() != 0 {
        return Err(over());
    }
    if !dec.is_finished() {
        return Err("its zstd frame is cut short".into());
    }
    if !body.is_empty() {
        return Err(format!("{} bytes follow its zstd frame", body.len()));
    }
    if layout.checksum && dec.get_checksum_from_data() != dec.get_calculated_checksum() {
        return Err("its zstd frame's content checksum does not match its content".into());
    }
    if left != 0 {
        return Err(format!("its zstd frame decompresses to {} bytes, not the declared {size}", size - left));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cudyn's own LZ4 decoder, whichever decoder the build loads with (the differential
    /// test holds both to liblz4).
    fn lz4(src: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0; size];
        check_declared(Method::Lz4, src.len(), size as u64)?;
        lz4::decode(src, &mut out).map(|()| out)
    }

    fn zstd(src: &[u8], size: usize) -> Result<Vec<u8>, String> {
        let mut out = vec![0; size];
        decode_into(Method::Zstd, src, &mut out).map(|()| out)
    }

    #[test]
    fn lz4_literals_and_overlapping_matches() {
        // "abcdefgh" then a match of 20 at offset 3, then literals "vwxyz".
        let mut src = vec![0x8f]; // 8 literals; match nibble 15: 19 + the extension byte
        src.extend_from_slice(b"abcdefgh");
        src.extend_from_slice(&[3, 0, 1]); // offset 3, match 15 + 4 + 1 = 20
        src.push(0x50);
        src.extend_from_slice(b"vwxyz");
        let mut want = b"abcdefgh".to_vec();
        for _ in 0..20 {
            want.push(want[want.len() - 3]);
        }
        want.extend_from_slice(b"vwxyz");
        assert_eq!(lz4(&src, want.len()).unwrap(), want);
        // Any other declared size is refused, as is a stream cut anywhere or with a byte more.
        assert!(lz4(&src, want.len() - 1).is_err());
        assert!(lz4(&src, want.len() + 1).is_err());
        for cut in 0..src.len() {
            assert!(lz4(&src[..cut], want.len()).is_err(), "cut at {cut}");
        }
        assert!(lz4(&[&src[..], &[0]].concat(), want.len()).is_err());
        // An offset before the output's start.
        let mut far = src.clone();
        far[9] = 9;
        assert!(lz4(&far, want.len()).unwrap_err().contains("before the start"));
    }

    #[test]
    fn lz4_end_of_block_rules() {
        // 12 literals, a match of 8 at offset 4 ending 5 bytes before the end, 5 literals: ok.
        let ok = [&[0xc4][..], b"abcdefghijkl", &[4, 0], &[0x50], b"vwxyz"].concat();
        assert_eq!(lz4(&ok, 25).unwrap(), b"abcdefghijklijklijklvwxyz");
        // A match of 19 and 4 last literals: the match reaches into the last 5 bytes.
        let late = [&[0xcf][..], b"abcdefghijkl", &[4, 0, 0], &[0x40], b"wxyz"].concat();
        assert!(lz4(&late, 35).unwrap_err().contains("last 5 bytes"));
        // A match starting less than 12 bytes before the end: the literals before it must
        // have been the last sequence.
        let short = [&[0xc0][..], b"abcdefghijkl", &[4, 0], &[0x50], b"vwxyz"].concat();
        assert!(lz4(&short, 21).is_err());
        // Ending on a match, with no literals after it at all.
        let bare = [&[0xc0][..], b"abcdefghijkl", &[4, 0]].concat();
        assert!(lz4(&bare, 16).is_err());
        // Empty output: only the block 00.
        assert!(lz4(&[0], 0).is_ok());
        assert!(lz4(&[0x10, 1], 0).is_err());
        assert!(lz4(&[], 1).is_err());
    }

    #[test]
    fn lz4_length_extensions() {
        // 15 + 255 + 3 = 273 literal bytes.
        let mut src = vec![0xf0, 255, 3];
        src.extend(std::iter::repeat_n(b'q', 273));
        assert_eq!(lz4(&src, 273).unwrap().len(), 273);
        // A length whose extension bytes run off the end.
        assert!(lz4(&[0xf0, 255], 300).is_err());
    }

    #[test]
    fn declared_sizes_beyond_what_a_stream_can_make_are_refused_before_decoding() {
        assert!(check_declared(Method::Lz4, 100, 25_500).is_ok());
        assert!(check_declared(Method::Lz4, 100, 25_501).unwrap_err().contains("cannot decompress"));
        assert!(check_declared(Method::Zstd, 38_000, 1 << 30).unwrap_err().contains("cap"));
        assert!(check_declared(Method::Zstd, 1 << 20, MAX_ENTRY).is_ok());
        assert!(check_declared(Method::Zstd, 1 << 20, MAX_ENTRY + 1).is_err());
    }

    #[test]
    fn zstd_headers() {
        // Not a frame, a skippable frame, a dictionary, the reserved bit.
        assert!(zstd(b"\0\0\0\0\0\0", 1).unwrap_err().contains("not a zstd frame"));
        assert!(zstd(&[0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0], 0).unwrap_err().contains("skippable"));
        let frame = |fhd: u8, rest: &[u8]| [&[0x28, 0xb5, 0x2f, 0xfd, fhd][..], rest].concat();
        assert!(zstd(&frame(0x21, &[7, 4, 0x21, 0, 0, b'a', b'b', b'c', b'd']), 4)
            .unwrap_err()
            .contains("dictionary 7"));
        assert!(zstd(&frame(0x28, &[4, 0x21, 0, 0, b'a', b'b', b'c', b'd']), 4).unwrap_err().contains("reserved"));
        // A single-segment frame of one raw block "abcd" (block header: last, raw, size 4).
        let ok = frame(0x20, &[4, 0x21, 0, 0, b'a', b'b', b'c', b'd']);
        assert_eq!(zstd(&ok, 4).unwrap(), b"abcd");
        // Dictionary id 0 is no dictionary; no content size at all is allowed too.
        assert_eq!(zstd(&frame(0x21, &[0, 4, 0x21, 0, 0, b'a', b'b', b'c', b'd']), 4).unwrap(), b"abcd");
        assert_eq!(zstd(&frame(0x00, &[0x00, 0x21, 0, 0, b'a', b'b', b'c', b'd']), 4).unwrap(), b"abcd");
        assert!(zstd(&ok, 5).unwrap_err().contains("declares 5"));
        assert!(zstd(&[&ok[..], &[0]].concat(), 4).unwrap_err().contains("follow"));
        for cut in 0..ok.len() {
            assert!(zstd(&ok[..cut], 4).is_err(), "cut at {cut}");
        }
        // A frame whose content size lies about its blocks (says 4, holds 5).
        let lie = frame(0x20, &[4, 0x29, 0, 0, b'a', b'b', b'c', b'd', b'e']);
        assert!(zstd(&lie, 4).is_err());
        // A window of 2^41 bytes is refused, as libzstd refuses it.
        let huge = frame(0x40, &[0xf8, 4, 0, 0x21, 0, 0, b'a', b'b', b'c', b'd']);
        assert!(zstd(&huge, 260).unwrap_err().contains("window"));
        // A raw block larger than the window (1 KiB) is refused; within it, accepted.
        let raw = |n: usize| {
            let h = (n << 3) | 1;
            let mut f = frame(0x00, &[0x00, h as u8, (h >> 8) as u8, (h >> 16) as u8]);
            f.extend(std::iter::repeat_n(b'x', n));
            f
        };
        assert!(zstd(&raw(1024), 1024).is_ok());
        assert!(zstd(&raw(1025), 1025).unwrap_err().contains("block maximum"));
    }

    #[test]
    fn zstd_content_checksum_is_verified() {
        // "abcd" in one raw block, with a checksum (XXH64 of the content, its low 32 bits).
        let frame = |sum: [u8; 4]| [&[0x28, 0xb5, 0x2f, 0xfd, 0x24, 4, 0x21, 0, 0][..], b"abcd", &sum].concat();
        let sum = xxh64_low32(b"abcd");
        assert_eq!(zstd(&frame(sum.to_le_bytes()), 4).unwrap(), b"abcd");
        assert!(zstd(&frame((sum ^ 1).to_le_bytes()), 4).unwrap_err().contains("checksum"));
    }

    /// libzstd's contexts are kept and lent again: frames decoded on several threads, damaged
    /// ones among them, all decode as alone, and no more than `KEEP` stay kept (a
    /// context that failed mid-frame is reset before its next frame).
    #[cfg(feature = "c-decoders")]
    #[test]
    fn zstd_contexts_are_reused_and_reset() {
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251 ^ i / 1000) as u8).collect();
        let mut frame = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
        zstd_safe::compress(&mut frame, &data, 3).expect("compressed");
        // Bytes changed inside a block: libzstd stops partway, or makes other bytes.
        let mut bad = frame.clone();
        let mid = frame.len() / 2;
        bad[mid..mid + 16].iter_mut().for_each(|b| *b ^= 0x5a);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    for round in 0..40 {
                        if round % 5 == 0 {
                            assert!(zstd(&bad, data.len()).map_or(true, |o| o != data));
                        }
                        assert_eq!(zstd(&frame, data.len()).expect("decoded"), data);
                    }
                });
            }
        });
        let kept = contexts::count();
        assert!((1..=contexts::KEEP).contains(&kept), "{kept} contexts kept");
    }

    /// XXH64 (seed 0) of a short input (< 32 bytes), low 32 bits, for the checksum test.
    fn xxh64_low32(d: &[u8]) -> u32 {
        const P1: u64 = 0x9E37_79B1_85EB_CA87;
        const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
        const P3: u64 = 0x1656_67B1_9E37_79F9;
        const P4: u64 = 0x85EB_CA77_C2B2_AE63;
        const P5: u64 = 0x27D4_EB2F_1656_67C5;
        assert!(d.len() < 32);
        let mut h = P5.wrapping_add(d.len() as u64);
        let mut rest = d;
        while rest.len() >= 8 {
            let k = u64::from_le_bytes(rest[..8].try_into().unwrap());
            let k = k.wrapping_mul(P2).rotate_left(31).wrapping_mul(P1);
            h = (h ^ k).rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
            rest = &rest[8..];
        }
        if rest.len() >= 4 {
            let k = u64::from(u32::from_le_bytes(rest[..4].try_into().unwrap()));
            h = (h ^ k.wrapping_mul(P1)).rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
            rest = &rest[4..];
        }
        for &b in rest {
            h = (h ^ u64::from(b).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(P2);
        h ^= h >> 29;
        h = h.wrapping_mul(P3);
        h ^= h >> 32;
        h as u32
    }
}
