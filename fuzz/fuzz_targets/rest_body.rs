#![no_main]
//! See `registry_svc::fuzzing::rest_body`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| registry_svc::fuzzing::rest_body(data));
