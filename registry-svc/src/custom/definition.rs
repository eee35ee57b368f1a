//! CustomResourceDefinitions as a kind of the generic Store (upstream's
//! `pkg/registry/customresourcedefinition` strategy and `pkg/apis/apiextensions/validation`):
//! cluster-scoped, updates need a resourceVersion, the main endpoint cannot write status, the
//! status endpoint cannot write spec, `generation` follows the spec, and every version's schema
//! must be structural (`custom::openapi`).
//!
//! Names conflicts, `NamesAccepted`/`Established` and the deletion of a definition's objects are
//! the definitions controller's (`custom::controller`), as upstream's controllers do them.

use std::sync::Arc;

use kubestore_proto::{
    apiextensions::v1::{
        CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionNames,
        CustomResourceDefinitionSpec, CustomResourceDefinitionStatus,
        CustomResourceDefinitionVersion, ListCustomResourceDefinitionsRequest,
        WatchCustomResourceDefinitionsRequest,
    },
    meta::v1::{ListOptions, ObjectMeta},
};

use crate::{
    custom::openapi as schema, strategy::Strategy, validation::dns1123_subdomain,
    violations::Violations,
};

/// Upstream's finalizer that holds a definition until its objects are deleted.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

impl crate::resource::Resource for CustomResourceDefinition {
    const KIND: &'static str = "CustomResourceDefinition";
    const RESOURCE: &'static str = "customresourcedefinitions.apiextensions.k8s.io";
    const GROUP: &'static str = "apiextensions.k8s.io";
    const SHORT_NAMES: &'static [&'static str] = &["crd", "crds"];
    const CATEGORIES: &'static [&'static str] = &["api-extensions"];
    type ListRequest = ListCustomResourceDefinitionsRequest;
    fn list_parts(request: Self::ListRequest) -> (String, Option<ListOptions>) {
        (String::new(), request.options)
    }
    type WatchRequest = WatchCustomResourceDefinitionsRequest;
    fn watch_parts(request: Self::WatchRequest) -> (String, Option<ListOptions>) {
        (String::new(), request.options)
    }
    fn meta(&self) -> Option<&ObjectMeta> {
        self.metadata.as_ref()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.metadata.get_or_insert_with(Default::default)
    }
}

