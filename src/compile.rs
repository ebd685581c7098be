//! CUDA C++ to cubin, PTX or LTO-IR with NVRTC: in-memory headers, name expressions, the
//! default target (the present GPU as SASS), and the on-disk cache in front of it all.

use crate::cache::toolchain::Toolchain;
use crate::cache::{Cache, KeyBuilder};
use crate::cuda::fmt_version;
use crate::cuda::nvrtc::{nvrtc, Nvrtc, Program, NVRTC_ERROR_INVALID_OPTION};
use crate::error::{Error, Result, Status};
use crate::image::CodeKind;
use std::ffi::CString;
use std::sync::OnceLock;

/// The architecture compiled for when there is no GPU to ask and no `-arch` option.
pub const DEFAULT_SM: u32 = 90;

/// What to compile and how.
#[derive(Debug, Clone, Default)]
pub struct CompileOptions {
    /// NVRTC options, e.g. "-std=c++17", "-arch=sm_90", "-DN=4".
    pub options: Vec<String>,
    /// Headers the source may #include by name: (name, contents).
    pub headers: Vec<(String, String)>,
    /// C++ names to instantiate and look up, e.g. `"axpy<float>"`; their lowered (mangled)
    /// names come back in `Compiled::lowered`.
    pub name_expressions: Vec<String>,
    /// Cubin (default), Ptx or LtoIr.
    pub target: Option<CodeKind>,
}

/// A compilation's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// The compiled image (cubin, PTX or LTO-IR bytes).
    pub code: Vec<u8>,
    /// What `code` is.
    pub kind: CodeKind,
    /// NVRTC's log (empty on a clean compile; on a cache hit, the log of the compile that
    /// made the entry, warnings included).
    pub log: String,
    /// (name expression, lowered name), in the order asked.
    pub lowered: Vec<(String, String)>,
    /// The sm_XY the code is for.
    pub sm: u32,
    /// Whether `code` came from the compile cache (no NVRTC run).
    pub from_cache: bool,
}

/// A failed compilation: the error and NVRTC's full log.
#[derive(Debug, Clone)]
pub struct CompileFailure {
    /// What failed (status [`Status::CompileFailed`] when NVRTC refused the source).
    pub error: Error,
    /// NVRTC's full log (empty when NVRTC never ran).
    pub log: String,
}

impl From<Error> for CompileFailure {
    fn from(error: Error) -> Self {
        CompileFailure { error, log: String::new() }
    }
}

/// The error's message, then NVRTC's log (when there is one) on the lines after it: the log
/// is where the compiler says what is wrong.
impl std::fmt::Display for CompileFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::error::write_with_log(f, &self.error, &self.log)
    }
}

impl std::error::Error for CompileFailure {}

/// The failure as a plain [`Error`]: same status and CUDA code, the log kept at the end of the
/// message (as `Display` shows it), so `?` in a function returning `cudyn::Result` loses nothing.
impl From<CompileFailure> for Error {
    fn from(f: CompileFailure) -> Self {
        let message = f.to_string();
        Error { message, ..f.error }
    }
}

/// The process-wide cache, from the environment, opened on first use (None when disabled).
pub fn global_cache() -> Option<&'static Cache> {
    cache_status().ok()
}

/// The process-wide cache, or why there is none (turned off, a bad setting, an unusable
/// folder): the reason is kept for `cudyn_cache_status`, never thrown away.
pub fn cache_status() -> std::result::Result<&'static Cache, &'static Error> {
    static C: OnceLock<std::result::Result<Cache, Error>> = OnceLock::new();
    crate::fork::once(&C, Cache::from_env).as_ref()
}

/// The architecture the options name: the last one, as NVRTC uses the last (and warns that
/// it overrides the ones before).
fn has_arch_option(options: &[String]) -> Option<&str> {
    let mut it = options.iter();
    let mut last = None;
    while let Some(o) = it.next() {
        for p in ["-arch=", "--gpu-architecture=", "-arch", "--gpu-architecture"] {
            if let Some(v) = o.strip_prefix(p) {
                if p.ends_with('=') {
                    last = Some(v);
                    break;
                }
                if v.is_empty() {
                    last = it.next().map(|s| s.as_str()).or(last);
                    break;
                }
            }
        }
    }
    last
}

/// The present GPU's sm (the one every GPU shares, else the current context's device's, else
/// device 0's; the same GPU a load checks against), or DEFAULT_SM.
pub fn default_sm() -> u32 {
    crate::library::target_sm().unwrap_or(DEFAULT_SM)
}

/// Whether a driver can load PTX this NVRTC made: only if the driver is at least as new.
pub fn ptx_loadable(nvrtc_version: i32, driver_version: i32) -> bool {
    nvrtc_version / 10 <= driver_version / 10
}

