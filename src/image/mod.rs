//! Recognises and validates the device-code images cudyn is handed (cubin, fatbin, PTX, LTO-IR,
//! CUDA source): which kind, how many bytes, which GPU architectures they hold, whether a GPU can
//! run them. This file is the public face: [`code_kind_of`] (a cheap guess from the first bytes),
//! [`inspect`] (the full, bounds-checked validation every load goes through, dispatching on the
//! magic number to `cubin/`, `fatbin.rs`, `ltoir.rs` or `text.rs`), [`runnable_on`] and
//! [`describe_codes`]; the types they answer with are in `info.rs`. The files below it depend on
//! one another in one direction only: fatbin → cubin, decompress, text; cubin → cubin/sections;
//! all of them → read (bounded reading) and info (the types). `memo.rs` remembers images that
//! passed, for the loaders; `contents.rs` reads what an image holds (entries, kernels and their
//! resources, globals) for `cudyn inspect`, through the same readers.

// Every parser here reads untrusted bytes: every offset and length read from them is checked
// against the slice with checked arithmetic, and nothing panics or uses `unsafe`. Each format
// is described at the top of the file that reads it. The module's only `unsafe` code parses
// nothing: `warm.rs` (a prefetch of cudyn's own code) and `buf.rs` (the memory of the images
// cudyn builds, kept apart from the C heap).
//
// Not accepted: host objects/executables with an embedded `.nv_fatbin` section, and the
// `__fatBinC_Wrapper_t` (magic 0x466243B1) that points at a fatbin by address; pass the fatbin
// bytes themselves. Concatenated fatbin containers: only the first is described.

mod buf;
pub mod contents;
mod cubin;
pub(crate) mod decompress;
mod fatbin;
mod info;
mod ltoir;
#[doc(hidden)]
pub(crate) mod memo;
mod read;
mod text;
mod warm;
pub use buf::ImageBuf;
#[cfg(test)]
pub(crate) use warm::FETCHES;
pub(crate) use warm::{fetch_load_path_code, PREFETCH_MIN_CHECKED};

pub use info::{select_for, ArchCode, ArchVariant, CodeKind, ImageError, ImageInfo, Selection};

use cubin::{inspect_cubin, ELF_MAGIC, EM_CUDA};
use fatbin::{inspect_fatbin, plan_fatbin, FatbinPlan, FATBIN_MAGIC};
use ltoir::{inspect_lto_ir, LTOIR_MAGIC};
use read::read_u16;
use text::{find_directive, inspect_text, is_plain_text, looks_like_source, split_at_nul};

/// How much of a text image `code_kind_of` looks at.
const SNIFF_WINDOW: usize = 64 * 1024;

/// Cheap guess from the first bytes (magic numbers / text sniffing). Never panics, never reads
/// out of bounds.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
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
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
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

/// [`inspect`] with a fatbin's entries checked by `threads` threads whatever their size (1: in
/// order on the calling thread). The verdict must not depend on it; tests hold it to that.
#[doc(hidden)]
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn inspect_with_threads(data: &[u8], threads: usize) -> Result<ImageInfo, ImageError> {
    if data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return fatbin::inspect_fatbin_with(data, threads.max(1), 0);
    }
    inspect(data)
}

/// How a cubin or fatbin will be handed to CUDA, decided from its headers alone (every fatbin
/// entry header checked; nothing decompressed yet): for a fatbin, which entries the GPUs of the
/// process can run; for a cubin, the cubin. [`Plan::key_parts`] are the bytes the handed-over
/// image depends on (what the loaders' memo compares), [`Plan::build`] makes it.
pub struct Plan<'a>(PlanKind<'a>);

enum PlanKind<'a> {
    Cubin(&'a [u8]),
    Fatbin(FatbinPlan<'a>),
}

/// Why an image cannot be handed to CUDA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// It is not a well-formed image.
    Image(ImageError),
    /// It is well-formed, but no GPU of the process can run anything in it; it holds `codes`.
    NoBinary {
        /// Every piece of code the image holds.
        codes: Vec<ArchCode>,
    },
}

impl From<ImageError> for PlanError {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn from(e: ImageError) -> Self {
        PlanError::Image(e)
    }
}

/// The image made for CUDA by [`Plan::build`].
#[derive(Debug)]
pub struct Built {
    /// The bytes to hand CUDA: every byte of them was checked. For a fatbin, a fatbin of just
    /// the entries chosen, uncompressed; for a cubin, the cubin (up to its last byte).
    pub image: ImageBuf,
    /// What the whole image given to cudyn holds (every entry, chosen or not).
    pub info: ImageInfo,
    /// What `image` holds.
    pub handed: Vec<ArchCode>,
    /// Some GPU of the process will run PTX from it through the JIT.
    pub jit: bool,
    /// Its kernels' parameter layouts, read at first need ([`Built::param_layout`]).
    layouts: std::sync::OnceLock<Option<contents::Layouts>>,
}

impl Built {
    /// An image made for CUDA: `image`, made from an image that holds `info`, holds `handed`;
    /// `jit` as the field says.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn new(image: impl Into<ImageBuf>, info: ImageInfo, handed: Vec<ArchCode>, jit: bool) -> Built {
        Built { image: image.into(), info, handed, jit, layouts: std::sync::OnceLock::new() }
    }

    /// The parameter layout of kernel `name` (its bytes, as `cuKernelGetName` gives them) as
    /// the image's own tables give it, the tables CUDA reads when it loads these bytes: read
    /// once per built image, at first need. None where they do not settle it
    /// ([`contents::param_layouts`]) and where a GPU of the process runs PTX from the image
    /// (the JIT decides its layout): ask CUDA then.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn param_layout(&self, name: &[u8]) -> Option<&[contents::Param]> {
        if self.jit {
            return None;
        }
        let all = self.layouts.get_or_init(|| contents::param_layouts(&self.image)).as_ref()?;
        let i = all.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
        Some(&all[i].1)
    }
}

