//! The field manager (upstream's `managedfields.FieldManager`): who set which field of an
//! object, kept in `metadata.managedFields` on every write, and server-side apply's merge.
//!
//! The Store calls it on every write of every kind, where upstream's handlers do: on create and
//! inside each attempt of an update or patch, after the object is decoded and defaulted and
//! before mutating admission and the strategy (so neither admission's changes nor the fields a
//! strategy resets are credited to the writer), and for an apply patch in place of the patch.
//! It works on objects as Kubernetes JSON with the kind's structured-merge-diff type
//! ([`types`]), through `kubestore_apimachinery::smd`, as upstream's stack of managers does:
//!
//! - **update** (`Update`): the fields that changed go to the writer's `Update` entry (merged
//!   with its earlier ones), and leave other managers; fields removed leave everyone; the
//!   writer's time changes only when its fields do, so a no-op stays a no-op;
//! - **apply** (`Apply`): the configuration is merged into the live object; the applier then
//!   owns exactly what it sent; fields it sent before and no longer does are removed unless
//!   another manager owns them; fields other managers own, sent with other values, are
//!   conflicts unless forced;
//! - the server's own metadata (name, uid, resourceVersion, ...) is owned by no one (upstream's
//!   `stripMeta`); at most [`entries::MAX_UPDATE_MANAGERS`] update managers are kept;
//! - kubectl's client-side apply is upgraded as upstream's `lastApplied` managers do: a
//!   `kubectl` apply may take fields its `last-applied-configuration` annotation already said,
//!   and keeps that annotation in step.
//!
//! An update never fails here (upstream's `UpdateNoErrors`): if the entries cannot be
//! computed, the object is written without them and the failure is logged.

pub mod entries;
pub mod types;

use std::sync::{Arc, OnceLock};

use kubestore_apimachinery::smd::{
    Conflicts, MergeError, ParseableType, PathElement, Set, Updater, VersionedSet,
};
use kubestore_proto::meta::v1::ManagedFieldsEntry;
use serde_json::Value;

use crate::error::ApiError;
use entries::{APPLY, Managed, UPDATE};

/// kubectl's client-side apply annotation.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager of applies whose client-side apply is upgraded (upstream only upgrades
/// kubectl's own).
const KUBECTL: &str = "kubectl";

/// The manager fields set before an object's first apply are credited to when nothing
/// manages them (upstream's `skipNonApplied` manager's `before-first-apply`).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Who writes, and through what.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    /// The manager: `fieldManager`, else the client's User-Agent up to its first `/`.
    pub manager: &'a str,
    /// The API version written (`v1`, `example.com/v1`).
    pub api_version: &'a str,
    /// The kind written (`ConfigMap`): an apply's configuration must say it.
    pub kind: &'a str,
    /// "" for the object itself, `status`.
    pub subresource: &'a str,
}

/// The manager of a request: its `fieldManager`, else upstream's `prefixFromUserAgent` (the
/// User-Agent up to its first `/`: `kubectl/v1.33.0 (linux/amd64)` is `kubectl`).
pub fn manager_of(field_manager: &str, user_agent: &str) -> String {
    if !field_manager.is_empty() {
        return field_manager.to_string();
    }
    // Upstream's `prefixFromUserAgent`: printable characters only, at most 128 bytes.
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// The longest field manager (upstream's `FieldManagerMaxLength`).
pub const MAX_MANAGER_BYTES: usize = 128;

/// Upstream's `ValidateFieldManager` of a request's `fieldManager`: at most 128 characters,
/// all printable (a 422 naming `fieldManager`).
pub fn check_field_manager(field_manager: &str) -> Result<(), ApiError> {
    let invalid =
        |message: String| ApiError::invalid("", "", vec![("fieldManager".to_string(), message)]);
    if field_manager.chars().count() > MAX_MANAGER_BYTES {
        return Err(invalid(format!(
            "Too long: may not be more than {MAX_MANAGER_BYTES} bytes, got {}",
            field_manager.len()
        )));
    }
    if let Some(c) = field_manager.chars().find(|c| c.is_control()) {
        return Err(invalid(format!(
            "Invalid value: {field_manager:?}: may only contain printable characters, not {c:?}"
        )));
    }
    Ok(())
}

/// The fields the server owns: no manager is credited with them (upstream's
/// `stripMetaManager`).
fn server_fields() -> &'static Set {
    static SET: OnceLock<Set> = OnceLock::new();
    SET.get_or_init(|| {
        let f = |s: &str| PathElement::Field(s.to_string());
        let meta = |s: &str| vec![f("metadata"), f(s)];
        let mut paths = vec![vec![f("apiVersion")], vec![f("kind")], vec![f("metadata")]];
        for m in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            paths.push(meta(m));
        }
        Set::from_paths(paths)
    })
}

