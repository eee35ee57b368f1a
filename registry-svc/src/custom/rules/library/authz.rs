//! Kubernetes' authorization library (`library/authz.go`): the `authorizer` variable of
//! ValidatingAdmissionPolicy expressions, which asks the server's authorizers about the
//! request's user (or another):
//! - `authorizer.group(g).resource(r)[.subresource(s)][.namespace(ns)][.name(n)].check(verb)`
//!   and `authorizer.path(p).check(verb)` give a `Decision`: `allowed()`, `reason()`,
//!   `errored()`, `error()`;
//! - `authorizer.serviceAccount(ns, name)` is an authorizer for that ServiceAccount's user;
//! - `authorizer.requestResource`, when the request is a resource request, is a
//!   `ResourceCheck` of the request's group, resource, subresource, namespace and name.
//!
//! The server answers through [`Check`]; its answers carry no error, so `errored()` is always
//! false and `error()` empty. Each `check` costs 350,000 (two per expression), the rest 1.

use std::sync::Arc;

use cel::{
    DeclarationError, Env, ExecutionError,
    common::{
        traits::Indexer,
        types::{CelBool, CelString, Type},
        value::{CowVal, StaticVal, Val},
    },
};

use super::{add_type, opaque_type};
use crate::{
    authn::UserInfo,
    authz::{Attributes, Decision, ResourceAttributes},
};

/// How the library asks the server: the decision on `attrs` for `user`, and its reason.
pub trait Check: Send + Sync {
    /// The decision on `attrs` for `user`, and its reason.
    fn check(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String);
}

/// The value of the `authorizer` variable for `user`, asking `checker`;
/// `authorizer.requestResource` is `request_resource`'s group, resource, subresource,
/// namespace and name, when given. Bind it with
/// `ctx.add_variable_as_val("authorizer", authorizer(...))`.
pub fn authorizer(
    checker: Arc<dyn Check>,
    user: UserInfo,
    request_resource: Option<ResourceAttributes>,
) -> Box<dyn Val> {
    let a = Authorizer {
        checker,
        user: Arc::new(user),
        request_resource: None,
    };
    let request_resource = request_resource.map(|r| {
        Arc::new(ResourceCheck {
            authorizer: a.clone(),
            group: r.group,
            resource: r.resource,
            subresource: r.subresource,
            namespace: r.namespace,
            name: r.name,
        })
    });
    Box::new(Authorizer {
        request_resource,
        ..a
    })
}

/// `kubernetes.authorization.Authorizer`: a user, and how to ask about it.
#[derive(Clone)]
pub(crate) struct Authorizer {
    checker: Arc<dyn Check>,
    user: Arc<UserInfo>,
    request_resource: Option<Arc<ResourceCheck>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("user", &self.user.name)
            .finish()
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.checker), Arc::as_ptr(&other.checker))
            && self.user == other.user
    }
}

static AUTHORIZER_TYPE: std::sync::LazyLock<Type> =
    std::sync::LazyLock::new(|| Type::new_opaque_type("kubernetes.authorization.Authorizer"));

impl Val for Authorizer {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }

    fn cel_type() -> &'static Type {
        &AUTHORIZER_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Authorizer>()
            .is_some_and(|o| o == self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    // `authorizer.requestResource`.
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
}

impl StaticVal for Authorizer {}

impl Indexer for Authorizer {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let field = idx.downcast_ref::<CelString<'_>>().map(|s| s.inner());
        match (field, &self.request_resource) {
            (Some("requestResource"), Some(r)) => Ok(CowVal::owned((**r).clone())),
            (Some(f), _) => Err(ExecutionError::no_such_key(f)),
            (None, _) => Err(ExecutionError::no_such_key("authorizer")),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// `kubernetes.authorization.PathCheck`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PathCheck {
    authorizer: Authorizer,
    path: String,
}
opaque_type!(PathCheck, "kubernetes.authorization.PathCheck");

/// `kubernetes.authorization.GroupCheck`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupCheck {
    authorizer: Authorizer,
    group: String,
}
opaque_type!(GroupCheck, "kubernetes.authorization.GroupCheck");

/// `kubernetes.authorization.ResourceCheck`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceCheck {
    authorizer: Authorizer,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
}
opaque_type!(ResourceCheck, "kubernetes.authorization.ResourceCheck");

