//! The gRPC face of the store: decodes requests, runs the store operation, encodes responses.
//! No storage logic lives here.

use std::sync::Arc;

use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use kubestore_proto::storage::v1::{
    CreateRequest, CreateResponse, CurrentState, DeleteRequest, DeleteResponse, GetRequest,
    GetResponse, GuaranteedUpdateRequest, GuaranteedUpdateResponse, ListRequest, ListResponse,
    UpdateAborted, UpdateResult, WatchEvent, WatchRequest, guaranteed_update_request,
    guaranteed_update_response, storage_server::Storage,
};
use kubestore_telemetry::Deadline;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;

use crate::{
    error::StorageError,
    list,
    selector::Selector,
    state::ObjState,
    store::Store,
    update::{Answer, UpdateOutcome, UpdatePeer, UpdateRequest},
    watch::{self, EndSlot},
};

/// The `storage.v1.Storage` service.
#[derive(Clone)]
pub struct StorageService {
    store: Arc<Store>,
}

impl StorageService {
    /// Serves `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }
}

type UpdateStream = ReceiverStream<Result<GuaranteedUpdateResponse, Status>>;

/// A watch's events, then the status it ended with (OK when it ended normally).
pub struct EventStream {
    events: mpsc::Receiver<WatchEvent>,
    end: EndSlot,
    done: bool,
}

impl EventStream {
    fn ended(&mut self) -> Option<Result<WatchEvent, Status>> {
        self.done = true;
        let e = self.end.lock().ok().and_then(|mut s| s.take())?;
        Some(Err(Status::from(e)))
    }
}