/// `v` without `metadata.managedFields` (never part of a comparison or a field set).
fn without_entries(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(Value::Object(m)) = v.get_mut("metadata") {
        m.remove("managedFields");
    }
    v
}

/// One kind's field manager.
#[derive(Clone, Debug)]
pub struct FieldManager {
    ty: Arc<ParseableType>,
}

/// Why an apply failed.
#[derive(Debug)]
pub enum ApplyError {
    /// Fields other managers own, to other values: upstream's 409.
    Conflicts(ApiError),
    /// The configuration does not fit the kind's schema: (field path, error) pairs, for the
    /// caller's 422 naming the object.
    Invalid(Vec<(String, String)>),
    /// Anything else.
    Api(ApiError),
}

impl FieldManager {
    /// A field manager for objects of `ty`.
    pub fn new(ty: Arc<ParseableType>) -> Self {
        Self { ty }
    }

    fn updater(&self, ignored: &Set) -> Updater {
        let mut u = Updater::new(ParseableType::clone(&self.ty));
        if !ignored.is_empty() {
            u.ignored_fields = Some(ignored.clone());
        }
        u
    }

    /// Upstream's `FieldManager.Update`: the entries to store with `new`, written by `w` over
    /// `live` (`None` on create). `ignored` are the fields the strategy resets for this write
    /// (a main update's `status`, a status update's `spec`): no one gains them. The request's
    /// entries are taken if they decode and say anything (a client editing them), reset by one
    /// empty entry, else the stored ones are; a subresource always keeps the stored ones.
    pub fn update(
        &self,
        live: Option<(&Value, &[ManagedFieldsEntry])>,
        new: &Value,
        new_entries: &[ManagedFieldsEntry],
        w: Writer<'_>,
        ignored: &Set,
        now: pbjson_types::Timestamp,
    ) -> Result<Vec<ManagedFieldsEntry>, String> {
        let live_entries = live.map_or(&[][..], |(_, e)| e);
        let stored = || entries::decode(live_entries).unwrap_or_default();
        let mut managed = if !w.subresource.is_empty() {
            stored()
        } else if entries::is_reset(new_entries) {
            Managed::default()
        } else {
            match entries::decode(new_entries) {
                Ok(m) if !m.fields.is_empty() => m,
                _ => stored(),
            }
        };
        // Upstream's `skipNonAppliedManager`: an object that exists and has no managed fields
        // (stored before they were kept, or reset by a client) keeps none until it is applied,
        // when what it has is credited to `before-first-apply`.
        if live.is_some() && managed.fields.is_empty() {
            return Ok(Vec::new());
        }
        let live_value = live.map_or(Value::Null, |(v, _)| without_entries(v));
        let new_value = without_entries(new);
        self.update_into(&mut managed, &live_value, &new_value, w, ignored, now)?;
        entries::cap_update_managers(&mut managed, entries::MAX_UPDATE_MANAGERS);
        Ok(entries::encode(&managed))
    }

