//! Real Helm against the REST API (issue 31): Helm 3.18, and Helm 4.1 both with its default
//! (server-side apply, issue 34) and with `--server-side=false`, install, upgrade, roll back and
//! **uninstall** a chart of a ConfigMap, a Secret, a definition (`crds/`) and an object of it
//! (`tests/fixtures/charts/demo`), and a release's name can be used again once uninstalled.
//!
//! Helm's uninstall deletes its release records (Secrets) through client-go's typed client,
//! with a Kubernetes-protobuf DeleteOptions body: it was a 400 `error decoding DeleteOptions`,
//! so the release never went and its name could not be used again.

use std::path::{Path, PathBuf};

use kubestore_tests::kube::{Helm, KubeCluster, Kubectl};

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/demo")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `kubectl get KIND NAME -o jsonpath=PATH`, or None when it does not exist.
fn get(c: &KubeCluster, what: &[&str], jsonpath: &str) -> Option<String> {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let jp = format!("jsonpath={jsonpath}");
    args.extend_from_slice(&["-o", &jp]);
    let r = c.kubectl(Kubectl::V1_33, &args).run();
    if r.succeeded() {
        Some(r.out().to_string())
    } else {
        assert!(r.err().contains("NotFound"), "{r}");
        None
    }
}

/// The names of the release's records (Helm's Secrets of type helm.sh/release.v1).
fn records(c: &KubeCluster, release: &str) -> Vec<String> {
    let r = c
        .kubectl(
            Kubectl::V1_33,
            &[
                "get",
                "secrets",
                "-l",
                &format!("owner=helm,name={release}"),
                "-o",
                "jsonpath={.items[*].metadata.name}",
            ],
        )
        .run()
        .ok();
    r.out().split_whitespace().map(String::from).collect()
}

/// A release's life with Helm `v`, every write with `writes` (Helm 4's `--server-side=false`).
async fn life_of_a_release(v: Helm, writes: &[&str]) {
    let c = KubeCluster::start().await;
    let chart = chart();
    let release = "demo";
    let helm = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(writes);
        c.helm(v, &all).run().ok()
    };
    let r = helm(&["install", release, path(&chart)]);
    assert!(r.out().contains("STATUS: deployed"), "{r}");
    let color = || get(&c, &["configmap", "demo-settings"], "{.data.color}");
    assert_eq!(color().as_deref(), Some("blue"));
    if v == Helm::V4 && writes.is_empty() {
        // Applied server-side: Helm's Apply entry owns the chart's fields.
        let managed = get(
            &c,
            &["configmap", "demo-settings"],
            "{range .metadata.managedFields[*]}{.manager}/{.operation} {end}",
        );
        assert!(
            managed.as_deref().is_some_and(|m| m.contains("helm/Apply")),
            "{managed:?}"
        );
    }
    assert_eq!(
        get(&c, &["secret", "demo-creds"], "{.data.password}").as_deref(),
        Some("czNjcmV0")
    );
    assert_eq!(
        get(&c, &["crontab", "demo-tab"], "{.spec.image}").as_deref(),
        Some("blue-cron-image")
    );
    helm(&["upgrade", release, path(&chart), "--set", "color=red"]);
    assert_eq!(color().as_deref(), Some("red"));
    assert_eq!(
        get(&c, &["crontab", "demo-tab"], "{.spec.image}").as_deref(),
        Some("red-cron-image")
    );
    let r = helm(&["rollback", release, "1"]);
    assert!(r.out().contains("Rollback was a success"), "{r}");
    assert_eq!(color().as_deref(), Some("blue"));
    assert_eq!(records(&c, release).len(), 3, "three revisions");
    // Uninstall: the release's objects and records go; the definition stays (Helm never
    // deletes what `crds/` installed).
    let r = c.helm(v, &["uninstall", release]).run().ok();
    assert!(r.out().contains("release \"demo\" uninstalled"), "{r}");
    assert_eq!(color(), None);
    assert_eq!(get(&c, &["secret", "demo-creds"], "{.metadata.name}"), None);
    assert_eq!(get(&c, &["crontab", "demo-tab"], "{.metadata.name}"), None);
    assert!(records(&c, release).is_empty(), "records left behind");
    assert!(
        get(
            &c,
            &["crd", "crontabs.stable.example.com"],
            "{.metadata.name}"
        )
        .is_some()
    );
    let r = c.helm(v, &["list", "-q"]).run().ok();
    assert_eq!(r.out(), "", "{r}");
    // The name is free again.
    let r = helm(&["install", release, path(&chart), "--set", "color=green"]);
    assert!(r.out().contains("STATUS: deployed"), "{r}");
    assert_eq!(color().as_deref(), Some("green"));
    c.helm(v, &["uninstall", release]).run().ok();
    assert!(records(&c, release).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_3_installs_upgrades_rolls_back_and_uninstalls() {
    life_of_a_release(Helm::V3, &[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_4_installs_upgrades_rolls_back_and_uninstalls() {
    life_of_a_release(Helm::V4, &["--server-side=false"]).await;
}

/// Helm 4's default: every object applied server-side, with Helm's field manager.
#[tokio::test(flavor = "multi_thread")]
async fn helm_4_applies_server_side_by_default() {
    life_of_a_release(Helm::V4, &[]).await;
}
