//! The Rust API's error types: a failed compile or link is a `std::error::Error` with the
//! compiler's log in its text, and converts into `cudyn::Error` (for `?`) without losing the
//! status, the CUDA code or the log.

mod common;

use cudyn::compile::{compile, CompileFailure, CompileOptions};
use cudyn::link::LinkFailure;
use cudyn::{Error, Status};

fn as_std_error<E: std::error::Error + Send + Sync + 'static>(e: E) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(e)
}

#[test]
fn a_compile_failure_is_an_error_and_converts_with_its_log() {
    let f = CompileFailure {
        error: Error::with_code(Status::CompileFailed, 6, "compiling 'x.cu' failed"),
        log: "x.cu(1): error: expected a \";\"\n\n".into(),
    };
    assert_eq!(f.to_string(), "compiling 'x.cu' failed\nx.cu(1): error: expected a \";\"");
    assert_eq!(as_std_error(f.clone()).to_string(), f.to_string());
    let e: Error = f.into();
    assert_eq!(e.status, Status::CompileFailed);
    assert_eq!(e.cuda_code, 6);
    assert!(e.message.ends_with("error: expected a \";\""), "{}", e.message);
    // Without a log the message is the error's own, unchanged.
    let e: Error = CompileFailure::from(Error::new(Status::NvrtcNotFound, "no NVRTC")).into();
    assert_eq!((e.status, e.message.as_str()), (Status::NvrtcNotFound, "no NVRTC"));
}

#[test]
fn a_link_failure_is_an_error_and_converts_with_its_log() {
    let f = LinkFailure { error: Error::new(Status::LinkFailed, "linking failed"), log: "undefined: f".into() };
    assert_eq!(as_std_error(f.clone()).to_string(), "linking failed\nundefined: f");
    let e: Error = f.into();
    assert_eq!((e.status, e.message.as_str()), (Status::LinkFailed, "linking failed\nundefined: f"));
}

/// A real NVRTC failure, through `?` into `cudyn::Result`: NVRTC's own diagnostic survives.
#[test]
fn a_real_compile_error_survives_the_question_mark() {
    common::require_project_env();
    fn build() -> cudyn::Result<Vec<u8>> {
        let opts = CompileOptions { options: vec!["-arch=sm_90".into()], ..Default::default() };
        Ok(compile("extern \"C\" __global__ void k( {}\n", "broken.cu", &opts)?.code)
    }
    let e = build().unwrap_err();
    assert_eq!(e.status, Status::CompileFailed, "{}", e.message);
    assert!(e.message.contains("broken.cu(1): error"), "{}", e.message);
}