/// "sm_90a" -> 90, "compute_90" -> 90.
fn sm_of_arch(arch: &str) -> Option<u32> {
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .trim_start_matches("lto_")
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// Complete the option list: the target architecture when the caller gave none, -dlto for
/// LTO-IR. Returns the options and the sm targeted. `sm_if_unset` is asked only when the
/// options name no architecture.
pub fn effective_options(
    opts: &CompileOptions,
    sm_if_unset: impl FnOnce() -> u32,
) -> Result<(Vec<String>, u32, CodeKind)> {
    let target = opts.target.unwrap_or(CodeKind::Cubin);
    let mut o = opts.options.clone();
    let sm = match has_arch_option(&o) {
        Some(a) => {
            let sm =
                sm_of_arch(a).ok_or_else(|| Error::invalid(format!("cannot read the architecture in '-arch={a}'")))?;
            if target == CodeKind::Cubin && a.starts_with("compute_") {
                return Err(Error::invalid(format!("a cubin needs a real architecture (sm_{sm}), not '{a}'")));
            }
            sm
        }
        None => {
            let prefix = match target {
                CodeKind::Ptx => "compute_",
                _ => "sm_",
            };
            let sm = sm_if_unset();
            o.push(format!("-arch={prefix}{sm}"));
            sm
        }
    };
    match target {
        CodeKind::Cubin | CodeKind::Ptx => {}
        CodeKind::LtoIr => {
            if !o.iter().any(|x| x == "-dlto" || x == "--dlink-time-opt") {
                o.push("-dlto".into());
            }
        }
        other => {
            return Err(Error::invalid(format!(
                "cannot compile to {}: choose CUDYN_CODE_CUBIN, CUDYN_CODE_PTX or CUDYN_CODE_LTOIR",
                other.c_name()
            )))
        }
    }
    Ok((o, sm, target))
}

/// The key of a compile: what decides the code, named so that it is the same wherever the
/// sources and the toolkit are installed. The options and every header lookup come in through
/// `includes` (the scan's digest, `cache::scan_includes`), with include folders by their labels;
/// NVRTC by its build ID (`Toolchain::portable_identity`).
fn cache_key(
    source: &str,
    name: &str,
    opts: &CompileOptions,
    target: CodeKind,
    nvrtc: &[u8],
    includes: &[u8; 32],
) -> crate::cache::Key {
    let mut k = KeyBuilder::new("cudyn-compile-v4");
    k.part("cudyn", env!("CARGO_PKG_VERSION").as_bytes())
        .part("nvrtc", nvrtc)
        .part("target", &(target as u32).to_le_bytes())
        .part("name", name.as_bytes())
        .part("source", source.as_bytes());
    for (n, c) in &opts.headers {
        k.part("header-name", n.as_bytes()).part("header", c.as_bytes());
    }
    for e in &opts.name_expressions {
        k.part("name-expression", e.as_bytes());
    }
    k.part("options-and-includes", includes);
    k.finish()
}

/// Cached payload: sm, NVRTC's log, lowered names, then code; u32 little-endian lengths.
fn encode_payload(c: &Compiled) -> Vec<u8> {
    let mut v = Vec::with_capacity(c.code.len() + c.log.len() + 64);
    v.extend_from_slice(&c.sm.to_le_bytes());
    v.extend_from_slice(&(c.log.len() as u32).to_le_bytes());
    v.extend_from_slice(c.log.as_bytes());
    v.extend_from_slice(&(c.lowered.len() as u32).to_le_bytes());
    for (a, b) in &c.lowered {
        for s in [a, b] {
            v.extend_from_slice(&(s.len() as u32).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
    }
    v.extend_from_slice(&c.code);
    v
}

/// Parse a cached payload; None on anything malformed (the entry is then recompiled).
pub fn decode_payload(p: &[u8], kind: CodeKind) -> Option<Compiled> {
    decode_any(p).filter(|c| c.kind == kind)
}

/// Whether `payload` is what a compile stores: its fields well formed and its code a cubin,
/// PTX or LTO-IR that cudyn's image checks accept. What an import asks of every entry.
pub fn check_payload(payload: &[u8]) -> std::result::Result<(), String> {
    let c = decode_any(payload).ok_or("not a compile result cudyn wrote (malformed fields or no code)")?;
    if !matches!(c.kind, CodeKind::Cubin | CodeKind::Ptx | CodeKind::LtoIr) {
        return Err(format!("its code is {}, not cubin, PTX or LTO-IR", c.kind.c_name()));
    }
    crate::image::inspect(&c.code).map(drop).map_err(|e| format!("its code is refused: {e}"))
}

/// Imports the bundle at `path` into `cache` (see `Cache::import`): refused whole, with the
/// reason, if anything in it is damaged or is not code a compile could have stored.
pub fn import_bundle(cache: &Cache, path: &std::path::Path) -> Result<crate::cache::ImportReport> {
    cache.import(path, |_, p| check_payload(p)).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::InvalidData { Status::InvalidImage } else { Status::Io };
        Error::new(status, crate::error::io_text(&e))
    })
}

/// Writes `cache`'s entries to a bundle at `path` (see `Cache::export`); the number written.
pub fn export_bundle(cache: &Cache, path: &std::path::Path) -> Result<u64> {
    cache.export(path).map_err(|e| {
        Error::new(Status::Io, format!("exporting the cache to {}: {}", path.display(), crate::error::io_text(&e)))
    })
}

fn decode_any(p: &[u8]) -> Option<Compiled> {
    fn u32_at(p: &[u8], at: &mut usize) -> Option<u32> {
        let b = p.get(*at..at.checked_add(4)?)?;
        *at += 4;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }
    let mut at = 0;
    let sm = u32_at(p, &mut at)?;
    let log_len = u32_at(p, &mut at)? as usize;
    let log = String::from_utf8(p.get(at..at.checked_add(log_len)?)?.to_vec()).ok()?;
    at += log_len;
    let n = u32_at(p, &mut at)?;
    let mut lowered = Vec::new();
    for _ in 0..n {
        let mut pair = [String::new(), String::new()];
        for s in pair.iter_mut() {
            let len = u32_at(p, &mut at)? as usize;
            let bytes = p.get(at..at.checked_add(len)?)?;
            at += len;
            *s = String::from_utf8(bytes.to_vec()).ok()?;
        }
        let [a, b] = pair;
        lowered.push((a, b));
    }
    let code = p.get(at..)?.to_vec();
    let kind = crate::image::code_kind_of(&code);
    if code.is_empty() || kind == CodeKind::Unknown {
        return None;
    }
    Some(Compiled { code, kind, log, lowered, sm, from_cache: true })
}

/// Compile `source` (named `name` in messages), through `cache` when given. The key covers
/// every file NVRTC could read (see `cache::scan_includes`) and the NVRTC file that makes the
/// code (`cache::toolchain`); a compile whose includes cannot be followed bypasses the cache.
/// A hit returns the log NVRTC wrote when the entry was made, and never loads NVRTC: the
/// NVRTC the library search would open is identified without opening it. The same compile
/// again on the same `Cache` is answered from its memory tier while the entry file and every
/// header lookup are unchanged (one `stat` each).
pub fn compile_with(
    source: &str,
    name: &str,
    opts: &CompileOptions,
    cache: Option<&Cache>,
) -> std::result::Result<Compiled, CompileFailure> {
    let Some(c) = cache else {
        let nv = nvrtc()?;
        let (mut effective, sm, target) = effective_options(opts, default_sm)?;
        effective.extend(default_include_options(nv).iter().cloned());
        return run_nvrtc(nv, source, name, opts, &effective, target, sm);
    };
    // An NVRTC that cannot be loaded is reported before a bad option, as it always was.
    let eff = effective_options(opts, default_sm);
    if eff.is_err() {
        nvrtc()?;
    }
    let (base, sm, target) = eff?;
    // First under the NVRTC the search would open, found without opening it (unless this
    // process has loaded another one already).
    if !LOADED_IS_ANOTHER.load(std::sync::atomic::Ordering::Relaxed) {
        if let Some(tc) = crate::cache::toolchain::located_nvrtc() {
            if let Some(done) = compile_cached(c, tc, source, name, opts, &base, target, sm)? {
                return Ok(done);
            }
            LOADED_IS_ANOTHER.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    // Not located, or the NVRTC loaded is another file: key on the library actually loaded.
    let nv = nvrtc()?;
    if let Some(tc) = loaded_toolchain(nv) {
        if let Some(done) = compile_cached(c, tc, source, name, opts, &base, target, sm)? {
            return Ok(done);
        }
    }
    // The loaded NVRTC cannot be identified (or its file changed since): not cached.
    let mut effective = base;
    effective.extend(default_include_options(nv).iter().cloned());
    run_nvrtc(nv, source, name, opts, &effective, target, sm)
}

/// Set once the NVRTC this process loaded turned out not to be the located one: later compiles
/// key on the loaded one directly.
static LOADED_IS_ANOTHER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The loaded NVRTC's file, identified once per process (None if it cannot be).
fn loaded_toolchain(nv: &Nvrtc) -> Option<&'static Toolchain> {
    static T: OnceLock<Option<Toolchain>> = OnceLock::new();
    crate::fork::once(&T, || nv.lib.path().and_then(|p| Toolchain::of_file(&p))).as_ref()
}

/// The cached compile under toolchain `tc`: memory tier, manifest, entry; on a miss NVRTC is
/// loaded and run, and the result stored. Ok(None) when the NVRTC loaded is not `tc`'s file
/// (nothing is then stored: a key never names an NVRTC that did not make the code).
#[allow(clippy::too_many_arguments)]
fn compile_cached(
    c: &Cache,
    tc: &Toolchain,
    source: &str,
    name: &str,
    opts: &CompileOptions,
    base: &[String],
    target: CodeKind,
    sm: u32,
) -> std::result::Result<Option<Compiled>, CompileFailure> {
    let mut effective = base.to_vec();
    effective.extend(tc.include_options.iter().cloned());
    let identity = tc.identity();
    let portable = tc.portable_identity();
    let cwd = std::env::current_dir().ok();
    let inputs = inputs_of(source, name, opts, &effective, target, cwd.as_deref(), &identity);
    // The memory tier: the same inputs in this process, with no header changed since.
    let slot = memory_slot(&inputs);
    // A change notice for a folder the compile read from: whatever it was (an edit in place of
    // a toolkit header too, which folder stamps cannot show), the headers are read again.
    let mut rescan = false;
    if let Some(m) = c.recall(slot).and_then(|v| v.downcast::<Remembered>().ok()) {
        if m.inputs == inputs && c.entry_stamp(&m.key) == Some(m.entry) && crate::cache::unchanged(&m.files) {
            match m.folders() {
                Folders::Unchanged => {
                    c.count_memory_hit();
                    return Ok(Some(m.compiled.clone()));
                }
                Folders::Notified => rescan = true,
                Folders::Changed => {}
            }
        }
    }
    // NVRTC, only when the cache cannot answer; None when it is not `tc`'s file.
    let load = || -> std::result::Result<Option<&'static Nvrtc>, CompileFailure> {
        let nv = nvrtc()?;
        Ok(tc.is_file(nv.lib.path().as_deref()).then_some(nv))
    };
    let Some(deps) =
        dependencies(c, source, name, opts, base, &tc.include_dirs, cwd.as_deref(), &inputs, rescan, |digest| {
            cache_key(source, name, opts, target, &portable, digest)
        })
    else {
        // Includes the scan cannot follow: never cached.
        let Some(nv) = load()? else { return Ok(None) };
        return run_nvrtc(nv, source, name, opts, &effective, target, sm).map(Some);
    };
    let remember = |compiled: &Compiled| {
        deps.save_manifest(c, &inputs, manifest_pays(source, opts));
        let Some(entry) = c.entry_stamp(&deps.key) else { return };
        if !deps.fresh {
            let (folders, files) = deps.checks.iter().cloned().partition(|c| c.folder().is_some());
            let m = Remembered {
                key: deps.key,
                entry,
                inputs: inputs.clone(),
                folders,
                files,
                watched: std::sync::atomic::AtomicU64::new(u64::MAX),
                compiled: Compiled { from_cache: true, ..compiled.clone() },
            };
            // Notices are armed on the first repeat, not here: a process that compiles this
            // once never pays for them.
            c.remember(slot, std::sync::Arc::new(m));
        }
    };
    if let Some(p) = c.get(&deps.key) {
        // Code a layer or the folder holds is served only if cudyn's image checks pass it (a
        // few microseconds; the memory tier then remembers the checked result).
        if let Some(hit) = decode_payload(&p, target).filter(|h| crate::image::inspect(&h.code).is_ok()) {
            remember(&hit);
            return Ok(Some(hit));
        }
    }
    let Some(nv) = load()? else { return Ok(None) };
    // NVRTC 13 reports the headers it processed in a time trace: on a miss after a scan, every
    // one of them must be a file the scan found, or the result is not stored.
    let trace = (nv.version >= 13000 && !deps.from_manifest).then(|| c.trace_target()).flatten();
    let mut run_with = effective.clone();
    if let Some((path, _)) = &trace {
        run_with.push(format!("-fdevice-time-trace={path}"));
    }
    let mut out = run_nvrtc(nv, source, name, opts, &run_with, target, sm);
    let mut reported = trace.map(|(_, file)| {
        c.take_file(&file, crate::cache::trace::MAX_TRACE_BYTES).and_then(|j| crate::cache::trace::headers_in_trace(&j))
    });
    // An NVRTC that does not know the trace option: the caller's compile, as asked, without it.
    if matches!(&out, Err(f) if f.error.cuda_code == NVRTC_ERROR_INVALID_OPTION) && reported.is_some() {
        out = run_nvrtc(nv, source, name, opts, &effective, target, sm);
        reported = None;
    }
    let out = out?;
    let covered = match reported {
        // A trace asked for and not readable: nothing to hold the scan against; it stands alone.
        None | Some(None) => true,
        Some(Some(headers)) => all_scanned(&headers, &deps.files, cwd.as_deref(), opts),
    };
    // NVRTC read the headers after the scan did: store the result only if none changed
    // meanwhile, nor NVRTC's file. A cache that cannot be written is not an error: the code
    // is still good.
    if covered
        && crate::cache::unchanged(&deps.checks)
        && tc.is_file(nv.lib.path().as_deref())
        && c.put(&deps.key, &encode_payload(&out)).is_ok()
    {
        remember(&out);
    }
    Ok(Some(out))
}

/// Whether every header NVRTC reported processing (`reported`, paths as NVRTC formed them,
/// relative to the working directory) is a file the scan found (`files`), by device and inode.
/// In-memory headers and NVRTC's builtin header are not files; a reported path that does not
/// resolve now counts as not found.
fn all_scanned(
    reported: &[String],
    files: &[std::path::PathBuf],
    cwd: Option<&std::path::Path>,
    opts: &CompileOptions,
) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let found: std::collections::HashSet<(u64, u64)> = files.iter().filter_map(|f| id(f)).collect();
    reported.iter().all(|r| {
        if r == "__nv_nvrtc_builtin_header.h" || opts.headers.iter().any(|(n, _)| n == r) {
            return true;
        }
        let p = std::path::Path::new(r);
        let p = match cwd {
            Some(c) if p.is_relative() => c.join(p),
            _ => p.to_path_buf(),
        };
        id(&p).is_some_and(|i| found.contains(&i))
    })
}

