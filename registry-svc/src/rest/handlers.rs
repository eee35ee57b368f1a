//! The resource handlers (upstream's `pkg/endpoints/handlers`): one set for every resource of
//! the catalog, built in or custom. A request is first parsed whole into a [`Call`] ([`parse`]:
//! route, options, body), then run as one [`Endpoint`] call ([`run`]) whose answer becomes
//! upstream's response: the object (200, 201 when created), a list streamed item by item, a
//! Table, a watch stream, or a `Status`.

use bytes::Bytes;
use http::{Method, StatusCode, header};
use kubestore_apimachinery::patch::{Patch, PatchType};
use kubestore_proto::meta::v1::{
    DeleteOptions, ListMeta, ListOptions, Preconditions, PropagationPolicy,
};
use serde_json::Value;

use super::{
    Body, Rest,
    body::{Decoded, read_body, read_raw},
    params::{Accept, Query},
    reply,
    route::ResourcePath,
    status, watch,
};
use crate::{
    catalog::{Endpoint, Output, Part, Shared, Streamed, WriteOptions, Written},
    error::ApiError,
    metrics::Verb,
    store::Ctx,
};

/// A request for a resource, parsed whole (route, query, headers and body) before anything
/// runs: every refusal before the verb (a bad parameter, a body that does not arrive, does not
/// decode or is too large) happens while parsing, and is counted once, in [`parse`]. The body
/// is read here, before the request takes an in-flight slot, so a client that sends headers
/// and never its body holds no slot.
pub struct Call {
    /// The resource's endpoint.
    pub endpoint: Shared,
    /// "" for all namespaces, or a cluster-scoped kind.
    pub namespace: String,
    /// What to do.
    pub action: Action,
}

/// A resource verb with its options and body.
pub enum Action {
    /// One page, or the whole collection streamed (`limit` 0).
    List(ListOptions, Output),
    /// A watch (also `GET .../NAME?watch=1`, narrowed to the name).
    Watch(ListOptions, Output),
    /// One object.
    Get(String, Part, Output),
    /// A new object.
    Create(Value, WriteOptions),
    /// An object replaced (or created, where the kind allows it).
    Update(String, Value, Part, WriteOptions),
    /// An object patched.
    Patch(String, Patch, Part, WriteOptions),
    /// An object deleted.
    Delete(String, DeleteOptions),
    /// The objects a selector picks, deleted.
    DeleteCollection(ListOptions, DeleteOptions),
}

impl Call {
    /// Whether the request is long-running (a watch): no in-flight slot, no request deadline.
    pub fn long_running(&self) -> bool {
        matches!(self.action, Action::Watch(..))
    }
}

/// Parses a request for a resource (see [`Call`]); a refusal is counted under the verb the
/// request would have run, except a path or method nobody serves (upstream's router answers
/// those before any resource).
pub async fn parse(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    path: ResourcePath,
    ctx: &mut Ctx,
) -> Result<Call, ApiError> {
    let query = Query::parse(req.uri().query());
    // Authorized from the path alone, before the resource is looked up or the body read (as
    // upstream's filter: an unauthorized user learns nothing, and sends nothing we read).
    ctx.authorize(&super::attributes::resource(req.method(), &path, &query))?;
    let endpoint = rest
        .catalog
        .resolve(ctx, &path.group, &path.version, &path.resource)
        .await?;
    let namespace = path.namespace.clone().unwrap_or_default();
    let counted = request_verb(
        req.method(),
        path.name.is_some(),
        path.subresource.as_deref(),
        &query,
    );
    match action(rest, req, &path, &endpoint, query, ctx).await {
        Ok(action) => Ok(Call {
            endpoint,
            namespace,
            action,
        }),
        Err(e) => {
            if !matches!(
                e,
                ApiError::MethodNotSupported(_) | ApiError::NotFound { .. }
            ) {
                endpoint.refused(counted, &namespace, &e);
            }
            Err(e)
        }
    }
}

