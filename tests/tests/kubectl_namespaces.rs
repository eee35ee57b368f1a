//! Namespaces through kubectl as on kube-apiserver: discovered (`namespaces ns v1 false
//! Namespace`), created by kubectl's generator (a protobuf body), listed with upstream's
//! `NAME STATUS AGE` table, holding objects (`-n`), marked Terminating by a delete, and then
//! refusing new content (the NamespaceLifecycle admission plugin's Forbidden). (A namespace
//! with no Namespace object is not refused: see the README's deviations.)

use kubestore_tests::kube::{KubeCluster, cells, row, table};

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_are_created_listed_and_hold_objects() {
    let c = KubeCluster::start().await;
    let r = c.k(&["api-resources", "--api-group="]).run().ok();
    assert!(
        r.out()
            .lines()
            .map(cells)
            .any(|row| row == ["namespaces", "ns", "v1", "false", "Namespace"]),
        "{r}"
    );
    let r = c.k(&["create", "namespace", "team-a"]).run().ok();
    assert_eq!(r.out(), "namespace/team-a created", "{r}");
    let r = c.k(&["get", "ns", "team-a"]).run().ok();
    assert_eq!(
        table(r.out(), 1),
        [row(&["NAME", "STATUS"]), row(&["team-a", "Active"])],
        "{r}"
    );
    let r = c
        .k(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=a=b",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "configmap/settings created", "{r}");
    let r = c.k(&["get", "cm", "-n", "team-a", "-o", "name"]).run().ok();
    assert_eq!(r.out(), "configmap/settings", "{r}");
    let r = c.k(&["delete", "ns", "team-a", "--wait=false"]).run().ok();
    assert_eq!(r.out(), "namespace \"team-a\" deleted", "{r}");
    let r = c
        .k(&["get", "ns", "team-a", "-o", "jsonpath={.status.phase}"])
        .run()
        .ok();
    assert_eq!(r.out(), "Terminating", "{r}");
    // Every replica learns of the deletion from its watch: a moment.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let r = loop {
        let r = c
            .k(&[
                "create",
                "configmap",
                "x",
                "-n",
                "team-a",
                "--from-literal=a=b",
            ])
            .run();
        if !r.succeeded() || std::time::Instant::now() > until {
            break r.fails();
        }
        c.k(&["delete", "configmap", "x", "-n", "team-a"])
            .run()
            .ok();
    };
    assert_eq!(
        r.err(),
        "error: failed to create configmap: configmaps \"x\" is forbidden: unable to create new content in namespace team-a because it is being terminated",
        "{r}"
    );
}
