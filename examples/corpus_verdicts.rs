//! cudyn's CPU verdict over a real-world corpus (a folder filled by
//! `scripts/real_world_fatbins.py`): every image through `cudyn::image::inspect`, then per wheel
//! the containers, entries and bytes found and refused, and every refusal grouped by its reason
//! (the message with its numbers and names taken out), with counts and the smallest example.
//!
//!   usage: cargo run --release --example corpus_verdicts -- DIR [--threads N] [--out FILE] [--sm SM]
//!
//! With `--sm SM`, each image goes through what a load on a GPU of compute capability SM does
//! instead (`image::prepare`: the entries that GPU runs, decompressed and checked); an image
//! with nothing for that GPU counts as passed and is tallied apart.
//!
//! Writes one line per image to FILE (default DIR/.verdicts.tsv: image, verdict, class,
//! message), which `real_world_fatbins.py --subset` reads to take one image of every class. A
//! copy saved as DIR/.verdicts-baseline.tsv keeps the classes of an earlier build for it.
//! Exit status 1 if any image is refused.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cudyn::image::{inspect, ImageError};

/// What the manifest says of an image: the wheels it was found in (one line per place).
#[derive(Default)]
struct Found {
    wheels: Vec<String>,
    entries: usize,
}

fn read_manifest(dir: &Path) -> HashMap<String, Found> {
    let mut by_image: HashMap<String, Found> = HashMap::new();
    let Ok(text) = std::fs::read_to_string(dir.join(".manifest.tsv")) else { return by_image };
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let col = |name: &str| head.iter().position(|&h| h == name);
    let (Some(w), Some(i), Some(e)) = (col("wheel"), col("image"), col("entries")) else { return by_image };
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let (Some(wheel), Some(image)) = (f.get(w), f.get(i)) else { continue };
        let found = by_image.entry(image.to_string()).or_default();
        found.wheels.push(wheel.to_string());
        found.entries = f.get(e).and_then(|v| v.parse().ok()).unwrap_or(0);
    }
    by_image
}

