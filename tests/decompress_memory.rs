//! What decompressing fatbin entries costs in memory and time, measured by a counting global
//! allocator: an LZ4 entry decodes into the caller's buffer with nothing else allocated; a
//! zstd entry with no more than ruzstd's own buffer of that entry's size (rounded up to a
//! power of two as it grows); bombs (a small stream declaring a gigabyte, entries that
//! together declare more than the per-image cap) are refused from their headers in
//! milliseconds, before anything is allocated for them.

use cudyn::fuzzing::{decompress_into, fatbin, fatbin_entry, Packing, FATBIN_FLAGS_PLAIN, FATBIN_KIND_ELF};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = NOW.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The tests measure one at a time (the counters are the process's).
static ONE: Mutex<()> = Mutex::new(());

/// Bytes allocated at the peak of `f`, above what was allocated before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = f();
    (r, PEAK.load(Relaxed) - base)
}

/// Compressible bytes a little like code.
fn data(n: usize) -> Vec<u8> {
    let mut x = 0x1234_5678_u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 64 < 40 {
                (i / 64 % 251) as u8
            } else {
                x as u8 & 0x0f
            }
        })
        .collect()
}

#[test]
fn lz4_decodes_into_the_callers_buffer_alone() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let n = 8 << 20;
    let d = data(n);
    let f = fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &d, Packing::Lz4)]);
    let stream = entry_stream(&f);
    let mut out = vec![0u8; n];
    let (r, peak) = peak_of(|| decompress_into(false, stream, &mut out));
    r.unwrap();
    assert!(out == d);
    eprintln!("LZ4, {n} bytes out: {peak} bytes allocated besides the output");
    assert!(peak < 4096, "{peak} bytes allocated to decode LZ4 into a given buffer");
}

#[test]
fn zstd_allocates_no_more_than_one_entry_buffer() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    for n in [1 << 20, (8 << 20) + 12345] {
        let d = data(n);
        let mut frame = Vec::with_capacity(zstd_safe::compress_bound(n));
        zstd_safe::compress(&mut frame, &d, 3).unwrap();
        let mut out = vec![0u8; n];
        let (r, peak) = peak_of(|| decompress_into(true, &frame, &mut out));
        r.unwrap();
        assert!(out == d);
        eprintln!("zstd, {n} bytes out: {peak} bytes allocated besides the output ({:.2}x)", peak as f64 / n as f64);
        // ruzstd's buffer grows by doubling to the next power of two: at most twice the
        // entry, and for a moment the old buffer besides the new, plus its tables.
        let bound = 3 * n.next_power_of_two() / 2 + (1 << 20);
        assert!(peak <= bound, "{peak} bytes allocated to decode a {n}-byte zstd entry (bound {bound})");
    }
}

/// The payload of the fatbin's first entry, up to its compressed size.
fn entry_stream(f: &[u8]) -> &[u8] {
    let at = 16;
    let hs = u32::from_le_bytes(f[at + 4..at + 8].try_into().unwrap()) as usize;
    let cs = u32::from_le_bytes(f[at + 16..at + 20].try_into().unwrap()) as usize;
    &f[at + hs..at + hs + cs]
}

/// A fatbin of `entries` copies of a small zstd entry, each declaring `declared` bytes.
fn bomb(entries: usize, declared: u64) -> Vec<u8> {
    let e = fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &data(38_000), Packing::Zstd);
    let mut e = e;
    e[56..64].copy_from_slice(&declared.to_le_bytes());
    fatbin(&vec![e; entries])
}

fn refused_fast(image: &[u8], what: &str) {
    let t = Instant::now();
    let (r, peak) = peak_of(|| cudyn::image::inspect(image));
    let took = t.elapsed();
    let e = r.expect_err("a bomb was accepted");
    eprintln!("{what}: refused in {took:?}, {peak} bytes allocated: {e}");
    assert!(took < Duration::from_millis(50), "{what}: took {took:?}");
    assert!(peak < 1 << 20, "{what}: {peak} bytes allocated");
}

#[test]
fn bombs_are_refused_from_their_headers() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    // A 38 KB stream declaring 1 GiB: over the per-entry cap.
    refused_fast(&bomb(1, 1 << 30), "one entry declaring 1 GiB");
    // Eight entries of 300 MiB each, checked on several threads: over the per-image cap.
    refused_fast(&bomb(8, 300 << 20), "8 entries of 300 MiB");
    // An LZ4 entry declaring more than 255 bytes per stream byte.
    let d = data(4000);
    let mut e = fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &d, Packing::Lz4);
    let cs = u32::from_le_bytes(e[16..20].try_into().unwrap()) as u64;
    e[56..64].copy_from_slice(&(cs * 255 + 1).to_le_bytes());
    refused_fast(&fatbin(&[e]), "LZ4 entry declaring 255x its stream + 1");
}

