//! Admission's metrics, under kube-apiserver's names and labels (`k8s.io/apiserver/pkg/admission/
//! metrics`, and the policy plugin's `validating/metrics`), so dashboards written for an
//! apiserver read registry-svc's:
//!
//! - `apiserver_admission_step_admission_duration_seconds{operation,rejected,type}`: each
//!   phase of a request (`type` `admit` for mutating, `validate`);
//! - `apiserver_admission_controller_admission_duration_seconds{name,operation,rejected,type}`:
//!   each plugin (`PodSecurity`, `ValidatingAdmissionPolicy`, `ValidatingAdmissionWebhook`,
//!   `MutatingAdmissionWebhook`, `ResourceQuota`);
//! - `apiserver_admission_webhook_admission_duration_seconds{name,operation,rejected,type}`,
//!   `apiserver_admission_webhook_request_total{name,operation,code,rejected,type}` and
//!   `apiserver_admission_webhook_rejection_count{name,operation,type,error_type,rejection_code}`:
//!   each webhook call (`code` is the webhook's HTTP status, 0 when it gave none);
//! - `apiserver_validating_admission_policy_check_total{policy,policy_binding,error_type,enforcement_action}`:
//!   each decision of a policy binding that failed its check or could not run.
//!
//! Upstream records a step for every write, as its chain always holds plugins with work to
//! do; kubestore records one only for a write some plugin looked at, so a write nothing admits
//! costs no clock reads (the benchmarks' "no admission configuration" case).

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
};

/// Upstream's buckets of the step and controller histograms.
const STEP_BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
/// Upstream's buckets of the webhook histogram.
const WEBHOOK_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamedLabels {
    name: String,
    operation: &'static str,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    name: String,
    operation: &'static str,
    code: u16,
    rejected: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectionLabels {
    name: String,
    operation: &'static str,
    r#type: &'static str,
    error_type: &'static str,
    rejection_code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: String,
    policy_binding: String,
    error_type: &'static str,
    enforcement_action: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn bool_label(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// Admission's metric families.
#[derive(Clone, Debug)]
pub struct AdmissionMetrics {
    step: Histograms<StepLabels>,
    controller: Histograms<NamedLabels>,
    webhook: Histograms<NamedLabels>,
    webhook_requests: Family<RequestLabels, Counter>,
    /// A gauge only ever increased: upstream's counter is named without `_total`, which
    /// this crate writes after every counter's name.
    webhook_rejections: Family<RejectionLabels, Gauge>,
    policy_checks: Family<PolicyLabels, Counter>,
}

impl Default for AdmissionMetrics {
    fn default() -> Self {
        Self {
            step: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS)),
            controller: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS)),
            webhook: Family::new_with_constructor(|| Histogram::new(WEBHOOK_BUCKETS)),
            webhook_requests: Family::default(),
            webhook_rejections: Family::default(),
            policy_checks: Family::default(),
        }
    }
}

/// A webhook call as the metrics see it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The webhook's name.
    pub name: &'a str,
    /// `CREATE`, ...
    pub operation: &'static str,
    /// `admit` (mutating) or `validate`.
    pub kind: &'static str,
    /// The webhook's HTTP status (0 when the call failed before one).
    pub code: u16,
    /// Whether the request was refused because of it.
    pub rejected: bool,
    /// Whether the call failed (no usable answer), as opposed to a refusal.
    pub failed: bool,
    /// The code of the refusal it answered (its status's, 0 when it did not refuse).
    pub rejection_code: u16,
    /// How long it took.
    pub seconds: f64,
}

impl AdmissionMetrics {
    /// Registers the families in `metrics`.
    pub fn register(&self, metrics: &kubestore_telemetry::Metrics) {
        metrics.register(
            "apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency in seconds, by operation, rejection and type (admit or validate)",
            self.step.clone(),
        );
        metrics.register(
            "apiserver_admission_controller_admission_duration_seconds",
            "Admission controller latency in seconds, by name, operation, rejection and type",
            self.controller.clone(),
        );
        metrics.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency in seconds, by name, operation, rejection and type",
            self.webhook.clone(),
        );
        metrics.register(
            "apiserver_admission_webhook_request",
            "Admission webhook requests, by name, operation, HTTP code, rejection and type",
            self.webhook_requests.clone(),
        );
        metrics.register(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejections, by name, operation, type, error type and rejection code",
            self.webhook_rejections.clone(),
        );
        metrics.register(
            "apiserver_validating_admission_policy_check",
            "Validating admission policy decisions that failed or could not run, by policy, binding, error type and enforcement action",
            self.policy_checks.clone(),
        );
    }

    /// One phase of a request.
    pub fn step(&self, operation: &'static str, kind: &'static str, rejected: bool, seconds: f64) {
        self.step
            .get_or_create(&StepLabels {
                operation,
                rejected: bool_label(rejected),
                r#type: kind,
            })
            .observe(seconds);
    }

    /// One plugin.
    pub fn controller(
        &self,
        name: &str,
        operation: &'static str,
        kind: &'static str,
        rejected: bool,
        seconds: f64,
    ) {
        self.controller
            .get_or_create(&NamedLabels {
                name: name.to_string(),
                operation,
                rejected: bool_label(rejected),
                r#type: kind,
            })
            .observe(seconds);
    }

    /// One webhook call.
    pub fn webhook(&self, c: Call<'_>) {
        let rejected = bool_label(c.rejected);
        self.webhook
            .get_or_create(&NamedLabels {
                name: c.name.to_string(),
                operation: c.operation,
                rejected,
                r#type: c.kind,
            })
            .observe(c.seconds);
        self.webhook_requests
            .get_or_create(&RequestLabels {
                name: c.name.to_string(),
                operation: c.operation,
                code: c.code,
                rejected,
                r#type: c.kind,
            })
            .inc();
        if c.rejected {
            self.webhook_rejections
                .get_or_create(&RejectionLabels {
                    name: c.name.to_string(),
                    operation: c.operation,
                    r#type: c.kind,
                    error_type: if c.failed {
                        "calling_webhook_error"
                    } else {
                        "no_error"
                    },
                    rejection_code: c.rejection_code,
                })
                .inc();
        }
    }

    /// One policy decision: `action` `deny`, `warn` or `audit`; `error` when the check could
    /// not run (upstream's `compile_error`/`invalid_error` are both `invalid_error` here).
    pub fn policy_check(&self, policy: &str, binding: &str, action: &'static str, error: bool) {
        self.policy_checks
            .get_or_create(&PolicyLabels {
                policy: policy.to_string(),
                policy_binding: binding.to_string(),
                error_type: if error { "invalid_error" } else { "no_error" },
                enforcement_action: action,
            })
            .inc();
    }
}
