//! `cudyn compile` and `cudyn link`: NVRTC and nvJitLink through the library (compile through
//! its cache), the tool's log on standard error (or in the JSON), the code written whole, and a
//! report of what the output holds — the architecture read from the code itself, and which of
//! several `-arch` options won.

use std::path::{Path, PathBuf};

use cudyn::image::{self, contents, CodeKind};
use serde_json::{json, Value};

use crate::output::{err, out, q, qo, qp, qt};
use crate::{files, print_json, Target};

/// A failure: its message on standard error (or as JSON), the tool's log with it.
fn failed(as_json: bool, status: Option<cudyn::Status>, message: &str, tool: &str, log: &str) -> bool {
    if as_json {
        print_json(&json!({
            "ok": false,
            "status": status.map(|s| s.c_name()),
            "error": message,
            "log": log,
        }));
    } else {
        print_log(tool, log);
        err!("cudyn: {}", qt(message));
    }
    false
}

pub fn print_log(tool: &str, log: &str) {
    let log = log.trim_end_matches(['\0', '\n']);
    if !log.is_empty() {
        err!("{tool} log:\n{}", qt(log));
    }
}

/// The architecture options in `options`, in order, as the tools read them (`-arch=X`,
/// `-arch X`, `--gpu-architecture[=]X`).
fn arch_options(options: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = options.iter();
    while let Some(o) = it.next() {
        if ["-arch", "--gpu-architecture"].contains(&o.as_str()) {
            if let Some(v) = it.next() {
                out.push(format!("{o} {v}"));
            }
        } else if o.starts_with("-arch=") || o.starts_with("--gpu-architecture=") {
            out.push(o.clone());
        }
    }
    out
}

/// "90" -> "sm_90"; anything else as given (checked by `crate::parse_arch`).
fn arch_option(a: &str) -> String {
    if a.chars().all(|c| c.is_ascii_digit()) {
        format!("-arch=sm_{a}")
    } else {
        format!("-arch={a}")
    }
}

/// Which architecture option won, when there was a choice: `--arch` over those in the tool's
/// options, else the last of those (NVRTC and nvJitLink take the last).
fn arch_choice(user: &[String], from_flag: Option<&str>) -> Option<String> {
    let given = arch_options(user);
    match from_flag {
        Some(f) if !given.is_empty() => Some(format!("--arch {f} is used, not {} from the options", given.join(", "))),
        None if given.len() > 1 => Some(format!(
            "the last architecture option, {}, is used; the tool ignores {}",
            given[given.len() - 1],
            given[..given.len() - 1].join(", ")
        )),
        _ => None,
    }
}

/// What the code holds, read from it: "sm_90", "compute_80", "lto_90".
fn arch_held(code: &[u8]) -> Option<String> {
    let info = image::inspect(code).ok()?;
    (!info.codes.is_empty()).then(|| image::describe_codes(&info.codes))
}

pub fn compile(
    src: &Path,
    out_path: &Path,
    target: Target,
    arch: Option<String>,
    user: Vec<String>,
    as_json: bool,
) -> bool {
    let bytes = match files::read(src) {
        Ok(b) => b,
        Err(e) => return failed(as_json, None, &e, "NVRTC", ""),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return failed(as_json, None, &format!("{} is not UTF-8 text", qp(src)), "NVRTC", "");
    };
    let choice = arch_choice(&user, arch.as_deref());
    let mut options = user;
    if let Some(a) = &arch {
        options.push(arch_option(a));
    }
    let target = match target {
        Target::Cubin => CodeKind::Cubin,
        Target::Ptx => CodeKind::Ptx,
        Target::Ltoir => CodeKind::LtoIr,
    };
    let name = if files::is_std(src) {
        "stdin.cu".to_string()
    } else {
        src.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "source.cu".into())
    };
    let opts = cudyn::CompileOptions { options, target: Some(target), ..Default::default() };
    let c = match cudyn::compile::compile(&text, &name, &opts) {
        Ok(c) => c,
        Err(f) => return failed(as_json, Some(f.error.status), &f.error.message, "NVRTC", &f.log),
    };
    if let Err(e) = files::write(out_path, &c.code) {
        return failed(as_json, None, &e, "NVRTC", &c.log);
    }
    // The output says what it holds; the requested sm is only what was asked for.
    let held = arch_held(&c.code).unwrap_or_else(|| format!("sm_{}", c.sm));
    if as_json {
        print_json(&json!({
            "ok": true,
            "output": if files::is_std(out_path) { "-".to_string() } else { out_path.display().to_string() },
            "kind": c.kind.to_string(),
            "arch": held,
            "bytes": c.code.len(),
            "from_cache": c.from_cache,
            "arch_choice": choice,
            "log": c.log,
        }));
        return true;
    }
    print_log("NVRTC", &c.log);
    let how = if c.from_cache { "from the cache" } else { "compiled" };
    let choice = choice.map(|c| format!("; {c}")).unwrap_or_default();
    let line = format!("{}: {} for {held}, {} bytes ({how}{choice})", qo(out_path), c.kind, c.code.len());
    // With the code on standard output, the report goes to standard error.
    if files::is_std(out_path) {
        err!("{line}");
    } else {
        out!("{line}");
    }
    true
}

