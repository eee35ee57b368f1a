//! The owner graph (upstream's `graph.go` and `graph_builder.go`): every object of every
//! monitored kind, by UID, with its owner references, and who depends on whom. Only the
//! collector's graph task writes it; workers read it under its lock. It is a cache: nothing is
//! ever deleted because the graph says so, only after live reads ([`super::worker`]).
//!
//! Unlike upstream there are no virtual nodes: the dependents of an owner are kept by the
//! owner's UID whether or not the owner was ever seen, and a dependent whose owner was never
//! seen is queued for a live check at once (where upstream queues the virtual node, whose
//! identity is the reference's coordinates in the dependent's namespace, for the same check).
//! What upstream's virtual nodes carry, the namespace a reference is about, is applied where
//! it matters: a namespaced owner's dependents ([`Graph::dependents`]) are those of its own
//! namespace only, and a dependent naming an owner seen elsewhere is checked, live, in its own
//! namespace (and reported, `OwnerRefInvalidNamespace`).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use kubestore_proto::meta::v1::{ObjectMeta, OwnerReference};

use crate::client::Kind;

/// The `foregroundDeletion` finalizer.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The `orphan` finalizer.
pub const ORPHAN: &str = "orphan";

/// One object.
#[derive(Clone, Debug)]
pub struct Node {
    /// Its kind.
    pub kind: Arc<Kind>,
    /// Its metadata as last seen.
    pub meta: ObjectMeta,
}

impl Node {
    /// Being deleted (a deletionTimestamp is set).
    pub fn being_deleted(&self) -> bool {
        self.meta.deletion_timestamp.is_some()
    }
    /// Being deleted in the foreground: its dependents go first.
    pub fn deleting_dependents(&self) -> bool {
        self.being_deleted() && self.meta.finalizers.iter().any(|f| f == FOREGROUND)
    }
    /// Being deleted with its dependents orphaned.
    pub fn orphaning(&self) -> bool {
        self.being_deleted() && self.meta.finalizers.iter().any(|f| f == ORPHAN)
    }
}

/// What a change to the graph asks the workers to do.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// UIDs to check for deletion (attemptToDelete).
    pub delete: Vec<String>,
    /// UIDs whose dependents are to be orphaned (attemptToOrphan).
    pub orphan: Vec<String>,
    /// (dependent UID, owner reference) pairs whose owner was seen in another namespace.
    pub invalid_namespace: Vec<(String, OwnerReference)>,
}

/// The graph.
#[derive(Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    /// Owner UID -> UIDs of the objects that name it, whether or not the owner was seen.
    dependents: HashMap<String, HashSet<String>>,
}

impl Graph {
    /// The object with `uid`.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// Objects held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph holds nothing.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The objects that name `uid` as an owner (and are still in the graph) and may: when the
    /// owner was seen and its kind is namespaced, only those of its own namespace. A reference
    /// from another namespace (or from a cluster-scoped object) naming its UID is not its
    /// dependent (upstream's rule since 1.20, `addDependentToOwners`): such a reference is
    /// dangling, collected as such, and never holds up, nor is touched by, this owner's
    /// deletion.
    pub fn dependents(&self, uid: &str) -> Vec<Node> {
        self.dependent_nodes(uid).cloned().collect()
    }

