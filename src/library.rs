//! Libraries (`CUlibrary` == `cudaLibrary_t`): load device code through the runtime or the
//! driver after checking the bytes, find kernels and globals, unload.

use crate::cuda::driver::{self, driver_if_usable};
use crate::cuda::{self, fmt_version, sys, OptionArrays};
use crate::error::{Error, Result, Status};
use crate::image::memo;
use crate::image::{self, CodeKind, ImageInfo};
use crate::kernel::Kernel;
use crate::load_options::{self, LoadOption};
use crate::registry;
use std::ffi::{c_void, CStr};
use std::path::Path;

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
        Error::new(Status::Io, format!("{what} {path_shown}: {}", crate::error::io_text(&e)))
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
            format!("{path_shown} is {what}: an image file must be a regular file"),
        ));
    }
    let too_big = |n: u64| {
        Error::new(
            Status::InvalidArgument,
            format!("{path_shown} is {n} bytes or more, over the {MAX_IMAGE_FILE}-byte limit for an image file"),
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

/// NO_BINARY_FOR_DEVICE unless the image holds code a GPU of compute capability `sm` runs.
fn check_runnable(info: &ImageInfo, sm: Option<u32>) -> Result<()> {
    match sm {
        Some(sm) if !image::runnable_on(info, sm) => {
            let dev = driver_if_usable().and_then(|d| d.current_device().ok()).unwrap_or(0);
            Err(Error::new(
                Status::NoBinaryForDevice,
                format!(
                    "the {} holds {} but device {dev} is sm_{sm}",
                    info.kind,
                    if info.codes.is_empty() { "no code".to_string() } else { image::describe_codes(&info.codes) }
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Check an image before CUDA sees it; returns the bytes CUDA should read (PTX gains a
/// terminating NUL if it had none). A cubin or fatbin byte-identical to one checked before
/// costs one comparison (`memo`).
pub fn validate(image: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    validate_for_load(image).map(|(code, _)| code)
}

/// Whether loading an image of `info` on a GPU of compute capability `sm` (None: unknown)
/// makes the driver JIT-compile PTX: no SASS in it runs there.
fn needs_jit(info: &ImageInfo, sm: Option<u32>) -> bool {
    info.kind == CodeKind::Ptx
        || sm.is_none_or(|sm| !info.codes.iter().any(|c| matches!(c, image::ArchCode::Sass { .. }) && c.runs_on(sm)))
}

/// `validate`, and whether the load will need the JIT (see `needs_jit`).
fn validate_for_load(image: &[u8]) -> Result<(std::borrow::Cow<'_, [u8]>, bool)> {
    if image.is_empty() {
        return Err(Error::new(Status::InvalidImage, "the image is empty"));
    }
    let sm = target_sm();
    if let Some(verdict) = memo::lookup(image, |info| check_runnable(info, sm).map(|()| needs_jit(info, sm))) {
        return verdict.map(|jit| (std::borrow::Cow::Borrowed(image), jit));
    }
    let info = image::inspect(image).map_err(|e| Error::new(Status::InvalidImage, e.to_string()))?;
    match info.kind {
        CodeKind::Cubin | CodeKind::Fatbin | CodeKind::Ptx => {}
        CodeKind::LtoIr => {
            return Err(Error::new(Status::InvalidImage, "the image is LTO-IR: link it to a cubin first (cudyn_link)"))
        }
        CodeKind::Source => {
            return Err(Error::new(Status::InvalidImage, "the image is CUDA source: use cudyn_library_load_source"))
        }
        // inspect never answers Object or Library (link inputs only).
        CodeKind::Unknown | CodeKind::Object | CodeKind::Library => {
            return Err(Error::new(Status::InvalidImage, "not a cubin, fatbin or PTX image"))
        }
    }
    check_runnable(&info, sm)?;
    if info.kind == CodeKind::Ptx {
        if let (Some((a, b)), Some(d)) = (info.ptx_isa, driver_if_usable()) {
            if let Some(need) = cuda_for_ptx_isa(a, b) {
                if need > d.version {
                    return Err(Error::new(
                        Status::UnsupportedVersion,
                        format!(
                            "PTX ISA {a}.{b} needs a CUDA {} driver, this one is CUDA {}: compile to a cubin instead",
                            fmt_version(need),
                            fmt_version(d.version)
                        ),
                    ));
                }
            }
        }
        let body = &image[..info.len.min(image.len())];
        if !body.ends_with(&[0]) {
            let mut v = body.to_vec();
            v.push(0);
            return Ok((v.into(), true));
        }
        return Ok((std::borrow::Cow::Borrowed(image), true));
    }
    // Cubin or fatbin, fully checked: its verdict only depends on its bytes (and the GPU's
    // compute capability, checked again on every lookup).
    memo::remember(image, &info);
    Ok((std::borrow::Cow::Borrowed(image), needs_jit(&info, sm)))
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
        let mut prep = load_options::prepare(options, api)?;
        let (code, jit) = validate_for_load(image)?;
        let p = &mut *prep;
        let arrays = OptionArrays {
            jit_keys: &mut p.jit_keys,
            jit_values: &mut p.jit_values,
            lib_keys: &mut p.lib_keys,
            lib_values: &mut p.lib_values,
        };
        // SAFETY: `code` is a validated image whose own headers fit in it; the option arrays
        // come from `prepare`, and the log buffers they name live in `prep`, which the
        // registry keeps as long as the library.
        let loaded = api.loader().and_then(|l| unsafe { l.load_data(code.as_ptr().cast(), arrays) });
        // CUDA loads modules lazily: PTX would be compiled at first use, long after this call,
        // with its errors reported then (and its logs written into buffers the options name).
        // So a load that needs the JIT is made to compile now, in the current context (device
        // 0's primary context if the thread has none), while the caller can hear about it.
        let r = loaded.and_then(|lib| {
            // SAFETY: `lib` was just loaded.
            match if jit { unsafe { driver::library_load_module(lib) } } else { Ok(()) } {
                Ok(()) => Ok(lib),
                Err(e) => {
                    let _ = unload_now(lib, api);
                    Err(e)
                }
            }
        });
        if let Some(l) = log {
            *l = prep.log();
        }
        let lib = match r {
            Ok(lib) => lib,
            Err(mut e) => {
                if let Some(line) = prep.first_error() {
                    // The JIT's line echoes the PTX: quoted, as every message is.
                    e.message = format!("{}: {}", e.message, crate::error::quote_name(&line));
                }
                return Err(e);
            }
        };
        // Its kernels are owned from now on (their layouts may be remembered), and any of them
        // at an address an unloaded kernel had is that kernel no more. A CUDA that cannot list
        // them (driver 12.0-12.3) leaves the list empty; get_kernel adds them as it finds them.
        // SAFETY: `lib` was just loaded.
        let kernels = unsafe { kernels_of_unchecked(lib) }.unwrap_or_default();
        // The option arrays (and the log buffers they point to) live as long as the library:
        // CUDA loads into other contexts (other devices) later, with the same options.
        registry::loaded(lib, api, &kernels, Some(prep));
        Ok(Library { raw: lib, api })
    }

    /// `load_file` with load options and the JIT log, as `load_data_with`.
    pub fn load_file_with(path: &Path, api: Api, options: &[LoadOption], log: Option<&mut String>) -> Result<Library> {
        load_options::check(options, api)?;
        let bytes = read_image_file(path)?;
        Library::load_data_with(&bytes, api, options, log).map_err(|e| e.context(path.display()))
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

fn check_lib(lib: sys::CUlibrary) -> Result<()> {
    registry::check_library(lib)
}

/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_kernel(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<Kernel> {
    check_lib(lib)?;
    // SAFETY: this function's own contract; NULL and unloaded handles were refused above.
    let k = api.loader().and_then(|l| unsafe { l.kernel(lib, name) })?;
    if k.is_null() {
        return Err(Error::new(Status::Cuda, "CUDA returned a NULL kernel handle"));
    }
    registry::found_kernels(lib, &[k]);
    Ok(Kernel(k))
}

/// Number of kernels in a library (driver 12.4+, else runtime 12.8+).
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn kernel_count(lib: sys::CUlibrary) -> Result<u32> {
    check_lib(lib)?;
    // SAFETY: as above.
    unsafe { cuda::library_kernel_count(lib) }
}

/// Fill `out` with up to `out.len()` kernels; returns how many were written.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn enumerate_kernels(lib: sys::CUlibrary, out: &mut [Kernel]) -> Result<u32> {
    // SAFETY: this function's own contract.
    let n = unsafe { kernel_count(lib) }?;
    let w = n.min(out.len().min(u32::MAX as usize) as u32) as usize;
    // Kernel is repr(transparent) over CUkernel.
    // SAFETY: `out` holds at least `w` Kernels, each laid out as a CUkernel.
    let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<sys::CUkernel>(), w) };
    // SAFETY: as above (checked by kernel_count).
    unsafe { list_kernels(lib, raw) }?;
    registry::found_kernels(lib, raw);
    Ok(w as u32)
}

/// Every kernel of the library.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn kernels_of(lib: sys::CUlibrary) -> Result<Vec<Kernel>> {
    check_lib(lib)?;
    // SAFETY: as above.
    let v = unsafe { kernels_of_unchecked(lib) }?;
    registry::found_kernels(lib, &v);
    Ok(v.into_iter().map(Kernel).collect())
}

/// `kernels_of` without the registry's check or books.
///
/// # Safety
/// `lib` is a live library handle.
unsafe fn kernels_of_unchecked(lib: sys::CUlibrary) -> Result<Vec<sys::CUkernel>> {
    // SAFETY: the caller's contract.
    let n = unsafe { cuda::library_kernel_count(lib) }?;
    let mut v = vec![std::ptr::null_mut(); n as usize];
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
    check_lib(lib)?;
    // SAFETY: as above.
    unsafe { driver::library_global(lib, name) }
}

/// Address and size of the `__managed__` variable `name` (usable from the host and from
/// kernels), through `api`.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_managed(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<(*mut c_void, usize)> {
    check_lib(lib)?;
    // SAFETY: as above.
    api.loader().and_then(|l| unsafe { l.managed(lib, name) })
}

/// The unified function `name` (a function usable from host and device code, CUDA 12.0+),
/// through `api`.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_unified_function(lib: sys::CUlibrary, name: &CStr, api: Api) -> Result<*mut c_void> {
    check_lib(lib)?;
    // SAFETY: as above.
    api.loader().and_then(|l| unsafe { l.unified_function(lib, name) })
}

/// `get_global` for device `device`: its primary context is made current for the lookup
/// only, and the thread's own context is restored after.
/// # Safety
/// `lib` is a live library handle (or NULL, or one cudyn unloaded: both refused without
/// calling CUDA, which does not check library handles).
pub unsafe fn get_global_on_device(lib: sys::CUlibrary, name: &CStr, device: i32) -> Result<(*mut c_void, usize)> {
    check_lib(lib)?;
    // SAFETY: as above.
    unsafe { driver::library_global_on_device(lib, name, device) }
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

    #[test]
    fn bad_images_are_refused_before_cuda() {
        assert_eq!(validate(b"").unwrap_err().status, Status::InvalidImage);
        assert_eq!(validate(&[0x13u8; 64]).unwrap_err().status, Status::InvalidImage);
        let e = validate(b"extern \"C\" __global__ void k() {}\n").unwrap_err();
        assert_eq!(e.status, Status::InvalidImage);
        assert!(e.message.contains("load_source"), "{}", e.message);
    }
}
