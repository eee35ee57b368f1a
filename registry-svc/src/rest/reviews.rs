//! The create-only endpoints that store nothing, answered before routing: the reviews
//! (`authentication.k8s.io/v1` SelfSubjectReview, `kubectl auth whoami`;
//! `authorization.k8s.io/v1` SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview, `kubectl auth can-i`, `--list`) and
//! TokenRequest (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`, `kubectl create
//! token`, `serviceaccount::token_request`). Each is a POST of a JSON, YAML or
//! Kubernetes-protobuf body (client-go's typed clients send protobuf), authorized as `create`
//! on its resource (TokenRequest: `serviceaccounts/token` on the account), answered 201.

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
    /// A TokenRequest for the account (namespace, name).
    Token(String, String),
}

fn asked(method: &Method, path: &str) -> Option<Asked> {
    if method != Method::POST {
        return None;
    }
    if path == SELF_SUBJECT_REVIEWS {
        return Some(Asked::WhoAmI);
    }
    if let Some(rest) = path.strip_prefix("/api/v1/namespaces/")
        && let [ns, "serviceaccounts", name, "token"] = rest.split('/').collect::<Vec<_>>()[..]
        && !ns.is_empty()
        && !name.is_empty()
    {
        return Some(Asked::Token(ns.to_string(), name.to_string()));
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
            let upstream = format!(".k8s.io.api.authorization.v1.{kind}");
            let value = read(rest, req, &ctx, kind, &upstream).await?;
            let answer = crate::authz::review::answer(caller, &review, value)?;
            Ok(reply::value(StatusCode::CREATED, &answer))
        }
        Asked::Token(ns, name) => {
            caller.check(&Attributes::Resource(
                ResourceAttributes::new("create", "", "v1", "serviceaccounts")
                    .subresource("token")
                    .at(&ns, &name),
            ))?;
            let Some(issuer) = &rest.token_issuer else {
                return Err(ApiError::Internal(
                    "this server issues no ServiceAccount tokens: it has no \
                     --service-account-signing-key-file"
                        .into(),
                ));
            };
            let upstream = ".k8s.io.api.authentication.v1.TokenRequest";
            let value = read(rest, req, &ctx, "TokenRequest", upstream).await?;
            let answer = issuer.issue(&ns, &name, value).await?;
            Ok(reply::value(StatusCode::CREATED, &answer))
        }
    }
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
