//! Admission (upstream's `k8s.io/apiserver/pkg/admission`): what may refuse, warn about or
//! annotate a write after its strategy validated it and before it is stored, for every kind and
//! every transport. The Store calls [`Admission::validate`] on create (the new object), update,
//! patch and subresource writes (the new object and the one the attempt replaces) and delete
//! (the stored object), so the REST API and both gRPC APIs are admitted by the same code
//! (docs/design/admission.md).
//!
//! A [`Plugin`] first says whether a request interests it ([`Plugin::interested`], from the
//! request's attributes alone), and the objects are turned into Kubernetes JSON only when an
//! interested plugin asks for them ([`Objects`]), once for all: a kind no plugin admits pays a
//! few comparisons per write.
//!
//! Plugins, in upstream's order: [`webhook`] (`MutatingAdmissionWebhook`, before the strategy,
//! [`Admission::mutate`]), then after it [`pod_security`] (`PodSecurity`), [`policy`]
//! (`ValidatingAdmissionPolicy`) and [`webhook`] again (`ValidatingAdmissionWebhook`,
//! [`Admission::validate_webhooks`], asynchronous: it calls out).
//!
//! What a plugin says goes where upstream puts it: its error is the request's (a refusal is
//! 403, `<resource> "<name>" is forbidden: ...`, as `admission.NewForbidden` words it), its
//! warnings go to the caller ([`crate::authz::Caller::warn`]; each transport sends them at the
//! end), its audit annotations to the request's audit record.

pub mod config;
pub mod metrics;
pub mod namespaces;
pub mod pod_security;
pub mod policy;
pub mod quota;
pub mod webhook;

use std::{sync::Arc, time::Instant};

use serde_json::Value;

use crate::{authn::UserInfo, error::ApiError};

/// What a write does (upstream's `admission.Operation`; CONNECT has no kubestore verb).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Create.
    Create,
    /// Update, patch, and writes of subresources.
    Update,
    /// Delete (and each object of a DeleteCollection).
    Delete,
}

impl Operation {
    /// Upstream's name, `CREATE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// The labels of an object in Kubernetes JSON (none when it has none; values that are not
/// strings left out): what selectors and Pod Security read.
pub fn labels_of(v: &Value) -> std::collections::BTreeMap<String, String> {
    v.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, x)| Some((k.clone(), x.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// A write as admission sees it (upstream's `admission.Attributes`, less the objects).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// What the write does.
    pub operation: Operation,
    /// The resource's API group ("" for the core group).
    pub group: &'a str,
    /// Its version.
    pub version: &'a str,
    /// Its plural, `pods`.
    pub resource: &'a str,
    /// `status`, ..., or "".
    pub subresource: &'a str,
    /// The kind, `Pod`.
    pub kind: &'a str,
    /// The object's namespace ("" for a cluster-scoped kind).
    pub namespace: &'a str,
    /// The object's name (a create's, once generated).
    pub name: &'a str,
    /// A dry run: nothing will be stored.
    pub dry_run: bool,
    /// Who writes.
    pub user: &'a UserInfo,
    /// The request's authorizers (what a policy's `authorizer` variable asks); `None` where
    /// nothing may be asked (unit tests).
    pub gate: Option<&'a Arc<crate::authz::Gate>>,
}

impl Request<'_> {
    /// Upstream's `admission.k8s.io/v1` AdmissionRequest of this write, without its objects:
    /// what a webhook's review carries and what a policy's `request` variable is. Empty
    /// `subResource`, `name` and `namespace` are left out, as upstream's `omitempty` does.
    pub fn to_json(&self, uid: &str) -> Value {
        let kind =
            serde_json::json!({"group": self.group, "version": self.version, "kind": self.kind});
        let resource = serde_json::json!({"group": self.group, "version": self.version, "resource": self.resource});
        let options = match self.operation {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        };
        let mut user = serde_json::json!({"username": self.user.name, "groups": self.user.groups});
        if !self.user.uid.is_empty() {
            user["uid"] = serde_json::json!(self.user.uid);
        }
        if !self.user.extra.is_empty() {
            user["extra"] = serde_json::json!(self.user.extra);
        }
        let mut req = serde_json::json!({
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "operation": self.operation.as_str(),
            "userInfo": user,
            "dryRun": self.dry_run,
            "options": {"kind": options, "apiVersion": "meta.k8s.io/v1"},
        });
        for (k, v) in [
            ("subResource", self.subresource),
            ("requestSubResource", self.subresource),
            ("name", self.name),
            ("namespace", self.namespace),
        ] {
            if !v.is_empty() {
                req[k] = serde_json::json!(v);
            }
        }
        req
    }
}

/// The objects of a write, as Kubernetes JSON, made when a plugin first asks for them (a
/// plugin that decides from the request's attributes and the namespace alone costs no
/// encoding).
pub struct Objects<'a> {
    make: &'a (dyn Fn() -> Result<(Option<Value>, Option<Value>), ApiError> + 'a),
    made: std::cell::OnceCell<(Option<Value>, Option<Value>)>,
}

