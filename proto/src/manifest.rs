//! Definitions from their manifests. Upstream's JSON of a CustomResourceDefinition holds each
//! version's `openAPIV3Schema` as an object; the gRPC message holds it as JSON text (a
//! `google.protobuf.Struct` nested past the recursion limit that the generated clients of
//! Python, C++ and Java share, see `apiextensions.proto`). Here, the one conversion between
//! the two for Rust callers (the CLI, the tests, the benchmarks).

use serde_json::Value;

use crate::apiextensions::v1::{CustomResourceDefinition, CustomResourceDefinitionVersion};

impl CustomResourceDefinition {
    /// The message of a manifest as upstream writes it (YAML or JSON read into a `Value`):
    /// `apiVersion` and `kind` dropped, each version's schema object made JSON text.
    pub fn from_manifest(mut manifest: Value) -> Result<Self, serde_json::Error> {
        if let Some(m) = manifest.as_object_mut() {
            m.remove("apiVersion");
            m.remove("kind");
        }
        if let Some(versions) = manifest
            .pointer_mut("/spec/versions")
            .and_then(Value::as_array_mut)
        {
            for schema in versions
                .iter_mut()
                .filter_map(|v| v.pointer_mut("/schema/openAPIV3Schema"))
            {
                if !schema.is_string() {
                    *schema = Value::String(schema.to_string());
                }
            }
        }
        serde_json::from_value(manifest)
    }
}

impl CustomResourceDefinitionVersion {
    /// The version's `openAPIV3Schema` as JSON: None without one, an error when its text is
    /// not JSON.
    pub fn schema_value(&self) -> Option<Result<Value, serde_json::Error>> {
        let text = &self.schema.as_ref()?.open_api_v3_schema;
        (!text.is_empty()).then(|| serde_json::from_str(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_s_schema_becomes_json_text_and_reads_back() {
        let m = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    {"name": "v2", "served": false, "storage": false}]}
        });
        let crd = CustomResourceDefinition::from_manifest(m).expect("a definition");
        let versions = &crd.spec.as_ref().expect("spec").versions;
        let schema = versions[0]
            .schema_value()
            .expect("v1 has one")
            .expect("JSON");
        assert_eq!(
            schema,
            serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        );
        assert!(versions[1].schema_value().is_none());
    }
}
