//! `--dry-run=client`: what `apply`, `delete`, `label`, `annotate` and `patch` would do, told
//! without writing anything. As kubectl's client dry run, each object is still read (kubectl
//! reads the live object to tell "created" from "configured" and to find what it deletes); the
//! server validates nothing, so only `--dry-run=server` says whether a write would be taken.

use tonic::Code;

use crate::{
    Ch, Error,
    apply::{Mapper, Report},
    client::Client,
    manifest::Parsed,
    modify::{self, Target},
};

/// What kubectl appends to a client dry run's lines.
pub const SUFFIX: &str = " (dry run)";

/// Whether the target exists.
async fn exists(client: &Client, t: &Target) -> Result<bool, Error> {
    match modify::read(client, t).await {
        Ok(_) => Ok(true),
        Err(Error::Server(s)) if s.code() == Code::NotFound => Ok(false),
        Err(e) => Err(e),
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
    let client = Client::new(ch);
    let mut mapper = Mapper::new(&client);
    let mut report = Report::new();
    for doc in docs {
        let result = match mapper.resource(&doc).await {
            Ok(resource) => {
                let t = Target {
                    namespace: doc.namespace_or(default_ns).to_string(),
                    name: doc.name().to_string(),
                    resource,
                };
                exists(&client, &t).await.map(|e| (t, e))
            }
            Err(e) => Err(e),
        };
        report.line(match result {
            Ok((t, true)) if applying => Ok(format!("{} configured{SUFFIX}", t.what())),
            Ok((t, false)) if applying => Ok(format!("{} created{SUFFIX}", t.what())),
            Ok((t, true)) => Ok(deleted(&t)),
            Ok((t, false)) => Err(t.not_found()),
            Err(e) => Err(e),
        });
    }
    report.done()
}

/// kubectl's line for a delete (`configmap "a" deleted (dry run)`).
fn deleted(t: &Target) -> String {
    format!("{} \"{}\" deleted{SUFFIX}", t.kind_word(), t.name)
}

/// `delete KIND NAME...` with `--dry-run=client`.
pub async fn delete_named(ch: &Ch, kind: &str, ns: &str, names: &[String]) -> (Vec<String>, bool) {
    let client = Client::new(ch);
    let mut report = Report::new();
    match Target::resolve(&client, kind, ns, "").await {
        Ok(target) => {
            for name in names {
                let t = target.named(name);
                report.line(modify::read(&client, &t).await.map(|_| deleted(&t)));
            }
        }
        Err(e) => report.line(Err(e)),
    }
    report.done()
}
