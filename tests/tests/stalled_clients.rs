//! Clients that stop half-way cannot take registry-svc or storage-svc from others:
//! - watches that are never read are cut off (RESOURCE_EXHAUSTED `WatcherTooSlow`) after a
//!   bounded buffer and time, and meanwhile, measured while they stall, every other call still
//!   answers (they once filled the flow-control windows registry-svc shares with storage-svc
//!   and wedged it);
//! - calls that send their headers and never their body hold an in-flight slot only until their
//!   deadline (upstream's request timeout around `--max-requests-inflight`), unary and
//!   streaming alike.
//!
//! The in-flight layer's own deadline for a response body still open (`HeldBody`: it ends the
//! call with DEADLINE_EXCEEDED trailers and frees the slot) is a backstop no handler here
//! reaches: each ends its stream at its own deadline, a margin earlier. Its unit test
//! (`kubestore_telemetry::inflight`) holds a body open past the deadline.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, GetConfigMapRequest, WatchConfigMapsRequest,
        config_maps_client::ConfigMapsClient,
    },
    meta::v1::ObjectMeta,
    storage::v1::GetRequest,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    raw::stalled_upload,
    reason,
    services::{channel, sample, scrape},
};
use tonic::{Code, Status, transport::Channel};

const NS: &str = "default";

fn big_cm(name: &str, bytes: usize) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        data: [("blob".to_string(), "x".repeat(bytes))].into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

async fn create(c: &mut ConfigMapsClient<Channel>, cm: ConfigMap) -> Result<(), Status> {
    let mut req = tonic::Request::new(CreateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(cm),
        dry_run: false,
    });
    req.set_timeout(Duration::from_secs(10));
    c.create(req).await.map(drop)
}

