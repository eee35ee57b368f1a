//! Get, List and Watch answered from a [`Cacher`], with upstream's routing (`delegator.go`):
//!
//! | request | from the cache | to etcd |
//! |---|---|---|
//! | Get/List, resourceVersion "" | once fresh (see `cache`) | not ready, or not fresh in time |
//! | Get/List, "0" | at once | not ready |
//! | Get/List, N (not older than) | once the cache reaches N | N ahead of etcd, or not in time |
//! | List EXACT N, legacy exact (N + limit) | - | always |
//! | List continue | when nothing of the prefix changed since the token's revision | otherwise |
//! | Watch | "" once fresh, "0" at once, N from the window | not ready; N older than the window is Expired |
//!
//! Answers are upstream's: the list's resourceVersion is the cache's (at least what was asked
//! for), items carry their own.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use kubestore_proto::meta::v1::{ResourceVersionMatch, WatchEventType};
use kubestore_proto::storage::v1::WatchEvent;
use kubestore_telemetry::Deadline;
use tokio::{sync::mpsc, time::Instant};

use crate::{
    cache::{
        Cacher, WatchCache,
        cacher::{Batch, Change, ChangeKind, Entry, Feed},
    },
    continuation,
    error::StorageError,
    etcd::EtcdCall,
    keys::prefix_end,
    request::{Flow, ListPage, ListRequest, Sink, WatchRequest, event, stopped},
    selector::Selector,
};

/// How long a read waits for events already on their way before writing a fence.
const SETTLE: Duration = Duration::from_millis(20);

/// A read the cache answered, or left to etcd.
pub enum Served<T> {
    /// From the cache.
    Hit(T),
    /// Go to etcd.
    Fallback,
}

/// Waits until the cache has every change up to etcd's current revision (read after this
/// call started); `None` when it did not get there within the bound (read from etcd).
pub async fn fresh(
    cache: &WatchCache,
    cacher: &Cacher,
    key: &str,
    deadline: Deadline,
) -> Result<Option<i64>, StorageError> {
    let t = cache.current_revision(key, deadline).await?;
    cacher.lag(t);
    if cacher.rev() >= t {
        return Ok(Some(t));
    }
    let until = |d: Duration| (Instant::now() + d).min(deadline.instant());
    if cacher.wait_rev(t, until(SETTLE)).await {
        return Ok(Some(t));
    }
    // Nothing of this prefix was on its way: the revision moved elsewhere. A fence brings the
    // cache to (at least) t through its own watch.
    // A fence that fails (etcd full, say) only means this read goes to etcd, which reports the
    // trouble itself if it is real.
    if let Err(e) = cacher.fence(t, deadline).await {
        tracing::debug!(error = %e, "watch cache: fence failed; reading from etcd");
        return Ok(None);
    }
    Ok(cacher
        .wait_rev(t, until(cache.config.fresh_timeout))
        .await
        .then_some(t))
}

/// Waits until the cache reaches `min` (a resourceVersion the caller saw), unless etcd itself
/// is not there yet (then etcd answers: too large).
async fn not_older_than(
    cache: &WatchCache,
    cacher: &Cacher,
    key: &str,
    min: i64,
    deadline: Deadline,
) -> Result<bool, StorageError> {
    if cacher.rev() >= min {
        return Ok(true);
    }
    if cache.current_revision(key, deadline).await? < min {
        return Ok(false);
    }
    let until = (Instant::now() + cache.config.fresh_timeout).min(deadline.instant());
    if cacher.wait_rev(min, until).await {
        return Ok(true);
    }
    if let Err(e) = cacher.fence(min, deadline).await {
        tracing::debug!(error = %e, "watch cache: fence failed; reading from etcd");
        return Ok(false);
    }
    Ok(cacher.wait_rev(min, until).await)
}

