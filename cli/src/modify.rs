//! `label`, `annotate`, `patch` and `edit` of one object of any kind.
//!
//! `label` and `annotate` read the object, check the edits against it (kubectl's
//! `--overwrite`), and send the keys that change as a JSON merge patch; `patch` sends the
//! user's patch. registry-svc applies both inside its update's retry loop, so a concurrent
//! writer never makes them fail, and a patch that names a resourceVersion is a precondition
//! (Conflict when stale), as upstream's patcher does. `edit` writes what was saved as an Update
//! at the resourceVersion read, and never retries: what the user edited was that version; on
//! any failure their file is kept and named.

use kubestore_proto::registry::v1::{ApiResource, PatchType as Wire};
use serde_json::Value;
use tonic::Status;

use crate::{
    Ch, DryRun, Error,
    client::{Client, warning_lines},
    manifest,
    patch::{self, MapEdit, PatchType},
    resource::{kind_word, unknown},
};

/// One object named on the command line.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its resource.
    pub resource: ApiResource,
    /// Its namespace (ignored for cluster-scoped kinds).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Target {
    /// The object `name` of the kind `kind` (as typed) names in `namespace`.
    pub async fn resolve(
        client: &Client,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Self, Error> {
        let discovery = client.discover().await?;
        let resource = discovery
            .resolve(kind)
            .ok_or_else(|| Error::Client(unknown(kind)))?
            .clone();
        Ok(Self {
            resource,
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }

    /// The same kind and namespace, another name.
    pub fn named(&self, name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..self.clone()
        }
    }

    /// The kind as kubectl prints it before a name (`configmap`, `crontab.stable.example.com`).
    pub fn kind_word(&self) -> String {
        kind_word(&self.resource)
    }

    /// `kind/name` as kubectl prints it (`configmap/settings`, `crontab.stable.example.com/a`).
    pub fn what(&self) -> String {
        format!("{}/{}", self.kind_word(), self.name)
    }

    /// Upstream's NotFound for the target.
    pub fn not_found(&self) -> Error {
        let r = &self.resource;
        let resource = if r.group.is_empty() {
            r.resource.clone()
        } else {
            format!("{}.{}", r.resource, r.group)
        };
        Error::Server(Status::not_found(format!(
            "{resource} {:?} not found",
            self.name
        )))
    }
}

/// The object, as the server returns it.
pub async fn read(client: &Client, t: &Target) -> Result<Value, Error> {
    Ok(client
        .get(&t.resource, &t.namespace, &t.name, Default::default())
        .await?)
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Whether the object changed (a change that leaves it as it was writes nothing).
    pub changed: bool,
    /// Warnings to print (on standard error).
    pub warnings: Vec<String>,
}

/// `label` (`field` = `labels`) or `annotate` (`annotations`): `edits` checked against the
/// object read, and the keys that change sent as a merge patch.
pub async fn edit_map(
    ch: &Ch,
    t: &Target,
    field: &str,
    edits: &[MapEdit],
    overwrite: bool,
    dry_run: DryRun,
) -> Result<Changed, Error> {
    let client = Client::new(ch);
    let current = read(&client, t).await?;
    let mut next = current.clone();
    let mut warnings =
        patch::edit_map(&mut next, field, edits, overwrite).map_err(Error::Client)?;
    if next == current || dry_run == DryRun::Client {
        // A client dry run stops here: what would change is known, nothing is written.
        return Ok(Changed {
            changed: next != current,
            warnings,
        });
    }
    let body = patch::map_patch(&current, &next, field);
    let written = client
        .patch(
            &t.resource,
            &t.namespace,
            &t.name,
            Wire::Merge,
            &body,
            dry_run == DryRun::Server,
        )
        .await?;
    warnings.extend(warning_lines(&written.warnings));
    Ok(Changed {
        changed: true,
        warnings,
    })
}

/// `patch`: `text` (JSON or YAML) of type `patch_type` (else kubectl's default for the kind)
/// sent to the server's Patch. The object is read first, as kubectl reads it, to tell a patch
/// that changed nothing ("patched (no change)"); a client dry run applies the patch to it here.
pub async fn patch(
    ch: &Ch,
    t: &Target,
    patch_type: Option<PatchType>,
    text: &str,
    dry_run: DryRun,
) -> Result<Changed, Error> {
    let client = Client::new(ch);
    let body = patch::parse(text).map_err(Error::Client)?;
    let kind = patch_type.unwrap_or_else(|| PatchType::default_for(&t.resource));
    let current = read(&client, t).await?;
    if dry_run == DryRun::Client {
        let next =
            patch::apply_locally(kind, &t.resource, &current, &body).map_err(Error::Client)?;
        return Ok(Changed {
            changed: next != current,
            warnings: Vec::new(),
        });
    }
    let written = client
        .patch(
            &t.resource,
            &t.namespace,
            &t.name,
            kind.wire(),
            &body,
            dry_run == DryRun::Server,
        )
        .await?;
    Ok(Changed {
        changed: written.object != current,
        warnings: warning_lines(&written.warnings).collect(),
    })
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
    let client = Client::new(ch);
    let current = read(&client, t).await.map_err(|e| e.to_string())?;
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
    let written = client
        .update(&t.resource, &t.namespace, &next, dry_run)
        .await
        .map_err(|s| keep(crate::describe(&s)))?;
    let _ = std::fs::remove_file(&path);
    Ok(Edited::Edited {
        warnings: warning_lines(&written.warnings).collect(),
    })
}
