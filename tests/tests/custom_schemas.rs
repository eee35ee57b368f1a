//! The schema engine of custom kinds end to end, through registry-svc and storage-svc on real
//! etcd: patterns with RE2's meaning, compiled once and cheaply (a definition of 20 `\w{200}`
//! patterns writes promptly and in little memory, dry run included, and its patterns match
//! 1.2 MB of values promptly and in bounded memory; an oversize pattern, or one inside `anyOf`, is
//! refused at its path), objects nesting 100 levels, reads pruned by the current schema (Get,
//! List, Watch), updates ratcheted after a schema change (an object the new schema refuses can
//! still lose its finalizer and go), nulls, transition rules on map-list items, and map values
//! named `spec.labels.a`.

use std::time::{Duration, Instant};

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
        DeleteCustomObjectRequest, GetCustomObjectRequest, GetCustomResourceDefinitionRequest,
        ListCustomObjectsRequest, UpdateCustomObjectRequest, UpdateCustomResourceDefinitionRequest,
        WatchCustomObjectsRequest, custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    meta::v1::{ListOptions, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{register_established, to_json},
    raw::{peak_rss_mib, reset_peak_rss, rss_mib},
    reason,
    services::channel,
};
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};

const GROUP: &str = "example.com";
const NS: &str = "default";

/// A namespaced definition `<plural>.example.com` of kind `kind` whose `spec` has `fields`.
fn definition(plural: &str, kind: &str, fields: Value) -> CustomResourceDefinition {
    kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": fields}}}}}]
        }
    }))
}

fn assert_invalid<T: std::fmt::Debug>(r: Result<T, Status>, want: &str) -> Status {
    let e = r.expect_err(want);
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid"),
        "{e:?}"
    );
    assert!(e.message().contains(want), "want {want:?} in {e:?}");
    e
}

/// The objects of one kind, in namespace `default`.
struct Objects {
    c: CustomObjectsClient<Channel>,
    plural: &'static str,
}

impl Objects {
    fn body(&self, object: Value) -> Option<pbjson_types::Struct> {
        Some(serde_json::from_value(object).expect("a JSON object"))
    }

    async fn create(&mut self, object: Value) -> Result<Value, Status> {
        // A freshly registered kind is served within moments: retry NOT_FOUND briefly.
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let r = self
                .c
                .create(CreateCustomObjectRequest {
                    group: GROUP.into(),
                    version: "v1".into(),
                    plural: self.plural.into(),
                    namespace: NS.into(),
                    object: self.body(object.clone()),
                    dry_run: false,
                })
                .await;
            match r {
                Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                r => return r.map(|r| to_json(&r.into_inner())),
            }
        }
    }

    async fn update(&mut self, object: Value) -> Result<Value, Status> {
        self.c
            .update(UpdateCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: NS.into(),
                object: self.body(object),
                dry_run: false,
            })
            .await
            .map(|r| to_json(&r.into_inner()))
    }

    async fn get(&mut self, name: &str) -> Result<Value, Status> {
        self.c
            .get(GetCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: NS.into(),
                name: name.into(),
            })
            .await
            .map(|r| to_json(&r.into_inner()))
    }

    async fn list(&mut self) -> Vec<Value> {
        self.c
            .list(ListCustomObjectsRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: NS.into(),
                options: None,
            })
            .await
            .expect("list")
            .into_inner()
            .items
            .iter()
            .map(to_json)
            .collect()
    }

    async fn delete(&mut self, name: &str) -> Result<bool, Status> {
        self.c
            .delete(DeleteCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: NS.into(),
                name: name.into(),
                options: None,
            })
            .await
            .map(|r| r.into_inner().deleted)
    }
}

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

async fn create_definition(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    crd: CustomResourceDefinition,
    dry_run: bool,
) -> Result<CustomResourceDefinition, Status> {
    defs.create(CreateCustomResourceDefinitionRequest {
        custom_resource_definition: Some(crd),
        dry_run,
    })
    .await
    .map(|r| r.into_inner())
}

