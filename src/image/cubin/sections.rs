//! The walk over a cubin's section table: every section's contents within the image, and deep
//! consistency checks beyond that: the string, symbol, relocation and `.nv.info` tables CUDA's
//! loader walks must agree with each other, since the loader trusts them (a mutated but
//! in-bounds table can crash it).
//!
//! This runs on every image load, so it is written to be cheap: each table is bounds-checked once
//! as a whole (the section header table by `inspect_cubin` in cubin/mod.rs, each section's contents by its
//! range), then its fixed-size records are read through [`Rec`], whose field offsets are
//! checked at compile time. The section headers are walked once by a loop that calls nothing
//! (`check_headers`), each table by a loop of its own. Nothing is allocated (below 1025
//! sections) or formatted unless an image is refused: the messages of the checks made in loops
//! are built by the out-of-line `err_*` functions at the end, which take their values by value,
//! so the loops keep those values in registers.

use crate::image::info::ImageError;
use crate::image::read::{check_range, Rec};

/// Bytes of an ELF64 section header (`e_shentsize` may be larger; the rest is not read).
const SHDR_LEN: usize = 64;
/// Bytes of an ELF64 symbol.
const SYM_LEN: usize = 24;
/// The part of a relocation read here (`r_offset`, `r_info`), common to REL (16) and RELA (24).
const REL_READ_LEN: usize = 16;

const SHT_NULL: u32 = 0;
const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHT_NOTE: u32 = 7;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHT_CUDA_INFO: u32 = 0x7000_0000;
/// `.nv.callgraph`: (caller, callee) pairs of 32-bit symbol indices.
const SHT_CUDA_CALLGRAPH: u32 = 0x7000_0001;
/// `.nv.shared.<kernel>` (and `.nv_debug.shared`) in some toolkits' cubins instead of NOBITS:
/// shared memory, with no bytes in the file (its sh_offset + sh_size runs past the image in 50
/// cubins of NCCL 2.20 and DALI 2.4, which CUDA loads).
const SHT_CUDA_SHARED: u32 = 0x7000_000a;
/// `.nv.shared.reserved.<n>`: shared memory the driver reserves.
const SHT_CUDA_SHARED_RESERVED: u32 = 0x7000_0015;
/// `.nv.global` of this type instead of NOBITS: global memory the driver allocates and zeroes,
/// with no bytes in the file (cuDensityMat 0.7's cubins, sm_75 to sm_120, place a 128 KiB one at
/// an offset of a 1.4-3 KB cubin; CUDA loads them).
const SHT_CUDA_GLOBAL: u32 = 0x7000_0007;
/// A second table of 24-byte symbols in newer cubins (`.nv.merc.symtab`, linked from type
/// 0x7000_0016 sections); like a symbol table, its sh_info is one past its last local symbol.
const SHT_CUDA_SYMBOLS: u32 = 0x7000_0085;
const SHN_LORESERVE: u64 = 0xff00;
const SHF_INFO_LINK: u64 = 0x40;
const SHF_EXECINSTR: u64 = 0x4;
const SHF_ALLOC: u64 = 0x2;
/// A symbol's bindings (st_info's high nibble): local, global and weak, the only ones in
/// NVIDIA's wheels; 3 to 15 are reserved.
const STB_LOCAL: u8 = 0;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
/// A symbol's type (st_info's low nibble) for a function.
const STT_FUNC: u8 = 2;
/// e_type of a relocatable object (`-rdc` device code not yet linked).
const ET_REL: u16 = 1;
/// Functions device code may call without defining them: the driver supplies them at load.
const DRIVER_PROVIDED: [&[u8]; 4] = [b"vprintf", b"__assertfail", b"malloc", b"free"];
/// The sh_flags bits toolkits write: WRITE, ALLOC, EXECINSTR, MERGE, STRINGS, INFO_LINK, and the
/// OS/processor-specific range NVIDIA uses (0x100000, 0x1000000, 0x2000000, 0x10000000 seen in
/// nvcc 12.x/13.0 output and in the nvJPEG and cuRAND wheels' fatbins). Anything else is refused:
/// on the H200 a .text section whose flags gained bit 55 crashed CUDA's loader (through both
/// APIs, in the structured campaign).
const SHF_KNOWN: u64 = 0x1 | 0x2 | 0x4 | 0x10 | 0x20 | SHF_INFO_LINK | 0xfff0_0000;
/// The 64-bit data relocation.
const R_CUDA_64: u32 = 2;
/// Relocation types index the loader's table of relocation kinds: 1 to 115 in NVIDIA's wheels
/// (and 0x1_0001 to 0x1_003d in the `.nv.merc` relocation sections, which are not checked
/// here). A type past this bound is no kind any table holds (type 0xffffffff crashed CUDA's
/// loader on the H200: issue 21).
const R_CUDA_TYPE_LIMIT: u32 = 0x100;
/// `.nv.callgraph` entries at and above this are markers (0xfffffffc to 0xffffffff), not symbols.
const CALLGRAPH_MARKER_MIN: u32 = 0xffff_fffc;
/// The `.nv.callgraph` markers that open the list of call edges and that of indirect calls'
/// possible callees: lists of (caller, callee) pairs.
const CALLGRAPH_EDGES: u32 = 0xffff_ffff;
const CALLGRAPH_INDIRECT_CALLEES: u32 = 0xffff_fffc;
/// Note type of `.note.nv.tkinfo` (the tools that built the cubin), named "NVIDIA Corp".
const NOTE_NV_TKINFO: u32 = 2000;
/// The CUDA `.nv.compat` section type (SHT_LOPROC + 0x86), found empirically.
const SHT_CUDA_COMPAT: u32 = 0x7000_0086;
/// `.nv.compat` attribute whose value 1 marks arch-specific ('a') code, found empirically.
const COMPAT_ATTR_ARCH_SPECIFIC: u8 = 0x09;

/// One section header, in place in the image: each field is read where it is used (one load),
/// so walking the table copies nothing.
#[derive(Clone, Copy)]
struct Sh<'a>(Rec<'a, SHDR_LEN>);

impl Sh<'_> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn name(self) -> u32 {
        self.0.u32::<0>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn ty(self) -> u32 {
        self.0.u32::<4>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn flags(self) -> u64 {
        self.0.u64::<8>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn addr(self) -> u64 {
        self.0.u64::<16>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn offset(self) -> u64 {
        self.0.u64::<24>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn size(self) -> u64 {
        self.0.u64::<32>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn link(self) -> u32 {
        self.0.u32::<40>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn info(self) -> u32 {
        self.0.u32::<44>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn align(self) -> u64 {
        self.0.u64::<48>()
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn entsize(self) -> u64 {
        self.0.u64::<56>()
    }

    /// The section's contents, if `sh_offset + sh_size` lies within `d`.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn body(self, d: &[u8]) -> Option<&[u8]> {
        let lo = usize::try_from(self.offset()).ok()?;
        let hi = lo.checked_add(usize::try_from(self.size()).ok()?)?;
        d.get(lo..hi)
    }
}

/// The section header table, bounds-checked as a whole once: `count` headers, `entsize` (>= 64)
/// bytes apart.
#[derive(Clone, Copy)]
pub(super) struct Sections<'a> {
    table: &'a [u8],
    /// 16 bits, as in the ELF header: the product with a 16- or 32-bit index cannot overflow,
    /// which lets the compiler drop that check.
    entsize: u16,
    count: usize,
}

impl<'a> Sections<'a> {
    /// The table of `shnum` headers of `shentsize` bytes at `shoff`; None unless all of it lies
    /// within `d` and an entry can hold a header.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub(super) fn new(d: &'a [u8], shoff: u64, shentsize: u16, shnum: u64) -> Option<Self> {
        if usize::from(shentsize) < SHDR_LEN {
            return None;
        }
        let count = usize::try_from(shnum).ok()?;
        let lo = usize::try_from(shoff).ok()?;
        let hi = lo.checked_add(count.checked_mul(usize::from(shentsize))?)?;
        Some(Sections { table: d.get(lo..hi)?, entsize: shentsize, count })
    }

    /// How many sections there are.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn count(self) -> usize {
        self.count
    }

    /// Section `i`'s header; None when there is no section `i`.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn get(self, i: usize) -> Option<Sh<'a>> {
        Rec::at(self.table, i.checked_mul(usize::from(self.entsize))?).map(Sh)
    }

    /// Every section header, in index order.
    fn iter(self) -> impl Iterator<Item = Sh<'a>> {
        // Each chunk is `entsize >= SHDR_LEN` bytes (`new`), so `Rec::at` never drops one.
        self.table.chunks_exact(usize::from(self.entsize)).filter_map(|h| Rec::at(h, 0)).map(Sh)
    }
}

/// The whole `N`-byte records in `b`, in order (a partial one at the end is not a record).
fn records<const N: usize>(b: &[u8]) -> impl Iterator<Item = Rec<'_, N>> {
    // chunks_exact yields only whole N-byte chunks, so `Rec::at` never drops one.
    b.chunks_exact(N).filter_map(|r| Rec::at(r, 0))
}

/// A set of section indices, one bit each, in words the caller provides: on the stack for up
/// to 1024 sections (cubins have tens), else on the heap.
struct SectionSet<'w>(&'w mut [u64]);

impl<'w> SectionSet<'w> {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn new(small: &'w mut [u64; 16], large: &'w mut Vec<u64>, sections: usize) -> Self {
        let words = sections.div_ceil(64);
        match small.get_mut(..words) {
            Some(w) => SectionSet(w),
            None => {
                large.resize(words, 0);
                SectionSet(large)
            }
        }
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn insert(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn remove(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
    }
    /// The smallest index in the set.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn first(&self) -> Option<usize> {
        self.first_from(0)
    }
    /// The smallest index in the set that is `from` or more.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn first_from(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = *self.0.get(w)? & (u64::MAX << (from % 64));
        while bits == 0 {
            w += 1;
            bits = *self.0.get(w)?;
        }
        Some(w * 64 + bits.trailing_zeros() as usize)
    }
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn bad(msg: String) -> Result<(), String> {
    Err(msg)
}

/// Whether sections of type `ty` have their contents in the file: all but the null section,
/// NOBITS, shared memory (`SHT_CUDA_SHARED`) and uninitialised global memory
/// (`SHT_CUDA_GLOBAL`), whose sh_offset and sh_size only place it.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn has_file_bytes(ty: u32) -> bool {
    !matches!(ty, SHT_NULL | SHT_NOBITS | SHT_CUDA_SHARED | SHT_CUDA_GLOBAL)
}

/// Shared-memory sections: their symbols place variables in the shared memory of a block, which
/// the section's size does not bound (the driver's reserved area is laid out by the driver:
/// NCCL's `__nv_reservedSMEM_gb10b_war_var` lies at [0x10, 0x90) of a 128-byte
/// `.nv.shared.reserved.0`; 887 such symbols in NVIDIA's wheels). CUDA copies no file bytes for
/// them.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn is_shared_memory(ty: u32) -> bool {
    matches!(ty, SHT_CUDA_SHARED | SHT_CUDA_SHARED_RESERVED)
}

/// A NOBITS section that is shared memory by its name (`.nv_debug.shared`, `.nv.shared.*`), as
/// older toolkits write it: its symbols are placed as in [`is_shared_memory`]'s sections (NCCL
/// 2.21 for CUDA 11: a 0x1820-byte buffer at 0x10 of a 0x1820-byte `.nv_debug.shared`, after
/// the 16 bytes the driver reserves).
/// Reads at most the 17 bytes it compares: a symbol loop may ask once per symbol.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn is_shared_by_name(shnames: Option<&[u8]>, sec: Sh<'_>) -> bool {
    if sec.ty() != SHT_NOBITS {
        return false;
    }
    let name = shnames.and_then(|t| t.get(sec.name() as usize..)).unwrap_or_default();
    name.starts_with(b".nv_debug.shared\0") || name.starts_with(b".nv.shared.")
}

/// What the walk over the section table found that `inspect_cubin` reports.
pub(super) struct Walk {
    /// The furthest end of a section's contents.
    pub(super) end: u64,
    /// A `.nv.compat` section marks the code arch-specific ('a').
    pub(super) arch_specific: bool,
}

