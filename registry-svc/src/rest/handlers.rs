//! The resource handlers (upstream's `pkg/endpoints/handlers`): one set for every resource of
//! the catalog, built in or custom. Each turns an HTTP request into one [`Endpoint`] call and
//! its answer into upstream's response: the object (200, 201 when created), a list streamed
//! item by item, a Table, a watch stream, or a `Status`.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode, header};
use kubestore_apimachinery::patch::{Patch, PatchType};
use kubestore_proto::meta::v1::{DeleteOptions, ListMeta, Preconditions, PropagationPolicy};
use serde_json::Value;

use super::{
    Body, Rest,
    body::{Decoded, read_body},
    params::{Accept, Query},
    reply,
    route::ResourcePath,
    status, watch,
};
use crate::{
    catalog::{Endpoint, Output, Page, Part},
    error::ApiError,
    metrics::Verb,
    store::Ctx,
};

/// Serves a request for a resource.
pub async fn resource(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    path: ResourcePath,
    ctx: Ctx,
) -> Result<http::Response<Body>, ApiError> {
    let endpoint = rest
        .catalog
        .resolve(&ctx, &path.group, &path.version, &path.resource)
        .await?;
    let info = endpoint.info().clone();
    // Scope: a namespaced kind's objects are under namespaces/NS (its collection may be listed
    // across namespaces); a cluster-scoped kind's never are.
    if !info.namespaced && path.namespace.is_some() {
        return Err(super::no_route());
    }
    if info.namespaced && path.name.is_some() && path.namespace.is_none() {
        return Err(super::no_route());
    }
    let part = match path.subresource.as_deref() {
        None => Part::Main,
        Some("status") if info.status => Part::Status,
        Some("finalize") if info.finalize && req.method() == Method::PUT => Part::Finalize,
        Some(_) => return Err(super::no_route()),
    };
    let namespace = path.namespace.clone().unwrap_or_default();
    let query = Query::parse(req.uri().query());
    let accept = Accept::parse(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let method = req.method().clone();
    let verb = |v: &str| info.verbs.iter().any(|x| x == v);
    // Upstream counts every request in `apiserver_request_total`, also one refused before its
    // verb runs (a body that does not decode: 400, 413, 415); the endpoint's verbs count the
    // others.
    let counted = request_verb(&method, path.name.is_some(), part, &query);
    let refused = |e: ApiError| {
        endpoint.refused(counted, &namespace, &e);
        e
    };
    match (&method, path.name.as_deref()) {
        (&Method::GET, None) if part == Part::Main => {
            let output = accept.output(&query).map_err(refused)?;
            let options = query.list_options().map_err(refused)?;
            if query.watch().map_err(refused)? {
                if !verb("watch") {
                    return Err(not_supported(&method, &info.qualified()));
                }
                return watch::serve(rest, endpoint, &namespace, options, output).await;
            }
            if !verb("list") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let page = endpoint.list(ctx, &namespace, options, output).await?;
            if output == Output::Metadata {
                return Ok(list_response(
                    "meta.k8s.io/v1",
                    "PartialObjectMetadataList",
                    page,
                ));
            }
            Ok(list_response(&info.api_version(), &info.list_kind, page))
        }
        (&Method::GET, Some(name)) => {
            let output = accept.output(&query).map_err(refused)?;
            if query.watch().map_err(refused)? {
                // `GET .../pods/NAME?watch=1`: the deprecated single-object watch, a watch of
                // the collection narrowed to the name.
                let mut options = query.list_options().map_err(refused)?;
                options.field_selector = if options.field_selector.is_empty() {
                    format!("metadata.name={name}")
                } else {
                    format!("{},metadata.name={name}", options.field_selector)
                };
                return watch::serve(rest, endpoint, &namespace, options, output).await;
            }
            let json = endpoint.get(ctx, &namespace, name, part, output).await?;
            Ok(reply::json(StatusCode::OK, json, &[]))
        }
        (&Method::POST, None) if part == Part::Main => {
            if !verb("create") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let options = query.write_options().map_err(refused)?;
            let body = read_body(rest, req, &ctx, endpoint.as_ref())
                .await
                .and_then(|b| json_body(b, &info.kind))
                .map_err(refused)?;
            let written = endpoint.create(ctx, &namespace, body, &options).await?;
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(reply::json(code, written.object, &written.warnings))
        }
        (&Method::PUT, Some(name)) => {
            if !verb("update") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let options = query.write_options().map_err(refused)?;
            let name = name.to_string();
            let body = read_body(rest, req, &ctx, endpoint.as_ref())
                .await
                .and_then(|b| json_body(b, &info.kind))
                .map_err(refused)?;
            let written = endpoint
                .update(ctx, &namespace, &name, body, part, &options)
                .await?;
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(reply::json(code, written.object, &written.warnings))
        }
        (&Method::PATCH, Some(name)) => {
            if !verb("patch") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let options = query.write_options().map_err(refused)?;
            let name = name.to_string();
            let content_type = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let unsupported = || {
                refused(ApiError::UnsupportedMediaType(format!(
                    "the body of the request was in an unknown format - accepted media types include: {}",
                    accepted_patch_types(endpoint.as_ref()).join(", ")
                )))
            };
            let Some(patch_type) = PatchType::from_content_type(&content_type) else {
                return Err(unsupported());
            };
            if patch_type == PatchType::Strategic && info.message.is_none()
                || patch_type == PatchType::Apply
            {
                return Err(unsupported());
            }
            let raw = super::body::read_raw(rest, req, &ctx)
                .await
                .map_err(refused)?;
            let body: Value = if patch_type == PatchType::Apply {
                serde_yaml_ng::from_slice(&raw).map_err(|e| {
                    refused(ApiError::BadRequest(format!("error decoding YAML: {e}")))
                })?
            } else {
                serde_json::from_slice(&raw).map_err(|e| {
                    refused(ApiError::BadRequest(format!("error decoding patch: {e}")))
                })?
            };
            let written = endpoint
                .patch(
                    ctx,
                    &namespace,
                    &name,
                    Patch { patch_type, body },
                    part,
                    &options,
                )
                .await?;
            Ok(reply::json(
                StatusCode::OK,
                written.object,
                &written.warnings,
            ))
        }
        (&Method::DELETE, Some(name)) if part == Part::Main => {
            if !verb("delete") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let name = name.to_string();
            let raw = super::body::read_raw(rest, req, &ctx)
                .await
                .map_err(refused)?;
            let options = delete_options(&query, &raw).map_err(refused)?;
            let deleted = endpoint.delete(ctx, &namespace, &name, options).await?;
            if deleted.deleted && !info.return_deleted_object {
                let body = status::deleted(&name, &info.group, &info.plural, &deleted.uid);
                return Ok(reply::value(StatusCode::OK, &body));
            }
            Ok(reply::json(StatusCode::OK, deleted.object, &[]))
        }
        (&Method::DELETE, None) if part == Part::Main => {
            if !verb("deletecollection") {
                return Err(not_supported(&method, &info.qualified()));
            }
            let list = query.list_options().map_err(refused)?;
            let raw = super::body::read_raw(rest, req, &ctx)
                .await
                .map_err(refused)?;
            let options = delete_options(&query, &raw).map_err(refused)?;
            let page = endpoint
                .delete_collection(ctx, &namespace, list, options)
                .await?;
            Ok(list_response(&info.api_version(), &info.list_kind, page))
        }
        _ => Err(not_supported(&method, &info.qualified())),
    }
}

/// The verb a request would run, for the request metrics.
fn request_verb(method: &Method, named: bool, part: Part, query: &Query) -> Verb {
    match *method {
        Method::GET if query.watch().unwrap_or(false) => Verb::Watch,
        Method::GET if named => Verb::Get,
        Method::GET => Verb::List,
        Method::POST => Verb::Create,
        Method::PUT => Verb::update(part),
        Method::PATCH => Verb::patch(part),
        Method::DELETE if named => Verb::Delete,
        _ => Verb::DeleteCollection,
    }
}

/// Upstream's 405.
fn not_supported(method: &Method, resource: &str) -> ApiError {
    ApiError::MethodNotSupported(format!(
        "the server does not allow this method on the requested resource ({} {resource})",
        method.as_str()
    ))
}

/// The patch types a resource takes.
fn accepted_patch_types(endpoint: &dyn Endpoint) -> Vec<&'static str> {
    let mut types = vec![
        PatchType::Json.content_type(),
        PatchType::Merge.content_type(),
    ];
    if endpoint.info().message.is_some() {
        types.push(PatchType::Strategic.content_type());
    }
    types
}

