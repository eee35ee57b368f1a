//! `kubestore apply -f FILE` and `kubestore delete -f FILE`, for Kubernetes-shaped manifests.
//!
//! apply creates each object, or, when it exists, updates it from the manifest (a replace at
//! the stored resourceVersion; no three-way merge): `pod/web created`, `configured` or
//! `unchanged`, as kubectl prints. delete deletes each object with default options.

use tonic::{Code, Status};

use crate::{
    Ch, custom, describe,
    kinds::Kind,
    manifest::{self, Object, Parsed},
};

/// Whether a line apply/delete returned is a diagnostic, for standard error (as kubectl
/// writes warnings and errors), rather than a result for standard output.
pub fn is_diagnostic(line: &str) -> bool {
    line.starts_with("Warning:")
        || line.starts_with("Error from server")
        || line.starts_with("error:")
}

/// Reads a manifest file (`-` is standard input) and parses each document on its own: the
/// documents it could read, and an `error:` line for each it could not (reported after the
/// others are applied; the command then exits 1, as kubectl does).
pub fn read(path: &str) -> Result<(Vec<Parsed>, Vec<String>), String> {
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("reading stdin: {e}"))?
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?
    };
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    for doc in manifest::parse_each(&text) {
        match doc {
            Ok(d) => docs.push(d),
            Err(e) => errors.push(format!("error: {path}: {e}")),
        }
    }
    Ok((docs, errors))
}

/// The definitions, read once and only when a document is a custom object (which may follow
/// its definition in the same file: read after the definitions before it were applied).
async fn definitions_for(
    ch: &Ch,
    cached: &mut Option<Vec<kubestore_proto::apiextensions::v1::CustomResourceDefinition>>,
) -> Result<Vec<kubestore_proto::apiextensions::v1::CustomResourceDefinition>, Status> {
    if cached.is_none() {
        *cached = Some(custom::definitions(ch).await?);
    }
    Ok(cached.clone().unwrap_or_default())
}

/// What a server dry run adds to each line (kubectl's words).
pub(crate) fn dry_suffix(dry_run: bool) -> &'static str {
    if dry_run { " (server dry run)" } else { "" }
}

/// Applies every object; returns the lines to print and whether all succeeded (a document that
/// fails is reported and the others are applied all the same, as kubectl does).
pub async fn apply(ch: &Ch, default_ns: &str, docs: Vec<Parsed>) -> (Vec<String>, bool) {
    apply_with(ch, default_ns, docs, false).await
}