    /// Upstream's `managedFieldsUpdater.Update` over the structured merge: the changed fields
    /// go to a manager of this operation alone, then join the writer's own.
    fn update_into(
        &self,
        managed: &mut Managed,
        live: &Value,
        new: &Value,
        w: Writer<'_>,
        ignored: &Set,
        now: pbjson_types::Timestamp,
    ) -> Result<(), String> {
        const CURRENT: &str = "current-operation";
        let fields = std::mem::take(&mut managed.fields);
        let mut fields = self
            .updater(ignored)
            .update(live, new, w.api_version, fields, CURRENT)
            .map_err(|e| e.to_string())?;
        // Only a change of the writer's own fields (the server's stripped) moves its time.
        if let Some(vs) = fields.remove(CURRENT)
            && let set = vs.set.difference(server_fields())
            && !set.is_empty()
        {
            let id = entries::manager_id(w.manager, UPDATE, w.api_version, w.subresource);
            let set = match fields.get(&id) {
                Some(previous) => set.union(&previous.set),
                None => set,
            };
            fields.insert(id.clone(), VersionedSet::new(set, w.api_version, false));
            managed.times.insert(id, Some(now));
        }
        managed.times.retain(|id, _| fields.contains_key(id));
        managed.fields = fields;
        Ok(())
    }

    /// Upstream's `FieldManager.Apply`: `config` applied by `w` to `live` (`None`: the object
    /// is created), with the stored entries; the merged object and its entries.
    pub fn apply(
        &self,
        live: Option<(&Value, &[ManagedFieldsEntry])>,
        config: &Value,
        w: Writer<'_>,
        force: bool,
        ignored: &Set,
        now: pbjson_types::Timestamp,
    ) -> Result<(Value, Vec<ManagedFieldsEntry>), ApplyError> {
        let bad = |m: String| ApplyError::Api(ApiError::BadRequest(m));
        let Value::Object(c) = config else {
            return Err(bad("the apply configuration must be an object".into()));
        };
        let version = c.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if version != w.api_version {
            return Err(bad(format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
                w.api_version
            )));
        }
        // Upstream's `versionCheckManager`: the kind too.
        let kind = c.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != w.kind {
            let (group, v) = version.rsplit_once('/').unwrap_or(("", version));
            return Err(bad(format!(
                "invalid object type: {group}/{v}, Kind={kind}"
            )));
        }
        if c.get("metadata")
            .and_then(|m| m.get("managedFields"))
            .is_some_and(|f| !f.is_null())
        {
            return Err(bad("metadata.managedFields must be nil".into()));
        }
        let live_entries = live.map_or(&[][..], |(_, e)| e);
        let mut managed = entries::decode(live_entries).map_err(|e| {
            ApplyError::Api(ApiError::Internal(format!(
                "failed to decode managed fields: {e}"
            )))
        })?;
        let live_value = live.map_or(Value::Null, |(v, _)| without_entries(v));
        // Fields of an object no one manages yet (written before managed fields were kept, or
        // after a client reset them) belong to a manager of their own, so that a first apply
        // conflicts with them instead of silently taking them.
        if managed.fields.is_empty() && live.is_some() {
            let before = Writer {
                manager: BEFORE_FIRST_APPLY,
                ..w
            };
            self.update_into(
                &mut managed,
                &Value::Null,
                &live_value,
                before,
                ignored,
                now,
            )
            .map_err(|e| ApplyError::Api(ApiError::Internal(e)))?;
        }
        let id = entries::manager_id(w.manager, APPLY, w.api_version, w.subresource);
        let updater = self.updater(ignored);
        let fields = managed.fields.clone();
        let result = updater.apply(&live_value, config, w.api_version, fields, &id, force);
        let result = match result {
            Err(MergeError::Conflicts(conflicts)) if w.manager == KUBECTL => {
                // Upstream's `lastAppliedManager`: what kubectl's client-side apply said last,
                // and the object still has, is kubectl's to take; only other conflicts stay.
                match allowed_by_last_applied(&self.ty, &live_value) {
                    Some(allowed) if conflicts.to_set().difference(&allowed).is_empty() => updater
                        .apply(
                            &live_value,
                            config,
                            w.api_version,
                            managed.fields.clone(),
                            &id,
                            true,
                        ),
                    Some(allowed) => Err(MergeError::Conflicts(Conflicts(
                        conflicts
                            .0
                            .into_iter()
                            .filter(|c| !allowed.has(c.path.elements()))
                            .collect(),
                    ))),
                    None => Err(MergeError::Conflicts(conflicts)),
                }
            }
            other => other,
        };
        let (mut merged, mut fields) = result.map_err(|e| match e {
            MergeError::Conflicts(c) => ApplyError::Conflicts(ApiError::ApplyConflict {
                message: c.apply_failed_message(entries::print_manager),
                causes: c
                    .0
                    .iter()
                    .map(|c| {
                        (
                            format!("conflict with {}", entries::print_manager(&c.manager)),
                            c.path.to_string(),
                        )
                    })
                    .collect(),
            }),
            MergeError::Invalid { errors, .. } => ApplyError::Invalid(
                errors
                    .pairs()
                    .into_iter()
                    .map(|(path, e)| (path.trim_start_matches('.').to_string(), e))
                    .collect(),
            ),
        })?;
        if let Some(vs) = fields.get_mut(&id) {
            vs.set = vs.set.difference(server_fields());
        }
        fields.retain(|_, vs| !vs.set.is_empty());
        if !kubestore_apimachinery::smd::value::equals(&merged, &live_value) {
            managed.times.insert(id.clone(), Some(now));
        }
        managed.times.retain(|id, _| fields.contains_key(id));
        managed.fields = fields;
        if w.manager == KUBECTL {
            keep_last_applied(&mut merged, config);
        }
        // Upstream caps update managers on updates only.
        Ok((merged, entries::encode(&managed)))
    }

    /// The paths of the fields `value` sets (for tests and diagnostics).
    pub fn fields_of(&self, value: &Value) -> Result<Set, String> {
        self.ty
            .to_field_set(&without_entries(value))
            .map(|s| s.difference(server_fields()))
            .map_err(|e| e.to_string())
    }
}

