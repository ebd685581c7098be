//! What an image holds, entry by entry and kernel by kernel, read from its bytes alone (no GPU,
//! no CUDA library): what `cudyn inspect` prints, and what a program can look at before loading.
//!
//! [`contents`] gives the verdict of [`inspect`](super::inspect) and, as far as the image can be
//! read, the fatbin entries (kind, architecture, compression, sizes, the source name), and for
//! each cubin its kernels (parameter layout and resources) and globals, for each PTX text its
//! entry points and module-scope variables ([`ptx`]). Read-only and after validation: the
//! tables of a cubin are read only once it passed [`inspect`](super::inspect), through the
//! bounded readers of `read.rs`; nothing here panics or reads outside the slice, and what cannot
//! be read is left out (the verdict says what is wrong).

// The tables, as read here (all little-endian; found in nvcc 12.x/13.0 output):
//
// * `.nv.info.<kernel>` (sh_type SHT_LOPROC 0x70000000, sh_info the kernel's `.text.<kernel>`
//   section) and the global `.nv.info`: records of (u8 format, u8 attribute, u16 value or
//   length); format 4 carries that many bytes after the header. Per kernel: KPARAM_INFO (0x17,
//   12 bytes: `u32 0, u16 ordinal, u16 offset, u32 word`, the size in bits 18..31 of the word),
//   CBANK_PARAM_SIZE (0x19, the parameter buffer's size), MAX_THREADS (0x05, 3 x u32: the
//   `__launch_bounds__` / `.maxntid` block) and REQNTID (0x10, 3 x u32: `.reqntid`). In the
//   global table, each with the kernel's symbol index first: REGCOUNT (0x2f, registers per
//   thread), FRAME_SIZE (0x11, local memory per thread), MIN_STACK_SIZE (0x12) and
//   MAX_STACK_SIZE (0x23, stack bytes with what the kernel calls).
// * `.nv.shared.<kernel>` (NOBITS): the kernel's static shared memory. From sm_90 on, ptxas puts
//   the 1 KiB CUDA reserves per block at its start (the section is 1 KiB larger than what
//   `ptxas -v` reports for every kernel with shared memory, sm_90 to sm_120): that KiB is not
//   counted. `.nv.constant0.<kernel>`: constant bank 0 (parameters and what the driver puts
//   there, `ptxas -v`'s cmem[0]).
// * Globals: STT_OBJECT symbols defined in a `.nv.global*` section (`__device__`, `__managed__`)
//   or `.nv.constant3` (`__constant__`), with their sizes.

mod ptx;

use std::collections::HashMap;

use super::cubin::ELF_MAGIC;
use super::decompress;
use super::fatbin::{
    concat_members, Compression as Packing, ConcatMember, EntryHeader, FATBIN_ENTRY_HEADER_LEN,
    FATBIN_FLAG_ARCH_SPECIFIC, FATBIN_FLAG_FAMILY_SPECIFIC, FATBIN_HEADER_LEN, FATBIN_KIND_CONCAT, FATBIN_KIND_ELF,
    FATBIN_KIND_LTOIR, FATBIN_KIND_PTX,
};
use super::info::{ArchCode, ArchVariant, CodeKind, ImageError, ImageInfo};
use super::read::{read_u16, read_u32, read_u64, Rec};

/// A parameter's place in the kernel's parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// What a kernel uses of the GPU, as the image's tables say; `None` where the image does not
/// say (PTX leaves registers and memory to the JIT compiler).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resources {
    /// Registers per thread (a cubin's REGCOUNT).
    pub registers: Option<u32>,
    /// Static shared memory per block, in bytes (without the 1 KiB sm_90+ reserves).
    pub shared_bytes: Option<u64>,
    /// Local memory per thread, in bytes (the stack frame).
    pub local_bytes: Option<u32>,
    /// Stack bytes per thread with what the kernel calls, where the table says (recursion or
    /// calls through pointers can make it larger than `local_bytes`).
    pub stack_bytes: Option<u32>,
    /// Constant bank 0, in bytes: the parameters and what the driver puts there.
    pub constant_bytes: Option<u64>,
    /// The most threads per block, x × y × z, the kernel was built for (`__launch_bounds__`,
    /// `.maxntid`); None without a bound (the GPU's limit, and the registers, decide).
    pub max_threads: Option<[u32; 3]>,
    /// The block size the kernel requires (`.reqntid`), if it requires one.
    pub required_block: Option<[u32; 3]>,
}

/// One kernel of a cubin or PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Its symbol name (mangled for C++ kernels that are not `extern "C"`); bytes that are not
    /// UTF-8 are written `\xNN`.
    pub name: String,
    /// Its parameters, first to last.
    pub params: Vec<Param>,
    /// The size of the whole parameter buffer in bytes (0 for a kernel without parameters).
    pub param_bytes: u32,
    /// What it uses.
    pub resources: Resources,
}