/// Check the sections of a cubin whose header and section header table were found in bounds.
/// `extended`: the header's section count or name-table index overflowed into section 0.
///
/// The checks, in the order their errors are reported (the first error is the one reported, as
/// when each kind had a pass of its own): every section's contents within `d`; section 0; the
/// section-name table; every section's name; then section by section, its header (alignment,
/// info link) and the string, symbol, relocation or `.nv.info` table it holds; then the kernel
/// symbols. One pass over the headers refuses bad contents ranges at once and notes whether a
/// name or a header is bad; which one is the first is looked up only then. `sm`: the SM the
/// ELF header names (the kernels' parameter bank must be laid out for it).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub(super) fn check(d: &[u8], secs: Sections<'_>, shstrndx: u64, extended: bool, sm: u32) -> Result<Walk, ImageError> {
    let malformed = ImageError::Malformed;
    let n = secs.count() as u64;
    // The name table first, for the pass's use (its error comes after the pass's range errors).
    let names = if shstrndx != 0 { Some(string_table(d, secs, shstrndx, "section names")) } else { None };
    let (mut small, mut large) = ([0; 16], Vec::new());
    let mut kernels = match names {
        Some(Ok(names)) => Some(KernelSymbols {
            names,
            missing: SectionSet::new(&mut small, &mut large, secs.count()),
            budget: COMPARE_BUDGET + d.len() / 16,
            deferred: false,
        }),
        _ => None,
    };
    let pass = check_headers(d, secs, kernels.as_mut())?;

    // Section 0 is the null section: all zero, except that with extended numbering its size
    // and link carry the section count and the name-table index.
    if let Some(s0) = secs.get(0) {
        let nonzero =
            s0.name() != 0 || s0.ty() != 0 || s0.flags() != 0 || s0.addr() != 0 || s0.offset() != 0 || s0.info() != 0;
        if nonzero || s0.align() != 0 || s0.entsize() != 0 || (!extended && (s0.size() != 0 || s0.link() != 0)) {
            return Err(malformed("section 0 (the null section) is not empty".into()));
        }
    }
    if let Some(Err(e)) = names {
        return Err(malformed(e));
    }
    if let (true, Some(k)) = (pass.bad_name, &kernels) {
        let limit = name_limit(k.names);
        if let Some((i, s)) = secs.iter().enumerate().find(|&(_, s)| u64::from(s.name()) >= limit) {
            return Err(malformed(err_name(i, s.name(), k.names.len() as u64)));
        }
    }
    let first_bad_header = if pass.bad_header { secs.iter().position(|s| !header_ok(s, n)) } else { None };

    // The tables, in section order, up to the first bad header: a table's error comes after
    // its section's header error, and before those of the sections after it. The first symbol
    // table is also where the kernels' symbols are looked for.
    let end = first_bad_header.unwrap_or(secs.count());
    let (mut symtab_seen, mut arch_specific) = (false, false);
    let shnames = kernels.as_ref().map(|k| k.names);
    for (i, s) in secs.iter().enumerate().take(end) {
        if let Some(want) = shnames.and_then(|t| named_type(t, s)).filter(|&t| t != s.ty()) {
            return Err(malformed(err_named_type(i, shnames.unwrap_or_default(), s, want)));
        }
        check_placement(d, i, s).map_err(malformed)?;
        match s.ty() {
            // The section-name table passed this check above.
            SHT_STRTAB if i as u64 == shstrndx => check_symbol_info(secs, i, s),
            SHT_STRTAB => string_table(d, secs, i as u64, "string table").and_then(|_| check_symbol_info(secs, i, s)),
            SHT_SYMTAB => {
                let shnames = kernels.as_ref().map(|k| k.names);
                let kernels = if symtab_seen { None } else { kernels.as_mut() };
                symtab_seen = true;
                check_symtab(d, secs, i, s, shnames, kernels)
            }
            SHT_RELA | SHT_REL => check_relocs(d, secs, i, s, sm, kernels.as_ref().map(|k| k.names)),
            SHT_CUDA_INFO => check_nv_info(d, secs, i, s, sm),
            SHT_CUDA_CALLGRAPH => check_callgraph(d, secs, i, s).and_then(|()| check_symbol_info(secs, i, s)),
            SHT_CUDA_SYMBOLS => check_cuda_symbols(secs, i, s),
            SHT_CUDA_COMPAT => check_compat(d, i, s).and_then(|arch| {
                // It can say the code is arch-specific.
                arch_specific |= arch;
                check_symbol_info(secs, i, s)
            }),
            _ => check_symbol_info(secs, i, s),
        }
        .map_err(malformed)?;
    }
    if let Some((i, s)) = first_bad_header.and_then(|i| Some((i, secs.get(i)?))) {
        return Err(malformed(err_header(i, s, n)));
    }
    // Each `.text.<kernel>` section is defined by a symbol of that name (CUDA finds kernels and
    // their `.nv.info.<kernel>` / `.nv.constant0.<kernel>` companions by these names), in the
    // first symbol table (no symbol table, no check).
    if let (true, Some(k)) = (symtab_seen, kernels) {
        if let Some(i) = k.missing.first() {
            let kernel = secs.get(i).and_then(|s| kernel_name(k.names, s)).unwrap_or_default();
            return Err(malformed(err_kernel_symbol(i, kernel)));
        }
    }
    Ok(Walk { end: pass.end, arch_specific })
}

/// Section names that say what a section holds, each with the type it has in every cubin of
/// NVIDIA's wheels (a name ending in NUL is exact, else a prefix): CUDA's loader finds sections
/// by these names and reads them as the name says. A kernel's code or `.nv.info` renamed
/// `.note.nv.tkinfo` (the section types left as they were) crashed it on the H100 (driver 580,
/// structured campaign of 2026-12-07), in cubins of nvcc and of five NVIDIA libraries (CUPTI,
/// cuDNN, cuSPARSELt, NCCL, NPP). Not `.nv.compat`: 648 sm_100a and sm_103a cubins of
/// FlashInfer 0.6.13 hold a PROGBITS section of that name beside none of its type.
const NAMED_TYPES: [Named; 10] = [
    Named::new(b".note.", SHT_NOTE),
    Named::new(b".nv.info\0", SHT_CUDA_INFO),
    Named::new(b".nv.info.", SHT_CUDA_INFO),
    Named::new(b".nv.callgraph\0", SHT_CUDA_CALLGRAPH),
    Named::new(b".nv.prototype\0", 0x7000_0002),
    Named::new(b".nv.rel.action\0", 0x7000_000b),
    Named::new(b".text.", SHT_PROGBITS),
    Named::new(b".symtab\0", SHT_SYMTAB),
    Named::new(b".strtab\0", SHT_STRTAB),
    Named::new(b".shstrtab\0", SHT_STRTAB),
];

/// A name of [`NAMED_TYPES`] (ending in NUL: exact; else a prefix) and the type it says, with
/// its bytes (at most 16) as two words and the masks of those bytes: a name starts with it when
/// it is as long and its words match under the masks, two compares and no call.
struct Named {
    name: &'static [u8],
    ty: u32,
    words: [u64; 2],
    masks: [u64; 2],
}

impl Named {
    const fn new(name: &'static [u8], ty: u32) -> Self {
        assert!(name.len() <= 16, "a listed name is two words at most");
        let masks = [mask_of(name.len()), mask_of(name.len().saturating_sub(8))];
        let tail = name.split_at(if name.len() > 8 { 8 } else { name.len() }).1;
        Named { name, ty, words: [word8(name) & masks[0], word8(tail) & masks[1]], masks }
    }
}

/// The mask of a word's first `n` bytes (all 8 from 8 up).
const fn mask_of(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1 << (8 * n)) - 1
    }
}

/// The first 8 bytes of `b` as a little-endian word (zeros past its end).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
const fn word8(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let mut k = 0;
    while k < 8 && k < b.len() {
        w[k] = b[k];
        k += 1;
    }
    u64::from_le_bytes(w)
}

/// The type section `s`'s name says it has ([`NAMED_TYPES`]), if its name is one of those.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn named_type(names: &[u8], s: Sh<'_>) -> Option<u32> {
    named_type_of(names.get(s.name() as usize..)?)
}

/// [`named_type`] of the name at the start of `name` (which may run on past its NUL). It runs
/// for every section of every load: two words of the name against each listed name's.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn named_type_of(name: &[u8]) -> Option<u32> {
    let word = |at: usize| {
        name.get(at..).map_or(0, |r| r.first_chunk::<8>().map_or_else(|| word8(r), |w| u64::from_le_bytes(*w)))
    };
    let (w0, w1) = (word(0), word(8));
    NAMED_TYPES
        .iter()
        .find(|n| w0 & n.masks[0] == n.words[0] && w1 & n.masks[1] == n.words[1] && name.len() >= n.name.len())
        .map(|n| n.ty)
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_named_type(i: usize, names: &[u8], s: Sh<'_>, want: u32) -> String {
    let name = names.get(s.name() as usize..).map(cstr).unwrap_or_default();
    cold_format!(
        "section {i} is named {} but is of type {:#x}, not {want:#x}, what CUDA's loader reads a section of that name as",
        quoted(name),
        s.ty()
    )
}

/// Where a section's contents sit, and (for notes) how they are laid out, as toolkits write
/// them: a section with contents starts at a multiple of its alignment, and a note section is
/// whole records (12-byte header, name and description each padded to 4 bytes) that end at its
/// end; the last record's description may end the section unpadded (CUPTI's libnvperf cubins
/// end a 455-byte `.note.nv.tkinfo` so). On the H200 a cubin whose `.note.nv.tkinfo` had been
/// moved (sh_offset changed, even by one byte) crashed CUDA's loader (structured campaign);
/// nvcc 12.x/13.0 output and every cubin of NVIDIA's wheels keep both.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_placement(d: &[u8], i: usize, s: Sh<'_>) -> Result<(), String> {
    let ty = s.ty();
    if !has_file_bytes(ty) {
        return Ok(());
    }
    let align = s.align();
    if align > 1 && s.offset() % align != 0 {
        return Err(cold_format!("section {i} starts at {:#x}, not a multiple of its alignment {align}", s.offset()));
    }
    if ty == SHT_NOTE {
        let body = s.body(d).ok_or_else(|| cold_format!("section {i} (a note) is not inside the image"))?;
        let mut rest = body;
        while !rest.is_empty() {
            let bad = || cold_format!("section {i} (a note) does not hold whole note records");
            let (head, after) = rest.split_first_chunk::<12>().ok_or_else(bad)?;
            let word = |k: usize| u32::from_le_bytes([head[k], head[k + 1], head[k + 2], head[k + 3]]);
            let (name_len, desc_len, note_type) = (word(0) as usize, word(4) as usize, word(8));
            let pad = |n: usize| n.checked_add(3).map(|v| v & !3);
            let name_padded = pad(name_len).ok_or_else(bad)?;
            let desc_end = name_padded.checked_add(desc_len).ok_or_else(bad)?;
            let name = after.get(..name_len).ok_or_else(bad)?;
            let desc = after.get(name_padded..desc_end).ok_or_else(bad)?;
            if note_type == NOTE_NV_TKINFO && name == b"NVIDIA Corp\0" {
                check_tkinfo(desc).map_err(|why| cold_format!("section {i}: its tool note (.note.nv.tkinfo) {why}"))?;
            }
            // The next record, or the end: exactly, or after an unpadded last description.
            rest = match after.get(pad(desc_end).ok_or_else(bad)?..) {
                Some(next) => next,
                None if after.len() == desc_end => &[],
                None => return Err(bad()),
            };
        }
    }
    Ok(())
}

/// The description of a `.note.nv.tkinfo` record: a 24-byte header (a version word, then the
/// offsets of five strings: object file, tool, tool version, build, tool arguments) and the
/// strings, NUL-terminated, after it. Each offset lies in the strings and its string ends
/// there, as in all 39,019 such notes of NVIDIA's wheels: CUDA's loader reads them (an altered
/// description crashed it on the H200: issue 21's independent mutation generator).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_tkinfo(desc: &[u8]) -> Result<(), String> {
    let Some((head, strings)) = desc.split_first_chunk::<24>() else {
        return Err(cold_format!("is {} bytes, shorter than its 24-byte header", desc.len()));
    };
    for k in 1..6 {
        let at = u32::from_le_bytes([head[4 * k], head[4 * k + 1], head[4 * k + 2], head[4 * k + 3]]);
        let ends = strings.get(at as usize..).is_some_and(|s| s.contains(&0));
        if !ends {
            return Err(cold_format!(
                "names string {k} at {at:#x}, which is not a NUL-terminated string of its {} bytes of strings",
                strings.len()
            ));
        }
    }
    Ok(())
}

