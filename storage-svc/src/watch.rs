//! Watch (upstream's `etcd3.watcher`): the changes under a prefix, or of one key, as ADDED /
//! MODIFIED / DELETED events decided from etcd's previous values, filtered by a [`Selector`].
//!
//! ```text
//! resource_version  send_initial_events  first                          then
//! "" or "0"         unset or true        ADDED for every current match  changes after that list
//! "" or "0"         false                -                              changes after the current revision
//! N                 unset or false       -                              changes after N
//! N                 true                 ADDED for every current match  changes after that list
//! ```
//! With `send_initial_events=true` and bookmarks allowed, the initial events end with a BOOKMARK
//! marked `initial_events_end` at the list's revision.
//!
//! Transitions through a selector: a create is ADDED if the new object matches; a delete is
//! DELETED if the old one matched (the last state, stamped with the deletion's revision); a
//! modification is MODIFIED (both match), ADDED (only the new one), DELETED (only the old one)
//! or nothing.
//!
//! Each watch is one etcd watch (the watch cache will share them) feeding a bounded buffer. A
//! caller that stops reading fills it; once it has stayed full for [`SEND_BUDGET`] the watch is
//! cut off with RESOURCE_EXHAUSTED, so memory stays bounded and other watchers are unaffected.
//! Shutdown ends every watch with UNAVAILABLE; a compacted start revision with OUT_OF_RANGE
//! (Expired); `timeout_seconds` with OK.
//!
//! Bookmarks: every `--watch-bookmark-interval`, a BOOKMARK at the highest revision up to which
//! every change of the watched range has been sent, even when nothing matched, so idle watchers
//! can resume after compaction. That revision also advances through etcd progress
//! notifications, trusted only one interval after they arrive and only if no older event
//! followed them: etcd before 3.4.25/3.5.8 (Debian ships 3.4.23) may send a requested progress
//! notification ahead of the events of its revision (etcd-io/etcd#15220).

use std::sync::Arc;

use bytes::Bytes;
use etcd_client::EventType;
use kubestore_proto::{meta::v1::WatchEventType, storage::v1::WatchEvent};
use tokio::{sync::mpsc, time::Instant};
use tracing::{Instrument, field::Empty};

pub use crate::request::{BUFFER_EVENTS, EndSlot, SEND_BUDGET, WatchHandle, WatchRequest};
use crate::{
    cache::serve::{self, Served},
    error::StorageError,
    etcd::{EtcdCall, WatchFailure},
    keys::{is_internal, prefix_end},
    object::with_resource_version,
    request::{Flow, Sink, event, shutting_down, stopped},
    selector::Selector,
    state::parse_resource_version,
    store::{Store, resource_of},
};

/// Page size of the initial list (upstream's `defaultWatcherMaxLimit`).
const INITIAL_PAGE: i64 = 10_000;

