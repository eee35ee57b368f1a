#![no_main]
//! See `storage_svc::fuzzing::object_wire`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| storage_svc::fuzzing::object_wire(data));
