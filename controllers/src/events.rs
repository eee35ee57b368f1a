//! Events a controller records about the objects it acts on (client-go's event recorder,
//! reduced): written through registry-svc's `core.v1.Events` in the object's namespace, at most
//! [`IN_FLIGHT`] at once; when more are pending the newest are dropped with a log line, as
//! client-go drops events when its broadcaster is full: an event never holds up the work it
//! reports.

use std::sync::Arc;

use kubestore_proto::{
    core::v1::{CreateEventRequest, Event, ObjectReference, events_client::EventsClient},
    meta::v1::ObjectMeta,
};
use tokio::sync::Semaphore;

use crate::{
    Ch,
    client::{CALL_TIMEOUT, Kind},
};

/// Events written at once.
pub const IN_FLIGHT: usize = 16;

/// Writes events as `component`.
#[derive(Clone)]
pub struct Recorder {
    ch: Ch,
    component: &'static str,
    slots: Arc<Semaphore>,
}

/// The object an event is about.
pub fn reference(kind: &Kind, meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        kind: kind.kind.clone(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        api_version: kind.api_version.clone(),
        ..Default::default()
    }
}

impl Recorder {
    /// A recorder writing through `ch`, naming `component` as the source.
    pub fn new(ch: Ch, component: &'static str) -> Self {
        Self {
            ch,
            component,
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
        }
    }

    /// Records `reason` about `about` (`kind`: Normal or Warning), in the background.
    pub fn record(&self, about: ObjectReference, kind: &str, reason: &str, message: String) {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            tracing::info!(%reason, %message, "event dropped: too many being written");
            return;
        };
        let namespace = if about.namespace.is_empty() {
            "default".to_string()
        } else {
            about.namespace.clone()
        };
        let event = Event {
            metadata: Some(ObjectMeta {
                // client-go's event names: the object's name and the time in hex (a
                // generateName may not end with a dot).
                name: format!(
                    "{}.{:x}",
                    // 253 characters at most, with the 17 of the suffix.
                    about
                        .name
                        .get(..about.name.len().min(236))
                        .unwrap_or("event"),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_nanos()
                ),
                namespace: namespace.clone(),
                annotations: [(
                    "kubestore.io/source".to_string(),
                    self.component.to_string(),
                )]
                .into(),
                ..Default::default()
            }),
            involved_object: Some(about),
            reason: reason.into(),
            message,
            r#type: kind.into(),
            count: 1,
            // As client-go's recorder: who reported it, and when it was first and last seen.
            source: Some(kubestore_proto::core::v1::EventSource {
                component: self.component.to_string(),
                host: String::new(),
            }),
            first_timestamp: Some(now_timestamp()),
            last_timestamp: Some(now_timestamp()),
            reporting_component: self.component.to_string(),
            ..Default::default()
        };
        let mut client = EventsClient::new(self.ch.clone());
        tokio::spawn(async move {
            let mut request = tonic::Request::new(CreateEventRequest {
                namespace,
                event: Some(event),
                dry_run: false,
            });
            request.set_timeout(CALL_TIMEOUT);
            if let Err(s) = client.create(request).await {
                tracing::info!(error = %s.message(), "an event could not be written");
            }
            drop(slot);
        });
    }
}

/// Now, to the second (what `metav1.Time` keeps).
fn now_timestamp() -> kubestore_proto::Timestamp {
    kubestore_proto::Timestamp {
        seconds: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        nanos: 0,
    }
}
