//! The Lease strategy (upstream's `pkg/registry/coordination/lease`): namespaced, updates
//! without a resourceVersion allowed (as upstream; leader election always sends one), and
//! upstream's `ValidateLeaseSpec` for the fields we carry.

use kubestore_proto::coordination::v1::Lease;

use crate::{strategy::Strategy, violations::Violations};

/// The Lease strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct LeaseStrategy;

impl Strategy<Lease> for LeaseStrategy {
    fn columns(&self) -> Vec<kubestore_apimachinery::table::Column> {
        crate::kinds::printers::lease_columns()
    }

    fn cells(&self, obj: &Lease, now: i64) -> Vec<serde_json::Value> {
        crate::kinds::printers::lease_cells(obj, now)
    }

    fn validate(&self, lease: &Lease) -> Violations {
        let mut v = Violations::new();
        let Some(spec) = &lease.spec else {
            return v;
        };
        if let Some(d) = spec.lease_duration_seconds
            && d <= 0
        {
            v.push((
                "spec.leaseDurationSeconds".into(),
                format!("Invalid value: {d}: must be greater than 0"),
            ));
        }
        if let Some(t) = spec.lease_transitions
            && t < 0
        {
            v.push((
                "spec.leaseTransitions".into(),
                format!("Invalid value: {t}: must be greater than or equal to 0"),
            ));
        }
        v
    }

    fn validate_update(&self, new: &Lease, _old: &Lease) -> Violations {
        self.validate(new)
    }

    fn allow_unconditional_update(&self) -> bool {
        true
    }
}