/// Which memory a global lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// Global memory (`__device__`, `__managed__`, PTX `.global`).
    Global,
    /// Constant memory (`__constant__`, PTX `.const`).
    Constant,
}

impl Space {
    /// "global" or "constant".
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Constant => "constant",
        }
    }
}

/// A variable at module scope, as `cudyn_library_get_global` finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalInfo {
    /// Its symbol name (bytes that are not UTF-8 written `\xNN`).
    pub name: String,
    /// Its size in bytes, where the image says (a PTX array of unstated length does not).
    pub bytes: Option<u64>,
    /// Global or constant memory.
    pub space: Space,
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
    /// The source file name the toolkit recorded, if any (bytes that are not UTF-8 written
    /// `\xNN`).
    pub source_name: String,
    /// For a SASS entry of an accepted image, whether its cubin is relocatable device code
    /// ([`cubin_is_relocatable`]); None otherwise.
    pub relocatable: Option<bool>,
    /// The kernels of a SASS or PTX entry (empty for LTO-IR, and when the image is refused).
    pub kernels: Vec<KernelInfo>,
    /// Its globals (likewise).
    pub globals: Vec<GlobalInfo>,
}

/// Everything [`contents`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// What the first bytes say the image is ([`code_kind_of`](super::code_kind_of)).
    pub kind: CodeKind,
    /// The full validation's verdict ([`inspect`](super::inspect)): what cudyn would load, or
    /// why not.
    pub verdict: Result<ImageInfo, ImageError>,
    /// The entries of a fatbin, as far as their headers can be read (also when the verdict is
    /// an error, up to the first entry whose header cannot be read).
    pub entries: Vec<FatbinEntry>,
    /// The kernels of a cubin or PTX text (empty for other kinds, and when the verdict is an
    /// error).
    pub kernels: Vec<KernelInfo>,
    /// The globals of a cubin or PTX text (likewise).
    pub globals: Vec<GlobalInfo>,
}

