#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bondry_fuzz::uri_template(data));
