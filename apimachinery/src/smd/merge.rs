//! Field ownership across writes (upstream's `merge.Updater`): an update moves the fields it
//! changed to its manager; an apply merges a configuration into the live object, claims the
//! fields the configuration sets, fails on fields other managers own with other values unless
//! forced, and removes fields its manager applied before and no longer sends, unless someone
//! else owns them.
//!
//! Objects here are of one version: upstream converts the live and new objects to each
//! manager's version before comparing; kubestore's kinds have one schema per version served,
//! so the conversion is the identity (as upstream's own tests' converter is). Each manager's
//! recorded `api_version` is kept as given.

use std::{collections::BTreeMap, fmt};

use serde_json::Value;
use thiserror::Error;

use super::{
    path::Path,
    set::{ManagedFields, Set, VersionedSet},
    typed::{ParseableType, ValidationErrors},
    value::{self, go_quote},
};

/// A field an apply sets to another value than the manager owning it (upstream's
/// `merge.Conflict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: String,
    /// The field.
    pub path: Path,
}

impl fmt::Display for Conflict {
    /// `conflict with "<manager>": <path>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "conflict with {}: {}",
            go_quote(&self.manager),
            self.path
        )
    }
}

/// An apply's conflicts (upstream's `merge.Conflicts`), by manager (sorted), each manager's in
/// its field set's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// Upstream's `ConflictsFromManagers`: one conflict per path of each manager's set.
    pub fn from_managers(sets: &ManagedFields) -> Conflicts {
        let mut out = Vec::new();
        for (manager, vs) in sets.iter() {
            for path in vs.set.paths() {
                out.push(Conflict {
                    manager: manager.clone(),
                    path,
                });
            }
        }
        Conflicts(out)
    }

    /// All conflicting paths in one set (upstream's `ToSet`).
    pub fn to_set(&self) -> Set {
        Set::from_paths(self.0.iter().map(|c| c.path.elements()))
    }

    /// The number of conflicts.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Paths grouped by manager, managers sorted.
    fn grouped(&self) -> BTreeMap<&str, Vec<&Path>> {
        let mut m: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for c in &self.0 {
            m.entry(c.manager.as_str()).or_default().push(&c.path);
        }
        m
    }

    /// The apiserver's message for an apply's conflicts (`managedfields/internal`'s
    /// `getConflictMessage`): `Apply failed with 1 conflict: conflict with <manager>: <path>`,
    /// or `Apply failed with N conflicts: conflicts with <manager>:\n- <path>...` grouped by
    /// manager. `print_manager` renders a manager id: the apiserver decodes its encoded ids to
    /// `"kubectl" using v1` (an update's manager with its API version) or `"kubectl"`; plain
    /// ids print quoted, as [`go_quote`] does.
    pub fn apply_failed_message(&self, print_manager: impl Fn(&str) -> String) -> String {
        if let [one] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                print_manager(&one.manager),
                one.path
            );
        }
        let mut lines = Vec::new();
        for (manager, paths) in self.grouped() {
            lines.push(format!("conflicts with {}:", print_manager(manager)));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }
}

impl fmt::Display for Conflicts {
    /// Upstream's `Conflicts.Error`: the one conflict, or `conflicts with "<manager>":` and
    /// `- <path>` lines, by sorted manager.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [one] = self.0.as_slice() {
            return write!(f, "{one}");
        }
        let mut lines = Vec::new();
        for (manager, paths) in self.grouped() {
            lines.push(format!("conflicts with {}:", go_quote(manager)));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        write!(f, "{}", lines.join("\n"))
    }
}

impl std::error::Error for Conflicts {}

/// Why an update or apply failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MergeError {
    /// The apply sets fields other managers own, to other values.
    #[error("{0}")]
    Conflicts(Conflicts),
    /// An object does not fit the schema (what failed, and the errors).
    #[error("{context}: {errors}")]
    Invalid {
        /// The step that failed (`failed to merge config`).
        context: String,
        /// The schema errors.
        errors: ValidationErrors,
    },
}

fn invalid(context: &str) -> impl FnOnce(ValidationErrors) -> MergeError + '_ {
    move |errors| MergeError::Invalid {
        context: context.to_string(),
        errors,
    }
}

/// Upstream's `merge.Updater` for objects of one type.
#[derive(Clone, Debug)]
pub struct Updater {
    /// The objects' type.
    pub ty: ParseableType,
    /// Fields no manager owns and no apply conflicts on (upstream's `IgnoredFields`, e.g. the
    /// apiserver's `status` of a main resource); removed from every set this updater writes.
    pub ignored_fields: Option<Set>,
}

impl Updater {
    /// An updater for objects of `ty`.
    pub fn new(ty: ParseableType) -> Self {
        Updater {
            ty,
            ignored_fields: None,
        }
    }

    fn ignore(&self, set: Set) -> Set {
        match &self.ignored_fields {
            Some(ignored) if !ignored.is_empty() => set.recursive_difference(ignored),
            _ => set,
        }
    }