/// The kernel-symbol check, filled in as the checks go: the section-name table, and the
/// `.text.<kernel>` sections whose symbol has not been seen (yet).
struct KernelSymbols<'n, 'w> {
    names: &'n [u8],
    missing: SectionSet<'w>,
    /// Bytes the symbol-by-symbol name comparisons may still read. Real cubins use a tiny part
    /// of it; an image made to make them slow (many symbols whose names share a long prefix
    /// with their kernel's) runs it out, and the rest of the check is done by `match_by_hash`,
    /// in time linear in the tables.
    budget: usize,
    /// The budget ran out: the comparisons were left to `match_by_hash`.
    deferred: bool,
}

impl KernelSymbols<'_, '_> {
    /// Whether the symbol name at the start of `sym` is the kernel name of section `s`, one of
    /// `missing` (so its name is known to start with `.text.`). False once the budget is spent.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn is_named_for(&mut self, s: Sh<'_>, sym: &[u8]) -> bool {
        let Some(kernel) = after_text_prefix(self.names, s) else { return false };
        // Names that differ in their first byte differ (a NUL there ends one, not the other):
        // most symbols of a kernel's section (the section symbol, unnamed) stop here.
        if let (Some(a), Some(b)) = (kernel.first(), sym.first()) {
            if a != b {
                return false;
            }
        }
        if self.deferred {
            return false;
        }
        match same_cstr(kernel, sym, &mut self.budget) {
            Some(same) => same,
            None => {
                self.deferred = true;
                false
            }
        }
    }
}

/// The most bytes of names compared one symbol at a time, beyond a sixteenth of the image.
const COMPARE_BUDGET: usize = 64 << 10;

/// The kernel-symbol check for the symbols of `symtab` (names in `strtab`) when comparing them
/// one by one got too costly: every name (kernel or symbol) is reduced to its length and two
/// polynomial hashes modulo 2^61 - 1 with bases drawn at random for this call, computed for
/// all the names of a table in one backward pass over it (a name runs to the table's next NUL,
/// so it is a suffix of the run it lies in). Equal names have equal keys; for two different
/// names of length L the keys agree with probability below (L / 2^61)^2, which no image can
/// arrange, not knowing the bases. Linear in the tables, plus sorting the names' offsets.
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn match_by_hash(symbols: &[u8], strtab: &[u8], secs: Sections<'_>, k: &mut KernelSymbols<'_, '_>) {
    // The missing kernels' name offsets (after `.text.`), and the candidate symbols.
    let mut kernels: Vec<(usize, usize)> = Vec::new(); // (section, name offset in `names`)
    let mut i = 0;
    while let Some(next) = k.missing.first_from(i) {
        if let Some(s) = secs.get(next) {
            kernels.push((next, (s.name() as usize).saturating_add(6)));
        }
        i = next + 1;
    }
    let candidates: Vec<(usize, usize)> = records::<SYM_LEN>(symbols)
        .map(|sym| (usize::from(sym.u16::<6>()), sym.u32::<0>() as usize))
        .filter(|&(sec, _)| k.missing.contains(sec))
        .collect();
    let bases = hash_bases();
    let kernel_keys = NameKeys::new(k.names, kernels.iter().map(|&(_, at)| at), bases);
    let symbol_keys = NameKeys::new(strtab, candidates.iter().map(|&(_, at)| at), bases);
    for &(sec, at) in &candidates {
        if !k.missing.contains(sec) {
            continue;
        }
        let kernel = kernels.binary_search_by_key(&sec, |&(s, _)| s).ok().map(|j| kernels[j].1);
        let keys = kernel.map(|kat| (kernel_keys.get(kat), symbol_keys.get(at)));
        if matches!(keys, Some((Some(a), Some(b))) if a == b) {
            k.missing.remove(sec);
        }
    }
}

const HASH_PRIME: u64 = (1 << 61) - 1;

/// Two bases in 2..2^61-1, different for every call (std's per-process random hash keys).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn hash_bases() -> (u64, u64) {
    use std::hash::BuildHasher;
    let state = std::collections::hash_map::RandomState::new();
    let base = |salt: u64| 2 + state.hash_one(salt) % (HASH_PRIME - 2);
    (base(1), base(2))
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn add_mod(a: u64, b: u64) -> u64 {
    let r = a + b; // both below 2^61
    if r >= HASH_PRIME {
        r - HASH_PRIME
    } else {
        r
    }
}

#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn mul_mod(a: u64, b: u64) -> u64 {
    let x = u128::from(a) * u128::from(b);
    let r = (x as u64 & HASH_PRIME) + (x >> 61) as u64;
    if r >= HASH_PRIME {
        r - HASH_PRIME
    } else {
        r
    }
}

/// (length, hash, hash) of the C string at each of some offsets of a string table, found in
/// constant time by the offset's rank among them (no sorting: the offsets are marked in a
/// bit set over the table, with a running count of the marks before each 64-bit word).
struct NameKeys {
    table_len: usize,
    marks: Vec<u64>,
    /// Marks before each word of `marks`.
    before: Vec<u32>,
    /// By rank: the key of the `r`-th marked offset, in increasing offset order.
    keys: Vec<(u32, u64, u64)>,
}

impl NameKeys {
    fn new(table: &[u8], offsets: impl Iterator<Item = usize>, (b1, b2): (u64, u64)) -> Self {
        // Offsets past the end name the empty string, as the last offset (the table's final
        // NUL, or its end when it is empty) does.
        let mut marks = vec![0u64; table.len() / 64 + 1];
        for o in offsets {
            let o = o.min(table.len());
            marks[o / 64] |= 1 << (o % 64);
        }
        let mut before = Vec::with_capacity(marks.len());
        let mut count = 0u32;
        for w in &marks {
            before.push(count);
            count += w.count_ones();
        }
        let mut keys = vec![(0, 0, 0); count as usize];
        let mut r = count as usize;
        let marked = |o: usize| marks[o / 64] >> (o % 64) & 1 != 0;
        if marked(table.len()) {
            r -= 1; // the empty string at the end: its key is (0, 0, 0)
        }
        // Below the lowest marked offset nothing is needed. A 64-byte chunk at a time, so that
        // each chunk's marks are read once.
        let lowest = marks.iter().position(|&w| w != 0).unwrap_or(marks.len());
        let (mut len, mut h1, mut h2) = (0u32, 0u64, 0u64);
        for (w, chunk) in table.chunks(64).enumerate().skip(lowest).rev() {
            let word = marks[w];
            for (bit, &c) in chunk.iter().enumerate().rev() {
                if c == 0 {
                    (len, h1, h2) = (0, 0, 0);
                } else {
                    len += 1;
                    h1 = add_mod(mul_mod(h1, b1), u64::from(c));
                    h2 = add_mod(mul_mod(h2, b2), u64::from(c));
                }
                if word >> bit & 1 != 0 {
                    r -= 1;
                    keys[r] = (len, h1, h2);
                }
            }
        }
        NameKeys { table_len: table.len(), marks, before, keys }
    }
    /// The key of a marked offset.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn get(&self, offset: usize) -> Option<(u32, u64, u64)> {
        let o = offset.min(self.table_len);
        let (w, bit) = (o / 64, o % 64);
        let word = *self.marks.get(w)?;
        if word >> bit & 1 == 0 {
            return None;
        }
        let rank = self.before[w] as usize + (word & ((1u64 << bit) - 1)).count_ones() as usize;
        self.keys.get(rank).copied()
    }
}

/// What the pass over the headers found (which section is the first bad one is looked up after,
/// only when there is one).
struct Pass {
    /// The furthest end of a section's contents.
    end: u64,
    /// A section's name lies outside the name table.
    bad_name: bool,
    /// A section's header is inconsistent (`header_ok`).
    bad_header: bool,
}

/// One pass over the section headers that calls nothing but to fail, so that it runs in
/// registers. It refuses a section whose contents are not within `d` (these errors come first);
/// notes whether a name lies outside the name table and whether a header is inconsistent
/// (their errors come later); and notes which sections are kernels'. Section 0 is included: if
/// it is the null section (checked after) it passes the name and header checks, else its own
/// error comes first; and its name is the name table's first string, which can be a kernel's.
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_headers(
    d: &[u8],
    secs: Sections<'_>,
    mut kernels: Option<&mut KernelSymbols<'_, '_>>,
) -> Result<Pass, ImageError> {
    let n = secs.count() as u64;
    let limit = kernels.as_ref().map_or(0, |k| name_limit(k.names));
    let mut pass = Pass { end: 0, bad_name: false, bad_header: false };
    for (i, s) in secs.iter().enumerate() {
        if has_file_bytes(s.ty()) {
            pass.end = pass.end.max(check_range(d, s.offset(), s.size(), "an ELF section's contents")?);
        }
        if let Some(k) = kernels.as_deref_mut() {
            pass.bad_name |= u64::from(s.name()) >= limit;
            if is_kernel(k.names, s) {
                k.missing.insert(i);
            }
        }
        pass.bad_header |= !header_ok(s, n);
    }
    Ok(pass)
}

/// The bound on a name offset: below the name table's size, or 0 (no name) in an empty table.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn name_limit(names: &[u8]) -> u64 {
    (names.len() as u64).max(1)
}

/// A section header's own consistency (`err_header` says which part fails): an alignment of 0
/// or a power of two, an info link (SHF_INFO_LINK) to a section that exists, of `n` (`n >= 1`:
/// section 0 is there), and a link that is 0 or a section. Written without branches, as it
/// runs for every section.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn header_ok(s: Sh<'_>, n: u64) -> bool {
    let align = s.align();
    // 0, 1 and the powers of two have no bit below their highest (0 - 1 wraps to all ones).
    let align_ok = align & align.wrapping_sub(1) == 0;
    // info - 1 < n - 1 says 1 <= info < n (info 0 wraps to the largest value). A NOBITS
    // section may carry the flag with sh_info 0 (no section): the `.nv.shared.reserved.0` of
    // sm_100f cubins in FlashInfer's wheel (648 of its 15,970), which it loads with CUDA.
    let info_ok = (s.flags() & SHF_INFO_LINK == 0)
        | (u64::from(s.info()).wrapping_sub(1) < n.wrapping_sub(1))
        | ((s.ty() == SHT_NOBITS) & (s.info() == 0));
    // sh_link is 0 (none) or a section (CUDA follows it to the symbol or string table), except
    // in the kinds whose symbols are those of the cubin's symbol table whatever sh_link says
    // (`symbols_of`): CUDA 12.1-era cubins of cuBLAS, cuFFT and CUPTI link their relocations,
    // `.nv.info` and callgraph to section 5 (an `.nv.info`, or past the last section), and
    // CUDA loads them.
    let ty = s.ty();
    let any_link = (ty == SHT_REL) | (ty == SHT_RELA) | (ty == SHT_CUDA_INFO) | (ty == SHT_CUDA_CALLGRAPH);
    let link_ok = any_link | (u64::from(s.link()) < n);
    let flags_ok = s.flags() & !SHF_KNOWN == 0;
    let ranged_ok = info_in_range(s, n);
    align_ok & info_ok & link_ok & flags_ok & ranged_ok
}

/// sh_info holds what its section's kind puts there: in a section linked to a table of symbols
/// a symbol index (a `.text` section's low 24 bits, its high 8 the register count; all 32 in
/// `.nv.capmerc.text.*`), in a symbol table (SYMTAB or `.nv.merc.symtab`) one past its last
/// local symbol, in a note nothing (ELF gives a note's sh_info no meaning; `.note.nv.cuinfo`
/// holds 0xffffffff in 122 cubins of cuBLAS 13.0), in every other section 0 or a section
/// index. Those linked and those of a symbol table are checked where their tables are read
/// (`check_symbol_info`, `check_symtab`, `check_cuda_symbols`). On the H200 a .nv.shared
/// section whose sh_info was set high crashed CUDA's loader (structured campaign): its sh_info
/// is a section index.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn info_in_range(s: Sh<'_>, n: u64) -> bool {
    let info = u64::from(s.info());
    let ty = s.ty();
    let symtab = (ty == SHT_SYMTAB) | (ty == SHT_CUDA_SYMBOLS);
    is_code(s) | symtab | (ty == SHT_NOTE) | (s.link() != 0) | (info < n)
}

/// Whether a section holds code: PROGBITS and executable (`.text.<kernel>`).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn is_code(s: Sh<'_>) -> bool {
    (s.ty() == SHT_PROGBITS) & (s.flags() & SHF_EXECINSTR != 0)
}

