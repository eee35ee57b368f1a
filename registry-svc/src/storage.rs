//! registry-svc's client of storage-svc (one or more replicas, see [`StorageClient`]): every
//! call carries the request's deadline and, through the client trace layer, the trace context. GuaranteedUpdate runs the caller's update function
//! on each state storage sends, over the bidirectional stream.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use kubestore_proto::{
    meta::v1::{Preconditions, resource_version_of},
    storage::v1::{
        CreateRequest, DeleteRequest, GetRequest, GuaranteedUpdateRequest, ListRequest,
        ListResponse, UpdateAbort, UpdateProposal, UpdateResult, UpdateStart, WatchRequest,
        guaranteed_update_request::Message as Req, guaranteed_update_response::Message as Resp,
        storage_client,
    },
};
use kubestore_telemetry::{Deadline, GrpcTraceLayer, GrpcTraceService};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Status, transport::Channel};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use tonic_types::StatusExt;

use prometheus_client::metrics::counter::Counter;

use crate::relay::Relay;

/// The traced channel to storage-svc.
pub type TracedChannel = GrpcTraceService<Channel>;

/// One storage-svc replica: a few connections, and whether it answers.
struct Replica {
    addr: String,
    /// One client per connection; calls are spread round-robin.
    clients: Vec<storage_client::StorageClient<TracedChannel>>,
    next: AtomicUsize,
    /// Connections of watches only (see [`WATCH_CONNECTIONS`]).
    watch_clients: Vec<storage_client::StorageClient<TracedChannel>>,
    next_watch: AtomicUsize,
    /// Untraced, for health checks.
    channel: Channel,
    /// SERVING at the last health check, and no transport failure since.
    healthy: AtomicBool,
}

/// A cheap-to-clone client of one or more storage-svc replicas.
///
/// Replicas are interchangeable (each is a full storage-svc over the same etcd; the per-key
/// update queue is an optimisation within one replica, never needed for correctness: every
/// write is a compare-and-swap txn). Calls go round-robin to the replicas that answer: each is
/// health-checked twice a second, and one whose connection fails is skipped at once until it
/// answers again. A call already on a replica that dies fails UNAVAILABLE (its outcome unknown
/// to us, so it is not retried on another replica: that is the caller's choice, as for any
/// UNAVAILABLE).
#[derive(Clone)]
pub struct StorageClient {
    replicas: Arc<[Replica]>,
    next: Arc<AtomicUsize>,
    /// `registry_watchers_cut_off_total`: watches cut off because their client stopped reading.
    watchers_cut_off: Counter,
    /// Storage streams shared by client watches asking for the same events.
    shared: crate::shared_watch::SharedWatches,
    /// kube-apiserver's request metrics (`metrics`), recorded by the handlers through every
    /// Store, which all hold this client.
    pub(crate) api: crate::metrics::ApiMetrics,
    /// The namespaces being deleted, where nothing is created (`lifecycle`).
    pub(crate) lifecycle: Arc<crate::lifecycle::Lifecycle>,
    /// Admission, which every Store calls on every write (`admission`).
    pub(crate) admission: Arc<crate::admission::Admission>,
}

/// Connections to storage-svc. One HTTP/2 connection is driven by one task on each side, which
/// caps it at about one core's worth of frames; a few connections let both services use every
/// core under load.
pub const CONNECTIONS: usize = 4;

/// Connections to storage-svc that carry watches and nothing else. A watch stream holds
/// flow-control window for what it received and nobody read yet; on connections of their own,
/// watches can never take the window unary calls need, whatever their clients do (the relay,
/// `relay`, bounds how long one watch may hold it).
pub const WATCH_CONNECTIONS: usize = 4;

/// Flow-control window of one watch stream to storage-svc: a slow watch holds at most this.
const WATCH_STREAM_WINDOW: u32 = 1 << 20;
/// Flow-control window of one watch connection: room for many watches at their full window.
const WATCH_CONNECTION_WINDOW: u32 = 64 << 20;

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

/// A state handed to an update function that may wait: owned, so the function's future does
/// not borrow the stream's message.
#[derive(Debug)]
pub struct OwnedState {
    /// Encoded object; `None` for a missing key.
    pub object: Option<Vec<u8>>,
    /// Its resource version ("" for a missing key).
    pub resource_version: String,
}

