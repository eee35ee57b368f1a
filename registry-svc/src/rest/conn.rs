//! One connection of the REST API: HTTP/1.1 or h2 (hyper-util's auto builder, which reads the
//! first bytes to tell them apart), with a bound on how long a client may take to start.
//!
//! hyper's `header_read_timeout` runs only once the auto builder has picked HTTP/1.1, and the
//! builder waits for the bytes that decide without a timeout: a client that connects and sends
//! nothing (or the first bytes of h2's preface and no more) would hold its connection and task
//! for ever. Upstream's `ReadHeaderTimeout` counts from the connection's start, so here a
//! connection that has not sent h2's 24-byte preface's worth of bytes (shorter than any
//! HTTP/1.1 request with its `Host` header) within the header bound is closed.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::{conn::auto::Builder, graceful::Watcher},
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a client may take to send a request's headers (slow-loris bound), counted from the
/// connection's start (after its TLS handshake).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The length of h2's connection preface: a client that has sent less by the header bound has
/// not started a request of either version.
const STARTED: usize = 24;

/// Serves one connection with `service` until it ends, the server drains it (`watcher`), or
/// its client has not started within [`HEADER_READ_TIMEOUT`].
pub async fn serve<IO, S>(io: IO, service: S, watcher: Watcher)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<super::Body>,
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
        .max_concurrent_streams(250);
    let read = Arc::new(AtomicUsize::new(0));
    let io = Counted {
        inner: io,
        read: read.clone(),
    };
    let conn = watcher.watch(
        builder
            .serve_connection(TokioIo::new(io), service)
            .into_owned(),
    );
    tokio::pin!(conn);
    tokio::select! {
        _ = &mut conn => {}
        () = tokio::time::sleep(HEADER_READ_TIMEOUT) => {
            if read.load(Ordering::Relaxed) >= STARTED {
                let _ = conn.await;
            }
            // else: dropped, which closes the connection.
        }
    }
}

/// An IO that counts the bytes read from it.
struct Counted<IO> {
    inner: IO,
    read: Arc<AtomicUsize>,
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
            self.read.fetch_add(n, Ordering::Relaxed);
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
