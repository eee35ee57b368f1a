//! Upstream's `NamespaceLifecycle` admission over registry-svc's gRPC APIs (kubectl_namespaces.rs
//! covers REST): while a namespace is Terminating, a create in it is refused (Forbidden,
//! FAILED_PRECONDITION, upstream's message) through the typed services, the generic API and
//! for custom objects alike, while updates of what is there go on; once the namespace is gone
//! and created again, creates in it are admitted again.

use std::time::{Duration, Instant};

use kubestore_proto::{
    apiextensions::v1::{CreateCustomObjectRequest, custom_objects_client::CustomObjectsClient},
    core::v1::{ConfigMap, CreateConfigMapRequest, config_maps_client::ConfigMapsClient},
    meta::v1::{DeleteOptions, ObjectMeta},
    registry::v1::{
        CreateRequest, DeleteRequest, GetRequest, Output, PatchRequest, PatchType, ResourceRef,
        UpdateRequest, resources_client::ResourcesClient,
    },
};
use kubestore_tests::{Cluster, fixtures_gc::register_crontab, reason, services::channel};
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};

const NS: &str = "team-b";

fn core(resource: &str) -> Option<ResourceRef> {
    Some(ResourceRef {
        group: String::new(),
        version: "v1".into(),
        resource: resource.into(),
    })
}

/// The three ways to create in [`NS`]: a ConfigMap through the typed service, a Secret through
/// the generic API, a CronTab through the custom objects' service; each named `name`.
struct Creators {
    cms: ConfigMapsClient<Channel>,
    generic: ResourcesClient<Channel>,
    objects: CustomObjectsClient<Channel>,
}

impl Creators {
    async fn new(url: &str) -> Self {
        Self {
            cms: ConfigMapsClient::new(channel(url).await),
            generic: ResourcesClient::new(channel(url).await),
            objects: CustomObjectsClient::new(channel(url).await),
        }
    }

    /// Each create's outcome, labelled.
    async fn create_all(&mut self, name: &str) -> Vec<(&'static str, Result<(), Status>)> {
        let cm = self
            .cms
            .create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(ConfigMap {
                    metadata: Some(ObjectMeta {
                        name: name.into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                dry_run: false,
            })
            .await
            .map(drop);
        let secret = self
            .generic
            .create(CreateRequest {
                resource: core("secrets"),
                namespace: NS.into(),
                json: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}})
                    .to_string(),
                options: None,
                ..Default::default()
            })
            .await
            .map(drop);
        let crontab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": name}, "spec": {"cronSpec": "* * * * *", "replicas": 1}});
        let custom = self
            .objects
            .create(CreateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(serde_json::from_value(crontab).expect("a Struct")),
                dry_run: false,
            })
            .await
            .map(drop);
        vec![
            ("configmaps", cm),
            ("secrets", secret),
            ("crontabs.stable.example.com", custom),
        ]
    }
}

async fn namespace(g: &mut ResourcesClient<Channel>) -> Option<Value> {
    match g
        .get(GetRequest {
            resource: core("namespaces"),
            namespace: String::new(),
            name: NS.into(),
            subresource: String::new(),
            output: Output::Object as i32,
        })
        .await
    {
        Ok(r) => Some(serde_json::from_str(&r.into_inner().json).expect("JSON")),
        Err(e) if e.code() == Code::NotFound => None,
        Err(e) => panic!("get the namespace: {e:?}"),
    }
}

async fn create_namespace(g: &mut ResourcesClient<Channel>) {
    g.create(CreateRequest {
        resource: core("namespaces"),
        namespace: String::new(),
        json: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            .to_string(),
        options: None,
        ..Default::default()
    })
    .await
    .expect("create the namespace");
}

#[tokio::test(flavor = "multi_thread")]
async fn creates_in_a_terminating_namespace_are_refused_until_it_is_created_again() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    register_crontab(&url).await;
    let mut g = ResourcesClient::new(channel(&url).await);
    create_namespace(&mut g).await;
    let mut creators = Creators::new(&url).await;
    for (what, r) in creators.create_all("before").await {
        r.unwrap_or_else(|e| panic!("{what} in an active namespace: {e:?}"));
    }

    // No namespace controller runs: deleted, it stays Terminating.
    g.delete(DeleteRequest {
        resource: core("namespaces"),
        namespace: String::new(),
        name: NS.into(),
        options: Some(DeleteOptions::default()),
    })
    .await
    .expect("delete the namespace");
    // Every replica learns of the deletion from its watch: a moment.
    let until = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    let refusals = loop {
        n += 1;
        let outcomes = creators.create_all(&format!("during-{n}")).await;
        if outcomes.iter().all(|(_, r)| r.is_err()) || Instant::now() > until {
            break outcomes;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for (what, r) in refusals {
        let e = r.expect_err(what);
        assert_eq!(
            (e.code(), reason(&e).as_str()),
            (Code::FailedPrecondition, "Forbidden"),
            "{what}: {e:?}"
        );
        assert_eq!(
            e.message(),
            format!(
                "{what} \"during-{n}\" is forbidden: unable to create new content in namespace {NS} because it is being terminated"
            ),
            "{what}"
        );
    }
    // What is there may still change (the controller's deletions and finalizer removals are
    // updates).
    g.patch(PatchRequest {
        resource: core("configmaps"),
        namespace: NS.into(),
        name: "before".into(),
        subresource: String::new(),
        patch_type: PatchType::Merge as i32,
        patch: json!({"data": {"k": "v"}}).to_string(),
        options: None,
    })
    .await
    .expect("an update in a terminating namespace");

    // Finalized (as the controller would once empty), it goes; created again, it is Active and
    // takes new content.
    let mut ns = namespace(&mut g).await.expect("terminating");
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    ns["spec"]["finalizers"] = json!([]);
    g.update(UpdateRequest {
        resource: core("namespaces"),
        namespace: String::new(),
        name: NS.into(),
        subresource: "finalize".into(),
        json: ns.to_string(),
        options: None,
    })
    .await
    .expect("finalize");
    let until = Instant::now() + Duration::from_secs(10);
    while namespace(&mut g).await.is_some() {
        assert!(Instant::now() < until, "the finalized namespace never went");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    create_namespace(&mut g).await;
    let ns = namespace(&mut g).await.expect("created again");
    assert_eq!(ns["status"]["phase"], "Active", "{ns}");
    let until = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let outcomes = creators.create_all(&format!("after-{n}")).await;
        if outcomes.iter().all(|(_, r)| r.is_ok()) {
            break;
        }
        assert!(
            Instant::now() < until,
            "creates still refused in the re-created namespace: {outcomes:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
