//! Cubins (CUDA ELF files): the 64-byte ELF header, the program header table and the section
//! header table are bounds-checked and held to what toolkits write, and the SM architecture
//! and its 'a' variant are read from e_flags; the walk over the sections' contents and the
//! cross-table checks are in [`sections`]. [`inspect_cubin`] is the entry point, used for a
//! bare cubin and for each ELF entry of a fatbin.

// The format, as relied on here (all little-endian):
//
// * Cubin: an ELF64 little-endian file (`\x7fELF`, EI_CLASS=2, EI_DATA=1) with e_machine (u16 at
//   18) == 190 (EM_CUDA). Checked: the 64-byte header, e_phoff/e_phnum/e_phentsize (u64 at 32,
//   u16 at 56/54) and e_shoff/e_shnum/e_shentsize (u64 at 40, u16 at 60/58, with the ELF
//   "extended numbering" escape through section 0), e_shstrndx (u16 at 62), and every section's
//   sh_offset+sh_size (u64 at +24/+32 of its 64-byte header; NOBITS excluded) and every segment's
//   p_offset+p_filesz (u64 at +8/+32 of its 56-byte header). `len` is the furthest of all those
//   ends. The SM is in e_flags (u32 at 48), laid out by the ELF ABI version byte (EI_ABIVERSION,
//   byte 8): for version >= 8 (CUDA 13 ptxas) the SM is bits 8..15 and bit 3 (0x8) marks the
//   arch-specific 'a' variant (e.g. 0x06005a04 = sm_90); for older versions the SM is the low byte
//   and bit 11 (0x800) marks 'a' (e.g. 0x005a0d5a = sm_90a). ptxas 13.0 does not set either 'a'
//   bit for sm_90a/sm_100a/sm_120a; it records 'a' in the `.nv.compat` section (sh_type
//   0x70000086) as attribute 0x09 with value 1 (records of u8 format, u8 attribute, then a u16
//   value for formats 1..3 or a u16 length and that many bytes for format 4), which is read too.
//   A family-specific ('f') cubin is byte-for-byte a plain one, so bare cubins never report F.
//   The header words that are no offset or size are held to what toolkits write
//   (`check_elf_header_words`; the table in docs/hardening.md lists every field).

mod sections;

use super::info::{ArchVariant, ImageError};
use super::read::{check_range, field_u16, field_u32, field_u64, overflow, short, to_usize, Rec};
use sections::Sections;

pub(super) const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
pub(super) const EM_CUDA: u16 = 190;
const ELF64_HEADER_LEN: u64 = 64;
const ELF64_SHDR_LEN: u64 = 64;
const ELF64_PHDR_LEN: u64 = 56;
const ET_REL: u16 = 1;
const ET_EXEC: u16 = 2;
const PT_LOAD: u32 = 1;
const PT_PHDR: u32 = 6;
const SHN_XINDEX: u16 = 0xffff;
/// e_flags bit for 'a' when EI_ABIVERSION >= 8 (EF_CUDA_ACCELERATORS).
const EF_CUDA_ACCELERATORS_V2: u32 = 0x8;
/// e_flags bit for 'a' when EI_ABIVERSION < 8 (EF_CUDA_ACCELERATORS_V1).
const EF_CUDA_ACCELERATORS_V1: u32 = 0x800;

