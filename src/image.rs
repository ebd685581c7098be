//! Recognises and validates the device-code images cudyn is handed (cubin, fatbin, PTX, LTO-IR,
//! CUDA source): which kind, how many bytes, which GPU architectures they hold, whether a GPU can run them.

// Formats, as relied on here (all little-endian; every offset and length read from the bytes is
// checked against the slice with checked arithmetic, and nothing here panics or uses `unsafe`):
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
// * Fatbin: a 16-byte header `u32 magic = 0xBA55ED50, u16 version (1), u16 header_size (16), u64
//   payload_size`; the image is header_size + payload_size bytes (only the first container is
//   considered). The payload is a run of entries, each with a header of at least 64 bytes:
//   `u16 kind (1 = PTX, 2 = ELF/SASS, 8 = LTO-IR), u16 0x0101, u32 header_size, u64
//   payload_size, u32 compressed_size, u32 offset of an (u32 offset, u32 length) options
//   descriptor within the header or 0, u16 minor, u16 major, u32 sm (e.g. 90), u32 name_offset,
//   u32 name_length, u64 flags, u64 (0, or a 32-bit value in LTO-IR entries), u64
//   uncompressed_size`; the name (the source path, then a NUL), the descriptor and the options
//   follow in the header, which is otherwise zero; then the payload. Flags: 0x1 64-bit, 0x2
//   debug, 0x10 Linux, 0x2000 LZ4-compressed or 0x8000 zstd-compressed (see image/decompress.rs),
//   0x1_0000 LTO-IR (scrambled payload), 0x10_0000 arch-specific ('a'), 0x20_0000
//   family-specific ('f'), 0x100_0000 (newer cubins). Every word is checked against what
//   toolkits write (`check_entry_header`, an allowlist); a compressed payload is decompressed
//   and, like a plain one, an ELF entry must be a valid cubin for the entry's sm and a PTX entry
//   ASCII text (`check_entry_body`).
// * PTX: ASCII text (optionally NUL-terminated) with a line starting with the `.version X.Y`
//   directive and a `.target sm_XY[a|f][, ...]` directive; reported as Ptx { sm: XY }.
// * LTO-IR (NVVM IR as written by NVRTC `-dlto` and `nvcc -ltoir -dlto`, and inside fatbin kind-8
//   entries): magic bytes ED 43 4E 7F (u32 0x7F4E43ED). The 24-byte header has at 12 a u16 offset
//   of a table of (u16 tag, u16 value) pairs that ends at the u32 offset at 16 (terminator tag
//   0x63); tag 1 holds the arch as major*100+minor*10 (900 = sm_90), tag 0x20 value 1 marks 'a'.
//   The header records no total size, so `len` is the slice length.
// * Source: UTF-8 text without control characters (other than tab, LF, CR, VT, FF), not PTX, and
//   containing a CUDA/C++ marker (`__global__`, `__device__`, `__host__`, `__shared__`,
//   `__constant__`, `__launch_bounds__`, `#include`, `#define`, `#pragma`, `#if`, `extern "C"`,
//   `template<`, `template <`, `namespace `) or else a C-like function body (a `)` followed
//   by `{` after optional whitespace, and a `;` and a `}` somewhere).
//
// Not accepted: host objects/executables with an embedded `.nv_fatbin` section, and the
// `__fatBinC_Wrapper_t` (magic 0x466243B1) that points at a fatbin by address; pass the fatbin
// bytes themselves. Concatenated fatbin containers: only the first is described.

use std::fmt;

use crate::elf_check::Sections;

mod decompress;

pub use crate::enums::CodeKind;

/// Which flavour of an architecture a piece of code is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ArchVariant {
    /// Plain `sm_XY` / `compute_XY`.
    #[default]
    None,
    /// Architecture-specific (`sm_90a`, `compute_100a`): runs only on exactly that compute capability.
    A,
    /// Family-specific (`sm_100f`, `compute_120f`): runs on that compute capability and later
    /// minor versions of the same major.
    F,
}

impl ArchVariant {
    fn suffix(self) -> &'static str {
        match self {
            ArchVariant::None => "",
            ArchVariant::A => "a",
            ArchVariant::F => "f",
        }
    }
}

/// One piece of code inside an image, and the GPU architecture it is for.
///
/// `sm` is major*10+minor (90 for sm_90, 120 for sm_120); `variant` tells sm_90 / sm_90a /
/// sm_100f apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArchCode {
    /// Machine code (SASS) for `sm_XY`.
    Sass { sm: u32, variant: ArchVariant },
    /// PTX for `compute_XY`, which the driver can JIT-compile.
    Ptx { sm: u32, variant: ArchVariant },
    /// LTO-IR for `lto_XY`, which needs linking (nvJitLink) before it can run.
    LtoIr { sm: u32, variant: ArchVariant },
}

impl ArchCode {
    /// Plain SASS for `sm`.
    pub const fn sass(sm: u32) -> Self {
        ArchCode::Sass { sm, variant: ArchVariant::None }
    }
    /// Plain PTX for `compute_<sm>`.
    pub const fn ptx(sm: u32) -> Self {
        ArchCode::Ptx { sm, variant: ArchVariant::None }
    }
    /// Plain LTO-IR for `lto_<sm>`.
    pub const fn lto_ir(sm: u32) -> Self {
        ArchCode::LtoIr { sm, variant: ArchVariant::None }
    }
    /// The same code with another variant.
    pub const fn with_variant(self, variant: ArchVariant) -> Self {
        match self {
            ArchCode::Sass { sm, .. } => ArchCode::Sass { sm, variant },
            ArchCode::Ptx { sm, .. } => ArchCode::Ptx { sm, variant },
            ArchCode::LtoIr { sm, .. } => ArchCode::LtoIr { sm, variant },
        }
    }
    /// major*10+minor.
    pub const fn sm(&self) -> u32 {
        match *self {
            ArchCode::Sass { sm, .. } | ArchCode::Ptx { sm, .. } | ArchCode::LtoIr { sm, .. } => sm,
        }
    }
    /// Plain, arch-specific or family-specific.
    pub const fn variant(&self) -> ArchVariant {
        match *self {
            ArchCode::Sass { variant, .. } | ArchCode::Ptx { variant, .. } | ArchCode::LtoIr { variant, .. } => variant,
        }
    }
    /// Whether a GPU of compute capability `sm` can run this piece on its own (see [`runnable_on`]).
    pub fn runs_on(&self, sm: u32) -> bool {
        let same_family = |code: u32| code / 10 == sm / 10 && code % 10 <= sm % 10;
        match *self {
            ArchCode::Sass { sm: code, variant } => match variant {
                ArchVariant::A => code == sm,
                ArchVariant::None | ArchVariant::F => same_family(code),
            },
            ArchCode::Ptx { sm: code, variant } => match variant {
                ArchVariant::None => code <= sm,
                ArchVariant::A => code == sm,
                ArchVariant::F => same_family(code),
            },
            ArchCode::LtoIr { .. } => false,
        }
    }
}

impl fmt::Display for ArchCode {
    /// `sm_90a`, `compute_90`, `lto_90`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self {
            ArchCode::Sass { .. } => "sm",
            ArchCode::Ptx { .. } => "compute",
            ArchCode::LtoIr { .. } => "lto",
        };
        write!(f, "{}_{}{}", prefix, self.sm(), self.variant().suffix())
    }
}

/// What [`inspect`] found in an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    pub kind: CodeKind,
    /// Bytes the image says it occupies (<= data.len()); for text kinds, up to and including the
    /// NUL if any, else the slice length.
    pub len: usize,
    /// What code it holds (empty for Source / LtoIr where unknown).
    pub codes: Vec<ArchCode>,
    /// Any fatbin entry compressed.
    pub compressed: bool,
    /// For PTX text, its ISA version (`.version X.Y`); None for every other kind.
    pub ptx_isa: Option<(u32, u32)>,
}

/// Why an image was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// Zero bytes.
    Empty,
    /// Not a cubin, fatbin, PTX, LTO-IR or CUDA source.
    Unrecognised,
    /// The bytes end before something the image says is there.
    Truncated { what: &'static str, need: u64, have: u64 },
    /// Recognised, but inconsistent or unsupported.
    Malformed(String),
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Empty => f.write_str("the image is empty (0 bytes)"),
            ImageError::Unrecognised => f.write_str(
                "the image is not a recognised CUDA format (expected a cubin, a fatbin, PTX text, \
                 LTO-IR or CUDA C++ source)",
            ),
            ImageError::Truncated { what, need, have } => {
                write!(f, "the image is truncated: {what} needs {need} bytes but only {have} were given")
            }
            ImageError::Malformed(why) => write!(f, "the image is malformed: {why}"),
        }
    }
}

impl std::error::Error for ImageError {}

/// Cheap guess from the first bytes (magic numbers / text sniffing). Never panics, never reads
/// out of bounds.
pub fn code_kind_of(data: &[u8]) -> CodeKind {
    if data.is_empty() {
        return CodeKind::Unknown;
    }
    if data.starts_with(&ELF_MAGIC) {
        return match read_u16(data, 18) {
            Some(EM_CUDA) => CodeKind::Cubin,
            _ => CodeKind::Unknown,
        };
    }
    if data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return CodeKind::Fatbin;
    }
    if data.starts_with(&LTOIR_MAGIC.to_le_bytes()) {
        return CodeKind::LtoIr;
    }
    let window = data.get(..SNIFF_WINDOW).unwrap_or(data);
    let (body, _) = split_at_nul(window);
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        // The window may cut a multi-byte character in half; keep what is whole.
        Err(e) if e.error_len().is_none() => match body.get(..e.valid_up_to()).map(std::str::from_utf8) {
            Some(Ok(t)) => t,
            _ => return CodeKind::Unknown,
        },
        Err(_) => return CodeKind::Unknown,
    };
    if !is_plain_text(text) {
        return CodeKind::Unknown;
    }
    // Where the window cuts the text, its last line is cut too (`.version` of `.versionX`):
    // directives are looked for in whole lines only.
    let cut = data.len() > window.len() && body.len() == window.len();
    let whole_lines = if cut { text.rfind('\n').map_or("", |i| text.get(..i).unwrap_or("")) } else { text };
    if find_directive(whole_lines, ".version").is_some() {
        CodeKind::Ptx
    } else if looks_like_source(text) {
        CodeKind::Source
    } else {
        CodeKind::Unknown
    }
}

/// Full, bounds-checked validation: every length/offset read from the bytes is checked against
/// `data.len()` (with checked arithmetic), the ELF header/section table of a cubin, every fatbin
/// entry header.
pub fn inspect(data: &[u8]) -> Result<ImageInfo, ImageError> {
    if data.is_empty() {
        return Err(ImageError::Empty);
    }
    if data.starts_with(&ELF_MAGIC) {
        let cubin = inspect_cubin(data)?;
        return Ok(ImageInfo {
            kind: CodeKind::Cubin,
            len: cubin.len,
            codes: vec![ArchCode::Sass { sm: cubin.sm, variant: cubin.variant }],
            compressed: false,
            ptx_isa: None,
        });
    }
    if data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return inspect_fatbin(data);
    }
    if data.starts_with(&LTOIR_MAGIC.to_le_bytes()) {
        return inspect_lto_ir(data);
    }
    inspect_text(data)
}

