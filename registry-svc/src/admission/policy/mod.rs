//! ValidatingAdmissionPolicy (upstream's `pkg/admission/plugin/policy/validating`): policies
//! of CEL checks, put into effect by bindings, evaluated on every write that their
//! `matchConstraints` (and the binding's `matchResources`) select.
//!
//! - **What is known**: the policies (compiled once, [`compiled`]) and bindings, followed by
//!   watch (`kinds::admission_policy::follow` feeds [`Policies::set_policy`], ...), and the
//!   parameter objects of every `paramKind` a policy names ([`params`]). A change takes effect
//!   as soon as the watch delivers it (milliseconds), with no restart.
//! - **Matching** ([`matching`]): rules, exclusions, namespace and object selectors, then the
//!   policy's `matchConditions` in CEL.
//! - **Evaluation** ([`evaluate`]): upstream's CEL variables (`object`, `oldObject`,
//!   `params`, `request`, `namespaceObject`, `variables`, and `authorizer`, which asks the
//!   request's gate about its user) and Kubernetes' CEL libraries (`custom::rules::library`),
//!   with the cost limits of custom kinds' rules (`custom::rules::expression`); each failed
//!   check is a decision that the binding's `validationActions` send: **Deny** refuses the
//!   request (`... is forbidden: ValidatingAdmissionPolicy 'P' with binding 'B' denied request:
//!   MESSAGE`, with the validation's `reason`, `Invalid` by default, so 422), **Warn** adds the
//!   warning `Validation failed for ValidatingAdmissionPolicy 'P' with binding 'B': MESSAGE`,
//!   **Audit** adds the `validation.policy.admission.k8s.io/validation_failure` audit
//!   annotation. An expression that cannot be evaluated, parameters that cannot be found, a
//!   policy that does not compile: the policy's `failurePolicy` decides (`Fail`, the default,
//!   denies).
//! - **Type checking** ([`typecheck`]): the status controller
//!   (`kinds::admission_policy_status`) writes `status.typeChecking` for each new generation
//!   of a policy ([`Pending`] names those behind).
//!
//! Differences from upstream (README deviations): type checking finds undefined fields and
//! selections on what has no fields, not overload mismatches (the `cel` crate has no checker;
//! `typecheck` walks the tree against the schemas); `namespaceObject` carries the namespace's
//! name and labels only; `matchPolicy: Equivalent` matches only the exact version (kubestore
//! serves one version of each resource, but Event).

pub mod compiled;
pub mod evaluate;
pub mod matching;
pub mod params;
pub mod typecheck;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, RwLock},
};

use kubestore_proto::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};

use crate::{
    admission::{Objects, Outcome, Plugin, Request, namespaces::Namespaces},
    error::ApiError,
};

/// Why `source` does not compile as a policy's expression (upstream's words), `None` when it
/// does: what validation of the policy kinds asks.
pub fn compile_error(source: &str) -> Option<String> {
    crate::custom::rules::expression::Expression::compile(source).err()
}

/// What is in effect: the policies by name and the bindings, replaced whole on a change.
#[derive(Debug, Default)]
struct Snapshot {
    policies: HashMap<String, Arc<compiled::Policy>>,
    bindings: BTreeMap<String, Arc<ValidatingAdmissionPolicyBinding>>,
}

/// The names of policies whose status is behind their spec (`status.observedGeneration` below
/// `metadata.generation`), for the status controller (`kinds::admission_policy_status`): a set,
/// so a policy changed many times before the controller looks is checked once, and bounded by
/// the number of policies.
#[derive(Debug, Default)]
pub struct Pending {
    names: std::sync::Mutex<std::collections::BTreeSet<String>>,
    notify: tokio::sync::Notify,
}

impl Pending {
    /// Marks `p` when its status is behind its spec.
    fn offer(&self, p: &ValidatingAdmissionPolicy) {
        let Some(m) = &p.metadata else { return };
        let observed = p.status.as_ref().map_or(0, |s| s.observed_generation);
        if m.generation > observed {
            self.add(m.name.clone());
        }
    }