/// What `data` holds. Never panics; reads nothing outside `data`.
pub fn contents(data: &[u8]) -> Contents {
    let kind = super::code_kind_of(data);
    let verdict = super::inspect(data);
    let valid = verdict.is_ok();
    let mut out = Contents { kind, verdict, entries: Vec::new(), kernels: Vec::new(), globals: Vec::new() };
    match kind {
        CodeKind::Cubin if valid => (out.kernels, out.globals) = cubin_tables(data),
        CodeKind::Ptx if valid => (out.kernels, out.globals) = ptx::tables(data),
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
            .max_by_key(|(i, c)| (c.sm(), c.variant() != ArchVariant::None, std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    };
    best(true).or_else(|| best(false))
}

/// A name read from an image: its bytes, those that are not UTF-8 as `\xNN`.
fn name_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            for chunk in b.utf8_chunks() {
                out.push_str(chunk.valid());
                for byte in chunk.invalid() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            out
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fatbin entries

/// The entries whose headers can be read; with `valid` (the image passed validation), the
/// kernels and globals of each SASS and PTX entry too.
fn fatbin_entries(d: &[u8], valid: bool) -> Vec<FatbinEntry> {
    let mut out = Vec::new();
    let header_len = FATBIN_HEADER_LEN as usize;
    let Some(payload) = read_u64(d, 8) else { return out };
    let end = usize::try_from(payload).ok().and_then(|p| p.checked_add(header_len)).map_or(d.len(), |e| e.min(d.len()));
    let mut at = header_len;
    let mut scratch = Vec::new();
    const HEADER: usize = FATBIN_ENTRY_HEADER_LEN as usize;
    while at.checked_add(HEADER).is_some_and(|e| e <= end) {
        let Some(h) = Rec::<HEADER>::at(d, at) else { break };
        let e = EntryHeader::read(h);
        if e.kind == 0 && e.header_size == 0 {
            break; // zero padding at the end of the container
        }
        if e.kind == FATBIN_KIND_CONCAT {
            // Each member is listed as an entry of its own (of a valid image: the members of
            // an entry that failed are not known).
            let next = usize::try_from(e.header_size)
                .ok()
                .zip(usize::try_from(e.payload_size).ok())
                .and_then(|(h, p)| at.checked_add(h)?.checked_add(p));
            let (Some(next), true) = (next, valid) else { break };
            let Some((members, run)) = concat_members(d, at) else { break };
            for ConcatMember { code, record, range } in members {
                let Some(m) = Rec::<HEADER>::at(record, 0).map(EntryHeader::read) else { break };
                let body = &run[range.clone()];
                let (kernels, globals) = code_tables(code, body);
                out.push(FatbinEntry {
                    offset: at as u64,
                    code,
                    compression: packing(&e),
                    header_bytes: record.len() as u64,
                    stored_bytes: e.payload_size,
                    code_bytes: range.len() as u64,
                    source_name: source_name(&m, record),
                    relocatable: matches!(code, ArchCode::Sass { .. }).then(|| cubin_is_relocatable(body)).flatten(),
                    kernels,
                    globals,
                });
            }
            if next <= at {
                break;
            }
            at = next;
            continue;
        }
        let variant = match (e.flags & FATBIN_FLAG_ARCH_SPECIFIC != 0, e.flags & FATBIN_FLAG_FAMILY_SPECIFIC != 0) {
            (true, _) => ArchVariant::A,
            (false, true) => ArchVariant::F,
            _ => ArchVariant::None,
        };
        let code = match e.kind {
            FATBIN_KIND_PTX => ArchCode::Ptx { sm: e.arch, variant },
            FATBIN_KIND_ELF => ArchCode::Sass { sm: e.arch, variant },
            FATBIN_KIND_LTOIR => ArchCode::LtoIr { sm: e.arch, variant },
            _ => break,
        };
        let compression = packing(&e);
        let Some(hs) = usize::try_from(e.header_size).ok() else { break };
        let Some(header) = d.get(at..at.saturating_add(hs)) else { break };
        let source_name = source_name(&e, header);
        let body_at = at.saturating_add(hs);
        let Some(stored) = usize::try_from(e.payload_size).ok().and_then(|p| d.get(body_at..body_at.checked_add(p)?))
        else {
            break;
        };
        let code_bytes = if compression == Compression::None { e.payload_size } else { e.uncompressed_size };
        let (mut kernels, mut globals, mut relocatable) = (Vec::new(), Vec::new(), None);
        if valid && matches!(e.kind, FATBIN_KIND_ELF | FATBIN_KIND_PTX) {
            // The image passed validation: every compressed payload decompresses within the cap.
            let body: Option<&[u8]> = match compression {
                Compression::None => Some(stored),
                _ => {
                    let stream = usize::try_from(e.compressed_size).ok().and_then(|n| stored.get(..n));
                    let size = usize::try_from(e.uncompressed_size).unwrap_or(usize::MAX);
                    let r = stream.map(|s| match compression {
                        Compression::Lz4 => decompress::lz4_block(s, size, &mut scratch),
                        _ => decompress::zstd_frame(s, size, &mut scratch),
                    });
                    matches!(r, Some(Ok(()))).then_some(scratch.as_slice())
                }
            };
            if let Some(body) = body {
                (kernels, globals) = if e.kind == FATBIN_KIND_ELF { cubin_tables(body) } else { ptx::tables(body) };
                relocatable = cubin_is_relocatable(body);
            }
        }
        out.push(FatbinEntry {
            offset: at as u64,
            code,
            compression,
            header_bytes: e.header_size,
            stored_bytes: e.payload_size,
            code_bytes,
            source_name,
            relocatable,
            kernels,
            globals,
        });
        match body_at.checked_add(stored.len()) {
            Some(next) if next > at => at = next,
            _ => break,
        }
    }
    out
}

fn packing(e: &EntryHeader) -> Compression {
    match e.compression() {
        Packing::None => Compression::None,
        Packing::Lz4 => Compression::Lz4,
        Packing::Zstd => Compression::Zstd,
    }
}

/// The source name an entry header (`header`, the whole of it) records, or "".
fn source_name(e: &EntryHeader, header: &[u8]) -> String {
    usize::try_from(e.name_offset)
        .ok()
        .zip(usize::try_from(e.name_len).ok())
        .and_then(|(o, n)| header.get(o..o.checked_add(n)?))
        .map(name_text)
        .unwrap_or_default()
}

/// The kernels and globals of a SASS or PTX entry's code (none for LTO-IR).
fn code_tables(code: ArchCode, body: &[u8]) -> (Vec<KernelInfo>, Vec<GlobalInfo>) {
    match code {
        ArchCode::Sass { .. } => cubin_tables(body),
        ArchCode::Ptx { .. } => ptx::tables(body),
        ArchCode::LtoIr { .. } => (Vec::new(), Vec::new()),
    }
}

// ---------------------------------------------------------------------------------------------
// Cubin tables

const ET_REL: u16 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_CUDA_INFO: u32 = 0x7000_0000;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const SHN_LORESERVE: u16 = 0xff00;
const NV_INFO_PREFIX: &[u8] = b".nv.info.";
const ATTR_MAX_THREADS: u8 = 0x05;
const ATTR_REQNTID: u8 = 0x10;
const ATTR_FRAME_SIZE: u8 = 0x11;
const ATTR_MIN_STACK_SIZE: u8 = 0x12;
const ATTR_PARAM_CBANK: u8 = 0x0a;
const ATTR_KPARAM_INFO: u8 = 0x17;
const ATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const ATTR_MAX_STACK_SIZE: u8 = 0x23;
const ATTR_REGCOUNT: u8 = 0x2f;
/// What ptxas puts at the start of a kernel's `.nv.shared.<kernel>` from sm_90 on.
const SHARED_RESERVED_SM90: u64 = 1024;

/// One section header of a cubin.
#[derive(Clone, Copy)]
struct Section {
    name: u32,
    ty: u32,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
}

/// A cubin's section table and section names, read through bounded readers.
struct Cubin<'a> {
    d: &'a [u8],
    sections: Vec<Section>,
    names: &'a [u8],
    sm: u32,
}

impl<'a> Cubin<'a> {
    fn read(d: &'a [u8]) -> Option<Self> {
        if !d.starts_with(&ELF_MAGIC) {
            return None;
        }
        let h = Rec::<64>::at(d, 0)?;
        let (shoff, shentsize) = (usize::try_from(h.u64::<40>()).ok()?, usize::from(h.u16::<58>()));
        let (mut shnum, mut shstrndx) = (usize::from(h.u16::<60>()), usize::from(h.u16::<62>()));
        if shentsize < 64 {
            return None;
        }
        // ELF extended numbering: the real counts live in section 0.
        if shnum == 0 {
            shnum = usize::try_from(read_u64(d, shoff.checked_add(32)?)?).ok()?;
        }
        if shstrndx == 0xffff {
            shstrndx = read_u32(d, shoff.checked_add(40)?)? as usize;
        }
        // Validation bounds the table by the image; a cap keeps a reader of an unvalidated
        // image (tests) from allocating for a count it cannot hold.
        let mut sections = Vec::with_capacity(shnum.min(d.len() / 64 + 1));
        for i in 0..shnum {
            let s = Rec::<64>::at(d, shoff.checked_add(i.checked_mul(shentsize)?)?)?;
            sections.push(Section {
                name: s.u32::<0>(),
                ty: s.u32::<4>(),
                offset: s.u64::<24>(),
                size: s.u64::<32>(),
                link: s.u32::<40>(),
                info: s.u32::<44>(),
            });
        }
        let names = sections.get(shstrndx).and_then(|s| body(d, s)).unwrap_or_default();
        let flags = h.u32::<48>();
        let sm = if h.u8::<8>() >= 8 { (flags >> 8) & 0xff } else { flags & 0xff };
        Some(Cubin { d, sections, names, sm })
    }

    /// The section names, read through [`Strings`].
    fn names(&self) -> Strings<'a> {
        Strings::new(self.names)
    }

    fn body(&self, s: &Section) -> &'a [u8] {
        body(self.d, s).unwrap_or_default()
    }
}