/// Get: the object at `etcd_key` (None if absent) and the cache revision, or fall back.
pub async fn get(
    cache: &Arc<WatchCache>,
    key: &str,
    etcd_key: &str,
    resource_version: &str,
    min: i64,
    deadline: Deadline,
) -> Result<Served<Option<Entry>>, StorageError> {
    let Some(cacher) = cache.ready(key, etcd_key) else {
        return Ok(Served::Fallback);
    };
    let ok = match (resource_version, min) {
        ("", _) => fresh(cache, &cacher, key, deadline).await?.is_some(),
        (_, 0) => true,
        (_, n) => not_older_than(cache, &cacher, key, n, deadline).await?,
    };
    if !ok {
        cacher.fallback();
        return Ok(Served::Fallback);
    }
    cacher.hit();
    tracing::debug!("Served from the watch cache");
    Ok(Served::Hit(
        cacher.read(|s| s.objects.get(etcd_key.as_bytes()).cloned()),
    ))
}

/// The cached object of `etcd_key`, for an update's or delete's suggestion (no freshness
/// needed: a stale suggestion is never acted upon).
pub fn suggestion(cache: &Arc<WatchCache>, key: &str, etcd_key: &str) -> Option<Entry> {
    cache
        .ready(key, etcd_key)?
        .read(|s| s.objects.get(etcd_key.as_bytes()).cloned())
}

/// List, when the cache may answer it.
pub async fn list(
    cache: &Arc<WatchCache>,
    req: &ListRequest<'_>,
    prefix: &str,
    rv: Option<i64>,
    deadline: Deadline,
) -> Result<Served<ListPage>, StorageError> {
    let key = req.key;
    let Some(cacher) = cache.ready(key, prefix) else {
        return Ok(Served::Fallback);
    };
    let Ok(rvm) = ResourceVersionMatch::try_from(req.resource_version_match) else {
        return Ok(Served::Fallback);
    };
    // Where the page starts, and the revision the cache must be at.
    let mut start = prefix.as_bytes().to_vec();
    let mut pinned = None;
    if req.recursive && !req.continue_token.is_empty() {
        let Ok(c) = continuation::decode(req.continue_token) else {
            return Ok(Served::Fallback);
        };
        start = format!("{prefix}{}", c.start).into_bytes();
        if c.rv > 0 {
            // The chain's revision: the cache answers only if the prefix is unchanged since.
            let unchanged = cacher.read(|s| s.rev >= c.rv && s.last_change <= c.rv);
            if !unchanged {
                return Ok(Served::Fallback);
            }
            // etcd may have moved on (other resources) and compacted the chain's revision
            // meanwhile: then the chain is Expired, as without the cache. One count-only read
            // at that revision tells; etcd's path gives the exact error (with upstream's fresh
            // token), so a failed check hands the page to it.
            let call = EtcdCall { key, deadline };
            if cache
                .etcd
                .check_revision(&call, prefix, c.rv)
                .await
                .is_err()
            {
                return Ok(Served::Fallback);
            }
            pinned = Some(c.rv);
        } else if fresh(cache, &cacher, key, deadline).await?.is_none() {
            cacher.fallback();
            return Ok(Served::Fallback);
        }
    } else {
        let ok = match (rvm, rv) {
            (ResourceVersionMatch::Exact, _) => false,
            // Legacy: a revision with a limit is an exact read.
            (ResourceVersionMatch::Unspecified, Some(n)) if n > 0 && req.limit > 0 => false,
            (_, None) => fresh(cache, &cacher, key, deadline).await?.is_some(),
            (_, Some(0)) => true,
            (_, Some(n)) => not_older_than(cache, &cacher, key, n, deadline).await?,
        };
        if !ok {
            cacher.fallback();
            return Ok(Served::Fallback);
        }
    }
    let page = cacher.read(|s| {
        // A continue page is the snapshot its token names only if nothing of the prefix
        // changed since: checked again here, under the same lock as the page is read (the
        // check above was before an await, and a change may have landed meanwhile).
        if let Some(p) = pinned
            && s.last_change > p
        {
            return Ok(None);
        }
        let rev = pinned.unwrap_or(s.rev);
        if !req.recursive {
            let found = s.objects.get(prefix.as_bytes());
            let items = found
                .filter(|e| req.selector.matches(&e.value))
                .map(|e| returned(key, prefix.as_bytes(), e))
                .transpose()?
                .into_iter()
                .collect();
            return Ok(Some(ListPage {
                items,
                rev,
                evaluated: u64::from(found.is_some()),
                ..Default::default()
            }));
        }
        let end = prefix_end(prefix.as_bytes());
        let mut page = ListPage {
            rev,
            ..Default::default()
        };
        let mut range = s.objects.range(start.clone()..end);
        let mut last: Option<&Vec<u8>> = None;
        let mut more = false;
        for (k, e) in range.by_ref() {
            if req.limit > 0 && page.items.len() as i64 >= req.limit {
                more = true;
                break;
            }
            last = Some(k);
            page.evaluated += 1;
            if req.selector.matches(&e.value) {
                page.items.push(returned(key, k, e)?);
            }
        }
        // The watch cache is exact about "more": only when an item follows the last match
        // (upstream's cacher does the same).
        if more && let Some(k) = last {
            let mut next = k.clone();
            next.push(0);
            let relative = String::from_utf8_lossy(&next[prefix.len()..]).into_owned();
            page.continue_token = Some(continuation::encode(rev, &relative));
            if req.selector.is_empty() {
                page.remaining_item_count = Some(1 + range.count() as i64);
            }
        }
        Ok(Some(page))
    })?;
    let Some(page) = page else {
        cacher.fallback();
        return Ok(Served::Fallback);
    };
    cacher.hit();
    Ok(Served::Hit(page))
}

