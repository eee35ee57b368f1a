//! `--dry-run=client`: what `apply`, `delete`, `label`, `annotate` and `patch` would do, told
//! without writing anything. As kubectl's client dry run, each object is still read (kubectl
//! reads the live object to tell "created" from "configured" and to find what it deletes); the
//! server validates nothing, so only `--dry-run=server` says whether a write would be taken.

use tonic::{Code, Status};

use crate::{
    Ch, custom, describe,
    kinds::Kind,
    manifest::{Object, Parsed},
    modify::{self, Target},
    resource::Named,
};

/// What kubectl appends to a client dry run's lines.
pub const SUFFIX: &str = " (dry run)";

/// The object a manifest document names (a custom one looked up in `defs`).
fn target_of(
    doc: &Object,
    default_ns: &str,
    defs: &[kubestore_proto::apiextensions::v1::CustomResourceDefinition],
) -> Result<Target, Status> {
    let named = |kind: Named, meta: kubestore_proto::meta::v1::ObjectMeta| Target {
        kind,
        namespace: if meta.namespace.is_empty() {
            default_ns.to_string()
        } else {
            meta.namespace
        },
        name: meta.name,
    };
    Ok(match doc {
        Object::Pod(o) => named(Named::Pods, o.meta()),
        Object::ConfigMap(o) => named(Named::ConfigMaps, o.meta()),
        Object::Event(o) => named(Named::Events, o.meta()),
        Object::Secret(o) => named(Named::Secrets, o.meta()),
        Object::Definition(d) => named(Named::Definitions, d.metadata.clone().unwrap_or_default()),
        Object::Custom(o) => {
            let r = custom::resolve_manifest(defs, o)?;
            Target {
                namespace: custom::namespace_of(o, &r, default_ns),
                name: custom::name_of(o),
                kind: Named::Custom(r),
            }
        }
    })
}

/// Whether the target exists.
async fn exists(ch: &Ch, t: &Target) -> Result<bool, Status> {
    match modify::read(ch, t).await {
        Ok(_) => Ok(true),
        Err(s) if s.code() == Code::NotFound => Ok(false),
        Err(s) => Err(s),
    }
}

/// `apply -f` (`applying`) or `delete -f` with `--dry-run=client`: a line per document and
/// whether all would succeed.
pub async fn manifest(
    ch: &Ch,
    default_ns: &str,
    docs: Vec<Parsed>,
    applying: bool,
) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    let defs = if docs.iter().any(|d| matches!(d.object, Object::Custom(_))) {
        match custom::definitions(ch).await {
            Ok(d) => d,
            Err(s) => return (vec![describe(&s)], false),
        }
    } else {
        Vec::new()
    };
    for doc in docs {
        let result = match target_of(&doc.object, default_ns, &defs) {
            Ok(t) => exists(ch, &t).await.map(|e| (t, e)),
            Err(s) => Err(s),
        };
        match result {
            Ok((t, true)) if applying => lines.push(format!("{} configured{SUFFIX}", t.what())),
            Ok((t, false)) if applying => lines.push(format!("{} created{SUFFIX}", t.what())),
            Ok((t, true)) => lines.push(deleted(&t)),
            Ok((t, false)) => {
                ok = false;
                lines.push(describe(&Status::not_found(format!(
                    "{} {:?} not found",
                    t.kind_word(),
                    t.name
                ))));
            }
            Err(s) => {
                ok = false;
                lines.push(describe(&s));
            }
        }
    }
    (lines, ok)
}

/// kubectl's line for a delete (`configmap "a" deleted (dry run)`).
fn deleted(t: &Target) -> String {
    format!("{} \"{}\" deleted{SUFFIX}", t.kind_word(), t.name)
}

/// `delete KIND NAME...` with `--dry-run=client`.
pub async fn delete_named(ch: &Ch, kind: Named, ns: &str, names: &[String]) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut ok = true;
    for name in names {
        let t = Target {
            kind: kind.clone(),
            namespace: ns.to_string(),
            name: name.clone(),
        };
        match modify::read(ch, &t).await {
            Ok(_) => lines.push(deleted(&t)),
            Err(s) => {
                ok = false;
                lines.push(describe(&s));
            }
        }
    }
    (lines, ok)
}
