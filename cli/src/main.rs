//! `cudyn`: what CUDA cudyn finds here, what an image holds, compile, link, and the cache.
//!
//! Exit status: 0 when all went well; 1 when something asked for is missing, refused or
//! failed (the message says what); 2 for a usage error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use cudyn::diagnose::{self, Component};
use cudyn::image::{self, ArchCode, CodeKind};
use cudyn::image_contents::{self, Contents, KernelLayout};
use serde_json::{json, Value};

#[derive(Parser)]
#[command(
    name = "cudyn",
    version,
    about = "Inspect CUDA device code and the CUDA libraries cudyn finds; compile and link through cudyn."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Which CUDA libraries cudyn finds (where, which version, or why not and what to install),
    /// the GPUs, and the compile cache. Exits 1 when something needed is missing.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// What counts as needed for the exit status (comma-separated): driver, runtime,
        /// nvrtc, nvjitlink, gpu, cache. Default: all but cache.
        #[arg(long, value_delimiter = ',', value_enum)]
        need: Vec<Need>,
    },
    /// What each file holds: its kind, every fatbin entry, the kernels and their parameter
    /// layouts, whether cudyn accepts it and why not, and which entry this GPU would run.
    /// Needs no GPU. Exits 1 when a file cannot be read or is refused.
    Inspect {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Say which entry a GPU of this architecture would run (e.g. sm_90 or 90) instead of
        /// asking the present GPU.
        #[arg(long, value_name = "sm_NN")]
        sm: Option<String>,
    },
    /// Compile CUDA C++ with NVRTC, through cudyn's cache; prints NVRTC's log.
    Compile {
        #[arg(value_name = "SRC.cu")]
        source: PathBuf,
        /// Where to write the code.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        #[arg(long, value_enum, default_value = "cubin")]
        target: Target,
        /// The architecture (sm_90, compute_90); default: the present GPU's, else sm_90.
        #[arg(long, value_name = "sm_NN")]
        arch: Option<String>,
        /// Further NVRTC options, after `--` (e.g. -- -std=c++17 -DN=4).
        #[arg(last = true, value_name = "NVRTC OPTIONS")]
        options: Vec<String>,
    },
    /// Link cubins, PTX, LTO-IR, fatbins, host objects (.o) and archives (.a) into one cubin
    /// with nvJitLink; prints its log.
    Link {
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// The architecture (sm_90); default: the present GPU's, else sm_90.
        #[arg(long, value_name = "sm_NN")]
        arch: Option<String>,
        /// Further nvJitLink options, after `--` (e.g. -- -lto -O3).
        #[arg(last = true, value_name = "NVJITLINK OPTIONS")]
        options: Vec<String>,
    },
    /// The compile cache: where it is, what it holds, emptying it, bundles to ship with a
    /// program (export, import, bundle).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

