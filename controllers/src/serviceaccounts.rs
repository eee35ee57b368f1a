//! The ServiceAccounts controller (upstream's `pkg/controller/serviceaccount`
//! `ServiceAccountsController`): every namespace that is not being deleted has a ServiceAccount
//! named `default`, made when the namespace appears and made again when it is deleted. It
//! follows namespaces and ServiceAccounts through informers and writes through the generic API,
//! like the namespace controller; a failed write is retried every [`RETRY`].

use std::{collections::HashSet, time::Duration};

use kubestore_proto::registry::v1::{
    CreateRequest, GetRequest, ResourceRef, resources_client::ResourcesClient,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tonic::{Code, Status};

use crate::{
    Ch,
    informer::{self, Delta},
    namespace::{Objects, name, namespaces, request},
};

/// The account every namespace gets.
pub const DEFAULT: &str = "default";
/// How soon a namespace whose account could not be made is tried again.
pub const RETRY: Duration = Duration::from_secs(2);

fn service_accounts() -> ResourceRef {
    ResourceRef {
        group: String::new(),
        version: "v1".into(),
        resource: "serviceaccounts".into(),
    }
}

/// Whether a namespace is being deleted (no account is made there: registry-svc would refuse
/// it, and the namespace controller is emptying it).
fn deleting(ns: &Value) -> bool {
    ns.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
        || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// Runs the controller until `stop` is raised.
pub async fn run(ch: Ch, mut stop: watch::Receiver<bool>) {
    let (ns_tx, mut ns_rx) = mpsc::channel(256);
    tokio::spawn(informer::run(
        Objects(ch.clone(), namespaces()),
        ns_tx,
        stop.clone(),
    ));
    let (sa_tx, mut sa_rx) = mpsc::channel(256);
    tokio::spawn(informer::run(
        Objects(ch.clone(), service_accounts()),
        sa_tx,
        stop.clone(),
    ));
    let (queue_tx, mut queue) = mpsc::channel::<String>(1024);
    let mut queued: HashSet<String> = HashSet::new();
    let enqueue = |n: String, queued: &mut HashSet<String>| {
        if queued.insert(n.clone()) {
            let _ = queue_tx.try_send(n);
        }
    };
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            d = ns_rx.recv() => {
                let Some(d) = d else { return };
                let items = match d {
                    Delta::Replace(items) => items,
                    Delta::Upsert(ns) => vec![ns],
                    Delta::Delete(_) => Vec::new(),
                };
                for ns in items.iter().filter(|ns| !deleting(ns)) {
                    enqueue(name(ns), &mut queued);
                }
            }
            d = sa_rx.recv() => {
                let Some(d) = d else { return };
                // A deleted `default` is made again (its namespace is checked in `sync`).
                if let Delta::Delete(sa) = d
                    && name(&sa) == DEFAULT
                    && let Some(ns) = sa.pointer("/metadata/namespace").and_then(Value::as_str)
                {
                    enqueue(ns.to_string(), &mut queued);
                }
            }
            n = queue.recv() => {
                let Some(n) = n else { return };
                queued.remove(&n);
                if let Err(e) = sync(&ch, &n).await {
                    tracing::info!(namespace = %n, error = %e.message(), "serviceaccounts controller: retrying");
                    if queued.insert(n.clone()) {
                        let tx = queue_tx.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(RETRY).await;
                            let _ = tx.send(n).await;
                        });
                    }
                }
            }
        }
    }
}

/// Makes `default` in namespace `n` if it is missing and the namespace lives.
async fn sync(ch: &Ch, n: &str) -> Result<(), Status> {
    let mut client = ResourcesClient::new(ch.clone());
    let get = |resource: ResourceRef, namespace: &str, name: &str| {
        request(GetRequest {
            resource: Some(resource),
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..Default::default()
        })
    };
    match client.get(get(service_accounts(), n, DEFAULT)).await {
        Ok(_) => return Ok(()),
        Err(e) if e.code() == Code::NotFound => {}
        Err(e) => return Err(e),
    }
    match client.get(get(namespaces(), "", n)).await {
        Ok(ns) => {
            let ns: Value = serde_json::from_str(&ns.into_inner().json)
                .map_err(|e| Status::internal(e.to_string()))?;
            if deleting(&ns) {
                return Ok(());
            }
        }
        Err(e) if e.code() == Code::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}});
    match client
        .create(request(CreateRequest {
            resource: Some(service_accounts()),
            namespace: n.to_string(),
            json: account.to_string(),
            options: None,
            ..Default::default()
        }))
        .await
    {
        Ok(_) => {
            tracing::info!(namespace = %n, "serviceaccounts controller: made the default ServiceAccount");
            Ok(())
        }
        // Made meanwhile (another leader's last write), or the namespace began deleting.
        Err(e) if matches!(e.code(), Code::AlreadyExists | Code::FailedPrecondition) => Ok(()),
        Err(e) => Err(e),
    }
}
