//! The strategies of admissionregistration.k8s.io/v1's ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding (upstream's `pkg/registry/admissionregistration/
//! {validatingadmissionpolicy,validatingadmissionpolicybinding}`): cluster-scoped, named as DNS
//! subdomains, validated by [`admission_policy_validation`](super::admission_policy_validation)
//! (every CEL expression compiled at write time). A policy has a `status` subresource (its
//! type checking, written by the status controller) and a `generation` that grows with its
//! spec; its Table is kubectl's NAME VALIDATIONS PARAMKIND AGE, a binding's NAME POLICYNAME
//! PARAMREF AGE.
//!
//! Defaults are upstream's v1 `SetDefaults_*`: `failurePolicy: Fail`, `matchPolicy:
//! Equivalent`, empty (match-all) namespace and object selectors, `scope: "*"`.
//!
//! Upstream also authorizes the `paramKind` a policy names (the writer must be allowed to read
//! it) and a binding's policy and params; kubestore does not yet (a deviations row).

use kubestore_apimachinery::table::{Column, NAME_DESCRIPTION, age};
use kubestore_proto::{
    admissionregistration::v1::{
        MatchResources, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
        ValidatingAdmissionPolicyStatus,
    },
    meta::v1::LabelSelector,
};
use serde_json::{Value, json};

use super::{
    admission_policy_validation as v,
    printers::{age_col, col, created, meta_name},
};
use crate::{strategy::Strategy, violations::Violations};

/// ValidatingAdmissionPolicies.
#[derive(Debug, Default, Clone)]
pub struct PolicyStrategy;

/// ValidatingAdmissionPolicyBindings.
#[derive(Debug, Default, Clone)]
pub struct BindingStrategy;

/// Upstream's `SetDefaults_MatchResources` (and `SetDefaults_Rule`'s scope); whether it changed
/// anything.
fn default_match(m: &mut MatchResources) -> bool {
    let mut changed = false;
    if m.match_policy.is_none() {
        m.match_policy = Some("Equivalent".into());
        changed = true;
    }
    for s in [&mut m.namespace_selector, &mut m.object_selector] {
        if s.is_none() {
            *s = Some(LabelSelector::default());
            changed = true;
        }
    }
    for r in m
        .resource_rules
        .iter_mut()
        .chain(m.exclude_resource_rules.iter_mut())
    {
        if r.scope.is_none() {
            r.scope = Some("*".into());
            changed = true;
        }
    }
    changed
}

impl Strategy<ValidatingAdmissionPolicy> for PolicyStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn default_object(&self, p: &mut ValidatingAdmissionPolicy) -> bool {
        let Some(spec) = p.spec.as_mut() else {
            return false;
        };
        let mut changed = false;
        if spec.failure_policy.is_none() {
            spec.failure_policy = Some("Fail".into());
            changed = true;
        }
        if let Some(m) = spec.match_constraints.as_mut() {
            changed |= default_match(m);
        }
        changed
    }
    fn has_defaults(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, p: &mut ValidatingAdmissionPolicy) {
        p.status = None;
        p.meta_mut_generation(1);
    }
    fn validate(&self, p: &ValidatingAdmissionPolicy) -> Violations {
        v::policy(p)
    }
    fn prepare_for_update(
        &self,
        new: &mut ValidatingAdmissionPolicy,
        old: &ValidatingAdmissionPolicy,
    ) {
        // The status is the status subresource's; a changed spec is a new generation.
        new.status = old.status.clone();
        let generation = old.metadata.as_ref().map_or(0, |m| m.generation);
        let next = if new.spec != old.spec {
            generation + 1
        } else {
            generation
        };
        new.meta_mut_generation(next);
    }
    fn validate_update(
        &self,
        new: &ValidatingAdmissionPolicy,
        old: &ValidatingAdmissionPolicy,
    ) -> Violations {
        v::policy_update(new, old)
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_status_update(
        &self,
        new: &mut ValidatingAdmissionPolicy,
        old: &ValidatingAdmissionPolicy,
    ) {
        let status: Option<ValidatingAdmissionPolicyStatus> = new.status.take();
        *new = old.clone();
        new.status = status;
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
            col(
                "Validations",
                "integer",
                0,
                "Validations contain CEL expressions which is used to apply the validation.",
            ),
            col(
                "ParamKind",
                "string",
                0,
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            age_col(),
        ]
    }
    fn cells(&self, p: &ValidatingAdmissionPolicy, now: i64) -> Vec<Value> {
        let spec = p.spec.clone().unwrap_or_default();
        let param_kind = spec.param_kind.map_or("<unset>".to_string(), |k| {
            format!("{}/{}", k.api_version, k.kind)
        });
        vec![
            json!(meta_name(&p.metadata)),
            json!(spec.validations.len()),
            json!(param_kind),
            json!(age(created(&p.metadata), now)),
        ]
    }
}

