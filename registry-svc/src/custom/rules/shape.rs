//! The size model of cost estimation: what the estimator knows of a value it cannot see.
//!
//! A [`Bound`] holds upper bounds: CEL's `size()` of the value (characters of a string, bytes,
//! items of a list, entries of a map; 1 for a scalar), the bounds of its items, keys, values
//! and named fields, and what the `cel` crate spends to copy or compare it. Which kinds of
//! value it may be is a set, so that `c ? 'a' : [1]` is still bounded.
//!
//! Bounds come from two places:
//! - the schema (`custom::openapi::costs::bound`), for the estimate of a definition's rules when it is
//!   written: upstream's `SchemaDeclType` sizes (`maxLength` x 4, `maxItems`, `maxProperties`,
//!   else what fits in upstream's 3 MiB request, `MaxRequestSizeBytes`);
//! - the value itself ([`Bound::of_json`]), for the bound charged before each evaluation.

use std::{collections::BTreeMap, sync::Arc, sync::LazyLock};

use serde_json::Value;

/// A value's share of a [`Bound::weight`] (its bytes count 1 each): comparing or hashing a
/// value takes about half of a cost unit's 50 ns, a byte about a hundredth.
pub(crate) const VALUE_WEIGHT: u64 = 50;

/// Upstream's `MaxRequestSizeBytes`: the request size unbounded schemas are sized by.
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// What a value may be (a set of these bits).
pub(crate) mod kind {
    /// null, bool, int, uint, double, type.
    pub(crate) const SCALAR: u8 = 1;
    /// string.
    pub(crate) const STRING: u8 = 2;
    /// bytes.
    pub(crate) const BYTES: u8 = 4;
    /// list.
    pub(crate) const LIST: u8 = 8;
    /// map (a JSON object, with or without declared fields).
    pub(crate) const MAP: u8 = 16;
    /// Any of them.
    pub(crate) const ANY: u8 = SCALAR | STRING | BYTES | LIST | MAP;
}

/// Upper bounds of a value.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    /// The kinds it may be ([`kind`] bits).
    pub(crate) kinds: u8,
    /// CEL `size()`: characters, bytes, items or entries (1 for a scalar).
    pub(crate) size: u64,
    /// Bytes of a string or bytes value, at most.
    pub(crate) bytes: u64,
    /// Bounds of a list's items (None: it has none).
    pub(crate) items: Option<Arc<Bound>>,
    /// Bounds of a map's keys.
    pub(crate) keys: Option<Arc<Bound>>,
    /// Bounds of the value of any key of a map (`additionalProperties`, or all values).
    pub(crate) values: Option<Arc<Bound>>,
    /// Bounds of the values of named keys (`properties`).
    pub(crate) fields: Arc<BTreeMap<String, Arc<Bound>>>,
    /// Whether keys the bound does not describe may be present, holding anything.
    pub(crate) open: bool,
    /// What a deep comparison of it reads, at most, in hundredths of a cost unit: half a unit
    /// per value ([`VALUE_WEIGHT`]), a hundredth per byte of its strings and keys.
    pub(crate) weight: u64,
    /// What copying it costs in the `cel` crate (cost units: a box per value, a tenth per byte
    /// of an owned string).
    pub(crate) copy: u64,
}

static UNKNOWN: LazyLock<Arc<Bound>> = LazyLock::new(|| {
    Arc::new(Bound {
        kinds: kind::ANY,
        size: u64::MAX,
        bytes: u64::MAX,
        items: None,
        keys: None,
        values: None,
        fields: Arc::default(),
        open: true,
        weight: u64::MAX,
        copy: u64::MAX,
    })
});

static SCALAR: LazyLock<Arc<Bound>> =
    LazyLock::new(|| Arc::new(Bound::leaf(kind::SCALAR, 1, 0, 0)));

