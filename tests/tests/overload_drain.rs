//! Issue 10, overload and drain: calls beyond `--max-requests-inflight` are refused at once
//! with a retry hint (watches and probes exempt), and a stopping server lets running calls
//! finish, ends watches with UNAVAILABLE and exits within `--shutdown-timeout`, under load and
//! with a call that never finishes.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::storage::v1::{
    GuaranteedUpdateRequest, GuaranteedUpdateResponse, UpdateProposal, UpdateStart, WatchRequest,
    guaranteed_update_request::Message as Req, guaranteed_update_response::Message as Resp,
    storage_client::StorageClient,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_storage::*,
    services::{channel, sample, scrape},
    update::{CurrentState, guaranteed_update},
};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming, transport::Channel};
use tonic_types::StatusExt;

/// A GuaranteedUpdate stopped mid-exchange: storage sent the current state and waits for our
/// answer.
struct HeldUpdate {
    tx: mpsc::Sender<GuaranteedUpdateRequest>,
    responses: Streaming<GuaranteedUpdateResponse>,
    state: CurrentState,
}

async fn hold_update(c: &mut StorageClient<Channel>, key: &str) -> HeldUpdate {
    let (tx, rx) = mpsc::channel(4);
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Start(UpdateStart {
            key: key.into(),
            ..Default::default()
        })),
    })
    .await
    .expect("send start");
    let mut responses = c
        .guaranteed_update(ReceiverStream::new(rx))
        .await
        .expect("update starts")
        .into_inner();
    let Some(GuaranteedUpdateResponse {
        message: Some(Resp::State(state)),
    }) = responses.message().await.expect("a state")
    else {
        panic!("expected the current state first")
    };
    HeldUpdate {
        tx,
        responses,
        state,
    }
}

impl HeldUpdate {
    /// Answers with data["n"] + 1 and waits for the outcome.
    async fn finish(mut self) -> Result<(), tonic::Status> {
        let mut obj = kubestore_proto::core::v1::ConfigMap::decode(self.state.object.as_slice())
            .expect("decodes");
        let n: u64 = obj.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
        obj.data.insert("n".into(), (n + 1).to_string());
        self.tx
            .send(GuaranteedUpdateRequest {
                message: Some(Req::Proposal(UpdateProposal {
                    based_on_resource_version: self.state.resource_version.clone(),
                    object: obj.encode_to_vec(),
                    ttl_seconds: 0,
                })),
            })
            .await
            .map_err(|_| tonic::Status::unavailable("stream gone"))?;
        loop {
            match self.responses.message().await? {
                Some(GuaranteedUpdateResponse {
                    message: Some(Resp::Result(_)),
                }) => return Ok(()),
                Some(_) => continue,
                None => return Err(tonic::Status::unknown("ended without a result")),
            }
        }
    }
}

/// Whether a client saw "go elsewhere": UNAVAILABLE, CANCELLED, or tonic's own report of a
/// request that raced the server's GOAWAY (INTERNAL with a transport error as its source: the
/// client library's mapping, never a status a server sent; registry-svc turns it into
/// UNAVAILABLE for its clients, `ApiError::from_storage`).
fn retriable(e: &tonic::Status) -> bool {
    use std::error::Error;
    matches!(e.code(), Code::Unavailable | Code::Cancelled)
        || (e.code() == Code::Internal
            && e.source()
                .is_some_and(|s| s.downcast_ref::<tonic::transport::Error>().is_some()))
}

