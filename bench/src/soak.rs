//! `kubestore-bench --soak SECS`: a steady load (not a maximum one) through registry-svc for
//! SECS, sampling each service's RSS, open file descriptors and live tokio tasks, to show that
//! nothing grows with time (issue 10: "RSS flat, no fd or task leak").
//!
//! The load touches every path that holds resources: ConfigMap create/get/update/list/delete
//! (8 workers at 25 ops/s each), pods deleted gracefully then for good with a UID precondition
//! (as the node agent does), events whose TTL lease expires during the run, and 16 watches that
//! are closed and reopened every 20 s. storage-svc compacts every minute, so the watch cache
//! and etcd's history turn over several times.
//!
//! Verdict (exit status 1 when it fails): after the load stops and its connections close, open
//! fds and live tasks are back within 4 of where they were before it began, and the RSS at the
//! end of the load is within 20% + 8 MiB of the RSS after the first tenth of the run (the
//! warm-up, when pools and caches reach their working size).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::{
    core::v1::{
        CreateConfigMapRequest, CreateEventRequest, DeleteConfigMapRequest, Event,
        GetConfigMapRequest, ListConfigMapsRequest, ObjectReference, UpdateConfigMapRequest,
        WatchConfigMapsRequest, config_maps_client::ConfigMapsClient, events_client::EventsClient,
        pods_client::PodsClient,
    },
    meta::v1::{ListOptions, ObjectMeta},
};
use kubestore_tests::{
    EtcdProcess,
    fixtures_registry::{NS, cm, create_pod, delete_pod, grace, meta, pod},
    services::{channel, sample, scrape},
};
use tonic::{Code, transport::Channel};

use crate::procs::ServiceProcess;

/// Numbers names apart across the priming load and the soak itself.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One sample of one service.
#[derive(Clone, Copy, Default)]
struct Gauges {
    rss_mib: f64,
    fds: f64,
    tasks: f64,
    /// storage-svc: events held in the watch cache's windows, all resources (they fill up to
    /// `--watch-cache-size` each during the run, which accounts for early RSS growth).
    window: f64,
}

async fn gauges(p: &ServiceProcess) -> Gauges {
    let s = scrape(p.metrics).await;
    Gauges {
        rss_mib: p.rss_mib().0,
        fds: sample(&s, "process_open_fds").unwrap_or(f64::NAN),
        tasks: sample(&s, "tokio_alive_tasks").unwrap_or(f64::NAN),
        window: s
            .lines()
            .filter(|l| l.starts_with("storage_watch_cache_window_events{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    }
}

/// What the load did.
#[derive(Default)]
struct Counts {
    ops: AtomicU64,
    /// Conflicts and NotFound races between a worker's own steps are expected; anything else
    /// is not.
    unexpected: AtomicU64,
    watch_events: AtomicU64,
    watch_reopens: AtomicU64,
}

impl Counts {
    fn record<T>(&self, what: &str, r: Result<T, tonic::Status>) -> Option<T> {
        self.ops.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(v) => Some(v),
            Err(e) if matches!(e.code(), Code::Aborted | Code::NotFound) => None,
            Err(e) => {
                if self.unexpected.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("soak: {what}: {e:?}");
                }
                None
            }
        }
    }
}

async fn config_map_worker(ch: Channel, w: usize, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut c = ConfigMapsClient::new(ch);
    let mut tick = tokio::time::interval(Duration::from_millis(40));
    while !stop.load(Ordering::Relaxed) {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("soak-{w}-{k}");
        let mut steps = 0;
        tick.tick().await;
        let created = counts.record(
            "create",
            c.create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(cm(&name, &[])),
                dry_run: false,
            })
            .await,
        );
        let Some(created) = created.map(tonic::Response::into_inner) else {
            continue;
        };
        while steps < 3 && !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            steps += 1;
            match steps {
                1 => {
                    counts.record(
                        "get",
                        c.get(GetConfigMapRequest {
                            namespace: NS.into(),
                            name: name.clone(),
                        })
                        .await,
                    );
                }
                2 => {
                    let mut changed = created.clone();
                    changed.data.insert("n".into(), k.to_string());
                    counts.record(
                        "update",
                        c.update(UpdateConfigMapRequest {
                            namespace: NS.into(),
                            config_map: Some(changed),
                            dry_run: false,
                        })
                        .await,
                    );
                }
                _ => {
                    counts.record(
                        "list",
                        c.list(ListConfigMapsRequest {
                            namespace: NS.into(),
                            options: Some(ListOptions {
                                limit: 20,
                                ..Default::default()
                            }),
                        })
                        .await,
                    );
                }
            }
        }
        tick.tick().await;
        counts.record(
            "delete",
            c.delete(DeleteConfigMapRequest {
                namespace: NS.into(),
                name,
                options: None,
            })
            .await,
        );
    }
}

