//! Field sets (upstream's `fieldpath.Set`) and who owns them (`fieldpath.ManagedFields`).
//!
//! A set is a trie of paths: at each level, `members` are the paths that end there and
//! `children` the sub-sets of paths that go on. A path can be both a member and have children
//! (an associative list item is owned as a whole, `.`, and field by field). Both levels are
//! kept sorted by [`PathElement`]'s order, which is also the order `FieldsV1` is written in.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use super::{
    path::{Path, PathElement},
    schema::{Schema, TypeRef},
};

/// A set of field paths, as a trie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Set::default()
    }

    /// A set of `paths`.
    pub fn from_paths<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[PathElement]>,
    {
        let mut s = Set::new();
        for p in paths {
            s.insert(p.as_ref());
        }
        s
    }

    /// The elements of the paths that end at this level.
    pub fn members(&self) -> &BTreeSet<PathElement> {
        &self.members
    }

    /// The sub-sets of the paths that go on past this level, by their first element.
    pub fn children(&self) -> &BTreeMap<PathElement, Set> {
        &self.children
    }

    /// Adds `path` (the empty path adds nothing, as upstream).
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, prefix)) = path.split_last() else {
            return;
        };
        let mut s = self;
        for pe in prefix {
            s = s.children.entry(pe.clone()).or_default();
        }
        s.members.insert(last.clone());
    }

    /// Adds one element as a member of this level.
    pub fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Whether `path` is in the set (as a member, not merely a prefix of members).
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, prefix)) = path.split_last() else {
            return false;
        };
        let mut s = self;
        for pe in prefix {
            match s.children.get(pe) {
                Some(c) => s = c,
                None => return false,
            }
        }
        s.members.contains(last)
    }

    /// Paths in either set.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            match out.children.get_mut(pe) {
                Some(mine) => *mine = mine.union(child),
                None => {
                    out.children.insert(pe.clone(), child.clone());
                }
            }
        }
        out
    }

    /// Paths in both sets (children left empty are dropped).
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let i = child.intersection(theirs);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        Set { members, children }
    }

    /// Paths in this set and not in `other` (children left empty are dropped).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            match other.children.get(pe) {
                Some(theirs) => {
                    let d = child.difference(theirs);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also removes every path under it:
    /// owning a field owns what is inside it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            match other.children.get(pe) {
                Some(theirs) => {
                    let d = child.recursive_difference(theirs);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        Set { members, children }
    }

    /// The members that have no children: the leaves of the trie (upstream's `Leaves`).
    pub fn leaves(&self) -> Set {
        let members = self
            .members
            .iter()
            .filter(|pe| !self.children.contains_key(pe))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .map(|(pe, c)| (pe.clone(), c.leaves()))
            .collect();
        Set { members, children }
    }

    /// Whether the set holds no path (children that are themselves empty do not count).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    /// The number of paths.
    pub fn size(&self) -> usize {
        self.members.len() + self.children.values().map(Set::size).sum::<usize>()
    }

    /// The paths that start with `pe`, without it (upstream's `WithPrefix`); empty when none.
    pub fn with_prefix(&self, pe: &PathElement) -> Set {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// The paths that start with `pe`, borrowed.
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    /// This set with `prefix` put before each path (the inverse of [`Set::with_prefix`]).
    pub fn prefix_with(&self, prefix: &[PathElement]) -> Set {
        let mut out = self.clone();
        for pe in prefix.iter().rev() {
            let mut s = Set::new();
            if !out.is_empty() {
                s.children.insert(pe.clone(), out);
            }
            out = s;
        }
        out
    }

    /// Upstream's `EnsureNamedFieldsAreMembers`: every child that is a field the schema
    /// declares becomes a member too. Pruning removes members only; this makes removing a
    /// struct field remove the whole struct, as upstream does when a field set lists only
    /// what is inside it.
    pub fn ensure_named_fields_are_members(&self, schema: &Schema, tr: Option<&TypeRef>) -> Set {
        let atom = tr.and_then(|tr| schema.resolve(tr));
        let map = atom.as_ref().and_then(|a| a.map.as_ref());
        let list = atom.as_ref().and_then(|a| a.list.as_ref());
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let mut child_tr: Option<&TypeRef> = None;
            match (pe, map, list) {
                (PathElement::Field(name), Some(m), _) => match m.fields.get(name) {
                    Some(f) => {
                        members.insert(pe.clone());
                        child_tr = Some(&f.type_ref);
                    }
                    None => child_tr = m.element_type.as_ref(),
                },
                (PathElement::Key(_), _, Some(l)) => child_tr = Some(&l.element_type),
                _ => {}
            }
            children.insert(
                pe.clone(),
                child.ensure_named_fields_are_members(schema, child_tr),
            );
        }
        Set { members, children }
    }

    /// Every path, in upstream's iteration order: this level's members, then each child's
    /// paths in element order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(Path(p));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Iterates over every path, as [`Set::paths`] orders them.
    pub fn iter(&self) -> impl Iterator<Item = Path> {
        self.paths().into_iter()
    }
}

