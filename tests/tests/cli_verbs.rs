//! kubectl's habits in the `kubestore` binary, run as a user runs it: `label`, `annotate`,
//! `patch` (merge and JSON patch, applied by the server, which re-applies them after a
//! conflict; refused when pinned to an old version), `edit` with `$EDITOR`, `-o jsonpath=` / `-o custom-columns=`, and `apply -f` of a
//! file with a document it cannot apply (the others are applied; exit status 1).

use kubestore_proto::core::v1::{ConfigMap, GetConfigMapRequest};
use kubestore_tests::{Cluster, kubestore};

async fn stored(cluster: &Cluster, name: &str) -> ConfigMap {
    cluster
        .config_maps()
        .await
        .get(GetConfigMapRequest {
            namespace: "default".into(),
            name: name.into(),
        })
        .await
        .expect("get")
        .into_inner()
}

const FILE: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
---
apiVersion: v1
kind: Unicorn
metadata:
  name: nope
"#;

#[tokio::test(flavor = "multi_thread")]
async fn label_annotate_patch_edit_and_output_templates() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mixed.yaml");
    std::fs::write(&file, FILE).expect("writes");
    let file = file.to_str().expect("utf-8 path");

    // A document it cannot apply (a Deployment; a kind nobody serves) does not stop the others.
    let r = kubestore(&url, &["apply", "-f", file], &[]).await;
    assert!(!r.ok, "exit status 1: {}", r.stderr);
    assert_eq!(r.stdout, "configmap/settings created");
    assert!(
        r.stderr
            .contains(r#"no matches for kind "Deployment" in version "apps/v1""#),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("document 3") && r.stderr.contains("Unicorn"),
        "{}",
        r.stderr
    );

    // label: set, refuse to change without --overwrite, overwrite, no change, remove.
    let r = kubestore(&url, &["label", "cm", "settings", "app=web", "tier=1"], &[]).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.stdout, "configmap/settings labeled");
    let r = kubestore(&url, &["label", "cm", "settings", "app=db"], &[]).await;
    assert!(!r.ok);
    assert_eq!(
        r.stderr,
        "error: 'app' already has a value (web), and --overwrite is false"
    );
    let r = kubestore(
        &url,
        &["label", "cm", "settings", "app=db", "--overwrite", "tier-"],
        &[],
    )
    .await;
    assert!(r.ok, "{}", r.stderr);
    let r = kubestore(&url, &["label", "configmap", "settings", "app=db"], &[]).await;
    assert_eq!(r.stdout, "configmap/settings not labeled");
    let labels = stored(&cluster, "settings")
        .await
        .metadata
        .expect("meta")
        .labels;
    assert_eq!(labels.len(), 1);
    assert_eq!(labels["app"], "db");

    let r = kubestore(&url, &["annotate", "cm", "settings", "owner=team-a"], &[]).await;
    assert_eq!(r.stdout, "configmap/settings annotated", "{}", r.stderr);

    // patch: a merge patch; a dry run stores nothing; a failed JSON patch test changes nothing.
    let r = kubestore(
        &url,
        &[
            "patch",
            "cm",
            "settings",
            "-p",
            r#"{"data":{"color":"red","size":"L"}}"#,
        ],
        &[],
    )
    .await;
    assert_eq!(r.stdout, "configmap/settings patched", "{}", r.stderr);
    let r = kubestore(
        &url,
        &[
            "patch",
            "cm",
            "settings",
            "--dry-run=server",
            "-p",
            r#"{"data":{"color":"green"}}"#,
        ],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "configmap/settings patched (server dry run)",
        "{}",
        r.stderr
    );
    let r = kubestore(
        &url,
        &[
            "patch",
            "cm",
            "settings",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/data/size"},{"op":"test","path":"/data/color","value":"blue"}]"#,
        ],
        &[],
    )
    .await;
    assert!(!r.ok);
    // The server applies the patch (upstream's 422, Invalid).
    assert!(
        r.stderr.starts_with("Error from server (Invalid)")
            && r.stderr
                .contains("testing value /data/color failed: test failed"),
        "{}",
        r.stderr
    );
    let cm = stored(&cluster, "settings").await;
    assert_eq!(cm.data["color"], "red");
    assert_eq!(cm.data["size"], "L", "the failed patch removed nothing");
    assert_eq!(
        cm.metadata.as_ref().expect("meta").annotations["owner"],
        "team-a"
    );
    // A patch that names an old resourceVersion is a precondition: Conflict, no retry.
    let r = kubestore(
        &url,
        &[
            "patch",
            "cm",
            "settings",
            "-p",
            r#"{"metadata":{"resourceVersion":"1"},"data":{"color":"old"}}"#,
        ],
        &[],
    )
    .await;
    assert!(!r.ok);
    assert!(r.stderr.contains("Conflict"), "{}", r.stderr);

    // Writers racing on one object: each one's merge patch is applied again by the server to
    // whatever won a conflict, so every label lands.
    let writers: Vec<_> = (0..4)
        .map(|i| {
            let url = url.clone();
            tokio::spawn(async move {
                kubestore(
                    &url,
                    &["label", "cm", "settings", &format!("w{i}=yes")],
                    &[],
                )
                .await
            })
        })
        .collect();
    for w in writers {
        let r = w.await.expect("joins");
        assert!(r.ok, "{}", r.stderr);
    }
    let labels = stored(&cluster, "settings")
        .await
        .metadata
        .expect("meta")
        .labels;
    for i in 0..4 {
        assert_eq!(labels[&format!("w{i}")], "yes", "{labels:?}");
    }

    // -o jsonpath / custom-columns.
    let r = kubestore(
        &url,
        &["get", "cm", "settings", "-o", "jsonpath={.data.color}"],
        &[],
    )
    .await;
    assert_eq!(r.stdout, "red", "{}", r.stderr);
    let r = kubestore(
        &url,
        &[
            "get",
            "cm",
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.app}{"\n"}{end}"#,
        ],
        &[],
    )
    .await;
    assert_eq!(r.stdout, "settings=db", "{}", r.stderr);
    let r = kubestore(
        &url,
        &[
            "get",
            "cm",
            "-o",
            "custom-columns=NAME:.metadata.name,COLOR:.data.color,MISSING:.data.none",
        ],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "NAME       COLOR   MISSING\nsettings   red     <none>",
        "{}",
        r.stderr
    );
    let r = kubestore(&url, &["get", "cm", "-o", "jsonpath={.items[0:2]}"], &[]).await;
    assert!(!r.ok && r.stderr.contains("slices"), "{}", r.stderr);

    // edit: the editor's change is written; an editor that saves nothing cancels.
    let r = kubestore(
        &url,
        &["edit", "cm", "settings"],
        &[("EDITOR", "sed -i s/color:\\ red/color:\\ purple/")],
    )
    .await;
    assert_eq!(r.stdout, "configmap/settings edited", "{}", r.stderr);
    assert_eq!(stored(&cluster, "settings").await.data["color"], "purple");
    let r = kubestore(
        &url,
        &["edit", "cm", "settings"],
        &[("KUBE_EDITOR", "true")],
    )
    .await;
    assert_eq!(r.stdout, "Edit cancelled, no changes made.", "{}", r.stderr);
    // An edit whose object someone else changed meanwhile is refused (the user edited the
    // version they read), and the edited file is kept for them.
    let meanwhile = format!(
        "sh -c '{} --registry {url} annotate cm settings meanwhile=yes >/dev/null && sed -i s/purple/pink/ \"$0\"'",
        kubestore_tests::kubestore_binary().display()
    );
    let r = kubestore(&url, &["edit", "cm", "settings"], &[("EDITOR", &meanwhile)]).await;
    assert!(!r.ok);
    assert!(r.stderr.contains("Conflict"), "{}", r.stderr);
    assert!(
        r.stderr.contains("A copy of your changes has been stored"),
        "{}",
        r.stderr
    );
    let cm = stored(&cluster, "settings").await;
    assert_eq!(cm.data["color"], "purple");
    assert_eq!(cm.metadata.expect("meta").annotations["meanwhile"], "yes");
}