/// A decoded body as a JSON value of `kind`.
fn json_body(body: Decoded, kind: &str) -> Result<Value, ApiError> {
    match body {
        Decoded::Json(v) => Ok(v),
        Decoded::Empty => Err(ApiError::BadRequest(format!(
            "the body of the request was empty: a {kind} is required"
        ))),
    }
}

/// DeleteOptions from the body (JSON, or empty) and the query, as upstream reads them.
fn delete_options(query: &Query, raw: &[u8]) -> Result<DeleteOptions, ApiError> {
    let body: Value = if raw.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(raw)
            .map_err(|e| ApiError::BadRequest(format!("error decoding DeleteOptions: {e}")))?
    };
    let get = |k: &str| body.get(k).filter(|v| !v.is_null());
    let grace_period_seconds =
        match get("gracePeriodSeconds") {
            Some(v) => Some(v.as_i64().ok_or_else(|| {
                ApiError::BadRequest("gracePeriodSeconds must be an integer".into())
            })?),
            None => match query.get("gracePeriodSeconds") {
                Some(v) if !v.is_empty() => Some(v.parse().map_err(|_| {
                    ApiError::BadRequest(format!("invalid gracePeriodSeconds {v:?}"))
                })?),
                _ => None,
            },
        };
    let policy = get("propagationPolicy")
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| query.get("propagationPolicy").map(String::from));
    let orphan = get("orphanDependents")
        .and_then(Value::as_bool)
        .or(query.flag("orphanDependents")?);
    let propagation_policy = match (policy.as_deref(), orphan) {
        (Some("Orphan"), _) => PropagationPolicy::Orphan,
        (Some("Background"), _) => PropagationPolicy::Background,
        (Some("Foreground"), _) => PropagationPolicy::Foreground,
        (Some("") | None, Some(true)) => PropagationPolicy::Orphan,
        (Some("") | None, Some(false)) => PropagationPolicy::Background,
        (Some("") | None, None) => PropagationPolicy::Unspecified,
        (Some(other), _) => {
            return Err(ApiError::invalid(
                "",
                "",
                vec![(
                    "propagationPolicy".to_string(),
                    format!(
                        "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                )],
            ));
        }
    } as i32;
    let preconditions = get("preconditions").map(|p| {
        let text = |k: &str| p.get(k).and_then(Value::as_str).map(String::from);
        Preconditions {
            uid: text("uid"),
            resource_version: text("resourceVersion"),
        }
    });
    let dry_run = match get("dryRun") {
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some("All")),
        _ => query.write_options()?.dry_run,
    };
    Ok(DeleteOptions {
        grace_period_seconds,
        preconditions,
        propagation_policy,
        dry_run,
    })
}

/// A List (or Table) response, written as it streams: the envelope, then each item as the
/// endpoint encoded it, copied into frames of 64 KiB as they are sent (`reply::ListBody`),
/// never a second copy of the whole list.
pub(super) fn list_response(
    api_version: &str,
    list_kind: &str,
    page: Page,
) -> http::Response<Body> {
    let (head, items, meta) = match page {
        Page::Objects { meta, items } => {
            let head = format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                Value::from(list_kind),
                Value::from(api_version),
                list_meta(&meta)
            );
            (head, items, meta)
        }
        Page::Table {
            meta,
            columns,
            rows,
        } => {
            let head = format!(
                "{{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{},\"columnDefinitions\":{},\"rows\":[",
                list_meta(&meta),
                String::from_utf8_lossy(&columns)
            );
            (head, rows, meta)
        }
    };
    let _ = meta;
    reply::list(
        StatusCode::OK,
        reply::ListBody::new(Bytes::from(head), items, b"]}"),
    )
}