/// Section `idx` must be a NUL-terminated string table (CUDA reads names from it as C strings);
/// returns its contents.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn string_table<'d>(d: &'d [u8], secs: Sections<'_>, idx: u64, what: &str) -> Result<&'d [u8], String> {
    let s = usize::try_from(idx)
        .ok()
        .and_then(|i| secs.get(i))
        .ok_or_else(|| cold_format!("{what}: section {idx} does not exist"))?;
    if s.ty() != SHT_STRTAB {
        return Err(cold_format!("{what}: section {idx} is not a string table"));
    }
    let b = s.body(d).ok_or_else(|| cold_format!("{what}: string table out of range"))?;
    if b.last().is_some_and(|&c| c != 0) {
        return Err(cold_format!("{what}: string table {idx} is not NUL-terminated"));
    }
    Ok(b)
}

/// Whether a section's name starts with `.text.`: its kernel's name follows.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn is_kernel(names: &[u8], s: Sh<'_>) -> bool {
    // One bounds check (`checked_add` cannot fail on 64-bit targets, where LLVM drops it), then
    // the prefix as a 6-byte array, compared inline.
    let at = s.name() as usize;
    let Some(prefix) = at.checked_add(6).and_then(|end| names.get(at..end)) else { return false };
    <&[u8; 6]>::try_from(prefix).is_ok_and(|p| p == b".text.")
}

/// What follows the 6-byte `.text.` prefix of a section's name: its kernel's name, up to its NUL
/// (the slice runs on to the end of the name table).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn after_text_prefix<'n>(names: &'n [u8], s: Sh<'_>) -> Option<&'n [u8]> {
    names.get((s.name() as usize).checked_add(6)?..)
}

/// The kernel a section is for, if it is named `.text.<kernel>` (see `after_text_prefix`).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn kernel_name<'n>(names: &'n [u8], s: Sh<'_>) -> Option<&'n [u8]> {
    is_kernel(names, s).then(|| after_text_prefix(names, s)).flatten()
}

/// The C string at the start of `b`: up to its NUL, or all of `b` if there is none.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn cstr(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).and_then(|end| b.get(..end)).unwrap_or(b)
}

/// Whether the C string at the start of `sym` is `name`'s: the bytes of `name` up to its NUL
/// (or its end), then a NUL in `sym`. Each byte read is taken off `budget`; None when it runs
/// out before the answer is known.
#[inline(never)] // called for few symbols: the symbol loop stays small
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn same_cstr(name: &[u8], sym: &[u8], budget: &mut usize) -> Option<bool> {
    // Eight bytes at a time while both sides have eight.
    let mut at = 0;
    while let (Some(a), Some(b)) = (word_at(name, at), word_at(sym, at)) {
        *budget = budget.checked_sub(8)?;
        let diff = a ^ b;
        // Where `name` ends in this word: the lowest bit set in `nul` is the top bit of its first
        // zero byte (exact for the first; bits above it may be spurious). The strings match if
        // no byte differs up to and including that one: `nul ^ (nul - 1)` masks those bytes.
        let nul = a.wrapping_sub(0x0101_0101_0101_0101) & !a & 0x8080_8080_8080_8080;
        if nul != 0 {
            return Some(diff & (nul ^ (nul - 1)) == 0);
        }
        if diff != 0 {
            return Some(false);
        }
        at += 8;
    }
    // The last few bytes of a table (fewer than 8 on one side), one at a time.
    let (Some(name), Some(sym)) = (name.get(at..), sym.get(at..)) else { return Some(false) };
    *budget = budget.checked_sub(8)?;
    for (&a, &b) in name.iter().zip(sym) {
        if a != b {
            return Some(false);
        }
        if a == 0 {
            return Some(true); // both end here
        }
    }
    // `name` ends without a NUL (or `sym` ran out first, and this is None): `sym` ends there.
    Some(sym.get(name.len()) == Some(&0))
}

/// The eight bytes at `at` in `b` as a little-endian word, if `b` has them.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn word_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..)?.first_chunk().map(|w| u64::from_le_bytes(*w))
}

/// A section that links to a table of symbols (a symbol table, or the 24-byte-entry table of
/// type 0x7000_0085 that newer cubins have) and has no info link names a symbol of it in
/// sh_info: in a `.text.<kernel>` section (PROGBITS and executable) the low 24 bits (the
/// kernel's symbol; the high 8 are its register count), in the others all 32. Found so in every
/// cubin of nvcc 13 and of NVIDIA's wheels; CUDA's loader reads the kernel's symbol through it.
/// Code names its symbol in the cubin's symbol table whatever sh_link and its flags say (with
/// SHF_INFO_LINK its sh_info passed as a section index, and cubins can have more sections than
/// symbols): CUDA 12.0/12.1-era
/// compilers link code, `.nv.info` and relocations to `.nv.info` (section 5) in 3,273 sm_90
/// cubins of NVIDIA's wheels (cuDNN, cuBLAS, cuSPARSE, cuFFT, PyTorch 2.4, TensorRT 8.6), whose
/// kernel symbols were not checked. Another section linked to anything else holds 0 or a section
/// index there, as unlinked ones do (`header_ok`).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_symbol_info(secs: Sections<'_>, i: usize, s: Sh<'_>) -> Result<(), String> {
    let exempt = matches!(s.ty(), SHT_REL | SHT_RELA | SHT_SYMTAB | SHT_CUDA_SYMBOLS | SHT_NOTE);
    let code = is_code(s);
    if (!code && (s.link() == 0 || s.flags() & SHF_INFO_LINK != 0)) || exempt {
        return Ok(());
    }
    let linked = secs
        .get(s.link() as usize) // past the table only where `header_ok` lets it
        .filter(|t| t.entsize() == SYM_LEN as u64 && matches!(t.ty(), SHT_SYMTAB | SHT_CUDA_SYMBOLS))
        .map(|t| (s.link() as usize, t));
    let table =
        if code { linked.or_else(|| secs.iter().enumerate().find(|(_, t)| t.ty() == SHT_SYMTAB)) } else { linked };
    let Some((at, table)) = table else {
        // (Code in a cubin without a symbol table has no symbol named as its kernel, which
        // `check_symtab` refuses.)
        if !code && u64::from(s.info()) >= secs.count() as u64 {
            return bad(cold_format!("section {i}'s sh_info {} is past what it can refer to", s.info()));
        }
        return Ok(());
    };
    let nsyms = table.size() / SYM_LEN as u64;
    // Only code keeps its register count in the high 8 bits: a kernel's constant bank linked
    // to the symbol table (TensorRT's hand-assembled cubins) names a symbol with all 32, and
    // CUDA's loader crashed on 0x80000004 there, which the low 24 bits read as symbol 4.
    let symbol = if code { s.info() & 0x00ff_ffff } else { s.info() };
    if u64::from(symbol) >= nsyms {
        return bad(cold_format!(
            "section {i}'s info {:#x} names symbol {symbol} of section {at}, which has {nsyms}",
            s.info()
        ));
    }
    Ok(())
}

/// A symbol table: whole 24-byte symbols, names in its string table, each defined symbol
/// inside its section. `kernels`: for the first symbol table, the kernel-symbol check, which
/// takes off its list each kernel section that has a symbol named as the kernel.
#[inline(never)] // its own function: its loop keeps its values in registers
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_symtab(
    d: &[u8],
    secs: Sections<'_>,
    i: usize,
    s: Sh<'_>,
    shnames: Option<&[u8]>,
    mut kernels: Option<&mut KernelSymbols<'_, '_>>,
) -> Result<(), String> {
    if s.entsize() != SYM_LEN as u64 || s.size() % SYM_LEN as u64 != 0 {
        return bad(cold_format!(
            "symbol table {i}: entry size {} / size {} are not 24-byte symbols",
            s.entsize(),
            s.size()
        ));
    }
    if u64::from(s.info()) > s.size() / SYM_LEN as u64 {
        // One past the last local symbol: at most the count.
        return bad(cold_format!(
            "symbol table {i}: its info {} is past its {} symbols",
            s.info(),
            s.size() / SYM_LEN as u64
        ));
    }
    let strtab = string_table(d, secs, u64::from(s.link()), "symbol names")?;
    let names = strtab.len() as u64;
    let name_limit = name_limit(strtab);
    let b = s.body(d).ok_or_else(|| cold_format!("symbol table {i} out of range"))?;
    let n = secs.count() as u64;
    for (k, sym) in records::<SYM_LEN>(b).enumerate() {
        let name = u64::from(sym.u32::<0>());
        let shndx = sym.u16::<6>();
        if name >= name_limit {
            return Err(err_symbol_name(k, name, names));
        }
        let sec = secs.get(usize::from(shndx)); // None past the last section
        if let (Some(kernels), Some(sec)) = (kernels.as_deref_mut(), sec) {
            let i = usize::from(shndx);
            if kernels.missing.contains(i) && kernels.is_named_for(sec, strtab.get(name as usize..).unwrap_or_default())
            {
                kernels.missing.remove(i);
            }
        }
        // Binding and type: what the loader resolves a symbol by. Given to `vprintf`, `malloc` or
        // `free` (functions the driver supplies, whose addresses a relocation in `.nv.constant4`
        // asks it for), a reserved binding (3 to 15), the local one, or type 10 crashed CUDA's
        // loader as it loaded the code into a context (H100, driver 580: the structured campaign
        // with every accepted mutant preloaded, 2026-12-07). In NVIDIA's wheels every symbol is
        // local, global or weak, and no undefined function is local; undefined symbols of other
        // types are (type 10 in CuPy 10.6's, 13 in many), but none with a driver function's name.
        let info = sym.u8::<4>();
        let (bind, ty) = (info >> 4, info & 0xf);
        if bind > STB_WEAK {
            return Err(err_symbol_info(k, info, "its binding is none of local, global and weak"));
        }
        if shndx == 0 {
            // Undefined: looked up by the loader (the driver's functions, shared memory it places).
            if k > 0 && ty == STT_FUNC && bind == STB_LOCAL {
                return Err(err_symbol_info(
                    k,
                    info,
                    "an undefined function cannot be local: the loader has nothing to look it up in",
                ));
            }
            if k > 0 && ty != STT_FUNC && driver_function(strtab.get(name as usize..).unwrap_or_default()) {
                return Err(err_symbol_info(k, info, "it names a function the driver supplies but is no function"));
            }
            continue;
        }
        match sec {
            // A symbol defined in a section lies inside it; a function lies in code (the same
            // `vprintf` given any other section crashed CUDA's loader in a context: H100, driver
            // 580; every function symbol of NVIDIA's wheels lies in an executable section).
            Some(sec) => {
                if ty == STT_FUNC && sec.flags() & SHF_EXECINSTR == 0 {
                    return Err(err_symbol_info(k, info, "it is a function defined in a section that holds no code"));
                }
                // The driver's functions are the driver's: `vprintf`, `malloc` or `free` given
                // a kernel's code section crashed CUDA's loader in a context (H100, driver 580,
                // structured campaign of 2026-12-07); no cubin of NVIDIA's wheels defines one.
                // (Data of such a name loads: a symbol renamed so, in the same campaign; and
                // CUPTI's cubins, linked ones too, define `__cuda_syscall_*` hooks (linked
                // ones in 149 images of the six extracted sets).)
                let sym_name = strtab.get(name as usize..).unwrap_or_default();
                if ty == STT_FUNC && may_be_driver_function(sym_name) && DRIVER_PROVIDED.contains(&cstr(sym_name)) {
                    return Err(err_symbol_info(k, info, "it defines a function the driver supplies"));
                }
                let (value, size) = (sym.u64::<8>(), sym.u64::<16>());
                let end = value.checked_add(size);
                // The name is looked at only for a symbol past its section's size.
                let inside = end.is_some_and(|e| e <= sec.size())
                    || (end.is_some() && (is_shared_memory(sec.ty()) || is_shared_by_name(shnames, sec)));
                if !inside {
                    return Err(err_symbol_extent(k, value, size, shndx, sec.size()));
                }
            }
            None if u64::from(shndx) < SHN_LORESERVE => return Err(err_symbol_section(k, shndx, n)),
            // A reserved index (SHN_LORESERVE to 0xffff: SHN_ABS, SHN_COMMON, SHN_XINDEX, ...):
            // none of 2,114,396 symbols in the 19,057 cubins of 13 NVIDIA wheels has one, and
            // CUDA's loader takes it for a section: on the H200 it crashed for each of 0xff00,
            // 0xff1f, 0xff20, 0xff3f, 0xfff1, 0xfff2 and 0xfffe given to `vprintf` or `malloc`
            // (the functions the driver provides) or to a kernel, and refused it for data.
            None => return Err(err_symbol_reserved(k, shndx)),
        }
    }
    if let Some(k) = kernels.filter(|k| k.deferred) {
        match_by_hash(b, strtab, secs, k);
    }
    Ok(())
}