/// Pods as the kubelet sees them: created, deleted with a grace period (a deletionTimestamp),
/// then deleted for good with a UID precondition; and events with a short TTL.
async fn pod_and_event_worker(ch: Channel, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut pods = PodsClient::new(ch.clone());
    let mut events = EventsClient::new(ch);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("soak-pod-{k}");
        counts.record(
            "event",
            events
                .create(CreateEventRequest {
                    namespace: NS.into(),
                    event: Some(Event {
                        metadata: Some(ObjectMeta {
                            name: format!("soak-event-{k}"),
                            ..Default::default()
                        }),
                        involved_object: Some(ObjectReference {
                            kind: "Pod".into(),
                            namespace: NS.into(),
                            name: name.clone(),
                            ..Default::default()
                        }),
                        reason: "Scheduled".into(),
                        message: "soak".into(),
                        r#type: "Normal".into(),
                        count: 1,
                        ..Default::default()
                    }),
                    dry_run: false,
                })
                .await,
        );
        let Some(created) = counts.record("pod", create_pod(&mut pods, pod(&name, "node-1")).await)
        else {
            continue;
        };
        counts.record("graceful", delete_pod(&mut pods, &name, grace(30)).await);
        let mut last = grace(0);
        if let Some(o) = last.as_mut() {
            o.preconditions = Some(kubestore_proto::meta::v1::Preconditions {
                uid: Some(meta(&created).uid),
                resource_version: None,
            });
        }
        counts.record("final delete", delete_pod(&mut pods, &name, last).await);
    }
}

/// A watch of the ConfigMaps, reopened every 20 s (staggered by `w`).
async fn watcher(ch: Channel, w: u64, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut c = ConfigMapsClient::new(ch);
    let mut first = true;
    while !stop.load(Ordering::Relaxed) {
        let life = if first {
            Duration::from_millis(20_000 * w / 16 + 1)
        } else {
            Duration::from_secs(20)
        };
        first = false;
        counts.watch_reopens.fetch_add(1, Ordering::Relaxed);
        let opened = c
            .watch(WatchConfigMapsRequest {
                namespace: NS.into(),
                options: Some(ListOptions {
                    send_initial_events: Some(false),
                    allow_watch_bookmarks: true,
                    ..Default::default()
                }),
            })
            .await;
        let Some(stream) = counts.record("watch", opened) else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let mut stream = stream.into_inner();
        let until = tokio::time::Instant::now() + life;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            match tokio::time::timeout_at(until, stream.message()).await {
                Err(_) => break,
                Ok(Ok(Some(_))) => {
                    counts.watch_events.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Ok(None)) => break,
                Ok(Err(e)) => {
                    counts.record::<()>("watch stream", Err(e));
                    break;
                }
            }
        }
    }
}

/// The running load: its workers, the two client channels they share, and what they did.
struct Load {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// One channel for the writers, one for the watchers: what a client process would hold.
    async fn start(url: &str) -> Self {
        let writers = channel(url).await;
        let watchers = channel(url).await;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let mut tasks = Vec::new();
        for w in 0..8 {
            tasks.push(tokio::spawn(config_map_worker(
                writers.clone(),
                w,
                stop.clone(),
                counts.clone(),
            )));
        }
        tasks.push(tokio::spawn(pod_and_event_worker(
            writers,
            stop.clone(),
            counts.clone(),
        )));
        for w in 0..16 {
            tasks.push(tokio::spawn(watcher(
                watchers.clone(),
                w,
                stop.clone(),
                counts.clone(),
            )));
        }
        Self {
            stop,
            counts,
            tasks,
        }
    }