impl<'a> Objects<'a> {
    /// Objects `make` makes: the object to be stored (none on delete) and the one it replaces
    /// (none on create).
    pub fn new(
        make: &'a (dyn Fn() -> Result<(Option<Value>, Option<Value>), ApiError> + 'a),
    ) -> Self {
        Self {
            make,
            made: std::cell::OnceCell::new(),
        }
    }

    /// Objects already in JSON (tests).
    pub fn of(pair: (Option<Value>, Option<Value>)) -> Self {
        fn none() -> Result<(Option<Value>, Option<Value>), ApiError> {
            Ok((None, None))
        }
        let me = Self::new(&none);
        let _ = me.made.set(pair);
        me
    }

    fn made(&self) -> Result<&(Option<Value>, Option<Value>), ApiError> {
        if let Some(m) = self.made.get() {
            return Ok(m);
        }
        let m = (self.make)()?;
        Ok(self.made.get_or_init(|| m))
    }

    /// The object to be stored (none on delete).
    pub fn object(&self) -> Result<Option<&Value>, ApiError> {
        Ok(self.made()?.0.as_ref())
    }

    /// The object it replaces (none on create).
    pub fn old_object(&self) -> Result<Option<&Value>, ApiError> {
        Ok(self.made()?.1.as_ref())
    }
}

/// What a plugin adds to a request it lets through.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Warnings for the client (`Warning` headers, gRPC `warning` metadata).
    pub warnings: Vec<String>,
    /// Audit annotations (key, value), for the request's audit event.
    pub annotations: Vec<(String, String)>,
}

/// One admission plugin's validating phase.
pub trait Plugin: Send + Sync + 'static {
    /// Upstream's name of the plugin (`PodSecurity`).
    fn name(&self) -> &'static str;

    /// Whether `request` is one this plugin looks at (from its attributes only: no object is
    /// in JSON yet).
    fn interested(&self, request: &Request<'_>) -> bool;

    /// Lets the write through (with what it adds to `outcome`) or refuses it.
    fn validate(
        &self,
        request: &Request<'_>,
        objects: &Objects<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), ApiError>;
}

/// The plugins of this server, in order, and what they read.
#[derive(Default)]
pub struct Admission {
    plugins: Vec<Arc<dyn Plugin>>,
    /// The namespaces' labels, followed by watch (for the plugins that select by them).
    pub namespaces: Arc<namespaces::Namespaces>,
    /// The ValidatingAdmissionPolicies and bindings in effect (fed by their follow, whether
    /// or not the plugin is on).
    pub policies: Arc<policy::Policies>,
    /// The webhook configurations in effect (fed by their follow).
    pub webhooks: Arc<webhook::Webhooks>,
    /// The ResourceQuotas (fed by their follow), charged by the `ResourceQuota` plugin.
    pub quotas: Arc<quota::Quotas>,
    /// `ResourceQuota` is on.
    resource_quota: bool,
    /// Admission's metrics (registered by `lib.rs`).
    pub metrics: Arc<metrics::AdmissionMetrics>,
    /// `MutatingAdmissionWebhook` is on.
    mutating_webhooks: bool,
    /// `ValidatingAdmissionWebhook` is on.
    validating_webhooks: bool,
    /// `PodSecurity`, when on: its check of a namespace's Pods waits on their list.
    pod_security: Option<Arc<pod_security::PodSecurity>>,
    /// Where that check lists Pods (set once the Pods' Store exists).
    pods: std::sync::OnceLock<Arc<dyn pod_security::dry_run::PodLister>>,
    /// The server's authorizers, what a policy's `authorizer` asks (set once the chain is
    /// built): the registry's own caller decides with an open gate, but a policy asking about
    /// another user must get that user's real answer.
    gate: std::sync::OnceLock<Arc<crate::authz::Gate>>,
}

