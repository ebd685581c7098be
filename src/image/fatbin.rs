//! Fatbins: the 16-byte container header and the walk over its entries, every word of each
//! entry header held to what toolkits write, and each entry's contents (decompressed by
//! [`decompress`](super::decompress) when compressed) checked as what it says it is: an ELF
//! entry must pass as a cubin of its own ([`cubin`](super::cubin)), a PTX entry must be ASCII
//! text, an LTO-IR entry is opaque and only its sizes are checked. [`inspect_fatbin`] is the
//! entry point.

// The format, as relied on here (all little-endian):
//
// * Fatbin: a 16-byte header `u32 magic = 0xBA55ED50, u16 version (1), u16 header_size (16), u64
//   payload_size`; the image is header_size + payload_size bytes (only the first container is
//   considered). The payload is a run of entries, each with a header of at least 64 bytes:
//   `u16 kind (1 = PTX, 2 = ELF/SASS, 8 = LTO-IR), u16 0x0101, u32 header_size, u64
//   payload_size, u32 compressed_size, u32 offset of an (u32 offset, u32 length) options
//   descriptor within the header or 0, u16 minor, u16 major, u32 sm (e.g. 90), u32 name_offset,
//   u32 name_length, u64 flags, u64 (0, or a 32-bit value in LTO-IR entries), u64
//   uncompressed_size`; the name (the source path, then a NUL), the descriptor and the options
//   follow in the header (zero elsewhere in nvcc 13.0 output); then the payload. Flags: 0x1
//   64-bit, 0x2 debug, 0x10 Linux, 0x2000 LZ4-compressed or 0x8000 zstd-compressed (see
//   decompress.rs),
//   0x1_0000 LTO-IR (scrambled payload), 0x10_0000 arch-specific ('a'), 0x20_0000
//   family-specific ('f'), 0x100_0000 (newer cubins). Every word is checked against what
//   toolkits write (`check_entry_header`, an allowlist; the header's bytes outside its name and
//   options are the toolkit's and not read); a compressed payload is decompressed
//   and, like a plain one, an ELF entry must be a valid cubin for the entry's sm and a PTX entry
//   ASCII text (`check_entry_body`).
// * Concatenated entries (kind 0x100, `fatbinary --concat`, CUDA 13.5): one compressed payload
//   holding several entries' contents back to back. Its header's fixed 64 bytes are an entry
//   header's (architecture 0, word 0x18 = 1, compressed, uncompressed_size = the whole run);
//   options_at = 0x40 names `u32 count, u32 bytes` (the member table, these 8 bytes included,
//   to the end of the header), then `count` member records, each byte for byte the entry header
//   the member would have on its own except that its word 1 (header size) holds the member's
//   offset in the decompressed run; a record ends after its name or options and a NUL, padded to
//   8 bytes, as an entry header does. The members lie back to back from offset 0 and fill the
//   run. Each member is a code of its own: chosen, checked and handed to CUDA as a plain entry
//   with the header it would have on its own (`walk_concat`); the concatenated entry itself never
//   reaches CUDA.

use super::buf::Buf;
use super::cubin::{inspect_cubin, ELF_MAGIC};
use super::decompress;
use super::info::{select_for, ArchCode, ArchVariant, CodeKind, ImageError, ImageInfo, Selection};
use super::read::{check_range, field_u16, field_u64, overflow, short, to_usize, Rec};
use super::text::{all_zero, first_non_ptx_byte, is_ptx_text};
use std::sync::Mutex;

pub(super) const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const FATBIN_VERSION: u16 = 1;
pub(super) const FATBIN_HEADER_LEN: u64 = 16;
pub(super) const FATBIN_ENTRY_HEADER_LEN: u64 = 64;
const FATBIN_ENTRY_MAGIC: u16 = 0x0101;
/// SM numbers are major*10+minor; 10 to 999 leaves room for architectures to come.
const FATBIN_ARCH_LIMIT: u32 = 1000;
pub(super) const FATBIN_KIND_PTX: u16 = 1;
pub(super) const FATBIN_KIND_ELF: u16 = 2;
pub(super) const FATBIN_KIND_LTOIR: u16 = 8;
/// Several entries' contents in one compressed payload (`fatbinary --concat`, CUDA 13.5).
pub(super) const FATBIN_KIND_CONCAT: u16 = 0x100;
/// Word 0x18 of a concatenated entry header: the only layout known.
const CONCAT_LAYOUT: u32 = 1;
/// A concatenated entry's header holds a record per member (about 120 bytes each).
const CONCAT_HEADER_MAX: u64 = 1 << 16;
const FATBIN_FLAG_COMPRESSED_LZ: u64 = 0x2000;
const FATBIN_FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
pub(super) const FATBIN_FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
pub(super) const FATBIN_FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;
const FATBIN_FLAG_64BIT: u64 = 0x1;
/// Set on (and only on) LTO-IR entries, whose payload nvcc scrambles.
pub(super) const FATBIN_FLAG_LTO_OPAQUE: u64 = 0x1_0000;
/// A compression method older than LZ4's 0x2000 (CUDA 10's `fatbinary` already wrote 0x2000):
/// a payload cudyn cannot decode, so it could not check what CUDA would load.
const FATBIN_FLAG_COMPRESSED_OLD: u64 = 0x1000;
/// Flag bits that describe how an entry was made, not how it is read: the producer (0x4 CUDA,
/// 0x8 OpenCL), the host (0x10 Linux, 0x20 macOS, 0x40 Windows, 0x80 the rest of that field)
/// and the optimization level (0xf00). CUDA 10's `fatbinary` wrote 0x4 on every entry (FAISS
/// 1.7.2's 111 fatbins: flags 0x2015); CUDA 11 and later write only 0x10 of them.
const FATBIN_FLAGS_DESCRIPTIVE: u64 = 0x4 | 0x8 | 0xf0 | 0xf00;
/// Every flag bit a toolkit is known to write: 0x1 64-bit, 0x2 debug (-G), the descriptive
/// bits above, the two compression methods cudyn decodes, 0x1_0000 (LTO-IR entries), 'a' and
/// 'f', and 0x100_0000 (sm_100+ cubins, and sm_86+ ones in CUDA 12 libraries). The rest (and
/// 0x1000, a compression cudyn does not decode) are refused: what they would make CUDA's loader
/// do with the payload is not known.
const FATBIN_FLAGS_KNOWN: u64 = FATBIN_FLAG_64BIT
    | 0x2
    | FATBIN_FLAGS_DESCRIPTIVE
    | FATBIN_FLAG_COMPRESSED_LZ
    | FATBIN_FLAG_COMPRESSED_ZSTD
    | FATBIN_FLAG_LTO_OPAQUE
    | FATBIN_FLAG_ARCH_SPECIFIC
    | FATBIN_FLAG_FAMILY_SPECIFIC
    | 0x100_0000;

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn inspect_fatbin(d: &[u8]) -> Result<ImageInfo, ImageError> {
    inspect_fatbin_with(d, check_threads(), parallel_min())
}