impl Store {
    /// Starts a watch; see the module docs. Errors in the request itself are returned here;
    /// the rest end the stream.
    pub async fn watch(self: &Arc<Self>, req: WatchRequest) -> Result<WatchHandle, StorageError> {
        let key = req.key.clone();
        let mut rv = parse_resource_version(&key, &req.resource_version)?;
        // A watch of changes "from now" (no version, no initial events) starts at the revision
        // etcd is at before the caller gets its stream, as upstream's watch registers its
        // watcher before it answers: a write the caller makes once the call has returned is
        // always seen. (Resolved in the watch's own task, it could come after such a write,
        // which was then never sent.)
        if rv == 0 && req.send_initial_events == Some(false) {
            let call = EtcdCall {
                key: &key,
                deadline: kubestore_telemetry::Deadline::after(self.config.request_timeout),
            };
            rv = self
                .etcd
                .current_revision(&call, &self.health_key())
                .await?;
        }
        let range = if req.recursive {
            let p = self.prefix.etcd_prefix(&key)?;
            let end = prefix_end(p.as_bytes());
            (p, Some(end))
        } else {
            (self.prefix.etcd_key(&key)?, None)
        };
        if req.send_initial_events == Some(true) && rv > 0 {
            let call = EtcdCall {
                key: &key,
                deadline: kubestore_telemetry::Deadline::after(self.config.request_timeout),
            };
            let current = self
                .etcd
                .current_revision(&call, &self.health_key())
                .await?;
            if rv > current {
                return Err(StorageError::Timeout {
                    key,
                    message: format!("Too large resource version: {rv}, current: {current}"),
                });
            }
        }
        let (tx, events) = mpsc::channel(BUFFER_EVENTS);
        let end: EndSlot = Arc::default();
        let span = tracing::info_span!(
            "storage",
            otel.name = "Watch etcd3",
            otel.status_code = Empty,
            key = %key,
            resource = %resource_of(&key),
            events = Empty,
            ended = Empty,
        );
        let store = self.clone();
        let slot = end.clone();
        let metrics = self.etcd.metrics.clone();
        metrics.watches_open.inc();
        tokio::spawn(
            async move {
                let mut sink = Sink {
                    tx,
                    stop: store.stop.clone(),
                    end: slot.clone(),
                    key: key.clone(),
                    sent: 0,
                };
                let run = async {
                    if let Some(cache) = &store.cache {
                        let r = (range.0.as_str(), range.1.as_deref());
                        if let Served::Hit(result) =
                            serve::watch(cache, &req, rv, r, &mut sink).await
                        {
                            return result;
                        }
                    }
                    store.run_watch(&req, rv, range.clone(), &mut sink).await
                };
                // Shutdown ends the watch whatever stage it is in (waiting for the cache to be
                // fresh, for etcd, or for events), so a stopping server's watches end at once.
                let mut stop = store.stop.clone();
                let result = {
                    let bounded = async {
                        match req.timeout {
                            Some(t) => tokio::time::timeout(t, run).await.unwrap_or(Ok(())),
                            None => run.await,
                        }
                    };
                    tokio::select! {
                        r = bounded => r,
                        () = stopped(&mut stop) => Err(shutting_down(&key)),
                    }
                };
                let span = tracing::Span::current();
                span.record("events", i64::try_from(sink.sent).unwrap_or(i64::MAX));
                metrics.watch_events.inc_by(sink.sent);
                metrics.watches_open.dec();
                match result {
                    Ok(()) => {
                        span.record("ended", "ok");
                    }
                    Err(e) => {
                        span.record("ended", e.reason());
                        if matches!(e, StorageError::WatcherTooSlow { .. }) {
                            metrics.watchers_cut_off.inc();
                        }
                        if !matches!(e, StorageError::Unavailable { .. }) {
                            span.record("otel.status_code", "ERROR");
                        }
                        if let Ok(mut s) = slot.lock() {
                            s.get_or_insert(e);
                        }
                    }
                }
                // Dropping the sink closes the channel: the stream reports `end` after the
                // events already buffered (or at once, for a cut-off or a shutdown).
                drop(sink);
            }
            .instrument(span),
        );
        Ok(WatchHandle { events, end })
    }

    async fn run_watch(
        &self,
        req: &WatchRequest,
        rv: i64,
        (watch_key, range_end): (String, Option<Vec<u8>>),
        sink: &mut Sink,
    ) -> Result<(), StorageError> {
        let key = req.key.as_str();
        let call = || EtcdCall {
            key,
            deadline: kubestore_telemetry::Deadline::after(self.config.request_timeout),
        };
        let initial = req.send_initial_events.unwrap_or(rv == 0);
        let start_rev = if initial {
            let Some(list_rev) = self
                .send_initial(req, &watch_key, range_end.as_deref(), sink)
                .await?
            else {
                return Ok(());
            };
            if let Flow::Gone = sink.initial_events_end(req, list_rev).await? {
                return Ok(());
            }
            list_rev + 1
        } else if rv > 0 {
            rv + 1
        } else {
            self.etcd
                .current_revision(&call(), &self.health_key())
                .await?
                + 1
        };
        let mut stream = self
            .etcd
            .watch(
                &call(),
                watch_key.as_bytes(),
                range_end.as_deref(),
                start_rev,
            )
            .await?;
        self.follow(req, &mut stream, start_rev, sink).await
    }

    /// ADDED for every object that matches now; returns the list's revision (None: the caller
    /// went away).
    async fn send_initial(
        &self,
        req: &WatchRequest,
        watch_key: &str,
        range_end: Option<&[u8]>,
        sink: &mut Sink,
    ) -> Result<Option<i64>, StorageError> {
        let key = req.key.as_str();
        let mut rev = 0;
        let mut start = watch_key.as_bytes().to_vec();
        loop {
            let call = EtcdCall {
                key,
                deadline: kubestore_telemetry::Deadline::after(self.config.request_timeout),
            };
            let (kvs, more) = match range_end {
                Some(end) => {
                    let page = self
                        .etcd
                        .range_page(&call, &start, end, INITIAL_PAGE, rev)
                        .await?;
                    if rev == 0 {
                        rev = page.revision;
                    }
                    (page.kvs, page.more)
                }
                None => {
                    let (kv, header) = self.etcd.get_at(&call, &start, rev).await?;
                    rev = header;
                    (kv.into_iter().collect(), false)
                }
            };
            for kv in &kvs {
                if !is_internal(kv.key()) && req.selector.matches(kv.value()) {
                    let object = stamp(key, kv.value(), kv.mod_revision())?;
                    let ev = event(WatchEventType::Added, object, kv.mod_revision());
                    if let Flow::Gone = sink.send(ev).await? {
                        return Ok(None);
                    }
                }
            }
            match (more, kvs.last()) {
                (true, Some(last)) => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => return Ok(Some(rev)),
            }
        }
    }

