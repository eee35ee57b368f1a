//! The custom kinds this replica serves, learnt by listing and watching the definitions (never
//! by restarting), as upstream's `crdHandler` learns them from its informer: a definition is
//! served once its names are accepted (`NamesAccepted=True`, or `Established=True`), under its
//! accepted names, one Store per version that is served or stored.
//!
//! Building a kind compiles every served version's schema (and its rules): seconds for a large
//! definition. It happens once per change of a definition: a copy whose uid and
//! resourceVersion equal the one held (a request's read, `resolve::Resolver::catch_up`, and the watch
//! bringing the same state) is not built again, and builds take turns, so that concurrent
//! callers with the same copy wait for the one building it instead of building it too, or
//! finding it half-applied. `registry_custom_kind_builds_total` counts them.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, RwLock},
};

use kubestore_proto::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition,
};
use prometheus_client::metrics::counter::Counter;

use crate::{
    custom::{
        definition::{self, condition, storage_version},
        object::CustomObject,
        openapi::Schema,
        strategy::CustomStrategy,
    },
    error::ApiError,
    storage::StorageClient,
    store::{Names, Store},
};

/// One version of a served kind.
pub struct ServedVersion {
    /// Whether clients may use it (a version kept only for storage is not served).
    pub served: bool,
    /// Its Store (the version's strategy: schema, status subresource).
    pub store: Store<CustomObject>,
    /// Its schema, for pruning and defaulting what clients send.
    pub schema: Arc<Schema>,
    /// Its printer columns (the CLI's table).
    pub columns: Vec<CustomResourceColumnDefinition>,
}

/// A custom kind this replica serves.
pub struct ServedKind {
    /// API group.
    pub group: String,
    /// Accepted plural.
    pub plural: String,
    /// Accepted kind.
    pub kind: String,
    /// Objects live in namespaces.
    pub namespaced: bool,
    /// The version objects are stored in.
    pub storage_version: String,
    /// Every version served or stored, by name.
    pub versions: BTreeMap<String, ServedVersion>,
    /// The definition is being deleted: no creates.
    pub terminating: bool,
    /// The definition's UID.
    pub uid: String,
    /// The definition's generation (its spec's version) the kind was built from.
    pub generation: i64,
}

impl ServedKind {
    /// The served version `version`, or NOT_FOUND naming what was asked.
    pub fn version(&self, version: &str) -> Result<&ServedVersion, ApiError> {
        self.versions
            .get(version)
            .filter(|v| v.served)
            .ok_or_else(|| not_found(&self.group, version, &self.plural))
    }

    /// The storage version's Store (every object, whatever version it is asked in).
    pub fn storage_store(&self) -> Option<&Store<CustomObject>> {
        self.versions.get(&self.storage_version).map(|v| &v.store)
    }
}

/// A resourceVersion as a number (0 when it is not one).
fn revision(rv: &str) -> i64 {
    rv.parse().unwrap_or(0)
}

/// NOT_FOUND for a kind or version nobody serves.
pub fn not_found(group: &str, version: &str, plural: &str) -> ApiError {
    ApiError::NotFound {
        resource: format!("{group}/{version}/{plural}"),
        name: String::new(),
    }
}

/// The served kinds, by (group, plural), and the definitions seen.
pub struct CustomKinds {
    storage: StorageClient,
    kinds: RwLock<HashMap<(String, String), Arc<ServedKind>>>,
    /// Every definition seen, by name (the controller reads them for name conflicts).
    definitions: RwLock<BTreeMap<String, CustomResourceDefinition>>,
    /// Held while a definition is taken in (see the module docs).
    applying: Mutex<()>,
    /// Kinds built (`registry_custom_kind_builds_total`).
    builds: Counter,
    /// Changes taken in so far (a definition applied or removed): what the documents built
    /// from the served kinds (OpenAPI) compare to learn they are stale.
    changes: std::sync::atomic::AtomicU64,
}

