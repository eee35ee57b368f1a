//! Pod Security admission (issue 33): a namespace's `pod-security.kubernetes.io/*` labels
//! decide, as upstream's plugin does, on every transport: enforce refuses in upstream's words
//! (kubectl 1.33 and 1.37 print them as upstream's server makes them print; gRPC
//! FAILED_PRECONDITION with the same message), warn answers a
//! `Warning` (kubectl prints `Warning: would violate PodSecurity ...`; gRPC carries it as
//! `warning` metadata), audit annotates the audit event. Dry runs are admitted too; a
//! namespace without labels admits anything; an update that only relabels a Pod is not
//! checked again (upstream's significant-update rule), and the `status` subresource never is.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{
        Container, CreatePodRequest, Pod, PodSpec, SecurityContext, pods_client::PodsClient,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    kube::{KubeCluster, Kubectl, audit_events},
    rest::{JSON, assert_status, call},
};
use serde_json::{Value, json};

/// Creates namespace `name` with `labels`.
async fn namespace(c: &KubeCluster, name: &str, labels: Value) {
    let body = json!({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": name, "labels": labels}});
    call(
        c.api,
        "POST",
        "/api/v1/namespaces",
        &[JSON],
        body.to_string().as_bytes(),
    )
    .await
    .is(201);
}

fn privileged_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                    "securityContext": {"privileged": true}}]}})
}

fn plain_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
}

const BASELINE_PRIVILEGED: &str = "violates PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)";

/// POSTs `pod` to `ns` (dry run if asked) and returns the reply.
async fn create(
    c: &KubeCluster,
    ns: &str,
    pod: &Value,
    dry_run: bool,
) -> kubestore_tests::rest::Reply {
    let path = format!(
        "/api/v1/namespaces/{ns}/pods{}",
        if dry_run { "?dryRun=All" } else { "" }
    );
    call(c.api, "POST", &path, &[JSON], pod.to_string().as_bytes()).await
}