/// [`apply`]; with `dry_run`, every write is the server's dry run (validated and answered,
/// nothing stored: kubectl's `--dry-run=server`).
pub async fn apply_with(
    ch: &Ch,
    default_ns: &str,
    docs: Vec<Parsed>,
    dry_run: bool,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    let mut defs = None;
    for doc in docs {
        for f in &doc.ignored {
            lines.push(format!(
                "Warning: unknown field {f:?} ignored (kubestore does not model it)"
            ));
        }
        let result = match doc.object {
            Object::Pod(o) => apply_one(ch, default_ns, o, dry_run).await,
            Object::ConfigMap(o) => apply_one(ch, default_ns, o, dry_run).await,
            Object::Event(o) => apply_one(ch, default_ns, o, dry_run).await,
            Object::Secret(o) => apply_one(ch, default_ns, o, dry_run).await,
            Object::Definition(d) => {
                let r = custom::apply_definition(ch, *d, dry_run).await;
                // A custom object later in the file may be of this kind: read them again.
                defs = None;
                if r.is_ok() && !dry_run {
                    wait_served(ch).await;
                }
                r
            }
            Object::Custom(o) => match definitions_for(ch, &mut defs).await {
                Ok(d) => custom::apply_object(ch, &d, default_ns, o, dry_run).await,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(line) => lines.push(line),
            Err(s) => {
                ok = false;
                lines.push(describe(&s));
            }
        }
    }
    (lines, ok)
}

/// A definition just applied is served once its names are accepted; wait a moment for it, as
/// a definition followed by its objects in one file is the usual way to ship them.
async fn wait_served(ch: &Ch) {
    for _ in 0..50 {
        if let Ok(defs) = custom::definitions(ch).await
            && defs.iter().all(|d| {
                d.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.r#type == "NamesAccepted" && !c.status.is_empty())
                })
            })
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn apply_one<K: Kind>(
    ch: &Ch,
    default_ns: &str,
    obj: K,
    dry_run: bool,
) -> Result<String, Status> {
    let m = obj.meta();
    let ns = if m.namespace.is_empty() {
        default_ns.to_string()
    } else {
        m.namespace.clone()
    };
    let what = format!("{}/{}", K::KIND.to_lowercase(), m.name);
    let dry = dry_suffix(dry_run);
    match K::create(ch, &ns, obj.clone(), dry_run).await {
        Ok(_) => return Ok(format!("{what} created{dry}")),
        Err(s) if s.code() == Code::AlreadyExists => {}
        Err(s) => return Err(s),
    }
    // Replace at the stored version; the server keeps what it owns (uid, timestamps, status).
    let stored = K::get(ch, &ns, &m.name).await?;
    let sm = stored.meta();
    let mut next = obj;
    next.meta_mut().resource_version = sm.resource_version.clone();
    let updated = K::update(ch, &ns, next, dry_run).await?;
    Ok(
        if updated.meta().resource_version == sm.resource_version && !dry_run {
            format!("{what} unchanged")
        } else {
            format!("{what} configured{dry}")
        },
    )
}

/// Deletes every object; returns the lines to print and whether all succeeded.
pub async fn delete(ch: &Ch, default_ns: &str, docs: Vec<Parsed>) -> (Vec<String>, bool) {
    delete_with(ch, default_ns, docs, false).await
}

/// [`delete`]; with `dry_run`, the server's dry run (nothing deleted).
pub async fn delete_with(
    ch: &Ch,
    default_ns: &str,
    docs: Vec<Parsed>,
    dry_run: bool,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    let mut defs = None;
    // Objects before definitions: an object's kind must still be served when it is deleted.
    let (definitions, objects): (Vec<Parsed>, Vec<Parsed>) = docs
        .into_iter()
        .partition(|d| matches!(d.object, Object::Definition(_)));
    for doc in objects.into_iter().chain(definitions) {
        let result = match doc.object {
            Object::Pod(o) => delete_one(ch, default_ns, o, dry_run).await,
            Object::ConfigMap(o) => delete_one(ch, default_ns, o, dry_run).await,
            Object::Event(o) => delete_one(ch, default_ns, o, dry_run).await,
            Object::Secret(o) => delete_one(ch, default_ns, o, dry_run).await,
            Object::Definition(d) => custom::delete_definition(ch, &d, dry_run).await,
            Object::Custom(o) => match definitions_for(ch, &mut defs).await {
                Ok(d) => custom::delete_object(ch, &d, default_ns, o, dry_run).await,
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(line) => lines.push(line),
            Err(s) => {
                ok = false;
                lines.push(describe(&s));
            }
        }
    }
    (lines, ok)
}

/// `kubestore delete KIND NAME...` (kubectl's form): deletes each named object of the kind
/// (`pods`/`pod`/`po`, `configmaps`/`cm`, `events`/`ev`, `secrets`, `crd`, or a custom kind by
/// plural, singular, short name or kind) in `ns`; returns the lines to print and whether all
/// succeeded (a missing one is reported and the others deleted, as kubectl does).
pub async fn delete_named(
    ch: &Ch,
    ns: &str,
    kind: &str,
    names: &[String],
    dry_run: bool,
) -> (Vec<String>, bool) {
    use crate::resource::{Named, resolve, unknown};
    use kubestore_proto::core::v1::{ConfigMap, Event, Pod, Secret};
    let named = match resolve(ch, kind).await {
        Ok(Some(n)) => n,
        Ok(None) => return (vec![unknown(kind)], false),
        Err(s) => return (vec![describe(&s)], false),
    };
    let mut lines = Vec::new();
    let mut ok = true;
    for name in names {
        let result = match &named {
            Named::Pods => delete_by_name::<Pod>(ch, ns, name, dry_run).await,
            Named::ConfigMaps => delete_by_name::<ConfigMap>(ch, ns, name, dry_run).await,
            Named::Events => delete_by_name::<Event>(ch, ns, name, dry_run).await,
            Named::Secrets => delete_by_name::<Secret>(ch, ns, name, dry_run).await,
            Named::Definitions => custom::delete_definition_named(ch, name, dry_run).await,
            Named::Custom(r) => custom::delete_named(ch, r, ns, name, dry_run).await,
        };
        match result {
            Ok(line) => lines.push(line),
            Err(s) => {
                ok = false;
                lines.push(describe(&s));
            }
        }
    }
    (lines, ok)
}

/// Delete options for a (possibly dry-run) delete.
pub(crate) fn delete_options(dry_run: bool) -> Option<kubestore_proto::meta::v1::DeleteOptions> {
    dry_run.then(|| kubestore_proto::meta::v1::DeleteOptions {
        dry_run: true,
        ..Default::default()
    })
}

async fn delete_by_name<K: Kind>(
    ch: &Ch,
    ns: &str,
    name: &str,
    dry_run: bool,
) -> Result<String, Status> {
    K::delete(ch, ns, name, delete_options(dry_run)).await?;
    Ok(format!(
        "{} \"{name}\" deleted{}",
        K::KIND.to_lowercase(),
        dry_suffix(dry_run)
    ))
}

async fn delete_one<K: Kind>(
    ch: &Ch,
    default_ns: &str,
    obj: K,
    dry_run: bool,
) -> Result<String, Status> {
    let m = obj.meta();
    let ns = if m.namespace.is_empty() {
        default_ns
    } else {
        m.namespace.as_str()
    };
    delete_by_name::<K>(ch, ns, &m.name, dry_run).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_and_errors_are_diagnostics_results_are_not() {
        assert!(is_diagnostic(
            "Warning: unknown field \"spec.ports\" ignored (kubestore does not model it)"
        ));
        assert!(is_diagnostic(
            "Error from server (Invalid): pods \"x\" is invalid"
        ));
        assert!(!is_diagnostic("pod/web created"));
        assert!(!is_diagnostic("configmap/settings unchanged"));
    }
}
