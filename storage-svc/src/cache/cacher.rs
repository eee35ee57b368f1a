//! One resource's cache: the current objects (as stored, and as returned) and a window of the
//! most recent changes, kept by a reflector task: a consistent list of the resource's prefix,
//! then one etcd watch from the list's revision.
//!
//! - The watch breaks (etcd restarts, the connection drops): the reflector watches again from
//!   the last revision it applied, so nothing is lost or repeated; meanwhile the cache is not
//!   ready and reads go to etcd.
//! - etcd's history for that revision is gone (compacted): the reflector lists again, and the
//!   watches it serves end with UNAVAILABLE (they resume, or relist on Expired).
//! - Every change is applied and handed to the watches whose keys it touches under one lock,
//!   then the new revision is published: whoever sees revision R has every change up to R.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use etcd_client::EventType;
use kubestore_telemetry::Deadline;
use tokio::sync::{mpsc, watch};

use crate::{
    cache::{ResourceLabels, WatchCache},
    error::StorageError,
    etcd::{EtcdCall, WatchFailure},
    keys::{FENCE, prefix_end},
    object::with_resource_version,
    request::{EndSlot, stopped},
};

/// Batches (etcd watch responses) buffered per watch between the cacher and the watch's task;
/// a watch that lets them pile up is cut off.
pub const SUBSCRIBER_BATCHES: usize = 1024;
/// Changes buffered per watch: batches can be large (a DeleteCollection's many deletions
/// arrive in few responses), so the batch bound alone does not bound memory.
pub const SUBSCRIBER_CHANGES: usize = 10_000;
/// How long the cache may fail to resume its etcd watch before the watches it serves end with
/// UNAVAILABLE (they would otherwise see nothing but bookmarks at an old revision meanwhile).
pub const RESUME_BUDGET: Duration = Duration::from_secs(10);
/// Page size of the cache's consistent list.
const LIST_PAGE: i64 = 10_000;

/// One object as the cache holds it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object as returned when it parses (selectors read it), else the stored bytes as
    /// they are.
    pub value: Bytes,
    /// The object as callers receive it; `None` when the stored bytes are corrupt.
    returned: Option<Bytes>,
    /// Its etcd mod revision.
    pub mod_rev: i64,
}

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The key was created.
    Created,
    /// The key was written again.
    Updated,
    /// The key was deleted.
    Deleted,
}

/// One change, with the states a watch needs to decide its event.
#[derive(Debug, Clone)]
pub struct Change {
    /// etcd key.
    pub key: Vec<u8>,
    /// Revision of the change.
    pub rev: i64,
    /// What happened.
    pub kind: ChangeKind,
    /// The new state: stored form and as returned (not for a deletion).
    pub new: Option<Entry>,
    /// The previous state (not for a creation).
    pub old: Option<Entry>,
}

/// The changes of one etcd watch response (whole revisions).
#[derive(Debug)]
pub struct Batch {
    /// The highest revision in the batch.
    pub rev: i64,
    /// The changes, in revision order.
    pub changes: Vec<Change>,
}

/// A watch served by the cacher.
struct Subscriber {
    /// First key of the watched range.
    start: Vec<u8>,
    /// End of the range (exclusive); `None` for one key.
    end: Option<Vec<u8>>,
    tx: mpsc::Sender<Arc<Batch>>,
    /// Changes sent and not yet received.
    pending: Arc<AtomicUsize>,
    /// Where a cut-off or relist is reported.
    end_slot: EndSlot,
}

/// The changes the cacher hands one watch.
pub struct Feed {
    rx: mpsc::Receiver<Arc<Batch>>,
    pending: Arc<AtomicUsize>,
}

impl Feed {
    /// The next batch; `None` once the cacher stopped feeding this watch.
    pub async fn recv(&mut self) -> Option<Arc<Batch>> {
        let b = self.rx.recv().await?;
        self.pending.fetch_sub(b.changes.len(), Ordering::Relaxed);
        Some(b)
    }

    /// The next batch if one is buffered.
    pub fn try_recv(&mut self) -> Result<Arc<Batch>, mpsc::error::TryRecvError> {
        let b = self.rx.try_recv()?;
        self.pending.fetch_sub(b.changes.len(), Ordering::Relaxed);
        Ok(b)
    }
}

