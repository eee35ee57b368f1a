//! kubectl's own validation against kubestore's OpenAPI (issue 31, point 1), with its default
//! `--validate=strict`:
//!
//! - an object of every published definition of `tests/fixtures/crds/` (cert-manager's,
//!   prometheus-operator's, the docs' CronTab) is created by kubectl 1.29, 1.33 and 1.37: their
//!   schemas' integers read as integers (`minLength: 1`, not `1.0`, which kube-openapi refused,
//!   sending kubectl to `/openapi/v2`, which was not served);
//! - a kind kubestore does not serve fails as upstream's does (`no matches for kind
//!   "Deployment" in version "apps/v1"`), not with a download error (kubectl validates it
//!   against `/openapi/v2`, served in the protobuf kubectl asks for);
//! - `kubectl explain` prints upstream's descriptions of built-in kinds' fields.

use std::path::Path;

use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    rest::call,
};
use serde_json::{Value, json};

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A published definition as a manifest kubectl applies.
fn definition(file: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/crds")
        .join(file);
    let mut crd: Value =
        serde_json::from_slice(&std::fs::read(&p).expect("fixture")).expect("JSON");
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    crd
}

/// An object of each fixture definition, as its project documents one.
fn objects() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "cert-manager.io_certificates.json",
            "certificates.cert-manager.io",
            json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "example-com"},
                   "spec": {"secretName": "example-com-tls", "duration": "2160h", "renewBefore": "360h",
                            "isCA": false,
                            "privateKey": {"algorithm": "RSA", "encoding": "PKCS1", "size": 2048},
                            "usages": ["server auth", "client auth"],
                            "dnsNames": ["example.com", "www.example.com"],
                            "issuerRef": {"name": "ca-issuer", "kind": "Issuer", "group": "cert-manager.io"}}}),
        ),
        (
            "cert-manager.io_issuers.json",
            "issuers.cert-manager.io",
            json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                   "metadata": {"name": "selfsigned"}, "spec": {"selfSigned": {}}}),
        ),
        (
            "cert-manager.io_clusterissuers.json",
            "clusterissuers.cert-manager.io",
            json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                   "metadata": {"name": "ca"}, "spec": {"ca": {"secretName": "ca-key-pair"}}}),
        ),
        (
            "monitoring.coreos.com_servicemonitors.json",
            "servicemonitors.monitoring.coreos.com",
            json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                   "metadata": {"name": "web", "labels": {"team": "frontend"}},
                   "spec": {"selector": {"matchLabels": {"app": "web"}},
                            "endpoints": [{"port": "web", "interval": "30s"}]}}),
        ),
        (
            "crontab.json",
            "crontabs.stable.example.com",
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                   "metadata": {"name": "nightly"},
                   "spec": {"cronSpec": "0 0 * * *", "image": "backup", "replicas": 1}}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_creates_objects_of_every_published_definition_with_its_validation() {
    let c = KubeCluster::start().await;
    for (file, name, _) in objects() {
        let f = c.file(file, &definition(file).to_string());
        c.k(&["apply", "-f", path(&f)]).run().ok();
        c.k(&[
            "wait",
            "--for",
            "condition=Established",
            &format!("crd/{name}"),
            "--timeout=30s",
        ])
        .run()
        .ok();
    }
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        for (file, _, object) in objects() {
            let mut object = object.clone();
            let name = format!(
                "{}-{}",
                object["metadata"]["name"].as_str().expect("a name"),
                v.minor().replace('.', "-")
            );
            object["metadata"]["name"] = json!(name);
            let f = c.file(&format!("{file}.object.json"), &object.to_string());
            // Default validation (strict): kubectl reads /openapi/v3 and, when that cannot
            // tell, /openapi/v2; either failing was "error validating data".
            let r = c.kubectl(v, &["create", "-f", path(&f)]).run().ok();
            assert!(r.out().ends_with(&format!("/{name} created")), "{r}");
        }
    }
    // The documents behind it: integers are integers, and /openapi/v2 is served in the
    // protobuf kubectl asks for.
    let doc = call(
        c.api,
        "GET",
        "/openapi/v3/apis/cert-manager.io/v1",
        &[],
        b"",
    )
    .await
    .is(200);
    let text = String::from_utf8_lossy(&doc.body);
    assert!(
        !text.contains("\"minLength\":1.0"),
        "floats in the document"
    );
    assert!(text.contains("\"minLength\":1"), "no minLength at all?");
    let v2 = call(
        c.api,
        "GET",
        "/openapi/v2",
        &[(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        b"",
    )
    .await
    .is(200);
    assert_eq!(
        v2.header("content-type"),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    let json = call(
        c.api,
        "GET",
        "/openapi/v2",
        &[("Accept", "application/json")],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(json["swagger"], "2.0");
    assert!(
        json["definitions"]["io.cert-manager.v1.Certificate"].is_object(),
        "the definition's schema in v2"
    );
    call(c.api, "GET", "/openapi/v2", &[("Accept", "text/html")], b"")
        .await
        .is(406);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_kubestore_does_not_serve_fails_as_upstream() {
    let c = KubeCluster::start().await;
    let f = c.file(
        "deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n",
    );
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let r = c.kubectl(v, &["apply", "-f", path(&f)]).run().fails();
        assert!(
            r.err().contains(
                "no matches for kind \"Deployment\" in version \"apps/v1\"\nensure CRDs are installed first"
            ),
            "{r}"
        );
        assert!(!r.err().contains("failed to download openapi"), "{r}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explain_prints_upstreams_descriptions() {
    let c = KubeCluster::start().await;
    let r = c.k(&["explain", "pods.spec.nodeName"]).run().ok();
    assert!(
        r.out()
            .contains("NodeName indicates in which node this pod is scheduled."),
        "{r}"
    );
    let r = c.k(&["explain", "configmaps"]).run().ok();
    assert!(
        r.out()
            .contains("ConfigMap holds configuration data for pods to consume."),
        "{r}"
    );
    assert!(r.out().contains("binaryData\t<map[string]string>"), "{r}");
}
