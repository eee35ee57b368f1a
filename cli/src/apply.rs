//! `kubestore apply -f FILE`, `kubestore delete -f FILE` and `kubestore delete KIND NAME...`,
//! for any kind discovery names.
//!
//! apply creates each object, or, when it exists, replaces it with the manifest at the stored
//! resourceVersion (no three-way merge): `pod/web created`, `configured` or `unchanged`, as
//! kubectl prints. A document whose kind is not served yet is looked up again, for a moment,
//! after an earlier document of the same run was written: a CustomResourceDefinition followed
//! by its objects in one file is the usual way to ship them, and its kind is served once the
//! definition is established. So is a kind whose definition exists but is not served yet (a
//! definition applied by the command before).
//!
//! delete deletes each object (`--cascade`, `--grace-period` as kubectl's); the documents of a
//! file are all looked up first, then namespaced objects are deleted before cluster-scoped ones
//! (a Namespace or a definition takes its objects with it).

use std::time::Duration;

use kubestore_proto::{
    meta::v1::{DeleteOptions, ListOptions, PropagationPolicy},
    registry::v1::{ApiResource, Output},
};
use serde_json::Value;
use tonic::Code;

use crate::{
    Ch, Error,
    client::{Client, Written, parse, resource_version_of, warning_lines},
    manifest::{self, Parsed},
    modify::Target,
    resource::{Discovery, kind_word, no_match},
};

/// How long apply looks for a kind that is not served yet after a write of the same run.
const SERVED_WAIT: Duration = Duration::from_secs(2);

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

/// What a server dry run adds to each line (kubectl's words).
pub(crate) fn dry_suffix(dry_run: bool) -> &'static str {
    if dry_run { " (server dry run)" } else { "" }
}

/// What a run prints, a line per object (warnings before their object's line), and whether
/// everything succeeded: one object's failure is reported and the others done all the same.
pub(crate) struct Report {
    lines: Vec<String>,
    ok: bool,
}

impl Report {
    pub(crate) fn new() -> Self {
        Self {
            lines: Vec::new(),
            ok: true,
        }
    }

    /// An object's line, or its error.
    pub(crate) fn line(&mut self, r: Result<String, Error>) {
        match r {
            Ok(line) => self.lines.push(line),
            Err(e) => {
                self.ok = false;
                self.lines.push(e.to_string());
            }
        }
    }

    /// The lines and whether all succeeded.
    pub(crate) fn done(self) -> (Vec<String>, bool) {
        (self.lines, self.ok)
    }
}

/// The resources of a run's documents, looked up in discovery, read again when a kind is
/// missing after a write of the same run (see the module doc).
pub(crate) struct Mapper {
    client: Client,
    discovery: Option<Discovery>,
    /// Whether something was written since discovery was last read.
    written: bool,
    /// Whether the definitions were already searched for a kind discovery lacks.
    searched: bool,
}

