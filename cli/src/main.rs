//! `cudyn`: what CUDA cudyn finds here, what an image holds, compile, link, the cache, and the
//! command's own shell completions and manual page.
//!
//! Exit status: 0 when all went well (also when the reader of its output closed the pipe
//! early: `cudyn inspect FILE | head`); 1 when something asked for is missing, refused or
//! failed (the message says what); 2 for a usage error.

mod files;
mod inspect;
mod output;
mod tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use cudyn::diagnose::{self, Component};
use serde_json::{json, Value};

use cudyn::CodeKind;
use files::read;
use output::{out, q, qo, qp, qt};
use tools::print_log;

#[derive(Parser)]
#[command(
    name = "cudyn",
    version,
    about = "Inspect CUDA device code and the CUDA libraries cudyn finds; compile and link through cudyn.",
    long_about = "Inspect CUDA device code and the CUDA libraries cudyn finds; compile and link through cudyn.\n\n\
        Exit status: 0 when all went well, 1 when something asked for is missing, refused or failed \
        (the message says what), 2 for a usage error. A FILE, INPUT or OUT of `-` is standard input \
        or output."
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
        #[arg(long, value_delimiter = ',', value_enum, value_name = "WHAT")]
        need: Vec<Need>,
    },
    /// What each file holds: its kind, every fatbin entry, the kernels (parameter layout,
    /// registers, shared, local and constant memory, launch bounds, C++ names), the globals,
    /// whether cudyn accepts it and why not, and which entry this GPU would run. Needs no GPU.
    /// Exits 1 when a file cannot be read or is refused.
    Inspect {
        /// Cubin, fatbin, PTX, LTO-IR or CUDA source files to describe; `-` reads standard input.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print JSON instead of text (one object per file, in an array).
        #[arg(long)]
        json: bool,
        /// Say which entry a GPU of this architecture would run (e.g. sm_90 or 90) instead of
        /// asking the present GPU.
        #[arg(long, value_name = "sm_NN", value_parser = parse_sm)]
        sm: Option<u32>,
    },
    /// Compile CUDA C++ with NVRTC, through cudyn's cache; prints NVRTC's log on standard
    /// error, writes the code, and says what it holds.
    Compile {
        /// The CUDA C++ source file; `-` reads standard input.
        #[arg(value_name = "SRC.cu")]
        source: PathBuf,
        /// Where to write the code; `-` writes it to standard output (the report then goes to
        /// standard error).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// What to compile to.
        #[arg(long, value_enum, default_value = "cubin")]
        target: Target,
        /// The architecture (sm_90, 90, compute_90, sm_90a); default: the present GPU's, else
        /// sm_90. Wins over an -arch among the NVRTC options.
        #[arg(long, value_name = "sm_NN", value_parser = parse_arch)]
        arch: Option<String>,
        /// Print JSON instead of text: the output, what it holds, whether it came from the
        /// cache, the log (also on failure).
        #[arg(long)]
        json: bool,
        /// Further NVRTC options, after `--` (e.g. -- -std=c++17 -DN=4).
        #[arg(last = true, value_name = "NVRTC OPTIONS")]
        options: Vec<String>,
    },
    /// Link relocatable cubins, PTX, LTO-IR, fatbins, host objects (.o) and archives (.a)
    /// with relocatable device code into one cubin with nvJitLink; prints its log on standard
    /// error. Inputs nvJitLink would drop (executable cubins, objects without -rdc/-dc device
    /// code) are refused by name, and so is a result without a kernel.
    Link {
        /// The inputs; their kind is read from their bytes (objects and archives from their
        /// .o / .a name); `-` reads one from standard input.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// Where to write the cubin; `-` writes it to standard output.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// The architecture (sm_90 or 90); default: the present GPU's, else sm_90.
        #[arg(long, value_name = "sm_NN", value_parser = parse_arch)]
        arch: Option<String>,
        /// Accept a result with no kernel (a library of device globals linked on purpose).
        #[arg(long)]
        allow_no_kernels: bool,
        /// Print JSON instead of text: the output, its kernels, the inputs, the log (also on
        /// failure).
        #[arg(long)]
        json: bool,
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
    /// Print a completion script for a shell, made from this command's own definition (e.g.
    /// `cudyn completions bash > ~/.local/share/bash-completion/completions/cudyn`).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), made from this command's own definition (e.g.
    /// `cudyn man | man -l -`).
    Man,
}

