//! Definitions as well-known projects publish them (prometheus-operator's ServiceMonitor,
//! cert-manager's Certificate: `tests/fixtures/crds/`, converted from YAML and stripped of
//! `apiVersion`/`kind` only) register, are established and serve their kinds: the projects'
//! documented examples are accepted, schema defaults are applied, unknown fields pruned, and
//! type, enum, pattern, minimum and required violations are refused with upstream's wording.

use kubestore_proto::apiextensions::v1::{
    CreateCustomObjectRequest, CustomResourceDefinition,
    custom_objects_client::CustomObjectsClient,
    custom_resource_definitions_client::CustomResourceDefinitionsClient,
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{register_established, to_json},
    reason,
    services::channel,
};
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};

/// A published manifest as the request body: JSON, without `apiVersion` and `kind`.
fn manifest(text: &str) -> CustomResourceDefinition {
    let mut v: Value = serde_json::from_str(text).expect("JSON");
    let m = v.as_object_mut().expect("an object");
    assert_eq!(
        m.remove("apiVersion"),
        Some(json!("apiextensions.k8s.io/v1"))
    );
    assert_eq!(m.remove("kind"), Some(json!("CustomResourceDefinition")));
    kubestore_tests::fixtures_custom::definition(v)
}

async fn create(
    c: &mut CustomObjectsClient<Channel>,
    (group, plural): (&str, &str),
    object: Value,
) -> Result<Value, Status> {
    c.create(CreateCustomObjectRequest {
        group: group.into(),
        version: "v1".into(),
        plural: plural.into(),
        namespace: "default".into(),
        object: Some(serde_json::from_value(object).expect("a JSON object")),
        dry_run: false,
    })
    .await
    .map(|r| to_json(&r.into_inner()))
}

/// Asserts an INVALID_ARGUMENT/Invalid refusal whose message holds `want`.
fn assert_invalid(r: Result<Value, Status>, want: &str) {
    let e = r.expect_err(want);
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid"),
        "{e:?}"
    );
    assert!(e.message().contains(want), "want {want:?} in {e:?}");
}

const SERVICE_MONITORS: (&str, &str) = ("monitoring.coreos.com", "servicemonitors");
const CERTIFICATES: (&str, &str) = ("cert-manager.io", "certificates");

/// prometheus-operator's getting-started example
/// (`example/user-guides/getting-started/example-app-service-monitor.yaml`).
fn service_monitor(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "labels": {"team": "frontend"}},
        "spec": spec,
    })
}

/// cert-manager's documented Certificate example (cert-manager.io/docs/usage/certificate).
fn certificate(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn documented_certificate_spec() -> Value {
    json!({
        "secretName": "example-com-tls",
        "duration": "2160h",
        "renewBefore": "360h",
        "subject": {"organizations": ["jetstack"]},
        "isCA": false,
        "privateKey": {"algorithm": "RSA", "encoding": "PKCS1", "size": 2048},
        "usages": ["server auth", "client auth"],
        "dnsNames": ["example.com", "www.example.com"],
        "uris": ["spiffe://cluster.local/ns/sandbox/sa/example"],
        "ipAddresses": ["192.168.0.5"],
        "issuerRef": {"name": "ca-issuer", "kind": "Issuer", "group": "cert-manager.io"},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn published_definitions_register_serve_validate_prune_and_default() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    for text in [
        include_str!("../fixtures/crds/monitoring.coreos.com_servicemonitors.json"),
        include_str!("../fixtures/crds/cert-manager.io_certificates.json"),
    ] {
        let crd = register_established(&mut defs, manifest(text)).await;
        let status = crd.status.expect("status");
        assert_eq!(status.stored_versions, vec!["v1".to_string()]);
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.r#type == "NamesAccepted" && c.status == "True"),
            "{status:?}"
        );
    }
    let mut objects = CustomObjectsClient::new(channel(&url).await);

    // The documented examples are accepted as written.
    let sm = create(
        &mut objects,
        SERVICE_MONITORS,
        service_monitor(
            "example-app",
            json!({"selector": {"matchLabels": {"app": "example-app"}}, "endpoints": [{"port": "web"}]}),
        ),
    )
    .await
    .expect("the getting-started ServiceMonitor");
    assert_eq!(sm["spec"]["endpoints"], json!([{"port": "web"}]));
    assert_eq!(sm["metadata"]["generation"], json!(1));
    let cert = create(
        &mut objects,
        CERTIFICATES,
        certificate("example-com", documented_certificate_spec()),
    )
    .await
    .expect("the documented Certificate");
    assert_eq!(cert["spec"], documented_certificate_spec());

    // Defaults from the schema are applied (relabelings[].action: replace); fields the schema
    // does not know are pruned, at the top of spec and deep inside a list item.
    let sm = create(
        &mut objects,
        SERVICE_MONITORS,
        service_monitor(
            "relabelled",
            json!({
                "selector": {"matchLabels": {"app": "example-app"}},
                "endpoints": [{
                    "port": "web",
                    "interval": "30s",
                    "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod", "color": "red"}],
                }],
                "notAField": true,
            }),
        ),
    )
    .await
    .expect("a ServiceMonitor with relabelings");
    let relabel = &sm["spec"]["endpoints"][0]["relabelings"][0];
    assert_eq!(relabel["action"], json!("replace"), "defaulted: {sm}");
    assert!(relabel.get("color").is_none(), "pruned: {sm}");
    assert!(sm["spec"].get("notAField").is_none(), "pruned: {sm}");
    assert_eq!(sm["spec"]["endpoints"][0]["interval"], json!("30s"));

    // Violations, one per field, in upstream's words.
    assert_invalid(
        create(
            &mut objects,
            SERVICE_MONITORS,
            service_monitor("type", json!({"selector": {}, "endpoints": "web"})),
        )
        .await,
        "spec.endpoints: Invalid value: \"string\": spec.endpoints in body must be of type array: \"string\"",
    );
    assert_invalid(
        create(
            &mut objects,
            SERVICE_MONITORS,
            service_monitor("required", json!({"endpoints": [{"port": "web"}]})),
        )
        .await,
        "spec.selector: Required value",
    );
    assert_invalid(
        create(
            &mut objects,
            SERVICE_MONITORS,
            service_monitor(
                "enum",
                json!({"selector": {}, "endpoints": [{"port": "web", "scheme": "ftp"}]}),
            ),
        )
        .await,
        "spec.endpoints[0].scheme: Unsupported value: \"ftp\": supported values: \"http\", \"https\", \"HTTP\", \"HTTPS\"",
    );
    assert_invalid(
        create(
            &mut objects,
            SERVICE_MONITORS,
            service_monitor(
                "pattern",
                json!({"selector": {}, "endpoints": [{"port": "web", "interval": "30 seconds"}]}),
            ),
        )
        .await,
        "spec.endpoints[0].interval: Invalid value: \"30 seconds\": spec.endpoints[0].interval in body should match '^(0|",
    );
    assert_invalid(
        create(
            &mut objects,
            SERVICE_MONITORS,
            service_monitor(
                "minimum",
                json!({"selector": {}, "endpoints": [{"port": "web"}], "sampleLimit": -1}),
            ),
        )
        .await,
        "spec.sampleLimit: Invalid value: -1: spec.sampleLimit in body should be greater than or equal to 0",
    );
    let mut bad = documented_certificate_spec();
    bad["privateKey"]["algorithm"] = json!("DSA");
    bad.as_object_mut().expect("spec").remove("issuerRef");
    let r = create(&mut objects, CERTIFICATES, certificate("bad", bad)).await;
    let e = r.clone().expect_err("two violations");
    assert_eq!(
        e.message()
            .matches("spec.issuerRef: Required value")
            .count(),
        1,
        "{e:?}"
    );
    assert_invalid(
        r,
        "spec.privateKey.algorithm: Unsupported value: \"DSA\": supported values: \"RSA\", \"ECDSA\", \"Ed25519\"",
    );
    assert_eq!(
        {
            use tonic_types::StatusExt;
            e.get_details_bad_request()
                .map(|b| b.field_violations.len())
                .unwrap_or(0)
        },
        2,
        "one violation per field: {e:?}"
    );
}

