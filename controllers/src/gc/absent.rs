//! Owners confirmed absent (upstream's `absentOwnerCache`, a `ReferenceCache` of 500 entries):
//! once a live read showed that an owner reference points at nothing, the other dependents
//! naming the same owner skip the read.
//!
//! An entry is an owner's coordinates (apiVersion, kind, name, UID) **and** the namespace it was
//! looked for in: the dependent's for a namespaced owner kind, none for a cluster-scoped one
//! (upstream's `objectReference` key, `isDangling`). A UID alone must never be the key: a
//! dependent in namespace `evil` naming the UID of an owner in `prod` finds nothing in `evil`,
//! and that says nothing about `prod`'s dependents of that owner, which exists.

use std::collections::{HashSet, VecDeque};

use kubestore_proto::meta::v1::OwnerReference;

/// Entries kept (upstream's 500); the oldest goes first.
pub const CAPACITY: usize = 500;

/// An owner as looked for: coordinates and the namespace it was looked for in ("" for a
/// cluster-scoped owner kind).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnerKey {
    /// The reference's apiVersion.
    pub api_version: String,
    /// The reference's kind.
    pub kind: String,
    /// The reference's name.
    pub name: String,
    /// The reference's UID.
    pub uid: String,
    /// The namespace it was looked for in ("" when the owner kind is cluster-scoped).
    pub namespace: String,
}

impl OwnerKey {
    /// The key of `r` looked for in `namespace`.
    pub fn new(r: &OwnerReference, namespace: &str) -> Self {
        Self {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            namespace: namespace.to_string(),
        }
    }
}

/// The cache (bounded, oldest out first).
#[derive(Default)]
pub struct AbsentOwners {
    set: HashSet<OwnerKey>,
    order: VecDeque<OwnerKey>,
}

impl AbsentOwners {
    /// Whether `key` was confirmed absent.
    pub fn has(&self, key: &OwnerKey) -> bool {
        self.set.contains(key)
    }

    /// Remembers `key` as absent.
    pub fn add(&mut self, key: OwnerKey) {
        if self.set.insert(key.clone()) {
            self.order.push_back(key);
            if self.order.len() > CAPACITY
                && let Some(old) = self.order.pop_front()
            {
                self.set.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            uid: uid.into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_owner_absent_in_one_namespace_is_not_absent_in_another() {
        let mut cache = AbsentOwners::default();
        cache.add(OwnerKey::new(&owner("o", "u1"), "evil"));
        assert!(cache.has(&OwnerKey::new(&owner("o", "u1"), "evil")));
        assert!(!cache.has(&OwnerKey::new(&owner("o", "u1"), "prod")));
        assert!(!cache.has(&OwnerKey::new(&owner("o", "u1"), "")));
        // Same UID, other coordinates: another key.
        assert!(!cache.has(&OwnerKey::new(&owner("other", "u1"), "evil")));
    }

    #[test]
    fn the_oldest_entry_goes_first() {
        let mut cache = AbsentOwners::default();
        for i in 0..=CAPACITY {
            cache.add(OwnerKey::new(&owner("o", &i.to_string()), ""));
        }
        assert!(!cache.has(&OwnerKey::new(&owner("o", "0"), "")));
        assert!(cache.has(&OwnerKey::new(&owner("o", "1"), "")));
        assert!(cache.has(&OwnerKey::new(&owner("o", &CAPACITY.to_string()), "")));
    }
}