pub(super) struct CubinInfo {
    pub(super) len: usize,
    pub(super) sm: u32,
    pub(super) variant: ArchVariant,
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn inspect_cubin(d: &[u8]) -> Result<CubinInfo, ImageError> {
    const WHAT: &str = "the ELF header";
    if (d.len() as u64) < 20 {
        return Err(short(WHAT, ELF64_HEADER_LEN, d));
    }
    let machine = field_u16(d, 0, 18, WHAT)?;
    if machine != EM_CUDA {
        let name = match machine {
            3 => " (x86)",
            62 => " (x86-64)",
            40 => " (ARM)",
            183 => " (AArch64)",
            243 => " (RISC-V)",
            _ => "",
        };
        return Err(ImageError::Malformed(cold_format!(
            "ELF file for machine {machine}{name}, not EM_CUDA ({EM_CUDA}): not a cubin (host \
             objects with an embedded fatbin are not accepted; pass the fatbin itself)"
        )));
    }
    match d.get(4) {
        Some(2) => {}
        Some(1) => {
            return Err(ImageError::Malformed("32-bit (ELFCLASS32) cubin: only 64-bit cubins are supported".into()))
        }
        other => {
            return Err(ImageError::Malformed(cold_format!("ELF class byte is {other:?}, expected 2 (ELFCLASS64)")))
        }
    }
    if d.get(5) != Some(&1) {
        return Err(ImageError::Malformed("big-endian or unknown-endian ELF: cubins are little-endian".into()));
    }
    let mut len = check_range(d, 0, ELF64_HEADER_LEN, WHAT)?;
    // The 64-byte header is there: its fields are read without further checks.
    let h = Rec::<64>::at(d, 0).ok_or_else(|| short(WHAT, ELF64_HEADER_LEN, d))?;
    let abi_version = h.u8::<8>();
    let flags = h.u32::<48>();
    check_elf_header_words(h)?;
    let ehsize = u64::from(h.u16::<52>());
    len = len.max(check_range(d, 0, ehsize, WHAT)?);

    // Program headers.
    let phoff = h.u64::<32>();
    let phentsize = h.u16::<54>();
    let phnum = u64::from(h.u16::<56>());
    if phnum > 0 {
        const TABLE: &str = "the ELF program header table";
        if u64::from(phentsize) != ELF64_PHDR_LEN {
            return Err(ImageError::Malformed(cold_format!(
                "ELF program header entry size e_phentsize is {phentsize}, not {ELF64_PHDR_LEN}"
            )));
        }
        let size = phnum.checked_mul(u64::from(phentsize)).ok_or_else(|| overflow(TABLE))?;
        let end = check_range(d, phoff, size, TABLE)?;
        len = len.max(end);
        // The whole table is in bounds (just checked), and each of its `phnum` entries is
        // `phentsize` >= 56 bytes: every entry yields a header, read without further checks.
        let table = d.get(to_usize(phoff, TABLE)?..to_usize(end, TABLE)?).ok_or_else(|| short(TABLE, end, d))?;
        const PHDR: usize = ELF64_PHDR_LEN as usize;
        for p in table.chunks_exact(usize::from(phentsize)).filter_map(|p| Rec::<PHDR>::at(p, 0)) {
            let p_offset = p.u64::<8>();
            let p_filesz = p.u64::<32>();
            // Every cubin's segments: PT_LOAD or PT_PHDR, permission flags only, at address 0,
            // aligned to a power of two, and at least as large in memory as in the file but for
            // padding of at most that alignment: nvcc up to CUDA 10.2 padded a segment's file
            // bytes by 1 to 8 past its memory size (0x63 and 0x68, 0x8 and 0x10, alignment 8:
            // the Kepler code of PyTorch 1.7.1, TensorFlow 1.15 and 2.3, MXNet 1.5).
            let (p_type, p_flags, p_memsz, p_align) = (p.u32::<0>(), p.u32::<4>(), p.u64::<40>(), p.u64::<48>());
            let bad_segment = !matches!(p_type, PT_LOAD | PT_PHDR)
                || p_flags & !7 != 0
                || p.u64::<16>() != 0
                || p.u64::<24>() != 0
                || p_filesz > p_memsz.saturating_add(if p_align > 1 { p_align } else { 0 })
                || p_align & p_align.wrapping_sub(1) != 0;
            if bad_segment {
                return Err(ImageError::Malformed(cold_format!(
                    "ELF segment of type {p_type:#x}, flags {p_flags:#x}, file size {p_filesz:#x}, memory size {p_memsz:#x}, alignment {p_align:#x} at address {:#x} is not one a cubin has",
                    p.u64::<16>()
                )));
            }
            if p_filesz > 0 {
                len = len.max(check_range(d, p_offset, p_filesz, "an ELF segment's contents")?);
            }
        }
    } else if phoff != 0 && phoff.checked_add(ELF64_PHDR_LEN).is_none_or(|end| end > d.len() as u64) {
        // No program header table, and e_phoff not 0 (as in every one of the 2,442 such cubins
        // of 13 NVIDIA wheels) but where no entry fits in the image: CUDA's loader reads there
        // all the same (it crashed on the H200 for e_phoff 2^32, 2^62 and 2^63; within the
        // image, or a page past its end, it loaded).
        return Err(ImageError::Malformed(cold_format!(
            "ELF header has no program headers (e_phnum = 0) but its e_phoff {phoff:#x} points past the image ({} bytes): CUDA's loader reads there",
            d.len()
        )));
    }

    // Section headers.
    let shoff = h.u64::<40>();
    let shentsize = u64::from(h.u16::<58>());
    let e_shnum = h.u16::<60>();
    let e_shstrndx = h.u16::<62>();
    let mut shnum = u64::from(e_shnum);
    let mut shstrndx = u64::from(e_shstrndx);
    let (sm, accel) = if abi_version >= 8 {
        ((flags >> 8) & 0xff, flags & EF_CUDA_ACCELERATORS_V2 != 0)
    } else {
        (flags & 0xff, flags & EF_CUDA_ACCELERATORS_V1 != 0)
    };
    // CUDA's loader finds kernels, their parameters and their code through the section table:
    // every toolkit writes one (all 76,860 distinct cubins of NVIDIA's wheels, bare and in
    // fatbins), and a cubin cut at a section boundary with e_shnum and e_phnum set to 0
    // crashed CUDA's loader on the H200 (issue 21's independent mutation generator).
    if shoff == 0 {
        return Err(ImageError::Malformed(if shnum != 0 {
            cold_format!("ELF header lists {shnum} sections but no section header table (e_shoff = 0)")
        } else {
            "cubin has no section header table (e_shoff = 0): CUDA finds its kernels through it".to_string()
        }));
    }
    const TABLE: &str = "the ELF section header table";
    if shentsize != ELF64_SHDR_LEN {
        return Err(ImageError::Malformed(cold_format!(
            "ELF section header entry size e_shentsize is {shentsize}, not {ELF64_SHDR_LEN}"
        )));
    }
    // Section 0 first: it carries the real count / string table index when they overflow
    // the header's 16-bit fields.
    check_range(d, shoff, shentsize, TABLE)?;
    let sec0 = to_usize(shoff, TABLE)?;
    if shnum == 0 {
        shnum = field_u64(d, sec0, 32, TABLE)?;
        if shnum == 0 {
            return Err(ImageError::Malformed("ELF has a section header table but zero sections".into()));
        }
    }
    if shstrndx == u64::from(SHN_XINDEX) {
        shstrndx = u64::from(field_u32(d, sec0, 40, TABLE)?);
    }
    let size = shnum.checked_mul(shentsize).ok_or_else(|| overflow(TABLE))?;
    len = len.max(check_range(d, shoff, size, TABLE)?);
    // Every toolkit writes a section name table, and CUDA's loader finds sections by name:
    // on the H200 a cubin whose e_shstrndx was 0 (none) crashed it (structured campaign).
    if shstrndx == 0 {
        return Err(ImageError::Malformed("ELF header names no section name table (e_shstrndx = 0)".into()));
    }
    if shstrndx >= shnum {
        return Err(ImageError::Malformed(cold_format!(
            "ELF section name table index {shstrndx} is out of range ({shnum} sections)"
        )));
    }
    // The whole table is in bounds (just checked): from here its headers are read without
    // further checks, and sections.rs reads the same table.
    let secs = Sections::new(d, shoff, h.u16::<58>(), shnum)
        .ok_or_else(|| ImageError::Malformed("section header table truncated".into()))?;
    // One walk over the table: every section's contents in bounds, then the consistency of
    // the tables CUDA's loader walks (sections.rs).
    let extended = e_shnum == 0 || e_shstrndx == SHN_XINDEX;
    let walk = sections::check(d, secs, shstrndx, extended, sm)?;
    len = len.max(walk.end);
    let arch_specific_compat = walk.arch_specific;

    if sm < 10 {
        return Err(ImageError::Malformed(cold_format!(
            "cubin e_flags {flags:#x} (ELF ABI version {abi_version}) name no SM architecture"
        )));
    }
    check_e_flags(flags, abi_version)?;
    let variant = if accel || arch_specific_compat { ArchVariant::A } else { ArchVariant::None };
    Ok(CubinInfo { len: to_usize(len, WHAT)?, sm, variant })
}

/// The ELF header's words that no offset or size check covers, against what toolkits write
/// (nvcc 13: OS ABI 0x41, ABI version 8; NVIDIA's CUDA 12 libraries: OS ABI 0x33, ABI version
/// 7): the identification bytes, the type (executable, or relocatable for -rdc), a version,
/// no entry point, a 64-byte header.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_elf_header_words(h: Rec<'_, 64>) -> Result<(), ImageError> {
    let bad = |what: String| Err(ImageError::Malformed(cold_format!("ELF header: {what}")));
    let ident = h.bytes::<6, 10>();
    if ident[0] != 1 {
        return bad(cold_format!("identification version is {}, not 1", ident[0]));
    }
    if !matches!(ident[1], 0x33 | 0x41) {
        return bad(cold_format!("OS ABI is {:#x}, not a CUDA one (0x33, 0x41)", ident[1]));
    }
    if !matches!(ident[2], 7 | 8) {
        return bad(cold_format!("ABI version is {}, not 7 or 8", ident[2]));
    }
    if ident[3..].iter().any(|&b| b != 0) {
        return bad("identification padding (bytes 9..16) is not zero".into());
    }
    let (e_type, e_version, e_entry, e_ehsize) = (h.u16::<16>(), h.u32::<20>(), h.u64::<24>(), h.u16::<52>());
    if !matches!(e_type, ET_REL | ET_EXEC) {
        return bad(cold_format!("type e_type is {e_type}, not executable (2) or relocatable (1)"));
    }
    // ABI 8 cubins write 1; ABI 7 ones the CUDA release that built them (75 to 130 in NVIDIA's
    // wheels: 7.5 to 13.0), which no table can pin: the field is a version, not an offset or a
    // size, so only EV_NONE (0, no version: not an ELF file) is refused.
    if e_version == 0 {
        return bad("version e_version is 0 (EV_NONE)".into());
    }
    if e_entry != 0 {
        return bad(cold_format!("entry point e_entry is {e_entry:#x}, not 0"));
    }
    if u64::from(e_ehsize) != ELF64_HEADER_LEN {
        return bad(cold_format!("header size e_ehsize is {e_ehsize}, not {ELF64_HEADER_LEN}"));
    }
    Ok(())
}

