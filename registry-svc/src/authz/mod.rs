//! Authorization: whether a request's user may do what it asks (upstream's `WithAuthorization`
//! over its authorizer union, `apiserver/pkg/authorization`).
//!
//! Every transport describes a request the same way, as [`Attributes`] (verb, API group,
//! resource, subresource, namespace, name; or a non-resource path), and asks the one [`Gate`]
//! of the server before the request reaches the catalog or a Store: REST from its path
//! (`rest::attributes`), the generic gRPC API from its request, the typed gRPC services from
//! their request and object. A request's [`Caller`] carries its user and the gate, in
//! `store::Ctx`; a Ctx becomes *authorized* only through `Ctx::authorize`, and
//! `Store::request` (which every client call of a Store goes through) refuses a Ctx that is
//! not, so an entrance that forgets to ask is a 500 in every test, never an open door.
//!
//! The gate is upstream's union: `system:masters` is always allowed (its
//! `privilegedGroupAuthorizer`, first in every chain), then each `--authorization-mode` in
//! order; the first Allow or Deny decides, and when none does the request is refused with the
//! reasons given (upstream's 403, [`forbidden`]).

pub mod forbidden;
pub mod review;

use std::sync::{Arc, Mutex, OnceLock};

use crate::{authn::UserInfo, error::ApiError};

/// What a request asks to do (upstream's `authorizer.Attributes`, less the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// A verb on a resource.
    Resource(ResourceAttributes),
    /// A verb (`get`, `post`, ...) on a path that is no resource (`/version`, `/apis`, ...).
    NonResource {
        /// The lower-cased HTTP method.
        verb: String,
        /// The URL path.
        path: String,
    },
}

/// A resource request's attributes (upstream's `RequestInfo` of a resource request).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb (`impersonate`, `escalate`, `bind`).
    pub verb: String,
    /// The API group ("" for core).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource ("" for the object itself).
    pub subresource: String,
    /// The namespace ("" at the cluster scope; a Namespace's own name for `namespaces/NAME`).
    pub namespace: String,
    /// The object's name ("" for a collection, or a create).
    pub name: String,
}

impl ResourceAttributes {
    /// The attributes of `verb` on `group`/`version`/`resource`.
    pub fn new(verb: &str, group: &str, version: &str, resource: &str) -> Self {
        Self {
            verb: verb.into(),
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            ..Default::default()
        }
    }

    /// With `subresource`.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// In `namespace`, naming `name`. A Namespace is in itself (upstream's `RequestInfo`:
    /// `namespaces/NAME` has namespace NAME), so a Role in a namespace can grant its own
    /// Namespace.
    pub fn at(mut self, namespace: &str, name: &str) -> Self {
        self.namespace = if self.group.is_empty() && self.resource == "namespaces" {
            name.into()
        } else {
            namespace.into()
        };
        self.name = name.into();
        self
    }
}

/// The name a list or watch is narrowed to by a field selector `metadata.name=NAME`, as
/// upstream's `RequestInfoFactory` authorizes it (so a Role with `resourceNames` can grant a
/// watch of one object); "" when it selects no single valid name.
pub fn selected_name(options: Option<&kubestore_proto::meta::v1::ListOptions>) -> String {
    options
        .and_then(|o| crate::selectors::parse_fields(&o.field_selector).ok())
        .and_then(|terms| {
            terms
                .into_iter()
                .find(|t| t.equals && t.field == "metadata.name")
                .map(|t| t.value)
        })
        .filter(|n| crate::validation::path_segment(n).is_none())
        .unwrap_or_default()
}

/// An authorizer's answer (upstream's `authorizer.Decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Allowed: the chain stops.
    Allow,
    /// Refused: the chain stops.
    Deny,
    /// No opinion: the next authorizer decides.
    NoOpinion,
}

