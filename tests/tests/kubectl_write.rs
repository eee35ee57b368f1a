//! kubectl writes as to kube-apiserver (rest-api.md §11 cases 5, 6, 8, 13 and 16): `create`
//! validated on the server (`fieldValidation=Strict`, `Warn`, `Ignore`), upstream's exact error
//! texts (AlreadyExists, Invalid with its causes, BadRequest, Conflict), `--dry-run=server`
//! storing nothing, `apply` (created, unchanged, configured, a removed key removed: the
//! three-way strategic merge patch), `replace` at a stale resourceVersion, and the generators
//! (`create configmap|secret`), whose bodies are Kubernetes protobuf.

use kubestore_tests::kube::{KubeCluster, Kubectl, pod_yaml, row, table};

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

const TYPO: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  nodeNmae: node-1\n  containers:\n  - name: c\n    image: busybox\n";

#[tokio::test(flavor = "multi_thread")]
async fn create_is_validated_by_the_server() {
    let c = KubeCluster::start().await;
    let web = c.file("web.yaml", &pod_yaml("web", "node-1", &[]));
    let r = c.k(&["create", "-f", path(&web)]).run().ok();
    assert_eq!(r.out(), "pod/web created", "{r}");
    // kubectl finds `fieldValidation` in the OpenAPI v3 document and leaves validation to the
    // server.
    assert!(
        r.requested(&[
            "POST",
            "/api/v1/namespaces/default/pods?fieldManager=kubectl-create&fieldValidation=Strict",
            "201"
        ]),
        "{r}"
    );
    let r = c.k(&["create", "-f", path(&web)]).run().fails();
    assert_eq!(
        r.err(),
        format!(
            "Error from server (AlreadyExists): error when creating \"{}\": pods \"web\" already exists",
            path(&web)
        ),
        "{r}"
    );

    // An unknown field: refused under Strict (kubectl's default), a warning under Warn,
    // dropped silently under Ignore (`--validate=false`).
    let typo = c.file("typo.yaml", TYPO);
    for v in [Kubectl::V1_29, Kubectl::V1_37] {
        let r = c.kubectl(v, &["create", "-f", path(&typo)]).run().fails();
        assert_eq!(
            r.err(),
            format!(
                "Error from server (BadRequest): error when creating \"{}\": Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.nodeNmae\"",
                path(&typo)
            ),
            "{r}"
        );
    }
    let r = c.k(&["get", "pod", "typo"]).run().fails();
    assert!(r.err().contains("NotFound"), "{r}");
    let r = c
        .k(&["create", "-f", path(&typo), "--validate=warn"])
        .run()
        .ok();
    assert_eq!(
        (r.out(), r.err()),
        (
            "pod/typo created",
            "Warning: unknown field \"spec.nodeNmae\""
        ),
        "{r}"
    );
    assert!(r.requested(&["POST", "fieldValidation=Warn", "201"]), "{r}");
    let r = c
        .k(&["replace", "-f", path(&typo), "--validate=false"])
        .run()
        .ok();
    assert_eq!((r.out(), r.err()), ("pod/typo replaced", ""), "{r}");
    assert!(
        r.requested(&["PUT", "fieldValidation=Ignore", "200"]),
        "{r}"
    );
    let r = c
        .k(&["get", "pod", "typo", "-o", "jsonpath={.spec.nodeName}"])
        .run()
        .ok();
    assert_eq!(r.out(), "", "the unknown field was dropped:{r}");

    // Invalid: kubectl prints the causes, one inline, several as a list.
    let bad = c.file(
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n",
    );
    let r = c.k(&["create", "-f", path(&bad)]).run().fails();
    assert_eq!(
        r.err(),
        "The Pod \"bad\" is invalid: spec.containers[0].image: Required value",
        "{r}"
    );
    let bad = c.file(
        "bad2.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n  - name: d\n",
    );
    let r = c.k(&["create", "-f", path(&bad)]).run().fails();
    assert_eq!(
        r.err(),
        "The Pod \"bad\" is invalid: \n* spec.containers[0].image: Required value\n* spec.containers[1].image: Required value",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_dry_run_stores_nothing() {
    let c = KubeCluster::start().await;
    let web = c.file("web.yaml", &pod_yaml("web", "node-1", &[]));
    let r = c
        .k(&["create", "-f", path(&web), "--dry-run=server", "-o", "yaml"])
        .run()
        .ok();
    let out = r.out();
    for line in [
        "kind: Pod",
        "  name: web",
        "  namespace: default",
        "  nodeName: node-1",
        "  terminationGracePeriodSeconds: 30",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?}:{r}");
    }
    assert!(out.contains("  uid: "), "{r}");
    assert!(r.requested(&["POST", "dryRun=All", "201"]), "{r}");
    let r = c.k(&["get", "pods"]).run().ok();
    assert_eq!(
        (r.out(), r.err()),
        ("", "No resources found in default namespace."),
        "{r}"
    );
    c.k(&["create", "-f", path(&web)]).run().ok();
    let r = c
        .k(&["delete", "pod", "web", "--dry-run=server"])
        .run()
        .ok();
    assert_eq!(
        r.out(),
        "pod \"web\" deleted from default namespace (server dry run)",
        "{r}"
    );
    let r = c
        .k(&[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "", "not even marked:{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_creates_leaves_unchanged_and_configures() {
    let c = KubeCluster::start().await;
    let web = c.file("web.yaml", &pod_yaml("web", "node-1", &[("app", "web")]));
    let r = c.k(&["apply", "-f", path(&web)]).run().ok();
    assert_eq!(r.out(), "pod/web created", "{r}");
    // The server gives back every applied field: nothing to patch.
    let r = c.k(&["apply", "-f", path(&web)]).run().ok();
    assert_eq!(r.out(), "pod/web unchanged", "{r}");
    let newer = c.file(
        "web2.yaml",
        &pod_yaml("web", "node-1", &[("app", "web")]).replace("nginx:1.27", "nginx:1.28"),
    );
    let r = c.k(&["apply", "-f", path(&newer)]).run().ok();
    assert_eq!(r.out(), "pod/web configured", "{r}");
    // kubectl computed a strategic merge patch (built-in kind) from the last-applied state.
    assert!(
        r.requested(&[
            "PATCH",
            "/api/v1/namespaces/default/pods/web?fieldManager=kubectl-client-side-apply",
            "200"
        ]),
        "{r}"
    );
    let r = c
        .k(&[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.spec.containers[0].image}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "nginx:1.28", "{r}");

    // A key removed from the manifest is removed from the object (the three-way patch sends
    // it as null), the others kept.
    let cm = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n{data}")
    };
    let both = c.file("cm.yaml", &cm("  a: \"1\"\n  b: \"2\"\n"));
    assert_eq!(
        c.k(&["apply", "-f", path(&both)]).run().ok().out(),
        "configmap/settings created"
    );
    c.k(&["annotate", "cm", "settings", "kept=yes"]).run().ok();
    let one = c.file("cm2.yaml", &cm("  a: \"1\"\n"));
    assert_eq!(
        c.k(&["apply", "-f", path(&one)]).run().ok().out(),
        "configmap/settings configured"
    );
    let r = c
        .k(&[
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.data} {.metadata.annotations.kept}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "{\"a\":\"1\"} yes", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn replace_at_a_stale_resource_version_is_a_conflict() {
    let c = KubeCluster::start().await;
    c.create("web.yaml", &pod_yaml("web", "node-1", &[])).ok();
    let yaml = c.k(&["get", "pod", "web", "-o", "yaml"]).run().ok();
    let stale = c.file("stale.yaml", &yaml.stdout);
    c.k(&["label", "pod", "web", "moved=on"]).run().ok();
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let r = c.kubectl(v, &["replace", "-f", path(&stale)]).run().fails();
        assert_eq!(
            r.err(),
            format!(
                "Error from server (Conflict): error when replacing \"{}\": Operation cannot be fulfilled on pods \"web\": the object has been modified; please apply your changes to the latest version and try again",
                path(&stale)
            ),
            "{r}"
        );
    }
    let fresh = c.k(&["get", "pod", "web", "-o", "yaml"]).run().ok();
    let fresh = c.file(
        "fresh.yaml",
        &fresh.stdout.replace("moved: \"on\"", "moved: \"off\""),
    );
    let r = c.k(&["replace", "-f", path(&fresh)]).run().ok();
    assert_eq!(r.out(), "pod/web replaced", "{r}");
    assert!(
        r.requested(&["PUT", "fieldManager=kubectl-replace", "200"]),
        "{r}"
    );
    let r = c
        .k(&[
            "get",
            "pod",
            "web",
            "-o",
            "jsonpath={.metadata.labels.moved}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "off", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn generators_create_config_maps_and_secrets_with_protobuf_bodies() {
    let c = KubeCluster::start().await;
    for (v, n) in [
        (Kubectl::V1_29, "29"),
        (Kubectl::V1_33, "33"),
        (Kubectl::V1_37, "37"),
    ] {
        let cm = format!("c{n}");
        let r = c
            .kubectl(
                v,
                &[
                    "create",
                    "configmap",
                    &cm,
                    "--from-literal=a=b",
                    "--from-literal=c=d",
                ],
            )
            .run()
            .ok();
        assert_eq!(r.out(), format!("configmap/{cm} created"), "{r}");
        let s = format!("s{n}");
        let r = c
            .kubectl(
                v,
                &[
                    "create",
                    "secret",
                    "generic",
                    &s,
                    "--from-literal=password=hunter2",
                ],
            )
            .run()
            .ok();
        assert_eq!(r.out(), format!("secret/{s} created"), "{r}");
        let r = c
            .k(&[
                "get",
                "secret",
                &s,
                "-o",
                "jsonpath={.type} {.data.password}",
            ])
            .run()
            .ok();
        assert_eq!(r.out(), "Opaque aHVudGVyMg==", "{r}");
    }
    let r = c
        .k(&["get", "cm", "c37", "-o", "jsonpath={.data}"])
        .run()
        .ok();
    assert_eq!(r.out(), "{\"a\":\"b\",\"c\":\"d\"}", "{r}");
    // The bodies were protobuf: kubectl's request headers say so (-v=8), and the object came
    // through whole.
    let r = c
        .k(&[
            "create",
            "configmap",
            "c-proto",
            "--from-literal=k=v",
            "-v=8",
        ])
        .run()
        .ok();
    let all = format!("{}{}", r.log, r.stderr);
    assert!(
        all.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "{r}"
    );
    let r = c
        .k(&["get", "cm", "c-proto", "-o", "jsonpath={.data.k}"])
        .run()
        .ok();
    assert_eq!(r.out(), "v", "{r}");
    c.k(&["delete", "cm", "c-proto"]).run().ok();
    let r = c.k(&["get", "configmaps"]).run().ok();
    assert_eq!(
        table(r.out(), 1),
        [
            row(&["NAME", "DATA"]),
            row(&["c29", "2"]),
            row(&["c33", "2"]),
            row(&["c37", "2"]),
        ],
        "{r}"
    );
    let r = c.k(&["get", "secrets"]).run().ok();
    assert_eq!(
        table(r.out(), 1)[..2],
        [row(&["NAME", "TYPE", "DATA"]), row(&["s29", "Opaque", "1"])],
        "{r}"
    );
    let r = c
        .k(&["create", "configmap", "c37", "--from-literal=a=b"])
        .run()
        .fails();
    assert_eq!(
        r.err(),
        "error: failed to create configmap: configmaps \"c37\" already exists",
        "{r}"
    );
    let r = c
        .k(&[
            "create",
            "secret",
            "generic",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server",
            "-o",
            "name",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "secret/dry", "{r}");
    assert!(r.requested(&["POST", "dryRun=All", "201"]), "{r}");
    c.k(&["get", "secret", "dry"]).run().fails();
}