/// An entry as a list returns it; a corrupt one is INTERNAL naming the object's key, as on
/// etcd's path (not only the list's).
fn returned(key: &str, etcd_key: &[u8], e: &Entry) -> Result<Bytes, StorageError> {
    e.object(key).map_err(|_| {
        StorageError::internal(
            key,
            format!(
                "stored object {:?} is corrupt",
                String::from_utf8_lossy(etcd_key)
            ),
        )
    })
}

/// Watch from the cache: initial events or the window, then live changes, into `sink`.
/// `Fallback` when the cache cannot start it (the caller watches etcd instead).
pub(crate) async fn watch(
    cache: &Arc<WatchCache>,
    req: &WatchRequest,
    rv: i64,
    (watch_key, range_end): (&str, Option<&[u8]>),
    sink: &mut Sink,
) -> Served<Result<(), StorageError>> {
    let key = req.key.as_str();
    let Some(cacher) = cache.ready(key, watch_key) else {
        return Served::Fallback;
    };
    let deadline = Deadline::after(cache.config.request_timeout);
    let consistent = req.resource_version.is_empty();
    let initial = req.send_initial_events.unwrap_or(rv == 0);
    let ready = if consistent {
        // Caught up with etcd first, so the watch starts after every acknowledged write. A
        // cache that does not get there within the bound hands an initial-events watch to
        // etcd (its snapshot must be consistent); a changes-only watch starts at the cache's
        // newest revision instead, which is upstream's "start at most recent" from its watch
        // cache, rather than costing etcd one watch per client under load.
        fresh(cache, &cacher, key, deadline)
            .await
            .map(|t| t.is_some() || !initial)
    } else if rv > 0 {
        not_older_than(cache, &cacher, key, rv, deadline).await
    } else {
        Ok(true)
    };
    match ready {
        Ok(true) => {}
        Ok(false) => {
            cacher.fallback();
            return Served::Fallback;
        }
        Err(e) => return Served::Hit(Err(e)),
    }
    // A watch from a revision etcd compacted is Expired, as without the cache (upstream's
    // etcd3 watcher, and the contract of List/Watch), even though the window may still hold
    // the changes after it: a client that resumes from a compacted revision has missed
    // history elsewhere and must list again. One count-only read at rv+1 (etcd's watch starts
    // there). Only "compacted" refuses the watch: if etcd cannot answer (a leader election,
    // an outage) or rv+1 is not written yet, the window serves the watch as it always could.
    // A watch from now has its revision from etcd a moment ago (`watch.rs`): nothing after it
    // can be compacted, so it is not asked again.
    if !initial && rv > 0 && !consistent {
        let call = EtcdCall {
            key,
            deadline: Deadline::after(cache.config.request_timeout),
        };
        match cache.etcd.check_revision(&call, watch_key, rv + 1).await {
            Ok(()) => {}
            Err(e @ StorageError::Timeout { .. }) => {
                // rv+1 is etcd's next revision: nothing after rv can be compacted.
                tracing::trace!(error = %e, "watch start at etcd's newest revision");
            }
            Err(StorageError::Expired { .. }) => {
                return Served::Hit(Err(StorageError::Expired {
                    key: key.to_string(),
                    message: format!(
                        "too old resource version: {rv} (etcd's history was compacted past it)"
                    ),
                    continue_token: None,
                }));
            }
            Err(e) => {
                tracing::debug!(error = %e, "watch cache: compaction check failed; serving the window");
            }
        }
    }
    let start = watch_key.as_bytes().to_vec();
    let end = range_end.map(<[u8]>::to_vec);
    let ((snapshot, backlog, start_rev), live) =
        cacher.subscribe(start.clone(), end.clone(), sink.end.clone(), |s| {
            if initial {
                let objects: Vec<Entry> = match &end {
                    Some(e) => s
                        .objects
                        .range(start.clone()..e.clone())
                        .map(|(_, v)| v.clone())
                        .collect(),
                    None => s.objects.get(&start).cloned().into_iter().collect(),
                };
                (Some(objects), Some(Vec::new()), s.rev)
            } else if rv > 0 {
                (None, s.since(rv), rv)
            } else {
                (None, Some(Vec::new()), s.rev)
            }
        });
    let Some(backlog) = backlog else {
        let (oldest, trimmed) = cacher.read(|s| (s.oldest, s.trimmed));
        if !trimmed {
            // The cache started (or listed again) after rv and has dropped nothing since:
            // the changes after rv may well still be in etcd, which decides (a storage-svc
            // restart must not turn every client's resume into a relist).
            cacher.fallback();
            return Served::Fallback;
        }
        return Served::Hit(Err(StorageError::Expired {
            key: key.to_string(),
            message: format!("too old resource version: {rv} ({oldest})"),
            continue_token: None,
        }));
    };
    cacher.hit();
    let range = Range { start, end };
    Served::Hit(
        follow(
            &cacher, req, range, snapshot, backlog, start_rev, live, sink,
        )
        .await,
    )
}

