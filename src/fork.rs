//! fork(): a child never inherits a lock of cudyn's held by a thread it does not have. Every
//! lock cudyn shares between threads is taken by a `pthread_atfork` prepare handler (so no
//! other thread is inside it when the process forks) and given back on both sides after.
//!
//! Two kinds of lock are covered:
//! - the mutexes and reader/writer locks (`Lock`): each module that owns one declares it here
//!   with a function that takes it (the guard is kept until after the fork, `keep`) and one
//!   that tidies the child's copy; `watch` enrols it on first use;
//! - first-time initialisations (`once`): a `OnceLock` being initialised on another thread at
//!   the fork would be "running" forever in the child, so initialisations are counted and the
//!   prepare handler waits until none is under way (they take no cudyn lock, so they finish),
//!   while new ones wait for the fork.
//!
//! The prepare handler takes the locks in `Rank` order, the order in which cudyn's code nests
//! them (the registry is held around CUDA calls that take the driver's context list), so it
//! waits only for threads that make progress. cudyn never forks, and never holds a lock across
//! a call that may fork (a CUDA call, a `dlopen` that runs a library constructor), so the
//! forking thread holds none of them itself. glibc releases its own fork lock around each
//! prepare handler, so a thread that registers fork handlers (a library's constructor, in a
//! `dlopen` cudyn waits for) is not blocked by this one.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The order in which the prepare handler takes the locks: outer locks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// The handle registry: held around CUDA calls, which may take the driver's context list.
    Registry,
    /// Leaf locks: nothing is taken while one is held.
    Leaf,
    /// The driver's list of retained primary contexts (taken under the registry's lock).
    Contexts,
    /// The image blocks and the decoding contexts kept for reuse (src/image/buf.rs,
    /// src/image/decompress.rs): taken under any of the others (a built image goes back where
    /// its last holder lets it go: the memo, the registry), and nothing is taken under them.
    Memory,
}

/// A lock of cudyn's, as the fork handlers see it.
pub(crate) struct Lock {
    rank: Rank,
    /// Takes the lock and `keep`s its guard (in the prepare handler).
    hold: fn(),
    /// Tidies the child's state after the guards are dropped (in the child).
    child: fn(),
    watched: AtomicBool,
}

impl Lock {
    pub(crate) const fn new(rank: Rank, hold: fn(), child: fn()) -> Lock {
        Lock { rank, hold, child, watched: AtomicBool::new(false) }
    }
}

/// For `Lock::new`: a lock whose child needs nothing beyond its release.
pub(crate) fn nothing() {}

const MAX_LOCKS: usize = 16;
static LOCKS: [AtomicPtr<Lock>; MAX_LOCKS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_LOCKS];
static ENROLLED: AtomicUsize = AtomicUsize::new(0);
/// Held while a lock is enrolled and from the prepare handler to the end of the fork: a lock
/// is enrolled before it is first taken, so a fork never misses one that is held.
static ENROLLING: AtomicBool = AtomicBool::new(false);

fn take_enrolling() {
    while ENROLLING.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        std::thread::yield_now();
    }
}

fn give_enrolling() {
    ENROLLING.store(false, Ordering::Release);
}

/// Enrol `l` (once; then one atomic load): call before every acquisition of the lock.
#[inline]
pub(crate) fn watch(l: &'static Lock) {
    if !l.watched.load(Ordering::Acquire) {
        enrol(l);
    }
}

#[cold]
fn enrol(l: &'static Lock) {
    take_enrolling();
    install();
    let me = l as *const Lock as *mut Lock;
    let n = ENROLLED.load(Ordering::Relaxed);
    if !LOCKS[..n.min(MAX_LOCKS)].iter().any(|p| p.load(Ordering::Relaxed) == me) && n < MAX_LOCKS {
        LOCKS[n].store(me, Ordering::Relaxed);
        ENROLLED.store(n + 1, Ordering::Release);
    }
    l.watched.store(true, Ordering::Release);
    give_enrolling();
}

