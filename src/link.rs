//! Linking with nvJitLink: cubin, fatbin, PTX, LTO-IR, object and library inputs into one
//! cubin, with `-lto` for link-time optimisation; the logs come back either way.
//!
//! nvJitLink reports success where the result is not what was asked for: an executable
//! (non-relocatable) cubin, a host object without relocatable device code, or a fatbin whose
//! SASS for the target is executable is taken and its kernels silently dropped; a symbol
//! defined twice is an "error" line in its log with a success status. So every input is
//! checked by what it holds before nvJitLink sees it, an error line in its logs is a failure,
//! and a result that holds no kernel is refused unless [`ALLOW_NO_KERNELS`] is among the
//! options (a device library of globals linked on purpose).

use crate::cuda::nvjitlink::{jitlink, InputType, Linker};
use crate::error::{quote_name, Error, Status};
use crate::image::contents::{self, HostDeviceCode};
use crate::image::{ArchCode, CodeKind};

/// The option that lets [`link`] give a cubin with no kernel (device globals alone). cudyn's
/// own: it is taken out of the options before nvJitLink sees them.
pub const ALLOW_NO_KERNELS: &str = "--cudyn-allow-no-kernels";

/// The nvJitLink input type of a code kind: cubin, fatbin, PTX, LTO-IR, a host object or a
/// static library with embedded device code; None for the kinds nvJitLink does not take.
fn input_type(k: CodeKind) -> Option<InputType> {
    use InputType as T;
    Some(match k {
        CodeKind::Cubin => T::NVJITLINK_INPUT_CUBIN,
        CodeKind::Fatbin => T::NVJITLINK_INPUT_FATBIN,
        CodeKind::Ptx => T::NVJITLINK_INPUT_PTX,
        CodeKind::LtoIr => T::NVJITLINK_INPUT_LTOIR,
        CodeKind::Object => T::NVJITLINK_INPUT_OBJECT,
        CodeKind::Library => T::NVJITLINK_INPUT_LIBRARY,
        CodeKind::Unknown | CodeKind::Source => return None,
    })
}

/// nvJitLink's name for the input type of a code kind, as its log and cudyn's messages name it.
fn input_type_name(k: CodeKind) -> &'static str {
    match k {
        CodeKind::Cubin => "NVJITLINK_INPUT_CUBIN",
        CodeKind::Fatbin => "NVJITLINK_INPUT_FATBIN",
        CodeKind::Ptx => "NVJITLINK_INPUT_PTX",
        CodeKind::LtoIr => "NVJITLINK_INPUT_LTOIR",
        CodeKind::Object => "NVJITLINK_INPUT_OBJECT",
        CodeKind::Library => "NVJITLINK_INPUT_LIBRARY",
        CodeKind::Unknown | CodeKind::Source => "none",
    }
}

/// One input to [`link`]: its bytes, what they are, and a name for the log.
pub struct LinkInput<'a> {
    /// Any kind but `Unknown` and `Source`.
    pub kind: CodeKind,
    /// The input's bytes.
    pub data: &'a [u8],
    /// The input's name, as nvJitLink's log shows it.
    pub name: &'a str,
}

/// A link's result: the cubin and nvJitLink's info log.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The linked cubin.
    pub cubin: Vec<u8>,
    /// nvJitLink's info log.
    pub log: String,
}

/// A failed link: the error and nvJitLink's log.
#[derive(Debug, Clone)]
pub struct LinkFailure {
    /// What failed ([`Status::LinkFailed`](crate::Status::LinkFailed) when nvJitLink refused the inputs).
    pub error: Error,
    /// nvJitLink's error and info log (empty when it never ran).
    pub log: String,
}

impl From<Error> for LinkFailure {
    fn from(error: Error) -> Self {
        LinkFailure { error, log: String::new() }
    }
}

/// The error's message, then nvJitLink's log (when there is one) on the lines after it.
impl std::fmt::Display for LinkFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::error::write_with_log(f, &self.error, &self.log)
    }
}

impl std::error::Error for LinkFailure {}

/// The failure as a plain [`Error`], the log kept at the end of the message (as `Display`).
impl From<LinkFailure> for Error {
    fn from(f: LinkFailure) -> Self {
        let message = f.to_string();
        Error { message, ..f.error }
    }
}

