//! registry-svc's client of storage-svc: every call carries the request's deadline and, through
//! the client trace layer, the trace context. GuaranteedUpdate runs the caller's update function
//! on each state storage sends, over the bidirectional stream.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use kubestore_proto::{
    meta::v1::{Preconditions, resource_version_of},
    storage::v1::{
        CreateRequest, DeleteRequest, GetRequest, GuaranteedUpdateRequest, ListRequest,
        ListResponse, UpdateAbort, UpdateProposal, UpdateResult, UpdateStart, WatchEvent,
        WatchRequest, guaranteed_update_request::Message as Req,
        guaranteed_update_response::Message as Resp, storage_client,
    },
};
use kubestore_telemetry::{Deadline, GrpcTraceLayer, GrpcTraceService};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Status, transport::Channel};

/// The traced channel to storage-svc.
pub type TracedChannel = GrpcTraceService<Channel>;

/// A cheap-to-clone storage-svc client.
#[derive(Clone)]
pub struct StorageClient {
    /// One client per connection; calls are spread round-robin.
    inner: Arc<[storage_client::StorageClient<TracedChannel>]>,
    next: Arc<AtomicUsize>,
    channel: Channel,
}

/// Connections to storage-svc. One HTTP/2 connection is driven by one task on each side, which
/// caps it at about one core's worth of frames; a few connections let both services use every
/// core under load.
pub const CONNECTIONS: usize = 4;

/// Largest response accepted from storage-svc (a List page can be large).
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// A state handed to an update function.
#[derive(Debug)]
pub struct StorageState<'a> {
    /// Encoded object (with resource_version); `None` for a missing key.
    pub object: Option<&'a [u8]>,
    /// Its resource version ("" for a missing key).
    pub resource_version: &'a str,
}

/// How a GuaranteedUpdate ended.
pub enum UpdateEnd<E> {
    /// Committed, or nothing to write.
    Done(UpdateResult),
    /// The update function's error, accepted by storage on a current state.
    Aborted(E),
}

fn with_deadline<T>(msg: T, deadline: Deadline) -> Request<T> {
    let mut r = Request::new(msg);
    r.set_timeout(deadline.remaining().max(Duration::from_millis(1)));
    r
}

impl StorageClient {
    /// A client that connects on first use and reconnects by itself.
    pub fn connect_lazy(addr: &str) -> Result<Self, tonic::transport::Error> {
        let endpoint = tonic::transport::Endpoint::from_shared(addr.to_string())?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        let channels: Vec<Channel> = (0..CONNECTIONS).map(|_| endpoint.connect_lazy()).collect();
        let inner = channels
            .iter()
            .map(|c| {
                storage_client::StorageClient::new(
                    tower::ServiceBuilder::new()
                        .layer(GrpcTraceLayer::client())
                        .service(c.clone()),
                )
                // storage-svc is trusted, and a List page may be large.
                .max_decoding_message_size(MAX_RESPONSE_BYTES)
            })
            .collect();
        Ok(Self {
            inner,
            next: Arc::new(AtomicUsize::new(0)),
            channel: channels[0].clone(),
        })
    }