/// `.nv.merc.symtab`: whole 24-byte symbols, and an sh_info (one past its last local symbol) of
/// at most their count, as in a symbol table. Its symbols are not otherwise read here.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_cuda_symbols(secs: Sections<'_>, i: usize, s: Sh<'_>) -> Result<(), String> {
    if s.entsize() != SYM_LEN as u64 || s.size() % SYM_LEN as u64 != 0 {
        return check_symbol_info(secs, i, s); // not a table of symbols: no symbol count to hold to
    }
    let count = s.size() / SYM_LEN as u64;
    if u64::from(s.info()) > count {
        return bad(cold_format!("symbol table {i} (.nv.merc): its info {} is past its {count} symbols", s.info()));
    }
    Ok(())
}

/// The symbol table whose symbols section `s` names: the one its sh_link names, or, where that
/// is no symbol table, the cubin's first: relocation sections of cuBLAS 12.1 and the callgraphs
/// of cuFFT 12.1 link to section 5 (an `.nv.info`) while their symbols are those of the one
/// symbol table, and CUDA loads them.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn symbols_of<'a>(secs: Sections<'a>, s: Sh<'_>) -> Option<Sh<'a>> {
    secs.get(s.link() as usize).filter(|t| t.ty() == SHT_SYMTAB).or_else(|| secs.iter().find(|t| t.ty() == SHT_SYMTAB))
}

/// `.nv.callgraph`: (caller, value) pairs of 32-bit symbol indices, in lists that markers
/// (0, 0xffffffff to 0xfffffffc) open: after 0xffffffff the call edges (caller, callee), after
/// 0xfffffffe and 0xfffffffd pairs whose second word is no symbol (a prototype number: values
/// far past the symbol table, 0x39ff in a table of 99 in cuFFT 12.1 and cuFFTMp, or the index
/// of an undefined object in cuFFT 12.4's sm_100 code), after 0xfffffffc (caller, possible
/// callee) pairs of an indirect call (nvlink writes them for code that calls through function
/// pointers). Every caller is a symbol of the symbol table, or a marker, in all the callgraphs
/// of NVIDIA's wheels; CUDA's loader looks callers up (a callgraph index past the symbol table
/// crashed it on the H200: issue 21). The second words of the lists of callees are checked below.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_callgraph(d: &[u8], secs: Sections<'_>, i: usize, s: Sh<'_>) -> Result<(), String> {
    let b = s.body(d).ok_or_else(|| cold_format!("callgraph section {i} out of range"))?;
    if b.len() % 8 != 0 {
        return bad(cold_format!("callgraph section {i}: its {} bytes are not 8-byte entries", b.len()));
    }
    let symtab = symbols_of(secs, s);
    let nsyms = symtab.map_or(0, |t| t.size() / SYM_LEN as u64);
    let syms = symtab.and_then(|t| t.body(d));
    // Whether the entries are (caller, callee) pairs: before any marker (as a table of edges
    // alone would be), and in the lists of edges and of indirect calls' callees.
    let mut callees = true;
    for (k, e) in records::<8>(b).enumerate() {
        let caller = e.u32::<0>();
        if caller < CALLGRAPH_MARKER_MIN && u64::from(caller) >= nsyms {
            return bad(cold_format!(
                "callgraph section {i}: entry {k}'s caller is symbol {caller}, which does not exist ({nsyms} symbols)"
            ));
        }
        let callee = e.u32::<4>();
        if caller == 0 && callee >= CALLGRAPH_MARKER_MIN {
            callees = callee == CALLGRAPH_EDGES || callee == CALLGRAPH_INDIRECT_CALLEES;
            continue;
        }
        if !callees {
            continue;
        }
        // A callee the image does not define is a function, which the loader looks up: `free`'s
        // callee entry pointed at the undefined object `.nv.reservedSmem.offset0` crashed CUDA's
        // loader in a context (H100, driver 580, a CUPTI 12.8 cubin). In NVIDIA's wheels every
        // undefined callee is a function but those of NCCL's relocatable function tables (weak
        // objects; refused anyway: relocatable code never linked). Defined callees of any type
        // are left as they are (NCCL 2.25's linked cubins name objects), as are symbol 0 and
        // indices past the table.
        if callee == 0 || callee >= CALLGRAPH_MARKER_MIN {
            continue;
        }
        let Some(sym) = syms.and_then(|t| Rec::<SYM_LEN>::at(t, (callee as usize).saturating_mul(SYM_LEN))) else {
            continue;
        };
        let ty = sym.u8::<4>() & 0xf;
        if sym.u16::<6>() == 0 && ty != STT_FUNC {
            return bad(cold_format!(
                "callgraph section {i}: entry {k}'s callee is symbol {callee}, which this code does not define and is no function (type {ty}) for the loader to look up"
            ));
        }
    }
    Ok(())
}

#[inline(never)] // its own function: its loop keeps its values in registers
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_relocs(
    d: &[u8],
    secs: Sections<'_>,
    i: usize,
    s: Sh<'_>,
    sm: u32,
    shnames: Option<&[u8]>,
) -> Result<(), String> {
    let want = if s.ty() == SHT_RELA { 24 } else { 16 };
    if s.entsize() != want || s.size() % want != 0 {
        return bad(cold_format!(
            "relocation section {i}: entry size {} / size {} are not {want}-byte entries",
            s.entsize(),
            s.size()
        ));
    }
    let symtab = symbols_of(secs, s).ok_or_else(|| {
        cold_format!("relocation section {i}: its symbol table (section {}) is not a symbol table", s.link())
    })?;
    let nsyms = symtab.size() / SYM_LEN as u64;
    let target = secs
        .get(s.info() as usize)
        .ok_or_else(|| cold_format!("relocation section {i}: target section {} does not exist", s.info()))?;
    // CUDA patches the target's bytes: it must have some (a relocation into the NOBITS
    // `.nv.global` crashed CUDA's loader on the H200: issue 21; no relocation section of
    // NVIDIA's wheels targets a section without file bytes).
    if !has_file_bytes(target.ty()) {
        return bad(cold_format!(
            "relocation section {i}: its target, section {} of type {:#x}, has no bytes in the file to patch",
            s.info(),
            target.ty()
        ));
    }
    // Not a constant bank that nothing relocates (`is_unrelocated_bank`). The relocations of
    // `.nv.constant4` (the addresses of `vprintf` or `malloc`) retargeted at a kernel's
    // parameter bank, or left on `.nv.constant4` with its sh_info set to a kernel's code,
    // crashed CUDA's loader in a context (H100, driver 580, 2026-12-07).
    let target_name = shnames.and_then(|t| t.get(target.name() as usize..));
    if target_name.is_some_and(|n| is_unrelocated_bank(n, secs, target, s.size() != 0)) {
        return bad(cold_format!(
            "relocation section {i}: its target, section {} ({}), is a kernel's constant bank, which nothing relocates",
            s.info(),
            quoted(target_name.map(cstr).unwrap_or_default())
        ));
    }
    let b = s.body(d).ok_or_else(|| cold_format!("relocation section {i} out of range"))?;
    let target_size = target.size();
    // In code, a relocation patches a field of the instruction at its offset: the whole
    // instruction (16 bytes from sm_70 on, 8 before) lies in the section (each of the 180,000
    // relocations into code of the fourth held-out set has at least 56 bytes after it).
    let code = if target.flags() & SHF_EXECINSTR != 0 {
        if sm >= 70 {
            16
        } else {
            8
        }
    } else {
        0
    };
    // Initialised data the loader fills in (`.nv.global.init`, constant banks): a relocation
    // there against a symbol the image does not define (undefined, not weak) is relocatable
    // code that was never linked with its other parts. CUDA's loader died on it (SIGSEGV in
    // cuLibraryGetModule, driver 580: NCCL 2.32's function table of 673 undefined device
    // functions); relocations in code against undefined symbols are refused by CUDA with an
    // error (libcudadevrt's), and in debug sections are never applied.
    // Only in relocatable objects (ET_REL): linked cubins refer to what the driver itself
    // provides (`vprintf` from `.nv.constant4` in 250 images of PyTorch, cuStateVec, SGLang),
    // which it resolves; the names it provides are allowed in objects too.
    let relocatable = d.get(16..18) == Some(&ET_REL.to_le_bytes()[..]);
    // Not shared memory: the `shmem_reloc_*` symbols that the relocatable kernels of 467
    // images of cuBLAS and cuDNN leave undefined in their `.nv.shared.<kernel>` sections
    // (PROGBITS) are resolved at load.
    let shared = is_shared_memory(target.ty())
        || shnames.and_then(|t| t.get(target.name() as usize..)).is_some_and(|n| n.starts_with(b".nv.shared"));
    let loaded_data = relocatable && !shared && target.flags() & (SHF_EXECINSTR | SHF_ALLOC) == SHF_ALLOC;
    let syms = if loaded_data { symtab.body(d) } else { None };
    // `want` is 16 or 24, so every entry holds the REL_READ_LEN bytes read here.
    for (k, r) in b.chunks_exact(want as usize).filter_map(|r| Rec::<REL_READ_LEN>::at(r, 0)).enumerate() {
        let offset = r.u64::<0>();
        let sym = r.u64::<8>() >> 32;
        if sym >= nsyms {
            return Err(err_reloc_symbol(k, i, sym, nsyms));
        }
        if let Some(at) = syms.and_then(|t| Rec::<SYM_LEN>::at(t, (sym as usize).saturating_mul(SYM_LEN))) {
            let (info, shndx) = (at.u8::<4>(), at.u16::<6>());
            if sym != 0 && shndx == 0 && info >> 4 == STB_GLOBAL && !driver_provides(d, secs, symtab, at.u32::<0>()) {
                return Err(err_unlinked(
                    d,
                    secs,
                    symtab,
                    shnames,
                    at.u32::<0>(),
                    i,
                    target.name(),
                    b.len() / want as usize,
                ));
            }
        }
        let r_type = r.u64::<8>() as u32;
        if r_type >= R_CUDA_TYPE_LIMIT {
            return Err(err_reloc_type(k, i, r_type));
        }
        // The bytes it patches lie within the target (`reloc_width`; nvcc places some R_CUDA_64
        // exactly 8 bytes before a section's end), and in code its whole instruction.
        let width = reloc_width(r_type).max(code);
        if offset.checked_add(width).is_none_or(|end| end > target_size) {
            return Err(err_reloc_offset(k, i, offset, width, target_size));
        }
    }
    Ok(())
}

/// The bytes a relocation of type `t` may write from its offset, wherever it points: 8 for the
/// 64-bit ones (R_CUDA_64, R_CUDA_G64, R_CUDA_FUNC_DESC_64, R_CUDA_INSTRUCTION64,
/// R_CUDA_UNIFIED, and the fields in bits 32-63: types 61-63, 112, 113), 16 for those that
/// reach past an instruction's first 8 bytes (bit 80: 58, 75, 114; all 128 bits: 67), 4 for
/// the rest (32-bit data, or a field in an instruction's first word). A 64-bit relocation at
/// the last 4 bytes of a data section (accepted as 4 bytes wide before) made the driver write
/// past the section.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn reloc_width(t: u32) -> u64 {
    match t {
        R_CUDA_64 | 4 | 35 | 53 | 61..=63 | 102 | 112 | 113 => 8,
        58 | 67 | 75 | 114 => 16,
        _ => 4,
    }
}

/// How long a known `.nv.info` attribute's payload is, and what it holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Len {
    /// Formats 1 to 3: the value is in the record's header.
    Value,
    Fixed(usize),
    /// Any number of 32-bit words.
    Words,
    /// Records of `n` 32-bit words whose first is an instruction offset into the described
    /// kernel's code (`n` = 1: a plain list of offsets).
    Offsets(usize),
    /// 32-bit indices of symbols of the symbol table.
    Symbols,
}

