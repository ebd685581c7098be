//! Libraries (`CUlibrary` == `cudaLibrary_t`): load device code through the runtime or the
//! driver after checking the bytes, find kernels and globals, unload.

use crate::cuda::driver::{self, driver_if_usable};
use crate::cuda::{self, fmt_version, sys, OptionArrays};
use crate::error::{Error, Result, Status};
use crate::image::memo;
use crate::image::{self, Built, CodeKind};
use crate::kernel::Kernel;
use crate::load_options::{self, LoadOption};
use crate::registry;
use std::ffi::{c_void, CStr};
use std::path::Path;
use std::sync::Arc;

pub use crate::enums::Api;

/// A loaded library, owned: unloaded on drop (through the API that loaded it), or by
/// [`Library::unload`] to hear about a failure. Its kernels ([`Library::kernel`]) borrow it,
/// so it cannot be dropped or unloaded while one is in use.
#[derive(Debug)]
pub struct Library {
    raw: sys::CUlibrary,
    api: Api,
}

// SAFETY: library handles are context-independent and usable from any thread.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

/// The PTX ISA version each CUDA release introduced: a driver older than that refuses it.
fn cuda_for_ptx_isa(major: u32, minor: u32) -> Option<i32> {
    Some(match (major, minor) {
        (9, m) => 13000 + (m as i32) * 10,
        (8, m) if m <= 8 => [12000, 12010, 12020, 12030, 12040, 12050, 12060, 12080, 12090][m as usize],
        (m, _) if m < 8 => 11000,
        _ => return None,
    })
}

/// The largest file [`Library::load_file`] reads (1 GiB; not configurable). Real images are
/// kilobytes to a few hundred megabytes; the cap keeps a mistaken path from filling memory.
pub const MAX_IMAGE_FILE: u64 = 1 << 30;

