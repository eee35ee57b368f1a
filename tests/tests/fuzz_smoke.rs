//! Issue 10: the fuzz targets (`fuzz/fuzz_targets/`) run here on their seed corpus
//! (`fuzz/corpus/`) and 20,000 mutations of it each, deterministically. This is CI's smoke run:
//! cargo-fuzz needs a nightly compiler, which CI machines do not have; the coverage-guided runs
//! are documented in RELIABILITY.md.

use kubestore_tests::mutate::{Rng, corpus, mutate};

const ROUNDS: usize = 20_000;

fn run(target: &str, f: fn(&[u8])) {
    let seeds = corpus(target);
    for s in &seeds {
        f(s);
    }
    let mut rng = Rng::new(0x6b75_6265_7374_6f72);
    for _ in 0..ROUNDS {
        let s = &seeds[rng.below(seeds.len())];
        f(&mutate(&mut rng, s));
    }
}

#[test]
fn object_wire() {
    run("object_wire", storage_svc::fuzzing::object_wire);
}

#[test]
fn key() {
    run("key", storage_svc::fuzzing::key);
}

#[test]
fn continue_token() {
    run("continue_token", storage_svc::fuzzing::continue_token);
}

#[test]
fn resource_version() {
    run("resource_version", storage_svc::fuzzing::resource_version);
}

#[test]
fn selector() {
    run("selector", storage_svc::fuzzing::selector);
}

#[test]
fn label_selector() {
    run("label_selector", registry_svc::fuzzing::label_selector);
}

#[test]
fn field_selector() {
    run("field_selector", registry_svc::fuzzing::field_selector);
}

#[test]
fn quantity() {
    run("quantity", registry_svc::fuzzing::quantity);
}

#[test]
fn rest_body() {
    run("rest_body", registry_svc::fuzzing::rest_body);
}

#[test]
fn patch() {
    run("patch", registry_svc::fuzzing::patch);
}

#[test]
fn rest_query() {
    run("rest_query", registry_svc::fuzzing::rest_query);
}