impl Mapper {
    pub(crate) fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            discovery: None,
            written: false,
            searched: false,
        }
    }

    /// Whether a definition of `doc`'s kind exists, not served yet: written a moment ago by
    /// another command (`kubestore apply -f definition.yaml`, then the objects' file), its kind
    /// is served once it is established. Asked once per run, only for a kind discovery lacks.
    async fn defined(&self, doc: &Parsed) -> bool {
        let Some((group, _)) = doc.api_version().split_once('/') else {
            return false;
        };
        let Some(definitions) = self
            .discovery
            .as_ref()
            .and_then(|d| d.for_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition"))
        else {
            return false;
        };
        let Ok(list) = self
            .client
            .list(definitions, "", ListOptions::default(), Output::Object)
            .await
        else {
            return false;
        };
        list.items
            .iter()
            .filter_map(|i| parse(i).ok())
            .any(|d| d["spec"]["group"] == group && d["spec"]["names"]["kind"] == doc.kind())
    }

    /// Says that the run wrote something (a definition, perhaps).
    pub(crate) fn wrote(&mut self) {
        self.written = true;
    }

    /// The resource of `doc`, or the error line to print.
    pub(crate) async fn resource(&mut self, doc: &Parsed) -> Result<ApiResource, Error> {
        let deadline = tokio::time::Instant::now() + SERVED_WAIT;
        loop {
            if self.discovery.is_none() {
                self.discovery = Some(self.client.discover().await?);
            }
            let found = self
                .discovery
                .as_ref()
                .and_then(|d| d.for_kind(doc.api_version(), doc.kind()));
            if let Some(r) = found {
                return Ok(r.clone());
            }
            if !self.written && !self.searched {
                self.searched = true;
                self.written = self.defined(doc).await;
            }
            if !self.written || tokio::time::Instant::now() >= deadline {
                // Looked for long enough: later documents do not wait again for this write.
                self.written = false;
                return Err(Error::Client(format!(
                    "document {}: {}",
                    doc.document,
                    no_match(doc.api_version(), doc.kind())
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.discovery = None;
        }
    }
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
    let client = Client::new(ch);
    let mut mapper = Mapper::new(&client);
    let mut report = Report::new();
    for doc in docs {
        let result = match mapper.resource(&doc).await {
            Ok(r) => apply_one(&client, &r, default_ns, &doc, dry_run).await,
            Err(e) => Err(e),
        };
        if let Ok((_, warnings)) = &result {
            mapper.wrote();
            report.lines.extend(warning_lines(warnings));
        }
        report.line(result.map(|(line, _)| line));
    }
    report.done()
}

/// Creates `doc`, or replaces the stored object with it; its line and the server's warnings.
async fn apply_one(
    client: &Client,
    r: &ApiResource,
    default_ns: &str,
    doc: &Parsed,
    dry_run: bool,
) -> Result<(String, Vec<String>), Error> {
    let ns = doc.namespace_or(default_ns);
    let what = format!("{}/{}", kind_word(r), doc.name());
    let dry = dry_suffix(dry_run);
    let mut obj = Value::Object(doc.object.clone());
    match client.create(r, ns, &obj, dry_run).await {
        Ok(w) => return Ok((format!("{what} created{dry}"), w.warnings)),
        Err(s) if s.code() == Code::AlreadyExists => {}
        Err(s) => return Err(s.into()),
    }
    // Replace at the stored version; the server keeps what it owns (uid, timestamps, status).
    let stored = client.get(r, ns, doc.name(), Default::default()).await?;
    let rv = resource_version_of(&stored).to_string();
    if let Some(Value::Object(m)) = obj.get_mut("metadata") {
        m.insert("resourceVersion".into(), rv.clone().into());
    }
    let Written { object, warnings } = client.update(r, ns, &obj, dry_run).await?;
    let line = if resource_version_of(&object) == rv && !dry_run {
        format!("{what} unchanged")
    } else {
        format!("{what} configured{dry}")
    };
    Ok((line, warnings))
}

/// How objects are deleted (kubectl's `delete` flags).
#[derive(Debug, Clone, Copy, Default)]
pub struct Deletion {
    /// `--dry-run=server`.
    pub dry_run: bool,
    /// `--grace-period` (seconds; unset: the kind's default).
    pub grace_period: Option<i64>,
    /// `--cascade` (unset: the kind's default, background for most).
    pub propagation: Option<PropagationPolicy>,
}

impl Deletion {
    /// A plain delete, or the server's dry run of one.
    pub fn dry_run(dry_run: bool) -> Self {
        Self {
            dry_run,
            ..Default::default()
        }
    }

    fn options(&self) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: self.grace_period,
            preconditions: None,
            propagation_policy: self.propagation.map_or(0, |p| p as i32),
            dry_run: self.dry_run,
        }
    }
}

/// Deletes `name` of `r`; kubectl's line.
async fn delete_one(
    client: &Client,
    r: &ApiResource,
    ns: &str,
    name: &str,
    how: &Deletion,
) -> Result<String, Error> {
    client.delete(r, ns, name, how.options()).await?;
    Ok(format!(
        "{} \"{name}\" deleted{}",
        kind_word(r),
        dry_suffix(how.dry_run)
    ))
}

/// Deletes every object; returns the lines to print and whether all succeeded.
pub async fn delete(ch: &Ch, default_ns: &str, docs: Vec<Parsed>) -> (Vec<String>, bool) {
    delete_with(ch, default_ns, docs, &Deletion::default()).await
}

/// [`delete`] as `how` says.
pub async fn delete_with(
    ch: &Ch,
    default_ns: &str,
    docs: Vec<Parsed>,
    how: &Deletion,
) -> (Vec<String>, bool) {
    let client = Client::new(ch);
    let mut mapper = Mapper::new(&client);
    let mut report = Report::new();
    // Every document looked up before anything is deleted: a definition deleted first would
    // take its kind out of discovery.
    let mut found = Vec::new();
    for doc in docs {
        match mapper.resource(&doc).await {
            Ok(r) => found.push((r, doc)),
            Err(e) => report.line(Err(e)),
        }
    }
    // Namespaced objects first (stable: otherwise in the file's order).
    found.sort_by_key(|(r, _)| !r.namespaced);
    for (r, doc) in found {
        let ns = doc.namespace_or(default_ns);
        report.line(delete_one(&client, &r, ns, doc.name(), how).await);
    }
    report.done()
}

/// `kubestore delete KIND NAME...` (kubectl's form): deletes each named object of the kind in
/// `ns`; returns the lines to print and whether all succeeded (a missing one is reported and
/// the others deleted, as kubectl does).
pub async fn delete_named(
    ch: &Ch,
    ns: &str,
    kind: &str,
    names: &[String],
    dry_run: bool,
) -> (Vec<String>, bool) {
    delete_named_with(ch, ns, kind, names, &Deletion::dry_run(dry_run)).await
}

/// [`delete_named`] as `how` says.
pub async fn delete_named_with(
    ch: &Ch,
    ns: &str,
    kind: &str,
    names: &[String],
    how: &Deletion,
) -> (Vec<String>, bool) {
    let client = Client::new(ch);
    let mut report = Report::new();
    match Target::resolve(&client, kind, ns, "").await {
        Ok(t) => {
            for name in names {
                report.line(delete_one(&client, &t.resource, ns, name, how).await);
            }
        }
        Err(e) => report.line(Err(e)),
    }
    report.done()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_and_errors_are_diagnostics_results_are_not() {
        assert!(is_diagnostic("Warning: unknown field \"spec.ports\""));
        assert!(is_diagnostic(
            "Error from server (Invalid): pods \"x\" is invalid"
        ));
        assert!(is_diagnostic("error: document 1: no matches for kind"));
        assert!(!is_diagnostic("pod/web created"));
        assert!(!is_diagnostic("configmap/settings unchanged"));
    }
}