/// The key of a compile and what it depends on.
struct Deps {
    key: crate::cache::Key,
    /// The files the scan found (empty when the key came from a manifest).
    files: Vec<std::path::PathBuf>,
    /// Every lookup of the include scan, to tell whether anything changed.
    checks: Vec<crate::cache::Check>,
    /// A header was changed in the last seconds: nothing about this compile is remembered.
    fresh: bool,
    /// Read from a manifest (then there is no need to write one).
    from_manifest: bool,
}

impl Deps {
    /// Writes the manifest for `inputs`, unless there is nothing to gain (no lookups), it came
    /// from one, or a header is too new to trust its stamp.
    fn save_manifest(&self, c: &Cache, inputs: &[u8], pays: bool) {
        if self.from_manifest || self.fresh || !pays {
            return;
        }
        let mut m = self.key.0.to_vec();
        m.extend_from_slice(&crate::cache::encode_checks(&self.checks));
        let _ = c.put_manifest(&manifest_key(inputs), &m);
    }
}

/// Whether a compile's inputs are worth a manifest (see `dependencies`).
fn manifest_pays(source: &str, opts: &CompileOptions) -> bool {
    const LONG: usize = 16 << 10;
    source.contains("include")
        || opts.headers.iter().any(|(_, h)| h.contains("include"))
        || opts.options.iter().any(|o| o.contains("-include"))
        || source.len() + opts.headers.iter().map(|(_, h)| h.len()).sum::<usize>() > LONG
}

