//! The garbage collector (upstream's `pkg/controller/garbagecollector`), over registry-svc's
//! public API only.
//!
//! - One informer ("monitor") per kind registry-svc's discovery lists (Events excepted, as
//!   upstream's `DefaultIgnoredResources`), built in or custom: no list of kinds here. Discovery
//!   is asked again whenever a definition changes (a definitions informer, so a new kind is
//!   collected at once, where upstream polls discovery every 30 s), and every
//!   [`REDISCOVERY_PERIOD`] in case a change raced with a replica that had not seen it yet.
//! - [`graph`]: the owner graph they fill, by UID; [`queue`]: the two work queues it feeds
//!   (attemptToDelete, attemptToOrphan); [`worker`]: what is done with a queued object, always
//!   on live reads; [`absent`]: the owners those reads found absent, by coordinates and the
//!   namespace looked in.
//! - Workers start once every monitor has listed (or after [`INITIAL_SYNC_TIMEOUT`], as
//!   upstream), [`GcConfig::workers`] per queue, so thousands of dependents are deleted at a
//!   bounded rate; a refusal carrying RetryInfo (registry-svc's RESOURCE_EXHAUSTED) is retried
//!   after the delay it asks for.

pub mod absent;
pub mod graph;
pub mod queue;
mod worker;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, RwLock},
    time::Duration,
};

use kubestore_proto::{
    apiextensions::v1::{
        CustomResourceDefinition, ListCustomResourceDefinitionsRequest,
        WatchCustomResourceDefinitionsRequest,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    meta::v1::{ListMeta, ListOptions, ObjectMeta, OwnerReference},
};
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;
use tonic::Status;

use crate::{
    Ch, backoff,
    client::{Kind, KindClient, discover, group_of},
    events::Recorder,
    informer::{self, Delta, Events, Source},
    metrics::ControllerMetrics,
};
use absent::{AbsentOwners, OwnerKey};
use graph::{Graph, Work};
use queue::Queue;

/// How often discovery is asked again without a definition changing.
pub const REDISCOVERY_PERIOD: Duration = Duration::from_secs(30);

/// Resources the collector never watches (upstream's `DefaultIgnoredResources`).
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

/// Whether the collector follows `kind`: listable, watchable, deletable, not ignored.
fn collected(kind: &Kind) -> bool {
    kind.can("list")
        && kind.can("watch")
        && kind.can("delete")
        && !IGNORED.contains(&(kind.group(), kind.resource.as_str()))
}

/// Longest wait for every monitor's first list before the workers start anyway.
pub const INITIAL_SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the collector.
#[derive(Clone, Debug)]
pub struct GcConfig {
    /// Workers per queue (upstream's `--concurrent-gc-syncs`, 20).
    pub workers: usize,
    /// Requests a second the workers may send, and at once (kube-controller-manager's
    /// `--kube-api-qps` / `--kube-api-burst`); 0: no limit.
    pub qps: f64,
    /// See `qps`.
    pub burst: u32,
}

/// Default `--kube-api-qps`. Upstream's is 20 (for an apiserver shared by every controller of a
/// cluster); ours is what keeps an unrelated client's Get p99 within 2x of idle while a cascade
/// runs on the 2 cores the services share (BENCHMARKS.md, "Garbage collector").
pub const DEFAULT_QPS: f64 = 500.0;
/// Default `--kube-api-burst`.
pub const DEFAULT_BURST: u32 = 1000;

impl Default for GcConfig {
    fn default() -> Self {
        Self {
            workers: 20,
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
        }
    }
}

/// Served kinds by (group, kind): how owner references are mapped to their kind.
type KindTable = HashMap<(String, String), Arc<Kind>>;

/// The collector's shared state (cheap to clone).
#[derive(Clone)]
pub struct Collector {
    ch: Ch,
    graph: Arc<Mutex<Graph>>,
    /// Served kinds by (group, kind).
    kinds: Arc<RwLock<KindTable>>,
    delete_queue: Queue,
    orphan_queue: Queue,
    /// Owners confirmed absent, by coordinates and the namespace looked in ([`absent`]).
    absent: Arc<Mutex<AbsentOwners>>,
    events: Recorder,
    /// (owner namespace, owner UID, reason) of events already recorded: one per owner and
    /// reason. The namespace is part of the key so that a reference from another namespace
    /// (naming the owner's UID) cannot use up the owner's event.
    recorded: Arc<Mutex<HashSet<(String, String, String)>>>,
    metrics: ControllerMetrics,
    /// Shared by every worker's requests (`GcConfig::qps`).
    limiter: crate::ratelimit::RateLimiter,
}

impl Collector {
    /// The client of `kind` for a worker's requests (rate limited).
    fn client(&self, kind: Arc<Kind>) -> KindClient {
        KindClient::new(self.ch.clone(), kind).limited(self.limiter.clone())
    }

    fn graph(&self) -> MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn kind_of(&self, api_version: &str, kind: &str) -> Option<Arc<Kind>> {
        self.kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(group_of(api_version).to_string(), kind.to_string()))
            .cloned()
    }

    fn is_absent(&self, key: &OwnerKey) -> bool {
        self.absent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .has(key)
    }

    fn mark_absent(&self, key: OwnerKey) {
        self.absent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(key);
    }

    /// Records an event about `owner` once per owner and reason.
    fn event_once(&self, owner: &OwnerReference, namespace: &str, reason: &str, message: String) {
        let namespaced = self
            .kind_of(&owner.api_version, &owner.kind)
            .is_none_or(|k| k.namespaced);
        {
            let mut seen = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
            if seen.len() > 10_000 {
                seen.clear();
            }
            let ns = if namespaced { namespace } else { "" };
            if !seen.insert((ns.to_string(), owner.uid.clone(), reason.to_string())) {
                return;
            }
        }
        self.events.record(
            kubestore_proto::core::v1::ObjectReference {
                kind: owner.kind.clone(),
                namespace: if namespaced {
                    namespace.to_string()
                } else {
                    String::new()
                },
                name: owner.name.clone(),
                uid: owner.uid.clone(),
                api_version: owner.api_version.clone(),
                ..Default::default()
            },
            "Normal",
            reason,
            message,
        );
    }

    fn schedule(&self, work: Work) {
        for uid in work.delete {
            self.delete_queue.add(uid);
        }
        for uid in work.orphan {
            self.orphan_queue.add(uid);
        }
        for (dependent, r) in work.invalid_namespace {
            let node = self.graph().node(&dependent).cloned();
            if let Some(n) = node {
                // Upstream's event and words (graph_builder.go, reportInvalidNamespaceOwnerRef).
                self.events.record(
                    crate::events::reference(&n.kind, &n.meta),
                    "Warning",
                    "OwnerRefInvalidNamespace",
                    format!(
                        "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
                        r.api_version, r.kind, n.meta.namespace, r.name, r.uid, n.meta.namespace
                    ),
                );
            }
        }
    }
}