/// Plans the load of `data` for GPUs of compute capabilities `gpus` (`force_ptx`: CUDA is told
/// to JIT PTX whatever SASS there is, `CUDA_FORCE_PTX_JIT`); None when `data` is neither a
/// cubin nor a fatbin (the loaders treat PTX on their own). A fatbin with no entry any of the
/// GPUs can run is refused here, before anything is decompressed.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn plan<'a>(data: &'a [u8], gpus: &[u32], force_ptx: bool) -> Option<Result<Plan<'a>, PlanError>> {
    if data.starts_with(&ELF_MAGIC) {
        return Some(Ok(Plan(PlanKind::Cubin(data))));
    }
    if !data.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return None;
    }
    Some(plan_fatbin(data, gpus, force_ptx).map_err(PlanError::from).and_then(|p| {
        if p.selection().any() {
            Ok(Plan(PlanKind::Fatbin(p)))
        } else {
            Err(PlanError::NoBinary { codes: p.info()?.codes })
        }
    }))
}

impl<'a> Plan<'a> {
    /// The bytes the built image depends on, in order: equal parts, equal image.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn key_parts(&self) -> Vec<&'a [u8]> {
        match &self.0 {
            PlanKind::Cubin(d) => vec![d],
            PlanKind::Fatbin(p) => p.key_parts().collect(),
        }
    }

    /// Bytes a [`Plan::build`] copies and checks: the cubin, or the plain (decompressed)
    /// payloads of the entries handed over. Known from the headers, before anything is read.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn checked_len(&self) -> u64 {
        match &self.0 {
            PlanKind::Cubin(d) => d.len() as u64,
            PlanKind::Fatbin(p) => p.checked_len(),
        }
    }

    /// Whether `built` (made by this plan's [`Plan::build`]) is byte for byte the
    /// concatenation of [`Plan::key_parts`]: a cubin handed over as it came, with nothing after
    /// its last byte. The memo then keeps no copy of the key.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn key_is_image(&self, built: &Built) -> bool {
        matches!(self.0, PlanKind::Cubin(d) if d.len() == built.image.len())
    }

    /// Decompresses and checks what is handed over, and makes the image CUDA will read.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn build(&self, gpus: &[u32]) -> Result<Built, PlanError> {
        self.build_with(gpus, fatbin::check_threads(), fatbin::parallel_min())
    }

    /// [`Plan::build`] with the entries checked by up to `threads` threads once there are
    /// `parallel_min` bytes to check.
    #[doc(hidden)]
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn build_with(&self, gpus: &[u32], threads: usize, parallel_min: usize) -> Result<Built, PlanError> {
        match &self.0 {
            PlanKind::Cubin(d) => {
                // Copied first, then checked: CUDA reads exactly the bytes that were checked,
                // whatever happens to the caller's buffer meanwhile.
                let mut copy = ImageBuf::with_capacity(d.len()).ok_or_else(|| {
                    ImageError::Malformed(cold_format!("cannot allocate {} bytes for a copy of the cubin", d.len()))
                })?;
                copy.extend_from_slice(d);
                let cubin = inspect_cubin(&copy)?;
                let code = ArchCode::Sass { sm: cubin.sm, variant: cubin.variant };
                if !gpus.iter().any(|&sm| code.runs_on(sm)) {
                    return Err(PlanError::NoBinary { codes: vec![code] });
                }
                copy.truncate(cubin.len);
                let info = ImageInfo {
                    kind: CodeKind::Cubin,
                    len: cubin.len,
                    codes: vec![code],
                    compressed: false,
                    ptx_isa: None,
                };
                Ok(Built::new(copy, info, vec![code], false))
            }
            PlanKind::Fatbin(p) => {
                let image = p.build(threads, parallel_min)?;
                let info = p.info()?;
                let handed =
                    info.codes.iter().zip(&p.selection().chosen).filter(|(_, &c)| c).map(|(c, _)| *c).collect();
                Ok(Built::new(image, info, handed, p.selection().jit))
            }
        }
    }
}

/// [`plan`] and [`Plan::build`] in one (tests, the fuzz targets, `cudyn inspect`).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn prepare(data: &[u8], gpus: &[u32], force_ptx: bool) -> Option<Result<Built, PlanError>> {
    plan(data, gpus, force_ptx).map(|p| p.and_then(|p| p.build(gpus)))
}

/// Whether a GPU of compute capability `sm` (e.g. 90) can run something in the image: SASS for
/// the same major with minor <= sm's minor (and arch-specific 'a' only on exactly that sm), or PTX
/// for sm <= the GPU's (the driver JITs it; 'a' PTX only on exactly that sm, 'f' PTX only within
/// the same major). LTO-IR alone: false (needs linking); source: false (needs compiling).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn runnable_on(info: &ImageInfo, sm: u32) -> bool {
    info.codes.iter().any(|c| c.runs_on(sm))
}

/// "sm_90, compute_90" style list for error messages ("none" when empty).
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn describe_codes(codes: &[ArchCode]) -> String {
    if codes.is_empty() {
        return "none".to_string();
    }
    codes.iter().map(ArchCode::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
pub(crate) mod tests;
