//! Admission webhooks (issue 33), against a webhook server of the test's own over HTTPS
//! (a CA made here, given as the configuration's `caBundle`): a mutating webhook's JSONPatch
//! lands in the stored object, and reinvocation calls an `IfNeeded` webhook again after a later
//! one changed the object; a validating webhook's refusal reaches kubectl 1.33 and 1.37, REST
//! and gRPC in upstream's words and code; warnings and audit annotations come through;
//! failurePolicy decides for a webhook that is down, hangs past its timeout, or answers
//! garbage; selectors and matchConditions keep requests away; DELETE carries `oldObject`; a
//! dry run reaches webhooks with `dryRun: true`. A `service` reference is refused at creation.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use kubestore_proto::registry::v1::{
    CreateRequest, ResourceRef, resources_client::ResourcesClient,
};
use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    pki::Pki,
    rest::{JSON, Reply, assert_status, call, wait_until},
};
use serde_json::{Value, json};
use tokio_rustls::{
    TlsAcceptor,
    rustls::{
        self,
        pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    },
};

/// What the webhook server was sent, by path.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook server on loopback, HTTPS with a certificate of `pki`; its answers by path.
struct Server {
    addr: SocketAddr,
    seen: Seen,
    /// TLS connections accepted so far.
    connections: Arc<AtomicUsize>,
    ca: String,
    _task: tokio::task::JoinHandle<()>,
}

fn patch(ops: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(ops.to_string())
}

/// The answer to `review` at `path`.
async fn answer(path: &str, review: &Value) -> Option<Value> {
    let req = &review["request"];
    let uid = req["uid"].clone();
    let mut response = json!({"uid": uid, "allowed": true});
    match path {
        "/label" => {
            // Adds metadata.labels.mutated=yes.
            let ops = if req["object"]["metadata"]["labels"].is_object() {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch(ops));
        }
        "/count" => {
            // Counts its calls in an annotation (reinvocation).
            let n = req["object"]["metadata"]["annotations"]["calls"]
                .as_str()
                .and_then(|s| s.parse::<u32>().ok())
                .unwrap_or(0);
            let ops = if req["object"]["metadata"]["annotations"].is_object() {
                json!([{"op": "add", "path": "/metadata/annotations/calls", "value": (n + 1).to_string()}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"calls": "1"}}])
            };
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch(ops));
        }
        "/deny" => {
            let forbidden = req["object"]["data"]["forbidden"].is_string();
            if forbidden {
                response["allowed"] = json!(false);
                response["status"] =
                    json!({"code": 403, "reason": "Forbidden", "message": "no thanks"});
            }
        }
        "/warn" => {
            response["warnings"] = json!(["be careful"]);
            response["auditAnnotations"] = json!({"decision": "allowed"});
        }
        "/hang" => {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        "/garbage" => return None,
        _ => {}
    }
    Some(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
    )
}

