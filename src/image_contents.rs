//! What an image holds, entry by entry and kernel by kernel, read from its bytes alone (no GPU,
//! no CUDA library): the fatbin entries (kind, architecture, compression, sizes), the kernels of
//! each cubin with their parameter layouts, and the verdict of [`crate::image::inspect`].
//! `cudyn inspect` prints this; a program can use it to see what a file will offer before
//! loading it.
//!
//! Parameter layouts come from the cubin's `.nv.info.<kernel>` sections (SHT_LOPROC 0x70000000):
//! records of (u8 format, u8 attribute, u16 value or length); attribute 0x17 (KPARAM_INFO,
//! format 4, 12 bytes) holds `u32 0, u16 ordinal, u16 offset, u32 word` with the parameter's
//! size in bytes in bits 18..31 of `word`; attribute 0x19 (CBANK_PARAM_SIZE, format 3) holds
//! the size of the whole parameter buffer. Every read is bounds-checked; a cubin whose tables
//! cannot be read gives no kernels rather than an error (the verdict says what is wrong).

use crate::image::{self, ArchCode, CodeKind, ImageError, ImageInfo};
use crate::Param;

/// One kernel of a cubin, as its `.nv.info` tables describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLayout {
    /// The kernel's symbol name (mangled for C++ kernels that are not `extern "C"`).
    pub name: String,
    /// Its parameters, first to last: byte offset in the parameter buffer and size.
    pub params: Vec<Param>,
    /// The size of the whole parameter buffer in bytes (0 for a kernel without parameters).
    pub param_bytes: u32,
}

/// How a fatbin entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Stored as is.
    None,
    /// LZ4-compressed.
    Lz4,
    /// Zstandard-compressed (CUDA 13's default).
    Zstd,
}

impl Compression {
    /// "none", "lz4" or "zstd".
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// One entry of a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    /// Its byte offset in the fatbin.
    pub offset: u64,
    /// The code it holds: SASS (a cubin), PTX or LTO-IR, and for which architecture.
    pub code: ArchCode,
    /// How the entry's payload is stored.
    pub compression: Compression,
    /// Bytes of its header.
    pub header_bytes: u64,
    /// Bytes of its payload as stored (compressed, with padding, if compressed).
    pub stored_bytes: u64,
    /// Bytes of the code once decompressed (the stored size if not compressed).
    pub code_bytes: u64,
    /// The source file name the toolkit recorded, if any.
    pub source_name: String,
    /// The kernels of a SASS entry (empty for PTX and LTO-IR, and when the image is refused).
    pub kernels: Vec<KernelLayout>,
}

/// Everything [`contents`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// What the first bytes say the image is ([`image::code_kind_of`]).
    pub kind: CodeKind,
    /// The full validation's verdict ([`image::inspect`]): what cudyn would load, or why not.
    pub verdict: Result<ImageInfo, ImageError>,
    /// The entries of a fatbin, as far as their headers can be read (also when the verdict is
    /// an error, up to the first entry whose header cannot be read).
    pub entries: Vec<FatbinEntry>,
    /// The kernels of a cubin (empty for other kinds, and when the verdict is an error).
    pub kernels: Vec<KernelLayout>,
}

/// What `data` holds. Never panics; reads nothing outside `data`.
pub fn contents(data: &[u8]) -> Contents {
    let kind = image::code_kind_of(data);
    let verdict = image::inspect(data);
    let valid = verdict.is_ok();
    let mut out = Contents { kind, verdict, entries: Vec::new(), kernels: Vec::new() };
    match kind {
        CodeKind::Cubin if valid => out.kernels = cubin_kernels(data),
        CodeKind::Fatbin => out.entries = fatbin_entries(data, valid),
        _ => {}
    }
    out
}

/// The entry a GPU of compute capability `sm` runs, as CUDA picks it: SASS it can run, the
/// newest such; else PTX it can JIT-compile, the newest such. None when nothing runs on it.
pub fn entry_for_gpu(codes: &[ArchCode], sm: u32) -> Option<usize> {
    let best = |want_sass: bool| {
        codes
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, ArchCode::Sass { .. }) == want_sass && !matches!(c, ArchCode::LtoIr { .. }))
            .filter(|(_, c)| c.runs_on(sm))
            // Newest architecture first; among equals, the more specific ('a'/'f') one.
            .max_by_key(|(i, c)| (c.sm(), c.variant() != image::ArchVariant::None, std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    };
    best(true).or_else(|| best(false))
}