/// Link `inputs` into a cubin. Without an `-arch=sm_XY` option the present GPU's (sm_90
/// without a GPU) is used, as for compiling.
///
/// Refused before nvJitLink runs, naming the input: a cubin, fatbin, PTX or LTO-IR input that
/// cudyn's image checks refuse ([`Status::InvalidImage`]) or that holds another kind than it is
/// given as; a cubin for another architecture than the link's (nvJitLink refuses it, then hangs
/// every later link in the process); an executable cubin, a fatbin whose SASS for the target
/// is one, and a host object
/// or static library without relocatable device code, all of which nvJitLink would take and
/// drop ([`Status::InvalidArgument`]). A
/// failure ([`Status::LinkFailed`]) also when nvJitLink's logs hold an error line, and when the
/// result holds no kernel, unless `options` holds [`ALLOW_NO_KERNELS`].
pub fn link(inputs: &[LinkInput<'_>], options: &[String]) -> std::result::Result<Linked, LinkFailure> {
    if inputs.is_empty() {
        return Err(Error::invalid("nothing to link: no inputs").into());
    }
    let mut types = Vec::with_capacity(inputs.len());
    for (i, inp) in inputs.iter().enumerate() {
        types.push(input_type(inp.kind).ok_or_else(|| {
            Error::invalid(format!("link input {i} ('{}'): {} cannot be linked", quote_name(inp.name), inp.kind))
        })?);
    }
    let allow_no_kernels = options.iter().any(|o| o == ALLOW_NO_KERNELS);
    let mut opts: Vec<String> = options.iter().filter(|o| *o != ALLOW_NO_KERNELS).cloned().collect();
    if !opts.iter().any(|o| o.starts_with("-arch")) {
        opts.push(format!("-arch=sm_{}", crate::compile::default_sm()));
    }
    let sm = link_sm(&opts);
    for (i, inp) in inputs.iter().enumerate() {
        // Device code is held to cudyn's image checks first, as a load is: nvJitLink's reader
        // crashed the process on cubins those checks refuse (truncated, tables out of range).
        if matches!(inp.kind, CodeKind::Cubin | CodeKind::Fatbin | CodeKind::Ptx | CodeKind::LtoIr) {
            let name = quote_name(inp.name);
            match crate::image::inspect(inp.data) {
                Err(e) => {
                    return Err(Error::new(Status::InvalidImage, format!("link input {i} ('{name}'): {e}")).into());
                }
                Ok(info) if info.kind != inp.kind => {
                    return Err(Error::invalid(format!(
                        "link input {i} ('{name}') is given as {}, but it holds {}",
                        inp.kind, info.kind
                    ))
                    .into());
                }
                Ok(info) => {
                    // SASS links only into a link for its own architecture. nvJitLink 13.0
                    // refuses another with an error, and then hangs every later call in the
                    // process on a lock of its own the failed call left held (an sm_80 cubin in
                    // an sm_90 link did it).
                    if let (CodeKind::Cubin, Some(want), [ArchCode::Sass { sm: have, .. }]) =
                        (inp.kind, sm, info.codes.as_slice())
                    {
                        if *have != want {
                            return Err(Error::invalid(format!(
                                "link input {i} ('{name}') is SASS for sm_{have}, but the link is for sm_{want}: \
                                 machine code links only into a link for its own architecture (rebuild it for \
                                 sm_{want}, or link PTX or LTO-IR)"
                            ))
                            .into());
                        }
                    }
                }
            }
        }
        if let Some(why) = unlinkable(inp, sm) {
            return Err(Error::invalid(format!("link input {i} ('{}'): {why}", quote_name(inp.name))).into());
        }
    }
    // nvJitLink 13.0 takes a symbol defined twice with a success status, writing "Multiple
    // definition" to the process's standard error (not to its logs), and can give a kernel
    // the parameters of both definitions.
    let mut defined: Vec<(String, usize)> = Vec::new();
    for (i, inp) in inputs.iter().enumerate().filter(|(_, inp)| inp.kind == CodeKind::Cubin) {
        for name in contents::cubin_global_definitions(inp.data) {
            if let Some(&(_, first)) = defined.iter().find(|(n, _)| *n == name) {
                return Err(Error::new(
                    Status::LinkFailed,
                    format!(
                        "multiple definition of '{}': link inputs {first} ('{}') and {i} ('{}') both define it",
                        quote_name(&name),
                        quote_name(inputs[first].name),
                        quote_name(inp.name)
                    ),
                )
                .into());
            }
            defined.push((name, i));
        }
    }
    let jl = jitlink()?;
    let copts = crate::compile::cstrings(opts.iter().map(String::as_str), "option")?;
    let mut names = crate::compile::cstrings(inputs.iter().map(|i| i.name), "link input name")?.into_iter();
    let mut linker = Linker::new(jl, &copts)?;
    for (i, inp) in inputs.iter().enumerate() {
        if inp.data.is_empty() {
            return Err(Error::invalid(format!("link input {i} ('{}') is empty", quote_name(inp.name))).into());
        }
        let name = names.next().unwrap_or_default();
        if let Err(mut error) = linker.add(types[i], inp.data, name) {
            // nvJitLink runs the type and the input's name together ("...type
            // NVJITLINK_INPUT_PTXkernels.ptx"): set the name apart.
            let ty = input_type_name(inp.kind);
            let err = linker.error_log().replace(&format!("{ty}{}", inp.name), &format!("{ty} (input '{}')", inp.name));
            let first = err.lines().next().unwrap_or("");
            error.message = format!("adding link input {i} ('{}', {ty}): {}", quote_name(inp.name), quote_name(first));
            return Err(LinkFailure { error, log: err });
        }
    }
    let completed = linker.complete();
    let (err, info) = (linker.error_log(), linker.info_log());
    let both = || {
        if info.is_empty() {
            err.clone()
        } else if err.is_empty() {
            info.clone()
        } else {
            format!("{err}\n{info}")
        }
    };
    if let Err(mut error) = completed {
        let first =
            err.lines().find(|l| l.contains("error")).or_else(|| err.lines().next()).unwrap_or("").trim().to_string();
        error.message = format!("linking failed (nvJitLinkResult {}): {}", error.cuda_code, quote_name(&first));
        return Err(LinkFailure { error, log: both() });
    }
    // nvJitLink 13.0 reports a symbol defined twice as an error line and success.
    if let Some(line) = err.lines().chain(info.lines()).map(str::trim).find(|l| is_error_line(l)) {
        let error = Error::new(
            Status::LinkFailed,
            format!("linking failed: nvJitLink reported an error but no failure: {}", quote_name(line)),
        );
        return Err(LinkFailure { error, log: both() });
    }
    let cubin = linker.cubin()?;
    let linked = contents::contents(&cubin);
    if let Err(e) = &linked.verdict {
        let error = Error::new(Status::LinkFailed, format!("nvJitLink's output is not an image cudyn accepts: {e}"));
        return Err(LinkFailure { error, log: both() });
    }
    // A definition that came twice through inputs cudyn cannot read (PTX, LTO-IR, objects)
    // shows in the result: one kernel twice, or parameters that overlap.
    let mut seen = std::collections::HashSet::with_capacity(linked.kernels.len());
    for k in &linked.kernels {
        let twice = !seen.insert(k.name.as_str());
        let overlap = k.params.windows(2).any(|w| w[1].offset < w[0].offset.saturating_add(w[0].size));
        if twice || overlap {
            let error = Error::new(
                Status::LinkFailed,
                format!(
                    "the linked cubin defines kernel '{}' more than once (an input defines it twice, or two \
                     inputs do): nvJitLink took both",
                    quote_name(&k.name)
                ),
            );
            return Err(LinkFailure { error, log: both() });
        }
    }
    if !allow_no_kernels && linked.kernels.is_empty() {
        let error = Error::new(
            Status::LinkFailed,
            format!(
                "the linked cubin holds no kernel: none of the inputs defines one (pass {ALLOW_NO_KERNELS} to \
                 link device globals alone)"
            ),
        );
        return Err(LinkFailure { error, log: both() });
    }
    Ok(Linked { cubin, log: info })
}

/// A line of nvJitLink's logs that reports an error ("error   : Multiple definition of ...").
fn is_error_line(line: &str) -> bool {
    line.strip_prefix("error").is_some_and(|rest| rest.trim_start().starts_with(':'))
}

/// The SM the link is for: the last `-arch=sm_XY` option (nvJitLink, like NVRTC, takes the
/// last).
fn link_sm(opts: &[String]) -> Option<u32> {
    let arch = opts.iter().rev().find_map(|o| o.strip_prefix("-arch="))?;
    let digits: String =
        arch.trim_start_matches("sm_").trim_start_matches("lto_").chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Why an input would link to nothing, when it would: nvJitLink takes these, and drops them.
fn unlinkable(inp: &LinkInput<'_>, sm: Option<u32>) -> Option<String> {
    let rebuild = "rebuild it with -rdc=true (NVRTC, nvcc) or nvcc -dc";
    match inp.kind {
        CodeKind::Cubin => (contents::cubin_is_relocatable(inp.data) == Some(false)).then(|| {
            format!("an executable cubin, not relocatable device code: a linker keeps none of its kernels; {rebuild}")
        }),
        CodeKind::Fatbin => {
            let c = contents::contents(inp.data);
            // The entry nvJitLink takes for the target: SASS for exactly it, if there is one.
            let sass = c.entries.iter().find(|e| matches!(e.code, ArchCode::Sass { sm: s, .. } if Some(s) == sm))?;
            (sass.relocatable == Some(false)).then(|| {
                format!(
                    "a fatbin whose {} entry is an executable cubin, not relocatable device code: a linker keeps \
                     none of its kernels; {rebuild}",
                    sass.code
                )
            })
        }
        CodeKind::Object => match contents::host_object_device_code(inp.data) {
            None => Some("not an ELF object file".into()),
            Some(HostDeviceCode::None) => Some("a host object with no device code in it".into()),
            Some(HostDeviceCode::Whole) => {
                Some(format!("a host object whose device code is not relocatable (.nv_fatbin); {rebuild}"))
            }
            Some(HostDeviceCode::Relocatable) => None,
        },
        CodeKind::Library => match contents::archive_device_code(inp.data) {
            None => Some("not a static library (ar archive)".into()),
            Some(HostDeviceCode::None) => Some("a static library with no device code in any member".into()),
            Some(HostDeviceCode::Whole) => {
                Some(format!("a static library whose device code is not relocatable (.nv_fatbin); {rebuild}"))
            }
            Some(HostDeviceCode::Relocatable) => None,
        },
        _ => None,
    }
}
