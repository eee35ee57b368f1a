//! Compiles the .proto files with protoc (Debian's `protobuf-compiler`), and writes one file
//! descriptor set per served package for gRPC server reflection.
//!
//! The two services' packages are compiled separately so that each gets its own codec (whose
//! errors name the service's ErrorInfo domain, see `src/codec.rs`) and its own descriptor set:
//! storage-svc reflects `storage.v1`, registry-svc `core.v1`, each with what they import.

use std::{env, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    for p in [
        "meta/v1/meta.proto",
        "storage/v1/storage.proto",
        "core/v1/core.proto",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    let configure = || {
        tonic_prost_build::configure()
            // BTreeMap gives a deterministic encoding: storage skips writes whose bytes are
            // unchanged, which only works when equal objects encode to equal bytes.
            .btree_map(".")
    };
    configure()
        .codec_path("crate::codec::StorageCodec")
        .file_descriptor_set_path(out.join("storage_descriptor.bin"))
        .compile_protos(&["meta/v1/meta.proto", "storage/v1/storage.proto"], &["."])?;
    configure()
        .codec_path("crate::codec::RegistryCodec")
        .file_descriptor_set_path(out.join("core_descriptor.bin"))
        .compile_protos(&["core/v1/core.proto"], &["."])?;
    Ok(())
}