    /// Stops the workers and waits for them (dropping the last clones of the channels).
    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Whether a count went up by more than 4, or could not be read (NaN: missing from /metrics).
fn grew(before: f64, after: f64) -> bool {
    !matches!(
        after.partial_cmp(&(before + 4.0)),
        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
    )
}

fn row(at: Duration, label: &str, s: Gauges, r: Gauges) -> String {
    format!(
        "| {:>5.0} s | {label} | {:.1} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} |",
        at.as_secs_f64(),
        s.rss_mib,
        s.fds,
        s.tasks,
        s.window,
        r.rss_mib,
        r.fds,
        r.tasks
    )
}

/// Runs the soak for `secs` seconds; `Err` when a verdict fails.
pub(crate) async fn soak(secs: u64, out: &std::path::Path) -> Result<(), String> {
    let etcd = EtcdProcess::start().await;
    let storage = ServiceProcess::start(
        "storage",
        &[
            "--etcd-endpoints".into(),
            etcd.endpoint(),
            "--compaction-interval".into(),
            "60s".into(),
        ],
        &[],
    )
    .await;
    let registry = ServiceProcess::start(
        "registry",
        &[
            "--storage-addr".into(),
            storage.url(),
            "--event-ttl".into(),
            "30s".into(),
        ],
        &[],
    )
    .await;
    // A first few seconds of the same load, then quiet: every cache, connection pool and
    // lease the load uses exists from here on, so "before" and "after" compare like with like.
    let url = registry.url();
    let primed = Load::start(&url).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    primed.stop().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_before = (gauges(&storage).await, gauges(&registry).await);
    let mut lines = vec![
        "| time | phase | storage RSS MiB | storage fds | storage tasks | storage cache window (events) | registry RSS MiB | registry fds | registry tasks |".to_string(),
        "|---|---|---|---|---|---|---|---|---|".to_string(),
        row(Duration::ZERO, "idle, before", idle_before.0, idle_before.1),
    ];
    println!("{}\n{}\n{}", lines[0], lines[1], lines[2]);

    let load = Load::start(&url).await;
    let counts = load.counts.clone();
    let start = Instant::now();
    let total = Duration::from_secs(secs);
    let every = (total / 20).clamp(Duration::from_secs(5), Duration::from_secs(30));
    let warm_at = (total / 10).max(Duration::from_secs(5));
    let mut warm = None;
    let mut last = idle_before;
    while start.elapsed() < total {
        tokio::time::sleep(every.min(total.saturating_sub(start.elapsed()))).await;
        last = (gauges(&storage).await, gauges(&registry).await);
        let label = if warm.is_none() && start.elapsed() >= warm_at {
            warm = Some(last);
            "load (warm)"
        } else {
            "load"
        };
        let line = row(start.elapsed(), label, last.0, last.1);
        println!("{line}");
        lines.push(line);
    }
    let end = last;
    load.stop().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_after = (gauges(&storage).await, gauges(&registry).await);
    let line = row(start.elapsed(), "idle, after", idle_after.0, idle_after.1);
    println!("{line}");
    lines.push(line);

    let warm = warm.unwrap_or(end);
    let mut failures = Vec::new();
    for (name, before, warm, end, after) in [
        ("storage-svc", idle_before.0, warm.0, end.0, idle_after.0),
        ("registry-svc", idle_before.1, warm.1, end.1, idle_after.1),
    ] {
        if end.rss_mib > warm.rss_mib * 1.2 + 8.0 {
            failures.push(format!(
                "{name}: RSS grew from {:.1} MiB (warm) to {:.1} MiB",
                warm.rss_mib, end.rss_mib
            ));
        }
        if grew(before.fds, after.fds) {
            failures.push(format!(
                "{name}: {} fds before the load, {} after",
                before.fds, after.fds
            ));
        }
        if grew(before.tasks, after.tasks) {
            failures.push(format!(
                "{name}: {} tasks before the load, {} after",
                before.tasks, after.tasks
            ));
        }
    }
    let ops = counts.ops.load(Ordering::Relaxed);
    let unexpected = counts.unexpected.load(Ordering::Relaxed);
    if unexpected > 0 {
        failures.push(format!("{unexpected} unexpected errors"));
    }
    let summary = format!(
        "{secs} s: {ops} calls ({:.0}/s), {unexpected} unexpected errors, {} watch events over {} watch opens; {}",
        ops as f64 / start.elapsed().as_secs_f64().max(1.0),
        counts.watch_events.load(Ordering::Relaxed),
        counts.watch_reopens.load(Ordering::Relaxed),
        if failures.is_empty() {
            "RSS flat, fds and tasks back to idle".to_string()
        } else {
            failures.join("; ")
        }
    );
    println!("{summary}");
    let report = format!(
        "# Soak\n\n`kubestore-bench --soak {secs}` (see `bench/src/soak.rs` for the load).\n\n{}\n\n{summary}\n",
        lines.join("\n")
    );
    if let Some(dir) = out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(out, report).map_err(|e| format!("writing {}: {e}", out.display()))?;
    println!("wrote {}", out.display());
    drop(registry);
    drop(storage);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
