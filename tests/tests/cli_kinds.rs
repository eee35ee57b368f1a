//! Every kind through the one client path: the `kubestore` binary knows no kind, so Leases
//! and Namespaces (which it never had code for) work in `apply`, `get` (the server's table,
//! `-A`, `-o name|yaml|json`), `describe`, `label`, `annotate`, `patch` and `delete` like every
//! other kind; the server's warnings reach stderr as kubectl prints them; int64 fields print
//! as numbers.

use kubestore_tests::{Cluster, kubestore};

const MANIFEST: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: team-a
spec:
  holderIdentity: node-1
  leaseDurationSeconds: 15
  bogus: field
"#;

#[tokio::test(flavor = "multi_thread")]
async fn leases_and_namespaces_work_like_every_kind() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("lease.yaml");
    std::fs::write(&file, MANIFEST).expect("writes");
    let file = file.to_str().expect("utf-8 path");

    // apply: the server decodes; what the kind does not have is a warning, on stderr.
    let r = kubestore(&url, &["apply", "-f", file], &[]).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "namespace/team-a created\nlease.coordination.k8s.io/leader created"
    );
    assert_eq!(r.stderr, r#"Warning: unknown field "spec.bogus""#);
    let r = kubestore(&url, &["apply", "-f", file], &[]).await;
    assert!(
        r.stdout
            .ends_with("lease.coordination.k8s.io/leader unchanged"),
        "{}",
        r.stdout
    );

    // get: the server's columns, by any of the kind's names.
    for name in ["leases", "lease", "Lease", "leases.coordination.k8s.io"] {
        let r = kubestore(&url, &["-n", "team-a", "get", name], &[]).await;
        assert!(r.ok, "{name}: {}", r.stderr);
        let mut lines = r.stdout.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
        assert_eq!(header, ["NAME", "HOLDER", "AGE"], "{name}: {}", r.stdout);
        assert!(
            lines
                .next()
                .is_some_and(|l| l.starts_with("leader ") && l.contains("node-1")),
            "{name}: {}",
            r.stdout
        );
    }
    let r = kubestore(&url, &["get", "leases", "-A"], &[]).await;
    assert!(
        r.stdout
            .lines()
            .next()
            .is_some_and(|h| h.starts_with("NAMESPACE ")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("team-a ") && l.contains(" leader ")),
        "{}",
        r.stdout
    );
    let r = kubestore(
        &url,
        &["get", "lease", "leader", "-n", "team-a", "-o", "name"],
        &[],
    )
    .await;
    assert_eq!(r.stdout, "lease.coordination.k8s.io/leader", "{}", r.stderr);
    let r = kubestore(&url, &["get", "ns", "team-a"], &[]).await;
    let header: Vec<&str> = r
        .stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"], "{}", r.stdout);
    assert!(r.stdout.contains("Active"), "{}", r.stdout);
    // -A does not add NAMESPACE to a cluster-scoped kind; the built-in namespaces are listed.
    let r = kubestore(&url, &["get", "namespaces", "-A", "-o", "name"], &[]).await;
    for ns in ["default", "kube-system", "team-a"] {
        assert!(
            r.stdout.lines().any(|l| l == format!("namespace/{ns}")),
            "{ns}: {}",
            r.stdout
        );
    }
    let r = kubestore(&url, &["get", "leases", "-n", "empty"], &[]).await;
    assert!(r.ok && r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(r.stderr, "No resources found in empty namespace.");

    // label, annotate, patch: merge patches the server applies.
    let r = kubestore(
        &url,
        &["-n", "team-a", "label", "lease", "leader", "tier=control"],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "lease.coordination.k8s.io/leader labeled",
        "{}",
        r.stderr
    );
    let r = kubestore(&url, &["label", "ns", "team-a", "owner=me"], &[]).await;
    assert_eq!(r.stdout, "namespace/team-a labeled", "{}", r.stderr);
    let r = kubestore(&url, &["annotate", "ns", "team-a", "note=hi"], &[]).await;
    assert_eq!(r.stdout, "namespace/team-a annotated", "{}", r.stderr);
    let r = kubestore(
        &url,
        &[
            "-n",
            "team-a",
            "patch",
            "lease",
            "leader",
            "-p",
            r#"{"spec":{"holderIdentity":"node-2"}}"#,
        ],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "lease.coordination.k8s.io/leader patched",
        "{}",
        r.stderr
    );
    let r = kubestore(
        &url,
        &["get", "lease", "leader", "-n", "team-a", "-o", "json"],
        &[],
    )
    .await;
    let lease: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(lease["spec"]["holderIdentity"], "node-2");
    assert_eq!(lease["metadata"]["labels"]["tier"], "control");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 15);
    assert!(lease["spec"].get("bogus").is_none(), "dropped: {lease}");

    // int64 fields print as numbers (a pod's grace period, defaulted by the server).
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: team-a\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
    let pod_file = dir.path().join("pod.yaml");
    std::fs::write(&pod_file, pod).expect("writes");
    let r = kubestore(
        &url,
        &["apply", "-f", pod_file.to_str().expect("utf-8")],
        &[],
    )
    .await;
    assert!(r.ok, "{}", r.stderr);
    let r = kubestore(
        &url,
        &["-n", "team-a", "get", "pod", "web", "-o", "yaml"],
        &[],
    )
    .await;
    assert!(
        r.stdout.contains("terminationGracePeriodSeconds: 30\n"),
        "{}",
        r.stdout
    );

    // describe: the object, then its Events (none here).
    let r = kubestore(&url, &["-n", "team-a", "describe", "lease", "leader"], &[]).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("kind: Lease") && r.stdout.contains("holderIdentity: node-2"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("Events:  <none>"), "{}", r.stdout);
    let r = kubestore(&url, &["describe", "namespace", "team-a"], &[]).await;
    assert!(
        r.stdout.contains("kind: Namespace") && r.stdout.contains("note: hi"),
        "{}",
        r.stdout
    );

    // delete: the Lease goes; the Namespace is marked Terminating (its finalizer holds it).
    let r = kubestore(
        &url,
        &[
            "-n",
            "team-a",
            "delete",
            "lease",
            "leader",
            "--dry-run=server",
        ],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "lease.coordination.k8s.io \"leader\" deleted (server dry run)",
        "{}",
        r.stderr
    );
    let r = kubestore(&url, &["-n", "team-a", "delete", "leases", "leader"], &[]).await;
    assert_eq!(
        r.stdout, "lease.coordination.k8s.io \"leader\" deleted",
        "{}",
        r.stderr
    );
    let r = kubestore(&url, &["-n", "team-a", "get", "lease", "leader"], &[]).await;
    assert!(!r.ok && r.stderr.contains("NotFound"), "{}", r.stderr);
    let r = kubestore(&url, &["delete", "ns", "team-a"], &[]).await;
    assert_eq!(r.stdout, "namespace \"team-a\" deleted", "{}", r.stderr);
    let r = kubestore(&url, &["get", "ns", "team-a"], &[]).await;
    assert!(r.stdout.contains("Terminating"), "{}", r.stdout);

    // A kind nobody serves: kubectl's words.
    let r = kubestore(&url, &["get", "widgets"], &[]).await;
    assert!(!r.ok);
    assert_eq!(
        r.stderr,
        r#"error: the server doesn't have a resource type "widgets""#
    );
}