fn body<'a>(d: &'a [u8], s: &Section) -> Option<&'a [u8]> {
    let lo = usize::try_from(s.offset).ok()?;
    d.get(lo..lo.checked_add(usize::try_from(s.size).ok()?)?)
}

/// One ELF string table, read so that what it costs is bounded by its size whatever offsets
/// point into it. Many sections or symbols may name one string, or suffixes of it: reading
/// each name whole (to its NUL) made a 5 MB cubin whose 500 `.nv.info.*` tables all named one
/// 4 MB string cost 7 s and 2 GB, and such an image passes validation (which reads names only
/// as far as it compares them). So a name compared against a known string reads
/// only that string's bytes, and the names taken out whole (kernels, globals) are charged to
/// a budget of twice the table's size and 64 KiB: a toolchain's table names each kernel and
/// global once, so their names together are shorter than the table. A string is the bytes at
/// its offset up to the first NUL; one with no NUL before the table's end is empty.
struct Strings<'a> {
    table: &'a [u8],
    /// One past the table's last NUL: a string that starts before it ends within the table.
    ends_before: usize,
    budget: std::cell::Cell<usize>,
}

impl<'a> Strings<'a> {
    fn new(table: &'a [u8]) -> Self {
        let ends_before = table.iter().rposition(|&b| b == 0).map_or(0, |i| i + 1);
        Strings { table, ends_before, budget: std::cell::Cell::new(table.len().saturating_mul(2) + (64 << 10)) }
    }

    /// Whether the string at `at` begins with `prefix` (no NUL in it), reading `prefix.len()` bytes.
    fn starts_with(&self, at: u32, prefix: &[u8]) -> bool {
        let at = at as usize;
        at.checked_add(prefix.len()).is_some_and(|end| end < self.ends_before)
            && self.table.get(at..).is_some_and(|rest| rest.starts_with(prefix))
    }