    fn dependent_nodes<'a>(&'a self, uid: &str) -> impl Iterator<Item = &'a Node> + 'a {
        let owner = self.nodes.get(uid);
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d))
            .filter(move |d| owner.is_none_or(|o| may_own(o, d)))
    }

    /// Whether anything names `uid` as an owner (and may, see [`Self::dependents`]).
    pub fn has_dependents(&self, uid: &str) -> bool {
        self.dependent_nodes(uid).next().is_some()
    }

    /// Dependents whose reference to `uid` has `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<Node> {
        self.dependents(uid)
            .into_iter()
            .filter(|d| {
                d.meta
                    .owner_references
                    .iter()
                    .any(|r| r.uid == uid && r.block_owner_deletion == Some(true))
            })
            .collect()
    }

    /// UIDs of the objects of `kind` held.
    pub fn uids_of(&self, kind: &Kind) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| *n.kind == *kind)
            .map(|(u, _)| u.clone())
            .collect()
    }

    /// An object added or changed.
    pub fn upsert(&mut self, kind: Arc<Kind>, meta: ObjectMeta) -> Work {
        let mut work = Work::default();
        let uid = meta.uid.clone();
        if uid.is_empty() {
            return work;
        }
        let old = self.nodes.get(&uid).cloned();
        let node = Node {
            kind: kind.clone(),
            meta,
        };
        // Owner references: link the new ones, unlink the old ones.
        let old_refs: Vec<OwnerReference> = old
            .as_ref()
            .map(|o| o.meta.owner_references.clone())
            .unwrap_or_default();
        for r in &old_refs {
            let still = node.meta.owner_references.iter().find(|n| n.uid == r.uid);
            if still.is_none()
                && let Some(set) = self.dependents.get_mut(&r.uid)
            {
                set.remove(&uid);
                if set.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
            // A reference that stopped blocking (or went) lets a foreground owner finish.
            let was_blocking = r.block_owner_deletion == Some(true);
            let blocks = still.is_some_and(|n| n.block_owner_deletion == Some(true));
            if was_blocking && !blocks {
                work.delete.push(r.uid.clone());
            }
        }
        let mut check_self = false;
        for r in &node.meta.owner_references {
            self.dependents
                .entry(r.uid.clone())
                .or_default()
                .insert(uid.clone());
            match self.nodes.get(&r.uid) {
                // Never seen: a live read decides whether it exists.
                None => check_self = true,
                Some(owner) => {
                    // Seen in another namespace: for a namespaced dependent, absent (upstream's
                    // rule since 1.20), reported with an event.
                    if owner.kind.namespaced
                        && node.kind.namespaced
                        && owner.meta.namespace != node.meta.namespace
                    {
                        check_self = true;
                        work.invalid_namespace.push((uid.clone(), r.clone()));
                    }
                    if owner.deleting_dependents() {
                        check_self = true;
                    }
                }
            }
        }
        // Transitions of the object itself.
        let was_deleting = old.as_ref().is_some_and(|o| o.deleting_dependents());
        let was_orphaning = old.as_ref().is_some_and(|o| o.orphaning());
        if node.orphaning() && !was_orphaning {
            work.orphan.push(uid.clone());
        }
        if node.deleting_dependents() && !was_deleting {
            work.delete.push(uid.clone());
            work.delete
                .extend(self.dependents.get(&uid).into_iter().flatten().cloned());
        }
        // An object seen for the first time may be the owner its dependents waited for, in
        // the wrong namespace.
        if old.is_none() && kind.namespaced {
            for d in self.dependents(&uid) {
                if d.kind.namespaced && d.meta.namespace != node.meta.namespace {
                    work.delete.push(d.meta.uid.clone());
                    if let Some(r) = d.meta.owner_references.iter().find(|r| r.uid == uid) {
                        work.invalid_namespace.push((d.meta.uid.clone(), r.clone()));
                    }
                }
            }
        }
        if check_self {
            work.delete.push(uid.clone());
        }
        self.nodes.insert(uid, node);
        work
    }

    /// An object deleted: its dependents are checked (their owner is gone), and owners
    /// waiting for their dependents are checked again.
    pub fn delete(&mut self, meta: &ObjectMeta) -> Work {
        let mut work = Work::default();
        let Some(node) = self.nodes.remove(&meta.uid) else {
            return work;
        };
        for r in &node.meta.owner_references {
            if let Some(set) = self.dependents.get_mut(&r.uid) {
                set.remove(&meta.uid);
                if set.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
            if self
                .nodes
                .get(&r.uid)
                .is_some_and(Node::deleting_dependents)
            {
                work.delete.push(r.uid.clone());
            }
        }
        work.delete.extend(
            self.dependents
                .get(&meta.uid)
                .into_iter()
                .flatten()
                .cloned(),
        );
        work
    }

    /// Every object of `kind` there is now: what the graph held of it and the list no longer
    /// holds was deleted meanwhile.
    pub fn replace(&mut self, kind: Arc<Kind>, items: Vec<ObjectMeta>) -> Work {
        let listed: HashSet<&str> = items.iter().map(|m| m.uid.as_str()).collect();
        let gone: Vec<ObjectMeta> = self
            .uids_of(&kind)
            .into_iter()
            .filter(|u| !listed.contains(u.as_str()))
            .filter_map(|u| self.nodes.get(&u).map(|n| n.meta.clone()))
            .collect();
        let mut work = Work::default();
        for m in gone {
            merge(&mut work, self.delete(&m));
        }
        for m in items {
            merge(&mut work, self.upsert(kind.clone(), m));
        }
        work
    }
}

/// Whether `owner` may own `dependent`: a cluster-scoped owner any object, a namespaced
/// owner only the objects of its namespace.
fn may_own(owner: &Node, dependent: &Node) -> bool {
    !owner.kind.namespaced
        || (dependent.kind.namespaced && dependent.meta.namespace == owner.meta.namespace)
}

/// Adds `more` to `work`.
pub fn merge(work: &mut Work, more: Work) {
    work.delete.extend(more.delete);
    work.orphan.extend(more.orphan);
    work.invalid_namespace.extend(more.invalid_namespace);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Kind;

    fn config_maps() -> Kind {
        Kind {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
            namespaced: true,
            verbs: Vec::new(),
        }
    }

    fn meta(uid: &str, owners: &[(&str, bool)]) -> ObjectMeta {
        ObjectMeta {
            name: uid.into(),
            namespace: "default".into(),
            uid: uid.into(),
            owner_references: owners
                .iter()
                .map(|(o, block)| OwnerReference {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: (*o).into(),
                    uid: (*o).into(),
                    block_owner_deletion: Some(*block),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn owners_are_linked_and_deletions_queue_dependents() {
        let cm = Arc::new(config_maps());
        let mut g = Graph::default();
        // A dependent whose owner was never seen is checked at once.
        assert_eq!(
            g.upsert(cm.clone(), meta("b", &[("a", true)])).delete,
            ["b"]
        );
        assert!(g.upsert(cm.clone(), meta("a", &[])).delete.is_empty());
        assert_eq!(g.blocking_dependents("a").len(), 1);
        // Dropping the blocking reference lets the owner be checked again.
        assert_eq!(g.upsert(cm.clone(), meta("b", &[])).delete, ["a"]);
        g.upsert(cm.clone(), meta("b", &[("a", false)]));
        assert_eq!(g.delete(&meta("a", &[])).delete, ["b"]);
        // A relist without b deletes it.
        assert!(g.replace(cm, vec![]).delete.is_empty());
        assert!(g.is_empty());
    }

    #[test]
    fn a_namespaced_owners_dependents_are_those_of_its_namespace() {
        let cm = Arc::new(config_maps());
        let mut g = Graph::default();
        g.upsert(cm.clone(), meta("owner", &[]));
        g.upsert(cm.clone(), meta("mine", &[("owner", true)]));
        // Another namespace names the owner's UID, blocking: it is checked (live, in its own
        // namespace) and reported, but it is not the owner's dependent.
        let mut foreign = meta("foreign", &[("owner", true)]);
        foreign.namespace = "evil".into();
        let work = g.upsert(cm.clone(), foreign);
        assert_eq!(work.delete, ["foreign"]);
        assert_eq!(work.invalid_namespace.len(), 1);
        let names = |v: Vec<Node>| v.into_iter().map(|n| n.meta.name).collect::<Vec<_>>();
        assert_eq!(names(g.dependents("owner")), ["mine"]);
        assert_eq!(names(g.blocking_dependents("owner")), ["mine"]);
        g.delete(&meta("mine", &[]));
        assert!(!g.has_dependents("owner"));
        assert!(g.blocking_dependents("owner").is_empty());
        // Its deletion still has the foreign reference checked (it is dangling now).
        assert_eq!(g.delete(&meta("owner", &[])).delete, ["foreign"]);
    }
}
