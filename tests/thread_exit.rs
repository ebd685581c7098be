//! A failing cudyn call made while a thread exits — from a pthread key destructor, which glibc
//! runs after the thread's Rust thread-locals were destroyed, or from a Rust thread-local's own
//! destructor — returns its status and the process goes on (it used to abort: the last-error
//! thread-local, and the occupancy query's, were used after destruction).
//!
//! Run with `cargo test --test thread_exit`.

mod common;

use common::*;
use cudyn::capi::compile::cudyn_compile;
use cudyn::capi::error::cudyn_last_error_message;
use std::sync::atomic::{AtomicI32, Ordering};

/// The status the destructor's cudyn call returned (-1: the destructor did not run).
static FROM_DESTRUCTOR: AtomicI32 = AtomicI32::new(-1);
/// 1 when cudyn_last_error_message returned a non-NULL pointer in the destructor.
static MESSAGE_NOT_NULL: AtomicI32 = AtomicI32::new(-1);

extern "C" fn destructor(_value: *mut libc::c_void) {
    // SAFETY: NULL source is the failure under test; the outputs are never written on failure.
    let s = unsafe {
        cudyn_compile(
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            0,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    FROM_DESTRUCTOR.store(s as i32, Ordering::SeqCst);
    MESSAGE_NOT_NULL.store(i32::from(!cudyn_last_error_message().is_null()), Ordering::SeqCst);
}

#[test]
fn failing_call_from_a_pthread_key_destructor_does_not_abort() {
    const TEST: &str = "failing_call_from_a_pthread_key_destructor_does_not_abort";
    if child_mode().as_deref() == Some("tls") {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: a valid out-pointer and an extern "C" destructor.
        assert_eq!(unsafe { libc::pthread_key_create(&mut key, Some(destructor)) }, 0);
        std::thread::spawn(move || {
            // A failure first, so this thread's last-error slot exists (and is destroyed at exit).
            // SAFETY: as in the destructor.
            let s = unsafe {
                cudyn_compile(
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                    0,
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(s as i32, 1, "CUDYN_ERROR_INVALID_ARGUMENT");
            // SAFETY: a key from pthread_key_create; any non-NULL value makes the destructor run.
            assert_eq!(unsafe { libc::pthread_setspecific(key, std::ptr::addr_of!(FROM_DESTRUCTOR).cast()) }, 0);
        })
        .join()
        .unwrap();
        assert_eq!(FROM_DESTRUCTOR.load(Ordering::SeqCst), 1, "the destructor's call returns INVALID_ARGUMENT");
        assert_eq!(MESSAGE_NOT_NULL.load(Ordering::SeqCst), 1, "cudyn_last_error_message is never NULL");
        println!("tls-child-done");
        return;
    }
    let out = expect_child_ok(spawn_child(TEST, "tls", &[]), "tls");
    assert!(String::from_utf8_lossy(&out.stdout).contains("tls-child-done"));
}

/// `cudyn_occupancy_max_potential_block_size` with a block-size callback, from a pthread key
/// destructor: its status (no driver here), not INTERNAL from a panic.
static OCC_FROM_DESTRUCTOR: AtomicI32 = AtomicI32::new(-1);

unsafe extern "C" fn smem(block: i32, _user: *mut libc::c_void) -> usize {
    block as usize * 4
}

fn occupancy_call() -> i32 {
    let (mut g, mut b) = (0, 0);
    // SAFETY: a handle cudyn does not know is put to the driver, which cannot be opened here.
    let s = unsafe {
        cudyn::capi::occupancy::cudyn_occupancy_max_potential_block_size(
            0x1000 as _,
            0,
            0,
            Some(smem),
            std::ptr::null_mut(),
            0,
            0,
            &mut g,
            &mut b,
        )
    };
    s as i32
}

extern "C" fn occupancy_destructor(_value: *mut libc::c_void) {
    OCC_FROM_DESTRUCTOR.store(occupancy_call(), Ordering::SeqCst);
}

/// A Rust thread-local whose destructor asks for occupancy (registered before cudyn's own).
struct AsksOnDrop;
impl Drop for AsksOnDrop {
    fn drop(&mut self) {
        // SAFETY: as in `occupancy_call`.
        let k = unsafe { cudyn::Kernel::from_raw(0x1000 as _) }.unwrap();
        let f = |b: u32| b as usize * 4;
        let r = cudyn::occupancy::max_potential_block_size(
            k,
            0,
            cudyn::occupancy::DynamicSmem::PerBlock(&f),
            0,
            cudyn::occupancy::OccupancyFlags::Default,
        );
        OCC_FROM_RUST_TLS.store(r.map_or_else(|e| e.status as i32, |_| 0), Ordering::SeqCst);
    }
}
static OCC_FROM_RUST_TLS: AtomicI32 = AtomicI32::new(-1);
thread_local! { static ASKS: std::cell::RefCell<Option<AsksOnDrop>> = const { std::cell::RefCell::new(None) }; }

#[test]
fn occupancy_while_a_thread_exits_returns_its_status() {
    const TEST: &str = "occupancy_while_a_thread_exits_returns_its_status";
    if child_mode().as_deref() == Some("occ") {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: a valid out-pointer and an extern "C" destructor.
        assert_eq!(unsafe { libc::pthread_key_create(&mut key, Some(occupancy_destructor)) }, 0);
        std::thread::spawn(move || {
            ASKS.with(|a| *a.borrow_mut() = Some(AsksOnDrop));
            assert_eq!(occupancy_call(), 2, "CUDYN_ERROR_DRIVER_NOT_FOUND");
            // SAFETY: a key from pthread_key_create; any non-NULL value makes the destructor run.
            assert_eq!(unsafe { libc::pthread_setspecific(key, std::ptr::addr_of!(OCC_FROM_DESTRUCTOR).cast()) }, 0);
        })
        .join()
        .unwrap();
        assert_eq!(OCC_FROM_DESTRUCTOR.load(Ordering::SeqCst), 2, "from the pthread key destructor");
        assert_eq!(OCC_FROM_RUST_TLS.load(Ordering::SeqCst), 2, "from the Rust thread-local's destructor");
        println!("occ-child-done");
        return;
    }
    let out = expect_child_ok(spawn_child(TEST, "occ", &[("CUDYN_LIBCUDA", "/nonexistent/libcuda.so.1")]), "occ");
    assert!(String::from_utf8_lossy(&out.stdout).contains("occ-child-done"));
}