impl Subscriber {
    fn covers(&self, key: &[u8]) -> bool {
        match &self.end {
            None => key == self.start.as_slice(),
            Some(end) => key >= self.start.as_slice() && key < end.as_slice(),
        }
    }
}

/// The cached state.
#[derive(Default)]
pub struct State {
    /// Current objects by etcd key.
    pub objects: BTreeMap<Vec<u8>, Entry>,
    /// Every change up to this revision is applied.
    pub rev: i64,
    /// A watch may resume from any revision >= this one: every later change is in `window`.
    pub oldest: i64,
    /// Whether changes after the last (re)list were dropped from the window for room. Until
    /// then `oldest` is only where this cache started, not where history ends: etcd may still
    /// have older revisions (`serve::watch` asks it).
    pub trimmed: bool,
    /// The most recent changes.
    pub window: VecDeque<Arc<Batch>>,
    window_changes: usize,
    /// Revision of the last change applied (or of the list).
    pub last_change: i64,
    subscribers: Vec<Subscriber>,
}

impl State {
    /// The changes after `rev` still in the window, for a watch resuming from `rev`; `None`
    /// when some were dropped (the watch is too old).
    pub fn since(&self, rev: i64) -> Option<Vec<Arc<Batch>>> {
        if rev < self.oldest {
            return None;
        }
        Some(
            self.window
                .iter()
                .filter(|b| b.rev > rev)
                .cloned()
                .collect(),
        )
    }
}

/// One resource's cache; see the module docs.
pub struct Cacher {
    /// The resource, e.g. `pods`.
    pub resource: String,
    /// The etcd prefix of its keys, e.g. `/registry/pods/`.
    pub etcd_prefix: String,
    cache: std::sync::Weak<WatchCache>,
    state: RwLock<State>,
    rev: watch::Sender<i64>,
    ready: AtomicBool,
    /// The revision of the last fence written.
    fence: tokio::sync::Mutex<i64>,
    fence_key: Vec<u8>,
    labels: ResourceLabels,
    watches: AtomicU64,
}

impl Cacher {
    /// Creates the cacher of `resource` and starts its reflector.
    pub fn start(cache: Arc<WatchCache>, resource: &str) -> Arc<Self> {
        let etcd_prefix = format!("{}{resource}/", cache.prefix.as_str());
        let me = Arc::new(Self {
            resource: resource.to_string(),
            fence_key: format!("{etcd_prefix}{FENCE}").into_bytes(),
            etcd_prefix,
            cache: Arc::downgrade(&cache),
            state: RwLock::default(),
            rev: watch::channel(0).0,
            ready: AtomicBool::new(false),
            fence: tokio::sync::Mutex::new(0),
            labels: ResourceLabels {
                resource: resource.to_string(),
            },
            watches: AtomicU64::new(0),
        });
        tokio::spawn(me.clone().reflect());
        me
    }

    /// Whether the cache follows etcd and may serve.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The revision the cache has applied.
    pub fn rev(&self) -> i64 {
        *self.rev.borrow()
    }

    /// A receiver of the applied revision.
    pub fn revisions(&self) -> watch::Receiver<i64> {
        self.rev.subscribe()
    }

