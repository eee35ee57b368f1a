//! Compiles the .proto files with protoc (Debian's `protobuf-compiler`), and writes the file
//! descriptor set that gRPC server reflection serves.

use std::{env, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let protos = [
        "meta/v1/meta.proto",
        "storage/v1/storage.proto",
        "core/v1/core.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure()
        // BTreeMap gives a deterministic encoding: storage skips writes whose bytes are unchanged,
        // which only works when equal objects encode to equal bytes.
        .btree_map(".")
        .file_descriptor_set_path(out.join("kubestore_descriptor.bin"))
        .compile_protos(&protos, &["."])?;
    Ok(())
}