    /// Upstream's `update`: compares `old` and `new`; the fields other managers own that
    /// changed are conflicts (an error unless `force`), and are taken from them, as are fields
    /// removed. Managers left with nothing are dropped.
    fn update_managers(
        &self,
        old: &Value,
        new: &Value,
        mut managers: ManagedFields,
        workflow: &str,
        force: bool,
    ) -> Result<(ManagedFields, super::typed::Comparison), MergeError> {
        let mut compare = self
            .ty
            .compare(old, new)
            .map_err(invalid("failed to compare objects"))?;
        if let Some(ignored) = &self.ignored_fields {
            compare = compare.exclude_fields(ignored);
        }
        let changed = compare.modified.union(&compare.added);
        let mut conflicts = ManagedFields::new();
        for (manager, vs) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let c = vs.set.intersection(&changed);
            if !c.is_empty() {
                conflicts.insert(
                    manager.clone(),
                    VersionedSet::new(c, vs.api_version.clone(), false),
                );
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(MergeError::Conflicts(Conflicts::from_managers(&conflicts)));
        }
        for (manager, c) in conflicts.iter() {
            if let Some(vs) = managers.get_mut(manager) {
                vs.set = vs.set.difference(&c.set);
            }
        }
        if !compare.removed.is_empty() {
            for (manager, vs) in managers.iter_mut() {
                if manager != workflow {
                    vs.set = vs.set.difference(&compare.removed);
                }
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok((managers, compare))
    }

    /// Upstream's `Updater.Update`, for a create, update or patch that is not an apply: `new`
    /// is what will be stored, `live` what was (`Value::Null` on create). The fields that
    /// changed (added or modified) go to `manager` (recorded at `version`, not applied), and
    /// leave whoever owned them; removed fields leave everyone. Never conflicts.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        managers: ManagedFields,
        manager: &str,
    ) -> Result<ManagedFields, MergeError> {
        let (mut managers, compare) = self.update_managers(live, new, managers, manager, true)?;
        let mine = managers
            .get(manager)
            .map(|vs| vs.set.clone())
            .unwrap_or_default();
        let set = mine
            .difference(&compare.removed)
            .union(&compare.modified)
            .union(&compare.added);
        let set = self.ignore(set);
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers.insert(manager.to_string(), VersionedSet::new(set, version, false));
        }
        Ok(managers)
    }

    /// Upstream's `Updater.Apply`: `config` merged into `live` (`Value::Null` on create) for
    /// `manager`, who then owns exactly the fields `config` sets (recorded at `version`,
    /// applied). Fields other managers own that the config sets to other values are
    /// [`MergeError::Conflicts`] unless `force`, which takes them. Fields `manager` applied
    /// last time and no longer sends are removed, unless another manager owns them (upstream's
    /// `prune`). When nothing changes, the object returned is `live` itself.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        managers: ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<(Value, ManagedFields), MergeError> {
        // As upstream's apiserver parses an applied configuration: duplicates are invalid.
        self.ty
            .validate(config, false)
            .map_err(invalid("invalid configuration"))?;
        let merged = self
            .ty
            .merge(live, config)
            .map_err(invalid("failed to merge config"))?;
        let mut managers = managers;
        let last = managers.get(manager).cloned();
        let set = self
            .ty
            .to_field_set(config)
            .map_err(invalid("failed to get field set"))?;
        let set = self.ignore(set);
        managers.insert(manager.to_string(), VersionedSet::new(set, version, true));
        let new = self
            .prune(&merged, &managers, last.as_ref())
            .map_err(invalid("failed to prune fields"))?;
        let (managers, _) = self.update_managers(live, &new, managers, manager, force)?;
        if value::equals(live, &new) {
            return Ok((live.clone(), managers));
        }
        Ok((new, managers))
    }

    /// Upstream's `prune`: removes from `merged` what the applier applied last time (`last`)
    /// and does not apply now, unless another manager (or the new config) owns it. Declared
    /// fields count as members so that a struct the applier stopped sending goes as a whole.
    fn prune(
        &self,
        merged: &Value,
        managers: &ManagedFields,
        last: Option<&VersionedSet>,
    ) -> Result<Value, ValidationErrors> {
        let Some(last) = last.filter(|l| !l.set.is_empty()) else {
            return Ok(merged.clone());
        };
        let ty = &self.ty;
        let ensure = |s: &Set| s.ensure_named_fields_are_members(&ty.schema, Some(&ty.type_ref));
        let pruned = ty.remove_items(merged, &ensure(&last.set));

        // Add back what anyone (the applier's new set included) owns.
        let managed = managers
            .values()
            .fold(Set::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = ensure(&ty.to_field_set(merged)?);
        let pruned_set = ensure(&ty.to_field_set(&pruned)?);
        let pruned = ty.remove_items(
            merged,
            &merged_set.difference(&pruned_set.union(&ensure(&managed))),
        );

        // Add back what was removed but the applier did not own (dangling items).
        let pruned_set = ensure(&ty.to_field_set(&pruned)?);
        Ok(ty.remove_items(
            merged,
            &merged_set
                .difference(&pruned_set)
                .intersection(&ensure(&last.set)),
        ))
    }
}