fn manifest_key(inputs: &[u8]) -> crate::cache::Key {
    let mut k = KeyBuilder::new("cudyn-deps-v2");
    k.part("cudyn", env!("CARGO_PKG_VERSION").as_bytes()).part("inputs", inputs);
    k.finish()
}

/// The compile's key and dependencies: from the manifest a process wrote for the same inputs
/// when every lookup it made still gives the same answer (one `stat` each, no header read),
/// else from a full include scan. None when the scan cannot follow the includes.
#[allow(clippy::too_many_arguments)]
fn dependencies(
    c: &Cache,
    source: &str,
    name: &str,
    opts: &CompileOptions,
    options: &[String],
    toolkit: &[std::path::PathBuf],
    cwd: Option<&std::path::Path>,
    inputs: &[u8],
    rescan: bool,
    key_of: impl FnOnce(&[u8; 32]) -> crate::cache::Key,
) -> Option<Deps> {
    if rescan {
        // Notices said a folder changed, and its stamp may not show how: the manifest's folder
        // checks cannot be trusted for these inputs now, in this process or the next.
        c.remove_manifest(&manifest_key(inputs));
    }
    // A manifest saves a later process the scan: worth its read when headers may be read, or
    // when the texts are long enough that lexing them costs more than reading a small file.
    if !rescan && manifest_pays(source, opts) {
        if let Some(m) = c.get_manifest(&manifest_key(inputs)) {
            let key = m.get(..32).and_then(|k| <[u8; 32]>::try_from(k).ok());
            if let (Some(key), Some((checks, rest))) = (key, m.get(32..).and_then(crate::cache::decode_checks)) {
                if rest.is_empty() && crate::cache::unchanged(&checks) {
                    return Some(Deps {
                        key: crate::cache::Key(key),
                        files: Vec::new(),
                        checks,
                        fresh: false,
                        from_manifest: true,
                    });
                }
            }
        }
    }
    let scan = crate::cache::scan_includes(source, name, &opts.headers, options, toolkit, cwd?).ok()?;
    Some(Deps {
        key: key_of(&scan.digest),
        files: scan.files,
        checks: scan.checks,
        fresh: scan.fresh,
        from_manifest: false,
    })
}

