//! `kubectl delete` waits as on kube-apiserver (rest-api.md §11 case 11): kubectl 1.37 waits
//! through a WatchList watch (`sendInitialEvents=true`, ended by the initial-events-end
//! bookmark) for a graceful pod deletion finished by the node agent, kubectl 1.33 through a
//! list and a watch; a ConfigMap held by a finalizer is waited for until the finalizer goes;
//! `--wait=false` leaves the pod Terminating; and the cascades (background, foreground,
//! orphan) with the garbage collector of a controller-manager: foreground keeps the owner,
//! being deleted with the `foregroundDeletion` finalizer, while its child (held by a finalizer
//! of its own) is being deleted, and kubectl waits until both are gone.

use std::time::Duration;

use kubestore_tests::kube::{KubeCluster, Kubectl, eventually, pod_yaml, row, table};

const WAIT: Duration = Duration::from_secs(60);

fn running(c: &KubeCluster, name: &str) {
    eventually(WAIT, &format!("{name} Running"), || {
        c.k(&["get", "pod", name, "-o", "jsonpath={.status.phase}"])
            .run()
            .out()
            == "Running"
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_for_the_agent_through_watch_list() {
    let c = KubeCluster::start().await;
    let _agent = c.agent("node-1", Duration::from_millis(500));
    c.create("web.yaml", &pod_yaml("web", "node-1", &[])).ok();
    c.create("db.yaml", &pod_yaml("db", "node-1", &[])).ok();
    running(&c, "web");
    running(&c, "db");
    let r = c.k(&["delete", "pod", "web"]).run().ok();
    assert_eq!(r.out(), "pod \"web\" deleted from default namespace", "{r}");
    // One watch, asking for the initial state and the bookmark that ends it.
    assert!(
        r.requested(&[
            "GET",
            "/api/v1/namespaces/default/pods?allowWatchBookmarks=true&fieldSelector=metadata.name%3Dweb&resourceVersionMatch=NotOlderThan&sendInitialEvents=true",
            "watch=true",
            "200"
        ]),
        "{r}"
    );
    assert!(
        r.log
            .contains("received the bookmark that marks the end of initial events stream"),
        "{r}"
    );
    c.k(&["get", "pod", "web"]).run().fails();
    // kubectl 1.33 (client-go without WatchList): a list, then a watch from its version.
    let r = c
        .kubectl(Kubectl::V1_33, &["delete", "pod", "db"])
        .run()
        .ok();
    assert_eq!(r.out(), "pod \"db\" deleted", "{r}");
    assert!(!r.requested(&["sendInitialEvents"]), "{r}");
    assert!(
        r.requested(&[
            "GET",
            "fieldSelector=metadata.name%3Ddb",
            "watch=true",
            "200"
        ]),
        "{r}"
    );
    let r = c.k(&["get", "pods"]).run().ok();
    assert_eq!(r.err(), "No resources found in default namespace.", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_without_waiting_leaves_the_pod_terminating() {
    let c = KubeCluster::start().await;
    c.create("web.yaml", &pod_yaml("web", "node-1", &[])).ok();
    let r = c.k(&["delete", "pod", "web", "--wait=false"]).run().ok();
    assert_eq!(r.out(), "pod \"web\" deleted from default namespace", "{r}");
    let r = c.k(&["get", "pods"]).run().ok();
    assert_eq!(
        table(r.out(), 1)[1],
        row(&["web", "0/1", "Terminating", "0"]),
        "{r}"
    );
    let r = c
        .k(&[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.metadata.deletionGracePeriodSeconds}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "30", "{r}");
    // Waiting (briefly) for a pod no kubelet finishes.
    let r = c.k(&["delete", "pod", "web", "--timeout=2s"]).run().fails();
    assert_eq!(
        r.err(),
        "error: timed out waiting for the condition on pods/web",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_for_finalizers() {
    let c = KubeCluster::start().await;
    c.create(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\ndata:\n  a: b\n",
    )
    .ok();
    let mut delete = c.k(&["delete", "cm", "held", "--timeout=60s"]).spawn();
    eventually(WAIT, "held marked", || {
        !c.k(&[
            "get",
            "cm",
            "held",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .run()
        .out()
        .is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    let r = delete.wait(Duration::from_millis(10));
    assert!(r.timed_out, "kubectl waits while the finalizer holds:{r}");
    let mut delete = c.k(&["delete", "cm", "held", "--timeout=60s"]).spawn();
    std::thread::sleep(Duration::from_millis(500));
    c.k(&[
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .run()
    .ok();
    let r = delete.wait(WAIT);
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        r.out(),
        "configmap \"held\" deleted from default namespace",
        "{r}"
    );
    c.k(&["get", "cm", "held"]).run().fails();
}

/// A ConfigMap owned by `owner` (its UID read with kubectl), held by `finalizers`.
fn dependent(c: &KubeCluster, name: &str, owner: &str, finalizers: &[&str]) {
    let uid = c
        .k(&["get", "cm", owner, "-o", "jsonpath={.metadata.uid}"])
        .run()
        .ok()
        .out()
        .to_string();
    c.create(
        &format!("{name}.yaml"),
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  finalizers: {finalizers:?}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: true\n"
        ),
    )
    .ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn cascading_deletes_with_the_garbage_collector() {
    let c = KubeCluster::start().await;
    let _gc = c.controller_manager().await;
    for (owner, child, finalizers) in [
        ("o1", "c1", &[][..]),
        ("o2", "c2", &["example.com/hold"][..]),
        ("o3", "c3", &[][..]),
    ] {
        c.k(&["create", "configmap", owner]).run().ok();
        dependent(&c, child, owner, finalizers);
    }
    // Background (kubectl's default): the owner goes at once, the collector takes the child.
    let r = c.k(&["delete", "cm", "o1"]).run().ok();
    assert_eq!(
        r.out(),
        "configmap \"o1\" deleted from default namespace",
        "{r}"
    );
    eventually(WAIT, "c1 collected", || {
        c.k(&["get", "cm", "c1"]).run().code == Some(1)
    });
    // Foreground: the owner stays, marked `foregroundDeletion`, while its child (held by a
    // finalizer of its own) is being deleted; kubectl waits all along.
    let mut delete = c
        .k(&[
            "delete",
            "cm",
            "o2",
            "--cascade=foreground",
            "--timeout=60s",
        ])
        .spawn();
    let jsonpath = |name: &str, path: &str| {
        let r = c
            .k(&["get", "cm", name, "-o", &format!("jsonpath={path}")])
            .run();
        r.succeeded().then(|| r.out().to_string())
    };
    eventually(WAIT, "o2 waits for c2, which is being deleted", || {
        jsonpath("c2", "{.metadata.deletionTimestamp}").is_some_and(|t| !t.is_empty())
    });
    for _ in 0..4 {
        let owner = jsonpath("o2", "{.metadata.deletionTimestamp} {.metadata.finalizers}")
            .expect("the owner stays while its child does");
        let (deleted_at, finalizers) = owner.split_once(' ').expect("two fields");
        assert!(!deleted_at.is_empty(), "o2 is being deleted: {owner}");
        assert_eq!(finalizers, r#"["foregroundDeletion"]"#, "{owner}");
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(delete.running(), "kubectl waits while the child is held");
    c.k(&[
        "patch",
        "cm",
        "c2",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .run()
    .ok();
    let r = delete.wait(WAIT);
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        r.out(),
        "configmap \"o2\" deleted from default namespace",
        "{r}"
    );
    c.k(&["get", "cm", "c2"]).run().fails();
    c.k(&["get", "cm", "o2"]).run().fails();
    // Orphan: the child stays, without its owner reference.
    let r = c.k(&["delete", "cm", "o3", "--cascade=orphan"]).run().ok();
    assert_eq!(
        r.out(),
        "configmap \"o3\" deleted from default namespace",
        "{r}"
    );
    let r = c
        .k(&[
            "get",
            "cm",
            "c3",
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "", "{r}");
}
