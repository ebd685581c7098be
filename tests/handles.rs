//! Kernel and library handles against a stand-in libcuda that reuses addresses the way the
//! real driver does (tests/standin/libcuda.c): a launch is checked against the layout of the
//! kernel it launches, never one remembered for an earlier kernel at the same address; a
//! valid handle is never refused; a handle cudyn knows is dead is refused, and a library
//! cudyn unloaded is never handed to CUDA again. Each scenario runs in a child process of its
//! own (a process opens one libcuda), as a 13.0 driver and again posing as 12.4 (no
//! `cuKernelGetLibrary`).
//!
//! Most scenarios detach the bare handle (`lib.kernel(..)?.kernel()`) on purpose: it is the
//! handle C code holds, usable after its library is gone, so the run-time checks are what is
//! tested. The typed, borrowed launch (`LibraryKernel`) is tested at the end.

mod common;

use common::standin::{child_env, cubin_for, standin, Standin};
use common::{child_mode, expect_child_ok, spawn_child};
use cudyn::launch::{launch, Dim3, LaunchConfig};
use cudyn::{Api, Kernel, Library, Status};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Run test `name` as a child against the stand-in, as driver 13.0 and as driver 12.4.
fn in_children(name: &str) {
    for version in ["13000", "12040"] {
        let env = child_env(version);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        expect_child_ok(spawn_child(name, version, &env), &format!("{name} (driver {version})"));
    }
}

/// `n` argument pointers ending exactly at a guard page: CUDA reading one more faults.
struct GuardedArgs {
    base: *mut c_void,
    page: usize,
    value: Box<i32>,
}

impl GuardedArgs {
    fn new(value: i32) -> GuardedArgs {
        // SAFETY: plain anonymous mapping of two pages; the second made inaccessible.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            let base = libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(base, libc::MAP_FAILED);
            assert_eq!(libc::mprotect((base as *mut u8).add(page).cast(), page, libc::PROT_NONE), 0);
            GuardedArgs { base, page, value: Box::new(value) }
        }
    }
    /// `n` pointers to the value, the last one just before the guard page.
    fn args(&mut self, n: usize) -> &[*mut c_void] {
        let v = &mut *self.value as *mut i32 as *mut c_void;
        // SAFETY: n pointers fit in the first page (n is small), ending at its end.
        unsafe {
            let p = (self.base as *mut u8).add(self.page - n * 8) as *mut *mut c_void;
            for i in 0..n {
                p.add(i).write(v);
            }
            std::slice::from_raw_parts(p, n)
        }
    }
}

impl Drop for GuardedArgs {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.base, 2 * self.page) };
    }
}

fn driver_cfg() -> LaunchConfig {
    LaunchConfig { grid: Dim3::x(1), block: Dim3::x(1), api: Api::Driver as u32, ..Default::default() }
}

/// Launch `k` with `n` arguments, each holding `value` (the stand-in checks it against the
/// kernel's parameter count), the array ending at a guard page.
fn launch_n(k: Kernel, n: usize, value: i32) -> cudyn::Result<()> {
    let mut g = GuardedArgs::new(value);
    let args = g.args(n);
    // SAFETY: every argument points to a live int; k is a kernel of the stand-in (live, or one
    // cudyn unloaded: cudyn refuses those itself).
    unsafe { launch(k, &driver_cfg(), args, None) }
}

fn load_cudyn(s: &Standin, nparams: &[i32]) -> Library {
    s.next(nparams);
    Library::load_data(&cubin_for(nparams), Api::Driver).expect("cudyn loads through the stand-in")
}