/// `.nv.info` attributes toolkits write, each with its format and payload length: those of the
/// cubins of nvcc 13.0 (sm_75 to sm_121, -G, -lineinfo, -rdc, clusters, cooperative groups,
/// printf, dynamic shared memory) and of NVIDIA's wheels (76,860 cubins, 41 million records)
/// that appear always in that format and length. (The wheels hold 17 more, 0x10 to 0x6d, not
/// checked: a newer toolkit's attribute must pass.) An attribute whose payload lists
/// instruction offsets has the first word of every record inside the kernel's code in every
/// one of those cubins (the lists, pairs and 3- and 4-word records below). Attributes not
/// listed are walked over by their declared length (format 4) and otherwise not checked: see
/// docs/hardening.md.
const NV_INFO_ATTRS: &[(u8, u8, Len)] = &[
    (0x03, 4, Len::Offsets(1)), // JUMPTABLE_RELOCS (in no cubin of the wheels; see below)
    (0x04, 1, Len::Value),      // CTAIDZ_USED
    (0x05, 4, Len::Fixed(12)),  // MAX_THREADS
    (0x0a, 4, Len::Fixed(8)),   // PARAM_CBANK: symbol, offset and size
    (0x0f, 4, Len::Symbols),    // EXTERNS: 4 to 128 bytes
    (0x11, 4, Len::Fixed(8)),   // FRAME_SIZE: symbol, size
    (0x12, 4, Len::Fixed(8)),   // MIN_STACK_SIZE: symbol, size
    (0x17, 4, Len::Fixed(12)),  // KPARAM_INFO
    (0x19, 3, Len::Value),      // CBANK_PARAM_SIZE
    (0x1b, 3, Len::Value),      // MAXREG_COUNT
    (0x1c, 4, Len::Offsets(1)), // EXIT_INSTR_OFFSETS
    (0x1d, 4, Len::Offsets(1)), // S2RCTAID_INSTR_OFFSETS
    (0x1e, 4, Len::Fixed(4)),   // CRS_STACK_SIZE
    (0x23, 4, Len::Fixed(8)),   // MAX_STACK_SIZE: symbol, size
    (0x25, 4, Len::Offsets(1)), // LD_CACHEMOD_INSTR_OFFSETS
    (0x27, 4, Len::Offsets(1)), // ATOM_SYS_INSTR_OFFSETS
    (0x28, 4, Len::Offsets(1)), // COOP_GROUP_INSTR_OFFSETS
    (0x29, 4, Len::Words),      // COOP_GROUP_MASK_REGIDS
    (0x2a, 1, Len::Value),
    (0x2e, 4, Len::Offsets(2)), // ATOM16_EMUL_INSTR_REG_MAP: (offset, register) pairs
    (0x2f, 4, Len::Fixed(8)),   // REGCOUNT: symbol, count
    (0x30, 1, Len::Value),
    (0x31, 4, Len::Offsets(1)), // INT_WARP_WIDE_INSTR_OFFSETS
    (0x34, 4, Len::Words),      // INDIRECT_BRANCH_TARGETS
    (0x35, 1, Len::Value),
    (0x36, 4, Len::Fixed(4)),   // SW_WAR
    (0x37, 4, Len::Fixed(4)),   // CUDA_API_VERSION
    (0x39, 4, Len::Offsets(4)), // MBARRIER_INSTR_OFFSETS: 16-byte records
    (0x3d, 4, Len::Fixed(12)),
    (0x3e, 1, Len::Value),
    (0x40, 4, Len::Offsets(3)), // INSTR_REG_MAP: 12-byte records
    (0x41, 1, Len::Value),
    (0x44, 4, Len::Offsets(2)), // UNUSED_LOAD_BYTE_OFFSET: (offset, mask) pairs
    (0x46, 4, Len::Offsets(1)), // SYSCALL_OFFSETS: 4 to 232 bytes
    (0x4a, 2, Len::Value),
    (0x4c, 2, Len::Value),
    (0x50, 3, Len::Value),
    (0x53, 1, Len::Value),
    (0x55, 4, Len::Words),
    (0x5f, 3, Len::Value),
];

/// The attribute of the global `.nv.info` whose value (formats 1 to 3) CUDA's loader uses as an
/// index, and the values it can take (see `check_nv_info`).
const GLOBAL_INDEXED_ATTR: u8 = 0x5d;
const GLOBAL_INDEXED_LIMIT: usize = 8;

/// [`NV_INFO_ATTRS`] by attribute: the entry's place in it plus one, or 0 for an attribute not
/// listed. One load a record, where a search of the list took a comparison per entry passed.
const NV_INFO_INDEX: [u8; 256] = {
    let mut index = [0u8; 256];
    let mut k = 0;
    while k < NV_INFO_ATTRS.len() {
        assert!(index[NV_INFO_ATTRS[k].0 as usize] == 0, "an attribute listed twice");
        index[NV_INFO_ATTRS[k].0 as usize] = k as u8 + 1;
        k += 1;
    }
    index
};
const _: () = assert!(NV_INFO_ATTRS.len() < 255);

/// Where the kernel parameters sit in constant bank 0 for code of SM `sm`, for the generations
/// whose layout is known: the driver's launch data fills the bank below it. 2.15 million
/// kernels of NVIDIA's wheels, sm_50 to sm_121, all have their PARAM_CBANK attribute at their
/// generation's base; an sm_80 cubin labelled sm_90 in its entry header and e_flags (params at
/// 0x160 where sm_90 code has them at 0x210) crashed CUDA's loader on the H200 (issue 21). Other
/// SMs (later generations) are not checked.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn param_base(sm: u32) -> Option<u64> {
    match sm {
        50..=69 => Some(0x140),
        70..=89 => Some(0x160),
        90..=99 => Some(0x210),
        100..=129 => Some(0x380),
        _ => None,
    }
}

/// `.nv.info*`: 4-byte records (format, attribute, 16-bit value); format 4 carries that many
/// bytes after the header. The records must tile the section exactly. `sm`: the SM the cubin
/// is labelled for, whose parameter-bank layout PARAM_CBANK must follow.
#[inline(never)] // its own function: its loop keeps its values in registers
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_nv_info(d: &[u8], secs: Sections<'_>, i: usize, s: Sh<'_>, sm: u32) -> Result<(), String> {
    let nsecs = secs.count() as u64;
    if u64::from(s.info()) >= nsecs {
        return bad(cold_format!(".nv.info section {i}: the section it describes ({}) does not exist", s.info()));
    }
    // Attributes whose payload starts with a symbol index (register count, frame and stack
    // sizes, parameter bank) or lists symbols: the index must name a symbol of the linked
    // table, or of the cubin's symbol table where it links to none.
    let symtab = symbols_of(secs, s);
    let nsyms = symtab.map_or(0, |t| t.size() / SYM_LEN as u64);
    // The described section's size (a kernel's code), for the attributes that list
    // instruction offsets in it; 0 for the global .nv.info, where they have no place.
    // A section without file bytes holds no code: no offset lies in it, whatever its size says.
    let code_size = if s.info() != 0 {
        secs.get(s.info() as usize).filter(|t| has_file_bytes(t.ty())).map_or(0, |t| t.size())
    } else {
        0
    };
    let b = s.body(d).ok_or_else(|| cold_format!(".nv.info section {i} out of range"))?;
    walk_records(b, ".nv.info", i, |at, format, attr, len, payload| {
        // A known attribute has the one format toolkits write it in, and its length.
        let known = NV_INFO_INDEX[usize::from(attr)].checked_sub(1).and_then(|k| NV_INFO_ATTRS.get(usize::from(k)));
        if let Some(&(_, want, shape)) = known {
            let len_ok = match shape {
                Len::Value => true,
                Len::Fixed(n) => len == n,
                Len::Words | Len::Symbols => len % 4 == 0,
                Len::Offsets(n) => len % (4 * n.max(1)) == 0,
            };
            if format != want || (format == 4 && !len_ok) {
                return Err(err_nv_info_shape(i, at, attr, format, len));
            }
            let words = payload.get(..len).unwrap_or_default();
            let first_word = |r: &[u8]| r.first_chunk::<4>().map_or(0, |w| u64::from(u32::from_le_bytes(*w)));
            let mut words = words.chunks_exact(4).map(first_word);
            match shape {
                // Instruction offsets in the kernel's code: 8-byte aligned, an instruction's
                // 8 bytes inside it (the loader may patch there). The first word of every
                // record (`len` is a whole number of them, checked above).
                Len::Offsets(n) => {
                    let list = payload.get(..len).unwrap_or_default();
                    let records = list.chunks_exact(4 * n.max(1));
                    if let Some(o) = records.map(first_word).find(|&o| o % 8 != 0 || o + 8 > code_size) {
                        if !holds_records(list, code_size) {
                            return Err(err_nv_info_offset(i, attr, o, code_size));
                        }
                    }
                }
                Len::Symbols => {
                    if let Some(sym) = words.find(|&sym| sym >= nsyms) {
                        return Err(err_nv_info_symbol(i, attr, sym, nsyms));
                    }
                }
                _ => {}
            }
        }
        if matches!(format, 1..=3) {
            // The global table's attribute 0x5d, which no toolkit writes: CUDA 13.0's loader
            // (driver 580) reads its value as an index into a table of 8 and crashed on every
            // value from 8 up, in any of these formats, in cubins with kernels and without; in a
            // kernel's table, and in format 4, any value loaded (a sweep of every attribute
            // number in every format at both places found no other: docs/hardening.md).
            if attr == GLOBAL_INDEXED_ATTR && s.info() == 0 && len >= GLOBAL_INDEXED_LIMIT {
                return Err(err_nv_info_index(i, at, attr, len));
            }
            return Ok(()); // the value is in the header
        }
        if format == 4 && len >= 4 && matches!(attr, 0x0a | 0x11 | 0x12 | 0x23 | 0x2f) {
            // A payload cut short by the section's end names no symbol (and is refused by the
            // walk).
            let sym = u64::from(payload.first_chunk::<4>().map_or(u32::MAX, |v| u32::from_le_bytes(*v)));
            if sym >= nsyms {
                return Err(err_nv_info_symbol(i, attr, sym, nsyms));
            }
            if attr == 0x0a && len == 8 {
                if let (Some(t), Some(p)) = (symtab, payload.get(4..8)) {
                    let (offset, size) =
                        (u64::from(u16::from_le_bytes([p[0], p[1]])), u64::from(u16::from_le_bytes([p[2], p[3]])));
                    check_param_bank(d, secs, t, sym, offset, size, sm)
                        .map_err(|why| cold_format!(".nv.info section {i}: {why}"))?;
                }
            }
        }
        Ok(())
    })
}

/// Whether an instruction-offset list's payload is instead records of its own: a hand-written
/// kernel of TensorRT 8.4 to 8.6 (`libnvinfer_plugin`, sm_75, sm_80 and sm_90 builds of one
/// kernel, assembled by a tool of their own; 8.4's sm_87 build has the plain form) has an
/// EXIT_INSTR_OFFSETS record whose payload is an EXIT_INSTR_OFFSETS record (its one exit) then
/// an INDIRECT_BRANCH_TARGETS record. The records must tile the payload, each in its
/// attribute's one format and length, and every offset they list must be an instruction of the
/// kernel, as at the top level; one level only. On the H100 (driver 580) raw CUDA loaded the
/// sm_90 image into a context, and nvcc's cubin with an exit offset past its code, and the
/// 1,902 mutants of such nesting crashed nothing through cudyn (docs/hardening.md).
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn holds_records(payload: &[u8], code_size: u64) -> bool {
    let in_code = |o: u64| o % 8 == 0 && o + 8 <= code_size;
    let mut any = false;
    let tiled = walk_records(payload, ".nv.info", 0, |_, format, attr, len, after| {
        let known = NV_INFO_INDEX[usize::from(attr)].checked_sub(1).and_then(|k| NV_INFO_ATTRS.get(usize::from(k)));
        let words = after.get(..len).unwrap_or_default();
        let ok = match known {
            Some(&(_, 4, Len::Offsets(n))) if format == 4 && len > 0 && len % (4 * n.max(1)) == 0 => words
                .chunks_exact(4 * n.max(1))
                .all(|r| r.first_chunk::<4>().is_some_and(|w| in_code(u64::from(u32::from_le_bytes(*w))))),
            Some(&(_, 4, Len::Words)) => format == 4 && len % 4 == 0,
            _ => false,
        };
        any = true;
        if ok {
            Ok(())
        } else {
            Err(String::new())
        }
    });
    tiled.is_ok() && any
}