/// Where definitions are stored: `/registry/apiextensions.k8s.io/customresourcedefinitions/`.
pub fn names() -> crate::store::Names {
    crate::store::Names {
        kind: "CustomResourceDefinition".into(),
        resource: "customresourcedefinitions.apiextensions.k8s.io".into(),
        key_root: "/apiextensions.k8s.io/customresourcedefinitions".into(),
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// The definitions' strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct DefinitionStrategy;

/// The storage version's name ("" when none or several are marked).
pub fn storage_version(spec: &CustomResourceDefinitionSpec) -> String {
    let mut marked = spec.versions.iter().filter(|v| v.storage);
    match (marked.next(), marked.next()) {
        (Some(v), None) => v.name.clone(),
        _ => String::new(),
    }
}

impl Strategy<CustomResourceDefinition> for DefinitionStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }

    fn delete_finalizers(&self) -> &'static [&'static str] {
        &[CLEANUP_FINALIZER]
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn default_object(&self, crd: &mut CustomResourceDefinition) -> bool {
        // Upstream's SetDefaults_CustomResourceDefinitionSpec.
        let Some(spec) = crd.spec.as_mut() else {
            return false;
        };
        let mut changed = false;
        if let Some(n) = spec.names.as_mut() {
            if n.singular.is_empty() && !n.kind.is_empty() {
                n.singular = n.kind.to_lowercase();
                changed = true;
            }
            if n.list_kind.is_empty() && !n.kind.is_empty() {
                n.list_kind = format!("{}List", n.kind);
                changed = true;
            }
        }
        if spec.conversion.is_none() {
            spec.conversion = Some(CustomResourceConversion {
                strategy: "None".into(),
                webhook: None,
            });
            changed = true;
        }
        // A schema stored (or sent by a gRPC client) as the `Struct` of before becomes the JSON
        // text it holds: the one form every reader and writer sees.
        #[allow(deprecated)]
        for v in &mut spec.versions {
            if let Some(s) = v.schema.as_mut()
                && let Some(old) = s.open_api_v3_schema_struct.take()
            {
                if s.open_api_v3_schema.is_empty() {
                    s.open_api_v3_schema = crate::custom::object::struct_json(&old).to_string();
                }
                changed = true;
            }
        }
        // Text a gRPC client wrote with spaces is kept compact, as REST's decoder writes it:
        // one text per schema, whoever sent it (text that is not JSON is left for validation).
        for s in spec.versions.iter_mut().filter_map(|v| v.schema.as_mut()) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s.open_api_v3_schema) {
                let compact = v.to_string();
                if compact != s.open_api_v3_schema {
                    s.open_api_v3_schema = compact;
                    changed = true;
                }
            }
        }
        changed
    }

    fn has_defaults(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, crd: &mut CustomResourceDefinition) {
        let stored = crd
            .spec
            .as_ref()
            .map(storage_version)
            .filter(|v| !v.is_empty());
        crd.status = Some(CustomResourceDefinitionStatus {
            stored_versions: stored.into_iter().collect(),
            ..Default::default()
        });
        crd.meta_mut_generation(1);
    }

    fn validate(&self, crd: &CustomResourceDefinition) -> Violations {
        // Compiling and estimating a large schema's rules may take long: off the async workers.
        crate::offload::violations(|| validate_definition(crd))
    }

    fn prepare_for_update(
        &self,
        new: &mut CustomResourceDefinition,
        old: &CustomResourceDefinition,
    ) {
        new.status = old.status.clone();
        let generation = old.metadata.as_ref().map_or(0, |m| m.generation);
        let bumped = if new.spec != old.spec {
            generation + 1
        } else {
            generation
        };
        new.meta_mut_generation(bumped);
        if let Some(spec) = &new.spec {
            let v = storage_version(spec);
            let status = new.status.get_or_insert_with(Default::default);
            if !v.is_empty() && !status.stored_versions.contains(&v) {
                status.stored_versions.push(v);
            }
        }
    }

    fn validate_update(
        &self,
        new: &CustomResourceDefinition,
        old: &CustomResourceDefinition,
    ) -> Violations {
        let mut v = crate::offload::violations(|| validate_definition_update(new, Some(old)));
        let (Some(n), Some(o)) = (&new.spec, &old.spec) else {
            return v;
        };
        let immutable = |v: &mut Violations, field: &str, new: &str, old: &str| {
            if new != old {
                v.push((
                    field.into(),
                    format!("Invalid value: {new:?}: field is immutable"),
                ));
            }
        };
        immutable(&mut v, "spec.group", &n.group, &o.group);
        let plural = |s: &CustomResourceDefinitionSpec| {
            s.names
                .as_ref()
                .map(|n| n.plural.clone())
                .unwrap_or_default()
        };
        immutable(&mut v, "spec.names.plural", &plural(n), &plural(o));
        if established(old) {
            immutable(&mut v, "spec.scope", &n.scope, &o.scope);
            let kind = |s: &CustomResourceDefinitionSpec| {
                s.names.as_ref().map(|n| n.kind.clone()).unwrap_or_default()
            };
            immutable(&mut v, "spec.names.kind", &kind(n), &kind(o));
        }
        v
    }

    fn has_status(&self) -> bool {
        true
    }

    fn unordered_encoding(&self) -> bool {
        // The schema is a `google.protobuf.Struct`.
        true
    }

    fn prepare_for_status_update(
        &self,
        new: &mut CustomResourceDefinition,
        old: &CustomResourceDefinition,
    ) {
        // Upstream's status strategy keeps the spec; metadata changes made through the status
        // endpoint are kept (its quirk, which the cleanup controller relies on to drop its
        // finalizer).
        new.spec = old.spec.clone();
    }
}

trait Generation {
    fn meta_mut_generation(&mut self, generation: i64);
}

impl Generation for CustomResourceDefinition {
    fn meta_mut_generation(&mut self, generation: i64) {
        self.metadata
            .get_or_insert_with(Default::default)
            .generation = generation;
    }
}

/// Whether the definition's `Established` condition is True.
pub fn established(crd: &CustomResourceDefinition) -> bool {
    condition(crd, "Established")
}

/// Whether the definition's condition `kind` is True.
pub fn condition(crd: &CustomResourceDefinition, kind: &str) -> bool {
    crd.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.r#type == kind && c.status == "True")
    })
}

/// A DNS-1035 label problem (upstream's `IsDNS1035Label`).
fn dns1035(s: &str) -> Option<String> {
    const MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.last().is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        None
    } else if b.len() > 63 {
        Some("must be no more than 63 characters".into())
    } else {
        Some(MSG.into())
    }
}