/// A foreign 2-parameter kernel launched through cudyn, its library unloaded outside cudyn,
/// then a cudyn load puts a 4-parameter kernel at the same address: the launch is checked
/// against 4 parameters, not the 2 seen before.
#[test]
fn a_reused_address_is_checked_against_the_new_kernel() {
    if child_mode().is_none() {
        return in_children("a_reused_address_is_checked_against_the_new_kernel");
    }
    let s = standin();
    let (l, foreign) = s.raw_load(2);
    launch_n(foreign, 2, 2).expect("a foreign kernel launches");
    launch_n(foreign, 2, 2).expect("and again");
    assert_eq!(launch_n(foreign, 3, 2).unwrap_err().status, Status::ArgumentMismatch);
    s.raw_unload(l);
    let lib = load_cudyn(&s, &[4]);
    let k = lib.kernel(c"k0").unwrap().kernel();
    assert_eq!(k, foreign, "the stand-in reuses the address, as CUDA does");
    launch_n(k, 4, 4).expect("the new kernel's own layout is the one checked");
    let e = launch_n(k, 2, 4).unwrap_err();
    assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
    assert!(e.message.contains("takes 4"), "{}", e.message);
    lib.unload().unwrap();
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// A cudyn load, launch and unload; the application then loads a library of its own that
/// gets the same kernel address. cudyn cannot tell that live handle from the dead one without
/// handing a possibly dead handle to CUDA (which can crash), so it refuses it with a message
/// that says what to do; once adopted, it launches, checked against its own layout.
#[test]
fn a_foreign_handle_at_a_dead_address_launches_once_adopted() {
    if child_mode().is_none() {
        return in_children("a_foreign_handle_at_a_dead_address_launches_once_adopted");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let old = lib.kernel(c"k0").unwrap().kernel();
    launch_n(old, 2, 2).unwrap();
    lib.unload().unwrap();
    let (l, k) = s.raw_load(4);
    assert_eq!(k, old, "the address was reused");
    let e = launch_n(k, 4, 4).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("cudyn_kernel_adopt"), "{}", e.message);
    // SAFETY: the library stays loaded until after release below.
    unsafe { k.adopt() }.unwrap();
    launch_n(k, 4, 4).expect("an adopted live handle launches");
    launch_n(k, 4, 4).expect("and again, from the remembered layout");
    assert_eq!(k.param_count().unwrap(), 4);
    assert_eq!(launch_n(k, 2, 4).unwrap_err().status, Status::ArgumentMismatch);
    assert!(k.release());
    s.raw_unload(l);
    assert_eq!(s.dead_kernel_uses(), 0, "a dead kernel was handed to CUDA");
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.dead_kernel_uses(), 0);
}

/// Use after unload through cudyn: the kernel is refused, the library is never handed to
/// CUDA again (the real driver crashes on a dead library handle), a second unload is refused.
#[test]
fn handles_cudyn_unloaded_are_refused_without_reaching_cuda() {
    if child_mode().is_none() {
        return in_children("handles_cudyn_unloaded_are_refused_without_reaching_cuda");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2, 3]);
    let raw = lib.as_raw();
    let k = lib.kernel(c"k1").unwrap().kernel();
    launch_n(k, 3, 3).unwrap();
    let before = s.launches();
    lib.unload().unwrap();
    let e = launch_n(k, 3, 3).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert_eq!(s.launches(), before, "nothing reached the launch");
    // SAFETY: a library cudyn unloaded: the contract allows it (refused without CUDA).
    let e = unsafe { cudyn::library::unload_raw(raw, Api::Driver) }.unwrap_err();
    assert!(e.message.contains("unloaded through cudyn"), "{}", e.message);
    // SAFETY: as above.
    unsafe {
        assert!(cudyn::library::get_kernel(raw, c"k0", Api::Driver).is_err());
        assert!(cudyn::library::kernel_count(raw).is_err());
        assert!(cudyn::library::kernels_of(raw).is_err());
    }
    assert_eq!(s.dead_library_uses(), 0, "a library cudyn unloaded was handed to CUDA");
    assert_eq!(s.dead_kernel_uses(), 0, "a kernel cudyn unloaded was handed to CUDA");
    // A cudyn load at the same addresses makes both live again, with the new layouts.
    let lib = load_cudyn(&s, &[1, 5]);
    assert_eq!(lib.as_raw(), raw);
    let k1 = lib.kernel(c"k1").unwrap().kernel();
    assert_eq!(k1, k);
    launch_n(k1, 5, 5).unwrap();
    assert_eq!(launch_n(k1, 3, 5).unwrap_err().status, Status::ArgumentMismatch);
    lib.unload().unwrap();
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.wrong_layout_launches(), 0);
}