#[derive(Subcommand)]
enum CacheAction {
    /// Its folder, whether it is on (and why not), entries and bytes, and its read-only layers.
    Stats {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove every entry.
    Clear,
    /// Print its folder (exit 1 when the cache is off).
    Dir,
    /// Write every entry of the cache's folder to one integrity-checked bundle file.
    Export {
        /// The bundle to write (replaced whole, or left as it was).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Import a bundle into the cache's folder: all checked first, nothing imported if any of
    /// it is damaged or forged.
    Import {
        /// The bundle to read (made by `cudyn cache export` or `cudyn cache bundle`).
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
        /// What each compile makes, as the program asks for it (cubin, ptx or ltoir).
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
    /// SASS for one architecture (the default).
    Cubin,
    /// PTX, which the driver compiles for the GPU it runs on.
    Ptx,
    /// LTO-IR, for `cudyn link` with link-time optimisation.
    Ltoir,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ok = match cli.command {
        Command::Doctor { json, need } => doctor(json, &need),
        Command::Inspect { files, json, sm } => {
            if files.iter().filter(|f| files::is_std(f)).count() > 1 {
                usage("standard input (`-`) can be read only once");
            }
            inspect::inspect(&files, json, sm)
        }
        Command::Compile { source, output, target, arch, json, options } => {
            if json && files::is_std(&output) {
                usage("--json and `-o -` both want standard output: write the code to a file");
            }
            tools::compile(&source, &output, target, arch, options, json)
        }
        Command::Link { inputs, output, arch, allow_no_kernels, json, options } => {
            if json && files::is_std(&output) {
                usage("--json and `-o -` both want standard output: write the cubin to a file");
            }
            if inputs.iter().filter(|f| files::is_std(f)).count() > 1 {
                usage("standard input (`-`) can be read only once");
            }
            tools::link(tools::LinkRequest { inputs, output, arch, allow_no_kernels, options, json })
        }
        Command::Cache { action } => cache(action),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "cudyn", &mut buf);
            output::bytes(&buf);
            true
        }
        Command::Man => {
            let mut buf = Vec::new();
            match clap_mangen::Man::new(Cli::command()).render(&mut buf) {
                Ok(()) => {
                    output::bytes(&buf);
                    true
                }
                Err(e) => fail(&format!("rendering the manual page: {}", io_text(&e))),
            }
        }
    };
    output::flush();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A usage error clap cannot see (two arguments that clash by value): said as clap says its
/// own, with exit status 2.
fn usage(msg: &str) -> ! {
    Cli::command().error(clap::error::ErrorKind::ArgumentConflict, msg).exit()
}

fn fail(msg: &str) -> bool {
    output::err!("cudyn: {}", output::qt(msg));
    false
}

/// JSON on standard output. serde_json escapes the C0 controls only; DEL, the C1 controls and
/// the bidirectional overrides a name may carry are written as `\uXXXX` escapes too (the same
/// string to a JSON reader, nothing a terminal acts on).
fn print_json(v: &Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            let mut safe = String::with_capacity(s.len());
            for c in s.chars() {
                // Newlines are the pretty printer's own; in strings serde_json wrote them as \n.
                if c != '\n' && cudyn::error::needs_quoting(c) {
                    safe.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    safe.push(c);
                }
            }
            out!("{safe}")
        }
        Err(e) => output::err!("cudyn: cannot print JSON: {e}"),
    }
}

