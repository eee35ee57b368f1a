//! Writes over the REST API that kubectl rarely sends, spoken by hand:
//!
//! - DELETE of a collection with a label selector deletes what it matches and only that, and
//!   answers upstream's list of what it deleted (an object held by a finalizer listed with its
//!   deletionTimestamp, and kept); a dry run of it deletes nothing;
//! - PUT with `dryRun=All` answers the object as it would be, and stores nothing.

use std::net::SocketAddr;

use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, JSON, call, get},
    services::wait_system_namespaces,
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
