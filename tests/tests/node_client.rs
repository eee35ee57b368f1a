//! The official JavaScript client (`@kubernetes/client-node` 1.4.0 under the machine's Node.js,
//! installed by `scripts/kube-clients.sh`) against the REST API, through its typed APIs:
//! CoreV1Api on ConfigMaps (create, read, list with label selectors and pages, merge and JSON
//! patches, replace, a stale replace's 409 Conflict, a dry-run create, deletes with
//! preconditions, a missing object's 404); a custom resource definition made with
//! ApiextensionsV1Api and its objects through CustomObjectsApi and the discovery-driven
//! KubernetesObjectApi; the client's `Watch` from a listed resourceVersion (ADDED, MODIFIED,
//! DELETED, a bookmark) and from a compacted one (410); `makeInformer`'s cache converging.
//!
//! `tests/node/client.mjs` holds the scenarios: each checks as it goes and prints what it saw,
//! one line each, the same lines on every run; a failing scenario (or a missing client) fails
//! the test with its output.

use std::time::Duration;

use kubestore_tests::{ClusterOptions, kube::KubeCluster};

#[tokio::test(flavor = "multi_thread")]
async fn configmaps_through_core_v1_api() {
    let c = KubeCluster::start().await;
    let (r, lines) = c.node_scenario("crud", &[]);
    assert_eq!(
        lines,
        [
            r#"created ConfigMap alpha default {"a":"1"}"#,
            r#"read alpha {"a":"1"} {"tier":"front"}"#,
            r#"list ConfigMapList v1 ["alpha","beta"]"#,
            r#"list tier=front ["alpha"]"#,
            r#"list tier,tier!=back ["alpha"]"#,
            r#"patched {"c":"3"} {"color":"blue","tier":"front"}"#,
            r#"replaced {"d":"4"}"#,
            r#"json patched {"d":"4","j":"6"}"#,
            "stale replace 409 Status Failure Conflict 409",
            "dry-run create dry true",
            r#"pages ["alpha"] ["beta"] null"#,
            "delete with a wrong uid 409 Conflict",
            "deleted Status Success",
            "read missing 404 NotFound alpha configmaps",
            "delete missing 404 NotFound",
            "create existing 409 AlreadyExists",
            r#"left ["beta"]"#,
        ],
        "{r}"
    );
    // The dry run left nothing behind.
    let names = c.k(&["get", "configmaps", "-o", "name"]).run().ok();
    assert_eq!(names.out(), "configmap/beta", "{names}");
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_objects_of_a_definition_made_by_the_client() {
    let c = KubeCluster::start().await;
    let (r, lines) = c.node_scenario("custom", &[]);
    assert_eq!(
        lines,
        [
            "crd created crontabs.stable.example.com CronTab",
            r#"crd conditions ["Established","NamesAccepted"]"#,
            r#"created CronTab nightly default {"cronSpec":"0 0 * * *","image":"my-awesome-cron-image","replicas":2}"#,
            r#"list CronTabList stable.example.com/v1 ["hourly","nightly"]"#,
            "get nightly 0 0 * * * 2",
            "patched 5 0 0 * * *",
            r#"all namespaces ["default/hourly","default/nightly"]"#,
            "generic read CronTab nightly 5",
            r#"generic list ["hourly","nightly"]"#,
            "generic patch other 5",
            "strategic merge patch 415 UnsupportedMediaType",
            "deleted Status Success",
            "get missing 404 NotFound",
            r#"left ["nightly"]"#,
            r#"watched ["MODIFIED CronTab nightly","MODIFIED CronTab nightly","DELETED CronTab hourly"]"#,
        ],
        "{r}"
    );
    let got = c
        .k(&[
            "get",
            "crontab",
            "nightly",
            "-o",
            "jsonpath={.spec.replicas} {.spec.image}",
        ])
        .run()
        .ok();
    assert_eq!(got.out(), "5 other", "{got}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_from_a_listed_version_and_from_a_compacted_one() {
    let c = KubeCluster::start_with(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_bookmark_interval: Duration::from_millis(500),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let (r, lines) = c.node_scenario("watch", &[]);
    assert_eq!(
        lines,
        [
            r#"listed ["before"]"#,
            r#"event ADDED ConfigMap w1 {"x":"1"}"#,
            r#"event MODIFIED ConfigMap w1 {"x":"2"}"#,
            r#"event DELETED ConfigMap w1 {"x":"2"}"#,
            r#"bookmark ConfigMap v1 ["resourceVersion"]"#,
            r#"live ["ADDED w2"]"#,
        ],
        "{r}"
    );

    // A version etcd has compacted away: a list at it and a watch from it are 410 Expired (the
    // watch as kube-apiserver answers it: 200, then one ERROR event with the Status).
    let old = c.compacted_version().await;
    let (r, lines) = c.node_scenario("expired", &[&old]);
    assert_eq!(
        lines,
        ["list 410 Expired", "watch ERROR 410 Expired"],
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_informer_cache_converges() {
    let c = KubeCluster::start().await;
    let (r, lines) = c.node_scenario("informer", &[]);
    assert_eq!(
        lines,
        [
            r#"cache [["new",{"x":"2"}]]"#,
            r#"events ["add old","add new","update new x=2","delete old"]"#,
        ],
        "{r}"
    );
}