/// `x * f` rounded up, for the fractional cost factors of upstream's model (`0.1` per
/// character traversed, `0.25` per regular expression character), without overflow.
pub(crate) fn factor(x: u64, numerator: u64, denominator: u64) -> u64 {
    let whole = (x / denominator).saturating_mul(numerator);
    let rest = (x % denominator) * numerator;
    whole.saturating_add(rest.div_ceil(denominator))
}

impl Bound {
    /// Nothing is known: every size is unbounded.
    pub(crate) fn unknown() -> Arc<Bound> {
        UNKNOWN.clone()
    }

    /// A scalar (also what an expression that can only fail is given).
    pub(crate) fn scalar() -> Arc<Bound> {
        SCALAR.clone()
    }

    pub(crate) fn leaf(kinds: u8, size: u64, bytes: u64, owned_bytes: u64) -> Bound {
        Bound {
            kinds,
            size,
            bytes,
            items: None,
            keys: None,
            values: None,
            fields: Arc::default(),
            open: false,
            weight: VALUE_WEIGHT.saturating_add(bytes),
            copy: 1u64.saturating_add(factor(owned_bytes, 1, 10)),
        }
    }

    /// A string of at most `chars` characters and `bytes` bytes; `owned`: whether a copy
    /// duplicates its bytes (a string borrowed from the object being validated is copied by
    /// reference).
    pub(crate) fn string(chars: u64, bytes: u64, owned: bool) -> Arc<Bound> {
        Arc::new(Bound::leaf(
            kind::STRING,
            chars,
            bytes,
            if owned { bytes } else { 0 },
        ))
    }

    /// Bytes, at most `len` of them, all owned.
    pub(crate) fn bytes(len: u64) -> Arc<Bound> {
        Arc::new(Bound::leaf(kind::BYTES, len, len, len))
    }

    /// A list of at most `len` items bounded by `items`.
    pub(crate) fn list(len: u64, items: Option<Arc<Bound>>) -> Arc<Bound> {
        let (weight, copy) = match &items {
            Some(i) => (
                VALUE_WEIGHT.saturating_add(len.saturating_mul(i.weight)),
                1u64.saturating_add(len.saturating_mul(i.copy)),
            ),
            None => (VALUE_WEIGHT, 1),
        };
        Arc::new(Bound {
            kinds: kind::LIST,
            size: len,
            bytes: 0,
            items,
            keys: None,
            values: None,
            fields: Arc::default(),
            open: false,
            weight,
            copy,
        })
    }

    /// A map of at most `len` entries.
    pub(crate) fn map(
        len: u64,
        keys: Option<Arc<Bound>>,
        values: Option<Arc<Bound>>,
        fields: BTreeMap<String, Arc<Bound>>,
        open: bool,
    ) -> Arc<Bound> {
        let mut weight = VALUE_WEIGHT;
        let mut copy = 1u64;
        let per_key = |b: &Option<Arc<Bound>>, f: fn(&Bound) -> u64| b.as_ref().map_or(0, |b| f(b));
        // Every entry is a key and a value: named fields are counted once each, the rest of
        // `len` by the bound of any value.
        let named = fields.len() as u64;
        for (k, b) in fields.iter() {
            weight = weight
                .saturating_add(b.weight)
                .saturating_add(VALUE_WEIGHT + k.len() as u64);
            copy = copy.saturating_add(b.copy).saturating_add(1);
        }
        let other = len.saturating_sub(named);
        weight = weight.saturating_add(other.saturating_mul(
            per_key(&values, |b| b.weight).saturating_add(per_key(&keys, |b| b.weight)),
        ));
        copy = copy.saturating_add(
            len.saturating_mul(per_key(&keys, |b| b.copy))
                .saturating_add(other.saturating_mul(per_key(&values, |b| b.copy))),
        );
        Arc::new(Bound {
            kinds: kind::MAP,
            size: len,
            bytes: 0,
            items: None,
            keys,
            values,
            fields: Arc::new(fields),
            open,
            weight: if open { u64::MAX } else { weight },
            copy: if open { u64::MAX } else { copy },
        })
    }

