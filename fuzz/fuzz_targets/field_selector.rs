#![no_main]
//! See `registry_svc::fuzzing::field_selector`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| registry_svc::fuzzing::field_selector(data));