/// The definitions, as an informer's source.
struct Definitions(Ch);

impl Source for Definitions {
    type Item = CustomResourceDefinition;
    fn resource_version(item: &CustomResourceDefinition) -> String {
        item.metadata
            .as_ref()
            .map(|m| m.resource_version.clone())
            .unwrap_or_default()
    }
    async fn list(
        &self,
        options: ListOptions,
    ) -> Result<(Vec<CustomResourceDefinition>, ListMeta), Status> {
        let mut r = tonic::Request::new(ListCustomResourceDefinitionsRequest {
            options: Some(options),
        });
        r.set_timeout(crate::client::CALL_TIMEOUT);
        let list = CustomResourceDefinitionsClient::new(self.0.clone())
            .list(r)
            .await?
            .into_inner();
        Ok((list.items, list.metadata.unwrap_or_default()))
    }
    async fn watch(
        &self,
        options: ListOptions,
    ) -> Result<Events<CustomResourceDefinition>, Status> {
        let stream = CustomResourceDefinitionsClient::new(self.0.clone())
            .watch(WatchCustomResourceDefinitionsRequest {
                options: Some(options),
            })
            .await?
            .into_inner();
        Ok(Box::pin(stream.map(|e| {
            let e = e?;
            Ok((
                kubestore_proto::meta::v1::WatchEventType::try_from(e.r#type).unwrap_or_default(),
                e.object.unwrap_or_default(),
            ))
        })))
    }
}

/// A running monitor.
struct Monitor {
    kind: Arc<Kind>,
    stop: watch::Sender<bool>,
}

/// What the graph task hears.
enum Change {
    Objects(Arc<Kind>, Box<Delta<ObjectMeta>>),
    Definitions(Box<Delta<CustomResourceDefinition>>),
}

/// Runs the collector until `stop` is raised.
pub async fn run(
    ch: Ch,
    config: GcConfig,
    metrics: ControllerMetrics,
    mut stop: watch::Receiver<bool>,
) {
    let gc = Collector {
        ch: ch.clone(),
        graph: Arc::default(),
        kinds: Arc::default(),
        delete_queue: Queue::default(),
        orphan_queue: Queue::default(),
        absent: Arc::default(),
        events: Recorder::new(ch.clone(), "garbage-collector-controller"),
        recorded: Arc::default(),
        metrics: metrics.clone(),
        limiter: crate::ratelimit::RateLimiter::new(config.qps, config.burst),
    };
    let (changes, mut heard) = mpsc::channel::<Change>(1024);
    let mut monitors: HashMap<String, Monitor> = HashMap::new();
    let start_monitor = |kind: Kind, monitors: &mut HashMap<String, Monitor>| {
        let kind = Arc::new(kind);
        let key = kind.qualified();
        if monitors.get(&key).is_some_and(|m| m.kind == kind) {
            return;
        }
        if let Some(old) = monitors.remove(&key) {
            let _ = old.stop.send(true);
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let (tx, mut rx) = mpsc::channel(256);
        tokio::spawn(informer::run(
            KindClient::new(ch.clone(), kind.clone()),
            tx,
            stop_rx,
        ));
        let forward = changes.clone();
        let k = kind.clone();
        tokio::spawn(async move {
            while let Some(d) = rx.recv().await {
                if forward
                    .send(Change::Objects(k.clone(), Box::new(d)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        monitors.insert(
            key,
            Monitor {
                kind,
                stop: stop_tx,
            },
        );
    };
    // What discovery lists, once it answers (registry-svc may start after us).
    let mut backoff = Duration::from_millis(200);
    let discovered = loop {
        match discover(&ch).await {
            Ok(kinds) => break kinds,
            Err(e) => {
                tracing::info!(error = %e.message(), "garbage collector: discovery failed; retrying");
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    };
    for kind in discovered {
        gc.kinds.write().unwrap_or_else(|p| p.into_inner()).insert(
            (kind.group().to_string(), kind.kind.clone()),
            Arc::new(kind.clone()),
        );
        if collected(&kind) {
            start_monitor(kind, &mut monitors);
        }
    }
    // The definitions, followed.
    let (defs_tx, mut defs_rx) = mpsc::channel(64);
    tokio::spawn(informer::run(
        Definitions(ch.clone()),
        defs_tx,
        stop.clone(),
    ));
    let forward = changes.clone();
    tokio::spawn(async move {
        while let Some(d) = defs_rx.recv().await {
            if forward
                .send(Change::Definitions(Box::new(d)))
                .await
                .is_err()
            {
                return;
            }
        }
    });

    // Discovery again after a definition changes (again a moment later, in case the replica
    // that answered had not seen the change yet), and periodically.
    let (rediscover_tx, mut rediscover_rx) = mpsc::channel::<Vec<Kind>>(4);
    let rediscover = {
        let ch = ch.clone();
        move |delays: &'static [u64]| {
            let ch = ch.clone();
            let tx = rediscover_tx.clone();
            tokio::spawn(async move {
                for d in delays {
                    tokio::time::sleep(Duration::from_millis(*d)).await;
                    if let Ok(kinds) = discover(&ch).await
                        && tx.send(kinds).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    };
    let mut periodic = tokio::time::interval(REDISCOVERY_PERIOD);
    periodic.tick().await;

    // Workers start once every monitor listed once (definitions included).
    let mut unsynced: HashSet<String> = monitors.keys().cloned().collect();
    let mut definitions_synced = false;
    let mut workers_started = false;
    let sync_deadline = tokio::time::Instant::now() + INITIAL_SYNC_TIMEOUT;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut worker_handles = Vec::new();
    loop {
        if !workers_started
            && ((definitions_synced && unsynced.is_empty())
                || tokio::time::Instant::now() >= sync_deadline)
        {
            if !unsynced.is_empty() || !definitions_synced {
                tracing::warn!(
                    ?unsynced,
                    "garbage collector: not every kind listed in time; proceeding anyway"
                );
            }
            workers_started = true;
            for _ in 0..config.workers.max(1) {
                worker_handles.push(tokio::spawn(work(gc.clone(), false)));
                worker_handles.push(tokio::spawn(work(gc.clone(), true)));
            }
            tracing::info!(
                workers = config.workers,
                "garbage collector: workers started"
            );
        }
        let change = tokio::select! {
            _ = stop.changed() => break,
            _ = tick.tick() => {
                gc.metrics.attempt_to_delete_queue.set(gc.delete_queue.len() as i64);
                gc.metrics.attempt_to_orphan_queue.set(gc.orphan_queue.len() as i64);
                gc.metrics.graph_nodes.set(gc.graph().len() as i64);
                gc.metrics.monitors.set(monitors.len() as i64);
                continue;
            }
            _ = periodic.tick() => {
                rediscover(&[0]);
                continue;
            }
            kinds = rediscover_rx.recv() => {
                let Some(kinds) = kinds else { continue };
                let wanted: HashMap<String, Kind> = kinds
                    .iter()
                    .filter(|k| collected(k))
                    .map(|k| (k.qualified(), k.clone()))
                    .collect();
                // Stop monitors of kinds no longer served: their objects leave the graph.
                let stale: Vec<String> = monitors
                    .keys()
                    .filter(|k| !wanted.contains_key(*k))
                    .cloned()
                    .collect();
                for key in stale {
                    if let Some(m) = monitors.remove(&key) {
                        let _ = m.stop.send(true);
                        let work = gc.graph().replace(m.kind.clone(), Vec::new());
                        gc.schedule(work);
                        gc.kinds
                            .write()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&(m.kind.group().to_string(), m.kind.kind.clone()));
                    }
                }
                for kind in kinds {
                    gc.kinds.write().unwrap_or_else(|p| p.into_inner()).insert(
                        (kind.group().to_string(), kind.kind.clone()),
                        Arc::new(kind.clone()),
                    );
                }
                for (key, kind) in wanted {
                    if !monitors.get(&key).is_some_and(|m| *m.kind == kind) {
                        if !workers_started {
                            unsynced.insert(key.clone());
                        }
                        start_monitor(kind, &mut monitors);
                    }
                }
                continue;
            }
            c = heard.recv() => c,
        };
        let Some(change) = change else { break };
        match change {
            Change::Objects(kind, delta) => {
                if !monitors
                    .get(&kind.qualified())
                    .is_some_and(|m| m.kind == kind)
                {
                    // A monitor stopped meanwhile.
                    continue;
                }
                let work = {
                    let mut g = gc.graph();
                    match *delta {
                        Delta::Replace(items) => {
                            unsynced.remove(&kind.qualified());
                            g.replace(kind, items)
                        }
                        Delta::Upsert(m) => g.upsert(kind, m),
                        Delta::Delete(m) => g.delete(&m),
                    }
                };
                gc.schedule(work);
            }
            Change::Definitions(delta) => {
                if matches!(*delta, Delta::Replace(_)) {
                    definitions_synced = true;
                }
                rediscover(&[0, 300, 2000]);
            }
        }
    }
    gc.delete_queue.close();
    gc.orphan_queue.close();
    for m in monitors.values() {
        let _ = m.stop.send(true);
    }
    for h in worker_handles {
        h.abort();
    }
    tracing::info!("garbage collector stopped");
}

/// One worker of the delete queue (or of the orphan queue).
async fn work(gc: Collector, orphans: bool) {
    let queue = if orphans {
        gc.orphan_queue.clone()
    } else {
        gc.delete_queue.clone()
    };
    while let Some(uid) = queue.get().await {
        let result = if orphans {
            gc.attempt_to_orphan(&uid).await
        } else {
            gc.attempt_to_delete(&uid).await
        };
        match result {
            Ok(()) => queue.forget(&uid),
            Err(s) => {
                gc.metrics.errors.inc();
                tracing::debug!(%uid, error = %s.message(), code = ?s.code(), "garbage collector: retrying later");
                match backoff::hint(&s) {
                    Some(delay) => queue.add_after(uid.clone(), delay),
                    None => queue.add_rate_limited(uid.clone()),
                }
            }
        }
        queue.done(&uid);
    }
}