/// "sm_90", "sm_90a", "compute_90" or "90" -> 90.
fn parse_sm(s: &str) -> Result<u32, String> {
    let digits = s.trim_start_matches("sm_").trim_start_matches("compute_").trim_end_matches(['a', 'f']);
    digits
        .parse::<u32>()
        .ok()
        .filter(|v| (10..1000).contains(v))
        .ok_or_else(|| format!("'{}' is not an architecture: write it as sm_90 or 90", q(s)))
}

/// An architecture as NVRTC and nvJitLink take it: sm_NN, compute_NN, lto_NN (with an a or f
/// suffix), or the number alone.
fn parse_arch(s: &str) -> Result<String, String> {
    let rest = ["sm_", "compute_", "lto_"].iter().find_map(|p| s.strip_prefix(p)).unwrap_or(s);
    let digits = rest.strip_suffix(['a', 'f']).unwrap_or(rest);
    let plain = rest.len() == s.len();
    if digits.len() >= 2 && digits.bytes().all(|b| b.is_ascii_digit()) && !(plain && digits.len() != rest.len()) {
        Ok(s.to_string())
    } else {
        Err(format!("'{}' is not an architecture: write it as sm_90, compute_90, sm_90a or 90", q(s)))
    }
}

/// The C++ name behind a mangled one (`_Z...`), when it has one and it demangles; None for
/// an `extern "C"` name. The library's own demangling (`cudyn::names`), so the name shown is
/// one `cudyn_library_find_kernel` / `lib.kernel("...")` accepts as it is written. Names
/// longer than a real toolkit writes are left as they are.
fn demangle(name: &str) -> Option<String> {
    if name.len() > 4096 {
        return None;
    }
    cudyn::names::demangle(name).filter(|d| d != name)
}

/// "no such file or directory", not "No such file or directory (os error 2)".
fn io_text(e: &std::io::Error) -> String {
    cudyn::error::io_text(e)
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

    out!("cudyn {}", env!("CARGO_PKG_VERSION"));
    out!();
    for r in &comps {
        let c = r.component;
        match (&r.path, &r.problem) {
            (Some(p), None) => {
                out!("{:<10} ok       {} {}  ({})", c.key(), c.human(), diagnose::version_text(r.version), q(p))
            }
            (Some(p), Some(why)) => {
                out!("{:<10} PROBLEM  {} {} at {}", c.key(), c.human(), diagnose::version_text(r.version), q(p));
                out!("           {}", q(why));
            }
            (None, why) => {
                out!("{:<10} MISSING  {} ({}): not found", c.key(), c.human(), c.purpose());
                if let Some(why) = why {
                    // The library's message ends with the same hint printed below.
                    let why =
                        why.strip_suffix(c.install_hint()).map_or(why.as_str(), |w| w.trim_end_matches([' ', '.']));
                    out!("           {}", q(why));
                }
                out!("           to fix: {}", c.install_hint());
            }
        }
    }
    out!();
    match &gpus {
        Ok(g) if !g.is_empty() => {
            out!("GPUs       {}", g.len());
            for d in g {
                out!("           {}: {} (sm_{})", d.index, q(&d.name), d.sm);
            }
        }
        Ok(_) => out!("GPUs       none: the driver reports no device"),
        Err(_) if comps[0].path.is_none() => out!("GPUs       none: no CUDA driver (see driver above)"),
        Err(e) => out!("GPUs       none: {}", q(e)),
    }
    let dir = cache.dir.as_ref().map(|d| q(&d.to_string_lossy()).into_owned()).unwrap_or_else(|| "(none)".into());
    match &cache.off_because {
        None => {
            out!("cache      on, {dir}: {} entries, {} of {}", cache.entries, mib(cache.bytes), mib(cache.max_bytes))
        }
        Some(why) => out!("cache      off: {}", q(why)),
    }
    out!();
    if missing.is_empty() {
        out!("everything needed was found");
        true
    } else {
        out!("missing: {} (choose what counts with --need)", missing.join(", "));
        false
    }
}

