//! Compiles the .proto files with protoc (Debian's `protobuf-compiler`), and writes one file
//! descriptor set per served package for gRPC server reflection.
//!
//! The two services' packages are compiled separately so that each gets its own codec (whose
//! errors name the service's ErrorInfo domain, see `src/codec.rs`) and its own descriptor set:
//! storage-svc reflects `storage.v1`, registry-svc `core.v1`, each with what they import.
//!
//! pbjson-build then writes serde impls following the proto3 JSON mapping (camelCase names:
//! `nodeName`, `resourceVersion`, which are Kubernetes' own field names), used by the CLI for
//! manifests and `-o json|yaml`. Well-known types come from pbjson-types for the same reason.

use std::{env, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    for p in [
        "meta/v1/meta.proto",
        "storage/v1/storage.proto",
        "core/v1/core.proto",
        "apiextensions/v1/apiextensions.proto",
        "coordination/v1/coordination.proto",
        "events/v1/events.proto",
        "rbac/v1/rbac.proto",
        "admissionregistration/v1/admissionregistration.proto",
        "registry/v1/resources.proto",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    let configure = || {
        tonic_prost_build::configure()
            // BTreeMap gives a deterministic encoding: storage skips writes whose bytes are
            // unchanged, which only works when equal objects encode to equal bytes.
            .btree_map(".")
            // Not prost-types' Timestamp (the default), but pbjson-types', which has the JSON
            // mapping; `compile_well_known_types` only turns the default mapping off.
            .compile_well_known_types(true)
            .extern_path(".google.protobuf", "::pbjson_types")
    };
    configure()
        // Watch events and list items are shared between many watchers, or taken from the
        // watch cache, without copying.
        .bytes(".storage.v1.WatchEvent.object")
        .bytes(".storage.v1.ListResponse.items")
        .bytes(".storage.v1.GetResponse.object")
        .codec_path("crate::codec::StorageCodec")
        .file_descriptor_set_path(out.join("storage_descriptor.bin"))
        .compile_protos(&["meta/v1/meta.proto", "storage/v1/storage.proto"], &["."])?;
    configure()
        .codec_path("crate::codec::RegistryCodec")
        .file_descriptor_set_path(out.join("core_descriptor.bin"))
        .compile_protos(
            &[
                "core/v1/core.proto",
                "apiextensions/v1/apiextensions.proto",
                "coordination/v1/coordination.proto",
                "events/v1/events.proto",
                "rbac/v1/rbac.proto",
                "admissionregistration/v1/admissionregistration.proto",
                "registry/v1/resources.proto",
            ],
            &["."],
        )?;
    for (set, packages) in [
        ("storage_descriptor.bin", &[".meta.v1", ".storage.v1"][..]),
        (
            "core_descriptor.bin",
            &[
                ".core.v1",
                ".apiextensions.v1",
                ".coordination.v1",
                ".events.v1",
                ".rbac.v1",
                ".admissionregistration.v1",
                ".registry.v1",
            ][..],
        ),
    ] {
        let descriptors = std::fs::read(out.join(set))?;
        pbjson_build::Builder::new()
            .register_descriptors(&descriptors)?
            .btree_map(["."])
            // Manifests carry fields kubestore does not model (ports, env, ...): the CLI reports
            // what it drops instead of refusing the whole manifest.
            .ignore_unknown_fields()
            .build(packages)?;
    }
    // Kubernetes' own protobuf, for the REST API's protobuf bodies: descriptors only (the
    // bodies are transcoded to JSON with them), so protoc alone, no generated code.
    let k8s = [
        "k8s/meta.proto",
        "k8s/runtime.proto",
        "k8s/resource.proto",
        "k8s/intstr.proto",
        "k8s/core.proto",
        "k8s/coordination.proto",
        "k8s/events.proto",
        "k8s/rbac.proto",
        "k8s/authorization.proto",
        "k8s/authentication.proto",
    ];
    for p in k8s {
        println!("cargo:rerun-if-changed={p}");
    }
    let protoc = env::var("PROTOC").unwrap_or_else(|_| "protoc".into());
    let status = std::process::Command::new(protoc)
        .arg("--include_imports")
        .arg("-I.")
        .arg(format!(
            "--descriptor_set_out={}",
            out.join("k8s_descriptor.bin").display()
        ))
        .args(k8s)
        .status()?;
    if !status.success() {
        return Err(format!("protoc failed on the k8s protos: {status}").into());
    }
    Ok(())
}
