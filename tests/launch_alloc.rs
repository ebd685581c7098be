//! The launch path allocates nothing: a counting global allocator watches everything a launch
//! decides before calling CUDA (config check, parameter-layout lookup, argument check, launch
//! attributes, named and listed), for a kernel whose layout is cached, with and without size
//! checks.
//!
//! Only the allocations of the thread under test are counted: the test harness's own threads
//! (libtest's main thread prints and collects results while tests run) allocate when they
//! please, and counting them made this test fail in about half of all runs.

use cudyn::launch::{validate, Dim3, LaunchAttribute, LaunchConfig, MemSyncDomain};
use cudyn::{Kernel, Param, Status};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates, so the
    // allocator may consult it.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn note_alloc() {
    if COUNTED.with(Cell::get) {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note_alloc();
        // SAFETY: forwarded.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note_alloc();
        // SAFETY: forwarded.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn launch_preparation_does_not_allocate() {
    // SAFETY: never handed to CUDA: `validate` only checks against the primed layout below.
    let k = unsafe { Kernel::from_raw(0x1000 as *mut _) }.unwrap();
    // SAFETY: the kernel is never launched (validate only checks); this is the layout checked.
    unsafe { k.prime_params(0x2000 as *mut _, &[Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]) };
    let mut p: u64 = 0;
    let mut n: i32 = 0;
    let args = [&mut p as *mut u64 as *mut c_void, &mut n as *mut i32 as *mut c_void];
    let sizes = [8usize, 4];
    let mut cfg = LaunchConfig { grid: Dim3::x(100), block: Dim3::x(256), ..Default::default() };
    cfg.cluster = Dim3::new(2, 1, 1);
    cfg.priority = 1;
    // And a config with a list of attributes, checked and copied on the stack.
    let mut list = [LaunchAttribute::mem_sync_domain(MemSyncDomain::Remote), LaunchAttribute::cooperative(true)];
    // SAFETY: `list` outlives every use of the config.
    let mut listed = unsafe { cfg.with_attributes(&mut list) }.unwrap();
    // Warm up (the layout table itself was allocated when primed).
    validate(k, &cfg, &args, Some(&sizes)).unwrap();
    validate(k, &listed, &args, Some(&sizes)).unwrap();
    // The counter itself is live: an allocation on this thread is seen.
    COUNTED.with(|c| c.set(true));
    let probe = ALLOCS.load(Ordering::SeqCst);
    drop(std::hint::black_box(Box::new(1u64)));
    assert_eq!(ALLOCS.load(Ordering::SeqCst), probe + 1, "the counting allocator missed an allocation");
    let before = ALLOCS.load(Ordering::SeqCst);
    for i in 0..10_000 {
        cfg.api = (i % 2) as u32;
        listed.api = cfg.api;
        validate(k, &cfg, &args, None).unwrap();
        validate(k, &cfg, &args, Some(&sizes)).unwrap();
        validate(k, &listed, &args, Some(&sizes)).unwrap();
    }
    let after = ALLOCS.load(Ordering::SeqCst);
    COUNTED.with(|c| c.set(false));
    assert_eq!(after - before, 0, "30,000 launch preparations allocated {} times", after - before);

    // And the checks are live: a wrong size is refused (this path may allocate its message).
    let bad = [8usize, 8];
    assert_eq!(validate(k, &cfg, &args, Some(&bad)).unwrap_err().status, Status::ArgumentMismatch);
    assert_eq!(validate(k, &cfg, &args[..1], None).unwrap_err().status, Status::ArgumentMismatch);
}
