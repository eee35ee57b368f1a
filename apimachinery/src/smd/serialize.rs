//! `FieldsV1`: how a [`Set`] is written into `metadata.managedFields[].fieldsV1`, byte for byte
//! as upstream's `fieldpath` serializer writes it (so that objects read back from kubestore and
//! from a kube-apiserver compare equal, and clients that diff managed fields see no churn).
//!
//! The form: a JSON object per trie level, one key per path element (`f:<field>`,
//! `k:<key object>`, `v:<value>`, `i:<index>`), each mapping to the object of the paths below
//! it; `{}` for an element that is only a member; `".": {}` first inside the object of an
//! element that is both a member and has children. Keys are written in [`PathElement`] order,
//! compact, strings escaped as Go's `encoding/json` does.

use serde_json::{Map, Value};
use thiserror::Error;

use super::{
    path::PathElement,
    set::Set,
    value::{write_json, write_json_string},
};

/// Why a `FieldsV1` document or one of its keys could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FieldsV1Error {
    /// The text is not JSON.
    #[error("invalid FieldsV1 JSON: {0}")]
    Json(String),
    #[error("FieldsV1 {at}: expected an object, got {got}")]
    /// A level is not a JSON object.
    NotAnObject {
        /// The key holding it (`root` for the document).
        at: String,
        /// What it is.
        got: String,
    },
    /// A key is not a path element.
    #[error("parsing key as path element: {0}")]
    PathElement(String),
}

/// Upstream's `SerializePathElement`: `f:name`, `k:{"name":"a"}`, `v:"x"`, `i:3`.
pub fn serialize_path_element(pe: &PathElement) -> String {
    let mut out = String::new();
    write_path_element(&mut out, pe);
    out
}

fn write_path_element(out: &mut String, pe: &PathElement) {
    match pe {
        PathElement::Field(name) => {
            out.push_str("f:");
            out.push_str(name);
        }
        PathElement::Key(fields) => {
            out.push_str("k:{");
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, name);
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
        PathElement::Value(v) => {
            out.push_str("v:");
            write_json(out, v);
        }
        PathElement::Index(i) => {
            out.push_str("i:");
            out.push_str(&i.to_string());
        }
    }
}

/// Upstream's `DeserializePathElement`. An unknown type letter is
/// [`PathElementError::UnknownType`], which readers of whole sets skip (a newer writer's
/// element this reader does not know).
pub fn deserialize_path_element(s: &str) -> Result<PathElement, PathElementError> {
    let bytes = s.as_bytes();
    if bytes.len() < 2 {
        return Err(PathElementError::Invalid(
            "key must be 2 characters long:".into(),
        ));
    }
    if bytes[1] != b':' {
        return Err(PathElementError::Invalid(format!("missing colon: {s}")));
    }
    let rest = &s[2..];
    match bytes[0] {
        b'f' => Ok(PathElement::Field(rest.to_string())),
        b'v' => serde_json::from_str::<Value>(rest)
            .map(PathElement::Value)
            .map_err(|e| PathElementError::Invalid(format!("{s}: {e}"))),
        b'k' => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) => Ok(PathElement::key(m)),
            Ok(other) => Err(PathElementError::Invalid(format!(
                "{s}: a key must be a JSON object, got {other}"
            ))),
            Err(e) => Err(PathElementError::Invalid(format!("{s}: {e}"))),
        },
        b'i' => rest
            .parse::<i64>()
            .map(PathElement::Index)
            .map_err(|e| PathElementError::Invalid(format!("{s}: {e}"))),
        _ => Err(PathElementError::UnknownType),
    }
}

/// Why a path element's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PathElementError {
    /// The type letter is not one of `f`, `k`, `v`, `i`.
    #[error("unknown path element type")]
    UnknownType,
    /// The text after the type letter is malformed.
    #[error("{0}")]
    Invalid(String),
}

