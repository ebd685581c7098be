//! Deep consistency checks of a cubin's ELF structure, beyond "every range is in bounds": the
//! string, symbol, relocation and `.nv.info` tables CUDA's loader walks must agree with each
//! other, since the loader trusts them (a mutated but in-bounds table can crash it).

/// One section header, as read from the image.
#[derive(Clone, Copy)]
struct Sh {
    name: u32,
    ty: u32,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHT_CUDA_INFO: u32 = 0x7000_0000;
const SHN_LORESERVE: u64 = 0xff00;

fn u16_at(d: &[u8], at: u64) -> Option<u16> {
    let at = usize::try_from(at).ok()?;
    Some(u16::from_le_bytes(d.get(at..at.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(d: &[u8], at: u64) -> Option<u32> {
    let at = usize::try_from(at).ok()?;
    Some(u32::from_le_bytes(d.get(at..at.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(d: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u64::from_le_bytes(d.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

fn body<'a>(d: &'a [u8], s: &Sh) -> Option<&'a [u8]> {
    let lo = usize::try_from(s.offset).ok()?;
    let hi = lo.checked_add(usize::try_from(s.size).ok()?)?;
    d.get(lo..hi)
}

fn bad(msg: String) -> Result<(), String> {
    Err(msg)
}

/// Check a cubin whose header, section table and section ranges were already found in bounds.
pub(crate) fn check(d: &[u8], shoff: u64, shentsize: u64, shnum: u64, shstrndx: u64) -> Result<(), String> {
    let trunc = || "section header table truncated".to_string();
    let mut secs = Vec::with_capacity(shnum.min(65536) as usize);
    for i in 0..shnum {
        let at = shoff.checked_add(i.checked_mul(shentsize).ok_or_else(trunc)?).ok_or_else(trunc)?;
        secs.push(Sh {
            name: u32_at(d, at).ok_or_else(trunc)?,
            ty: u32_at(d, at + 4).ok_or_else(trunc)?,
            offset: u64_at(d, at + 24).ok_or_else(trunc)?,
            size: u64_at(d, at + 32).ok_or_else(trunc)?,
            link: u32_at(d, at + 40).ok_or_else(trunc)?,
            info: u32_at(d, at + 44).ok_or_else(trunc)?,
            align: u64_at(d, at + 48).ok_or_else(trunc)?,
            entsize: u64_at(d, at + 56).ok_or_else(trunc)?,
        });
    }
    let n = secs.len() as u64;
    let strtab_ok = |idx: u64, what: &str| -> Result<u64, String> {
        let s = secs.get(idx as usize).filter(|_| idx < n).ok_or_else(|| format!("{what}: section {idx} does not exist"))?;
        if s.ty != SHT_STRTAB {
            return Err(format!("{what}: section {idx} is not a string table"));
        }
        let b = body(d, s).ok_or_else(|| format!("{what}: string table out of range"))?;
        if b.last().is_some_and(|&c| c != 0) {
            return Err(format!("{what}: string table {idx} is not NUL-terminated"));
        }
        Ok(s.size)
    };

    // Section names.
    if shstrndx != 0 {
        let names = strtab_ok(shstrndx, "section names")?;
        for (i, s) in secs.iter().enumerate().skip(1) {
            if u64::from(s.name) >= names.max(1) && !(names == 0 && s.name == 0) {
                return bad(format!("section {i}'s name offset {} is outside the name table ({names} bytes)", s.name));
            }
        }
    }
    for (i, s) in secs.iter().enumerate().skip(1) {
        if s.align > 1 && !s.align.is_power_of_two() {
            return bad(format!("section {i}'s alignment {} is not a power of two", s.align));
        }
        match s.ty {
            SHT_STRTAB => {
                strtab_ok(i as u64, "string table")?;
            }
            SHT_SYMTAB => check_symtab(d, &secs, i, &strtab_ok)?,
            SHT_RELA | SHT_REL => check_relocs(d, &secs, i)?,
            SHT_CUDA_INFO => check_nv_info(d, &secs, i)?,
            _ => {}
        }
    }
    Ok(())
}

fn check_symtab(d: &[u8], secs: &[Sh], i: usize, strtab_ok: &dyn Fn(u64, &str) -> Result<u64, String>) -> Result<(), String> {
    let s = &secs[i];
    if s.entsize != 24 || s.size % 24 != 0 {
        return bad(format!("symbol table {i}: entry size {} / size {} are not 24-byte symbols", s.entsize, s.size));
    }
    let names = strtab_ok(u64::from(s.link), "symbol names")?;
    let b = body(d, s).ok_or_else(|| format!("symbol table {i} out of range"))?;
    let n = secs.len() as u64;
    for (k, sym) in b.chunks_exact(24).enumerate() {
        let name = u64::from(u32_at(sym, 0).unwrap_or(u32::MAX));
        let shndx = u64::from(u16_at(sym, 6).unwrap_or(u16::MAX));
        if name != 0 && name >= names {
            return bad(format!("symbol {k}: name offset {name} is outside its string table ({names} bytes)"));
        }
        if shndx != 0 && shndx >= n && shndx < SHN_LORESERVE {
            return bad(format!("symbol {k}: section index {shndx} does not exist ({n} sections)"));
        }
    }
    Ok(())
}

fn check_relocs(d: &[u8], secs: &[Sh], i: usize) -> Result<(), String> {
    let s = &secs[i];
    let want = if s.ty == SHT_RELA { 24 } else { 16 };
    if s.entsize != want || s.size % want != 0 {
        return bad(format!("relocation section {i}: entry size {} / size {} are not {want}-byte entries", s.entsize, s.size));
    }
    let symtab = secs.get(s.link as usize).filter(|t| t.ty == SHT_SYMTAB).ok_or_else(|| {
        format!("relocation section {i}: its symbol table (section {}) is not a symbol table", s.link)
    })?;
    let nsyms = symtab.size / 24;
    let target = secs.get(s.info as usize).ok_or_else(|| format!("relocation section {i}: target section {} does not exist", s.info))?;
    let b = body(d, s).ok_or_else(|| format!("relocation section {i} out of range"))?;
    for (k, r) in b.chunks_exact(want as usize).enumerate() {
        let offset = u64_at(r, 0).unwrap_or(u64::MAX);
        let sym = u64_at(r, 8).unwrap_or(u64::MAX) >> 32;
        if sym >= nsyms {
            return bad(format!("relocation {k} of section {i}: symbol {sym} does not exist ({nsyms} symbols)"));
        }
        if target.ty != SHT_NOBITS && offset >= target.size {
            return bad(format!("relocation {k} of section {i}: offset {offset:#x} is outside its section ({} bytes)", target.size));
        }
    }
    Ok(())
}

/// `.nv.info*`: 4-byte records (format, attribute, 16-bit value); format 4 carries that many
/// bytes after the header. The records must tile the section exactly.
fn check_nv_info(d: &[u8], secs: &[Sh], i: usize) -> Result<(), String> {
    let s = &secs[i];
    let nsecs = secs.len() as u64;
    if s.link != 0 && u64::from(s.link) >= nsecs {
        return bad(format!(".nv.info section {i}: linked section {} does not exist", s.link));
    }
    if u64::from(s.info) >= nsecs {
        return bad(format!(".nv.info section {i}: the section it describes ({}) does not exist", s.info));
    }
    // Attributes whose payload starts with a symbol index (register count, frame and stack
    // sizes, parameter bank): the index must name a symbol of the linked table.
    let nsyms = secs.get(s.link as usize).filter(|t| t.ty == SHT_SYMTAB).map_or(u64::MAX, |t| t.size / 24);
    let b = body(d, s).ok_or_else(|| format!(".nv.info section {i} out of range"))?;
    let mut pos = 0usize;
    while pos < b.len() {
        let rec = b.get(pos..pos + 4).ok_or_else(|| format!(".nv.info section {i}: record at {pos} is cut short"))?;
        let len = match rec[0] {
            1..=3 => 4,
            4 => 4 + usize::from(u16::from_le_bytes([rec[2], rec[3]])),
            f => return bad(format!(".nv.info section {i}: record at {pos} has unknown format {f}")),
        };
        if rec[0] == 4 && matches!(rec[1], 0x0a | 0x11 | 0x12 | 0x23 | 0x2f) && len >= 8 {
            let sym = u64::from(u32_at(b, pos as u64 + 4).unwrap_or(u32::MAX));
            if sym >= nsyms {
                return bad(format!(".nv.info section {i}: attribute {:#x} names symbol {sym}, which does not exist ({nsyms} symbols)", rec[1]));
            }
        }
        pos = pos.checked_add(len).filter(|&p| p <= b.len()).ok_or_else(|| format!(".nv.info section {i}: record at {pos} runs past the section"))?;
    }
    Ok(())
}