/// The 1.2 KB schema (20 × `\w{200}`) took 18.6 s and 227 MB to write, dry run or
/// not; patterns followed Rust's Unicode classes (`^\d+$` accepted "٨٠") and `\w{300}`, valid
/// upstream, was refused.
#[tokio::test(flavor = "multi_thread")]
async fn patterns_compile_promptly_with_re2s_meaning_and_bad_ones_are_refused_at_their_paths() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let mut fields: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("w{i}"),
                json!({"type": "string", "pattern": "\\w{200}"}),
            )
        })
        .collect();
    fields.insert(
        "digits".into(),
        json!({"type": "string", "pattern": "^\\d+$"}),
    );
    fields.insert(
        "word".into(),
        json!({"type": "string", "pattern": "^\\w{1,300}$"}),
    );
    let crd = definition("patterns", "Patterns", fields.into());
    for dry_run in [true, false] {
        reset_peak_rss();
        let before = rss_mib();
        let started = Instant::now();
        create_definition(&mut defs, crd.clone(), dry_run)
            .await
            .unwrap_or_else(|e| panic!("the definition (dry run: {dry_run}) is accepted: {e:?}"));
        // Generous: a debug build on a loaded machine (it was 18.6 s).
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "dry run {dry_run}: {:?}",
            started.elapsed()
        );
        // It was 227 MB: the peak resident set (reset before the write) grows by far less.
        let grown = peak_rss_mib().saturating_sub(before);
        assert!(
            grown < 16,
            "dry run {dry_run}: the peak grew by {grown} MiB"
        );
    }
    kubestore_tests::fixtures_custom::wait_established(&mut defs, "patterns.example.com").await;
    let mut objects = Objects {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "patterns",
    };
    // Matching the twenty patterns on long values: in time and memory too.
    reset_peak_rss();
    let before = rss_mib();
    let started = Instant::now();
    let mut long: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("w{i}"), json!("x".repeat(60_000))))
        .collect();
    long.insert("digits".into(), json!("80"));
    long.insert("word".into(), json!("a_Z9"));
    objects
        .create(object("Patterns", "ascii", long.into()))
        .await
        .expect("ASCII digits and word characters match");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "20 patterns on 1.2 MB of values: {:?}",
        started.elapsed()
    );
    let grown = peak_rss_mib().saturating_sub(before);
    // The object itself is 1.2 MB, decoded, validated and encoded in a few copies.
    assert!(grown < 48, "matching: the peak grew by {grown} MiB");
    assert_invalid(
        objects
            .create(object("Patterns", "arabic", json!({"digits": "٨٠"})))
            .await,
        "spec.digits in body should match '^\\d+$'",
    );
    assert_invalid(
        objects
            .create(object("Patterns", "wide", json!({"word": "ａｂｃ"})))
            .await,
        "spec.word in body should match",
    );

    // Refused at write time, dry run or not, at the pattern's path: over the program limit,
    // and inside `anyOf` (once accepted, then silently not served).
    let big = definition(
        "bigs",
        "Big",
        json!({"name": {"type": "string", "pattern": "\\pL{100}"}}),
    );
    let nested = definition(
        "nesteds",
        "Nested",
        json!({"name": {"type": "string", "anyOf": [{"pattern": "(x"}, {"maxLength": 3}]}}),
    );
    for dry_run in [true, false] {
        assert_invalid(
            create_definition(&mut defs, big.clone(), dry_run).await,
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: \"\\\\pL{100}\": must be a valid regular expression, but isn't: error parsing regexp: expression too large",
        );
        assert_invalid(
            create_definition(&mut defs, nested.clone(), dry_run).await,
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].anyOf[0].pattern: Invalid value: \"(x\"",
        );
    }
}

/// `{"a": {"a": ... "leaf"}}`, `objects` JSON objects deep.
fn chain(objects: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..objects {
        let mut m = serde_json::Map::new();
        m.insert("a".into(), v);
        v = Value::Object(m);
    }
    v
}

/// Objects nesting more than ~33 levels were refused as malformed protobuf (prost's recursion
/// limit); upstream decodes 10,000 levels, we keep a bound of 120 against stack overflows.
#[tokio::test(flavor = "multi_thread")]
async fn objects_nest_a_hundred_levels_and_past_the_bound_are_refused() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let crd: CustomResourceDefinition = kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": format!("deeps.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "deeps", "kind": "Deep"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }));
    register_established(&mut defs, crd).await;
    let mut objects = Objects {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "deeps",
    };
    // The object is 100 levels deep: its root, spec, and 98 objects below.
    let created = objects
        .create(object("Deep", "hundred", chain(98)))
        .await
        .expect("an object 100 levels deep");
    assert_eq!(created["spec"], chain(98));
    assert_eq!(
        objects.get("hundred").await.expect("get")["spec"],
        chain(98)
    );
    assert_eq!(objects.list().await[0]["spec"], chain(98));
    let e = objects
        .create(object("Deep", "too-deep", chain(200)))
        .await
        .expect_err("past the bound");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("nests deeper than"), "{e:?}");
}