/// Whether a GPU of compute capability `sm` (e.g. 90) can run something in the image: SASS for
/// the same major with minor <= sm's minor (and arch-specific 'a' only on exactly that sm), or PTX
/// for sm <= the GPU's (the driver JITs it; 'a' PTX only on exactly that sm, 'f' PTX only within
/// the same major). LTO-IR alone: false (needs linking); source: false (needs compiling).
pub fn runnable_on(info: &ImageInfo, sm: u32) -> bool {
    info.codes.iter().any(|c| c.runs_on(sm))
}

/// "sm_90, compute_90" style list for error messages ("none" when empty).
pub fn describe_codes(codes: &[ArchCode]) -> String {
    if codes.is_empty() {
        return "none".to_string();
    }
    codes.iter().map(ArchCode::to_string).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------------------------
// Constants

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
const EM_CUDA: u16 = 190;
const ELF64_HEADER_LEN: u64 = 64;
const ELF64_SHDR_LEN: u64 = 64;
const ELF64_PHDR_LEN: u64 = 56;
const ET_REL: u16 = 1;
const ET_EXEC: u16 = 2;
const PT_LOAD: u32 = 1;
const PT_PHDR: u32 = 6;
/// The CUDA `.nv.compat` section type (SHT_LOPROC + 0x86), found empirically.
pub(crate) const SHT_CUDA_COMPAT: u32 = 0x7000_0086;
/// `.nv.compat` attribute whose value 1 marks arch-specific ('a') code, found empirically.
const COMPAT_ATTR_ARCH_SPECIFIC: u8 = 0x09;
const SHN_XINDEX: u16 = 0xffff;
/// e_flags bit for 'a' when EI_ABIVERSION >= 8 (EF_CUDA_ACCELERATORS).
const EF_CUDA_ACCELERATORS_V2: u32 = 0x8;
/// e_flags bit for 'a' when EI_ABIVERSION < 8 (EF_CUDA_ACCELERATORS_V1).
const EF_CUDA_ACCELERATORS_V1: u32 = 0x800;

const FATBIN_MAGIC: u32 = 0xBA55_ED50;
const FATBIN_VERSION: u16 = 1;
const FATBIN_HEADER_LEN: u64 = 16;
const FATBIN_ENTRY_HEADER_LEN: u64 = 64;
/// Entry headers seen: 64 to 144 bytes (a -G build's source path makes them longer).
const FATBIN_ENTRY_HEADER_MAX: u64 = 4096;
const FATBIN_ENTRY_MAGIC: u16 = 0x0101;
/// SM numbers are major*10+minor; 10 to 999 leaves room for architectures to come.
const FATBIN_ARCH_LIMIT: u32 = 1000;
const FATBIN_KIND_PTX: u16 = 1;
const FATBIN_KIND_ELF: u16 = 2;
const FATBIN_KIND_LTOIR: u16 = 8;
const FATBIN_FLAG_COMPRESSED_LZ: u64 = 0x2000;
const FATBIN_FLAG_COMPRESSED_ZSTD: u64 = 0x8000;
const FATBIN_FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FATBIN_FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;
const FATBIN_FLAG_64BIT: u64 = 0x1;
/// Set on (and only on) LTO-IR entries, whose payload nvcc scrambles.
const FATBIN_FLAG_LTO_OPAQUE: u64 = 0x1_0000;
/// Every flag bit a toolkit is known to write: 0x1 64-bit, 0x2 debug (-G), 0x10 Linux host,
/// the two compression methods, 0x1_0000 (LTO-IR entries), 'a' and 'f', and 0x100_0000 (sm_100+
/// cubins, and sm_86+ ones in CUDA 12 libraries).
const FATBIN_FLAGS_KNOWN: u64 = FATBIN_FLAG_64BIT
    | 0x2
    | 0x10
    | FATBIN_FLAG_COMPRESSED_LZ
    | FATBIN_FLAG_COMPRESSED_ZSTD
    | FATBIN_FLAG_LTO_OPAQUE
    | FATBIN_FLAG_ARCH_SPECIFIC
    | FATBIN_FLAG_FAMILY_SPECIFIC
    | 0x100_0000;

const LTOIR_MAGIC: u32 = 0x7F4E_43ED;
const LTOIR_HEADER_LEN: u64 = 24;
const LTOIR_TAG_ARCH: u16 = 0x01;
const LTOIR_TAG_ARCH_SPECIFIC: u16 = 0x20;
const LTOIR_TAG_END: u16 = 0x63;

/// How much of a text image `code_kind_of` looks at.
const SNIFF_WINDOW: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Bounds-checked readers

fn read_array<const N: usize>(d: &[u8], off: usize) -> Option<[u8; N]> {
    d.get(off..off.checked_add(N)?)?.try_into().ok()
}
fn read_u16(d: &[u8], off: usize) -> Option<u16> {
    read_array(d, off).map(u16::from_le_bytes)
}
fn read_u32(d: &[u8], off: usize) -> Option<u32> {
    read_array(d, off).map(u32::from_le_bytes)
}
fn read_u64(d: &[u8], off: usize) -> Option<u64> {
    read_array(d, off).map(u64::from_le_bytes)
}

/// A fixed-size record found within the image (an ELF header, section header, symbol, ...): one
/// bounds check when it is taken, then little-endian fields at constant offsets, each checked
/// against `N` when the code is compiled, so reading a field can neither fail nor panic.
#[derive(Clone, Copy)]
pub(crate) struct Rec<'a, const N: usize>(&'a [u8; N]);

impl<'a, const N: usize> Rec<'a, N> {
    /// The `N` bytes at `off` in `d`, if they are all there.
    pub(crate) fn at(d: &'a [u8], off: usize) -> Option<Self> {
        d.get(off..off.checked_add(N)?)?.try_into().ok().map(Rec)
    }
    fn bytes<const AT: usize, const W: usize>(self) -> [u8; W] {
        const { assert!(AT + W <= N, "field outside its record") };
        let mut b = [0; W];
        b.copy_from_slice(&self.0[AT..AT + W]);
        b
    }
    pub(crate) fn u8<const AT: usize>(self) -> u8 {
        u8::from_le_bytes(self.bytes::<AT, 1>())
    }
    pub(crate) fn u16<const AT: usize>(self) -> u16 {
        u16::from_le_bytes(self.bytes::<AT, 2>())
    }
    pub(crate) fn u32<const AT: usize>(self) -> u32 {
        u32::from_le_bytes(self.bytes::<AT, 4>())
    }
    pub(crate) fn u64<const AT: usize>(self) -> u64 {
        u64::from_le_bytes(self.bytes::<AT, 8>())
    }
}

/// Field readers that turn a short read into `Truncated` (callers check ranges first, so these
/// errors are a second line of defence).
fn field_u16(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u16, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u16(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(2), d))
}
fn field_u32(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u32, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u32(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(4), d))
}
fn field_u64(d: &[u8], base: usize, rel: usize, what: &'static str) -> Result<u64, ImageError> {
    let off = base.checked_add(rel).ok_or_else(|| overflow(what))?;
    read_u64(d, off).ok_or_else(|| short(what, (off as u64).saturating_add(8), d))
}

fn short(what: &'static str, need: u64, d: &[u8]) -> ImageError {
    ImageError::Truncated { what, need, have: d.len() as u64 }
}
fn overflow(what: &'static str) -> ImageError {
    ImageError::Malformed(format!("{what}: offset arithmetic overflows"))
}

/// Checks that `off..off+size` lies within `d`; returns the end.
#[inline]
pub(crate) fn check_range(d: &[u8], off: u64, size: u64, what: &'static str) -> Result<u64, ImageError> {
    match off.checked_add(size) {
        Some(end) if end <= d.len() as u64 => Ok(end),
        _ => Err(range_error(d, off, size, what)),
    }
}

/// Why `off..off+size` does not lie within `d` (kept out of line: the callers' loops stay small).
#[cold]
#[inline(never)]
fn range_error(d: &[u8], off: u64, size: u64, what: &'static str) -> ImageError {
    match off.checked_add(size) {
        Some(end) => short(what, end, d),
        None => ImageError::Malformed(format!("{what}: offset {off:#x} + size {size:#x} overflows")),
    }
}

fn to_usize(v: u64, what: &'static str) -> Result<usize, ImageError> {
    usize::try_from(v).map_err(|_| ImageError::Malformed(format!("{what}: {v:#x} does not fit in memory")))
}

// ---------------------------------------------------------------------------------------------
// Cubin (CUDA ELF)

struct CubinInfo {
    len: usize,
    sm: u32,
    variant: ArchVariant,
}

