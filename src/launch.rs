//! Launching any kernel handle through the driver (`cuLaunchKernelEx`) or the runtime
//! (`cudaLaunchKernelExC`), with the arguments checked against the kernel's parameters.

use crate::cuda::{driver, runtime, sys, Api};
use crate::error::{Error, Result, Status};
use crate::hot;
use crate::kernel::{Kernel, Param};
use crate::registry::{self, Access};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use std::ffi::c_void;
use std::mem::{align_of, offset_of, size_of};
use std::os::raw::c_int;

/// Grid, block or cluster extent; the same layout as CUDA's `dim3`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// The extent `x` by `y` by `z`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }
    /// The one-dimensional extent `x` (y and z are 1).
    pub const fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
    fn is_zero(&self) -> bool {
        self.x == 0 && self.y == 0 && self.z == 0
    }
    fn any_zero(&self) -> bool {
        self.x == 0 || self.y == 0 || self.z == 0
    }
}

/// `cudyn_api` as it crosses the C boundary: a plain integer, checked before use (a C enum
/// holding an unknown value must never become a Rust enum).
pub type RawApi = u32;

/// Number of reserved words at the end of `LaunchConfig`.
pub const LAUNCH_CONFIG_RESERVED: usize = 8;
const_assert_eq!(LAUNCH_CONFIG_RESERVED, 8);

/// How to launch. Zero-initialise it, then set what you need: every field added later is
/// carved from `reserved`, so zero keeps meaning "not set" and the size never changes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    /// Blocks in the grid (each dimension at least 1).
    pub grid: Dim3,
    /// Threads per block (each dimension at least 1).
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: usize,
    /// NULL: the legacy default stream.
    pub stream: crate::handles::StreamHandle,
    /// Who launches: CUDYN_API_RUNTIME (0) or CUDYN_API_DRIVER (1).
    pub api: RawApi,
    /// Thread-block cluster shape; {0,0,0}: no cluster.
    pub cluster: Dim3,
    /// Non-zero: a cooperative launch (grid-wide sync allowed).
    pub cooperative: c_int,
    /// Launch priority (lower is higher priority, as in CUDA); 0: not set.
    pub priority: c_int,
    /// Non-zero: allow programmatic stream serialization (programmatic dependent launch).
    pub programmatic_serialization: c_int,
    /// Must be zero.
    pub reserved: [u32; 8],
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            grid: Dim3::x(1),
            block: Dim3::x(1),
            shared_mem_bytes: 0,
            stream: std::ptr::null_mut(),
            api: Api::Runtime as u32,
            cluster: Dim3::default(),
            cooperative: 0,
            priority: 0,
            programmatic_serialization: 0,
            reserved: [0; LAUNCH_CONFIG_RESERVED],
        }
    }
}

// Layout proofs: Dim3 is dim3; the launch config's layout is frozen (the C side checks too).
assert_eq_size!(Dim3, sys::dim3);
assert_eq_align!(Dim3, sys::dim3);
const_assert_eq!(offset_of!(Dim3, x), offset_of!(sys::dim3, x));
const_assert_eq!(offset_of!(Dim3, y), offset_of!(sys::dim3, y));
const_assert_eq!(offset_of!(Dim3, z), offset_of!(sys::dim3, z));
const_assert_eq!(size_of::<LaunchConfig>(), 104);
const_assert_eq!(align_of::<LaunchConfig>(), 8);
const_assert_eq!(offset_of!(LaunchConfig, grid), 0);
const_assert_eq!(offset_of!(LaunchConfig, block), 12);
const_assert_eq!(offset_of!(LaunchConfig, shared_mem_bytes), 24);
const_assert_eq!(offset_of!(LaunchConfig, stream), 32);
const_assert_eq!(offset_of!(LaunchConfig, api), 40);
const_assert_eq!(offset_of!(LaunchConfig, cluster), 44);
const_assert_eq!(offset_of!(LaunchConfig, cooperative), 56);
const_assert_eq!(offset_of!(LaunchConfig, priority), 60);
const_assert_eq!(offset_of!(LaunchConfig, programmatic_serialization), 64);
const_assert_eq!(offset_of!(LaunchConfig, reserved), 68);
// The driver's and the runtime's launch attributes are interchangeable, so one array serves both.
assert_eq_size!(sys::CUlaunchAttribute, sys::cudaLaunchAttribute);
assert_eq_align!(sys::CUlaunchAttribute, sys::cudaLaunchAttribute);
const_assert_eq!(offset_of!(sys::CUlaunchAttribute, id), offset_of!(sys::cudaLaunchAttribute, id));
const_assert_eq!(offset_of!(sys::CUlaunchAttribute, value), offset_of!(sys::cudaLaunchAttribute, val));

