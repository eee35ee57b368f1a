//! The Namespace strategy (upstream's `pkg/registry/core/namespace`): cluster-scoped; created
//! `Active` with the `kubernetes` finalizer in `spec.finalizers` and the
//! `kubernetes.io/metadata.name` label; Update writes metadata only, the status subresource
//! status only, `finalize` spec.finalizers only. A delete marks it deleting and `Terminating`
//! while `spec.finalizers` hold it (`Strategy::held`); the controller-manager's namespace
//! controller deletes its content, then finalizes it, and the Store deletes it then, as it
//! deletes an object whose last finalizer went.

use kubestore_apimachinery::table::{AGE_DESCRIPTION, Column, NAME_DESCRIPTION, age};
use kubestore_proto::core::v1::{Namespace, NamespaceSpec, NamespaceStatus};
use serde_json::{Value, json};

use crate::{
    error::ApiError,
    store::{Ctx, Store},
    strategy::Strategy,
    validation,
    violations::Violations,
};

/// The finalizer that holds a namespace until its content is deleted.
pub const FINALIZER: &str = "kubernetes";
/// The label every namespace carries with its own name (upstream's
/// `LabelMetadataName`, for selecting namespaces by name).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The Namespace strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct NamespaceStrategy;

fn name_label(ns: &mut Namespace) {
    let meta = ns.metadata.get_or_insert_with(Default::default);
    let name = meta.name.clone();
    if !name.is_empty() {
        meta.labels.insert(NAME_LABEL.into(), name);
    }
}

impl Strategy<Namespace> for NamespaceStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }

    fn default_object(&self, ns: &mut Namespace) -> bool {
        // Upstream's defaulting of the name label (`SetDefaults_Namespace`).
        let before = ns.metadata.as_ref().map(|m| m.labels.clone());
        name_label(ns);
        let status = ns.status.get_or_insert_with(NamespaceStatus::default);
        let phase_defaulted = status.phase.is_empty();
        if phase_defaulted {
            status.phase = "Active".into();
        }
        phase_defaulted || before != ns.metadata.as_ref().map(|m| m.labels.clone())
    }

    fn has_defaults(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, ns: &mut Namespace) {
        ns.status = Some(NamespaceStatus {
            phase: "Active".into(),
            conditions: Vec::new(),
        });
        let spec = ns.spec.get_or_insert_with(NamespaceSpec::default);
        if !spec.finalizers.iter().any(|f| f == FINALIZER) {
            spec.finalizers.push(FINALIZER.into());
        }
    }

    fn validate(&self, ns: &Namespace) -> Violations {
        let mut v = Violations::new();
        let name = ns.metadata.as_ref().map_or("", |m| m.name.as_str());
        if !name.is_empty()
            && let Some(problem) = validation::dns1123_label(name)
        {
            v.push((
                "metadata.name".into(),
                format!("Invalid value: {name:?}: {problem}"),
            ));
        }
        for (i, f) in ns
            .spec
            .as_ref()
            .map(|s| s.finalizers.as_slice())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if f.is_empty() {
                v.push((format!("spec.finalizers[{i}]"), "Required value".into()));
            }
        }
        v
    }

    fn prepare_for_update(&self, new: &mut Namespace, old: &Namespace) {
        new.spec = old.spec.clone();
        new.status = old.status.clone();
    }

    fn validate_update(&self, new: &Namespace, _old: &Namespace) -> Violations {
        self.validate(new)
    }

    fn has_status(&self) -> bool {
        true
    }

    fn prepare_for_status_update(&self, new: &mut Namespace, old: &Namespace) {
        let status = new.status.take();
        *new = old.clone();
        new.status = status;
    }

    fn has_finalize(&self) -> bool {
        true
    }

    fn prepare_for_finalize_update(&self, new: &mut Namespace, old: &Namespace) {
        let finalizers = new.spec.take().map(|s| s.finalizers).unwrap_or_default();
        *new = old.clone();
        new.spec = Some(NamespaceSpec { finalizers });
    }

    fn held(&self, ns: &Namespace) -> bool {
        ns.spec.as_ref().is_some_and(|s| !s.finalizers.is_empty())
    }

    fn mark_deleting(&self, ns: &mut Namespace) {
        ns.status.get_or_insert_with(NamespaceStatus::default).phase = "Terminating".into();
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn supports_delete_collection(&self) -> bool {
        false
    }

    /// Upstream's NamespaceLifecycle admission refuses to delete the system namespaces
    /// ("immortal" there): everything in them would go with them.
    fn admit_delete(&self, name: &str) -> Result<(), ApiError> {
        if SYSTEM_NAMESPACES.contains(&name) {
            return Err(ApiError::Forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )));
        }
        Ok(())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
            Column::new("Status", "string", "", 0, "The status of the namespace"),
            Column::new("Age", "string", "", 0, AGE_DESCRIPTION),
        ]
    }

    fn cells(&self, ns: &Namespace, now: i64) -> Vec<Value> {
        let meta = ns.metadata.clone().unwrap_or_default();
        vec![
            json!(meta.name),
            json!(ns.status.as_ref().map_or("", |s| s.phase.as_str())),
            json!(age(
                meta.creation_timestamp.as_ref().map(|t| t.seconds),
                now
            )),
        ]
    }
}

/// The namespaces every cluster has (upstream's bootstrap controller creates them).
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Creates the [`SYSTEM_NAMESPACES`] that do not exist, retrying while storage cannot answer
/// (every replica tries; the first create wins, the others see AlreadyExists).
pub async fn ensure_system_namespaces(
    store: Store<Namespace>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut backoff = std::time::Duration::from_millis(200);
    for name in SYSTEM_NAMESPACES {
        loop {
            if *stop.borrow() {
                return;
            }
            let ns = Namespace {
                metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
                    name: (*name).into(),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let ctx = Ctx::within(std::time::Duration::from_secs(10));
            match store.create(ctx, "", ns, false).await {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => break,
                Err(e) => {
                    tracing::debug!(namespace = name, error = %e, "creating a system namespace; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                    backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
                }
            }
        }
    }
}

/// Whether `ns` is being deleted.
fn terminating(ns: &Namespace) -> bool {
    ns.metadata
        .as_ref()
        .is_some_and(|m| m.deletion_timestamp.is_some())
}

/// Follows the namespaces (`crate::follow`) into the storage client's
/// [`crate::lifecycle::Lifecycle`], until `stop`.
pub async fn follow(store: Store<Namespace>, stop: tokio::sync::watch::Receiver<bool>) {
    use crate::follow::Change;
    let lifecycle = store.storage.lifecycle.clone();
    // Admission reads the namespaces' labels (Pod Security's levels).
    let labelled = store.storage.admission.namespaces.clone();
    let name = |ns: &Namespace| {
        ns.metadata
            .as_ref()
            .map(|m| m.name.clone())
            .unwrap_or_default()
    };
    let labels = |ns: &Namespace| {
        ns.metadata
            .as_ref()
            .map(|m| m.labels.clone().into_iter().collect())
            .unwrap_or_default()
    };
    crate::follow::follow(store, stop, move |change| match change {
        Change::Reset(items) => {
            lifecycle.replace(items.iter().filter(|n| terminating(n)).map(&name));
            labelled.replace(items.iter().map(|n| (name(n), labels(n))));
        }
        Change::Put(ns) => {
            lifecycle.set(&name(&ns), terminating(&ns));
            labelled.set(&name(&ns), labels(&ns));
        }
        Change::Gone(ns) => {
            lifecycle.set(&name(&ns), false);
            labelled.remove(&name(&ns));
        }
    })
    .await
}
