//! kubectl learns the API from registry-svc as from kube-apiserver (rest-api.md §11 cases 1
//! and 12): `api-resources` on kubectl 1.29 (aggregated discovery v2beta1), 1.33 and 1.37
//! (v2 only), a custom kind found as soon as its definition is served (kubectl drops its
//! discovery cache on a kind it does not know), and `explain` from the OpenAPI v3 documents,
//! for a built-in kind and a custom one.

use kubestore_tests::kube::{KubeCluster, Kubectl, cells, crontab_yaml};

/// `api-resources`' rows of the built-in kinds (upstream's names, short names, scope, kind).
const BUILT_IN_ROWS: &[&[&str]] = &[
    &["configmaps", "cm", "v1", "true", "ConfigMap"],
    &["events", "ev", "v1", "true", "Event"],
    &["events", "ev", "events.k8s.io/v1", "true", "Event"],
    &["pods", "po", "v1", "true", "Pod"],
    &["secrets", "v1", "true", "Secret"],
    &[
        "customresourcedefinitions",
        "crd,crds",
        "apiextensions.k8s.io/v1",
        "false",
        "CustomResourceDefinition",
    ],
    &["leases", "coordination.k8s.io/v1", "true", "Lease"],
];

#[tokio::test(flavor = "multi_thread")]
async fn api_resources_on_kubectl_1_29_1_33_and_1_37() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let r = c.kubectl(v, &["api-resources"]).run().ok();
        let mut lines = r.out().lines();
        assert_eq!(
            cells(lines.next().unwrap_or_default()),
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
            "{r}"
        );
        let rows: Vec<Vec<String>> = lines.map(cells).collect();
        for want in BUILT_IN_ROWS {
            assert!(
                rows.iter().any(|row| row == want),
                "{} has no row {want:?}:{r}",
                v.minor()
            );
        }
        // Discovery in two requests: /api and /apis answered aggregated (1.29 asks for
        // v2beta1, 1.33 for v2 or v2beta1, 1.37 for v2 only), no per-group-version document.
        assert!(r.requested(&["GET", "/api?", "200"]), "{r}");
        assert!(r.requested(&["GET", "/apis?", "200"]), "{r}");
        assert!(
            !r.requested(&["/api/v1"]) && !r.requested(&["/apis/coordination.k8s.io/v1"]),
            "aggregated discovery expected:{r}"
        );
    }
    // `-o wide` adds the verbs and categories.
    let r = c.k(&["api-resources", "-o", "wide"]).run().ok();
    let pods = r
        .out()
        .lines()
        .map(cells)
        .find(|row| row.first().map(String::as_str) == Some("pods"))
        .unwrap_or_default();
    assert_eq!(
        pods,
        [
            "pods",
            "po",
            "v1",
            "true",
            "Pod",
            "create,delete,deletecollection,get,list,patch,update,watch",
            "all"
        ],
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_custom_kind_is_found_with_a_warm_discovery_cache() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_29, Kubectl::V1_37] {
        // The cache is warm (and knows no CronTab) ...
        let r = c.kubectl(v, &["api-resources"]).run().ok();
        assert!(!r.out().contains("crontabs"), "{r}");
    }
    c.crontab_crd();
    c.create("ct.yaml", &crontab_yaml("nightly", "0 0 * * *", 2))
        .ok();
    for v in [Kubectl::V1_29, Kubectl::V1_37] {
        // ... and kubectl, not finding the kind, discovers again.
        let r = c.kubectl(v, &["get", "ct", "-o", "name"]).run().ok();
        assert_eq!(r.out(), "crontab.stable.example.com/nightly", "{r}");
        let r = c
            .kubectl(v, &["api-resources", "--api-group=stable.example.com"])
            .run()
            .ok();
        let rows: Vec<Vec<String>> = r.out().lines().skip(1).map(cells).collect();
        assert_eq!(
            rows,
            [["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]],
            "{}: {r}",
            v.minor()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_reads_built_in_and_custom_schemas() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_29, Kubectl::V1_37] {
        let r = c
            .kubectl(v, &["explain", "pods.spec.containers"])
            .run()
            .ok();
        let text = r.out();
        assert!(
            text.starts_with("KIND:       Pod\nVERSION:    v1\n\nFIELD: containers <[]Container>"),
            "{r}"
        );
        // The explain of 1.29 and later reads OpenAPI v3 only.
        assert!(
            r.requested(&["GET", "/openapi/v3/api/v1?hash=", "200"]),
            "{r}"
        );
        for field in [
            "  image\t<string>",
            "  name\t<string>",
            "  resources\t<ResourceRequirements>",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(field)),
                "{}: no {field:?}:{r}",
                v.minor()
            );
        }
    }
    c.crontab_crd();
    // The definition's schema has no descriptions: what upstream prints for it too.
    let r = c.k(&["explain", "crontabs.spec"]).run().ok();
    assert_eq!(
        r.out(),
        "GROUP:      stable.example.com\nKIND:       CronTab\nVERSION:    v1\n\n\
         FIELD: spec <Object>\n\n\nDESCRIPTION:\n    <empty>\nFIELDS:\n\
         \x20 cronSpec\t<string>\n    <no description>\n\n\
         \x20 image\t<string>\n    <no description>\n\n\
         \x20 replicas\t<integer>\n    <no description>",
        "{r}"
    );
    assert!(
        r.requested(&["GET", "/openapi/v3/apis/stable.example.com/v1?hash=", "200"]),
        "{r}"
    );
}