    /// Whether the string at `at` is `parts` one after the other (no NUL in them).
    fn is(&self, at: u32, parts: &[&[u8]]) -> bool {
        let mut at = at as usize;
        for part in parts {
            match self.table.get(at..) {
                Some(rest) if rest.starts_with(part) => at += part.len(),
                _ => return false,
            }
        }
        self.table.get(at) == Some(&0)
    }

    /// What follows `prefix` in the string at `at`: None when the string does not begin with
    /// it, Some(None) when it does but the budget is spent ([`take`](Self::take)).
    fn after(&self, at: u32, prefix: &[u8]) -> Option<Option<&'a [u8]>> {
        // `take` reads to the first NUL, which lies past `prefix` (it has none).
        self.starts_with(at, prefix).then(|| self.take(at).and_then(|name| name.get(prefix.len()..)))
    }

    /// The string at `at`, whole, while the budget lasts (None after). Reads no further than
    /// the budget left: the search for its NUL is charged too.
    fn take(&self, at: u32) -> Option<&'a [u8]> {
        let at = at as usize;
        if at >= self.ends_before {
            return Some(&[]); // no NUL after it: empty
        }
        let rest = &self.table[at..];
        let left = self.budget.get();
        let Some(n) = rest.iter().take(left).position(|&b| b == 0) else {
            self.budget.set(0);
            return None;
        };
        self.budget.set(left - (n + 1));
        Some(&rest[..n])
    }
}

/// One `.nv.info` record: format, attribute, and its value (formats 1-3) or payload (format 4).
fn nv_info_records(mut rest: &[u8]) -> impl Iterator<Item = (u8, u8, u16, &[u8])> {
    std::iter::from_fn(move || {
        let (&[format, attr, v0, v1], after) = rest.split_first_chunk::<4>()?;
        let value = u16::from_le_bytes([v0, v1]);
        if format == 4 {
            let payload = after.get(..usize::from(value))?;
            rest = after.get(usize::from(value)..).unwrap_or_default();
            Some((format, attr, value, payload))
        } else {
            rest = after;
            Some((format, attr, value, &[][..]))
        }
    })
}

/// The kernels (in section order) and globals of a cubin; empty when its tables cannot be read.
fn cubin_tables(d: &[u8]) -> (Vec<KernelInfo>, Vec<GlobalInfo>) {
    let Some(c) = Cubin::read(d) else { return (Vec::new(), Vec::new()) };
    // Symbols: which section each is defined in (the global table names kernels by symbol).
    let symtab = c.sections.iter().find(|s| s.ty == SHT_SYMTAB);
    let symbols = symtab.map(|s| c.body(s)).unwrap_or_default();
    let strtab = symtab.and_then(|s| c.sections.get(s.link as usize)).map(|s| c.body(s)).unwrap_or_default();
    let symbol = |i: u32| Rec::<24>::at(symbols, (i as usize).checked_mul(24)?);
    let names = c.names();

    // The global `.nv.info`: per-kernel values keyed by the kernel's code section (the largest
    // where there are several). Looked up once per kernel: a map, not a scan, so that an image
    // of n kernels costs n lookups and not n times its records (5,000 kernels took 0.9 s).
    let mut per_section: HashMap<(u32, u8), u32> = HashMap::new();
    for s in c.sections.iter().filter(|s| s.ty == SHT_CUDA_INFO && names.is(s.name, &[b".nv.info"])) {
        for (format, attr, _, p) in nv_info_records(c.body(s)) {
            if format != 4
                || !matches!(attr, ATTR_REGCOUNT | ATTR_FRAME_SIZE | ATTR_MIN_STACK_SIZE | ATTR_MAX_STACK_SIZE)
            {
                continue;
            }
            let (Some(sym), Some(value)) = (read_u32(p, 0), read_u32(p, 4)) else { continue };
            if let Some(shndx) = symbol(sym).map(|r| r.u16::<6>()) {
                let v = per_section.entry((u32::from(shndx), attr)).or_insert(value);
                *v = (*v).max(value);
            }
        }
    }
    let global_value = |text: u32, attr: u8| per_section.get(&(text, attr)).copied();
    // Each kernel's `.nv.shared.<kernel>` and `.nv.constant0.<kernel>` sizes (the first section
    // of each name), gathered in one pass over the section table.
    let mut shared: HashMap<&[u8], u64> = HashMap::new();
    let mut constant: HashMap<&[u8], u64> = HashMap::new();
    for s in &c.sections {
        for (prefix, map) in [(&b".nv.shared."[..], &mut shared), (&b".nv.constant0."[..], &mut constant)] {
            if let Some(Some(kernel)) = names.after(s.name, prefix) {
                map.entry(kernel).or_insert(s.size);
            }
        }
    }

    let mut kernels = Vec::new();
    for s in c.sections.iter().filter(|s| s.ty == SHT_CUDA_INFO) {
        let Some(Some(kernel)) = names.after(s.name, NV_INFO_PREFIX) else { continue };
        if kernel.is_empty() {
            continue;
        }
        let mut k = kernel_info(kernel, c.body(s));
        let r = &mut k.resources;
        r.registers = global_value(s.info, ATTR_REGCOUNT);
        r.local_bytes = global_value(s.info, ATTR_FRAME_SIZE);
        r.stack_bytes = global_value(s.info, ATTR_MAX_STACK_SIZE).or_else(|| global_value(s.info, ATTR_MIN_STACK_SIZE));
        let reserved = if c.sm >= 90 { SHARED_RESERVED_SM90 } else { 0 };
        r.shared_bytes = Some(shared.get(kernel).map_or(0, |n| n.saturating_sub(reserved)));
        r.constant_bytes = constant.get(kernel).copied();
        kernels.push(k);
    }

    let mut globals = Vec::new();
    let strtab = Strings::new(strtab);
    for sym in symbols.chunks_exact(24).filter_map(|r| Rec::<24>::at(r, 0)) {
        let (info, shndx) = (sym.u8::<4>(), sym.u16::<6>());
        if info & 0xf != STT_OBJECT || shndx == 0 || shndx >= SHN_LORESERVE {
            continue;
        }
        let Some(section) = c.sections.get(usize::from(shndx)) else { continue };
        let space = if names.starts_with(section.name, b".nv.global") {
            Space::Global
        } else if names.is(section.name, &[b".nv.constant3"]) {
            Space::Constant
        } else {
            continue;
        };
        let Some(name) = strtab.take(sym.u32::<0>()) else { continue };
        if name.is_empty() || name.starts_with(b".") {
            continue;
        }
        globals.push(GlobalInfo { name: name_text(name), bytes: Some(sym.u64::<16>()), space });
    }
    (kernels, globals)
}