/// The records of `.nv.info` and `.nv.compat`, which must tile their section: a u8 format, a
/// u8 attribute and a u16 value, and in format 4 that many bytes after the header; formats 1
/// to 3 carry their value in the header, and no other format exists. `each(at, format,
/// attribute, value, after)` sees every record first (`at`: its place in the section, `after`:
/// the rest of the section past its header), then the walk moves past it; a format other than
/// 1 to 4, a record running past the section or a section cut inside a header is refused in
/// `table`'s name.
#[inline(always)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn walk_records(
    b: &[u8],
    table: &str,
    i: usize,
    mut each: impl FnMut(usize, u8, u8, usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut rest = b;
    while let Some((header, after)) = rest.split_first_chunk::<4>() {
        let at = b.len() - rest.len();
        let header = u32::from_le_bytes(*header);
        let (format, attr, value) = (header as u8, (header >> 8) as u8, (header >> 16) as usize);
        each(at, format, attr, value, after)?;
        rest = match format {
            1..=3 => after,
            4 => after.get(value..).ok_or_else(|| err_record(table, i, at, "runs past the section"))?,
            _ => return Err(err_record_format(table, i, at, format)),
        };
    }
    if !rest.is_empty() {
        return Err(err_record(table, i, b.len() - rest.len(), "is cut short"));
    }
    Ok(())
}

/// PARAM_CBANK: a kernel's parameters are `size` bytes at `offset` of the constant bank whose
/// section symbol `sym` names. The driver writes them there at every launch: they lie inside
/// that section (offset + size is its size exactly in all 1.86 million of NVIDIA's wheels), and
/// at the base of `sm`'s generation (`param_base`).
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_param_bank(
    d: &[u8],
    secs: Sections<'_>,
    symtab: Sh<'_>,
    sym: u64,
    offset: u64,
    size: u64,
    sm: u32,
) -> Result<(), String> {
    // Before sm_90, parameters past the classic 4 KiB lie further into the bank (nvcc 13 puts
    // them at 0x1a80 in sm_80 code; cuTENSOR 2.8 ships such sm_75 and sm_80 code, 10,656-10,672
    // bytes); sm_90 and later code keeps them at the base, as every other kernel does (code of
    // another generation labelled sm_90 crashed CUDA's loader).
    let large = size > 4096 && sm < 90;
    if let Some(base) = param_base(sm).filter(|&b| b != offset && !(large && offset > b)) {
        return Err(cold_format!(
            "the kernel parameters are at {offset:#x} of constant bank 0, where sm_{sm} code has them at {base:#x} (code of another GPU generation labelled sm_{sm}?)"
        ));
    }
    // The bank is the section the symbol is defined in, with the bytes the driver writes the
    // parameters over. An undefined symbol (index 0) is a relocatable cubin's reference to
    // `.nv.constant0.<kernel>` by name, resolved when CUDA links it (cuBLAS 13.4 ships 66 such
    // sm_75 images): not checked here. A section without file bytes names no bank (the check
    // was skipped for it); a reserved index was refused with the symbol table.
    let Some(shndx) = symtab
        .body(d)
        .and_then(|b| Rec::<SYM_LEN>::at(b, usize::try_from(sym).ok()?.checked_mul(SYM_LEN)?))
        .map(|r| r.u16::<6>())
    else {
        return Ok(());
    };
    if shndx == 0 {
        return Ok(());
    }
    let Some(bank) = secs.get(usize::from(shndx)).filter(|b| b.ty() != SHT_NULL && has_file_bytes(b.ty())) else {
        return Err(cold_format!(
            "the kernel parameters' constant bank (symbol {sym}, section index {shndx:#x}) is no section with contents"
        ));
    };
    if offset.checked_add(size).is_none_or(|end| end > bank.size()) {
        return Err(cold_format!(
            "the kernel parameters ({size} bytes at {offset:#x}) run past their constant bank ({} bytes)",
            bank.size()
        ));
    }
    Ok(())
}

// The messages of the checks made in loops, built out of line (see the module comment).

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_name(i: usize, name: u32, size: u64) -> String {
    cold_format!("section {i}'s name offset {name} is outside the name table ({size} bytes)")
}

/// The first failing part of a header that `header_ok` refuses.
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_header(i: usize, s: Sh<'_>, n: u64) -> String {
    let align = s.align();
    if align > 1 && !align.is_power_of_two() {
        cold_format!("section {i}'s alignment {align} is not a power of two")
    } else if s.flags() & !SHF_KNOWN != 0 {
        cold_format!("section {i}'s flags {:#x} hold bits no toolkit writes ({:#x})", s.flags(), s.flags() & !SHF_KNOWN)
    } else if s.flags() & SHF_INFO_LINK != 0 && ((s.info() == 0 && s.ty() != SHT_NOBITS) || u64::from(s.info()) >= n) {
        cold_format!("section {i} refers to section {}, which does not exist", s.info())
    } else if u64::from(s.link()) >= n && !matches!(s.ty(), SHT_REL | SHT_RELA | SHT_CUDA_INFO | SHT_CUDA_CALLGRAPH) {
        cold_format!("section {i} links to section {}, which does not exist", s.link())
    } else {
        cold_format!("section {i}'s sh_info {} is past what it can refer to", s.info())
    }
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_kernel_symbol(i: usize, kernel: &[u8]) -> String {
    cold_format!("section {i} (.text.{}) has no symbol of that name", quoted(cstr(kernel)))
}

/// A name for a message: its first 100 bytes, and how long it is when longer.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn quoted(name: &[u8]) -> String {
    const MAX: usize = 100;
    match name.get(..MAX) {
        Some(head) if name.len() > MAX => {
            cold_format!("{}... ({} bytes)", String::from_utf8_lossy(head), name.len())
        }
        _ => String::from_utf8_lossy(name).into_owned(),
    }
}

/// Whether a relocation section with or without `entries` may not target a section named
/// `name` (running on past its NUL): a kernel's parameter bank (`.nv.constant0...`), which the
/// launch fills in, is never a target; a constant bank that sh_info attaches to a kernel's code
/// has no relocations. In two extracted sets (76,317 images; 68,939 relocation sections into
/// constant banks) the 30,362 into kernels' banks (`.nv.constant2.<kernel>`: DeepGEMM's,
/// FlashInfer's, cuDNN's, NPP's, NCCL's) are all empty; those with entries are into the
/// module's banks `.nv.constant3` and `.nv.constant4`.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn is_unrelocated_bank(name: &[u8], secs: Sections<'_>, target: Sh<'_>, entries: bool) -> bool {
    let attached = || target.info() != 0 && secs.get(target.info() as usize).is_some_and(is_code);
    name.starts_with(b".nv.constant0") || (entries && name.starts_with(b".nv.constant") && attached())
}

/// The name at offset `name` of `symtab`'s string table, if it lies there.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn symbol_name<'a>(d: &'a [u8], secs: Sections<'a>, symtab: Sh<'_>, name: u32) -> Option<&'a [u8]> {
    let strings = secs.get(symtab.link() as usize).and_then(|t| t.body(d))?;
    strings.get(name as usize..).map(cstr)
}

/// Whether a symbol's name (the string table from its name's offset) is that of a function the
/// driver supplies.
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn driver_function(name: &[u8]) -> bool {
    let name = cstr(name);
    DRIVER_PROVIDED.contains(&name) || name.starts_with(b"__cuda_syscall")
}

/// Whether a name (running on past its NUL) starts as one of `DRIVER_PROVIDED` does: two bytes
/// compared inline, so that the names are compared for few symbols.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn may_be_driver_function(name: &[u8]) -> bool {
    matches!(name.first_chunk::<2>(), Some(b"vp" | b"__" | b"ma" | b"fr"))
}

/// Whether symbol name `name` (an offset in `symtab`'s string table) is one the driver supplies.
#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn driver_provides(d: &[u8], secs: Sections<'_>, symtab: Sh<'_>, name: u32) -> bool {
    let name = symbol_name(d, secs, symtab, name).unwrap_or_default();
    driver_function(name) || name.starts_with(b".nv.reservedSmem")
}

