//! The watch cache (upstream's `pkg/storage/cacher`): per resource prefix (`/pods/`,
//! `/configmaps/`, ...), the current objects and a bounded window of recent events, kept by
//! one etcd watch, serving consistent reads, watches and update suggestions from memory.
//!
//! - [`cacher`]: one resource: a consistent list, then one etcd watch; relists when history is
//!   gone; dispatches events to the watches it serves.
//! - [`serve`]: Get, List and Watch answered from a cacher.
//! - here: the cachers by resource (made on first use), and freshness.
//!
//! **Freshness** (KEP-2340's consistent reads from cache): a read that must be consistent first
//! learns etcd's current revision T with a linearizable read, then waits until the cache has
//! applied every event up to T. Revision reads are batched: a read joins the next query that
//! starts after it arrived, so concurrent reads share one etcd request instead of one each.
//! A cache whose prefix saw no change since (T was reached by writes elsewhere) is moved up to
//! T by a *fence*: a put of a reserved key inside the prefix (`keys::FENCE`), whose event
//! arrives on the cacher's own watch after every earlier event of the prefix. Upstream asks etcd
//! for a progress notification instead; etcd before 3.4.25 / 3.5.8 (Debian ships 3.4.23) may
//! send it ahead of events of its revision (etcd-io/etcd#15220), which would make a read stale.
//! A cache that does not catch up within a bound, or is not ready, hands the read to etcd.

pub mod cacher;
pub mod serve;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_telemetry::{Deadline, Metrics};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
};
use tokio::sync::watch;

use crate::{
    error::StorageError,
    etcd::{Etcd, EtcdCall},
    keys::{KeyPrefix, resource_of},
};

pub use cacher::Cacher;

/// Most resources cached at once. Each cacher holds its resource's objects and an etcd watch;
/// resources are few in practice (the registry has a handful), so a caller that writes under
/// thousands of made-up first segments must not be able to make storage cache them all.
pub const MAX_CACHERS: usize = 64;

/// Settings of the watch cache.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Events kept per resource for watches to resume from (`--watch-cache-size`).
    pub window: usize,
    /// Longest a consistent read waits for the cache before it goes to etcd.
    pub fresh_timeout: Duration,
    /// Timeout of the cache's own etcd requests (lists, fences).
    pub request_timeout: Duration,
    /// How often idle watches with bookmarks get one.
    pub bookmark_interval: Duration,
}

/// Labels of per-resource cache metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    /// The resource, e.g. `pods`.
    pub resource: String,
}

/// The watch cache's metrics.
#[derive(Clone)]
pub struct CacheMetrics {
    /// `storage_watch_cache_revision{resource}`: the revision the cache has applied.
    pub revision: Family<ResourceLabels, Gauge>,
    /// `storage_watch_cache_lag{resource}`: etcd's revision (as last seen) less the cache's.
    pub lag: Family<ResourceLabels, Gauge>,
    /// `storage_watch_cache_reads_total{resource}`: reads served from the cache.
    pub hits: Family<ResourceLabels, Counter>,
    /// `storage_watch_cache_fallbacks_total{resource}`: reads handed to etcd (cache not ready
    /// or not fresh in time).
    pub fallbacks: Family<ResourceLabels, Counter>,
    /// `storage_watch_cache_window_events{resource}`: events kept for resuming watches.
    pub window: Family<ResourceLabels, Gauge>,
    /// `storage_watch_cache_watchers{resource}`: watches served from the cache.
    pub watchers: Family<ResourceLabels, Gauge>,
    /// `storage_watch_cache_fences_total`: fence writes made to prove freshness.
    pub fences: Counter,
    /// `storage_watch_cache_relists_total{resource}`: consistent lists (start, and after the
    /// etcd watch lost its history).
    pub relists: Family<ResourceLabels, Counter>,
}

impl CacheMetrics {
    /// Creates the metrics and registers them in `metrics`.
    pub fn register(metrics: &Metrics) -> Self {
        let me = Self {
            revision: Family::default(),
            lag: Family::default(),
            hits: Family::default(),
            fallbacks: Family::default(),
            window: Family::default(),
            watchers: Family::default(),
            fences: Counter::default(),
            relists: Family::default(),
        };
        metrics.register(
            "storage_watch_cache_revision",
            "The etcd revision the watch cache has applied, by resource",
            me.revision.clone(),
        );
        metrics.register(
            "storage_watch_cache_lag",
            "etcd's revision (as last seen by a consistent read) less the cache's, by resource",
            me.lag.clone(),
        );
        metrics.register(
            "storage_watch_cache_reads",
            "Reads (Get, List, Watch starts) served from the watch cache, by resource",
            me.hits.clone(),
        );
        metrics.register(
            "storage_watch_cache_fallbacks",
            "Reads handed to etcd because the cache was not ready or not fresh in time",
            me.fallbacks.clone(),
        );
        metrics.register(
            "storage_watch_cache_window_events",
            "Events kept in the watch cache's window, by resource",
            me.window.clone(),
        );
        metrics.register(
            "storage_watch_cache_watchers",
            "Watches served from the watch cache, by resource",
            me.watchers.clone(),
        );
        metrics.register(
            "storage_watch_cache_fences",
            "Fence writes made to bring a watch cache up to etcd's revision",
            me.fences.clone(),
        );
        metrics.register(
            "storage_watch_cache_relists",
            "Consistent lists made by the watch cache, by resource",
            me.relists.clone(),
        );
        me
    }
}

