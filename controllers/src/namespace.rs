//! The namespace controller (upstream's `pkg/controller/namespace`): a namespace being deleted
//! (Terminating, its `kubernetes` finalizer in `spec.finalizers`) has its content deleted,
//! every namespaced kind discovery lists, built in or custom, and once nothing is left, the
//! finalizer removed through the `finalize` subresource; registry-svc then deletes the
//! namespace. Objects held by their own finalizers or grace periods keep it Terminating, and it
//! is looked at again every [`RECHECK`] until they are gone; meanwhile its status says why
//! (`namespace_status`: upstream's deletion conditions).

use std::{collections::HashSet, time::Duration};

use kubestore_proto::{
    meta::v1::{DeleteOptions, ListMeta, ListOptions, WatchEventType},
    registry::v1::{
        DeleteCollectionRequest, GetRequest, ListRequest, Output, ResourceRef, UpdateRequest,
        WatchRequest, resources_client::ResourcesClient,
    },
};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;
use tonic::{Code, Request, Status};

use crate::{
    Ch,
    client::{CALL_TIMEOUT, Kind, KindClient, discover},
    informer::{self, Delta, Events, Source},
    namespace_status::Totals,
};

/// The finalizer the controller owns.
pub const FINALIZER: &str = "kubernetes";
/// How soon a namespace whose content is still going is looked at again.
pub const RECHECK: Duration = Duration::from_secs(2);

pub(crate) fn request<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.set_timeout(CALL_TIMEOUT);
    r
}

pub(crate) fn namespaces() -> ResourceRef {
    ResourceRef {
        group: String::new(),
        version: "v1".into(),
        resource: "namespaces".into(),
    }
}

/// Objects of one resource, whole (a namespace's spec.finalizers and status matter), as an
/// informer's source.
pub(crate) struct Objects(pub(crate) Ch, pub(crate) ResourceRef);

impl Source for Objects {
    type Item = Value;
    fn resource_version(item: &Value) -> String {
        item.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
    async fn list(&self, options: ListOptions) -> Result<(Vec<Value>, ListMeta), Status> {
        let list = ResourcesClient::new(self.0.clone())
            .list(request(ListRequest {
                resource: Some(self.1.clone()),
                namespace: String::new(),
                options: Some(options),
                output: Output::Object as i32,
            }))
            .await?
            .into_inner();
        let items = list
            .items
            .iter()
            .map(|i| serde_json::from_str(i).map_err(|e| Status::internal(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok((items, list.metadata.unwrap_or_default()))
    }
    async fn watch(&self, options: ListOptions) -> Result<Events<Value>, Status> {
        let stream = ResourcesClient::new(self.0.clone())
            .watch(WatchRequest {
                resource: Some(self.1.clone()),
                namespace: String::new(),
                options: Some(options),
                output: Output::Object as i32,
            })
            .await?
            .into_inner();
        Ok(Box::pin(stream.map(|e| {
            let e = e?;
            let object =
                serde_json::from_str(&e.json).map_err(|e| Status::internal(e.to_string()))?;
            Ok((
                WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
                object,
            ))
        })))
    }
}

/// Whether `ns` waits for this controller: being deleted, with its finalizer.
fn terminating(ns: &Value) -> bool {
    ns.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
        && ns
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(FINALIZER)))
}

pub(crate) fn name(ns: &Value) -> String {
    ns.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Runs the controller until `stop` is raised.
pub async fn run(ch: Ch, mut stop: watch::Receiver<bool>) {
    let (tx, mut rx) = mpsc::channel(256);
    tokio::spawn(informer::run(
        Objects(ch.clone(), namespaces()),
        tx,
        stop.clone(),
    ));
    let (queue_tx, mut queue) = mpsc::channel::<String>(1024);
    let mut queued: HashSet<String> = HashSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            d = rx.recv() => {
                let Some(d) = d else { return };
                let items = match d {
                    Delta::Replace(items) => items,
                    Delta::Upsert(ns) => vec![ns],
                    Delta::Delete(_) => Vec::new(),
                };
                for ns in items.iter().filter(|ns| terminating(ns)) {
                    let n = name(ns);
                    if queued.insert(n.clone()) {
                        let _ = queue_tx.try_send(n);
                    }
                }
            }
            n = queue.recv() => {
                let Some(n) = n else { return };
                queued.remove(&n);
                match sync(&ch, &n).await {
                    Ok(true) => tracing::info!(namespace = %n, "namespace controller: content deleted; finalized"),
                    Ok(false) => {
                        // Content still going (finalizers, grace periods): look again later.
                        if queued.insert(n.clone()) {
                            let tx = queue_tx.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(RECHECK).await;
                                let _ = tx.send(n).await;
                            });
                        }
                    }
                    Err(e) => {
                        tracing::info!(namespace = %n, error = %e.message(), "namespace controller: retrying");
                        if queued.insert(n.clone()) {
                            let tx = queue_tx.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(RECHECK).await;
                                let _ = tx.send(n).await;
                            });
                        }
                    }
                }
            }
        }
    }
}

