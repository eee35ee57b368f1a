//! List and Watch, side by side with raw etcd in the same run:
//!
//! - a list of 10,000 ConfigMaps through registry-svc (one page, and pages of 500) against an
//!   etcd range over the same prefix (one call, and pages of 500), and the growth of each
//!   service's RSS while it serves the one-page list, against the list's encoded size;
//! - watch fan-out: 100 watchers on registry-svc while one writer creates objects, against 100
//!   raw etcd watchers while one writer puts them: events per second delivered to each watcher,
//!   and the lag from a write's acknowledgement to each watcher's receipt.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use etcd_client::{GetOptions, WatchOptions};
use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, ListConfigMapsRequest, WatchConfigMapsRequest,
        config_maps_client::ConfigMapsClient,
    },
    meta::v1::{ListOptions, ObjectMeta},
};
use prost::Message;
use tonic::transport::Channel;

use crate::{
    cpu::{self, PerOp},
    procs::ServiceProcess,
    report::Row,
    runner::Stats,
};

/// Namespace of the listed objects.
const LIST_NS: &str = "bench-list";

/// The benchmark's ConfigMap `name` in `ns` (a 64-byte payload).
pub(crate) fn object(ns: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: ns.into(),
            uid: format!("uid-{name}"),
            ..Default::default()
        }),
        data: [
            ("n".to_string(), name.to_string()),
            ("payload".to_string(), "x".repeat(64)),
        ]
        .into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