impl CustomKinds {
    /// No kinds yet; [`Self::follow`] fills them.
    pub fn new(storage: StorageClient) -> Arc<Self> {
        Arc::new(Self {
            storage,
            kinds: RwLock::default(),
            definitions: RwLock::default(),
            applying: Mutex::default(),
            builds: Counter::default(),
            changes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Registers `registry_custom_kind_builds_total` in `metrics`.
    pub fn register_metrics(&self, metrics: &kubestore_telemetry::Metrics) {
        metrics.register(
            "registry_custom_kind_builds",
            "Served custom kinds built from a definition (every version's schema compiled): once per change of a definition this replica takes in",
            self.builds.clone(),
        );
    }

    /// How many changes were taken in so far.
    pub fn changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::Acquire)
    }

    fn changed(&self) {
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// The served kind `group`/`plural`, if any.
    pub fn get(&self, group: &str, plural: &str) -> Option<Arc<ServedKind>> {
        self.kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(group.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every served kind.
    pub fn all(&self) -> Vec<Arc<ServedKind>> {
        self.kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The definitions seen, as last seen.
    pub fn definitions(&self) -> Vec<CustomResourceDefinition> {
        self.definitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Takes in a definition as it now is: served, changed, or no longer served. A copy no
    /// newer than the one held (the watch bringing what a request's read already took in, or
    /// the reverse) changes nothing and costs no build.
    pub fn apply(&self, crd: &CustomResourceDefinition) {
        let meta = crd.metadata.clone().unwrap_or_default();
        // One at a time: a caller holding the copy being built waits for it, then finds it held.
        let _turn = self.applying.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut definitions = self.definitions.write().unwrap_or_else(|p| p.into_inner());
            if let Some(held) = definitions
                .get(&meta.name)
                .and_then(|d| d.metadata.as_ref())
                && held.uid == meta.uid
                && revision(&held.resource_version) >= revision(&meta.resource_version)
            {
                return;
            }
            definitions.insert(meta.name.clone(), crd.clone());
        }
        let key = crd.spec.as_ref().map(|s| {
            (
                s.group.clone(),
                s.names
                    .as_ref()
                    .map(|n| n.plural.clone())
                    .unwrap_or_default(),
            )
        });
        let held = self
            .kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|k| k.uid == meta.uid)
            .cloned();
        let served = self.build(crd, held.as_deref());
        let mut kinds = self.kinds.write().unwrap_or_else(|p| p.into_inner());
        // The kind may have been served under other accepted names: drop those.
        kinds.retain(|_, k| k.uid != meta.uid);
        if let (Some(key), Some(served)) = (key, served) {
            kinds.insert(key, Arc::new(served));
        }
        drop(kinds);
        self.changed();
    }

    /// Forgets a deleted definition.
    pub fn remove(&self, crd: &CustomResourceDefinition) {
        let meta = crd.metadata.clone().unwrap_or_default();
        let _turn = self.applying.lock().unwrap_or_else(|p| p.into_inner());
        self.definitions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&meta.name);
        self.kinds
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, k| k.uid != meta.uid);
        self.changed();
    }

    /// Takes in a fresh list of every definition: those gone are forgotten, the others applied
    /// (unchanged ones cost nothing, so a relist after an expired watch rebuilds only what
    /// changed).
    fn replace_all(&self, crds: &[CustomResourceDefinition]) {
        let listed: std::collections::BTreeSet<String> = crds.iter().map(name_of).collect();
        for gone in self
            .definitions()
            .iter()
            .filter(|d| !listed.contains(&name_of(d)))
        {
            self.remove(gone);
        }
        for crd in crds {
            self.apply(crd);
        }
    }

    /// A Store over every object of `crd` as storage holds them, whatever this replica serves
    /// of it: the keys under `/<group>/<plural>/` (the accepted plural, else the spec's; one
    /// definition per group and plural, as its name is `<plural>.<group>`), read and written as
    /// they are, without any version's schema (none may build, or none may be served). The
    /// definitions controller deletes a deleted definition's objects through it.
    ///
    /// None when its group or plural is not a valid name, or when its plural is a built-in
    /// kind's (upstream's `OverlappingBuiltInResource`: nothing is deleted). Such a definition
    /// is never served (its names conflict), so it has no objects, and its prefix may be a
    /// built-in one: `customresourcedefinitions.apiextensions.k8s.io` would be every
    /// definition's.
    pub fn objects_of(&self, crd: &CustomResourceDefinition) -> Option<Store<CustomObject>> {
        let spec = crd.spec.as_ref()?;
        let names = names_in_use(crd)?;
        // Anything else cannot name a definition's own keys (a record written to storage
        // around the API could hold anything).
        if crate::validation::dns1123_subdomain(&spec.group).is_some()
            || crate::validation::dns1123_label(&names.plural).is_some()
            || crate::resource::BUILT_IN_NAMES
                .iter()
                .any(|(_, plural, _)| *plural == names.plural)
        {
            return None;
        }
        // A schema that keeps every field as it is and defaults nothing: objects are read and
        // written back (deletionTimestamp on one held by its finalizers) untouched.
        let schema = Schema::parse(&serde_json::json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        }))
        .ok()?;
        let strategy = CustomStrategy {
            namespaced: spec.scope == "Namespaced",
            schema: Arc::new(schema),
            status: false,
            json_fields: Vec::new(),
            fields: None,
        };
        Some(Store::with_names(
            self.storage.clone(),
            Arc::new(strategy),
            Names {
                kind: names.kind.clone(),
                resource: format!("{}.{}", names.plural, spec.group),
                key_root: format!("/{}/{}", spec.group, names.plural),
                group: spec.group.clone(),
                version: storage_version(spec),
                plural: names.plural,
            },
        ))
    }