    /// Reads the state.
    pub fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        f(&state)
    }

    /// Waits until the cache has applied `rev`, at most until `until`; whether it did.
    pub async fn wait_rev(&self, rev: i64, until: tokio::time::Instant) -> bool {
        let mut rx = self.rev.subscribe();
        matches!(
            tokio::time::timeout_at(until, rx.wait_for(|r| *r >= rev)).await,
            Ok(Ok(_))
        )
    }

    /// Registers a watch of `[start, end)` (or the one key `start`) from the current state:
    /// `f` gets the state (for initial events or the window) under the lock the registration
    /// holds, so no change falls between what `f` saw and what the watch receives.
    pub fn subscribe<T>(
        &self,
        start: Vec<u8>,
        end: Option<Vec<u8>>,
        end_slot: EndSlot,
        f: impl FnOnce(&State) -> T,
    ) -> (T, Feed) {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BATCHES);
        let pending = Arc::new(AtomicUsize::new(0));
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let out = f(&state);
        state.subscribers.retain(|s| !s.tx.is_closed());
        state.subscribers.push(Subscriber {
            start,
            end,
            tx,
            pending: pending.clone(),
            end_slot,
        });
        let served = state.subscribers.len() as i64;
        drop(state);
        if let Some(c) = self.cache() {
            c.metrics.watchers.get_or_create(&self.labels).set(served);
        }
        self.watches.fetch_add(1, Ordering::Relaxed);
        (out, Feed { rx, pending })
    }

    /// How often watches with bookmarks get one.
    pub fn bookmark_interval(&self) -> Duration {
        self.cache()
            .map_or(Duration::from_secs(10), |c| c.config.bookmark_interval)
    }

    /// The number of watches this cacher has served (for metrics and tests).
    pub fn watches_started(&self) -> u64 {
        self.watches.load(Ordering::Relaxed)
    }

    fn cache(&self) -> Option<Arc<WatchCache>> {
        self.cache.upgrade()
    }

    /// Makes sure the cache gets past revision `t`: unless a fence at or after `t` was already
    /// written (or the cache is there), puts the fence key, whose event follows every earlier
    /// change of the prefix on the cacher's watch.
    pub async fn fence(&self, t: i64, deadline: Deadline) -> Result<(), StorageError> {
        let Some(cache) = self.cache() else {
            return Ok(());
        };
        // Concurrent readers share one fence; waiting for another's is bounded like the rest.
        let Ok(mut last) = tokio::time::timeout_at(deadline.instant(), self.fence.lock()).await
        else {
            return Err(StorageError::Timeout {
                key: self.resource.clone(),
                message: "the watch cache's fence did not finish before the deadline".into(),
            });
        };
        if *last >= t || self.rev() >= t {
            return Ok(());
        }
        let key = String::from_utf8_lossy(&self.fence_key).into_owned();
        let call = EtcdCall {
            key: &key,
            deadline,
        };
        let txn = etcd_client::Txn::new().and_then([etcd_client::TxnOp::put(
            self.fence_key.clone(),
            Vec::new(),
            None,
        )]);
        let resp = cache.etcd.txn(&call, None, txn).await?;
        *last = resp.header().map_or(t, |h| h.revision());
        cache.metrics.fences.inc();
        Ok(())
    }

    /// The reflector: list, follow, resume or relist, until shutdown.
    async fn reflect(self: Arc<Self>) {
        let Some(cache) = self.cache() else { return };
        let mut stop = cache.stop.clone();
        let interval = cache.config.bookmark_interval;
        drop(cache);
        let mut backoff = Duration::from_millis(100);
        loop {
            if *stop.borrow() {
                return;
            }
            if let Err(e) = self.relist().await {
                tracing::warn!(resource = %self.resource, error = %e, "watch cache: list failed; retrying");
                // A watch that subscribed while the cache was breaking (it checked readiness
                // just before) would otherwise wait here with nothing but bookmarks: it ends
                // with the list's error (INTERNAL for a value that cannot be read).
                self.end_watches(|| e.clone());
                tokio::select! {
                    () = stopped(&mut stop) => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
            backoff = Duration::from_millis(100);
            // Since when, and at which applied revision, the cache has failed to follow etcd
            // (reset whenever it applies anything: a watch that breaks now and then but makes
            // progress is fine).
            let mut broken_since: Option<(tokio::time::Instant, i64)> = None;
            loop {
                match self.follow(&mut stop, interval).await {
                    Follow::Stopped => return,
                    Follow::Compacted => {
                        tracing::warn!(resource = %self.resource, "watch cache: history compacted away; listing again");
                        break;
                    }
                    Follow::Unreadable(e) => {
                        // Resuming would meet the same value again, forever, while the watches
                        // served got nothing but bookmarks: they end with the value's error
                        // (what etcd's path gives), and the cache lists again from now.
                        self.ready.store(false, Ordering::Release);
                        tracing::error!(resource = %self.resource, error = %e, "watch cache: a value in etcd's history cannot be read; ending the watches served and listing again");
                        self.end_watches(|| e.clone());
                        break;
                    }
                    Follow::Broken(e) => {
                        self.ready.store(false, Ordering::Release);
                        let rev = self.rev();
                        let since = match broken_since {
                            Some((since, at)) if at == rev => since,
                            _ => broken_since.insert((tokio::time::Instant::now(), rev)).0,
                        };
                        if since.elapsed() >= RESUME_BUDGET {
                            // Upstream ends every watcher when the cacher's watch ends
                            // (`terminateAllWatchers`). We resume instead, so watches go
                            // through a short etcd restart; but not for longer than this.
                            self.end_watches(|| StorageError::Unavailable {
                                key: self.resource.clone(),
                                message: format!(
                                    "the watch cache has not followed etcd for {RESUME_BUDGET:?} ({e}): watch again from the last resourceVersion received"
                                ),
                            });
                        }
                        tracing::warn!(resource = %self.resource, error = %e, "watch cache: etcd watch broke; resuming");
                        tokio::select! {
                            () = stopped(&mut stop) => return,
                            () = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
        }
    }

    /// A consistent list of the prefix, replacing the state; ends the watches served so far.
    async fn relist(&self) -> Result<(), StorageError> {
        let Some(cache) = self.cache() else {
            return Ok(());
        };
        self.ready.store(false, Ordering::Release);
        let end = prefix_end(self.etcd_prefix.as_bytes());
        let mut start = self.etcd_prefix.as_bytes().to_vec();
        let mut rev = 0;
        let mut objects = BTreeMap::new();
        loop {
            let call = EtcdCall {
                key: &self.etcd_prefix,
                deadline: Deadline::after(cache.config.request_timeout),
            };
            let page = cache
                .etcd
                .range_page(&call, &start, &end, LIST_PAGE, rev)
                .await?;
            if rev == 0 {
                rev = page.revision;
            }
            for kv in &page.kvs {
                if kv.key() == self.fence_key.as_slice() {
                    continue;
                }
                objects.insert(kv.key().to_vec(), Entry::new(kv.value(), kv.mod_revision()));
            }
            match (page.more, page.kvs.last()) {
                (true, Some(last)) => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => break,
            }
        }
        let ended = {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            state.objects = objects;
            state.rev = rev;
            state.oldest = rev;
            state.trimmed = false;
            state.last_change = rev;
            state.window.clear();
            state.window_changes = 0;
            std::mem::take(&mut state.subscribers)
        };
        end_all(ended, || {
            StorageError::Unavailable {
            key: self.resource.clone(),
            message: "the watch cache listed again (etcd's history was compacted): watch again from the last resourceVersion received".into(),
        }
        });
        self.rev.send_replace(rev);
        cache.metrics.relists.get_or_create(&self.labels).inc();
        cache.metrics.revision.get_or_create(&self.labels).set(rev);
        cache.metrics.window.get_or_create(&self.labels).set(0);
        Ok(())
    }

    /// Ends every watch served so far with `error` (their feeds close as they are dropped).
    fn end_watches(&self, error: impl Fn() -> StorageError) {
        let ended = {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut state.subscribers)
        };
        if let Some(c) = self.cache() {
            c.metrics.watchers.get_or_create(&self.labels).set(0);
        }
        end_all(ended, error);
    }

    /// Follows etcd from the applied revision until the watch ends.
    async fn follow(
        self: &Arc<Self>,
        stop: &mut watch::Receiver<bool>,
        interval: Duration,
    ) -> Follow {
        let Some(cache) = self.cache() else {
            return Follow::Stopped;
        };
        let from = self.rev();
        let call = EtcdCall {
            key: &self.etcd_prefix,
            deadline: Deadline::after(cache.config.request_timeout),
        };
        let end = prefix_end(self.etcd_prefix.as_bytes());
        let mut stream = match cache
            .etcd
            .watch(&call, self.etcd_prefix.as_bytes(), Some(&end), from + 1)
            .await
        {
            Ok(s) => s,
            Err(e) => return Follow::Broken(e.to_string()),
        };
        let mut idle_since_tick = true;
        let mut tick = tokio::time::interval(interval);
        tick.tick().await;
        loop {
            tokio::select! {
                () = stopped(stop) => return Follow::Stopped,
                _ = tick.tick() => {
                    // Watches whose clients left are dropped here too, not only when a change
                    // of their range comes by.
                    let watched = {
                        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
                        state.subscribers.retain(|s| !s.tx.is_closed());
                        cache.metrics.watchers.get_or_create(&self.labels).set(state.subscribers.len() as i64);
                        !state.subscribers.is_empty()
                    };
                    // Idle watches with bookmarks need the revision to move: fence when
                    // nothing of the prefix changed for a whole interval and watches exist.
                    // In its own task, so the reflector keeps applying events meanwhile.
                    if idle_since_tick && watched && self.is_ready() {
                        let me = self.clone();
                        let cache = cache.clone();
                        tokio::spawn(async move {
                            let deadline = Deadline::after(cache.config.request_timeout);
                            if let Ok(t) = cache.current_revision(&me.etcd_prefix, deadline).await {
                                let _ = me.fence(t, deadline).await;
                            }
                        });
                    }
                    idle_since_tick = true;
                }
                message = stream.message() => {
                    let resp = match message {
                        Ok(Some(r)) => r,
                        Ok(None) => return Follow::Broken("etcd closed the watch".into()),
                        Err(WatchFailure::Value(e)) => return Follow::Unreadable(e),
                        Err(e) => return Follow::Broken(e.to_string()),
                    };
                    if resp.canceled() {
                        if resp.compact_revision() > 0 {
                            return Follow::Compacted;
                        }
                        return Follow::Broken(format!("etcd cancelled the watch: {}", resp.cancel_reason()));
                    }
                    if resp.created() {
                        self.ready.store(true, Ordering::Release);
                    }
                    if !resp.events().is_empty() {
                        idle_since_tick = false;
                        self.apply(&cache, resp.events());
                    }
                }
            }
        }
    }

    /// Applies one etcd watch response and hands it to the watches it concerns.
    fn apply(&self, cache: &WatchCache, events: &[etcd_client::Event]) {
        let mut changes = Vec::with_capacity(events.len());
        let mut max_rev = 0;
        let rev = {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            for ev in events {
                let Some(kv) = ev.kv() else { continue };
                let rev = kv.mod_revision();
                max_rev = max_rev.max(rev);
                if kv.key() == self.fence_key.as_slice() {
                    continue;
                }
                let key = kv.key().to_vec();
                match ev.event_type() {
                    EventType::Put => {
                        let new = Entry::new(kv.value(), rev);
                        let old = state.objects.insert(key.clone(), new.clone());
                        let kind = if old.is_none() {
                            ChangeKind::Created
                        } else {
                            ChangeKind::Updated
                        };
                        changes.push(Change {
                            key,
                            rev,
                            kind,
                            new: Some(new),
                            old,
                        });
                    }
                    EventType::Delete => {
                        if let Some(old) = state.objects.remove(&key) {
                            changes.push(Change {
                                key,
                                rev,
                                kind: ChangeKind::Deleted,
                                new: None,
                                old: Some(old),
                            });
                        }
                    }
                }
            }
            if !changes.is_empty() {
                let batch = Arc::new(Batch {
                    rev: max_rev,
                    changes,
                });
                state.window_changes += batch.changes.len();
                state.window.push_back(batch.clone());
                while state.window_changes > cache.config.window.max(1) {
                    let Some(old) = state.window.pop_front() else {
                        break;
                    };
                    state.window_changes -= old.changes.len();
                    state.oldest = old.rev;
                    state.trimmed = true;
                }
                state.last_change = max_rev;
                state.subscribers.retain(|s| {
                    if !batch.changes.iter().any(|c| s.covers(&c.key)) {
                        return !s.tx.is_closed();
                    }
                    // A watch with nothing pending always gets the batch, however large.
                    let n = batch.changes.len();
                    let pending = s.pending.load(Ordering::Relaxed);
                    let sent = if pending > 0 && pending + n > SUBSCRIBER_CHANGES {
                        Err(mpsc::error::TrySendError::Full(()))
                    } else {
                        s.pending.fetch_add(n, Ordering::Relaxed);
                        s.tx.try_send(batch.clone()).map_err(|e| {
                            s.pending.fetch_sub(n, Ordering::Relaxed);
                            match e {
                                mpsc::error::TrySendError::Full(_) => mpsc::error::TrySendError::Full(()),
                                mpsc::error::TrySendError::Closed(_) => mpsc::error::TrySendError::Closed(()),
                            }
                        })
                    };
                    match sent {
                        Ok(()) => true,
                        Err(mpsc::error::TrySendError::Closed(())) => false,
                        Err(mpsc::error::TrySendError::Full(())) => {
                            if let Ok(mut slot) = s.end_slot.lock() {
                                slot.get_or_insert(StorageError::WatcherTooSlow {
                                    key: String::from_utf8_lossy(&s.start).into_owned(),
                                    message: format!(
                                        "the watcher did not keep up: {pending} changes in {} batches waited for it; watch again from the last resourceVersion received",
                                        SUBSCRIBER_BATCHES - s.tx.capacity()
                                    ),
                                });
                            }
                            false
                        }
                    }
                });
            }
            state.rev = state.rev.max(max_rev);
            cache
                .metrics
                .window
                .get_or_create(&self.labels)
                .set(state.window_changes as i64);
            cache
                .metrics
                .watchers
                .get_or_create(&self.labels)
                .set(state.subscribers.len() as i64);
            state.rev
        };
        self.rev.send_replace(rev);
        cache.metrics.revision.get_or_create(&self.labels).set(rev);
    }

    /// Records a read served from the cache.
    pub fn hit(&self) {
        if let Some(c) = self.cache() {
            c.metrics.hits.get_or_create(&self.labels).inc();
        }
    }

    /// Records a read handed to etcd.
    pub fn fallback(&self) {
        if let Some(c) = self.cache() {
            c.metrics.fallbacks.get_or_create(&self.labels).inc();
        }
    }

    /// Records how far the cache was behind etcd's revision `t`.
    pub fn lag(&self, t: i64) {
        if let Some(c) = self.cache() {
            c.metrics
                .lag
                .get_or_create(&self.labels)
                .set((t - self.rev()).max(0));
        }
    }
}

/// How following etcd ended.
enum Follow {
    /// Shutdown.
    Stopped,
    /// The revision to resume from was compacted: list again.
    Compacted,
    /// The watch broke: resume from the applied revision.
    Broken(String),
    /// A value in etcd's history cannot be read (decrypted): resuming would meet it again.
    Unreadable(StorageError),
}

/// Ends the watches of `subscribers` with `error`. A subscriber whose watch already left (one
/// handed to etcd right after subscribing shares its end slot with the etcd watch) must not
/// have that watch ended.
fn end_all(subscribers: Vec<Subscriber>, error: impl Fn() -> StorageError) {
    for s in subscribers.into_iter().filter(|s| !s.tx.is_closed()) {
        if let Ok(mut slot) = s.end_slot.lock() {
            slot.get_or_insert_with(&error);
        }
    }
}

impl Entry {
    /// An entry from stored bytes, held once: as callers receive it (resource_version set, see
    /// `object::with_resource_version`); selectors read it as well as the stored form (they
    /// look at labels and fields, never at resource_version), and a suggestion strips it back
    /// to the stored form when it needs one. Never fails: a value that does not parse (written
    /// by someone else) is kept as it is, so the cache stays whole and in step with etcd, and
    /// whoever reads it gets the error etcd's path gives ([`Self::object`]).
    pub fn new(value: &[u8], rev: i64) -> Self {
        match with_resource_version(value, rev) {
            Ok(object) => {
                let object = Bytes::from(object);
                Self {
                    value: object.clone(),
                    returned: Some(object),
                    mod_rev: rev,
                }
            }
            Err(_) => Self {
                value: Bytes::copy_from_slice(value),
                returned: None,
                mod_rev: rev,
            },
        }
    }

    /// The object as callers receive it (resource_version = `mod_rev`); INTERNAL when the
    /// stored bytes are corrupt, as on etcd's path.
    pub fn object(&self, key: &str) -> Result<Bytes, StorageError> {
        self.returned
            .clone()
            .ok_or_else(|| StorageError::internal(key, "stored object is corrupt"))
    }

    /// The object as it was when deleted at `rev` (its last state, resource_version = `rev`),
    /// for a DELETED event.
    pub fn deleted_at(&self, key: &str, rev: i64) -> Result<Bytes, StorageError> {
        with_resource_version(&self.value, rev)
            .map(Bytes::from)
            .map_err(|e| StorageError::internal(key, format!("stored object is corrupt: {e}")))
    }
}
