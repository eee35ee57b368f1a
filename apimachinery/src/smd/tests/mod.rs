//! Tests, ported from upstream's (each named after its upstream test or test case).

mod fixture;
mod merge_tests;
mod parsers;
mod serialize_tests;
mod unit_tests;