impl Server {
    async fn start() -> Self {
        let pki = Pki::new("webhooks");
        let issued = pki.issue("webhook");
        let ca = std::fs::read_to_string(&pki.ca).expect("CA");
        let cert = std::fs::read(&issued.cert).expect("cert");
        let key = std::fs::read(&issued.key).expect("key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(&cert).expect("cert PEM")],
            PrivateKeyDer::from_pem_slice(&key).expect("key PEM"),
        )
        .expect("server config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen: Seen = Arc::default();
        let recorded = seen.clone();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = connections.clone();
        let task = tokio::spawn(async move {
            let _pki = pki;
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let _ = tcp.set_nodelay(true);
                let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
                let accepted = accepted.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let service = service_fn(move |req: Request<Incoming>| {
                        let recorded = recorded.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                            recorded
                                .lock()
                                .expect("lock")
                                .push((path.clone(), review.clone()));
                            let text = match answer(&path, &review).await {
                                Some(v) => v.to_string(),
                                None => "this is not an AdmissionReview".to_string(),
                            };
                            Ok::<_, hyper::Error>(
                                Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(bytes::Bytes::from(text)))
                                    .expect("response"),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            seen,
            connections,
            ca,
            _task: task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    fn client_config(&self, path: &str) -> Value {
        json!({"url": self.url(path),
               "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca)})
    }

    /// The reviews sent to `path`.
    fn seen(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

fn rules(operations: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}])
}

fn webhook(name: &str, client: Value, extra: Value) -> Value {
    let mut w = json!({"name": name, "clientConfig": client, "rules": rules(&["CREATE", "UPDATE"]),
                       "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            w.insert(k.clone(), v.clone());
        }
    }
    w
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": webhooks})
}

async fn post(c: &KubeCluster, path: &str, body: &Value) -> Reply {
    call(c.api, "POST", path, &[JSON], body.to_string().as_bytes()).await
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

async fn create_cm(c: &KubeCluster, cm: &Value, dry_run: bool) -> Reply {
    let q = if dry_run { "?dryRun=All" } else { "" };
    post(c, &format!("/api/v1/namespaces/default/configmaps{q}"), cm).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mutating_and_validating_webhooks_over_https_in_upstreams_words() {
    let server = Server::start().await;
    let c = KubeCluster::start().await;
    let m = configuration(
        "MutatingWebhookConfiguration",
        "mutators",
        vec![
            webhook(
                "count.example.com",
                server.client_config("/count"),
                json!({"reinvocationPolicy": "IfNeeded"}),
            ),
            webhook(
                "label.example.com",
                server.client_config("/label"),
                json!({}),
            ),
        ],
    );
    post(&c, MUTATING, &m).await.is(201);
    let v = configuration(
        "ValidatingWebhookConfiguration",
        "validators",
        vec![
            webhook("deny.example.com", server.client_config("/deny"), json!({})),
            webhook("warn.example.com", server.client_config("/warn"), json!({})),
        ],
    );
    post(&c, VALIDATING, &v).await.is(201);
    // Each configuration kind is followed by a watch of its own: wait for both.
    wait_until(
        Duration::from_secs(10),
        "the webhooks take effect",
        || async {
            let denied = create_cm(&c, &config_map("probe", json!({"forbidden": "x"})), true)
                .await
                .code
                == 403;
            let mutated = create_cm(&c, &config_map("probe", json!({})), true).await;
            denied
                && mutated.code == 201
                && mutated.json()["metadata"]["labels"]["mutated"] == "yes"
        },
    )
    .await;

    // Mutation: the patches are in the stored object; count.example.com was called again
    // after label.example.com changed the object (reinvocation), so twice.
    let r = create_cm(&c, &config_map("m", json!({"a": "b"})), false)
        .await
        .is(201);
    let stored = r.json();
    assert_eq!(stored["metadata"]["labels"]["mutated"], "yes", "{stored}");
    assert_eq!(stored["metadata"]["annotations"]["calls"], "2", "{stored}");
    // The validating webhook's warning.
    assert_eq!(
        r.headers("warning"),
        vec!["299 - \"be careful\""],
        "{}",
        r.head
    );

    // Connections are kept between calls (as client-go's transport keeps them): ten more
    // creates, five webhook calls each (count twice, label, deny and warn, the last two at
    // once), need at most the two connections the concurrent pair may open beyond those kept.
    let opened = server.connections.load(Ordering::SeqCst);
    for i in 0..10 {
        create_cm(&c, &config_map(&format!("kept-{i}"), json!({})), false)
            .await
            .is(201);
    }
    let more = server.connections.load(Ordering::SeqCst) - opened;
    assert!(more <= 2, "{more} new connections for 50 webhook calls");

    // A refusal: the webhook's code and reason, upstream's message.
    let why = "admission webhook \"deny.example.com\" denied the request: no thanks";
    let r = create_cm(&c, &config_map("no", json!({"forbidden": "x"})), false).await;
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(status["message"], why);
    for (v, name) in [(Kubectl::V1_33, "k133"), (Kubectl::V1_37, "k137")] {
        let manifest = c.file(
            "cm.json",
            &config_map(name, json!({"forbidden": "x"})).to_string(),
        );
        let manifest = manifest.to_str().expect("path");
        let out = c.kubectl(v, &["create", "-f", manifest]).run().fails();
        assert!(
            out.err().contains(&format!(
                "Error from server (Forbidden): error when creating \"{manifest}\": {why}"
            )),
            "{out}"
        );
    }
    let mut g = ResourcesClient::connect(c.registry_url())
        .await
        .expect("connect");
    let e = g
        .create(CreateRequest {
            resource: Some(ResourceRef {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
            }),
            namespace: "default".into(),
            json: config_map("grpc", json!({"forbidden": "x"})).to_string(),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert_eq!(e.message(), why);

    // The reviews: upstream's fields; a dry run says so.
    let reviews = server.seen("/deny");
    let dry = reviews
        .iter()
        .find(|r| r["request"]["object"]["metadata"]["name"] == "probe")
        .expect("the dry run reached the webhook");
    assert_eq!(dry["request"]["dryRun"], true);
    let sent = reviews
        .iter()
        .find(|r| r["request"]["name"] == "m")
        .expect("the create reached the webhook");
    let req = &sent["request"];
    assert_eq!(sent["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["namespace"], "default");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["dryRun"], false);
    // Validating webhooks see the object as mutated.
    assert_eq!(req["object"]["metadata"]["labels"]["mutated"], "yes");
    assert!(req["userInfo"]["username"].is_string(), "{req}");
    assert_eq!(req["oldObject"], Value::Null);

    // Upstream's metrics: the refusal counted per webhook, the steps and plugins timed.
    let metrics = kubestore_tests::services::scrape(
        c.cluster.registry.as_ref().expect("registry").metrics_addr,
    )
    .await;
    for line in [
        r#"apiserver_admission_webhook_rejection_count{name="deny.example.com",operation="CREATE",type="validate",error_type="no_error",rejection_code="403"}"#,
        r#"apiserver_admission_webhook_request_total{name="label.example.com",operation="CREATE",code="200",rejected="false",type="admit"}"#,
        r#"apiserver_admission_webhook_admission_duration_seconds_count{name="deny.example.com",operation="CREATE",rejected="true",type="validate"}"#,
        r#"apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit"}"#,
        r#"apiserver_admission_controller_admission_duration_seconds_count{name="ValidatingAdmissionWebhook",operation="CREATE",rejected="true",type="validate"}"#,
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_policy_decides_for_a_webhook_down_hanging_or_answering_garbage() {
    let server = Server::start().await;
    let c = KubeCluster::start().await;
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let down = json!({"url": format!("https://127.0.0.1:{closed}/x"),
                      "caBundle": base64::engine::general_purpose::STANDARD.encode(&server.ca)});
    let v = configuration(
        "ValidatingWebhookConfiguration",
        "failing",
        vec![
            webhook(
                "down.example.com",
                down,
                json!({"failurePolicy": "Fail", "timeoutSeconds": 2,
                       "objectSelector": {"matchLabels": {"case": "down"}}}),
            ),
            webhook(
                "hang.example.com",
                server.client_config("/hang"),
                json!({"failurePolicy": "Fail", "timeoutSeconds": 1,
                       "objectSelector": {"matchLabels": {"case": "hang"}}}),
            ),
            webhook(
                "garbage.example.com",
                server.client_config("/garbage"),
                json!({"failurePolicy": "Fail",
                       "objectSelector": {"matchLabels": {"case": "garbage"}}}),
            ),
            webhook(
                "ignored.example.com",
                server.client_config("/hang"),
                json!({"failurePolicy": "Ignore", "timeoutSeconds": 1,
                       "objectSelector": {"matchLabels": {"case": "ignored"}}}),
            ),
        ],
    );
    post(&c, VALIDATING, &v).await.is(201);
    let labelled = |name: &str, case: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "labels": {"case": case}}})
    };
    wait_until(
        Duration::from_secs(10),
        "the webhooks take effect",
        || async { create_cm(&c, &labelled("probe", "down"), true).await.code == 500 },
    )
    .await;
    // Down: upstream's 500, naming the webhook.
    let r = create_cm(&c, &labelled("d", "down"), false).await;
    let status = assert_status(&r, 500, "InternalError");
    let message = status["message"].as_str().expect("message");
    assert!(
        message.starts_with(&format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{closed}/x?timeout=2s\": "
        )),
        "{message}"
    );
    // Hanging past its timeout.
    let r = create_cm(&c, &labelled("h", "hang"), false).await;
    let status = assert_status(&r, 500, "InternalError");
    let message = status["message"].as_str().expect("message");
    assert!(
        message
            .starts_with("Internal error occurred: failed calling webhook \"hang.example.com\": ")
            && message.ends_with("context deadline exceeded"),
        "{message}"
    );
    // Garbage.
    let r = create_cm(&c, &labelled("g", "garbage"), false).await;
    let status = assert_status(&r, 500, "InternalError");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("failed calling webhook \"garbage.example.com\"")),
        "{status}"
    );
    // Ignore: the same hanging webhook lets the request through.
    create_cm(&c, &labelled("i", "ignored"), false)
        .await
        .is(201);
    // And a request no webhook selects never waits for one.
    create_cm(&c, &labelled("n", "none"), false).await.is(201);
    let got = call(
        c.api,
        "GET",
        "/api/v1/namespaces/default/configmaps/d",
        &[],
        b"",
    )
    .await;
    assert_eq!(got.code, 404, "a refused create stores nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_conditions_and_deletes_with_the_old_object() {
    let server = Server::start().await;
    let c = KubeCluster::start().await;
    for (name, env) in [("watched", "test"), ("other", "prod")] {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": name, "labels": {"env": env}}});
        post(&c, "/api/v1/namespaces", &ns).await.is(201);
    }
    let v = configuration(
        "ValidatingWebhookConfiguration",
        "selective",
        vec![webhook(
            "record.example.com",
            server.client_config("/record"),
            json!({"rules": rules(&["CREATE", "DELETE"]),
                   "namespaceSelector": {"matchLabels": {"env": "test"}},
                   "matchConditions": [{"name": "not-skipped",
                       "expression": "request.operation == 'DELETE' || !has(object.metadata.annotations) || !('skip' in object.metadata.annotations)"}]}),
        )],
    );
    post(&c, VALIDATING, &v).await.is(201);
    let create = |ns: &'static str, name: &'static str, annotations: Value| {
        let api = c.api;
        async move {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "annotations": annotations}});
            call(
                api,
                "POST",
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &[JSON],
                cm.to_string().as_bytes(),
            )
            .await
        }
    };
    wait_until(Duration::from_secs(10), "the webhook is called", || async {
        create("watched", "probe", json!({})).await;
        call(
            c.api,
            "DELETE",
            "/api/v1/namespaces/watched/configmaps/probe",
            &[],
            b"",
        )
        .await;
        !server.seen("/record").is_empty()
    })
    .await;
    let before = server.seen("/record").len();
    create("watched", "seen", json!({})).await.is(201);
    create("watched", "skipped", json!({"skip": "yes"}))
        .await
        .is(201);
    create("other", "elsewhere", json!({})).await.is(201);
    let names: Vec<Value> = server.seen("/record")[before..]
        .iter()
        .map(|r| r["request"]["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("seen")],
        "the selector and the condition left the others out"
    );
    // DELETE: the stored object as oldObject, no object.
    let r = call(
        c.api,
        "DELETE",
        "/api/v1/namespaces/watched/configmaps/skipped",
        &[],
        b"",
    )
    .await;
    assert_eq!(r.code, 200, "{r}");
    let deleted = server.seen("/record");
    let last = &deleted.last().expect("the delete was sent")["request"];
    assert_eq!(last["operation"], "DELETE");
    assert_eq!(last["oldObject"]["metadata"]["name"], "skipped");
    assert_eq!(last["oldObject"]["metadata"]["annotations"]["skip"], "yes");
    assert_eq!(last["object"], Value::Null);
    assert_eq!(last["options"]["kind"], "DeleteOptions");

    // A service reference is refused at creation, saying why.
    let bad = configuration(
        "ValidatingWebhookConfiguration",
        "service",
        vec![webhook(
            "svc.example.com",
            json!({"service": {"namespace": "default", "name": "webhook"}}),
            json!({}),
        )],
    );
    let r = post(&c, VALIDATING, &bad).await;
    let status = assert_status(&r, 422, "Invalid");
    let causes = status["details"]["causes"].to_string();
    assert!(
        causes.contains("webhooks[0].clientConfig.service")
            && causes.contains("kubestore has no Services"),
        "{status}"
    );
}