/// A compile remembered in a cache's memory tier: its inputs (compared in full, the slot is
/// only a hash), every lookup its include scan made, and the result.
struct Remembered {
    key: crate::cache::Key,
    /// The entry file as it was (`Cache::entry_stamp`): removed, replaced or evicted, and the
    /// memory tier no longer answers.
    entry: [i64; 5],
    inputs: Vec<u8>,
    /// The checks of folders as wholes (sealed toolkit folders, absent names): answered by
    /// change notices while `watched` holds, by `stat` otherwise.
    folders: Vec<crate::cache::Check>,
    /// The checks of files (the caller's own headers): `stat` every time.
    files: Vec<crate::cache::Check>,
    /// The notice generation under which `folders` were last found unchanged (MAX: none).
    watched: std::sync::atomic::AtomicU64,
    compiled: Compiled,
}

/// What became of a remembered compile's folders.
enum Folders {
    /// No notice since they were found unchanged, or (not watched) their `stat`s hold.
    Unchanged,
    /// A notice arrived: something in or on the way to them changed.
    Notified,
    /// Their `stat`s show a change.
    Changed,
}

impl Remembered {
    /// Whether the folder checks still hold: no notice since they were last found so, or (when
    /// notices are not armed yet) their `stat`s now, after which notices are armed.
    fn folders(&self) -> Folders {
        use std::sync::atomic::Ordering::Relaxed;
        if self.folders.is_empty() {
            return Folders::Unchanged;
        }
        let g = self.watched.load(Relaxed);
        if g != u64::MAX {
            return if crate::cache::watch::unchanged_since(g) { Folders::Unchanged } else { Folders::Notified };
        }
        if !crate::cache::unchanged(&self.folders) {
            return Folders::Changed;
        }
        self.arm();
        Folders::Unchanged
    }

