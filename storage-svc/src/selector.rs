//! Selection of objects by label and field requirements, evaluated where pages are filled and
//! watch events decided, without knowing any kind (upstream's `SelectionPredicate`).
//!
//! The caller (registry-svc) parses selectors and names each selectable field by its path of
//! protobuf field numbers; here labels are read from `metadata.labels` and fields with the wire
//! walker of [`crate::object`]. An object that cannot be read never matches, as upstream drops
//! an item whose attributes it cannot get.

use std::collections::BTreeMap;

use kubestore_proto::storage::v1::{
    FieldRequirement, LabelRequirement, Selector as SelectorProto, field_requirement,
    label_requirement::Operator,
};

use crate::{
    error::StorageError,
    object::{ScalarType, labels_of, scalar_at},
};

/// Requirements and paths beyond these are refused: a selector is a handful of terms.
const MAX_REQUIREMENTS: usize = 64;
const MAX_PATH_LEN: usize = 16;
const MAX_VALUES: usize = 256;

/// One label requirement, validated.
#[derive(Debug, Clone)]
enum LabelTerm {
    Exists(String),
    DoesNotExist(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// One field requirement, validated.
#[derive(Debug, Clone)]
struct FieldTerm {
    path: Vec<u32>,
    /// Keys into the JSON the field at `path` holds (none: the field itself is the value).
    json: Vec<String>,
    ty: ScalarType,
    equals: bool,
    value: String,
}

/// A validated selector. The empty selector matches everything.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    labels: Vec<LabelTerm>,
    fields: Vec<FieldTerm>,
}

impl Selector {
    /// Validates a caller's selector; errors name what is wrong.
    pub fn from_proto(key: &str, proto: Option<&SelectorProto>) -> Result<Self, StorageError> {
        let Some(proto) = proto else {
            return Ok(Self::default());
        };
        let bad = |m: String| StorageError::invalid(key, format!("invalid selector: {m}"));
        if proto.labels.len() + proto.fields.len() > MAX_REQUIREMENTS {
            return Err(bad(format!(
                "at most {MAX_REQUIREMENTS} requirements, got {}",
                proto.labels.len() + proto.fields.len()
            )));
        }
        let labels = proto
            .labels
            .iter()
            .map(|r| label_term(r).map_err(bad))
            .collect::<Result<_, _>>()?;
        let fields = proto
            .fields
            .iter()
            .map(|r| field_term(r).map_err(bad))
            .collect::<Result<_, _>>()?;
        Ok(Self { labels, fields })
    }

    /// Whether every object matches (no requirement).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether the encoded `object` meets every requirement.
    pub fn matches(&self, object: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        for f in &self.fields {
            let value = if f.json.is_empty() {
                scalar_at(object, &f.path, f.ty)
            } else {
                scalar_at(object, &f.path, ScalarType::String)
                    .and_then(|json| json_scalar(&json, &f.json, f.ty))
            };
            match value {
                Some(v) if (v == f.value) == f.equals => {}
                _ => return false,
            }
        }
        if self.labels.is_empty() {
            return true;
        }
        let Ok(labels) = labels_of(object) else {
            return false;
        };
        self.labels.iter().all(|t| label_matches(t, &labels))
    }
}

fn label_term(r: &LabelRequirement) -> Result<LabelTerm, String> {
    let key = r.key.clone();
    if key.is_empty() {
        return Err("a label requirement has no key".into());
    }
    if r.values.len() > MAX_VALUES {
        return Err(format!("label {key:?}: at most {MAX_VALUES} values"));
    }
    let one = || match r.values.as_slice() {
        [v] => Ok(v.clone()),
        _ => Err(format!(
            "label {key:?}: exactly one value is required for this operator"
        )),
    };
    let int = || {
        one().and_then(|v| {
            v.parse::<i64>()
                .map_err(|_| format!("label {key:?}: {v:?} is not an integer"))
        })
    };
    let none = || {
        if r.values.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "label {key:?}: values are not allowed for this operator"
            ))
        }
    };
    let some = || {
        if r.values.is_empty() {
            Err(format!("label {key:?}: at least one value is required"))
        } else {
            Ok(r.values.clone())
        }
    };
    Ok(match Operator::try_from(r.operator) {
        Ok(Operator::Exists) => none().map(|()| LabelTerm::Exists(key.clone()))?,
        Ok(Operator::DoesNotExist) => none().map(|()| LabelTerm::DoesNotExist(key.clone()))?,
        Ok(Operator::Equals) => LabelTerm::In(key.clone(), vec![one()?]),
        Ok(Operator::NotEquals) => LabelTerm::NotIn(key.clone(), vec![one()?]),
        Ok(Operator::In) => LabelTerm::In(key.clone(), some()?),
        Ok(Operator::NotIn) => LabelTerm::NotIn(key.clone(), some()?),
        Ok(Operator::GreaterThan) => LabelTerm::GreaterThan(key.clone(), int()?),
        Ok(Operator::LessThan) => LabelTerm::LessThan(key.clone(), int()?),
        Ok(Operator::Unspecified) | Err(_) => {
            return Err(format!("label {key:?}: unknown operator {}", r.operator));
        }
    })
}

