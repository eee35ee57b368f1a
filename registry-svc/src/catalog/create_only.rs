//! Create-only resources that store nothing (upstream's `rest.Creater` and
//! `rest.NamedCreater` storages without a Getter): the reviews, which answer a question in the
//! object they are sent (`authentication.k8s.io/v1` SelfSubjectReview, `kubectl auth whoami`;
//! `authorization.k8s.io/v1` SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview, `kubectl auth can-i`), and the
//! `serviceaccounts/token` subresource (TokenRequest, `kubectl create token`).
//!
//! Each is one [`CreateOnly`] in the catalog, so every transport finds, authorizes and answers
//! it the same way and discovery lists it as upstream does: the reviews as resources whose only
//! verb is `create` (an [`Endpoint`] that refuses the others with 405, as upstream), the token
//! as a subresource of `serviceaccounts` whose kind is `authentication.k8s.io/v1` TokenRequest.
//! The REST API decodes their bodies (JSON, YAML, or upstream's protobuf message) before
//! routing (`rest::reviews`); the generic gRPC API's `Create` takes their JSON.

use std::sync::Arc;

use kubestore_apimachinery::patch::Patch;
use kubestore_proto::meta::v1::{DeleteOptions, ListOptions};
use serde_json::Value;

use super::{
    Deleted, Endpoint, EventStream, Json, Output, Page, Part, ResourceInfo, WriteOptions, Written,
};
use crate::{
    authz::{Attributes, Caller, ResourceAttributes, review::Review},
    error::ApiError,
    metrics::Verb,
    serviceaccount::TokenIssuer,
    store::Ctx,
};

/// What answers a create.
#[derive(Clone)]
enum Answer {
    /// SelfSubjectReview: who the caller is.
    WhoAmI,
    /// An access review, by its plural.
    Access(&'static str),
    /// A TokenRequest for the account the path names.
    Token(Arc<TokenIssuer>),
}

/// One create-only resource or subresource.
pub struct CreateOnly {
    /// The path's group, version and plural (`""`, `v1`, `serviceaccounts` for the token).
    pub group: &'static str,
    /// The path's version.
    pub version: &'static str,
    /// The path's plural.
    pub plural: &'static str,
    /// `token`, or "" for a resource of its own.
    pub subresource: &'static str,
    /// The kind sent and answered, with its group and version (`authentication.k8s.io`, `v1`,
    /// `TokenRequest`).
    pub kind: (&'static str, &'static str, &'static str),
    /// Whether the path has a namespace.
    pub namespaced: bool,
    answer: Answer,
}

impl CreateOnly {
    /// The reviews every server answers.
    pub fn reviews() -> Vec<Self> {
        let access = |plural: &'static str, kind: &'static str, namespaced: bool| Self {
            group: "authorization.k8s.io",
            version: "v1",
            plural,
            subresource: "",
            kind: ("authorization.k8s.io", "v1", kind),
            namespaced,
            answer: Answer::Access(plural),
        };
        vec![
            Self {
                group: "authentication.k8s.io",
                version: "v1",
                plural: "selfsubjectreviews",
                subresource: "",
                kind: ("authentication.k8s.io", "v1", "SelfSubjectReview"),
                namespaced: false,
                answer: Answer::WhoAmI,
            },
            access("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
            access("subjectaccessreviews", "SubjectAccessReview", false),
            access(
                "localsubjectaccessreviews",
                "LocalSubjectAccessReview",
                true,
            ),
            access("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
        ]
    }

    /// `serviceaccounts/token`, answered by `issuer`.
    pub fn token(issuer: Arc<TokenIssuer>) -> Self {
        Self {
            group: "",
            version: "v1",
            plural: "serviceaccounts",
            subresource: "token",
            kind: ("authentication.k8s.io", "v1", "TokenRequest"),
            namespaced: true,
            answer: Answer::Token(issuer),
        }
    }

    /// Upstream's protobuf message of the kind (`.k8s.io.api.authentication.v1.TokenRequest`):
    /// client-go's typed clients send it.
    pub fn upstream_message(&self) -> String {
        let (group, version, kind) = self.kind;
        let package = group.strip_suffix(".k8s.io").unwrap_or(group);
        format!(".k8s.io.api.{package}.{version}.{kind}")
    }

    /// What creating it in `namespace`, naming `name`, asks of the gate.
    pub fn attributes(&self, namespace: &str, name: &str) -> Attributes {
        Attributes::Resource(
            ResourceAttributes::new("create", self.group, self.version, self.plural)
                .subresource(self.subresource)
                .at(if self.namespaced { namespace } else { "" }, name),
        )
    }

    /// The answer to `body` (the kind's JSON) sent by `caller` (authorized already) to
    /// `namespace` and `name` (the account, for a token).
    pub async fn create(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        body: Value,
    ) -> Result<Value, ApiError> {
        if self.namespaced && namespace.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "a {} is created in a namespace: the request names none",
                self.kind.2
            )));
        }
        match &self.answer {
            Answer::WhoAmI => Ok(crate::authn::self_subject_review(&caller.user)),
            Answer::Access(plural) => {
                let review = match *plural {
                    "selfsubjectaccessreviews" => Review::SelfAccess,
                    "subjectaccessreviews" => Review::Access,
                    "localsubjectaccessreviews" => Review::LocalAccess(namespace.to_string()),
                    _ => Review::SelfRules,
                };
                crate::authz::review::answer(caller, &review, body)
            }
            Answer::Token(issuer) => {
                if name.is_empty() {
                    return Err(ApiError::BadRequest(
                        "a TokenRequest names its ServiceAccount: the request names none".into(),
                    ));
                }
                issuer.issue(namespace, name, body).await
            }
        }
    }