#[derive(Subcommand)]
enum CacheAction {
    /// Its folder, whether it is on (and why not), entries and bytes, and its read-only layers.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Remove every entry.
    Clear,
    /// Print its folder (exit 1 when the cache is off).
    Dir,
    /// Write every entry of the cache's folder to one integrity-checked bundle file.
    Export {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Import a bundle into the cache's folder: all checked first, nothing imported if any of
    /// it is damaged or forged.
    Import {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Compile sources for each architecture with NVRTC (no GPU needed) into a bundle, in a
    /// private cache: what a program that compiles them at run time, with the same options and
    /// names, finds as hits. Installed as `<program>.cudyn-bundle` beside the program, it is used
    /// with no setting.
    Bundle {
        /// The sources; `SRC=NAME` gives the program name the program compiles it under
        /// (default: the file's name).
        #[arg(required = true, value_name = "SRC[=NAME]")]
        sources: Vec<String>,
        /// Where to write the bundle.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// An architecture to compile for (sm_90 or 90), once per architecture; each is
        /// appended as `-arch=...` after the options, where cudyn appends it for a program
        /// that names none.
        #[arg(long = "arch", required = true, value_name = "sm_NN")]
        archs: Vec<String>,
        #[arg(long, value_enum, default_value = "cubin")]
        target: Target,
        /// Also write a Makefile-style list of every file the compiles read (for CMake's DEPFILE).
        #[arg(long, value_name = "FILE")]
        depfile: Option<PathBuf>,
        /// The NVRTC options, after `--`, exactly as the program passes them.
        #[arg(last = true, value_name = "NVRTC OPTIONS")]
        options: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Need {
    Driver,
    Runtime,
    Nvrtc,
    Nvjitlink,
    Gpu,
    Cache,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Target {
    Cubin,
    Ptx,
    Ltoir,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ok = match cli.command {
        Command::Doctor { json, need } => doctor(json, &need),
        Command::Inspect { files, json, sm } => match sm.as_deref().map(parse_sm).transpose() {
            Ok(sm) => inspect(&files, json, sm),
            Err(e) => fail(&e),
        },
        Command::Compile { source, output, target, arch, options } => compile(&source, &output, target, arch, options),
        Command::Link { inputs, output, arch, options } => link(&inputs, &output, arch, options),
        Command::Cache { action } => cache(action),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn fail(msg: &str) -> bool {
    eprintln!("cudyn: {msg}");
    false
}

fn print_json(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
}

/// "sm_90", "sm_90a", "compute_90" or "90" -> 90.
fn parse_sm(s: &str) -> Result<u32, String> {
    let digits = s.trim_start_matches("sm_").trim_start_matches("compute_").trim_end_matches(['a', 'f']);
    digits
        .parse::<u32>()
        .ok()
        .filter(|v| (10..1000).contains(v))
        .ok_or_else(|| format!("'{s}' is not an architecture: write it as sm_90 or 90"))
}

/// A file's bytes, or a message naming it ("no such file or directory", not "os error 2").
fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {}", path.display(), io_text(&e)))
}

fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_lowercase(),
                None => s,
            }
        }
    }
}

fn mib(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

// ---------------------------------------------------------------------------------------------
// doctor

fn doctor(as_json: bool, need: &[Need]) -> bool {
    let need: Vec<Need> = if need.is_empty() {
        vec![Need::Driver, Need::Runtime, Need::Nvrtc, Need::Nvjitlink, Need::Gpu]
    } else {
        need.to_vec()
    };
    let comps: Vec<_> = Component::ALL.iter().map(|&c| diagnose::component(c)).collect();
    let gpus = diagnose::gpus();
    let cache = diagnose::cache();
    let needed = |c: Component| {
        need.contains(&match c {
            Component::Driver => Need::Driver,
            Component::Runtime => Need::Runtime,
            Component::Nvrtc => Need::Nvrtc,
            Component::Nvjitlink => Need::Nvjitlink,
        })
    };
    let mut missing: Vec<&str> =
        comps.iter().filter(|r| !r.ok() && needed(r.component)).map(|r| r.component.key()).collect();
    let gpu_ok = matches!(&gpus, Ok(g) if !g.is_empty());
    if need.contains(&Need::Gpu) && !gpu_ok {
        missing.push("gpu");
    }
    if need.contains(&Need::Cache) && cache.off_because.is_some() {
        missing.push("cache");
    }

    if as_json {
        let components: Vec<Value> = comps
            .iter()
            .map(|r| {
                json!({
                    "name": r.component.key(),
                    "found": r.path.is_some(),
                    "usable": r.ok(),
                    "path": r.path,
                    "version": (r.version > 0).then(|| diagnose::version_text(r.version)),
                    "problem": r.problem,
                    "install": (!r.ok()).then(|| r.component.install_hint()),
                    "env_var": r.component.env_var(),
                })
            })
            .collect();
        let gpus = match &gpus {
            Ok(g) => json!({
                "count": g.len(),
                "devices": g.iter().map(|d| json!({"index": d.index, "name": d.name, "sm": d.sm, "arch": format!("sm_{}", d.sm)})).collect::<Vec<_>>(),
                "problem": Value::Null,
            }),
            Err(e) => json!({"count": 0, "devices": [], "problem": e}),
        };
        print_json(&json!({
            "cudyn_version": env!("CARGO_PKG_VERSION"),
            "components": components,
            "gpus": gpus,
            "cache": {
                "on": cache.off_because.is_none(),
                "dir": cache.dir.as_ref().map(|d| d.display().to_string()),
                "off_because": cache.off_because,
                "max_bytes": cache.max_bytes,
                "entries": cache.entries,
                "bytes": cache.bytes,
            },
            "missing": missing,
            "ok": missing.is_empty(),
        }));
        return missing.is_empty();
    }

    println!("cudyn {}", env!("CARGO_PKG_VERSION"));
    println!();
    for r in &comps {
        let c = r.component;
        match (&r.path, &r.problem) {
            (Some(p), None) => {
                println!("{:<10} ok       {} {}  ({})", c.key(), c.human(), diagnose::version_text(r.version), p)
            }
            (Some(p), Some(why)) => {
                println!("{:<10} PROBLEM  {} {} at {}", c.key(), c.human(), diagnose::version_text(r.version), p);
                println!("           {why}");
            }
            (None, why) => {
                println!("{:<10} MISSING  {} ({}): not found", c.key(), c.human(), c.purpose());
                if let Some(why) = why {
                    // The library's message ends with the same hint printed below.
                    let why =
                        why.strip_suffix(c.install_hint()).map_or(why.as_str(), |w| w.trim_end_matches([' ', '.']));
                    println!("           {why}");
                }
                println!("           to fix: {}", c.install_hint());
            }
        }
    }
    println!();
    match &gpus {
        Ok(g) if !g.is_empty() => {
            println!("GPUs       {}", g.len());
            for d in g {
                println!("           {}: {} (sm_{})", d.index, d.name, d.sm);
            }
        }
        Ok(_) => println!("GPUs       none: the driver reports no device"),
        Err(_) if comps[0].path.is_none() => println!("GPUs       none: no CUDA driver (see driver above)"),
        Err(e) => println!("GPUs       none: {e}"),
    }
    let dir = cache.dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "(none)".into());
    match &cache.off_because {
        None => println!(
            "cache      on, {dir}: {} entries, {} of {}",
            cache.entries,
            mib(cache.bytes),
            mib(cache.max_bytes)
        ),
        Some(why) => println!("cache      off: {why}"),
    }
    println!();
    if missing.is_empty() {
        println!("everything needed was found");
        true
    } else {
        println!("missing: {} (choose what counts with --need)", missing.join(", "));
        false
    }
}

// ---------------------------------------------------------------------------------------------
// inspect

fn inspect(files: &[PathBuf], as_json: bool, sm: Option<u32>) -> bool {
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
        let data = match read(f) {
            Ok(d) => d,
            Err(e) => {
                all_ok = false;
                if as_json {
                    reports.push(json!({"file": f.display().to_string(), "error": e}));
                } else {
                    eprintln!("cudyn: {e}");
                }
                continue;
            }
        };
        let c = image_contents::contents(&data);
        all_ok &= c.verdict.is_ok();
        if as_json {
            reports.push(inspect_json(f, &data, &c, gpu, no_gpu_reason.as_deref()));
        } else {
            if i > 0 {
                println!();
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

fn layout_text(k: &KernelLayout) -> String {
    let params: Vec<String> = k.params.iter().map(|p| format!("{}:{}", p.offset, p.size)).collect();
    format!(
        "{}: {} parameter{}, {} bytes (offset:size) [{}]",
        k.name,
        k.params.len(),
        if k.params.len() == 1 { "" } else { "s" },
        k.param_bytes,
        params.join(" ")
    )
}

fn layout_json(k: &KernelLayout) -> Value {
    json!({
        "name": k.name,
        "param_bytes": k.param_bytes,
        "params": k.params.iter().map(|p| json!({"offset": p.offset, "size": p.size})).collect::<Vec<_>>(),
    })
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
    match image_contents::entry_for_gpu(&codes, sm) {
        Some(i) if c.kind == CodeKind::Fatbin => format!("entry {i} ({})", codes[i]),
        Some(i) => format!("the {}", codes[i]),
        None => match c.kind {
            CodeKind::Source => "nothing yet: source needs compiling (cudyn compile)".into(),
            CodeKind::LtoIr => "nothing yet: LTO-IR needs linking (cudyn link)".into(),
            _ => format!("nothing: no code for sm_{sm} (holds {})", image::describe_codes(&codes)),
        },
    }
}

fn inspect_text(f: &Path, data: &[u8], c: &Contents, gpu: Option<u32>, no_gpu: Option<&str>) {
    println!("{}: {}, {} bytes", f.display(), c.kind, data.len());
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
            println!("  verdict: accepted; holds {holds}");
        }
        Err(e) => println!("  verdict: refused: {e}"),
    }
    for (i, e) in c.entries.iter().enumerate() {
        let size = match e.compression {
            image_contents::Compression::None => format!("{} bytes", e.code_bytes),
            m => format!("{} bytes, {}-compressed to {}", e.code_bytes, m.name(), e.stored_bytes),
        };
        println!("  entry {i}: {} {:<10} {size}", code_kind_text(&e.code), e.code.to_string());
        for k in &e.kernels {
            println!("    kernel {}", layout_text(k));
        }
    }
    for k in &c.kernels {
        println!("  kernel {}", layout_text(k));
    }
    match (gpu, no_gpu) {
        (Some(sm), _) => println!("  sm_{sm} runs: {}", runs_text(c, sm)),
        (None, Some(why)) => println!("  which code a GPU runs: no GPU here ({why}); --sm sm_NN answers for one"),
        (None, None) => {}
    }
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
                "compressed": e.compression != image_contents::Compression::None,
                "compression": e.compression.name(),
                "header_bytes": e.header_bytes,
                "stored_bytes": e.stored_bytes,
                "code_bytes": e.code_bytes,
                "source_name": e.source_name,
                "kernels": e.kernels.iter().map(layout_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let runs = gpu.map(|sm| {
        let codes = codes_of(c);
        let pick = c.verdict.as_ref().ok().and(image_contents::entry_for_gpu(&codes, sm));
        json!({
            "sm": sm,
            "entry": pick.filter(|_| c.kind == CodeKind::Fatbin),
            "code": pick.map(|i| codes[i].to_string()),
            "text": runs_text(c, sm),
        })
    });
    json!({
        "file": f.display().to_string(),
        "kind": kind_key(c.kind),
        "bytes": data.len(),
        "accepted": accepted,
        "reason": reason,
        "codes": codes,
        "ptx_isa": ptx_isa,
        "entries": entries,
        "kernels": c.kernels.iter().map(layout_json).collect::<Vec<_>>(),
        "gpu": runs,
        "no_gpu_reason": no_gpu,
    })
}

// ---------------------------------------------------------------------------------------------
// compile and link

fn write_out(out: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(out, bytes).map_err(|e| format!("cannot write {}: {}", out.display(), io_text(&e)))
}

fn print_log(tool: &str, log: &str) {
    let log = log.trim_end_matches(['\0', '\n']);
    if !log.is_empty() {
        eprintln!("{tool} log:\n{log}");
    }
}

fn compile(src: &Path, out: &Path, target: Target, arch: Option<String>, mut options: Vec<String>) -> bool {
    let bytes = match read(src) {
        Ok(b) => b,
        Err(e) => return fail(&e),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return fail(&format!("{} is not UTF-8 text", src.display()));
    };
    if let Some(a) = arch {
        let a = if a.chars().all(|c| c.is_ascii_digit()) { format!("sm_{a}") } else { a };
        options.push(format!("-arch={a}"));
    }
    let target = match target {
        Target::Cubin => CodeKind::Cubin,
        Target::Ptx => CodeKind::Ptx,
        Target::Ltoir => CodeKind::LtoIr,
    };
    let name = src.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "source.cu".into());
    let opts = cudyn::CompileOptions { options, target: Some(target), ..Default::default() };
    match cudyn::compile::compile(&text, &name, &opts) {
        Ok(c) => {
            print_log("NVRTC", &c.log);
            if let Err(e) = write_out(out, &c.code) {
                return fail(&e);
            }
            let how = if c.from_cache { "from the cache" } else { "compiled" };
            println!("{}: {} for sm_{}, {} bytes ({how})", out.display(), c.kind, c.sm, c.code.len());
            true
        }
        Err(f) => {
            print_log("NVRTC", &f.log);
            fail(&f.error.message)
        }
    }
}

fn link(inputs: &[PathBuf], out: &Path, arch: Option<String>, mut options: Vec<String>) -> bool {
    use cudyn::link::LinkInput;
    let mut datas = Vec::new();
    for p in inputs {
        match read(p) {
            Ok(d) => datas.push(d),
            Err(e) => return fail(&e),
        }
    }
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut list = Vec::new();
    for ((p, d), name) in inputs.iter().zip(&datas).zip(&names) {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let kind = match (image::code_kind_of(d), ext) {
            (_, "o") => CodeKind::Object,
            (_, "a") => CodeKind::Library,
            (k, _) => k,
        };
        if matches!(kind, CodeKind::Unknown | CodeKind::Source) {
            return fail(&format!("{name}: not a cubin, fatbin, PTX, LTO-IR, object (.o) or archive (.a)"));
        }
        list.push(LinkInput { kind, data: d, name });
    }
    if let Some(a) = arch {
        let a = if a.chars().all(|c| c.is_ascii_digit()) { format!("sm_{a}") } else { a };
        options.push(format!("-arch={a}"));
    }
    // LTO-IR links only with link-time optimisation on: ask for it rather than fail.
    if list.iter().any(|i| i.kind == CodeKind::LtoIr) && !options.iter().any(|o| o == "-lto") {
        options.push("-lto".into());
    }
    match cudyn::link::link(&list, &options) {
        Ok(l) => {
            print_log("nvJitLink", &l.log);
            if let Err(e) = write_out(out, &l.cubin) {
                return fail(&e);
            }
            println!("{}: cubin, {} bytes", out.display(), l.cubin.len());
            true
        }
        Err(f) => {
            print_log("nvJitLink", &f.log);
            fail(&f.error.message)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// cache

fn cache(action: CacheAction) -> bool {
    let status = cudyn::compile::cache_status();
    match action {
        CacheAction::Dir => match status {
            Ok(c) => {
                println!("{}", c.dir().display());
                true
            }
            Err(e) => fail(&e.message),
        },
        CacheAction::Clear => match status {
            Ok(c) => match c.clear() {
                Ok(n) => {
                    println!("removed {n} entr{} from {}", if n == 1 { "y" } else { "ies" }, c.dir().display());
                    true
                }
                Err(e) => fail(&format!("clearing {}: {}", c.dir().display(), io_text(&e))),
            },
            Err(e) => fail(&e.message),
        },
        CacheAction::Stats { json: as_json } => {
            let r = diagnose::cache();
            let (layers, refused, read_only) = match status {
                Ok(c) => (
                    c.layers()
                        .iter()
                        .map(|l| {
                            (
                                l.path().display().to_string(),
                                if l.is_bundle() { "bundle" } else { "folder" },
                                l.entries(),
                            )
                        })
                        .collect::<Vec<_>>(),
                    c.refused_layers(),
                    c.write_refused().map(str::to_owned),
                ),
                Err(_) => (Vec::new(), Vec::new(), None),
            };
            if as_json {
                print_json(&json!({
                    "on": r.off_because.is_none(),
                    "dir": r.dir.as_ref().map(|d| d.display().to_string()),
                    "off_because": r.off_because,
                    "max_bytes": r.max_bytes,
                    "entries": r.entries,
                    "bytes": r.bytes,
                    "writes_refused_because": read_only,
                    "layers": layers.iter().map(|(p, k, n)| json!({"path": p, "kind": k, "entries": n})).collect::<Vec<_>>(),
                    "refused_layers": refused,
                }));
            } else {
                match &r.off_because {
                    None => {
                        println!("dir      {}", r.dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default());
                        println!("entries  {}", r.entries);
                        println!("size     {} ({} bytes) of at most {}", mib(r.bytes), r.bytes, mib(r.max_bytes));
                    }
                    Some(why) => println!("off: {why}"),
                }
                if let Some(why) = &read_only {
                    println!("writes   none: {why}");
                }
                for (p, k, n) in &layers {
                    println!("layer    {p} ({k}, {n} entries, read-only)");
                }
                for why in &refused {
                    println!("refused  {why}");
                }
            }
            // Stats of a cache that is off are still an answer.
            true
        }
        CacheAction::Export { file } => match status {
            Ok(c) => match cudyn::compile::export_bundle(c, &file) {
                Ok(n) => {
                    println!(
                        "{}: {n} entr{} from {}",
                        file.display(),
                        if n == 1 { "y" } else { "ies" },
                        c.dir().display()
                    );
                    true
                }
                Err(e) => fail(&e.message),
            },
            Err(e) => fail(&e.message),
        },
        CacheAction::Import { file } => match status {
            Ok(c) => match cudyn::compile::import_bundle(c, &file) {
                Ok(r) => {
                    println!(
                        "{}: {} entr{} imported into {}, {} already there",
                        file.display(),
                        r.added,
                        if r.added == 1 { "y" } else { "ies" },
                        c.dir().display(),
                        r.present
                    );
                    true
                }
                Err(e) => fail(&e.message),
            },
            Err(e) => fail(&e.message),
        },
        CacheAction::Bundle { sources, output, archs, target, depfile, options } => {
            match make_bundle(&sources, &output, &archs, target, depfile.as_deref(), options) {
                Ok(msg) => {
                    println!("{msg}");
                    true
                }
                Err(e) => fail(&e),
            }
        }
    }
}

/// `cudyn cache bundle`: every source for every architecture through a private cache in a
/// fresh folder, then that cache exported. The compiles run with an empty working directory
/// (relative include folders made absolute first), as a program's usually is of header names.
fn make_bundle(
    sources: &[String],
    output: &Path,
    archs: &[String],
    target: Target,
    depfile: Option<&Path>,
    mut options: Vec<String>,
) -> Result<String, String> {
    let here = std::env::current_dir().map_err(|e| format!("the working directory: {}", io_text(&e)))?;
    let output = here.join(output);
    let mut inputs = Vec::new();
    for s in sources {
        let (path, name) = match s.split_once('=') {
            Some((p, n)) => (PathBuf::from(p), n.to_string()),
            None => {
                let p = PathBuf::from(s);
                let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "source.cu".into());
                (p, n)
            }
        };
        let text =
            String::from_utf8(read(&here.join(&path))?).map_err(|_| format!("{} is not UTF-8 text", path.display()))?;
        inputs.push((path, name, text));
    }
    absolute_include_options(&mut options, &here);
    let kind = match target {
        Target::Cubin => CodeKind::Cubin,
        Target::Ptx => CodeKind::Ptx,
        Target::Ltoir => CodeKind::LtoIr,
    };
    let work = private_folder()?;
    std::fs::create_dir(work.join("cwd")).map_err(|e| format!("{}: {}", work.display(), io_text(&e)))?;
    let result = (|| {
        let cache = cudyn::cache::Cache::at(work.join("cache"), cudyn::cache::ENTRY_MAX_BYTES * 4)
            .map_err(|e| format!("a private cache in {}: {}", work.display(), io_text(&e)))?;
        std::env::set_current_dir(work.join("cwd")).map_err(|e| io_text(&e))?;
        let mut read_files = std::collections::BTreeSet::new();
        for (path, name, text) in &inputs {
            for a in archs {
                let digits = a.trim_start_matches("sm_").trim_start_matches("compute_");
                let arch = if kind == CodeKind::Ptx { format!("compute_{digits}") } else { format!("sm_{digits}") };
                let mut o = options.clone();
                o.push(format!("-arch={arch}"));
                let opts = cudyn::CompileOptions { options: o, target: Some(kind), ..Default::default() };
                let c = cudyn::compile::compile_with(text, name, &opts, Some(&cache)).map_err(|f| {
                    print_log("NVRTC", &f.log);
                    format!("{} ({arch}): {}", path.display(), f.error.message)
                })?;
                print_log("NVRTC", &c.log);
                if depfile.is_some() {
                    read_files.extend(cudyn::compile::files_read(text, name, &opts));
                }
            }
            read_files.insert(here.join(path));
        }
        let n = cudyn::compile::export_bundle(&cache, &output).map_err(|e| e.message)?;
        if let Some(d) = depfile {
            let esc = |p: &Path| p.display().to_string().replace(' ', "\\ ");
            let mut text = format!("{}:", esc(&output));
            for f in &read_files {
                text.push_str(&format!(" \\\n  {}", esc(f)));
            }
            text.push('\n');
            std::fs::write(here.join(d), text).map_err(|e| format!("{}: {}", d.display(), io_text(&e)))?;
        }
        Ok(format!(
            "{}: {n} entr{} ({} source{} x {} architecture{})",
            output.display(),
            if n == 1 { "y" } else { "ies" },
            inputs.len(),
            if inputs.len() == 1 { "" } else { "s" },
            archs.len(),
            if archs.len() == 1 { "" } else { "s" }
        ))
    })();
    let _ = std::env::set_current_dir(&here);
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// A new folder of our own (mode 0700) under the temp folder.
fn private_folder() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    for attempt in 0..16u32 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!("cudyn-bundle-{}-{nanos:x}-{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {}", p.display(), io_text(&e))),
        }
    }
    Err("no private folder could be made under the temp folder".into())
}

/// Relative folders in include options (`-Idir`, `-I dir`, `--include-path=dir`) made absolute
/// against `here`.
fn absolute_include_options(options: &mut [String], here: &Path) {
    let mut i = 0;
    while i < options.len() {
        let o = options[i].clone();
        for f in ["--include-path=", "-I"] {
            if let Some(v) = o.strip_prefix(f) {
                if v.is_empty() {
                    if let Some(next) = options.get_mut(i + 1) {
                        if Path::new(next.as_str()).is_relative() {
                            *next = here.join(&*next).display().to_string();
                        }
                    }
                } else if Path::new(v).is_relative() {
                    options[i] = format!("{f}{}", here.join(v).display());
                }
                break;
            }
        }
        if o == "--include-path" {
            if let Some(next) = options.get_mut(i + 1) {
                if Path::new(next.as_str()).is_relative() {
                    *next = here.join(&*next).display().to_string();
                }
            }
        }
        i += 1;
    }
}