/// The value at `keys` in the JSON object `json`, rendered as `ty` reads it; a missing value
/// is the type's default, as for protobuf fields; a value of another type matches nothing.
fn json_scalar(json: &str, keys: &[String], ty: ScalarType) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(json).ok()?;
    for k in keys {
        match v.get_mut(k) {
            Some(x) => v = x.take(),
            None => return Some(ty.default_value().to_string()),
        }
    }
    match (ty, v) {
        (_, serde_json::Value::Null) => Some(ty.default_value().to_string()),
        (ScalarType::String, serde_json::Value::String(s)) => Some(s),
        (ScalarType::Bool, serde_json::Value::Bool(b)) => Some(b.to_string()),
        (ScalarType::Int, serde_json::Value::Number(n)) => n.as_i64().map(|i| i.to_string()),
        _ => None,
    }
}

fn field_term(r: &FieldRequirement) -> Result<FieldTerm, String> {
    if r.json_path.len() > MAX_PATH_LEN || r.json_path.iter().any(String::is_empty) {
        return Err(format!(
            "a JSON path must have at most {MAX_PATH_LEN} non-empty keys"
        ));
    }
    if r.path.is_empty() || r.path.len() > MAX_PATH_LEN {
        return Err(format!(
            "a field path must have 1 to {MAX_PATH_LEN} field numbers, got {}",
            r.path.len()
        ));
    }
    if let Some(n) = r.path.iter().find(|n| **n == 0 || **n > (1 << 29) - 1) {
        return Err(format!("{n} is not a protobuf field number"));
    }
    let ty = match field_requirement::Type::try_from(r.r#type) {
        Ok(field_requirement::Type::String) => ScalarType::String,
        Ok(field_requirement::Type::Bool) => ScalarType::Bool,
        Ok(field_requirement::Type::Int) => ScalarType::Int,
        Err(_) => return Err(format!("unknown field type {}", r.r#type)),
    };
    Ok(FieldTerm {
        path: r.path.clone(),
        json: r.json_path.clone(),
        ty,
        equals: r.equals,
        value: r.value.clone(),
    })
}

fn label_matches(term: &LabelTerm, labels: &BTreeMap<String, String>) -> bool {
    match term {
        LabelTerm::Exists(k) => labels.contains_key(k),
        LabelTerm::DoesNotExist(k) => !labels.contains_key(k),
        LabelTerm::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
        LabelTerm::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
        LabelTerm::GreaterThan(k, n) => labels
            .get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v > *n),
        LabelTerm::LessThan(k, n) => labels
            .get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v < *n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::{
        core::v1::{Pod, PodSpec},
        meta::v1::ObjectMeta,
    };
    use prost::Message;

    fn pod(labels: &[(&str, &str)], node: &str) -> Vec<u8> {
        Pod {
            metadata: Some(ObjectMeta {
                name: "p".into(),
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: node.into(),
                ..Default::default()
            }),
            status: None,
        }
        .encode_to_vec()
    }

    fn label(key: &str, op: Operator, values: &[&str]) -> LabelRequirement {
        LabelRequirement {
            key: key.into(),
            operator: op as i32,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn select(labels: Vec<LabelRequirement>, fields: Vec<FieldRequirement>) -> Selector {
        Selector::from_proto("/k", Some(&SelectorProto { labels, fields })).expect("valid")
    }

    #[test]
    fn label_operators_follow_upstream() {
        let p = pod(&[("app", "web"), ("tier", "3")], "");
        let yes = |l| select(vec![l], vec![]).matches(&p);
        assert!(yes(label("app", Operator::Exists, &[])));
        assert!(!yes(label("x", Operator::Exists, &[])));
        assert!(yes(label("x", Operator::DoesNotExist, &[])));
        assert!(yes(label("app", Operator::Equals, &["web"])));
        assert!(!yes(label("app", Operator::NotEquals, &["web"])));
        // != and notin match when the key is absent.
        assert!(yes(label("x", Operator::NotEquals, &["web"])));
        assert!(yes(label("x", Operator::NotIn, &["a"])));
        assert!(yes(label("app", Operator::In, &["db", "web"])));
        assert!(!yes(label("app", Operator::NotIn, &["db", "web"])));
        assert!(yes(label("tier", Operator::GreaterThan, &["2"])));
        assert!(!yes(label("tier", Operator::LessThan, &["3"])));
        // A non-integer label value never matches gt/lt.
        assert!(!yes(label("app", Operator::GreaterThan, &["0"])));
    }

    #[test]
    fn fields_compare_by_path_and_missing_is_default() {
        let p = pod(&[], "n1");
        let f = |path: &[u32], equals, value: &str| FieldRequirement {
            path: path.to_vec(),
            r#type: field_requirement::Type::String as i32,
            equals,
            value: value.into(),
            json_path: Vec::new(),
        };
        assert!(select(vec![], vec![f(&[2, 2], true, "n1")]).matches(&p));
        assert!(!select(vec![], vec![f(&[2, 2], false, "n1")]).matches(&p));
        assert!(select(vec![], vec![f(&[3, 1], true, "")]).matches(&p));
        assert!(select(vec![], vec![f(&[3, 1], false, "Running")]).matches(&p));
        // Every requirement must hold.
        assert!(
            !select(
                vec![label("app", Operator::Exists, &[])],
                vec![f(&[2, 2], true, "n1")]
            )
            .matches(&p)
        );
        assert!(!select(vec![], vec![f(&[2, 2], true, "n1")]).matches(&[0x0a, 0x09]));
    }

    #[test]
    fn malformed_selectors_are_invalid() {
        let bad = [
            SelectorProto {
                labels: vec![label("", Operator::Exists, &[])],
                fields: vec![],
            },
            SelectorProto {
                labels: vec![label("a", Operator::Equals, &["1", "2"])],
                fields: vec![],
            },
            SelectorProto {
                labels: vec![label("a", Operator::GreaterThan, &["x"])],
                fields: vec![],
            },
            SelectorProto {
                labels: vec![label("a", Operator::In, &[])],
                fields: vec![],
            },
            SelectorProto {
                labels: vec![label("a", Operator::Unspecified, &[])],
                fields: vec![],
            },
            SelectorProto {
                labels: vec![],
                fields: vec![FieldRequirement {
                    path: vec![0],
                    ..Default::default()
                }],
            },
            SelectorProto {
                labels: vec![],
                fields: vec![FieldRequirement::default()],
            },
        ];
        for b in bad {
            assert!(Selector::from_proto("/k", Some(&b)).is_err(), "{b:?}");
        }
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;
    use kubestore_proto::storage::v1::field_requirement::Type;

    #[test]
    fn json_fields_are_read_from_the_content_field() {
        // Field 2 (bytes): a custom object's JSON content.
        let mut object = Vec::new();
        prost::encoding::bytes::encode(
            2,
            &br#"{"spec":{"color":"blue","size":3,"on":true}}"#.to_vec(),
            &mut object,
        );
        let term = |keys: &[&str], ty: Type, value: &str| FieldRequirement {
            path: vec![2],
            r#type: ty as i32,
            equals: true,
            value: value.into(),
            json_path: keys.iter().map(|k| k.to_string()).collect(),
        };
        let select = |f: FieldRequirement| {
            Selector::from_proto(
                "/k",
                Some(&SelectorProto {
                    labels: vec![],
                    fields: vec![f],
                }),
            )
            .expect("valid")
        };
        assert!(select(term(&["spec", "color"], Type::String, "blue")).matches(&object));
        assert!(!select(term(&["spec", "color"], Type::String, "red")).matches(&object));
        assert!(select(term(&["spec", "size"], Type::Int, "3")).matches(&object));
        assert!(select(term(&["spec", "on"], Type::Bool, "true")).matches(&object));
        assert!(select(term(&["spec", "missing"], Type::String, "")).matches(&object));
        assert!(!select(term(&["spec", "size"], Type::String, "3")).matches(&object));
    }
}
