//! kubectl changes objects in place as on kube-apiserver (rest-api.md §11 cases 7, 9 and 10):
//! `patch` in its three types (strategic merge, kubectl's default for built-in kinds, merging
//! lists by their keys and obeying `$deleteFromPrimitiveList`; JSON merge patch replacing
//! them; JSON patch), `label` and `annotate` (merge patches: add, `--overwrite`, `key-`,
//! `--dry-run=server`), and `edit` through a `KUBE_EDITOR` script.

use kubestore_tests::kube::KubeCluster;

/// A pod with two containers.
const TWO: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  nodeName: node-1\n  containers:\n  - name: main\n    image: nginx:1.27\n  - name: sidecar\n    image: busybox:1.36\n";

fn get(c: &KubeCluster, what: &[&str], jsonpath: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let jp = format!("jsonpath={jsonpath}");
    args.extend_from_slice(&["-o", &jp]);
    c.k(&args).run().ok().out().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_strategic_merge_and_json() {
    let c = KubeCluster::start().await;
    c.create("app.yaml", TWO).ok();
    let images = "{range .spec.containers[*]}{.name}={.image} {end}";
    // Strategic merge (the default): containers merged by name, the other one kept.
    let r = c
        .k(&[
            "patch",
            "pod",
            "app",
            "-p",
            r#"{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}"#,
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app patched", "{r}");
    assert!(
        r.requested(&[
            "PATCH",
            "/api/v1/namespaces/default/pods/app?fieldManager=kubectl-patch",
            "200"
        ]),
        "{r}"
    );
    assert_eq!(
        get(&c, &["pod", "app"], images),
        "main=nginx:1.27 sidecar=busybox:1.37"
    );
    // The same body as a merge patch replaces the list: one container left, which a pod may
    // not do.
    let r = c
        .k(&[
            "patch",
            "pod",
            "app",
            "--type=merge",
            "-p",
            r#"{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.38"}]}}"#,
        ])
        .run()
        .fails();
    assert!(r.err().starts_with("The Pod \"app\" is invalid: "), "{r}");
    assert_eq!(
        get(&c, &["pod", "app"], images),
        "main=nginx:1.27 sidecar=busybox:1.37"
    );
    // A patch that changes nothing.
    let r = c
        .k(&[
            "patch",
            "pod",
            "app",
            "-p",
            r#"{"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}"#,
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app patched (no change)", "{r}");
    // JSON patch.
    let r = c
        .k(&[
            "patch",
            "pod",
            "app",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels","value":{"tier":"front"}}]"#,
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app patched", "{r}");
    assert_eq!(get(&c, &["pod", "app"], "{.metadata.labels.tier}"), "front");
    let r = c
        .k(&[
            "patch",
            "pod",
            "app",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/metadata/labels/tier","value":"back"}]"#,
        ])
        .run()
        .fails();
    // 422 Invalid, the JSON patch library's reason as its cause (its wording is the
    // library's, evanphx/json-patch's upstream).
    assert!(r.err().starts_with("The request is invalid: "), "{r}");
    assert!(r.requested(&["PATCH", "422"]), "{r}");

    // Directives on a primitive list merged by value (metadata.finalizers).
    c.k(&["create", "configmap", "held"]).run().ok();
    c.k(&[
        "patch",
        "cm",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["a.example.com/x","b.example.com/y"]}}"#,
    ])
    .run()
    .ok();
    c.k(&[
        "patch",
        "cm",
        "held",
        "-p",
        r#"{"metadata":{"finalizers":["c.example.com/z"]}}"#,
    ])
    .run()
    .ok();
    assert_eq!(
        get(&c, &["cm", "held"], "{.metadata.finalizers}"),
        r#"["a.example.com/x","b.example.com/y","c.example.com/z"]"#
    );
    c.k(&[
        "patch",
        "cm",
        "held",
        "-p",
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example.com/x"]}}"#,
    ])
    .run()
    .ok();
    assert_eq!(
        get(&c, &["cm", "held"], "{.metadata.finalizers}"),
        r#"["b.example.com/y","c.example.com/z"]"#
    );
    // A merge patch replaces the list.
    c.k(&[
        "patch",
        "cm",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .run()
    .ok();
    assert_eq!(get(&c, &["cm", "held"], "{.metadata.finalizers}"), "");
    let r = c.k(&["patch", "cm", "nosuch", "-p", "{}"]).run().fails();
    assert_eq!(
        r.err(),
        "Error from server (NotFound): configmaps \"nosuch\" not found",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn label_and_annotate() {
    let c = KubeCluster::start().await;
    c.create("app.yaml", TWO).ok();
    let r = c
        .k(&["label", "pod", "app", "tier=front", "env=prod"])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app labeled", "{r}");
    assert!(
        r.requested(&["PATCH", "fieldManager=kubectl-label", "200"]),
        "{r}"
    );
    let r = c.k(&["label", "pod", "app", "tier=back"]).run().fails();
    assert_eq!(
        r.err(),
        "error: 'tier' already has a value (front), and --overwrite is false",
        "{r}"
    );
    c.k(&["label", "pod", "app", "tier=back", "--overwrite"])
        .run()
        .ok();
    let r = c.k(&["label", "pod", "app", "env-"]).run().ok();
    assert_eq!(r.out(), "pod/app unlabeled", "{r}");
    let r = c
        .k(&["label", "pod", "app", "dry=run", "--dry-run=server"])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app labeled (server dry run)", "{r}");
    assert!(r.requested(&["PATCH", "dryRun=All", "200"]), "{r}");
    assert_eq!(
        get(&c, &["pod", "app"], "{.metadata.labels}"),
        r#"{"tier":"back"}"#
    );
    let r = c
        .k(&["get", "pods", "-l", "tier=back", "-o", "name"])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app", "{r}");

    let r = c
        .k(&["annotate", "pod", "app", "owner=team-a", "note=hello world"])
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app annotated", "{r}");
    c.k(&["annotate", "pod", "app", "owner=team-b", "--overwrite"])
        .run()
        .ok();
    c.k(&["annotate", "pod", "app", "note-"]).run().ok();
    assert_eq!(
        get(&c, &["pod", "app"], "{.metadata.annotations}"),
        r#"{"owner":"team-b"}"#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_with_an_editor_script() {
    let c = KubeCluster::start().await;
    c.create("app.yaml", TWO).ok();
    let editor = c.script(
        "editor.sh",
        r#"sed -i 's/image: busybox:1.36/image: busybox:1.37/' "$1""#,
    );
    let r = c
        .k(&["edit", "pod", "app"])
        .env("KUBE_EDITOR", &editor)
        .run()
        .ok();
    assert_eq!(r.out(), "pod/app edited", "{r}");
    assert!(
        r.requested(&["PATCH", "fieldManager=kubectl-edit", "200"]),
        "{r}"
    );
    assert_eq!(
        get(&c, &["pod", "app"], "{.spec.containers[*].image}"),
        "nginx:1.27 busybox:1.37"
    );
    // An editor that changes nothing.
    let r = c
        .k(&["edit", "pod", "app"])
        .env("KUBE_EDITOR", "true")
        .run()
        .ok();
    // (At -v=6 kubectl logs the edited file before this line, over several lines.)
    assert!(
        r.err().ends_with("\nEdit cancelled, no changes made."),
        "{r}"
    );
    assert!(!r.requested(&["PATCH"]), "{r}");
    // kubectl 1.33 edits a ConfigMap.
    c.k(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=color=red",
    ])
    .run()
    .ok();
    let editor = c.script("editor2.sh", r#"sed -i 's/color: red/color: blue/' "$1""#);
    let r = c
        .kubectl(
            kubestore_tests::kube::Kubectl::V1_33,
            &["edit", "cm", "settings"],
        )
        .env("KUBE_EDITOR", &editor)
        .run()
        .ok();
    assert_eq!(r.out(), "configmap/settings edited", "{r}");
    assert_eq!(get(&c, &["cm", "settings"], "{.data.color}"), "blue");
}
