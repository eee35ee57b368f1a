#![no_main]
//! See `storage_svc::fuzzing::selector`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| storage_svc::fuzzing::selector(data));
