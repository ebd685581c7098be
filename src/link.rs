//! Linking with nvJitLink: cubin, fatbin, PTX, LTO-IR, object and library inputs into one
//! cubin, with `-lto` for link-time optimisation; the logs come back either way.

use crate::cuda::nvjitlink::{jitlink, InputType, Linker};
use crate::error::Error;
use crate::image::CodeKind;

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
pub fn link(inputs: &[LinkInput<'_>], options: &[String]) -> std::result::Result<Linked, LinkFailure> {
    if inputs.is_empty() {
        return Err(Error::invalid("nothing to link: no inputs").into());
    }
    let mut types = Vec::with_capacity(inputs.len());
    for (i, inp) in inputs.iter().enumerate() {
        types.push(input_type(inp.kind).ok_or_else(|| {
            Error::invalid(format!("link input {i} ('{}'): {} cannot be linked", inp.name, inp.kind))
        })?);
    }
    let jl = jitlink()?;
    let mut opts = options.to_vec();
    if !opts.iter().any(|o| o.starts_with("-arch")) {
        opts.push(format!("-arch=sm_{}", crate::compile::default_sm()));
    }
    let copts = crate::compile::cstrings(opts.iter().map(String::as_str), "option")?;
    let mut names = crate::compile::cstrings(inputs.iter().map(|i| i.name), "link input name")?.into_iter();
    let mut linker = Linker::new(jl, &copts)?;
    for (i, inp) in inputs.iter().enumerate() {
        if inp.data.is_empty() {
            return Err(Error::invalid(format!("link input {i} ('{}') is empty", inp.name)).into());
        }
        let name = names.next().unwrap_or_default();
        if let Err(mut error) = linker.add(types[i], inp.data, name) {
            // nvJitLink runs the type and the input's name together ("...type
            // NVJITLINK_INPUT_PTXkernels.ptx"): set the name apart.
            let ty = input_type_name(inp.kind);
            let err = linker.error_log().replace(&format!("{ty}{}", inp.name), &format!("{ty} (input '{}')", inp.name));
            let first = err.lines().next().unwrap_or("");
            error.message = format!("adding link input {i} ('{}', {ty}): {first}", inp.name);
            return Err(LinkFailure { error, log: err });
        }
    }
    let completed = linker.complete();
    let (err, info) = (linker.error_log(), linker.info_log());
    if let Err(mut error) = completed {
        let first =
            err.lines().find(|l| l.contains("error")).or_else(|| err.lines().next()).unwrap_or("").trim().to_string();
        error.message = format!("linking failed (nvJitLinkResult {}): {first}", error.cuda_code);
        return Err(LinkFailure { error, log: if info.is_empty() { err } else { format!("{err}\n{info}") } });
    }
    Ok(Linked { cubin: linker.cubin()?, log: info })
}