#[tokio::test(flavor = "multi_thread")]
async fn watchers_that_stop_reading_are_cut_off_and_never_stall_other_calls() {
    let cluster = Cluster::full().await;
    let mut steady = cluster.config_maps().await;
    create(&mut steady, big_cm("probe", 10))
        .await
        .expect("create probe");
    // One client opens 16 watches on one channel and reads none of them.
    let stalled_channel = channel(&cluster.registry.as_ref().expect("registry").url()).await;
    let mut stalled = Vec::new();
    for _ in 0..16 {
        let mut c = ConfigMapsClient::new(stalled_channel.clone());
        let w = c
            .watch(WatchConfigMapsRequest {
                namespace: NS.into(),
                options: None,
            })
            .await
            .expect("watch")
            .into_inner();
        stalled.push(w);
    }
    // A steady client on its own channel probes all along, open-loop (a probe every 10 ms,
    // whether or not the last one answered, so a stall shows in every probe it holds up):
    // while 20 MiB of changes, far more than every flow-control window and buffer on the way
    // holds, pile up behind the stalled watches, and until the first of them is cut off (its
    // buffer was full and unread for 2 s before that).
    let metrics = cluster.registry.as_ref().expect("registry").metrics_addr;
    let probing = Arc::new(AtomicBool::new(true));
    let prober = {
        let (steady, probing) = (steady.clone(), probing.clone());
        tokio::spawn(async move {
            let mut probes = Vec::new();
            while probing.load(Ordering::Relaxed) && probes.len() < 6000 {
                let mut steady = steady.clone();
                probes.push(tokio::spawn(async move {
                    let start = Instant::now();
                    let mut req = tonic::Request::new(GetConfigMapRequest {
                        namespace: NS.into(),
                        name: "probe".into(),
                    });
                    req.set_timeout(Duration::from_secs(5));
                    steady.get(req).await.expect("get next to stalled watchers");
                    start.elapsed()
                }));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            probes
        })
    };
    let mut writer = cluster.config_maps().await;
    for i in 0..80 {
        create(&mut writer, big_cm(&format!("big-{i}"), 256 << 10))
            .await
            .unwrap_or_else(|e| panic!("write {i} while watchers stall: {e:?}"));
    }
    let cut_off = || async {
        sample(&scrape(metrics).await, "registry_watchers_cut_off_total").unwrap_or(0.0)
    };
    let until = Instant::now() + Duration::from_secs(30);
    while cut_off().await < 1.0 {
        assert!(Instant::now() < until, "no stalled watch was cut off");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    probing.store(false, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for probe in prober.await.expect("prober") {
        latencies.push(probe.await.expect("probe"));
    }
    latencies.sort();
    let p99 = latencies[latencies.len() * 99 / 100 - 1];
    eprintln!(
        "{} probes during the stall: p50 {:?}, p99 {p99:?}, max {:?}",
        latencies.len(),
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert!(latencies.len() >= 100, "only {} probes", latencies.len());
    assert!(
        p99 < Duration::from_secs(1),
        "p99 {p99:?} next to stalled watchers"
    );
    // While nobody reads them, registry-svc cuts every stalled watch off (its buffer stays
    // full for 2 s)...
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let cut = cut_off().await;
        if cut >= 16.0 {
            break;
        }
        assert!(
            Instant::now() < until,
            "{cut} of 16 stalled watches cut off"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ... and each, read at last, delivers what was in flight and then says why it ended.
    // (All are read at once: their unread data shares this client's connection window.)
    let readers: Vec<_> = stalled
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                let mut read = 0;
                let status = tokio::time::timeout(Duration::from_secs(30), async {
                    loop {
                        match w.message().await {
                            Ok(Some(_)) => read += 1,
                            Ok(None) => return Status::ok("ended without a status"),
                            Err(s) => return s,
                        }
                    }
                })
                .await;
                (read, status)
            })
        })
        .collect();
    for (i, r) in readers.into_iter().enumerate() {
        let (read, status) = r.await.expect("reader");
        let status = status.unwrap_or_else(|_| panic!("watch {i} was never cut off ({read} read)"));
        assert_eq!(
            (status.code(), reason(&status).as_str()),
            (Code::ResourceExhausted, "WatcherTooSlow"),
            "watch {i}: {status:?}"
        );
        assert!(
            read < 80,
            "watch {i} read all {read} events: it was never held up"
        );
    }
}

/// `n` calls to `path` on one channel that never send their body and set no deadline (a
/// client-side deadline would end them from the client's side, proving nothing of the server).
async fn stall(url: &str, path: &'static str, n: usize) -> Vec<tokio::task::JoinHandle<Status>> {
    let ch = channel(url).await;
    (0..n)
        .map(|_| tokio::spawn(stalled_upload(ch.clone(), path, None)))
        .collect()
}

/// Calls `f`, which must fail RESOURCE_EXHAUSTED (the slots are held), until it succeeds;
/// returns when it first succeeded, measured from `since`.
async fn refused_then_served<F, Fut>(since: Instant, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), Status>>,
{
    let mut refused = false;
    loop {
        assert!(
            since.elapsed() < Duration::from_secs(45),
            "no slot came free (refused seen: {refused})"
        );
        match f().await {
            Err(e) if e.code() == Code::ResourceExhausted => refused = true,
            Err(e) => panic!("unexpected error: {e:?}"),
            Ok(()) if refused => return since.elapsed(),
            Ok(()) => panic!("the stalled calls held no slot ({:?})", since.elapsed()),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn assert_cut_at_deadline(stalled: Vec<tokio::task::JoinHandle<Status>>, by_layer: bool) {
    for h in stalled {
        let s = h.await.expect("stalled call");
        assert_eq!(s.code(), Code::DeadlineExceeded, "{s:?}");
        if by_layer {
            assert_eq!(reason(&s), "Timeout", "{s:?}");
        }
    }
}

/// Waits until the server at `metrics` counts `n` calls in flight.
async fn wait_inflight(metrics: std::net::SocketAddr, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape(metrics).await;
        if sample(&text, "grpc_server_inflight_requests") == Some(n as f64) {
            return;
        }
        assert!(Instant::now() < until, "never {n} calls in flight");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_that_never_finish_hold_inflight_slots_only_until_their_deadline() {
    const LIMIT: usize = 20;
    let cluster = Cluster::start(ClusterOptions {
        registry: Some(registry_svc::Config {
            max_requests_inflight: LIMIT,
            ..Default::default()
        }),
        storage: Some(storage_svc::Config {
            max_requests_inflight: LIMIT,
            request_timeout: Duration::from_secs(2),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    // registry-svc's documented default deadline (a call without grpc-timeout).
    let deadline = registry_svc::store::DEFAULT_REQUEST_TIMEOUT;

    // registry-svc, a unary method: the body never comes, the handler never runs.
    let mut cms = cluster.config_maps().await;
    create(&mut cms, big_cm("a", 10)).await.expect("create");
    let since = Instant::now();
    let registry_url = cluster.registry.as_ref().expect("registry").url();
    let stalled = stall(&registry_url, "/core.v1.ConfigMaps/Get", LIMIT).await;
    wait_inflight(
        cluster.registry.as_ref().expect("registry").metrics_addr,
        LIMIT,
    )
    .await;
    let served = refused_then_served(since, || {
        let mut c = cms.clone();
        async move {
            c.get(GetConfigMapRequest {
                namespace: NS.into(),
                name: "a".into(),
            })
            .await
            .map(drop)
        }
    })
    .await;
    assert!(
        served < deadline + Duration::from_millis(1500),
        "served after {served:?}"
    );
    assert_cut_at_deadline(stalled, true).await;

    // storage-svc (--request-timeout 2s), a bidirectional stream: its handler answers at once,
    // and the slot is held while it waits for the first message.
    let deadline = Duration::from_secs(2);
    let storage = cluster.storage_client().await;
    let since = Instant::now();
    let stalled = stall(
        &cluster.storage.url(),
        "/storage.v1.Storage/GuaranteedUpdate",
        LIMIT,
    )
    .await;
    wait_inflight(cluster.storage.metrics_addr, LIMIT).await;
    let served = refused_then_served(since, || {
        let mut c = storage.clone();
        async move {
            c.get(GetRequest {
                key: "/configmaps/default/a".into(),
                ignore_not_found: true,
                resource_version: String::new(),
            })
            .await
            .map(drop)
        }
    })
    .await;
    assert!(
        served < deadline + Duration::from_millis(1500),
        "served after {served:?}"
    );
    // (storage's GuaranteedUpdate handler also ends it at its deadline, in its own words.)
    assert_cut_at_deadline(stalled, false).await;
}