/// A kernel's parameters and launch bounds from its `.nv.info.<kernel>` table.
/// A KPARAM_INFO record's payload (12 bytes: `u32 0, u16 ordinal, u16 offset, u32 word`, the
/// size in bits 18..31 of the word): the parameter's ordinal and place; None if not 12 bytes.
fn kparam_record(payload: &[u8]) -> Option<(u16, Param)> {
    if payload.len() != 12 {
        return None;
    }
    let (ordinal, offset, word) = (read_u16(payload, 4)?, read_u16(payload, 6)?, read_u32(payload, 8)?);
    Some((ordinal, Param { offset: u32::from(offset), size: word >> 18 }))
}

fn kernel_info(name: &[u8], info: &[u8]) -> KernelInfo {
    let mut params: Vec<(u16, Param)> = Vec::new();
    let mut param_bytes = None;
    let mut resources = Resources::default();
    let dims = |p: &[u8]| Some([read_u32(p, 0)?, read_u32(p, 4)?, read_u32(p, 8)?]);
    for (format, attr, value, payload) in nv_info_records(info) {
        match (format, attr) {
            (4, ATTR_KPARAM_INFO) => params.extend(kparam_record(payload)),
            (4, ATTR_MAX_THREADS) => resources.max_threads = dims(payload),
            (4, ATTR_REQNTID) => resources.required_block = dims(payload),
            (1..=3, ATTR_CBANK_PARAM_SIZE) => param_bytes = Some(u32::from(value)),
            _ => {}
        }
    }
    params.sort_by_key(|&(ordinal, _)| ordinal);
    let params: Vec<Param> = params.into_iter().map(|(_, p)| p).collect();
    let param_bytes = param_bytes.unwrap_or_else(|| params.iter().map(|p| p.offset + p.size).max().unwrap_or(0));
    KernelInfo { name: name_text(name), params, param_bytes, resources }
}

// ---------------------------------------------------------------------------------------------
// Parameter layouts for the loader

/// Kernel names (their bytes, as `cuKernelGetName` gives them) and parameter layouts.
pub type Layouts = Vec<(Box<[u8]>, Box<[Param]>)>;

/// Each kernel of each entry, and its layout where its tables settle it.
type Found = Vec<(Box<[u8]>, Option<Box<[Param]>>)>;

