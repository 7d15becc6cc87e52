#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bondry_fuzz::openapi(data));
