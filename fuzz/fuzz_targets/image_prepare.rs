#![no_main]
// The check lives in cudyn::fuzzing so tests/fuzz_regression.rs runs the same one.
libfuzzer_sys::fuzz_target!(|data: &[u8]| cudyn::fuzzing::image_prepare(data));