fn inspect_cubin(d: &[u8]) -> Result<CubinInfo, ImageError> {
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
        return Err(ImageError::Malformed(format!(
            "ELF file for machine {machine}{name}, not EM_CUDA ({EM_CUDA}): not a cubin (host \
             objects with an embedded fatbin are not accepted; pass the fatbin itself)"
        )));
    }
    match d.get(4) {
        Some(2) => {}
        Some(1) => {
            return Err(ImageError::Malformed("32-bit (ELFCLASS32) cubin: only 64-bit cubins are supported".into()))
        }
        other => return Err(ImageError::Malformed(format!("ELF class byte is {other:?}, expected 2 (ELFCLASS64)"))),
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
            return Err(ImageError::Malformed(format!(
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
            // at least as large in memory as in the file, aligned to a power of two.
            let (p_type, p_flags, p_memsz, p_align) = (p.u32::<0>(), p.u32::<4>(), p.u64::<40>(), p.u64::<48>());
            let bad_segment = !matches!(p_type, PT_LOAD | PT_PHDR)
                || p_flags & !7 != 0
                || p.u64::<16>() != 0
                || p.u64::<24>() != 0
                || p_memsz < p_filesz
                || p_align & p_align.wrapping_sub(1) != 0;
            if bad_segment {
                return Err(ImageError::Malformed(format!(
                    "ELF segment of type {p_type:#x}, flags {p_flags:#x}, file size {p_filesz:#x}, memory size {p_memsz:#x}, alignment {p_align:#x} at address {:#x} is not one a cubin has",
                    p.u64::<16>()
                )));
            }
            if p_filesz > 0 {
                len = len.max(check_range(d, p_offset, p_filesz, "an ELF segment's contents")?);
            }
        }
    }

    // Section headers.
    let shoff = h.u64::<40>();
    let shentsize = u64::from(h.u16::<58>());
    let e_shnum = h.u16::<60>();
    let e_shstrndx = h.u16::<62>();
    let mut shnum = u64::from(e_shnum);
    let mut shstrndx = u64::from(e_shstrndx);
    let mut arch_specific_compat = false;
    if shoff == 0 {
        if shnum != 0 {
            return Err(ImageError::Malformed(format!(
                "ELF header lists {shnum} sections but no section header table (e_shoff = 0)"
            )));
        }
    } else {
        const TABLE: &str = "the ELF section header table";
        if shentsize != ELF64_SHDR_LEN {
            return Err(ImageError::Malformed(format!(
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
            return Err(ImageError::Malformed(format!(
                "ELF section name table index {shstrndx} is out of range ({shnum} sections)"
            )));
        }
        // The whole table is in bounds (just checked): from here its headers are read without
        // further checks, and elf_check reads the same table.
        let secs = Sections::new(d, shoff, h.u16::<58>(), shnum)
            .ok_or_else(|| ImageError::Malformed("section header table truncated".into()))?;
        // One walk over the table: every section's contents in bounds, then the consistency of
        // the tables CUDA's loader walks (elf_check).
        let extended = e_shnum == 0 || e_shstrndx == SHN_XINDEX;
        let walk = crate::elf_check::check(d, secs, shstrndx, extended)?;
        len = len.max(walk.end);
        arch_specific_compat = walk.arch_specific;
    }

    let (sm, accel) = if abi_version >= 8 {
        ((flags >> 8) & 0xff, flags & EF_CUDA_ACCELERATORS_V2 != 0)
    } else {
        (flags & 0xff, flags & EF_CUDA_ACCELERATORS_V1 != 0)
    };
    if sm < 10 {
        return Err(ImageError::Malformed(format!(
            "cubin e_flags {flags:#x} (ELF ABI version {abi_version}) name no SM architecture"
        )));
    }
    check_e_flags(flags, abi_version, sm)?;
    let variant = if accel || arch_specific_compat { ArchVariant::A } else { ArchVariant::None };
    Ok(CubinInfo { len: to_usize(len, WHAT)?, sm, variant })
}

/// The ELF header's words that no offset or size check covers, against what toolkits write
/// (nvcc 13: OS ABI 0x41, ABI version 8, e_version 1; the cubins of NVIDIA's CUDA 12
/// libraries: OS ABI 0x33, ABI version 7, e_version 129): the identification bytes, the type
/// (executable, or relocatable for -rdc), no entry point, a 64-byte header.
fn check_elf_header_words(h: Rec<'_, 64>) -> Result<(), ImageError> {
    let bad = |what: String| Err(ImageError::Malformed(format!("ELF header: {what}")));
    let ident = h.bytes::<6, 10>();
    if ident[0] != 1 {
        return bad(format!("identification version is {}, not 1", ident[0]));
    }
    if !matches!(ident[1], 0x33 | 0x41) {
        return bad(format!("OS ABI is {:#x}, not a CUDA one (0x33, 0x41)", ident[1]));
    }
    if !matches!(ident[2], 7 | 8) {
        return bad(format!("ABI version is {}, not 7 or 8", ident[2]));
    }
    if ident[3..].iter().any(|&b| b != 0) {
        return bad("identification padding (bytes 9..16) is not zero".into());
    }
    let (e_type, e_version, e_entry, e_ehsize) = (h.u16::<16>(), h.u32::<20>(), h.u64::<24>(), h.u16::<52>());
    if !matches!(e_type, ET_REL | ET_EXEC) {
        return bad(format!("type e_type is {e_type}, not executable (2) or relocatable (1)"));
    }
    if !matches!(e_version, 1 | 129) {
        return bad(format!("version e_version is {e_version}, not 1 or 129"));
    }
    if e_entry != 0 {
        return bad(format!("entry point e_entry is {e_entry:#x}, not 0"));
    }
    if u64::from(e_ehsize) != ELF64_HEADER_LEN {
        return bad(format!("header size e_ehsize is {e_ehsize}, not {ELF64_HEADER_LEN}"));
    }
    Ok(())
}

/// e_flags holds only what toolkits write. Seen in nvcc 12.x/13.0 output and the CUDA 12
/// libraries' fatbins: ABI version 8: flag bits 0x2/0x4 (and 0x8, accelerators) in byte 0, the
/// SM in byte 1, byte 2 zero, bits 0x1-0x8 in byte 3 (0x05, 0x06, 0x09, 0x0a, 0x0e, 0x0f);
/// ABI version 7: the SM in byte 0, bits 0x1/0x4 (and 0x8, accelerators) in byte 1, the
/// virtual SM (10..=SM) in byte 2, byte 3 zero. On the H200 a cubin whose e_flags gained bit 0
/// crashed CUDA's loader (structured campaign, 2026-12-01).
fn check_e_flags(flags: u32, abi_version: u8, sm: u32) -> Result<(), ImageError> {
    let [b0, _, b2, b3] = flags.to_le_bytes();
    let ok = if abi_version >= 8 {
        b0 & !0x0e == 0 && b2 == 0 && b3 & !0x0f == 0
    } else {
        let b1 = flags.to_le_bytes()[1];
        b1 & !0x0d == 0 && (10..=sm).contains(&u32::from(b2)) && b3 == 0
    };
    if ok {
        Ok(())
    } else {
        Err(ImageError::Malformed(format!(
            "cubin e_flags {flags:#x} (ELF ABI version {abi_version}) hold bits no toolkit writes"
        )))
    }
}

/// Walks `.nv.compat` records; true if attribute 0x09 (arch-specific) is set to 1.
pub(crate) fn compat_says_arch_specific(body: &[u8]) -> bool {
    // Records of u8 format, u8 attribute, u16 value; format 4 carries `value` bytes after it.
    // A record cut short by the end of the section ends the walk.
    let mut rest = body;
    while let Some((&[format, attr, v0, v1], after)) = rest.split_first_chunk::<4>() {
        match format {
            1..=3 => {
                // The value's low byte is 1.
                if attr == COMPAT_ATTR_ARCH_SPECIFIC && format == 2 && v0 == 1 {
                    return true;
                }
                rest = after;
            }
            4 => rest = after.get(usize::from(u16::from_le_bytes([v0, v1]))..).unwrap_or_default(),
            _ => return false,
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Fatbin

fn inspect_fatbin(d: &[u8]) -> Result<ImageInfo, ImageError> {
    const WHAT: &str = "the fatbin header";
    check_range(d, 0, FATBIN_HEADER_LEN, WHAT)?;
    let version = field_u16(d, 0, 4, WHAT)?;
    let header_size = u64::from(field_u16(d, 0, 6, WHAT)?);
    let payload_size = field_u64(d, 0, 8, WHAT)?;
    // Every toolkit writes version 1 and a 16-byte header; nothing else is known to CUDA's loader.
    if version != FATBIN_VERSION {
        return Err(ImageError::Malformed(format!("fatbin version is {version}, not {FATBIN_VERSION}")));
    }
    if header_size != FATBIN_HEADER_LEN {
        return Err(ImageError::Malformed(format!("fatbin header size is {header_size}, not {FATBIN_HEADER_LEN}")));
    }
    let total = header_size.checked_add(payload_size).ok_or_else(|| {
        ImageError::Malformed(format!("fatbin header size {header_size} + payload size {payload_size:#x} overflows"))
    })?;
    check_range(d, 0, total, "the fatbin (by the size in its header)")?;

    let mut codes = Vec::with_capacity(4); // one allocation for the usual few entries
    let mut compressed = false;
    let mut scratch = Vec::new(); // decompressed entries, one at a time
    let mut decompressed_total = 0u64;
    let mut off = header_size;
    let mut index = 0u64;
    while off < total {
        const ENTRY: &str = "a fatbin entry header";
        let left = total.saturating_sub(off);
        let at = to_usize(off, ENTRY)?;
        if left < FATBIN_ENTRY_HEADER_LEN {
            let tail = d.get(at..to_usize(total, ENTRY)?).unwrap_or(&[]);
            if tail.iter().all(|&b| b == 0) {
                break; // zero padding at the end of the container
            }
            return Err(ImageError::Malformed(format!(
                "fatbin entry {index} at offset {off}: only {left} bytes remain in the fatbin, an entry header needs {FATBIN_ENTRY_HEADER_LEN}"
            )));
        }
        let bad = |why: String| ImageError::Malformed(format!("fatbin entry {index} at offset {off}: {why}"));
        // At least 64 bytes remain in the container, which lies within `d`: the entry header is
        // there, and its fields are read without further checks.
        const HEADER: usize = FATBIN_ENTRY_HEADER_LEN as usize;
        let h = Rec::<HEADER>::at(d, at).ok_or_else(|| short(ENTRY, off.saturating_add(FATBIN_ENTRY_HEADER_LEN), d))?;
        let e = EntryHeader::read(h);
        let entry_header_size = e.header_size;
        if entry_header_size < FATBIN_ENTRY_HEADER_LEN {
            return Err(bad(format!("header size {entry_header_size} is less than {FATBIN_ENTRY_HEADER_LEN}")));
        }
        let entry_len = entry_header_size.checked_add(e.payload_size).filter(|&n| n <= left).ok_or_else(|| {
            bad(format!(
                "header {entry_header_size} + payload {} bytes run past the end of the fatbin ({total} bytes)",
                e.payload_size
            ))
        })?;
        // Toolkits pad every payload to 8 bytes (403 of 403 entries of nvcc 12.x/13.0 output and
        // the nvJPEG/cuRAND wheels); on the H200 a compressed PTX entry whose payload size was
        // one byte short of that crashed CUDA's loader (structured campaign).
        if e.payload_size % 8 != 0 {
            return Err(bad(format!("payload size {} is not a multiple of 8", e.payload_size)));
        }
        // The whole entry is within the container: its header and payload are slices of it.
        let header = d.get(at..at + entry_header_size as usize).unwrap_or_default();
        let payload = d.get(at + entry_header_size as usize..at + entry_len as usize).unwrap_or_default();
        let code = check_entry_header(&e, header).map_err(bad)?;

        let method = e.compression();
        compressed |= method != Compression::None;
        // The bytes CUDA will load: the payload, or what it decompresses to. An LTO-IR entry's
        // payload is opaque (nvcc scrambles it: flag 0x1_0000, not a zstd frame even when the
        // zstd flag is set) and CUDA's loader cannot run LTO-IR, so only its sizes are checked.
        let body: &[u8] = match method {
            _ if code_is_lto(code) => {
                let padding = payload.get(e.compressed_size as usize..).unwrap_or_default();
                if method != Compression::None && padding.iter().any(|&b| b != 0) {
                    return Err(bad("the padding after its compressed payload is not zero".into()));
                }
                &[]
            }
            Compression::None => payload,
            _ => {
                decompressed_total = decompressed_total.saturating_add(e.uncompressed_size);
                if decompressed_total > decompress::MAX_DECOMPRESSED {
                    return Err(bad(format!(
                        "its entries decompress to more than the {}-byte cap",
                        decompress::MAX_DECOMPRESSED
                    )));
                }
                let (stream, padding) = payload.split_at(e.compressed_size as usize);
                if padding.iter().any(|&b| b != 0) {
                    return Err(bad("the padding after its compressed payload is not zero".into()));
                }
                let size = e.uncompressed_size as usize;
                let r = match method {
                    Compression::Lz4 => decompress::lz4_block(stream, size, &mut scratch),
                    _ => decompress::zstd_frame(stream, size, &mut scratch),
                };
                r.map_err(|why| bad(format!("({code}) its compressed payload is refused: {why}")))?;
                &scratch
            }
        };
        if !code_is_lto(code) {
            check_entry_body(code, body).map_err(|why| bad(format!("({code}) {why}")))?;
        }
        codes.push(code);
        off = off.checked_add(entry_len).ok_or_else(|| overflow(ENTRY))?;
        index = index.saturating_add(1);
    }
    Ok(ImageInfo { kind: CodeKind::Fatbin, len: to_usize(total, WHAT)?, codes, compressed, ptx_isa: None })
}

/// A fatbin entry header's fixed 64 bytes, word by word (see the format notes at the top).
struct EntryHeader {
    kind: u16,
    /// Bytes 2..4: 0x0101 in every toolkit's output.
    magic: u16,
    header_size: u64,
    payload_size: u64,
    compressed_size: u64,
    /// Offset, in the header, of the (offset, length) descriptor of the options string; 0: none.
    options_at: u64,
    arch: u32,
    name_offset: u64,
    name_len: u64,
    flags: u64,
    /// Bytes 0x30..0x38: 0, except in LTO-IR entries (a 32-bit value that is not an offset).
    word_30: u64,
    uncompressed_size: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Lz4,
    Zstd,
}

impl EntryHeader {
    fn read(h: Rec<'_, { FATBIN_ENTRY_HEADER_LEN as usize }>) -> Self {
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
    fn compression(&self) -> Compression {
        if self.flags & FATBIN_FLAG_COMPRESSED_LZ != 0 {
            Compression::Lz4
        } else if self.flags & FATBIN_FLAG_COMPRESSED_ZSTD != 0 {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// Every word of an entry header against what real toolkits write (an allowlist: nvcc 13.0 in
/// every mode, and the fatbins of NVIDIA's CUDA 12 libraries); returns the code it holds.
/// `header` is the whole entry header (`header_size` bytes, within the image).
fn check_entry_header(e: &EntryHeader, header: &[u8]) -> Result<ArchCode, String> {
    let hs = e.header_size;
    if e.magic != FATBIN_ENTRY_MAGIC {
        return Err(format!("header word 2 is {:#06x}, not {FATBIN_ENTRY_MAGIC:#06x}", e.magic));
    }
    if hs % 8 != 0 || hs > FATBIN_ENTRY_HEADER_MAX {
        return Err(format!("header size {hs} is not a multiple of 8 up to {FATBIN_ENTRY_HEADER_MAX}"));
    }
    let unknown = e.flags & !FATBIN_FLAGS_KNOWN;
    if unknown != 0 {
        return Err(format!("its flags {:#x} have bits no toolkit writes ({unknown:#x})", e.flags));
    }
    if e.flags & FATBIN_FLAG_64BIT == 0 {
        return Err(format!("its flags {:#x} do not mark 64-bit code", e.flags));
    }
    if e.flags & FATBIN_FLAG_COMPRESSED_LZ != 0 && e.flags & FATBIN_FLAG_COMPRESSED_ZSTD != 0 {
        return Err(format!("its flags {:#x} name two compression methods", e.flags));
    }
    let variant = match (e.flags & FATBIN_FLAG_ARCH_SPECIFIC != 0, e.flags & FATBIN_FLAG_FAMILY_SPECIFIC != 0) {
        (true, true) => return Err(format!("its flags {:#x} say both arch- and family-specific", e.flags)),
        (true, false) => ArchVariant::A,
        (false, true) => ArchVariant::F,
        (false, false) => ArchVariant::None,
    };
    if !(10..FATBIN_ARCH_LIMIT).contains(&e.arch) {
        return Err(format!("architecture {} is not an SM number", e.arch));
    }
    let code = match e.kind {
        FATBIN_KIND_PTX => ArchCode::Ptx { sm: e.arch, variant },
        FATBIN_KIND_ELF => ArchCode::Sass { sm: e.arch, variant },
        FATBIN_KIND_LTOIR => ArchCode::LtoIr { sm: e.arch, variant },
        other => return Err(format!("kind {other:#x} is not PTX (1), ELF (2) or LTO-IR (8)")),
    };
    if (e.kind == FATBIN_KIND_LTOIR) != (e.flags & FATBIN_FLAG_LTO_OPAQUE != 0) {
        return Err(format!("its flags {:#x} and its kind {} disagree on flag 0x10000 (LTO-IR only)", e.flags, e.kind));
    }
    if e.kind != FATBIN_KIND_LTOIR && e.word_30 != 0 {
        return Err(format!("header word 0x30 is {:#x}, not 0", e.word_30));
    }
    if e.kind == FATBIN_KIND_LTOIR && e.word_30 > u64::from(u32::MAX) {
        return Err(format!("header word 0x30 is {:#x}, wider than 32 bits", e.word_30));
    }
    // Sizes: a compressed entry's stream fills its payload but for under 8 bytes of padding and
    // decompresses to a size within the cap; a plain one records neither size.
    if e.compression() == Compression::None {
        if e.compressed_size != 0 || e.uncompressed_size != 0 {
            return Err(format!(
                "it is not compressed but records compressed size {} and uncompressed size {}",
                e.compressed_size, e.uncompressed_size
            ));
        }
    } else {
        if e.compressed_size > e.payload_size || e.payload_size - e.compressed_size >= 8 {
            return Err(format!(
                "compressed size {} does not fill its payload of {} bytes (up to 7 bytes of padding)",
                e.compressed_size, e.payload_size
            ));
        }
        if e.uncompressed_size == 0 || e.uncompressed_size > decompress::MAX_DECOMPRESSED {
            return Err(format!(
                "uncompressed size {} is not between 1 and {}",
                e.uncompressed_size,
                decompress::MAX_DECOMPRESSED
            ));
        }
    }
    // What lies in the header after the fixed 64 bytes: the name (then a NUL), the options
    // descriptor, the options; every other byte there is zero. Nothing may point into the
    // fixed part or past the header (CUDA reads the name and options from the header).
    let mut used = [(0u64, 0u64); 3];
    if e.name_len == 0 {
        if e.name_offset != 0 {
            return Err(format!("its name is empty but its name offset is {:#x}, not 0", e.name_offset));
        }
    } else {
        let end = e.name_offset.checked_add(e.name_len).filter(|&end| e.name_offset >= 64 && end < hs);
        let Some(end) = end else {
            return Err(format!(
                "its name ({} bytes at {:#x}, then a NUL) does not lie in its header after the fixed 64 bytes ({hs} bytes)",
                e.name_len, e.name_offset
            ));
        };
        let name = header.get(e.name_offset as usize..end as usize).unwrap_or_default();
        // The source file's path, as bytes (nvcc writes a UTF-8 path as it is), then a NUL.
        if header.get(end as usize) != Some(&0) || name.contains(&0) {
            return Err("its name is not a string of its declared length followed by a NUL".into());
        }
        used[0] = (e.name_offset, end + 1);
    }
    if e.options_at != 0 {
        let at = e.options_at;
        if at < 64 || at % 4 != 0 || at.checked_add(8).is_none_or(|end| end > hs) {
            return Err(format!(
                "its options descriptor at {at:#x} does not lie in its header after the fixed 64 bytes ({hs} bytes)"
            ));
        }
        let word =
            |o: u64| header.get(o as usize..o as usize + 4).map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let (opt_offset, opt_len) = (u64::from(word(at)), u64::from(word(at + 4)));
        used[1] = (at, at + 8);
        if opt_len != 0 {
            let end = opt_offset.checked_add(opt_len).filter(|&end| opt_offset >= 64 && end <= hs);
            let Some(end) = end else {
                return Err(format!(
                    "its options ({opt_len} bytes at {opt_offset:#x}) do not lie in its header after the fixed 64 bytes ({hs} bytes)"
                ));
            };
            if e.kind == FATBIN_KIND_PTX {
                // Handed to the JIT compiler as a C string: text, and a NUL before the header ends.
                let text = header.get(opt_offset as usize..).unwrap_or_default();
                let nul = text.iter().position(|&b| b == 0);
                if nul.is_none_or(|n| !is_ptx_text(&text[..n])) {
                    return Err("its JIT options are not ASCII text ending in a NUL within its header".into());
                }
            }
            used[2] = (opt_offset, end);
        } else if opt_offset != 0 && (opt_offset < 64 || opt_offset > hs) {
            return Err(format!("its empty options lie at {opt_offset:#x}, outside its header"));
        }
    }
    let stray = header.iter().enumerate().skip(64).find(|&(i, &b)| {
        let i = i as u64;
        b != 0 && !used.iter().any(|&(lo, hi)| (lo..hi).contains(&i))
    });
    if let Some((i, b)) = stray {
        return Err(format!("header byte {i:#x} is {b:#04x}, outside its name and options (must be 0)"));
    }
    Ok(code)
}

fn code_is_lto(code: ArchCode) -> bool {
    matches!(code, ArchCode::LtoIr { .. })
}

/// The entry's contents (decompressed if it was): a cubin must be one that passes as a cubin of
/// its own, for the entry's architecture; PTX must be ASCII text (then NULs only); LTO-IR must
/// start as LTO-IR does.
fn check_entry_body(code: ArchCode, body: &[u8]) -> Result<(), String> {
    match code {
        ArchCode::Sass { sm, .. } => {
            if !body.starts_with(&ELF_MAGIC) {
                return Err("its payload is not an ELF cubin".into());
            }
            let cubin = inspect_cubin(body).map_err(|e| format!("holds a bad cubin: {e}"))?;
            if cubin.sm != sm {
                return Err(format!("holds a cubin for sm_{}, not for the entry's sm_{sm}", cubin.sm));
            }
            Ok(())
        }
        ArchCode::Ptx { .. } => {
            // PTX is text for the driver's JIT compiler: anything else is corruption.
            let text_end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
            let (text, tail) = body.split_at(text_end);
            if let Some(bad) = text.iter().position(|&b| !is_ptx_byte(b)) {
                return Err(format!("its PTX has a non-text byte {:#04x} at {bad}", text[bad]));
            }
            if tail.iter().any(|&b| b != 0) {
                return Err("bytes follow the PTX text's terminating NUL".into());
            }
            Ok(())
        }
        ArchCode::LtoIr { .. } => Ok(()), // opaque (see inspect_fatbin)
    }
}

/// The bytes PTX may hold, in a fatbin or on its own: ptxas reads ASCII (tab, line ends and
/// the printable characters).
fn is_ptx_byte(b: u8) -> bool {
    b == b'\t' || b == b'\n' || b == b'\r' || (0x20..0x7f).contains(&b)
}

fn is_ptx_text(text: &[u8]) -> bool {
    text.iter().all(|&b| is_ptx_byte(b))
}

// ---------------------------------------------------------------------------------------------
// LTO-IR

fn inspect_lto_ir(d: &[u8]) -> Result<ImageInfo, ImageError> {
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

// ---------------------------------------------------------------------------------------------
// Text: PTX and CUDA source

/// The bytes before the first NUL, and the image length (through the NUL if there is one).
fn split_at_nul(d: &[u8]) -> (&[u8], usize) {
    match d.iter().position(|&b| b == 0) {
        Some(i) => (d.get(..i).unwrap_or(&[]), i.saturating_add(1)),
        None => (d, d.len()),
    }
}

fn is_plain_text(text: &str) -> bool {
    text.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

/// The rest of the first line whose first token is `name` (e.g. `.version`).
fn find_directive<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
    })
}

fn strip_line_comment(s: &str) -> &str {
    s.split("//").next().unwrap_or(s).trim()
}

fn looks_like_source(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "__global__",
        "__device__",
        "__host__",
        "__shared__",
        "__constant__",
        "__launch_bounds__",
        "#include",
        "#define",
        "#pragma",
        "#if",
        "extern \"C\"",
        "template<",
        "template <",
        "namespace ",
    ];
    MARKERS.iter().any(|m| text.contains(m)) || has_function_body(text)
}

/// A `)` followed (after whitespace) by `{`, plus a `;` and a `}` somewhere: `f(...) { ...; }`.
fn has_function_body(text: &str) -> bool {
    text.contains(';') && text.contains('}') && text.split(')').skip(1).any(|after| after.trim_start().starts_with('{'))
}

fn inspect_text(d: &[u8]) -> Result<ImageInfo, ImageError> {
    let (body, len) = split_at_nul(d);
    let text = std::str::from_utf8(body).map_err(|_| ImageError::Unrecognised)?;
    if !is_plain_text(text) {
        return Err(ImageError::Unrecognised);
    }
    if let Some(version) = find_directive(text, ".version") {
        // The same rule as PTX in a fatbin: ptxas reads ASCII.
        if let Some(bad) = body.iter().position(|&b| !is_ptx_byte(b)) {
            return Err(ImageError::Malformed(format!(
                "PTX text has a byte {:#04x} at {bad} that is not ASCII text (tab, line ends, printable)",
                body[bad]
            )));
        }
        let (code, isa) = parse_ptx(text, version)?;
        return Ok(ImageInfo { kind: CodeKind::Ptx, len, codes: vec![code], compressed: false, ptx_isa: isa });
    }
    if looks_like_source(text) {
        return Ok(ImageInfo { kind: CodeKind::Source, len, codes: Vec::new(), compressed: false, ptx_isa: None });
    }
    Err(ImageError::Unrecognised)
}

/// The code a PTX text holds, and its ISA version (None if a number overflows u32).
fn parse_ptx(text: &str, version: &str) -> Result<(ArchCode, Option<(u32, u32)>), ImageError> {
    let version = strip_line_comment(version);
    let Some((major, minor)) = version.split_once('.').filter(|(a, b)| is_decimal(a) && is_decimal(b)) else {
        return Err(ImageError::Malformed(format!(
            "PTX `.version` directive has {version:?}, expected a version such as 8.0"
        )));
    };
    let isa = major.parse().ok().zip(minor.parse().ok());
    let target = find_directive(text, ".target")
        .ok_or_else(|| ImageError::Malformed("PTX has no `.target sm_XY` directive".into()))?;
    let target = strip_line_comment(target);
    let arch = target
        .split(',')
        .map(str::trim)
        .find_map(|item| item.strip_prefix("sm_"))
        .ok_or_else(|| ImageError::Malformed(format!("PTX `.target {target}` names no sm_XY architecture")))?;
    let digits_end = arch.find(|c: char| !c.is_ascii_digit()).unwrap_or(arch.len());
    let (digits, suffix) = arch.split_at(digits_end);
    let sm = digits.parse::<u32>().ok().filter(|&sm| sm >= 10);
    let variant = match suffix {
        "" => Some(ArchVariant::None),
        "a" => Some(ArchVariant::A),
        "f" => Some(ArchVariant::F),
        _ => None,
    };
    match (sm, variant) {
        (Some(sm), Some(variant)) => Ok((ArchCode::Ptx { sm, variant }, isa)),
        _ => Err(ImageError::Malformed(format!("PTX `.target` has an unknown architecture sm_{arch}"))),
    }
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::OnceLock;

    // ---- helpers ------------------------------------------------------------------------------

    /// xorshift64*: small, deterministic.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            if n == 0 {
                0
            } else {
                (self.next() % n as u64) as usize
            }
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    /// Inspects and checks the invariants that hold for any input.
    fn check_invariants(data: &[u8]) -> Result<ImageInfo, ImageError> {
        let kind = code_kind_of(data);
        let r = inspect(data);
        if let Ok(info) = &r {
            assert!(info.len <= data.len(), "len {} > {} for {:?}", info.len, data.len(), info.kind);
            assert_ne!(info.kind, CodeKind::Unknown);
            // For whole images the cheap guess agrees with the full check, except that text may
            // be judged on a window only.
            if !matches!(info.kind, CodeKind::Ptx | CodeKind::Source) {
                assert_eq!(kind, info.kind);
            }
        }
        // Exercising the other functions must not panic either.
        if let Ok(info) = &r {
            let _ = describe_codes(&info.codes);
            for sm in [0, 50, 75, 80, 90, 100, 120, u32::MAX] {
                let _ = runnable_on(info, sm);
            }
        }
        if let Err(e) = &r {
            let _ = e.to_string();
        }
        r
    }

    fn put_u16(d: &mut [u8], off: usize, v: u16) {
        d[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn put_u32(d: &mut [u8], off: usize, v: u32) {
        d[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn put_u64(d: &mut [u8], off: usize, v: u64) {
        d[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// A minimal valid cubin: a 64-byte header, a NULL section, one PROGBITS section.
    fn synthetic_cubin(abi_version: u8, flags: u32) -> Vec<u8> {
        let mut d = vec![0u8; 64 + 16 + 2 * 64];
        d[..4].copy_from_slice(&ELF_MAGIC);
        d[4] = 2;
        d[5] = 1;
        d[6] = 1;
        d[7] = 0x41;
        d[8] = abi_version;
        put_u16(&mut d, 16, 2);
        put_u16(&mut d, 18, EM_CUDA);
        put_u32(&mut d, 20, 1);
        put_u64(&mut d, 40, 80); // e_shoff
        put_u32(&mut d, 48, flags);
        put_u16(&mut d, 52, 64);
        put_u16(&mut d, 54, 56);
        put_u16(&mut d, 58, 64);
        put_u16(&mut d, 60, 2);
        put_u16(&mut d, 62, 1); // e_shstrndx: every toolkit writes a name table
                                // section 1: the name table (all NULs), at 64, 16 bytes
        put_u32(&mut d, 80 + 64 + 4, 3);
        put_u64(&mut d, 80 + 64 + 24, 64);
        put_u64(&mut d, 80 + 64 + 32, 16);
        d
    }

    fn fatbin_entry(kind: u16, arch: u32, flags: u64, payload: &[u8]) -> Vec<u8> {
        let mut padded = payload.to_vec();
        while padded.len() % 8 != 0 {
            padded.push(0);
        }
        let mut e = vec![0u8; 64];
        put_u16(&mut e, 0, kind);
        put_u16(&mut e, 2, 0x0101);
        put_u32(&mut e, 4, 64);
        put_u64(&mut e, 8, padded.len() as u64);
        put_u32(&mut e, 28, arch);
        put_u64(&mut e, 40, flags);
        e.extend_from_slice(&padded);
        e
    }

    fn fatbin(entries: &[Vec<u8>]) -> Vec<u8> {
        let payload: Vec<u8> = entries.concat();
        let mut d = vec![0u8; 16];
        put_u32(&mut d, 0, FATBIN_MAGIC);
        put_u16(&mut d, 4, 1);
        put_u16(&mut d, 6, 16);
        put_u64(&mut d, 8, payload.len() as u64);
        d.extend_from_slice(&payload);
        d
    }

    const PTX80: &str = "//\n// Generated by hand\n//\n\n.version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n";

    fn info(kind: CodeKind, codes: Vec<ArchCode>) -> ImageInfo {
        ImageInfo { kind, len: 1, codes, compressed: false, ptx_isa: None }
    }

    // ---- basic behaviour ----------------------------------------------------------------------

    #[test]
    fn empty_input() {
        assert_eq!(inspect(&[]), Err(ImageError::Empty));
        assert_eq!(code_kind_of(&[]), CodeKind::Unknown);
        assert!(!ImageError::Empty.to_string().is_empty());
    }

    #[test]
    fn error_messages_read_well() {
        let e = ImageError::Truncated { what: "the fatbin (by the size in its header)", need: 4368, have: 100 };
        assert_eq!(
            e.to_string(),
            "the image is truncated: the fatbin (by the size in its header) needs 4368 bytes but only 100 were given"
        );
        assert!(ImageError::Unrecognised.to_string().contains("fatbin"));
        assert!(ImageError::Malformed("x".into()).to_string().ends_with(": x"));
        let mut f = fatbin(&[fatbin_entry(FATBIN_KIND_PTX, 80, 0x11, PTX80.as_bytes())]);
        let full = f.len() as u64;
        f.truncate(100);
        assert_eq!(
            inspect(&f),
            Err(ImageError::Truncated { what: "the fatbin (by the size in its header)", need: full, have: 100 })
        );
    }

    #[test]
    fn arch_codes_display_and_describe() {
        let codes = [
            ArchCode::sass(80),
            ArchCode::sass(90).with_variant(ArchVariant::A),
            ArchCode::ptx(90),
            ArchCode::ptx(100).with_variant(ArchVariant::F),
            ArchCode::lto_ir(90),
        ];
        assert_eq!(describe_codes(&codes), "sm_80, sm_90a, compute_90, compute_100f, lto_90");
        assert_eq!(describe_codes(&[]), "none");
        assert_eq!(codes[1].sm(), 90);
        assert_eq!(codes[1].variant(), ArchVariant::A);
        assert_eq!(CodeKind::LtoIr as u32, 4);
        assert_eq!(CodeKind::Source.to_string(), "CUDA source");
    }

    #[test]
    fn runnable_rules() {
        let sass80 = info(CodeKind::Cubin, vec![ArchCode::sass(80)]);
        assert!(runnable_on(&sass80, 80));
        assert!(runnable_on(&sass80, 86));
        assert!(runnable_on(&sass80, 89));
        assert!(!runnable_on(&sass80, 75));
        assert!(!runnable_on(&sass80, 90));
        let sass90a = info(CodeKind::Cubin, vec![ArchCode::sass(90).with_variant(ArchVariant::A)]);
        assert!(runnable_on(&sass90a, 90));
        assert!(!runnable_on(&sass90a, 89));
        assert!(!runnable_on(&sass90a, 100));
        let sass100a = info(CodeKind::Cubin, vec![ArchCode::sass(100).with_variant(ArchVariant::A)]);
        assert!(runnable_on(&sass100a, 100));
        assert!(!runnable_on(&sass100a, 103));
        let sass100f = info(CodeKind::Cubin, vec![ArchCode::sass(100).with_variant(ArchVariant::F)]);
        assert!(runnable_on(&sass100f, 103));
        assert!(!runnable_on(&sass100f, 110));
        let ptx80 = info(CodeKind::Ptx, vec![ArchCode::ptx(80)]);
        assert!(runnable_on(&ptx80, 80));
        assert!(runnable_on(&ptx80, 90));
        assert!(runnable_on(&ptx80, 120));
        assert!(!runnable_on(&ptx80, 75));
        let ptx90a = info(CodeKind::Ptx, vec![ArchCode::ptx(90).with_variant(ArchVariant::A)]);
        assert!(runnable_on(&ptx90a, 90));
        assert!(!runnable_on(&ptx90a, 100));
        let ptx120f = info(CodeKind::Ptx, vec![ArchCode::ptx(120).with_variant(ArchVariant::F)]);
        assert!(runnable_on(&ptx120f, 121));
        assert!(!runnable_on(&ptx120f, 130));
        let lto = info(CodeKind::LtoIr, vec![ArchCode::lto_ir(90)]);
        assert!(!runnable_on(&lto, 90));
        assert!(!runnable_on(&info(CodeKind::Source, vec![]), 90));
    }

    #[test]
    fn synthetic_cubins_both_flag_layouts() {
        // Older ABI (7): SM in the low byte, 0x800 = 'a'.
        let i = check_invariants(&synthetic_cubin(7, 0x0050_0550)).unwrap();
        assert_eq!(i.kind, CodeKind::Cubin);
        assert_eq!(i.codes, vec![ArchCode::sass(80)]);
        assert_eq!(i.len, 80 + 128);
        let i = check_invariants(&synthetic_cubin(7, 0x005a_0d5a)).unwrap();
        assert_eq!(i.codes, vec![ArchCode::sass(90).with_variant(ArchVariant::A)]);
        // ABI 8: SM in bits 8..15, 0x8 = 'a'.
        let i = check_invariants(&synthetic_cubin(8, 0x0600_6402)).unwrap();
        assert_eq!(i.codes, vec![ArchCode::sass(100)]);
        let i = check_invariants(&synthetic_cubin(8, 0x0600_780a)).unwrap();
        assert_eq!(i.codes, vec![ArchCode::sass(120).with_variant(ArchVariant::A)]);
        // No SM at all.
        assert!(matches!(inspect(&synthetic_cubin(8, 0x0600_0002)), Err(ImageError::Malformed(_))));
    }

    #[test]
    fn non_cuda_elf_is_refused_with_a_reason() {
        let mut d = synthetic_cubin(8, 0x0600_5a04);
        put_u16(&mut d, 18, 62);
        assert_eq!(code_kind_of(&d), CodeKind::Unknown);
        match inspect(&d) {
            Err(ImageError::Malformed(m)) => assert!(m.contains("x86-64"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut d = synthetic_cubin(8, 0x0600_5a04);
        d[4] = 1;
        assert!(matches!(inspect(&d), Err(ImageError::Malformed(_))));
    }

    #[test]
    fn cubin_section_past_end_is_truncated() {
        let mut d = synthetic_cubin(8, 0x0600_5a04);
        put_u64(&mut d, 80 + 64 + 32, 10_000);
        assert_eq!(
            inspect(&d),
            Err(ImageError::Truncated { what: "an ELF section's contents", need: 10_064, have: d.len() as u64 })
        );
        put_u64(&mut d, 80 + 64 + 24, u64::MAX);
        assert!(matches!(inspect(&d), Err(ImageError::Malformed(_))));
    }

    #[test]
    fn synthetic_fatbin_walk() {
        let cubin = synthetic_cubin(8, 0x0600_5a04);
        let f = fatbin(&[
            fatbin_entry(FATBIN_KIND_ELF, 90, 0x11, &cubin),
            fatbin_entry(FATBIN_KIND_ELF, 90, 0x11 | FATBIN_FLAG_ARCH_SPECIFIC, &cubin),
            fatbin_entry(FATBIN_KIND_PTX, 90, 0x11, PTX80.as_bytes()),
            fatbin_entry(
                FATBIN_KIND_LTOIR,
                100,
                0x11 | FATBIN_FLAG_LTO_OPAQUE | FATBIN_FLAG_FAMILY_SPECIFIC,
                &[7u8; 40],
            ),
        ]);
        let i = check_invariants(&f).unwrap();
        assert_eq!(i.kind, CodeKind::Fatbin);
        assert_eq!(i.len, f.len());
        assert!(!i.compressed);
        assert_eq!(
            i.codes,
            vec![
                ArchCode::sass(90),
                ArchCode::sass(90).with_variant(ArchVariant::A),
                ArchCode::ptx(90),
                ArchCode::lto_ir(100).with_variant(ArchVariant::F),
            ]
        );
        // Trailing bytes after the container are not part of it.
        let mut longer = f.clone();
        longer.extend_from_slice(&[0xAB; 33]);
        assert_eq!(inspect(&longer).unwrap().len, f.len());

        let refused = |d: &[u8], why: &str| match inspect(d) {
            Err(ImageError::Malformed(m)) => assert!(m.contains(why), "refused for {m}, expected {why}"),
            other => panic!("expected a refusal for {why}, got {other:?}"),
        };
        // An entry that claims more than the container holds.
        let mut bad = f.clone();
        put_u64(&mut bad, 16 + 8, 1 << 40);
        refused(&bad, "run past the end");
        // An entry header that is too small.
        let mut bad = f.clone();
        put_u32(&mut bad, 16 + 4, 8);
        refused(&bad, "less than 64");
        // A broken cubin inside an uncompressed ELF entry.
        let mut bad = f.clone();
        put_u16(&mut bad, 16 + 64 + 18, 62);
        refused(&bad, "bad cubin");
        // A cubin for another architecture than its entry's.
        refused(&fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 80, 0x11, &cubin)]), "not for the entry's sm_80");
        // A kind no toolkit writes.
        refused(&fatbin(&[fatbin_entry(77, 90, 0x11, b"unknown kind")]), "kind 0x4d");
        // The LTO flag on a cubin, and an LTO-IR entry without it.
        refused(&fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, 0x10011, &cubin)]), "disagree");
        refused(&fatbin(&[fatbin_entry(FATBIN_KIND_LTOIR, 90, 0x11, &[7; 8])]), "disagree");
        // A fatbin header of another version or size.
        let mut bad = f.clone();
        put_u16(&mut bad, 4, 2);
        refused(&bad, "version");
        let mut bad = f.clone();
        put_u16(&mut bad, 6, 24);
        refused(&bad, "header size is 24");
    }

    /// The ELF header's words, against what toolkits write.
    #[test]
    fn elf_header_words() {
        let good = synthetic_cubin(8, 0x0600_5a04);
        check_invariants(&good).unwrap();
        // CUDA 12 libraries' cubins: OS ABI 0x33, ABI version 7, e_version 129.
        let mut old = synthetic_cubin(7, 0x005a_005a);
        old[7] = 0x33;
        put_u32(&mut old, 20, 129);
        check_invariants(&old).unwrap();
        for (at, v, why) in [
            (6usize, vec![2u8], "identification version"),
            (7, vec![0], "OS ABI"),
            (8, vec![9], "ABI version"),
            (12, vec![1], "padding"),
            (16, vec![3, 0], "e_type"),
            (20, vec![2, 0, 0, 0], "e_version"),
            (24, vec![0x10], "e_entry"),
            (52, vec![72, 0], "e_ehsize"),
            (58, vec![72, 0], "e_shentsize"),
        ] {
            let mut bad = good.clone();
            bad[at..at + v.len()].copy_from_slice(&v);
            match inspect(&bad) {
                Err(ImageError::Malformed(m)) => assert!(m.contains(why), "byte {at}: {m}"),
                other => panic!("byte {at}: expected a refusal for {why}, got {other:?}"),
            }
        }
    }

    /// Every word of the entry header, against the allowlist.
    #[test]
    fn entry_header_words() {
        let cubin = synthetic_cubin(8, 0x0600_5a04);
        let f = fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, 0x11, &cubin)]);
        let refused = |at: usize, v: &[u8], why: &str| {
            let mut bad = f.clone();
            bad[16 + at..16 + at + v.len()].copy_from_slice(v);
            match inspect(&bad) {
                Err(ImageError::Malformed(m)) => {
                    assert!(m.contains(why), "word {at:#x}: refused for {m}, expected {why}")
                }
                other => panic!("word {at:#x} = {v:?}: expected a refusal for {why}, got {other:?}"),
            }
        };
        refused(2, &[1, 2], "header word 2");
        // A longer header takes the cubin's first bytes as its extension.
        let mut bad = f.clone();
        put_u32(&mut bad, 16 + 4, 72);
        put_u64(&mut bad, 16 + 8, cubin.len().next_multiple_of(8) as u64 - 8);
        assert!(inspect(&bad).unwrap_err().to_string().contains("header byte 0x40"));
        let mut bad = f.clone();
        put_u32(&mut bad, 16 + 4, 68);
        put_u64(&mut bad, 16 + 8, cubin.len().next_multiple_of(8) as u64 - 4);
        assert!(inspect(&bad).unwrap_err().to_string().contains("multiple of 8"));
        refused(16, &8u32.to_le_bytes(), "not compressed but records");
        refused(20, &8u32.to_le_bytes(), "options descriptor");
        refused(28, &9u32.to_le_bytes(), "not an SM number");
        refused(28, &1000u32.to_le_bytes(), "not an SM number");
        // The name offset corrupted high with no name (it crashed CUDA's loader), and names that
        // do not lie in the header.
        refused(32, &0x8000_0000u32.to_le_bytes(), "name offset");
        refused(32, &0x10u32.to_le_bytes(), "name offset");
        refused(36, &4u32.to_le_bytes(), "its name");
        refused(40, &0x4011u64.to_le_bytes(), "bits no toolkit writes");
        refused(40, &0x10u64.to_le_bytes(), "64-bit");
        refused(40, &0xa011u64.to_le_bytes(), "two compression methods");
        refused(40, &0x30_0011u64.to_le_bytes(), "both arch- and family-specific");
        refused(48, &1u64.to_le_bytes(), "word 0x30");
        refused(56, &1u64.to_le_bytes(), "not compressed but records");

        // A header extended with a name (then a NUL) and an options descriptor is accepted;
        // a stray byte in the extension, or a name without its NUL, is not.
        let mut e = fatbin_entry(FATBIN_KIND_PTX, 80, 0x11, PTX80.as_bytes());
        let payload = e.split_off(64);
        put_u32(&mut e, 4, 96);
        put_u32(&mut e, 20, 72); // descriptor at 72: options at 80, 5 bytes
        put_u32(&mut e, 32, 64);
        put_u32(&mut e, 36, 4);
        e.resize(96, 0);
        e[64..68].copy_from_slice(b"k.cu");
        put_u32(&mut e, 72, 80);
        put_u32(&mut e, 76, 5);
        e[80..85].copy_from_slice(b" -g  ");
        let good = fatbin(&[[e.clone(), payload.clone()].concat()]);
        check_invariants(&good).unwrap();
        for (at, v, why) in [
            (90usize, 1u8, "header byte 0x5a"),
            (67, 0, "name is not a string"),
            (68, b'x', "name is not a string"),
            (82, 0xff, "JIT options"),
        ] {
            let mut bad = e.clone();
            bad[at] = v;
            match inspect(&fatbin(&[[bad, payload.clone()].concat()])) {
                Err(ImageError::Malformed(m)) => assert!(m.contains(why), "byte {at}: {m}"),
                other => panic!("byte {at}: expected {why}, got {other:?}"),
            }
        }
    }

    /// Compressed entries are checked after decompression, exactly as plain ones.
    #[test]
    fn compressed_entries_are_checked() {
        use crate::fuzzing::Packing;
        let cubin = synthetic_cubin(8, 0x0600_5a04);
        let mut broken = cubin.clone();
        put_u64(&mut broken, 80 + 64 + 32, 10_000); // a section past the end
        assert!(inspect(&broken).is_err());
        let mut bad_ptx = PTX80.as_bytes().to_vec();
        bad_ptx[3] = 0x80;
        for packing in [Packing::Lz4, Packing::Zstd] {
            let wrap = |kind, data: &[u8]| {
                crate::fuzzing::fatbin(&[crate::fuzzing::fatbin_entry(kind, 90, 0x11, data, packing)])
            };
            let i = check_invariants(&wrap(FATBIN_KIND_ELF, &cubin)).unwrap();
            assert!(i.compressed);
            assert_eq!(i.codes, vec![ArchCode::sass(90)]);
            check_invariants(&wrap(FATBIN_KIND_PTX, PTX80.as_bytes())).unwrap();
            let e = inspect(&wrap(FATBIN_KIND_ELF, &broken)).unwrap_err().to_string();
            assert!(e.contains("bad cubin"), "{packing:?}: {e}");
            let e = inspect(&wrap(FATBIN_KIND_PTX, &bad_ptx)).unwrap_err().to_string();
            assert!(e.contains("non-text byte"), "{packing:?}: {e}");

            let good = wrap(FATBIN_KIND_ELF, &cubin);
            let refused = |d: &[u8], why: &str| {
                let e = inspect(d).unwrap_err().to_string();
                assert!(e.contains(why), "{packing:?}: refused for {e}, expected {why}");
            };
            // Declared sizes that disagree with the stream, either way.
            let mut bad = good.clone();
            put_u64(&mut bad, 16 + 56, cubin.len() as u64 + 1);
            refused(&bad, "declare");
            let mut bad = good.clone();
            put_u64(&mut bad, 16 + 56, cubin.len() as u64 - 1);
            refused(&bad, "declare");
            // A compressed size that leaves 8 bytes of the payload unused, or runs past it.
            let cs = u32::from_le_bytes(good[16 + 16..16 + 20].try_into().unwrap());
            let mut bad = good.clone();
            put_u32(&mut bad, 16 + 16, cs - 8);
            refused(&bad, "does not fill its payload");
            let mut bad = good.clone();
            put_u32(&mut bad, 16 + 16, cs + 8);
            refused(&bad, "does not fill its payload");
            // One byte fewer of the stream: cut short, and a padding byte that is not zero.
            let mut bad = good.clone();
            put_u32(&mut bad, 16 + 16, cs - 1);
            assert!(inspect(&bad).is_err());
            if cs % 8 != 0 {
                let mut bad = good.clone();
                bad[16 + 64 + cs as usize] = 1;
                refused(&bad, "padding");
            }
            // Declared too large for the cap.
            let mut bad = good.clone();
            put_u64(&mut bad, 16 + 56, (1 << 30) + 1);
            refused(&bad, "uncompressed size");
        }
    }

    #[test]
    fn ptx_text() {
        let i = check_invariants(PTX80.as_bytes()).unwrap();
        assert_eq!(i.kind, CodeKind::Ptx);
        assert_eq!(i.len, PTX80.len());
        assert_eq!(i.codes, vec![ArchCode::ptx(80)]);
        let mut with_nul = PTX80.as_bytes().to_vec();
        with_nul.push(0);
        with_nul.extend_from_slice(b"\0\0junk\xff");
        let i = check_invariants(&with_nul).unwrap();
        assert_eq!(i.len, PTX80.len() + 1);
        let a = PTX80.replace(".target sm_80", ".target sm_90a, debug // comment");
        assert_eq!(inspect(a.as_bytes()).unwrap().codes, vec![ArchCode::ptx(90).with_variant(ArchVariant::A)]);
        let f = PTX80.replace(".target sm_80", "  .target\tsm_100f");
        assert_eq!(inspect(f.as_bytes()).unwrap().codes, vec![ArchCode::ptx(100).with_variant(ArchVariant::F)]);
        let none = PTX80.replace(".target sm_80", "");
        assert!(matches!(inspect(none.as_bytes()), Err(ImageError::Malformed(_))));
        let odd = PTX80.replace(".target sm_80", ".target sm_80x");
        assert!(matches!(inspect(odd.as_bytes()), Err(ImageError::Malformed(_))));
        let ver = PTX80.replace(".version 8.0", ".version eight");
        assert!(matches!(inspect(ver.as_bytes()), Err(ImageError::Malformed(_))));
        assert_eq!(code_kind_of(PTX80.as_bytes()), CodeKind::Ptx);
    }

    #[test]
    fn source_text() {
        for src in [
            "extern \"C\" __global__ void k(float *x) { x[0] = 1; }\n",
            "#include <cuda_fp16.h>\n",
            "template <typename T> struct S;",
            "int f(int x) { return x; }",
        ] {
            let i = check_invariants(src.as_bytes()).unwrap();
            assert_eq!(i.kind, CodeKind::Source, "{src}");
            assert_eq!(i.len, src.len());
            assert!(i.codes.is_empty());
            assert_eq!(code_kind_of(src.as_bytes()), CodeKind::Source);
        }
        let mut nul = b"__global__ void k() {}".to_vec();
        nul.push(0);
        assert_eq!(inspect(&nul).unwrap().len, nul.len());
        for not_code in [
            &b"hello world"[..],
            b"\0",
            b"   \n",
            b"\x01\x02\x03__global__",
            b"caf\xc3",
            b"{\"a\": [1, 2], \"b\": {\"c\": \"(x; y)\"}}",
            b"print(f\"{x}\"); d = {1: 2}",
        ] {
            assert_eq!(inspect(not_code), Err(ImageError::Unrecognised), "{not_code:?}");
            assert_eq!(code_kind_of(not_code), CodeKind::Unknown, "{not_code:?}");
        }
    }

    #[test]
    fn sniff_window_cut_never_invents_a_directive() {
        // Source whose 64 KiB window ends in `.version` of `.version_of_the_table = 2;`.
        let mut src = b"__global__ void k(float *x) { x[0] = 1; }\n".to_vec();
        src.resize(SNIFF_WINDOW - ".version".len(), b' ');
        src.extend_from_slice(b".version_of_the_table = 2;\n");
        assert_eq!(inspect(&src).unwrap().kind, CodeKind::Source);
        assert_eq!(code_kind_of(&src), CodeKind::Source);
        // A real directive on a whole line inside the window is still seen.
        let mut ptx = PTX80.as_bytes().to_vec();
        ptx.resize(SNIFF_WINDOW + 10, b' ');
        assert_eq!(code_kind_of(&ptx), CodeKind::Ptx);
    }

    #[test]
    fn synthetic_lto_ir() {
        let mut d = vec![0u8; 48];
        put_u32(&mut d, 0, LTOIR_MAGIC);
        put_u16(&mut d, 12, 24);
        put_u32(&mut d, 16, 40);
        put_u32(&mut d, 20, 44);
        for (i, (tag, value)) in [(1u16, 900u16), (2, 2), (0x63, 0), (0, 0)].iter().enumerate() {
            put_u16(&mut d, 24 + 4 * i, *tag);
            put_u16(&mut d, 26 + 4 * i, *value);
        }
        let i = check_invariants(&d).unwrap();
        assert_eq!(i.kind, CodeKind::LtoIr);
        assert_eq!(i.len, 48);
        assert_eq!(i.codes, vec![ArchCode::lto_ir(90)]);
        put_u16(&mut d, 32, 0x20);
        put_u16(&mut d, 34, 1);
        put_u16(&mut d, 36, 0x63);
        assert_eq!(inspect(&d).unwrap().codes, vec![ArchCode::lto_ir(90).with_variant(ArchVariant::A)]);
        assert!(matches!(inspect(&d[..20]), Err(ImageError::Truncated { need: 24, .. })));
        assert!(matches!(inspect(&d[..42]), Err(ImageError::Truncated { need: 44, .. })));
        // An unparseable table is not an error, just no arch.
        put_u16(&mut d, 12, 0xffff);
        assert_eq!(inspect(&d).unwrap().codes, vec![]);
    }

    // ---- robustness ---------------------------------------------------------------------------

    #[test]
    fn random_buffers_never_panic() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let prefixes: [&[u8]; 7] = [
            &[],
            &ELF_MAGIC,
            &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41, 8, 0, 0, 0, 0, 0, 0, 0, 2, 0, 190, 0],
            &FATBIN_MAGIC.to_le_bytes(),
            &[0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0],
            &LTOIR_MAGIC.to_le_bytes(),
            b".version 8.0\n.target sm_",
        ];
        for n in 0..6000 {
            let size = match n % 4 {
                0 => rng.below(16),
                1 => rng.below(128),
                2 => rng.below(1024),
                _ => rng.below(8192),
            };
            let mut buf = prefixes[n % prefixes.len()].to_vec();
            buf.extend(rng.bytes(size));
            if n % 5 == 0 {
                // Small numbers in the header fields make the walkers go further.
                for b in buf.iter_mut().skip(4).take(64) {
                    *b &= 0x0f;
                }
            }
            let _ = check_invariants(&buf);
        }
    }

    #[test]
    fn synthetic_images_survive_mutation() {
        let mut rng = Rng(42);
        let cubin = synthetic_cubin(8, 0x0600_5a04);
        let f = fatbin(&[
            fatbin_entry(FATBIN_KIND_ELF, 90, 0x11, &cubin),
            fatbin_entry(FATBIN_KIND_PTX, 90, 0x11, PTX80.as_bytes()),
        ]);
        for image in [cubin, f, PTX80.as_bytes().to_vec()] {
            mutate_and_check(&image, &mut rng, 1500);
            for len in 0..image.len() {
                prefix_check(&image, len);
            }
        }
    }

    fn prefix_check(image: &[u8], len: usize) {
        let prefix = &image[..len];
        if let Ok(i) = check_invariants(prefix) {
            assert!(i.len <= len);
        }
    }

    fn mutate_and_check(image: &[u8], rng: &mut Rng, rounds: usize) {
        for _ in 0..rounds {
            let mut m = image.to_vec();
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
            let _ = check_invariants(&m);
        }
    }

    /// Sets header fields of real images to extreme values.
    fn extreme_fields(image: &[u8], fields: &[(usize, usize)]) {
        let extremes: [u64; 8] = [0, 1, 0x7f, 0xffff, u32::MAX as u64, image.len() as u64, u64::MAX - 1, u64::MAX];
        for &(off, width) in fields {
            if off + width > image.len() {
                continue;
            }
            for &v in &extremes {
                let mut m = image.to_vec();
                m[off..off + width].copy_from_slice(&v.to_le_bytes()[..width]);
                let _ = check_invariants(&m);
            }
        }
    }

    fn cubin_fields(base: usize, cubin: &[u8]) -> Vec<(usize, usize)> {
        let mut v = vec![(32, 8), (40, 8), (48, 4), (52, 2), (54, 2), (56, 2), (58, 2), (60, 2), (62, 2)];
        let shoff = read_u64(cubin, 40).unwrap_or(0) as usize;
        let shnum = read_u16(cubin, 60).unwrap_or(0) as usize;
        for s in 0..shnum.min(40) {
            let at = shoff + s * 64;
            v.extend([(at + 4, 4), (at + 24, 8), (at + 32, 8)]);
        }
        let phoff = read_u64(cubin, 32).unwrap_or(0) as usize;
        let phnum = read_u16(cubin, 56).unwrap_or(0) as usize;
        for p in 0..phnum.min(40) {
            let at = phoff + p * 56;
            v.extend([(at + 8, 8), (at + 32, 8)]);
        }
        v.into_iter().map(|(o, w)| (base + o, w)).collect()
    }

    fn fatbin_fields(f: &[u8]) -> Vec<(usize, usize)> {
        let mut v = vec![(4, 2), (6, 2), (8, 8)];
        let mut off = 16usize;
        while off + 64 <= f.len() {
            v.extend([
                (off + 4, 4),
                (off + 8, 8),
                (off + 16, 4),
                (off + 20, 4),
                (off + 28, 4),
                (off + 32, 4),
                (off + 36, 4),
                (off + 40, 8),
            ]);
            let ehs = read_u32(f, off + 4).unwrap_or(0) as usize;
            let ps = read_u64(f, off + 8).unwrap_or(0) as usize;
            if read_u16(f, off).unwrap_or(0) == FATBIN_KIND_ELF && f[off + ehs..].starts_with(&ELF_MAGIC) {
                v.extend(cubin_fields(off + ehs, &f[off + ehs..]));
            }
            let opts = read_u32(f, off + 20).unwrap_or(0) as usize;
            if opts != 0 {
                v.extend([(off + opts, 4), (off + opts + 4, 4)]);
            }
            off += ehs + ps;
        }
        v
    }

    // ---- real artifacts from nvcc ---------------------------------------------------------------

    struct Artifacts {
        cubin_sm80: Vec<u8>,
        cubin_sm90a: Vec<u8>,
        cubin_sm100a: Vec<u8>,
        cubin_sm120: Vec<u8>,
        fatbin_multi: Vec<u8>,
        fatbin_100f_compressed: Vec<u8>,
        fatbin_lto: Vec<u8>,
        ptx80: Vec<u8>,
        ltoir90: Vec<u8>,
    }

    fn cuda_roots() -> Vec<PathBuf> {
        let mut roots = Vec::new();
        if let Some(r) = std::env::var_os("CUDYN_CUDA_ROOT") {
            roots.push(PathBuf::from(r));
        }
        if let Some(r) = option_env!("CUDYN_CUDA_ROOT") {
            roots.push(PathBuf::from(r));
        }
        if let Some(r) = std::env::var_os("CUDA_PATH") {
            roots.push(PathBuf::from(r));
        }
        roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".toolchain").join("cuda"));
        roots
    }

    fn find_nvcc() -> Result<PathBuf, Vec<PathBuf>> {
        let roots = cuda_roots();
        roots.iter().map(|r| r.join("bin").join("nvcc")).find(|p| p.is_file()).ok_or(roots)
    }

    const KERNEL: &str = "extern \"C\" __global__ void add(float *a, const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n";

    fn build_artifacts() -> Result<Option<Artifacts>, String> {
        let nvcc = match find_nvcc() {
            Ok(p) => p,
            Err(roots) => {
                if std::env::var("CUDYN_ALLOW_NO_NVCC").as_deref() == Ok("1") {
                    eprintln!("image tests: nvcc not found, CUDYN_ALLOW_NO_NVCC=1: skipping the real-artifact checks");
                    return Ok(None);
                }
                return Err(format!(
                    "nvcc not found (looked for bin/nvcc under {roots:?}); set CUDYN_CUDA_ROOT or CUDA_PATH to a CUDA toolkit, or CUDYN_ALLOW_NO_NVCC=1 to skip the real-artifact tests"
                ));
            }
        };
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("cudyn-image-test-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let src = dir.join("k.cu");
        std::fs::write(&src, KERNEL).map_err(|e| format!("writing {}: {e}", src.display()))?;

        let jobs: Vec<(&str, Vec<&str>)> = vec![
            ("sm80.cubin", vec!["-cubin", "-arch=sm_80"]),
            ("sm90a.cubin", vec!["-cubin", "-arch=sm_90a"]),
            ("sm100a.cubin", vec!["-cubin", "-arch=sm_100a"]),
            ("sm120.cubin", vec!["-cubin", "-arch=sm_120"]),
            (
                "multi.fatbin",
                vec![
                    "-fatbin",
                    "-Xfatbin",
                    "-compress=false",
                    "-gencode",
                    "arch=compute_80,code=sm_80",
                    "-gencode",
                    "arch=compute_90,code=[sm_90,compute_90]",
                ],
            ),
            (
                "f100.fatbin",
                vec![
                    "-fatbin",
                    "-Xfatbin",
                    "-compress-all",
                    "-gencode",
                    "arch=compute_100f,code=[sm_100f,compute_100f]",
                ],
            ),
            ("lto.fatbin", vec!["-fatbin", "-gencode", "arch=compute_90,code=lto_90"]),
            ("k80.ptx", vec!["-ptx", "-arch=compute_80"]),
            ("k90.ltoir", vec!["-ltoir", "-dlto", "-arch=sm_90"]),
        ];
        let results: Vec<Result<Vec<u8>, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(out, args)| {
                    let (nvcc, dir, src) = (&nvcc, &dir, &src);
                    s.spawn(move || {
                        let out = dir.join(out);
                        let o = Command::new(nvcc)
                            .args(args)
                            .arg("-o")
                            .arg(&out)
                            .arg(src)
                            .output()
                            .map_err(|e| format!("running {}: {e}", nvcc.display()))?;
                        if !o.status.success() {
                            return Err(format!(
                                "{} {args:?} failed: {}\n{}",
                                nvcc.display(),
                                o.status,
                                String::from_utf8_lossy(&o.stderr)
                            ));
                        }
                        std::fs::read(&out).map_err(|e| format!("reading {}: {e}", out.display()))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("nvcc thread panicked".into()))).collect()
        });
        let _ = std::fs::remove_dir_all(&dir);
        let mut it = results.into_iter();
        let mut next = || it.next().unwrap_or_else(|| Err("missing artifact".into()));
        Ok(Some(Artifacts {
            cubin_sm80: next()?,
            cubin_sm90a: next()?,
            cubin_sm100a: next()?,
            cubin_sm120: next()?,
            fatbin_multi: next()?,
            fatbin_100f_compressed: next()?,
            fatbin_lto: next()?,
            ptx80: next()?,
            ltoir90: next()?,
        }))
    }

    /// The nvcc-built artifacts, built once per test process; None when skipping is allowed.
    fn artifacts() -> Option<&'static Artifacts> {
        static CELL: OnceLock<Result<Option<Artifacts>, String>> = OnceLock::new();
        match CELL.get_or_init(build_artifacts) {
            Ok(a) => a.as_ref(),
            Err(e) => panic!("{e}"),
        }
    }

    fn expect(data: &[u8], kind: CodeKind, codes: &[ArchCode]) -> ImageInfo {
        let i = check_invariants(data).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(i.kind, kind);
        assert_eq!(code_kind_of(data), kind);
        assert_eq!(i.len, data.len(), "{kind}: len must equal the file size");
        assert_eq!(i.codes, codes, "{kind}: got {}", describe_codes(&i.codes));
        i
    }

    #[test]
    fn nvcc_cubins() {
        let Some(a) = artifacts() else { return };
        let i = expect(&a.cubin_sm80, CodeKind::Cubin, &[ArchCode::sass(80)]);
        assert!(runnable_on(&i, 80) && runnable_on(&i, 86) && runnable_on(&i, 89));
        assert!(!runnable_on(&i, 75) && !runnable_on(&i, 90));
        assert!(!i.compressed);
        let i = expect(&a.cubin_sm90a, CodeKind::Cubin, &[ArchCode::sass(90).with_variant(ArchVariant::A)]);
        assert!(runnable_on(&i, 90) && !runnable_on(&i, 89) && !runnable_on(&i, 100));
        let i = expect(&a.cubin_sm100a, CodeKind::Cubin, &[ArchCode::sass(100).with_variant(ArchVariant::A)]);
        assert!(runnable_on(&i, 100) && !runnable_on(&i, 103));
        let i = expect(&a.cubin_sm120, CodeKind::Cubin, &[ArchCode::sass(120)]);
        assert!(runnable_on(&i, 120) && runnable_on(&i, 121) && !runnable_on(&i, 100));
        assert_eq!(describe_codes(&i.codes), "sm_120");
    }

    #[test]
    fn nvcc_fatbins() {
        let Some(a) = artifacts() else { return };
        let i = expect(&a.fatbin_multi, CodeKind::Fatbin, &[ArchCode::sass(80), ArchCode::sass(90), ArchCode::ptx(90)]);
        assert!(!i.compressed);
        assert!(runnable_on(&i, 90));
        assert!(runnable_on(&i, 86));
        assert!(runnable_on(&i, 100), "compute_90 PTX JITs on sm_100");
        assert!(!runnable_on(&i, 75));
        assert_eq!(describe_codes(&i.codes), "sm_80, sm_90, compute_90");

        let i = expect(
            &a.fatbin_100f_compressed,
            CodeKind::Fatbin,
            &[ArchCode::sass(100).with_variant(ArchVariant::F), ArchCode::ptx(100).with_variant(ArchVariant::F)],
        );
        assert!(i.compressed);
        assert!(runnable_on(&i, 100) && runnable_on(&i, 103));
        assert!(!runnable_on(&i, 110) && !runnable_on(&i, 120) && !runnable_on(&i, 90));

        let i = expect(&a.fatbin_lto, CodeKind::Fatbin, &[ArchCode::lto_ir(90)]);
        assert!(!runnable_on(&i, 90), "LTO-IR alone needs linking");
    }

    #[test]
    fn nvcc_ptx_and_lto_ir() {
        let Some(a) = artifacts() else { return };
        let i = expect(&a.ptx80, CodeKind::Ptx, &[ArchCode::ptx(80)]);
        assert!(runnable_on(&i, 90) && runnable_on(&i, 80) && !runnable_on(&i, 75));
        let i = expect(&a.ltoir90, CodeKind::LtoIr, &[ArchCode::lto_ir(90)]);
        assert!(!runnable_on(&i, 90));
    }

    #[test]
    fn nvcc_prefixes_never_panic() {
        let Some(a) = artifacts() else { return };
        for image in [&a.cubin_sm90a, &a.cubin_sm120, &a.fatbin_multi, &a.fatbin_100f_compressed, &a.ptx80, &a.ltoir90]
        {
            for len in 0..image.len() {
                prefix_check(image, len);
            }
        }
        // A cut cubin or fatbin is never accepted.
        for image in [&a.cubin_sm90a, &a.fatbin_multi] {
            for len in 0..image.len() {
                assert!(inspect(&image[..len]).is_err(), "prefix {len} accepted");
            }
        }
    }

    #[test]
    fn nvcc_mutations_never_panic() {
        let Some(a) = artifacts() else { return };
        let mut rng = Rng(0xC0FF_EE00_1234_5678);
        for image in [
            &a.cubin_sm80,
            &a.cubin_sm100a,
            &a.fatbin_multi,
            &a.fatbin_100f_compressed,
            &a.fatbin_lto,
            &a.ltoir90,
            &a.ptx80,
        ] {
            mutate_and_check(image, &mut rng, 2000);
        }
        for cubin in [&a.cubin_sm80, &a.cubin_sm90a, &a.cubin_sm100a] {
            extreme_fields(cubin, &cubin_fields(0, cubin));
        }
        for f in [&a.fatbin_multi, &a.fatbin_100f_compressed, &a.fatbin_lto] {
            extreme_fields(f, &fatbin_fields(f));
        }
        extreme_fields(&a.ltoir90, &[(12, 2), (14, 2), (16, 4), (20, 4), (24, 2), (26, 2)]);
    }
}