/// The keys a watch covers.
struct Range {
    start: Vec<u8>,
    end: Option<Vec<u8>>,
}

impl Range {
    fn covers(&self, key: &[u8]) -> bool {
        match &self.end {
            None => key == self.start.as_slice(),
            Some(e) => key >= self.start.as_slice() && key < e.as_slice(),
        }
    }
}

/// The event a change produces through `selector` (upstream's transitions).
fn change_event(
    key: &str,
    selector: &Selector,
    c: &Change,
) -> Result<Option<WatchEvent>, StorageError> {
    let matches = |e: &Option<Entry>| e.as_ref().is_some_and(|e| selector.matches(&e.value));
    let now = |kind: WatchEventType| -> Result<Option<WatchEvent>, StorageError> {
        c.new
            .as_ref()
            .map(|n| Ok(event(kind, n.object(key)?, c.rev)))
            .transpose()
    };
    let gone = || -> Result<Option<WatchEvent>, StorageError> {
        c.old
            .as_ref()
            .map(|o| {
                Ok(event(
                    WatchEventType::Deleted,
                    o.deleted_at(key, c.rev)?,
                    c.rev,
                ))
            })
            .transpose()
    };
    match c.kind {
        ChangeKind::Created if matches(&c.new) => now(WatchEventType::Added),
        ChangeKind::Updated => match (matches(&c.old), matches(&c.new)) {
            (true, true) => now(WatchEventType::Modified),
            (false, true) => now(WatchEventType::Added),
            (true, false) => gone(),
            (false, false) => Ok(None),
        },
        ChangeKind::Deleted if matches(&c.old) => gone(),
        _ => Ok(None),
    }
}

