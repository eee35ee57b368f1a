//! Custom kinds for the end-to-end tests: the CronTab definition of the Kubernetes docs,
//! registering a definition and waiting until it is established, and a `Struct` read back as
//! a client of upstream's JSON would see it.

use std::time::{Duration, Instant};

use kubestore_proto::apiextensions::v1::{
    CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
    GetCustomResourceDefinitionRequest,
    custom_resource_definitions_client::CustomResourceDefinitionsClient,
};
use serde_json::{Value, json};
use tonic::transport::Channel;

/// The CronTab manifest (`tests/fixtures/crds/crontab.json`), as the request body.
pub fn crontab_crd() -> CustomResourceDefinition {
    definition(
        serde_json::from_str(include_str!("../fixtures/crds/crontab.json"))
            .expect("the CronTab manifest is JSON"),
    )
}

/// A definition from its manifest's JSON (upstream's form, each version's `openAPIV3Schema` an
/// object) as the gRPC message, whose schema is JSON text.
pub fn definition(manifest: Value) -> CustomResourceDefinition {
    try_definition(manifest).expect("the manifest parses as a CustomResourceDefinition")
}

/// [`definition`], or why not.
pub fn try_definition(manifest: Value) -> Result<CustomResourceDefinition, String> {
    CustomResourceDefinition::from_manifest(manifest).map_err(|e| e.to_string())
}

/// A version's schema (JSON text in the message) as JSON.
pub fn schema_of(
    version: &kubestore_proto::apiextensions::v1::CustomResourceDefinitionVersion,
) -> Value {
    version
        .schema_value()
        .expect("the version has a schema")
        .expect("the schema is JSON text")
}

/// Creates `crd` and waits until it is established; its state then.
pub async fn register_established(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    crd: CustomResourceDefinition,
) -> CustomResourceDefinition {
    let name = crd.metadata.as_ref().expect("metadata").name.clone();
    defs.create(CreateCustomResourceDefinitionRequest {
        custom_resource_definition: Some(crd),
        dry_run: false,
    })
    .await
    .unwrap_or_else(|e| panic!("{name} registers: {e:?}"));
    wait_established(defs, &name).await
}

/// Waits (10 s at most) until the definition `name` is `Established=True`.
pub async fn wait_established(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    name: &str,
) -> CustomResourceDefinition {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let crd = defs
            .get(GetCustomResourceDefinitionRequest { name: name.into() })
            .await
            .expect("get definition")
            .into_inner();
        let established = crd.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.r#type == "Established" && c.status == "True")
        });
        if established {
            return crd;
        }
        assert!(Instant::now() < until, "{name} never established: {crd:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Struct as JSON; numbers travel as doubles in a Struct, so whole ones are read back as
/// integers (as a JSON client of upstream would see them).
pub fn to_json(s: &pbjson_types::Struct) -> Value {
    fn whole(v: Value) -> Value {
        match v {
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() && f.fract() == 0.0 => json!(f as i64),
                _ => Value::Number(n),
            },
            Value::Array(a) => Value::Array(a.into_iter().map(whole).collect()),
            Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, whole(v))).collect()),
            other => other,
        }
    }
    whole(serde_json::to_value(s).expect("json"))
}