/// Every entry checked, header and contents (what `image::inspect` answers), with the body
/// checks spread over up to `threads` threads once there are `parallel_min` bytes to check
/// (tests compare the verdicts of both ways).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn inspect_fatbin_with(d: &[u8], threads: usize, parallel_min: usize) -> Result<ImageInfo, ImageError> {
    let w = walk(d)?;
    let decompressed = decompressed_total(w.bodies.iter());
    if decompressed > decompress::MAX_IMAGE {
        return Err(ImageError::Malformed(cold_format!(
            "its entries decompress to {decompressed} bytes, over the {}-byte cap",
            decompress::MAX_IMAGE
        )));
    }
    // Two passes with the verdict of one: the walk checks every entry header in order and
    // stops at the first bad one; the bodies of the entries before it are then checked (in
    // parallel when there is much to decompress), and the first bad entry in file order —
    // body or header — is the one reported, exactly as a single in-order pass would.
    let jobs: Vec<Job<'_, '_>> = w.bodies.iter().map(|b| Job { body: b, out: Mutex::new(None) }).collect();
    run_jobs(&jobs, threads, parallel_min)?;
    if let Some(e) = w.header_error {
        return Err(e);
    }
    w.info()
}

/// The entries of a fatbin whose every entry header passed, and which of them are handed to
/// CUDA (see `image::plan`): nothing is decompressed or checked beyond the headers yet.
pub(super) struct FatbinPlan<'a> {
    d: &'a [u8],
    walk: Walk<'a>,
    selection: Selection,
}

/// Walks the headers of `d` and chooses the entries the GPUs `gpus` (compute capabilities)
/// can run; a bad header anywhere refuses the image, whether or not its entry is chosen.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn plan_fatbin<'a>(d: &'a [u8], gpus: &[u32], force_ptx: bool) -> Result<FatbinPlan<'a>, ImageError> {
    let mut walk = walk(d)?;
    if let Some(e) = walk.header_error.take() {
        return Err(e);
    }
    let codes: Vec<ArchCode> = walk.bodies.iter().map(|b| b.code).collect();
    let selection = select_for(&codes, gpus, force_ptx);
    Ok(FatbinPlan { d, walk, selection })
}

impl<'a> FatbinPlan<'a> {
    /// What the whole image holds (every entry, chosen or not).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn info(&self) -> Result<ImageInfo, ImageError> {
        self.walk.info()
    }

    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn selection(&self) -> &Selection {
        &self.selection
    }

    /// The entries handed over, in order.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn chosen(&self) -> impl Iterator<Item = &Body<'a>> + '_ {
        self.walk.bodies.iter().zip(&self.selection.chosen).filter(|(_, &c)| c).map(|(b, _)| b)
    }

    /// The plain bytes of the entries handed over: what `build` checks.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn checked_len(&self) -> u64 {
        self.chosen().fold(0u64, |n, b| n.saturating_add(b.plain_len()))
    }

    /// The bytes the image handed to CUDA is made of, in order: the container header, every
    /// entry header, and the payload of every chosen entry. Two images with equal such bytes
    /// walk, choose and build the same (the payloads of the others are never read).
    pub(super) fn key_parts(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let head = self.d.get(..FATBIN_HEADER_LEN as usize).unwrap_or_default();
        let per_entry = self.walk.bodies.iter().zip(&self.selection.chosen).flat_map(|(b, &chosen)| {
            let payload = if chosen { b.payload } else { &[][..] };
            // A member's bytes depend on its whole concatenated entry's header (the method, the
            // sizes, its record), which holds every member's record.
            let header = match b.content {
                Content::Member { entry_header, .. } => entry_header,
                _ => b.header,
            };
            [header, payload]
        });
        std::iter::once(head).chain(per_entry)
    }

    /// The image to hand CUDA: a fatbin of exactly the chosen entries, in their order, each
    /// uncompressed (decompressed straight into place) and checked there as what it says it
    /// is — so CUDA reads exactly the bytes that were checked. An entry's header is its own,
    /// with the compression flag and sizes cleared and the payload size of its plain bytes.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn build(&self, threads: usize, parallel_min: usize) -> Result<super::ImageBuf, ImageError> {
        const WHAT: &str = "the image handed to CUDA";
        let chosen = || self.chosen();
        let mut payload_total = 0u64;
        for b in chosen() {
            payload_total = payload_total.saturating_add(b.header.len() as u64).saturating_add(b.plain_len());
        }
        let decompressed = decompressed_total(chosen());
        if decompressed > decompress::MAX_IMAGE {
            return Err(ImageError::Malformed(cold_format!(
                "the entries for this process's GPUs decompress to {decompressed} bytes, over the {}-byte cap",
                decompress::MAX_IMAGE
            )));
        }
        let total = to_usize(payload_total.saturating_add(FATBIN_HEADER_LEN), WHAT)?;
        let mut out = super::ImageBuf::with_capacity(total).ok_or_else(|| {
            ImageError::Malformed(cold_format!("cannot allocate {total} bytes for the entries handed to CUDA"))
        })?;
        out.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        out.extend_from_slice(&FATBIN_VERSION.to_le_bytes());
        out.extend_from_slice(&(FATBIN_HEADER_LEN as u16).to_le_bytes());
        out.extend_from_slice(&payload_total.to_le_bytes());
        if workers(chosen().map(Body::work), threads, parallel_min) < 2 {
            // One pass, in order (most images): each entry put in place and checked there.
            let mut scratch = Scratch::default(); // a concatenated entry's run, decoded once
            for b in chosen() {
                let start = push_entry(&mut out, b);
                b.check(Some(&mut out[start..]), &mut scratch)?;
            }
            return Ok(out);
        }
        // Headers first (cheap, in order), then the payloads filled in place, in parallel.
        let chosen: Vec<&Body<'a>> = chosen().collect();
        let mut spans = Vec::with_capacity(chosen.len());
        for b in &chosen {
            let start = push_entry(&mut out, b);
            spans.push(start..out.len());
        }
        let mut rest: &mut [u8] = &mut out;
        let mut cut = 0;
        let mut jobs = Vec::with_capacity(chosen.len());
        for (b, span) in chosen.iter().zip(&spans) {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(span.start - cut);
            let (region, tail) = tail.split_at_mut(span.len());
            rest = tail;
            cut = span.end;
            jobs.push(Job { body: b, out: Mutex::new(Some(region)) });
        }
        run_jobs(&jobs, threads, parallel_min)?;
        drop(jobs);
        Ok(out)
    }
}

