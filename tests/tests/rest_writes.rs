//! Issue 30's defects of writes and lists over the REST API, on the whole stack (in process):
//!
//! - the system namespaces may not be deleted (upstream's NamespaceLifecycle: 403 `this
//!   namespace may not be deleted`), over REST, the generic gRPC API and kubectl;
//! - a PUT that creates answers 201, and is refused in a namespace being deleted as a create
//!   is;
//! - 100,000 unknown fields make a bounded set of `Warning` headers (upstream's recorder), and
//!   the write they warn about is answered and stored;
//! - a whole collection, read from storage in chunks as it streams, is the list it always was:
//!   every selected item once, as objects, metadata or a Table.

use std::time::{Duration, Instant};

use kubestore_proto::{
    meta::v1::DeleteOptions,
    registry::v1::{DeleteRequest, ResourceRef, resources_client::ResourcesClient},
};
use kubestore_tests::{
    http::{JSON, Reply, call},
    kube::KubeCluster,
    services::channel,
};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn status_message(r: &Reply) -> String {
    r.json()["message"].as_str().unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_system_namespaces_may_not_be_deleted() {
    let c = KubeCluster::start().await;
    call(
        c.api,
        "POST",
        CMS,
        &[JSON],
        br#"{"metadata":{"name":"keep"}}"#,
    )
    .await
    .is(201);
    for ns in ["default", "kube-system", "kube-public"] {
        let r = call(
            c.api,
            "DELETE",
            &format!("/api/v1/namespaces/{ns}"),
            &[],
            b"",
        )
        .await
        .is(403);
        assert_eq!(
            status_message(&r),
            format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted"),
            "{r}"
        );
        assert_eq!(r.json()["reason"], "Forbidden", "{r}");
    }
    // The generic gRPC API: FAILED_PRECONDITION, the same words.
    let mut g = ResourcesClient::new(channel(&c.registry_url()).await);
    let e = g
        .delete(DeleteRequest {
            resource: Some(ResourceRef {
                group: String::new(),
                version: "v1".into(),
                resource: "namespaces".into(),
            }),
            namespace: String::new(),
            name: "kube-system".into(),
            options: Some(DeleteOptions::default()),
        })
        .await
        .expect_err("refused");
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains("this namespace may not be deleted"),
        "{e:?}"
    );
    // kubectl prints upstream's error.
    let r = c.k(&["delete", "namespace", "default"]).run().fails();
    assert!(
        r.err()
            .contains("Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may not be deleted"),
        "{r}"
    );
    // Nothing changed: each namespace is Active, and what is in it stays.
    for ns in ["default", "kube-system", "kube-public"] {
        let r = call(c.api, "GET", &format!("/api/v1/namespaces/{ns}"), &[], b"")
            .await
            .is(200);
        let ns = r.json();
        assert_eq!(ns["status"]["phase"], "Active", "{ns}");
        assert!(ns["metadata"]["deletionTimestamp"].is_null(), "{ns}");
    }
    call(c.api, "GET", &format!("{CMS}/keep"), &[], b"")
        .await
        .is(200);
}

fn event(ns: &str, name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": ns},
        "reason": "Tested", "message": "m", "type": "Normal",
    }))
    .expect("JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_put_that_creates_answers_201_and_is_admitted_as_a_create() {
    let c = KubeCluster::start().await;
    // Events may be created by an update (upstream's AllowCreateOnUpdate).
    let path = "/api/v1/namespaces/default/events/made-by-put";
    let r = call(
        c.api,
        "PUT",
        path,
        &[JSON],
        &event("default", "made-by-put"),
    )
    .await
    .is(201);
    let rv = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    // Replacing it is an update: 200.
    let mut again: Value = serde_json::from_slice(&event("default", "made-by-put")).expect("JSON");
    again["metadata"]["resourceVersion"] = json!(rv);
    again["message"] = json!("changed");
    call(
        c.api,
        "PUT",
        path,
        &[JSON],
        &serde_json::to_vec(&again).expect("JSON"),
    )
    .await
    .is(200);
    // A namespace being deleted (without a controller, it stays Terminating) takes no new
    // content, whether by POST or by a PUT that creates.
    call(
        c.api,
        "POST",
        "/api/v1/namespaces",
        &[JSON],
        br#"{"metadata":{"name":"doomed"}}"#,
    )
    .await
    .is(201);
    call(c.api, "DELETE", "/api/v1/namespaces/doomed", &[], b"")
        .await
        .is(200);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(
            c.api,
            "POST",
            "/api/v1/namespaces/doomed/configmaps",
            &[JSON],
            br#"{"metadata":{"name":"late"}}"#,
        )
        .await;
        if r.code == 403 {
            break;
        }
        assert!(
            Instant::now() < until,
            "the namespace is not seen terminating: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = call(
        c.api,
        "PUT",
        "/api/v1/namespaces/doomed/events/late",
        &[JSON],
        &event("doomed", "late"),
    )
    .await
    .is(403);
    assert_eq!(
        status_message(&r),
        "events \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated",
        "{r}"
    );
    call(
        c.api,
        "GET",
        "/api/v1/namespaces/doomed/events/late",
        &[],
        b"",
    )
    .await
    .is(404);
}