impl OwnedState {
    /// The state as a synchronous update function takes it.
    pub fn borrowed(&self) -> StorageState<'_> {
        StorageState {
            object: self.object.as_deref(),
            resource_version: &self.resource_version,
        }
    }
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
    /// A client of the replicas at `addrs` (comma-separated URLs) that connects on first use
    /// and reconnects by itself. Call [`Self::check_health`] to follow the replicas' health.
    /// With `tls`, every replica is reached over TLS (its URL https://).
    pub fn connect_lazy(
        addrs: &str,
        tls: Option<tonic::transport::ClientTlsConfig>,
    ) -> Result<Self, tonic::transport::Error> {
        let replicas = addrs
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| Replica::connect_lazy(a, tls.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        if replicas.is_empty() {
            // An empty list is a bad URL like any other.
            tonic::transport::Endpoint::from_shared(String::new())?;
        }
        Ok(Self {
            replicas: replicas.into(),
            next: Arc::new(AtomicUsize::new(0)),
            watchers_cut_off: Counter::default(),
            shared: crate::shared_watch::SharedWatches::default(),
            api: crate::metrics::ApiMetrics::default(),
            lifecycle: Arc::default(),
            admission: Arc::new(crate::admission::Admission::new(
                Arc::default(),
                &crate::admission::config::Settings {
                    pod_security: Some(Default::default()),
                    validating_admission_policy: true,
                    mutating_admission_webhook: true,
                    validating_admission_webhook: true,
                    resource_quota: true,
                },
            )),
        })
    }

    /// Registers the client's metrics in `metrics`.
    pub fn register_metrics(&self, metrics: &kubestore_telemetry::Metrics) {
        metrics.register(
            "registry_watchers_cut_off",
            "Watches cut off because their client stopped reading and registry-svc's buffer stayed full",
            self.watchers_cut_off.clone(),
        );
        metrics.register(
            "registry_watches_shared",
            "Client watches that joined a storage stream another watch of the same events had opened",
            self.shared.joined.clone(),
        );
        self.api.register(metrics);
    }

    /// Health-checks every replica twice a second until the task is aborted.
    pub fn check_health(&self) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                for r in me.replicas.iter() {
                    let ok = r.serving().await;
                    if r.healthy.swap(ok, Ordering::Relaxed) != ok {
                        if ok {
                            tracing::info!(replica = %r.addr, "storage-svc replica answers again");
                        } else {
                            tracing::warn!(replica = %r.addr, "storage-svc replica does not answer; calls go to the others");
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    }

    /// Whether some replica answers.
    pub fn any_healthy(&self) -> bool {
        self.replicas
            .iter()
            .any(|r| r.healthy.load(Ordering::Relaxed))
    }

    /// The replica for the next call: round-robin over those that answer (over all when none
    /// does, so calls fail with the real error rather than a made-up one).
    fn pick(&self) -> usize {
        let n = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.replicas[i].healthy.load(Ordering::Relaxed))
            .unwrap_or(start % n)
    }

    /// The next call's replica and client.
    fn client(&self) -> (usize, storage_client::StorageClient<TracedChannel>) {
        let i = self.pick();
        (i, self.replicas[i].client())
    }

    /// Notes how a call to replica `i` went: a failure of the connection itself (no status
    /// from storage's handlers) takes the replica out of rotation until its health check
    /// passes again.
    fn observe<T>(&self, i: usize, r: Result<T, Status>) -> Result<T, Status> {
        if let Err(s) = &r
            && matches!(s.code(), Code::Unavailable | Code::Unknown | Code::Internal)
            && s.get_details_error_info().is_none()
            && self.replicas.len() > 1
            && self.replicas[i].healthy.swap(false, Ordering::Relaxed)
        {
            tracing::warn!(replica = %self.replicas[i].addr, error = %s.message(), "storage-svc replica failed; calls go to the others");
        }
        r
    }

    /// The untraced channel of a replica that answers (health checks).
    pub fn channel(&self) -> Channel {
        self.replicas[self.pick()].channel.clone()
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
        let (i, mut c) = self.client();
        let r = c.create(with_deadline(req, deadline)).await;
        Ok(self.observe(i, r)?.into_inner().object)
    }

    /// Get (consistent); `Ok(None)` for a missing key when `ignore_not_found`.
    pub async fn get(
        &self,
        deadline: Deadline,
        key: String,
        ignore_not_found: bool,
    ) -> Result<Option<Vec<u8>>, Status> {
        self.get_at(deadline, key, ignore_not_found, "").await
    }

    /// Get at `resource_version` ("": consistent; "0": any, such as the watch cache's copy).
    pub async fn get_at(
        &self,
        deadline: Deadline,
        key: String,
        ignore_not_found: bool,
        resource_version: &str,
    ) -> Result<Option<Vec<u8>>, Status> {
        let req = GetRequest {
            key,
            ignore_not_found,
            resource_version: resource_version.to_string(),
        };
        let (i, mut c) = self.client();
        let r = c.get(with_deadline(req, deadline)).await;
        let resp = self.observe(i, r)?.into_inner();
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
        let (i, mut c) = self.client();
        let r = c.delete(with_deadline(req, deadline)).await;
        Ok(self.observe(i, r)?.into_inner().object)
    }

    /// List one page.
    pub async fn list(&self, deadline: Deadline, req: ListRequest) -> Result<ListResponse, Status> {
        let (i, mut c) = self.client();
        let r = c.list(with_deadline(req, deadline)).await;
        Ok(self.observe(i, r)?.into_inner())
    }

    /// Opens a watch on a watch connection: storage's event stream (no deadline: it lives
    /// until the watch ends), read by a [`Relay`] so an idle client cannot stall storage's
    /// connection. A watch whose events its request fixes joins a stream already open for the
    /// same events, or opens one others may join (`shared_watch`).
    pub async fn watch(&self, req: WatchRequest) -> Result<Relay, Status> {
        let share = crate::shared_watch::ShareKey::of(&req);
        if let Some((key, rv)) = &share
            && let Some(relay) = self.shared.join(key, *rv)
        {
            return Ok(relay);
        }
        let i = self.pick();
        let mut c = self.replicas[i].watch_client();
        let open = async move {
            let r = c.watch(Request::new(req)).await;
            Ok(self.observe(i, r)?.into_inner())
        };
        match share {
            Some((key, rv)) => {
                self.shared
                    .open(key, rv, open, self.watchers_cut_off.clone())
                    .await
            }
            None => Ok(Relay::start(open.await?, self.watchers_cut_off.clone())),
        }
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
        self.guaranteed_update_async(deadline, start, |state: OwnedState| {
            std::future::ready(f(state.borrowed()))
        })
        .await
    }

    /// [`Self::guaranteed_update`] with an update function that may wait (admission webhooks
    /// are called inside it, on each attempt's state, as upstream calls them inside its
    /// GuaranteedUpdate). The stream to storage stays open while it runs, within `deadline`.
    pub async fn guaranteed_update_async<E, F>(
        &self,
        deadline: Deadline,
        start: UpdateStart,
        mut f: impl FnMut(OwnedState) -> F,
    ) -> Result<UpdateEnd<E>, Status>
    where
        F: Future<Output = Result<(Vec<u8>, i64), E>>,
    {
        let (tx, rx) = mpsc::channel(4);
        let mut last_error: Option<E> = None;
        let answer =
            |based_on: String, result: Result<(Vec<u8>, i64), E>, last_error: &mut Option<E>| {
                let message = match result {
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
        if let Some(object) = cached {
            let rv = resource_version_of(&object);
            let result = f(OwnedState {
                object: Some(object.to_vec()),
                resource_version: rv.clone(),
            })
            .await;
            let msg = answer(rv, result, &mut last_error);
            tx.send(msg).await.map_err(|_| gone())?;
        }
        let (i, mut c) = self.client();
        let r = c
            .guaranteed_update(with_deadline(ReceiverStream::new(rx), deadline))
            .await;
        let mut responses = self.observe(i, r)?.into_inner();
        loop {
            let msg = responses.message().await?.ok_or_else(gone)?;
            match msg.message {
                Some(Resp::State(s)) => {
                    let rv = s.resource_version.clone();
                    let result = f(OwnedState {
                        object: s.exists.then_some(s.object),
                        resource_version: s.resource_version,
                    })
                    .await;
                    let msg = answer(rv, result, &mut last_error);
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

impl Replica {
    fn connect_lazy(
        addr: &str,
        tls: Option<tonic::transport::ClientTlsConfig>,
    ) -> Result<Self, tonic::transport::Error> {
        let mut endpoint = tonic::transport::Endpoint::from_shared(addr.to_string())?;
        if let Some(tls) = tls {
            endpoint = endpoint.tls_config(tls)?;
        }
        let endpoint = endpoint
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        let channels: Vec<Channel> = (0..CONNECTIONS).map(|_| endpoint.connect_lazy()).collect();
        let watch_endpoint = endpoint
            .initial_stream_window_size(WATCH_STREAM_WINDOW)
            .initial_connection_window_size(WATCH_CONNECTION_WINDOW);
        let watch_channels: Vec<Channel> = (0..WATCH_CONNECTIONS)
            .map(|_| watch_endpoint.connect_lazy())
            .collect();
        let traced = |c: &Channel| {
            storage_client::StorageClient::new(
                tower::ServiceBuilder::new()
                    .layer(GrpcTraceLayer::client())
                    .service(c.clone()),
            )
            // storage-svc is trusted, and a List page may be large.
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
        };
        Ok(Self {
            addr: addr.to_string(),
            clients: channels.iter().map(traced).collect(),
            next: AtomicUsize::new(0),
            watch_clients: watch_channels.iter().map(traced).collect(),
            next_watch: AtomicUsize::new(0),
            channel: channels[0].clone(),
            healthy: AtomicBool::new(true),
        })
    }

    fn client(&self) -> storage_client::StorageClient<TracedChannel> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len();
        self.clients[i].clone()
    }

    fn watch_client(&self) -> storage_client::StorageClient<TracedChannel> {
        let i = self.next_watch.fetch_add(1, Ordering::Relaxed) % self.watch_clients.len();
        self.watch_clients[i].clone()
    }

    /// Whether the replica says SERVING within a second.
    async fn serving(&self) -> bool {
        let mut client = HealthClient::new(self.channel.clone());
        let mut req = Request::new(HealthCheckRequest {
            service: String::new(),
        });
        req.set_timeout(Duration::from_secs(1));
        matches!(
            tokio::time::timeout(Duration::from_secs(1), client.check(req)).await,
            Ok(Ok(r)) if r.get_ref().status() == ServingStatus::Serving
        )
    }
}

/// Reads a finished stream to its end, so that its status (trailers) is seen: the call is
/// recorded as OK rather than cancelled.
async fn drain<T>(responses: &mut tonic::Streaming<T>) {
    while let Ok(Some(_)) = responses.message().await {}
}
