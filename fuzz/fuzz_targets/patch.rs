#![no_main]
//! See `registry_svc::fuzzing::patch`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| registry_svc::fuzzing::patch(data));
