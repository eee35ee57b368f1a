//! Built-in kinds in the catalog: their objects in Kubernetes JSON through the
//! descriptor-driven codec (`kubestore_apimachinery::json`), one [`Shape`] for every built-in
//! kind, and [`register`], what discovery says of a kind from its `Resource` constants and
//! strategy.
//!
//! A kind may also be served in a second version ([`Version`], [`register_version`]: upstream's
//! `events.k8s.io/v1` Event beside core `v1`): its own endpoint, over the same objects, whose
//! shape converts each object between the version's message and the stored one, as upstream's
//! conversion functions do. Storage holds one version only, so both read the same objects.
//!
//! Objects come in as JSON values: their `apiVersion` and `kind` are checked against the
//! endpoint's, fields the message does not have are reported per `fieldValidation`, and the
//! rest is encoded with the descriptors and decoded into `R`. Objects go out as storage holds
//! them, written as JSON straight from their encoding (kinds with read defaults or a decorator
//! are decoded first, as on the typed path).

use std::{marker::PhantomData, sync::Arc};

use bytes::Bytes;
use kubestore_apimachinery::{descriptors::Descriptors, json::Codec, table::Column};
use serde_json::Value;

use super::{
    Catalog, FieldValidation, Json, ResourceInfo,
    endpoint::{Shape, StoreEndpoint},
};
use crate::{error::ApiError, resource::Resource, store::Store};

/// A version a built-in kind is served in, and how its objects convert to and from the stored
/// message `R` (upstream's `Convert_*` pair of a group version).
pub trait Version<R: Resource>: Send + Sync + 'static {
    /// The version's API group and version (`events.k8s.io`, `v1`).
    const GROUP: &'static str;
    /// See `GROUP`.
    const VERSION: &'static str;
    /// Whether objects are converted; false only for [`Stored`], whose objects are served as
    /// storage's bytes without decoding.
    const CONVERTS: bool = true;
    /// The version's proto message, `.events.v1.Event`.
    fn message() -> String;
    /// An object of this version, encoded, as the stored message.
    fn decode(bytes: &[u8]) -> Result<R, prost::DecodeError>;
    /// A stored object, encoded as this version's message.
    fn encode(obj: &R) -> Vec<u8>;
}

/// The version a kind is stored in: no conversion.
pub struct Stored;

impl<R: Resource> Version<R> for Stored {
    const GROUP: &'static str = R::GROUP;
    const VERSION: &'static str = "v1";
    const CONVERTS: bool = false;
    fn message() -> String {
        R::message_name()
    }
    fn decode(bytes: &[u8]) -> Result<R, prost::DecodeError> {
        R::decode(bytes)
    }
    fn encode(obj: &R) -> Vec<u8> {
        obj.encode_to_vec()
    }
}

/// A built-in kind's objects as Kubernetes JSON, in version `V`.
pub struct BuiltinShape<R: Resource, V: Version<R> = Stored> {
    codec: Arc<Codec>,
    message: String,
    api_version: String,
    kind: String,
    version: String,
    strategy: Arc<dyn crate::strategy::Strategy<R>>,
    _kind: PhantomData<fn() -> (R, V)>,
}

impl<R: Resource, V: Version<R>> BuiltinShape<R, V> {
    fn encoded_to_json(&self, bytes: &[u8]) -> Result<Json, ApiError> {
        self.codec
            .encode_to_vec(&self.message, bytes, Some((&self.api_version, &self.kind)))
            .map(Bytes::from)
            .map_err(|e| ApiError::Internal(format!("{} as JSON: {e}", self.kind)))
    }
}

/// Refuses a body whose `apiVersion` or `kind` names another resource (upstream's decoder
/// checks both against the URL's).
pub(crate) fn check_type_meta(body: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    if let Some(v) = body.get("apiVersion")
        && v.as_str() != Some(api_version)
    {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({}) does not match the expected API version ({api_version})",
            v.as_str().unwrap_or_default()
        )));
    }
    if let Some(k) = body.get("kind")
        && k.as_str() != Some(kind)
    {
        return Err(ApiError::BadRequest(format!(
            "the kind in the data ({}) does not match the expected kind ({kind})",
            k.as_str().unwrap_or_default()
        )));
    }
    Ok(())
}

/// Unknown fields as `fieldValidation` says: refused (Strict: upstream's
/// `{Kind} in version "v1" cannot be handled as a {Kind}: strict decoding error: ...`), warned
/// about (Warn), dropped (Ignore).
pub(crate) fn unknown_fields(
    unknown: Vec<String>,
    validation: FieldValidation,
    kind: &str,
    version: &str,
) -> Result<Vec<String>, ApiError> {
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let described: Vec<String> = unknown
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    match validation {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(described),
        FieldValidation::Strict => Err(ApiError::BadRequest(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            described.join(", ")
        ))),
    }
}