/// The action of a request, its body read and decoded.
async fn action(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    path: &ResourcePath,
    endpoint: &Shared,
    query: Query,
    ctx: &Ctx,
) -> Result<Action, ApiError> {
    let info = endpoint.info();
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
    let method = req.method().clone();
    let supported = |v: &str| {
        if info.verbs.iter().any(|x| x == v) {
            Ok(())
        } else {
            Err(not_supported(&method, &info.qualified()))
        }
    };
    let output = || {
        Accept::parse(
            req.headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        )
        .output(&query)
    };
    let name = path.name.clone();
    Ok(match (&method, name) {
        (&Method::GET, None) if part == Part::Main => {
            let output = output()?;
            let options = query.list_options()?;
            if query.watch()? {
                supported("watch")?;
                Action::Watch(options, output)
            } else {
                supported("list")?;
                Action::List(options, output)
            }
        }
        (&Method::GET, Some(name)) => {
            let output = output()?;
            if query.watch()? {
                // `GET .../pods/NAME?watch=1`: the deprecated single-object watch, a watch of
                // the collection narrowed to the name.
                let mut options = query.list_options()?;
                options.field_selector = if options.field_selector.is_empty() {
                    format!("metadata.name={name}")
                } else {
                    format!("{},metadata.name={name}", options.field_selector)
                };
                Action::Watch(options, output)
            } else {
                Action::Get(name, part, output)
            }
        }
        (&Method::POST, None) if part == Part::Main => {
            supported("create")?;
            let mut options = query.write_options()?;
            let body = object_body(rest, req, ctx, endpoint, &mut options).await?;
            Action::Create(body, options)
        }
        (&Method::PUT, Some(name)) => {
            supported("update")?;
            let mut options = query.write_options()?;
            let body = object_body(rest, req, ctx, endpoint, &mut options).await?;
            Action::Update(name, body, part, options)
        }
        (&Method::PATCH, Some(name)) => {
            supported("patch")?;
            let mut options = query.write_options()?;
            let patch = patch_body(rest, req, ctx, endpoint, &mut options).await?;
            Action::Patch(name, patch, part, options)
        }
        (&Method::DELETE, Some(name)) if part == Part::Main => {
            supported("delete")?;
            Action::Delete(name, delete_body(rest, req, ctx, &query).await?)
        }
        (&Method::DELETE, None) if part == Part::Main => {
            supported("deletecollection")?;
            let list = query.list_options()?;
            Action::DeleteCollection(list, delete_body(rest, req, ctx, &query).await?)
        }
        _ => return Err(not_supported(&method, &info.qualified())),
    })
}

/// An object body (create, update), its size noted in `options` (large ones are taken in off
/// the async workers).
async fn object_body(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
    endpoint: &Shared,
    options: &mut WriteOptions,
) -> Result<Value, ApiError> {
    let kind = endpoint.info().kind.clone();
    let (body, size) = read_body(rest, req, ctx, endpoint.as_ref()).await?;
    options.body_bytes = size;
    json_body(body, &kind)
}

/// A patch body, by its `Content-Type`.
async fn patch_body(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
    endpoint: &Shared,
    options: &mut WriteOptions,
) -> Result<Patch, ApiError> {
    let info = endpoint.info();
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let unsupported = || {
        ApiError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted_patch_types(endpoint.as_ref()).join(", ")
        ))
    };
    let Some(patch_type) = PatchType::from_content_type(&content_type) else {
        return Err(unsupported());
    };
    // An apply is YAML (JSON is YAML); CBOR, which upstream also takes, is not served.
    let cbor = super::body::media(&content_type) == "application/apply-patch+cbor";
    if patch_type == PatchType::Strategic && info.message.is_none() || cbor {
        return Err(unsupported());
    }
    let raw = read_raw(rest, req, ctx).await?;
    options.body_bytes = raw.len();
    let deadline = Some(ctx.deadline.instant().into_std());
    let body: Value = if patch_type == PatchType::Apply {
        // YAML's aliases may expand past the body's size: sized as a YAML body is.
        let size = crate::offload::yaml_size(&raw);
        crate::offload::run(size, deadline, || {
            kubestore_apimachinery::yaml::to_json(&raw)
                .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))
        })?
    } else {
        crate::offload::run(raw.len(), deadline, || {
            serde_json::from_slice(&raw)
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))
        })?
    };
    Ok(Patch { patch_type, body })
}

/// Runs a parsed request.
pub async fn run(rest: &Rest, call: Call, ctx: Ctx) -> Result<http::Response<Body>, ApiError> {
    let Call {
        endpoint,
        namespace,
        action,
    } = call;
    let info = endpoint.info().clone();
    match action {
        Action::Watch(options, output) => {
            watch::serve(rest, &ctx, endpoint, &namespace, options, output).await
        }
        Action::List(options, output) => {
            let page = endpoint
                .list_streamed(ctx, &namespace, options, output)
                .await?;
            Ok(match output {
                Output::Metadata => {
                    list_response("meta.k8s.io/v1", "PartialObjectMetadataList", page)
                }
                _ => list_response(&info.api_version(), &info.list_kind, page),
            })
        }
        Action::Get(name, part, output) => {
            let json = endpoint.get(ctx, &namespace, &name, part, output).await?;
            Ok(reply::json(StatusCode::OK, json, &[]))
        }
        Action::Create(body, options) => {
            let written = endpoint.create(ctx, &namespace, body, &options).await?;
            Ok(written_response(written))
        }
        Action::Update(name, body, part, options) => {
            let written = endpoint
                .update(ctx, &namespace, &name, body, part, &options)
                .await?;
            Ok(written_response(written))
        }
        Action::Patch(name, patch, part, options) => {
            let written = endpoint
                .patch(ctx, &namespace, &name, patch, part, &options)
                .await?;
            Ok(written_response(written))
        }
        Action::Delete(name, options) => {
            let deleted = endpoint.delete(ctx, &namespace, &name, options).await?;
            if deleted.deleted && !info.return_deleted_object {
                let body = status::deleted(&name, &info.group, &info.plural, &deleted.uid);
                return Ok(reply::value(StatusCode::OK, &body));
            }
            Ok(reply::json(StatusCode::OK, deleted.object, &[]))
        }
        Action::DeleteCollection(list, options) => {
            let page = endpoint
                .delete_collection(ctx, &namespace, list, options)
                .await?;
            Ok(list_response(
                &info.api_version(),
                &info.list_kind,
                page.into(),
            ))
        }
    }
}

