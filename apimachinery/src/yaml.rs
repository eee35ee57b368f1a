//! YAML request bodies as JSON values, with the expansion of aliases bounded (CVE-2019-11253,
//! "billion laughs"): a 15 KB document of nested aliases expanded to ~1 GiB before this.
//!
//! go-yaml, which kube-apiserver decodes YAML with, refuses a document once most of what it
//! decodes comes from aliases (`document contains excessive aliasing`: above ~400,000 nodes, the
//! share allowed from aliases falls from 99% to 10%). serde's interface does not say which
//! nodes an alias replays, so the same bound is kept on what the input can account for: a
//! document without aliases decodes to at most one node per input byte and at most its own
//! bytes of text, so a document may decode to at most [`MAX_EXPANDED_NODES`] nodes and
//! [`MAX_EXPANDED_BYTES`] of text more than its length. Nodes are counted as they are built, so
//! a document past the bound is refused having built no more than the bound.

use std::{cell::Cell, fmt};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Nodes a document may decode to beyond one per byte of it (go-yaml's ~400,000).
pub const MAX_EXPANDED_NODES: usize = 400_000;

/// Bytes of text a document may decode to beyond its own length.
pub const MAX_EXPANDED_BYTES: usize = 4 << 20;

/// go-yaml's words for a document past the bound.
pub const EXCESSIVE_ALIASING: &str = "document contains excessive aliasing";

/// `input`, one YAML document, as a JSON value (as `serde_yaml_ng::from_slice` decodes it),
/// refused with [`EXCESSIVE_ALIASING`] past the bound.
pub fn to_json(input: &[u8]) -> Result<Value, serde_yaml_ng::Error> {
    let budget = Budget {
        nodes: Cell::new(input.len().saturating_add(MAX_EXPANDED_NODES)),
        bytes: Cell::new(input.len().saturating_add(MAX_EXPANDED_BYTES)),
    };
    Node(&budget).deserialize(serde_yaml_ng::Deserializer::from_slice(input))
}

/// What a document may still decode to.
struct Budget {
    nodes: Cell<usize>,
    bytes: Cell<usize>,
}

impl Budget {
    /// Counts one node carrying `text` bytes.
    fn take<E: de::Error>(&self, text: usize) -> Result<(), E> {
        let (nodes, bytes) = (self.nodes.get(), self.bytes.get());
        if nodes == 0 || bytes < text {
            return Err(E::custom(EXCESSIVE_ALIASING));
        }
        self.nodes.set(nodes - 1);
        self.bytes.set(bytes - text);
        Ok(())
    }
}

/// A JSON value, counted against the budget as it is built (serde_json's own `Value` visitor,
/// with the count).
#[derive(Clone, Copy)]
struct Node<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A map's key: a string, counted.
struct Key<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        let key = String::deserialize(d)?;
        self.0.take(key.len())?;
        Ok(key)
    }
}

use serde::Deserialize;

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.take(v.len())?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.0.take(v.len())?;
        Ok(Value::String(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.visit_none()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut members = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_decode_as_serde_yaml_decodes_them() {
        let doc = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: '1'}\ndata:\n  n: \"2\"\nlist: [1, -2, 2.5, true, null, ~]\nanchored: &a {k: v}\nalias: *a\n";
        let want: Value = serde_yaml_ng::from_slice(doc).expect("serde_yaml decodes");
        assert_eq!(to_json(doc).expect("decodes"), want);
        assert_eq!(want["alias"], serde_json::json!({"k": "v"}));
        assert_eq!(
            to_json(b"{\"json\": [1, 2]}").expect("JSON is YAML")["json"][1],
            2
        );
    }

    /// A 10-level "billion laughs" of 10 aliases each (1e10 nodes expanded) is refused (by
    /// serde_yaml's own count of alias jumps, or by the count of nodes, whichever comes first).
    #[test]
    fn nested_aliases_are_refused() {
        let mut doc = String::from("a0: &a0 [\"lol\"]\n");
        for i in 1..10 {
            let prev = format!("*a{}", i - 1);
            doc.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                [prev.as_str(); 10].join(", ")
            ));
        }
        assert!(to_json(doc.as_bytes()).is_err());
    }

    /// A wide anchor aliased a few hundred times: few alias jumps (serde_yaml's own bound lets
    /// them through), 600,000 nodes from a 7 KB document; refused by the count of nodes.
    #[test]
    fn a_wide_anchor_aliased_many_times_is_refused() {
        let mut doc = format!("a: &a [{}]\nb: [", vec!["1"; 2000].join(","));
        doc.push_str(&vec!["*a"; 300].join(","));
        doc.push_str("]\n");
        let e = to_json(doc.as_bytes()).expect_err("refused");
        assert!(e.to_string().contains(EXCESSIVE_ALIASING), "{e}");
    }

    /// Aliases of one long string: few nodes, many bytes; refused by the byte count.
    #[test]
    fn aliases_of_long_text_are_refused() {
        let mut doc = format!("s: &s \"{}\"\nl: [", "x".repeat(64 * 1024));
        doc.push_str(&vec!["*s"; 100].join(", "));
        doc.push_str("]\n");
        let e = to_json(doc.as_bytes()).expect_err("refused");
        assert!(e.to_string().contains(EXCESSIVE_ALIASING), "{e}");
    }

    /// What a Helm chart does with anchors (shared labels reused) passes.
    #[test]
    fn moderate_alias_use_passes() {
        let mut doc = String::from("labels: &l {app: web, tier: front, team: a}\nitems:\n");
        for i in 0..200 {
            doc.push_str(&format!("- {{name: n{i}, labels: *l}}\n"));
        }
        let v = to_json(doc.as_bytes()).expect("decodes");
        assert_eq!(v["items"][199]["labels"]["tier"], "front");
    }
}
