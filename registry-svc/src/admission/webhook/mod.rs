//! Admission webhooks (upstream's `pkg/admission/plugin/webhook`): the HTTPS endpoints that
//! Mutating- and ValidatingWebhookConfigurations name, called with an AdmissionReview on the
//! writes their rules, selectors and matchConditions select.
//!
//! - **Mutating** ([`Webhooks::mutate`]) runs before the strategy: each matching webhook in
//!   order (configurations by name, webhooks in their order), its JSONPatch applied to the
//!   object the next one sees; when a webhook changed the object, those before it with
//!   `reinvocationPolicy: IfNeeded` are called once more (upstream's reinvocation). What they
//!   produce is validated like anything a client sends.
//! - **Validating** ([`Webhooks::validate`]) runs after the strategy's validation and the
//!   in-process plugins: every matching webhook at once; the first refusal (in webhook
//!   order) is the answer, in upstream's words (`admission webhook "NAME" denied the request:
//!   ...`, the webhook's status code).
//! - **Failures** (no answer within `timeoutSeconds`, a refused connection, an answer that is
//!   not an AdmissionReview for this request): `failurePolicy: Fail` refuses the request as
//!   upstream's 500 (`failed calling webhook "NAME": ...`), `Ignore` goes on.
//! - **Bounds**: a call costs the request at most its webhook's timeout (and never past the
//!   request's deadline); an answer is read up to [`MAX_RESPONSE_BYTES`]; no lock is held while
//!   calling; calls are cancelled with the request (validating calls run as tasks of a
//!   `JoinSet`, aborted when it is dropped).
//! - Dry runs reach only webhooks without side effects (`None`, `NoneOnDryRun`: the only values
//!   v1 accepts). Warnings go to the client, audit annotations (`NAME/key`) to the audit
//!   event, with upstream's `mutation.webhook.admission.k8s.io/round_R_index_I` record of each
//!   mutating call.
//!
//! The configurations are followed by watch (`kinds::webhook::follow`) and take effect as the
//! watch delivers them.

pub mod client;
pub mod hook;
pub mod pool;
pub mod review;

use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use kubestore_proto::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use serde_json::{Value, json};

use super::{Outcome, Request, labels_of, namespaces::Namespaces, policy::matching};
use crate::{
    custom::rules::{
        Budget,
        expression::{self, Outcome as Evaluated},
    },
    error::ApiError,
};
use hook::Hook;

/// The largest AdmissionReview answer read (the request body limit, as an object patched by a
/// webhook must still fit).
pub const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024 + 64 * 1024;

/// The webhooks in effect, by configuration name.
#[derive(Debug, Default)]
struct Snapshot {
    mutating: BTreeMap<String, Vec<Arc<Hook>>>,
    validating: BTreeMap<String, Vec<Arc<Hook>>>,
}

/// Every webhook configuration in effect, and the client that calls them.
#[derive(Default)]
pub struct Webhooks {
    snapshot: RwLock<Arc<Snapshot>>,
    client: client::Client,
    namespaces: Arc<Namespaces>,
    metrics: Arc<super::metrics::AdmissionMetrics>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks").finish_non_exhaustive()
    }
}

fn name_of(m: &Option<kubestore_proto::meta::v1::ObjectMeta>) -> String {
    m.as_ref().map(|m| m.name.clone()).unwrap_or_default()
}

fn mutating_hooks(c: &MutatingWebhookConfiguration) -> Vec<Arc<Hook>> {
    let name = name_of(&c.metadata);
    c.webhooks
        .iter()
        .map(|w| Arc::new(Hook::mutating(&name, w)))
        .collect()
}

fn validating_hooks(c: &ValidatingWebhookConfiguration) -> Vec<Arc<Hook>> {
    let name = name_of(&c.metadata);
    c.webhooks
        .iter()
        .map(|w| Arc::new(Hook::validating(&name, w)))
        .collect()
}