/// Upstream's `allowedConflictsFromLastApplied`: the fields of the live object's
/// `last-applied-configuration`, when the live object still has each of them as it says.
fn allowed_by_last_applied(ty: &ParseableType, live: &Value) -> Option<Set> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion") != live.get("apiVersion") {
        return None;
    }
    let set = ty.to_field_set(&last).ok()?;
    // Fields the object no longer has as the annotation says are not kubectl's to take.
    let c = ty.compare(&last, live).ok()?;
    Some(
        set.difference(&c.modified)
            .difference(&c.added)
            .difference(&c.removed),
    )
}

/// Upstream's `lastAppliedUpdater`: a kubectl apply over an object that has client-side
/// apply's annotation writes the configuration (without the annotation) into it, so that
/// going back to client-side apply starts from what was applied last.
fn keep_last_applied(merged: &mut Value, config: &Value) {
    let Some(Value::Object(annotations)) = merged.pointer_mut("/metadata/annotations") else {
        return;
    };
    if !annotations.contains_key(LAST_APPLIED) {
        return;
    }
    let mut last = config.clone();
    if let Some(Value::Object(a)) = last.pointer_mut("/metadata/annotations") {
        a.remove(LAST_APPLIED);
        if a.is_empty()
            && let Some(Value::Object(m)) = last.get_mut("metadata")
        {
            m.remove("annotations");
        }
    }
    annotations.insert(LAST_APPLIED.into(), Value::String(last.to_string()));
    // Upstream's `SetLastApplied`: past the annotations' total limit, the annotation goes
    // rather than failing the apply.
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > MAX_ANNOTATIONS_BYTES {
        annotations.remove(LAST_APPLIED);
    }
}