impl fmt::Display for Set {
    /// Upstream's `Set.String`: one path per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self.paths().iter().map(Path::to_string).collect();
        write!(f, "{}", paths.join("\n"))
    }
}

/// One manager's fields: the set, the API version it was written in, and whether it came from
/// an apply (upstream's `fieldpath.VersionedSet`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionedSet {
    /// The fields.
    pub set: Set,
    /// The API version the fields are named in.
    pub api_version: String,
    /// Whether the manager's last write was an apply.
    pub applied: bool,
}

impl VersionedSet {
    /// A versioned set.
    pub fn new(set: Set, api_version: impl Into<String>, applied: bool) -> Self {
        VersionedSet {
            set,
            api_version: api_version.into(),
            applied,
        }
    }
}

/// Who owns which fields: manager id to its [`VersionedSet`] (upstream's
/// `fieldpath.ManagedFields`). Manager ids are opaque here; the apiserver layer encodes a
/// manager's name, operation and subresource into them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFields(pub BTreeMap<String, VersionedSet>);

impl ManagedFields {
    /// No managers.
    pub fn new() -> Self {
        ManagedFields::default()
    }

    /// Upstream's `ManagedFields.Difference`: per manager, what differs between the two (the
    /// symmetric difference of the sets, or the right side's entry when the versions differ);
    /// managers only on one side with a non-empty set. Empty when the two agree; the `applied`
    /// flags are not compared, as upstream.
    pub fn difference(&self, rhs: &ManagedFields) -> ManagedFields {
        let mut diff = BTreeMap::new();
        for (manager, left) in &self.0 {
            match rhs.0.get(manager) {
                None => {
                    if !left.set.is_empty() {
                        diff.insert(manager.clone(), left.clone());
                    }
                }
                Some(right) if right.api_version != left.api_version => {
                    diff.insert(manager.clone(), right.clone());
                }
                Some(right) => {
                    let s = left
                        .set
                        .difference(&right.set)
                        .union(&right.set.difference(&left.set));
                    if !s.is_empty() {
                        diff.insert(
                            manager.clone(),
                            VersionedSet::new(s, right.api_version.clone(), false),
                        );
                    }
                }
            }
        }
        for (manager, right) in &rhs.0 {
            if !self.0.contains_key(manager) && !right.set.is_empty() {
                diff.insert(manager.clone(), right.clone());
            }
        }
        ManagedFields(diff)
    }
}

impl std::ops::Deref for ManagedFields {
    type Target = BTreeMap<String, VersionedSet>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ManagedFields {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Display for ManagedFields {
    /// Upstream's `ManagedFields.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.0 {
            writeln!(f, "{k}:")?;
            writeln!(f, "- Applied: {}", v.applied)?;
            writeln!(f, "- APIVersion: {}", v.api_version)?;
            writeln!(f, "- Set: {}", v.set)?;
        }
        Ok(())
    }
}

impl Set {
    /// The children, mutably (crate-internal: readers and walkers building a trie).
    pub(crate) fn children_mut(&mut self) -> &mut BTreeMap<PathElement, Set> {
        &mut self.children
    }
}
