//! The ServiceAccount strategy (upstream's `pkg/registry/core/serviceaccount`): namespaced,
//! upstream's `ValidateServiceAccount` (the name a DNS subdomain, the default rule; nothing else
//! is checked), no graceful deletion, and kubectl's columns (NAME SECRETS AGE).
//!
//! A ServiceAccount's tokens are not stored here: `serviceaccount::token_request` issues them
//! (`serviceaccounts/NAME/token`) and `serviceaccount::authenticator` verifies them, reading the
//! account by uid, so deleting one ends its tokens.

use kubestore_apimachinery::table::{Column, age};
use kubestore_proto::core::v1::ServiceAccount;
use serde_json::{Value, json};

use crate::{
    kinds::printers::{age_col, col, created, meta_name, name_col},
    strategy::Strategy,
};

/// The ServiceAccount strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct ServiceAccountStrategy;

impl Strategy<ServiceAccount> for ServiceAccountStrategy {
    fn columns(&self) -> Vec<Column> {
        vec![
            name_col(0),
            col(
                "Secrets",
                "string",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            age_col(),
        ]
    }

    fn cells(&self, sa: &ServiceAccount, now: i64) -> Vec<Value> {
        vec![
            json!(meta_name(&sa.metadata)),
            json!(sa.secrets.len() as i64),
            json!(age(created(&sa.metadata), now)),
        ]
    }
}