const MAX_ATTRS: usize = 4;

fn attr(id: sys::CUlaunchAttributeID) -> sys::CUlaunchAttribute {
    sys::CUlaunchAttribute { id, ..Default::default() }
}

impl LaunchConfig {
    /// The one check of a config: its API when it is valid (every grid and block extent at
    /// least 1, no cluster or one of at least 1 in every extent, `reserved` zero, the dynamic
    /// shared memory within 32 bits, a known API). Decided in one pass with a single branch and
    /// no message, so the fast path can ask it; `check` explains a refusal.
    #[inline]
    fn valid_api(&self) -> Option<Api> {
        let (g, b, c) = (&self.grid, &self.block, &self.cluster);
        let dims = (g.x != 0) & (g.y != 0) & (g.z != 0) & (b.x != 0) & (b.y != 0) & (b.z != 0);
        // No cluster, or one of at least 1 in every dimension.
        let cluster = ((c.x | c.y | c.z) == 0) | ((c.x != 0) & (c.y != 0) & (c.z != 0));
        let extra = self.reserved.iter().fold(0, |acc, &r| acc | r) | ((self.shared_mem_bytes as u64) >> 32) as u32;
        match (dims && cluster && extra == 0, self.api) {
            (true, 0) => Some(Api::Runtime),
            (true, 1) => Some(Api::Driver),
            _ => None,
        }
    }

    /// `valid_api`, with a refusal explained: what is wrong, in the order a reader checks.
    fn check(&self) -> Result<Api> {
        if let Some(api) = self.valid_api() {
            return Ok(api);
        }
        Err(self.why_invalid())
    }

    /// The first thing `valid_api` refuses in this config, as an error.
    #[cold]
    fn why_invalid(&self) -> Error {
        if let Err(e) = Api::try_from(self.api) {
            return e;
        }
        if self.grid.any_zero() || self.block.any_zero() {
            return Error::invalid(format!(
                "grid {{{}, {}, {}}} and block {{{}, {}, {}}} must be at least 1 in every dimension",
                self.grid.x, self.grid.y, self.grid.z, self.block.x, self.block.y, self.block.z
            ));
        }
        if !self.cluster.is_zero() && self.cluster.any_zero() {
            return Error::invalid("cluster must be {0,0,0} (none) or at least 1 in every dimension");
        }
        if self.reserved.iter().any(|&r| r != 0) {
            return Error::invalid(
                "cudyn_launch_config.reserved is not zero: zero-initialise the config (e.g. `cudyn_launch_config cfg = {0};`)",
            );
        }
        if self.shared_mem_bytes > u32::MAX as usize {
            return Error::invalid("shared_mem_bytes does not fit in 32 bits");
        }
        Error::new(Status::Internal, "the launch configuration was refused without a reason")
    }

    /// Whether any launch attribute is asked for (most launches: none).
    #[inline]
    fn wants_attributes(&self) -> bool {
        let c = &self.cluster;
        (c.x | c.y | c.z | self.cooperative as u32 | self.priority as u32 | self.programmatic_serialization as u32) != 0
    }

