//! What the store's reads take and give, at the bottom of the store: the List and Watch
//! requests and results, and where a watch's events go (its bounded [`Sink`]).
//!
//! Both read paths use these: the etcd path (`list`, `watch`) and the watch cache's
//! (`cache::serve`), which sit beside each other under the `Store` facade that picks one per
//! request (upstream's `cacher` wraps the `etcd3` store behind the same interface). Keeping the
//! types here keeps the imports one-way: the cache depends on this module, never on the etcd
//! path or the facade.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use kubestore_proto::{meta::v1::WatchEventType, storage::v1::WatchEvent};
use tokio::sync::mpsc;

use crate::{error::StorageError, selector::Selector};

/// A list request, as storage's gRPC message carries it.
#[derive(Debug)]
pub struct ListRequest<'a> {
    /// A key prefix (recursive) or one key.
    pub key: &'a str,
    /// List the key's children rather than the key.
    pub recursive: bool,
    /// "", "0" or a revision.
    pub resource_version: &'a str,
    /// `meta.v1.ResourceVersionMatch`.
    pub resource_version_match: i32,
    /// Page size (0 = all).
    pub limit: i64,
    /// The previous page's token.
    pub continue_token: &'a str,
    /// Which objects.
    pub selector: Selector,
}

/// One page.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Encoded objects with their resource versions.
    pub items: Vec<Bytes>,
    /// The revision the page was read at.
    pub rev: i64,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Items left after this page, when known.
    pub remaining_item_count: Option<i64>,
    /// Objects tested against the selector to fill the page (the watch cache's count).
    pub evaluated: u64,
}

/// Events buffered per watch between etcd and the caller (upstream's etcd3 watcher buffers
/// 100; HTTP/2 flow-control windows add a few MiB in front of the caller). Memory per watch is
/// bounded by this many objects.
pub const BUFFER_EVENTS: usize = 256;
/// How long a watch's buffer may stay full before the watch is cut off.
pub const SEND_BUDGET: Duration = Duration::from_secs(2);
/// A watch request, as storage's gRPC message carries it.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// A key prefix (recursive) or one key.
    pub key: String,
    /// Watch the key's children rather than the key.
    pub recursive: bool,
    /// "", "0" or a revision.
    pub resource_version: String,
    /// Send the current state first (unset: when resource_version is "" or "0").
    pub send_initial_events: Option<bool>,
    /// Send BOOKMARK events.
    pub bookmarks: bool,
    /// Which objects.
    pub selector: Selector,
    /// End the stream (OK) after this long.
    pub timeout: Option<Duration>,
}

/// How a watch ended, for the stream to report after its last event.
pub type EndSlot = Arc<Mutex<Option<StorageError>>>;

/// The caller's side of a watch: events, then (once the channel closes) how it ended.
pub struct WatchHandle {
    /// Events in order.
    pub events: mpsc::Receiver<WatchEvent>,
    /// The error the watch ended with, if any; read once `events` is closed.
    pub end: EndSlot,
}

/// Where events go: the bounded buffer, with the send budget and the stop signal.
pub(crate) struct Sink {
    pub(crate) tx: mpsc::Sender<WatchEvent>,
    pub(crate) stop: tokio::sync::watch::Receiver<bool>,
    /// Where an ending decided elsewhere (a cut-off by the watch cache) is reported.
    pub(crate) end: EndSlot,
    pub(crate) key: String,
    pub(crate) sent: u64,
}

/// Whether the caller is still there.
pub(crate) enum Flow {
    Go,
    Gone,
}

impl Sink {
    pub(crate) fn shutting_down(&self) -> StorageError {
        shutting_down(&self.key)
    }

    pub(crate) async fn send(&mut self, ev: WatchEvent) -> Result<Flow, StorageError> {
        let ev = match self.tx.try_send(ev) {
            Ok(()) => {
                self.sent += 1;
                return Ok(Flow::Go);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => return Ok(Flow::Gone),
            Err(mpsc::error::TrySendError::Full(ev)) => ev,
        };
        tokio::select! {
            sent = tokio::time::timeout(SEND_BUDGET, self.tx.send(ev)) => match sent {
                Ok(Ok(())) => {
                    self.sent += 1;
                    Ok(Flow::Go)
                }
                Ok(Err(_)) => Ok(Flow::Gone),
                Err(_) => Err(StorageError::WatcherTooSlow {
                    key: self.key.clone(),
                    message: format!(
                        "the watcher did not read its events: its buffer of {BUFFER_EVENTS} events stayed full for {SEND_BUDGET:?}; watch again from the last resourceVersion received"
                    ),
                }),
            },
            _ = stopped(&mut self.stop) => Err(shutting_down(&self.key)),
        }
    }

    /// After the initial events at `rev`: the BOOKMARK annotated as their end (upstream's
    /// `k8s.io/initial-events-end`), when `req` asked for initial events and bookmarks.
    pub(crate) async fn initial_events_end(
        &mut self,
        req: &WatchRequest,
        rev: i64,
    ) -> Result<Flow, StorageError> {
        if !(req.bookmarks && req.send_initial_events == Some(true)) {
            return Ok(Flow::Go);
        }
        let mut end = event(WatchEventType::Bookmark, Bytes::new(), rev);
        end.initial_events_end = true;
        self.send(end).await
    }
}

/// Resolves once `stop` is raised (without holding the receiver's lock across an await).
pub(crate) async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

pub(crate) fn shutting_down(key: &str) -> StorageError {
    StorageError::Unavailable {
        key: key.to_string(),
        message: "storage-svc is shutting down: watch again from the last resourceVersion received"
            .into(),
    }
}

/// A watch event of `kind` at `rev`.
pub(crate) fn event(kind: WatchEventType, object: Bytes, rev: i64) -> WatchEvent {
    WatchEvent {
        r#type: kind as i32,
        object,
        resource_version: rev.to_string(),
        initial_events_end: false,
    }
}
