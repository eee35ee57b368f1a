//! Issue 10, failover: a 3-member etcd cluster loses its leader, then a follower, under load
//! through registry-svc (32 writers: creates, and read-modify-write increments of shared
//! counters retried on Conflict). Afterwards every acknowledged create exists, every counter
//! holds its acknowledged increments (plus at most those whose outcome was unknown), clients saw
//! only UNAVAILABLE and ABORTED, and storage-svc recovered without a restart. The longest write
//! outage is printed (RELIABILITY.md).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::core::v1::{
    ConfigMap, CreateConfigMapRequest, GetConfigMapRequest, config_maps_client::ConfigMapsClient,
};
use kubestore_tests::{
    etcd::EtcdProcess,
    fixtures_registry::{self as reg, NS},
    services::{channel, spawn_registry, spawn_storage, wait_serving},
};
use tonic::{Code, Request, transport::Channel};

const WRITERS: usize = 32;
const COUNTERS: usize = 4;

#[derive(Default)]
struct Log {
    created: Vec<String>,
    create_unknown: Vec<String>,
    increments: [u64; COUNTERS],
    increment_unknown: [u64; COUNTERS],
    codes: HashMap<Code, u64>,
    acks: Vec<Instant>,
}

fn with_timeout<T>(msg: T) -> Request<T> {
    let mut r = Request::new(msg);
    r.set_timeout(Duration::from_secs(20));
    r
}

fn counter_name(i: usize) -> String {
    format!("counter-{i}")
}

fn value(cm: &ConfigMap) -> u64 {
    cm.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0)
}

async fn get(c: &mut ConfigMapsClient<Channel>, name: &str) -> Result<ConfigMap, tonic::Status> {
    Ok(c.get(with_timeout(GetConfigMapRequest {
        namespace: NS.into(),
        name: name.into(),
    }))
    .await?
    .into_inner())
}

