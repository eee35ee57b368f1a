//! Custom kinds in the CLI, as kubectl handles them: a kind is looked up at run time among the
//! definitions registry-svc serves (by a manifest's `apiVersion` and `kind`, or by the plural,
//! singular, short name or kind typed after `get`), and printed with upstream's default columns
//! (NAME, with NAMESPACE under `-A`) plus the version's `additionalPrinterColumns` (simple
//! JSONPath; `date` columns as ages, as kubectl prints them; priority > 0 only with `-o wide`).
//! Definitions themselves: `apply -f`/`delete -f` of `apiextensions.k8s.io/v1` manifests and
//! `get crd`.

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest,
        CustomResourceColumnDefinition, CustomResourceDefinition, DeleteCustomObjectRequest,
        DeleteCustomResourceDefinitionRequest, GetCustomObjectRequest,
        GetCustomResourceDefinitionRequest, ListCustomObjectsRequest,
        ListCustomResourceDefinitionsRequest, UpdateCustomObjectRequest,
        UpdateCustomResourceDefinitionRequest, WatchCustomObjectsRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    meta::v1::{ListOptions, WatchEventType},
};
use serde_json::{Map, Value};
use tokio_stream::StreamExt;
use tonic::{Code, Status};

use crate::{Ch, MAX_RESPONSE_BYTES, get::GetOptions, manifest, pager::CHUNK_SIZE, table};

pub(crate) fn definitions_client(ch: &Ch) -> CustomResourceDefinitionsClient<Ch> {
    CustomResourceDefinitionsClient::new(ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES)
}

pub(crate) fn objects_client(ch: &Ch) -> CustomObjectsClient<Ch> {
    CustomObjectsClient::new(ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES)
}

/// A custom kind, resolved to what requests name.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// API group.
    pub group: String,
    /// The version used (the manifest's, or the storage version for `get`).
    pub version: String,
    /// Plural.
    pub plural: String,
    /// Kind.
    pub kind: String,
    /// Objects live in namespaces.
    pub namespaced: bool,
    /// The version's printer columns.
    pub columns: Vec<CustomResourceColumnDefinition>,
}

/// Every definition registry-svc has.
pub async fn definitions(ch: &Ch) -> Result<Vec<CustomResourceDefinition>, Status> {
    Ok(definitions_client(ch)
        .list(ListCustomResourceDefinitionsRequest { options: None })
        .await?
        .into_inner()
        .items)
}

fn accepted(
    crd: &CustomResourceDefinition,
) -> Option<kubestore_proto::apiextensions::v1::CustomResourceDefinitionNames> {
    crd.status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .filter(|n| !n.plural.is_empty())
}

fn resolved(crd: &CustomResourceDefinition, version: &str) -> Option<Resolved> {
    let spec = crd.spec.as_ref()?;
    let names = accepted(crd)?;
    let v = spec
        .versions
        .iter()
        .find(|v| v.name == version && v.served)?;
    Some(Resolved {
        group: spec.group.clone(),
        version: v.name.clone(),
        plural: names.plural,
        kind: names.kind,
        namespaced: spec.scope == "Namespaced",
        columns: v.additional_printer_columns.clone(),
    })
}

/// The kind a manifest's `apiVersion` (`group/version`) and `kind` name.
pub fn by_kind(
    defs: &[CustomResourceDefinition],
    api_version: &str,
    kind: &str,
) -> Option<Resolved> {
    let (group, version) = api_version.split_once('/')?;
    defs.iter()
        .filter(|d| d.spec.as_ref().is_some_and(|s| s.group == group))
        .filter(|d| accepted(d).is_some_and(|n| n.kind == kind))
        .find_map(|d| resolved(d, version))
}

/// The kind `name` (plural, singular, short name or kind, any case; `plural.group` too) names,
/// in its storage version (or its first served one).
pub fn by_name(defs: &[CustomResourceDefinition], name: &str) -> Option<Resolved> {
    let name = name.to_lowercase();
    defs.iter().find_map(|d| {
        let spec = d.spec.as_ref()?;
        let n = accepted(d)?;
        let matches = n.plural == name
            || n.singular == name
            || n.short_names.contains(&name)
            || n.kind.to_lowercase() == name
            || format!("{}.{}", n.plural, spec.group) == name;
        if !matches {
            return None;
        }
        let version = spec
            .versions
            .iter()
            .find(|v| v.storage && v.served)
            .or_else(|| spec.versions.iter().find(|v| v.served))?;
        resolved(d, &version.name)
    })
}