/// Every kernel's parameter layout in an image cudyn built for CUDA (`Built::image`: a cubin,
/// or a fatbin of plain SASS entries), read from the `.nv.info.<kernel>` tables that CUDA itself
/// reads when it loads the same bytes, sorted by name. A kernel is left out where its tables
/// do not settle it: KPARAM_INFO ordinals other than 0..n each once, parameters with no
/// CBANK_PARAM_SIZE, a PARAM_CBANK of another size, a parameter of size 0, parameters that
/// overlap or reach past that size, a size with no parameters, or two entries that disagree.
/// (A kernel without parameters has none of the three records in nvcc's output.) None when the image holds anything but plain SASS
/// (PTX, whose layout the JIT decides; LTO-IR; compressed or grouped entries) or cannot be
/// read: the caller then asks CUDA.
pub fn param_layouts(image: &[u8]) -> Option<Layouts> {
    let mut all: Found = Vec::new();
    match super::code_kind_of(image) {
        CodeKind::Cubin => cubin_layouts(image, &mut all)?,
        CodeKind::Fatbin => {
            let header_len = FATBIN_HEADER_LEN as usize;
            let payload = usize::try_from(read_u64(image, 8)?).ok()?;
            let end = payload.checked_add(header_len).filter(|&e| e <= image.len())?;
            let mut at = header_len;
            const HEADER: usize = FATBIN_ENTRY_HEADER_LEN as usize;
            while at < end {
                let e = EntryHeader::read(Rec::<HEADER>::at(image, at)?);
                if e.kind == 0 && e.header_size == 0 {
                    break;
                }
                if e.kind != FATBIN_KIND_ELF || packing(&e) != Compression::None {
                    return None;
                }
                let body_at = at.checked_add(usize::try_from(e.header_size).ok()?)?;
                let next = body_at.checked_add(usize::try_from(e.payload_size).ok()?)?;
                cubin_layouts(image.get(body_at..next.min(end))?, &mut all)?;
                at = next;
            }
        }
        _ => return None,
    }
    // One answer per name: every entry that has the kernel agrees, or it is left out.
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Layouts = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let same = all[i..].iter().take_while(|(n, _)| *n == all[i].0).count();
        let group = &all[i..i + same];
        if let Some(p) = &group[0].1 {
            if group.iter().all(|(_, q)| q.as_ref() == Some(p)) {
                out.push((group[0].0.clone(), p.clone()));
            }
        }
        i += same;
    }
    Some(out)
}

/// The layouts of one cubin's kernels (None: a layout that does not settle it) into `out`.
/// A table `.nv.info.<kernel>` counts only where its info link (sh_info) is the section
/// `.text.<kernel>`, as nvcc writes it: a table linked to another kernel's code would give
/// that kernel's layout under this name if CUDA followed the link.
fn cubin_layouts(d: &[u8], out: &mut Found) -> Option<()> {
    let c = Cubin::read(d)?;
    let names = c.names();
    for s in c.sections.iter().filter(|s| s.ty == SHT_CUDA_INFO) {
        // Past the budget (names that share their bytes, which no toolchain writes) the image's
        // layouts are not read at all: CUDA is asked.
        let Some(kernel) = names.after(s.name, NV_INFO_PREFIX) else { continue };
        let kernel = kernel?;
        if kernel.is_empty() {
            continue;
        }
        let own = c.sections.get(s.info as usize).is_some_and(|t| names.is(t.name, &[b".text.", kernel]));
        out.push((kernel.into(), if own { settled_layout(c.body(s)) } else { None }));
    }
    Some(())
}

/// A kernel's layout from its `.nv.info.<kernel>` records, where they settle it.
fn settled_layout(info: &[u8]) -> Option<Box<[Param]>> {
    let mut params: Vec<(u16, Param)> = Vec::new();
    let (mut bytes, mut bank) = (None, None);
    for (format, attr, value, payload) in nv_info_records(info) {
        match (format, attr) {
            (4, ATTR_PARAM_CBANK) => {
                // u32 the constant bank's section, u16 the offset, u16 the size; once.
                let again = bank.is_some();
                bank = Some(read_u16(payload, 6).filter(|_| payload.len() == 8 && !again)?);
            }
            (4, ATTR_KPARAM_INFO) => params.push(kparam_record(payload)?),
            (1..=3, ATTR_CBANK_PARAM_SIZE) => {
                let v = u32::from(value);
                if bytes.replace(v).is_some_and(|b| b != v) {
                    return None;
                }
            }
            _ => {}
        }
    }
    // A kernel without parameters: nvcc writes none of the three records.
    let bytes = match (bytes, bank) {
        (None, None) if params.is_empty() => 0,
        (Some(b), None) => b,
        (Some(b), Some(s)) if u32::from(s) == b => b,
        _ => return None,
    };
    params.sort_by_key(|&(ordinal, _)| ordinal);
    if params.iter().enumerate().any(|(i, &(o, p))| usize::from(o) != i || p.size == 0 || p.offset + p.size > bytes) {
        return None;
    }
    if params.is_empty() && bytes != 0 {
        return None;
    }
    let mut by_offset: Vec<Param> = params.iter().map(|&(_, p)| p).collect();
    by_offset.sort_by_key(|p| p.offset);
    if by_offset.windows(2).any(|w| w[0].offset + w[0].size > w[1].offset) {
        return None;
    }
    Some(params.into_iter().map(|(_, p)| p).collect())
}

