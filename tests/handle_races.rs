//! Races and re-entry through the public API against the stand-in driver
//! (tests/standin/libcuda.c, which counts every use of a dead library or kernel and every
//! launch whose arguments do not fit the kernel): each test is a class an independent review
//! found, proved on the code before its fix and looped since.
//!
//! - A query of a kernel cudyn has not seen yet (a raw `cuLibraryGetKernel` on a library cudyn
//!   loaded) racing that library's unload: the query finishes before the unload or is refused;
//!   CUDA never gets the dead kernel (it learned the library under the read lock and lost it
//!   before it could record the kernel).
//! - `cudyn_library_get_kernel`, `enumerate_kernels` racing the unload: no handle leaves cudyn
//!   that it neither owns nor knows to be dead, and no listing reaches CUDA after the unload.
//! - An adopted kernel of a library cudyn loaded ends with that library's unload (it survived
//!   it, and a 2-argument launch of the 4-parameter kernel later put at its address passed).
//! - The occupancy block-size function runs outside every lock of cudyn's: it may drop a
//!   library, look a kernel up, query while another thread unloads, or fork (each of which
//!   deadlocked while it ran inside CUDA's call under the registry's read lock); CUDA's
//!   callback is answered from its answers, exactly, a size CUDA asks that was not foreseen
//!   included.
//!
//! - A driver's counts are bounded before anything is sized by them: a library of 2^32 - 1
//!   kernels, 2^31 - 1 devices (each aborted the process with an allocation failure).
//! - A fork while another thread is inside a first-time initialisation that calls the driver
//!   (the GPUs' compute capabilities) waits for it: the child never hangs on it.
//!
//! Run with `source scripts/env.sh && cargo test --test handle_races`.

mod common;

