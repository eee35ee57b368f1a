//! The schemas built lately, by content: a definition's schemas are built when its write is
//! validated, and again when the version is served (every replica takes the definition in
//! from its watch, and the writing replica then finds what its validation built). Compiling
//! a schema (its patterns and CEL rules) is its cost; with this cache, a definition version
//! is compiled once per replica, not at each of its writes, status updates and catch-ups.
//!
//! Bounded: [`ENTRIES`] schemas, least recently used first out. A schema is found by its
//! content (a hash over its JSON with object keys sorted, then equality), never by name, so
//! a definition that changes can never be served an older schema.

use std::{
    collections::VecDeque,
    hash::{Hash, Hasher},
    sync::{Arc, Mutex},
};

use serde_json::Value;

use super::Schema;

/// Schemas kept.
pub(super) const ENTRIES: usize = 16;

struct Entry {
    hash: u64,
    status: bool,
    json: Value,
    schema: Arc<Schema>,
}

static CACHE: Mutex<VecDeque<Entry>> = Mutex::new(VecDeque::new());

/// A hash of `v` that does not depend on the order of object keys.
pub(super) fn hash(v: &Value) -> u64 {
    fn feed(v: &Value, h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                for x in a {
                    feed(x, h);
                }
            }
            Value::Object(m) => {
                (5u8, m.len()).hash(h);
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_unstable();
                for k in keys {
                    k.hash(h);
                    feed(&m[k], h);
                }
            }
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
}

/// The schema built from `json` (with the status subresource or not), if it is held.
pub(super) fn get(hash: u64, status: bool, json: &Value) -> Option<Arc<Schema>> {
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let at = cache
        .iter()
        .position(|e| e.hash == hash && e.status == status && &e.json == json)?;
    let entry = cache.remove(at)?;
    let schema = entry.schema.clone();
    cache.push_front(entry);
    Some(schema)
}

/// Keeps `schema`, built from `json`.
pub(super) fn put(hash: u64, status: bool, json: Value, schema: Arc<Schema>) {
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache
        .iter()
        .any(|e| e.hash == hash && e.status == status && e.json == json)
    {
        return;
    }
    cache.push_front(Entry {
        hash,
        status,
        json,
        schema,
    });
    cache.truncate(ENTRIES);
}