impl Admission {
    /// The plugins `settings` enable (by default every one upstream enables by default that
    /// applies to kubestore's kinds), reading `namespaces`.
    pub fn new(namespaces: Arc<namespaces::Namespaces>, settings: &config::Settings) -> Self {
        let mut plugins: Vec<Arc<dyn Plugin>> = Vec::new();
        let pod_security = settings.pod_security.as_ref().map(|c| {
            Arc::new(pod_security::PodSecurity::new(
                namespaces.clone(),
                c.clone(),
            ))
        });
        if let Some(p) = &pod_security {
            plugins.push(p.clone());
        }
        let metrics = Arc::new(metrics::AdmissionMetrics::default());
        let policies = Arc::new(policy::Policies::new(namespaces.clone(), metrics.clone()));
        if settings.validating_admission_policy {
            plugins.push(Arc::new(policy::PolicyPlugin(policies.clone())));
        }
        Self {
            plugins,
            webhooks: Arc::new(webhook::Webhooks::new(namespaces.clone(), metrics.clone())),
            namespaces,
            policies,
            mutating_webhooks: settings.mutating_admission_webhook,
            validating_webhooks: settings.validating_admission_webhook,
            quotas: Arc::default(),
            resource_quota: settings.resource_quota,
            metrics,
            pod_security,
            pods: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
        }
    }

    /// Gives policies' `authorizer` the server's authorizers.
    pub fn start_gate(&self, gate: Arc<crate::authz::Gate>) {
        let _ = self.gate.set(gate);
    }

    /// The authorizers a policy's `authorizer` asks: the server's, or `caller`'s before they
    /// are known.
    pub fn gate_for<'a>(&'a self, caller: &'a crate::authz::Caller) -> &'a Arc<crate::authz::Gate> {
        self.gate.get().unwrap_or(caller.gate())
    }

    /// Gives `PodSecurity` the Pods of a namespace whose enforce label gets stricter.
    pub fn start_pods(&self, pods: Arc<dyn pod_security::dry_run::PodLister>) {
        let _ = self.pods.set(pods);
    }

    /// `PodSecurity`'s check of a namespace's Pods, when `request` may need it.
    fn pod_dry_run(
        &self,
        request: &Request<'_>,
    ) -> Option<(
        &pod_security::PodSecurity,
        &dyn pod_security::dry_run::PodLister,
    )> {
        let p = self.pod_security.as_deref()?;
        let pods = self.pods.get()?;
        p.dry_run_interested(request).then_some((p, pods.as_ref()))
    }

    /// Whether a mutating webhook may want `request` (then its object is wanted in JSON).
    pub fn mutating_interested(&self, request: &Request<'_>) -> bool {
        self.mutating_webhooks && self.webhooks.mutating_interested(request)
    }

    /// Mutating admission: the mutating webhooks `request` reaches, on `object`; the object
    /// as they left it when one changed it.
    pub async fn mutate(
        &self,
        request: &Request<'_>,
        object: serde_json::Value,
        old: Option<&serde_json::Value>,
        caller: Option<&crate::authz::Caller>,
    ) -> Result<Option<serde_json::Value>, ApiError> {
        let started = Instant::now();
        let mut outcome = Outcome::default();
        let result = self
            .webhooks
            .mutate(request, object, old, &mut outcome)
            .await;
        deliver(outcome, caller);
        let (op, secs) = (request.operation.as_str(), started.elapsed().as_secs_f64());
        let rejected = result.is_err();
        self.metrics
            .controller("MutatingAdmissionWebhook", op, "admit", rejected, secs);
        self.metrics.step(op, "admit", rejected, secs);
        result
    }

    /// Whether a plugin that waits (a validating webhook, a quota) may want `request`.
    pub fn waiting_interested(&self, request: &Request<'_>) -> bool {
        (self.validating_webhooks && self.webhooks.validating_interested(request))
            || (self.resource_quota && self.quotas.interested(request))
            || self.pod_dry_run(request).is_some()
    }