use common::standin::{child_env, cubin, cubin_for, standin, Standin};
use common::{child_mode, spawn_child};
use cudyn::launch::{Dim3, LaunchConfig};
use cudyn::occupancy::{max_potential_block_size, DynamicSmem, OccupancyFlags};
use cudyn::{Api, Kernel, Library, Status};
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Run test `name` as a child against the stand-in (driver 13.0: cuKernelGetLibrary present),
/// killing it after `limit`: Err("hung") then.
fn in_child(name: &str, limit: Duration) -> Result<(), String> {
    let env = child_env("13000");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut child = spawn_child(name, "13000", &env);
    let t = Instant::now();
    loop {
        if let Some(_st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() && stdout.contains("1 passed") {
                return Ok(());
            }
            return Err(format!("child failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}", out.status));
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            return Err(format!(
                "HUNG: child killed after {limit:?}\n--- stdout\n{}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run(name: &str, limit_s: u64) {
    if let Err(e) = in_child(name, Duration::from_secs(limit_s)) {
        panic!("{name}: {e}");
    }
}

fn load_cudyn(s: &Standin, nparams: &[i32]) -> Library {
    s.next(nparams);
    Library::load_data(&cubin_for(nparams), Api::Driver).expect("cudyn loads through the stand-in")
}

fn driver_cfg() -> LaunchConfig {
    LaunchConfig { grid: Dim3::x(1), block: Dim3::x(1), api: Api::Driver as u32, ..Default::default() }
}

/// Before each round of a race: a library loaded outside cudyn takes the slot the last round
/// freed, so this round's kernel sits at an address cudyn has never seen (neither known nor
/// dead: the state a raw lookup's first use starts from). Returns it, to unload at the end.
fn pad(s: &Standin) -> *mut c_void {
    s.raw_load(1).0
}

// The program loads a library with cudyn, takes a kernel with a raw cuLibraryGetKernel, adopts
// it and unloads the library through cudyn: the adoption ends there (cudyn.h), so the dead
// kernel is refused, and a 4-parameter kernel later put at the address is checked as such.
#[test]
fn an_adopted_kernel_of_a_library_cudyn_loaded_ends_with_its_unload() {
    use cudyn::capi::kernel::cudyn_kernel_adopt;
    use cudyn::capi::launch::cudyn_launch;
    use cudyn::capi::library::{cudyn_library_load_data, cudyn_library_unload};
    if child_mode().is_none() {
        return run("an_adopted_kernel_of_a_library_cudyn_loaded_ends_with_its_unload", 60);
    }
    let s = standin();
    let bytes = cubin();
    s.next(&[2]);
    let mut lib = std::ptr::null_mut();
    assert_eq!(unsafe { cudyn_library_load_data(bytes.as_ptr().cast(), bytes.len(), 1, &mut lib) }, Status::Success);
    let k = s.raw_kernel_in(lib.cast(), c"k0").as_raw();
    assert_eq!(unsafe { cudyn_kernel_adopt(k.cast()) }, Status::Success);
    let mut two = 2i32;
    let mut args2: [*mut c_void; 2] = [(&mut two as *mut i32).cast(); 2];
    let cfg = driver_cfg();
    for _ in 0..2 {
        assert_eq!(unsafe { cudyn_launch(k.cast(), &cfg, args2.as_mut_ptr(), 2) }, Status::Success);
    }
    assert_eq!(unsafe { cudyn_library_unload(lib, 1) }, Status::Success);
    let (dead0, l0) = (s.dead_kernel_uses(), s.launches());
    let st = unsafe { cudyn_launch(k.cast(), &cfg, args2.as_mut_ptr(), 2) };
    assert_eq!(st, Status::InvalidArgument, "the kernel of an unloaded library is refused");
    assert_eq!((s.dead_kernel_uses() - dead0, s.launches() - l0), (0, 0), "nothing reached CUDA");
    // The address, reused by a 4-parameter kernel of a library the program loads itself.
    let (l2, k2) = s.raw_load(4);
    let k2 = k2.as_raw();
    assert_eq!(k2, k, "the stand-in reuses the address");
    let mut args4: [*mut c_void; 4] = [(&mut two as *mut i32).cast(); 4];
    let w0 = s.wrong_layout_launches();
    let st = unsafe { cudyn_launch(k2.cast(), &cfg, args4.as_mut_ptr(), 2) };
    assert_eq!(st, Status::InvalidArgument, "a dead address stays refused until cudyn sees it live");
    assert_eq!(unsafe { cudyn_kernel_adopt(k2.cast()) }, Status::Success);
    let st = unsafe { cudyn_launch(k2.cast(), &cfg, args4.as_mut_ptr(), 2) };
    assert_eq!(st, Status::ArgumentMismatch, "adopted anew, it is checked as the 4-parameter kernel it is");
    assert_eq!(s.wrong_layout_launches() - w0, 0);
    assert!(unsafe { Kernel::from_raw(k2.cast()) }.unwrap().release());
    s.raw_unload(l2);
}

// A closure that drops a library (an unload: the registry's write lock) while the query runs.
#[test]
fn the_occupancy_function_may_drop_a_library() {
    if child_mode().is_none() {
        return run("the_occupancy_function_may_drop_a_library", 30);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let k = lib.kernel(c"k0").unwrap();
    let other = RefCell::new(Some(load_cudyn(&s, &[3])));
    let f = |_: u32| {
        drop(other.borrow_mut().take());
        0usize
    };
    let r = max_potential_block_size(*k, 0, DynamicSmem::PerBlock(&f), 0, OccupancyFlags::Default).unwrap();
    assert_eq!(r.block_size, 1000);
    assert!(other.borrow().is_none());
}

// A closure that looks a kernel up in another library (which records it: the write lock).
#[test]
fn the_occupancy_function_may_look_a_kernel_up() {
    if child_mode().is_none() {
        return run("the_occupancy_function_may_look_a_kernel_up", 30);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let k = lib.kernel(c"k0").unwrap();
    let other = load_cudyn(&s, &[3]);
    let seen = std::cell::Cell::new(0usize);
    let f = |_: u32| {
        seen.set(other.kernel(c"k0").unwrap().param_count().unwrap());
        0usize
    };
    max_potential_block_size(*k, 0, DynamicSmem::PerBlock(&f), 0, OccupancyFlags::Default).unwrap();
    assert_eq!(seen.get(), 3);
}

// A closure that queries while another thread drops an unrelated library: the dropping thread
// waits for the write lock; a read lock taken inside a read lock would wait behind it (std's
// lock refuses new readers while a writer waits), and the outer one never goes.
#[test]
fn the_occupancy_function_may_query_while_another_thread_unloads() {
    if child_mode().is_none() {
        return run("the_occupancy_function_may_query_while_another_thread_unloads", 30);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let k = *lib.kernel(c"k0").unwrap();
    let other = load_cudyn(&s, &[3]);
    let go = std::sync::Barrier::new(2);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            go.wait();
            drop(other);
        });
        let once = AtomicBool::new(false);
        let f = |_: u32| {
            if !once.swap(true, Ordering::SeqCst) {
                go.wait();
                std::thread::sleep(Duration::from_millis(100));
                assert_eq!(k.param_count().unwrap(), 2);
            }
            0usize
        };
        max_potential_block_size(k, 0, DynamicSmem::PerBlock(&f), 0, OccupancyFlags::Default).unwrap();
    });
}

// A closure that forks (the fork handler takes every lock of cudyn's).
#[test]
fn the_occupancy_function_may_fork() {
    if child_mode().is_none() {
        return run("the_occupancy_function_may_fork", 30);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let k = *lib.kernel(c"k0").unwrap();
    let once = AtomicBool::new(false);
    let f = |_: u32| {
        if !once.swap(true, Ordering::SeqCst) {
            // SAFETY: the child only calls _exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::_exit(7) };
            }
            let mut st = 0;
            assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
            assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 7);
        }
        0usize
    };
    max_potential_block_size(k, 0, DynamicSmem::PerBlock(&f), 0, OccupancyFlags::Default).unwrap();
}

// CUDA's callback is answered from the function's answers, exactly: the stand-in's calculator
// starts at the kernel's limit of 1000 threads, a size that is no multiple of 32, so cudyn asks
// the function for it and CUDA again. With 50 bytes a thread, 1000 and 992 threads do not fit
// in 48 KiB and 960 do: answering a size it had not asked with 0 would say 1000.
#[test]
fn the_occupancy_function_answers_every_size_cuda_asks() {
    if child_mode().is_none() {
        return run("the_occupancy_function_answers_every_size_cuda_asks", 30);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    let k = *lib.kernel(c"k0").unwrap();
    let asked = RefCell::new(Vec::new());
    let f = |b: u32| {
        asked.borrow_mut().push(b);
        b as usize * 50
    };
    let c0 = s.occ_callbacks();
    let r = max_potential_block_size(k, 0, DynamicSmem::PerBlock(&f), 0, OccupancyFlags::Default).unwrap();
    assert_eq!(r.block_size, 960);
    let asked = asked.into_inner();
    assert!(asked.contains(&1000) && asked.contains(&960) && asked.contains(&32), "{asked:?}");
    assert_eq!(asked.len(), 33, "every multiple of 32 up to 1024, then 1000: each once ({asked:?})");
    assert_eq!(s.occ_callbacks() - c0, 2 * 32, "CUDA was asked twice, the second time with 1000 known");
    // With a limit: exactly the sizes CUDA tries, asked once.
    let asked = RefCell::new(Vec::new());
    let g = |b: u32| {
        asked.borrow_mut().push(b);
        0usize
    };
    let r = max_potential_block_size(k, 0, DynamicSmem::PerBlock(&g), 200, OccupancyFlags::Default).unwrap();
    assert_eq!(r.block_size, 200);
    assert_eq!(asked.into_inner(), vec![32, 64, 96, 128, 160, 192, 200]);
}

// `enumerate_kernels` racing its library's unload on another thread: counting and listing run
// under one hold of the lock, so the listing never reaches CUDA after the unload.
#[test]
fn enumerating_kernels_never_lists_an_unloaded_library() {
    if child_mode().is_none() {
        return run("enumerating_kernels_never_lists_an_unloaded_library", 120);
    }
    let s = standin();
    let mut outcomes = [0usize; 2];
    for _ in 0..20u32 {
        s.set_slow(0);
        let lib = load_cudyn(&s, &[2]);
        let libu = lib.as_raw() as usize;
        s.set_slow(2000);
        let before = s.dead_library_uses();
        let go = std::sync::Barrier::new(2);
        let r = std::thread::scope(|sc| {
            let a = sc.spawn(|| {
                go.wait();
                let mut out = [unsafe { Kernel::from_raw(1 as *mut _) }.unwrap(); 4];
                // SAFETY: a library cudyn loaded, live when the call starts; the main thread
                // unloads it through cudyn meanwhile (refused or waited for).
                unsafe { cudyn::library::enumerate_kernels(libu as *mut _, &mut out) }
            });
            go.wait();
            std::thread::sleep(Duration::from_micros(500));
            drop(lib);
            a.join().unwrap()
        });
        assert_eq!(s.dead_library_uses(), before, "a library cudyn unloaded reached CUDA ({r:?})");
        outcomes[usize::from(r.is_ok())] += 1;
    }
    s.set_slow(0);
    println!("enumerate_kernels racing the unload: {} refused, {} listed first", outcomes[0], outcomes[1]);
}

// A query of a kernel cudyn has not seen (a raw lookup on a library cudyn loaded), racing the
// library's unload. A third thread holds the read lock a little longer, so the unloader is the
// next writer: the query learns the library under the read lock, lets it go, and finds the
// library gone when it comes back to record the kernel. It must then be refused, not handed to
// CUDA as a foreign kernel.
#[test]
fn a_first_query_racing_the_unload_never_reaches_cuda_dead() {
    if child_mode().is_none() {
        return run("a_first_query_racing_the_unload_never_reaches_cuda_dead", 300);
    }
    let s = standin();
    let other = load_cudyn(&s, &[3]);
    let kc = *other.kernel(c"k0").unwrap();
    let (mut outcomes, mut pads) = ([0usize; 2], Vec::new());
    for _ in 0..40u32 {
        s.set_slow(0);
        pads.push(pad(&s));
        let lib = load_cudyn(&s, &[2]);
        let k = s.raw_kernel(&lib, c"k0").as_raw() as usize;
        s.set_slow(2000);
        let before = s.dead_kernel_uses();
        let go = std::sync::Barrier::new(3);
        let r = std::thread::scope(|sc| {
            let a = sc.spawn(|| {
                go.wait();
                // SAFETY: a live kernel (raw lookup on a library cudyn loaded) when the call
                // starts; the main thread unloads it through cudyn meanwhile.
                unsafe { Kernel::from_raw(k as *mut _) }.unwrap().param_count()
            });
            sc.spawn(|| {
                go.wait();
                std::thread::sleep(Duration::from_micros(500));
                let _ = kc.name();
            });
            go.wait();
            std::thread::sleep(Duration::from_micros(1000));
            drop(lib);
            a.join().unwrap()
        });
        assert_eq!(s.dead_kernel_uses(), before, "the dead kernel reached CUDA ({r:?})");
        match &r {
            Ok(n) => assert_eq!(*n, 2),
            Err(e) => assert_eq!(e.status, Status::InvalidArgument, "{}", e.message),
        }
        outcomes[usize::from(r.is_ok())] += 1;
    }
    s.set_slow(0);
    for l in pads {
        s.raw_unload(l);
    }
    println!("first queries racing the unload: {} refused, {} answered first", outcomes[0], outcomes[1]);
}

// `cudyn_library_get_kernel` racing `cudyn_library_unload` (the same three threads): the lookup
// ran under the read lock and records the kernel after it; if the unload came between, the
// lookup fails, and the kernel it found is dead to cudyn, never handed to CUDA.
#[test]
fn a_lookup_racing_the_unload_hands_out_no_unknown_kernel() {
    use cudyn::capi::kernel::{cudyn_kernel_name, cudyn_kernel_param_count};
    use cudyn::capi::library::{cudyn_library_get_kernel, cudyn_library_load_data, cudyn_library_unload};
    if child_mode().is_none() {
        return run("a_lookup_racing_the_unload_hands_out_no_unknown_kernel", 300);
    }
    let s = standin();
    let bytes = cubin();
    let other = load_cudyn(&s, &[3]);
    let kc = other.kernel(c"k0").unwrap().as_raw() as usize;
    let (mut outcomes, mut pads) = ([0usize; 2], Vec::new());
    for _ in 0..40u32 {
        s.set_slow(0);
        pads.push(pad(&s));
        s.next(&[2]);
        let mut lib = std::ptr::null_mut();
        assert_eq!(
            unsafe { cudyn_library_load_data(bytes.as_ptr().cast(), bytes.len(), 1, &mut lib) },
            Status::Success
        );
        let libu = lib as usize;
        s.set_slow(2000);
        let go = std::sync::Barrier::new(3);
        let (st, k) = std::thread::scope(|sc| {
            let a = sc.spawn(|| {
                go.wait();
                let mut k = std::ptr::null_mut();
                let st = unsafe { cudyn_library_get_kernel(libu as *mut _, c"k0".as_ptr(), 1, &mut k) };
                (st, k as usize)
            });
            sc.spawn(|| {
                go.wait();
                std::thread::sleep(Duration::from_micros(500));
                let mut p = std::ptr::null();
                let _ = unsafe { cudyn_kernel_name(kc as *mut _, &mut p) };
            });
            go.wait();
            std::thread::sleep(Duration::from_micros(1000));
            assert_eq!(unsafe { cudyn_library_unload(libu as *mut _, 1) }, Status::Success);
            a.join().unwrap()
        });
        s.set_slow(0);
        assert!(matches!(st, Status::Success | Status::InvalidArgument), "{st:?}");
        if st == Status::Success {
            // Found before the unload: the unload made it dead, and cudyn refuses it.
            let before = s.dead_kernel_uses();
            let mut n = 0usize;
            assert_eq!(unsafe { cudyn_kernel_param_count(k as *mut _, &mut n) }, Status::InvalidArgument);
            assert_eq!(s.dead_kernel_uses(), before, "a kernel cudyn returned reached CUDA dead");
        }
        outcomes[usize::from(st == Status::Success)] += 1;
    }
    for l in pads {
        s.raw_unload(l);
    }
    println!("lookups racing the unload: {} refused, {} found first", outcomes[0], outcomes[1]);
}

// A driver that reports 2^32 - 1 kernels in a library, then 2^31 - 1 devices: listing,
// looking up by C++ name and loading answer with an error (or go on), never abort.
#[test]
fn a_drivers_counts_size_nothing_unbounded() {
    if child_mode().is_none() {
        return run("a_drivers_counts_size_nothing_unbounded", 60);
    }
    let s = standin();
    let lib = load_cudyn(&s, &[2]);
    s.set_kernel_count(u32::MAX);
    let e = lib.kernels().unwrap_err();
    assert_eq!(e.status, Status::Cuda, "{}", e.message);
    assert!(e.message.contains("4294967295 kernels"), "{}", e.message);
    // A name that needs the listing (no exact symbol of it).
    assert!(lib.kernel(c"k0(int, int)").is_err());
    s.set_kernel_count(0);
    assert_eq!(lib.kernels().unwrap().len(), 1);
    drop(lib);
    s.set_device_count(i32::MAX);
    let d = cudyn::cuda::driver::driver().unwrap();
    let e = d.device_count().unwrap_err();
    assert!(e.message.contains("2147483647 devices"), "{}", e.message);
    // The load goes on without the devices' list (nothing to choose by: every entry is kept).
    let r = Library::load_data(&cubin(), Api::Driver);
    println!("load with 2^31 - 1 devices reported: {:?}", r.as_ref().err().map(|e| &e.message));
    s.set_device_count(0);
}

// A fork while another thread is inside the first reading of the GPUs' compute capabilities
// (each attribute takes 300 ms here): the fork waits for it, and the child's own load returns
// (the stand-in fails every call in a child, as the real driver does) instead of hanging on an
// initialisation a thread it does not have was running.
#[test]
fn a_fork_during_the_first_device_query_leaves_no_child_hanging() {
    if child_mode().is_none() {
        return run("a_fork_during_the_first_device_query_leaves_no_child_hanging", 60);
    }
    let s = standin();
    s.set_attribute_wait(300);
    let bytes = cubin();
    let t = std::thread::spawn(move || Library::load_data(&cubin(), Api::Driver).map(drop));
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: the child calls cudyn, then _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: async-signal-safe; a hung child dies of SIGALRM.
        unsafe { libc::alarm(10) };
        let r = Library::load_data(&bytes, Api::Driver);
        let _ = cudyn::library::validate(&bytes);
        // SAFETY: leave without the parent's destructors.
        unsafe { libc::_exit(if r.is_err() { 0 } else { 3 }) };
    }
    let mut st = 0;
    // SAFETY: our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
    assert!(!libc::WIFSIGNALED(st), "the child hung (signal {})", libc::WTERMSIG(st));
    assert_eq!(libc::WEXITSTATUS(st), 0, "the child's load through a forked driver should fail");
    s.set_attribute_wait(0);
    t.join().unwrap().unwrap();
}
