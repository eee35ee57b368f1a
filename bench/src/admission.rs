//! `kubestore-bench --admission` (`cargo run --release -p kubestore-bench -- --admission`):
//! what admission costs (issue 33's benchmark). One registry-svc on one storage-svc and one
//! etcd; typed gRPC ConfigMaps Create, then Update of the same objects, over one channel at
//! c=1 and c=64, under three configurations, in rounds whose order rotates (N P W, W N P,
//! P W N, ...):
//!
//! - **N**: no admission configuration (what every write pays for the seam);
//! - **P**: one ValidatingAdmissionPolicy bound to every ConfigMap write (one validation,
//!   `object.metadata.name.size() < 64`, which every write passes);
//! - **W**: one validating webhook on loopback (HTTPS with its own CA, answering `allowed`).
//!
//! Between rounds the configuration objects are written or deleted, and the round starts once
//! a probe shows the registry's watch has them (a dry-run Create the policy refuses, a call
//! the webhook counts). Raw etcd rows sit beside each configuration's. The targets: P's ops/s
//! over its rounds at least 0.90 of N's; W's added p50 is reported. N against the commit
//! before admission is `--releases` (BENCHMARKS.md's admission section).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use base64::Engine as _;
use kubestore_proto::{
    core::v1::{
        CreateConfigMapRequest, UpdateConfigMapRequest, config_maps_client::ConfigMapsClient,
    },
    registry::v1::{CreateRequest, DeleteRequest, ResourceRef, resources_client::ResourcesClient},
};
use kubestore_tests::{EtcdProcess, pki::Pki, services::channel};
use serde_json::json;
use tonic::transport::Channel;

use crate::{
    authz::{Row, rate},
    procs::ServiceProcess,
    scenarios::Raw,
};

const NS: &str = "bench";
/// Rounds of each configuration per row.
const ROUNDS: usize = 3;

/// Typed ConfigMaps.
#[derive(Clone)]
struct Maps {
    client: ConfigMapsClient<Channel>,
    prefix: String,
}

