//! Tests, ported from upstream's (each named after its upstream test case).

mod fixture;
mod serialize_tests;
