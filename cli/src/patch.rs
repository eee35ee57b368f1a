//! The changes `patch`, `label` and `annotate` make to an object, on its JSON (Kubernetes'
//! shape), without asking the server: a JSON merge patch (RFC 7386, `--type merge`), a JSON
//! patch (RFC 6902, `--type json`), and kubectl's `key=value` / `key-` edits of a string map.
//!
//! kubectl's default patch type for built-in kinds is the strategic merge patch, which needs
//! each field's merge keys from Go struct tags; we have no such tags, so `--type merge` is the
//! default here (what kubectl uses for custom kinds). The README says so.

use serde_json::{Map, Value};

/// Which patch `--type` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PatchType {
    /// RFC 7386: objects merge, `null` removes, everything else replaces.
    Merge,
    /// RFC 6902: a list of operations (add, remove, replace, move, copy, test).
    Json,
}

/// Applies `patch` (its text, JSON or YAML) of type `kind` to `target`.
pub fn apply(kind: PatchType, target: &Value, patch: &str) -> Result<Value, String> {
    let patch: Value = serde_yaml_ng::from_str(patch).map_err(|e| format!("the patch: {e}"))?;
    match kind {
        PatchType::Merge => {
            if !patch.is_object() {
                return Err("a merge patch is a JSON object".into());
            }
            let mut out = target.clone();
            merge(&mut out, &patch);
            Ok(out)
        }
        PatchType::Json => json_patch(target, &patch),
    }
}

/// RFC 7386 MergePatch.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// RFC 6902: each operation in order, all or nothing.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, String> {
    let Value::Array(ops) = patch else {
        return Err("a JSON patch is a list of operations".into());
    };
    let mut doc = target.clone();
    for (i, op) in ops.iter().enumerate() {
        operation(&mut doc, op).map_err(|e| format!("operation {}: {e}", i + 1))?;
    }
    Ok(doc)
}

fn operation(doc: &mut Value, op: &Value) -> Result<(), String> {
    let field = |name: &str| {
        op.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("missing {name:?}"))
    };
    let path = pointer(field("path")?)?;
    let value = || op.get("value").cloned().ok_or("missing \"value\"");
    match field("op")? {
        "add" => add(doc, &path, value()?),
        "remove" => remove(doc, &path).map(drop),
        "replace" => {
            remove(doc, &path)?;
            add(doc, &path, value()?)
        }
        "move" => {
            let from = pointer(field("from")?)?;
            let v = remove(doc, &from)?;
            add(doc, &path, v)
        }
        "copy" => {
            let from = pointer(field("from")?)?;
            let v = get(doc, &from)?.clone();
            add(doc, &path, v)
        }
        "test" => {
            if *get(doc, &path)? == value()? {
                Ok(())
            } else {
                Err(format!("test failed at {}", show(&path)))
            }
        }
        other => Err(format!("unknown op {other:?}")),
    }
}

/// An RFC 6901 pointer's tokens (`~1` is `/`, `~0` is `~`).
fn pointer(p: &str) -> Result<Vec<String>, String> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = p.strip_prefix('/') else {
        return Err(format!("path {p:?} does not start with /"));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn show(path: &[String]) -> String {
    format!("/{}", path.join("/"))
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Result<&'a Value, String> {
    let mut at = doc;
    for t in path {
        at = match at {
            Value::Object(m) => m.get(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| format!("{} does not exist", show(path)))?;
    }
    Ok(at)
}

fn parent<'a>(doc: &'a mut Value, path: &[String]) -> Result<(&'a mut Value, String), String> {
    let Some((last, up)) = path.split_last() else {
        return Err("the whole document cannot be the target here".into());
    };
    let mut at = doc;
    for t in up {
        at = match at {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| format!("{} does not exist", show(up)))?;
    }
    Ok((at, last.clone()))
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (at, last) = parent(doc, path)?;
    match at {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| format!("{} is not an index", show(path)))?
            };
            if i > a.len() {
                return Err(format!("{} is past the end of the list", show(path)));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("{} is inside a scalar", show(path))),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, String> {
    let (at, last) = parent(doc, path)?;
    let missing = || format!("{} does not exist", show(path));
    match at {
        Value::Object(m) => m.remove(&last).ok_or_else(missing),
        Value::Array(a) => match last.parse::<usize>() {
            Ok(i) if i < a.len() => Ok(a.remove(i)),
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patches_follow_rfc_7386() {
        // The RFC's own example (appendix A's cases condensed).
        let target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        let out = apply(
            PatchType::Merge,
            &target,
            r#"{"a": "z", "c": {"f": null}, "l": [3], "n": {"x": 1}}"#,
        )
        .expect("applies");
        assert_eq!(
            out,
            json!({"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}})
        );
        // YAML is taken too, as kubectl takes it.
        let out = apply(PatchType::Merge, &target, "a: y").expect("yaml");
        assert_eq!(out["a"], "y");
        assert!(apply(PatchType::Merge, &target, "[1]").is_err());
    }

    #[test]
    fn json_patches_follow_rfc_6902_all_or_nothing() {
        let target = json!({"metadata": {"labels": {"a/b": "1"}}, "items": [1, 2, 3]});
        let out = apply(
            PatchType::Json,
            &target,
            r#"[
              {"op": "test", "path": "/metadata/labels/a~1b", "value": "1"},
              {"op": "add", "path": "/metadata/labels/c", "value": "2"},
              {"op": "remove", "path": "/items/0"},
              {"op": "add", "path": "/items/-", "value": 4},
              {"op": "replace", "path": "/items/0", "value": 9},
              {"op": "copy", "from": "/items/0", "path": "/first"},
              {"op": "move", "from": "/first", "path": "/moved"}
            ]"#,
        )
        .expect("applies");
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"a/b": "1", "c": "2"}}, "items": [9, 3, 4], "moved": 9})
        );
        let failed = apply(
            PatchType::Json,
            &target,
            r#"[{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/x", "value": 2}]"#,
        );
        assert_eq!(failed, Err("operation 2: test failed at /x".into()));
        let missing = apply(
            PatchType::Json,
            &target,
            r#"[{"op": "remove", "path": "/nope"}]"#,
        );
        assert_eq!(missing, Err("operation 1: /nope does not exist".into()));
        assert!(apply(PatchType::Json, &target, r#"{"op": "add"}"#).is_err());
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
