//! Watch over HTTP (upstream's `handlers/watch.go`): a chunked `application/json` stream of
//! one event per line, `{"type":"ADDED","object":{...}}`, each written (flushed) as it comes.
//! The stream's end is the watch's: `timeoutSeconds`, shutdown, or an error, sent first as an
//! `ERROR` event carrying a `Status` (an expired resourceVersion is `410 Expired` there, as the
//! watch cache answers it), after which the response ends.
//!
//! WatchList (`sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`): the initial state
//! as ADDED events, then a BOOKMARK annotated `k8s.io/initial-events-end`, then changes: client-go
//! 1.35's reflectors and `kubectl delete --wait` use it and wait for that bookmark.
//!
//! A watch is long-running: not counted against the in-flight limit, no request deadline.
//! A client that stops reading is cut off by the relay below (`relay`), as on gRPC.

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body::Frame;
use kubestore_proto::meta::v1::{ListOptions, ResourceVersionMatch, WatchEventType};
use tokio_stream::StreamExt;

use super::{Body, BodyError, Rest, reply, status};
use crate::{
    catalog::{Output, Shared},
    error::ApiError,
};

fn type_name(t: WatchEventType) -> &'static str {
    match t {
        WatchEventType::Added => "ADDED",
        WatchEventType::Modified => "MODIFIED",
        WatchEventType::Deleted => "DELETED",
        WatchEventType::Bookmark => "BOOKMARK",
        WatchEventType::Unspecified => "ERROR",
    }
}

/// One event line.
fn line(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(kind.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(object);
    b.extend_from_slice(b"}\n");
    b.freeze()
}

/// The ERROR event of `e`.
fn error_line(e: &ApiError) -> Bytes {
    let status = serde_json::to_vec(&status::body(e)).unwrap_or_default();
    line("ERROR", &status)
}

/// Upstream's WatchList validation (`ValidateListOptions` for watches).
fn validate(options: &ListOptions) -> Result<(), ApiError> {
    if options.send_initial_events == Some(true) {
        let mut v = Vec::new();
        if options.resource_version_match != ResourceVersionMatch::NotOlderThan as i32 {
            v.push((
                "resourceVersionMatch".to_string(),
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                    .to_string(),
            ));
        }
        if !options.allow_watch_bookmarks {
            v.push((
                "allowWatchBookmarks".to_string(),
                "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true"
                    .to_string(),
            ));
        }
        if !v.is_empty() {
            return Err(ApiError::invalid("ListOptions", "", v));
        }
    } else if options.send_initial_events.is_none()
        && options.resource_version_match != ResourceVersionMatch::Unspecified as i32
    {
        return Err(ApiError::invalid(
            "ListOptions",
            "",
            vec![(
                "resourceVersionMatch".to_string(),
                "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided".to_string(),
            )],
        ));
    }
    Ok(())
}

/// Serves a watch of `endpoint`.
pub async fn serve(
    rest: &Rest,
    ctx: &crate::store::Ctx,
    endpoint: Shared,
    namespace: &str,
    options: ListOptions,
    output: Output,
) -> Result<http::Response<Body>, ApiError> {
    validate(&options)?;
    let events = match endpoint
        .watch(ctx, namespace, options, output, rest.stop.clone())
        .await
    {
        Ok(events) => events,
        // As the watch cache: an expired start is a stream with one ERROR event (410).
        Err(e @ ApiError::Expired { .. }) => {
            let one = tokio_stream::once(Ok::<_, BodyError>(Frame::data(error_line(&e))));
            return Ok(reply::streamed(StatusCode::OK, reply::JSON, one));
        }
        Err(e) => return Err(e),
    };
    // An error is the last event.
    let mut ended = false;
    let frames = events.map_while(move |e| {
        if ended {
            return None;
        }
        Some(Ok::<_, BodyError>(match e {
            Ok((kind, object)) => Frame::data(line(type_name(kind), &object)),
            Err(e) => {
                ended = true;
                Frame::data(error_line(&e))
            }
        }))
    });
    Ok(reply::streamed(StatusCode::OK, reply::JSON, frames))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_lines_and_watchlist_needs_its_options() {
        assert_eq!(
            line("ADDED", br#"{"a":1}"#),
            Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n")
        );
        let mut o = ListOptions {
            send_initial_events: Some(true),
            ..Default::default()
        };
        assert!(validate(&o).is_err());
        o.resource_version_match = ResourceVersionMatch::NotOlderThan as i32;
        o.allow_watch_bookmarks = true;
        assert!(validate(&o).is_ok());
    }
}
