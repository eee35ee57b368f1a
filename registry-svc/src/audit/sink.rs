//! The audit log's queue and writer: events are serialized on the request's task (a few
//! hundred bytes at Metadata level) and handed to a bounded queue, bounded by count
//! (`--audit-log-batch-buffer-size`) and by bytes ([`MAX_QUEUED_BYTES`]: one RequestResponse
//! event can be megabytes); one thread writes them in batches, gathering for [`GATHER`] after
//! the first of a batch, then flushing and rotating (`super::rotate`): a wake-up and a write
//! per event would cost more than the event. Nothing waits on the writer: a full queue drops the event, and a failed
//! write loses its batch; both are counted in `apiserver_audit_error_total{plugin="log"}`, as
//! upstream's buffered backend counts what it could not deliver. A slow disk, a full disk or
//! a FIFO nobody reads costs audit events, never requests.

use std::{
    io::Write,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
        mpsc::{Receiver, SyncSender, TrySendError, sync_channel},
    },
};

use prometheus_client::metrics::{counter::Counter, family::Family};

use super::rotate::Rotating;

/// Bytes of events that may wait to be written.
pub const MAX_QUEUED_BYTES: usize = 64 << 20;
/// Events written between flushes, at most.
const BATCH: usize = 4096;
/// How long the writer lets events gather before it writes them: one wake-up and one write
/// per batch rather than per event (upstream's buffered backend batches the same way).
const GATHER: std::time::Duration = std::time::Duration::from_millis(20);

type Labels = Vec<(String, String)>;

/// The queue's sending end.
#[derive(Debug)]
pub struct Sink {
    tx: SyncSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    events: Counter,
    errors: Family<Labels, Counter>,
}

fn log_plugin() -> Labels {
    vec![("plugin".into(), "log".into())]
}

impl Sink {
    /// A writer thread for the log `open` opens (on that thread: opening a FIFO waits for its
    /// reader) behind a queue of `capacity` events; the metrics registered in `metrics`.
    pub fn start(
        open: impl FnOnce() -> std::io::Result<Rotating> + Send + 'static,
        capacity: usize,
        metrics: &kubestore_telemetry::Metrics,
    ) -> Self {
        let (tx, rx) = sync_channel(capacity);
        let queued = Arc::new(AtomicUsize::new(0));
        let events = Counter::default();
        let errors = Family::<Labels, Counter>::default();
        metrics.register(
            "apiserver_audit_event",
            "Counter of audit events generated and sent to the audit backend",
            events.clone(),
        );
        metrics.register(
            "apiserver_audit_error",
            "Counter of audit events that failed to be audited properly: dropped by a full queue or lost by a failed write",
            errors.clone(),
        );
        // Exported from the start, at 0: an alert on its rate needs the series.
        let _ = errors.get_or_create(&log_plugin());
        let (writer_queued, writer_errors) = (queued.clone(), errors.clone());
        let spawned = std::thread::Builder::new().name("audit-log".into()).spawn(
            move || match open() {
                Ok(out) => write(out, rx, writer_queued, writer_errors),
                Err(e) => {
                    tracing::error!(error = %e, "cannot open the audit log: events are dropped");
                    // Dropping the receiver makes every send a counted drop.
                }
            },
        );
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the audit log's writer: events are dropped");
        }
        Self {
            tx,
            queued,
            events,
            errors,
        }
    }

    /// Queues `event` (one line), or drops it and counts it when the queue is full.
    pub fn send(&self, event: &impl serde::Serialize) {
        let mut line = match serde_json::to_vec(event) {
            Ok(line) => line,
            Err(_) => return self.lost(1),
        };
        line.push(b'\n');
        let len = line.len();
        if self.queued.fetch_add(len, Ordering::AcqRel) + len > MAX_QUEUED_BYTES {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return self.lost(1);
        }
        match self.tx.try_send(line) {
            Ok(()) => {
                self.events.inc();
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.queued.fetch_sub(len, Ordering::AcqRel);
                self.lost(1);
            }
        };
    }

    fn lost(&self, n: u64) {
        self.errors.get_or_create(&log_plugin()).inc_by(n);
    }
}

/// The writer thread: batches, writes, flushes, until every sender is gone.
fn write(
    mut out: Rotating,
    rx: Receiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    errors: Family<Labels, Counter>,
) {
    let mut failing = false;
    while let Ok(first) = rx.recv() {
        std::thread::sleep(GATHER);
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(line) => batch.push(line),
                Err(_) => break,
            }
        }
        let bytes: usize = batch.iter().map(Vec::len).sum();
        let mut written = 0u64;
        let mut result = Ok(());
        for line in &batch {
            result = out.write_line(line);
            if result.is_err() {
                break;
            }
            written += 1;
        }
        let result = result.and_then(|()| out.flush());
        queued.fetch_sub(bytes, Ordering::AcqRel);
        match result {
            Ok(()) => failing = false,
            Err(e) => {
                errors
                    .get_or_create(&log_plugin())
                    .inc_by(batch.len() as u64 - written);
                // Once per outage, not per batch.
                if !failing {
                    tracing::error!(error = %e, "the audit log cannot be written: events are lost until it can");
                }
                failing = true;
            }
        }
    }
    let _ = std::io::stderr().flush();
}