    /// Watches the folders, then checks them once more: a change between the two is seen by
    /// one or the other.
    fn arm(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let g = crate::cache::watch::arm(self.folders.iter().filter_map(|c| c.folder()))
            .filter(|_| crate::cache::unchanged(&self.folders));
        self.watched.store(g.unwrap_or(u64::MAX), Relaxed);
    }
}

/// Every input of a compile as one unambiguous byte string (length-prefixed parts).
fn inputs_of(
    source: &str,
    name: &str,
    opts: &CompileOptions,
    effective: &[String],
    target: CodeKind,
    cwd: Option<&std::path::Path>,
    nvrtc_file: &[u8],
) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut v = Vec::with_capacity(source.len() + 256);
    let mut put = |b: &[u8]| {
        v.extend_from_slice(&(b.len() as u64).to_le_bytes());
        v.extend_from_slice(b);
    };
    put(source.as_bytes());
    put(name.as_bytes());
    put(&(target as u32).to_le_bytes());
    put(cwd.map_or(&b""[..], |c| c.as_os_str().as_bytes()));
    // The NVRTC too: a manifest written under another NVRTC names another key.
    put(nvrtc_file);
    put(&(effective.len() as u64).to_le_bytes());
    for o in effective {
        put(o.as_bytes());
    }
    put(&(opts.headers.len() as u64).to_le_bytes());
    for (n, c) in &opts.headers {
        put(n.as_bytes());
        put(c.as_bytes());
    }
    for e in &opts.name_expressions {
        put(e.as_bytes());
    }
    v
}

fn memory_slot(inputs: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    inputs.hash(&mut h);
    h.finish()
}

/// `-I` options for the CUDA headers and CCCL (CUB, Thrust, libcu++) found beside the NVRTC
/// in use: a toolkit's `include/` (CUDA 13 keeps CCCL in `include/cccl`) or the wheels'
/// `nvidia/cu13/include` (`nvidia-cuda-cccl` installs there), so `#include <cub/...>` works with
/// no options. Appended after the caller's own options, so theirs are searched first. Folders
/// others can write are skipped, as in the library search.
pub fn default_include_options(nv: &Nvrtc) -> &'static [String] {
    static DIRS: OnceLock<Vec<String>> = OnceLock::new();
    crate::fork::once(&DIRS, || {
        let Some(lib) = nv.lib.path().and_then(|p| std::fs::canonicalize(p).ok()) else { return Vec::new() };
        crate::cuda::dl::header_dirs_beside(&lib).into_iter().map(|d| format!("-I{}", d.display())).collect()
    })
    .as_slice()
}

/// Every file on disk a compile of `source` with `opts` could read, as the cache's include scan
/// finds them (the toolkit's headers beside the NVRTC the search finds included): for a build
/// system's dependency list. Empty when the scan cannot follow the includes.
pub fn files_read(source: &str, name: &str, opts: &CompileOptions) -> Vec<std::path::PathBuf> {
    let tc = crate::cache::toolchain::located_nvrtc()
        .cloned()
        .or_else(|| nvrtc().ok().and_then(|nv| loaded_toolchain(nv).cloned()));
    let (Some(tc), Ok((base, _, _)), Ok(cwd)) = (tc, effective_options(opts, default_sm), std::env::current_dir())
    else {
        return Vec::new();
    };
    crate::cache::scan_includes(source, name, &opts.headers, &base, &tc.include_dirs, &cwd)
        .map(|s| s.files)
        .unwrap_or_default()
}