/// Waits until admission refuses a privileged Pod in `ns` (its labels reached the cache).
async fn enforced(c: &KubeCluster, ns: &str) {
    kubestore_tests::rest::wait_until(Duration::from_secs(10), "the labels are seen", || async {
        create(c, ns, &privileged_pod("probe"), true).await.code == 403
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn enforce_refuses_in_upstreams_words_on_every_transport() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("audit.log");
    let c = KubeCluster::audited(dir.path(), &log, &["pods"]).await;
    namespace(
        &c,
        "strict",
        json!({"pod-security.kubernetes.io/enforce": "baseline"}),
    )
    .await;
    enforced(&c, "strict").await;
    // REST: 403 Forbidden, upstream's message; nothing stored.
    let r = create(&c, "strict", &privileged_pod("p"), false).await;
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        status["message"],
        format!("pods \"p\" is forbidden: {BASELINE_PRIVILEGED}")
    );
    let r = call(c.api, "GET", "/api/v1/namespaces/strict/pods/p", &[], b"").await;
    assert_eq!(r.code, 404, "a refused Pod is not stored");
    // What baseline allows is created; and the enforced policy is in its audit event.
    create(&c, "strict", &plain_pod("ok"), false).await.is(201);
    kubestore_tests::rest::wait_until(Duration::from_secs(10), "the audit event", || async {
        audit_events(&log).iter().any(|e| {
            e["objectRef"]["name"] == "ok"
                && e["verb"] == "create"
                && e["annotations"]["pod-security.kubernetes.io/enforce-policy"]
                    == "baseline:latest"
        })
    })
    .await;
    // kubectl, as upstream's server makes it print.
    let manifest = c.file("pod.json", &privileged_pod("k").to_string());
    let manifest = manifest.to_str().expect("path");
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let out = c
            .kubectl(v, &["create", "-n", "strict", "-f", manifest])
            .run()
            .fails();
        assert!(
            out.err().contains(&format!(
                "Error from server (Forbidden): error when creating \"{manifest}\": pods \"k\" is forbidden: {BASELINE_PRIVILEGED}"
            )),
            "{out}"
        );
    }
    // The typed gRPC API: the same message, FAILED_PRECONDITION as every admission refusal
    // (PERMISSION_DENIED is the authorizers': who asks, not what is asked).
    let mut pods = PodsClient::connect(c.registry_url())
        .await
        .expect("connect");
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: "g".into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: "nginx:1.27".into(),
                security_context: Some(SecurityContext {
                    privileged: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = pods
        .create(CreatePodRequest {
            namespace: "strict".into(),
            pod: Some(pod.clone()),
            dry_run: false,
        })
        .await
        .expect_err("refused");
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        e.message(),
        format!("pods \"g\" is forbidden: {BASELINE_PRIVILEGED}")
    );
    // A namespace without labels admits the same Pod.
    pods.create(CreatePodRequest {
        namespace: "default".into(),
        pod: Some(pod),
        dry_run: false,
    })
    .await
    .expect("privileged:latest admits anything");
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_and_audit_let_the_pod_through_and_say_why() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("audit.log");
    let c = KubeCluster::audited(dir.path(), &log, &["pods"]).await;
    namespace(
        &c,
        "watched",
        json!({"pod-security.kubernetes.io/enforce": "baseline",
               "pod-security.kubernetes.io/warn": "restricted",
               "pod-security.kubernetes.io/audit": "restricted",
               "pod-security.kubernetes.io/audit-version": "v1.30"}),
    )
    .await;
    enforced(&c, "watched").await;
    let restricted = "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";
    // REST: created, with upstream's warning.
    let r = create(&c, "watched", &plain_pod("w"), false).await.is(201);
    let warning = format!(
        "299 - \"would violate PodSecurity \\\"restricted:latest\\\": {}\"",
        restricted.replace('"', "\\\"")
    );
    assert_eq!(r.headers("warning"), vec![warning.as_str()], "{}", r.head);
    // The audit annotation, at the audit mode's version.
    kubestore_tests::rest::wait_until(Duration::from_secs(10), "the audit event", || async {
        audit_events(&log).iter().any(|e| {
            e["objectRef"]["name"] == "w"
                && e["annotations"]["pod-security.kubernetes.io/audit-violations"]
                    == format!("would violate PodSecurity \"restricted:v1.30\": {restricted}")
                        .as_str()
        })
    })
    .await;
    // kubectl prints the warning.
    for (v, name) in [(Kubectl::V1_33, "w133"), (Kubectl::V1_37, "w137")] {
        let manifest = c.file("pod.json", &plain_pod(name).to_string());
        let out = c
            .kubectl(
                v,
                &[
                    "create",
                    "-n",
                    "watched",
                    "-f",
                    manifest.to_str().expect("path"),
                ],
            )
            .run()
            .ok();
        assert!(
            out.err().contains(&format!(
                "Warning: would violate PodSecurity \"restricted:latest\": {restricted}"
            )),
            "{out}"
        );
    }
    // Dry runs are admitted (and warned) too, and store nothing.
    let r = create(&c, "watched", &plain_pod("dry"), true).await.is(201);
    assert_eq!(r.headers("warning"), vec![warning.as_str()], "{}", r.head);
    // The typed gRPC API: `warning` metadata of the same text.
    let mut pods = PodsClient::connect(c.registry_url())
        .await
        .expect("connect");
    let created = pods
        .create(CreatePodRequest {
            namespace: "watched".into(),
            pod: Some(Pod {
                metadata: Some(ObjectMeta {
                    name: "grpc".into(),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: "nginx:1.27".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("created");
    let warned: Vec<&str> = created
        .metadata()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(warned, vec![warning.as_str()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_are_checked_only_when_they_change_what_the_checks_see() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("audit.log");
    let c = KubeCluster::audited(dir.path(), &log, &["pods"]).await;
    // A privileged Pod made before the namespace was labelled.
    namespace(&c, "later", json!({})).await;
    create(&c, "later", &privileged_pod("old"), false)
        .await
        .is(201);
    let body = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}});
    call(
        c.api,
        "PATCH",
        "/api/v1/namespaces/later",
        &[("Content-Type", "application/merge-patch+json")],
        body.to_string().as_bytes(),
    )
    .await
    .is(200);
    enforced(&c, "later").await;
    // Strategic merge patches: containers merge by name, so only what is named changes.
    let patch = |path: &'static str, body: Value| {
        let c = &c;
        async move {
            call(
                c.api,
                "PATCH",
                path,
                &[("Content-Type", "application/strategic-merge-patch+json")],
                body.to_string().as_bytes(),
            )
            .await
        }
    };
    // Relabelling it is not a significant update: allowed.
    patch(
        "/api/v1/namespaces/later/pods/old",
        json!({"metadata": {"labels": {"tier": "web"}}}),
    )
    .await
    .is(200);
    // Its status is never checked.
    patch(
        "/api/v1/namespaces/later/pods/old/status",
        json!({"status": {"phase": "Running"}}),
    )
    .await
    .is(200);
    // Another image is: refused in upstream's words.
    let r = patch(
        "/api/v1/namespaces/later/pods/old",
        json!({"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}),
    )
    .await;
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        status["message"],
        format!("pods \"old\" is forbidden: {BASELINE_PRIVILEGED}")
    );
}

/// `--admission-control-config-file`: the PodSecurityConfiguration's defaults apply to a
/// namespace without labels, its exempt namespaces and runtime classes are not checked (and
/// their audit events say why), and a Namespace whose Pod Security labels do not parse is
/// refused as upstream refuses it (kubectl prints upstream's 422).
#[tokio::test(flavor = "multi_thread")]
async fn the_admission_configuration_sets_defaults_and_exemptions() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("audit.log");
    let admission = dir.path().join("admission.yaml");
    std::fs::write(
        &admission,
        r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline}
    exemptions: {namespaces: [tools], runtimeClasses: [kata]}
"#,
    )
    .expect("write admission configuration");
    let c = KubeCluster::audited_with(
        dir.path(),
        &log,
        &["pods"],
        registry_svc::Config {
            admission: registry_svc::admission::config::Flags {
                config_file: Some(admission),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await;
    // The default: baseline enforced where no label says otherwise.
    let r = create(&c, "default", &privileged_pod("p"), false).await;
    assert_eq!(
        assert_status(&r, 403, "Forbidden")["message"],
        format!("pods \"p\" is forbidden: {BASELINE_PRIVILEGED}")
    );
    // An exempt namespace, and an exempt runtime class.
    create(&c, "tools", &privileged_pod("t"), false)
        .await
        .is(201);
    let mut kata = privileged_pod("k");
    kata["spec"]["runtimeClassName"] = json!("kata");
    create(&c, "default", &kata, false).await.is(201);
    kubestore_tests::rest::wait_until(Duration::from_secs(10), "both audit events", || async {
        let events = audit_events(&log);
        let exempt = |name: &str, why: &str| {
            events.iter().any(|e| {
                e["objectRef"]["name"] == name
                    && e["annotations"]["pod-security.kubernetes.io/exempt"] == why
            })
        };
        exempt("t", "namespace") && exempt("k", "runtimeClass")
    })
    .await;
    // A label that does not parse is refused on the Namespace.
    namespace(&c, "labelled", json!({})).await;
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let out = c
            .kubectl(
                v,
                &[
                    "label",
                    "namespace",
                    "labelled",
                    "pod-security.kubernetes.io/enforce=strict",
                ],
            )
            .run()
            .fails();
        assert!(
            out.err().contains("The Namespace \"labelled\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"),
            "{out}"
        );
    }
}

/// A namespace's enforce label made stricter: upstream checks the namespace's existing Pods
/// against the new level and warns about those that violate it (grouped by reason, named after
/// the first Pod), without refusing the label; kubectl prints the warnings. A relaxed label,
/// or one set to the same level, checks nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_stricter_enforce_label_warns_about_the_namespaces_pods() {
    let c = KubeCluster::start().await;
    namespace(&c, "legacy", json!({})).await;
    for name in ["p2", "p1", "p3"] {
        create(&c, "legacy", &privileged_pod(name), false)
            .await
            .is(201);
    }
    create(&c, "legacy", &plain_pod("fine"), false)
        .await
        .is(201);
    let out = c
        .kubectl(
            Kubectl::V1_33,
            &[
                "label",
                "namespace",
                "legacy",
                "pod-security.kubernetes.io/enforce=baseline",
            ],
        )
        .run()
        .ok();
    assert!(out.out().contains("namespace/legacy labeled"), "{out}");
    assert!(
        out.err().contains(
            "Warning: existing pods in namespace \"legacy\" violate the new PodSecurity enforce level \"baseline:latest\"\n\
             Warning: p1 (and 2 other pods): privileged (container \"c\" must not set securityContext.privileged=true)"
        ),
        "{out}"
    );

    // REST, with kubectl 1.37's merge patch: restricted also finds the plain Pod.
    let patch =
        json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}});
    let r = call(
        c.api,
        "PATCH",
        "/api/v1/namespaces/legacy",
        &[("Content-Type", "application/merge-patch+json")],
        patch.to_string().as_bytes(),
    )
    .await
    .is(200);
    let warnings = r.headers("warning");
    assert_eq!(
        warnings.first().copied(),
        Some(
            "299 - \"existing pods in namespace \\\"legacy\\\" violate the new PodSecurity enforce level \\\"restricted:latest\\\"\""
        ),
        "{}",
        r.head
    );
    assert_eq!(
        warnings.len(),
        3,
        "the privileged Pods and the plain one: {warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("299 - \"fine: allowPrivilegeEscalation != false")),
        "{warnings:?}"
    );

    // Relaxed: nothing is checked.
    let out = c
        .kubectl(
            Kubectl::V1_37,
            &[
                "label",
                "--overwrite",
                "namespace",
                "legacy",
                "pod-security.kubernetes.io/enforce=baseline",
            ],
        )
        .run()
        .ok();
    assert!(!out.err().contains("Warning"), "{out}");
}
