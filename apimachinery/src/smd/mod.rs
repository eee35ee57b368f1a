//! Kubernetes' structured-merge-diff (`sigs.k8s.io/structured-merge-diff`): field sets, field
//! ownership and the merge server-side apply is built on.
//!
//! Server-side apply needs to know, for every field of an object, which managers set it, so
//! that an apply can claim what its configuration sets, conflict with what others own, and
//! remove what it stopped sending. That needs a schema-aware notion of "a field" (an
//! associative list's item is a field named by its keys, an atomic list is one field), sets of
//! them, their wire form in `metadata.managedFields`, and the merge itself. They live here, in
//! the shared crate, as a library of their own with no knowledge of the registry, one file per
//! upstream package:
//!
//! - [`value`]: the total order, equality and text forms of JSON values upstream uses;
//! - [`path`]: [`PathElement`] and [`Path`] (upstream's `fieldpath` elements);
//! - [`set`]: [`Set`] and [`ManagedFields`] (upstream's `fieldpath.Set`, `ManagedFields`);
//! - [`serialize`]: the `FieldsV1` JSON form of a set, byte for byte;
//! - [`schema`]: the schema model, from OpenAPI v3 or upstream's own schema format;
//! - [`typed`]: objects walked with their schema: field sets, validation, compare, merge,
//!   remove/extract;
//! - [`merge`]: the [`Updater`] (update and apply, conflicts, pruning).
//!
//! Manager ids are opaque strings here; the apiserver layer encodes manager, operation and
//! subresource into them.

pub mod merge;
pub mod path;
pub mod schema;
pub mod serialize;
pub mod set;
pub mod typed;
pub mod value;

#[cfg(test)]
mod tests;

pub use merge::{Conflict, Conflicts, MergeError, Updater};
pub use path::{Path, PathElement};
pub use schema::{Atom, ElementRelationship, ListType, MapType, ScalarKind, Schema, TypeRef};
pub use set::{ManagedFields, Set, VersionedSet};
pub use typed::{Comparison, ParseableType, ValidationError, ValidationErrors};