/// One authorizer of the chain. Decisions are synchronous: every authorizer answers from memory
/// (RBAC from its watch-fed cache), never from storage per request.
pub trait Authorizer: Send + Sync + 'static {
    /// The decision on `attrs` for `user`, and a reason (shown in a refusal).
    fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String);

    /// Whether it can decide yet (RBAC: once its roles and bindings are loaded). Until every
    /// authorizer of the chain is, the gate answers 503: a refusal from an empty cache would
    /// be wrong, and final to a client.
    fn ready(&self) -> bool {
        true
    }

    /// The rules `user` holds in `namespace` and the errors met finding them, for authorizers
    /// made of rules (RBAC): the escalation check and SelfSubjectRulesReview use them.
    fn rules_for(
        &self,
        _user: &UserInfo,
        _namespace: &str,
    ) -> Option<(Vec<kubestore_proto::rbac::v1::PolicyRule>, Vec<String>)> {
        None
    }
}

/// `--authorization-mode`'s modes, in upstream's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Every request is allowed (the default; upstream's `AlwaysAllow`).
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
    /// Every request is refused, except those of `system:masters`.
    #[value(name = "AlwaysDeny")]
    AlwaysDeny,
    /// Roles and bindings (`rbac.authorization.k8s.io/v1`).
    #[value(name = "RBAC")]
    Rbac,
}

/// Upstream's `AlwaysAllow`.
struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &UserInfo, _: &Attributes) -> (Decision, String) {
        (Decision::Allow, String::new())
    }
}

/// Upstream's `AlwaysDeny`: no opinion, with its reason.
struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &UserInfo, _: &Attributes) -> (Decision, String) {
        (Decision::NoOpinion, "Everything is forbidden.".into())
    }
}

/// The authorizer union of a server (see the module's doc).
pub struct Gate {
    chain: Vec<Arc<dyn Authorizer>>,
    modes: Vec<Mode>,
    /// Whether the chain allows everything (AlwaysAllow first): no decision to make.
    open: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("authorizers", &self.chain.len())
            .field("open", &self.open)
            .finish()
    }
}

impl Gate {
    /// The gate of `modes`, in order; `rbac` is the RBAC authorizer (required when a mode is
    /// RBAC).
    pub fn new(modes: &[Mode], rbac: Option<Arc<dyn Authorizer>>) -> Result<Self, String> {
        let mut chain: Vec<Arc<dyn Authorizer>> = Vec::new();
        for mode in modes {
            chain.push(match mode {
                Mode::AlwaysAllow => Arc::new(AlwaysAllow),
                Mode::AlwaysDeny => Arc::new(AlwaysDeny),
                Mode::Rbac => rbac
                    .clone()
                    .ok_or("--authorization-mode RBAC: no RBAC authorizer was built")?,
            });
        }
        if chain.is_empty() {
            return Err("--authorization-mode: at least one mode is required".into());
        }
        Ok(Self {
            open: modes.first() == Some(&Mode::AlwaysAllow),
            chain,
            modes: modes.to_vec(),
        })
    }

    /// The gate that allows everything (AlwaysAllow).
    pub fn allow_all() -> Arc<Self> {
        static GATE: OnceLock<Arc<Gate>> = OnceLock::new();
        GATE.get_or_init(|| {
            Arc::new(Self {
                chain: vec![Arc::new(AlwaysAllow)],
                modes: vec![Mode::AlwaysAllow],
                open: true,
            })
        })
        .clone()
    }

    /// The union's decision (upstream's `unionAuthzHandler`, after the privileged group).
    pub fn decide(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String) {
        if self.open
            || user
                .groups
                .iter()
                .any(|g| g == crate::authn::SYSTEM_MASTERS)
        {
            return (Decision::Allow, String::new());
        }
        let mut reasons = Vec::new();
        for authorizer in &self.chain {
            let (decision, reason) = authorizer.authorize(user, attrs);
            if !reason.is_empty() {
                reasons.push(reason);
            }
            if decision != Decision::NoOpinion {
                return (decision, reasons.join("\n"));
            }
        }
        (Decision::NoOpinion, reasons.join("\n"))
    }

