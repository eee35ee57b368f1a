//! What `patch`, `label` and `annotate` send: kubectl's `key=value` / `key-` edits of a
//! string map, checked against the object read (`--overwrite`) and sent as a JSON merge patch
//! of just those keys; `patch`'s types; and the local application of a patch that
//! `--dry-run=client` needs (the server applies every real one, inside its update's retry
//! loop).

use std::sync::OnceLock;

use kubestore_apimachinery::{
    descriptors::Descriptors,
    patch::{Patch, PatchType as Applied},
};
use kubestore_proto::registry::v1::{ApiResource, PatchType as Wire};
use serde_json::{Map, Value};

/// Which patch `--type` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PatchType {
    /// RFC 7386: objects merge, `null` removes, everything else replaces.
    Merge,
    /// RFC 6902: a list of operations (add, remove, replace, move, copy, test).
    Json,
    /// Kubernetes' strategic merge patch: lists merge by their keys (built-in kinds only).
    Strategic,
}

impl PatchType {
    /// kubectl's default: strategic for a built-in kind, merge for a custom one (kubectl sends
    /// strategic and the server refuses it; see the README).
    pub fn default_for(r: &ApiResource) -> Self {
        if r.message.is_empty() {
            Self::Merge
        } else {
            Self::Strategic
        }
    }

    /// The generic API's patch type.
    pub fn wire(self) -> Wire {
        match self {
            Self::Merge => Wire::Merge,
            Self::Json => Wire::Json,
            Self::Strategic => Wire::Strategic,
        }
    }
}

/// The patch text (JSON, or YAML as kubectl takes it) as JSON.
pub fn parse(text: &str) -> Result<Value, String> {
    serde_yaml_ng::from_str(text).map_err(|e| format!("the patch: {e}"))
}

/// The built-in kinds' descriptors, for a strategic merge patch applied locally.
fn descriptors() -> Option<&'static Descriptors> {
    static D: OnceLock<Option<Descriptors>> = OnceLock::new();
    D.get_or_init(|| Descriptors::from_set(kubestore_proto::CORE_DESCRIPTOR_SET).ok())
        .as_ref()
}

/// Applies `body` of type `kind` to `current`, an object of `r`, here: what
/// `--dry-run=client` shows (nothing is sent).
pub fn apply_locally(
    kind: PatchType,
    r: &ApiResource,
    current: &Value,
    body: &Value,
) -> Result<Value, String> {
    let patch = Patch {
        patch_type: match kind {
            PatchType::Merge => Applied::Merge,
            PatchType::Json => Applied::Json,
            PatchType::Strategic => Applied::Strategic,
        },
        body: body.clone(),
    };
    let message = descriptors()
        .filter(|_| !r.message.is_empty())
        .map(|d| (d, r.message.as_str()));
    patch
        .apply(
            current,
            message,
            &kubestore_apimachinery::patch::Limits::default(),
        )
        .map_err(|e| e.to_string())
}

/// kubectl's `key=value` (set) and `key-` (remove) arguments of `label` and `annotate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapEdit {
    /// `key=value`.
    Set(String, String),
    /// `key-`.
    Remove(String),
}

/// Reads `label`/`annotate` arguments.
pub fn map_edits(args: &[String]) -> Result<Vec<MapEdit>, String> {
    args.iter()
        .map(|a| {
            if let Some((k, v)) = a.split_once('=') {
                if k.is_empty() {
                    return Err(format!("invalid argument {a:?}: no key before '='"));
                }
                Ok(MapEdit::Set(k.into(), v.into()))
            } else if let Some(k) = a.strip_suffix('-').filter(|k| !k.is_empty()) {
                Ok(MapEdit::Remove(k.into()))
            } else {
                Err(format!(
                    "invalid argument {a:?}: use key=value to set or key- to remove"
                ))
            }
        })
        .collect()
}

/// Applies `edits` to `object.metadata.<field>` (`labels` or `annotations`). A value that
/// would change an existing one needs `overwrite` (kubectl's `--overwrite`); removing a key
/// that is not there is a warning, returned.
pub fn edit_map(
    object: &mut Value,
    field: &str,
    edits: &[MapEdit],
    overwrite: bool,
) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    let meta = object
        .as_object_mut()
        .ok_or("the object is not a mapping")?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let map = meta
        .as_object_mut()
        .ok_or("metadata is not a mapping")?
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if map.is_null() {
        *map = Value::Object(Map::new());
    }
    let map = map
        .as_object_mut()
        .ok_or_else(|| format!("metadata.{field} is not a mapping"))?;
    for e in edits {
        match e {
            MapEdit::Set(k, v) => match map.get(k).and_then(Value::as_str) {
                Some(old) if old != v && !overwrite => {
                    return Err(format!(
                        "'{k}' already has a value ({old}), and --overwrite is false"
                    ));
                }
                _ => {
                    map.insert(k.clone(), Value::String(v.clone()));
                }
            },
            MapEdit::Remove(k) => {
                if map.remove(k).is_none() {
                    let what = field.trim_end_matches('s');
                    warnings.push(format!("{what} {k:?} not found."));
                }
            }
        }
    }
    Ok(warnings)
}