pub(crate) fn to_struct(m: Map<String, Value>) -> Result<pbjson_types::Struct, Status> {
    serde_json::from_value(Value::Object(m)).map_err(|e| Status::invalid_argument(e.to_string()))
}

/// A Struct as JSON: numbers travel as doubles, so whole ones are integers again.
pub fn from_struct(s: &pbjson_types::Struct) -> Value {
    fn whole(v: Value) -> Value {
        match v {
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15 => {
                    Value::from(f as i64)
                }
                _ => Value::Number(n),
            },
            Value::Array(a) => Value::Array(a.into_iter().map(whole).collect()),
            Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, whole(v))).collect()),
            other => other,
        }
    }
    whole(serde_json::to_value(s).unwrap_or(Value::Null))
}

/// A custom object's namespace: its own, else `default_ns` ("" for a cluster-scoped kind).
pub(crate) fn namespace_of(obj: &Map<String, Value>, r: &Resolved, default_ns: &str) -> String {
    if !r.namespaced {
        return String::new();
    }
    obj.get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(default_ns)
        .to_string()
}

/// A custom object's name.
pub(crate) fn name_of(obj: &Map<String, Value>) -> String {
    obj.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// `apply` of a definition: created, or replaced at its stored resourceVersion.
pub async fn apply_definition(
    ch: &Ch,
    crd: CustomResourceDefinition,
    dry_run: bool,
) -> Result<String, Status> {
    let dry = crate::apply::dry_suffix(dry_run);
    let mut c = definitions_client(ch);
    let name = crd
        .metadata
        .as_ref()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    let what = format!("customresourcedefinition.apiextensions.k8s.io/{name}");
    match c
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(crd.clone()),
            dry_run,
        })
        .await
    {
        Ok(_) => return Ok(format!("{what} created{dry}")),
        Err(s) if s.code() == Code::AlreadyExists => {}
        Err(s) => return Err(s),
    }
    let stored = c
        .get(GetCustomResourceDefinitionRequest { name: name.clone() })
        .await?
        .into_inner();
    let rv = stored
        .metadata
        .as_ref()
        .map(|m| m.resource_version.clone())
        .unwrap_or_default();
    let mut next = crd;
    next.metadata
        .get_or_insert_with(Default::default)
        .resource_version = rv.clone();
    let updated = c
        .update(UpdateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(next),
            dry_run,
        })
        .await?
        .into_inner();
    let now = updated
        .metadata
        .map(|m| m.resource_version)
        .unwrap_or_default();
    Ok(if now == rv && !dry_run {
        format!("{what} unchanged")
    } else {
        format!("{what} configured{dry}")
    })
}

/// `delete -f` of a definition.
pub async fn delete_definition(
    ch: &Ch,
    crd: &CustomResourceDefinition,
    dry_run: bool,
) -> Result<String, Status> {
    let name = crd
        .metadata
        .as_ref()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    delete_definition_named(ch, &name, dry_run).await
}

/// `apply` of a custom object (its kind looked up in `defs`).
pub async fn apply_object(
    ch: &Ch,
    defs: &[CustomResourceDefinition],
    default_ns: &str,
    obj: Map<String, Value>,
    dry_run: bool,
) -> Result<String, Status> {
    let dry = crate::apply::dry_suffix(dry_run);
    let r = resolve_manifest(defs, &obj)?;
    let ns = namespace_of(&obj, &r, default_ns);
    let name = name_of(&obj);
    let what = format!("{}.{}/{name}", r.kind.to_lowercase(), r.group);
    let mut c = objects_client(ch);
    match c
        .create(CreateCustomObjectRequest {
            group: r.group.clone(),
            version: r.version.clone(),
            plural: r.plural.clone(),
            namespace: ns.clone(),
            object: Some(to_struct(obj.clone())?),
            dry_run,
        })
        .await
    {
        Ok(_) => return Ok(format!("{what} created{dry}")),
        Err(s) if s.code() == Code::AlreadyExists => {}
        Err(s) => return Err(s),
    }
    let stored = from_struct(
        &c.get(GetCustomObjectRequest {
            group: r.group.clone(),
            version: r.version.clone(),
            plural: r.plural.clone(),
            namespace: ns.clone(),
            name,
        })
        .await?
        .into_inner(),
    );
    let rv = stored["metadata"]["resourceVersion"].clone();
    let mut next = obj;
    if let Some(Value::Object(m)) = next.get_mut("metadata") {
        m.insert("resourceVersion".into(), rv.clone());
    }
    let updated = from_struct(
        &c.update(UpdateCustomObjectRequest {
            group: r.group,
            version: r.version,
            plural: r.plural,
            namespace: ns,
            object: Some(to_struct(next)?),
            dry_run,
        })
        .await?
        .into_inner(),
    );
    Ok(
        if updated["metadata"]["resourceVersion"] == rv && !dry_run {
            format!("{what} unchanged")
        } else {
            format!("{what} configured{dry}")
        },
    )
}