/// Sends the changes of `batch` after `after` that `range` and `selector` let through.
async fn send_batch(
    req: &WatchRequest,
    range: &Range,
    batch: &Batch,
    after: i64,
    sink: &mut Sink,
) -> Result<Flow, StorageError> {
    for c in &batch.changes {
        if c.rev <= after || !range.covers(&c.key) {
            continue;
        }
        if let Some(ev) = change_event(&req.key, &req.selector, c)?
            && let Flow::Gone = sink.send(ev).await?
        {
            return Ok(Flow::Gone);
        }
    }
    Ok(Flow::Go)
}

#[allow(clippy::too_many_arguments)]
async fn follow(
    cacher: &Cacher,
    req: &WatchRequest,
    range: Range,
    snapshot: Option<Vec<Entry>>,
    backlog: Vec<Arc<Batch>>,
    start_rev: i64,
    mut live: Feed,
    sink: &mut Sink,
) -> Result<(), StorageError> {
    if let Some(objects) = snapshot {
        for e in objects {
            if req.selector.matches(&e.value)
                && let Flow::Gone = sink
                    .send(event(WatchEventType::Added, e.object(&req.key)?, e.mod_rev))
                    .await?
            {
                return Ok(());
            }
        }
        if let Flow::Gone = sink.initial_events_end(req, start_rev).await? {
            return Ok(());
        }
    }
    let mut seen = start_rev;
    for b in &backlog {
        if let Flow::Gone = send_batch(req, &range, b, seen, sink).await? {
            return Ok(());
        }
        seen = seen.max(b.rev);
    }
    let mut stop = sink.stop.clone();
    let interval = cacher.bookmark_interval();
    let mut next_bookmark = Instant::now() + interval;
    let mut last_bookmark = 0;
    let closed = sink.tx.clone();
    loop {
        tokio::select! {
            () = stopped(&mut stop) => return Err(sink.shutting_down()),
            () = closed.closed() => return Ok(()),
            () = tokio::time::sleep_until(next_bookmark), if req.bookmarks => {
                next_bookmark = Instant::now() + interval;
                // Every change up to the cache's revision was handed to this watch before the
                // revision was published: once the pending ones are sent, it is a bookmark,
                // unless the watch was cut off meanwhile (then some were never handed to it).
                let published = cacher.rev();
                loop {
                    match live.try_recv() {
                        Ok(b) => {
                            if let Flow::Gone = send_batch(req, &range, &b, seen, sink).await? {
                                return Ok(());
                            }
                            seen = seen.max(b.rev);
                        }
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => return end_reason(sink),
                    }
                }
                if sink.end.lock().is_ok_and(|s| s.is_some()) {
                    return end_reason(sink);
                }
                let rev = seen.max(published).max(last_bookmark);
                last_bookmark = rev;
                if let Flow::Gone = sink.send(event(WatchEventType::Bookmark, Bytes::new(), rev)).await? {
                    return Ok(());
                }
            }
            batch = live.recv() => {
                let Some(b) = batch else {
                    return end_reason(sink);
                };
                if let Flow::Gone = send_batch(req, &range, &b, seen, sink).await? {
                    return Ok(());
                }
                seen = seen.max(b.rev);
            }
        }
    }
}

/// How a watch the cacher stopped feeding ends: cut off (too slow) or ended by a relist, as
/// the cacher wrote in the end slot (left there: the stream reports it).
fn end_reason(sink: &Sink) -> Result<(), StorageError> {
    match sink.end.lock().ok().and_then(|s| s.clone()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