#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_unlinked(
    d: &[u8],
    secs: Sections<'_>,
    symtab: Sh<'_>,
    shnames: Option<&[u8]>,
    name: u32,
    i: usize,
    target: u32,
    n: usize,
) -> String {
    let name = symbol_name(d, secs, symtab, name).unwrap_or(b"?");
    let section = shnames.and_then(|t| t.get(target as usize..)).map(cstr).unwrap_or(b"?");
    cold_format!(
        "relocation section {i}: initialised data ({}) refers to '{}', which this code does not define: it is \
         relocatable device code (-rdc) never linked with the code that defines it ({n} relocations there); link \
         its parts into one with nvJitLink (cudyn_link) first. CUDA's loader dies on such an image",
        quoted(section),
        quoted(name)
    )
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_symbol_name(k: usize, name: u64, names: u64) -> String {
    cold_format!("symbol {k}: name offset {name} is outside its string table ({names} bytes)")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_symbol_info(k: usize, info: u8, why: &str) -> String {
    cold_format!("symbol {k}: st_info {info:#04x} (binding {}, type {}): {why}", info >> 4, info & 0xf)
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_symbol_reserved(k: usize, shndx: u16) -> String {
    cold_format!("symbol {k}: section index {shndx:#x} is a reserved one (SHN_LORESERVE and above), which CUDA's loader takes for a section")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_symbol_section(k: usize, shndx: u16, n: u64) -> String {
    cold_format!("symbol {k}: section index {shndx} does not exist ({n} sections)")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_symbol_extent(k: usize, value: u64, size: u64, shndx: u16, section_size: u64) -> String {
    cold_format!("symbol {k}: [{value:#x}, +{size:#x}) lies outside its section {shndx} ({section_size} bytes)")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_reloc_symbol(k: usize, i: usize, sym: u64, nsyms: u64) -> String {
    cold_format!("relocation {k} of section {i}: symbol {sym} does not exist ({nsyms} symbols)")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_reloc_type(k: usize, i: usize, r_type: u32) -> String {
    cold_format!(
        "relocation {k} of section {i}: type {r_type:#x} is no relocation type (they are below {R_CUDA_TYPE_LIMIT:#x})"
    )
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_reloc_offset(k: usize, i: usize, offset: u64, width: u64, size: u64) -> String {
    cold_format!(
        "relocation {k} of section {i}: its {width} bytes at {offset:#x} are not all inside its section ({size} bytes)"
    )
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_record(table: &str, i: usize, pos: usize, what: &str) -> String {
    cold_format!("{table} section {i}: record at {pos} {what}")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_nv_info_shape(i: usize, pos: usize, attr: u8, format: u8, len: usize) -> String {
    cold_format!(".nv.info section {i}: record at {pos}, attribute {attr:#x}, has format {format} and length {len}, which toolkits do not write")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_nv_info_offset(i: usize, attr: u8, offset: u64, size: u64) -> String {
    cold_format!(".nv.info section {i}: attribute {attr:#x} lists instruction offset {offset:#x}, not an instruction of its {size}-byte kernel")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_nv_info_index(i: usize, pos: usize, attr: u8, value: usize) -> String {
    cold_format!(".nv.info section {i}: record at {pos}, attribute {attr:#x} of the global table, has value {value}, past the {GLOBAL_INDEXED_LIMIT} entries CUDA's loader indexes with it")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_record_format(table: &str, i: usize, pos: usize, format: u8) -> String {
    cold_format!("{table} section {i}: record at {pos} has unknown format {format}")
}

#[cold]
#[inline(never)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn err_nv_info_symbol(i: usize, attr: u8, sym: u64, nsyms: u64) -> String {
    cold_format!(".nv.info section {i}: attribute {attr:#x} names symbol {sym}, which does not exist ({nsyms} symbols)")
}

/// `.nv.compat`: records as in `.nv.info` (u8 format, u8 attribute, u16 value; format 4 carries
/// `value` bytes after it), which must tile the section, as they do in all 42,116 such sections
/// of the last four extracted sets (attributes 0x02 to 0x0e, formats 2 to 4). The loader reads
/// them; a record walked past the section's end would read past it. Ok(true) if attribute 0x09
/// (arch-specific) is set to 1.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
fn check_compat(d: &[u8], i: usize, s: Sh<'_>) -> Result<bool, String> {
    let body = s.body(d).ok_or_else(|| cold_format!(".nv.compat section {i} out of range"))?;
    let mut arch_specific = false;
    walk_records(body, ".nv.compat", i, |_, format, attr, value, _| {
        // The value's low byte is 1.
        arch_specific |= attr == COMPAT_ATTR_ARCH_SPECIFIC && format == 2 && value & 0xff == 1;
        Ok(())
    })?;
    Ok(arch_specific)
}

#[cfg(test)]
mod tests {
    use crate::image::{inspect, CodeKind};

    /// The word-compare lookup of a section name's type against a plain scan of the list:
    /// every listed name, each cut short, run on into the next name or into a longer name, and
    /// names that share only a prefix, in tables that end right after them.
    #[test]
    fn named_type_is_the_lists_answer() {
        let plain = |name: &[u8]| super::NAMED_TYPES.iter().find(|n| name.starts_with(n.name)).map(|n| n.ty);
        let mut names: Vec<Vec<u8>> = Vec::new();
        for n in &super::NAMED_TYPES {
            let bare = n.name.strip_suffix(b"\0").unwrap_or(n.name);
            for cut in 0..=bare.len() {
                names.push(bare[..cut].to_vec());
                let mut n = bare[..cut].to_vec();
                n.push(0);
                names.push(n);
            }
            for tail in [&b"\0.nv.info\0"[..], b"x\0", b".k\0", b"\0\0\0\0\0\0\0\0", b"abcdefgh"] {
                let mut n = bare.to_vec();
                n.extend_from_slice(tail);
                names.push(n);
            }
        }
        for n in [&b".nv.constant0.k\0"[..], b".nv.shared.k\0", b".nv.infox\0", b".notes\0", b".texts\0", b"text.k\0"] {
            names.push(n.to_vec());
        }
        for n in &names {
            assert_eq!(super::named_type_of(n), plain(n), "{:?}", String::from_utf8_lossy(n));
        }
    }

    #[test]
    fn same_cstr_compares_c_strings() {
        let plain = |name: &[u8], sym: &[u8]| {
            let k = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            sym.starts_with(k) && sym.get(k.len()) == Some(&0)
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as usize
        };
        for _ in 0..200_000 {
            // Short strings over a tiny alphabet, so that equal prefixes and NULs are common.
            let mut name: Vec<u8> = (0..next(20)).map(|_| b"ab\0"[next(3)]).collect();
            let mut sym: Vec<u8> = if next(2) == 0 { name.clone() } else { Vec::new() };
            sym.extend((0..next(20)).map(|_| b"ab\0"[next(3)]));
            if next(4) == 0 {
                name.truncate(next(name.len() as u64 + 1));
            }
            let mut budget = usize::MAX;
            assert_eq!(super::same_cstr(&name, &sym, &mut budget), Some(plain(&name, &sym)), "{name:?} vs {sym:?}");
            // A budget too small for the comparison gives no answer, never a wrong one.
            let mut small = next(24);
            let got = super::same_cstr(&name, &sym, &mut small);
            assert!(got.is_none() || got == Some(plain(&name, &sym)), "{name:?} vs {sym:?}: {got:?}");
        }
    }

    /// The branch-free header check against the checks as first written.
    #[test]
    fn header_ok_is_the_plain_check() {
        let values =
            [0u64, 1, 2, 3, 4, 5, 6, 7, 8, 16, 47, 48, 49, 64, 0x40, 0xffff_ffff, 1 << 63, (1 << 63) + 1, u64::MAX];
        let mut h = [0u8; 64];
        for &align in &values {
            for &info in &values {
                let info = info as u32;
                for (flags, ty) in [0u64, 0x40, 0x42, 0x100006, 0x1000_0040, 0x80, 0x0080_0000_0000_0006, 1 << 32]
                    .into_iter()
                    .flat_map(|f| [(f, 0u32), (f, 8)])
                {
                    for n in [1u64, 2, 48, 0xffff_ffff, u64::MAX] {
                        h[4..8].copy_from_slice(&ty.to_le_bytes());
                        h[8..16].copy_from_slice(&flags.to_le_bytes());
                        h[44..48].copy_from_slice(&info.to_le_bytes());
                        h[48..56].copy_from_slice(&align.to_le_bytes());
                        let link = info.rotate_left(7); // another value, from the same list
                        h[40..44].copy_from_slice(&link.to_le_bytes());
                        let s = super::Sh(super::Rec::at(&h, 0).unwrap());
                        let plain = (align <= 1 || align.is_power_of_two())
                            && (flags & 0x40 == 0 || (info != 0 && u64::from(info) < n) || (ty == 8 && info == 0))
                            && u64::from(link) < n
                            && flags & !0xfff0_0077 == 0
                            // a section of type 0: info is an index, unless it is linked
                            // (then check_symbol_info reads it)
                            && (link != 0 || u64::from(info) < n);
                        assert_eq!(
                            super::header_ok(s, n),
                            plain,
                            "type {ty} align {align} info {info} flags {flags:#x} n {n}"
                        );
                    }
                }
            }
        }
    }

    /// A cubin of one kernel section `.text.<kernel>` and a symbol table of `symbols`, whose
    /// names are in `strtab`; all its symbols are in the kernel's section.
    fn crafted_cubin(kernel: &[u8], strtab: &[u8], symbols: &[u32]) -> Vec<u8> {
        let mut shstrtab = b"\0.shstrtab\0.strtab\0.symtab\0.text.".to_vec();
        shstrtab.extend_from_slice(kernel);
        shstrtab.push(0);
        let text = vec![0u8; 16];
        let symtab: Vec<u8> = symbols
            .iter()
            .flat_map(|&name| {
                let mut sym = [0u8; 24];
                sym[0..4].copy_from_slice(&name.to_le_bytes());
                sym[4] = 0x12; // global function
                sym[6..8].copy_from_slice(&4u16.to_le_bytes());
                sym
            })
            .collect();
        let mut d = vec![0u8; 64];
        let place = |d: &mut Vec<u8>, body: &[u8]| {
            let at = d.len();
            d.extend_from_slice(body);
            d.resize(d.len().next_multiple_of(8), 0);
            (at as u64, body.len() as u64)
        };
        // The code section is code (SHF_ALLOC | SHF_EXECINSTR), as nvcc writes it.
        let sections = [
            (1u32, 3u32, 0u64, place(&mut d, &shstrtab), 0u32, 0u64),
            (11, 3, 0, place(&mut d, strtab), 0, 0),
            (19, 2, 0, place(&mut d, &symtab), 2, 24),
            (27, 1, super::SHF_ALLOC | super::SHF_EXECINSTR, place(&mut d, &text), 0, 0),
        ];
        let shoff = d.len() as u64;
        d.extend_from_slice(&[0u8; 64]); // the null section
        for (name, ty, flags, (off, size), link, entsize) in sections {
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&ty.to_le_bytes());
            h[8..16].copy_from_slice(&flags.to_le_bytes());
            h[24..32].copy_from_slice(&off.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
            h[40..44].copy_from_slice(&link.to_le_bytes());
            h[56..64].copy_from_slice(&entsize.to_le_bytes());
            d.extend_from_slice(&h);
        }
        d[..9].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41, 8]);
        d[16..18].copy_from_slice(&2u16.to_le_bytes());
        d[18..20].copy_from_slice(&190u16.to_le_bytes());
        d[20..24].copy_from_slice(&1u32.to_le_bytes());
        d[40..48].copy_from_slice(&shoff.to_le_bytes());
        d[48..52].copy_from_slice(&0x0600_5a04u32.to_le_bytes());
        d[52..54].copy_from_slice(&64u16.to_le_bytes());
        d[58..60].copy_from_slice(&64u16.to_le_bytes());
        d[60..62].copy_from_slice(&5u16.to_le_bytes());
        d[62..64].copy_from_slice(&1u16.to_le_bytes());
        d
    }

    /// Symbols whose names share a long prefix with their kernel's cost linear time, not
    /// quadratic (a 15 MB image of this kind took 192 s to refuse), and the message quotes the
    /// kernel's name shortened. In a release build the refusal takes under 100 ms (measured:
    /// 40 ms). A debug build (what `cargo test` runs) takes 130-450 ms just to walk that many
    /// symbols, more under AddressSanitizer (scripts/sanitize.sh), so there the bound is
    /// relative: at most 8 times the time for an image of the same size whose symbol names
    /// share nothing with the kernel's, plus 200 ms (measured: 1.8-2.7 times, 2.4-3.5 under
    /// ASan on a busy 2-core machine; the quadratic walk was over 1,000 times).
    #[test]
    fn kernel_symbol_check_is_linear() {
        use std::time::{Duration, Instant};
        const L: usize = 1 << 20;
        let symbols = (13 << 20) / 24; // 13 MiB of symbols
        let kernel = [vec![b'A'; L - 1], vec![b'B']].concat();
        let mut strtab = vec![0u8];
        strtab.extend(std::iter::repeat_n(b'A', L));
        strtab.push(0);
        let time = |image: &[u8]| {
            // The best of three: the bound is on the work, not on the machine's other load.
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    let r = inspect(image);
                    (t.elapsed(), r)
                })
                .min_by_key(|(t, _)| *t)
                .unwrap()
        };
        // The baseline: as many symbols, none of whose names starts as the kernel's does.
        let mut plain_strtab = strtab.clone();
        plain_strtab[1] = b'Z';
        let (baseline, _) = time(&crafted_cubin(&kernel, &plain_strtab, &vec![1; symbols]));
        let limit =
            if cfg!(debug_assertions) { baseline * 8 + Duration::from_millis(200) } else { Duration::from_millis(100) };
        // Every symbol names one string that differs from the kernel's name in its last byte;
        // or each names another suffix of a run of 'A's.
        let same_name = crafted_cubin(&kernel, &strtab, &vec![1; symbols]);
        let suffixes: Vec<u32> = (0..symbols as u32).map(|i| i % L as u32 + 1).collect();
        let suffixes = crafted_cubin(&kernel, &strtab, &suffixes);
        for (what, image) in [("one shared name", &same_name), ("overlapping names", &suffixes)] {
            assert!(image.len() > 14 << 20, "{what}: {} bytes", image.len());
            let (took, r) = time(image);
            let e = r.expect_err(what).to_string();
            assert!(e.contains("has no symbol of that name"), "{what}: {e}");
            assert!(e.len() < 300, "{what}: a {}-byte message", e.len());
            assert!(
                took < limit,
                "{what}: {took:?} to refuse {} bytes (limit {limit:?}, baseline {baseline:?})",
                image.len()
            );
            eprintln!("{what}: refused {} bytes in {took:?} (baseline {baseline:?})", image.len());
        }
        // The same with the kernel's symbol last: found (by the linear path), and accepted.
        let at = strtab.len() as u32;
        strtab.extend_from_slice(&kernel);
        strtab.push(0);
        let mut names = vec![1; symbols];
        *names.last_mut().unwrap() = at;
        let (took, r) = time(&crafted_cubin(&kernel, &strtab, &names));
        assert_eq!(r.unwrap().kind, CodeKind::Cubin);
        assert!(took < limit, "{took:?} to accept (limit {limit:?})");
    }

    /// The linear path agrees with the plain one on small images (a budget of 0 forces it).
    #[test]
    fn the_hash_path_finds_the_same_symbols() {
        let strtab = b"\0kern\0kernel\0kerne\0kernel2\0".to_vec();
        for (names, found) in [
            (vec![1, 6, 13], true),
            (vec![1, 13, 19], false),
            (vec![2, 8], false), // "ern", "ernel": suffixes, not the name
            (vec![6], true),
            (vec![], false),
        ] {
            let image = crafted_cubin(b"kernel", &strtab, &names);
            assert_eq!(inspect(&image).is_ok(), found, "{names:?}");
            let secs =
                super::Sections::new(&image, u64::from_le_bytes(image[40..48].try_into().unwrap()), 64, 5).unwrap();
            let (mut small, mut large) = ([0; 16], Vec::new());
            let names_table = super::string_table(&image, secs, 1, "names").unwrap();
            let mut k = super::KernelSymbols {
                names: names_table,
                missing: super::SectionSet::new(&mut small, &mut large, 5),
                budget: 0,
                deferred: true,
            };
            k.missing.insert(4);
            let symtab = secs.get(3).unwrap();
            let strtab_body = secs.get(2).unwrap().body(&image).unwrap();
            super::match_by_hash(symtab.body(&image).unwrap(), strtab_body, secs, &mut k);
            assert_eq!(!k.missing.contains(4), found, "{names:?}");
        }
    }
}
