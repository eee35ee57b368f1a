//! Following a kind from inside the registry (upstream's reflector + informer, reduced): list
//! everything, then watch from the list's resourceVersion, resuming after each event's, and
//! list again when the watch expired; retry with a bounded backoff while storage fails. Each
//! step reaches the caller as a [`Change`], applied in order by one task. Namespaces
//! (`kinds::namespace`) and the RBAC rule cache (`rbac`) follow their kinds this way.

use std::time::Duration;

use kubestore_proto::meta::v1::{ListOptions, WatchEventType};
use tokio_stream::StreamExt;

use crate::{
    error::ApiError,
    resource::Resource,
    store::{Ctx, Store},
};

/// What changed.
#[derive(Debug)]
pub enum Change<R> {
    /// Every object, as a (re)list found them: what was held before is gone.
    Reset(Vec<R>),
    /// An object was added or modified.
    Put(R),
    /// An object was deleted (its last state).
    Gone(R),
}

/// Follows `store`'s objects in every namespace into `apply` until `stop` is raised.
pub async fn follow<R: Resource>(
    store: Store<R>,
    stop: tokio::sync::watch::Receiver<bool>,
    mut apply: impl FnMut(Change<R>) + Send,
) {
    let mut backoff = Duration::from_millis(100);
    let mut rv: Option<String> = None;
    while !*stop.borrow() {
        if rv.is_none() {
            match store
                .list(Ctx::within(Duration::from_secs(30)), "", None)
                .await
            {
                Ok((meta, items)) => {
                    apply(Change::Reset(items));
                    rv = Some(meta.resource_version);
                }
                Err(e) => {
                    tracing::debug!(kind = store.kind(), error = %e, "follow: listing failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
        }
        let options = ListOptions {
            resource_version: rv.clone().unwrap_or_default(),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        let mut events = match store.watch("", Some(options), stop.clone()).await {
            Ok(e) => e,
            Err(e) => {
                if matches!(e, ApiError::Expired { .. }) {
                    rv = None;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        while let Some(event) = events.next().await {
            match event {
                Ok((kind, obj)) => {
                    let at = obj
                        .meta()
                        .map(|m| m.resource_version.clone())
                        .unwrap_or_default();
                    match kind {
                        WatchEventType::Added | WatchEventType::Modified => {
                            apply(Change::Put(obj));
                        }
                        WatchEventType::Deleted => apply(Change::Gone(obj)),
                        _ => {}
                    }
                    if !at.is_empty() {
                        rv = Some(at);
                    }
                }
                Err(s) => {
                    if s.code() == tonic::Code::OutOfRange {
                        rv = None;
                    }
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
