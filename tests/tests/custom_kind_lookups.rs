//! How a request finds its custom kind (`custom::service::resolve`, defects issue point 5):
//! - a request for a version the definition does not serve is NOT_FOUND without rebuilding the
//!   definition (each rebuild compiles every version's schema: a miss once cost 2.6 s, and any
//!   client could repeat it), counted by `registry_custom_kind_builds_total`;
//! - a definition registered through one replica is served by another on the very first
//!   request, while that replica's definitions watch is known to be down: the request's own
//!   read of the definition (`catch_up`) finds it. No retry hides a NOT_FOUND here.

use std::time::{Duration, Instant};

use kubestore_proto::apiextensions::v1::{
    CreateCustomObjectRequest, CustomResourceDefinition, GetCustomObjectRequest,
    custom_objects_client::CustomObjectsClient,
    custom_resource_definitions_client::CustomResourceDefinitionsClient,
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{crontab_crd, register_established as register, to_json},
    proxy::Proxy,
    services::{channel, sample, scrape, spawn_registry, wait_serving},
};
use serde_json::{Value, json};
use tonic::Code;

const NS: &str = "default";

/// `registry_custom_kind_builds_total` of the registry whose metrics are at `addr`.
async fn builds(addr: std::net::SocketAddr) -> f64 {
    sample(&scrape(addr).await, "registry_custom_kind_builds_total")
        .expect("registry-svc exports registry_custom_kind_builds_total")
}

/// Widgets with `served` versions v1..v{served} (v1 stored), each schema a few dozen
/// properties with rules, and v{served+1} kept but not served.
fn many_versions(served: usize) -> CustomResourceDefinition {
    let schema = || {
        let properties: serde_json::Map<String, Value> = (0..40)
            .map(|i| {
                (
                    format!("field{i}"),
                    json!({"type": "string", "maxLength": 64,
                        "x-kubernetes-validations": [{"rule": "self.size() > 0", "message": "empty"}]}),
                )
            })
            .collect();
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": properties}}}})
    };
    let versions: Vec<Value> = (1..=served + 1)
        .map(|i| {
            json!({"name": format!("v{i}"), "served": i <= served, "storage": i == 1,
                "schema": schema()})
        })
        .collect();
    kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": versions}
    }))
}

fn get(version: &str) -> GetCustomObjectRequest {
    GetCustomObjectRequest {
        group: "example.com".into(),
        version: version.into(),
        plural: "widgets".into(),
        namespace: NS.into(),
        name: "w".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_for_an_unserved_version_does_not_rebuild_the_definition() {
    let cluster = Cluster::full().await;
    let registry = cluster.registry.as_ref().expect("registry");
    let mut defs = CustomResourceDefinitionsClient::new(channel(&registry.url()).await);
    register(&mut defs, many_versions(20)).await;
    let mut objects = CustomObjectsClient::new(channel(&registry.url()).await);
    // Served: the object is missing, the version is not.
    let e = objects.get(get("v20")).await.expect_err("no such object");
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("\"w\""), "{e:?}");

    let before = builds(registry.metrics_addr).await;
    assert!(before >= 1.0, "the definition was built ({before})");
    for version in ["v21", "v99"] {
        for _ in 0..20 {
            let e = objects.get(get(version)).await.expect_err("not served");
            assert_eq!(e.code(), Code::NotFound, "{e:?}");
            assert!(
                e.message()
                    .contains(&format!("example.com/{version}/widgets")),
                "{e:?}"
            );
        }
    }
    // 40 misses: at most the one build the watch may still bring (the Established state,
    // when a miss's read took it in first, is not built twice either way).
    let after = builds(registry.metrics_addr).await;
    assert!(
        after - before <= 1.0,
        "{} builds for 40 requests of unserved versions",
        after - before
    );
}

/// storage-svc's watch streams being served now.
async fn storage_watches(cluster: &Cluster) -> f64 {
    sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_watches_open",
    )
    .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_replica_serves_a_new_definition_on_the_first_request() {
    let cluster = Cluster::full().await;
    // The first replica's definitions watch, open once it has listed them.
    let until = Instant::now() + Duration::from_secs(10);
    let idle_watches = loop {
        let n = storage_watches(&cluster).await;
        if n >= 1.0 {
            break n;
        }
        assert!(Instant::now() < until, "the first replica never watched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The second replica reaches storage-svc through a proxy the test can cut.
    let proxy = Proxy::start(
        cluster
            .storage
            .url()
            .trim_start_matches("http://")
            .parse()
            .expect("storage address"),
    )
    .await;
    let second = spawn_registry(
        registry_svc::Config::default(),
        format!("http://{}", proxy.addr),
        None,
    );
    wait_serving(&second.url()).await;
    let until = Instant::now() + Duration::from_secs(10);
    while storage_watches(&cluster).await <= idle_watches {
        assert!(Instant::now() < until, "the second replica never watched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Cut off for 7.5 s, its definitions watch backs off (0.1 s doubling to 5 s): it is asleep
    // for seconds after the connection comes back, while its requests go through at once.
    proxy.cut();
    let cut = Instant::now();
    tokio::time::sleep(Duration::from_millis(7500)).await;
    proxy.restore();
    wait_serving(&second.url()).await;
    assert_eq!(
        storage_watches(&cluster).await,
        idle_watches,
        "the second replica's definitions watch is down ({:?} after the cut)",
        cut.elapsed()
    );

    let mut defs = CustomResourceDefinitionsClient::new(
        channel(&cluster.registry.as_ref().expect("registry").url()).await,
    );
    register(&mut defs, crontab_crd()).await;
    let mut other = CustomObjectsClient::new(channel(&second.url()).await);
    let object: Value = json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "through-the-second"},
        "spec": {"cronSpec": "* * * * *", "replicas": 2},
    });
    let created = other
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(serde_json::from_value(object).expect("a Struct")),
            dry_run: false,
        })
        .await
        .expect("the second replica serves the new kind on the first request");
    assert_eq!(
        to_json(&created.into_inner())["metadata"]["name"],
        json!("through-the-second")
    );
    assert_eq!(
        storage_watches(&cluster).await,
        idle_watches,
        "served while its definitions watch was still down"
    );
}
