//! Replays the fuzz corpus kept in the repository, tests/fuzz_corpus/<target>/, through the
//! same checks the fuzz targets in fuzz/ run (cudyn::fuzzing), so CI needs no fuzzer. Names:
//! `ok-*` real artifacts (nvcc output; cache entries and compile payloads in cudyn's own format),
//! which must also be accepted; `other-*` real artifacts a target passes by (image_prepare: PTX,
//! LTO-IR, source); `cut-*`/`bad-*` truncated or damaged ones; `crash-*` inputs that
//! once failed a check; `cov-*` fuzzer finds that reach code the others do not.
//!
//! Add a new crasher: minimise fuzz/artifacts/<target>/crash-* (`cargo +nightly fuzz tmin`) and
//! copy it into tests/fuzz_corpus/<target>/ as crash-<what>.

use std::path::{Path, PathBuf};

use cudyn::cache::decode_entry;
use cudyn::compile::decode_payload;
use cudyn::fuzzing::{CACHE_FUZZ_KEY, TARGETS};
use cudyn::image::{inspect, CodeKind};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files
}

/// Whether the target's parser accepts the bytes (for the `ok-*` files).
fn accepted(target: &str, data: &[u8]) -> bool {
    match target {
        "image_inspect" => inspect(data).is_ok(),
        "image_prepare" => cudyn::fuzzing::prepares_for_some_gpus(data),
        "cache_entry" => decode_entry(&CACHE_FUZZ_KEY, data).is_ok(),
        "compile_payload" => [CodeKind::Cubin, CodeKind::Ptx, CodeKind::LtoIr, CodeKind::Fatbin, CodeKind::Source]
            .into_iter()
            .any(|k| decode_payload(data, k).is_some()),
        other => panic!("unknown fuzz target {other}"),
    }
}

fn replay(target: &str) {
    let check = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("cudyn::fuzzing has no target {target}"));
    let files = corpus(target);
    let mut failures = Vec::new();
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Each input on its own, so one failure names its file and the rest still run.
        let outcome = std::panic::catch_unwind(|| {
            check(&data);
            // Prefixes too (truncation is the commonest corruption): all of them for small
            // inputs, 64 spread over the length (and the last 8) for larger ones.
            let n = data.len();
            let cuts: Vec<usize> =
                if n <= 512 { (0..n).collect() } else { (0..64).map(|i| i * n / 64).chain(n - 8..n).collect() };
            for cut in cuts {
                check(&data[..cut]);
            }
        });
        if outcome.is_err() {
            failures.push(format!("{name}: the check panicked"));
        } else if name.starts_with("ok-") && !accepted(target, &data) {
            failures.push(format!("{name}: refused, but ok-* inputs must be accepted"));
        } else if name.starts_with("bad-") && accepted(target, &data) {
            failures.push(format!("{name}: accepted, but bad-* inputs must be refused"));
        }
    }
    assert!(
        failures.is_empty(),
        "{target}: {} of {} inputs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn image_inspect_corpus() {
    replay("image_inspect");
}

#[test]
fn image_prepare_corpus() {
    replay("image_prepare");
}

#[test]
fn cache_entry_corpus() {
    replay("cache_entry");
}

#[test]
fn compile_payload_corpus() {
    replay("compile_payload");
}

/// Every target has a corpus folder, and every folder a target.
#[test]
fn corpus_folders_match_targets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus");
    let mut dirs: Vec<String> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    dirs.sort();
    let mut names: Vec<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(dirs, names);
}
