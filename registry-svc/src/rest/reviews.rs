//! The REST form of the catalog's create-only resources (`catalog::create_only`): the reviews
//! (`kubectl auth whoami`, `kubectl auth can-i`, `--list`) and TokenRequest
//! (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`, `kubectl create token`). Each is
//! a POST of a JSON, YAML or Kubernetes-protobuf body (client-go's typed clients send
//! upstream's protobuf message, which the registry's own descriptors do not describe: it is
//! decoded here, before routing), authorized as `create` on its resource (TokenRequest:
//! `serviceaccounts/token` on the account), answered 201.

use std::sync::Arc;

use http::{Method, StatusCode, header};
use serde_json::Value;

use super::{Body, Rest, body, reply, route::Route};
use crate::{
    catalog::{Catalog, create_only::CreateOnly},
    error::ApiError,
    store::Ctx,
};

/// A create of a create-only resource: what answers it, and the path's namespace and name.
pub struct Asked {
    what: Arc<CreateOnly>,
    namespace: String,
    name: String,
}

/// What `route` asks for, if it is a create of a create-only resource or subresource.
pub fn asked(catalog: &Catalog, method: &Method, route: &Route) -> Option<Asked> {
    let Route::Resource(path) = route else {
        return None;
    };
    if method != Method::POST {
        return None;
    }
    let subresource = path.subresource.as_deref().unwrap_or("");
    // A review is posted to its collection; a subresource to its object.
    if subresource.is_empty() != path.name.is_none() {
        return None;
    }
    let what = catalog.create_only(&path.group, &path.version, &path.resource, subresource)?;
    Some(Asked {
        what,
        namespace: path.namespace.clone().unwrap_or_default(),
        name: path.name.clone().unwrap_or_default(),
    })
}

/// Answers `asked`, the create `req` of `ctx`'s caller.
pub async fn answer(
    rest: &Rest,
    asked: Asked,
    req: http::Request<hyper::body::Incoming>,
    ctx: Ctx,
) -> Result<http::Response<Body>, ApiError> {
    let Asked {
        what,
        namespace,
        name,
    } = asked;
    ctx.caller.check(&what.attributes(&namespace, &name))?;
    let value = read(rest, req, &ctx, what.kind.2, &what.upstream_message()).await?;
    let answer = what.create(&ctx.caller, &namespace, &name, value).await?;
    Ok(reply::value(StatusCode::CREATED, &answer))
}

/// The body of `req`, a `kind` (upstream's protobuf message `upstream`) in JSON, YAML or
/// Kubernetes protobuf, as JSON.
async fn read(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
    kind: &str,
    upstream: &str,
) -> Result<Value, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let raw = body::read_raw(rest, req, ctx).await?;
    let malformed = |e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("the {kind} does not decode: {e}"))
    };
    match body::media(&content_type).as_str() {
        "application/vnd.kubernetes.protobuf" => {
            super::protobuf::decode_upstream(&raw, kind, upstream)
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            kubestore_apimachinery::yaml::to_json(&raw).map_err(|e| malformed(&e))
        }
        _ => serde_json::from_slice(&raw).map_err(|e| malformed(&e)),
    }
}