impl Webhooks {
    /// Webhooks reading `namespaces`' labels, measuring their calls in `metrics`.
    pub fn new(
        namespaces: Arc<Namespaces>,
        metrics: Arc<super::metrics::AdmissionMetrics>,
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
            mutating: guard.mutating.clone(),
            validating: guard.validating.clone(),
        };
        f(&mut next);
        *guard = Arc::new(next);
    }

    /// Records a MutatingWebhookConfiguration.
    pub fn set_mutating(&self, c: &MutatingWebhookConfiguration) {
        let hooks = mutating_hooks(c);
        self.change(|s| {
            s.mutating.insert(name_of(&c.metadata), hooks);
        });
    }

    /// Records a ValidatingWebhookConfiguration.
    pub fn set_validating(&self, c: &ValidatingWebhookConfiguration) {
        let hooks = validating_hooks(c);
        self.change(|s| {
            s.validating.insert(name_of(&c.metadata), hooks);
        });
    }

    /// Forgets a MutatingWebhookConfiguration.
    pub fn remove_mutating(&self, name: &str) {
        self.change(|s| {
            s.mutating.remove(name);
        });
    }

    /// Forgets a ValidatingWebhookConfiguration.
    pub fn remove_validating(&self, name: &str) {
        self.change(|s| {
            s.validating.remove(name);
        });
    }

    /// Replaces every MutatingWebhookConfiguration (after a list).
    pub fn reset_mutating(&self, all: &[MutatingWebhookConfiguration]) {
        let m = all
            .iter()
            .map(|c| (name_of(&c.metadata), mutating_hooks(c)))
            .collect();
        self.change(|s| s.mutating = m);
    }

    /// Replaces every ValidatingWebhookConfiguration (after a list).
    pub fn reset_validating(&self, all: &[ValidatingWebhookConfiguration]) {
        let v = all
            .iter()
            .map(|c| (name_of(&c.metadata), validating_hooks(c)))
            .collect();
        self.change(|s| s.validating = v);
    }

    /// Whether a mutating webhook's rules match `request` (its objects are then wanted).
    pub fn mutating_interested(&self, request: &Request<'_>) -> bool {
        rules_match(self.current().mutating.values().flatten(), request)
    }

    /// Whether a validating webhook's rules match `request`.
    pub fn validating_interested(&self, request: &Request<'_>) -> bool {
        rules_match(self.current().validating.values().flatten(), request)
    }

    /// The hooks of `of` that `request` (with these objects) reaches: rules, selectors, then
    /// matchConditions; a matchCondition that fails to evaluate is a failure of its webhook.
    fn reached(
        &self,
        of: impl Iterator<Item = Arc<Hook>>,
        request: &Request<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
        review_request: &Value,
    ) -> Vec<(Arc<Hook>, Result<(), String>)> {
        let namespaced = !request.namespace.is_empty();
        let ns_labels = if namespaced {
            self.namespaces.labels(request.namespace)
        } else {
            Default::default()
        };
        let labels = object.map(labels_of);
        let old_labels = old.map(labels_of);
        let target = matching::Target {
            request,
            namespaced,
            namespace_labels: &ns_labels,
            object_labels: labels.as_ref(),
            old_object_labels: old_labels.as_ref(),
        };
        let null = Value::Null;
        let mut out = Vec::new();
        for h in of {
            if !matching::matches(&h.matches, &target) {
                continue;
            }
            match conditions(
                &h,
                object.unwrap_or(&null),
                old.unwrap_or(&null),
                review_request,
            ) {
                Ok(false) => {}
                Ok(true) => out.push((h, Ok(()))),
                Err(e) => out.push((h, Err(e))),
            }
        }
        out
    }

    /// Calls the mutating webhooks `request` reaches on `object` (replacing `old`); the object
    /// as they left it, when one changed it.
    pub async fn mutate(
        &self,
        request: &Request<'_>,
        object: Value,
        old: Option<&Value>,
        outcome: &mut Outcome,
    ) -> Result<Option<Value>, ApiError> {
        let snapshot = self.current();
        let uid = uuid::Uuid::new_v4().to_string();
        let hooks: Vec<Arc<Hook>> = snapshot.mutating.values().flatten().cloned().collect();
        let mut object = object;
        let mut changed = false;
        // Per hook called: the round it was last called in, and whether the object changed
        // after that call (it is then due again, if it asked to be).
        let mut called: Vec<(Arc<Hook>, bool)> = Vec::new();
        for round in 0..2 {
            let review_request =
                review::request(&uid, request, Some(&object), old)["request"].clone();
            let reached = self.reached(
                hooks.iter().cloned(),
                request,
                Some(&object),
                old,
                &review_request,
            );
            let mut index = 0;
            for (h, matched) in reached {
                if round == 1 {
                    // The second round calls only the reinvocable hooks whose object changed
                    // after their call in the first.
                    let due = called
                        .iter()
                        .any(|(c, stale)| Arc::ptr_eq(c, &h) && *stale && h.reinvoke);
                    if !due {
                        continue;
                    }
                }
                let before = object.clone();
                match matched {
                    Err(e) => failure(&h, e)?,
                    Ok(()) => {
                        if let Some(patched) = self
                            .call(&h, &uid, request, Some(&object), old, true, outcome)
                            .await?
                        {
                            object = patched;
                        }
                    }
                }
                let mutated = object != before;
                outcome.annotations.push((
                    format!("mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
                    json!({"configuration": h.configuration, "webhook": h.name, "mutated": mutated})
                        .to_string(),
                ));
                index += 1;
                if mutated {
                    changed = true;
                    for (c, stale) in called.iter_mut() {
                        if !Arc::ptr_eq(c, &h) {
                            *stale = true;
                        }
                    }
                }
                if round == 0 {
                    called.push((h, false));
                } else if let Some(entry) = called.iter_mut().find(|(c, _)| Arc::ptr_eq(c, &h)) {
                    entry.1 = false;
                }
            }
            if !called.iter().any(|(h, stale)| *stale && h.reinvoke) {
                break;
            }
        }
        Ok(changed.then_some(object))
    }

    /// Calls the validating webhooks `request` reaches, all at once; the first refusal in
    /// webhook order is the answer.
    pub async fn validate(
        &self,
        request: &Request<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
        outcome: &mut Outcome,
    ) -> Result<(), ApiError> {
        let snapshot = self.current();
        let uid = uuid::Uuid::new_v4().to_string();
        let body = review::request(&uid, request, object, old);
        let reached = self.reached(
            snapshot.validating.values().flatten().cloned(),
            request,
            object,
            old,
            &body["request"],
        );
        if reached.is_empty() {
            return Ok(());
        }
        let bytes = Arc::new(body.to_string().into_bytes());
        let deadline = crate::store::deadline();
        let mut calls = tokio::task::JoinSet::new();
        for (i, (h, matched)) in reached.iter().enumerate() {
            if matched.is_err() {
                continue;
            }
            let (client, h, bytes) = (self.client.clone(), h.clone(), bytes.clone());
            let timeout = bounded(h.timeout, deadline);
            let span = tracing::info_span!("Webhook", webhook = %h.name, kind = "validating");
            calls.spawn(tracing::Instrument::instrument(
                async move {
                    let started = Instant::now();
                    let r = match &h.url {
                        Some(url) => client
                            .post(
                                url,
                                &h.ca_bundle,
                                bytes.to_vec(),
                                timeout,
                                MAX_RESPONSE_BYTES,
                            )
                            .await
                            .map_err(|e| (status_code(&e), e.to_string())),
                        None => Err((0, NO_URL.to_string())),
                    };
                    (i, r, started.elapsed())
                },
                span,
            ));
        }
        type Done = (Result<Vec<u8>, (u16, String)>, Duration);
        let mut answers: Vec<Option<Done>> = vec![None; reached.len()];
        while let Some(done) = calls.join_next().await {
            if let Ok((i, r, elapsed)) = done
                && let Some(slot) = answers.get_mut(i)
            {
                *slot = Some((r, elapsed));
            }
        }
        let mut first: Option<ApiError> = None;
        for ((h, matched), answer) in reached.iter().zip(answers) {
            let elapsed = answer.as_ref().map(|(_, e)| *e);
            let (result, code) = match (matched, answer) {
                (Err(e), _) => (Err(e.clone()), 0),
                (Ok(()), Some((Ok(body), _))) => (review::answer(&body, &uid, false), 200),
                (Ok(()), Some((Err((code, e)), _))) => (Err(e), code),
                (Ok(()), None) => (Err("the call did not finish".into()), 0),
            };
            let failed = result.is_err();
            let verdict = match result {
                Ok(a) => self.take(h, a, outcome).map(|_| ()),
                Err(e) => failure(h, e),
            };
            if let Some(elapsed) = elapsed {
                self.measure(
                    h,
                    request,
                    "validate",
                    code,
                    verdict.as_ref().map(|_| ()),
                    failed,
                    elapsed,
                );
            }
            if let Err(e) = verdict {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// One call of a mutating webhook: its answer taken in (warnings, annotations), the
    /// patched object when it sent a patch, or the request's error.
    #[allow(clippy::too_many_arguments)]
    async fn call(
        &self,
        h: &Hook,
        uid: &str,
        request: &Request<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
        mutating: bool,
        outcome: &mut Outcome,
    ) -> Result<Option<Value>, ApiError> {
        let Some(url) = &h.url else {
            failure(h, NO_URL.into())?;
            return Ok(None);
        };
        let body = review::request(uid, request, object, old)
            .to_string()
            .into_bytes();
        let timeout = bounded(h.timeout, crate::store::deadline());
        let span = tracing::info_span!("Webhook", webhook = %h.name, kind = "mutating");
        let started = Instant::now();
        let (answer, code) = match tracing::Instrument::instrument(
            self.client
                .post(url, &h.ca_bundle, body, timeout, MAX_RESPONSE_BYTES),
            span,
        )
        .await
        {
            Ok(bytes) => (review::answer(&bytes, uid, mutating), 200),
            Err(e) => (Err(e.to_string()), status_code(&e)),
        };
        let elapsed = started.elapsed();
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                let r = failure(h, e);
                self.measure(
                    h,
                    request,
                    "admit",
                    code,
                    r.as_ref().copied(),
                    true,
                    elapsed,
                );
                r?;
                return Ok(None);
            }
        };
        let taken = self.take(h, answer, outcome);
        self.measure(
            h,
            request,
            "admit",
            code,
            taken.as_ref().map(|_| ()),
            false,
            elapsed,
        );
        let patch = taken?;
        let (Some(patch), Some(object)) = (patch, object) else {
            return Ok(None);
        };
        let limits = kubestore_apimachinery::patch::Limits::until(crate::store::deadline());
        match kubestore_apimachinery::patch::json::apply(object, &patch, &limits) {
            Ok(patched) => Ok(Some(patched)),
            Err(e) => {
                failure(h, format!("JSONPatch failed to apply: {e}"))?;
                Ok(None)
            }
        }
    }

    /// Records one call of `h` in the metrics.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        h: &Hook,
        request: &Request<'_>,
        kind: &'static str,
        code: u16,
        verdict: Result<(), &ApiError>,
        failed: bool,
        elapsed: Duration,
    ) {
        let rejection_code = match verdict {
            Err(ApiError::Webhook { code, .. }) => *code,
            Err(e) => e.http_code(),
            Ok(()) => 0,
        };
        self.metrics.webhook(super::metrics::Call {
            name: &h.name,
            operation: request.operation.as_str(),
            kind,
            code,
            rejected: verdict.is_err(),
            failed,
            rejection_code,
            seconds: elapsed.as_secs_f64(),
        });
    }

    /// Takes a webhook's answer in: warnings and audit annotations to `outcome`; a refusal as
    /// the request's error; the patch, if any.
    fn take(
        &self,
        h: &Hook,
        a: review::Answer,
        outcome: &mut Outcome,
    ) -> Result<Option<Value>, ApiError> {
        outcome.warnings.extend(a.warnings);
        for (k, v) in a.audit_annotations {
            outcome.annotations.push((format!("{}/{k}", h.name), v));
        }
        if !a.allowed {
            let (code, reason, message) = review::denied(&h.name, a.status);
            return Err(ApiError::Webhook {
                code,
                reason: crate::error::known_reason(&reason),
                message,
            });
        }
        Ok(a.patch)
    }
}

