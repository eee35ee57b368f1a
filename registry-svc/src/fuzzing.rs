//! Entry points for fuzzing registry-svc's own parsers of client text (selectors, quantities):
//! each panics when a property that must hold for any input does not. Driven by cargo-fuzz
//! targets in `fuzz/` and, in CI, by `tests/tests/fuzz_smoke.rs` over the seed corpus.

use crate::{
    kinds::pod::PodStrategy,
    quantity::Quantity,
    selectors::{self, parse_fields, parse_labels},
    strategy::Strategy,
};

/// A label selector: parses or not, never panics.
pub fn label_selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_labels(s);
}

/// A field selector, alone and against the Pod kind's selectable fields, with a label selector
/// from the same bytes.
pub fn field_selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_fields(s);
    let (labels, fields) = s.split_once('\n').unwrap_or(("", s));
    let _ = selectors::parse(labels, fields, PodStrategy.selectable_fields(), &[]);
}

/// A resource quantity (`100m`, `1Gi`, `1e3`): parses or not; a parsed one adds to itself
/// without overflow and keeps its sign.
pub fn quantity(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = Quantity::parse(s) {
        let doubled = q.saturating_add(q);
        assert_eq!(doubled.is_positive(), q.is_positive(), "{s:?}");
    }
}
