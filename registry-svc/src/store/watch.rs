//! Watch (upstream's `Store.Watch`): storage's event stream for what `namespace` and the list
//! options select, decoded into the kind's objects as the client reads it.
//!
//! storage's stream is read at once by a [`crate::relay::Relay`] into a bounded buffer, so a
//! client that stops reading never stalls registry-svc's connections to storage-svc; once that
//! buffer stays full for `relay::SEND_BUDGET` the watch is cut off (RESOURCE_EXHAUSTED
//! `WatcherTooSlow`). registry-svc's shutdown ends every watch with UNAVAILABLE, so clients
//! reconnect with their last resourceVersion.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use kubestore_proto::{
    meta::v1::{ListOptions, ResourceVersionMatch, WatchEventType},
    storage::v1::{WatchEvent as StorageEvent, WatchRequest},
};
use tokio_stream::{Stream, StreamExt};

use crate::{error::ApiError, resource::Resource, store::Store};

/// The annotation of the BOOKMARK that ends the initial events (upstream's).
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// A typed watch event.
pub type Event<R> = (WatchEventType, R);

/// A stream of typed watch events, ended by the watch's status.
pub type EventStream<R> = Pin<Box<dyn Stream<Item = Result<Event<R>, tonic::Status>> + Send>>;

/// A watch event as storage sent it: the object still encoded (and stamped with its
/// resourceVersion), or a bookmark's encoded placeholder object.
pub type EncodedEvent = (WatchEventType, Bytes);

/// A stream of encoded watch events, ended by the watch's status.
pub type EncodedEventStream =
    Pin<Box<dyn Stream<Item = Result<EncodedEvent, tonic::Status>> + Send>>;

impl<R: Resource> Store<R> {
    /// Watch; see the module docs. `stop` is raised when registry-svc shuts down.
    pub async fn watch(
        &self,
        namespace: &str,
        options: Option<ListOptions>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream<R>, ApiError> {
        let events = self.storage_watch(namespace, options).await?;
        let store = self.clone();
        let typed = events.map(move |item| {
            let (kind, ev) = item?;
            let object = if kind == WatchEventType::Bookmark {
                bookmark::<R>(&ev)
            } else {
                let mut o = store.decode(&ev.object).map_err(tonic::Status::from)?;
                store.strategy.decorate(&mut o);
                o
            };
            Ok((kind, object))
        });
        Ok(Box::pin(until_stopped(typed, stop)))
    }

    /// Watch with the objects left as storage encoded them, for kinds without a decorator: a
    /// kind's watch event on the wire is its type (field 1) and its object (field 2), so
    /// registry-svc frames storage's bytes instead of decoding and encoding each event once per
    /// watcher, which was most of its cost of a wide fan-out (`passthrough`, BENCHMARKS.md).
    pub async fn watch_encoded(
        &self,
        namespace: &str,
        options: Option<ListOptions>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EncodedEventStream, ApiError> {
        let events = self.storage_watch(namespace, options).await?;
        let encoded = events.map(|item| {
            let (kind, ev) = item?;
            let object = if kind == WatchEventType::Bookmark {
                Bytes::from(bookmark::<R>(&ev).encode_to_vec())
            } else {
                ev.object
            };
            Ok((kind, object))
        });
        Ok(Box::pin(until_stopped(encoded, stop)))
    }

    /// Validates the options (upstream's watch validation) and opens storage's watch; its
    /// events come with their type checked and storage's errors mapped for clients.
    async fn storage_watch(
        &self,
        namespace: &str,
        options: Option<ListOptions>,
    ) -> Result<
        impl Stream<Item = Result<(WatchEventType, StorageEvent), tonic::Status>> + Send + 'static,
        ApiError,
    > {
        let options = options.unwrap_or_default();
        // Upstream's watch validation, except that sendInitialEvents is accepted without an
        // explicit NotOlderThan match (the only value it may have).
        if !options.r#continue.is_empty() {
            return Err(ApiError::BadRequest(
                "continue is not allowed on a watch".into(),
            ));
        }
        if options.resource_version_match == ResourceVersionMatch::Exact as i32
            || ResourceVersionMatch::try_from(options.resource_version_match).is_err()
        {
            return Err(ApiError::BadRequest(format!(
                "resourceVersionMatch {} is not allowed on a watch (only NotOlderThan, with sendInitialEvents)",
                options.resource_version_match
            )));
        }
        let timeout_seconds = match options.timeout_seconds {
            Some(t) if t < 0 => {
                return Err(ApiError::BadRequest(format!(
                    "timeoutSeconds must not be negative, got {t}"
                )));
            }
            Some(t) => t,
            None => 0,
        };
        let target = self.target(namespace, &options, true)?;
        let events = self
            .storage
            .watch(WatchRequest {
                key: target.key,
                recursive: target.recursive,
                resource_version: options.resource_version,
                send_initial_events: options.send_initial_events,
                allow_watch_bookmarks: options.allow_watch_bookmarks,
                selector: Some(target.selector),
                timeout_seconds,
            })
            .await
            .map_err(|s| self.collection_error(&s))?;
        let store = self.clone();
        Ok(events.map(move |item| {
            let ev = item.map_err(|s| tonic::Status::from(store.collection_error(&s)))?;
            let kind = WatchEventType::try_from(ev.r#type).map_err(|_| {
                tonic::Status::from(ApiError::Internal(format!(
                    "storage sent an unknown watch event type {}",
                    ev.r#type
                )))
            })?;
            Ok((kind, ev))
        }))
    }
}

/// A BOOKMARK's object: empty but for its resourceVersion, and upstream's annotation on the
/// bookmark that ends the initial events.
fn bookmark<R: Resource>(ev: &StorageEvent) -> R {
    let mut o = R::default();
    let m = o.meta_mut();
    m.resource_version.clone_from(&ev.resource_version);
    if ev.initial_events_end {
        m.annotations
            .insert(INITIAL_EVENTS_END.to_string(), "true".to_string());
    }
    o
}

/// `events` until `stop` is raised, then one UNAVAILABLE and the end.
fn until_stopped<T: Send + 'static>(
    events: impl Stream<Item = Result<T, tonic::Status>> + Send + 'static,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> UntilStopped<T> {
    UntilStopped {
        events: Box::pin(events),
        stopped: Box::pin(async move {
            let _ = stop.wait_for(|s| *s).await;
        }),
        done: false,
    }
}

/// See [`until_stopped`].
struct UntilStopped<T> {
    events: Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send>>,
    stopped: Pin<Box<dyn Future<Output = ()> + Send>>,
    done: bool,
}

impl<T> Stream for UntilStopped<T> {
    type Item = Result<T, tonic::Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.stopped.as_mut().poll(cx).is_ready() {
            self.done = true;
            return Poll::Ready(Some(Err(tonic::Status::from(ApiError::Unavailable {
                reason: "ServiceUnavailable",
                message:
                    "registry-svc is shutting down: watch again from the last resourceVersion received"
                        .into(),
            }))));
        }
        match self.events.as_mut().poll_next(cx) {
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}
