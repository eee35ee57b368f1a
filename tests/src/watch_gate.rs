//! A gRPC proxy in front of storage-svc that can hold back what Watch streams deliver while
//! every other call goes through: a service behind it sees its watches lag (as on a loaded
//! network or storage replica) while its reads stay current. Tests use it to make a registry
//! replica answer a request before its definitions watch brought what the request needs.
//!
//! It forwards `storage.v1.Storage` and `grpc.health.v1.Health` (what registry-svc calls) as
//! raw HTTP/2 requests through a tonic `Channel`; a held Watch response keeps its frames in a
//! buffer, in order, and delivers them on [`WatchGate::release`].

use std::{
    collections::VecDeque,
    convert::Infallible,
    future::Future,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body::Frame;
use tonic::{Status, body::Body, server::NamedService, transport::Channel};
use tower::ServiceExt;

/// How often a held stream looks whether it was released.
const TICK: Duration = Duration::from_millis(10);

/// See the module docs. Dropping it stops the proxy.
pub struct WatchGate {
    /// Where clients connect.
    pub addr: SocketAddr,
    gate: Gate,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Clone, Default)]
struct Gate {
    held: Arc<AtomicBool>,
    /// Frames of Watch responses that arrived while held.
    delayed: Arc<AtomicUsize>,
    /// Watch calls storage-svc has answered (their streams are open).
    watches: Arc<AtomicUsize>,
}

impl WatchGate {
    /// Forwards to the storage-svc at `target` (a URL) from a free loopback port.
    pub async fn start(target: &str) -> Self {
        let channel = Channel::from_shared(target.to_string())
            .expect("a storage-svc URL")
            .connect_lazy();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the gate");
        let addr = listener.local_addr().expect("gate addr");
        let gate = Gate::default();
        let forward = Forward {
            channel,
            gate: gate.clone(),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(Named::<StorageName>::new(forward.clone()))
                .add_service(Named::<HealthName>::new(forward))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async {
                        let _ = stopped.await;
                    },
                ),
        );
        Self {
            addr,
            gate,
            stop: Some(stop),
        }
    }

    /// Its URL, for a service's `--storage-addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds back what every Watch stream through the gate delivers from now on.
    pub fn hold(&self) {
        self.gate.held.store(true, Ordering::SeqCst);
    }

    /// Delivers what was held, and lets everything through again.
    pub fn release(&self) {
        self.gate.held.store(false, Ordering::SeqCst);
    }

    /// Watch streams opened through the gate so far (storage-svc answered their call), so a
    /// test can wait for a service's watches to be open before it holds them.
    pub fn watches(&self) -> usize {
        self.gate.watches.load(Ordering::SeqCst)
    }

    /// Frames of Watch streams that arrived while held (so a test knows it held something).
    pub fn delayed(&self) -> usize {
        self.gate.delayed.load(Ordering::SeqCst)
    }
}

impl Drop for WatchGate {
    fn drop(&mut self) {
        self.release();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Forwards any call as it is.
#[derive(Clone)]
struct Forward {
    channel: Channel,
    gate: Gate,
}

impl tower::Service<http::Request<Body>> for Forward {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let (channel, gate) = (self.channel.clone(), self.gate.clone());
        let watch = request.uri().path().ends_with("/Watch");
        Box::pin(async move {
            match channel.oneshot(request).await {
                Ok(response) if watch => Ok(response.map(|inner| {
                    gate.watches.fetch_add(1, Ordering::SeqCst);
                    Body::new(Held {
                        inner,
                        gate,
                        buffer: VecDeque::new(),
                        ended: false,
                        tick: None,
                    })
                })),
                Ok(response) => Ok(response),
                Err(e) => Ok(Status::unavailable(format!("watch gate: {e}")).into_http()),
            }
        })
    }
}

/// A Watch response body that holds its frames while the gate is held.
struct Held {
    inner: Body,
    gate: Gate,
    buffer: VecDeque<Result<Frame<Bytes>, Status>>,
    ended: bool,
    tick: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let me = self.get_mut();
        loop {
            if !me.gate.held.load(Ordering::SeqCst) {
                if let Some(frame) = me.buffer.pop_front() {
                    return Poll::Ready(Some(frame));
                }
                if me.ended {
                    return Poll::Ready(None);
                }
                return Pin::new(&mut me.inner).poll_frame(cx);
            }
            // Held: take in what arrives (in order) and look again at the next tick.
            if !me.ended {
                match Pin::new(&mut me.inner).poll_frame(cx) {
                    Poll::Ready(Some(frame)) => {
                        me.gate.delayed.fetch_add(1, Ordering::SeqCst);
                        me.buffer.push_back(frame);
                        continue;
                    }
                    Poll::Ready(None) => me.ended = true,
                    Poll::Pending => {}
                }
            }
            let tick = me
                .tick
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(TICK)));
            if tick.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            me.tick = None;
        }
    }
}

/// A service's gRPC name, for routing.
trait ServiceName: Send + Sync + 'static {
    const NAME: &'static str;
}

struct StorageName;
impl ServiceName for StorageName {
    const NAME: &'static str = "storage.v1.Storage";
}

struct HealthName;
impl ServiceName for HealthName {
    const NAME: &'static str = "grpc.health.v1.Health";
}

/// [`Forward`] under the name `N`.
struct Named<N> {
    forward: Forward,
    name: std::marker::PhantomData<fn() -> N>,
}

impl<N> Named<N> {
    fn new(forward: Forward) -> Self {
        Self {
            forward,
            name: std::marker::PhantomData,
        }
    }
}

impl<N> Clone for Named<N> {
    fn clone(&self) -> Self {
        Self::new(self.forward.clone())
    }
}

impl<N: ServiceName> NamedService for Named<N> {
    const NAME: &'static str = N::NAME;
}

impl<N> tower::Service<http::Request<Body>> for Named<N> {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = <Forward as tower::Service<http::Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.forward.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        self.forward.call(request)
    }
}
