//! The generic Store's semantics for custom objects, as for built-in kinds: generateName,
//! create and update dry run, optimistic concurrency, finalizers holding a deletion, field
//! selectors on metadata.name and metadata.namespace, DeleteCollection, watches across every
//! namespace; a cluster-scoped kind; a definition's own dry run.

use std::time::Duration;

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
        DeleteCollectionCustomObjectsRequest, DeleteCustomObjectRequest, GetCustomObjectRequest,
        GetCustomResourceDefinitionRequest, ListCustomObjectsRequest, UpdateCustomObjectRequest,
        WatchCustomObjectsRequest, custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    meta::v1::{ListOptions, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{crontab_crd, register_established},
    reason,
    services::channel,
};
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};

const GROUP: &str = "stable.example.com";

/// A cluster-scoped kind of the same group.
fn cluster_crd() -> CustomResourceDefinition {
    kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": "clusterwidgets.stable.example.com"},
        "spec": {
            "group": GROUP,
            "names": {"plural": "clusterwidgets", "singular": "clusterwidget", "kind": "ClusterWidget"},
            "scope": "Cluster",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}],
        },
    }))
}

fn st(v: Value) -> pbjson_types::Struct {
    serde_json::from_value(v).expect("a Struct")
}

fn js(s: pbjson_types::Struct) -> Value {
    serde_json::to_value(s).expect("json")
}

fn crontab(meta: Value, image: &str) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": meta,
        "spec": {"cronSpec": "* * * * */5", "image": image},
    })
}

struct Kind {
    c: CustomObjectsClient<Channel>,
    plural: &'static str,
}