#[tokio::test(flavor = "multi_thread")]
async fn many_unknown_fields_make_bounded_warnings_on_a_write_that_is_stored() {
    let c = KubeCluster::start().await;
    let mut cm = serde_json::Map::new();
    cm.insert("metadata".into(), json!({"name": "noisy"}));
    for i in 0..100_000 {
        cm.insert(format!("unknown{i}"), json!(1));
    }
    let body = serde_json::to_vec(&Value::Object(cm)).expect("JSON");
    assert!(body.len() < 3 << 20);
    let r = call(c.api, "POST", CMS, &[JSON], &body).await.is(201);
    let warnings = r.headers("warning");
    let bytes: usize = warnings.iter().map(|w| w.len()).sum();
    assert!(!warnings.is_empty());
    // Upstream's bound is 4,096 characters of text; each header adds `299 - "..."` and
    // escapes (it was 5.4 MB).
    assert!(
        bytes <= 8 * 1024 && warnings.len() < 200,
        "{} warnings, {bytes} bytes of them",
        warnings.len()
    );
    assert!(
        warnings[0].starts_with("299 - \"unknown field \\\"unknown0\\\"\""),
        "{}",
        warnings[0]
    );
    call(c.api, "GET", &format!("{CMS}/noisy"), &[], b"")
        .await
        .is(200);
    // A few warnings are written whole, each once.
    let mut few = serde_json::Map::new();
    few.insert("metadata".into(), json!({"name": "quiet"}));
    few.insert("extra".into(), json!(1));
    few.insert("more".into(), json!(2));
    let r = call(
        c.api,
        "POST",
        CMS,
        &[JSON],
        &serde_json::to_vec(&Value::Object(few)).expect("JSON"),
    )
    .await
    .is(201);
    assert_eq!(
        r.headers("warning"),
        [
            "299 - \"unknown field \\\"extra\\\"\"",
            "299 - \"unknown field \\\"more\\\"\""
        ]
    );
}

/// Names of the items of a list or the rows of a Table.
fn names(list: &Value) -> Vec<String> {
    let items = list["items"]
        .as_array()
        .or_else(|| list["rows"].as_array())
        .expect("items or rows");
    items
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .or_else(|| i["cells"][0].as_str())
                .expect("a name")
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_collection_read_in_chunks_is_one_list() {
    let c = KubeCluster::start().await;
    // 120 objects of ~20 KB: the first chunk holds 16, the later ones ~50 each.
    let blob = "b".repeat(20 * 1024);
    for i in 0..120 {
        let team = if i % 3 == 0 { "a" } else { "b" };
        let body = json!({"metadata": {"name": format!("cm-{i:03}"), "labels": {"team": team}},
                          "data": {"blob": blob}});
        call(
            c.api,
            "POST",
            CMS,
            &[JSON],
            &serde_json::to_vec(&body).expect("JSON"),
        )
        .await
        .is(201);
    }
    let all: Vec<String> = (0..120).map(|i| format!("cm-{i:03}")).collect();
    let team_a: Vec<String> = (0..120)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("cm-{i:03}"))
        .collect();
    let list = call(c.api, "GET", CMS, &[], b"").await.is(200).json();
    assert_eq!(names(&list), all);
    assert!(
        list["metadata"]["continue"].is_null(),
        "{}",
        list["metadata"]
    );
    assert!(list["metadata"]["resourceVersion"].as_str().is_some());
    let list = call(
        c.api,
        "GET",
        &format!("{CMS}?labelSelector=team%3Da"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(names(&list), team_a);
    let meta = call(
        c.api,
        "GET",
        CMS,
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(meta["kind"], "PartialObjectMetadataList");
    assert_eq!(names(&meta), all);
    assert!(meta["items"][0]["data"].is_null());
    let table = call(
        c.api,
        "GET",
        &format!("{CMS}?labelSelector=team%3Da"),
        &[("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(names(&table), team_a);
    // A list not older than a revision the client names: the first chunk not older than it,
    // the others at the first one's revision.
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a revision");
    let list = call(
        c.api,
        "GET",
        &format!("{CMS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(names(&list), all);
}