fn counter(value: &[u8]) -> u64 {
    kubestore_proto::core::v1::ConfigMap::decode(value)
        .expect("decodes")
        .data
        .get("n")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_beyond_max_requests_inflight_are_refused_at_once_with_a_retry_hint() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            max_requests_inflight: 2,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    for k in ["a", "b"] {
        create(&mut c, &format!("/configmaps/ns/{k}"), &cm(k, &[]), 0)
            .await
            .expect("create");
    }
    // Two updates held mid-exchange take both slots (a stream keeps its slot while it runs).
    let a = hold_update(&mut c, "/configmaps/ns/a").await;
    let b = hold_update(&mut c, "/configmaps/ns/b").await;
    let started = Instant::now();
    let e = get(&mut c, "/configmaps/ns/a").await.expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once, not queued"
    );
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert_eq!(reason(&e), "TooManyRequests");
    let retry = e
        .get_details_retry_info()
        .and_then(|r| r.retry_delay)
        .expect("a retry hint");
    assert_eq!(retry, Duration::from_secs(1));
    // Watches and health checks are not counted.
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps".into(),
            recursive: true,
            ..Default::default()
        })
        .await
        .expect("a watch is exempt")
        .into_inner();
    kubestore_telemetry::health::check(&cluster.storage.url(), "", Duration::from_secs(2))
        .await
        .expect("health is exempt");
    // The slots come back when the streams end; nothing was written by the refused call.
    a.finish().await.expect("held update a commits");
    b.finish().await.expect("held update b commits");
    let got = get(&mut c, "/configmaps/ns/a")
        .await
        .expect("admitted again");
    assert_eq!(got.data.get("n").map(String::as_str), Some("1"));
    // The watch saw both commits (its events were never refused).
    for _ in 0..2 {
        let ev = tokio::time::timeout(Duration::from_secs(5), w.message())
            .await
            .expect("event in time")
            .expect("stream ok");
        assert!(ev.is_some());
    }
    let text = scrape(cluster.storage.metrics_addr).await;
    assert!(sample(&text, "grpc_server_refused_total").is_some_and(|n| n >= 1.0));
    assert!(
        sample(
            &text,
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="storage.v1.Storage",grpc_method="Get",grpc_code="RESOURCE_EXHAUSTED"}"#
        )
        .is_some_and(|n| n >= 1.0),
        "refusals are counted like any outcome"
    );
}