impl Maps {
    async fn create(&self, i: usize) -> Result<(), String> {
        self.client
            .clone()
            .create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(crate::scenarios::config_map(
                    &format!("{}{i}", self.prefix),
                    0,
                )),
                dry_run: false,
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn update(&self, i: usize) -> Result<(), String> {
        self.client
            .clone()
            .update(UpdateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(crate::scenarios::config_map(
                    &format!("{}{i}", self.prefix),
                    1,
                )),
                dry_run: false,
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// An HTTPS webhook on loopback that allows everything and counts its calls.
struct Webhook {
    port: u16,
    ca: String,
    calls: Arc<AtomicU64>,
    _task: tokio::task::JoinHandle<()>,
}

impl Webhook {
    async fn start() -> Result<Self, String> {
        use tokio_rustls::rustls::{
            self,
            pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
        };
        let pki = Pki::new("bench-webhook");
        let issued = pki.issue("webhook");
        let ca = std::fs::read_to_string(&pki.ca).map_err(|e| e.to_string())?;
        let cert = std::fs::read(&issued.cert).map_err(|e| e.to_string())?;
        let key = std::fs::read(&issued.key).map_err(|e| e.to_string())?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(&cert).map_err(|e| e.to_string())?],
            PrivateKeyDer::from_pem_slice(&key).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let task = tokio::spawn(async move {
            let _pki = pki;
            while let Ok((tcp, _)) = listener.accept().await {
                // As Go's net/http (what webhooks are mostly written in) does.
                let _ = tcp.set_nodelay(true);
                let (acceptor, counted) = (acceptor.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let counted = counted.clone();
                            async move {
                                use http_body_util::BodyExt;
                                let body = req.into_body().collect().await?.to_bytes();
                                counted.fetch_add(1, Ordering::Relaxed);
                                let review: serde_json::Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let answer = json!({"apiVersion": "admission.k8s.io/v1",
                                    "kind": "AdmissionReview",
                                    "response": {"uid": review["request"]["uid"], "allowed": true}});
                                Ok::<_, hyper::Error>(hyper::Response::new(
                                    http_body_util::Full::new(bytes::Bytes::from(
                                        answer.to_string(),
                                    )),
                                ))
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Ok(Self {
            port,
            ca,
            calls,
            _task: task,
        })
    }
}

fn group_ref(resource: &str) -> Option<ResourceRef> {
    Some(ResourceRef {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        resource: resource.into(),
    })
}

fn rules() -> serde_json::Value {
    json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["configmaps"]}])
}

/// The configurations, written and removed through the generic API.
struct Configs {
    api: ResourcesClient<Channel>,
    maps: ConfigMapsClient<Channel>,
    webhook: Webhook,
}

impl Configs {
    async fn create(&mut self, resource: &str, json: serde_json::Value) -> Result<(), String> {
        self.api
            .create(CreateRequest {
                resource: group_ref(resource),
                json: json.to_string(),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(|e| format!("{resource}: {e}"))
    }

    async fn delete(&mut self, resource: &str, name: &str) -> Result<(), String> {
        self.api
            .delete(DeleteRequest {
                resource: group_ref(resource),
                name: name.into(),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(|e| format!("{resource}: {e}"))
    }

    /// A dry-run Create named `name`: whether it was allowed.
    async fn probe(&self, name: &str) -> bool {
        self.maps
            .clone()
            .create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(crate::scenarios::config_map(name, 0)),
                dry_run: true,
            })
            .await
            .is_ok()
    }

    /// Waits (at most 10 s) until `ready`.
    async fn until(&self, what: &str, ready: impl AsyncFn(&Self) -> bool) -> Result<(), String> {
        for _ in 0..200 {
            if ready(self).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!("{what}: not seen within 10 s"))
    }

    /// Puts configuration `which` (N, P or W) in place, removing the others.
    async fn set(&mut self, which: char) -> Result<(), String> {
        // 70 characters in two DNS labels: a valid name the policy refuses.
        let long = format!("{}.{}", "x".repeat(35), "y".repeat(34));
        let _ = self
            .delete("validatingadmissionpolicybindings", "bench")
            .await;
        let _ = self.delete("validatingadmissionpolicies", "bench").await;
        let _ = self
            .delete("validatingwebhookconfigurations", "bench")
            .await;
        // Nothing in effect: the long name passes, and the webhook is not called.
        self.until("no configuration", async |c: &Self| {
            let before = c.webhook.calls.load(Ordering::Relaxed);
            c.probe(&long).await && c.webhook.calls.load(Ordering::Relaxed) == before
        })
        .await?;
        match which {
            'P' => {
                self.create(
                    "validatingadmissionpolicies",
                    json!({"apiVersion": "admissionregistration.k8s.io/v1",
                           "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "bench"},
                           "spec": {"matchConstraints": {"resourceRules": rules()},
                                    "validations": [{"expression": "object.metadata.name.size() < 64"}]}}),
                )
                .await?;
                self.create(
                    "validatingadmissionpolicybindings",
                    json!({"apiVersion": "admissionregistration.k8s.io/v1",
                           "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "bench"},
                           "spec": {"policyName": "bench", "validationActions": ["Deny"]}}),
                )
                .await?;
                self.until("the policy", async |c: &Self| !c.probe(&long).await)
                    .await
            }
            'W' => {
                let ca = base64::engine::general_purpose::STANDARD.encode(&self.webhook.ca);
                let port = self.webhook.port;
                self.create(
                    "validatingwebhookconfigurations",
                    json!({"apiVersion": "admissionregistration.k8s.io/v1",
                           "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bench"},
                           "webhooks": [{"name": "bench.kubestore.io",
                               "clientConfig": {"url": format!("https://127.0.0.1:{port}/validate"),
                                                "caBundle": ca},
                               "rules": rules(), "sideEffects": "None",
                               "admissionReviewVersions": ["v1"]}]}),
                )
                .await?;
                self.until("the webhook", async |c: &Self| {
                    let before = c.webhook.calls.load(Ordering::Relaxed);
                    c.probe("probe").await && c.webhook.calls.load(Ordering::Relaxed) > before
                })
                .await
            }
            _ => Ok(()),
        }
    }
}

/// Runs every row with `ops` operations each (8 times as many at c=64) and prints the tables.
pub(crate) async fn admission(ops: usize) -> Result<(), String> {
    let etcd = EtcdProcess::start().await;
    let storage = ServiceProcess::start(
        "storage",
        &["--etcd-endpoints".into(), etcd.endpoint()],
        &[],
    )
    .await;
    let registry =
        ServiceProcess::start("registry", &["--storage-addr".into(), storage.url()], &[]).await;
    let ch = channel(&registry.url()).await;
    let mut configs = Configs {
        api: ResourcesClient::new(ch.clone()),
        maps: ConfigMapsClient::new(ch.clone()),
        webhook: Webhook::start().await?,
    };
    let raw_client = etcd.client().await;
    let mut rows: Vec<Row> = Vec::new();
    // Per (operation, c): ops/s and p50 summed over rounds, per configuration.
    let mut sums: Vec<(String, [f64; 3], [f64; 3])> = Vec::new();
    let order = ['N', 'P', 'W'];
    let name = |which: char| match which {
        'N' => "N: no admission configuration",
        'P' => "P: one ValidatingAdmissionPolicy",
        _ => "W: one validating webhook",
    };
    for c in [1usize, 64] {
        let ops = if c == 1 { ops } else { ops * 8 };
        let mut rate_sum = [[0.0f64; 3]; 2];
        let mut p50_sum = [[0.0f64; 3]; 2];
        for round in 0..ROUNDS {
            let raw = Arc::new(Raw {
                clients: vec![raw_client.clone()],
                prefix: format!("/raw/admission-c{c}-r{round}/"),
                conflicts: Arc::new(AtomicU64::new(0)),
            });
            let r = raw.clone();
            rows.push(
                rate("raw etcd", &format!("create, c={c}"), c, ops, move |i| {
                    let r = r.clone();
                    async move { r.create(i).await }
                })
                .await?,
            );
            let r = raw.clone();
            rows.push(
                rate("raw etcd", &format!("update, c={c}"), c, ops, move |i| {
                    let r = r.clone();
                    async move { r.update(i).await }
                })
                .await?,
            );
            for k in 0..3 {
                let which = order[(k + round) % 3];
                let slot = order.iter().position(|o| *o == which).unwrap_or(0);
                configs.set(which).await?;
                let maps = Arc::new(Maps {
                    client: ConfigMapsClient::new(ch.clone()),
                    prefix: format!("{}-c{c}-r{round}-", which.to_ascii_lowercase()),
                });
                for (w, what) in ["create", "update"].iter().enumerate() {
                    let m = maps.clone();
                    let is_create = *what == "create";
                    let row = rate(name(which), &format!("{what}, c={c}"), c, ops, move |i| {
                        let m = m.clone();
                        async move {
                            if is_create {
                                m.create(i).await
                            } else {
                                m.update(i).await
                            }
                        }
                    })
                    .await?;
                    rate_sum[w][slot] += row.ops_per_sec;
                    p50_sum[w][slot] += row.p50_ms;
                    rows.push(row);
                }
            }
        }
        for (w, what) in ["create", "update"].iter().enumerate() {
            sums.push((format!("{what}, c={c}"), rate_sum[w], p50_sum[w]));
        }
    }
    configs.set('N').await?;
    println!();
    println!("| configuration | operation | ops/s | p50 ms | ratio to raw etcd |");
    println!("|---|---|---:|---:|---:|");
    let mut raw_rate = (1.0, 1.0);
    for r in &rows {
        let create = r.what.starts_with("create");
        if r.layer == "raw etcd" {
            if create {
                raw_rate.0 = r.ops_per_sec.max(1e-9);
            } else {
                raw_rate.1 = r.ops_per_sec.max(1e-9);
            }
        }
        let raw = if create { raw_rate.0 } else { raw_rate.1 };
        println!(
            "| {} | {} | {:.0} | {:.2} | {:.2} |",
            r.layer,
            r.what,
            r.ops_per_sec,
            r.p50_ms,
            r.ops_per_sec / raw
        );
    }
    println!();
    println!(
        "| operation | P / N (ops/s over {ROUNDS} rounds each) | W / N | W's added p50 ms | P target >= 0.90 met |"
    );
    println!("|---|---:|---:|---:|---|");
    for (what, rate, p50) in &sums {
        let n = rate[0].max(1e-9);
        let added = (p50[2] - p50[0]) / ROUNDS as f64;
        println!(
            "| {what} | {:.2} | {:.2} | {added:.2} | {} |",
            rate[1] / n,
            rate[2] / n,
            if rate[1] / n >= 0.90 { "yes" } else { "no" }
        );
    }
    drop((registry, storage));
    Ok(())
}