/// Register the fork handlers: when the library is loaded (below), when the first lock is
/// enrolled, and again after each first-time initialisation (opening a CUDA library, which may
/// register fork handlers of its own): prepare handlers run last-registered first, so cudyn's
/// locks are taken before any lock of a library cudyn calls with one of them held. Each fork
/// does the work once (the first handler to run does it, the others see `PREPARED`).
fn register_handlers() {
    // Bounded: a handful of libraries are opened in a process.
    if REGISTERED.fetch_add(1, Ordering::AcqRel) >= 16 {
        return;
    }
    // SAFETY: three handlers of the prototype pthread_atfork expects; they live as long as the
    // library (glibc drops them when the object that registered them is unloaded).
    unsafe {
        libc::pthread_atfork(
            Some(prepare as unsafe extern "C" fn()),
            Some(parent as unsafe extern "C" fn()),
            Some(child as unsafe extern "C" fn()),
        )
    };
}

static REGISTERED: AtomicUsize = AtomicUsize::new(0);

fn install() {
    if REGISTERED.load(Ordering::Acquire) == 0 {
        register_handlers();
    }
}

/// Enrol `$lock` (a `static Lock`) when the library is loaded, before anything can take it:
/// each module that owns a `Lock` says this beside it. Enrolled one by one on first use, a
/// lock's first use could come while its thread held another of cudyn's locks (the
/// primary-context list is first taken under the registry's read lock) just as a fork's
/// prepare handler, holding the enrolment flag, waited for that other lock: both waited for
/// ever (a hang of `forked_children_never_hang_on_a_cudyn_lock`, one run in many). Where a
/// static link drops load-time initialisers, `watch` still enrols at first use.
macro_rules! enrol_at_load {
    ($lock:path) => {
        #[used]
        #[link_section = ".init_array"]
        static ENROL_AT_LOAD: extern "C" fn() = {
            extern "C" fn at_load() {
                $crate::fork::watch(&$lock);
            }
            at_load
        };
    };
}
pub(crate) use enrol_at_load;

// The handlers are registered when the library is loaded, so that even the first cudyn call
// of a process that forks on another thread is covered (enrolling does it too, where a static
// link dropped this).
#[used]
#[link_section = ".init_array"]
static INSTALL_AT_LOAD: extern "C" fn() = {
    extern "C" fn at_load() {
        install();
    }
    at_load
};

thread_local! {
    /// The guards the prepare handler took, on the thread that forks (the handlers after the
    /// fork run on the same thread, in the parent and in the child).
    static HELD: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    /// How many `once` initialisations this thread is inside.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Set on the forking thread by the first prepare handler to run, cleared by the first
    /// handler after the fork (the handlers are registered more than once).
    static PREPARED: Cell<bool> = const { Cell::new(false) };
}

/// Keep `guard` (a lock the prepare handler just took) until the fork is over.
pub(crate) fn keep<G: 'static>(guard: G) {
    HELD.with(|h| h.borrow_mut().push(Box::new(guard)));
}

fn enrolled() -> Vec<&'static Lock> {
    let n = ENROLLED.load(Ordering::Acquire).min(MAX_LOCKS);
    let mut v: Vec<&'static Lock> = LOCKS[..n]
        .iter()
        .filter_map(|p| {
            // SAFETY: only `&'static Lock`s are stored (`enrol`).
            unsafe { p.load(Ordering::Acquire).as_ref() }
        })
        .collect();
    v.sort_by_key(|l| l.rank);
    v
}