impl Strategy<ValidatingAdmissionPolicyBinding> for BindingStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn default_object(&self, b: &mut ValidatingAdmissionPolicyBinding) -> bool {
        b.spec
            .as_mut()
            .and_then(|s| s.match_resources.as_mut())
            .is_some_and(default_match)
    }
    fn has_defaults(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, b: &mut ValidatingAdmissionPolicyBinding) {
        b.meta_mut_generation(1);
    }
    fn validate(&self, b: &ValidatingAdmissionPolicyBinding) -> Violations {
        v::binding(b)
    }
    fn prepare_for_update(
        &self,
        new: &mut ValidatingAdmissionPolicyBinding,
        old: &ValidatingAdmissionPolicyBinding,
    ) {
        let generation = old.metadata.as_ref().map_or(0, |m| m.generation);
        let next = if new.spec != old.spec {
            generation + 1
        } else {
            generation
        };
        new.meta_mut_generation(next);
    }
    fn validate_update(
        &self,
        new: &ValidatingAdmissionPolicyBinding,
        old: &ValidatingAdmissionPolicyBinding,
    ) -> Violations {
        v::binding_update(new, old)
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
            col(
                "PolicyName",
                "string",
                0,
                "PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to.",
            ),
            col(
                "ParamRef",
                "string",
                0,
                "ParamRef specifies the parameter resource used to configure the admission control policy.",
            ),
            age_col(),
        ]
    }
    fn cells(&self, b: &ValidatingAdmissionPolicyBinding, now: i64) -> Vec<Value> {
        let spec = b.spec.clone().unwrap_or_default();
        // Upstream prints `*/NAME` (or `NAMESPACE/NAME`) for a named param, `<unset>` else.
        let param = spec.param_ref.map_or("<unset>".to_string(), |r| {
            let ns = if r.namespace.is_empty() {
                "*"
            } else {
                r.namespace.as_str()
            };
            if r.name.is_empty() {
                format!("{ns}/*")
            } else {
                format!("{ns}/{}", r.name)
            }
        });
        vec![
            json!(meta_name(&b.metadata)),
            json!(spec.policy_name),
            json!(param),
            json!(age(created(&b.metadata), now)),
        ]
    }
}

/// Sets `metadata.generation`.
trait Generation {
    fn meta_mut_generation(&mut self, generation: i64);
}

impl<R: crate::resource::Resource> Generation for R {
    fn meta_mut_generation(&mut self, generation: i64) {
        self.meta_mut().generation = generation;
    }
}

/// Follows the policies and bindings into admission (`admission::policy::Policies`) until
/// `stop`: what admission evaluates is what storage holds, a watch's delay later.
pub async fn follow(
    policies: crate::store::Store<ValidatingAdmissionPolicy>,
    bindings: crate::store::Store<ValidatingAdmissionPolicyBinding>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    use crate::follow::Change;
    let into = policies.storage.admission.policies.clone();
    let name = |m: &Option<kubestore_proto::meta::v1::ObjectMeta>| {
        m.as_ref().map(|m| m.name.clone()).unwrap_or_default()
    };
    let to = into.clone();
    let policies = crate::follow::follow(policies, stop.clone(), move |change| match change {
        Change::Reset(all) => to.reset_policies(&all),
        Change::Put(p) => to.set_policy(&p),
        Change::Gone(p) => to.remove_policy(&name(&p.metadata)),
    });
    let bindings = crate::follow::follow(bindings, stop, move |change| match change {
        Change::Reset(all) => into.reset_bindings(&all),
        Change::Put(b) => into.set_binding(&b),
        Change::Gone(b) => into.remove_binding(&name(&b.metadata)),
    });
    tokio::join!(policies, bindings);
}