/// Compile through the process-wide cache (see `global_cache`).
pub fn compile(source: &str, name: &str, opts: &CompileOptions) -> std::result::Result<Compiled, CompileFailure> {
    compile_with(source, name, opts, global_cache())
}

/// C strings for NVRTC / nvJitLink; a NUL inside one is the caller's error, named by `what`.
pub(crate) fn cstrings<'a>(v: impl IntoIterator<Item = &'a str>, what: &str) -> Result<Vec<CString>> {
    v.into_iter()
        .map(|s| CString::new(s).map_err(|_| Error::invalid(format!("{what} '{s}' contains a NUL byte"))))
        .collect()
}

/// The deepest nesting cudyn hands NVRTC: its parser recurses per level, and on the 256 MiB
/// stack it compiles on (`nvrtc::Program::compile`) 100,000 nested parentheses compiled and
/// 300,000 overflowed the stack.
const MAX_NESTING: usize = 50_000;

/// How deep brackets (`(`, `[`, `{`, and with `angles` `<`) nest in `text`, counted plainly
/// (inside comments and literals too: a bound, not a parse).
fn nesting(text: &str, angles: bool) -> usize {
    let (mut depth, mut most) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b'<' if angles => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'>' if angles => depth = depth.saturating_sub(1),
            _ => continue,
        }
        most = most.max(depth);
    }
    most
}