fn names_violations(n: &CustomResourceDefinitionNames, path: &str, v: &mut Violations) {
    for (field, value) in [("plural", &n.plural), ("singular", &n.singular)] {
        if value.is_empty() {
            v.push((format!("{path}.{field}"), "Required value".into()));
        } else if let Some(e) = dns1035(value) {
            v.push((
                format!("{path}.{field}"),
                format!("Invalid value: {value:?}: {e}"),
            ));
        }
    }
    for (field, list) in [
        ("shortNames", &n.short_names),
        ("categories", &n.categories),
    ] {
        for (i, value) in list.iter().enumerate() {
            if let Some(e) = dns1035(value) {
                v.push((
                    format!("{path}.{field}[{i}]"),
                    format!("Invalid value: {value:?}: {e}"),
                ));
            }
        }
    }
    for (field, value) in [("kind", &n.kind), ("listKind", &n.list_kind)] {
        if value.is_empty() {
            v.push((format!("{path}.{field}"), "Required value".into()));
        } else if let Some(e) = dns1035(&value.to_lowercase()) {
            v.push((
                format!("{path}.{field}"),
                format!(
                    "Invalid value: {value:?}: may have mixed case, but should otherwise match: {e}"
                ),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == n.list_kind {
        v.push((
            format!("{path}.listKind"),
            format!(
                "Invalid value: {:?}: kind and listKind may not be the same",
                n.list_kind
            ),
        ));
    }
}

/// Upstream's `ValidateCustomResourceDefinition` (what we model of it).
pub fn validate_definition(crd: &CustomResourceDefinition) -> Violations {
    validate_definition_update(crd, None)
}

/// [`validate_definition`] of an update from `old`: the per-rule cost limit is not applied to
/// a version whose schema did not change (upstream's `suppressPerExpressionCost`).
pub fn validate_definition_update(
    crd: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> Violations {
    let mut v = Violations::new();
    let Some(spec) = &crd.spec else {
        v.push(("spec".into(), "Required value".into()));
        return v;
    };
    let name = crd.metadata.as_ref().map_or("", |m| m.name.as_str());
    let plural = spec.names.as_ref().map_or("", |n| n.plural.as_str());
    if name != format!("{plural}.{}", spec.group) {
        v.push((
            "metadata.name".into(),
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if spec.group.is_empty() {
        v.push(("spec.group".into(), "Required value".into()));
    } else if let Some(e) = dns1123_subdomain(&spec.group) {
        v.push((
            "spec.group".into(),
            format!("Invalid value: {:?}: {e}", spec.group),
        ));
    } else if !spec.group.contains('.') {
        v.push((
            "spec.group".into(),
            format!(
                "Invalid value: {:?}: should be a domain with at least one dot",
                spec.group
            ),
        ));
    }
    // Upstream's protected groups need its approval annotation; the group that holds the
    // definitions themselves is refused outright (its keys would mix with theirs).
    let protected = |g: &str| {
        g == "k8s.io"
            || g.ends_with(".k8s.io")
            || g == "kubernetes.io"
            || g.ends_with(".kubernetes.io")
    };
    if spec.group == "apiextensions.k8s.io" {
        v.push((
            "spec.group".into(),
            "Invalid value: \"apiextensions.k8s.io\": the group of the definitions themselves cannot be used".into(),
        ));
    } else if protected(&spec.group) {
        let approval = crd
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.get("api-approved.kubernetes.io"));
        match approval {
            None => v.push((
                "metadata.annotations[api-approved.kubernetes.io]".into(),
                "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111".into(),
            )),
            Some(a) if !(a.starts_with("unapproved") || a.starts_with("https://") || a.starts_with("http://")) => v.push((
                "metadata.annotations[api-approved.kubernetes.io]".into(),
                format!("Invalid value: {a:?}: protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\""),
            )),
            Some(_) => {}
        }
    }
    match spec.scope.as_str() {
        "Namespaced" | "Cluster" => {}
        "" => v.push(("spec.scope".into(), "Required value".into())),
        other => v.push((
            "spec.scope".into(),
            format!("Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""),
        )),
    }
    match &spec.names {
        Some(n) => names_violations(n, "spec.names", &mut v),
        None => v.push(("spec.names".into(), "Required value".into())),
    }
    if spec.preserve_unknown_fields {
        v.push((
            "spec.preserveUnknownFields".into(),
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into(),
        ));
    }
    if let Some(c) = &spec.conversion
        && c.strategy != "None"
    {
        v.push((
            "spec.conversion.strategy".into(),
            format!(
                "Unsupported value: {:?}: supported values: \"None\" (kubestore does not call conversion webhooks)",
                c.strategy
            ),
        ));
    }
    validate_versions(spec, old.and_then(|o| o.spec.as_ref()), &mut v);
    v
}

/// A version's `openAPIV3Schema` as JSON: None without one, or why its text is not a JSON
/// object (a gRPC client sends the text; REST's decoder writes it from the object).
pub fn schema_object(
    version: &CustomResourceDefinitionVersion,
) -> Option<Result<serde_json::Value, String>> {
    Some(match version.schema_value()? {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => Err("Invalid value: must be JSON text of an object".into()),
        Err(e) => Err(format!(
            "Invalid value: must be JSON text of an object: {e}"
        )),
    })
}

/// [`schema_object`] of a stored definition (validated when written), None when it has none.
pub fn schema_json(version: &CustomResourceDefinitionVersion) -> Option<serde_json::Value> {
    schema_object(version)?.ok()
}

/// The schema of `version` as it is served (`custom::kinds`) and validated (here): built
/// from its `openAPIV3Schema`, with its status subresource, by `openapi::Schema::build`, so
/// that a definition accepted is one whose every version serves. None without a schema; the
/// problems (paths relative to `openAPIV3Schema`) otherwise.
pub fn version_schema(
    version: &CustomResourceDefinitionVersion,
) -> Option<Result<Arc<schema::Schema>, schema::Problems>> {
    let json = match schema_object(version)? {
        Ok(json) => json,
        Err(e) => return Some(Err(vec![(String::new(), e)])),
    };
    let status = version
        .subresources
        .as_ref()
        .is_some_and(|s| s.status.is_some());
    Some(schema::Schema::build(&json, status))
}

fn validate_versions(
    spec: &CustomResourceDefinitionSpec,
    old: Option<&CustomResourceDefinitionSpec>,
    v: &mut Violations,
) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, version) in spec.versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        if let Some(e) = dns1035(&version.name) {
            v.push((
                format!("{path}.name"),
                format!("Invalid value: {:?}: {e}", version.name),
            ));
        }
        if !seen.insert(version.name.as_str()) {
            v.push((
                "spec.versions".into(),
                "Invalid value: must contain unique version names".into(),
            ));
        }
        let mut parsed = None;
        let schema = format!("{path}.schema.openAPIV3Schema");
        let problems = match version_schema(version) {
            None => vec![(String::new(), "Required value: schemas are required".into())],
            Some(Ok(s)) => {
                // Upstream estimates the rules of a structural schema only, and skips the
                // per-rule limit for a version whose schema did not change.
                let unchanged = old
                    .and_then(|o| o.versions.iter().find(|x| x.name == version.name))
                    .is_some_and(|o| schema_json(o) == schema_json(version));
                let problems = crate::custom::openapi::costs::check(&s.root, !unchanged);
                parsed = Some(s);
                problems
            }
            Some(Err(problems)) => problems,
        };
        // Problems are relative to the schema ("" is the schema itself).
        for (field, e) in problems {
            let field = if field.is_empty() {
                schema.clone()
            } else {
                format!("{schema}.{field}")
            };
            v.push((field, e));
        }
        if version.deprecation_warning.is_some() && !version.deprecated {
            v.push((
                format!("{path}.deprecationWarning"),
                "Invalid value: can only be set for deprecated versions".into(),
            ));
        }
        for (j, c) in version.additional_printer_columns.iter().enumerate() {
            let p = format!("{path}.additionalPrinterColumns[{j}]");
            if c.name.is_empty() {
                v.push((format!("{p}.name"), "Required value".into()));
            }
            if !matches!(
                c.r#type.as_str(),
                "boolean" | "date" | "integer" | "number" | "string"
            ) {
                v.push((
                    format!("{p}.type"),
                    format!(
                        "Unsupported value: {:?}: must be one of boolean,date,integer,number,string",
                        c.r#type
                    ),
                ));
            }
            if !c.json_path.starts_with('.') {
                v.push((
                    format!("{p}.jsonPath"),
                    format!(
                        "Invalid value: {:?}: must be a simple json path starting with .",
                        c.json_path
                    ),
                ));
            }
        }
        if version.selectable_fields.len() > 8 {
            v.push((
                format!("{path}.selectableFields"),
                format!(
                    "Too many: {}: must have at most 8 items",
                    version.selectable_fields.len()
                ),
            ));
        }
        for (j, f) in version.selectable_fields.iter().enumerate() {
            let p = format!("{path}.selectableFields[{j}].jsonPath");
            if f.json_path.is_empty() {
                v.push((p, "Required value".into()));
            } else if f.json_path.starts_with(".metadata") {
                v.push((
                    p,
                    format!(
                        "Invalid value: {:?}: must not point to fields in metadata",
                        f.json_path
                    ),
                ));
            } else if !f.json_path.starts_with('.') || f.json_path.contains('[') {
                v.push((
                    p,
                    format!(
                        "Invalid value: {:?}: is an invalid path: array notation is not allowed",
                        f.json_path
                    ),
                ));
            } else if let Some(s) = &parsed {
                match s.node(&f.json_path) {
                    None => v.push((
                        p,
                        format!(
                            "Invalid value: {:?}: does not refer to a valid field",
                            f.json_path
                        ),
                    )),
                    Some(n) if !matches!(n.ty.as_str(), "string" | "integer" | "boolean") => {
                        v.push((
                            p,
                            format!(
                                "Invalid value: {:?}: must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                                f.json_path
                            ),
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let storage = spec.versions.iter().filter(|x| x.storage).count();
    if storage != 1 {
        v.push((
            "spec.versions".into(),
            format!(
                "Invalid value: must have exactly one version marked as storage version, has {storage}"
            ),
        ));
    }
}

#[cfg(test)]
mod tests;