/// Appends entry `b` to the image being built: its header, made plain, then its payload's
/// place: a plain payload copied (checked there afterwards), a compressed one zero-filled (to
/// be decompressed there). Returns where the payload's place starts; it runs to the end.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn push_entry(out: &mut super::ImageBuf, b: &Body<'_>) -> usize {
    let at = out.len();
    out.extend_from_slice(b.header);
    plain_header(&mut out[at..at + b.header.len()], b.plain_len());
    let start = out.len();
    match b.content {
        Content::Plain(p) => out.extend_from_slice(p),
        _ => out.resize_zeroed(start + b.plain_len() as usize),
    }
    start
}

/// Bytes the entries `bodies` decompress to, each compressed run counted once (the members of
/// one concatenated entry, which come one after another, share theirs).
fn decompressed_total<'b, 'a: 'b>(bodies: impl Iterator<Item = &'b Body<'a>>) -> u64 {
    let mut total = 0u64;
    let mut last_run: Option<*const u8> = None;
    for b in bodies {
        if let Content::Member { stream, .. } = b.content {
            if last_run == Some(stream.as_ptr()) {
                continue;
            }
            last_run = Some(stream.as_ptr());
        } else {
            last_run = None;
        }
        total = total.saturating_add(b.decompressed_len());
    }
    total
}

/// Rewrites a copied entry header (`h`, the whole of it) for its plain payload of `plain_len`
/// bytes: its own header size (a concatenated entry's member record holds its offset there),
/// not compressed, no compressed or uncompressed size.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn plain_header(h: &mut [u8], plain_len: u64) {
    let header_len = h.len() as u32;
    let put = |h: &mut [u8], at: usize, v: &[u8]| {
        if let Some(dst) = h.get_mut(at..at + v.len()) {
            dst.copy_from_slice(v);
        }
    };
    let flags = h.get(40..48).map_or(0, |f| u64::from_le_bytes(f.try_into().unwrap_or([0; 8])));
    put(h, 4, &header_len.to_le_bytes());
    put(h, 8, &plain_len.to_le_bytes());
    put(h, 16, &0u32.to_le_bytes());
    put(h, 40, &(flags & !(FATBIN_FLAG_COMPRESSED_LZ | FATBIN_FLAG_COMPRESSED_ZSTD)).to_le_bytes());
    put(h, 56, &0u64.to_le_bytes());
}

/// A fatbin's entries as the header walk found them.
struct Walk<'a> {
    total: u64,
    bodies: Buf<Body<'a>>,
    /// The first bad entry header, where the walk stopped (entries before it are in `bodies`).
    header_error: Option<ImageError>,
}

impl Walk<'_> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn info(&self) -> Result<ImageInfo, ImageError> {
        Ok(ImageInfo {
            kind: CodeKind::Fatbin,
            len: to_usize(self.total, "the fatbin header")?,
            codes: self.bodies.iter().map(|b| b.code).collect(),
            compressed: self.bodies.iter().any(Body::compressed),
            ptx_isa: None,
        })
    }
}

/// The container header, then every entry header in order until the first bad one.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn walk(d: &[u8]) -> Result<Walk<'_>, ImageError> {
    const WHAT: &str = "the fatbin header";
    check_range(d, 0, FATBIN_HEADER_LEN, WHAT)?;
    let version = field_u16(d, 0, 4, WHAT)?;
    let header_size = u64::from(field_u16(d, 0, 6, WHAT)?);
    let payload_size = field_u64(d, 0, 8, WHAT)?;
    // Every toolkit writes version 1 and a 16-byte header; nothing else is known to CUDA's loader.
    if version != FATBIN_VERSION {
        return Err(ImageError::Malformed(cold_format!("fatbin version is {version}, not {FATBIN_VERSION}")));
    }
    if header_size != FATBIN_HEADER_LEN {
        return Err(ImageError::Malformed(cold_format!(
            "fatbin header size is {header_size}, not {FATBIN_HEADER_LEN}"
        )));
    }
    let total = header_size.checked_add(payload_size).ok_or_else(|| {
        ImageError::Malformed(cold_format!(
            "fatbin header size {header_size} + payload size {payload_size:#x} overflows"
        ))
    })?;
    check_range(d, 0, total, "the fatbin (by the size in its header)")?;
    // One allocation for the usual few entries (the heap's, under 1 KB); more, cudyn's blocks.
    let mut bodies: Buf<Body<'_>> = Buf::with_capacity(4).unwrap_or_default();
    let mut header_error = None;
    let mut off = header_size;
    let mut index = 0u64;
    while off < total {
        match walk_entry(d, off, total, index, &mut bodies) {
            Ok(None) => break, // zero padding at the end of the container
            Ok(Some(entry_len)) => {
                match off.checked_add(entry_len) {
                    Some(next) => off = next,
                    None => {
                        header_error = Some(overflow("a fatbin entry header"));
                        break;
                    }
                }
                index = index.saturating_add(1);
            }
            Err(e) => {
                header_error = Some(e);
                break;
            }
        }
    }
    Ok(Walk { total, bodies, header_error })
}

/// What an entry (or a member of a concatenated entry) holds for CUDA to load, found by the
/// header walk and checked afterwards.
#[derive(Clone, Copy)]
struct Body<'a> {
    index: u64,
    off: u64,
    code: ArchCode,
    /// The whole entry header, and the payload after it, within the image (a member: its
    /// record, and its concatenated entry's payload).
    header: &'a [u8],
    payload: &'a [u8],
    content: Content<'a>,
}

#[derive(Clone, Copy)]
enum Content<'a> {
    /// LTO-IR: opaque, only its sizes are checked (done by the walk); `compressed` as flagged.
    Opaque {
        compressed: bool,
    },
    Plain(&'a [u8]),
    Compressed {
        method: Compression,
        stream: &'a [u8],
        size: usize,
    },
    /// Member `member` of a concatenated entry (header `entry_header`): bytes `at..at + len` of
    /// what `stream` decompresses to (`size` bytes, shared with the entry's other members).
    Member {
        method: Compression,
        stream: &'a [u8],
        size: usize,
        at: usize,
        len: usize,
        member: usize,
        entry_header: &'a [u8],
    },
}

/// A worker's buffer for decompressed payloads, and which run it holds (the members of one
/// concatenated entry are cut from one run, decompressed once).
#[derive(Default)]
struct Scratch {
    buf: Vec<u8>,
    /// The stream (address, length) whose run `buf` holds.
    run: Option<(usize, usize)>,
}

