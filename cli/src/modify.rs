//! `label`, `annotate`, `patch` and `edit`: one object of any kind (built-in, definition or
//! custom) is read, changed on its JSON in Kubernetes' shape, and written back as an update at
//! the resourceVersion read.
//!
//! Optimistic concurrency as kubectl does it: when someone else wrote the object in between
//! (ABORTED, `Conflict`), `label`/`annotate`/`patch` read it again and re-apply their change,
//! up to [`ATTEMPTS`] times, unless the change itself names a resourceVersion (then the
//! conflict is the answer: the caller asked for that version). `edit` never retries: what the
//! user edited was that version; on any failure their file is kept and named.

use kubestore_proto::{
    apiextensions::v1::{UpdateCustomObjectRequest, UpdateCustomResourceDefinitionRequest},
    core::v1::{ConfigMap, Event, Pod, Secret},
};
use serde_json::Value;
use tonic::{Code, Status};

use crate::{
    Ch, DryRun, custom, describe,
    kinds::Kind,
    manifest::{self, Object},
    resource::Named,
};

/// How many times a change is re-applied after losing a race with another writer.
pub const ATTEMPTS: usize = 5;

/// One object named on the command line.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its kind.
    pub kind: Named,
    /// Its namespace (ignored for cluster-scoped kinds).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Target {
    /// The kind as kubectl prints it before a name (`configmap`, `crontab.stable.example.com`).
    pub fn kind_word(&self) -> String {
        match &self.kind {
            Named::Pods => "pod".to_string(),
            Named::ConfigMaps => "configmap".into(),
            Named::Events => "event".into(),
            Named::Secrets => "secret".into(),
            Named::Definitions => "customresourcedefinition.apiextensions.k8s.io".into(),
            Named::Custom(r) => format!("{}.{}", r.kind.to_lowercase(), r.group),
        }
    }

    /// `kind/name` as kubectl prints it (`configmap/settings`, `crontab.stable.example.com/a`).
    pub fn what(&self) -> String {
        format!("{}/{}", self.kind_word(), self.name)
    }

    fn namespace_for(&self, namespaced: bool) -> String {
        if namespaced {
            self.namespace.clone()
        } else {
            String::new()
        }
    }
}

/// The object, as upstream's JSON (with `apiVersion` and `kind`).
pub async fn read(ch: &Ch, t: &Target) -> Result<Value, Status> {
    let ns = &t.namespace;
    Ok(match &t.kind {
        Named::Pods => manifest::to_value(&Pod::get(ch, ns, &t.name).await?),
        Named::ConfigMaps => manifest::to_value(&ConfigMap::get(ch, ns, &t.name).await?),
        Named::Events => manifest::to_value(&Event::get(ch, ns, &t.name).await?),
        Named::Secrets => manifest::to_value(&Secret::get(ch, ns, &t.name).await?),
        Named::Definitions => custom::get_definition_value(ch, &t.name).await?.0,
        Named::Custom(r) => custom::get_value(ch, r, ns, &t.name).await?.0,
    })
}

/// Writes `value` as an update of the target (at the resourceVersion it carries); returns the
/// warnings for fields kubestore does not model (dropped, as `apply` does).
pub async fn write(
    ch: &Ch,
    t: &Target,
    value: Value,
    dry_run: bool,
) -> Result<Vec<String>, Status> {
    let ns = &t.namespace;
    if let Named::Custom(r) = &t.kind {
        let Value::Object(map) = value else {
            return Err(Status::invalid_argument("the object is not a mapping"));
        };
        custom::objects_client(ch)
            .update(UpdateCustomObjectRequest {
                group: r.group.clone(),
                version: r.version.clone(),
                plural: r.plural.clone(),
                namespace: t.namespace_for(r.namespaced),
                object: Some(custom::to_struct(map)?),
                dry_run,
            })
            .await?;
        return Ok(Vec::new());
    }
    let parsed = manifest::from_value(value).map_err(Status::invalid_argument)?;
    let warnings = parsed
        .ignored
        .iter()
        .map(|f| format!("Warning: unknown field {f:?} ignored (kubestore does not model it)"))
        .collect();
    match (&t.kind, parsed.object) {
        (Named::Pods, Object::Pod(o)) => drop(Pod::update(ch, ns, o, dry_run).await?),
        (Named::ConfigMaps, Object::ConfigMap(o)) => {
            drop(ConfigMap::update(ch, ns, o, dry_run).await?)
        }
        (Named::Events, Object::Event(o)) => drop(Event::update(ch, ns, o, dry_run).await?),
        (Named::Secrets, Object::Secret(o)) => drop(Secret::update(ch, ns, o, dry_run).await?),
        (Named::Definitions, Object::Definition(d)) => drop(
            custom::definitions_client(ch)
                .update(UpdateCustomResourceDefinitionRequest {
                    custom_resource_definition: Some(*d),
                    dry_run,
                })
                .await?,
        ),
        _ => {
            return Err(Status::invalid_argument(
                "apiVersion and kind cannot be changed",
            ));
        }
    }
    Ok(warnings)
}