    /// Write the CUDA launch attributes this config asks for into `out`; returns how many.
    fn fill_attributes(&self, out: &mut [std::mem::MaybeUninit<sys::CUlaunchAttribute>; MAX_ATTRS]) -> u32 {
        let mut n = 0;
        let mut push = |a: sys::CUlaunchAttribute| {
            out[n].write(a);
            n += 1;
        };
        if !self.cluster.is_zero() {
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
            a.value.clusterDim.x = self.cluster.x;
            a.value.clusterDim.y = self.cluster.y;
            a.value.clusterDim.z = self.cluster.z;
            push(a);
        }
        if self.cooperative != 0 {
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
            a.value.cooperative = 1;
            push(a);
        }
        if self.priority != 0 {
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY);
            a.value.priority = self.priority;
            push(a);
        }
        if self.programmatic_serialization != 0 {
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
            a.value.programmaticStreamSerializationAllowed = 1;
            push(a);
        }
        n as u32
    }

    /// The attributes as an initialised array (tests).
    #[cfg(test)]
    fn attributes(&self) -> (Vec<sys::CUlaunchAttribute>, u32) {
        let mut raw = [const { std::mem::MaybeUninit::uninit() }; MAX_ATTRS];
        let n = self.fill_attributes(&mut raw);
        // SAFETY: the first n entries were written.
        let v = raw[..n as usize].iter().map(|a| unsafe { a.assume_init() }).collect();
        (v, n)
    }
}

/// What is wrong with a launch's arguments (small, so the happy path moves nothing big).
enum ArgProblem {
    Count { params: usize },
    Null { index: usize },
    Size { index: usize, given: usize, param: u32 },
}

/// What is wrong with `args` (and `sizes`) for a kernel of `params`, in the order a reader
/// checks: the count, a NULL entry, each size.
fn problem(params: &[Param], args: &[*mut c_void], sizes: Option<&[usize]>) -> Option<ArgProblem> {
    if params.len() != args.len() {
        return Some(ArgProblem::Count { params: params.len() });
    }
    if let Some(index) = args.iter().position(|a| a.is_null()) {
        return Some(ArgProblem::Null { index });
    }
    let s = sizes?;
    s.iter().zip(params.iter()).position(|(&given, p)| given != p.size as usize).map(|index| ArgProblem::Size {
        index,
        given: s[index],
        param: params[index].size,
    })
}

fn refuse(p: ArgProblem, nargs: usize) -> Error {
    match p {
        ArgProblem::Count { params } => Error::new(
            Status::ArgumentMismatch,
            format!("the kernel takes {params} parameter(s) but {nargs} argument(s) were given"),
        ),
        ArgProblem::Null { index } => {
            Error::invalid(format!("argument {index} is NULL (each entry must point at the value)"))
        }
        ArgProblem::Size { index, given, param } => Error::new(
            Status::ArgumentMismatch,
            format!("argument {index} is {given} bytes but parameter {index} is {param} bytes"),
        ),
    }
}

/// Check the arguments against the kernel's parameters, the count always and each size when
/// `sizes` is given, with the registry's read lock held (`a` comes from `with_kernel`): a
/// known kernel against its layout (remembered, and entered in the launch table), a foreign
/// one against CUDA's answers now (the count takes two of them, the sizes one more each;
/// nothing of a foreign kernel can be remembered, see `registry`). Nothing is allocated
/// unless there is an error to describe.
fn check_args(a: &Access<'_>, k: Kernel, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    let found = match a {
        Access::Known(known) => problem(known.layout()?, args, sizes),
        Access::Foreign => {
            let nulls = args.iter().any(|a| a.is_null());
            // SAFETY: not a kernel cudyn knows is dead; any other handle is the caller's
            // promise (a live kernel).
            if !nulls && unsafe { driver::kernel_has_params(k.0, args.len(), sizes) } {
                return Ok(());
            }
            // SAFETY: as above.
            problem(&unsafe { driver::kernel_params(k.0) }?, args, sizes)
        }
    };
    found.map_or(Ok(()), |p| Err(refuse(p, args.len())))
}