// ---------------------------------------------------------------------------------------------
// cache

fn cache(action: CacheAction) -> bool {
    let status = cudyn::compile::cache_status();
    match action {
        CacheAction::Dir => match status {
            Ok(c) => {
                out!("{}", qp(c.dir()));
                true
            }
            Err(e) => fail(&e.message),
        },
        CacheAction::Clear => match status {
            Ok(c) => match c.clear() {
                Ok(n) => {
                    out!("removed {n} entr{} from {}", if n == 1 { "y" } else { "ies" }, qp(c.dir()));
                    true
                }
                Err(e) => fail(&format!("clearing {}: {}", qp(c.dir()), io_text(&e))),
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
                        out!("dir      {}", r.dir.as_deref().map(qp).unwrap_or_default());
                        out!("entries  {}", r.entries);
                        out!("size     {} ({} bytes) of at most {}", mib(r.bytes), r.bytes, mib(r.max_bytes));
                    }
                    Some(why) => out!("off: {}", qt(why)),
                }
                if let Some(why) = &read_only {
                    out!("writes   none: {}", qt(why));
                }
                for (p, k, n) in &layers {
                    out!("layer    {} ({k}, {n} entries, read-only)", q(p));
                }
                for why in &refused {
                    out!("refused  {}", qt(why));
                }
            }
            // Stats of a cache that is off are still an answer.
            true
        }
        CacheAction::Export { file } => match status {
            Ok(c) => match cudyn::compile::export_bundle(c, &file) {
                Ok(n) => {
                    out!("{}: {n} entr{} from {}", qo(&file), if n == 1 { "y" } else { "ies" }, qp(c.dir()));
                    true
                }
                Err(e) => fail(&e.message),
            },
            Err(e) => fail(&e.message),
        },
        CacheAction::Import { file } => match status {
            Ok(c) => match cudyn::compile::import_bundle(c, &file) {
                Ok(r) => {
                    out!(
                        "{}: {} entr{} imported into {}, {} already there",
                        qp(&file),
                        r.added,
                        if r.added == 1 { "y" } else { "ies" },
                        qp(c.dir()),
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
                    out!("{}", qt(&msg));
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
            files::write(&here.join(d), text.as_bytes())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every positional argument and option has help text (the man page and completions are
    /// made from it), in every subcommand.
    #[test]
    fn every_argument_has_help() {
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in c.get_subcommands() {
                if s.get_about().is_none() {
                    missing.push(format!("{path} {} (the subcommand)", s.get_name()));
                }
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let c = Cli::command();
        c.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&c, "cudyn", &mut missing);
        assert!(missing.is_empty(), "without help text: {missing:?}");
    }

    #[test]
    fn architectures_are_checked_as_usage() {
        for ok in ["sm_90", "90", "compute_80", "sm_90a", "sm_100f", "lto_90", "120"] {
            assert_eq!(parse_arch(ok).as_deref(), Ok(ok));
        }
        for bad in ["abc", "sm_", "9", "sm_9x", "90a", "compute_", "-arch=sm_90", "sm_90 ", ""] {
            assert!(parse_arch(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_sm("sm_90"), Ok(90));
        assert_eq!(parse_sm("compute_100a"), Ok(100));
        assert!(parse_sm("abc").is_err());
        assert!(parse_sm("\u{1b}[2J").unwrap_err().contains("\\x1b[2J"), "the echo is quoted");
    }

    #[test]
    fn mangled_names_demangle_and_others_stay() {
        assert_eq!(demangle("_Z4tmplIfEvPT_").as_deref(), Some("tmpl<float>(float*)"));
        assert_eq!(demangle("vec_add"), None);
        assert_eq!(demangle("_Znot a name"), None);
        assert_eq!(demangle(&format!("_Z{}", "1a".repeat(5000))), None);
    }
}