/// A write's answer: 201 when it created the object.
fn written_response(written: Written) -> http::Response<Body> {
    let code = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    reply::json(code, written.object, &written.warnings)
}

/// The verb a request would run, for the request metrics.
fn request_verb(method: &Method, named: bool, subresource: Option<&str>, query: &Query) -> Verb {
    let part = match subresource {
        Some("status") => Part::Status,
        Some("finalize") => Part::Finalize,
        _ => Part::Main,
    };
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
    types.push(PatchType::Apply.content_type());
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

/// A DELETE's options: its body's, in any media type the other verbs take, or, without a
/// body, the query's (upstream's `DeleteResource` reads the query only then).
async fn delete_body(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
    query: &Query,
) -> Result<DeleteOptions, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let raw = read_raw(rest, req, ctx).await?;
    let deadline = Some(ctx.deadline.instant().into_std());
    let body = crate::offload::run(
        super::body::work_size(&content_type, &raw),
        deadline,
        || super::body::delete_options(&content_type, &raw),
    )?;
    delete_options(query, body)
}

/// DeleteOptions from a body's JSON object, or, without one, from the query.
fn delete_options(query: &Query, body: Option<Value>) -> Result<DeleteOptions, ApiError> {
    let body = match body {
        Some(b) => b,
        None => query_delete_options(query)?,
    };
    let get = |k: &str| body.get(k).filter(|v| !v.is_null());
    let grace_period_seconds =
        match get("gracePeriodSeconds") {
            Some(v) => Some(v.as_i64().ok_or_else(|| {
                ApiError::BadRequest("gracePeriodSeconds must be an integer".into())
            })?),
            None => None,
        };
    let policy = get("propagationPolicy").and_then(Value::as_str);
    let orphan = get("orphanDependents").and_then(Value::as_bool);
    let propagation_policy = match (policy, orphan) {
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
        Some(Value::Array(a)) => {
            for v in a {
                if v.as_str() != Some("All") {
                    return Err(ApiError::invalid(
                        "",
                        "",
                        vec![(
                            "dryRun".to_string(),
                            format!("Unsupported value: {v}: supported values: \"All\""),
                        )],
                    ));
                }
            }
            !a.is_empty()
        }
        _ => false,
    };
    Ok(DeleteOptions {
        grace_period_seconds,
        preconditions,
        propagation_policy,
        dry_run,
    })
}

/// The query's DeleteOptions parameters as the JSON object a body would carry.
fn query_delete_options(query: &Query) -> Result<Value, ApiError> {
    let mut m = serde_json::Map::new();
    if let Some(v) = query.get("gracePeriodSeconds").filter(|v| !v.is_empty()) {
        let g: i64 = v
            .parse()
            .map_err(|_| ApiError::BadRequest(format!("invalid gracePeriodSeconds {v:?}")))?;
        m.insert("gracePeriodSeconds".into(), g.into());
    }
    if let Some(p) = query.get("propagationPolicy") {
        m.insert("propagationPolicy".into(), p.into());
    }
    if let Some(o) = query.flag("orphanDependents")? {
        m.insert("orphanDependents".into(), o.into());
    }
    if query.write_options()?.dry_run {
        m.insert("dryRun".into(), serde_json::json!(["All"]));
    }
    Ok(Value::Object(m))
}

