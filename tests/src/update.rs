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