/// Upstream's `TotalAnnotationSizeLimitB`.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// The fields a write of `subresource` to a kind that `has_status` does not write (upstream's
/// reset fields, `GetResetFields`): a main write's `status`; a status write writes `status`
/// alone (its strategy takes everything else from the stored object, metadata included), a
/// Namespace's `finalize` its `spec` alone. `object` is the object written, whose other
/// top-level fields are the ones reset.
pub fn reset_fields(subresource: &str, has_status: bool, object: &Value) -> Set {
    let field = |f: &str| [PathElement::Field(f.to_string())];
    let all_but = |kept: &str| {
        Set::from_paths(
            object
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys())
                .filter(|k| *k != kept)
                .map(|k| field(k)),
        )
    };
    match subresource {
        "" if has_status => Set::from_paths([field("status")]),
        "" => Set::new(),
        "finalize" => all_but("spec"),
        _ => all_but("status"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_maps() -> FieldManager {
        let codec = crate::resource::codec();
        FieldManager::new(types::builtin(codec.descriptors(), ".core.v1.ConfigMap").expect("type"))
    }

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            api_version: "v1",
            kind: "ConfigMap",
            subresource: "",
        }
    }

    fn now() -> pbjson_types::Timestamp {
        pbjson_types::Timestamp {
            seconds: 1_800_000_000,
            nanos: 0,
        }
    }

    #[test]
    fn managers_from_user_agents_are_printable_and_bounded() {
        assert_eq!(manager_of("", "kubectl/v1.33.0 (linux/amd64)"), "kubectl");
        assert_eq!(manager_of("mine", "kubectl/v1.33.0"), "mine");
        assert_eq!(manager_of("", "a\u{7}b/1"), "ab");
        assert_eq!(manager_of("", &"x".repeat(300)).len(), MAX_MANAGER_BYTES);
        assert!(check_field_manager(&"x".repeat(129)).is_err());
        assert!(check_field_manager("ok").is_ok());
    }

    #[test]
    fn a_status_write_writes_status_alone() {
        let obj = json!({"apiVersion": "v1", "metadata": {}, "spec": {}, "status": {}});
        let reset = reset_fields("status", true, &obj);
        let paths: Vec<String> = reset.paths().iter().map(ToString::to_string).collect();
        assert_eq!(paths, [".apiVersion", ".metadata", ".spec"]);
        assert_eq!(
            reset_fields("", true, &obj).paths()[0].to_string(),
            ".status"
        );
    }

    /// Upstream's lastAppliedManager: kubectl takes the fields client-side apply set and the
    /// object still has; a field changed since (`kubectl scale`) stays a conflict, alone.
    #[test]
    fn client_side_apply_is_upgraded_field_by_field() {
        let fm = config_maps();
        let last = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "1", "b": "1"}});
        let created = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {LAST_APPLIED: last.to_string()}},
            "data": {"a": "1", "b": "1"}});
        let csa = fm
            .update(
                None,
                &created,
                &[],
                writer("kubectl-client-side-apply"),
                &Set::new(),
                now(),
            )
            .expect("entries");
        // Someone else changes `b`.
        let mut changed = created.clone();
        changed["data"]["b"] = json!("5");
        let entries = fm
            .update(
                Some((&created, &csa)),
                &changed,
                &[],
                writer("scaler"),
                &Set::new(),
                now(),
            )
            .expect("entries");
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "2", "b": "2"}});
        let e = fm
            .apply(
                Some((&changed, &entries)),
                &config,
                writer("kubectl"),
                false,
                &Set::new(),
                now(),
            )
            .expect_err("a conflict on b");
        let ApplyError::Conflicts(ApiError::ApplyConflict { message, .. }) = e else {
            panic!("a conflict expected");
        };
        assert_eq!(
            message,
            "Apply failed with 1 conflict: conflict with \"scaler\" using v1: .data.b"
        );
        // Without the change, kubectl takes both fields and the annotation follows.
        let (merged, _) = fm
            .apply(
                Some((&created, &csa)),
                &config,
                writer("kubectl"),
                false,
                &Set::new(),
                now(),
            )
            .expect("upgraded");
        assert_eq!(merged["data"], json!({"a": "2", "b": "2"}));
        let annotation: Value = serde_json::from_str(
            merged["metadata"]["annotations"][LAST_APPLIED]
                .as_str()
                .expect("annotation"),
        )
        .expect("json");
        assert_eq!(annotation["data"], json!({"a": "2", "b": "2"}));
    }
}
