//! Watches over the REST API, spoken by hand: a WatchList (`sendInitialEvents=true`, what
//! client-go 1.35's reflectors and kubectl 1.37's `delete --wait` send) answers exactly one
//! ADDED event per object there is, nothing else, then the BOOKMARK annotated
//! `k8s.io/initial-events-end` at a resourceVersion no older than any of them, then changes;
//! a watch from a resourceVersion answers exactly the changes after it, in order.

use std::time::Duration;

use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, call, first_lines, open_stream, post},
    services::wait_system_namespaces,
};
use serde_json::{Value, json};
use tokio::net::TcpStream;

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("a resourceVersion: {v}"))
}

fn summary(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_list_sends_exactly_the_objects_then_its_bookmark() {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    let api = kube.api;
    let mut written = Vec::new();
    for n in ["a", "b", "c"] {
        written.push(post(api, n, 1).await.is(201).json());
    }
    // b deleted and c changed before the watch: its initial list has a, and c as changed.
    let mut s = TcpStream::connect(api).await.expect("connect");
    call(api, "DELETE", &format!("{CMS}/b"), &[], b"")
        .await
        .is(200);
    let newest = call(
        api,
        "PATCH",
        &format!("{CMS}/c"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"data": {"k": "v"}}"#,
    )
    .await
    .is(200)
    .json();
    let path = format!(
        "{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    );
    let (_, mut raw) = open_stream(&mut s, &path).await;
    let initial = first_lines(&mut s, &mut raw, 3, Duration::from_secs(10)).await;
    assert_eq!(
        summary(&initial[..2]),
        [
            ("ADDED".to_string(), "a".to_string()),
            ("ADDED".into(), "c".into())
        ],
        "{initial:?}"
    );
    assert_eq!(initial[0]["object"], written[0], "a as stored");
    assert_eq!(initial[1]["object"], newest, "c as changed");
    let bookmark = &initial[2];
    assert_eq!(bookmark["type"], "BOOKMARK", "{bookmark}");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"}),
        "{bookmark}"
    );
    assert_eq!(bookmark["object"]["kind"], "ConfigMap", "{bookmark}");
    assert!(rv(&bookmark["object"]) >= rv(&newest), "{bookmark}");
    // Then the changes, and only them.
    let d = post(api, "d", 1).await.is(201).json();
    let next = first_lines(&mut s, &mut raw, 4, Duration::from_secs(10)).await;
    assert_eq!(next[3]["type"], "ADDED", "{next:?}");
    assert_eq!(next[3]["object"], d);

    // From a's version: exactly what came after, in order (c's create and patch, b's delete).
    let mut s = TcpStream::connect(api).await.expect("connect");
    let from = rv(&written[0]);
    let (_, mut raw) = open_stream(&mut s, &format!("{CMS}?watch=1&resourceVersion={from}")).await;
    let events = first_lines(&mut s, &mut raw, 5, Duration::from_secs(10)).await;
    assert_eq!(
        summary(&events),
        [
            ("ADDED".to_string(), "b".to_string()),
            ("ADDED".into(), "c".into()),
            ("DELETED".into(), "b".into()),
            ("MODIFIED".into(), "c".into()),
            ("ADDED".into(), "d".into()),
        ],
        "{events:?}"
    );
    let versions: Vec<u64> = events.iter().map(|e| rv(&e["object"])).collect();
    assert!(versions.windows(2).all(|p| p[0] < p[1]), "{versions:?}");
}
