//! kernel_race: safe Rust only. One thread asks a `Kernel` (the bare handle a `LibraryKernel`
//! gives, `Send + Sync`) for its parameters, its name, its function and a launch check, while
//! another thread drops the kernel's `Library` and loads one whose kernel has four parameters
//! (CUDA often puts it at the same address). Every answer must be for a live kernel or a
//! refusal of the dead one; nothing may reach CUDA with the kernel being freed (the process
//! would die in the driver), and the new kernel is always checked against its own four
//! parameters, never a layout left by the old one at that address.
//!
//! `source scripts/env.sh && cargo run --release --example kernel_race [ROUNDS=3000]`
//!
//! Needs a GPU and NVRTC; without them it says so and exits 0 (1 with `CUDYN_REQUIRE_GPU=1`).
//! Prints one line per query kind and exits 1 on any wrong answer.

use cudyn::{Api, CompileOptions, Kernel, LaunchConfig, Library, Status};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

const TWO: &str = r#"extern "C" __global__ void k(int* x, int n) { if (n) x[0] = n; }"#;
const FOUR: &str =
    r#"extern "C" __global__ void k(const int* a, const int* b, int* c, int n) { if (n) c[0] = a[0] + b[0]; }"#;

#[derive(Clone, Copy, Debug)]
enum Ask {
    Params,
    Name,
    Function,
    Validate,
}

fn main() -> ExitCode {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3000);
    let require = std::env::var("CUDYN_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let compile = |src: &str| cudyn::compile::compile(src, "k.cu", &CompileOptions::default());
    let (two, four) = match (compile(TWO), compile(FOUR)) {
        (Ok(a), Ok(b)) => (a.code, b.code),
        (Err(f), _) | (_, Err(f)) => return skip_or_fail(require, &f.error.message),
    };
    if let Err(e) = cudyn::device_count() {
        return skip_or_fail(require, &e.message);
    }
    let mut ok = true;
    for ask in [Ask::Params, Ask::Name, Ask::Function, Ask::Validate] {
        match race(ask, rounds, &two, &four) {
            Ok(line) => println!("{line}"),
            Err(why) => {
                eprintln!("kernel_race: FAILED: {ask:?}: {why}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn skip_or_fail(require: bool, why: &str) -> ExitCode {
    if require {
        eprintln!("kernel_race: FAILED: CUDYN_REQUIRE_GPU=1 but {why}");
        ExitCode::FAILURE
    } else {
        println!("kernel_race: skipped: {why}");
        ExitCode::SUCCESS
    }
}

fn race(ask: Ask, rounds: usize, two: &[u8], four: &[u8]) -> Result<String, String> {
    // The round the asker may start (usize::MAX: none yet) and the last it finished.
    let go = AtomicUsize::new(usize::MAX);
    let done = AtomicUsize::new(usize::MAX);
    let current = AtomicPtr::<std::ffi::c_void>::new(std::ptr::null_mut());
    let (answered, refused) = (AtomicI64::new(0), AtomicI64::new(0));
    let wrong = Mutex::new(None::<String>);
    let stop = AtomicBool::new(false);
    let mut reused = 0usize;
    std::thread::scope(|s| -> Result<(), String> {
        s.spawn(|| {
            for r in 0..rounds {
                while go.load(Ordering::Acquire) != r {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::yield_now();
                }
                // SAFETY: the handle was handed out by cudyn for a library cudyn loaded; it may
                // be unloaded meanwhile, which cudyn refuses without calling CUDA.
                let k = unsafe { Kernel::from_raw(current.load(Ordering::Acquire).cast()) }.expect("not NULL");
                for _ in 0..20 {
                    let got = match ask {
                        Ask::Params => {
                            k.params().map(|p| (p.len() == 2 || p.len() == 4, format!("{} params", p.len())))
                        }
                        Ask::Name => k.name().map(|n| (n.as_bytes() == b"k", format!("name {n:?}"))),
                        Ask::Function => k.function().map(|f| (!f.is_null(), "function".to_string())),
                        Ask::Validate => {
                            // Three arguments fit neither kernel: refused for its count.
                            let x: *mut i32 = std::ptr::null_mut();
                            match k.validate_launch(&LaunchConfig::for_num_elems(16), &(x, x, 0i32)) {
                                Err(e) if e.status == Status::ArgumentMismatch => Ok((true, String::new())),
                                Ok(()) => Ok((false, "three arguments accepted".to_string())),
                                Err(e) => Err(e),
                            }
                        }
                    };
                    match got {
                        Ok((true, _)) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok((false, what)) => {
                            wrong.lock().unwrap().get_or_insert(format!("round {r}: a wrong answer: {what}"));
                            break;
                        }
                        Err(e) if e.status == Status::InvalidArgument && e.message.contains("unloaded") => {
                            refused.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        Err(e) => {
                            wrong.lock().unwrap().get_or_insert(format!(
                                "round {r}: {}: {}",
                                e.status.c_name(),
                                e.message
                            ));
                            break;
                        }
                    }
                }
                done.store(r, Ordering::Release);
            }
        });
        let result = (|| {
            for r in 0..rounds {
                let api = if r % 2 == 1 { Api::Driver } else { Api::Runtime };
                let a = Library::load_data(two, api).map_err(|e| e.message)?;
                let old = a.kernel(c"k").map_err(|e| e.message)?.kernel();
                current.store(old.as_raw().cast(), Ordering::Release);
                go.store(r, Ordering::Release);
                for _ in 0..(r * 7919) % 20000 {
                    std::hint::spin_loop();
                }
                drop(a);
                let b = Library::load_data(four, api).map_err(|e| e.message)?;
                let new = b.kernel(c"k").map_err(|e| e.message)?;
                while done.load(Ordering::Acquire) != r {
                    std::thread::yield_now();
                }
                reused += usize::from(new.kernel() == old);
                // The new kernel answers with its own four parameters, whatever was asked meanwhile.
                let n = new.param_count().map_err(|e| e.message)?;
                if n != 4 {
                    return Err(format!("round {r}: the new kernel has {n} parameters, not 4 (an old layout kept)"));
                }
                let x: *mut i32 = std::ptr::null_mut();
                match new.validate_launch(&LaunchConfig::for_num_elems(16).with_api(api), &(x, 0i32)) {
                    Err(e) if e.status == Status::ArgumentMismatch => {}
                    other => return Err(format!("round {r}: two arguments for four parameters gave {other:?}")),
                }
            }
            Ok(())
        })();
        // An early error leaves the asker waiting for a round that never comes.
        stop.store(true, Ordering::Release);
        result
    })?;
    if let Some(w) = wrong.into_inner().unwrap() {
        return Err(w);
    }
    Ok(format!(
        "{:<9} x {rounds} rounds: {} answers for the live kernel, {} refusals of the dead one, new kernel at the same address {reused} times, no crash",
        format!("{ask:?}"),
        answered.into_inner(),
        refused.into_inner()
    ))
}