impl Scratch {
    /// What `stream` decompresses to (exactly `size` bytes), in this buffer; with `keep`, the
    /// result is remembered and a later call for the same stream decodes nothing.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn decode(&mut self, method: Compression, stream: &[u8], size: usize, keep: bool) -> Result<&[u8], String> {
        let run = (stream.as_ptr() as usize, stream.len());
        if !keep || self.run != Some(run) {
            self.run = None;
            self.buf.clear();
            self.buf.try_reserve_exact(size).map_err(|_| cold_format!("cannot allocate {size} bytes"))?;
            self.buf.resize(size, 0);
            decode_into(method, stream, &mut self.buf)?;
            self.run = keep.then_some(run);
        }
        Ok(&self.buf)
    }
}

impl Body<'_> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn compressed(&self) -> bool {
        matches!(
            self.content,
            Content::Compressed { .. } | Content::Member { .. } | Content::Opaque { compressed: true }
        )
    }

    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn bad(&self, why: String) -> ImageError {
        match self.content {
            Content::Member { member, .. } => entry_error(self.index, self.off, cold_format!("member {member}: {why}")),
            _ => entry_error(self.index, self.off, why),
        }
    }

    /// Bytes of the entry's payload once plain: its payload, or what it decompresses to,
    /// padded to 8 bytes as toolkits pad payloads.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn plain_len(&self) -> u64 {
        match self.content {
            Content::Compressed { size, .. } => (size as u64).div_ceil(8) * 8,
            Content::Member { len, .. } => (len as u64).div_ceil(8) * 8,
            _ => self.payload.len() as u64,
        }
    }

    /// Bytes its compressed payload declares it decompresses to (0 when plain or opaque; a
    /// member: its entry's whole run).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn decompressed_len(&self) -> u64 {
        match self.content {
            Content::Compressed { size, .. } | Content::Member { size, .. } => size as u64,
            _ => 0,
        }
    }

    /// Checks the entry's contents: in `out` (its plain payload's place in a rebuilt image:
    /// a plain payload already copied there by `FatbinPlan::build`, a compressed one
    /// decompressed here with zero padding after), or, without `out`, where they lie
    /// (decompressed into `scratch`).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn check(&self, out: Option<&mut [u8]>, scratch: &mut Scratch) -> Result<(), ImageError> {
        let body: &[u8] = match (self.content, out) {
            (Content::Opaque { .. }, _) => return Ok(()),
            (Content::Plain(p), None) => p,
            // Its place in a rebuilt image, where `build` copied it: the copy is what is checked.
            (Content::Plain(_), Some(out)) => out,
            (Content::Compressed { method, stream, size }, out) => {
                let bad = |why| self.bad(cold_format!("({}) its compressed payload is refused: {why}", self.code));
                match out {
                    Some(out) => {
                        let (dst, pad) = out.split_at_mut(size.min(out.len()));
                        decode_into(method, stream, dst).map_err(bad)?;
                        pad.fill(0);
                        out
                    }
                    None => scratch.decode(method, stream, size, false).map_err(bad)?,
                }
            }
            (Content::Member { method, stream, size, at, len, .. }, out) => {
                let bad =
                    |why| self.bad(cold_format!("({}) its concatenated entry's payload is refused: {why}", self.code));
                let run = scratch.decode(method, stream, size, true).map_err(bad)?;
                // The walk placed every member inside the run's declared size.
                let member = run.get(at..at + len).unwrap_or_default();
                match out {
                    Some(out) => {
                        let (dst, pad) = out.split_at_mut(len.min(out.len()));
                        dst.copy_from_slice(member);
                        pad.fill(0);
                        out
                    }
                    None => member,
                }
            }
        };
        check_entry_body(self.code, body).map_err(|why| self.bad(cold_format!("({}) {why}", self.code)))
    }

    /// Bytes a check of this entry goes through (what it decompresses to, or its payload).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn work(&self) -> usize {
        match self.content {
            Content::Opaque { .. } => 0,
            Content::Plain(p) => p.len(),
            Content::Compressed { size, .. } | Content::Member { size, .. } => size,
        }
    }
}

/// Decompresses `src` into exactly `out`.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn decode_into(method: Compression, src: &[u8], out: &mut [u8]) -> Result<(), String> {
    decompress::decode_into(method.method().ok_or("it is not compressed")?, src, out)
}

/// The refusal of entry `index` (at byte `off` of the fatbin), for `why`.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn entry_error(index: u64, off: u64, why: String) -> ImageError {
    ImageError::Malformed(cold_format!("fatbin entry {index} at offset {off}: {why}"))
}

/// Below this many bytes to check in all, one thread does it (a thread costs tens of µs;
/// checking runs at some hundreds of MB/s, decompression included).
/// `CUDYN_VALIDATE_PARALLEL_MIN` (bytes) overrides it, e.g. 0 to compare verdicts both ways.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn parallel_min() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *crate::fork::once(&N, || {
        std::env::var("CUDYN_VALIDATE_PARALLEL_MIN").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(2 << 20)
    })
}

/// How many threads may check a large fatbin's entries: the machine's parallelism, at most 8,
/// or `CUDYN_VALIDATE_THREADS` (1: never start a thread).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn check_threads() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *crate::fork::once(&N, || {
        let env = std::env::var("CUDYN_VALIDATE_THREADS").ok().and_then(|v| v.trim().parse::<usize>().ok());
        let n = env.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8));
        n.clamp(1, 64)
    })
}

/// Bytes of work (decompressed or plain) that make an entry worth a thread of its own.
const BIG_JOB: usize = 1 << 20;

/// How many threads check entries of `works` bytes of work each (1: the calling thread alone).
/// A thread pays for itself only with an entry of its own to work through: on the H200's
/// host, 8 threads over images whose work was mostly one entry made first-sight loads 1.5x
/// slower than one thread (cpp-tests/bench/load_cost.cpp). A `parallel_min` of 0 forces
/// threads on every entry: the tests' way to compare verdicts.
fn workers(works: impl Iterator<Item = usize>, threads: usize, parallel_min: usize) -> usize {
    let (mut work, mut entries, mut big) = (0usize, 0usize, 0usize);
    for w in works {
        work = work.saturating_add(w);
        entries += 1;
        big += usize::from(w >= BIG_JOB);
    }
    let threads = threads.min(if parallel_min == 0 { entries } else { big });
    if threads < 2 || work < parallel_min {
        1
    } else {
        threads
    }
}

/// One entry to check, and where its plain payload goes (None: checked where it lies).
struct Job<'b, 'o> {
    body: &'b Body<'b>,
    out: Mutex<Option<&'o mut [u8]>>,
}

impl Job<'_, '_> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn run(&self, scratch: &mut Scratch) -> Result<(), ImageError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        self.body.check(out.as_deref_mut(), scratch)
    }
}