/// The checks that need no kernel: a non-NULL handle, the config (its API), one size per
/// argument.
fn prepare(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<Api> {
    if k.0.is_null() {
        return Err(Error::invalid("kernel handle is NULL"));
    }
    let api = cfg.check()?;
    if let Some(s) = sizes {
        if s.len() != args.len() {
            return Err(Error::invalid("arg_sizes must have one entry per argument"));
        }
    }
    Ok(api)
}

/// The full path's launch: under the registry's read lock, the kernel is judged (refused if
/// cudyn knows it is dead), the arguments checked against it, and CUDA's launch made, so no
/// unload through cudyn can come between the check and the launch. CUDA's result code.
///
/// # Safety
/// As `launch`; `resolve(api, cfg)` succeeded.
unsafe fn checked_call(
    k: Kernel,
    api: Api,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<u32> {
    registry::with_kernel(k.0, |a| {
        check_args(&a, k, args, sizes)?;
        // SAFETY: this function's contract; the arguments were checked against the kernel,
        // which stays live until the lock is released.
        unsafe { call(api, k, cfg, kernel_params(args)) }
            .ok_or_else(|| Error::new(Status::Internal, "the launch entry point was resolved but is missing"))
    })
}

/// CUDA_ERROR_INVALID_CONTEXT: the thread has no current context.
const CUDA_ERROR_INVALID_CONTEXT: u32 = 201;

/// Launch `k` as `cfg` says. `args` holds one pointer per parameter (CUDA's kernelParams);
/// `sizes`, when given, the size of each argument, checked against the parameter's.
///
/// The common launch (a valid config, a kernel already launched, CUDA already open) takes
/// the fast path (`fast`). Everything else, and every error to describe, goes through
/// `launch_full`.
///
/// # Safety
/// `k` is a live kernel (or one of a library cudyn unloaded); each of `args` points to a
/// value of its parameter's size that stays valid for the call; `cfg.stream` is NULL, a
/// special stream, or a live stream. cudyn checks the count (and with `sizes`, the sizes it is
/// told) against the kernel's parameters, but CUDA reads through the pointers.
#[inline]
pub unsafe fn launch(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    // SAFETY (all three): this function's contract.
    match unsafe { fast(k, cfg, args, sizes) } {
        Fast::Launched => Ok(()),
        Fast::NotTaken => unsafe { launch_full(k, cfg, args, sizes) },
        Fast::Failed(api, code) => unsafe { failed(api, code, k, cfg, args, sizes) },
    }
}

/// What `fast` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// Launched: CUDA returned success.
    Launched,
    /// Not the common case: nothing was called; the full path decides.
    NotTaken,
    /// CUDA was called through `Api` and returned this error code (see `failed`).
    Failed(Api, u32),
}

/// The common launch, and nothing else: a valid config, a kernel in the launch table with
/// matching arguments, the API's launch entry point already resolved. The same checks as
/// `launch_full`, made without a lock, an allocation, a thread-local or an error message; then
/// CUDA's launch. It calls nothing that can panic, so the C entry points run it before their
/// panic guard.
///
/// # Safety
/// As `launch`.
#[inline(always)]
pub(crate) unsafe fn fast(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Fast {
    let Some(api) = cfg.valid_api() else { return Fast::NotTaken };
    if k.0.is_null() {
        return Fast::NotTaken;
    }
    // Held until CUDA's launch returns: an unload through cudyn waits for it (see `hot`).
    let Some(_launching) = hot::enter() else { return Fast::NotTaken };
    if !k.args_match_hot(args.len(), sizes) || args.iter().any(|a| a.is_null()) {
        return Fast::NotTaken;
    }
    // SAFETY: this function's contract; the arguments were checked against the kernel's
    // remembered layout, and its library cannot be unloaded through cudyn before the launch
    // returns (`_launching`).
    match unsafe { call(api, k, cfg, kernel_params(args)) } {
        None => Fast::NotTaken,
        Some(0) => Fast::Launched,
        Some(code) => Fast::Failed(api, code),
    }
}

/// CUDA's launch through `api`, with the entry points in the hot line: CUDA's result, or None
/// when the entry point it needs is not resolved yet (`resolve`). The launch attributes the
/// config asks for are built on the stack, in a function of their own so the common launch
/// stays small.
///
/// # Safety
/// As `launch`, with `params` holding one pointer per parameter of `k` (or NULL for none).
#[inline(always)]
unsafe fn call(api: Api, k: Kernel, cfg: &LaunchConfig, params: *mut *mut c_void) -> Option<u32> {
    if cfg.wants_attributes() {
        // SAFETY: this function's contract.
        return unsafe { call_with_attributes(api, k, cfg, params) };
    }
    // SAFETY: as above; no attributes.
    unsafe { call_with(api, k, cfg, params, std::ptr::null_mut(), 0) }
}

/// # Safety
/// As `call`.
#[inline(never)]
unsafe fn call_with_attributes(api: Api, k: Kernel, cfg: &LaunchConfig, params: *mut *mut c_void) -> Option<u32> {
    // Written only as far as used (no zeroing).
    let mut attrs = [const { std::mem::MaybeUninit::<sys::CUlaunchAttribute>::uninit() }; MAX_ATTRS];
    let num = cfg.fill_attributes(&mut attrs);
    // SAFETY: this function's contract; the first `num` attributes were written.
    unsafe { call_with(api, k, cfg, params, attrs.as_mut_ptr() as *mut sys::CUlaunchAttribute, num) }
}

/// `call` with `num` attributes at `attrs` (which outlive the call).
///
/// # Safety
/// As `call`, and the first `num` attributes at `attrs` are written.
#[inline(always)]
unsafe fn call_with(
    api: Api,
    k: Kernel,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    attrs: *mut sys::CUlaunchAttribute,
    num: u32,
) -> Option<u32> {
    // SAFETY (all three): each entry point is the one its getter names (hot); `k` is a live
    // kernel and the stream NULL, special or live (the launch's contract); params holds one
    // non-NULL pointer per parameter (checked by the caller); the first `num` attributes are
    // written, and the driver's and the runtime's attribute arrays are layout-identical
    // (asserted above).
    let code = match api {
        Api::Driver => {
            let f = hot::LINE.cu_launch()?;
            let c = driver_config(cfg, attrs, num);
            // SAFETY: as above.
            unsafe { driver::launch_kernel_ex(f, &c, k.0, params) }
        }
        Api::Runtime if num == 0 => {
            // No attributes: the plain launch, CUDA's cheapest runtime entry point.
            let f = hot::LINE.cuda_launch()?;
            let (grid, block) = dims(cfg);
            // SAFETY: as above.
            unsafe { runtime::launch_kernel(f, k.0, grid, block, params, cfg.shared_mem_bytes, cfg.stream) }
        }
        Api::Runtime => {
            let f = hot::LINE.cuda_launch_ex()?;
            let c = runtime_config(cfg, attrs, num);
            // SAFETY: as above.
            unsafe { runtime::launch_kernel_ex(f, &c, k.0, params) }
        }
    };
    Some(code)
}

/// Open CUDA for `api` and put the launch entry point `cfg` needs in the hot line.
fn resolve(api: Api, cfg: &LaunchConfig) -> Result<()> {
    match api {
        Api::Driver => hot::LINE.set_cu_launch(driver::launch_entry()?),
        Api::Runtime if cfg.wants_attributes() => hot::LINE.set_cuda_launch_ex(runtime::launch_ex_entry()?),
        Api::Runtime => hot::LINE.set_cuda_launch(runtime::launch_entry()?),
    }
    Ok(())
}

/// A launch returned `code` (not success). Through the driver, CUDA_ERROR_INVALID_CONTEXT
/// means the thread has no context yet and nothing was launched: give it the one the runtime
/// would and launch again, checked again under the registry's lock (checking first would cost
/// every launch a driver call; this costs the first). Anything else is reported.
///
/// # Safety
/// As `launch`: the same kernel, config, arguments and sizes that returned `code`.
#[cold]
#[inline(never)]
pub(crate) unsafe fn failed(
    api: Api,
    code: u32,
    k: Kernel,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<()> {
    let code = match api {
        Api::Driver if code == CUDA_ERROR_INVALID_CONTEXT => {
            // SAFETY: the stream is NULL, special or live (this function's contract).
            unsafe { driver::driver()?.ensure_context(cfg.stream) }?;
            // SAFETY: this function's contract; `api`'s entry point was resolved (it returned
            // `code`).
            unsafe { checked_call(k, api, cfg, args, sizes) }?
        }
        _ => code,
    };
    match (code, api) {
        (0, _) => Ok(()),
        (_, Api::Driver) => Err(driver::launch_error(code)),
        (_, Api::Runtime) => Err(runtime::launch_error(code)),
    }
}

/// CUDA's kernelParams for `args`: NULL for a kernel without parameters.
fn kernel_params(args: &[*mut c_void]) -> *mut *mut c_void {
    if args.is_empty() {
        std::ptr::null_mut()
    } else {
        args.as_ptr() as *mut *mut c_void
    }
}

fn driver_config(cfg: &LaunchConfig, attrs: *mut sys::CUlaunchAttribute, num: u32) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: cfg.grid.x,
        gridDimY: cfg.grid.y,
        gridDimZ: cfg.grid.z,
        blockDimX: cfg.block.x,
        blockDimY: cfg.block.y,
        blockDimZ: cfg.block.z,
        sharedMemBytes: cfg.shared_mem_bytes as u32,
        hStream: cfg.stream,
        attrs,
        numAttrs: num,
    }
}

fn runtime_config(cfg: &LaunchConfig, attrs: *mut sys::CUlaunchAttribute, num: u32) -> sys::cudaLaunchConfig_t {
    let (grid, block) = dims(cfg);
    sys::cudaLaunchConfig_t {
        gridDim: grid,
        blockDim: block,
        dynamicSmemBytes: cfg.shared_mem_bytes,
        stream: cfg.stream,
        attrs: attrs as *mut sys::cudaLaunchAttribute,
        numAttrs: num,
    }
}

fn dims(cfg: &LaunchConfig) -> (sys::dim3, sys::dim3) {
    (
        sys::dim3 { x: cfg.grid.x, y: cfg.grid.y, z: cfg.grid.z },
        sys::dim3 { x: cfg.block.x, y: cfg.block.y, z: cfg.block.z },
    )
}

/// Every launch the fast path does not take: all checks with their messages, attributes,
/// opening CUDA on first use. Called once `fast` said `NotTaken` (by `launch`, and by the C
/// entry points, which try `fast` before their panic guard): it does not try the fast path
/// again.
///
/// # Safety
/// As `launch`.
#[inline(never)]
pub(crate) unsafe fn launch_full(
    k: Kernel,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<()> {
    let api = prepare(k, cfg, args, sizes)?;
    // Opened outside the registry's lock; the foreign check reads parameters through the driver.
    resolve(api, cfg)?;
    driver::open();
    // SAFETY: this function's contract; `api`'s entry point is resolved.
    match unsafe { checked_call(k, api, cfg, args, sizes) }? {
        0 => Ok(()),
        // SAFETY: as above.
        code => unsafe { failed(api, code, k, cfg, args, sizes) },
    }
}

/// Check a launch as `launch` would, without launching: for tests and for callers that want
/// to validate a configuration ahead of a hot loop.
pub fn validate(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    prepare(k, cfg, args, sizes)?;
    driver::open();
    registry::with_kernel(k.0, |a| check_args(&a, k, args, sizes))?;
    let mut attrs = [const { std::mem::MaybeUninit::<sys::CUlaunchAttribute>::uninit() }; MAX_ATTRS];
    let _ = cfg.fill_attributes(&mut attrs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Param;

    #[test]
    fn config_checks() {
        let ok = LaunchConfig::default();
        assert_eq!(ok.check().unwrap(), Api::Runtime);
        let mut c = ok;
        c.api = 7;
        assert_eq!(c.check().unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.grid.y = 0;
        assert_eq!(c.check().unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.cluster = Dim3::new(2, 0, 1);
        assert_eq!(c.check().unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.reserved[3] = 1;
        assert!(c.check().unwrap_err().message.contains("zero-initialise"));
    }

    #[test]
    fn attributes_only_for_what_is_set() {
        let mut c = LaunchConfig::default();
        assert_eq!(c.attributes().1, 0);
        c.cluster = Dim3::new(2, 1, 1);
        c.cooperative = 1;
        c.priority = -1;
        c.programmatic_serialization = 1;
        let (a, n) = c.attributes();
        assert_eq!(n, 4);
        assert_eq!(a[0].id, sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
        // SAFETY: reading the union member that was written.
        unsafe {
            assert_eq!(a[0].value.clusterDim.x, 2);
            assert_eq!(a[2].value.priority, -1);
        }
    }

    /// The rules a config must meet, written out plainly: the spec `valid_api` computes in
    /// one pass.
    fn spec(c: &LaunchConfig) -> Option<Api> {
        let api = Api::try_from(c.api).ok()?;
        let dims_ok = [c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z].iter().all(|&d| d >= 1);
        let cluster = [c.cluster.x, c.cluster.y, c.cluster.z];
        let cluster_ok = cluster.iter().all(|&d| d == 0) || cluster.iter().all(|&d| d >= 1);
        let reserved_ok = c.reserved.iter().all(|&r| r == 0);
        let shared_ok = c.shared_mem_bytes <= u32::MAX as usize;
        (dims_ok && cluster_ok && reserved_ok && shared_ok).then_some(api)
    }

    /// The one check (`valid_api`, which the fast path and `check` both use) accepts exactly
    /// the configs the spec accepts, and every refusal is explained (never the "without a
    /// reason" fallback).
    #[test]
    fn the_config_check_meets_the_spec_and_explains_every_refusal() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let pick = |v: u64| -> u32 { [0, 1, 2, u32::MAX][v as usize] };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..200_000 {
            let mut c = LaunchConfig::default();
            // Mostly valid fields, each sometimes not.
            let field = |next: &mut dyn FnMut(u64) -> u64| if next(8) == 0 { pick(next(4)) } else { 1 };
            c.grid = Dim3::new(field(&mut next), field(&mut next), field(&mut next));
            c.block = Dim3::new(field(&mut next), field(&mut next), field(&mut next));
            if next(6) == 0 {
                c.cluster = Dim3::new(pick(next(4)), pick(next(4)), pick(next(4)));
            }
            c.api = [0, 1, 2, 0x8000_0000][next(4) as usize];
            c.cooperative = (next(8) == 0) as i32;
            c.priority = if next(8) == 0 { -1 } else { 0 };
            c.programmatic_serialization = (next(8) == 0) as i32;
            if next(8) == 0 {
                c.reserved[next(8) as usize] = 1 << next(32);
            }
            c.shared_mem_bytes = match next(8) {
                0 => (u32::MAX as usize) + 1,
                1 => u32::MAX as usize,
                _ => 48 * 1024,
            };
            assert_eq!(c.valid_api(), spec(&c), "{c:?}");
            match c.check() {
                Ok(api) => {
                    assert_eq!(Some(api), spec(&c));
                    accepted += 1;
                }
                Err(e) => {
                    assert_eq!(e.status, Status::InvalidArgument, "{c:?}: {}", e.message);
                    refused += 1;
                }
            }
        }
        assert!(accepted > 10_000 && refused > 10_000, "both sides exercised: {accepted} / {refused}");
    }

    #[test]
    fn hot_layout_check_agrees_and_expires() {
        let k = Kernel(0x7700 as *mut _);
        let lib = 0x7700_0000 as sys::CUlibrary;
        // SAFETY: the kernel is never launched; the layout is the one this test checks against.
        unsafe { crate::registry::prime(k.0, lib, &[Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]) };
        // Not in the launch table until its layout is looked up once.
        assert!(!k.args_match_hot(2, None));
        assert_eq!(k.param_count().unwrap(), 2);
        assert!(k.args_match_hot(2, None));
        assert!(k.args_match_hot(2, Some(&[8, 4])));
        assert!(!k.args_match_hot(1, None));
        assert!(!k.args_match_hot(3, None));
        assert!(!k.args_match_hot(2, Some(&[8, 8])));
        assert!(!k.args_match_hot(2, Some(&[8])));
        // Another kernel is not this one.
        assert!(!Kernel(0x7708 as *mut _).args_match_hot(2, None));
        // Unloading the kernel's own library retires it: the next use is a clear error
        // (use after unload), not a launch of a dangling handle. (The stand-in unload does
        // not call CUDA; without a driver, the liveness question has no "live" answer.)
        crate::registry::unload(lib, Api::Driver, || Ok(())).unwrap();
        assert!(!k.args_match_hot(2, None));
        let e = k.param_count().unwrap_err();
        assert!(e.message.contains("unloaded") || e.status != Status::Success, "{}", e.message);
        // ... and the library itself is never handed to CUDA again.
        // SAFETY: a library cudyn unloaded: refused without calling CUDA.
        let e = unsafe { crate::library::unload_raw(lib, Api::Driver) }.unwrap_err();
        assert!(e.message.contains("unloaded through cudyn"), "{}", e.message);
    }

    #[test]
    fn null_kernel_is_refused() {
        // SAFETY: a NULL kernel is refused before anything is read.
        let e = unsafe { launch(Kernel(std::ptr::null_mut()), &LaunchConfig::default(), &[], None) }.unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
    }
}