    /// Marks `name` (again, after a failed write).
    pub fn add(&self, name: String) {
        self.names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name);
        self.notify.notify_one();
    }

    /// The marked names, taken; waits until there is one.
    pub async fn take(&self) -> Vec<String> {
        loop {
            let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|p| p.into_inner()));
            if !names.is_empty() {
                return names.into_iter().collect();
            }
            self.notify.notified().await;
        }
    }
}

/// The policies and bindings in effect, and the parameters they read: the
/// `ValidatingAdmissionPolicy` admission plugin.
#[derive(Debug, Default)]
pub struct Policies {
    snapshot: RwLock<Arc<Snapshot>>,
    /// The parameter objects, per paramKind.
    pub params: params::Params,
    /// Policies whose type checking is to be written.
    pub pending: Pending,
    namespaces: Arc<Namespaces>,
    metrics: Arc<crate::admission::metrics::AdmissionMetrics>,
}

impl Policies {
    /// Policies reading `namespaces`' labels, counting their decisions in `metrics`.
    pub fn new(
        namespaces: Arc<Namespaces>,
        metrics: Arc<crate::admission::metrics::AdmissionMetrics>,
    ) -> Self {
        Self {
            namespaces,
            metrics,
            ..Self::default()
        }
    }

    fn current(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn change(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut guard = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
        let mut next = Snapshot {
            policies: guard.policies.clone(),
            bindings: guard.bindings.clone(),
        };
        f(&mut next);
        *guard = Arc::new(next);
    }

    /// Records a policy (created or changed): compiled now, its paramKind followed.
    pub fn set_policy(&self, p: &ValidatingAdmissionPolicy) {
        let compiled = Arc::new(compiled::Policy::of(p));
        if let Some((v, k)) = &compiled.param_kind {
            self.params.follow(v, k);
        }
        self.pending.offer(p);
        self.change(|s| {
            s.policies.insert(compiled.name.clone(), compiled);
        });
    }

    /// Forgets a policy.
    pub fn remove_policy(&self, name: &str) {
        self.change(|s| {
            s.policies.remove(name);
        });
    }

    /// Replaces every policy (after a list).
    pub fn reset_policies(&self, all: &[ValidatingAdmissionPolicy]) {
        let compiled: Vec<Arc<compiled::Policy>> = all
            .iter()
            .map(|p| Arc::new(compiled::Policy::of(p)))
            .collect();
        for c in &compiled {
            if let Some((v, k)) = &c.param_kind {
                self.params.follow(v, k);
            }
        }
        for p in all {
            self.pending.offer(p);
        }
        self.change(|s| {
            s.policies = compiled.into_iter().map(|c| (c.name.clone(), c)).collect();
        });
    }

    /// Records a binding.
    pub fn set_binding(&self, b: &ValidatingAdmissionPolicyBinding) {
        let name = b
            .metadata
            .as_ref()
            .map(|m| m.name.clone())
            .unwrap_or_default();
        let b = Arc::new(b.clone());
        self.change(|s| {
            s.bindings.insert(name, b);
        });
    }

    /// Forgets a binding.
    pub fn remove_binding(&self, name: &str) {
        self.change(|s| {
            s.bindings.remove(name);
        });
    }

    /// Replaces every binding (after a list).
    pub fn reset_bindings(&self, all: &[ValidatingAdmissionPolicyBinding]) {
        let bindings = all
            .iter()
            .map(|b| {
                let name = b
                    .metadata
                    .as_ref()
                    .map(|m| m.name.clone())
                    .unwrap_or_default();
                (name, Arc::new(b.clone()))
            })
            .collect();
        self.change(|s| s.bindings = bindings);
    }
}

/// The plugin as admission runs it (shares the state the follows feed).
#[derive(Debug, Clone)]
pub struct PolicyPlugin(pub Arc<Policies>);

impl Plugin for PolicyPlugin {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    fn interested(&self, _request: &Request<'_>) -> bool {
        !self.0.current().bindings.is_empty()
    }

    fn validate(
        &self,
        request: &Request<'_>,
        objects: &Objects<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), ApiError> {
        let snapshot = self.0.current();
        evaluate::dispatch(
            &snapshot.policies,
            &snapshot.bindings,
            &self.0,
            request,
            objects,
            outcome,
        )
    }
}
