//! The generic gRPC API (`registry.v1.Resources`) and the typed services serve the same objects
//! (issue 25): an object written through one is read through the other with the same uid,
//! resourceVersion and content (Pods and ConfigMaps both ways here; every built-in kind
//! discovery lists, Namespaces and definitions included, in `generic_codec.rs`); server-side
//! patches that change nothing write nothing; Namespaces are one registration like every kind, and a
//! deleted namespace's content goes before it (the namespace controller): ConfigMaps and custom
//! objects at once, while an object held by its finalizer or a pod in its grace period keeps
//! the namespace Terminating, with its finalizer, until they are gone.

use std::time::Duration;

use kubestore_apimachinery::json::Codec;
use kubestore_proto::{
    core::v1::{
        GetConfigMapRequest, GetNamespaceRequest, GetPodRequest,
        config_maps_client::ConfigMapsClient, namespaces_client::NamespacesClient,
        pods_client::PodsClient,
    },
    meta::v1::DeleteOptions,
    registry::v1::{
        CreateRequest, DeleteRequest, DiscoverRequest, GetRequest, Output, PatchRequest, PatchType,
        ResourceRef, resources_client::ResourcesClient,
    },
};
use kubestore_tests::{
    Cluster,
    fixtures_gc::{Manager, eventually, register_crontab},
    services::channel,
};
use prost::Message;
use serde_json::{Value, json};
use tonic::Code;