/// cert-manager's Issuer and ClusterIssuer, as published: their schemas nest 33 JSON levels,
/// deeper than prost's default recursion limit let a `Struct` decode ("malformed protobuf
/// message ... Struct.fields"), so they could not be registered. Their documented examples
/// (cert-manager.io/docs/configuration: selfSigned, ca, acme) are served.
#[tokio::test(flavor = "multi_thread")]
async fn cert_managers_issuers_register_and_serve_their_documented_examples() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    for text in [
        include_str!("../fixtures/crds/cert-manager.io_issuers.json"),
        include_str!("../fixtures/crds/cert-manager.io_clusterissuers.json"),
    ] {
        register_established(&mut defs, manifest(text)).await;
    }
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let mut issue = async |plural: &str, namespace: &str, kind: &str, name: &str, spec: Value| {
        let object = json!({"apiVersion": "cert-manager.io/v1", "kind": kind,
            "metadata": {"name": name}, "spec": spec});
        let request = CreateCustomObjectRequest {
            group: "cert-manager.io".into(),
            version: "v1".into(),
            plural: plural.into(),
            namespace: namespace.into(),
            object: Some(serde_json::from_value(object).expect("a JSON object")),
            dry_run: false,
        };
        let created = objects
            .create(request)
            .await
            .unwrap_or_else(|e| panic!("{kind} {name}: {e:?}"));
        to_json(&created.into_inner())
    };
    let self_signed = issue(
        "issuers",
        "default",
        "Issuer",
        "selfsigned-issuer",
        json!({"selfSigned": {}}),
    )
    .await;
    assert_eq!(self_signed["spec"], json!({"selfSigned": {}}));
    let ca = issue(
        "issuers",
        "default",
        "Issuer",
        "ca-issuer",
        json!({"ca": {"secretName": "ca-key-pair"}}),
    )
    .await;
    assert_eq!(ca["spec"], json!({"ca": {"secretName": "ca-key-pair"}}));
    let acme = json!({
        "email": "user@example.com",
        "server": "https://acme-staging-v02.api.letsencrypt.org/directory",
        "privateKeySecretRef": {"name": "example-issuer-account-key"},
        "solvers": [
            {"http01": {"ingress": {"ingressClassName": "nginx"}}},
            {"selector": {"dnsZones": ["example.com"]},
             "dns01": {"cloudflare": {"apiTokenSecretRef": {"name": "cloudflare-api-token-secret", "key": "api-token"}}}}
        ]
    });
    let staging = issue(
        "clusterissuers",
        "",
        "ClusterIssuer",
        "letsencrypt-staging",
        json!({"acme": acme}),
    )
    .await;
    let mut want = acme.clone();
    // The schema's default (renewalInformationSource: ARI) is applied.
    want["renewalInformationSource"] = json!("ARI");
    assert_eq!(staging["spec"]["acme"], want);
    assert!(staging["metadata"].get("namespace").is_none(), "{staging}");
}