/// The definition's `v1` schema replaced by `spec_fields` (written as a client would: read,
/// change, update with its resourceVersion).
async fn change_schema(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    name: &str,
    spec: Value,
) {
    let crd = defs
        .get(GetCustomResourceDefinitionRequest { name: name.into() })
        .await
        .expect("get definition")
        .into_inner();
    let mut json = serde_json::to_value(&crd).expect("json");
    let mut schema = kubestore_tests::fixtures_custom::schema_of(
        &crd.spec.as_ref().expect("a spec").versions[0],
    );
    schema["properties"]["spec"] = spec;
    json["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
    let crd: CustomResourceDefinition = kubestore_tests::fixtures_custom::definition(json);
    defs.update(UpdateCustomResourceDefinitionRequest {
        custom_resource_definition: Some(crd),
        dry_run: false,
    })
    .await
    .expect("the schema changes");
}

/// A field removed from the schema was still served (Get, List, Watch), and an object the new
/// schema refuses could not have its finalizer removed: it could never be deleted.
#[tokio::test(flavor = "multi_thread")]
async fn after_a_schema_change_reads_are_pruned_and_updates_ratcheted() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register_established(
        &mut defs,
        definition(
            "gadgets",
            "Gadget",
            json!({"replicas": {"type": "integer"}, "color": {"type": "string"}, "old": {"type": "string"}}),
        ),
    )
    .await;
    let mut objects = Objects {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "gadgets",
    };
    let spec = json!({"replicas": 20, "color": "red", "old": "x"});
    let first = objects
        .create(object("Gadget", "first", spec.clone()))
        .await
        .expect("create");
    let mut held = object("Gadget", "held", spec.clone());
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    objects.create(held).await.expect("create held");
    objects
        .create(object("Gadget", "plain", spec))
        .await
        .expect("create plain");
    assert!(
        !objects.delete("held").await.expect("delete"),
        "held by its finalizer"
    );

    // `old` goes, replicas may be 10 at most: every stored object is now invalid.
    change_schema(
        &mut defs,
        "gadgets.example.com",
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "maximum": 10}, "color": {"type": "string"}}}),
    )
    .await;
    let until = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = objects.get("plain").await.expect("get");
        if got["spec"].get("old").is_none() || Instant::now() > until {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(got["spec"], json!({"replicas": 20, "color": "red"}), "Get");
    for item in objects.list().await {
        assert_eq!(
            item["spec"],
            json!({"replicas": 20, "color": "red"}),
            "List"
        );
    }
    // A watch from before the objects were written replays them as stored: pruned too.
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    let mut events = objects
        .c
        .watch(WatchCustomObjectsRequest {
            group: GROUP.into(),
            version: "v1".into(),
            plural: "gadgets".into(),
            namespace: NS.into(),
            options: Some(ListOptions {
                resource_version: rv,
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut seen = 0;
    while seen < 2 {
        let e = tokio::time::timeout(Duration::from_secs(10), events.message())
            .await
            .expect("an event in time")
            .expect("the watch goes on")
            .expect("an event");
        if e.r#type == WatchEventType::Bookmark as i32 {
            continue;
        }
        let o = to_json(e.object.as_ref().expect("object"));
        assert!(o["spec"].get("old").is_none(), "Watch: {o}");
        seen += 1;
    }

    // Ratcheting: the invalid replicas left as they were, metadata changes are accepted, and
    // the held object loses its finalizer and goes.
    let mut held = objects.get("held").await.expect("get held");
    held["metadata"]["finalizers"] = json!([]);
    objects
        .update(held)
        .await
        .expect("the finalizer is removed, replicas unchanged");
    assert_eq!(
        objects.get("held").await.expect_err("gone").code(),
        Code::NotFound
    );
    let mut plain = objects.get("plain").await.expect("get plain");
    plain["metadata"]["labels"] = json!({"team": "a"});
    let plain = objects.update(plain).await.expect("a label added");
    let mut changed = plain.clone();
    changed["spec"]["replicas"] = json!(30);
    assert_invalid(
        objects.update(changed).await,
        "spec.replicas: Invalid value: 30: spec.replicas in body should be less than or equal to 10",
    );
}

/// `null` for a non-nullable field is its default, or dropped; transition rules on map-list
/// items see the old item with the same keys; map values are named `spec.labels.a`.
#[tokio::test(flavor = "multi_thread")]
async fn nulls_map_list_transitions_and_map_value_paths() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register_established(
        &mut defs,
        definition(
            "services",
            "Service",
            json!({
                "replicas": {"type": "integer", "default": 1},
                "image": {"type": "string"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer", "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "port is immutable"}]}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}
            }),
        ),
    )
    .await;
    let mut objects = Objects {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "services",
    };
    let created = objects
        .create(object(
            "Service",
            "web",
            json!({"replicas": null, "image": null,
                "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53}]}),
        ))
        .await
        .expect("nulls are taken as unset");
    assert_eq!(created["spec"]["replicas"], json!(1), "{created}");
    assert!(created["spec"].get("image").is_none(), "{created}");

    let mut moved = created.clone();
    moved["spec"]["ports"] = json!([{"name": "dns", "port": 53}, {"name": "http", "port": 80}]);
    let moved = objects
        .update(moved)
        .await
        .expect("items moved, none changed");
    let mut changed = moved.clone();
    changed["spec"]["ports"][1]["port"] = json!(8080);
    assert_invalid(
        objects.update(changed).await,
        "spec.ports[1].port: Invalid value: \"integer\": port is immutable",
    );

    let e = assert_invalid(
        objects
            .create(object(
                "Service",
                "labelled",
                json!({"labels": {"a": "long"}}),
            ))
            .await,
        "spec.labels.a: Too long: may not be more than 3 bytes",
    );
    use tonic_types::StatusExt;
    let fields: Vec<String> = e
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default();
    assert_eq!(fields, vec!["spec.labels.a".to_string()]);
}