/// Eight threads load, launch and unload libraries of different layouts at once, through
/// cudyn and around it; addresses are reused all the time. Every launch with the right
/// count succeeds and reaches CUDA with the kernel's own layout; wrong counts are refused.
#[test]
fn eight_threads_load_launch_and_unload() {
    if child_mode().is_none() {
        return in_children("eight_threads_load_launch_and_unload");
    }
    let s = standin();
    std::thread::scope(|sc| {
        for t in 0..8i32 {
            let s = &s;
            sc.spawn(move || {
                for i in 0..300i32 {
                    let n = 1 + (t + i) % 6;
                    if (t + i) % 3 == 0 {
                        // The program's own library, its kernel adopted (it may sit at an
                        // address a kernel cudyn unloaded had) and released before unloading.
                        let (l, k) = s.raw_load(n);
                        // SAFETY: released below, before the library is unloaded.
                        unsafe { k.adopt() }.unwrap();
                        launch_n(k, n as usize, n).unwrap();
                        assert_eq!(launch_n(k, n as usize + 1, n).unwrap_err().status, Status::ArgumentMismatch);
                        assert!(k.release());
                        s.raw_unload(l);
                    } else {
                        let lib = load_cudyn(s, &[n]);
                        let k = lib.kernel(c"k0").unwrap().kernel();
                        launch_n(k, n as usize, n).unwrap();
                        launch_n(k, n as usize, n).unwrap();
                        let e = launch_n(k, n as usize - 1, n).unwrap_err();
                        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
                        lib.unload().unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(s.wrong_layout_launches(), 0, "a launch was checked against another kernel's layout");
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.dead_kernel_uses(), 0);
}

/// The typed launch checks each argument's size against the kernel's parameter, not only the
/// count: a tuple of the right length with a wrongly sized value is refused before CUDA is
/// called, as is a tuple of the wrong length; a well-typed one launches.
#[test]
fn a_typed_launch_refuses_wrongly_sized_arguments() {
    if child_mode().is_none() {
        return in_children("a_typed_launch_refuses_wrongly_sized_arguments");
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2, 3]);
    let k0 = lib.kernel(c"k0").unwrap();
    let k1 = lib.kernel(c"k1").unwrap();
    let cfg = driver_cfg();
    // SAFETY (every launch below): the stand-in's kernels read their int arguments only.
    unsafe { k0.launch(&cfg, (2i32, 2i32)) }.expect("two ints for two int parameters");
    unsafe { k1.launch(&cfg, (3i32, 3u32, 3i32)) }.expect("three 4-byte values for three int parameters");
    let before = s.launches();
    assert_eq!(before, 2);
    for _ in 0..2 {
        // Twice: the second time the layout comes from the launch table (the fast path).
        let e = unsafe { k0.launch(&cfg, (2i64, 2i32)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("argument 0 is 8 bytes but parameter 0 is 4 bytes"), "{}", e.message);
        let e = unsafe { k1.launch(&cfg, (3i32, 3i32, 3u8)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("argument 2 is 1 bytes"), "{}", e.message);
        let e = unsafe { k0.launch(&cfg, (2i32,)) }.unwrap_err();
        assert_eq!(e.status, Status::ArgumentMismatch, "{}", e.message);
        assert!(e.message.contains("takes 2"), "{}", e.message);
        assert_eq!(unsafe { k0.launch(&cfg, ()) }.unwrap_err().status, Status::ArgumentMismatch);
        assert_eq!(k0.validate_launch(&cfg, &(2u64, 2i32)).unwrap_err().status, Status::ArgumentMismatch);
    }
    assert_eq!(s.launches(), before, "a refused launch reached CUDA");
    unsafe { k0.launch(&cfg, (2i32, 2i32)) }.expect("the right types still launch");
    assert_eq!(s.launches(), before + 1);
    drop(lib);
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// A kernel borrowed from its library works for as long as the library lives (queries, typed
/// launches, the listing); the bare handle detached from it is refused once the library is
/// dropped, without reaching CUDA. (That a borrowed kernel cannot outlive its library at all
/// is shown at compile time: the `compile_fail` doctests on `LibraryKernel`.)
#[test]
fn a_library_kernel_lives_as_long_as_its_library() {
    if child_mode().is_none() {
        return in_children("a_library_kernel_lives_as_long_as_its_library");
    }
    let s = standin();
    let cfg = driver_cfg();
    let lib = load_cudyn(&s, &[2, 4]);
    let k = lib.kernel(c"k0").unwrap();
    assert_eq!(k.name().unwrap().as_c_str(), c"k0");
    assert_eq!(k.param_count().unwrap(), 2);
    let all = lib.kernels().unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&k));
    let k1 = *all.iter().find(|x| **x != k).unwrap();
    assert_eq!(k1.param_count().unwrap(), 4);
    // SAFETY: the stand-in's kernels read their int arguments only.
    unsafe { k1.launch(&cfg, (4i32, 4i32, 4i32, 4i32)) }.unwrap();
    // SAFETY: as above.
    unsafe { k.launch(&cfg, (2i32, 2i32)) }.unwrap();
    let detached = k.kernel();
    let launched = s.launches();
    drop(lib);
    let e = detached.param_count().unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert!(detached.name().is_err());
    // SAFETY: a kernel of a library cudyn unloaded: refused without calling CUDA.
    let e = unsafe { detached.launch(&cfg, (2i32, 2i32)) }.unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
    assert!(e.message.contains("unloaded"), "{}", e.message);
    assert_eq!(s.launches(), launched, "a kernel of a dropped library reached the launch");
    assert_eq!(s.dead_kernel_uses(), 0, "a kernel cudyn unloaded was handed to CUDA");
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.wrong_layout_launches(), 0);
}

/// About `us` microseconds of busy waiting (sleeping would give the other thread seconds).
fn spin_for(us: u64) {
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

/// 0 to 63 microseconds, different each round.
fn jitter(round: u32) -> u64 {
    let mut x = u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    x ^= x >> 29;
    x % 64
}

/// Rounds of each race below, per driver version (the stand-in widens each window to 20 µs).
const RACE_ROUNDS: u32 = 400;

/// A kernel query a safe Rust program makes on a bare `Kernel` (`Send + Sync`).
#[derive(Debug, Clone, Copy)]
enum Query {
    Name,
    Params,
    Function,
    Validate,
}

/// Make query `q` on `k`, a kernel "k0" of two int parameters: Ok(true) when it answered for
/// the live kernel, Ok(false) when it was refused as unloaded, Err for anything else (a wrong
/// answer, or a refusal that came from CUDA: the dead kernel reached it).
fn query(k: Kernel, q: Query) -> Result<bool, String> {
    let r = match q {
        Query::Name => k.name().map(|n| n.as_c_str() == c"k0"),
        Query::Params => k.params().map(|p| p.len() == 2),
        Query::Function => k.function().map(|_| true),
        Query::Validate => k.validate_launch(&driver_cfg(), &(2i32, 2i32)).map(|()| true),
    };
    match r {
        Ok(true) => Ok(true),
        Ok(false) => Err(format!("{q:?}: a wrong answer")),
        Err(e) if e.message.contains("unloaded") => Ok(false),
        Err(e) => Err(format!("{q:?}: {}", e.message)),
    }
}

/// Item 1 of issue 22, in safe Rust: one thread queries a kernel detached from its library
/// while another drops the library. Each query either answers for the live kernel or is refused
/// as unloaded; none reaches CUDA with the dead kernel (the stand-in counts every such use; a
/// name read from the freed library faults).
#[test]
fn kernel_queries_never_race_an_unload_into_cuda() {
    if child_mode().is_none() {
        return in_children("kernel_queries_never_race_an_unload_into_cuda");
    }
    let s = standin();
    s.set_slow(20);
    for q in [Query::Name, Query::Params, Query::Function, Query::Validate] {
        // One asking thread for all rounds: each round publishes a fresh kernel; the asker
        // queries it until refused (or 20 answers) while the main thread drops its library.
        let current = AtomicUsize::new(0);
        let (start, end) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        let wrong = std::sync::Mutex::new(None::<String>);
        let (mut answered, mut refused) = (0u32, 0u32);
        let (a, r) = std::thread::scope(|sc| {
            let asker = sc.spawn(|| {
                let (mut answered, mut refused) = (0u32, 0u32);
                for _ in 0..RACE_ROUNDS {
                    start.wait();
                    // SAFETY: a kernel handle the main thread just got from cudyn (live, or of a
                    // library cudyn has unloaded since: refused without CUDA).
                    let k = unsafe { Kernel::from_raw(current.load(Ordering::SeqCst) as *mut _) }.unwrap();
                    for _ in 0..20 {
                        match query(k, q) {
                            Ok(true) => answered += 1,
                            Ok(false) => {
                                refused += 1;
                                break;
                            }
                            Err(e) => {
                                wrong.lock().unwrap().get_or_insert(e);
                                break;
                            }
                        }
                    }
                    end.wait();
                }
                (answered, refused)
            });
            for round in 0..RACE_ROUNDS {
                let lib = load_cudyn(&s, &[2]);
                current.store(lib.kernel(c"k0").unwrap().kernel().as_raw() as usize, Ordering::SeqCst);
                start.wait();
                // Up to 255 µs, so the unload lands in all parts of a query.
                spin_for(jitter(round) * 4 + jitter(round + 1));
                drop(lib);
                end.wait();
            }
            asker.join().unwrap()
        });
        answered += a;
        refused += r;
        assert_eq!(wrong.into_inner().unwrap(), None);
        assert_eq!(s.dead_kernel_uses(), 0, "{q:?}: a query handed CUDA a kernel of an unloaded library");
        // Both sides of the race were run: answers for the live kernel, refusals after the unload.
        assert!(answered > 0 && refused > 0, "{q:?}: {answered} answered, {refused} refused");
    }
    assert_eq!(s.dead_library_uses(), 0);
}

/// Item 2 of issue 22: a query of a kernel races its library's unload and a reload that puts a
/// kernel of four parameters at the same address. Whatever the query saw, the new kernel is
/// checked against its own four parameters afterwards: a two-argument launch of it is refused
/// (were the old layout kept, it would reach the stand-in, which reads four arguments from an
/// array of two ending at a guard page).
#[test]
fn a_reload_at_the_same_address_never_gets_the_old_layout() {
    if child_mode().is_none() {
        return in_children("a_reload_at_the_same_address_never_gets_the_old_layout");
    }
    let s = standin();
    s.set_slow(20);
    let rounds = RACE_ROUNDS * 4;
    let current = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (start, end) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    let failure = std::thread::scope(|sc| {
        sc.spawn(|| loop {
            start.wait();
            if stop.load(Ordering::SeqCst) {
                return;
            }
            // SAFETY: a kernel the main thread just got from cudyn (live, or of a library cudyn
            // unloaded since: refused without CUDA, or live again at a reload).
            let k = unsafe { Kernel::from_raw(current.load(Ordering::SeqCst) as *mut _) }.unwrap();
            let _ = k.param_count();
            end.wait();
        });
        let mut failure = None;
        for round in 0..rounds {
            let lib = load_cudyn(&s, &[2]);
            let k = lib.kernel(c"k0").unwrap().kernel();
            current.store(k.as_raw() as usize, Ordering::SeqCst);
            start.wait();
            // Up to 255 µs: the query asks for three parameters, each answer 40 µs in coming.
            spin_for(jitter(round) * 4 + jitter(round + 1));
            drop(lib);
            let lib2 = load_cudyn(&s, &[4]);
            end.wait();
            let k2 = lib2.kernel(c"k0").unwrap().kernel();
            assert_eq!(k2, k, "the stand-in reuses the address, as CUDA does");
            let n = k2.param_count().unwrap();
            if n != 4 {
                failure =
                    Some(format!("round {round}: the old kernel's layout ({n} parameters) was kept for the new one"));
                break;
            }
            let e = launch_n(k2, 2, 4).unwrap_err();
            assert_eq!(e.status, Status::ArgumentMismatch, "round {round}: {}", e.message);
            launch_n(k2, 4, 4).unwrap();
            drop(lib2);
        }
        stop.store(true, Ordering::SeqCst);
        start.wait();
        failure
    });
    assert_eq!(failure, None);
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_kernel_uses(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// The launch fast path against an unload: one thread launches a kernel (from the launch table,
/// no lock) while another drops its library. Every launch either reaches CUDA while the kernel
/// is live or is refused as unloaded; none hands CUDA the dead kernel.
#[test]
fn a_launch_never_races_an_unload_into_cuda() {
    if child_mode().is_none() {
        return in_children("a_launch_never_races_an_unload_into_cuda");
    }
    let s = standin();
    s.set_slow(20);
    let current = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (start, end) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    let wrong = std::sync::Mutex::new(None::<String>);
    let (launched, refused) = std::thread::scope(|sc| {
        let launcher = sc.spawn(|| {
            let mut g = GuardedArgs::new(2);
            let args = g.args(2);
            let (mut launched, mut refused) = (0u32, 0u32);
            loop {
                start.wait();
                if stop.load(Ordering::SeqCst) {
                    return (launched, refused);
                }
                // SAFETY: a kernel the main thread got from cudyn (live, or of a library cudyn
                // unloaded since: refused without CUDA).
                let k = unsafe { Kernel::from_raw(current.load(Ordering::SeqCst) as *mut _) }.unwrap();
                for _ in 0..20 {
                    // SAFETY: every argument points to a live int; k as above.
                    match unsafe { launch(k, &driver_cfg(), args, None) } {
                        Ok(()) => launched += 1,
                        Err(e) if e.message.contains("unloaded") => {
                            refused += 1;
                            break;
                        }
                        Err(e) => {
                            wrong.lock().unwrap().get_or_insert(e.message);
                            break;
                        }
                    }
                }
                end.wait();
            }
        });
        for round in 0..RACE_ROUNDS {
            let lib = load_cudyn(&s, &[2]);
            let k = lib.kernel(c"k0").unwrap().kernel();
            launch_n(k, 2, 2).unwrap(); // into the launch table: the launches raced take the fast path
            current.store(k.as_raw() as usize, Ordering::SeqCst);
            start.wait();
            // Up to 255 µs: each launch takes 20 µs in the stand-in before it checks the kernel.
            spin_for(jitter(round) * 4 + jitter(round + 1));
            drop(lib);
            end.wait();
        }
        stop.store(true, Ordering::SeqCst);
        start.wait();
        launcher.join().unwrap()
    });
    assert_eq!(wrong.into_inner().unwrap(), None);
    assert!(launched > 0 && refused > 0, "{launched} launched, {refused} refused");
    assert_eq!(s.dead_kernel_uses(), 0, "a launch handed CUDA a kernel of an unloaded library");
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// A load through cudyn asks CUDA for nothing but the load (no kernel count, no listing), and
/// a load without options hands CUDA no option arrays. An unload asks the library's kernel
/// count first, and lists its kernels where cudyn has not seen them all (a raw
/// cuLibraryGetKernel on it may have, and each must be dead to cudyn once it is gone).
#[test]
fn a_load_asks_cuda_for_nothing_but_the_load() {
    if child_mode().is_none() {
        return in_children("a_load_asks_cuda_for_nothing_but_the_load");
    }
    let s = standin();
    drop(load_cudyn(&s, &[2])); // the driver opened, the image's check remembered
    drop(load_cudyn(&s, &[2]));
    let lists = s.list_calls();
    for _ in 0..50 {
        let c0 = s.calls();
        let lib = load_cudyn(&s, &[2, 3]);
        assert_eq!(s.last_jit_options(), 0, "option arrays for a load without options");
        assert_eq!(s.calls() - c0, 1, "one cuLibraryLoadData, nothing else");
        lib.unload().unwrap();
        assert_eq!(s.calls() - c0, 4, "then the count, the list and cuLibraryUnload");
    }
    assert_eq!(s.list_calls() - lists, 100);
    // Every kernel looked up through cudyn: the count says none is unseen.
    let lists = s.list_calls();
    for _ in 0..50 {
        let lib = load_cudyn(&s, &[2, 3]);
        for k in [c"k0", c"k1"] {
            lib.kernel(k).unwrap();
        }
        let c0 = s.calls();
        lib.unload().unwrap();
        assert_eq!(s.calls() - c0, 2, "the count and cuLibraryUnload");
    }
    assert_eq!(s.list_calls() - lists, 50);
}

/// A kernel of a library cudyn loaded, found outside cudyn (a raw cuLibraryGetKernel), is
/// learned as owned at its first use where the driver has cuKernelGetLibrary (its layout is then
/// remembered); posing as 12.4 it stays foreign (checked against CUDA at every launch). Once its
/// library is unloaded through cudyn it is refused; when a library cudyn loads since has a kernel
/// at that address, found outside cudyn again, it is accepted (cudyn lists the libraries loaded
/// since, each once) and checked against its own layout.
#[test]
fn kernels_found_outside_cudyn_are_learned_and_revived() {
    if child_mode().is_none() {
        return in_children("kernels_found_outside_cudyn_are_learned_and_revived");
    }
    let s = standin();
    let has_get_library = std::env::var("CUDYN_STANDIN_VERSION").unwrap() == "13000";
    let lib = load_cudyn(&s, &[2]);
    let k = s.raw_kernel(&lib, c"k0");
    launch_n(k, 2, 2).unwrap();
    let asked = s.param_calls();
    launch_n(k, 2, 2).unwrap();
    launch_n(k, 2, 2).unwrap();
    let remembered = s.param_calls() == asked;
    assert_eq!(remembered, has_get_library, "learned as owned exactly where cuKernelGetLibrary exists");
    assert_eq!(launch_n(k, 3, 2).unwrap_err().status, Status::ArgumentMismatch);
    assert_eq!(lib.kernel(c"k0").unwrap().kernel(), k);
    lib.unload().unwrap();
    let e = launch_n(k, 2, 2).unwrap_err();
    assert!(e.message.contains("unloaded"), "{}", e.message);
    let lib2 = load_cudyn(&s, &[4]);
    let k2 = s.raw_kernel(&lib2, c"k0");
    assert_eq!(k2, k, "the stand-in reuses the address, as CUDA does");
    let lists = s.list_calls();
    launch_n(k2, 4, 4).expect("a live kernel of a library cudyn loaded is never refused");
    assert_eq!(s.list_calls(), lists + 2, "found by listing the library loaded since");
    assert_eq!(launch_n(k2, 2, 4).unwrap_err().status, Status::ArgumentMismatch);
    assert_eq!(k2.param_count().unwrap(), 4);
    launch_n(k2, 4, 4).unwrap();
    assert_eq!(s.list_calls(), lists + 2, "each library is listed once");
    lib2.unload().unwrap();
    assert_eq!(s.dead_kernel_uses(), 0);
    assert_eq!(s.dead_library_uses(), 0);
    assert_eq!(s.wrong_layout_launches(), 0);
}

/// Item 7 of issue 22: 100 children forked while four threads are inside cudyn (loading and
/// unloading, querying, launching through the fast and the full path, checking images). Each
/// child uses cudyn at once (every lock: the image memo, the registry's read and write sides,
/// the launch stripes, the driver's context list) and must exit within 5 s (an alarm kills a
/// hung one; the parent kills any still running after 10 s, and stops at the first). The stand-in fails every driver
/// call in a child, as the real driver does.
#[test]
fn forked_children_never_hang_on_a_cudyn_lock() {
    if child_mode().is_none() {
        return in_children("forked_children_never_hang_on_a_cudyn_lock");
    }
    let s = standin();
    s.set_slow(5);
    let bytes = std::fs::read(std::env::var("CUDYN_TEST_CUBIN").unwrap()).unwrap();
    let keep = load_cudyn(&s, &[2]);
    let kk = keep.kernel(c"k0").unwrap().kernel();
    launch_n(kk, 2, 2).unwrap();
    let stop = AtomicBool::new(false);
    let (mut hung, mut failed) = (0, 0);
    std::thread::scope(|sc| {
        let (s, stop, bytes) = (&s, &stop, &bytes);
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let lib = load_cudyn(s, &[3]);
                let k = lib.kernel(c"k0").unwrap().kernel();
                launch_n(k, 3, 3).unwrap();
                drop(lib);
            }
        });
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                kk.name().unwrap();
                kk.param_count().unwrap();
                // A thread with no context yet: the driver's context list is taken.
                std::thread::scope(|t| {
                    t.spawn(|| kk.function().map(drop).unwrap());
                });
            }
        });
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                launch_n(kk, 2, 2).unwrap();
                // The program's own library (its kernel may sit where a kernel cudyn unloaded
                // was: adopted, and released before the unload).
                let (l, k) = s.raw_load(2);
                // SAFETY: released below, before its library is unloaded.
                unsafe { k.adopt() }.unwrap();
                launch_n(k, 2, 2).unwrap();
                assert!(k.release());
                s.raw_unload(l);
            }
        });
        sc.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                cudyn::library::validate(bytes).unwrap();
            }
        });
        for _ in 0..100 {
            spin_for(300);
            // SAFETY: the child only calls cudyn (what the test is about) and _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                // SAFETY: alarm and _exit are async-signal-safe; the rest is cudyn's business.
                unsafe { libc::alarm(5) };
                let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _ = cudyn::library::validate(bytes);
                    assert!(Library::load_data(bytes, Api::Driver).is_err(), "CUDA is not usable in a child");
                    assert_eq!(kk.param_count().unwrap(), 2);
                    let _ = kk.name();
                    let _ = kk.function();
                    let _ = launch_n(kk, 2, 2);
                    let _ = launch_n(kk, 1, 2);
                    // SAFETY: the parent's live library (the child only tries; CUDA refuses).
                    let _ = unsafe { cudyn::library::unload_raw(keep.as_raw(), Api::Driver) };
                    let _ = launch_n(kk, 2, 2);
                }))
                .is_ok();
                // SAFETY: leave without running the parent's destructors or atexit handlers.
                unsafe { libc::_exit(if ok { 0 } else { 3 }) };
            }
            let t = std::time::Instant::now();
            let mut status = 0;
            loop {
                // SAFETY: a child of this process, a valid out-pointer.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if r == pid {
                    break;
                }
                if t.elapsed() > std::time::Duration::from_secs(10) {
                    // SAFETY: our own child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    // SAFETY: as above.
                    unsafe { libc::waitpid(pid, &mut status, 0) };
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if libc::WIFSIGNALED(status) {
                hung += 1;
                break; // one is enough to fail, and each costs seconds
            } else if libc::WEXITSTATUS(status) != 0 {
                failed += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!((hung, failed), (0, 0), "forked children: {hung} hung, {failed} failed");
    drop(keep);
    assert_eq!(s.dead_kernel_uses(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}

/// Against the contract, a program unloads its own library without releasing the kernel it
/// adopted (whose layout the launch table holds); cudyn then loads a library whose kernel of
/// four parameters lands at the same address. Once cudyn hands that kernel out it is its own,
/// and it is checked against its own layout, not the adopted one's still in the table.
#[test]
fn an_owned_kernel_replacing_a_stale_adopted_one_gets_its_own_layout() {
    if child_mode().is_none() {
        return in_children("an_owned_kernel_replacing_a_stale_adopted_one_gets_its_own_layout");
    }
    let s = standin();
    let (l, k) = s.raw_load(2);
    // SAFETY: the broken promise is the point of the test; the stand-in checks every launch.
    unsafe { k.adopt() }.unwrap();
    launch_n(k, 2, 2).unwrap();
    launch_n(k, 2, 2).unwrap(); // from the launch table
    s.raw_unload(l);
    let lib = load_cudyn(&s, &[4]);
    let k2 = lib.kernel(c"k0").unwrap().kernel();
    assert_eq!(k2, k, "the stand-in reuses the address, as CUDA does");
    assert_eq!(launch_n(k2, 2, 4).unwrap_err().status, Status::ArgumentMismatch);
    launch_n(k2, 4, 4).unwrap();
    lib.unload().unwrap();
    assert_eq!(s.wrong_layout_launches(), 0);
    assert_eq!(s.dead_library_uses(), 0);
}
