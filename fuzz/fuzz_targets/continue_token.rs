#![no_main]
//! See `storage_svc::fuzzing::continue_token`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| storage_svc::fuzzing::continue_token(data));