/// e_flags: the SM (read by the caller) and flag bits. The flag bytes CUDA's loader acts on hold
/// only the bits toolkits write: on the H200 a cubin whose e_flags gained bit 0 crashed CUDA's
/// loader (structured campaign, 2026-12-01). ABI version 8: bits 0x2/0x4 (and 0x8,
/// accelerators) in byte 0, the SM in byte 1, byte 2 zero; byte 3 is not checked, as its values
/// vary over the whole byte in NVIDIA's wheels (0x05-0x07 from nvcc, and 19 other values up to
/// 0xff in cuBLASLt and cuDNN, among 39,019 ABI 8 cubins). ABI version 7: the SM in byte 0, bits
/// 0x1/0x4 (and 0x8) in byte 1, in byte 2 a virtual SM (an SM number, 10 or more; cuBLAS 12.1
/// builds sm_50 code from compute_60, so it is not bounded by the SM), byte 3 zero.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_e_flags(flags: u32, abi_version: u8) -> Result<(), ImageError> {
    let [b0, b1, b2, b3] = flags.to_le_bytes();
    let ok = if abi_version >= 8 { b0 & !0x0e == 0 && b2 == 0 } else { b1 & !0x0d == 0 && b2 >= 10 && b3 == 0 };
    if ok {
        Ok(())
    } else {
        Err(ImageError::Malformed(cold_format!(
            "cubin e_flags {flags:#x} (ELF ABI version {abi_version}) hold bits no toolkit writes"
        )))
    }
}