    /// The served kind of `crd`, or None while its names are not accepted (`held`: the kind
    /// as served until now, whose schemas are reused if the spec is the same).
    fn build(
        &self,
        crd: &CustomResourceDefinition,
        held: Option<&ServedKind>,
    ) -> Option<ServedKind> {
        if !(condition(crd, "NamesAccepted") || condition(crd, "Established")) {
            return None;
        }
        self.builds.inc();
        let (uid, generation) = crd
            .metadata
            .as_ref()
            .map(|m| (m.uid.clone(), m.generation))
            .unwrap_or_default();
        let spec = crd.spec.as_ref()?;
        let names = names_in_use(crd)?;
        let namespaced = spec.scope == "Namespaced";
        let store_names = Names {
            kind: names.kind.clone(),
            resource: format!("{}.{}", names.plural, spec.group),
            key_root: format!("/{}/{}", spec.group, names.plural),
            group: spec.group.clone(),
            version: String::new(),
            plural: names.plural.clone(),
        };
        let mut versions = BTreeMap::new();
        for v in &spec.versions {
            if !(v.served || v.storage) {
                continue;
            }
            // The spec is unchanged since the kind was last built (a status update: names
            // accepted, established): its schemas are the ones already compiled.
            let reused = held
                .filter(|h| h.uid == uid && h.generation == generation)
                .and_then(|h| h.versions.get(&v.name))
                .map(|held| held.schema.clone());
            let schema = match reused.map(Ok).or_else(|| definition::version_schema(v)) {
                Some(Ok(s)) => s,
                None => continue,
                // Refused when the definition was written (both build it the same way); only
                // a definition stored before a check existed can get here.
                Some(Err(e)) => {
                    tracing::warn!(definition = %store_names.resource, version = %v.name, problems = ?e, "a served version's schema does not build; not serving it");
                    continue;
                }
            };
            let status = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
            let json_fields = v
                .selectable_fields
                .iter()
                .filter_map(|f| selectable(&schema, &f.json_path))
                .collect();
            let fields = match crate::managed::types::custom(
                crate::resource::codec().descriptors(),
                definition::schema_json(v).as_ref(),
            ) {
                Ok(t) => Some(Arc::new(t)),
                Err(e) => {
                    tracing::warn!(definition = %store_names.resource, version = %v.name, error = %e, "no field type for the version: its objects keep no managed fields");
                    None
                }
            };
            let strategy = CustomStrategy {
                namespaced,
                schema: schema.clone(),
                status,
                json_fields,
                fields,
            };
            versions.insert(
                v.name.clone(),
                ServedVersion {
                    served: v.served,
                    store: Store::with_names(
                        self.storage.clone(),
                        Arc::new(strategy),
                        Names {
                            version: v.name.clone(),
                            ..store_names.clone()
                        },
                    ),
                    schema,
                    columns: v.additional_printer_columns.clone(),
                },
            );
        }
        Some(ServedKind {
            group: spec.group.clone(),
            plural: names.plural.clone(),
            kind: names.kind.clone(),
            namespaced,
            storage_version: storage_version(spec),
            versions,
            terminating: crd
                .metadata
                .as_ref()
                .is_some_and(|m| m.deletion_timestamp.is_some()),
            uid,
            generation,
        })
    }

    /// Lists the definitions and follows them (`crate::follow`) until `stop`; `changed` hears
    /// the name of every definition that changed (the controller's queue).
    pub async fn follow(
        self: Arc<Self>,
        definitions: Store<CustomResourceDefinition>,
        changed: tokio::sync::mpsc::Sender<String>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) {
        use crate::follow::Change;
        crate::follow::follow(definitions, stop, move |change| match change {
            Change::Reset(items) => {
                self.replace_all(&items);
                for crd in &items {
                    let _ = changed.try_send(name_of(crd));
                }
            }
            Change::Put(crd) => {
                self.apply(&crd);
                let _ = changed.try_send(name_of(&crd));
            }
            Change::Gone(crd) => {
                self.remove(&crd);
                let _ = changed.try_send(name_of(&crd));
            }
        })
        .await
    }
}

/// A `selectableFields` entry as a field selector: its label (`spec.color` for `.spec.color`),
/// the keys to it and its type; None for a path the schema has no string, integer or boolean
/// at (refused when the definition was written).
pub fn selectable(schema: &Schema, json_path: &str) -> Option<crate::selectors::JsonField> {
    use kubestore_proto::storage::v1::field_requirement::Type;
    let ty = match schema.node(json_path)?.ty.as_str() {
        "string" => Type::String,
        "integer" => Type::Int,
        "boolean" => Type::Bool,
        _ => return None,
    };
    let label = json_path.trim_start_matches('.').to_string();
    Some(crate::selectors::JsonField {
        keys: label.split('.').map(String::from).collect(),
        label,
        ty,
    })
}

