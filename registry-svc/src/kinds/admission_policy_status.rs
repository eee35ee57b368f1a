//! The ValidatingAdmissionPolicy status controller (upstream's
//! `pkg/controller/validatingadmissionpolicystatus`, which kube-apiserver runs): a policy whose
//! `status.observedGeneration` is behind its `metadata.generation` is type checked
//! (`admission::policy::typecheck`) against the schemas of the kinds its rules name and of its
//! paramKind, and `status.typeChecking.expressionWarnings` and `status.observedGeneration` are
//! written through the status subresource.
//!
//! Every registry-svc replica runs it, as every kube-apiserver does: each write is an update at
//! the resourceVersion read, so a replica that loses the race reads again and finds the status
//! current. A write that fails is retried after a wait that doubles with each failure in a row
//! (0.5 s to 5 min); the policy follow's relist marks every behind policy again in any case. Type checking reads schemas as `/openapi/v3` serves
//! them, so a kind served after the policy was checked (a definition created later) is checked
//! only when the policy's spec changes again, as upstream.

use std::{sync::Arc, time::Duration};

use kubestore_proto::admissionregistration::v1::{TypeChecking, ValidatingAdmissionPolicy};

use crate::{
    admission::policy::{Policies, params::Source, typecheck},
    error::ApiError,
    store::{Ctx, Store},
};

/// How long a policy whose status could not be written first waits to be tried again; each
/// failure in a row doubles it, up to [`MAX_RETRY`].
const RETRY: Duration = Duration::from_millis(500);
/// The longest wait between tries of one policy.
const MAX_RETRY: Duration = Duration::from_secs(300);

/// Runs the controller until `stop`: the policies `state` marks pending (admission's, fed by
/// the policy follow), read and written through `policies`, with schemas from `schemas` (the
/// catalog).
pub async fn run(
    policies: Store<ValidatingAdmissionPolicy>,
    state: Arc<Policies>,
    schemas: Arc<dyn Source>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    // Each failing policy's next wait (a persistent failure, a status a webhook refuses, say,
    // must not cost a write attempt twice a second forever); bounded by the number of policies.
    let mut waits: std::collections::HashMap<String, Duration> = Default::default();
    loop {
        let names = tokio::select! {
            n = state.pending.take() => n,
            _ = stop.wait_for(|s| *s) => return,
        };
        for name in names {
            if *stop.borrow() {
                return;
            }
            match sync(&policies, schemas.as_ref(), &name).await {
                Ok(()) => {
                    waits.remove(&name);
                }
                Err(e) => {
                    let wait = waits.get(&name).map_or(RETRY, |w| (*w * 2).min(MAX_RETRY));
                    waits.insert(name.clone(), wait);
                    if wait >= Duration::from_secs(8) {
                        tracing::warn!(policy = %name, error = %e, retry_in = ?wait, "policy status: still failing");
                    } else {
                        tracing::debug!(policy = %name, error = %e, retry_in = ?wait, "policy status: retrying");
                    }
                    let state = state.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(wait).await;
                        state.pending.add(name);
                    });
                }
            }
        }
    }
}

/// Type checks `name` and writes its status, unless it is gone or already current.
async fn sync(
    policies: &Store<ValidatingAdmissionPolicy>,
    schemas: &dyn Source,
    name: &str,
) -> Result<(), ApiError> {
    let ctx = || Ctx::within(crate::store::DEFAULT_REQUEST_TIMEOUT);
    let policy = match policies.get(ctx(), "", name).await {
        Ok(p) => p,
        Err(ApiError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let generation = policy.metadata.as_ref().map_or(0, |m| m.generation);
    if policy.status.as_ref().map_or(0, |s| s.observed_generation) >= generation {
        return Ok(());
    }
    let param_schema = policy
        .spec
        .as_ref()
        .and_then(|s| s.param_kind.as_ref())
        .and_then(|k| schemas.kind_schema(&k.api_version, &k.kind));
    let warnings = typecheck::type_check(
        &policy,
        |group, version, resource| schemas.resource_schema(group, version, resource),
        param_schema,
    );
    let mut updated = policy;
    let status = updated.status.get_or_insert_with(Default::default);
    status.observed_generation = generation;
    status.type_checking = Some(TypeChecking {
        expression_warnings: warnings,
    });
    policies.update_status(ctx(), "", updated, false).await?;
    Ok(())
}