#[test]
fn a_stream_that_makes_more_than_it_declares_stops_at_once() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    // 8 MiB of content declared as 1 MiB: refused within a block of the declared size.
    let d = data(8 << 20);
    for (zstd, packing) in [(true, Packing::Zstd), (false, Packing::Lz4)] {
        let f = fatbin(&[fatbin_entry(FATBIN_KIND_ELF, 90, FATBIN_FLAGS_PLAIN, &d, packing)]);
        let stream = entry_stream(&f);
        let mut out = vec![0u8; 1 << 20];
        let t = Instant::now();
        let (r, peak) = peak_of(|| decompress_into(zstd, stream, &mut out));
        let took = t.elapsed();
        let e = r.unwrap_err();
        eprintln!("{packing:?} making 8 MiB, declared 1 MiB: refused in {took:?}, {peak} bytes allocated: {e}");
        assert!(peak < 4 << 20, "{peak} bytes allocated");
        assert!(took < Duration::from_millis(500), "took {took:?}");
    }
    // A zstd frame that does not record its content size: found out by decoding, a block
    // past the declared size.
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(false)).unwrap();
    let mut frame = Vec::with_capacity(zstd_safe::compress_bound(d.len()));
    cctx.compress2(&mut frame, &d).unwrap();
    let mut out = vec![0u8; 1 << 20];
    let t = Instant::now();
    let (r, peak) = peak_of(|| decompress_into(true, &frame, &mut out));
    let took = t.elapsed();
    let e = r.unwrap_err();
    eprintln!("zstd frame without a content size making 8 MiB, declared 1 MiB: refused in {took:?}, {peak} bytes allocated: {e}");
    assert!(e.contains("more than the declared"), "{e}");
    assert!(peak < 4 << 20, "{peak} bytes allocated");
}

/// With libzstd (feature `c-decoders`), a zstd entry decodes into its own buffer, which
/// libzstd keeps as its window: a 64 MiB entry whose frame declares a 64 MiB window (as a
/// toolkit's single-segment frames do) costs its 64 MiB and a constant, not twice that.
/// libzstd allocates with malloc, which the counting allocator does not see, so this is
/// measured as the peak resident size of a process that does nothing else
/// ([`libzstd_peak_in_this_process`], run as a child).
#[cfg(feature = "c-decoders")]
#[test]
fn libzstd_holds_no_window_besides_the_entry() {
    let exe = std::env::current_exe().unwrap();
    let run = std::process::Command::new(exe)
        .args(["--exact", "libzstd_peak_in_this_process", "--ignored", "--nocapture", "--test-threads=1"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    eprintln!("{text}");
    assert!(run.status.success(), "the measuring process failed");
    assert!(text.contains("1 passed"), "the measuring process ran no test");
}

#[cfg(feature = "c-decoders")]
#[test]
#[ignore = "run in a process of its own by libzstd_holds_no_window_besides_the_entry"]
fn libzstd_peak_in_this_process() {
    fn status_kib(key: &str) -> usize {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = s.lines().find(|l| l.starts_with(key)).unwrap();
        line[key.len()..].trim().trim_end_matches("kB").trim().parse().unwrap()
    }
    let n = 64 << 20;
    let d = data(n);
    let sum = d.iter().fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(zstd_safe::CParameter::CompressionLevel(1)).unwrap();
    cctx.set_parameter(zstd_safe::CParameter::WindowLog(27)).unwrap();
    let mut frame = Vec::with_capacity(zstd_safe::compress_bound(n));
    cctx.compress2(&mut frame, &d).unwrap();
    drop((d, cctx));
    // Single segment: the frame's window is its content, 64 MiB.
    assert!(frame[4] & 0x20 != 0, "the frame is not single-segment");
    let mut out = vec![1u8; n];
    // The peak so far (the sample and its frame) is reset where the kernel allows it; it is
    // about the resident size now (the frame and the output) in any case.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmRSS:");
    let t = Instant::now();
    decompress_into(true, &frame, &mut out).unwrap();
    let took = t.elapsed();
    let extra = status_kib("VmHWM:").saturating_sub(before);
    assert_eq!(out.iter().fold(0u64, |h, &b| h.wrapping_mul(31).wrapping_add(u64::from(b))), sum);
    eprintln!("libzstd, a {n}-byte entry with a {n}-byte window: decoded in {took:?}, peak {extra} KiB resident besides the entry and its frame");
    assert!(extra < 8 << 10, "decoding a 64 MiB entry took {extra} KiB besides it");
}
