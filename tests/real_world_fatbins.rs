//! No false refusals: every fatbin (or cubin) in `$CUDYN_REAL_FATBINS` (a folder filled by
//! `scripts/real_world_fatbins.py` from NVIDIA's wheels; see docs/hardening.md) must pass
//! validation. NVIDIA's binaries are not redistributed here, so without the variable the test
//! says so and checks nothing. For the whole corpus, with every refusal grouped by reason and
//! counts per wheel, run `cargo run --release --example corpus_verdicts -- DIR`.

use cudyn::image::{inspect, CodeKind};

#[test]
fn every_real_world_fatbin_passes() {
    let Some(dir) = std::env::var_os("CUDYN_REAL_FATBINS") else {
        eprintln!("CUDYN_REAL_FATBINS not set: no real-world fatbins to check");
        return;
    };
    // The images: regular files not starting with '.' (the manifest, verdicts and the campaign
    // folder `scripts/real_world_fatbins.py` writes beside them start with one).
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no files in {dir:?}");
    let (mut entries, mut compressed, mut refused) = (0, 0, Vec::new());
    let (mut bytes, mut took) = (0, std::time::Duration::ZERO);
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let t = std::time::Instant::now();
        let r = inspect(&data);
        took += t.elapsed();
        bytes += data.len();
        match r {
            Ok(info) => {
                assert!(matches!(info.kind, CodeKind::Fatbin | CodeKind::Cubin), "{}: {}", f.display(), info.kind);
                assert_eq!(info.len, data.len(), "{}", f.display());
                entries += info.codes.len();
                compressed += usize::from(info.compressed);
            }
            Err(e) => refused.push(format!("{}: {e}", f.display())),
        }
    }
    eprintln!(
        "{} fatbins ({compressed} with compressed entries), {entries} entries, {bytes} bytes validated in {took:?}",
        files.len()
    );
    assert!(refused.is_empty(), "{} of {} refused:\n{}", refused.len(), files.len(), refused.join("\n"));
}