    /// Whether every authorizer can decide (see [`Authorizer::ready`]).
    pub fn ready(&self) -> bool {
        self.open || self.chain.iter().all(|a| a.ready())
    }

    /// The rules `user` holds in `namespace` by the first authorizer made of rules (RBAC), if
    /// one is in the chain.
    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> Option<(Vec<kubestore_proto::rbac::v1::PolicyRule>, Vec<String>)> {
        self.chain.iter().find_map(|a| a.rules_for(user, namespace))
    }

    /// What `user` may do in `namespace` by every mode of the chain (upstream's union rule
    /// resolver, for SelfSubjectRulesReview): AlwaysAllow everything, AlwaysDeny nothing, RBAC
    /// its rules; and the errors met.
    pub fn rules_for_all(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<kubestore_proto::rbac::v1::PolicyRule>, Vec<String>) {
        let all = || vec!["*".to_string()];
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for (mode, authorizer) in self.modes.iter().zip(&self.chain) {
            match mode {
                Mode::AlwaysAllow => {
                    rules.push(kubestore_proto::rbac::v1::PolicyRule {
                        verbs: all(),
                        api_groups: all(),
                        resources: all(),
                        ..Default::default()
                    });
                    rules.push(kubestore_proto::rbac::v1::PolicyRule {
                        verbs: all(),
                        non_resource_urls: all(),
                        ..Default::default()
                    });
                }
                Mode::AlwaysDeny => {}
                Mode::Rbac => {
                    if let Some((r, e)) = authorizer.rules_for(user, namespace) {
                        rules.extend(r);
                        errors.extend(e);
                    }
                }
            }
        }
        (rules, errors)
    }

    /// Ok when `user` may do `attrs`; upstream's 403 otherwise, and 503 while an authorizer
    /// cannot decide yet.
    pub fn check(&self, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
        if !self.open
            && !user
                .groups
                .iter()
                .any(|g| g == crate::authn::SYSTEM_MASTERS)
            && !self.ready()
        {
            return Err(ApiError::Unavailable {
                reason: "ServiceUnavailable",
                message:
                    "authorization is not ready yet: the RBAC roles and bindings are still loading"
                        .into(),
            });
        }
        match self.decide(user, attrs) {
            (Decision::Allow, _) => Ok(()),
            (_, reason) => Err(forbidden::denied(user, attrs, &reason)),
        }
    }
}

/// Who a request is, and the gate that decides what it may do: made once per request by its
/// transport (after authentication), carried in `store::Ctx`.
#[derive(Debug)]
pub struct Caller {
    /// The user (after impersonation, once it exists).
    pub user: UserInfo,
    gate: Arc<Gate>,
    /// The request's audit record, when audit is on: the gate's first decision is the
    /// request's, and gives the record its attributes.
    pub audit: Option<Arc<crate::audit::Record>>,
    /// Warnings for the client (admission's), sent by the transport when the request ends;
    /// none for the registry's own shared caller, which no transport drains.
    warnings: Option<Mutex<Vec<String>>>,
    /// The request's `User-Agent`: its writes' field manager when it names none (`managed`).
    pub user_agent: String,
}

/// Most warnings one request keeps (upstream's recorder bounds their total size; the REST
/// transport truncates to that bound when it writes them: `rest::reply::warning_headers`).
const MAX_WARNINGS: usize = 64;

impl Caller {
    /// `user`, decided by `gate`.
    pub fn new(user: UserInfo, gate: Arc<Gate>) -> Self {
        Self {
            user,
            gate,
            audit: None,
            warnings: Some(Mutex::new(Vec::new())),
            user_agent: String::new(),
        }
    }