/// The watch cache of one storage-svc.
pub struct WatchCache {
    pub(crate) etcd: Etcd,
    pub(crate) prefix: KeyPrefix,
    pub(crate) config: CacheConfig,
    pub(crate) metrics: CacheMetrics,
    pub(crate) stop: watch::Receiver<bool>,
    cachers: Mutex<HashMap<String, Arc<Cacher>>>,
    full_warned: std::sync::atomic::AtomicBool,
    revisions: Arc<Batcher>,
}

impl WatchCache {
    /// A cache over `etcd` for keys under `prefix`.
    pub fn new(
        etcd: Etcd,
        prefix: KeyPrefix,
        config: CacheConfig,
        metrics: CacheMetrics,
        stop: watch::Receiver<bool>,
    ) -> Arc<Self> {
        Arc::new(Self {
            revisions: Arc::new(Batcher::new(etcd.clone(), prefix.clone())),
            etcd,
            prefix,
            config,
            metrics,
            stop,
            cachers: Mutex::default(),
            full_warned: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The cacher of the resource whose objects `etcd_key` names or lists (`<prefix><resource>/`
    /// and below), started on first use. `None` for anything else: a single-segment key (an
    /// object *named* like a resource, e.g. `/pods`, lies outside `/registry/pods/`), or a new
    /// resource once [`MAX_CACHERS`] are running (its reads go to etcd).
    pub fn cacher(self: &Arc<Self>, key: &str, etcd_key: &str) -> Option<Arc<Cacher>> {
        let resource = resource_of(key)?;
        let inside = etcd_key
            .strip_prefix(self.prefix.as_str())
            .and_then(|rest| rest.strip_prefix(resource))
            .is_some_and(|rest| rest.starts_with('/'));
        if !inside {
            return None;
        }
        let mut cachers = self.cachers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cachers.get(resource) {
            return Some(c.clone());
        }
        if cachers.len() >= MAX_CACHERS {
            if !self
                .full_warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(
                    resource,
                    "watch cache: {MAX_CACHERS} resources are cached already; further ones are read from etcd"
                );
            }
            return None;
        }
        let c = Cacher::start(self.clone(), resource);
        cachers.insert(resource.to_string(), c.clone());
        Some(c)
    }

    /// The cacher of `etcd_key`'s resource if it is ready to serve (see [`Self::cacher`]).
    pub fn ready(self: &Arc<Self>, key: &str, etcd_key: &str) -> Option<Arc<Cacher>> {
        self.cacher(key, etcd_key).filter(|c| c.is_ready())
    }

    /// etcd's current revision, by a linearizable read that started after this call (shared
    /// with concurrent callers).
    pub async fn current_revision(
        &self,
        key: &str,
        deadline: Deadline,
    ) -> Result<i64, StorageError> {
        self.revisions.clone().current(key, deadline).await
    }
}

/// One batched revision query: callers wait for its result.
struct Round {
    result: watch::Sender<Option<Result<i64, String>>>,
}

#[derive(Default)]
struct BatchState {
    running: bool,
    pending: Option<Arc<Round>>,
}

/// Linearizable revision reads shared by concurrent callers (the ReadIndex batching of
/// consensus systems): at most one query runs and one waits; a caller joins the waiting one,
/// which starts after the caller arrived, so its answer is as fresh as a query of its own.
struct Batcher {
    etcd: Etcd,
    probe: String,
    state: Mutex<BatchState>,
}

impl Batcher {
    fn new(etcd: Etcd, prefix: KeyPrefix) -> Self {
        Self {
            etcd,
            probe: format!("{}health", prefix.as_str()),
            state: Mutex::default(),
        }
    }

    async fn current(self: Arc<Self>, key: &str, deadline: Deadline) -> Result<i64, StorageError> {
        let mut rx = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let round = match &state.pending {
                Some(r) => r.clone(),
                None => {
                    let (tx, _) = watch::channel(None);
                    let r = Arc::new(Round { result: tx });
                    state.pending = Some(r.clone());
                    r
                }
            };
            let rx = round.result.subscribe();
            if !state.running {
                self.start_next(&mut state);
            }
            rx
        };
        let waited =
            tokio::time::timeout_at(deadline.instant(), rx.wait_for(Option::is_some)).await;
        let result = match waited {
            Ok(Ok(r)) => r.clone(),
            Ok(Err(_)) => Some(Err("the revision query was dropped".into())),
            Err(_) => None,
        };
        match result {
            Some(Ok(rev)) => Ok(rev),
            Some(Err(message)) => Err(StorageError::Unavailable {
                key: key.to_string(),
                message,
            }),
            None => Err(StorageError::Timeout {
                key: key.to_string(),
                message: "etcd's current revision was not known before the deadline".into(),
            }),
        }
    }

    /// Starts the pending round, if any (the state lock is held).
    fn start_next(self: &Arc<Self>, state: &mut BatchState) {
        let Some(round) = state.pending.take() else {
            state.running = false;
            return;
        };
        state.running = true;
        let me = self.clone();
        tokio::spawn(async move {
            let call = EtcdCall {
                key: &me.probe,
                deadline: Deadline::after(Duration::from_secs(5)),
            };
            let result = me
                .etcd
                .current_revision(&call, &me.probe)
                .await
                .map_err(|e| e.to_string());
            round.result.send_replace(Some(result));
            let mut state = me.state.lock().unwrap_or_else(|p| p.into_inner());
            me.start_next(&mut state);
        });
    }
}
