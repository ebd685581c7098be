//! LTO-IR (NVVM IR written by NVRTC `-dlto` and `nvcc -ltoir -dlto`, which needs nvJitLink
//! before it can run): the 24-byte header and its attribute table are bounds-checked and the
//! architecture is read from it. [`inspect_lto_ir`] is the entry point; LTO-IR inside a fatbin
//! entry is opaque and never reaches it.

// The format, as relied on here (all little-endian):
//
// * LTO-IR (NVVM IR as written by NVRTC `-dlto` and `nvcc -ltoir -dlto`, and inside fatbin kind-8
//   entries): magic bytes ED 43 4E 7F (u32 0x7F4E43ED). The 24-byte header has at 12 a u16 offset
//   of a table of (u16 tag, u16 value) pairs that ends at the u32 offset at 16 (terminator tag
//   0x63); tag 1 holds the arch as major*100+minor*10 (900 = sm_90), tag 0x20 value 1 marks 'a'.
//   The header records no total size, so `len` is the slice length.

use super::info::{ArchCode, ArchVariant, CodeKind, ImageError, ImageInfo};
use super::read::{check_range, field_u16, field_u32, read_u16, to_usize};

pub(super) const LTOIR_MAGIC: u32 = 0x7F4E_43ED;
const LTOIR_HEADER_LEN: u64 = 24;
const LTOIR_TAG_ARCH: u16 = 0x01;
const LTOIR_TAG_ARCH_SPECIFIC: u16 = 0x20;
const LTOIR_TAG_END: u16 = 0x63;

pub(super) fn inspect_lto_ir(d: &[u8]) -> Result<ImageInfo, ImageError> {
    const WHAT: &str = "the LTO-IR header";
    check_range(d, 0, LTOIR_HEADER_LEN, WHAT)?;
    let table = field_u16(d, 0, 12, WHAT)?;
    let table_end = u64::from(field_u32(d, 0, 16, WHAT)?);
    let body = u64::from(field_u32(d, 0, 20, WHAT)?);
    check_range(d, 0, table_end, "the LTO-IR attribute table")?;
    check_range(d, 0, body, "the LTO-IR body")?;

    let mut sm = None;
    let mut variant = ArchVariant::None;
    let mut at = usize::from(table);
    let end = to_usize(table_end, WHAT)?;
    while at.saturating_add(4) <= end {
        let (Some(tag), Some(value)) = (read_u16(d, at), read_u16(d, at.saturating_add(2))) else {
            break;
        };
        match tag {
            LTOIR_TAG_END => break,
            LTOIR_TAG_ARCH if value >= 100 && value % 10 == 0 => sm = Some(u32::from(value) / 10),
            LTOIR_TAG_ARCH_SPECIFIC if value == 1 => variant = ArchVariant::A,
            _ => {}
        }
        at = at.saturating_add(4);
    }
    let codes = sm.map(|sm| vec![ArchCode::LtoIr { sm, variant }]).unwrap_or_default();
    Ok(ImageInfo { kind: CodeKind::LtoIr, len: d.len(), codes, compressed: false, ptx_isa: None })
}