/// Runs every job; the error of the first bad entry in file order, as an in-order pass gives.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn run_jobs(jobs: &[Job<'_, '_>], threads: usize, parallel_min: usize) -> Result<(), ImageError> {
    let threads = workers(jobs.iter().map(|j| j.body.work()), threads, parallel_min);
    if threads < 2 {
        let mut scratch = Scratch::default(); // decompressed entries, one at a time
        return jobs.iter().try_for_each(|j| j.run(&mut scratch));
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Entries are taken in file order from a shared counter; a worker stops taking once an
    // earlier entry than the next one has failed. The failure with the lowest index is kept.
    let next = AtomicUsize::new(0);
    let first_bad = AtomicUsize::new(usize::MAX);
    let error: Mutex<Option<(usize, ImageError)>> = Mutex::new(None);
    let worker = || {
        let mut scratch = Scratch::default();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= jobs.len() || i > first_bad.load(Ordering::Relaxed) {
                return;
            }
            if let Err(e) = jobs[i].run(&mut scratch) {
                first_bad.fetch_min(i, Ordering::Relaxed);
                let mut slot = error.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                    *slot = Some((i, e));
                }
            }
        }
    };
    std::thread::scope(|s| {
        // A thread the system will not give (a process or thread limit, a sandbox) is one
        // fewer worker, never a failure: the calling thread takes whatever is left.
        for _ in 1..threads {
            if std::thread::Builder::new().spawn_scoped(s, worker).is_err() {
                break;
            }
        }
        worker();
    });
    match error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Checks the entry header at `off` and what can be checked of its payload without reading
/// it; adds its body (a concatenated entry: its members' bodies) to `bodies` and returns its
/// length, or None for the zero padding that may end a container.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn walk_entry<'a>(
    d: &'a [u8],
    off: u64,
    total: u64,
    index: u64,
    bodies: &mut Buf<Body<'a>>,
) -> Result<Option<u64>, ImageError> {
    const ENTRY: &str = "a fatbin entry header";
    let left = total.saturating_sub(off);
    let at = to_usize(off, ENTRY)?;
    if left < FATBIN_ENTRY_HEADER_LEN {
        // The entries must fill the payload exactly (zero bytes left over are refused too).
        return check_payload_end(d, off, total).map(|()| None);
    }
    let bad = |why: String| entry_error(index, off, why);
    // At least 64 bytes remain in the container, which lies within `d`: the entry header is
    // there, and its fields are read without further checks.
    const HEADER: usize = FATBIN_ENTRY_HEADER_LEN as usize;
    let h = Rec::<HEADER>::at(d, at).ok_or_else(|| short(ENTRY, off.saturating_add(FATBIN_ENTRY_HEADER_LEN), d))?;
    let e = EntryHeader::read(h);
    let entry_header_size = e.header_size;
    if entry_header_size < FATBIN_ENTRY_HEADER_LEN {
        return Err(bad(cold_format!("header size {entry_header_size} is less than {FATBIN_ENTRY_HEADER_LEN}")));
    }
    let entry_len = entry_header_size.checked_add(e.payload_size).filter(|&n| n <= left).ok_or_else(|| {
        bad(cold_format!(
            "header {entry_header_size} + payload {} bytes run past the end of the fatbin ({total} bytes)",
            e.payload_size
        ))
    })?;
    // Toolkits pad every payload to 8 bytes (403 of 403 entries of nvcc 12.x/13.0 output and
    // the nvJPEG/cuRAND wheels); on the H200 a compressed PTX entry whose payload size was
    // one byte short of that crashed CUDA's loader (structured campaign).
    if e.payload_size % 8 != 0 {
        return Err(bad(cold_format!("payload size {} is not a multiple of 8", e.payload_size)));
    }
    // The whole entry is within the container: its header and payload are slices of it.
    let header = d.get(at..at + entry_header_size as usize).unwrap_or_default();
    let payload = d.get(at + entry_header_size as usize..at + entry_len as usize).unwrap_or_default();
    if e.kind == FATBIN_KIND_CONCAT {
        walk_concat(&e, header, payload, index, off, bodies).map_err(bad)?;
        return Ok(Some(entry_len));
    }
    let code = check_entry_header(&e, header).map_err(bad)?;

    let method = e.compression();
    // The bytes CUDA will load: the payload, or what it decompresses to. An LTO-IR entry's
    // payload is opaque (nvcc scrambles it: flag 0x1_0000, not a zstd frame even when the
    // zstd flag is set) and CUDA's loader cannot run LTO-IR, so only its sizes are checked.
    let content = match method {
        _ if code_is_lto(code) => {
            if method != Compression::None {
                compressed_stream(&e, payload).map_err(&bad)?;
            }
            Content::Opaque { compressed: method != Compression::None }
        }
        Compression::None => Content::Plain(payload),
        _ => {
            let stream = compressed_stream(&e, payload).map_err(&bad)?;
            if let Some(m) = method.method() {
                decompress::check_declared(m, stream.len(), e.uncompressed_size).map_err(&bad)?;
            }
            Content::Compressed { method, stream, size: e.uncompressed_size as usize }
        }
    };
    bodies.push(Body { index, off, code, header, payload, content });
    Ok(Some(entry_len))
}

