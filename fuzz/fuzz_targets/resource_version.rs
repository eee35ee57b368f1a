#![no_main]
//! See `storage_svc::fuzzing::resource_version`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| storage_svc::fuzzing::resource_version(data));