/// Over one channel (what most clients have), with a limit above the per-connection default
/// of 256: the calls beyond the limit are still refused at once, not queued on the connection.
#[tokio::test(flavor = "multi_thread")]
async fn one_channel_is_refused_at_the_inflight_limit_above_256() {
    const LIMIT: usize = 300;
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            max_requests_inflight: LIMIT,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = StorageClient::new(channel(&cluster.storage.url()).await);
    let mut held = Vec::with_capacity(LIMIT);
    for i in 0..LIMIT {
        let key = format!("/configmaps/ns/k{i}");
        create(&mut c, &key, &cm("k", &[]), 0)
            .await
            .expect("create");
        held.push(hold_update(&mut c, &key).await);
    }
    let started = Instant::now();
    let e = get(&mut c, "/configmaps/ns/k0").await.expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once, not queued: {:?}",
        started.elapsed()
    );
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert_eq!(reason(&e), "TooManyRequests");
    for h in held {
        h.finish().await.expect("held update commits");
    }
    get(&mut c, "/configmaps/ns/k0")
        .await
        .expect("admitted again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_server_finishes_running_calls_ends_watches_and_exits() {
    let mut cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            shutdown_timeout: Duration::from_secs(5),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps".into(),
            recursive: true,
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let held = hold_update(&mut c, "/configmaps/ns/a").await;
    cluster.storage.signal_stop();
    // The watch ends at once with UNAVAILABLE (clients resume elsewhere).
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match w.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => return None,
                Err(e) => return Some(e),
            }
        }
    })
    .await
    .expect("the watch ends promptly");
    assert_eq!(ended.map(|e| e.code()), Some(Code::Unavailable));
    // New connections are not accepted (once the stop has reached the listener).
    let url = cluster.storage.url();
    let refused = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            let connected = tonic::transport::Endpoint::from_shared(url.clone())
                .expect("url")
                .connect()
                .await;
            if connected.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        refused.is_ok(),
        "still accepting connections while draining"
    );
    // The running update still completes, whole.
    held.finish().await.expect("the running update commits");
    assert!(
        cluster.storage.wait_stopped(Duration::from_secs(3)).await,
        "exits once its calls are done"
    );
    let kv = raw(&cluster, "/registry/configmaps/ns/a")
        .await
        .expect("stored");
    assert_eq!(counter(kv.value()), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_never_ends_does_not_hold_a_stop_past_the_timeout() {
    let mut cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            shutdown_timeout: Duration::from_secs(1),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    let held = hold_update(&mut c, "/configmaps/ns/a").await;
    let stopped_at = Instant::now();
    cluster.storage.signal_stop();
    // storage's own request timeout (10 s) is far away: only --shutdown-timeout ends this.
    assert!(
        cluster.storage.wait_stopped(Duration::from_secs(5)).await,
        "exited within the shutdown timeout"
    );
    assert!(stopped_at.elapsed() < Duration::from_secs(4));
    // The abandoned update wrote nothing.
    drop(held);
    let kv = raw(&cluster, "/registry/configmaps/ns/a")
        .await
        .expect("stored");
    assert_eq!(counter(kv.value()), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_under_load_loses_no_acknowledged_update_and_doubles_none() {
    let mut cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            shutdown_timeout: Duration::from_secs(5),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/n", &cm("n", &[]), 0)
        .await
        .expect("create");
    let acked = Arc::new(AtomicU64::new(0));
    let unknown = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for _ in 0..16 {
        let url = cluster.storage.url();
        let (acked, unknown) = (acked.clone(), unknown.clone());
        writers.push(tokio::spawn(async move {
            let mut c = StorageClient::new(channel(&url).await);
            loop {
                match guaranteed_update(&mut c, start("/configmaps/ns/n"), increment).await {
                    Ok(_) => {
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        // Only "go elsewhere": never a server's INTERNAL.
                        assert!(retriable(&e), "unexpected {e:?}");
                        // It may or may not have committed before the connection closed.
                        unknown.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stopping = Instant::now();
    cluster.storage.signal_stop();
    assert!(
        cluster.storage.wait_stopped(Duration::from_secs(8)).await,
        "exited under load"
    );
    let stopped_in = stopping.elapsed();
    for w in writers {
        w.await.expect("writer");
    }
    let kv = raw(&cluster, "/registry/configmaps/ns/n")
        .await
        .expect("stored");
    let (n, acked, unknown) = (
        counter(kv.value()),
        acked.load(Ordering::Relaxed),
        unknown.load(Ordering::Relaxed),
    );
    eprintln!(
        "stopped under 16 updaters in {stopped_in:?}: {acked} updates acknowledged, {unknown} cut off (outcome unknown), counter {n}"
    );
    assert!(acked > 0, "the load ran");
    assert!(
        acked <= n && n <= acked + unknown,
        "counter {n}, acknowledged {acked}, unknown {unknown}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_over_the_size_limits_get_a_clear_code_not_a_reset() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = kubestore_tests::fixtures_registry::pod("huge", "node-1");
    p.spec.as_mut().expect("spec").containers[0].image = "x".repeat(4_000_000);
    let e = kubestore_tests::fixtures_registry::create_pod(&mut pods, p)
        .await
        .expect_err("over registry-svc's message limit");
    assert!(
        matches!(e.code(), Code::ResourceExhausted | Code::InvalidArgument),
        "{e:?}"
    );
    assert!(e.message().contains("too large"), "{}", e.message());
    let mut c = cluster.storage_client().await;
    let e = c
        .create(kubestore_proto::storage::v1::CreateRequest {
            key: "/configmaps/ns/huge".into(),
            object: vec![b'x'; 3_000_000],
            ..Default::default()
        })
        .await
        .expect_err("over storage-svc's message limit");
    assert!(
        matches!(e.code(), Code::ResourceExhausted | Code::InvalidArgument),
        "{e:?}"
    );
    // The connections still serve.
    kubestore_tests::fixtures_registry::create_pod(
        &mut pods,
        kubestore_tests::fixtures_registry::pod("small", "node-1"),
    )
    .await
    .expect("the same connection works after a refused message");
    get(&mut c, "/configmaps/ns/none")
        .await
        .expect_err("not found, but answered");
}
