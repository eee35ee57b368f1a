//! Idle webhook connections, kept for the next call to the same webhook.
//!
//! Upstream's webhook client is client-go's, over Go's `http.Transport` with client-go's
//! defaults (`utilnet.SetTransportDefaults`: 25 idle connections per host, closed after 90 s
//! idle): a webhook called on every write costs one TLS handshake per connection, not per
//! call. Opening one per call made a webhook on loopback add 22–26 ms at 64 concurrent
//! writers, nearly all of it handshakes (BENCHMARKS.md, issue 33).
//!
//! A connection is put back only after its answer was read whole with a success status; one that
//! timed out, answered too much or failed is dropped, and dropping it aborts its driver task.
//! The pool is bounded: [`PER_TARGET`] connections per webhook target (its address, TLS name
//! and caBundle), [`MAX_IDLE`] in all (the target idle longest loses its connections first),
//! and none older than [`IDLE_TIMEOUT`] is handed out. Its lock is never held across an await.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;

/// Idle connections kept per target (client-go's `MaxIdleConnsPerHost`).
pub const PER_TARGET: usize = 25;
/// Idle connections kept in all: each is a socket and a TLS session.
pub const MAX_IDLE: usize = 256;
/// How long an idle connection may wait for its next call (Go's `IdleConnTimeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Aborts a connection's driver task when dropped, however the connection's use ends.
#[derive(Debug)]
pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An open HTTP/1.1 connection to a webhook.
#[derive(Debug)]
pub(super) struct Connection {
    pub(super) sender: SendRequest<Full<Bytes>>,
    pub(super) _driver: AbortOnDrop,
}

/// Where a connection leads: the address dialled, the TLS server name, and the SHA-256 of the
/// caBundle trusted (two webhooks on one address with different bundles share nothing).
pub(super) type Key = (String, String, [u8; 32]);

#[derive(Debug, Default)]
struct Idle {
    /// Per target: its connections, most recently returned last, each with when it was.
    targets: HashMap<Key, Vec<(Connection, Instant)>>,
    count: usize,
}

/// The idle connections of a [`Client`](super::client::Client).
#[derive(Debug, Default)]
pub(super) struct Pool {
    idle: Mutex<Idle>,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection to `key` that is still open and younger than [`IDLE_TIMEOUT`]
    /// (the most recently used one: the likeliest to be open still); older or closed ones
    /// met on the way are dropped.
    pub(super) fn take(&self, key: &Key) -> Option<Connection> {
        let mut idle = self.lock();
        let now = Instant::now();
        let mut found = None;
        let mut dropped = 0;
        if let Some(list) = idle.targets.get_mut(key) {
            while let Some((conn, since)) = list.pop() {
                if now.duration_since(since) < IDLE_TIMEOUT && !conn.sender.is_closed() {
                    found = Some(conn);
                    break;
                }
                dropped += 1;
            }
            let before = list.len();
            list.retain(|(c, since)| {
                now.duration_since(*since) < IDLE_TIMEOUT && !c.sender.is_closed()
            });
            dropped += before - list.len();
            if list.is_empty() {
                idle.targets.remove(key);
            }
        }
        idle.count -= dropped + usize::from(found.is_some());
        found
    }

    /// Keeps `conn` for the next call to `key`, unless it is closed or the bounds are met.
    pub(super) fn put(&self, key: Key, conn: Connection) {
        if conn.sender.is_closed() {
            return;
        }
        let mut idle = self.lock();
        // The target's expired or closed connections go first: they must not keep a live one
        // out.
        let now = Instant::now();
        if let Some(list) = idle.targets.get_mut(&key) {
            let before = list.len();
            list.retain(|(c, since)| {
                now.duration_since(*since) < IDLE_TIMEOUT && !c.sender.is_closed()
            });
            let (dropped, empty) = (before - list.len(), list.is_empty());
            idle.count -= dropped;
            if empty {
                idle.targets.remove(&key);
            }
        }
        if idle
            .targets
            .get(&key)
            .is_some_and(|l| l.len() >= PER_TARGET)
        {
            return;
        }
        if idle.count >= MAX_IDLE {
            // Make room: the target whose newest connection is the oldest loses them all.
            let stalest = idle
                .targets
                .iter()
                .filter(|(k, _)| **k != key)
                .min_by_key(|(_, l)| l.last().map(|(_, since)| *since))
                .map(|(k, _)| k.clone());
            match stalest.and_then(|k| idle.targets.remove(&k)) {
                Some(removed) => idle.count -= removed.len(),
                None => return,
            }
        }
        idle.targets
            .entry(key)
            .or_default()
            .push((conn, Instant::now()));
        idle.count += 1;
    }

    /// Idle connections kept now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection over an in-memory pipe; `close` drops the far end.
    async fn connection() -> (Connection, tokio::io::DuplexStream) {
        let (near, far) = tokio::io::duplex(1024);
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(near))
                .await
                .expect("handshake");
        let driver = AbortOnDrop(tokio::spawn(async move {
            let _ = conn.await;
        }));
        (
            Connection {
                sender,
                _driver: driver,
            },
            far,
        )
    }

    fn key(n: u8) -> Key {
        (format!("127.0.0.1:{n}"), "name".into(), [n; 32])
    }

    #[tokio::test]
    async fn connections_are_kept_per_target_and_bounded() {
        let pool = Pool::default();
        let mut ends = Vec::new();
        for _ in 0..PER_TARGET + 3 {
            let (c, far) = connection().await;
            ends.push(far);
            pool.put(key(1), c);
        }
        assert_eq!(pool.len(), PER_TARGET, "at most {PER_TARGET} per target");
        assert!(
            pool.take(&key(2)).is_none(),
            "nothing kept for another target"
        );
        assert!(pool.take(&key(1)).is_some());
        assert_eq!(pool.len(), PER_TARGET - 1);
    }

    #[tokio::test]
    async fn a_connection_closed_while_idle_is_not_handed_out() {
        let pool = Pool::default();
        let (c, far) = connection().await;
        pool.put(key(1), c);
        drop(far);
        // The driver sees the end of the pipe and closes the connection.
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(pool.take(&key(1)).is_none());
        assert_eq!(pool.len(), 0, "the closed connection was dropped");
    }

    #[tokio::test]
    async fn the_stalest_target_makes_room() {
        let pool = Pool::default();
        let mut ends = Vec::new();
        for i in 0..MAX_IDLE {
            let (c, far) = connection().await;
            ends.push(far);
            pool.put(key(u8::try_from(i / PER_TARGET).expect("few targets")), c);
        }
        assert_eq!(pool.len(), MAX_IDLE);
        let (c, far) = connection().await;
        ends.push(far);
        pool.put(key(200), c);
        assert!(pool.len() <= MAX_IDLE);
        assert!(
            pool.take(&key(200)).is_some(),
            "the new target's connection is kept"
        );
        assert!(
            pool.take(&key(0)).is_none(),
            "the stalest target lost its connections"
        );
    }
}
