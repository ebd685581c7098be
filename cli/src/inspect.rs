//! `cudyn inspect`: what each file holds, as text or JSON, read through `cudyn::image::contents`
//! (no GPU, no CUDA library): the kind, the fatbin entries, each kernel's parameter layout,
//! resources and C++ name, the globals, the verdict, and which entry a GPU would run.

use std::path::{Path, PathBuf};

use cudyn::diagnose::{self, Component};
use cudyn::image::contents::{self, Compression, Contents, FatbinEntry, GlobalInfo, KernelInfo, Resources};
use cudyn::image::{self, ArchCode, CodeKind};
use serde_json::{json, Value};

use crate::output::{err, out, q, qp, qt};
use crate::{demangle, files, print_json};

pub fn inspect(files: &[PathBuf], as_json: bool, sm: Option<u32>) -> bool {
    // The GPU to answer "which entry would run" for: the one asked for, else the present one.
    let (gpu, no_gpu_reason) = match sm {
        Some(sm) => (Some(sm), None),
        None => match diagnose::target_sm() {
            Some(sm) => (Some(sm), None),
            None => (None, Some(no_gpu_reason())),
        },
    };
    let mut all_ok = true;
    let mut reports = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let data = match files::read(f) {
            Ok(d) => d,
            Err(e) => {
                all_ok = false;
                if as_json {
                    reports.push(json!({"file": f.display().to_string(), "error": e}));
                } else {
                    err!("cudyn: {}", qt(&e));
                }
                continue;
            }
        };
        let c = contents::contents(&data);
        all_ok &= c.verdict.is_ok();
        if as_json {
            reports.push(inspect_json(f, &data, &c, gpu, no_gpu_reason.as_deref()));
        } else {
            if i > 0 {
                out!();
            }
            inspect_text(f, &data, &c, gpu, no_gpu_reason.as_deref());
        }
    }
    if as_json {
        print_json(&Value::Array(reports));
    }
    all_ok
}

/// Why no GPU can be asked, in a few words (`cudyn doctor` has the details).
fn no_gpu_reason() -> String {
    if diagnose::component(Component::Driver).path.is_none() {
        return "no CUDA driver found".into();
    }
    match diagnose::gpus() {
        Ok(_) => "the driver reports no device".into(),
        Err(e) => e,
    }
}

fn kind_key(k: CodeKind) -> &'static str {
    match k {
        CodeKind::Cubin => "cubin",
        CodeKind::Fatbin => "fatbin",
        CodeKind::Ptx => "ptx",
        CodeKind::LtoIr => "ltoir",
        CodeKind::Source => "source",
        _ => "unknown",
    }
}

fn code_kind_text(code: &ArchCode) -> &'static str {
    match code {
        ArchCode::Sass { .. } => "SASS",
        ArchCode::Ptx { .. } => "PTX",
        ArchCode::LtoIr { .. } => "LTO-IR",
    }
}

fn layout_text(k: &KernelInfo) -> String {
    let params: Vec<String> = k.params.iter().map(|p| format!("{}:{}", p.offset, p.size)).collect();
    format!(
        "{}: {} parameter{}, {} bytes (offset:size) [{}]",
        q(&k.name),
        k.params.len(),
        if k.params.len() == 1 { "" } else { "s" },
        k.param_bytes,
        params.join(" ")
    )
}

fn dims(d: [u32; 3]) -> String {
    format!("{}×{}×{}", d[0], d[1], d[2])
}

