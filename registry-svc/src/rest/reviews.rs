//! The review endpoints, answered before routing (their groups have no stored kind):
//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`) and
//! `authorization.k8s.io/v1` SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview (`kubectl auth can-i`, `--list`):
//! each a POST of a JSON, YAML or Kubernetes-protobuf body (client-go's typed clients send
//! protobuf), authorized as `create` on its resource, answered 201 with its status
//! (`authz::review`), storing nothing.

use http::{Method, StatusCode, header};
use serde_json::Value;

use super::{Body, Rest, body, reply};
use crate::{
    authz::{Attributes, Caller, ResourceAttributes, review::Review},
    error::ApiError,
    store::Ctx,
};

const SELF_SUBJECT_REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const AUTHORIZATION: &str = "/apis/authorization.k8s.io/v1/";

/// What a request is, if it is a review.
enum Asked {
    WhoAmI,
    Access(Review),
}

fn asked(method: &Method, path: &str) -> Option<Asked> {
    if method != Method::POST {
        return None;
    }
    if path == SELF_SUBJECT_REVIEWS {
        return Some(Asked::WhoAmI);
    }
    path.strip_prefix(AUTHORIZATION)
        .and_then(Review::of_path)
        .map(Asked::Access)
}

/// Whether `req` is a review (then [`answer`] serves it).
pub fn is_review(req: &http::Request<hyper::body::Incoming>) -> bool {
    asked(req.method(), req.uri().path()).is_some()
}

/// Serves a review by `caller` (see the module's doc).
pub async fn answer(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: Ctx,
) -> Result<http::Response<Body>, ApiError> {
    let Some(asked) = asked(req.method(), req.uri().path()) else {
        return Err(super::no_route());
    };
    let caller: &Caller = &ctx.caller;
    match asked {
        Asked::WhoAmI => {
            caller.check(&Attributes::Resource(
                ResourceAttributes::new(
                    "create",
                    "authentication.k8s.io",
                    "v1",
                    "selfsubjectreviews",
                )
                .at("", ""),
            ))?;
            Ok(reply::value(
                StatusCode::CREATED,
                &crate::authn::self_subject_review(&caller.user),
            ))
        }
        Asked::Access(review) => {
            caller.check(&review.attributes())?;
            let (kind, _) = review.names();
            let content_type = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            let raw = body::read_raw(rest, req, &ctx).await?;
            let malformed = |e: &dyn std::fmt::Display| {
                ApiError::BadRequest(format!("the {kind} does not decode: {e}"))
            };
            let value: Value = match body::media(&content_type).as_str() {
                "application/vnd.kubernetes.protobuf" => super::protobuf::decode_upstream(
                    &raw,
                    kind,
                    &format!(".k8s.io.api.authorization.v1.{kind}"),
                )?,
                "application/yaml" | "application/x-yaml" | "text/yaml" => {
                    kubestore_apimachinery::yaml::to_json(&raw).map_err(|e| malformed(&e))?
                }
                _ => serde_json::from_slice(&raw).map_err(|e| malformed(&e))?,
            };
            let answer = crate::authz::review::answer(caller, &review, value)?;
            Ok(reply::value(StatusCode::CREATED, &answer))
        }
    }
}