fn codec() -> Codec {
    Codec::new(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors")
}

fn core(resource: &str) -> Option<ResourceRef> {
    Some(ResourceRef {
        group: String::new(),
        version: "v1".into(),
        resource: resource.into(),
    })
}

async fn generic(cluster: &Cluster) -> ResourcesClient<tonic::transport::Channel> {
    ResourcesClient::new(channel(&registry_url(cluster)).await)
}

fn registry_url(cluster: &Cluster) -> String {
    cluster.registry.as_ref().expect("registry").url()
}

fn parse(json: &str) -> Value {
    serde_json::from_str(json).expect("JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_lists_every_built_in_kind_with_upstreams_names() {
    let cluster = Cluster::full().await;
    let resources = generic(&cluster)
        .await
        .discover(DiscoverRequest {})
        .await
        .expect("discover")
        .into_inner()
        .resources;
    let find = |g: &str, r: &str| {
        resources
            .iter()
            .find(|x| x.group == g && x.resource == r)
            .unwrap_or_else(|| panic!("{g}/{r} in discovery: {resources:?}"))
    };
    let pods = find("", "pods");
    assert_eq!(
        (pods.kind.as_str(), pods.short_names.as_slice()),
        ("Pod", &["po".to_string()][..])
    );
    assert_eq!(pods.categories, ["all"]);
    assert!(pods.namespaced);
    assert_eq!(pods.subresources, ["status"]);
    let ns = find("", "namespaces");
    assert!(!ns.namespaced);
    assert!(
        !ns.verbs.iter().any(|v| v == "deletecollection"),
        "as upstream"
    );
    assert_eq!(ns.subresources, ["status", "finalize"]);
    for (g, r) in [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "events"),
        ("coordination.k8s.io", "leases"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        let x = find(g, r);
        assert_eq!(x.verbs.len(), 8, "{r}: {:?}", x.verbs);
        assert!(!x.message.is_empty(), "{r} is built in");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_generic_api_and_the_typed_services_answer_the_same_objects() {
    let cluster = Cluster::full().await;
    let mut g = generic(&cluster).await;
    let codec = codec();
    // Written through the generic API, read through the typed service.
    let written = g
        .create(CreateRequest {
            resource: core("pods"),
            namespace: "default".into(),
            json: json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 10,
                         "containers": [{"name": "c", "image": "nginx:1.27",
                                         "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}
            })
            .to_string(),
            options: None, ..Default::default() })
        .await
        .expect("create")
        .into_inner();
    assert!(written.created);
    let generic_pod = parse(&written.json);
    let typed = PodsClient::new(channel(&registry_url(&cluster)).await)
        .get(GetPodRequest {
            namespace: "default".into(),
            name: "web".into(),
        })
        .await
        .expect("typed get")
        .into_inner();
    let typed_json = codec
        .encode_to_value(".core.v1.Pod", &typed.encode_to_vec(), Some(("v1", "Pod")))
        .expect("as JSON");
    assert_eq!(
        typed_json, generic_pod,
        "the same object, uid and resourceVersion included"
    );
    assert_eq!(
        generic_pod["spec"]["terminationGracePeriodSeconds"],
        json!(10),
        "int64 as a number"
    );

    // Written through the typed service, read through the generic API.
    let mut cms = ConfigMapsClient::new(channel(&registry_url(&cluster)).await);
    let cm = cms
        .create(kubestore_proto::core::v1::CreateConfigMapRequest {
            namespace: "default".into(),
            config_map: Some(kubestore_proto::core::v1::ConfigMap {
                metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
                    name: "settings".into(),
                    ..Default::default()
                }),
                data: [("k".to_string(), "v".to_string())].into(),
                immutable: None,
                binary_data: Default::default(),
            }),
            dry_run: false,
        })
        .await
        .expect("typed create")
        .into_inner();
    let got = g
        .get(GetRequest {
            resource: core("configmaps"),
            namespace: "default".into(),
            name: "settings".into(),
            subresource: String::new(),
            output: Output::Object as i32,
        })
        .await
        .expect("generic get")
        .into_inner();
    assert_eq!(
        parse(&got.json),
        codec
            .encode_to_value(
                ".core.v1.ConfigMap",
                &cm.encode_to_vec(),
                Some(("v1", "ConfigMap"))
            )
            .expect("as JSON")
    );

    // A patch that changes nothing writes nothing; one that does is seen by the typed service.
    let rv = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let before = rv(&parse(&got.json));
    let patch = |p: Value, t: PatchType| PatchRequest {
        resource: core("configmaps"),
        namespace: "default".into(),
        name: "settings".into(),
        subresource: String::new(),
        patch_type: t as i32,
        patch: p.to_string(),
        options: None,
    };
    let same = g
        .patch(patch(json!({"data": {"k": "v"}}), PatchType::Merge))
        .await
        .expect("no-op patch")
        .into_inner();
    assert_eq!(
        rv(&parse(&same.json)),
        before,
        "a patch that changes nothing writes nothing"
    );
    let changed = g
        .patch(patch(
            json!([{"op": "add", "path": "/data/k2", "value": "v2"}]),
            PatchType::Json,
        ))
        .await
        .expect("JSON patch")
        .into_inner();
    assert_ne!(rv(&parse(&changed.json)), before);
    let typed = cms
        .get(GetConfigMapRequest {
            namespace: "default".into(),
            name: "settings".into(),
        })
        .await
        .expect("typed get")
        .into_inner();
    assert_eq!(typed.data.get("k2").map(String::as_str), Some("v2"));
    assert_eq!(
        typed.metadata.expect("meta").resource_version,
        rv(&parse(&changed.json))
    );

    // Errors are the typed services'.
    let missing = g
        .get(GetRequest {
            resource: core("configmaps"),
            namespace: "default".into(),
            name: "nope".into(),
            subresource: String::new(),
            output: 0,
        })
        .await
        .expect_err("missing");
    assert_eq!(missing.code(), Code::NotFound);
    assert_eq!(missing.message(), "configmaps \"nope\" not found");
    let unknown = g
        .get(GetRequest {
            resource: Some(ResourceRef {
                group: "apps".into(),
                version: "v1".into(),
                resource: "deployments".into(),
            }),
            namespace: "default".into(),
            name: "x".into(),
            subresource: String::new(),
            output: 0,
        })
        .await
        .expect_err("not served");
    assert_eq!(unknown.code(), Code::NotFound);
}

fn crontabs() -> Option<ResourceRef> {
    Some(ResourceRef {
        group: "stable.example.com".into(),
        version: "v1".into(),
        resource: "crontabs".into(),
    })
}

/// `namespace/name` of `resource` through the generic API: None once it is gone.
async fn get(
    g: &mut ResourcesClient<tonic::transport::Channel>,
    resource: Option<ResourceRef>,
    namespace: &str,
    name: &str,
) -> Option<Value> {
    match g
        .get(GetRequest {
            resource,
            namespace: namespace.into(),
            name: name.into(),
            subresource: String::new(),
            output: Output::Object as i32,
        })
        .await
    {
        Ok(r) => Some(parse(&r.into_inner().json)),
        Err(e) if e.code() == Code::NotFound => None,
        Err(e) => panic!("get {namespace}/{name}: {e:?}"),
    }
}

/// Asserts, for longer than the controller takes to look again, that the namespace `team-a`
/// is still there, Terminating, with the controller's finalizer.
async fn stays_terminating(g: &mut ResourcesClient<tonic::transport::Channel>, why: &str) {
    let until = std::time::Instant::now() + kubestore_controllers::namespace::RECHECK * 2;
    while std::time::Instant::now() < until {
        let ns = get(g, core("namespaces"), "", "team-a")
            .await
            .unwrap_or_else(|| panic!("the namespace went while {why}"));
        assert_eq!(
            (&ns["status"]["phase"], &ns["spec"]["finalizers"]),
            (&json!("Terminating"), &json!(["kubernetes"])),
            "while {why}: {ns}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_namespace_loses_its_content_then_goes() {
    let cluster = Cluster::full().await;
    let url = registry_url(&cluster);
    let mut g = generic(&cluster).await;
    let mut namespaces = NamespacesClient::new(channel(&url).await);
    for name in ["default", "kube-system", "kube-public"] {
        let ns = namespaces
            .get(GetNamespaceRequest {
                namespace: String::new(),
                name: name.into(),
            })
            .await
            .expect("a system namespace")
            .into_inner();
        assert_eq!(ns.status.expect("status").phase, "Active");
    }
    register_crontab(&url).await;
    let created = parse(
        &g.create(CreateRequest {
            resource: core("namespaces"),
            namespace: String::new(),
            json: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
                .to_string(),
            options: None,
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner()
        .json,
    );
    assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        created["metadata"]["labels"]["kubernetes.io/metadata.name"],
        json!("team-a")
    );
    // The content: two plain ConfigMaps, one held by a finalizer of its own, a custom object,
    // and a pod bound to a node (no kubelet runs here: deleted, it stays in its grace period).
    let content = [
        (
            core("configmaps"),
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
        ),
        (
            core("configmaps"),
            json!({"metadata": {"name": "b"}, "data": {"k": "v"}}),
        ),
        (
            core("configmaps"),
            json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
        ),
        (
            crontabs(),
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                "metadata": {"name": "nightly"},
                "spec": {"cronSpec": "0 0 * * *", "image": "backup:1", "replicas": 1}}),
        ),
        (
            core("pods"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"nodeName": "node-1",
                         "containers": [{"name": "c", "image": "nginx:1.27"}]}}),
        ),
    ];
    for (resource, object) in content {
        g.create(CreateRequest {
            resource,
            namespace: "team-a".into(),
            json: object.to_string(),
            options: None,
            ..Default::default()
        })
        .await
        .expect("content");
    }
    // Without the controller, a delete leaves it Terminating.
    let deleted = g
        .delete(DeleteRequest {
            resource: core("namespaces"),
            namespace: String::new(),
            name: "team-a".into(),
            options: Some(DeleteOptions::default()),
        })
        .await
        .expect("delete")
        .into_inner();
    assert!(!deleted.deleted);
    assert_eq!(
        parse(&deleted.json)["status"]["phase"],
        json!("Terminating")
    );
    let _manager = Manager::start(&url, "m1", Duration::from_secs(15), 4).await;
    // What nothing holds goes; the held ConfigMap and the pod are being deleted.
    eventually(
        "the namespace's free content is deleted, the rest marked",
        Duration::from_secs(20),
        || async {
            let mut g = generic(&cluster).await;
            let deleting = |o: Option<Value>| {
                o.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string())
            };
            get(&mut g, core("configmaps"), "team-a", "a")
                .await
                .is_none()
                && get(&mut g, core("configmaps"), "team-a", "b")
                    .await
                    .is_none()
                && get(&mut g, crontabs(), "team-a", "nightly").await.is_none()
                && deleting(get(&mut g, core("configmaps"), "team-a", "held").await)
                && deleting(get(&mut g, core("pods"), "team-a", "web").await)
        },
    )
    .await;
    stays_terminating(
        &mut g,
        "a finalizer holds a ConfigMap and a pod is in its grace period",
    )
    .await;
    // Its status says why (upstream's deletion conditions).
    let ns = get(&mut g, core("namespaces"), "", "team-a")
        .await
        .expect("the namespace");
    let condition = |kind: &str| {
        ns["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind))
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} condition: {ns}"))
    };
    let remaining = condition("NamespaceContentRemaining");
    assert_eq!(
        (
            &remaining["status"],
            &remaining["reason"],
            &remaining["message"]
        ),
        (
            &json!("True"),
            &json!("SomeResourcesRemain"),
            &json!(
                "Some resources are remaining: configmaps. has 1 resource instances, pods. has 1 resource instances"
            )
        ),
        "{ns}"
    );
    let finalizers = condition("NamespaceFinalizersRemaining");
    assert_eq!(
        finalizers["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
        "{ns}"
    );
    assert_eq!(
        condition("NamespaceDeletionContentFailure")["status"],
        "False"
    );
    assert_eq!(
        condition("NamespaceDeletionDiscoveryFailure")["reason"],
        "ResourcesDiscovered"
    );
    // The finalizer goes: the ConfigMap with it; the pod still holds the namespace.
    g.patch(PatchRequest {
        resource: core("configmaps"),
        namespace: "team-a".into(),
        name: "held".into(),
        subresource: String::new(),
        patch_type: PatchType::Merge as i32,
        patch: json!({"metadata": {"finalizers": null}}).to_string(),
        options: None,
    })
    .await
    .expect("the finalizer removed");
    assert_eq!(
        get(&mut g, core("configmaps"), "team-a", "held").await,
        None
    );
    stays_terminating(&mut g, "a pod is in its grace period").await;
    // The kubelet's final delete; then the namespace goes.
    g.delete(DeleteRequest {
        resource: core("pods"),
        namespace: "team-a".into(),
        name: "web".into(),
        options: Some(DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        }),
    })
    .await
    .expect("the pod's final delete");
    eventually("the namespace is gone", Duration::from_secs(20), || async {
        NamespacesClient::new(channel(&url).await)
            .get(GetNamespaceRequest {
                namespace: String::new(),
                name: "team-a".into(),
            })
            .await
            .is_err_and(|s| s.code() == Code::NotFound)
    })
    .await;
}