    /// Whether the value may be of kind `k`.
    pub(crate) fn may_be(&self, k: u8) -> bool {
        self.kinds & k != 0
    }

    /// The bound of an item of a list.
    pub(crate) fn item(&self) -> Arc<Bound> {
        match &self.items {
            Some(i) => i.clone(),
            None if self.open => Bound::unknown(),
            None => Bound::scalar(),
        }
    }

    /// The bound of a key of a map.
    pub(crate) fn key(&self) -> Arc<Bound> {
        match &self.keys {
            Some(k) => k.clone(),
            None if self.open => Bound::unknown(),
            None => Bound::scalar(),
        }
    }

    /// What a comprehension over the value binds its variable to: a list's items, a map's
    /// keys.
    pub(crate) fn iterated(&self) -> Arc<Bound> {
        match (self.may_be(kind::LIST), self.may_be(kind::MAP)) {
            (true, true) => union(&self.item(), &self.key()),
            (true, false) => self.item(),
            (false, true) => self.key(),
            // Not iterable: the evaluation fails before any iteration.
            (false, false) => Bound::scalar(),
        }
    }

    /// The bound of `self['name']`.
    pub(crate) fn field(&self, name: &str) -> Arc<Bound> {
        self.select(name, false)
    }

    /// The bound of `self.name`; `pathless`: as upstream's estimator sees a map's value
    /// selected by name, which it cannot follow in the schema (its sizes are those of its type
    /// alone: a scalar's 1, anything else's unbounded).
    pub(crate) fn select(&self, name: &str, pathless: bool) -> Arc<Bound> {
        if let Some(f) = self.fields.get(name) {
            return f.clone();
        }
        match &self.values {
            Some(v) if pathless => without_path(v),
            Some(v) => v.clone(),
            None if self.open => Bound::unknown(),
            // Absent: the selection fails.
            None => Bound::scalar(),
        }
    }

    /// The bound of the value of any key (`self[k]` for a key only known at run time).
    pub(crate) fn any_value(&self) -> Arc<Bound> {
        let mut out = self.values.clone();
        for f in self.fields.values() {
            out = Some(match out {
                Some(o) => union(&o, f),
                None => f.clone(),
            });
        }
        match out {
            Some(o) if !self.open => o,
            _ if self.open => Bound::unknown(),
            _ => Bound::scalar(),
        }
    }

    /// The bound of a value indexed by `index`: a list's item or a map's value.
    pub(crate) fn indexed(&self, literal_key: Option<&str>) -> Arc<Bound> {
        let from_map = || match literal_key {
            Some(k) => self.field(k),
            None => self.any_value(),
        };
        match (self.may_be(kind::LIST), self.may_be(kind::MAP)) {
            (true, true) => union(&self.item(), &from_map()),
            (true, false) => self.item(),
            (false, true) => from_map(),
            (false, false) => Bound::scalar(),
        }
    }
}

fn union_opt(a: &Option<Arc<Bound>>, b: &Option<Arc<Bound>>) -> Option<Arc<Bound>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(union(a, b)),
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (None, None) => None,
    }
}

/// A bound of either value.
pub(crate) fn union(a: &Arc<Bound>, b: &Arc<Bound>) -> Arc<Bound> {
    if Arc::ptr_eq(a, b) {
        return a.clone();
    }
    if a.size == u64::MAX && a.kinds == kind::ANY && a.open {
        return a.clone();
    }
    if b.size == u64::MAX && b.kinds == kind::ANY && b.open {
        return b.clone();
    }
    let mut fields = (*a.fields).clone();
    for (k, v) in b.fields.iter() {
        let merged = match fields.get(k) {
            Some(x) => union(x, v),
            None => v.clone(),
        };
        fields.insert(k.clone(), merged);
    }
    Arc::new(Bound {
        kinds: a.kinds | b.kinds,
        size: a.size.max(b.size),
        bytes: a.bytes.max(b.bytes),
        items: union_opt(&a.items, &b.items),
        keys: union_opt(&a.keys, &b.keys),
        values: union_opt(&a.values, &b.values),
        fields: Arc::new(fields),
        open: a.open || b.open,
        weight: a.weight.max(b.weight),
        copy: a.copy.max(b.copy),
    })
}

