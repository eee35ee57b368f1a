//! The watch relay: storage-svc's event stream for one watch, read eagerly by a task of its
//! own into a bounded buffer that the client drains (upstream's `cacheWatcher`, with its
//! buffer and its `add` timeout).
//!
//! Why: registry-svc carries every client's watch to storage-svc over a few HTTP/2
//! connections. Data a stream has received but nobody has read holds that connection's
//! flow-control window, so a client that opens watches and stops reading would, through
//! registry-svc, stall every other call on those connections (the defect that wedged
//! registry-svc). With the relay, storage's stream is always read at once; what the client has
//! not taken yet waits here, bounded by [`BUFFER_EVENTS`] events and [`BUFFER_BYTES`] bytes.
//! When the buffer stays full for [`SEND_BUDGET`], the watch is cut off: storage's stream is
//! dropped (freeing its window and storage's watcher) and the client gets RESOURCE_EXHAUSTED
//! `WatcherTooSlow` at once, ahead of whatever it had not read (it watches again from the last
//! resourceVersion it received, and gets those events again).
//!
//! Watches also travel on connections of their own (`storage::WATCH_CONNECTIONS`), never on
//! those of unary calls, so even a buffer that fills for [`SEND_BUDGET`] delays only other
//! watches.

use std::{
    pin::Pin,
    sync::{Arc, OnceLock},
    task::{Context, Poll},
    time::Duration,
};

use kubestore_proto::storage::v1::WatchEvent;
use prometheus_client::metrics::counter::Counter;
use prost::Message;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_stream::Stream;
use tonic::Status;

use crate::error::ApiError;

/// Events a watch may hold between storage-svc and its client.
pub const BUFFER_EVENTS: usize = 256;
/// Bytes (encoded events) a watch may hold between storage-svc and its client: with objects of
/// up to 1.5 MiB, a bound in events alone would let one watch hold hundreds of MiB. (Room for
/// two objects of the largest size; a larger one is let through alone.)
pub const BUFFER_BYTES: usize = 4 << 20;
/// How long a watch's buffer may stay full before the watch is cut off (storage-svc's
/// watchers have the same budget).
pub const SEND_BUDGET: Duration = Duration::from_secs(2);

/// How a relay ended early: the status its client gets before anything still buffered.
type CutSlot = Arc<OnceLock<Status>>;

/// A buffered event and the bytes it holds.
type Buffered = (Result<WatchEvent, Status>, Option<OwnedSemaphorePermit>);

/// The client's side of a relayed watch; dropping it ends the relay and storage's stream.
pub struct Relay {
    events: mpsc::Receiver<Buffered>,
    cut: CutSlot,
    /// The task reading storage's stream for this watch alone (none for a member of a shared
    /// watch, see [`Feed`]).
    task: Option<tokio::task::JoinHandle<()>>,
    done: bool,
}

/// The feeding side of a [`Relay`] whose events someone else pushes (a shared watch,
/// `shared_watch`): the same bounded buffer, filled without waiting.
pub struct Feed {
    tx: mpsc::Sender<Buffered>,
    bytes: Arc<Semaphore>,
    cut: CutSlot,
}

/// Why [`Feed::push`] did not take an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The client is gone.
    Gone,
    /// The buffer is full: the client is not keeping up.
    Full,
}

impl Feed {
    /// A feed and the relay its client reads.
    pub fn new() -> (Self, Relay) {
        let (tx, events) = mpsc::channel::<Buffered>(BUFFER_EVENTS);
        let cut: CutSlot = Arc::default();
        (
            Self {
                tx,
                bytes: Arc::new(Semaphore::new(BUFFER_BYTES)),
                cut: cut.clone(),
            },
            Relay {
                events,
                cut,
                task: None,
                done: false,
            },
        )
    }

    /// Whether the client has gone.
    pub fn is_gone(&self) -> bool {
        self.tx.is_closed()
    }

