//! vec_add: compile CUDA C++ with NVRTC (through cudyn's compile cache), load the cubin through
//! the runtime, then launch the kernel with typed, size-checked arguments through the runtime
//! and through the driver, and check the sums.
//!
//! `source scripts/env.sh && cargo run --example vec_add`
//!
//! Without a GPU (or without NVRTC) it compiles what it can, says what it skipped, and exits 0
//! (exit 1 instead with `CUDYN_REQUIRE_GPU=1`, as in scripts/gpu-suite.sh, so a GPU run that
//! finds no GPU fails rather than skips).
//! cudyn loads and launches but does not manage memory: the device buffers come from the CUDA
//! runtime cudyn opened (found again with `dlopen(RTLD_NOLOAD)`, so nothing is linked).

use cudyn::{Api, CompileOptions, LaunchConfig, Library, Status};
use std::ffi::{c_void, CStr};
use std::process::ExitCode;

const SOURCE: &str = r#"
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

const N: u32 = 100_000;

/// Why the example stopped early: nothing to run on (exit 0), or a real failure (exit 1).
enum Stop {
    Skip(String),
    Fail(String),
}

impl From<cudyn::Error> for Stop {
    fn from(e: cudyn::Error) -> Stop {
        Stop::Fail(format!("{}: {}", e.status.c_name(), e.message))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Skip(why)) if std::env::var("CUDYN_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            eprintln!("vec_add: FAILED: CUDYN_REQUIRE_GPU=1 but {why}");
            ExitCode::FAILURE
        }
        Err(Stop::Skip(why)) => {
            println!("vec_add: skipped: {why}");
            ExitCode::SUCCESS
        }
        Err(Stop::Fail(why)) => {
            eprintln!("vec_add: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Stop> {
    // 1. Compile (for the present GPU, or sm_90 without one); a second run is a cache hit.
    let compiled = match cudyn::compile::compile(SOURCE, "vec_add.cu", &CompileOptions::default()) {
        Ok(c) => c,
        Err(f) if f.error.status == Status::NvrtcNotFound => return Err(Stop::Skip(f.error.message)),
        // CompileFailure converts into cudyn::Error, NVRTC's log kept in the message.
        Err(f) => return Err(cudyn::Error::from(f).into()),
    };
    println!(
        "compiled vec_add.cu to a {}-byte {} for sm_{}{}",
        compiled.code.len(),
        compiled.kind,
        compiled.sm,
        if compiled.from_cache { " (from the cache)" } else { "" }
    );

    // 2. Is there a GPU to load it on?
    let devices = match cudyn::device_count() {
        Ok(n) => n,
        Err(e) => {
            return Err(Stop::Skip(format!("no GPU to load and launch on ({}: {})", e.status.c_name(), e.message)))
        }
    };
    println!("{devices} CUDA device(s)");

    // 3. Load through the runtime; the kernel is borrowed from the library.
    let lib = Library::load_data(&compiled.code, Api::Runtime)?;
    let k = lib.kernel(c"vec_add")?;
    println!("kernel {:?}: {} parameters", k.name()?, k.param_count()?);

    let rt = Cudart::find().map_err(Stop::Fail)?;
    let bytes = N as usize * std::mem::size_of::<f32>();
    let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| 2.0 * i as f32).collect();
    let (da, db, dc) = (rt.alloc(bytes)?, rt.alloc(bytes)?, rt.alloc(bytes)?);
    rt.upload(da, &a)?;
    rt.upload(db, &b)?;

    // 4. Launch, typed: (pointer, pointer, pointer, u32) against (const float*, const float*,
    // float*, unsigned). The same handle launches through either API.
    for api in [Api::Runtime, Api::Driver] {
        rt.upload(dc, &vec![0.0f32; N as usize])?;
        let cfg = LaunchConfig::for_num_elems(N).with_api(api);
        // SAFETY: da, db and dc each hold N floats on the device and vec_add touches indices
        // below n only; the stream is the default one.
        unsafe { k.launch(&cfg, (da as *const f32, db as *const f32, dc as *mut f32, N)) }?;
        let mut c = vec![0.0f32; N as usize];
        rt.download(&mut c, dc)?;
        if let Some(i) = (0..N as usize).find(|&i| c[i] != a[i] + b[i]) {
            return Err(Stop::Fail(format!("through the {}: c[{i}] = {}, not {}", api, c[i], a[i] + b[i])));
        }
        println!("launched through the {}: all {N} sums are right", api);
    }

    // 5. A wrongly typed argument is refused before CUDA sees it: n as a u64 is 8 bytes, the
    // kernel's `unsigned n` is 4.
    // SAFETY: as above (and nothing is launched: the size check refuses it).
    let e = unsafe { k.launch(&LaunchConfig::for_num_elems(N), (da, db, dc, u64::from(N))) }
        .expect_err("an 8-byte argument for a 4-byte parameter must be refused");
    assert_eq!(e.status, Status::ArgumentMismatch);
    println!("refused as expected: {}", e.message);

    for p in [da, db, dc] {
        rt.free(p);
    }
    lib.unload()?;
    Ok(())
}

/// The few CUDA runtime calls the example needs for memory, from the libcudart cudyn opened.
struct Cudart {
    malloc: MallocFn,
    memcpy: MemcpyFn,
    free: FreeFn,
}

type MallocFn = unsafe extern "C" fn(*mut *mut c_void, usize) -> i32;
type MemcpyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, i32) -> i32;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> i32;

