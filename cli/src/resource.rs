//! What a kind typed on the command line names (`get`, `delete KIND NAME`, `describe`):
//! a built-in kind by plural, singular or kubectl's short name, the definitions (`crd`), or a
//! custom kind by plural, singular, short name or kind, looked up among the definitions.

use tonic::Status;

use crate::{
    Ch,
    custom::{self, Resolved},
};

/// A kind named on the command line.
#[derive(Debug, Clone)]
pub enum Named {
    /// `pods`, `pod`, `po`.
    Pods,
    /// `configmaps`, `configmap`, `cm`.
    ConfigMaps,
    /// `events`, `event`, `ev`.
    Events,
    /// `secrets`, `secret`.
    Secrets,
    /// `crd`, `crds`, `customresourcedefinition(s)`.
    Definitions,
    /// A custom kind.
    Custom(Resolved),
}

/// What the built-in names mean, without asking registry-svc.
fn builtin(name: &str) -> Option<Named> {
    Some(match name {
        "pods" | "pod" | "po" => Named::Pods,
        "configmaps" | "configmap" | "cm" => Named::ConfigMaps,
        "events" | "event" | "ev" => Named::Events,
        "secrets" | "secret" => Named::Secrets,
        "crd" | "crds" | "customresourcedefinition" | "customresourcedefinitions" => {
            Named::Definitions
        }
        _ => return None,
    })
}

/// Resolves `name`; `Ok(None)` when nothing serves it.
pub async fn resolve(ch: &Ch, name: &str) -> Result<Option<Named>, Status> {
    if let Some(n) = builtin(name) {
        return Ok(Some(n));
    }
    let defs = custom::definitions(ch).await?;
    Ok(custom::by_name(&defs, name).map(Named::Custom))
}

/// kubectl's words for a kind nobody serves.
pub fn unknown(name: &str) -> String {
    format!("error: the server doesn't have a resource type {name:?}")
}