/// A concatenated entry (see the format notes at the top): its header (`header`, the whole of
/// it) as `fatbinary --concat` writes it, its compressed payload, and each member record held
/// to what an entry header of its own must be, the members back to back filling the run. Adds
/// a body per member.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn walk_concat<'a>(
    e: &EntryHeader,
    header: &'a [u8],
    payload: &'a [u8],
    index: u64,
    off: u64,
    bodies: &mut Buf<Body<'a>>,
) -> Result<(), String> {
    let hs = e.header_size;
    if e.magic != FATBIN_ENTRY_MAGIC {
        return Err(cold_format!("header word 2 is {:#06x}, not {FATBIN_ENTRY_MAGIC:#06x}", e.magic));
    }
    if hs % 8 != 0 || hs > CONCAT_HEADER_MAX {
        return Err(cold_format!(
            "its concatenated entry header of {hs} bytes is not a multiple of 8 up to {CONCAT_HEADER_MAX}"
        ));
    }
    let layout = u32::from_le_bytes(header.get(24..28).and_then(|w| w.try_into().ok()).unwrap_or_default());
    if e.arch != 0 || layout != CONCAT_LAYOUT {
        return Err(cold_format!(
            "it is a concatenated entry (kind {FATBIN_KIND_CONCAT:#x}) of architecture {} and layout {layout}, not of \
             architecture 0 and layout {CONCAT_LAYOUT} (the only one known)",
            e.arch
        ));
    }
    let unknown = e.flags & !FATBIN_FLAGS_KNOWN;
    let variant_bits = FATBIN_FLAG_ARCH_SPECIFIC | FATBIN_FLAG_FAMILY_SPECIFIC | FATBIN_FLAG_LTO_OPAQUE;
    if unknown != 0 || e.flags & FATBIN_FLAG_64BIT == 0 || e.flags & variant_bits != 0 {
        return Err(cold_format!(
            "its concatenated entry's flags {:#x} are not 64-bit code of no one architecture",
            e.flags
        ));
    }
    let method = match (e.flags & FATBIN_FLAG_COMPRESSED_LZ != 0, e.flags & FATBIN_FLAG_COMPRESSED_ZSTD != 0) {
        (true, false) => Compression::Lz4,
        (false, true) => Compression::Zstd,
        _ => {
            return Err(cold_format!(
                "its concatenated entry's flags {:#x} do not name one compression method",
                e.flags
            ))
        }
    };
    if e.name_offset != 0 || e.name_len != 0 || e.word_30 != 0 || e.options_at != FATBIN_ENTRY_HEADER_LEN {
        return Err(
            "its concatenated entry header's words 0x14, 0x20-0x27 and 0x30-0x37 are not as fatbinary writes them"
                .into(),
        );
    }
    let stream = compressed_stream(e, payload)?;
    let run = e.uncompressed_size;
    if run == 0 || run > decompress::MAX_ENTRY {
        return Err(cold_format!("uncompressed size {run} is not between 1 and {}", decompress::MAX_ENTRY));
    }
    if let Some(m) = method.method() {
        decompress::check_declared(m, stream.len(), run)?;
    }
    // The member table: (count, bytes) at 0x40, then the records, to the end of the header.
    let word = |o: usize| header.get(o..o + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let (count, table) = (u64::from(word(64)), u64::from(word(68)));
    if count == 0 || table != hs.saturating_sub(64) {
        return Err(cold_format!(
            "its member table ({count} members in {table} bytes) is not one member or more filling its header after the fixed 64 bytes ({hs} bytes)"
        ));
    }
    let mut at = 72usize;
    let mut next = 0u64; // where the next member must start in the run
                         // Added to `bodies` only once the whole entry passed (its own error is its entry's first).
    let mut members = Buf::with_capacity(count.min(64) as usize).unwrap_or_default();
    const HEADER: usize = FATBIN_ENTRY_HEADER_LEN as usize;
    for member in 0..count as usize {
        let bad = |why: String| cold_format!("member {member}: {why}");
        let h = Rec::<HEADER>::at(header, at)
            .ok_or_else(|| bad(cold_format!("its record at {at:#x} runs past the header ({hs} bytes)")))?;
        let mut m = EntryHeader::read(h);
        // The record's word 1 is the member's offset in the run; its length is what an entry
        // header holding the same name and options has: past them and a NUL, to 8 bytes.
        let start = m.header_size;
        let record_len = record_len(&m, &header[at..]).map_err(&bad)?;
        if start != next {
            return Err(bad(cold_format!(
                "it starts at {start:#x} of the run, not at {next:#x} where the member before ends"
            )));
        }
        m.header_size = record_len as u64;
        let record = &header[at..at + record_len];
        let code = check_entry_header(&m, record).map_err(&bad)?;
        if m.compression() != Compression::None || m.payload_size % 8 != 0 || m.payload_size == 0 {
            return Err(bad(cold_format!(
                "its flags {:#x} and size {} are not those of a plain member (uncompressed, a multiple of 8 bytes)",
                m.flags,
                m.payload_size
            )));
        }
        if code_is_lto(code) {
            return Err(bad("an LTO-IR member, which no toolkit concatenates".into()));
        }
        next = start.checked_add(m.payload_size).filter(|&end| end <= run).ok_or_else(|| {
            bad(cold_format!("its {} bytes at {start:#x} run past the {run}-byte run", m.payload_size))
        })?;
        members.push(Body {
            index,
            off,
            code,
            header: record,
            payload,
            content: Content::Member {
                method,
                stream,
                size: run as usize,
                at: start as usize,
                len: m.payload_size as usize,
                member,
                entry_header: header,
            },
        });
        at += record_len;
    }
    if at as u64 != hs || next != run {
        return Err(cold_format!(
            "its {count} member records end at {at:#x} of its {hs}-byte header and its members at {next:#x} of the {run}-byte run; both must end exactly"
        ));
    }
    bodies.extend_from_slice(&members);
    Ok(())
}

/// A member of a concatenated entry, as [`concat_members`] lists it.
pub(super) struct ConcatMember<'a> {
    pub(super) code: ArchCode,
    /// Its record (the entry header it would have on its own, but for word 1).
    pub(super) record: &'a [u8],
    /// Its bytes in the decompressed run.
    pub(super) range: std::ops::Range<usize>,
}

/// The members of the concatenated entry at `at` of `d`, an image that passed validation, and
/// the decompressed run they are cut from. None if the entry is not one or does not decompress
/// (it cannot be, in a valid image).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn concat_members(d: &[u8], at: usize) -> Option<(Vec<ConcatMember<'_>>, Vec<u8>)> {
    let e = EntryHeader::read(Rec::<{ FATBIN_ENTRY_HEADER_LEN as usize }>::at(d, at)?);
    if e.kind != FATBIN_KIND_CONCAT {
        return None;
    }
    let hs = usize::try_from(e.header_size).ok()?;
    let header = d.get(at..at.checked_add(hs)?)?;
    let payload = d.get(at + hs..(at + hs).checked_add(usize::try_from(e.payload_size).ok()?)?)?;
    let mut bodies = Buf::default();
    walk_concat(&e, header, payload, 0, at as u64, &mut bodies).ok()?;
    let mut run = Vec::new();
    let mut members = Vec::with_capacity(bodies.len());
    for b in bodies.iter() {
        let Content::Member { method, stream, size, at, len, .. } = b.content else { return None };
        if run.is_empty() {
            run.try_reserve_exact(size).ok()?;
            run.resize(size, 0);
            decode_into(method, stream, &mut run).ok()?;
        }
        members.push(ConcatMember { code: b.code, record: b.header, range: at..at + len });
    }
    Some((members, run))
}

/// The length of a member record `m` starting `rest` (the header from the record on): its
/// fixed 64 bytes, and past any name and options descriptor and options it points at, one NUL,
/// rounded up to 8 bytes (what an entry header of its own is).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn record_len(m: &EntryHeader, rest: &[u8]) -> Result<usize, String> {
    let mut end = FATBIN_ENTRY_HEADER_LEN;
    if m.name_len != 0 {
        end = end.max(m.name_offset.saturating_add(m.name_len).saturating_add(1));
    }
    if m.options_at != 0 {
        end = end.max(m.options_at.saturating_add(8));
        let at = m.options_at as usize;
        let w = |o: usize| rest.get(o..o + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let (opt_offset, opt_len) = (u64::from(w(at)), u64::from(w(at + 4)));
        if opt_len != 0 {
            end = end.max(opt_offset.saturating_add(opt_len).saturating_add(1));
        }
    }
    let len = end.div_ceil(8).saturating_mul(8);
    if len > rest.len() as u64 {
        return Err(cold_format!("its record of {len} bytes runs past the header"));
    }
    Ok(len as usize)
}

