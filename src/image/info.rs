//! The answers image validation gives: what kind of image a byte slice is ([`CodeKind`]), which
//! GPU architectures its code is for ([`ArchCode`], [`ArchVariant`], with the rules for which GPU
//! can run which code), what [`inspect`](super::inspect) found ([`ImageInfo`]) and why an image
//! was refused ([`ImageError`]). Plain data: nothing here reads image bytes, so every other
//! file of `image/` may use these types without depending on another.

pub use crate::enums::CodeKind;
use std::fmt;

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
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
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
    Sass {
        /// The architecture number XY (90 for sm_90).
        sm: u32,
        /// Plain, arch-specific (`a`) or family (`f`).
        variant: ArchVariant,
    },
    /// PTX for `compute_XY`, which the driver can JIT-compile.
    Ptx {
        /// The architecture number XY (90 for sm_90).
        sm: u32,
        /// Plain, arch-specific (`a`) or family (`f`).
        variant: ArchVariant,
    },
    /// LTO-IR for `lto_XY`, which needs linking (nvJitLink) before it can run.
    LtoIr {
        /// The architecture number XY (90 for sm_90).
        sm: u32,
        /// Plain, arch-specific (`a`) or family (`f`).
        variant: ArchVariant,
    },
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
    /// Whether a GPU of compute capability `sm` can run this piece on its own (see [`runnable_on`](crate::image::runnable_on)).
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
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

/// Which of an image's pieces of code CUDA could pick on the GPUs of this process, given the
/// compute capability of each GPU (`gpus`): the pieces to decompress, validate and hand over.
/// `codes[i]` is the code of entry i; the answer says, per entry, whether it is chosen, and
/// whether some GPU would run PTX through the JIT.
///
/// For each GPU: every SASS piece it runs (CUDA's compatibility rules: `ArchCode::runs_on`), so
/// whichever of them CUDA prefers is there, but for plain SASS of exactly the GPU's architecture
/// beside an arch-specific (`a`) piece for it, which CUDA never picks (on an H100, driver 580,
/// a fatbin of sm_90 and sm_90a SASS loads the sm_90a piece in either order; the plain piece is
/// left in the caller's image, never copied or checked); and the PTX it could JIT — the pieces
/// of the highest `compute_XY` it runs — when no SASS runs there, when that PTX is for a later architecture
/// than every SASS that runs there (a driver that prefers the newer PTX still finds it), or
/// when `force_ptx` (`CUDA_FORCE_PTX_JIT` set: CUDA ignores SASS and JIT-compiles). LTO-IR never
/// runs. Nothing chosen for any GPU: the image holds no code any GPU of the process can run.
#[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
pub fn select_for(codes: &[ArchCode], gpus: &[u32], force_ptx: bool) -> Selection {
    let mut chosen = vec![false; codes.len()];
    let mut jit = false;
    for &gpu in gpus {
        let mut best_sass = None;
        let mut best_ptx = None;
        let mut exact_a = false;
        for c in codes.iter().filter(|c| c.runs_on(gpu)) {
            match *c {
                ArchCode::Sass { sm, variant } => {
                    best_sass = best_sass.max(Some(sm));
                    exact_a |= variant == ArchVariant::A;
                }
                ArchCode::Ptx { sm, .. } => best_ptx = best_ptx.max(Some(sm)),
                ArchCode::LtoIr { .. } => {}
            }
        }
        // An 'a' piece runs only on exactly its architecture, so `exact_a` is one for this GPU.
        for (i, c) in codes.iter().enumerate() {
            if let ArchCode::Sass { sm, variant } = *c {
                if c.runs_on(gpu) && !(exact_a && variant == ArchVariant::None && sm == gpu) {
                    chosen[i] = true;
                }
            }
        }
        let Some(ptx) = best_ptx else { continue };
        if force_ptx || best_sass.is_none_or(|sass| ptx > sass) {
            jit |= force_ptx || best_sass.is_none();
            for (i, c) in codes.iter().enumerate() {
                if matches!(c, ArchCode::Ptx { sm, .. } if *sm == ptx) && c.runs_on(gpu) {
                    chosen[i] = true;
                }
            }
        }
    }
    Selection { chosen, jit }
}

/// What [`select_for`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Per entry: handed to CUDA.
    pub chosen: Vec<bool>,
    /// Some GPU has no SASS among the chosen and runs PTX through the JIT (or CUDA is told to
    /// JIT everything).
    pub jit: bool,
}

impl Selection {
    /// Whether anything at all is chosen.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    pub fn any(&self) -> bool {
        self.chosen.iter().any(|&c| c)
    }
}

impl fmt::Display for ArchCode {
    /// `sm_90a`, `compute_90`, `lto_90`.
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self {
            ArchCode::Sass { .. } => "sm",
            ArchCode::Ptx { .. } => "compute",
            ArchCode::LtoIr { .. } => "lto",
        };
        write!(f, "{}_{}{}", prefix, self.sm(), self.variant().suffix())
    }
}

/// What [`inspect`](crate::image::inspect) found in an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// What the image is.
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
    Truncated {
        /// The part that is cut short.
        what: &'static str,
        /// Bytes it needs.
        need: u64,
        /// Bytes there are.
        have: u64,
    },
    /// Recognised, but inconsistent or unsupported.
    Malformed(String),
}

impl fmt::Display for ImageError {
    #[cfg_attr(cudyn_load_path_section, link_section = "cudyn_load_path")]
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
