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
    task: tokio::task::JoinHandle<()>,
    done: bool,
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
                            let size = ev.encoded_len().clamp(1, BUFFER_BYTES);
                            (Ok(ev), size)
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
                            let message = format!(
                                "the watcher did not read its events: registry-svc's buffer of \
                                 {BUFFER_EVENTS} events / {} MiB stayed full for {SEND_BUDGET:?}; \
                                 watch again from the last resourceVersion received",
                                BUFFER_BYTES >> 20
                            );
                            tracing::info!("watch cut off: the client stopped reading");
                            cut_off.inc();
                            // The client is not reading (the buffer is full), so it sees this
                            // at its next read, before the buffered events; the channel closes
                            // as the task ends.
                            let _ = cut.set(Status::from(ApiError::WatcherTooSlow(message)));
                            return;
                        }
                    }
                }
            })
        };
        Self {
            events,
            cut,
            task,
            done: false,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
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