/// The bytes of the image file at `path`: opened without blocking (O_NONBLOCK: opening a FIFO
/// with no writer would wait for one), checked with fstat on the open descriptor to be a
/// regular file within [`MAX_IMAGE_FILE`], and read to its end, which must not pass the cap
/// (the file may grow while it is read). `cudyn inspect`, `compile` and `link` read their
/// files through it too.
pub fn read_image_file(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let shown = crate::error::quote_name(&path.to_string_lossy()).into_owned();
    let path_shown = &shown;
    let io = |what: &str, e: std::io::Error| {
        Error::new(Status::Io, cold_format!("{what} {path_shown}: {}", crate::error::io_text(&e)))
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io("opening", e))?;
    let meta = file.metadata().map_err(|e| io("checking", e))?;
    let ty = meta.file_type();
    let not_regular = if ty.is_dir() {
        Some("a directory")
    } else if ty.is_fifo() {
        Some("a FIFO")
    } else if ty.is_char_device() || ty.is_block_device() {
        Some("a device")
    } else if ty.is_socket() {
        Some("a socket")
    } else if !ty.is_file() {
        Some("not a regular file")
    } else {
        None
    };
    if let Some(what) = not_regular {
        return Err(Error::new(
            Status::InvalidArgument,
            cold_format!("{path_shown} is {what}: an image file must be a regular file"),
        ));
    }
    let too_big = |n: u64| {
        Error::new(
            Status::InvalidArgument,
            cold_format!("{path_shown} is {n} bytes or more, over the {MAX_IMAGE_FILE}-byte limit for an image file"),
        )
    };
    if meta.len() > MAX_IMAGE_FILE {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(meta.len() as usize).map_err(|_| too_big(meta.len()))?;
    file.take(MAX_IMAGE_FILE + 1).read_to_end(&mut bytes).map_err(|e| io("reading", e))?;
    if bytes.len() as u64 > MAX_IMAGE_FILE {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// `.version X.Y` of a PTX text (as `image::inspect` reads it); None for anything else.
pub fn ptx_isa_version(ptx: &[u8]) -> Option<(u32, u32)> {
    image::inspect(ptx).ok()?.ptx_isa
}

/// The compute capability whose code must be present: the one every GPU shares, else the
/// current context's device's (device 0 with no context). None without a usable driver.
pub(crate) fn target_sm() -> Option<u32> {
    let d = driver_if_usable()?;
    if let Some(sm) = d.uniform_sm() {
        return Some(sm);
    }
    d.device_sm_cached(d.current_device().ok()?).ok()
}

/// The compute capability of every GPU of the process (None without a usable driver).
fn process_gpus() -> Option<&'static [u32]> {
    driver_if_usable().map(|d| d.device_sms()).filter(|g| !g.is_empty())
}

/// `CUDA_FORCE_PTX_JIT` as CUDA reads it at initialisation: set and not "0", CUDA JIT-compiles
/// PTX even where SASS runs, so the PTX must be handed over too.
fn force_ptx_jit() -> bool {
    static F: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *crate::fork::once(&F, || std::env::var_os("CUDA_FORCE_PTX_JIT").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// NO_BINARY_FOR_DEVICE for an image of kind `kind` holding `codes`, on GPUs `gpus`: the
/// message names both.
fn no_binary(kind: CodeKind, codes: &[image::ArchCode], gpus: &[u32]) -> Error {
    let held = if codes.is_empty() { "no code".to_string() } else { image::describe_codes(codes) };
    let present =
        gpus.iter().enumerate().map(|(i, sm)| cold_format!("device {i} is sm_{sm}")).collect::<Vec<_>>().join(", ");
    Error::new(
        Status::NoBinaryForDevice,
        cold_format!("the {kind} holds {held}, none of which a GPU of this process runs ({present})"),
    )
}

fn invalid(e: image::ImageError) -> Error {
    Error::new(Status::InvalidImage, e.to_string())
}

/// What a load hands CUDA.
pub(crate) enum Handed<'a> {
    /// An image cudyn built and checked (see `image::Plan`), or PTX it copied to end it with a
    /// NUL: loaded with BINARY_IS_PRESERVED, so CUDA reads it in place, and kept alive with the
    /// library until it is unloaded.
    Own(Arc<Built>),
    /// The caller's PTX text, NUL-terminated, as given (CUDA copies it unless the caller asked
    /// for BINARY_IS_PRESERVED, which is then the caller's promise about their buffer).
    Caller(&'a [u8]),
}

impl Handed<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Handed::Own(b) => &b.image,
            Handed::Caller(c) => c,
        }
    }
    /// Whether it is PTX text, which the load compiles at once (see `load`).
    fn is_ptx(&self) -> bool {
        match self {
            Handed::Own(b) => b.info.kind == CodeKind::Ptx,
            Handed::Caller(_) => true,
        }
    }
}

/// Check an image before CUDA sees it; returns the bytes CUDA would read: for a fatbin, the
/// entries the GPUs of this process run, decompressed and checked (with no usable driver, every
/// entry is checked and the image comes back as it is); PTX gains a terminating NUL if it had
/// none. Loading the same bytes again costs the header walk and one comparison (`memo`).
pub fn validate(image: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    Ok(match validate_for_load(image)? {
        Handed::Own(b) => std::borrow::Cow::Owned(b.image.to_vec()),
        Handed::Caller(c) => std::borrow::Cow::Borrowed(c),
    })
}

/// The PTX ISA a driver must support, checked against this one's.
fn check_ptx_isa(isa: Option<(u32, u32)>) -> Result<()> {
    if let (Some((a, b)), Some(d)) = (isa, driver_if_usable()) {
        if let Some(need) = cuda_for_ptx_isa(a, b) {
            if need > d.version {
                return Err(Error::new(
                    Status::UnsupportedVersion,
                    cold_format!(
                        "PTX ISA {a}.{b} needs a CUDA {} driver, this one is CUDA {}: compile to a cubin instead",
                        fmt_version(need),
                        fmt_version(d.version)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks `image` and decides what CUDA is handed (see `Handed`), for the GPUs of the process.
fn validate_for_load(image: &[u8]) -> Result<Handed<'_>> {
    validate_for_gpus(image, process_gpus())
}

/// [`validate`] as if the process had GPUs of compute capabilities `gpus` (the memo's tests:
/// no driver needed); the bytes handed over and whether they were built before (a memo hit).
#[doc(hidden)]
pub fn validate_as_if(image: &[u8], gpus: &[u32]) -> Result<Vec<u8>> {
    validate_for_gpus(image, Some(gpus)).map(|h| h.bytes().to_vec())
}

/// `validate_for_load` for GPUs `gpus` (None: none known, so every entry is checked and the
/// image handed over as it is).
fn validate_for_gpus<'a>(image: &'a [u8], gpus: Option<&[u32]>) -> Result<Handed<'a>> {
    if image.is_empty() {
        return Err(Error::new(Status::InvalidImage, "the image is empty"));
    }
    if let Some(planned) = gpus.and_then(|gpus| Some((gpus, image::plan(image, gpus, force_ptx_jit())?))) {
        let (gpus, plan) = planned;
        let plan = plan.map_err(|e| plan_error(e, image, gpus))?;
        let parts = plan.key_parts();
        let key = memo::Key::new(&parts);
        if let Some(built) = memo::lookup(&key) {
            return Ok(Handed::Own(built));
        }
        // A first sight: the image's copy and checks run next, most likely with their code
        // evicted since the last one (by CUDA's loads of other images in between), so ask for
        // all of it at once. Not on a memo hit, which runs none of it, nor where the checks go
        // through so few bytes that they reach too few lines to wait on (image/warm.rs).
        if plan.checked_len() >= image::PREFETCH_MIN_CHECKED {
            image::fetch_load_path_code();
        }
        let built = Arc::new(plan.build(gpus).map_err(|e| plan_error(e, image, gpus))?);
        memo::remember(&key, &built, plan.key_is_image(&built));
        return Ok(Handed::Own(built));
    }
    let info = image::inspect(image).map_err(invalid)?;
    match info.kind {
        CodeKind::Cubin | CodeKind::Fatbin => {
            // No usable driver (the load will say why): every entry was checked.
            Ok(Handed::Caller(&image[..info.len.min(image.len())]))
        }
        CodeKind::Ptx => {
            check_ptx_isa(info.ptx_isa)?;
            let body = &image[..info.len.min(image.len())];
            if body.ends_with(&[0]) {
                return Ok(Handed::Caller(body));
            }
            let mut v = image::ImageBuf::with_capacity(body.len() + 1).ok_or_else(|| {
                Error::invalid(cold_format!("cannot allocate {} bytes for a copy of the PTX", body.len() + 1))
            })?;
            v.extend_from_slice(body);
            v.push(0);
            let handed = info.codes.clone();
            Ok(Handed::Own(Arc::new(Built::new(v, info, handed, true))))
        }
        CodeKind::LtoIr => {
            Err(Error::new(Status::InvalidImage, "the image is LTO-IR: link it to a cubin first (cudyn_link)"))
        }
        CodeKind::Source => {
            Err(Error::new(Status::InvalidImage, "the image is CUDA source: use cudyn_library_load_source"))
        }
        // inspect never answers Object or Library (link inputs only).
        CodeKind::Unknown | CodeKind::Object | CodeKind::Library => {
            Err(Error::new(Status::InvalidImage, "not a cubin, fatbin or PTX image"))
        }
    }
}

/// cudyn's own copy of PTX text `ptx`, ending in a NUL, to hand CUDA.
fn own_copy(ptx: &[u8]) -> Result<Built> {
    let text = ptx.strip_suffix(&[0]).unwrap_or(ptx);
    let mut v = image::ImageBuf::with_capacity(text.len() + 1).ok_or_else(|| {
        Error::invalid(cold_format!("cannot allocate {} bytes for a copy of the PTX", text.len() + 1))
    })?;
    v.extend_from_slice(text);
    v.push(0);
    let info = image::inspect(&v).map_err(invalid)?;
    let handed = info.codes.clone();
    Ok(Built::new(v, info, handed, true))
}

fn plan_error(e: image::PlanError, image: &[u8], gpus: &[u32]) -> Error {
    match e {
        image::PlanError::Image(e) => invalid(e),
        image::PlanError::NoBinary { codes } => no_binary(image::code_kind_of(image), &codes, gpus),
    }
}

impl Library {
    /// Load a cubin, fatbin or PTX image from memory. `image.len()` is checked against the
    /// image's own headers first, so CUDA never reads past the slice. A PTX image that the
    /// driver's JIT refuses fails with ptxas's first error line in the message.
    pub fn load_data(image: &[u8], api: Api) -> Result<Library> {
        Library::load_data_with(image, api, &[], None)
    }

    /// `load_data` with load options (checked before anything is loaded; an option the API
    /// does not take is refused), and the JIT's log (error log, then info log) written to
    /// `log`, when given, whether the load succeeds or fails.
    pub fn load_data_with(image: &[u8], api: Api, options: &[LoadOption], log: Option<&mut String>) -> Result<Library> {
        Library::load(image, false, api, options, log)
    }

    /// The load behind `load_data_with` and `load_file_with`; `temporary`: `image` is freed
    /// when this returns, so CUDA is never left reading it in place (BINARY_IS_PRESERVED).
    fn load(
        image: &[u8],
        temporary: bool,
        api: Api,
        options: &[LoadOption],
        log: Option<&mut String>,
    ) -> Result<Library> {
        load_options::check(options, api)?;
        let mut handed = validate_for_load(image)?;
        if let (true, Handed::Caller(c)) = (temporary, &handed) {
            handed = Handed::Own(Arc::new(own_copy(c)?));
        }
        let compile_now = handed.is_ptx();
        let own = matches!(handed, Handed::Own(_));
        // No options and nothing to compile now: no arrays, no log buffers (most loads).
        let mut prep = load_options::prepare_for(options, api, compile_now)?;
        if let (true, Some(p)) = (own, prep.as_deref_mut()) {
            // CUDA reads cudyn's copy in place until the unload, instead of copying it again.
            p.preserve_binary();
        }
        let (mut none_u32, mut none_ptr): ([u32; 0], [*mut c_void; 0]) = ([], []);
        let (mut preserve_key, mut preserve_value) =
            ([load_options::LIBRARY_BINARY_IS_PRESERVED], [1usize as *mut c_void]);
        let arrays = match prep.as_deref_mut() {
            Some(p) => OptionArrays {
                jit_keys: &mut p.jit_keys,
                jit_values: &mut p.jit_values,
                lib_keys: &mut p.lib_keys,
                lib_values: &mut p.lib_values,
            },
            None => OptionArrays {
                jit_keys: &mut none_u32,
                jit_values: &mut none_ptr,
                lib_keys: if own { &mut preserve_key } else { &mut [] },
                lib_values: if own { &mut preserve_value } else { &mut [] },
            },
        };
        // SAFETY: `handed` is a validated image whose own headers fit in it; when cudyn built
        // it, it is kept with the library (below) as long as BINARY_IS_PRESERVED requires; the
        // option arrays come from `prepare_for` (or are the one library option above), and the
        // log buffers they name live in `prep`, which the registry keeps as long as the library.
        let loaded = api.loader().and_then(|l| unsafe { l.load_data(handed.bytes().as_ptr().cast(), arrays) });
        // CUDA loads modules lazily: PTX would be compiled at first use, long after this call,
        // with its errors reported then (and its logs written into buffers the options name).
        // Text the caller handed over as PTX is compiled now, in the current context (device
        // 0's primary context if the thread has none), while the caller can hear about it — as
        // cuModuleLoadData compiles PTX. A cubin or fatbin loads as lazily as CUDA loads it,
        // also when the code chosen for a GPU is the fatbin's PTX: its JIT runs at first use,
        // where CUDA would run it (on the H200 an eager load here cost 100 us more than raw
        // CUDA's lazy one for a 680-byte fatbin, and retained a context the caller never asked for).
        let r = loaded.and_then(|lib| {
            // SAFETY: `lib` was just loaded.
            match if compile_now { unsafe { driver::library_load_module(lib) } } else { Ok(()) } {
                Ok(()) => Ok(lib),
                Err(e) => {
                    let _ = unload_now(lib, api);
                    Err(e)
                }
            }
        });
        if let Some(l) = log {
            *l = prep.as_ref().map(|p| p.log()).unwrap_or_default();
        }
        if let (Ok(_), Some(p)) = (&r, prep.as_ref()) {
            p.report_wall_time();
        }
        let lib = match r {
            Ok(lib) => lib,
            Err(mut e) => {
                if let Some(line) = prep.as_ref().and_then(|p| p.first_error()) {
                    // The JIT's line echoes the PTX: quoted, as every message is.
                    e.message = cold_format!("{}: {}", e.message, crate::error::quote_name(&line));
                }
                return Err(e);
            }
        };
        // Nothing more is asked of CUDA: the registry learns the library's kernels as they are
        // used. The option arrays (and the log buffers they point to) live as long as the
        // library: CUDA loads into other contexts (other devices) later, with the same options,
        // and from the image cudyn built, in place.
        let image = match handed {
            Handed::Own(b) => Some(b),
            Handed::Caller(_) => None,
        };
        registry::loaded(lib, api, image, prep.map(|p| p as Box<dyn std::any::Any + Send + Sync>));
        Ok(Library { raw: lib, api })
    }

    /// `load_file` with load options and the JIT log, as `load_data_with`.
    pub fn load_file_with(path: &Path, api: Api, options: &[LoadOption], log: Option<&mut String>) -> Result<Library> {
        load_options::check(options, api)?;
        let bytes = read_image_file(path)?;
        Library::load(&bytes, true, api, options, log).map_err(|e| e.context(path.display()))
    }

    /// Load a file. The bytes are read and validated by cudyn and handed to CUDA from memory,
    /// so what CUDA loads is exactly what was checked (no window for the file to change).
    /// Only a regular file of at most [`MAX_IMAGE_FILE`] bytes is read: a directory, FIFO,
    /// socket or device (`/dev/zero` never ends, a FIFO can block forever) gets
    /// `InvalidArgument` at once, without blocking; a file that cannot be opened or read, `Io`.
    pub fn load_file(path: &Path, api: Api) -> Result<Library> {
        Library::load_file_with(path, api, &[], None)
    }

    /// Take ownership of a raw handle loaded through `api` (e.g. one handed back by the C API).
    ///
    /// # Safety
    /// `raw` must be a live library loaded through `api`, not owned by anything else.
    pub unsafe fn from_raw(raw: sys::CUlibrary, api: Api) -> Library {
        Library { raw, api }
    }

    /// Give up ownership: the raw handle, which nothing unloads any more (see [`Library::from_raw`]).
    pub fn into_raw(self) -> sys::CUlibrary {
        let r = self.raw;
        std::mem::forget(self);
        r
    }

    /// The raw handle (`CUlibrary` == `cudaLibrary_t`), still owned by this `Library`.
    pub fn as_raw(&self) -> sys::CUlibrary {
        self.raw
    }

    /// The API the library was loaded (and is unloaded) through.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Unload now, reporting failure (drop unloads too, but ignores errors).
    pub fn unload(self) -> Result<()> {
        let raw = self.raw;
        let api = self.api;
        std::mem::forget(self);
        // SAFETY: the handle this Library held, unloaded once (it was forgotten above).
        unsafe { unload_raw(raw, api) }
    }

    /// Number of kernels in the library (driver 12.4+, else runtime 12.8+).
    pub fn kernel_count(&self) -> Result<u32> {
        // SAFETY: as above.
        unsafe { kernel_count(self.raw) }
    }

    /// Device address and size of a `__device__` global, in the current context.
    pub fn global(&self, name: &CStr) -> Result<(*mut c_void, usize)> {
        // SAFETY: as above.
        unsafe { get_global(self.raw, name) }
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle this Library held; dropped once.
        let _ = unsafe { unload_raw(self.raw, self.api) };
    }
}

/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn unload_raw(lib: sys::CUlibrary, api: Api) -> Result<()> {
    if lib.is_null() {
        return Ok(());
    }
    // The books are kept under the registry's lock, around CUDA's unload (see registry).
    registry::unload(lib, api, || unload_now(lib, api))
}

/// CUDA's unload of `lib` through `api`, and nothing else: for `unload_raw` (under the
/// registry's lock) and for a library whose load failed half way (never registered).
fn unload_now(lib: sys::CUlibrary, api: Api) -> Result<()> {
    // SAFETY: a live library handle: one just loaded, or one `unload_raw` was given and the
    // registry did not know as unloaded.
    api.loader().and_then(|l| unsafe { l.unload(lib) })
}

/// Run `call` (CUDA calls on `lib`) under the registry's read lock, after refusing NULL and a
/// library cudyn unloaded: no unload through cudyn can come between the check and the call.
fn with_lib<R>(lib: sys::CUlibrary, call: impl FnOnce() -> Result<R>) -> Result<R> {
    registry::with_library(lib, |_| call())
}

/// `api`'s library calls, opened outside the registry's lock, once `lib` passed the same checks
/// as `with_lib` (so a bad handle is reported as such, whatever is installed).
fn loader_for(lib: sys::CUlibrary, api: Api) -> Result<&'static dyn cuda::Loader> {
    with_lib(lib, || Ok(()))?;
    api.loader()
}

/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_kernel(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<Kernel> {
    let loader = loader_for(lib, api)?;
    // SAFETY: this function's own contract; NULL and unloaded handles are refused by
    // `with_library`.
    let (k, seen) = registry::with_library(lib, |seen| unsafe { loader.kernel(lib, name) }.map(|k| (k, seen)))?;
    if k.is_null() {
        return Err(Error::new(Status::Cuda, "CUDA returned a NULL kernel handle"));
    }
    registry::found_kernels(lib, seen, &[k])?;
    Ok(Kernel(k))
}

/// Number of kernels in a library (driver 12.4+, else runtime 12.8+).
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn kernel_count(lib: sys::CUlibrary) -> Result<u32> {
    open_listing();
    // SAFETY: as above.
    with_lib(lib, || unsafe { cuda::library_kernel_count(lib) })
}

/// Open what counting and listing kernels go through (the driver, else the runtime) before the
/// registry's lock is taken.
fn open_listing() {
    driver::open();
    if !driver::driver_ready().is_some_and(|d| d.lists_kernels()) {
        let _ = cuda::runtime::runtime();
    }
}

/// Fill `out` with up to `out.len()` kernels; returns how many were written.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn enumerate_kernels(lib: sys::CUlibrary, out: &mut [Kernel]) -> Result<u32> {
    open_listing();
    // Count and list under one hold of the registry's lock: no unload through cudyn between.
    let (w, seen) = registry::with_library(lib, |seen| {
        // SAFETY: this function's own contract; NULL and unloaded handles were refused.
        let n = unsafe { cuda::library_kernel_count(lib) }?;
        let w = n.min(out.len().min(u32::MAX as usize) as u32) as usize;
        // Kernel is repr(transparent) over CUkernel.
        // SAFETY: `out` holds at least `w` Kernels, each laid out as a CUkernel.
        let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<sys::CUkernel>(), w) };
        // SAFETY: as above; the library has at least `w` kernels.
        unsafe { list_kernels(lib, raw) }?;
        Ok((w, seen))
    })?;
    // SAFETY: as above: the first `w` were written.
    let raw = unsafe { std::slice::from_raw_parts(out.as_ptr().cast::<sys::CUkernel>(), w) };
    registry::found_kernels(lib, seen, raw)?;
    Ok(w as u32)
}

/// Every kernel of the library.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn kernels_of(lib: sys::CUlibrary) -> Result<Vec<Kernel>> {
    open_listing();
    // SAFETY: as above.
    let (v, seen) = registry::with_library(lib, |seen| unsafe { kernels_of_unchecked(lib) }.map(|v| (v, seen)))?;
    registry::found_kernels(lib, seen, &v)?;
    Ok(v.into_iter().map(Kernel).collect())
}

/// `kernels_of` without the registry's check or books.
///
/// # Safety
/// `lib` is a live library handle.
unsafe fn kernels_of_unchecked(lib: sys::CUlibrary) -> Result<Vec<sys::CUkernel>> {
    // SAFETY: the caller's contract.
    let n = unsafe { cuda::library_kernel_count(lib) }?;
    // The count is CUDA's word: bounded, and the memory asked for without aborting.
    let max = driver::MAX_KERNELS;
    let n = usize::try_from(n).ok().filter(|&n| n <= max).ok_or_else(|| {
        Error::new(Status::Cuda, cold_format!("CUDA reported {n} kernels in one library (cudyn lists at most {max})"))
    })?;
    let mut v = vec![std::ptr::null_mut(); n];
    // SAFETY: as above.
    unsafe { list_kernels(lib, &mut v) }?;
    Ok(v)
}

/// Fill `out` with the first `out.len()` kernels of the library (which has at least that
/// many).
///
/// # Safety
/// `lib` is a live library handle.
unsafe fn list_kernels(lib: sys::CUlibrary, out: &mut [sys::CUkernel]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { cuda::library_enumerate_kernels(lib, out) }
}

/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_global(lib: sys::CUlibrary, name: &CStr) -> Result<(*mut c_void, usize)> {
    driver::open();
    // SAFETY: as above.
    with_lib(lib, || unsafe { driver::library_global(lib, name) })
}

/// Address and size of the `__managed__` variable `name` (usable from the host and from
/// kernels), through `api`.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_managed(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<(*mut c_void, usize)> {
    let loader = loader_for(lib, api)?;
    // SAFETY: as above.
    with_lib(lib, || unsafe { loader.managed(lib, name) })
}