/// `delete -f` of a custom object.
pub async fn delete_object(
    ch: &Ch,
    defs: &[CustomResourceDefinition],
    default_ns: &str,
    obj: Map<String, Value>,
    dry_run: bool,
) -> Result<String, Status> {
    let r = resolve_manifest(defs, &obj)?;
    let namespace = namespace_of(&obj, &r, default_ns);
    delete_named(ch, &r, &namespace, &name_of(&obj), dry_run).await
}

/// The object `name` of the resolved kind `r` in `ns`, as upstream's JSON, and its UID.
pub async fn get_value(
    ch: &Ch,
    r: &Resolved,
    ns: &str,
    name: &str,
) -> Result<(Value, String), Status> {
    let obj = from_struct(
        &objects_client(ch)
            .get(GetCustomObjectRequest {
                group: r.group.clone(),
                version: r.version.clone(),
                plural: r.plural.clone(),
                namespace: if r.namespaced {
                    ns.into()
                } else {
                    String::new()
                },
                name: name.into(),
            })
            .await?
            .into_inner(),
    );
    let uid = obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Ok((obj, uid))
}

/// The definition `name` as upstream's JSON (with apiVersion and kind), and its UID.
pub async fn get_definition_value(ch: &Ch, name: &str) -> Result<(Value, String), Status> {
    let crd = definitions_client(ch)
        .get(GetCustomResourceDefinitionRequest { name: name.into() })
        .await?
        .into_inner();
    let uid = crd
        .metadata
        .as_ref()
        .map(|m| m.uid.clone())
        .unwrap_or_default();
    let mut v = serde_json::to_value(&crd).map_err(|e| Status::internal(e.to_string()))?;
    if let Value::Object(m) = &mut v {
        m.insert("apiVersion".into(), "apiextensions.k8s.io/v1".into());
        m.insert("kind".into(), "CustomResourceDefinition".into());
    }
    Ok((v, uid))
}

