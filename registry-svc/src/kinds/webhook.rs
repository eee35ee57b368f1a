//! The strategies of admissionregistration.k8s.io/v1's MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration (upstream's `pkg/registry/admissionregistration/
//! {mutatingwebhookconfiguration,validatingwebhookconfiguration}`): cluster-scoped, validated
//! by [`webhook_validation`](super::webhook_validation) (a `service` reference refused: kubestore
//! has no Services), with a `generation` that grows with the webhooks. Tables are kubectl's
//! NAME WEBHOOKS AGE.
//!
//! Defaults are upstream's v1 `SetDefaults_*`: `failurePolicy: Fail`, `matchPolicy:
//! Equivalent`, empty (match-all) namespace and object selectors, `timeoutSeconds: 10`,
//! `reinvocationPolicy: Never`, and `scope: "*"` on every rule.

use kubestore_apimachinery::table::{Column, NAME_DESCRIPTION, age};
use kubestore_proto::{
    admissionregistration::v1::{
        MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
    },
    meta::v1::LabelSelector,
};
use serde_json::{Value, json};

use super::{
    printers::{age_col, col, created, meta_name},
    webhook_validation as v,
};
use crate::{resource::Resource, strategy::Strategy, violations::Violations};

/// MutatingWebhookConfigurations.
#[derive(Debug, Default, Clone)]
pub struct MutatingStrategy;

/// ValidatingWebhookConfigurations.
#[derive(Debug, Default, Clone)]
pub struct ValidatingStrategy;

/// The defaults shared by both kinds of webhook; whether anything changed.
fn defaults(
    failure_policy: &mut Option<String>,
    match_policy: &mut Option<String>,
    selectors: [&mut Option<LabelSelector>; 2],
    timeout: &mut Option<i32>,
    rules: &mut [RuleWithOperations],
) -> bool {
    let mut changed = false;
    let mut set = |field: &mut Option<String>, value: &str| {
        if field.is_none() {
            *field = Some(value.into());
            changed = true;
        }
    };
    set(failure_policy, "Fail");
    set(match_policy, "Equivalent");
    for r in rules.iter_mut() {
        set(&mut r.scope, "*");
    }
    for s in selectors {
        if s.is_none() {
            *s = Some(LabelSelector::default());
            changed = true;
        }
    }
    if timeout.is_none() {
        *timeout = Some(10);
        changed = true;
    }
    changed
}

/// A new generation when `changed`.
fn next_generation<R: Resource>(new: &mut R, old: &R, changed: bool) {
    let generation = old.meta().map_or(0, |m| m.generation);
    new.meta_mut().generation = if changed { generation + 1 } else { generation };
}

fn columns() -> Vec<Column> {
    vec![
        Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
        col(
            "Webhooks",
            "integer",
            0,
            "Webhooks is a list of webhooks and the affected resources and operations.",
        ),
        age_col(),
    ]
}

fn cells(
    m: &Option<kubestore_proto::meta::v1::ObjectMeta>,
    webhooks: usize,
    now: i64,
) -> Vec<Value> {
    vec![
        json!(meta_name(m)),
        json!(webhooks),
        json!(age(created(m), now)),
    ]
}

impl Strategy<MutatingWebhookConfiguration> for MutatingStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn default_object(&self, c: &mut MutatingWebhookConfiguration) -> bool {
        let mut changed = false;
        for w in &mut c.webhooks {
            changed |= defaults(
                &mut w.failure_policy,
                &mut w.match_policy,
                [&mut w.namespace_selector, &mut w.object_selector],
                &mut w.timeout_seconds,
                &mut w.rules,
            );
            if w.reinvocation_policy.is_none() {
                w.reinvocation_policy = Some("Never".into());
                changed = true;
            }
        }
        changed
    }
    fn has_defaults(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, c: &mut MutatingWebhookConfiguration) {
        c.meta_mut().generation = 1;
    }
    fn validate(&self, c: &MutatingWebhookConfiguration) -> Violations {
        v::mutating(c)
    }
    fn prepare_for_update(
        &self,
        new: &mut MutatingWebhookConfiguration,
        old: &MutatingWebhookConfiguration,
    ) {
        let changed = new.webhooks != old.webhooks;
        next_generation(new, old, changed);
    }
    fn validate_update(
        &self,
        new: &MutatingWebhookConfiguration,
        old: &MutatingWebhookConfiguration,
    ) -> Violations {
        v::mutating_update(new, old)
    }
    fn columns(&self) -> Vec<Column> {
        columns()
    }
    fn cells(&self, c: &MutatingWebhookConfiguration, now: i64) -> Vec<Value> {
        cells(&c.metadata, c.webhooks.len(), now)
    }
}

impl Strategy<ValidatingWebhookConfiguration> for ValidatingStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn default_object(&self, c: &mut ValidatingWebhookConfiguration) -> bool {
        let mut changed = false;
        for w in &mut c.webhooks {
            changed |= defaults(
                &mut w.failure_policy,
                &mut w.match_policy,
                [&mut w.namespace_selector, &mut w.object_selector],
                &mut w.timeout_seconds,
                &mut w.rules,
            );
        }
        changed
    }
    fn has_defaults(&self) -> bool {
        true
    }
    fn prepare_for_create(&self, c: &mut ValidatingWebhookConfiguration) {
        c.meta_mut().generation = 1;
    }
    fn validate(&self, c: &ValidatingWebhookConfiguration) -> Violations {
        v::validating(c)
    }
    fn prepare_for_update(
        &self,
        new: &mut ValidatingWebhookConfiguration,
        old: &ValidatingWebhookConfiguration,
    ) {
        let changed = new.webhooks != old.webhooks;
        next_generation(new, old, changed);
    }
    fn validate_update(
        &self,
        new: &ValidatingWebhookConfiguration,
        old: &ValidatingWebhookConfiguration,
    ) -> Violations {
        v::validating_update(new, old)
    }
    fn columns(&self) -> Vec<Column> {
        columns()
    }
    fn cells(&self, c: &ValidatingWebhookConfiguration, now: i64) -> Vec<Value> {
        cells(&c.metadata, c.webhooks.len(), now)
    }
}

/// Follows both configuration kinds into admission (`admission::webhook::Webhooks`) until
/// `stop`: a change takes effect as the watch delivers it.
pub async fn follow(
    mutating: crate::store::Store<MutatingWebhookConfiguration>,
    validating: crate::store::Store<ValidatingWebhookConfiguration>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    use crate::follow::Change;
    let into = mutating.storage.admission.webhooks.clone();
    let name = |m: &Option<kubestore_proto::meta::v1::ObjectMeta>| {
        m.as_ref().map(|m| m.name.clone()).unwrap_or_default()
    };
    let to = into.clone();
    let m = crate::follow::follow(mutating, stop.clone(), move |change| match change {
        Change::Reset(all) => to.reset_mutating(&all),
        Change::Put(c) => to.set_mutating(&c),
        Change::Gone(c) => to.remove_mutating(&name(&c.metadata)),
    });
    let v = crate::follow::follow(validating, stop, move |change| match change {
        Change::Reset(all) => into.reset_validating(&all),
        Change::Put(c) => into.set_validating(&c),
        Change::Gone(c) => into.remove_validating(&name(&c.metadata)),
    });
    tokio::join!(m, v);
}