/// A fatbin entry header's fixed 64 bytes, word by word (see the format notes at the top).
/// contents.rs reads entries through it too.
pub(super) struct EntryHeader {
    pub(super) kind: u16,
    /// Bytes 2..4: 0x0101 in every toolkit's output.
    pub(super) magic: u16,
    pub(super) header_size: u64,
    pub(super) payload_size: u64,
    pub(super) compressed_size: u64,
    /// Offset, in the header, of the (offset, length) descriptor of the options string; 0: none.
    pub(super) options_at: u64,
    pub(super) arch: u32,
    pub(super) name_offset: u64,
    pub(super) name_len: u64,
    pub(super) flags: u64,
    /// Bytes 0x30..0x38: 0, except in LTO-IR entries (a 32-bit value that is not an offset).
    pub(super) word_30: u64,
    pub(super) uncompressed_size: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Compression {
    None,
    Lz4,
    Zstd,
}

impl Compression {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn method(self) -> Option<decompress::Method> {
        match self {
            Compression::None => None,
            Compression::Lz4 => Some(decompress::Method::Lz4),
            Compression::Zstd => Some(decompress::Method::Zstd),
        }
    }
}

impl EntryHeader {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn read(h: Rec<'_, { FATBIN_ENTRY_HEADER_LEN as usize }>) -> Self {
        EntryHeader {
            kind: h.u16::<0>(),
            magic: h.u16::<2>(),
            header_size: u64::from(h.u32::<4>()),
            payload_size: h.u64::<8>(),
            compressed_size: u64::from(h.u32::<16>()),
            options_at: u64::from(h.u32::<20>()),
            arch: h.u32::<28>(),
            name_offset: u64::from(h.u32::<32>()),
            name_len: u64::from(h.u32::<36>()),
            flags: h.u64::<40>(),
            word_30: h.u64::<48>(),
            uncompressed_size: h.u64::<56>(),
        }
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn compression(&self) -> Compression {
        if self.flags & FATBIN_FLAG_COMPRESSED_LZ != 0 {
            Compression::Lz4
        } else if self.flags & FATBIN_FLAG_COMPRESSED_ZSTD != 0 {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A compressed entry's stream lies in its payload; CUDA decodes the stream's bytes only, so
/// any run of zero bytes may follow it (CUDA 11 and later pad to the next multiple of 8, CUDA
/// 10 a PTX entry's stream by 1 to 8 bytes).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_compressed_size(e: &EntryHeader) -> Result<(), String> {
    if e.compressed_size > e.payload_size {
        return Err(cold_format!(
            "compressed size {} runs past its payload of {} bytes",
            e.compressed_size,
            e.payload_size
        ));
    }
    Ok(())
}

/// The compressed stream of `payload` (entry `e`'s), once its size and the zero padding after
/// it are checked.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn compressed_stream<'a>(e: &EntryHeader, payload: &'a [u8]) -> Result<&'a [u8], String> {
    check_compressed_size(e)?;
    let (stream, padding) = payload.split_at_checked(e.compressed_size as usize).unwrap_or((payload, &[]));
    if padding.iter().any(|&b| b != 0) {
        return Err("the padding after its compressed payload is not zero".into());
    }
    Ok(stream)
}

/// Every word of an entry header against what real toolkits write (an allowlist: nvcc 13.0 in
/// every mode, and the fatbins of NVIDIA's CUDA 12 libraries); returns the code it holds.
/// `header` is the whole entry header (`header_size` bytes, within the image).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_entry_header(e: &EntryHeader, header: &[u8]) -> Result<ArchCode, String> {
    let hs = e.header_size;
    if e.magic != FATBIN_ENTRY_MAGIC {
        return Err(cold_format!("header word 2 is {:#06x}, not {FATBIN_ENTRY_MAGIC:#06x}", e.magic));
    }
    // Any size the container holds: the name (a source path, or MXNet 1.5's NCCL build's list of
    // them: 32,540 bytes in a 32,608-byte header) and the options lie in it.
    if hs % 8 != 0 {
        return Err(cold_format!("header size {hs} is not a multiple of 8"));
    }
    if e.flags & FATBIN_FLAG_COMPRESSED_OLD != 0 {
        return Err(cold_format!(
            "its flags {:#x} say compressed by the older method (0x1000), which cudyn does not decode: rebuild it \
             with a newer CUDA",
            e.flags
        ));
    }
    let unknown = e.flags & !FATBIN_FLAGS_KNOWN;
    if unknown != 0 {
        return Err(cold_format!("its flags {:#x} have bits no toolkit writes ({unknown:#x})", e.flags));
    }
    if e.flags & FATBIN_FLAG_64BIT == 0 {
        return Err(cold_format!("its flags {:#x} do not mark 64-bit code", e.flags));
    }
    if e.flags & FATBIN_FLAG_COMPRESSED_LZ != 0 && e.flags & FATBIN_FLAG_COMPRESSED_ZSTD != 0 {
        return Err(cold_format!("its flags {:#x} name two compression methods", e.flags));
    }
    let variant = match (e.flags & FATBIN_FLAG_ARCH_SPECIFIC != 0, e.flags & FATBIN_FLAG_FAMILY_SPECIFIC != 0) {
        (true, true) => return Err(cold_format!("its flags {:#x} say both arch- and family-specific", e.flags)),
        (true, false) => ArchVariant::A,
        (false, true) => ArchVariant::F,
        (false, false) => ArchVariant::None,
    };
    if !(10..FATBIN_ARCH_LIMIT).contains(&e.arch) {
        return Err(cold_format!("architecture {} is not an SM number", e.arch));
    }
    let code = match e.kind {
        FATBIN_KIND_PTX => ArchCode::Ptx { sm: e.arch, variant },
        FATBIN_KIND_ELF => ArchCode::Sass { sm: e.arch, variant },
        FATBIN_KIND_LTOIR => ArchCode::LtoIr { sm: e.arch, variant },
        other => return Err(cold_format!("kind {other:#x} is not PTX (1), ELF (2) or LTO-IR (8)")),
    };
    // 0x1_0000 (the payload is scrambled) only on LTO-IR entries; CUDA 12.1's LTO-IR entries
    // (cuSPARSE 12.1, 34 of them) lack it.
    if e.kind != FATBIN_KIND_LTOIR && e.flags & FATBIN_FLAG_LTO_OPAQUE != 0 {
        return Err(cold_format!(
            "its flags {:#x} set flag 0x10000 (LTO-IR only) on an entry of kind {}",
            e.flags,
            e.kind
        ));
    }
    if e.kind != FATBIN_KIND_LTOIR && e.word_30 != 0 {
        return Err(cold_format!("header word 0x30 is {:#x}, not 0", e.word_30));
    }
    if e.kind == FATBIN_KIND_LTOIR && e.word_30 > u64::from(u32::MAX) {
        return Err(cold_format!("header word 0x30 is {:#x}, wider than 32 bits", e.word_30));
    }
    // Sizes: a compressed entry's stream lies in its payload (`check_compressed_size`; the walk
    // checks the padding after it) and decompresses to a size within the cap; a plain one
    // records neither size.
    if e.compression() == Compression::None {
        if e.compressed_size != 0 || e.uncompressed_size != 0 {
            return Err(cold_format!(
                "it is not compressed but records compressed size {} and uncompressed size {}",
                e.compressed_size,
                e.uncompressed_size
            ));
        }
    } else {
        check_compressed_size(e)?;
        if e.uncompressed_size == 0 || e.uncompressed_size > decompress::MAX_ENTRY {
            return Err(cold_format!(
                "uncompressed size {} is not between 1 and {}",
                e.uncompressed_size,
                decompress::MAX_ENTRY
            ));
        }
    }
    // What lies in the header after the fixed 64 bytes: the name (then a NUL), the options
    // descriptor, the options. Nothing may point into the fixed part or past the header (CUDA
    // reads the name and options from the header). The other bytes are the toolkit's: CUDA
    // 13.3-13.5 write a byte after the declared options of sm_100+ entries (7,950 entry headers
    // of NVIDIA's wheels: cuBLAS 13.10, cuDNN 9.28, NPP 13.2, cuRAND 10.4), so they are not
    // checked.
    if e.name_len == 0 {
        if e.name_offset != 0 {
            return Err(cold_format!("its name is empty but its name offset is {:#x}, not 0", e.name_offset));
        }
    } else {
        let end = e.name_offset.checked_add(e.name_len).filter(|&end| e.name_offset >= 64 && end < hs);
        let Some(end) = end else {
            return Err(cold_format!(
                "its name ({} bytes at {:#x}, then a NUL) does not lie in its header after the fixed 64 bytes ({hs} bytes)",
                e.name_len, e.name_offset
            ));
        };
        let name = header.get(e.name_offset as usize..end as usize).unwrap_or_default();
        // The source file's path, as bytes (nvcc writes a UTF-8 path as it is), then a NUL.
        if header.get(end as usize) != Some(&0) || name.contains(&0) {
            return Err("its name is not a string of its declared length followed by a NUL".into());
        }
    }
    if e.options_at != 0 {
        let at = e.options_at;
        if at < 64 || at % 4 != 0 || at.checked_add(8).is_none_or(|end| end > hs) {
            return Err(cold_format!(
                "its options descriptor at {at:#x} does not lie in its header after the fixed 64 bytes ({hs} bytes)"
            ));
        }
        let word =
            |o: u64| header.get(o as usize..o as usize + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let (opt_offset, opt_len) = (u64::from(word(at)), u64::from(word(at + 4)));
        if opt_len != 0 {
            if opt_offset < 64 || opt_offset.checked_add(opt_len).is_none_or(|end| end > hs) {
                return Err(cold_format!(
                    "its options ({opt_len} bytes at {opt_offset:#x}) do not lie in its header after the fixed 64 bytes ({hs} bytes)"
                ));
            }
            if e.kind == FATBIN_KIND_PTX {
                // Handed to the JIT compiler as a C string: text, and a NUL before the header ends.
                let text = header.get(opt_offset as usize..).unwrap_or_default();
                let nul = text.iter().position(|&b| b == 0);
                if nul.is_none_or(|n| !is_ptx_text(&text[..n])) {
                    return Err("its JIT options are not ASCII text ending in a NUL within its header".into());
                }
            }
        } else if opt_offset != 0 && (opt_offset < 64 || opt_offset > hs) {
            return Err(cold_format!("its empty options lie at {opt_offset:#x}, outside its header"));
        }
    }
    Ok(code)
}

/// The end of a container's payload, at `off` (after its last entry) of the container `d`
/// whose header says it is `total` bytes: the entries must fill it exactly. Every one of the
/// 93,863 distinct containers of NVIDIA's wheels does; one whose payload size claimed 8 zero
/// bytes after its last entry crashed CUDA's loader on the H200 (issue 21's independent
/// mutation generator), which reads an entry header wherever payload is left. For the entry
/// walk to call where too few bytes for an entry header are left.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn check_payload_end(d: &[u8], off: u64, total: u64) -> Result<(), ImageError> {
    if off == total {
        return Ok(());
    }
    let left = total.saturating_sub(off);
    let zero =
        d.get(to_usize(off, "a fatbin")?..to_usize(total, "a fatbin")?).is_some_and(|t| t.iter().all(|&b| b == 0));
    Err(ImageError::Malformed(cold_format!(
        "fatbin payload: {left} {}bytes follow its last entry (at offset {off}); the entries fill the payload its header declares",
        if zero { "zero " } else { "" }
    )))
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn code_is_lto(code: ArchCode) -> bool {
    matches!(code, ArchCode::LtoIr { .. })
}

/// The entry's contents (decompressed if it was): a cubin must be one that passes as a cubin of
/// its own, for the entry's architecture; PTX must be ASCII text (then NULs only); LTO-IR must
/// start as LTO-IR does.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_entry_body(code: ArchCode, body: &[u8]) -> Result<(), String> {
    match code {
        ArchCode::Sass { sm, .. } => {
            if !body.starts_with(&ELF_MAGIC) {
                return Err("its payload is not an ELF cubin".into());
            }
            let cubin = inspect_cubin(body).map_err(|e| cold_format!("holds a bad cubin: {e}"))?;
            if cubin.sm != sm {
                return Err(cold_format!("holds a cubin for sm_{}, not for the entry's sm_{sm}", cubin.sm));
            }
            Ok(())
        }
        ArchCode::Ptx { .. } => {
            // PTX is text for the driver's JIT compiler: anything else is corruption. The text
            // ends at the first NUL (the first byte that is not text, if it is a NUL), and only
            // NULs may follow it.
            match first_non_ptx_byte(body) {
                None => Ok(()),
                Some(end) if body[end] == 0 => {
                    if all_zero(&body[end..]) {
                        Ok(())
                    } else {
                        Err("bytes follow the PTX text's terminating NUL".into())
                    }
                }
                Some(bad) => Err(cold_format!("its PTX has a non-text byte {:#04x} at {bad}", body[bad])),
            }
        }
        ArchCode::LtoIr { .. } => Ok(()), // opaque (see inspect_fatbin)
    }
}
