//! Load options through the C API, without a GPU: every option is checked before anything is
//! opened or loaded, a bad one is CUDYN_ERROR_INVALID_ARGUMENT naming it, and the outputs stay
//! as they were.

use cudyn::capi::compile::cudyn_buffer;
use cudyn::capi::error::cudyn_last_error_message;
use cudyn::capi::library::cudyn_library_load_data_ex;
use cudyn::load_options::LoadOptionId;
use cudyn::LoadOption;
use cudyn::{Api, Status};
use std::ffi::CStr;

fn load(options: &[LoadOption], api: Api) -> (Status, String, usize, usize) {
    let image = b".version 8.0\n.target sm_90\n.address_size 64\n";
    let sentinel = 0x5a5a as *mut _;
    let mut lib = sentinel;
    let mut log = cudyn_buffer { data: 0x77 as *mut _, size: 3 };
    // SAFETY: valid image, options slice, and output pointers.
    let s = unsafe {
        cudyn_library_load_data_ex(
            image.as_ptr().cast(),
            image.len(),
            api as u32,
            options.as_ptr(),
            options.len(),
            &mut lib,
            &mut log,
        )
    };
    // SAFETY: cudyn's message is a NUL-terminated string of this thread.
    let msg = unsafe { CStr::from_ptr(cudyn_last_error_message()) }.to_string_lossy().into_owned();
    assert_eq!(lib, sentinel, "the library output is written only on success");
    (s, msg, log.data as usize, log.size)
}

fn o(id: LoadOptionId, value: i64) -> LoadOption {
    LoadOption { id: id as u32, value }
}

#[test]
fn bad_options_are_refused_before_anything_loads() {
    let cases: Vec<(Vec<LoadOption>, Api, &str)> = vec![
        (vec![LoadOption { id: 0, value: 1 }], Api::Driver, "unknown id 0"),
        (vec![LoadOption { id: 77, value: 1 }], Api::Runtime, "unknown id 77"),
        (vec![o(LoadOptionId::MaxRegisters, 0)], Api::Driver, "MAX_REGISTERS must be 1..=255"),
        (vec![o(LoadOptionId::OptimizationLevel, 9)], Api::Driver, "0..=4"),
        (vec![o(LoadOptionId::LogVerbose, 1), o(LoadOptionId::LogVerbose, 0)], Api::Driver, "given twice"),
        (vec![o(LoadOptionId::Target, 90)], Api::Runtime, "load through CUDYN_API_DRIVER"),
        (vec![LoadOption { id: 3, value: 1 }], Api::Driver, "formerly CUDYN_LOAD_OPTION_FAST_COMPILE"),
        (vec![o(LoadOptionId::Target, 91)], Api::Driver, "cudyn_jit_target"),
        (vec![o(LoadOptionId::ThreadsPerBlock, 64), o(LoadOptionId::Target, 90)], Api::Driver, "cannot be combined"),
    ];
    for (opts, api, want) in cases {
        let (s, msg, data, size) = load(&opts, api);
        assert_eq!(s, Status::InvalidArgument, "{opts:?}: {msg}");
        assert!(msg.contains(want), "{opts:?}: '{msg}' should say '{want}'");
        assert_eq!((data, size), (0x77, 3), "the log output is left as it was");
    }
}

#[test]
fn options_need_a_pointer_when_counted() {
    let mut lib = std::ptr::null_mut();
    let img = b".version 8.0\n.target sm_90\n";
    // SAFETY: NULL options with a count: refused before use.
    let s = unsafe {
        cudyn_library_load_data_ex(
            img.as_ptr().cast(),
            img.len(),
            1,
            std::ptr::null(),
            2,
            &mut lib,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(s, Status::InvalidArgument);
    assert!(lib.is_null());
}