/// `b` as upstream's estimator sizes a value whose schema path it lost: by type only.
fn without_path(b: &Arc<Bound>) -> Arc<Bound> {
    if b.kinds == kind::SCALAR {
        return Bound::scalar();
    }
    let map = |x: &Option<Arc<Bound>>| x.as_ref().map(without_path);
    Arc::new(Bound {
        kinds: b.kinds,
        size: u64::MAX,
        bytes: u64::MAX,
        items: map(&b.items),
        keys: map(&b.keys),
        values: map(&b.values),
        fields: Arc::new(
            b.fields
                .iter()
                .map(|(k, v)| (k.clone(), without_path(v)))
                .collect(),
        ),
        open: b.open,
        weight: u64::MAX,
        copy: u64::MAX,
    })
}

/// Values of `v`, itself included: what a copy of it makes (its strings are borrowed).
pub(crate) fn json_values(v: &Value) -> u64 {
    match v {
        Value::Array(a) => 1u64.saturating_add(a.iter().map(json_values).sum::<u64>()),
        Value::Object(m) => 1u64.saturating_add(
            m.values()
                .map(|x| json_values(x).saturating_add(1))
                .sum::<u64>(),
        ),
        _ => 1,
    }
}

/// What a deep comparison of `v` reads, as [`Bound::weight`].
pub(crate) fn json_weight(v: &Value) -> u64 {
    match v {
        Value::String(s) => VALUE_WEIGHT + s.len() as u64,
        Value::Array(a) => VALUE_WEIGHT.saturating_add(a.iter().map(json_weight).sum::<u64>()),
        Value::Object(m) => VALUE_WEIGHT.saturating_add(
            m.iter()
                .map(|(k, x)| json_weight(x).saturating_add(VALUE_WEIGHT + k.len() as u64))
                .sum::<u64>(),
        ),
        _ => VALUE_WEIGHT,
    }
}

impl Bound {
    /// The exact sizes of `v`, as a bound: a list's items are bounded by the largest of each
    /// size among them. (Strings of the object are borrowed by the evaluation, so copying one
    /// costs a box, not its bytes.)
    pub(crate) fn of_json(v: &Value) -> Arc<Bound> {
        match v {
            Value::String(s) => Bound::string(s.chars().count() as u64, s.len() as u64, false),
            Value::Array(a) => {
                let mut items: Option<Arc<Bound>> = None;
                for x in a {
                    let b = Bound::of_json(x);
                    items = Some(match items {
                        Some(i) => union(&i, &b),
                        None => b,
                    });
                }
                Bound::list(a.len() as u64, items)
            }
            Value::Object(m) => {
                let mut fields = BTreeMap::new();
                let mut keys = 0u64;
                for (k, x) in m {
                    keys = keys.max(k.chars().count() as u64);
                    fields.insert(k.clone(), Bound::of_json(x));
                }
                let keys = (!m.is_empty()).then(|| Bound::string(keys, keys * 4, false));
                Bound::map(m.len() as u64, keys, None, fields, false)
            }
            _ => Bound::scalar(),
        }
    }
}

/// Upstream's `maxCardinality`: how many values of the given shortest JSON size fit in one
/// request.
pub(crate) fn max_cardinality(min_size: u64) -> u64 {
    MAX_REQUEST_SIZE_BYTES / (min_size + 1)
}
