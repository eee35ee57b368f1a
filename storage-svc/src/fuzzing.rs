//! Entry points for fuzzing: each takes bytes as a client could send them and checks what must
//! hold for any input, panicking when it does not (a panic is what a fuzzer reports). They are
//! driven by cargo-fuzz targets in `fuzz/` (long runs, see RELIABILITY.md) and, in CI, by
//! `tests/tests/fuzz_smoke.rs` over the seed corpus in `fuzz/corpus/` plus mutations of it.

use kubestore_proto::storage::v1::Selector as SelectorProto;
use prost::Message;

use crate::{
    continuation,
    keys::{KeyPrefix, is_internal},
    object::{ScalarType, StoredObject, labels_of, scalar_at, with_resource_version},
    selector::Selector,
    state::parse_resource_version,
};

/// An object as the wire walker sees it: parse, stamp, labels, selected scalars.
pub fn object_wire(data: &[u8]) {
    let parsed = StoredObject::parse(data);
    let _ = labels_of(data);
    let _ = scalar_at(data, &[1, 1], ScalarType::String);
    let _ = scalar_at(data, &[2, 3, 4], ScalarType::Int);
    let _ = scalar_at(data, &[3, 1], ScalarType::Bool);
    if let Ok(p) = parsed {
        // The stored form stamped with a revision parses back, with that revision, and the
        // same metadata otherwise.
        let stamped = with_resource_version(&p.data, 42).expect("a stored form can be stamped");
        let again = StoredObject::parse(&stamped).expect("a stamped object parses");
        assert_eq!(again.meta.resource_version, "42");
        let mut meta = p.meta.clone();
        meta.resource_version = "42".into();
        assert_eq!(again.meta, meta);
        // The stored form survives stamping: exactly, when it has metadata (which parse puts
        // first, as key 0x0a); without, stamping adds an empty one, and it is stable from then.
        if p.data.first() == Some(&0x0a) {
            assert_eq!(again.data, p.data, "stamping keeps the stored form");
        } else {
            let restamped = with_resource_version(&again.data, 42).expect("stamps again");
            let third = StoredObject::parse(&restamped).expect("parses again");
            assert_eq!(third.data, again.data, "stamping is stable");
        }
    }
}

/// A caller's key: accepted keys stay under the prefix, with no dot segments, and can never
/// name storage's own keys.
pub fn key(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let prefix = KeyPrefix::new("/registry");
    for k in [prefix.etcd_key(s), prefix.etcd_prefix(s)]
        .into_iter()
        .flatten()
    {
        assert!(k.starts_with("/registry/"), "{k:?} escapes the prefix");
        assert!(
            !k.split('/').any(|seg| seg == ".." || seg == "."),
            "{k:?} has a dot segment"
        );
        assert!(!is_internal(k.as_bytes()), "{k:?} names an internal key");
    }
}

/// A continue token: what decodes re-encodes to the same, and any (revision, start) a list
/// could put in a token decodes back to itself.
pub fn continue_token(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data)
        && let Ok(c) = continuation::decode(s)
    {
        assert_eq!(
            continuation::decode(&continuation::encode(c.rv, &c.start)),
            Ok(c)
        );
    }
    if data.len() >= 8 {
        let rv = i64::from_le_bytes(data[..8].try_into().unwrap_or_default());
        let start = String::from_utf8_lossy(&data[8..]);
        if let Ok(c) = continuation::decode(&continuation::encode(rv, &start)) {
            assert_eq!((c.rv, c.start.as_str()), (rv, start.as_ref()));
        }
    }
}

/// A resourceVersion: accepted ones are decimal revisions that print back as sent (but for
/// leading zeros).
pub fn resource_version(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = parse_resource_version("/k", s) {
        assert!(v >= 0);
        let trimmed = s.trim_start_matches('0');
        let shown = if trimmed.is_empty() { "0" } else { trimmed };
        assert!(s.is_empty() || v.to_string() == shown, "{s:?} read as {v}");
    }
}

/// A storage selector (as a client sends it) evaluated on an object (as a client wrote it):
/// never a panic, however deep or odd either is.
pub fn selector(data: &[u8]) {
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let (sel, object) = data.split_at(split);
    let Ok(proto) = SelectorProto::decode(sel) else {
        return;
    };
    if let Ok(s) = Selector::from_proto("/k", Some(&proto)) {
        let _ = s.matches(object);
        let _ = s.matches(&[]);
    }
}
