//! Upstream's `internal/fixture`: a live object (null at first) and its managers, operations
//! (apply, forced apply, update) run on them in turn, then the live object and the managers
//! checked. The converter is the identity, as upstream's `dummyConverter`.

use std::sync::Arc;

use serde_json::Value;

use crate::smd::{
    merge::{MergeError, Updater},
    path::PathElement,
    schema::{Schema, TypeRef},
    set::{ManagedFields, Set, VersionedSet},
    typed::ParseableType,
};

/// A type of a schema written in upstream's schema format (YAML).
pub(super) fn parser(schema_yaml: &str, type_name: &str) -> ParseableType {
    let doc = crate::yaml::to_json(schema_yaml.as_bytes()).expect("schema YAML");
    let schema = Schema::from_smd(&doc).expect("schema");
    ParseableType::new(Arc::new(schema), TypeRef::named(type_name))
}

/// A field name element.
pub(super) fn fld(name: &str) -> PathElement {
    PathElement::field(name)
}

/// A key element (upstream's `_KBF`).
pub(super) fn key(fields: &[(&str, Value)]) -> PathElement {
    PathElement::key(fields.iter().map(|(k, v)| (*k, v.clone())))
}

/// A set item element (upstream's `_V`).
pub(super) fn val(v: Value) -> PathElement {
    PathElement::value(v)
}

/// Managers as upstream's tests write them: (manager, version, paths).
pub(super) fn managed(entries: Vec<(&str, &str, Vec<Vec<PathElement>>)>) -> ManagedFields {
    let mut m = ManagedFields::new();
    for (manager, version, paths) in entries {
        m.insert(
            manager.to_string(),
            VersionedSet::new(Set::from_paths(paths), version, false),
        );
    }
    m
}

/// One operation.
pub(super) enum Op {
    Apply {
        manager: String,
        version: String,
        object: Value,
        force: bool,
        /// Expected conflicts (manager, path); `None`: none expected, an error fails the test.
        conflicts: Option<Vec<(String, Vec<PathElement>)>>,
    },
    Update {
        manager: String,
        version: String,
        object: Value,
    },
}

pub(super) fn apply(manager: &str, version: &str, object: Value) -> Op {
    Op::Apply {
        manager: manager.into(),
        version: version.into(),
        object,
        force: false,
        conflicts: None,
    }
}

pub(super) fn force_apply(manager: &str, version: &str, object: Value) -> Op {
    Op::Apply {
        manager: manager.into(),
        version: version.into(),
        object,
        force: true,
        conflicts: None,
    }
}

pub(super) fn apply_conflicts(
    manager: &str,
    version: &str,
    object: Value,
    conflicts: Vec<(&str, Vec<PathElement>)>,
) -> Op {
    Op::Apply {
        manager: manager.into(),
        version: version.into(),
        object,
        force: false,
        conflicts: Some(
            conflicts
                .into_iter()
                .map(|(m, p)| (m.to_string(), p))
                .collect(),
        ),
    }
}

pub(super) fn update(manager: &str, version: &str, object: Value) -> Op {
    Op::Update {
        manager: manager.into(),
        version: version.into(),
        object,
    }
}

/// Upstream's `TestCase`: operations, then (when given) the expected live object and managers.
pub(super) struct TestCase {
    pub(super) ops: Vec<Op>,
    pub(super) object: Option<Value>,
    pub(super) managed: Option<ManagedFields>,
}

/// The state after running `tc`'s operations, or the first failure.
pub(super) fn try_run(ty: &ParseableType, tc: &TestCase) -> Result<(Value, ManagedFields), String> {
    let updater = Updater::new(ty.clone());
    let mut live = Value::Null;
    let mut managers = ManagedFields::new();
    for (i, op) in tc.ops.iter().enumerate() {
        match op {
            Op::Apply {
                manager,
                version,
                object,
                force,
                conflicts,
            } => match updater.apply(&live, object, version, managers.clone(), manager, *force) {
                Ok((new, m)) => {
                    if let Some(expected) = conflicts
                        && !expected.is_empty()
                    {
                        return Err(format!("operation {i}: expected conflicts, got none"));
                    }
                    live = new;
                    managers = m;
                }
                Err(MergeError::Conflicts(got)) if conflicts.is_some() => {
                    let expected = conflicts.as_ref().map(Vec::as_slice).unwrap_or_default();
                    let got: Vec<(String, Vec<PathElement>)> = got
                        .0
                        .iter()
                        .map(|c| (c.manager.clone(), c.path.0.clone()))
                        .collect();
                    let missing = expected.iter().any(|e| !got.contains(e));
                    let extra = got.iter().any(|g| !expected.contains(g));
                    if missing || extra {
                        return Err(format!(
                            "operation {i}: expected conflicts {expected:?}, got {got:?}"
                        ));
                    }
                }
                Err(e) => return Err(format!("operation {i}: {e}")),
            },
            Op::Update {
                manager,
                version,
                object,
            } => {
                managers = updater
                    .update(&live, object, version, managers.clone(), manager)
                    .map_err(|e| format!("operation {i}: {e}"))?;
                live = object.clone();
            }
        }
    }
    Ok((live, managers))
}

/// Runs `tc` and checks its expectations, as upstream's `TestCase.Test`.
pub(super) fn run(ty: &ParseableType, tc: TestCase) {
    let (live, managers) = try_run(ty, &tc).unwrap_or_else(|e| panic!("{e}"));
    if let Some(object) = &tc.object {
        assert_eq!(&live, object, "live object");
    }
    if let Some(expected) = &tc.managed {
        let diff = managers.difference(expected);
        assert!(
            diff.is_empty(),
            "expected managers:\n{expected}\ngot:\n{managers}\ndiff:\n{diff}"
        );
    }
    for (manager, vs) in managers.iter() {
        assert!(!vs.set.is_empty(), "empty set managed by {manager}");
    }
}