/// A definition's name.
pub fn name_of(crd: &CustomResourceDefinition) -> String {
    crd.metadata
        .as_ref()
        .map(|m| m.name.clone())
        .unwrap_or_default()
}

/// Whether the definition is being deleted and still holds its cleanup finalizer.
pub fn cleaning_up(crd: &CustomResourceDefinition) -> bool {
    crd.metadata.as_ref().is_some_and(|m| {
        m.deletion_timestamp.is_some()
            && m.finalizers
                .iter()
                .any(|f| f == definition::CLEANUP_FINALIZER)
    })
}

/// The names a definition is served under: those accepted, else (before its controller has
/// accepted any) those it asks for.
fn names_in_use(
    crd: &CustomResourceDefinition,
) -> Option<kubestore_proto::apiextensions::v1::CustomResourceDefinitionNames> {
    crd.status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .filter(|n| !n.plural.is_empty())
        .or_else(|| crd.spec.as_ref()?.names.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(group: &str, plural: &str) -> CustomResourceDefinition {
        CustomResourceDefinition::from_manifest(serde_json::json!({
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": plural, "kind": "Thing", "singular": "thing"},
                "versions": [{"name": "v1", "served": true, "storage": true}],
            },
        }))
        .expect("a definition")
    }

    use serde_json::json;

    fn crd(uid: &str, rv: &str) -> CustomResourceDefinition {
        CustomResourceDefinition::from_manifest(json!({
            "metadata": {"name": "widgets.example.com", "uid": uid, "resourceVersion": rv},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": false, "storage": false,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}
        }))
        .expect("a definition")
    }

    #[tokio::test]
    async fn a_definitions_objects_are_its_prefix_and_never_a_built_in_kinds() {
        let storage = StorageClient::connect_lazy("http://127.0.0.1:1", None).expect("client");
        let kinds = CustomKinds::new(storage);
        let store = kinds
            .objects_of(&definition("stable.example.com", "crontabs"))
            .expect("a store");
        assert_eq!(store.key_root(), "/stable.example.com/crontabs");
        // The definitions' own prefix, and other built-in plurals: nothing to delete.
        for (group, plural) in [
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("coordination.k8s.io", "leases"),
            ("example.com", "pods"),
        ] {
            assert!(
                kinds.objects_of(&definition(group, plural)).is_none(),
                "{plural}.{group}"
            );
        }
        // Names no definition could have (a record written around the API).
        for (group, plural) in [("example", "../pods"), ("", "things"), ("a.b", "")] {
            assert!(kinds.objects_of(&definition(group, plural)).is_none());
        }
    }

    fn kinds() -> Arc<CustomKinds> {
        let storage =
            StorageClient::connect_lazy("http://127.0.0.1:1", None).expect("a lazy client");
        CustomKinds::new(storage)
    }

    #[tokio::test]
    async fn a_definition_is_built_once_per_change() {
        let k = kinds();
        k.apply(&crd("a", "5"));
        assert_eq!(k.builds.get(), 1);
        let served = k.get("example.com", "widgets").expect("served");
        assert!(served.version("v1").is_ok());
        assert!(served.version("v2").is_err(), "not served");
        // The same copy again (a request's read, then the watch), and an older one.
        k.apply(&crd("a", "5"));
        k.apply(&crd("a", "4"));
        assert_eq!(k.builds.get(), 1);
        assert!(Arc::ptr_eq(
            &served,
            &k.get("example.com", "widgets").expect("served")
        ));
        // A change, and a definition deleted and created again (a new uid, any revision).
        k.apply(&crd("a", "6"));
        assert_eq!(k.builds.get(), 2);
        k.apply(&crd("b", "3"));
        assert_eq!(k.builds.get(), 3);
        assert_eq!(k.get("example.com", "widgets").expect("served").uid, "b");
        // A relist of the same state rebuilds nothing; one without the definition forgets it.
        k.replace_all(&[crd("b", "3")]);
        assert_eq!(k.builds.get(), 3);
        k.replace_all(&[]);
        assert!(k.get("example.com", "widgets").is_none());
        assert!(k.definitions().is_empty());
    }

    #[tokio::test]
    async fn callers_taking_in_the_same_copy_build_it_once_and_all_find_it_served() {
        let k = kinds();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    k.apply(&crd("a", "7"));
                    assert!(k.get("example.com", "widgets").is_some());
                });
            }
        });
        assert_eq!(k.builds.get(), 1);
    }
}