pub struct LinkRequest {
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub arch: Option<String>,
    pub allow_no_kernels: bool,
    pub options: Vec<String>,
    pub json: bool,
}

fn kind_name(k: CodeKind) -> &'static str {
    match k {
        CodeKind::Cubin => "cubin",
        CodeKind::Fatbin => "fatbin",
        CodeKind::Ptx => "ptx",
        CodeKind::LtoIr => "ltoir",
        CodeKind::Object => "object",
        CodeKind::Library => "library",
        _ => "unknown",
    }
}

pub fn link(r: LinkRequest) -> bool {
    use cudyn::link::LinkInput;
    let as_json = r.json;
    let mut datas = Vec::new();
    for p in &r.inputs {
        match files::read(p) {
            Ok(d) => datas.push(d),
            Err(e) => return failed(as_json, None, &e, "nvJitLink", ""),
        }
    }
    let names: Vec<String> =
        r.inputs.iter().map(|p| if files::is_std(p) { "stdin".to_string() } else { p.display().to_string() }).collect();
    let mut list = Vec::new();
    for ((p, d), name) in r.inputs.iter().zip(&datas).zip(&names) {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let kind = match (image::code_kind_of(d), ext) {
            (_, "o") => CodeKind::Object,
            (_, "a") => CodeKind::Library,
            (k, _) => k,
        };
        if matches!(kind, CodeKind::Unknown | CodeKind::Source) {
            let msg = format!("{}: not a cubin, fatbin, PTX, LTO-IR, object (.o) or archive (.a)", q(name));
            return failed(as_json, None, &msg, "nvJitLink", "");
        }
        list.push(LinkInput { kind, data: d, name });
    }
    let choice = arch_choice(&r.options, r.arch.as_deref());
    let mut options = r.options;
    if let Some(a) = &r.arch {
        options.push(arch_option(a));
    }
    if r.allow_no_kernels {
        options.push(cudyn::link::ALLOW_NO_KERNELS.into());
    }
    // LTO-IR links only with link-time optimisation on: ask for it rather than fail.
    if list.iter().any(|i| i.kind == CodeKind::LtoIr) && !options.iter().any(|o| o == "-lto") {
        options.push("-lto".into());
    }
    let l = match cudyn::link::link(&list, &options) {
        Ok(l) => l,
        Err(f) => return failed(as_json, Some(f.error.status), &f.error.message, "nvJitLink", &f.log),
    };
    if let Err(e) = files::write(&r.output, &l.cubin) {
        return failed(as_json, None, &e, "nvJitLink", &l.log);
    }
    let held = arch_held(&l.cubin).unwrap_or_else(|| "an unknown architecture".into());
    let kernels: Vec<String> = contents::contents(&l.cubin).kernels.into_iter().map(|k| k.name).collect();
    if as_json {
        print_json(&json!({
            "ok": true,
            "output": if files::is_std(&r.output) { "-".to_string() } else { r.output.display().to_string() },
            "arch": held,
            "bytes": l.cubin.len(),
            "kernels": kernels,
            "inputs": list.iter().map(|i| json!({"name": i.name, "kind": kind_name(i.kind)})).collect::<Vec<Value>>(),
            "arch_choice": choice,
            "log": l.log,
        }));
        return true;
    }
    print_log("nvJitLink", &l.log);
    let shown: Vec<String> = kernels.iter().map(|k| q(k).into_owned()).collect();
    let what = if shown.is_empty() { "no kernel".to_string() } else { format!("kernels {}", shown.join(", ")) };
    let choice = choice.map(|c| format!("; {c}")).unwrap_or_default();
    let line = format!("{}: cubin for {held}, {} bytes, {what}{choice}", qo(&r.output), l.cubin.len());
    if files::is_std(&r.output) {
        err!("{line}");
    } else {
        out!("{line}");
    }
    true
}