fn resource_version(v: &Value) -> Option<&str> {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Whether the object changed (a change that leaves it as it was writes nothing).
    pub changed: bool,
    /// Warnings to print (on standard error).
    pub warnings: Vec<String>,
}

/// Reads the target, applies `change` to it and writes the result at the version read; a
/// conflict with another writer reads and applies again (see the module doc). Errors are lines
/// to print: `error: ...` for the caller's input, `Error from server ...` for a refusal.
pub async fn modify(
    ch: &Ch,
    t: &Target,
    dry_run: DryRun,
    change: impl Fn(&Value) -> Result<(Value, Vec<String>), String>,
) -> Result<Changed, String> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = read(ch, t).await.map_err(|s| describe(&s))?;
        let (mut next, mut warnings) = change(&current).map_err(|e| format!("error: {e}"))?;
        if next == current || dry_run == DryRun::Client {
            // A client dry run stops here: what would change is known, nothing is written.
            return Ok(Changed {
                changed: next != current,
                warnings,
            });
        }
        // A change that names a version of its own is a precondition: no retry.
        let pinned = resource_version(&next).is_some_and(|v| Some(v) != resource_version(&current));
        if !pinned
            && let (Some(rv), Some(Value::Object(m))) =
                (resource_version(&current), next.get_mut("metadata"))
        {
            m.insert("resourceVersion".into(), rv.into());
        }
        match write(ch, t, next, dry_run == DryRun::Server).await {
            Ok(w) => {
                warnings.extend(w);
                return Ok(Changed {
                    changed: true,
                    warnings,
                });
            }
            Err(s) if s.code() == Code::Aborted && !pinned && attempt < ATTEMPTS => {}
            Err(s) => return Err(describe(&s)),
        }
    }
}

/// What `edit` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edited {
    /// The update was taken.
    Edited {
        /// Warnings to print.
        warnings: Vec<String>,
    },
    /// The file came back unchanged or empty: nothing written (kubectl's "Edit cancelled").
    Cancelled,
}

const EDIT_HEADER: &str = "# Please edit the object below. Lines beginning with a '#' will be ignored,\n\
# and an empty file will abort the edit. If an error occurs while saving this file will be\n\
# reopened with the relevant failures.\n#\n";

/// `edit`: writes the object as YAML to a file, runs `editor` on it (a shell command line, as
/// `$EDITOR` is: `vi`, `code --wait`), and updates the object with what was saved, at the
/// resourceVersion it was read at. On a failure the saved file is kept and the error names it.
pub async fn edit(ch: &Ch, t: &Target, editor: &str, dry_run: bool) -> Result<Edited, String> {
    let current = read(ch, t).await.map_err(|s| describe(&s))?;
    let yaml = manifest::render(&current, "yaml").map_err(|e| format!("error: {e}"))?;
    let path = std::env::temp_dir().join(format!(
        "kubestore-edit-{}-{}.yaml",
        std::process::id(),
        t.name
    ));
    std::fs::write(&path, format!("{EDIT_HEADER}{yaml}"))
        .map_err(|e| format!("error: writing {}: {e}", path.display()))?;
    let keep = |e: String| format!("{e}\nA copy of your changes has been stored to {path:?}");
    let status = {
        let (editor, path) = (editor.to_string(), path.clone());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("sh")
                .arg(&path)
                .status()
        })
        .await
        .map_err(|e| format!("error: the editor: {e}"))?
    };
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return Err(keep(format!(
                "error: the editor {editor:?} exited with {s}"
            )));
        }
        Err(e) => {
            return Err(keep(format!(
                "error: cannot run the editor {editor:?}: {e}"
            )));
        }
    }
    let saved =
        std::fs::read_to_string(&path).map_err(|e| keep(format!("error: reading it back: {e}")))?;
    let text: String = saved
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        let _ = std::fs::remove_file(&path);
        return Ok(Edited::Cancelled);
    }
    let next: Value = serde_yaml_ng::from_str(&text).map_err(|e| keep(format!("error: {e}")))?;
    if next == current {
        let _ = std::fs::remove_file(&path);
        return Ok(Edited::Cancelled);
    }
    let warnings = write(ch, t, next, dry_run)
        .await
        .map_err(|s| keep(describe(&s)))?;
    let _ = std::fs::remove_file(&path);
    Ok(Edited::Edited { warnings })
}