impl<R: Resource, V: Version<R>> Shape<R> for BuiltinShape<R, V> {
    fn converts(&self) -> bool {
        V::CONVERTS
    }

    fn take_in(
        &self,
        body: Value,
        validation: FieldValidation,
    ) -> Result<(R, Vec<String>), ApiError> {
        let kind = &self.kind;
        if !body.is_object() {
            return Err(ApiError::BadRequest(format!(
                "{kind} in version \"{}\" cannot be handled as a {kind}: the object must be a JSON object",
                self.version
            )));
        }
        check_type_meta(&body, &self.api_version, kind)?;
        let mut unknown = Vec::new();
        let bytes = self
            .codec
            .decode(&self.message, &body, &["apiVersion", "kind"], &mut unknown)
            .map_err(|e| {
                ApiError::BadRequest(format!(
                    "{kind} in version \"{}\" cannot be handled as a {kind}: {}",
                    self.version, e.message
                ))
            })?;
        let warnings = unknown_fields(unknown, validation, kind, &self.version)?;
        let obj = V::decode(bytes.as_slice())
            .map_err(|e| ApiError::Internal(format!("{kind} from JSON does not decode: {e}")))?;
        Ok((obj, warnings))
    }

    fn give_out(&self, obj: &R) -> Result<Json, ApiError> {
        self.encoded_to_json(&V::encode(obj))
    }

    /// Storage's bytes written as JSON as they are, unless the kind has read defaults (then
    /// re-encoded only when defaulting changed something), decorates what it serves or is
    /// served in another version than it is stored in.
    fn served(&self, store: &Store<R>, bytes: &Bytes) -> Result<Json, ApiError> {
        if V::CONVERTS {
            let mut obj = store.decode(bytes)?;
            self.strategy.decorate(&mut obj);
            return self.give_out(&obj);
        }
        if self.strategy.has_decorator() {
            let mut obj = store.decode(bytes)?;
            self.strategy.decorate(&mut obj);
            return self.give_out(&obj);
        }
        self.encoded_to_json(&store.defaulted(bytes.clone())?)
    }

    fn columns(&self) -> Vec<Column> {
        self.strategy.columns()
    }

    fn cells(&self, obj: &R, _json: &Value, now: i64) -> Vec<Value> {
        self.strategy.cells(obj, now)
    }

    fn row_conditions(&self, obj: &R) -> Option<Value> {
        self.strategy.row_conditions(obj)
    }

    fn strategic(&self) -> Option<(&Descriptors, &str)> {
        Some((self.codec.descriptors(), &self.message))
    }
}

/// Registers the endpoint of a built-in kind's Store: what discovery says of it comes from the
/// kind's [`Resource`] constants and its strategy.
pub fn register<R: Resource>(catalog: &Catalog, codec: &Arc<Codec>, store: &Store<R>) {
    add::<R, Stored>(catalog, codec, store, true);
}

/// Registers `store`, a Store over the objects of a kind registered with [`register`], as the
/// kind's version `V`: not the storage version, its objects converted both ways.
pub fn register_version<R: Resource, V: Version<R>>(
    catalog: &Catalog,
    codec: &Arc<Codec>,
    store: &Store<R>,
) {
    add::<R, V>(catalog, codec, store, false);
}

fn add<R: Resource, V: Version<R>>(
    catalog: &Catalog,
    codec: &Arc<Codec>,
    store: &Store<R>,
    storage_version: bool,
) {
    let s = &store.strategy;
    let verbs = super::ALL_VERBS
        .iter()
        .filter(|v| **v != "deletecollection" || s.supports_delete_collection())
        .map(|v| v.to_string())
        .collect();
    let names = store.names();
    let info = ResourceInfo {
        group: V::GROUP.into(),
        version: V::VERSION.into(),
        plural: names.plural.clone(),
        singular: names.kind.to_lowercase(),
        kind: names.kind.clone(),
        list_kind: format!("{}List", names.kind),
        short_names: R::SHORT_NAMES.iter().map(|n| n.to_string()).collect(),
        categories: R::CATEGORIES.iter().map(|n| n.to_string()).collect(),
        namespaced: s.namespace_scoped(),
        verbs,
        status: s.has_status(),
        finalize: s.has_finalize(),
        storage_version,
        message: Some(V::message()),
        return_deleted_object: s.return_deleted_object(),
    };
    let shape = BuiltinShape::<R, V> {
        codec: codec.clone(),
        message: V::message(),
        api_version: info.api_version(),
        kind: info.kind.clone(),
        version: info.version.clone(),
        strategy: store.strategy.clone(),
        _kind: PhantomData,
    };
    catalog.add(Arc::new(StoreEndpoint::new(
        store.clone(),
        shape,
        codec.clone(),
        info,
    )));
}
