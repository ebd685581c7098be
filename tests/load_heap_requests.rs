//! What building an image for CUDA asks of the heap: no request over 1,032 bytes for the images
//! cudyn keeps in blocks of its own (src/image/buf.rs). glibc serves a request that size or
//! smaller from its per-thread cache; a larger one first sorts every chunk freed since the last
//! one, and between two loads a driver frees a great deal: a cost that grows with what the
//! driver freed (about 8 µs for that one request on the CPU machine with 2,000 chunks churned;
//! 0.37 µs cold on the H200's host, 0.10 µs from a block: docs/performance.md, the seventh and
//! eighth sessions of 2026-12-06). Real nvcc output: a fatbin of one sm_90 cubin, a fatbin of nine
//! entries (the walk's list of them), the same compressed (zstd, decoded straight into the
//! built image), and a bare cubin; each prepared for an sm_90 GPU as a load prepares it.
//!
//! Counted on the thread under test only (the harness's threads allocate as they please), and
//! only what goes through Rust's allocator: libzstd's context, made once and then kept, is C's.
//! CPU only; needs the project's nvcc (scripts/bootstrap.sh), which scripts/test.sh and .ci
//! provide: a missing nvcc fails the test.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Const-initialised and without a destructor: reading them never allocates, so the
    // allocator may consult them.
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static LARGE: Cell<usize> = const { Cell::new(0) };
}

/// glibc's per-thread cache serves requests up to this many bytes.
const CACHED: usize = 1032;

fn note(size: usize) {
    if WATCHED.with(Cell::get) {
        LARGEST.with(|l| l.set(l.get().max(size)));
        if size > CACHED {
            LARGE.with(|l| l.set(l.get() + 1));
        }
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: forwarded.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n);
        // SAFETY: forwarded.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// (requests over 1,032 bytes, the largest request) while `f` runs on this thread.
fn requests<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    LARGE.with(|l| l.set(0));
    LARGEST.with(|l| l.set(0));
    WATCHED.with(|w| w.set(true));
    let r = f();
    WATCHED.with(|w| w.set(false));
    (LARGE.with(Cell::get), LARGEST.with(Cell::get), r)
}

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void scale(float *y, float s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] *= s;
}
"#;

#[test]
fn preparing_an_image_asks_the_heap_for_no_large_block() {
    let dir = common::TempDir::new("heap-requests");
    let src = dir.join("k.cu");
    let nine: Vec<String> = [75, 80, 86, 89, 90, 100, 103, 120]
        .iter()
        .map(|sm| format!("-gencode=arch=compute_{sm},code=sm_{sm}"))
        .chain(["-gencode=arch=compute_90,code=compute_90".to_string()])
        .collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    let images = [
        ("one sm_90 cubin", [&["-fatbin", "-arch=sm_90", "--compress-mode=none"][..]].concat()),
        ("nine entries", [&["-fatbin", "--compress-mode=none"][..], &nine].concat()),
        ("nine entries, zstd", [&["-fatbin", "--compress-mode=default"][..], &nine].concat()),
        ("a bare cubin", vec!["-cubin", "-arch=sm_90"]),
    ];
    for (what, args) in images {
        let image = common::nvcc(&src, SOURCE, &dir.join("k.out"), &args);
        // Once first: what is made once per process (libzstd's context, the blocks' first run)
        // is not the matter here.
        let built = cudyn::image::prepare(&image, &[90], false).expect("an image").expect("prepared");
        assert!(built.image.len() > CACHED, "{what}: {} bytes built: too small to tell", built.image.len());
        let (large, largest, again) = requests(|| cudyn::image::prepare(&image, &[90], false));
        let again = again.expect("an image").expect("prepared");
        assert_eq!(again.image, built.image, "{what}: prepared differently the second time");
        if cfg!(unix) {
            assert_eq!(large, 0, "{what}: {large} heap requests over {CACHED} bytes (the largest {largest})");
        }
    }
}
