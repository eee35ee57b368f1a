//! Audit (issue 32): `--audit-policy-file` and `--audit-log-path`, events as upstream writes
//! them. The same create over REST and over gRPC gives events of the same shape; levels decide
//! what an event carries (RequestResponse: both objects; Metadata: none); a watch has its
//! three stages; a 401 and a 403 are audited (no user; `authorization.k8s.io/decision:
//! forbid`); every response names its `Audit-Id`, which is the event's `auditID`; a log nobody
//! reads (a FIFO) costs events, counted, never requests.

use std::{path::Path, time::Duration};

use kubestore_proto::core::v1::{
    ConfigMap, CreateConfigMapRequest, config_maps_client::ConfigMapsClient,
};
use kubestore_proto::meta::v1::ObjectMeta;
use kubestore_tests::{
    ClusterOptions,
    kube::KubeCluster,
    rest::{JSON, call, header},
    services::scrape,
};
use serde_json::{Value, json};

/// Nothing for probes; everything about configmaps in `rr`; Metadata for the rest, without
/// RequestReceived.
const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["rr"]
- level: Metadata
  omitStages: ["RequestReceived"]
"#;

const TOKENS: &str = "alice-token,alice,1001,dev\n";

/// A cluster auditing to `log` (AlwaysDeny: the administrator of plain HTTP may do anything,
/// alice nothing).
async fn cluster(dir: &Path, log: &Path) -> KubeCluster {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("write policy");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, TOKENS).expect("write tokens");
    KubeCluster::start_with(ClusterOptions {
        registry: Some(registry_svc::Config {
            token_auth_file: Some(tokens),
            authorization_mode: vec![registry_svc::authz::Mode::AlwaysDeny],
            audit: registry_svc::audit::Flags {
                policy_file: Some(policy),
                log_path: Some(log.to_path_buf()),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
}

/// The events of the log so far.
fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line one JSON event"))
        .collect()
}

/// Waits for an event that `pick` accepts and returns it.
async fn event(log: &Path, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(e) = events(log).into_iter().find(|e| pick(e)) {
            return e;
        }
        assert!(
            std::time::Instant::now() < until,
            "not within 10s: {what}; the log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn named(e: &Value, name: &str, stage: &str) -> bool {
    e["objectRef"]["name"] == name && e["stage"] == stage
}

/// The keys of an event, sorted: its shape.
fn shape(e: &Value) -> Vec<String> {
    let mut keys: Vec<String> = e.as_object().expect("an object").keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_and_grpc_writes_are_audited_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.log");
    let c = cluster(dir.path(), &log).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-rest"}, "data": {"k": "v"}});
    let r = call(
        c.api,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[JSON, ("User-Agent", "audit-test/1.0")],
        cm.to_string().as_bytes(),
    )
    .await
    .is(201);
    let id = header(&r.head, "audit-id")
        .expect("an Audit-Id header")
        .to_string();
    let rest = event(&log, "the REST create's event", |e| {
        named(e, "by-rest", "ResponseComplete")
    })
    .await;
    assert_eq!(rest["auditID"], id.as_str());
    assert_eq!(rest["kind"], "Event");
    assert_eq!(rest["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(rest["level"], "Metadata");
    assert_eq!(rest["verb"], "create");
    assert_eq!(rest["requestURI"], "/api/v1/namespaces/default/configmaps");
    assert_eq!(rest["user"]["username"], "system:unsecured");
    assert_eq!(rest["sourceIPs"], json!(["127.0.0.1"]));
    assert_eq!(rest["userAgent"], "audit-test/1.0");
    assert_eq!(
        rest["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "by-rest", "apiVersion": "v1"})
    );
    assert_eq!(rest["responseStatus"], json!({"metadata": {}, "code": 201}));
    assert_eq!(
        rest["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(rest.get("requestObject").is_none() && rest.get("responseObject").is_none());
    assert!(
        rest["requestReceivedTimestamp"]
            .as_str()
            .is_some_and(|t| t.len() == 27),
        "{rest}"
    );
    // Metadata's rule omits RequestReceived.
    assert!(
        !events(&log)
            .iter()
            .any(|e| named(e, "by-rest", "RequestReceived"))
    );

    let mut client = ConfigMapsClient::connect(c.registry_url())
        .await
        .expect("connect");
    let response = client
        .create(CreateConfigMapRequest {
            namespace: "default".into(),
            config_map: Some(ConfigMap {
                metadata: Some(ObjectMeta {
                    name: "by-grpc".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("created");
    let grpc_id = response
        .metadata()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .expect("audit-id metadata")
        .to_string();
    let grpc = event(&log, "the gRPC create's event", |e| {
        named(e, "by-grpc", "ResponseComplete")
    })
    .await;
    assert_eq!(grpc["auditID"], grpc_id.as_str());
    assert_eq!(grpc["requestURI"], "/core.v1.ConfigMaps/Create");
    assert_eq!(grpc["verb"], "create");
    assert_eq!(grpc["objectRef"]["namespace"], "default");
    assert_eq!(grpc["responseStatus"]["code"], 200);
    let mut without_agent = shape(&rest);
    if !shape(&grpc).contains(&"userAgent".to_string()) {
        without_agent.retain(|k| k != "userAgent");
    }
    assert_eq!(shape(&grpc), without_agent, "{rest}\n{grpc}");
}

#[tokio::test(flavor = "multi_thread")]
async fn levels_stages_and_refusals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.log");
    let c = cluster(dir.path(), &log).await;
    call(
        c.api,
        "POST",
        "/api/v1/namespaces",
        &[JSON],
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rr"}})
            .to_string()
            .as_bytes(),
    )
    .await
    .is(201);
    // RequestResponse: both objects, and every stage.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "full"}, "data": {"k": "v"}});
    call(
        c.api,
        "POST",
        "/api/v1/namespaces/rr/configmaps",
        &[JSON],
        cm.to_string().as_bytes(),
    )
    .await
    .is(201);
    let e = event(&log, "the RequestResponse event", |e| {
        named(e, "full", "ResponseComplete")
    })
    .await;
    assert_eq!(e["level"], "RequestResponse");
    assert_eq!(e["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(e["responseObject"]["metadata"]["name"], "full");
    assert!(e["responseObject"]["metadata"]["uid"].is_string());
    // RequestReceived comes before the object is read: it names no object yet, as upstream's.
    let received = event(&log, "its RequestReceived", |r| {
        r["auditID"] == e["auditID"] && r["stage"] == "RequestReceived"
    })
    .await;
    assert!(received.get("requestObject").is_none() && received.get("responseStatus").is_none());
    // A watch: received, started, complete (when it ends).
    let r = call(
        c.api,
        "GET",
        "/api/v1/namespaces/rr/configmaps?watch=1&timeoutSeconds=1",
        &[],
        b"",
    )
    .await;
    assert_eq!(r.code, 200);
    for stage in ["RequestReceived", "ResponseStarted", "ResponseComplete"] {
        let what = format!("the watch's {stage}");
        event(&log, &what, |e| e["verb"] == "watch" && e["stage"] == stage).await;
    }
    // Probes are not audited (level None).
    call(c.api, "GET", "/healthz", &[], b"").await;
    // A bad token: 401, no user.
    call(
        c.api,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Authorization", "Bearer guess")],
        b"",
    )
    .await
    .is(401);
    let e = event(&log, "the 401", |e| e["responseStatus"]["code"] == 401).await;
    assert_eq!(e["user"], json!({}));
    assert_eq!(e["responseStatus"]["reason"], "Unauthorized");
    // alice is refused (AlwaysDeny): forbid, with the reason, and the Status.
    call(
        c.api,
        "GET",
        "/api/v1/namespaces/default/secrets",
        &[("Authorization", "Bearer alice-token")],
        b"",
    )
    .await
    .is(403);
    let e = event(&log, "the 403", |e| e["responseStatus"]["code"] == 403).await;
    assert_eq!(e["user"]["username"], "alice");
    assert_eq!(e["verb"], "list");
    assert_eq!(e["objectRef"]["resource"], "secrets");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "forbid");
    assert_eq!(e["responseStatus"]["reason"], "Forbidden");
    assert!(
        e["responseStatus"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot list resource \"secrets\"")),
        "{e}"
    );
    assert!(!events(&log).iter().any(|e| e["requestURI"] == "/healthz"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_log_nobody_reads_costs_events_not_requests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("audit.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n",
    )
    .expect("write");
    let c = KubeCluster::start_with(ClusterOptions {
        registry: Some(registry_svc::Config {
            audit: registry_svc::audit::Flags {
                policy_file: Some(policy),
                log_path: Some(fifo),
                buffer_size: 10,
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    for i in 0..60 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            call(
                c.api,
                "POST",
                "/api/v1/namespaces/default/configmaps",
                &[JSON],
                cm.to_string().as_bytes(),
            ),
        )
        .await
        .expect("a request never waits for the audit log");
        assert_eq!(r.code, 201, "{r}");
    }
    let metrics = c.cluster.registry.as_ref().expect("registry").metrics_addr;
    let text = scrape(metrics).await;
    let dropped = text
        .lines()
        .find(|l| l.starts_with("apiserver_audit_error_total{plugin=\"log\"}"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .expect("apiserver_audit_error_total");
    assert!(dropped >= 50.0, "{dropped} events dropped:\n{text}");
}