/// The unified function `name` (a function usable from host and device code, CUDA 12.0+),
/// through `api`.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_unified_function(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<*mut c_void> {
    let loader = loader_for(lib, api)?;
    // SAFETY: as above.
    with_lib(lib, || unsafe { loader.unified_function(lib, name) })
}

/// `get_global` for device `device`: its primary context is made current for the lookup
/// only, and the thread's own context is restored after.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_global_on_device(lib: sys::CUlibrary, name: &CStr, device: i32) -> Result<(*mut c_void, usize)> {
    driver::open();
    // SAFETY: as above.
    with_lib(lib, || unsafe { driver::library_global_on_device(lib, name, device) })
}

/// `lib`'s module in the current context (cuLibraryGetModule): valid while that context and the
/// library live. A thread with no current context gets device 0's primary context's module;
/// that context is then retained for the process (not left current).
///
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_module(lib: sys::CUlibrary) -> Result<sys::CUmodule> {
    driver::open();
    // SAFETY: as above.
    with_lib(lib, || unsafe { driver::library_module(lib) })
}

impl Library {
    /// The library's module in the current context (see [`get_module`]).
    pub fn module(&self) -> Result<sys::CUmodule> {
        // SAFETY: a Library holds a live handle until it is dropped or unloaded.
        unsafe { get_module(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_isa_versions_map_to_cuda_releases() {
        assert_eq!(cuda_for_ptx_isa(9, 0), Some(13000));
        assert_eq!(cuda_for_ptx_isa(8, 8), Some(12090));
        assert_eq!(cuda_for_ptx_isa(8, 7), Some(12080));
        assert_eq!(cuda_for_ptx_isa(8, 0), Some(12000));
        assert_eq!(cuda_for_ptx_isa(7, 8), Some(11000));
        assert_eq!(cuda_for_ptx_isa(8, 9), None);
        assert_eq!(ptx_isa_version(b"//\n.version 9.0\n.target sm_90\n"), Some((9, 0)));
        assert_eq!(ptx_isa_version(b".target sm_90\n"), None);
        let mut long = b".version 8.7\n.target sm_90\n//".to_vec();
        long.resize(4095, b'x');
        long.extend_from_slice(b"tail");
        assert_eq!(ptx_isa_version(&long), Some((8, 7)));
        // PTX is ASCII (ptxas reads ASCII; nvcc writes a non-ASCII path as octal escapes), so
        // a 2-byte character, here across byte 4096, makes it no PTX at all.
        long.truncate(4095);
        long.extend_from_slice("\u{e9}tail".as_bytes());
        assert_eq!(ptx_isa_version(&long), None);
        // A trailing comment is read the way the image check reads it.
        assert_eq!(ptx_isa_version(b".version 9.0 // ISA\n.target sm_90\n"), Some((9, 0)));
    }

    #[test]
    fn api_from_raw_refuses_unknown_values() {
        assert_eq!(Api::try_from(0u32).unwrap(), Api::Runtime);
        assert_eq!(Api::try_from(1u32).unwrap(), Api::Driver);
        assert_eq!(Api::try_from(2u32).unwrap_err().status, Status::InvalidArgument);
    }

    /// A first sight asks for the load path's code by the plain bytes its checks go through,
    /// not by the image's size: a compressed entry of a few hundred bytes that decompresses to
    /// kilobytes of cubin asks for it; a cubin under the bound, plain or in a fatbin, does not.
    #[test]
    fn first_sight_prefetch_follows_the_plain_bytes_checked() {
        use crate::fuzzing::{
            fatbin, fatbin_entry, fatbin_entry_of_stream, zstd_runs, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF,
        };
        use crate::image::FETCHES;
        let min = crate::image::PREFETCH_MIN_CHECKED as usize;
        let fetches = |image: &[u8]| {
            let before = FETCHES.with(|n| n.get());
            validate_as_if(image, &[90]).unwrap_or_else(|e| panic!("{}", e.message));
            FETCHES.with(|n| n.get()) - before
        };
        // Name tables of sizes no other test uses: each image here is a first sight.
        let small = crate::image::tests::synthetic_cubin_sized(8, 0x0600_5a04, 1296);
        let large = crate::image::tests::synthetic_cubin_sized(8, 0x0600_5a04, 4112);
        assert!(small.len() < min && large.len() >= min, "the test's premise");
        let entry = |data: &[u8], packing, flags| fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, flags, data, packing)]);
        let packed = zstd_runs(&large);
        let zstd = fatbin(&[fatbin_entry_of_stream(
            FATBIN_KIND_ELF,
            90,
            FATBIN_FLAGS_PLAIN | 0x8000,
            &packed,
            Some(large.len()),
        )]);
        assert!(zstd.len() < min, "the test's premise: {} bytes", zstd.len());
        assert_eq!(
            validate_as_if(&zstd, &[90]).unwrap(),
            validate_as_if(&entry(&large, Packing::Plain, FATBIN_FLAGS_PLAIN), &[90]).unwrap()
        );

        let small_zstd = crate::image::tests::synthetic_cubin_sized(8, 0x0600_5a04, 1312);
        for (what, image, want) in [
            ("a small cubin", small.clone(), 0),
            ("a small cubin in a fatbin", entry(&small, Packing::Plain, FATBIN_FLAGS_PLAIN), 0),
            ("a small zstd entry", entry(&small_zstd, Packing::Zstd, FATBIN_FLAGS_PLAIN), 0),
            ("a cubin over the bound", large.clone(), 1),
            ("a zstd entry of a few hundred bytes that decompresses over the bound", zstd.clone(), 1),
        ] {
            assert_eq!(fetches(&image), want, "{what}: {} bytes", image.len());
        }
    }

    #[test]
    fn bad_images_are_refused_before_cuda() {
        assert_eq!(validate(b"").unwrap_err().status, Status::InvalidImage);
        assert_eq!(validate(&[0x13u8; 64]).unwrap_err().status, Status::InvalidImage);
        let e = validate(b"extern \"C\" __global__ void k() {}\n").unwrap_err();
        assert_eq!(e.status, Status::InvalidImage);
        assert!(e.message.contains("load_source"), "{}", e.message);
    }
}