    /// What discovery says of it as a resource of its own (the reviews).
    fn info(&self) -> ResourceInfo {
        let (_, _, kind) = self.kind;
        ResourceInfo {
            group: self.group.into(),
            version: self.version.into(),
            plural: self.plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: String::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: self.namespaced,
            verbs: vec!["create".into()],
            status: false,
            finalize: false,
            storage_version: false,
            message: None,
            return_deleted_object: false,
        }
    }
}

/// A review as a catalog endpoint: discovery's entry, and the generic API's `Create`.
pub struct ReviewEndpoint {
    review: Arc<CreateOnly>,
    info: ResourceInfo,
}

impl ReviewEndpoint {
    /// The endpoint of `review`, a resource of its own.
    pub fn new(review: Arc<CreateOnly>) -> Self {
        let info = review.info();
        Self { review, info }
    }

    fn only_create(&self) -> ApiError {
        ApiError::MethodNotSupported(format!(
            "the server does not allow this method on the requested resource: {} only \
             takes create",
            self.info.qualified()
        ))
    }
}

#[tonic::async_trait]
impl Endpoint for ReviewEndpoint {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    async fn get(&self, _: Ctx, _: &str, _: &str, _: Part, _: Output) -> Result<Json, ApiError> {
        Err(self.only_create())
    }

    async fn list(&self, _: Ctx, _: &str, _: ListOptions, _: Output) -> Result<Page, ApiError> {
        Err(self.only_create())
    }

    async fn watch(
        &self,
        _: &Ctx,
        _: &str,
        _: ListOptions,
        _: Output,
        _: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream, ApiError> {
        Err(self.only_create())
    }

    async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        body: Value,
        _: &WriteOptions,
    ) -> Result<Written, ApiError> {
        // Nothing is stored, so a dry run answers as a real create does (upstream's reviews
        // ignore dryRun too).
        let answer = self.review.create(&ctx.caller, namespace, "", body).await?;
        let object = serde_json::to_vec(&answer)
            .map_err(|e| ApiError::Internal(format!("the answer does not encode: {e}")))?;
        Ok(Written {
            object: object.into(),
            warnings: Vec::new(),
            created: true,
        })
    }

    async fn update(
        &self,
        _: Ctx,
        _: &str,
        _: &str,
        _: Value,
        _: Part,
        _: &WriteOptions,
    ) -> Result<Written, ApiError> {
        Err(self.only_create())
    }

    async fn patch(
        &self,
        _: Ctx,
        _: &str,
        _: &str,
        _: Patch,
        _: Part,
        _: &WriteOptions,
    ) -> Result<Written, ApiError> {
        Err(self.only_create())
    }

    async fn delete(
        &self,
        _: Ctx,
        _: &str,
        _: &str,
        _: DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        Err(self.only_create())
    }

    fn refused(&self, _: Verb, _: &str, _: &ApiError) {}

    async fn delete_collection(
        &self,
        _: Ctx,
        _: &str,
        _: ListOptions,
        _: DeleteOptions,
    ) -> Result<Page, ApiError> {
        Err(self.only_create())
    }
}