/// The merge patch that turns `current`'s `metadata.<field>` into `next`'s: only the keys
/// that change, removed ones as `null` (kubectl's two-way merge patch of a label edit).
pub fn map_patch(current: &Value, next: &Value, field: &str) -> Value {
    let map = |v: &Value| {
        v.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (old, new) = (map(current), map(next));
    let mut changes = Map::new();
    for (k, v) in &new {
        if old.get(k) != Some(v) {
            changes.insert(k.clone(), v.clone());
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            changes.insert(k.clone(), Value::Null);
        }
    }
    serde_json::json!({ "metadata": { field: changes } })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn client_dry_runs_apply_patches_as_the_server_would() {
        let cm = ApiResource::default();
        let current = json!({"metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}});
        let merged = apply_locally(
            PatchType::Merge,
            &cm,
            &current,
            &parse("data: {x: null, z: '3'}").expect("yaml"),
        )
        .expect("applies");
        assert_eq!(merged["data"], json!({"y": "2", "z": "3"}));
        let failed = apply_locally(
            PatchType::Json,
            &cm,
            &current,
            &json!([{"op": "test", "path": "/data/x", "value": "9"}]),
        );
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(PatchType::default_for(&cm), PatchType::Merge);
        let pod = ApiResource {
            message: ".core.v1.Pod".into(),
            ..Default::default()
        };
        assert_eq!(PatchType::default_for(&pod), PatchType::Strategic);
        let pod_json = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let patched = apply_locally(
            PatchType::Strategic,
            &pod,
            &pod_json,
            &json!({"spec": {"containers": [{"name": "b", "image": "z"}]}}),
        )
        .expect("a strategic merge");
        assert_eq!(
            patched["spec"]["containers"],
            json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]),
            "containers merge by name"
        );
    }

    #[test]
    fn label_edits_become_merge_patches_of_their_keys() {
        let current = json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}});
        let next = json!({"metadata": {"labels": {"a": "1", "b": "9", "d": "4"}}});
        assert_eq!(
            map_patch(&current, &next, "labels"),
            json!({"metadata": {"labels": {"b": "9", "d": "4", "c": null}}})
        );
    }

    #[test]
    fn labels_are_set_removed_and_overwritten_only_when_asked() {
        let edits = map_edits(&["app=web".into(), "tier-".into(), "x=".into()]).expect("parses");
        assert_eq!(
            edits,
            [
                MapEdit::Set("app".into(), "web".into()),
                MapEdit::Remove("tier".into()),
                MapEdit::Set("x".into(), String::new()),
            ]
        );
        assert!(map_edits(&["=v".into()]).is_err());
        assert!(map_edits(&["plain".into()]).is_err());

        let mut obj = json!({"metadata": {"name": "a", "labels": {"app": "db", "tier": "1"}}});
        let refused = edit_map(&mut obj, "labels", &edits, false);
        assert_eq!(
            refused,
            Err("'app' already has a value (db), and --overwrite is false".into())
        );
        let warnings = edit_map(&mut obj, "labels", &edits, true).expect("overwrites");
        assert!(warnings.is_empty());
        assert_eq!(obj["metadata"]["labels"], json!({"app": "web", "x": ""}));
        // Same value again needs no --overwrite; a missing key to remove is a warning.
        let mut obj = json!({"metadata": {"labels": {"app": "web"}}});
        let w = edit_map(
            &mut obj,
            "labels",
            &map_edits(&["app=web".into(), "gone-".into()]).expect("parses"),
            false,
        )
        .expect("no change needs no overwrite");
        assert_eq!(w, ["label \"gone\" not found."]);
        // Annotations on an object that has none.
        let mut obj = json!({"metadata": {"name": "a"}});
        edit_map(
            &mut obj,
            "annotations",
            &[MapEdit::Set("note".into(), "hi".into())],
            false,
        )
        .expect("sets");
        assert_eq!(obj["metadata"]["annotations"]["note"], "hi");
    }
}