    /// This caller, whose requests say they come from `user_agent`.
    pub fn with_user_agent(mut self, user_agent: &str) -> Self {
        self.user_agent = user_agent.to_string();
        self
    }

    /// Adds a warning for the client (kept once per text, at most [`MAX_WARNINGS`]).
    pub fn warn(&self, text: String) {
        if let Some(w) = &self.warnings {
            let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
            if w.len() < MAX_WARNINGS && !w.contains(&text) {
                w.push(text);
            }
        }
    }

    /// The warnings added so far, taken (the transport sends them once).
    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .as_ref()
            .map(|w| std::mem::take(&mut *w.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    /// With the request's audit record.
    pub fn audited(mut self, record: Option<Arc<crate::audit::Record>>) -> Self {
        self.audit = record;
        self
    }

    /// The registry itself (its controllers, namespace cleanup, custom-kind cleanup): upstream's
    /// loopback user `system:apiserver` in `system:masters`. No request can be it: transports
    /// only make callers of authenticated users.
    pub fn internal() -> Arc<Self> {
        static INTERNAL: OnceLock<Arc<Caller>> = OnceLock::new();
        INTERNAL
            .get_or_init(|| {
                Arc::new(Self {
                    user: UserInfo {
                        name: "system:apiserver".into(),
                        groups: vec![crate::authn::SYSTEM_MASTERS.into()],
                        ..Default::default()
                    }
                    .authenticated(),
                    gate: Gate::allow_all(),
                    audit: None,
                    warnings: None,
                    // The manager of the registry's own writes, as upstream's loopback client
                    // is `kube-apiserver`.
                    user_agent: "registry-svc".into(),
                })
            })
            .clone()
    }

    /// Ok when the caller may do `attrs`.
    pub fn check(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let result = self.gate.check(&self.user, attrs);
        if let Some(record) = &self.audit {
            record.attributes(attrs);
            match &result {
                Ok(()) => record.decided(true, ""),
                Err(e) => record.decided(false, &e.to_string()),
            }
        }
        result
    }

    /// The gate of the request.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// The gate's decision on `attrs` for `user` (the access reviews ask for other users).
    pub fn decide_for(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String) {
        self.gate.decide(user, attrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn list_configmaps() -> Attributes {
        Attributes::Resource(ResourceAttributes::new("list", "", "v1", "configmaps").at("ns1", ""))
    }

    #[test]
    fn masters_pass_every_chain_and_the_first_opinion_decides() {
        let deny = Gate::new(&[Mode::AlwaysDeny], None).expect("a chain");
        assert_eq!(
            deny.check(&user("alice", &["dev"]), &list_configmaps())
                .map_err(|e| e.to_string()),
            Err(
                "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in \
                 API group \"\" in the namespace \"ns1\": Everything is forbidden."
                    .into()
            )
        );
        assert_eq!(
            deny.check(&user("root", &["system:masters"]), &list_configmaps()),
            Ok(())
        );
        let allow_after_deny =
            Gate::new(&[Mode::AlwaysDeny, Mode::AlwaysAllow], None).expect("a chain");
        assert_eq!(
            allow_after_deny.decide(&user("alice", &[]), &list_configmaps()),
            (Decision::Allow, "Everything is forbidden.".into()),
            "AlwaysDeny has no opinion, as upstream's: the next mode decides"
        );
        assert!(Gate::new(&[Mode::Rbac], None).is_err());
        assert!(Gate::new(&[], None).is_err());
    }

    #[test]
    fn a_namespace_is_in_itself() {
        let a = ResourceAttributes::new("get", "", "v1", "namespaces").at("", "team-a");
        assert_eq!(
            (a.namespace.as_str(), a.name.as_str()),
            ("team-a", "team-a")
        );
        let a = ResourceAttributes::new("get", "", "v1", "pods").at("team-a", "web");
        assert_eq!((a.namespace.as_str(), a.name.as_str()), ("team-a", "web"));
    }
}