// ---------------------------------------------------------------------------------------------
// What a linker can take

/// Whether a cubin is relocatable device code (ELF type ET_REL: built with `-rdc=true` or
/// `-dc`), which a linker joins with other code; an executable cubin (ET_EXEC) is final, and a
/// linker that is handed one keeps none of its kernels. None when `d` is no cubin.
pub fn cubin_is_relocatable(d: &[u8]) -> Option<bool> {
    if super::code_kind_of(d) != CodeKind::Cubin {
        return None;
    }
    Some(read_u16(d, 16)? == ET_REL)
}

/// The names of the symbols a cubin defines for other code to use (STB_GLOBAL functions and
/// variables with a section): two inputs of a link that define one of them clash. Weak
/// definitions (templates, inline functions) may repeat and are left out.
pub fn cubin_global_definitions(d: &[u8]) -> Vec<String> {
    let Some(c) = Cubin::read(d) else { return Vec::new() };
    let Some(symtab) = c.sections.iter().find(|s| s.ty == SHT_SYMTAB) else { return Vec::new() };
    let strtab = Strings::new(c.sections.get(symtab.link as usize).map(|s| c.body(s)).unwrap_or_default());
    let mut out = Vec::new();
    for sym in c.body(symtab).chunks_exact(24).filter_map(|r| Rec::<24>::at(r, 0)) {
        let (info, shndx) = (sym.u8::<4>(), sym.u16::<6>());
        let (binding, ty) = (info >> 4, info & 0xf);
        if binding == STB_GLOBAL && matches!(ty, STT_OBJECT | STT_FUNC) && shndx != 0 && shndx < SHN_LORESERVE {
            let Some(name) = strtab.take(sym.u32::<0>()) else { break };
            if !name.is_empty() {
                out.push(name_text(name));
            }
        }
    }
    out
}

/// What device code a host object file (or a static library's member) carries, as nvcc embeds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostDeviceCode {
    /// No device code: a plain host object.
    None,
    /// A fatbin in `.nv_fatbin` (nvcc without `-rdc`/`-dc`): for the CUDA runtime to load
    /// as it is; there is nothing in it to link.
    Whole,
    /// Relocatable device code in `__nv_relfatbin` (nvcc `-rdc=true` or `-dc`), which a device
    /// linker takes.
    Relocatable,
}

/// What device code the ELF object `d` carries; None when `d` is not an ELF file whose
/// section table can be read.
pub fn host_object_device_code(d: &[u8]) -> Option<HostDeviceCode> {
    let c = Cubin::read(d)?;
    let names = c.names();
    let any = |name: &[u8]| c.sections.iter().any(|s| names.is(s.name, &[name]));
    Some(if any(b"__nv_relfatbin") {
        HostDeviceCode::Relocatable
    } else if any(b".nv_fatbin") {
        HostDeviceCode::Whole
    } else {
        HostDeviceCode::None
    })
}

/// The most relocatable device code among the object files of the static library (`ar`
/// archive) `d`: `Relocatable` if any member has some, else `Whole` if any member has a
/// fatbin, else `None`. None when `d` is no archive.
pub fn archive_device_code(d: &[u8]) -> Option<HostDeviceCode> {
    const MAGIC: &[u8] = b"!<arch>\n";
    const MEMBER_HEADER: usize = 60;
    let mut at = MAGIC.len();
    if !d.starts_with(MAGIC) {
        return None;
    }
    let mut best = HostDeviceCode::None;
    while let Some(h) = d.get(at..at.checked_add(MEMBER_HEADER)?) {
        // name[16] date[12] uid[6] gid[6] mode[8] size[10] "`\n"
        if &h[58..60] != b"`\n" {
            break;
        }
        let size: usize = std::str::from_utf8(&h[48..58]).ok()?.trim().parse().ok()?;
        let start = at + MEMBER_HEADER;
        let member = d.get(start..start.checked_add(size)?)?;
        match host_object_device_code(member) {
            Some(HostDeviceCode::Relocatable) => return Some(HostDeviceCode::Relocatable),
            Some(HostDeviceCode::Whole) => best = HostDeviceCode::Whole,
            _ => {}
        }
        // Members start at even offsets.
        at = start.checked_add(size)?.checked_add(size % 2)?;
    }
    Some(best)
}

#[cfg(test)]
mod tests;