    /// The validating plugins that wait, after [`Self::validate`]'s, in upstream's order:
    /// `PodSecurity`'s check of a namespace's Pods (warnings only), the validating webhooks,
    /// then `ResourceQuota` (last, so that nothing refuses a request it charged).
    pub async fn validate_waiting(
        &self,
        request: &Request<'_>,
        object: Option<&serde_json::Value>,
        old: Option<&serde_json::Value>,
        caller: Option<&crate::authz::Caller>,
    ) -> Result<(), ApiError> {
        let started = Instant::now();
        let op = request.operation.as_str();
        let result = async {
            if let Some((plugin, pods)) = self.pod_dry_run(request) {
                let t = Instant::now();
                let warnings = tracing::Instrument::instrument(
                    plugin.dry_run(request, object, old, pods, crate::store::deadline()),
                    tracing::info_span!("Admit", plugin = "PodSecurity"),
                )
                .await;
                deliver(
                    Outcome {
                        warnings,
                        annotations: Vec::new(),
                    },
                    caller,
                );
                let secs = t.elapsed().as_secs_f64();
                self.metrics
                    .controller("PodSecurity", op, "validate", false, secs);
            }
            if self.validating_webhooks && self.webhooks.validating_interested(request) {
                let t = Instant::now();
                let mut outcome = Outcome::default();
                let result = tracing::Instrument::instrument(
                    self.webhooks.validate(request, object, old, &mut outcome),
                    tracing::info_span!("Admit", plugin = "ValidatingAdmissionWebhook"),
                )
                .await;
                deliver(outcome, caller);
                let secs = t.elapsed().as_secs_f64();
                self.metrics.controller(
                    "ValidatingAdmissionWebhook",
                    op,
                    "validate",
                    result.is_err(),
                    secs,
                );
                result?;
            }
            if self.resource_quota
                && self.quotas.interested(request)
                && let Some(object) = object
            {
                let t = Instant::now();
                let result = tracing::Instrument::instrument(
                    self.quotas.charge(request, object),
                    tracing::info_span!("Admit", plugin = "ResourceQuota"),
                )
                .await;
                let secs = t.elapsed().as_secs_f64();
                self.metrics
                    .controller("ResourceQuota", op, "validate", result.is_err(), secs);
                result?;
            }
            Ok(())
        }
        .await;
        let secs = started.elapsed().as_secs_f64();
        self.metrics.step(op, "validate", result.is_err(), secs);
        result
    }

    /// Whether any plugin looks at `request` (then its objects are wanted in JSON).
    pub fn interested(&self, request: &Request<'_>) -> bool {
        self.plugins.iter().any(|p| p.interested(request))
    }

    /// Runs the validating phase of every interested plugin on `objects`; the first refusal
    /// is the answer. What the plugins add goes to the caller and its audit record, also when
    /// a later plugin refuses (upstream keeps the warnings and annotations of a refused
    /// request too).
    pub fn validate(
        &self,
        request: &Request<'_>,
        objects: &Objects<'_>,
        caller: Option<&crate::authz::Caller>,
    ) -> Result<(), ApiError> {
        let mut outcome = Outcome::default();
        let mut result = Ok(());
        let started = Instant::now();
        let op = request.operation.as_str();
        for p in self.plugins.iter().filter(|p| p.interested(request)) {
            let _span = tracing::info_span!("Admit", plugin = p.name()).entered();
            let t = Instant::now();
            result = p.validate(request, objects, &mut outcome);
            let secs = t.elapsed().as_secs_f64();
            self.metrics
                .controller(p.name(), op, "validate", result.is_err(), secs);
            if result.is_err() {
                break;
            }
        }
        let secs = started.elapsed().as_secs_f64();
        self.metrics.step(op, "validate", result.is_err(), secs);
        deliver(outcome, caller);
        result
    }
}

/// What plugins added, to the caller (warnings) and its audit record (annotations).
fn deliver(outcome: Outcome, caller: Option<&crate::authz::Caller>) {
    if let Some(caller) = caller {
        for w in outcome.warnings {
            caller.warn(w);
        }
        if let Some(record) = &caller.audit {
            for (k, v) in &outcome.annotations {
                record.annotate(k, v);
            }
        }
    }
}