/// The kernel's resources in ptxas's terms, one line; None when the image says nothing (PTX).
fn resources_text(r: &Resources) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(n) = r.registers {
        parts.push(format!("{n} registers"));
    }
    if let Some(n) = r.shared_bytes {
        parts.push(format!("{n} bytes shared"));
    }
    if let Some(n) = r.local_bytes {
        parts.push(format!("{n} bytes local"));
    }
    if let Some(n) = r.stack_bytes.filter(|&s| Some(s) != r.local_bytes) {
        parts.push(format!("{n} bytes stack with calls"));
    }
    if let Some(n) = r.constant_bytes {
        parts.push(format!("{n} bytes constant bank 0"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn kernel_text(k: &KernelInfo, indent: &str) {
    out!("{indent}kernel {}", layout_text(k));
    if let Some(d) = demangle(&k.name) {
        out!("{indent}  C++ name: {}", q(&d));
    }
    match resources_text(&k.resources) {
        Some(r) => out!("{indent}  uses: {r}"),
        None => out!("{indent}  uses: decided when the PTX is compiled"),
    }
    match (k.resources.max_threads, k.resources.required_block) {
        (_, Some(b)) => out!("{indent}  block: exactly {} threads (.reqntid)", dims(b)),
        (Some(m), None) => out!("{indent}  block: at most {} threads (launch bound)", dims(m)),
        (None, None) => {}
    }
}

fn global_text(g: &GlobalInfo, indent: &str) {
    let size = g.bytes.map_or_else(|| "size not stated".to_string(), |b| format!("{b} bytes"));
    let cxx = demangle(&g.name).map(|d| format!(" ({})", q(&d))).unwrap_or_default();
    out!("{indent}global {}{cxx}: {size}, {} memory", q(&g.name), g.space.name());
}

/// The codes whose "which runs" question is asked: the entries of a fatbin, else the verdict's.
fn codes_of(c: &Contents) -> Vec<ArchCode> {
    if c.kind == CodeKind::Fatbin {
        c.entries.iter().map(|e| e.code).collect()
    } else {
        c.verdict.as_ref().map(|i| i.codes.clone()).unwrap_or_default()
    }
}

fn runs_text(c: &Contents, sm: u32) -> String {
    if c.verdict.is_err() {
        return "nothing: cudyn refuses the image".into();
    }
    let codes = codes_of(c);
    match contents::entry_for_gpu(&codes, sm) {
        Some(i) if c.kind == CodeKind::Fatbin => format!("entry {i} ({})", codes[i]),
        Some(i) => format!("the {}", codes[i]),
        None => match c.kind {
            CodeKind::Source => "nothing yet: source needs compiling (cudyn compile)".into(),
            CodeKind::LtoIr => "nothing yet: LTO-IR needs linking (cudyn link)".into(),
            _ => format!("nothing: no code for sm_{sm} (holds {})", image::describe_codes(&codes)),
        },
    }
}

fn entry_size_text(e: &FatbinEntry) -> String {
    match e.compression {
        Compression::None => format!("{} bytes", e.code_bytes),
        m => format!("{} bytes, {}-compressed to {}", e.code_bytes, m.name(), e.stored_bytes),
    }
}

fn inspect_text(f: &Path, data: &[u8], c: &Contents, gpu: Option<u32>, no_gpu: Option<&str>) {
    out!("{}: {}, {} bytes", qp(f), c.kind, data.len());
    match &c.verdict {
        Ok(info) => {
            let mut holds = match info.kind {
                CodeKind::Source => "CUDA C++ to compile (cudyn compile)".to_string(),
                CodeKind::LtoIr if info.codes.is_empty() => "LTO-IR to link (cudyn link)".to_string(),
                _ => image::describe_codes(&info.codes),
            };
            if let Some((maj, min)) = info.ptx_isa {
                holds.push_str(&format!(" (PTX ISA {maj}.{min})"));
            }
            out!("  verdict: accepted; holds {holds}");
        }
        Err(e) => out!("  verdict: refused: {}", qt(&e.to_string())),
    }
    for (i, e) in c.entries.iter().enumerate() {
        let relocatable = if e.relocatable == Some(true) { ", relocatable (-rdc)" } else { "" };
        out!("  entry {i}: {} {:<10} {}{relocatable}", code_kind_text(&e.code), e.code.to_string(), entry_size_text(e));
        if !e.source_name.is_empty() {
            out!("    from {}", q(&e.source_name));
        }
        for k in &e.kernels {
            kernel_text(k, "    ");
        }
        for g in &e.globals {
            global_text(g, "    ");
        }
    }
    for k in &c.kernels {
        kernel_text(k, "  ");
    }
    for g in &c.globals {
        global_text(g, "  ");
    }
    match (gpu, no_gpu) {
        (Some(sm), _) => out!("  sm_{sm} runs: {}", runs_text(c, sm)),
        (None, Some(why)) => out!("  which code a GPU runs: no GPU here ({}); --sm sm_NN answers for one", qt(why)),
        (None, None) => {}
    }
}

fn kernel_json(k: &KernelInfo) -> Value {
    let r = &k.resources;
    json!({
        "name": k.name,
        "demangled": demangle(&k.name),
        "param_bytes": k.param_bytes,
        "params": k.params.iter().map(|p| json!({"offset": p.offset, "size": p.size})).collect::<Vec<_>>(),
        "registers": r.registers,
        "shared_bytes": r.shared_bytes,
        "local_bytes": r.local_bytes,
        "stack_bytes": r.stack_bytes,
        "constant_bytes": r.constant_bytes,
        "max_threads": r.max_threads,
        "required_block": r.required_block,
    })
}

fn global_json(g: &GlobalInfo) -> Value {
    json!({"name": g.name, "demangled": demangle(&g.name), "bytes": g.bytes, "space": g.space.name()})
}

fn inspect_json(f: &Path, data: &[u8], c: &Contents, gpu: Option<u32>, no_gpu: Option<&str>) -> Value {
    let (accepted, reason, codes, ptx_isa) = match &c.verdict {
        Ok(i) => (
            true,
            None,
            i.codes.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
            i.ptx_isa.map(|(a, b)| format!("{a}.{b}")),
        ),
        Err(e) => (false, Some(e.to_string()), Vec::new(), None),
    };
    let entries: Vec<Value> = c
        .entries
        .iter()
        .map(|e| {
            json!({
                "offset": e.offset,
                "kind": match e.code { ArchCode::Sass { .. } => "sass", ArchCode::Ptx { .. } => "ptx", ArchCode::LtoIr { .. } => "ltoir" },
                "arch": e.code.to_string(),
                "compressed": e.compression != Compression::None,
                "compression": e.compression.name(),
                "header_bytes": e.header_bytes,
                "stored_bytes": e.stored_bytes,
                "code_bytes": e.code_bytes,
                "source_name": e.source_name,
                "relocatable": e.relocatable,
                "kernels": e.kernels.iter().map(kernel_json).collect::<Vec<_>>(),
                "globals": e.globals.iter().map(global_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let runs = gpu.map(|sm| {
        let codes = codes_of(c);
        let pick = c.verdict.as_ref().ok().and(contents::entry_for_gpu(&codes, sm));
        json!({
            "sm": sm,
            "entry": pick.filter(|_| c.kind == CodeKind::Fatbin),
            "code": pick.map(|i| codes[i].to_string()),
            "text": runs_text(c, sm),
        })
    });
    json!({
        "file": if files::is_std(f) { "-".to_string() } else { f.display().to_string() },
        "kind": kind_key(c.kind),
        "bytes": data.len(),
        "accepted": accepted,
        "reason": reason,
        "codes": codes,
        "ptx_isa": ptx_isa,
        "relocatable": contents::cubin_is_relocatable(data),
        "entries": entries,
        "kernels": c.kernels.iter().map(kernel_json).collect::<Vec<_>>(),
        "globals": c.globals.iter().map(global_json).collect::<Vec<_>>(),
        "gpu": runs,
        "no_gpu_reason": no_gpu,
    })
}