/// `kubernetes.authorization.Decision`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecisionVal {
    decision: Decision,
    reason: String,
}
opaque_type!(DecisionVal, "kubernetes.authorization.Decision");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    add_type::<Authorizer>(env)?;
    add_type::<PathCheck>(env)?;
    add_type::<GroupCheck>(env)?;
    add_type::<ResourceCheck>(env)?;
    add_type::<DecisionVal>(env)?;
    cel::add_member_overload!(env, fn path: (Authorizer, CelString<'_>) -> Result<PathCheck>)?;
    cel::add_member_overload!(env, fn group: (Authorizer, CelString<'_>) -> GroupCheck)?;
    cel::add_member_overload!(
        env,
        fn service_account: (Authorizer, CelString<'_>, CelString<'_>) -> Result<Authorizer>
    )?;
    cel::add_member_overload!(env, fn resource: (GroupCheck, CelString<'_>) -> Result<ResourceCheck>)?;
    cel::add_member_overload!(env, fn subresource: (ResourceCheck, CelString<'_>) -> ResourceCheck)?;
    cel::add_member_overload!(env, fn namespace: (ResourceCheck, CelString<'_>) -> ResourceCheck)?;
    cel::add_member_overload!(env, fn name: (ResourceCheck, CelString<'_>) -> ResourceCheck)?;
    cel::add_member_overload!(env, fn check_path: (PathCheck, CelString<'_>) -> DecisionVal, name = "check")?;
    cel::add_member_overload!(
        env,
        fn check_resource: (ResourceCheck, CelString<'_>) -> DecisionVal,
        name = "check"
    )?;
    cel::add_member_overload!(env, fn allowed: (DecisionVal) -> CelBool)?;
    cel::add_member_overload!(env, fn reason: (DecisionVal) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn errored: (DecisionVal) -> CelBool)?;
    cel::add_member_overload!(env, fn error: (DecisionVal) -> CelString<'_>)?;
    Ok(())
}

fn path(a: &Authorizer, path: &CelString<'_>) -> Result<PathCheck, ExecutionError> {
    if path.inner().trim().is_empty() {
        return Err(ExecutionError::function_error(
            "path",
            "path must not be empty",
        ));
    }
    Ok(PathCheck {
        authorizer: a.clone(),
        path: path.inner().to_string(),
    })
}

fn group(a: &Authorizer, group: &CelString<'_>) -> GroupCheck {
    GroupCheck {
        authorizer: a.clone(),
        group: group.inner().to_string(),
    }
}

/// An authorizer for the ServiceAccount `namespace`/`name`'s user (upstream's
/// `ServiceAccountInfo.UserInfo`).
fn service_account(
    a: &Authorizer,
    namespace: &CelString<'_>,
    name: &CelString<'_>,
) -> Result<Authorizer, ExecutionError> {
    let fail = |m: &str| ExecutionError::function_error("serviceAccount", m);
    if crate::validation::dns1123_subdomain(name.inner()).is_some() {
        return Err(fail("Invalid service account name"));
    }
    if crate::validation::dns1123_label(namespace.inner()).is_some() {
        return Err(fail("Invalid service account namespace"));
    }
    let user = UserInfo {
        name: format!(
            "system:serviceaccount:{}:{}",
            namespace.inner(),
            name.inner()
        ),
        groups: crate::authn::service_account_groups(namespace.inner()),
        ..Default::default()
    };
    Ok(Authorizer {
        checker: a.checker.clone(),
        user: Arc::new(user),
        request_resource: None,
    })
}

fn resource(g: &GroupCheck, resource: &CelString<'_>) -> Result<ResourceCheck, ExecutionError> {
    if resource.inner().trim().is_empty() {
        return Err(ExecutionError::function_error(
            "resource",
            "resource must not be empty",
        ));
    }
    Ok(ResourceCheck {
        authorizer: g.authorizer.clone(),
        group: g.group.clone(),
        resource: resource.inner().to_string(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
    })
}

fn subresource(r: &ResourceCheck, s: &CelString<'_>) -> ResourceCheck {
    ResourceCheck {
        subresource: s.inner().to_string(),
        ..r.clone()
    }
}

fn namespace(r: &ResourceCheck, s: &CelString<'_>) -> ResourceCheck {
    ResourceCheck {
        namespace: s.inner().to_string(),
        ..r.clone()
    }
}

fn name(r: &ResourceCheck, s: &CelString<'_>) -> ResourceCheck {
    ResourceCheck {
        name: s.inner().to_string(),
        ..r.clone()
    }
}

fn decide(a: &Authorizer, attrs: Attributes) -> DecisionVal {
    let (decision, reason) = a.checker.check(&a.user, &attrs);
    DecisionVal { decision, reason }
}

fn check_path(p: &PathCheck, verb: &CelString<'_>) -> DecisionVal {
    decide(
        &p.authorizer,
        Attributes::NonResource {
            verb: verb.inner().to_string(),
            path: p.path.clone(),
        },
    )
}

fn check_resource(r: &ResourceCheck, verb: &CelString<'_>) -> DecisionVal {
    decide(
        &r.authorizer,
        Attributes::Resource(ResourceAttributes {
            verb: verb.inner().to_string(),
            group: r.group.clone(),
            // Any version, as upstream asks.
            version: "*".into(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        }),
    )
}

fn allowed(d: &DecisionVal) -> CelBool {
    CelBool::from(d.decision == Decision::Allow)
}

fn reason(d: &DecisionVal) -> CelString<'static> {
    CelString::from(d.reason.clone())
}

fn errored(_: &DecisionVal) -> CelBool {
    CelBool::from(false)
}

fn error(_: &DecisionVal) -> CelString<'static> {
    CelString::from(String::new())
}
