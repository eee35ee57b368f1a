//! One connection of the REST API: HTTP/1.1 or h2 (hyper-util's auto builder, which reads the
//! first bytes to tell them apart), and the bounds that keep one client from holding what
//! others need:
//!
//! - **a start bound**: hyper's `header_read_timeout` runs only once the auto builder has
//!   picked HTTP/1.1, and the builder waits for the bytes that decide without a timeout, so a
//!   connection that has not sent h2's 24-byte preface's worth of bytes (shorter than any
//!   HTTP/1.1 request with its `Host` header) within [`HEADER_READ_TIMEOUT`] is closed
//!   (upstream's `ReadHeaderTimeout` counts from the connection's start too);
//! - **an idle bound**, on both versions: a connection with no request in flight (a watch is
//!   one until it ends) that has sent nothing for [`IDLE_TIMEOUT`] (by default) is shut down
//!   (h2: GOAWAY),
//!   as upstream's `IdleTimeout`. A client that sends only h2's preface, or opens connections
//!   and leaves them, held them for ever before;
//! - **h2 keep-alive**: a peer that stops answering pings is dropped, streams and all;
//! - **a bound per client** ([`Peers`]): at most so many connections from one address, and at
//!   most half the process's descriptors for the whole REST API, so one client cannot take the
//!   descriptors every other client (and the gRPC server) needs. Past it, a new connection is
//!   closed at once.

