//! Drives a storage-svc GuaranteedUpdate stream from a test closure.

use kubestore_proto::meta::v1::resource_version_of;
use kubestore_proto::storage::v1::{
    GuaranteedUpdateRequest, UpdateAbort, UpdateProposal, UpdateStart,
    guaranteed_update_request::Message as Req, guaranteed_update_response::Message as Resp,
    storage_client::StorageClient,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, transport::Channel};

pub use kubestore_proto::storage::v1::{CurrentState, UpdateResult};

/// What the test's update function answers.
pub enum Reply {
    /// Write this object with this TTL.
    Write(Vec<u8>, i64),
    /// Abort with this message.
    Abort(String),
}

/// How the stream ended.
#[derive(Debug)]
pub enum Ended {
    /// Committed or no-op.
    Result(UpdateResult),
    /// Our abort was accepted after this many attempts.
    Aborted(u32),
}

/// Runs one GuaranteedUpdate. With `start.cached_object` set, `f` is first called on the cached
/// object (as a state with attempt 0) and its answer sent unasked. Returns the ending and the
/// number of states storage sent.
pub async fn guaranteed_update(
    client: &mut StorageClient<Channel>,
    start: UpdateStart,
    mut f: impl FnMut(&CurrentState) -> Reply,
) -> Result<(Ended, usize), Status> {
    let (tx, rx) = mpsc::channel(4);
    let cached = start.cached_object.clone();
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Start(start)),
    })
    .await
    .map_err(|_| Status::internal("send"))?;
    let answer = |state: &CurrentState, f: &mut dyn FnMut(&CurrentState) -> Reply| {
        let based_on = state.resource_version.clone();
        GuaranteedUpdateRequest {
            message: Some(match f(state) {
                Reply::Write(object, ttl) => Req::Proposal(UpdateProposal {
                    based_on_resource_version: based_on,
                    object,
                    ttl_seconds: ttl,
                }),
                Reply::Abort(message) => Req::Abort(UpdateAbort {
                    based_on_resource_version: based_on,
                    code: tonic::Code::Aborted as i32,
                    message,
                }),
            }),
        }
    };
    if let Some(object) = cached {
        let rv = resource_version_of(&object);
        let state = CurrentState {
            object,
            resource_version: rv,
            exists: true,
            attempt: 0,
        };
        tx.send(answer(&state, &mut f))
            .await
            .map_err(|_| Status::internal("send"))?;
    }
    let mut responses = client
        .guaranteed_update(ReceiverStream::new(rx))
        .await?
        .into_inner();
    let mut states = 0;
    loop {
        let Some(msg) = responses.message().await? else {
            return Err(Status::internal("stream ended without a result"));
        };
        match msg.message {
            Some(Resp::State(s)) => {
                states += 1;
                tx.send(answer(&s, &mut f))
                    .await
                    .map_err(|_| Status::internal("send"))?;
            }
            Some(Resp::Result(r)) => return Ok((Ended::Result(r), states)),
            Some(Resp::Aborted(a)) => return Ok((Ended::Aborted(a.attempts), states)),
            None => return Err(Status::internal("empty response")),
        }
    }
}

/// An update that holds its key's turn: it received its first state and has not answered.
pub struct Holder {
    tx: mpsc::Sender<GuaranteedUpdateRequest>,
    responses: tonic::Streaming<kubestore_proto::storage::v1::GuaranteedUpdateResponse>,
    /// The state storage sent.
    pub state: CurrentState,
}

impl Holder {
    /// Opens a GuaranteedUpdate of `start.key` and waits for its first state (the turn is then
    /// held until the holder answers, or for the storage's `--update-turn-hold`).
    pub async fn take(client: &mut StorageClient<Channel>, start: UpdateStart) -> Self {
        let (tx, rx) = mpsc::channel(4);
        tx.send(GuaranteedUpdateRequest {
            message: Some(Req::Start(start)),
        })
        .await
        .expect("send start");
        let mut responses = client
            .guaranteed_update(ReceiverStream::new(rx))
            .await
            .expect("open stream")
            .into_inner();
        let Some(Resp::State(state)) = responses
            .message()
            .await
            .expect("state")
            .and_then(|m| m.message)
        else {
            panic!("expected a state")
        };
        Self {
            tx,
            responses,
            state,
        }
    }

    /// Answers with `reply` and returns how the update ended.
    pub async fn answer(mut self, reply: Reply) -> Result<Ended, Status> {
        let based_on = self.state.resource_version.clone();
        let message = match reply {
            Reply::Write(object, ttl) => Req::Proposal(UpdateProposal {
                based_on_resource_version: based_on,
                object,
                ttl_seconds: ttl,
            }),
            Reply::Abort(message) => Req::Abort(UpdateAbort {
                based_on_resource_version: based_on,
                code: tonic::Code::Aborted as i32,
                message,
            }),
        };
        self.tx
            .send(GuaranteedUpdateRequest {
                message: Some(message),
            })
            .await
            .map_err(|_| Status::internal("send"))?;
        match self.responses.message().await?.and_then(|m| m.message) {
            Some(Resp::Result(r)) => Ok(Ended::Result(r)),
            Some(Resp::Aborted(a)) => Ok(Ended::Aborted(a.attempts)),
            other => Err(Status::internal(format!("unexpected {other:?}"))),
        }
    }
}

/// storage-svc settings under which a [`Holder`] keeps its turn as long as a test needs.
pub fn long_turn_hold() -> storage_svc::Config {
    storage_svc::Config {
        update_turn_hold: std::time::Duration::from_secs(60),
        ..Default::default()
    }
}

/// Waits (at most 10 s) until `n` updates wait for a turn, per storage-svc's metrics.
pub async fn wait_for_waiting(metrics: std::net::SocketAddr, n: u32) {
    use crate::services::{sample, scrape};
    for _ in 0..1000 {
        if sample(&scrape(metrics).await, "storage_guaranteed_updates_waiting")
            == Some(f64::from(n))
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{n} updates never waited for a turn");
}
