//! `kubestore storage rewrite --resource R`: every object of R rewritten as it is, through
//! storage-svc's GuaranteedUpdate, so that values stored under an older encryption key (or
//! unencrypted) are stored again with the first provider and key of
//! `--encryption-provider-config` (upstream's `kubectl get secrets -A -o json | kubectl
//! replace -f -`, without a round trip through the registry).
//!
//! storage-svc writes a no-op update only when the value it read is stale, so objects already
//! under the current key cost one read and no write. Events are refused: their TTL lives in an
//! etcd lease that a storage-level rewrite would drop (they expire within `--event-ttl` anyway).

use kubestore_proto::meta::v1::ObjectMeta;
use kubestore_proto::storage::v1::{
    GuaranteedUpdateRequest, ListRequest, UpdateProposal, UpdateStart,
    guaranteed_update_request::Message as Req, guaranteed_update_response::Message as Resp,
    storage_client::StorageClient,
};
use prost::Message;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, transport::Channel};

/// Any stored object, read for its metadata only (field 1 in every kind).
#[derive(Clone, PartialEq, prost::Message)]
struct Head {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
}

/// What a rewrite did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Rewritten {
    /// Objects written again (they were stale).
    pub written: usize,
    /// Objects already current (nothing written).
    pub unchanged: usize,
    /// Objects deleted between the list and their update.
    pub gone: usize,
}

/// Rewrites every object of `resource` (e.g. `secrets`) through `client`, a page of 500 at a
/// time.
pub async fn rewrite(
    client: &mut StorageClient<Channel>,
    resource: &str,
) -> Result<Rewritten, Status> {
    // A page of 500 Secrets easily passes tonic's default 4 MiB limit on a response; accept
    // what storage-svc may send (the caller's client is left as it was).
    let client = &mut client
        .clone()
        .max_decoding_message_size(crate::MAX_RESPONSE_BYTES);
    if resource.is_empty() || resource.contains('/') {
        return Err(Status::invalid_argument(format!(
            "--resource {resource:?}: a resource name such as secrets"
        )));
    }
    if resource == "events" {
        return Err(Status::invalid_argument(
            "events carry a TTL (an etcd lease) that a storage rewrite would drop; they expire \
             within registry-svc's --event-ttl anyway",
        ));
    }
    let mut done = Rewritten::default();
    let mut token = String::new();
    loop {
        let page = client
            .list(ListRequest {
                key: format!("/{resource}"),
                recursive: true,
                limit: crate::pager::CHUNK_SIZE,
                r#continue: token.clone(),
                ..Default::default()
            })
            .await?
            .into_inner();
        for item in &page.items {
            let meta = Head::decode(&item[..])
                .ok()
                .and_then(|h| h.metadata)
                .unwrap_or_default();
            // The registry's key scheme: /<resource>/<namespace>/<name> (or /<resource>/<name>).
            let key = if meta.namespace.is_empty() {
                format!("/{resource}/{}", meta.name)
            } else {
                format!("/{resource}/{}/{}", meta.namespace, meta.name)
            };
            match rewrite_one(client, &key).await? {
                Some(true) => done.written += 1,
                Some(false) => done.unchanged += 1,
                None => done.gone += 1,
            }
        }
        token = page.r#continue;
        if token.is_empty() {
            return Ok(done);
        }
    }
}

/// One no-op update of `key`: `Some(written)`, or `None` when the object is gone.
async fn rewrite_one(
    client: &mut StorageClient<Channel>,
    key: &str,
) -> Result<Option<bool>, Status> {
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let send = |m: Req| GuaranteedUpdateRequest { message: Some(m) };
    tx.send(send(Req::Start(UpdateStart {
        key: key.to_string(),
        ..Default::default()
    })))
    .await
    .map_err(|_| Status::internal("update stream closed"))?;
    let mut responses = match client.guaranteed_update(ReceiverStream::new(rx)).await {
        Ok(r) => r.into_inner(),
        Err(s) if s.code() == tonic::Code::NotFound => return Ok(None),
        Err(s) => return Err(s),
    };
    loop {
        let message = match responses.message().await {
            Ok(Some(m)) => m.message,
            Ok(None) => return Err(Status::internal("the update ended without a result")),
            Err(s) if s.code() == tonic::Code::NotFound => return Ok(None),
            Err(s) => return Err(s),
        };
        match message {
            // Answer every state (a retry after a conflict sends a fresh one) with itself.
            Some(Resp::State(state)) => {
                if !state.exists {
                    return Ok(None);
                }
                tx.send(send(Req::Proposal(UpdateProposal {
                    based_on_resource_version: state.resource_version,
                    object: state.object,
                    ttl_seconds: 0,
                })))
                .await
                .map_err(|_| Status::internal("update stream closed"))?;
            }
            Some(Resp::Result(r)) => return Ok(Some(r.written)),
            Some(Resp::Aborted(_)) | None => {
                return Err(Status::internal("storage-svc aborted a rewrite"));
            }
        }
    }
}