/// `ListMeta` as upstream writes it.
fn list_meta(meta: &ListMeta) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(
        "resourceVersion".into(),
        Value::from(meta.resource_version.clone()),
    );
    if !meta.r#continue.is_empty() {
        m.insert("continue".into(), Value::from(meta.r#continue.clone()));
    }
    if let Some(n) = meta.remaining_item_count {
        m.insert("remainingItemCount".into(), Value::from(n));
    }
    Value::Object(m)
}

/// An endpoint by its shared handle (for the watch handler).
pub(super) type Shared = Arc<dyn Endpoint>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A List of 10,000 objects goes out in frames of 64 KiB, not a frame per item and per
    /// comma: each frame is a chunk (and, 16 at most per `writev`, system calls) of HTTP/1.1.
    #[tokio::test]
    async fn a_large_list_is_sent_in_few_frames() {
        use http_body_util::BodyExt;
        let items: Vec<Bytes> = (0..10_000)
            .map(|i| {
                Bytes::from(format!(
                    "{{\"metadata\":{{\"name\":\"cm-{i:05}\"}},\"data\":{{\"payload\":\"{}\"}}}}",
                    "x".repeat(200)
                ))
            })
            .collect();
        let size: usize = items.iter().map(|i| i.len() + 1).sum();
        let page = Page::Objects {
            meta: ListMeta {
                resource_version: "7".into(),
                ..Default::default()
            },
            items,
        };
        let mut body = list_response("v1", "ConfigMapList", page).into_body();
        let (mut frames, mut text) = (0, Vec::new());
        while let Some(f) = body.frame().await {
            if let Ok(data) = f.expect("infallible").into_data() {
                frames += 1;
                text.extend_from_slice(&data);
            }
        }
        let list: Value = serde_json::from_slice(&text).expect("a JSON list");
        assert_eq!(list["kind"], "ConfigMapList");
        assert_eq!(list["metadata"]["resourceVersion"], "7");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(10_000));
        assert_eq!(list["items"][9_999]["metadata"]["name"], "cm-09999");
        assert!(
            frames <= size / reply::LIST_FRAME + 1,
            "{frames} frames for {size} bytes"
        );
    }

    #[test]
    fn delete_options_read_body_and_query() {
        let o = delete_options(
            &Query::parse(Some("gracePeriodSeconds=5")),
            br#"{"propagationPolicy":"Foreground","preconditions":{"uid":"u"}}"#,
        )
        .expect("valid");
        assert_eq!(o.grace_period_seconds, Some(5));
        assert_eq!(o.propagation_policy, PropagationPolicy::Foreground as i32);
        assert_eq!(o.preconditions.and_then(|p| p.uid).as_deref(), Some("u"));
        let o = delete_options(&Query::default(), b"").expect("empty body");
        assert_eq!(o.propagation_policy, PropagationPolicy::Unspecified as i32);
        assert!(delete_options(&Query::default(), br#"{"propagationPolicy":"Nope"}"#).is_err());
        let o = delete_options(&Query::default(), br#"{"dryRun":["All"]}"#).expect("dry run");
        assert!(o.dry_run);
    }
}
