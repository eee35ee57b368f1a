//! Writes over the REST API that kubectl rarely sends, spoken by hand:
//!
//! - DELETE of a collection with a label selector deletes what it matches and only that, and
//!   answers upstream's list of what it deleted (an object held by a finalizer listed with its
//!   deletionTimestamp, and kept); a dry run of it deletes nothing;
//! - PUT with `dryRun=All` answers the object as it would be, and stores nothing;
//! - the system namespaces may not be deleted (upstream's NamespaceLifecycle: 403 `this
//!   namespace may not be deleted`), over REST, the generic gRPC API and kubectl;
//! - a PUT that creates answers 201, and is refused in a namespace being deleted as a create
//!   is;
//! - 100,000 unknown fields make a bounded set of `Warning` headers (upstream's recorder), and
//!   the write they warn about is answered and stored.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use kubestore_proto::{
    meta::v1::DeleteOptions,
    registry::v1::{DeleteRequest, ResourceRef, resources_client::ResourcesClient},
};
use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, JSON, Reply, call, get},
    services::{channel, wait_system_namespaces},
};
use serde_json::{Value, json};

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

async fn create(api: SocketAddr, name: &str, labels: Value, finalizers: Value) -> Value {
    let body = json!({"metadata": {"name": name, "labels": labels, "finalizers": finalizers},
        "data": {"k": "v"}});
    call(api, "POST", CMS, &[JSON], body.to_string().as_bytes())
        .await
        .is(201)
        .json()
}

/// The names of the items of a list, sorted.
fn names(list: &Value) -> Vec<String> {
    let mut n: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_collection_deletes_what_its_selector_matches() {
    let kube = started().await;
    let api = kube.api;
    create(api, "a", json!({"app": "x"}), json!([])).await;
    create(api, "b", json!({"app": "x"}), json!([])).await;
    create(api, "c", json!({"app": "y"}), json!([])).await;
    create(
        api,
        "held",
        json!({"app": "x"}),
        json!(["example.com/hold"]),
    )
    .await;

    // A dry run deletes nothing, and says what it would have.
    let dry = call(
        api,
        "DELETE",
        &format!("{CMS}?labelSelector=app%3Dx&dryRun=All"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(names(&dry), ["a", "b", "held"], "{dry}");
    assert_eq!(
        names(&get(api, CMS).await.is(200).json()),
        ["a", "b", "c", "held"]
    );

    let deleted = call(
        api,
        "DELETE",
        &format!("{CMS}?labelSelector=app%3Dx"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(
        (&deleted["apiVersion"], &deleted["kind"]),
        (&json!("v1"), &json!("ConfigMapList")),
        "{deleted}"
    );
    assert_eq!(names(&deleted), ["a", "b", "held"], "{deleted}");
    let held = deleted["items"]
        .as_array()
        .and_then(|i| i.iter().find(|o| o["metadata"]["name"] == "held"))
        .expect("held listed");
    assert!(
        held["metadata"]["deletionTimestamp"].is_string(),
        "held by its finalizer: marked, kept: {held}"
    );
    let left = get(api, CMS).await.is(200).json();
    assert_eq!(names(&left), ["c", "held"], "{left}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_put_with_dry_run_answers_the_change_and_stores_nothing() {
    let kube = started().await;
    let api = kube.api;
    let created = create(api, "p", json!({}), json!([])).await;
    let mut changed = created.clone();
    changed["data"] = json!({"k": "changed"});
    let path = format!("{CMS}/p");
    let answered = call(
        api,
        "PUT",
        &format!("{path}?dryRun=All"),
        &[JSON],
        changed.to_string().as_bytes(),
    )
    .await
    .is(200)
    .json();
    assert_eq!(answered["data"], json!({"k": "changed"}), "{answered}");
    assert_eq!(answered["metadata"]["uid"], created["metadata"]["uid"]);
    let stored = get(api, &path).await.is(200).json();
    assert_eq!(stored, created, "the dry run stored nothing");
    // The same PUT without the dry run is stored.
    let put = call(api, "PUT", &path, &[JSON], changed.to_string().as_bytes())
        .await
        .is(200)
        .json();
    assert_ne!(
        put["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(get(api, &path).await.is(200).json(), put);
}

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

/// Errors name a grouped resource with its group, as upstream's `GroupResource` does
/// (`leases.coordination.k8s.io "x" not found`, `details.group`), built-in and custom kinds
/// alike (issue 31, point 8).
#[tokio::test(flavor = "multi_thread")]
async fn errors_name_the_group_qualified_resource() {
    let c = KubeCluster::start().await;
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let r = call(c.api, "GET", &format!("{leases}/nope"), &[], b"")
        .await
        .is(404);
    let status = r.json();
    assert_eq!(
        status["message"], "leases.coordination.k8s.io \"nope\" not found",
        "{r}"
    );
    assert_eq!(
        status["details"],
        json!({"name": "nope", "group": "coordination.k8s.io", "kind": "leases"})
    );
    let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}});
    call(c.api, "POST", leases, &[JSON], lease.to_string().as_bytes())
        .await
        .is(201);
    let r = call(c.api, "POST", leases, &[JSON], lease.to_string().as_bytes())
        .await
        .is(409);
    assert_eq!(
        r.json()["message"],
        "leases.coordination.k8s.io \"l\" already exists",
        "{r}"
    );
    let stale =
        json!({"metadata": {"name": "l", "resourceVersion": "1"}, "spec": {"holderIdentity": "b"}});
    let r = call(
        c.api,
        "PUT",
        &format!("{leases}/l"),
        &[JSON],
        stale.to_string().as_bytes(),
    )
    .await
    .is(409);
    assert!(
        r.json()["message"]
            .as_str()
            .is_some_and(|m| m
                .starts_with("Operation cannot be fulfilled on leases.coordination.k8s.io \"l\"")),
        "{r}"
    );
    // The core group's resources have no group.
    let r = call(c.api, "GET", &format!("{CMS}/nope"), &[], b"")
        .await
        .is(404);
    assert_eq!(r.json()["message"], "configmaps \"nope\" not found");
}