impl Kind {
    async fn create(&mut self, ns: &str, object: Value, dry_run: bool) -> Result<Value, Status> {
        self.c
            .create(CreateCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: ns.into(),
                object: Some(st(object)),
                dry_run,
            })
            .await
            .map(|r| js(r.into_inner()))
    }
    async fn get(&mut self, ns: &str, name: &str) -> Result<Value, Status> {
        self.c
            .get(GetCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: ns.into(),
                name: name.into(),
            })
            .await
            .map(|r| js(r.into_inner()))
    }
    async fn update(&mut self, ns: &str, object: Value, dry_run: bool) -> Result<Value, Status> {
        self.c
            .update(UpdateCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: ns.into(),
                object: Some(st(object)),
                dry_run,
            })
            .await
            .map(|r| js(r.into_inner()))
    }
    async fn delete(&mut self, ns: &str, name: &str) -> Result<(Value, bool), Status> {
        self.c
            .delete(DeleteCustomObjectRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: ns.into(),
                name: name.into(),
                options: None,
            })
            .await
            .map(|r| {
                let r = r.into_inner();
                (js(r.object.unwrap_or_default()), r.deleted)
            })
    }
    async fn names(&mut self, ns: &str, options: ListOptions) -> Vec<String> {
        let mut names: Vec<String> = self
            .c
            .list(ListCustomObjectsRequest {
                group: GROUP.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: ns.into(),
                options: Some(options),
            })
            .await
            .expect("list")
            .into_inner()
            .items
            .into_iter()
            .map(|i| {
                js(i)["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        names.sort();
        names
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_objects_follow_the_generic_stores_semantics() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);

    // A definition's dry run validates and answers, and stores nothing.
    let dry = defs
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(crontab_crd()),
            dry_run: true,
        })
        .await
        .expect("dry run")
        .into_inner();
    assert_eq!(
        dry.metadata.expect("meta").name,
        "crontabs.stable.example.com"
    );
    let e = defs
        .get(GetCustomResourceDefinitionRequest {
            name: "crontabs.stable.example.com".into(),
        })
        .await
        .expect_err("not stored");
    assert_eq!(e.code(), Code::NotFound);
    register_established(&mut defs, crontab_crd()).await;
    let mut k = Kind {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "crontabs",
    };

    // Watch every namespace from here on.
    let mut all =
        k.c.watch(WatchCustomObjectsRequest {
            group: GROUP.into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: String::new(),
            options: Some(ListOptions {
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();

    // generateName.
    let generated = k
        .create("a", crontab(json!({"generateName": "gen-"}), "i"), false)
        .await
        .expect("generateName");
    let name = generated["metadata"]["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("gen-") && name.len() > 4, "{generated}");

    // Create dry run: answered, not stored.
    let dry = k
        .create("a", crontab(json!({"name": "dry"}), "i"), true)
        .await
        .expect("dry run");
    assert_eq!(dry["metadata"]["name"], "dry");
    assert_eq!(
        k.get("a", "dry").await.expect_err("not stored").code(),
        Code::NotFound
    );

    // Optimistic concurrency and update dry run.
    let one = k
        .create(
            "a",
            crontab(json!({"name": "one", "labels": {"tier": "x"}}), "v1"),
            false,
        )
        .await
        .expect("create");
    let mut changed = one.clone();
    changed["spec"]["image"] = json!("v2");
    let updated = k.update("a", changed.clone(), false).await.expect("update");
    let e = k
        .update("a", changed.clone(), false)
        .await
        .expect_err("stale resourceVersion");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::Aborted, "Conflict"),
        "{e:?}"
    );
    let mut again = updated.clone();
    again["spec"]["image"] = json!("v3");
    let dry = k.update("a", again, true).await.expect("update dry run");
    assert_eq!(dry["spec"]["image"], "v3");
    assert_eq!(k.get("a", "one").await.expect("get")["spec"]["image"], "v2");

    // A finalizer holds a deletion; removing it completes the deletion.
    k.create(
        "b",
        crontab(
            json!({"name": "held", "finalizers": ["example.com/hold"], "labels": {"tier": "x"}}),
            "i",
        ),
        false,
    )
    .await
    .expect("create held");
    let (marked, deleted) = k.delete("b", "held").await.expect("delete");
    assert!(!deleted, "held by its finalizer");
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    let mut release = k.get("b", "held").await.expect("still there");
    release["metadata"]["finalizers"] = json!([]);
    k.update("b", release, false)
        .await
        .expect("remove the finalizer");
    assert_eq!(
        k.get("b", "held").await.expect_err("gone").code(),
        Code::NotFound
    );

    // Field selectors on metadata.name and metadata.namespace, across namespaces.
    k.create(
        "b",
        crontab(json!({"name": "one", "labels": {"tier": "y"}}), "i"),
        false,
    )
    .await
    .expect("create b/one");
    let by_name = ListOptions {
        field_selector: "metadata.name=one".into(),
        ..Default::default()
    };
    assert_eq!(k.names("", by_name.clone()).await, ["one", "one"]);
    assert_eq!(
        k.names(
            "",
            ListOptions {
                field_selector: "metadata.namespace=b".into(),
                ..Default::default()
            }
        )
        .await,
        ["one"]
    );

    // DeleteCollection: only what the selector names, in every namespace.
    let gone =
        k.c.delete_collection(DeleteCollectionCustomObjectsRequest {
            group: GROUP.into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: String::new(),
            list_options: Some(ListOptions {
                label_selector: "tier=x".into(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("delete collection")
        .into_inner();
    assert_eq!(gone.items.len(), 1, "a/one (b/held is gone already)");
    assert_eq!(
        k.names("", ListOptions::default()).await.len(),
        2,
        "the generated one and b/one"
    );

    // The all-namespaces watch saw both namespaces.
    let mut namespaces = std::collections::BTreeSet::new();
    while let Ok(Ok(Some(e))) =
        tokio::time::timeout(Duration::from_millis(500), all.message()).await
    {
        if e.r#type != WatchEventType::Bookmark as i32 {
            let o = js(e.object.unwrap_or_default());
            namespaces.insert(
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    assert_eq!(namespaces.into_iter().collect::<Vec<_>>(), ["a", "b"]);

    // A cluster-scoped kind: no namespace.
    register_established(&mut defs, cluster_crd()).await;
    let mut cw = Kind {
        c: CustomObjectsClient::new(channel(&url).await),
        plural: "clusterwidgets",
    };
    let w = cw
        .create(
            "",
            json!({"apiVersion": "stable.example.com/v1", "kind": "ClusterWidget",
                "metadata": {"name": "w"}, "spec": {"size": 3}}),
            false,
        )
        .await
        .expect("create cluster-scoped");
    assert!(
        w["metadata"].get("namespace").is_none_or(|n| n == ""),
        "{w}"
    );
    assert_eq!(
        cw.get("", "w").await.expect("get")["spec"]["size"],
        json!(3.0)
    );
    assert_eq!(cw.names("", ListOptions::default()).await, ["w"]);
    let (_, deleted) = cw.delete("", "w").await.expect("delete");
    assert!(deleted);
}