// ---------------------------------------------------------------------------------------------
// Fatbin entries

const FATBIN_HEADER_LEN: usize = 16;
const ENTRY_HEADER_LEN: usize = 64;
const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
const KIND_LTOIR: u16 = 8;
const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(d.get(at..at.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// The entries whose headers can be read; with `valid` (the image passed [`image::inspect`]),
/// the kernels of each SASS entry too.
fn fatbin_entries(d: &[u8], valid: bool) -> Vec<FatbinEntry> {
    let mut out = Vec::new();
    let Some(payload) = u64_at(d, 8) else { return out };
    let end = usize::try_from(payload)
        .ok()
        .and_then(|p| p.checked_add(FATBIN_HEADER_LEN))
        .map_or(d.len(), |e| e.min(d.len()));
    let mut at = FATBIN_HEADER_LEN;
    let mut scratch = Vec::new();
    while at.checked_add(ENTRY_HEADER_LEN).is_some_and(|e| e <= end) {
        let (
            Some(kind),
            Some(hs),
            Some(ps),
            Some(cs),
            Some(arch),
            Some(name_off),
            Some(name_len),
            Some(flags),
            Some(us),
        ) = (
            u16_at(d, at),
            u32_at(d, at + 4),
            u64_at(d, at + 8),
            u32_at(d, at + 16),
            u32_at(d, at + 28),
            u32_at(d, at + 32),
            u32_at(d, at + 36),
            u64_at(d, at + 40),
            u64_at(d, at + 56),
        )
        else {
            break;
        };
        if kind == 0 && hs == 0 {
            break; // zero padding at the end of the container
        }
        let variant = match (flags & FLAG_ARCH_SPECIFIC != 0, flags & FLAG_FAMILY_SPECIFIC != 0) {
            (true, _) => image::ArchVariant::A,
            (false, true) => image::ArchVariant::F,
            _ => image::ArchVariant::None,
        };
        let code = match kind {
            KIND_PTX => ArchCode::Ptx { sm: arch, variant },
            KIND_ELF => ArchCode::Sass { sm: arch, variant },
            KIND_LTOIR => ArchCode::LtoIr { sm: arch, variant },
            _ => break,
        };
        let compression = if flags & FLAG_LZ4 != 0 {
            Compression::Lz4
        } else if flags & FLAG_ZSTD != 0 {
            Compression::Zstd
        } else {
            Compression::None
        };
        let Some(header) = d.get(at..at.saturating_add(hs as usize)) else { break };
        let source_name = header
            .get(name_off as usize..(name_off as usize).saturating_add(name_len as usize))
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let body_at = at.saturating_add(hs as usize);
        let Some(stored) = usize::try_from(ps).ok().and_then(|p| d.get(body_at..body_at.checked_add(p)?)) else {
            break;
        };
        let code_bytes = if compression == Compression::None { ps } else { us };
        let mut kernels = Vec::new();
        if valid && kind == KIND_ELF {
            let cubin: Option<&[u8]> = match compression {
                Compression::None => Some(stored),
                _ => {
                    let stream = stored.get(..cs as usize).unwrap_or_default();
                    let r = match compression {
                        Compression::Lz4 => image::decompress::lz4_block(stream, us as usize, &mut scratch),
                        _ => image::decompress::zstd_frame(stream, us as usize, &mut scratch),
                    };
                    r.ok().map(|_| scratch.as_slice())
                }
            };
            kernels = cubin.map(cubin_kernels).unwrap_or_default();
        }
        out.push(FatbinEntry {
            offset: at as u64,
            code,
            compression,
            header_bytes: u64::from(hs),
            stored_bytes: ps,
            code_bytes,
            source_name,
            kernels,
        });
        match body_at.checked_add(stored.len()) {
            Some(next) if next > at => at = next,
            _ => break,
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Cubin kernels

const SHT_CUDA_INFO: u32 = 0x7000_0000;
const NV_INFO_PREFIX: &str = ".nv.info.";
const ATTR_KPARAM_INFO: u8 = 0x17;
const ATTR_CBANK_PARAM_SIZE: u8 = 0x19;

/// The kernels of a cubin and their parameter layouts, in section order; empty when the
/// section tables cannot be read.
pub fn cubin_kernels(d: &[u8]) -> Vec<KernelLayout> {
    cubin_kernels_checked(d).unwrap_or_default()
}

fn cubin_kernels_checked(d: &[u8]) -> Option<Vec<KernelLayout>> {
    let shoff = usize::try_from(u64_at(d, 40)?).ok()?;
    let shentsize = usize::from(u16_at(d, 58)?);
    let mut shnum = usize::from(u16_at(d, 60)?);
    let mut shstrndx = usize::from(u16_at(d, 62)?);
    if shentsize < 64 {
        return None;
    }
    let section = |i: usize| -> Option<(u32, u32, &[u8])> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let (name, ty) = (u32_at(d, h)?, u32_at(d, h + 4)?);
        let (off, size) = (usize::try_from(u64_at(d, h + 24)?).ok()?, usize::try_from(u64_at(d, h + 32)?).ok()?);
        Some((name, ty, d.get(off..off.checked_add(size)?).unwrap_or_default()))
    };
    // ELF extended numbering: the real counts live in section 0.
    if shnum == 0 {
        let h = shoff;
        shnum = usize::try_from(u64_at(d, h.checked_add(32)?)?).ok()?;
    }
    if shstrndx == 0xffff {
        shstrndx = u32_at(d, shoff.checked_add(40)?)? as usize;
    }
    let (_, _, names) = section(shstrndx)?;
    let name_of = |off: u32| -> Option<&str> {
        let rest = names.get(off as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    };
    let mut out = Vec::new();
    for i in 0..shnum.min(1 << 16) {
        let Some((name, ty, body)) = section(i) else { continue };
        if ty != SHT_CUDA_INFO {
            continue;
        }
        let Some(kernel) = name_of(name).and_then(|n| n.strip_prefix(NV_INFO_PREFIX)) else { continue };
        if kernel.is_empty() {
            continue;
        }
        out.push(kernel_layout(kernel, body));
    }
    Some(out)
}

fn kernel_layout(name: &str, info: &[u8]) -> KernelLayout {
    let mut params: Vec<(u16, Param)> = Vec::new();
    let mut param_bytes = None;
    let mut rest = info;
    while let Some((&[format, attr, v0, v1], after)) = rest.split_first_chunk::<4>() {
        let value = u16::from_le_bytes([v0, v1]);
        if format == 4 {
            let Some(payload) = after.get(..usize::from(value)) else { break };
            if attr == ATTR_KPARAM_INFO && payload.len() == 12 {
                let ordinal = u16_at(payload, 4).unwrap_or(0);
                let offset = u16_at(payload, 6).unwrap_or(0);
                let word = u32_at(payload, 8).unwrap_or(0);
                params.push((ordinal, Param { offset: u32::from(offset), size: word >> 18 }));
            }
            rest = after.get(usize::from(value)..).unwrap_or_default();
        } else {
            if attr == ATTR_CBANK_PARAM_SIZE {
                param_bytes = Some(u32::from(value));
            }
            rest = after;
        }
    }
    params.sort_by_key(|&(ordinal, _)| ordinal);
    let params: Vec<Param> = params.into_iter().map(|(_, p)| p).collect();
    let param_bytes = param_bytes.unwrap_or_else(|| params.iter().map(|p| p.offset + p.size).max().unwrap_or(0));
    KernelLayout { name: name.to_string(), params, param_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubin(sections: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
        // A minimal ELF64 with a section-name table and the given sections (just enough for
        // `cubin_kernels`; `image::inspect` would refuse it).
        let mut names = vec![0u8];
        let mut bodies = Vec::new();
        let mut heads = vec![(0u32, 0u32, 0usize, 0usize)];
        let mut at = 64usize;
        for (n, ty, b) in sections.iter().map(|(n, t, b)| (*n, *t, b.clone())).chain([(".shstrtab", 3, Vec::new())]) {
            let name_off = names.len() as u32;
            names.extend_from_slice(n.as_bytes());
            names.push(0);
            let b = if n == ".shstrtab" { names.clone() } else { b };
            heads.push((name_off, ty, at, b.len()));
            at += b.len();
            bodies.extend_from_slice(&b);
        }
        let shoff = 64 + bodies.len();
        let mut d = vec![0u8; 64];
        d[..4].copy_from_slice(b"\x7fELF");
        d[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
        d[58..60].copy_from_slice(&64u16.to_le_bytes());
        d[60..62].copy_from_slice(&(heads.len() as u16).to_le_bytes());
        d[62..64].copy_from_slice(&((heads.len() - 1) as u16).to_le_bytes());
        d.extend_from_slice(&bodies);
        for (name, ty, off, size) in heads {
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&ty.to_le_bytes());
            h[24..32].copy_from_slice(&(off as u64).to_le_bytes());
            h[32..40].copy_from_slice(&(size as u64).to_le_bytes());
            d.extend_from_slice(&h);
        }
        d
    }

    fn kparam(ordinal: u16, offset: u16, size: u32) -> Vec<u8> {
        let mut r = vec![4, ATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
        r.extend_from_slice(&ordinal.to_le_bytes());
        r.extend_from_slice(&offset.to_le_bytes());
        r.extend_from_slice(&((size << 18) | 0x1f000).to_le_bytes());
        r
    }

    #[test]
    fn parameters_come_out_in_ordinal_order_with_sizes_from_the_high_bits() {
        // Toolkits list the parameters last to first, as here.
        let mut info = kparam(2, 16, 8);
        info.extend(kparam(1, 8, 4));
        info.extend(kparam(0, 0, 1));
        info.extend([3, ATTR_CBANK_PARAM_SIZE, 24, 0]);
        let d = cubin(&[
            (".nv.info", SHT_CUDA_INFO, vec![]),
            (".nv.info.k", SHT_CUDA_INFO, info),
            (".text.k", 1, vec![0; 8]),
        ]);
        let ks = cubin_kernels(&d);
        assert_eq!(ks.len(), 1, "{ks:?}");
        assert_eq!(ks[0].name, "k");
        assert_eq!(
            ks[0].params,
            vec![Param { offset: 0, size: 1 }, Param { offset: 8, size: 4 }, Param { offset: 16, size: 8 }]
        );
        assert_eq!(ks[0].param_bytes, 24);
    }

    #[test]
    fn a_kernel_without_parameters_has_an_empty_layout_and_a_cut_table_stops_cleanly() {
        let mut cut = kparam(0, 0, 8);
        cut.truncate(7);
        let d = cubin(&[(".nv.info.none", SHT_CUDA_INFO, vec![3, 0x1b, 255, 0]), (".nv.info.cut", SHT_CUDA_INFO, cut)]);
        let ks = cubin_kernels(&d);
        assert_eq!(ks.len(), 2);
        assert_eq!((ks[0].params.len(), ks[0].param_bytes), (0, 0));
        assert_eq!((ks[1].params.len(), ks[1].param_bytes), (0, 0));
        // Every prefix of the image: no panic, and never more kernels than the whole has.
        for n in 0..d.len() {
            assert!(cubin_kernels(&d[..n]).len() <= 2);
        }
    }

    #[test]
    fn the_gpu_runs_the_newest_sass_it_can_else_the_newest_ptx() {
        let codes = [ArchCode::sass(80), ArchCode::sass(90), ArchCode::ptx(90), ArchCode::ptx(80)];
        assert_eq!(entry_for_gpu(&codes, 90), Some(1));
        assert_eq!(entry_for_gpu(&codes, 86), Some(0));
        assert_eq!(entry_for_gpu(&codes, 100), Some(2)); // no SASS for sm_100: the newest PTX
        assert_eq!(entry_for_gpu(&codes, 75), None);
        assert_eq!(entry_for_gpu(&[ArchCode::lto_ir(90)], 90), None);
    }

    #[test]
    fn fatbin_entries_are_listed_with_sizes_and_compression() {
        use crate::fuzzing::{fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_PTX};
        let ptx = b".version 8.0\n.target sm_90\n.address_size 64\n\0\0\0\0\0\0\0\0";
        let f = fatbin(&[fatbin_entry(FATBIN_KIND_PTX, 90, FATBIN_FLAGS_PLAIN, ptx, Packing::Plain)]);
        let c = contents(&f);
        assert_eq!(c.kind, CodeKind::Fatbin);
        assert_eq!(c.entries.len(), 1, "{c:?}");
        assert_eq!(c.entries[0].code, ArchCode::ptx(90));
        assert_eq!(c.entries[0].compression, Compression::None);
        assert_eq!(c.entries[0].code_bytes, c.entries[0].stored_bytes);
        for n in 0..f.len() {
            let _ = contents(&f[..n]);
        }
    }
}
