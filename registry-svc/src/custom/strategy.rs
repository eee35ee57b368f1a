//! The strategy of one served version of a custom kind (upstream's
//! `pkg/registry/customresource` strategy): generation follows everything but metadata (and
//! status, with the status subresource), the status subresource splits writes as for Pods, no
//! graceful deletion, and every write is validated against the version's schema.
//!
//! Pruning and defaulting of what a client sends happen before the Store (`crate::grpc::custom`, `catalog::custom`),
//! in upstream's order (decode, prune, default, then the Store's hooks and validation). What
//! is read from storage is pruned and defaulted by the schema too (upstream's decoder does it
//! to everything it reads: a field removed from the schema is no longer served, nor compared):
//! where it goes out (`catalog::custom`'s `give_out`, the List pass-through), and here, on the stored
//! object an update compares and validates against ([`CustomStrategy::read`]). It is not done
//! in `default_object`, on every decode: the objects going out are parsed once, where they
//! are written for the client.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::{
    custom::{
        object::{CustomObject, metadata_json},
        openapi::Schema,
    },
    strategy::Strategy,
    violations::Violations,
};

/// One served version of a custom kind.
pub struct CustomStrategy {
    /// Objects live in a namespace.
    pub namespaced: bool,
    /// The version's schema.
    pub schema: Arc<Schema>,
    /// The version has the status subresource.
    pub status: bool,
    /// The version's `selectableFields`, as field selectors storage reads in the JSON.
    pub json_fields: Vec<crate::selectors::JsonField>,
    /// The version's structured-merge-diff type (`managed::types::custom`); None: objects
    /// keep no managed fields and cannot be applied.
    pub fields: Option<Arc<kubestore_apimachinery::smd::ParseableType>>,
}

impl CustomStrategy {
    fn content(obj: &CustomObject) -> Map<String, Value> {
        obj.content().unwrap_or_default()
    }

    /// A stored object's content as it reads: pruned and defaulted by the schema.
    fn read(&self, stored: &CustomObject) -> Map<String, Value> {
        let mut content = Self::content(stored);
        self.schema.read(stored.schema, &mut content);
        content
    }

    /// The whole object as JSON, for the schema (`stored`: read from storage, as it reads).
    fn json(&self, obj: &CustomObject, stored: bool) -> Value {
        let content = if stored {
            self.read(obj)
        } else {
            Self::content(obj)
        };
        let mut m = content;
        match metadata_json(obj.metadata.as_ref()) {
            Ok(meta) => {
                m.insert("metadata".into(), meta);
                Value::Object(m)
            }
            Err(_) => Value::Null,
        }
    }

    fn validate_object(&self, obj: &CustomObject, old: Option<&CustomObject>) -> Violations {
        let validate = || -> Violations {
            let old = old.map(|o| self.json(o, true));
            self.schema
                .validate_update(&self.json(obj, false), old.as_ref())
                .into_iter()
                .collect()
        };
        // CEL rules may take up to the per-request budget (about a second), and the schema
        // walk of a large object milliseconds: neither runs on an async worker.
        let bytes = obj.content.len() + old.map_or(0, |o| o.content.len());
        // Objects of at least `offload::INLINE_BYTES` of JSON (with the old one), and every object
        // of a schema with rules, are validated off the async workers.
        if !self.schema.has_rules() && bytes < crate::offload::INLINE_BYTES {
            return validate();
        }
        crate::offload::violations(validate)
    }
}

/// `content` without its status (when the status subresource splits it off).
fn without_status(mut content: Map<String, Value>, status: bool) -> Map<String, Value> {
    if status {
        content.remove("status");
    }
    content
}

impl Strategy<CustomObject> for CustomStrategy {
    fn namespace_scoped(&self) -> bool {
        self.namespaced
    }

    fn prepare_for_create(&self, obj: &mut CustomObject) {
        if self.status {
            let content = without_status(Self::content(obj), true);
            let _ = obj.set_content(content);
        }
        // Taken in (`catalog::custom`'s `take_in`): pruned and defaulted by this version's schema.
        obj.schema = self.schema.fingerprint();
        obj.metadata.get_or_insert_with(Default::default).generation = 1;
    }

    fn validate(&self, obj: &CustomObject) -> Violations {
        self.validate_object(obj, None)
    }

    fn allow_unconditional_update(&self) -> bool {
        // Upstream's customResourceStrategy: updates without resourceVersion are refused.
        false
    }

    fn field_type(&self) -> Option<Arc<kubestore_apimachinery::smd::ParseableType>> {
        self.fields.clone()
    }

    fn prepare_for_update(&self, new: &mut CustomObject, old: &CustomObject) {
        let mut content = Self::content(new);
        let old_content = self.read(old);
        if self.status {
            match old_content.get("status") {
                Some(s) => content.insert("status".into(), s.clone()),
                None => content.remove("status"),
            };
            let _ = new.set_content(content.clone());
        }
        // The request's content was taken in by this schema, the old status read by it.
        new.schema = self.schema.fingerprint();
        let generation = old.metadata.as_ref().map_or(0, |m| m.generation);
        let changed =
            without_status(content, self.status) != without_status(old_content, self.status);
        new.metadata.get_or_insert_with(Default::default).generation =
            if changed { generation + 1 } else { generation };
    }

    fn validate_update(&self, new: &CustomObject, old: &CustomObject) -> Violations {
        self.validate_object(new, Some(old))
    }

    fn has_status(&self) -> bool {
        self.status
    }

    fn json_fields(&self) -> Vec<crate::selectors::JsonField> {
        self.json_fields.clone()
    }

    fn prepare_for_status_update(&self, new: &mut CustomObject, old: &CustomObject) {
        // Upstream's statusStrategy: the old object with the new status.
        let status = Self::content(new).remove("status");
        let mut content = self.read(old);
        match status {
            Some(s) => content.insert("status".into(), s),
            None => content.remove("status"),
        };
        *new = old.clone();
        let _ = new.set_content(content);
        new.schema = self.schema.fingerprint();
    }

    fn validate_status_update(&self, new: &CustomObject, old: &CustomObject) -> Violations {
        self.validate_object(new, Some(old))
    }
}