extern "C" fn prepare() {
    if PREPARED.with(|p| p.replace(true)) {
        return;
    }
    take_enrolling();
    for l in enrolled() {
        (l.hold)();
    }
    // Initialisations under way take no cudyn lock: they finish while the locks are held.
    FORKING.store(true, Ordering::SeqCst);
    let mine = DEPTH.with(Cell::get);
    let mut spins = 0u32;
    while INITS.load(Ordering::SeqCst) > mine {
        spins += 1;
        if spins < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

fn release() {
    // Dropping the guards unlocks; in the child only this thread remains, so no one waits.
    let held = HELD.with(|h| std::mem::take(&mut *h.borrow_mut()));
    drop(held);
    FORKING.store(false, Ordering::SeqCst);
}

extern "C" fn parent() {
    if !PREPARED.with(|p| p.replace(false)) {
        return;
    }
    release();
    give_enrolling();
}

extern "C" fn child() {
    if !PREPARED.with(|p| p.replace(false)) {
        return;
    }
    release();
    for l in enrolled() {
        (l.child)();
    }
    // The other threads' initialisations are gone with them.
    INITS.store(DEPTH.with(Cell::get), Ordering::SeqCst);
    give_enrolling();
}

/// First-time initialisations under way (see the top).
static INITS: AtomicUsize = AtomicUsize::new(0);
/// Set by the prepare handler while it waits for them and until the fork is over.
static FORKING: AtomicBool = AtomicBool::new(false);

/// `cell.get_or_init(f)`, counted as an initialisation under way while `f` runs (the prepare
/// handler waits for it; a new one waits for a fork in progress). Free once initialised.
pub(crate) fn once<T>(cell: &OnceLock<T>, f: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let depth = DEPTH.with(Cell::get);
    loop {
        INITS.fetch_add(1, Ordering::SeqCst);
        // Nested in another initialisation on this thread: the prepare handler already waits
        // for this thread, so waiting here could only deadlock.
        if depth > 0 || !FORKING.load(Ordering::SeqCst) {
            break;
        }
        INITS.fetch_sub(1, Ordering::SeqCst);
        while FORKING.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
            INITS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    DEPTH.with(|d| d.set(depth + 1));
    let leave = Leave;
    let v = cell.get_or_init(f);
    drop(leave);
    // What was initialised may have registered fork handlers of its own: cudyn's must run
    // before them (see `register_handlers`).
    if depth == 0 {
        register_handlers();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_is_enrolled_before_any_is_taken() {
        // The registry's, the image memo's, the primary-context list's, the image blocks' (on
        // Unix) and libzstd's decoding contexts' (`enrol_at_load!` beside each):
        // enrolled at load, none waiting for its first use, which may come under another lock
        // of cudyn's.
        let enrolled = enrolled();
        assert_eq!(
            enrolled.len(),
            3 + usize::from(cfg!(unix)) + usize::from(cfg!(feature = "c-decoders")),
            "locks enrolled at load: {:?}",
            enrolled.iter().map(|l| l.rank).collect::<Vec<_>>()
        );
        assert!(enrolled.iter().all(|l| l.watched.load(Ordering::Acquire)));
    }

    #[test]
    fn once_initialises_once_and_leaves_no_depth_behind() {
        // (INITS itself is shared with the other tests' initialisations: each thread's own
        // depth is what must come back to zero.)
        static CELL: OnceLock<u32> = OnceLock::new();
        let v = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let v = *once(&CELL, || 7);
                        assert_eq!(DEPTH.with(Cell::get), 0);
                        v
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
        });
        assert_eq!(v, vec![7; 4]);
        // Nested: an initialisation that needs another one, on one thread.
        static OUTER: OnceLock<u32> = OnceLock::new();
        static INNER: OnceLock<u32> = OnceLock::new();
        let inner_depth = std::cell::Cell::new(0);
        assert_eq!(
            *once(&OUTER, || *once(&INNER, || {
                inner_depth.set(DEPTH.with(Cell::get));
                2
            }) + 1),
            3
        );
        assert_eq!(inner_depth.get(), 2, "counted once per level");
        assert_eq!(DEPTH.with(Cell::get), 0);
    }
}