    /// Buffers `event`, of `size` bytes ([`size`]), for the client, without waiting.
    pub fn push(&self, event: WatchEvent, size: usize) -> Result<(), Refused> {
        let permit = self
            .bytes
            .clone()
            .try_acquire_many_owned(size as u32)
            .map_err(|_| Refused::Full)?;
        self.tx
            .try_send((Ok(event), Some(permit)))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => Refused::Full,
                mpsc::error::TrySendError::Closed(_) => Refused::Gone,
            })
    }

    /// Ends the client's watch with `status` after what it has buffered, or ahead of it when
    /// the buffer has no room left.
    pub fn end_with(self, status: Status) {
        if self.tx.try_send((Err(status.clone()), None)).is_err() {
            let _ = self.cut.set(status);
        }
    }

    /// Cuts the client off: it gets RESOURCE_EXHAUSTED `WatcherTooSlow` at its next read.
    pub fn cut_off(self, counter: &Counter) {
        tracing::info!("shared watch member cut off: the client stopped reading");
        counter.inc();
        let _ = self.cut.set(too_slow("was full"));
    }
}

/// What a relay's buffer holds of `event`: its encoded size, within the buffer's bound.
pub fn size(event: &WatchEvent) -> usize {
    event.encoded_len().clamp(1, BUFFER_BYTES)
}

/// The status of a watch cut off because its buffer `how` (stayed full for ..., was full).
fn too_slow(how: &str) -> Status {
    Status::from(ApiError::WatcherTooSlow(format!(
        "the watcher did not read its events: registry-svc's buffer of {BUFFER_EVENTS} events / \
         {} MiB {how}; watch again from the last resourceVersion received",
        BUFFER_BYTES >> 20
    )))
}

impl Relay {
    /// Starts relaying `upstream`; a cut-off is counted in `cut_off`.
    pub fn start(mut upstream: tonic::Streaming<WatchEvent>, cut_off: Counter) -> Self {
        let (tx, events) = mpsc::channel::<Buffered>(BUFFER_EVENTS);
        let bytes = Arc::new(Semaphore::new(BUFFER_BYTES));
        let cut: CutSlot = Arc::default();
        let task = {
            let cut = cut.clone();
            tokio::spawn(async move {
                loop {
                    let item = tokio::select! {
                        m = upstream.message() => m,
                        () = tx.closed() => return,
                    };
                    let (item, size) = match item {
                        Ok(Some(ev)) => {
                            let n = size(&ev);
                            (Ok(ev), n)
                        }
                        // The end of storage's stream: the channel closes behind the events.
                        Ok(None) => return,
                        Err(s) => (Err(s), 1),
                    };
                    let last = item.is_err();
                    let room = async {
                        let permit = bytes.clone().acquire_many_owned(size as u32).await.ok();
                        tx.send((item, permit)).await.is_ok()
                    };
                    match tokio::time::timeout(SEND_BUDGET, room).await {
                        Ok(true) if !last => {}
                        // The client is gone, or storage's stream ended with an error.
                        Ok(_) => return,
                        Err(_) => {
                            tracing::info!("watch cut off: the client stopped reading");
                            cut_off.inc();
                            // The client is not reading (the buffer is full), so it sees this
                            // at its next read, before the buffered events; the channel closes
                            // as the task ends.
                            let _ = cut.set(too_slow(&format!("stayed full for {SEND_BUDGET:?}")));
                            return;
                        }
                    }
                }
            })
        };
        Self {
            events,
            cut,
            task: Some(task),
            done: false,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Stream for Relay {
    type Item = Result<WatchEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        // A cut-off is reported ahead of the events still buffered.
        if let Some(status) = self.cut.get().cloned() {
            self.done = true;
            return Poll::Ready(Some(Err(status)));
        }
        match self.events.poll_recv(cx) {
            Poll::Ready(Some((item, _permit))) => {
                if item.is_err() {
                    self.done = true;
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(self.cut.get().cloned().map(Err))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