impl Set {
    /// The set as `FieldsV1` JSON text, byte for byte as upstream writes it.
    pub fn to_fields_v1(&self) -> String {
        let mut out = String::from("{");
        self.emit_contents(false, &mut out);
        out.push('}');
        out
    }

    /// The set as a `FieldsV1` JSON value (key order kept).
    pub fn to_fields_v1_value(&self) -> Value {
        serde_json::from_str(&self.to_fields_v1()).unwrap_or(Value::Object(Map::new()))
    }

    /// Writes this level's contents: `"."` first when asked (the element holding this level is
    /// also a member, and this level is not empty), then members and children merged in
    /// element order; an element that is both is written once, as a child with `"."`.
    fn emit_contents(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
        };
        if include_self && !(self.members().is_empty() && self.children().is_empty()) {
            sep(out);
            out.push_str("\".\":{}");
        }
        let mut members = self.members().iter().peekable();
        let mut children = self.children().iter().peekable();
        loop {
            let member_first = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(m), Some((cpe, _))) => *m < *cpe,
            };
            sep(out);
            if member_first {
                if let Some(m) = members.next() {
                    write_key(out, m);
                    out.push_str(":{}");
                }
            } else if let Some((cpe, child)) = children.next() {
                let both = members.peek().is_some_and(|m| *m == cpe);
                if both {
                    members.next();
                }
                write_key(out, cpe);
                out.push_str(":{");
                child.emit_contents(both, out);
                out.push('}');
            }
        }
    }

    /// Reads `FieldsV1` JSON text (upstream's `Set.FromJSON`). Keys of unknown element types
    /// are skipped, as upstream skips them; anything else malformed is an error.
    pub fn from_fields_v1(text: &str) -> Result<Set, FieldsV1Error> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| FieldsV1Error::Json(e.to_string()))?;
        Set::from_fields_v1_value(&v)
    }

    /// Reads a `FieldsV1` JSON value.
    pub fn from_fields_v1_value(v: &Value) -> Result<Set, FieldsV1Error> {
        let (children, _) = read_level(v, "")?;
        Ok(children.unwrap_or_default())
    }
}

/// A path element as a `FieldsV1` object key (its text, as a JSON string).
fn write_key(out: &mut String, pe: &PathElement) {
    let mut key = String::new();
    write_path_element(&mut key, pe);
    write_json_string(out, &key);
}

/// Upstream's `readIterV1`: a level's paths below it, and whether the element holding it is a
/// member (it has `"."`, or nothing below it).
fn read_level(v: &Value, at: &str) -> Result<(Option<Set>, bool), FieldsV1Error> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    // A null reads as an empty object, as upstream's reader takes it.
    let m = match v {
        Value::Object(m) => m,
        Value::Null => &*EMPTY,
        _ => {
            return Err(FieldsV1Error::NotAnObject {
                at: if at.is_empty() {
                    "root".into()
                } else {
                    at.into()
                },
                got: v.to_string(),
            });
        }
    };
    let mut children: Option<Set> = None;
    let mut is_member = false;
    for (key, sub) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let pe = match deserialize_path_element(key) {
            Ok(pe) => pe,
            Err(PathElementError::UnknownType) => continue,
            Err(PathElementError::Invalid(e)) => return Err(FieldsV1Error::PathElement(e)),
        };
        let (grandchildren, child_is_member) = read_level(sub, key)?;
        if child_is_member {
            children
                .get_or_insert_with(Set::new)
                .insert_member(pe.clone());
        }
        if let Some(g) = grandchildren {
            let c = children.get_or_insert_with(Set::new);
            let merged = c.with_prefix(&pe).union(&g);
            c.replace_child(pe, merged);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

impl Set {
    /// Sets the paths under `pe` to `child` (crate-internal: readers building a trie).
    pub(crate) fn replace_child(&mut self, pe: PathElement, child: Set) {
        self.children_mut().insert(pe, child);
    }
}
