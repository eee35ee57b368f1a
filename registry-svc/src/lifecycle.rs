//! Upstream's `NamespaceLifecycle` admission, as far as kubestore applies it: no object is
//! created in a namespace that is being deleted (`pods "web" is forbidden: unable to create new
//! content in namespace ns1 because it is being terminated`), so the namespace controller's
//! deletion of its content ends. The terminating namespaces are learnt by watching Namespaces
//! (`kinds::namespace::follow`); every Store reads them through the storage client they share.
//!
//! Deviation: a namespace with no Namespace object is not refused (upstream answers NotFound):
//! kubestore served objects in any namespace before Namespaces were a kind, and its clients and
//! tests name namespaces without creating them.

use std::{collections::HashSet, sync::RwLock};

use crate::error::ApiError;

/// The namespaces being deleted.
#[derive(Debug, Default)]
pub struct Lifecycle {
    terminating: RwLock<HashSet<String>>,
}

impl Lifecycle {
    /// Records whether `namespace` is being deleted.
    pub fn set(&self, namespace: &str, terminating: bool) {
        let mut t = self.terminating.write().unwrap_or_else(|p| p.into_inner());
        if terminating {
            t.insert(namespace.to_string());
        } else {
            t.remove(namespace);
        }
    }

    /// Replaces what is known (after a list).
    pub fn replace(&self, terminating: impl IntoIterator<Item = String>) {
        *self.terminating.write().unwrap_or_else(|p| p.into_inner()) =
            terminating.into_iter().collect();
    }

    /// Refuses a create of `resource`/`name` in `namespace` when it is being deleted.
    pub fn admit_create(
        &self,
        resource: &str,
        name: &str,
        namespace: &str,
    ) -> Result<(), ApiError> {
        if namespace.is_empty()
            || !self
                .terminating
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .contains(namespace)
        {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "{resource} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated"
        )))
    }
}
