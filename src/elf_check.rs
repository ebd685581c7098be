//! Deep consistency checks of a cubin's ELF structure, beyond "every range is in bounds": the
//! string, symbol, relocation and `.nv.info` tables CUDA's loader walks must agree with each
//! other, since the loader trusts them (a mutated but in-bounds table can crash it).

/// One section header, as read from the image.
#[derive(Clone, Copy)]
struct Sh {
    name: u32,
    ty: u32,
    flags: u64,
    addr: u64,
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
const SHF_INFO_LINK: u64 = 0x40;

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
/// `extended`: the header's section count or name-table index overflowed into section 0.
pub(crate) fn check(d: &[u8], shoff: u64, shentsize: u64, shnum: u64, shstrndx: u64) -> Result<(), String> {
    let extended = u16_at(d, 60) == Some(0) || u16_at(d, 62) == Some(0xffff);
    let trunc = || "section header table truncated".to_string();
    let mut secs = Vec::with_capacity(shnum.min(65536) as usize);
    for i in 0..shnum {
        let at = shoff.checked_add(i.checked_mul(shentsize).ok_or_else(trunc)?).ok_or_else(trunc)?;
        secs.push(Sh {
            name: u32_at(d, at).ok_or_else(trunc)?,
            ty: u32_at(d, at + 4).ok_or_else(trunc)?,
            flags: u64_at(d, at + 8).ok_or_else(trunc)?,
            addr: u64_at(d, at + 16).ok_or_else(trunc)?,
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
        let s = secs
            .get(idx as usize)
            .filter(|_| idx < n)
            .ok_or_else(|| format!("{what}: section {idx} does not exist"))?;
        if s.ty != SHT_STRTAB {
            return Err(format!("{what}: section {idx} is not a string table"));
        }
        let b = body(d, s).ok_or_else(|| format!("{what}: string table out of range"))?;
        if b.last().is_some_and(|&c| c != 0) {
            return Err(format!("{what}: string table {idx} is not NUL-terminated"));
        }
        Ok(s.size)
    };

    // Section 0 is the null section: all zero, except that with extended numbering its size
    // and link carry the section count and the name-table index.
    if let Some(s0) = secs.first() {
        let nonzero = s0.name != 0 || s0.ty != 0 || s0.flags != 0 || s0.addr != 0 || s0.offset != 0 || s0.info != 0;
        if nonzero || s0.align != 0 || s0.entsize != 0 || (!extended && (s0.size != 0 || s0.link != 0)) {
            return bad("section 0 (the null section) is not empty".into());
        }
    }

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
        if s.flags & SHF_INFO_LINK != 0 && (s.info == 0 || u64::from(s.info) >= n) {
            return bad(format!("section {i} refers to section {}, which does not exist", s.info));
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
    check_text_symbols(d, &secs, shstrndx)?;
    Ok(())
}

fn cstr_at(b: &[u8], off: u64) -> &[u8] {
    let Some(rest) = usize::try_from(off).ok().and_then(|o| b.get(o..)) else { return &[] };
    &rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())]
}

/// Each `.text.<kernel>` section is defined by a symbol of that name (CUDA finds kernels and
/// their `.nv.info.<kernel>` / `.nv.constant0.<kernel>` companions by these names).
fn check_text_symbols(d: &[u8], secs: &[Sh], shstrndx: u64) -> Result<(), String> {
    let Some(names) = secs.get(shstrndx as usize).filter(|_| shstrndx != 0).and_then(|s| body(d, s)) else {
        return Ok(());
    };
    let Some((symtab, strtab)) = secs
        .iter()
        .find(|s| s.ty == SHT_SYMTAB)
        .and_then(|s| Some((body(d, s)?, body(d, secs.get(s.link as usize)?)?)))
    else {
        return Ok(());
    };
    // The kernel name of each .text section, once; then one pass over the symbols.
    let kernels: Vec<Option<&[u8]>> =
        secs.iter().map(|s| cstr_at(names, u64::from(s.name)).strip_prefix(b".text.")).collect();
    if kernels.iter().all(Option::is_none) {
        return Ok(());
    }
    let mut found = vec![false; secs.len()];
    for sym in symtab.chunks_exact(24) {
        let Some(i) = u16_at(sym, 6).map(usize::from).filter(|&i| i < secs.len()) else { continue };
        if let (false, Some(k)) = (found[i], kernels[i]) {
            // Compare in place: the symbol's name must be exactly the kernel name.
            let at = u32_at(sym, 0).map_or(usize::MAX, |v| v as usize);
            found[i] = strtab.get(at..).is_some_and(|t| t.starts_with(k) && t.get(k.len()) == Some(&0));
        }
    }
    for (i, k) in kernels.iter().enumerate() {
        if let (false, Some(kernel)) = (found[i], k) {
            return bad(format!("section {i} (.text.{}) has no symbol of that name", String::from_utf8_lossy(kernel)));
        }
    }
    Ok(())
}

fn check_symtab(
    d: &[u8],
    secs: &[Sh],
    i: usize,
    strtab_ok: &dyn Fn(u64, &str) -> Result<u64, String>,
) -> Result<(), String> {
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
        // A symbol defined in a section lies inside it.
        if shndx != 0 && shndx < n {
            let value = u64_at(sym, 8).unwrap_or(u64::MAX);
            let size = u64_at(sym, 16).unwrap_or(u64::MAX);
            let sec = &secs[shndx as usize];
            if value.checked_add(size).is_none_or(|end| end > sec.size) {
                return bad(format!(
                    "symbol {k}: [{value:#x}, +{size:#x}) lies outside its section {shndx} ({} bytes)",
                    sec.size
                ));
            }
        }
    }
    Ok(())
}

fn check_relocs(d: &[u8], secs: &[Sh], i: usize) -> Result<(), String> {
    let s = &secs[i];
    let want = if s.ty == SHT_RELA { 24 } else { 16 };
    if s.entsize != want || s.size % want != 0 {
        return bad(format!(
            "relocation section {i}: entry size {} / size {} are not {want}-byte entries",
            s.entsize, s.size
        ));
    }
    let symtab = secs.get(s.link as usize).filter(|t| t.ty == SHT_SYMTAB).ok_or_else(|| {
        format!("relocation section {i}: its symbol table (section {}) is not a symbol table", s.link)
    })?;
    let nsyms = symtab.size / 24;
    let target = secs
        .get(s.info as usize)
        .ok_or_else(|| format!("relocation section {i}: target section {} does not exist", s.info))?;
    let b = body(d, s).ok_or_else(|| format!("relocation section {i} out of range"))?;
    for (k, r) in b.chunks_exact(want as usize).enumerate() {
        let offset = u64_at(r, 0).unwrap_or(u64::MAX);
        let sym = u64_at(r, 8).unwrap_or(u64::MAX) >> 32;
        if sym >= nsyms {
            return bad(format!("relocation {k} of section {i}: symbol {sym} does not exist ({nsyms} symbols)"));
        }
        if target.ty != SHT_NOBITS && offset >= target.size {
            return bad(format!(
                "relocation {k} of section {i}: offset {offset:#x} is outside its section ({} bytes)",
                target.size
            ));
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
                return bad(format!(
                    ".nv.info section {i}: attribute {:#x} names symbol {sym}, which does not exist ({nsyms} symbols)",
                    rec[1]
                ));
            }
        }
        pos = pos
            .checked_add(len)
            .filter(|&p| p <= b.len())
            .ok_or_else(|| format!(".nv.info section {i}: record at {pos} runs past the section"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::image::{inspect, CodeKind};

    /// A real cubin from the pinned nvcc (built once per test process).
    fn cubin() -> Vec<u8> {
        static C: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        C.get_or_init(|| {
            let root = std::path::PathBuf::from(env!("CUDYN_CUDA_ROOT"));
            let nvcc = root.join("bin/nvcc");
            assert!(nvcc.exists(), "nvcc not found under {} (run scripts/bootstrap.sh)", root.display());
            let dir = std::env::temp_dir().join(format!("cudyn-elfcheck-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let src = dir.join("k.cu");
            std::fs::write(&src, "extern \"C\" __global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2.0f; }\n__device__ int g;\nextern \"C\" __global__ void k2(int *y) { y[0] = g; }\n").unwrap();
            let out = dir.join("k.cubin");
            let st = std::process::Command::new(nvcc).args(["-cubin", "-arch=sm_90", "-o"]).arg(&out).arg(&src).status().unwrap();
            assert!(st.success());
            let b = std::fs::read(&out).unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            b
        })
        .clone()
    }

    fn u64_at(b: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
    }
    fn shdr(b: &[u8], i: usize) -> usize {
        u64_at(b, 40) as usize + 64 * i
    }
    fn shnum(b: &[u8]) -> usize {
        u16::from_le_bytes([b[60], b[61]]) as usize
    }
    fn sec_type(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[shdr(b, i) + 4..shdr(b, i) + 8].try_into().unwrap())
    }
    fn refused(b: &[u8], why: &str) {
        match inspect(b) {
            Err(e) => assert!(e.to_string().contains(why), "refused, but for {e} (expected '{why}')"),
            Ok(i) => panic!("accepted a corrupted cubin ({:?}); expected '{why}'", i.kind),
        }
    }

    #[test]
    fn the_real_cubin_passes() {
        assert_eq!(inspect(&cubin()).unwrap().kind, CodeKind::Cubin);
    }

    // Each case below is a corruption that crashed CUDA's loader on the H200 (mutants.cpp).
    #[test]
    fn null_section_must_be_empty() {
        let mut b = cubin();
        let s0 = shdr(&b, 0);
        b[s0 + 24] = 1; // sh_offset
        refused(&b, "null section");
        let mut b = cubin();
        b[s0] = 7; // sh_name
        refused(&b, "null section");
    }

    #[test]
    fn info_links_must_name_a_section() {
        let mut b = cubin();
        let i =
            (1..shnum(&b)).find(|&i| u64_at(&b, shdr(&b, i) + 8) & 0x40 != 0).expect("a section with SHF_INFO_LINK");
        let at = shdr(&b, i) + 44;
        b[at..at + 4].copy_from_slice(&0x2016u32.to_le_bytes());
        refused(&b, "does not exist");
    }

    #[test]
    fn section_names_stay_in_the_name_table() {
        let mut b = cubin();
        let at = shdr(&b, 3);
        b[at..at + 4].copy_from_slice(&0x10000u32.to_le_bytes());
        refused(&b, "outside the name table");
    }

    #[test]
    fn symbol_tables_are_whole_and_consistent() {
        let sym = (1..shnum(&cubin())).find(|&i| sec_type(&cubin(), i) == 2).unwrap();
        let mut b = cubin();
        let at = shdr(&b, sym) + 32; // sh_size
        let size = u64_at(&b, at);
        b[at..at + 8].copy_from_slice(&(size - 5).to_le_bytes());
        refused(&b, "24-byte symbols");
        // A symbol's section index that does not exist.
        let mut b = cubin();
        let off = u64_at(&b, shdr(&b, sym) + 24) as usize + 24 * 2;
        b[off + 6..off + 8].copy_from_slice(&0x9000u16.to_le_bytes());
        refused(&b, "does not exist");
    }

    #[test]
    fn text_sections_need_their_kernel_symbol() {
        let mut b = cubin();
        let sym = (1..shnum(&b)).find(|&i| sec_type(&b, i) == 2).unwrap();
        let strtab = u32::from_le_bytes(b[shdr(&b, sym) + 40..shdr(&b, sym) + 44].try_into().unwrap()) as usize;
        let (off, size) = (u64_at(&b, shdr(&b, strtab) + 24) as usize, u64_at(&b, shdr(&b, strtab) + 32) as usize);
        // Rename the kernel "k2" in the symbol names: its .text.k2 section loses its symbol.
        let pos = b[off..off + size].windows(4).position(|w| w == b"\0k2\0").expect("k2 in the string table") + off;
        b[pos + 2] = b'9';
        refused(&b, "has no symbol of that name");
    }
}