pub(crate) fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// Writes `n` ConfigMaps under the registry's key prefix of namespace `ns`, straight into etcd
/// (as registry-svc stores them), 100 puts per txn.
pub(crate) async fn seed(etcd: &etcd_client::Client, ns: &str, n: usize) -> Result<(), String> {
    let mut handles = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let ops: Vec<etcd_client::TxnOp> = chunk
            .iter()
            .map(|i| {
                let name = format!("cm-{i:05}");
                let v = object(ns, &name).encode_to_vec();
                etcd_client::TxnOp::put(format!("/registry/configmaps/{ns}/{name}"), v, None)
            })
            .collect();
        let mut kv = etcd.kv_client();
        handles.push(tokio::spawn(async move {
            kv.txn(etcd_client::Txn::new().and_then(ops)).await
        }));
        if handles.len() >= 8 {
            for h in handles.drain(..) {
                h.await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    for h in handles {
        h.await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Seeds the `n` objects of the list rows.
pub(crate) async fn seed_list(etcd: &etcd_client::Client, n: usize) -> Result<(), String> {
    seed(etcd, LIST_NS, n).await
}

/// Runs `reps` operations one after another, with the CPU each process spent per operation.
pub(crate) async fn measured<F, Fut>(reps: usize, f: F) -> (Stats, PerOp)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let before = cpu::sample();
    let stats = crate::runner::run(1, reps, f).await;
    let per = before.per_op(&cpu::sample(), stats.ops);
    (stats, per)
}

pub(crate) fn row(
    layer: &'static str,
    op: &'static str,
    baseline: &'static str,
    (stats, cpu): (Stats, PerOp),
    note: String,
) -> Row {
    println!(
        "  {layer:<24} {op:<28} {:>9.1} /s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}  CPU µs/op {}  {note}",
        stats.ops_per_sec(),
        stats.p50.as_secs_f64() * 1e3,
        stats.p99.as_secs_f64() * 1e3,
        stats.errors,
        cpu.cell(),
    );
    Row {
        layer,
        op,
        baseline,
        concurrency: 1,
        stats,
        note,
        cpu,
    }
}

/// `reps` etcd ranges, one after another, over the `want` objects [`seed`]ed in the list
/// namespace: one call each.
pub(crate) async fn raw_one_page(
    etcd: &etcd_client::Client,
    reps: usize,
    want: usize,
) -> (Stats, PerOp) {
    let raw = etcd.clone();
    let p = format!("/registry/configmaps/{LIST_NS}/");
    measured(reps, move |_| {
        let (mut kv, p) = (raw.kv_client(), p.clone());
        async move {
            let r = kv
                .get(
                    p.clone(),
                    Some(GetOptions::new().with_range(prefix_end(&p))),
                )
                .await
                .map_err(|e| e.to_string())?;
            check(r.kvs().len(), want)
        }
    })
    .await
}

/// `reps` registry-svc Lists of the list namespace's `want` objects, one after another, each
/// in one page.
pub(crate) async fn registry_one_page(ch: Channel, reps: usize, want: usize) -> (Stats, PerOp) {
    measured(reps, move |_| {
        let mut c = ConfigMapsClient::new(ch.clone()).max_decoding_message_size(1 << 30);
        async move {
            let r = c
                .list(ListConfigMapsRequest {
                    namespace: LIST_NS.into(),
                    options: None,
                })
                .await
                .map_err(|e| e.to_string())?;
            check(r.into_inner().items.len(), want)
        }
    })
    .await
}

/// The list rows and, per service, RSS growth during the one-page list against its size.
pub(crate) async fn list_rows(
    etcd: &etcd_client::Client,
    registry: &[Channel],
    registry_off: Option<&[Channel]>,
    services: &[&ServiceProcess],
    objects: usize,
    reps: usize,
) -> Result<(Vec<Row>, Vec<(String, f64, f64)>), String> {
    println!("list of {objects} ConfigMaps");
    seed_list(etcd, objects).await?;
    let prefix = format!("/registry/configmaps/{LIST_NS}/");
    let channel = registry[0].clone();
    let client = move || ConfigMapsClient::new(channel.clone()).max_decoding_message_size(1 << 30);
    let mut rows = Vec::new();
    let want = objects;

    rows.push(row(
        "raw etcd",
        "list 10000 (one page)",
        "list 10000 (one page)",
        raw_one_page(etcd, reps, want).await,
        String::new(),
    ));
    for (layer, ch) in [
        ("registry-svc ConfigMaps", Some(registry[0].clone())),
        (
            "registry-svc ConfigMaps, cache off",
            registry_off.and_then(|c| c.first().cloned()),
        ),
    ] {
        let Some(ch) = ch else { continue };
        rows.push(row(
            layer,
            "list 10000 (one page)",
            "list 10000 (one page)",
            registry_one_page(ch, reps, want).await,
            String::new(),
        ));
    }

    let raw = etcd.clone();
    let p = prefix.clone();
    let stats = measured(reps, move |_| {
        let (mut kv, p) = (raw.kv_client(), p.clone());
        async move {
            let end = prefix_end(&p);
            let mut start = p.into_bytes();
            let mut n = 0;
            loop {
                let r = kv
                    .get(
                        start.clone(),
                        Some(GetOptions::new().with_range(end.clone()).with_limit(500)),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                n += r.kvs().len();
                match (r.more(), r.kvs().last()) {
                    (true, Some(last)) => {
                        start = last.key().to_vec();
                        start.push(0);
                    }
                    _ => break,
                }
            }
            check(n, want)
        }
    })
    .await;
    rows.push(row(
        "raw etcd",
        "list 10000 (pages of 500)",
        "list 10000 (pages of 500)",
        stats,
        String::new(),
    ));
    for (layer, ch) in [
        ("registry-svc ConfigMaps", Some(registry[0].clone())),
        (
            "registry-svc ConfigMaps, cache off",
            registry_off.and_then(|c| c.first().cloned()),
        ),
    ] {
        let Some(ch) = ch else { continue };
        let stats = measured(reps, move |_| {
            let mut c = ConfigMapsClient::new(ch.clone()).max_decoding_message_size(1 << 30);
            async move {
                let mut token = String::new();
                let mut n = 0;
                loop {
                    let r = c
                        .list(ListConfigMapsRequest {
                            namespace: LIST_NS.into(),
                            options: Some(ListOptions {
                                limit: 500,
                                r#continue: token.clone(),
                                ..Default::default()
                            }),
                        })
                        .await
                        .map_err(|e| e.to_string())?
                        .into_inner();
                    n += r.items.len();
                    token = r.metadata.unwrap_or_default().r#continue;
                    if token.is_empty() {
                        break;
                    }
                }
                check(n, want)
            }
        })
        .await;
        rows.push(row(
            layer,
            "list 10000 (pages of 500)",
            "list 10000 (pages of 500)",
            stats,
            String::new(),
        ));
    }

    // RSS growth while serving one one-page list, against what it returns.
    for s in services {
        s.reset_peak();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let base: Vec<f64> = services.iter().map(|s| s.rss_mib().0).collect();
    let r = client()
        .list(ListConfigMapsRequest {
            namespace: LIST_NS.into(),
            options: None,
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let encoded = r.encoded_len() as f64 / (1024.0 * 1024.0);
    let memory = services
        .iter()
        .zip(base)
        .map(|(s, b)| (format!("{}-svc", s.name), s.rss_mib().1 - b, encoded))
        .collect();
    Ok((rows, memory))
}

fn check(got: usize, want: usize) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("listed {got} objects, expected {want}"))
    }
}

/// Lag statistics of a fan-out: events/s per watcher, lag percentiles.
/// Creates ConfigMaps `w00000`, `w00001`, ... in `ns`, `events` of them one after another, for
/// watchers to receive: the instant each create was acknowledged.
pub(crate) async fn write_events(
    cms: &mut ConfigMapsClient<Channel>,
    ns: &str,
    events: usize,
) -> Result<Vec<Instant>, String> {
    let mut acks = Vec::with_capacity(events);
    for i in 0..events {
        cms.create(CreateConfigMapRequest {
            namespace: ns.into(),
            config_map: Some(object(ns, &format!("w{i:05}"))),
            dry_run: false,
        })
        .await
        .map_err(|e| e.to_string())?;
        acks.push(Instant::now());
    }
    Ok(acks)
}

pub(crate) fn fanout_stats(acks: &[Instant], receipts: &[Vec<Instant>], start: Instant) -> Stats {
    let mut lags: Vec<Duration> = Vec::new();
    let mut last = start;
    for r in receipts {
        for (i, t) in r.iter().enumerate() {
            if let Some(a) = acks.get(i) {
                lags.push(t.saturating_duration_since(*a));
            }
            last = last.max(*t);
        }
    }
    lags.sort();
    let pct = |p: f64| {
        lags.get(((lags.len() as f64 * p) as usize).min(lags.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Stats {
        // ops/s is reported per watcher: each received every event.
        ops: acks.len(),
        errors: receipts.iter().filter(|r| r.len() < acks.len()).count(),
        elapsed: last.saturating_duration_since(start),
        p50: pct(0.5),
        p99: pct(0.99),
    }
}

/// The fan-out's statistics once every watcher's task has ended.
async fn finish_fanout(
    tasks: Vec<tokio::task::JoinHandle<Result<(), String>>>,
    acks: &[Instant],
    receipts: &Mutex<Vec<Vec<Instant>>>,
    begin: Instant,
) -> Result<Stats, String> {
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(fanout_stats(
        acks,
        &receipts.lock().map_err(|e| e.to_string())?,
        begin,
    ))
}

/// `watchers` registry-svc watchers of `ns` while one writer creates `events` ConfigMaps there.
pub(crate) async fn registry_fanout(
    registry: &[Channel],
    ns: &'static str,
    watchers: usize,
    events: usize,
) -> Result<Stats, String> {
    let mut cms = ConfigMapsClient::new(registry[0].clone());
    let start = cms
        .create(CreateConfigMapRequest {
            namespace: ns.into(),
            config_map: Some(object(ns, "start")),
            dry_run: false,
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .metadata
        .unwrap_or_default()
        .resource_version;
    let receipts = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for n in 0..watchers {
        let mut c = ConfigMapsClient::new(registry[n % registry.len()].clone());
        let receipts = receipts.clone();
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = c
                .watch(WatchConfigMapsRequest {
                    namespace: ns.into(),
                    options: Some(ListOptions {
                        resource_version: start,
                        ..Default::default()
                    }),
                })
                .await
                .map_err(|e| e.to_string())?
                .into_inner();
            let mut got = Vec::with_capacity(events);
            while got.len() < events {
                match tokio::time::timeout(Duration::from_secs(60), stream.message()).await {
                    Ok(Ok(Some(_))) => got.push(Instant::now()),
                    _ => break,
                }
            }
            if let Ok(mut r) = receipts.lock() {
                r.push(got);
            }
            Ok::<(), String>(())
        }));
    }
    // Let the watches start before the first write (they resume from `start` anyway).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let begin = Instant::now();
    let acks = write_events(&mut cms, ns, events).await?;
    finish_fanout(tasks, &acks, &receipts, begin).await
}

/// `watchers` raw etcd watchers from the current revision while one writer puts `events` new
/// keys.
pub(crate) async fn raw_fanout(
    etcd: &etcd_client::Client,
    watchers: usize,
    events: usize,
) -> Result<Stats, String> {
    let start_rev = etcd
        .kv_client()
        .get("/", None)
        .await
        .map_err(|e| e.to_string())?
        .header()
        .map_or(0, |h| h.revision());
    let prefix = "/raw/watch/".to_string();
    let receipts = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let mut w = etcd.watch_client();
        let p = prefix.clone();
        let receipts = receipts.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = w
                .watch(
                    p.clone(),
                    Some(
                        WatchOptions::new()
                            .with_prefix()
                            .with_prev_key()
                            .with_start_revision(start_rev + 1),
                    ),
                )
                .await
                .map_err(|e| e.to_string())?;
            let mut got = Vec::with_capacity(events);
            while got.len() < events {
                match tokio::time::timeout(Duration::from_secs(30), stream.message()).await {
                    Ok(Ok(Some(r))) => {
                        let now = Instant::now();
                        got.extend(r.events().iter().map(|_| now));
                    }
                    _ => break,
                }
            }
            if let Ok(mut r) = receipts.lock() {
                r.push(got);
            }
            Ok::<(), String>(())
        }));
    }
    let begin = Instant::now();
    let mut acks = Vec::with_capacity(events);
    let mut kv = etcd.kv_client();
    for i in 0..events {
        let v = object("raw", &format!("w{i}")).encode_to_vec();
        kv.put(format!("{prefix}w{i:05}"), v, None)
            .await
            .map_err(|e| e.to_string())?;
        acks.push(Instant::now());
    }
    finish_fanout(tasks, &acks, &receipts, begin).await
}

/// Watch fan-out through registry-svc (cache on: 100, 1,000 and 10,000 watchers; off: 100)
/// and on raw etcd (100 watchers), with the CPU each process spent per delivered event and
/// the services' peak RSS. `services` are the cache-on pair (storage, registry), then the
/// cache-off pair when there is one.
pub(crate) async fn watch_rows(
    etcd: &etcd_client::Client,
    registry: &[Channel],
    registry_off: Option<&[Channel]>,
    services: &[&ServiceProcess],
    watchers: usize,
    events: usize,
) -> Result<Vec<Row>, String> {
    println!("watch fan-out: {watchers} watchers, {events} writes");
    let mut rows = Vec::new();

    let cpu_before = cpu::sample();
    let stats = raw_fanout(etcd, watchers, events).await?;
    let cpu = cpu_before.per_op(&cpu::sample(), watchers * events);
    let raw_p99 = stats.p99;
    rows.push(row(
        "raw etcd",
        "watch fan-out (100 watchers)",
        "watch fan-out (100 watchers)",
        (stats, cpu),
        "events/s per watcher; p50/p99 = lag from write ack to receipt; CPU per delivered event"
            .into(),
    ));

    for (layer, op, chans, n, ns) in [
        (
            "registry-svc ConfigMaps",
            "watch fan-out (100 watchers)",
            Some(registry),
            watchers,
            "bench-watch-100",
        ),
        (
            "registry-svc ConfigMaps",
            "watch fan-out (1000 watchers)",
            Some(registry),
            watchers * 10,
            "bench-watch-1000",
        ),
        (
            "registry-svc ConfigMaps",
            "watch fan-out (10000 watchers)",
            Some(registry),
            watchers * 100,
            "bench-watch-10000",
        ),
        (
            "registry-svc ConfigMaps, cache off",
            "watch fan-out (100 watchers)",
            registry_off,
            watchers,
            "bench-watch-off",
        ),
    ] {
        let Some(chans) = chans else { continue };
        // A connection carries at most MAX_CONCURRENT_STREAMS watches: more connections for
        // 10,000 (a client with one channel could not open them all).
        let needed = n.div_ceil(2_000);
        let extra = if needed > chans.len() {
            let url = format!("http://{}", registry_addr(services, layer));
            let mut v = chans.to_vec();
            for _ in chans.len()..needed {
                v.push(kubestore_tests::services::channel(&url).await);
            }
            v
        } else {
            chans.to_vec()
        };
        for s in serving(services, layer) {
            s.reset_peak();
        }
        // 10,000 watchers get a fifth of the writes: still 100 events each, a million
        // deliveries at the full count.
        let events = if n >= 10_000 { events / 5 } else { events };
        let before = cpu::sample();
        let stats = registry_fanout(&extra, ns, n, events).await?;
        let cpu = before.per_op(&cpu::sample(), n * events);
        let rss: Vec<String> = serving(services, layer)
            .iter()
            .map(|s| format!("{} peak {:.0} MiB", s.name, s.rss_mib().1))
            .collect();
        let ratio = stats.p99.as_secs_f64() / raw_p99.as_secs_f64().max(1e-6);
        rows.push(row(
            layer,
            op,
            "watch fan-out (100 watchers)",
            (stats, cpu),
            format!(
                "events/s per watcher; p99 lag {ratio:.2}x raw etcd's (100 watchers); {}",
                rss.join(", ")
            ),
        ));
    }
    Ok(rows)
}

/// The (storage-svc, registry-svc) pair serving `layer`: the cache-off pair for a cache-off
/// row.
fn serving<'a>(services: &[&'a ServiceProcess], layer: &str) -> Vec<&'a ServiceProcess> {
    let pair = if layer.contains("cache off") {
        services.get(2..4)
    } else {
        services.get(0..2)
    };
    pair.unwrap_or_default().to_vec()
}

/// The address of the registry-svc serving `layer`.
fn registry_addr(services: &[&ServiceProcess], layer: &str) -> std::net::SocketAddr {
    serving(services, layer)
        .iter()
        .find(|s| s.name == "registry")
        .map_or_else(|| ([127, 0, 0, 1], 0).into(), |s| s.addr)
}
