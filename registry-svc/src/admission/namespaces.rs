//! The namespaces' labels, as admission reads them (upstream's plugins read a namespace
//! lister): followed by watch with the namespace lifecycle (`kinds::namespace::follow`), so a
//! write never waits for a read of its namespace.
//!
//! A namespace with no Namespace object has no labels (kubestore serves such namespaces; see
//! `lifecycle`), and a label set a moment ago may not be seen for the watch's delay, as
//! upstream's informer.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, RwLock},
};

/// A namespace's labels.
pub type Labels = Arc<BTreeMap<String, String>>;

/// The labels of every namespace followed.
#[derive(Debug, Default)]
pub struct Namespaces {
    labels: RwLock<HashMap<String, Labels>>,
}

impl Namespaces {
    /// Records `namespace`'s labels.
    pub fn set(&self, namespace: &str, labels: BTreeMap<String, String>) {
        self.write().insert(namespace.to_string(), Arc::new(labels));
    }

    /// Forgets `namespace` (deleted).
    pub fn remove(&self, namespace: &str) {
        self.write().remove(namespace);
    }

    /// Replaces what is known (after a list).
    pub fn replace(&self, all: impl IntoIterator<Item = (String, BTreeMap<String, String>)>) {
        *self.write() = all.into_iter().map(|(n, l)| (n, Arc::new(l))).collect();
    }

    /// `namespace`'s labels (empty when it is not known).
    pub fn labels(&self, namespace: &str) -> Labels {
        self.labels
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(namespace)
            .cloned()
            .unwrap_or_default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Labels>> {
        self.labels.write().unwrap_or_else(|p| p.into_inner())
    }
}