/// What calling a webhook without a URL says.
const NO_URL: &str = "webhook has no url (a service reference cannot be called by kubestore)";

/// The HTTP status a failed call got, 0 when it got none.
fn status_code(e: &client::CallError) -> u16 {
    match e {
        client::CallError::Status { code, .. } => *code,
        _ => 0,
    }
}

/// Whether any of `hooks`' rules match `request` (no objects needed).
fn rules_match<'a>(hooks: impl Iterator<Item = &'a Arc<Hook>>, request: &Request<'_>) -> bool {
    hooks
        .into_iter()
        .any(|h| matching::any_rule_matches(&h.matches.resource_rules, request))
}

/// A failure of webhook `h` (`why`): the request's error under `failurePolicy: Fail`
/// (upstream's 500 `failed calling webhook`), nothing under `Ignore`.
fn failure(h: &Hook, why: String) -> Result<(), ApiError> {
    if h.fail {
        Err(ApiError::Internal(format!(
            "failed calling webhook {:?}: {why}",
            h.name
        )))
    } else {
        tracing::debug!(webhook = %h.name, %why, "webhook failed; failurePolicy Ignore");
        Ok(())
    }
}

/// A webhook's timeout, and no later than the request's deadline.
fn bounded(timeout: Duration, deadline: Option<Instant>) -> Duration {
    match deadline {
        Some(d) => timeout.min(d.saturating_duration_since(Instant::now())),
        None => timeout,
    }
}

/// Whether `h`'s matchConditions all hold (`object`, `oldObject`, `request`); an error when
/// one fails to evaluate and none is false (upstream's matcher).
fn conditions(h: &Hook, object: &Value, old: &Value, request: &Value) -> Result<bool, String> {
    if h.conditions.is_empty() {
        return Ok(true);
    }
    let mut budget = Budget::default();
    let vars: [(&str, &Value); 3] = [("object", object), ("oldObject", old), ("request", request)];
    let mut error: Option<String> = None;
    for (name, e) in &h.conditions {
        let e = match e {
            Ok(e) => e,
            Err(why) => {
                error.get_or_insert(format!("matchCondition {name:?}: {why}"));
                continue;
            }
        };
        match expression::evaluate(e, &vars, &mut budget) {
            Ok(Evaluated::Bool(true)) => {}
            Ok(Evaluated::Bool(false)) => return Ok(false),
            Ok(_) => {
                error.get_or_insert(format!("matchCondition {name:?} must evaluate to bool"));
            }
            Err(why) => {
                error.get_or_insert(format!("matchCondition {name:?}: {why}"));
            }
        }
    }
    error.map_or(Ok(true), Err)
}