    /// Turns etcd's watch responses into events until the caller leaves or the watch ends.
    async fn follow(
        &self,
        req: &WatchRequest,
        stream: &mut crate::etcd::EtcdWatch,
        start_rev: i64,
        sink: &mut Sink,
    ) -> Result<(), StorageError> {
        let key = req.key.as_str();
        let mut stop = self.stop.clone();
        let mut seen = start_rev - 1;
        let (mut pending_progress, mut trusted_progress) = (0i64, 0i64);
        let interval = self.config.bookmark_interval;
        let mut next_bookmark = Instant::now() + interval;
        let closed = sink.tx.clone();
        loop {
            tokio::select! {
                _ = stopped(&mut stop) => return Err(shutting_down(key)),
                () = closed.closed() => return Ok(()),
                () = tokio::time::sleep_until(next_bookmark), if req.bookmarks => {
                    next_bookmark = Instant::now() + interval;
                    let rev = seen.max(trusted_progress);
                    trusted_progress = pending_progress;
                    if rev > 0
                        && let Flow::Gone = sink.send(event(WatchEventType::Bookmark, Bytes::new(), rev)).await?
                    {
                        return Ok(());
                    }
                    // A failed request only delays the next bookmark's progress.
                    let _ = stream.request_progress().await;
                }
                message = stream.message() => {
                    let resp = match message {
                        Ok(Some(r)) => r,
                        Ok(None) => return Err(StorageError::Unavailable {
                            key: key.to_string(),
                            message: "etcd closed the watch: watch again from the last resourceVersion received".into(),
                        }),
                        Err(WatchFailure::Value(e)) => return Err(e),
                        Err(WatchFailure::Etcd(e)) => return Err(StorageError::Unavailable {
                            key: key.to_string(),
                            message: format!("etcd watch failed: {e}: watch again from the last resourceVersion received"),
                        }),
                    };
                    if resp.canceled() {
                        if resp.compact_revision() > 0 {
                            return Err(StorageError::Expired {
                                key: key.to_string(),
                                message: format!(
                                    "too old resource version: {} ({})",
                                    start_rev - 1,
                                    resp.compact_revision()
                                ),
                                continue_token: None,
                            });
                        }
                        return Err(StorageError::Unavailable {
                            key: key.to_string(),
                            message: format!("etcd cancelled the watch: {}", resp.cancel_reason()),
                        });
                    }
                    if resp.events().is_empty() {
                        if !resp.created()
                            && let Some(h) = resp.header()
                        {
                            pending_progress = pending_progress.max(h.revision());
                        }
                        continue;
                    }
                    for ev in resp.events() {
                        let Some(kv) = ev.kv() else { continue };
                        let rev = kv.mod_revision();
                        if rev <= pending_progress {
                            // The progress notification overtook this event: distrust it.
                            pending_progress = 0;
                        }
                        seen = seen.max(rev);
                        if let Some(out) = transition(key, &req.selector, ev)?
                            && let Flow::Gone = sink.send(out).await?
                        {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

/// The event a change produces for a watcher with `selector`, if any.
fn transition(
    key: &str,
    selector: &Selector,
    ev: &etcd_client::Event,
) -> Result<Option<WatchEvent>, StorageError> {
    let Some(kv) = ev.kv() else {
        return Ok(None);
    };
    if is_internal(kv.key()) {
        return Ok(None);
    }
    let rev = kv.mod_revision();
    let prev = || {
        ev.prev_kv().ok_or_else(|| {
            StorageError::internal(
                key,
                format!(
                    "etcd event received with PrevKv=nil (key={:?}, modRevision={rev}): its history was compacted",
                    String::from_utf8_lossy(kv.key())
                ),
            )
        })
    };
    let out = match ev.event_type() {
        EventType::Put if kv.create_revision() == rev => selector
            .matches(kv.value())
            .then(|| (WatchEventType::Added, kv.value())),
        EventType::Put => {
            let old = prev()?;
            match (selector.matches(old.value()), selector.matches(kv.value())) {
                (true, true) => Some((WatchEventType::Modified, kv.value())),
                (false, true) => Some((WatchEventType::Added, kv.value())),
                (true, false) => Some((WatchEventType::Deleted, old.value())),
                (false, false) => None,
            }
        }
        EventType::Delete => {
            let old = prev()?;
            selector
                .matches(old.value())
                .then(|| (WatchEventType::Deleted, old.value()))
        }
    };
    out.map(|(kind, value)| Ok(event(kind, stamp(key, value, rev)?, rev)))
        .transpose()
}

fn stamp(key: &str, value: &[u8], rev: i64) -> Result<Bytes, StorageError> {
    with_resource_version(value, rev)
        .map(Bytes::from)
        .map_err(|e| StorageError::internal(key, format!("stored object is corrupt: {e}")))
}
