//! A failing cudyn call made while a thread exits — from a pthread key destructor, which glibc
//! runs after the thread's Rust thread-locals were destroyed — returns its status and the
//! process goes on (it used to abort: the last-error thread-local was used after destruction).
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