/// A refusal's class: its message with every number, and what names a kernel or file, replaced.
fn class_of(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            // 0x..., or a run of digits (with what makes sm_90a one token).
            if c == '0' && chars.peek() == Some(&'x') {
                chars.next();
                while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                    chars.next();
                }
            } else {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
            out.push('N');
            // sm_90a and sm_100f are sm_N too.
            if out.ends_with("_N") && chars.peek().is_some_and(|&c| c == 'a' || c == 'f') {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    // Kernel names after `.text.` and quoted names vary image by image.
    let mut s = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find(".text.") {
        s.push_str(&rest[..at + 6]);
        rest = &rest[at + 6..];
        let end = rest.find([')', ' ', ',']).unwrap_or(rest.len());
        s.push('*');
        rest = &rest[end..];
    }
    s.push_str(rest);
    s
}

struct Verdict {
    image: String,
    bytes: u64,
    entries: Option<usize>,
    compressed: bool,
    error: Option<String>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let mut threads = 2usize;
    let mut out = None;
    let mut sm: Option<u32> = None;
    let no_binary = AtomicUsize::new(0);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sm" => sm = args.next().and_then(|v| v.parse().ok()),
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).unwrap_or(2).max(1),
            "--out" => out = args.next().map(PathBuf::from),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let Some(dir) = dir else {
        eprintln!("usage: corpus_verdicts DIR [--threads N] [--out FILE]");
        std::process::exit(2);
    };
    let out = out.unwrap_or_else(|| dir.join(".verdicts.tsv"));
    let manifest = read_manifest(&dir);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    files.sort();

    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(files.len()));
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = files.get(i) else { break };
                let data = std::fs::read(dir.join(name)).unwrap_or_default();
                let checked = match sm {
                    None => inspect(&data),
                    Some(sm) => match cudyn::image::prepare(&data, &[sm], false) {
                        Some(Ok(b)) => Ok(b.info),
                        Some(Err(cudyn::image::PlanError::NoBinary { codes })) => {
                            no_binary.fetch_add(1, Ordering::Relaxed);
                            Ok(cudyn::image::ImageInfo {
                                kind: cudyn::CodeKind::Fatbin,
                                len: data.len(),
                                codes,
                                compressed: false,
                                ptx_isa: None,
                            })
                        }
                        Some(Err(cudyn::image::PlanError::Image(e))) => Err(e),
                        None => inspect(&data),
                    },
                };
                let v = match checked {
                    Ok(info) => Verdict {
                        image: name.clone(),
                        bytes: data.len() as u64,
                        entries: Some(info.codes.len()),
                        compressed: info.compressed,
                        error: None,
                    },
                    Err(e) => Verdict {
                        image: name.clone(),
                        bytes: data.len() as u64,
                        entries: None,
                        compressed: false,
                        error: Some(match e {
                            ImageError::Malformed(m) => m,
                            other => other.to_string(),
                        }),
                    },
                };
                results.lock().unwrap().push(v);
            });
        }
    });
    let took = started.elapsed();
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.image.cmp(&b.image));

    // Per wheel (an image found in several wheels counts in each; occurrences are the
    // manifest's lines).
    #[derive(Default)]
    struct Row {
        images: usize,
        found: usize,
        entries: usize,
        bytes: u64,
        refused: usize,
        refused_found: usize,
    }
    let mut wheels: BTreeMap<String, Row> = BTreeMap::new();
    let mut classes: BTreeMap<String, (usize, u64, String, String)> = BTreeMap::new();
    let mut tsv = String::from("image\tverdict\tclass\tmessage\n");
    let (mut total, mut refused, mut entries, mut bytes, mut compressed) = (0, 0, 0, 0u64, 0);
    for v in &results {
        let found = manifest.get(&v.image);
        let mut ws: Vec<String> = found.map_or_else(|| vec!["(no manifest)".into()], |f| f.wheels.clone());
        let occurrences: HashMap<String, usize> = ws.iter().fold(HashMap::new(), |mut m, w| {
            *m.entry(w.clone()).or_default() += 1;
            m
        });
        ws.sort();
        ws.dedup();
        let n_entries = v.entries.or(found.map(|f| f.entries)).unwrap_or(0);
        total += 1;
        entries += n_entries;
        bytes += v.bytes;
        compressed += usize::from(v.compressed);
        for w in &ws {
            let r = wheels.entry(w.clone()).or_default();
            r.images += 1;
            r.found += occurrences[w];
            r.entries += n_entries;
            r.bytes += v.bytes;
            if v.error.is_some() {
                r.refused += 1;
                r.refused_found += occurrences[w];
            }
        }
        match &v.error {
            None => {
                let _ = writeln!(tsv, "{}\taccepted\taccepted\t", v.image);
            }
            Some(msg) => {
                refused += 1;
                let class = class_of(msg);
                let c = classes.entry(class.clone()).or_insert((0, u64::MAX, String::new(), String::new()));
                c.0 += 1;
                if v.bytes < c.1 {
                    (c.1, c.2, c.3) = (v.bytes, v.image.clone(), msg.clone());
                }
                let _ = writeln!(tsv, "{}\trefused\t{}\t{}", v.image, class, msg.replace(['\t', '\n'], " "));
            }
        }
    }
    if let Err(e) = std::fs::write(&out, tsv) {
        eprintln!("cannot write {}: {e}", out.display());
    }

    println!("| wheel | images | found (places) | entries | MiB | refused images | refused places |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut found_total = 0;
    let mut refused_found_total = 0;
    for (w, r) in &wheels {
        found_total += r.found;
        refused_found_total += r.refused_found;
        println!(
            "| {w} | {} | {} | {} | {:.1} | {} | {} |",
            r.images,
            r.found,
            r.entries,
            r.bytes as f64 / 1048576.0,
            r.refused,
            r.refused_found
        );
    }
    println!(
        "\n{total} distinct images ({compressed} with compressed entries), {entries} entries, {:.1} MiB, from {} wheels ({found_total} places); refused: {refused} images ({refused_found_total} places); checked in {took:.1?} on {threads} threads",
        bytes as f64 / 1048576.0,
        wheels.len()
    );
    if !classes.is_empty() {
        println!("\nrefusals by reason ({} classes):", classes.len());
        let mut by_count: Vec<_> = classes.into_iter().collect();
        by_count.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
        for (class, (n, size, image, msg)) in by_count {
            println!("  {n:6}  {class}\n          e.g. {image} ({size} bytes): {msg}");
        }
    }
    if let Some(sm) = sm {
        println!(
            "prepared for sm_{sm}: {} image(s) hold nothing that GPU runs (NO_BINARY_FOR_DEVICE)",
            no_binary.into_inner()
        );
    }
    println!("verdicts written to {}", out.display());
    std::process::exit(i32::from(refused > 0));
}