/// `kind.group/name`, kubectl's `-o name` for a custom kind (`crontab.stable.example.com/a`).
fn name_line(r: &Resolved, obj: &Value) -> String {
    format!(
        "{}.{}/{}",
        r.kind.to_lowercase(),
        r.group,
        obj["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// Deletes the object `name` of the resolved kind `r` in `ns` (ignored for cluster-scoped
/// kinds).
pub async fn delete_named(
    ch: &Ch,
    r: &Resolved,
    ns: &str,
    name: &str,
    dry_run: bool,
) -> Result<String, Status> {
    objects_client(ch)
        .delete(DeleteCustomObjectRequest {
            group: r.group.clone(),
            version: r.version.clone(),
            plural: r.plural.clone(),
            namespace: if r.namespaced {
                ns.into()
            } else {
                String::new()
            },
            name: name.into(),
            options: crate::apply::delete_options(dry_run),
        })
        .await?;
    Ok(format!(
        "{}.{} \"{name}\" deleted{}",
        r.kind.to_lowercase(),
        r.group,
        crate::apply::dry_suffix(dry_run)
    ))
}

/// Deletes the definition `name` (its objects first, by registry-svc's cleanup).
pub async fn delete_definition_named(ch: &Ch, name: &str, dry_run: bool) -> Result<String, Status> {
    definitions_client(ch)
        .delete(DeleteCustomResourceDefinitionRequest {
            name: name.into(),
            options: crate::apply::delete_options(dry_run),
        })
        .await?;
    Ok(format!(
        "customresourcedefinition.apiextensions.k8s.io \"{name}\" deleted{}",
        crate::apply::dry_suffix(dry_run)
    ))
}

/// The kind a custom object's `apiVersion` and `kind` name, or NOT_FOUND as kubectl words it.
pub(crate) fn resolve_manifest(
    defs: &[CustomResourceDefinition],
    obj: &Map<String, Value>,
) -> Result<Resolved, Status> {
    let api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    by_kind(defs, api, kind).ok_or_else(|| {
        Status::not_found(format!(
            "no matches for kind {kind:?} in version {api:?}: no custom resource definition serves it"
        ))
    })
}

/// The value at a printer column's JSONPath (`.spec.replicas`, `.status.conditions[0].type`):
/// the first it finds.
fn at_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    crate::jsonpath::first(path, obj)
}

/// Seconds since the epoch of an RFC 3339 UTC time (`2026-01-02T03:04:05Z`).
fn epoch(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from civil (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

fn cell(v: Option<&Value>, ty: &str, now: i64) -> String {
    match (v, ty) {
        (None | Some(Value::Null), _) => "<none>".into(),
        (Some(Value::String(s)), "date") => table::age(epoch(s), now),
        (Some(Value::String(s)), _) => s.clone(),
        (Some(other), _) => other.to_string(),
    }
}

fn header(r: &Resolved, o: &GetOptions) -> Vec<String> {
    let mut h = Vec::new();
    if o.all_namespaces && r.namespaced {
        h.push("NAMESPACE".to_string());
    }
    h.push("NAME".into());
    let wide = o.output == "wide";
    let columns: Vec<&CustomResourceColumnDefinition> = r
        .columns
        .iter()
        .filter(|c| wide || c.priority == 0)
        .collect();
    h.extend(columns.iter().map(|c| c.name.to_uppercase()));
    // kubectl adds AGE when the definition's columns do not show the creation time.
    if !columns
        .iter()
        .any(|c| c.json_path == ".metadata.creationTimestamp")
    {
        h.push("AGE".into());
    }
    h
}

fn row(r: &Resolved, o: &GetOptions, obj: &Value) -> Vec<String> {
    let now = table::now();
    let mut cells = Vec::new();
    if o.all_namespaces && r.namespaced {
        cells.push(cell(at_path(obj, ".metadata.namespace"), "string", now));
    }
    cells.push(cell(at_path(obj, ".metadata.name"), "string", now));
    let wide = o.output == "wide";
    let columns: Vec<&CustomResourceColumnDefinition> = r
        .columns
        .iter()
        .filter(|c| wide || c.priority == 0)
        .collect();
    for c in &columns {
        cells.push(cell(at_path(obj, &c.json_path), &c.r#type, now));
    }
    if !columns
        .iter()
        .any(|c| c.json_path == ".metadata.creationTimestamp")
    {
        cells.push(cell(
            at_path(obj, ".metadata.creationTimestamp"),
            "date",
            now,
        ));
    }
    cells
}

/// `get` of a custom kind; `out` receives each chunk of output.
pub async fn get(
    ch: &Ch,
    r: &Resolved,
    o: &GetOptions,
    mut out: impl FnMut(String),
) -> Result<(), Status> {
    let ns = if o.all_namespaces || !r.namespaced {
        ""
    } else {
        o.namespace.as_str()
    };
    let structured = manifest::is_structured(&o.output);
    let mut c = objects_client(ch);
    if let Some(name) = &o.name
        && !o.watch
    {
        let obj = from_struct(
            &c.get(GetCustomObjectRequest {
                group: r.group.clone(),
                version: r.version.clone(),
                plural: r.plural.clone(),
                namespace: ns.into(),
                name: name.clone(),
            })
            .await?
            .into_inner(),
        );
        out(if o.output == "name" {
            name_line(r, &obj)
        } else if structured {
            manifest::render(&obj, &o.output).map_err(Status::internal)?
        } else {
            table::render(&header(r, o), &[row(r, o, &obj)])
        });
        return Ok(());
    }
    let options = o.list_options();
    // Pages of 500, as kubectl's --chunk-size.
    let mut items = Vec::new();
    let mut token = String::new();
    let mut rv = String::new();
    loop {
        let page = c
            .list(ListCustomObjectsRequest {
                group: r.group.clone(),
                version: r.version.clone(),
                plural: r.plural.clone(),
                namespace: ns.into(),
                options: Some(ListOptions {
                    limit: CHUNK_SIZE,
                    r#continue: token.clone(),
                    ..options.clone()
                }),
            })
            .await?
            .into_inner();
        let meta = page.metadata.unwrap_or_default();
        if rv.is_empty() {
            rv = meta.resource_version;
        }
        items.extend(page.items.iter().map(from_struct));
        if meta.r#continue.is_empty() {
            break;
        }
        token = meta.r#continue;
    }
    if o.output == "name" {
        if !items.is_empty() {
            out(items
                .iter()
                .map(|i| name_line(r, i))
                .collect::<Vec<_>>()
                .join("\n"));
        }
    } else if structured {
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": rv},
            "items": items,
        });
        out(manifest::render(&list, &o.output).map_err(Status::internal)?);
    } else if items.is_empty() && !o.watch {
        out(if ns.is_empty() {
            "No resources found".to_string()
        } else {
            format!("No resources found in {ns} namespace.")
        });
    } else {
        let rows: Vec<Vec<String>> = items.iter().map(|i| row(r, o, i)).collect();
        out(table::render(&header(r, o), &rows));
    }
    if !o.watch {
        return Ok(());
    }
    let mut events = c
        .watch(WatchCustomObjectsRequest {
            group: r.group.clone(),
            version: r.version.clone(),
            plural: r.plural.clone(),
            namespace: ns.into(),
            options: Some(ListOptions {
                resource_version: rv,
                ..options
            }),
        })
        .await?
        .into_inner();
    while let Some(e) = events.next().await {
        let e = e?;
        if e.r#type == WatchEventType::Bookmark as i32 {
            continue;
        }
        let obj = e.object.as_ref().map(from_struct).unwrap_or(Value::Null);
        out(if o.output == "name" {
            name_line(r, &obj)
        } else if structured {
            manifest::render(&obj, &o.output).map_err(Status::internal)?
        } else {
            let t = table::render(&header(r, o), &[row(r, o, &obj)]);
            t.lines().nth(1).unwrap_or_default().to_string()
        });
    }
    Ok(())
}

/// `get crd`: NAME and CREATED AT, as kubectl prints definitions.
pub async fn get_definitions(
    ch: &Ch,
    o: &GetOptions,
    mut out: impl FnMut(String),
) -> Result<(), Status> {
    let mut defs = definitions(ch).await?;
    if let Some(name) = &o.name {
        defs.retain(|d| d.metadata.as_ref().is_some_and(|m| &m.name == name));
        if defs.is_empty() {
            return Err(Status::not_found(format!(
                "customresourcedefinitions.apiextensions.k8s.io {name:?} not found"
            )));
        }
    }
    if o.output == "name" {
        let names: Vec<String> = defs
            .iter()
            .map(|d| {
                format!(
                    "customresourcedefinition.apiextensions.k8s.io/{}",
                    d.metadata.as_ref().map_or("", |m| m.name.as_str())
                )
            })
            .collect();
        if !names.is_empty() {
            out(names.join("\n"));
        }
        return Ok(());
    }
    if manifest::is_structured(&o.output) {
        let items: Vec<Value> = defs
            .iter()
            .map(|d| {
                let mut v = serde_json::to_value(d).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("apiVersion".into(), "apiextensions.k8s.io/v1".into());
                    m.insert("kind".into(), "CustomResourceDefinition".into());
                }
                v
            })
            .collect();
        let doc = if o.name.is_some() && items.len() == 1 {
            items.into_iter().next().unwrap_or(Value::Null)
        } else {
            serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
        };
        out(manifest::render(&doc, &o.output).map_err(Status::internal)?);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = defs
        .iter()
        .map(|d| {
            let m = d.metadata.clone().unwrap_or_default();
            let created = m
                .creation_timestamp
                .map(|t| table::rfc3339(t.seconds))
                .unwrap_or_else(|| "<unknown>".into());
            vec![m.name, created]
        })
        .collect();
    out(table::render(&["NAME".into(), "CREATED AT".into()], &rows));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_paths() {
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch("2026-11-23T22:00:00Z"), Some(1_795_471_200));
        let obj = serde_json::json!({"spec": {"replicas": 3, "image": "x"}});
        assert_eq!(cell(at_path(&obj, ".spec.replicas"), "integer", 0), "3");
        assert_eq!(cell(at_path(&obj, ".spec.image"), "string", 0), "x");
        assert_eq!(cell(at_path(&obj, ".spec.none"), "string", 0), "<none>");
    }
}