    /// The next connection's client.
    fn client(&self) -> storage_client::StorageClient<TracedChannel> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.inner.len();
        self.inner[i].clone()
    }

    /// The untraced channel (health checks).
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    /// Create.
    pub async fn create(
        &self,
        deadline: Deadline,
        key: String,
        object: Vec<u8>,
        ttl_seconds: i64,
        dry_run: bool,
    ) -> Result<Vec<u8>, Status> {
        let req = CreateRequest {
            key,
            object,
            ttl_seconds,
            dry_run,
        };
        Ok(self
            .client()
            .create(with_deadline(req, deadline))
            .await?
            .into_inner()
            .object)
    }

    /// Get; `Ok(None)` for a missing key when `ignore_not_found`.
    pub async fn get(
        &self,
        deadline: Deadline,
        key: String,
        ignore_not_found: bool,
    ) -> Result<Option<Vec<u8>>, Status> {
        let req = GetRequest {
            key,
            ignore_not_found,
            resource_version: String::new(),
        };
        let resp = self
            .client()
            .get(with_deadline(req, deadline))
            .await?
            .into_inner();
        Ok(resp.found.then(|| resp.object.into()))
    }

    /// Delete.
    pub async fn delete(
        &self,
        deadline: Deadline,
        key: String,
        preconditions: Option<Preconditions>,
        dry_run: bool,
        cached_object: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, Status> {
        let req = DeleteRequest {
            key,
            preconditions,
            dry_run,
            cached_object,
        };
        Ok(self
            .client()
            .delete(with_deadline(req, deadline))
            .await?
            .into_inner()
            .object)
    }

    /// List one page.
    pub async fn list(&self, deadline: Deadline, req: ListRequest) -> Result<ListResponse, Status> {
        Ok(self
            .client()
            .list(with_deadline(req, deadline))
            .await?
            .into_inner())
    }

    /// Opens a watch: storage's event stream (no deadline: it lives until the watch ends).
    pub async fn watch(&self, req: WatchRequest) -> Result<tonic::Streaming<WatchEvent>, Status> {
        Ok(self.client().watch(Request::new(req)).await?.into_inner())
    }

    /// GuaranteedUpdate: `f` computes the new object and TTL from each state storage sends (or
    /// from `start.cached_object`, without waiting), or fails; its last error is returned as
    /// `UpdateEnd::Aborted` once storage confirms the state it failed on was current.
    pub async fn guaranteed_update<E>(
        &self,
        deadline: Deadline,
        start: UpdateStart,
        mut f: impl FnMut(StorageState<'_>) -> Result<(Vec<u8>, i64), E>,
    ) -> Result<UpdateEnd<E>, Status> {
        let (tx, rx) = mpsc::channel(4);
        let mut last_error: Option<E> = None;
        let mut answer = |state: StorageState<'_>, last_error: &mut Option<E>| {
            let based_on = state.resource_version.to_string();
            let message = match f(state) {
                Ok((object, ttl_seconds)) => Req::Proposal(UpdateProposal {
                    based_on_resource_version: based_on,
                    object,
                    ttl_seconds,
                }),
                Err(e) => {
                    *last_error = Some(e);
                    Req::Abort(UpdateAbort {
                        based_on_resource_version: based_on,
                        code: tonic::Code::Aborted as i32,
                        message: "update function failed".into(),
                    })
                }
            };
            GuaranteedUpdateRequest {
                message: Some(message),
            }
        };
        let cached = start.cached_object.clone();
        let gone = || Status::unavailable("storage-svc closed the GuaranteedUpdate stream");
        tx.send(GuaranteedUpdateRequest {
            message: Some(Req::Start(start)),
        })
        .await
        .map_err(|_| gone())?;
        if let Some(object) = &cached {
            let rv = resource_version_of(object);
            let msg = answer(
                StorageState {
                    object: Some(object),
                    resource_version: &rv,
                },
                &mut last_error,
            );
            tx.send(msg).await.map_err(|_| gone())?;
        }
        let mut responses = self
            .client()
            .guaranteed_update(with_deadline(ReceiverStream::new(rx), deadline))
            .await?
            .into_inner();
        loop {
            let msg = responses.message().await?.ok_or_else(gone)?;
            match msg.message {
                Some(Resp::State(s)) => {
                    let object = s.exists.then_some(s.object.as_slice());
                    let msg = answer(
                        StorageState {
                            object,
                            resource_version: &s.resource_version,
                        },
                        &mut last_error,
                    );
                    tx.send(msg).await.map_err(|_| gone())?;
                }
                Some(Resp::Result(r)) => {
                    drain(&mut responses).await;
                    return Ok(UpdateEnd::Done(r));
                }
                Some(Resp::Aborted(_)) => {
                    drain(&mut responses).await;
                    return last_error.map(UpdateEnd::Aborted).ok_or_else(|| {
                        Status::internal("storage reported an abort that was never sent")
                    });
                }
                None => return Err(Status::internal("empty GuaranteedUpdate response")),
            }
        }
    }
}

/// Reads a finished stream to its end, so that its status (trailers) is seen: the call is
/// recorded as OK rather than cancelled.
async fn drain<T>(responses: &mut tonic::Streaming<T>) {
    while let Ok(Some(_)) = responses.message().await {}
}