impl tokio_stream::Stream for EventStream {
    type Item = Result<WatchEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        // A watch cut off for being slow, or ended by shutdown, reports so at once: the
        // events still buffered would be sent again on resume anyway.
        let cut = self.end.lock().is_ok_and(|s| {
            s.as_ref().is_some_and(|e| {
                matches!(
                    e,
                    StorageError::WatcherTooSlow { .. } | StorageError::Unavailable { .. }
                )
            })
        });
        if cut {
            return Poll::Ready(self.ended());
        }
        match self.events.poll_recv(cx) {
            Poll::Ready(Some(ev)) => Poll::Ready(Some(Ok(ev))),
            Poll::Ready(None) => Poll::Ready(self.ended()),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[tonic::async_trait]
impl Storage for StorageService {
    async fn create(
        &self,
        request: Request<CreateRequest>,
    ) -> Result<Response<CreateResponse>, Status> {
        let deadline = self.store.deadline(request.metadata());
        let r = request.into_inner();
        let out = self
            .store
            .create(&r.key, &r.object, r.ttl_seconds, r.dry_run, deadline)
            .await?;
        Ok(Response::new(CreateResponse {
            resource_version: out.resource_version(),
            object: out.object.into(),
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let deadline = self.store.deadline(request.metadata());
        let r = request.into_inner();
        let out = self
            .store
            .get(&r.key, r.ignore_not_found, &r.resource_version, deadline)
            .await?;
        Ok(Response::new(match out {
            Some(v) => GetResponse {
                resource_version: v.resource_version(),
                object: v.object,
                found: true,
            },
            None => GetResponse::default(),
        }))
    }

    type GuaranteedUpdateStream = UpdateStream;

    async fn guaranteed_update(
        &self,
        request: Request<Streaming<GuaranteedUpdateRequest>>,
    ) -> Result<Response<UpdateStream>, Status> {
        let deadline = self.store.deadline(request.metadata());
        let mut inbound = request.into_inner();
        let start = match tokio::time::timeout_at(deadline.instant(), inbound.message()).await {
            Ok(Ok(Some(GuaranteedUpdateRequest {
                message: Some(guaranteed_update_request::Message::Start(s)),
            }))) => s,
            Ok(Ok(Some(_))) => {
                return Err(StorageError::invalid(
                    "",
                    "the first message of a GuaranteedUpdate must be `start`",
                )
                .into());
            }
            Ok(Ok(None)) => {
                return Err(StorageError::invalid("", "stream closed before `start`").into());
            }
            Ok(Err(status)) => return Err(status),
            Err(_) => {
                return Err(Status::deadline_exceeded(
                    "no `start` message before the deadline",
                ));
            }
        };
        let (tx, rx) = mpsc::channel(4);
        let store = self.store.clone();
        let outbound = tx.clone();
        let update = async move {
            let mut peer = StreamPeer {
                inbound,
                outbound,
                deadline,
                key: start.key.clone(),
            };
            let req = UpdateRequest {
                key: &start.key,
                preconditions: start.preconditions.as_ref(),
                ignore_not_found: start.ignore_not_found,
                dry_run: start.dry_run,
                cached: start.cached_object.as_deref(),
            };
            match store.guaranteed_update(req, &mut peer, deadline).await {
                Ok(UpdateOutcome::Done {
                    result,
                    attempts,
                    written,
                }) => Ok(guaranteed_update_response::Message::Result(UpdateResult {
                    resource_version: result.resource_version(),
                    object: result.object.into(),
                    attempts,
                    written,
                })),
                Ok(UpdateOutcome::Aborted { attempts }) => Ok(
                    guaranteed_update_response::Message::Aborted(UpdateAborted { attempts }),
                ),
                Err(e) => Err(Status::from(e)),
            }
        };
        // The loop runs in its own task, inside this RPC's span. A panic in it must not end the
        // stream with OK and no result: it ends with INTERNAL.
        let loop_task = tokio::spawn(update.instrument(tracing::Span::current()));
        tokio::spawn(async move {
            let message = match loop_task.await {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(error = %e, "GuaranteedUpdate task failed");
                    Err(Status::from(StorageError::internal(
                        "",
                        "the update loop failed unexpectedly (a bug): nothing more was written",
                    )))
                }
            };
            let _ = tx
                .send(message.map(|m| GuaranteedUpdateResponse { message: Some(m) }))
                .await;
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<ListResponse>, Status> {
        let deadline = self.store.deadline(request.metadata());
        let r = request.into_inner();
        let selector = Selector::from_proto(&r.key, r.selector.as_ref())?;
        let page = self
            .store
            .list(
                list::ListRequest {
                    key: &r.key,
                    recursive: r.recursive,
                    resource_version: &r.resource_version,
                    resource_version_match: r.resource_version_match,
                    limit: r.limit,
                    continue_token: &r.r#continue,
                    selector,
                },
                deadline,
            )
            .await?;
        Ok(Response::new(ListResponse {
            items: page.items,
            resource_version: page.rev.to_string(),
            r#continue: page.continue_token.unwrap_or_default(),
            remaining_item_count: page.remaining_item_count,
        }))
    }

    type WatchStream = EventStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<EventStream>, Status> {
        let r = request.into_inner();
        let selector = Selector::from_proto(&r.key, r.selector.as_ref())?;
        if r.timeout_seconds < 0 {
            return Err(StorageError::invalid(
                &r.key,
                format!(
                    "timeout_seconds must not be negative, got {}",
                    r.timeout_seconds
                ),
            )
            .into());
        }
        let handle = self
            .store
            .watch(watch::WatchRequest {
                key: r.key,
                recursive: r.recursive,
                resource_version: r.resource_version,
                send_initial_events: r.send_initial_events,
                bookmarks: r.allow_watch_bookmarks,
                selector,
                timeout: (r.timeout_seconds > 0)
                    .then(|| Duration::from_secs(r.timeout_seconds.unsigned_abs())),
            })
            .await?;
        Ok(Response::new(EventStream {
            events: handle.events,
            end: handle.end,
            done: false,
        }))
    }

    async fn delete(
        &self,
        request: Request<DeleteRequest>,
    ) -> Result<Response<DeleteResponse>, Status> {
        let deadline = self.store.deadline(request.metadata());
        let r = request.into_inner();
        let out = self
            .store
            .delete(
                &r.key,
                r.preconditions.as_ref(),
                r.dry_run,
                r.cached_object.as_deref(),
                deadline,
            )
            .await?;
        Ok(Response::new(DeleteResponse {
            resource_version: out.resource_version(),
            object: out.object.into(),
        }))
    }
}

/// The caller's end of a GuaranteedUpdate stream.
struct StreamPeer {
    inbound: Streaming<GuaranteedUpdateRequest>,
    outbound: mpsc::Sender<Result<GuaranteedUpdateResponse, Status>>,
    deadline: Deadline,
    key: String,
}

impl StreamPeer {
    async fn receive(&mut self) -> Result<Answer, StorageError> {
        let invalid = |m: &str| StorageError::invalid(&self.key, m.to_string());
        let msg = match tokio::time::timeout_at(self.deadline.instant(), self.inbound.message())
            .await
        {
            Err(_) => {
                return Err(StorageError::Timeout {
                    key: self.key.clone(),
                    message: "the caller did not answer before the deadline".into(),
                });
            }
            Ok(Err(status)) => {
                return Err(invalid(&format!(
                    "reading the caller's answer failed: {status}"
                )));
            }
            Ok(Ok(None)) => return Err(invalid("the caller closed the stream without answering")),
            Ok(Ok(Some(m))) => m,
        };
        match msg.message {
            Some(guaranteed_update_request::Message::Proposal(p)) => Ok(Answer::Proposal {
                based_on: p.based_on_resource_version,
                object: p.object,
                ttl: p.ttl_seconds,
            }),
            Some(guaranteed_update_request::Message::Abort(a)) => Ok(Answer::Abort {
                based_on: a.based_on_resource_version,
                code: a.code,
                message: a.message,
            }),
            Some(guaranteed_update_request::Message::Start(_)) => {
                Err(invalid("`start` may only be sent once"))
            }
            None => Err(invalid("empty message: expected `proposal` or `abort`")),
        }
    }
}

impl UpdatePeer for StreamPeer {
    async fn ask(
        &mut self,
        state: &ObjState,
        object: Vec<u8>,
        attempt: u32,
    ) -> Result<Answer, StorageError> {
        let msg = GuaranteedUpdateResponse {
            message: Some(guaranteed_update_response::Message::State(CurrentState {
                object,
                resource_version: state.resource_version(),
                exists: state.exists(),
                attempt,
            })),
        };
        if self.outbound.send(Ok(msg)).await.is_err() {
            return Err(StorageError::invalid(&self.key, "the caller went away"));
        }
        self.receive().await
    }

    async fn unasked(&mut self) -> Result<Answer, StorageError> {
        self.receive().await
    }

    fn gone(&self) -> bool {
        // The response stream is dropped by the server once the caller resets the stream or
        // the connection ends.
        self.outbound.is_closed()
    }

    async fn closed(&self) {
        self.outbound.closed().await;
    }
}