fn run_nvrtc(
    nv: &'static Nvrtc,
    source: &str,
    name: &str,
    opts: &CompileOptions,
    effective: &[String],
    target: CodeKind,
    sm: u32,
) -> std::result::Result<Compiled, CompileFailure> {
    let src = CString::new(source).map_err(|_| Error::invalid("the source contains a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| Error::invalid("the program name contains a NUL byte"))?;
    let texts = std::iter::once((name, source, false))
        .chain(opts.headers.iter().map(|(n, t)| (n.as_str(), t.as_str(), false)))
        .chain(opts.name_expressions.iter().map(|e| (e.as_str(), e.as_str(), true)));
    for (what, text, angles) in texts {
        let depth = nesting(text, angles);
        if depth > MAX_NESTING {
            return Err(Error::invalid(format!(
                "'{}' nests brackets {depth} deep, more than the {MAX_NESTING} NVRTC's parser can take without \
                 overflowing its stack (it aborted the process at 300,000)",
                crate::error::quote_name(&what.chars().take(100).collect::<String>())
            ))
            .into());
        }
    }
    let hnames = cstrings(opts.headers.iter().map(|h| h.0.as_str()), "header name")?;
    let hbodies = cstrings(opts.headers.iter().map(|h| h.1.as_str()), "header")?;
    let copts = cstrings(effective.iter().map(String::as_str), "option")?;
    let exprs = cstrings(opts.name_expressions.iter().map(String::as_str), "name expression")?;
    let headers: Vec<(CString, CString)> = hnames.into_iter().zip(hbodies).collect();

    let prog = Program::new(nv, &src, &cname, &headers)?;
    for e in &exprs {
        prog.add_name_expression(e)?;
    }
    let compiled = prog.compile(&copts);
    let log = prog.log();
    if let Err(mut error) = compiled {
        // The first diagnostic that is an error (not a warning that merely mentions "error",
        // e.g. about a variable named error_count), else the first line.
        let is_error = |l: &str| {
            let t = l.trim_start();
            t.contains(": error") || t.contains(" error:") || t.starts_with("error") || t.starts_with("ptxas fatal")
        };
        let first = log
            .lines()
            .find(|l| is_error(l))
            .or_else(|| log.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
            .to_string();
        error.message = format!(
            "compiling '{name}': {}{}",
            error.message,
            // NVRTC's line echoes the source: quoted (crate::error), as every message is.
            if first.is_empty() { String::new() } else { format!(": {}", crate::error::quote_name(&first)) }
        );
        // Options NVRTC does not know are the caller's mistake, not the source's.
        if error.cuda_code == NVRTC_ERROR_INVALID_OPTION {
            error.status = Status::InvalidArgument;
        }
        return Err(CompileFailure { error, log });
    }
    // A code NVRTC cannot hand over (too large, no memory for it) fails with the log it wrote.
    let code = match target {
        CodeKind::Cubin => prog.cubin(),
        CodeKind::Ptx => prog.ptx(),
        _ => prog.lto_ir(),
    }
    .map_err(|error| CompileFailure { error, log: log.clone() })?;
    let mut lowered = Vec::new();
    for (e, s) in exprs.iter().zip(&opts.name_expressions) {
        lowered.push((s.clone(), prog.lowered_name(e)?));
    }
    Ok(Compiled { code, kind: target, log, lowered, sm, from_cache: false })
}

/// Whether these options ask for PTX (the only output `check_loadable` can refuse).
pub fn wants_ptx(opts: &CompileOptions) -> bool {
    opts.target == Some(CodeKind::Ptx) || has_arch_option(&opts.options).is_some_and(|a| a.starts_with("compute_"))
}

/// For loading: the options with the target checked against the driver, so that PTX the
/// driver would refuse is never produced. PTX is only kept when the driver is at least as
/// new as NVRTC; otherwise an explicit `compute_` target is an error that says so.
pub fn check_loadable(nvrtc_version: i32, driver_version: Option<i32>, opts: &CompileOptions) -> Result<()> {
    let Some(dv) = driver_version else { return Ok(()) };
    if wants_ptx(opts) && !ptx_loadable(nvrtc_version, dv) {
        return Err(Error::new(
            Status::UnsupportedVersion,
            format!(
                "NVRTC {} makes PTX that this CUDA {} driver cannot load: target a real architecture (sm_XY) or leave -arch unset",
                fmt_version(nvrtc_version),
                fmt_version(dv)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn default_target_is_sass_for_the_given_sm() {
        let (e, sm, k) = effective_options(&CompileOptions::default(), || 90).unwrap();
        assert_eq!((sm, k), (90, CodeKind::Cubin));
        assert_eq!(e, o(&["-arch=sm_90"]));
        let ptx = CompileOptions { target: Some(CodeKind::Ptx), ..Default::default() };
        assert_eq!(effective_options(&ptx, || 80).unwrap().0, o(&["-arch=compute_80"]));
        let lto = CompileOptions { target: Some(CodeKind::LtoIr), ..Default::default() };
        assert_eq!(effective_options(&lto, || 90).unwrap().0, o(&["-arch=sm_90", "-dlto"]));
    }

    #[test]
    fn explicit_arch_is_kept_and_checked() {
        let c = CompileOptions { options: o(&["-std=c++17", "--gpu-architecture", "sm_100a"]), ..Default::default() };
        let (e, sm, _) = effective_options(&c, || 90).unwrap();
        assert_eq!(sm, 100);
        assert_eq!(e, c.options);
        let bad = CompileOptions { options: o(&["-arch=compute_90"]), ..Default::default() };
        assert_eq!(effective_options(&bad, || 90).unwrap_err().status, Status::InvalidArgument);
        let src = CompileOptions { target: Some(CodeKind::Source), ..Default::default() };
        assert!(effective_options(&src, || 90).is_err());
        // NVRTC takes the last of several: so does the sm reported (and checked).
        let two = CompileOptions { options: o(&["-arch=sm_80", "-arch", "sm_90"]), ..Default::default() };
        assert_eq!(effective_options(&two, || 75).unwrap().1, 90);
        let two = CompileOptions { options: o(&["-arch=compute_80", "-arch=sm_90"]), ..Default::default() };
        assert_eq!(effective_options(&two, || 75).unwrap().1, 90);
        let two =
            CompileOptions { options: o(&["-arch=sm_90", "--gpu-architecture=compute_80"]), ..Default::default() };
        assert_eq!(effective_options(&two, || 75).unwrap_err().status, Status::InvalidArgument);
    }

    #[test]
    fn version_skew_decision() {
        assert!(ptx_loadable(13000, 13000));
        assert!(ptx_loadable(12080, 13000));
        assert!(!ptx_loadable(13000, 12090));
        assert!(!ptx_loadable(13010, 13000));
        let ptx = CompileOptions { options: o(&["-arch=compute_90"]), ..Default::default() };
        let e = check_loadable(13000, Some(12080), &ptx).unwrap_err();
        assert_eq!(e.status, Status::UnsupportedVersion);
        assert!(e.message.contains("13.0") && e.message.contains("12.8"), "{}", e.message);
        assert!(check_loadable(13000, Some(13000), &ptx).is_ok());
        assert!(check_loadable(13000, Some(12080), &CompileOptions::default()).is_ok());
        assert!(check_loadable(13000, None, &ptx).is_ok());
    }

    #[test]
    fn payload_round_trip_and_garbage() {
        let c = Compiled {
            code: b"//\n.version 9.0\n.target sm_90\n.address_size 64\n\0".to_vec(),
            kind: CodeKind::Ptx,
            log: "warning: something to keep".into(),
            lowered: vec![("f<int>".into(), "_Z1fIiEvv".into())],
            sm: 90,
            from_cache: false,
        };
        let p = encode_payload(&c);
        let back = decode_payload(&p, CodeKind::Ptx).unwrap();
        assert_eq!(back.code, c.code);
        assert_eq!(back.lowered, c.lowered);
        assert_eq!(back.sm, 90);
        assert_eq!(back.log, c.log);
        for cut in 0..p.len() {
            let _ = decode_payload(&p[..cut], CodeKind::Ptx);
        }
        assert!(decode_payload(&p, CodeKind::Cubin).is_none());
        assert!(decode_payload(&[0xff; 16], CodeKind::Ptx).is_none());
    }
}