/// `--dry-run=client`: kubectl's words with "(dry run)", each object read to tell created from
/// configured and to find what a delete names; nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn client_dry_runs_read_and_write_nothing() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("two.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fresh\n",
    )
    .expect("writes");
    let file = file.to_str().expect("utf-8 path");
    let r = kubestore(&url, &["apply", "-f", file], &[]).await;
    assert!(r.ok, "{}", r.stderr);
    let r = kubestore(&url, &["delete", "cm", "fresh"], &[]).await;
    assert!(r.ok, "{}", r.stderr);

    let r = kubestore(&url, &["apply", "-f", file, "--dry-run=client"], &[]).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "configmap/settings configured (dry run)\nconfigmap/fresh created (dry run)"
    );
    let e = cluster
        .config_maps()
        .await
        .get(GetConfigMapRequest {
            namespace: "default".into(),
            name: "fresh".into(),
        })
        .await
        .expect_err("nothing created");
    assert_eq!(e.code(), tonic::Code::NotFound);

    let r = kubestore(&url, &["delete", "cm", "settings", "--dry-run=client"], &[]).await;
    assert_eq!(
        r.stdout, "configmap \"settings\" deleted (dry run)",
        "{}",
        r.stderr
    );
    let r = kubestore(&url, &["delete", "-f", file, "--dry-run=client"], &[]).await;
    assert!(!r.ok, "fresh does not exist");
    assert_eq!(r.stdout, "configmap \"settings\" deleted (dry run)");
    assert!(r.stderr.contains("NotFound"), "{}", r.stderr);

    let before = stored(&cluster, "settings").await;
    let r = kubestore(
        &url,
        &["label", "cm", "settings", "tier=web", "--dry-run=client"],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "configmap/settings labeled (dry run)",
        "{}",
        r.stderr
    );
    let r = kubestore(
        &url,
        &[
            "patch",
            "cm",
            "settings",
            "-p",
            r#"{"data":{"color":"red"}}"#,
            "--dry-run=client",
        ],
        &[],
    )
    .await;
    assert_eq!(
        r.stdout, "configmap/settings patched (dry run)",
        "{}",
        r.stderr
    );
    let after = stored(&cluster, "settings").await;
    assert_eq!(before, after, "a client dry run writes nothing");
}