use std::{
    collections::HashMap,
    net::IpAddr,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use http_body_util::BodyExt;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto::Builder,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::Body;

/// How long a client may take to send a request's headers (slow-loris bound), counted from the
/// connection's start (after its TLS handshake).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection with nothing in flight may stay silent, by default (upstream's
/// `IdleTimeout`; `--kube-api-idle-timeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a connection shut down (idle, or the server stopping) may take to finish what it
/// was sending before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// h2 pings: every interval, and the peer must answer within the timeout.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(60);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The length of h2's connection preface: a client that has sent less by the header bound has
/// not started a request of either version.
const STARTED: u64 = 24;

/// Connections open, per client address and in all, within their bounds.
pub struct Peers {
    per_peer: usize,
    total: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
    all: AtomicUsize,
}

impl Peers {
    /// At most `per_peer` connections from one address (0: no bound per address) and `total` in
    /// all.
    pub fn new(per_peer: usize, total: usize) -> Arc<Self> {
        Arc::new(Self {
            per_peer,
            total,
            open: Mutex::new(HashMap::new()),
            all: AtomicUsize::new(0),
        })
    }

    /// The bound in all for this process: half its descriptors (the rest are the gRPC
    /// server's, storage's and the process's own), at least 256.
    pub fn total_for_this_process() -> usize {
        usize::try_from(kubestore_telemetry::process::nofile() / 2)
            .unwrap_or(usize::MAX)
            .max(256)
    }

    /// A place for a connection from `ip`, held until the guard drops; None past a bound.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<PeerGuard> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mine = open.get(&ip).copied().unwrap_or(0);
        if (self.per_peer > 0 && mine >= self.per_peer)
            || self.all.load(Ordering::Relaxed) >= self.total
        {
            return None;
        }
        open.insert(ip, mine + 1);
        self.all.fetch_add(1, Ordering::Relaxed);
        Some(PeerGuard {
            peers: self.clone(),
            ip,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.all.load(Ordering::Relaxed)
    }
}

/// A connection's place among [`Peers`].
pub struct PeerGuard {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Drop for PeerGuard {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
        self.peers.all.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection has been doing: bytes read, when last, requests in flight.
struct Activity {
    start: Instant,
    read: AtomicU64,
    /// Milliseconds after `start` of the last read.
    last_read: AtomicU64,
    in_flight: AtomicUsize,
    /// The idle bound.
    idle: Duration,
}

impl Activity {
    fn mark_read(&self, n: usize) {
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_read.store(ms, Ordering::Relaxed);
    }

    /// When the connection, if still idle then, may be shut down.
    fn idle_deadline(&self) -> Instant {
        self.start + Duration::from_millis(self.last_read.load(Ordering::Relaxed)) + self.idle
    }
}

/// Serves one connection with `service` until it ends, the server stops (`stop`: then it is
/// shut down gracefully), or a bound of the module docs closes it (`idle`: the idle bound).
pub async fn serve<IO, S>(
    io: IO,
    service: S,
    mut stop: tokio::sync::watch::Receiver<bool>,
    idle: Duration,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(250)
        .keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
    let activity = Arc::new(Activity {
        start: Instant::now(),
        read: AtomicU64::new(0),
        last_read: AtomicU64::new(0),
        in_flight: AtomicUsize::new(0),
        idle,
    });
    let io = Counted {
        inner: io,
        activity: activity.clone(),
    };
    let service = Tracked {
        inner: service,
        activity: activity.clone(),
    };
    let conn = builder
        .serve_connection(TokioIo::new(io), service)
        .into_owned();
    tokio::pin!(conn);
    let started_by = tokio::time::sleep(HEADER_READ_TIMEOUT);
    tokio::pin!(started_by);
    let mut started = false;
    let idle_check = tokio::time::sleep_until(activity.idle_deadline().into());
    tokio::pin!(idle_check);
    let stopping = async {
        while !*stop.borrow_and_update() {
            if stop.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            _ = &mut conn => return,
            () = &mut started_by, if !started => {
                if activity.read.load(Ordering::Relaxed) < STARTED {
                    return; // dropped: the connection closes.
                }
                started = true;
            }
            () = &mut idle_check => {
                let deadline = activity.idle_deadline();
                if activity.in_flight.load(Ordering::Relaxed) > 0 || deadline > Instant::now() {
                    // Busy, or it spoke since: look again a whole idle bound later.
                    let next = deadline.max(Instant::now() + Duration::from_secs(1));
                    idle_check.as_mut().reset(next.into());
                    continue;
                }
                break;
            }
            () = &mut stopping => break,
        }
    }
    // Idle, or the server stops: GOAWAY (h2) or close once the response in flight is written
    // (HTTP/1.1); dropped if that takes longer than the grace.
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
}

/// The connection's service, counting the requests in flight (a request is in flight until
/// its response body is written or dropped: an open watch keeps its connection busy).
#[derive(Clone)]
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

/// One request in flight, until dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S> hyper::service::Service<http::Request<hyper::body::Incoming>> for Tracked<S>
where
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<Body>,
            Error = std::convert::Infallible,
        >,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = Pin<
        Box<dyn Future<Output = Result<http::Response<Body>, std::convert::Infallible>> + Send>,
    >;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> Self::Future {
        self.activity.in_flight.fetch_add(1, Ordering::Relaxed);
        let guard = InFlight(self.activity.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(response.map(|body| {
                InFlightBody {
                    inner: body,
                    _guard: guard,
                }
                .boxed_unsync()
            }))
        })
    }
}

/// A response body that keeps its request in flight until it is dropped (its length, when
/// known, still says `Content-Length`).
struct InFlightBody {
    inner: Body,
    _guard: InFlight,
}

impl http_body::Body for InFlightBody {
    type Data = bytes::Bytes;
    type Error = super::BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, super::BodyError>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// An IO that notes what is read from it.
struct Counted<IO> {
    inner: IO,
    activity: Arc<Activity>,
}

impl<IO: AsyncRead + Unpin> AsyncRead for Counted<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.activity.mark_read(n);
        }
        r
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Counted<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_bounded_each_and_in_all() {
        let peers = Peers::new(2, 3);
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let a1 = peers.admit(a).expect("first");
        let _a2 = peers.admit(a).expect("second");
        assert!(peers.admit(a).is_none(), "a third from one address");
        let _b1 = peers.admit(b).expect("another address");
        assert!(peers.admit(b).is_none(), "past the total");
        drop(a1);
        assert!(peers.admit(a).is_some(), "a place freed");
        assert_eq!(peers.open(), 2);
    }
}