const HOST_TO_DEVICE: i32 = 1;
const DEVICE_TO_HOST: i32 = 2;

impl Cudart {
    /// The runtime cudyn loaded the library through (already in the process).
    fn find() -> Result<Cudart, String> {
        for name in [c"libcudart.so.13", c"libcudart.so.12"] {
            // SAFETY: RTLD_NOLOAD only finds a library already loaded; loads nothing.
            let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
            if h.is_null() {
                continue;
            }
            let sym = |s: &CStr| {
                // SAFETY: h is a live handle; s is NUL-terminated.
                let p = unsafe { libc::dlsym(h, s.as_ptr()) };
                if p.is_null() {
                    Err(format!("{} has no {}", name.to_string_lossy(), s.to_string_lossy()))
                } else {
                    Ok(p)
                }
            };
            // SAFETY: the CUDA runtime's own prototypes for these three entry points.
            return unsafe {
                Ok(Cudart {
                    malloc: std::mem::transmute::<*mut c_void, MallocFn>(sym(c"cudaMalloc")?),
                    memcpy: std::mem::transmute::<*mut c_void, MemcpyFn>(sym(c"cudaMemcpy")?),
                    free: std::mem::transmute::<*mut c_void, FreeFn>(sym(c"cudaFree")?),
                })
            };
        }
        Err("the CUDA runtime cudyn loaded through is not in the process".into())
    }

    fn check(&self, r: i32, what: &str) -> Result<(), Stop> {
        if r == 0 {
            Ok(())
        } else {
            Err(Stop::Fail(format!("{what} failed: cudaError {r}")))
        }
    }

    fn alloc(&self, bytes: usize) -> Result<*mut c_void, Stop> {
        let mut p = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        self.check(unsafe { (self.malloc)(&mut p, bytes) }, "cudaMalloc")?;
        Ok(p)
    }

    fn upload(&self, dst: *mut c_void, src: &[f32]) -> Result<(), Stop> {
        // SAFETY: dst is a device allocation of at least src's size (all are N floats).
        let r = unsafe { (self.memcpy)(dst, src.as_ptr().cast(), std::mem::size_of_val(src), HOST_TO_DEVICE) };
        self.check(r, "cudaMemcpy to the device")
    }

    /// A synchronous copy on the legacy default stream: it waits for the launch before it.
    fn download(&self, dst: &mut [f32], src: *mut c_void) -> Result<(), Stop> {
        // SAFETY: src is a device allocation of at least dst's size.
        let r = unsafe { (self.memcpy)(dst.as_mut_ptr().cast(), src, std::mem::size_of_val(dst), DEVICE_TO_HOST) };
        self.check(r, "cudaMemcpy to the host")
    }

    fn free(&self, p: *mut c_void) {
        // SAFETY: an allocation of alloc, freed once.
        unsafe { (self.free)(p) };
    }
}