/// A List (or Table) response, written as it streams: the envelope, then each item as the
/// endpoint encodes it, copied into frames of 64 KiB as the connection takes them
/// (`reply::list`): a client that reads slowly holds one frame, not the list.
pub(super) fn list_response(
    api_version: &str,
    list_kind: &str,
    page: Streamed,
) -> http::Response<Body> {
    let head = match &page.columns {
        None => format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            Value::from(list_kind),
            Value::from(api_version),
            list_meta(&page.meta)
        ),
        Some(columns) => format!(
            "{{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{},\"columnDefinitions\":{},\"rows\":[",
            list_meta(&page.meta),
            String::from_utf8_lossy(columns)
        ),
    };
    reply::list(StatusCode::OK, Bytes::from(head), page.items, b"]}")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Page;

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
        let mut body = list_response("v1", "ConfigMapList", page.into()).into_body();
        let (mut frames, mut text) = (0, Vec::new());
        while let Some(f) = body.frame().await {
            if let Ok(data) = f.expect("a frame").into_data() {
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

    fn body(content_type: &str, raw: &[u8]) -> Option<Value> {
        crate::rest::body::delete_options(content_type, raw).expect("a body")
    }

    /// Upstream's `DeleteResource`: a body's options, or the query's without a body.
    #[test]
    fn delete_options_come_from_the_body_else_the_query() {
        let q = Query::parse(Some("gracePeriodSeconds=5&propagationPolicy=Orphan"));
        let o = delete_options(
            &q,
            body(
                "application/json",
                br#"{"propagationPolicy":"Foreground","preconditions":{"uid":"u"}}"#,
            ),
        )
        .expect("valid");
        assert_eq!(o.grace_period_seconds, None, "the query is not read");
        assert_eq!(o.propagation_policy, PropagationPolicy::Foreground as i32);
        assert_eq!(o.preconditions.and_then(|p| p.uid).as_deref(), Some("u"));
        let o = delete_options(&q, body("", b"")).expect("no body");
        assert_eq!(o.grace_period_seconds, Some(5));
        assert_eq!(o.propagation_policy, PropagationPolicy::Orphan as i32);
        let o = delete_options(&Query::default(), None).expect("nothing");
        assert_eq!(o.propagation_policy, PropagationPolicy::Unspecified as i32);
        assert!(
            delete_options(
                &Query::default(),
                body("application/json", br#"{"propagationPolicy":"Nope"}"#)
            )
            .is_err()
        );
        let o = delete_options(
            &Query::default(),
            body(
                "application/yaml",
                b"dryRun: [All]\ngracePeriodSeconds: 0\n",
            ),
        )
        .expect("dry run");
        assert!(o.dry_run);
        assert_eq!(o.grace_period_seconds, Some(0));
    }

    /// Helm's delete of its release record: client-go's typed client sends an envelope of kind
    /// DeleteOptions, apiVersion `v1`, with an empty message (the bytes Helm 3.18 and 4.1 send).
    #[test]
    fn delete_options_in_kubernetes_protobuf() {
        let helm = b"k8s\0\x0a\x13\x0a\x02v1\x12\x0dDeleteOptions\x12\x00\x1a\x00\x22\x00";
        let o = delete_options(
            &Query::default(),
            body("application/vnd.kubernetes.protobuf", helm),
        )
        .expect("Helm's body");
        assert_eq!(o.propagation_policy, PropagationPolicy::Unspecified as i32);
        assert!(!o.dry_run);
        // grace 0, preconditions {uid u1, resourceVersion 5}, Foreground, dryRun All (protoc).
        let mut full = b"k8s\0".to_vec();
        let raw = [
            0x08, 0x00, 0x12, 0x07, 0x0a, 0x02, b'u', b'1', 0x12, 0x01, b'5', 0x22, 0x0a,
        ];
        let mut message = raw.to_vec();
        message.extend_from_slice(b"Foreground");
        message.extend_from_slice(&[0x2a, 0x03]);
        message.extend_from_slice(b"All");
        let mut type_meta = vec![0x0a, 14];
        type_meta.extend_from_slice(b"meta.k8s.io/v1");
        type_meta.extend_from_slice(&[0x12, 13]);
        type_meta.extend_from_slice(b"DeleteOptions");
        let mut unknown = vec![0x0a, type_meta.len() as u8];
        unknown.extend_from_slice(&type_meta);
        unknown.extend_from_slice(&[0x12, message.len() as u8]);
        unknown.extend_from_slice(&message);
        full.extend_from_slice(&unknown);
        let o = delete_options(
            &Query::default(),
            body("application/vnd.kubernetes.protobuf", &full),
        )
        .expect("decodes");
        assert_eq!(o.grace_period_seconds, Some(0));
        assert_eq!(o.propagation_policy, PropagationPolicy::Foreground as i32);
        assert!(o.dry_run);
        let p = o.preconditions.expect("preconditions");
        assert_eq!(
            (p.uid.as_deref(), p.resource_version.as_deref()),
            (Some("u1"), Some("5"))
        );
        // An envelope of another kind is refused.
        let pod = b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod";
        assert!(
            crate::rest::body::delete_options("application/vnd.kubernetes.protobuf", pod).is_err()
        );
    }
}