/// Deletes what is left in namespace `n`; finalizes it once nothing is. Ok(true): finalized
/// (or nothing to do); Ok(false): content remains.
async fn sync(ch: &Ch, n: &str) -> Result<bool, Status> {
    let mut client = ResourcesClient::new(ch.clone());
    let ns = match client
        .get(request(GetRequest {
            resource: Some(namespaces()),
            namespace: String::new(),
            name: n.into(),
            subresource: String::new(),
            output: Output::Object as i32,
        }))
        .await
    {
        Ok(r) => serde_json::from_str::<Value>(&r.into_inner().json)
            .map_err(|e| Status::internal(e.to_string()))?,
        Err(s) if s.code() == Code::NotFound => return Ok(true),
        Err(s) => return Err(s),
    };
    if !terminating(&ns) {
        return Ok(true);
    }
    let mut totals = Totals::default();
    let kinds: Vec<Kind> = match discover(ch).await {
        Ok(kinds) => kinds
            .into_iter()
            .filter(|k| k.namespaced && k.can("list"))
            .collect(),
        Err(e) => {
            totals.discovery_failures.push(e.message().to_string());
            record(&mut client, ns, &totals).await?;
            return Err(e);
        }
    };
    for kind in &kinds {
        // Upstream names a resource `plural.group`, the core group's `plural.`.
        let resource = format!("{}.{}", kind.resource, kind.group());
        if let Err(e) = delete_content(ch, &mut client, kind, n).await {
            totals
                .deletion_failures
                .push(format!("{resource}: {}", e.message()));
            continue;
        }
        let each = KindClient::new(ch.clone(), std::sync::Arc::new(kind.clone()));
        match each.list(n, ListOptions::default()).await {
            Ok(left) => {
                for meta in left.items {
                    totals.remaining(&resource, &meta.finalizers);
                }
            }
            Err(e) => totals
                .deletion_failures
                .push(format!("{resource}: {}", e.message())),
        }
    }
    let ns = record(&mut client, ns, &totals).await?;
    if !totals.deletion_failures.is_empty() {
        return Err(Status::unavailable(totals.deletion_failures.join(", ")));
    }
    if !totals.remaining.is_empty() {
        return Ok(false);
    }
    // Nothing left: remove our finalizer (the resourceVersion read guards against a change).
    let mut finalized = ns.clone();
    if let Some(f) = finalized
        .pointer_mut("/spec/finalizers")
        .and_then(Value::as_array_mut)
    {
        f.retain(|x| x.as_str() != Some(FINALIZER));
    }
    match client
        .update(request(UpdateRequest {
            resource: Some(namespaces()),
            namespace: String::new(),
            name: n.into(),
            subresource: "finalize".into(),
            json: finalized.to_string(),
            options: None,
        }))
        .await
    {
        Ok(_) => Ok(true),
        Err(s) if s.code() == Code::NotFound => Ok(true),
        Err(s) => Err(s),
    }
}

/// Deletes the objects of `kind` in `n`: one DeleteCollection where the kind has it, else one
/// Delete per object.
async fn delete_content(
    ch: &Ch,
    client: &mut ResourcesClient<Ch>,
    kind: &Kind,
    n: &str,
) -> Result<(), Status> {
    if kind.can("deletecollection") {
        client
            .delete_collection(request(DeleteCollectionRequest {
                resource: Some(ResourceRef {
                    group: kind.group().into(),
                    version: kind.version().into(),
                    resource: kind.resource.clone(),
                }),
                namespace: n.into(),
                list_options: None,
                options: Some(DeleteOptions::default()),
            }))
            .await?;
    } else if kind.can("delete") {
        let each = KindClient::new(ch.clone(), std::sync::Arc::new(kind.clone()));
        for meta in each.list(n, ListOptions::default()).await?.items {
            each.delete(n, &meta.name, DeleteOptions::default()).await?;
        }
    }
    Ok(())
}

/// Writes the conditions of a pass that found `totals` to the namespace's status
/// (`namespace_status`), when they changed; the namespace as it now is.
async fn record(
    client: &mut ResourcesClient<Ch>,
    mut ns: Value,
    totals: &Totals,
) -> Result<Value, Status> {
    let old: Vec<Value> = ns
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let now = kubestore_apimachinery::time::format(i64::try_from(now).unwrap_or(0), 0);
    let new = crate::namespace_status::conditions(&old, totals, &now);
    if new == old {
        return Ok(ns);
    }
    if let Some(status) = ns.get_mut("status").and_then(Value::as_object_mut) {
        status.insert("conditions".into(), Value::Array(new));
    } else if let Some(o) = ns.as_object_mut() {
        o.insert("status".into(), serde_json::json!({"conditions": new}));
    }
    let written = client
        .update(request(UpdateRequest {
            resource: Some(namespaces()),
            namespace: String::new(),
            name: name(&ns),
            subresource: "status".into(),
            json: ns.to_string(),
            options: None,
        }))
        .await?
        .into_inner();
    serde_json::from_str(&written.json).map_err(|e| Status::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    //! Which namespaces are the controller's (pure logic; `tests/tests/namespace_controller.rs`
    //! runs the controller on a scripted registry, `generic_api.rs` on registry-svc).
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_namespace_being_deleted_with_the_controllers_finalizer_is_its() {
        let ns = |deletion: Value, finalizers: Value| {
            json!({"metadata": {"name": "a", "deletionTimestamp": deletion},
                   "spec": {"finalizers": finalizers}})
        };
        let when = json!("2026-01-01T00:00:00Z");
        assert!(terminating(&ns(when.clone(), json!(["kubernetes"]))));
        assert!(terminating(&ns(when.clone(), json!(["x", "kubernetes"]))));
        // Not being deleted.
        assert!(!terminating(&ns(Value::Null, json!(["kubernetes"]))));
        assert!(!terminating(
            &json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}})
        ));
        // Finalized already, or another's finalizer only.
        assert!(!terminating(&ns(when.clone(), json!([]))));
        assert!(!terminating(&ns(
            when.clone(),
            json!(["example.com/kubernetes"])
        )));
        assert!(!terminating(
            &json!({"metadata": {"deletionTimestamp": when}})
        ));
        assert_eq!(name(&ns(Value::Null, json!([]))), "a");
        assert_eq!(name(&json!({})), "");
    }
}
