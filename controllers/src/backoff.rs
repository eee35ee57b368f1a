//! How the node agent waits before it tries a refused write again.
//!
//! The kubelet never gives up on a pod's status or its final delete: its pod workers and status
//! manager sync again and again until the API server takes the write. The agent does the same,
//! per pod, waiting between tries:
//!
//! - what the server asked for, when a refusal carries a `google.rpc.RetryInfo`
//!   (RESOURCE_EXHAUSTED `TooManyRequests` from `--max-requests-inflight` says one second:
//!   upstream's `Retry-After`, which client-go honours);
//! - otherwise, for a transient refusal (UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED,
//!   CANCELLED, ABORTED, UNKNOWN), an exponential delay from [`INITIAL`] doubling up to [`MAX`];
//! - for any other refusal (the request itself is wrong, which only a change of the pod can
//!   fix), the kubelet's status sync period, [`RESYNC`].
//!
//! A tenth of the delay is added at random, so that the many pods a refusal hit at once do not
//! all come back in the same instant.

use std::{
    hash::{BuildHasher, RandomState},
    time::Duration,
};

use tonic::{Code, Status};
use tonic_types::StatusExt;

/// The first delay after a transient refusal.
pub const INITIAL: Duration = Duration::from_millis(200);
/// The longest delay after transient refusals in a row.
pub const MAX: Duration = Duration::from_secs(5);
/// The delay after a refusal that retrying as such will not fix (the kubelet's status manager
/// syncs every 10 s).
pub const RESYNC: Duration = Duration::from_secs(10);
/// The longest `RetryInfo` delay honoured: a server's hint is network input, and a pod must not
/// wait for hours because of one.
pub const MAX_HINT: Duration = Duration::from_secs(60);

/// Whether `code` says "the same call may succeed later".
pub fn transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::ResourceExhausted
            | Code::DeadlineExceeded
            // tonic's own client-side timeout (`grpc-timeout` ran out) and lost connections.
            | Code::Cancelled
            | Code::Aborted
            | Code::Unknown
    )
}

/// The delay a refusal asks for (`google.rpc.RetryInfo`), at most [`MAX_HINT`].
pub fn hint(status: &Status) -> Option<Duration> {
    status
        .get_details_retry_info()
        .and_then(|r| r.retry_delay)
        .map(|d| d.min(MAX_HINT))
}

/// The delays of one pod's tries: see the module docs.
#[derive(Debug, Clone)]
pub struct Backoff {
    /// The next exponential delay.
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: INITIAL }
    }
}

impl Backoff {
    /// How long to wait after `status` before trying again.
    pub fn delay(&mut self, status: &Status) -> Duration {
        let exponential = self.next;
        self.next = (self.next * 2).min(MAX);
        let base = match hint(status) {
            Some(d) => d,
            None if transient(status.code()) => exponential,
            None => RESYNC,
        };
        base + jitter(base / 10)
    }
}

/// A random duration in `[0, max]`.
fn jitter(max: Duration) -> Duration {
    // A fresh RandomState is randomly keyed: randomness enough for spreading retries, without
    // a dependency for it.
    let r = RandomState::new().hash_one(std::time::Instant::now());
    let nanos = max.as_nanos() as u64;
    Duration::from_nanos(if nanos == 0 { 0 } else { r % (nanos + 1) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_types::ErrorDetails;

    #[test]
    fn a_retry_hint_wins_else_the_delay_doubles_up_to_the_cap() {
        let mut b = Backoff::default();
        let busy = |secs| {
            let mut d = ErrorDetails::new();
            d.set_retry_info(Some(Duration::from_secs(secs)));
            Status::with_error_details(Code::ResourceExhausted, "too many requests", d)
        };
        let within = |d: Duration, base: Duration| d >= base && d <= base + base / 10;
        let hinted = b.delay(&busy(1));
        assert!(within(hinted, Duration::from_secs(1)), "{hinted:?}");
        let unavailable = Status::unavailable("down");
        // The hinted try counted: the exponential delay went on doubling meanwhile.
        let d = b.delay(&unavailable);
        assert!(within(d, INITIAL * 2), "{d:?}");
        for _ in 0..10 {
            b.delay(&unavailable);
        }
        let d = b.delay(&unavailable);
        assert!(within(d, MAX), "{d:?}");
        let d = b.delay(&busy(3600));
        assert!(within(d, MAX_HINT), "a hint is bounded: {d:?}");
        let d = b.delay(&Status::invalid_argument("bad"));
        assert!(within(d, RESYNC), "{d:?}");
    }
}
