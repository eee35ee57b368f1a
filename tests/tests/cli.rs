//! The CLI end to end against both services: `apply -f` creates, leaves alone and configures;
//! `get` prints kubectl's table; `get -w` prints each change as it happens; `delete -f`
//! deletes (a pod is marked for graceful deletion; kubectl says "deleted" either way, and the
//! watch shows it Terminating).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_cli::{
    apply,
    get::{GetOptions, get},
    manifest::parse,
};
use kubestore_tests::Cluster;

const MANIFEST: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  nodeName: node-1
  containers:
  - name: nginx
    image: nginx:1.27
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
"#;

#[tokio::test(flavor = "multi_thread")]
async fn apply_get_watch_and_delete_through_the_cli() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");

    let (lines, ok) = apply::apply(&ch, "default", parse(MANIFEST).expect("parses")).await;
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["pod/web created", "configmap/settings created"]);
    let (lines, ok) = apply::apply(&ch, "default", parse(MANIFEST).expect("parses")).await;
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["pod/web unchanged", "configmap/settings unchanged"]);
    let changed = MANIFEST.replace("color: blue", "color: green");
    let (lines, _) = apply::apply(&ch, "default", parse(&changed).expect("parses")).await;
    assert_eq!(
        lines,
        ["pod/web unchanged", "configmap/settings configured"]
    );

    // get: kubectl's table.
    let mut out = Vec::new();
    let o = GetOptions {
        namespace: "default".into(),
        ..Default::default()
    };
    get(&ch, "pods", &o, |s| out.push(s))
        .await
        .expect("get pods");
    let table = out.join("\n");
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // The server's table: upstream's columns for Pods.
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{table}"
    );
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("web ") && l.contains(" 0/1 ") && l.contains("Pending")),
        "{table}"
    );
    // -o wide: the priority-1 columns too (NODE among them).
    let mut out = Vec::new();
    let wide = GetOptions {
        output: "wide".into(),
        ..o.clone()
    };
    get(&ch, "po", &wide, |s| out.push(s))
        .await
        .expect("get pods -o wide");
    let table = out.join("\n");
    assert!(
        table.lines().next().is_some_and(|h| h.contains(" NODE ")),
        "{table}"
    );
    assert!(table.contains("node-1"), "{table}");
    let mut out = Vec::new();
    get(
        &ch,
        "configmap",
        &GetOptions {
            output: "yaml".into(),
            name: Some("settings".into()),
            ..o.clone()
        },
        |s| out.push(s),
    )
    .await
    .expect("get -o yaml");
    let yaml = out.join("\n");
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("color: green"),
        "{yaml}"
    );

    // get -w: the table, then a row per change.
    let watched = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = watched.clone();
    let wch = ch.clone();
    let wo = GetOptions {
        watch: true,
        ..o.clone()
    };
    let watcher = tokio::spawn(async move {
        get(&wch, "pods", &wo, move |s| {
            sink.lock().expect("lock").push(s);
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    // delete -f: the pod is marked for graceful deletion, the ConfigMap goes.
    let (lines, ok) = apply::delete(&ch, "default", parse(MANIFEST).expect("parses")).await;
    assert!(ok, "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], "pod \"web\" deleted");
    assert_eq!(lines[1], "configmap \"settings\" deleted");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = watched.lock().expect("lock").join("\n");
        if seen
            .lines()
            .any(|l| l.starts_with("web ") && l.contains("Terminating"))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "get -w never printed the pod Terminating:\n{seen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watcher.abort();
}

/// `kubestore delete KIND NAME...`, as kubectl: each named object deleted, a missing one
/// reported and the others deleted all the same (exit status 1), an unknown kind refused.
#[tokio::test(flavor = "multi_thread")]
async fn delete_by_kind_and_name() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let two = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
"#;
    // --dry-run=server: answered as if done, nothing stored.
    let (lines, ok) = apply::apply_with(&ch, "default", parse(two).expect("parses"), true).await;
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines,
        [
            "configmap/one created (server dry run)",
            "configmap/two created (server dry run)"
        ]
    );
    let mut cms = cluster.config_maps().await;
    let e = cms
        .get(kubestore_proto::core::v1::GetConfigMapRequest {
            namespace: "default".into(),
            name: "one".into(),
        })
        .await
        .expect_err("a dry run stores nothing");
    assert_eq!(e.code(), tonic::Code::NotFound);
    let (lines, ok) = apply::apply(&ch, "default", parse(two).expect("parses")).await;
    assert!(ok, "{lines:?}");
    let dry = ["one".to_string()];
    let (lines, ok) = apply::delete_named(&ch, "default", "cm", &dry, true).await;
    assert!(ok, "{lines:?}");
    assert_eq!(lines, ["configmap \"one\" deleted (server dry run)"]);
    cms.get(kubestore_proto::core::v1::GetConfigMapRequest {
        namespace: "default".into(),
        name: "one".into(),
    })
    .await
    .expect("a dry-run delete deletes nothing");
    // -o name: kind/name per object, as kubectl prints it.
    let mut printed = Vec::new();
    get(
        &ch,
        "cm",
        &GetOptions {
            namespace: "default".into(),
            output: "name".into(),
            ..Default::default()
        },
        |s| printed.push(s),
    )
    .await
    .expect("get -o name");
    assert_eq!(printed, ["configmap/one\nconfigmap/two"]);
    let names = ["one".to_string(), "missing".to_string(), "two".to_string()];
    let (lines, ok) = apply::delete_named(&ch, "default", "cm", &names, false).await;
    assert!(!ok, "a missing one fails the command");
    assert_eq!(lines[0], "configmap \"one\" deleted");
    assert!(
        lines[1].starts_with("Error from server (NotFound)") && apply::is_diagnostic(&lines[1]),
        "{lines:?}"
    );
    assert_eq!(lines[2], "configmap \"two\" deleted");
    for name in ["one", "two"] {
        let e = cms
            .get(kubestore_proto::core::v1::GetConfigMapRequest {
                namespace: "default".into(),
                name: name.into(),
            })
            .await
            .expect_err("deleted");
        assert_eq!(e.code(), tonic::Code::NotFound);
    }
    let (lines, ok) = apply::delete_named(&ch, "default", "widgets", &names, false).await;
    assert!(!ok);
    assert!(
        lines[0].starts_with("error: the server doesn't have a resource type"),
        "{lines:?}"
    );
}

/// `kubestore completion bash|zsh|fish`: a script naming the verbs and their flags.
#[test]
fn completion_scripts_name_the_verbs() {
    for shell in ["bash", "zsh", "fish"] {
        let out = std::process::Command::new(kubestore_tests::kubestore_binary())
            .args(["completion", shell])
            .output()
            .expect("kubestore runs");
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8_lossy(&out.stdout);
        for word in ["apply", "delete", "controller-manager", "all-namespaces"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
}