/// One writer: creates (even writers) or increments (odd ones) until `stop`.
async fn writer(url: String, id: usize, stop: Arc<AtomicBool>, log: Arc<Mutex<Log>>) {
    let mut c = ConfigMapsClient::new(channel(&url).await);
    let note = |code: Code| {
        if let Ok(mut l) = log.lock() {
            *l.codes.entry(code).or_default() += 1;
        }
    };
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        if id.is_multiple_of(2) {
            let name = format!("w{id}-{n}");
            let r = c
                .create(with_timeout(CreateConfigMapRequest {
                    namespace: NS.into(),
                    config_map: Some(reg::cm(&name, &[])),
                    dry_run: false,
                }))
                .await;
            match r {
                Ok(_) => {
                    if let Ok(mut l) = log.lock() {
                        l.created.push(name);
                        l.acks.push(Instant::now());
                    }
                }
                Err(e) => {
                    note(e.code());
                    if let Ok(mut l) = log.lock() {
                        l.create_unknown.push(name);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        } else {
            let which = (id / 2) % COUNTERS;
            let mut cm = match get(&mut c, &counter_name(which)).await {
                Ok(cm) => cm,
                Err(e) => {
                    note(e.code());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let next = value(&cm) + 1;
            cm.data.insert("n".into(), next.to_string());
            match reg::update_cm(&mut c, cm).await {
                Ok(_) => {
                    if let Ok(mut l) = log.lock() {
                        l.increments[which] += 1;
                        l.acks.push(Instant::now());
                    }
                }
                // A conflict: someone else incremented first; read again.
                Err(e) if e.code() == Code::Aborted => note(e.code()),
                Err(e) => {
                    note(e.code());
                    if let Ok(mut l) = log.lock() {
                        l.increment_unknown[which] += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// The index of the member that leads, as the members see it.
async fn leader(members: &[EtcdProcess]) -> usize {
    for _ in 0..100 {
        for (i, m) in members.iter().enumerate() {
            if !m.running() {
                continue;
            }
            if let Some((id, leader)) = m.status().await
                && id == leader
            {
                return i;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no etcd leader");
}

/// Retries a read through failover leftovers (a restarted member catching up).
async fn read(c: &mut ConfigMapsClient<Channel>, name: &str) -> Option<ConfigMap> {
    for _ in 0..50 {
        match get(c, name).await {
            Ok(cm) => return Some(cm),
            Err(e) if e.code() == Code::NotFound => return None,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("{name} could not be read after the failovers");
}

/// Checks the invariants after a run: only UNAVAILABLE/ABORTED seen, every acknowledged create
/// present, every counter within [acknowledged, acknowledged + unknown].
async fn verify(log: Arc<Mutex<Log>>, c: &mut ConfigMapsClient<Channel>) -> Log {
    let log = Arc::try_unwrap(log)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .expect("log");
    let mut unknown_found = 0;
    for name in &log.create_unknown {
        if read(c, name).await.is_some() {
            unknown_found += 1;
        }
    }
    eprintln!(
        "acknowledged: {} creates, {:?} increments; unknown outcome: {} creates ({unknown_found} applied), {:?} increments; errors: {:?}",
        log.created.len(),
        log.increments,
        log.create_unknown.len(),
        log.increment_unknown,
        log.codes
    );
    for code in log.codes.keys() {
        assert!(
            matches!(code, Code::Unavailable | Code::Aborted),
            "clients saw {code:?}: {:?}",
            log.codes
        );
    }
    for name in &log.created {
        assert!(
            read(c, name).await.is_some(),
            "acknowledged create {name} is missing"
        );
    }
    for i in 0..COUNTERS {
        let n = value(&read(c, &counter_name(i)).await.expect("counter"));
        let (acked, unknown) = (log.increments[i], log.increment_unknown[i]);
        assert!(
            acked <= n && n <= acked + unknown,
            "counter {i}: {n}, acknowledged {acked}, unknown {unknown}"
        );
    }
    log
}

/// A client of registry-svc at `url`, after creating the counters.
async fn counters(url: &str) -> ConfigMapsClient<Channel> {
    let mut c = ConfigMapsClient::new(channel(url).await);
    for i in 0..COUNTERS {
        reg::create_cm(&mut c, reg::cm(&counter_name(i), &[]))
            .await
            .expect("counter");
    }
    c
}

/// The failover load: the counters, then `WRITERS` writers until [`Load::finish`].
struct Load {
    client: ConfigMapsClient<Channel>,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Log>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(url: &str) -> Self {
        let client = counters(url).await;
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Log::default()));
        let tasks = (0..WRITERS)
            .map(|id| tokio::spawn(writer(url.to_string(), id, stop.clone(), log.clone())))
            .collect();
        Self {
            client,
            stop,
            log,
            tasks,
        }
    }

    /// Stops the writers and checks the invariants ([`verify`]).
    async fn finish(mut self) -> Log {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.expect("writer");
        }
        verify(self.log, &mut self.client).await
    }
}

/// The longest time between two acknowledged writes.
fn longest_outage(log: &Log) -> Duration {
    let mut acks = log.acks.clone();
    acks.sort();
    acks.windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .max()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn losing_the_etcd_leader_then_a_follower_loses_no_acknowledged_write() {
    let mut members = EtcdProcess::start_cluster(3).await;
    let endpoints = members
        .iter()
        .map(EtcdProcess::endpoint)
        .collect::<Vec<_>>()
        .join(",");
    let storage = spawn_storage(storage_svc::Config::default(), endpoints, None);
    wait_serving(&storage.url()).await;
    let registry = spawn_registry(registry_svc::Config::default(), storage.url(), None);
    wait_serving(&registry.url()).await;
    let load = Load::start(&registry.url()).await;

    tokio::time::sleep(Duration::from_secs(2)).await;
    let l = leader(&members).await;
    eprintln!("killing the etcd leader m{l}");
    members[l].kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    members[l].restart().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let l = leader(&members).await;
    let f = (l + 1) % members.len();
    eprintln!("killing the etcd follower m{f}");
    members[f].kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    members[f].restart().await;
    let recovered = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = load.finish().await;
    // storage-svc recovered by itself: writes were acknowledged after the last restart.
    assert!(
        log.acks.iter().any(|t| *t > recovered),
        "no write succeeded after the members came back"
    );
    let outage = longest_outage(&log);
    eprintln!("longest write outage: {outage:?}");
    assert!(outage < Duration::from_secs(10), "outage {outage:?}");
}

/// Two storage-svc replicas behind one registry-svc: 32 writers x 50 read-modify-write
/// increments of shared counters end exact (the per-key update queue of each replica is only an
/// optimisation: the two never share one, and etcd's compare-and-swap keeps them right).
#[tokio::test(flavor = "multi_thread")]
async fn two_storage_replicas_keep_counters_exact() {
    let etcd = EtcdProcess::start().await;
    let a = spawn_storage(storage_svc::Config::default(), etcd.endpoint(), None);
    let b = spawn_storage(storage_svc::Config::default(), etcd.endpoint(), None);
    wait_serving(&a.url()).await;
    wait_serving(&b.url()).await;
    let registry = spawn_registry(
        registry_svc::Config::default(),
        format!("{},{}", a.url(), b.url()),
        None,
    );
    wait_serving(&registry.url()).await;
    let url = registry.url();
    let mut c = counters(&url).await;
    let tasks: Vec<_> = (0..32)
        .map(|id| {
            let url = url.clone();
            tokio::spawn(async move {
                let mut c = ConfigMapsClient::new(channel(&url).await);
                let which = id % COUNTERS;
                let mut done = 0;
                while done < 50 {
                    let mut cm = get(&mut c, &counter_name(which)).await.expect("get");
                    let next = value(&cm) + 1;
                    cm.data.insert("n".into(), next.to_string());
                    match reg::update_cm(&mut c, cm).await {
                        Ok(_) => done += 1,
                        Err(e) if e.code() == Code::Aborted => {}
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
    for i in 0..COUNTERS {
        let n = value(&get(&mut c, &counter_name(i)).await.expect("counter"));
        assert_eq!(n, 8 * 50, "counter {i}");
    }
    // Both replicas carried calls.
    for r in [&a, &b] {
        let text = kubestore_tests::services::scrape(r.metrics_addr).await;
        let updates = kubestore_tests::services::sample(
            &text,
            r#"grpc_server_handled_total{grpc_type="bidi_stream",grpc_service="storage.v1.Storage",grpc_method="GuaranteedUpdate",grpc_code="OK"}"#,
        )
        .unwrap_or(0.0);
        assert!(updates > 0.0, "a replica took no updates");
    }
}

/// One of two storage-svc replicas dies under the failover load: nothing acknowledged is
/// lost, clients see only retriable codes, and the survivor carries everything after.
#[tokio::test(flavor = "multi_thread")]
async fn a_storage_replica_dying_under_load_loses_no_acknowledged_write() {
    let etcd = EtcdProcess::start().await;
    // The victim stops without draining: its connections close mid-call, like a kill.
    let mut victim = spawn_storage(
        storage_svc::Config {
            shutdown_timeout: Duration::ZERO,
            ..Default::default()
        },
        etcd.endpoint(),
        None,
    );
    let survivor = spawn_storage(storage_svc::Config::default(), etcd.endpoint(), None);
    wait_serving(&victim.url()).await;
    wait_serving(&survivor.url()).await;
    let registry = spawn_registry(
        registry_svc::Config::default(),
        format!("{},{}", victim.url(), survivor.url()),
        None,
    );
    wait_serving(&registry.url()).await;
    let load = Load::start(&registry.url()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    victim.signal_stop();
    assert!(victim.wait_stopped(Duration::from_secs(5)).await);
    let died = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = load.finish().await;
    let after = log.acks.iter().filter(|t| **t > died).count();
    assert!(
        after > 100,
        "the survivor carried on ({after} writes after)"
    );
    let outage = longest_outage(&log);
    eprintln!("longest write outage: {outage:?}");
    assert!(outage < Duration::from_secs(5), "outage {outage:?}");
}
