//! No false refusals: every fatbin (or cubin) in `$CUDYN_REAL_FATBINS` (a folder; see docs/hardening.md
//! for how to fill it from the `.nv_fatbin` sections of NVIDIA's libraries) must pass
//! validation. NVIDIA's binaries are not redistributed here, so without the variable the test
//! says so and checks nothing.

use cudyn::image::{inspect, CodeKind};

#[test]
fn every_real_world_fatbin_passes() {
    let Some(dir) = std::env::var_os("CUDYN_REAL_FATBINS") else {
        eprintln!("CUDYN_REAL_FATBINS not set: no real-world fatbins to check");
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
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
