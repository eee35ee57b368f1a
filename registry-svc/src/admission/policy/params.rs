//! A policy's parameters (`paramKind` + a binding's `paramRef`), as upstream's policy plugin
//! reads them: from a watch-fed cache per parameter kind (upstream starts an informer per
//! `paramKind`), so admission never waits on a read. The objects are any kind of the catalog,
//! built-in or custom, in Kubernetes JSON; admission sits below the catalog, so it reaches
//! them through [`Source`], which the catalog implements (`catalog::params`).
//!
//! A kind is followed from the moment a policy names it, and kept followed after (upstream
//! stops an informer no policy uses; kubestore keeps it, a cache of objects the server
//! already serves). Until its first list arrives a request that needs it is a configuration
//! error (`paramKind kind ... not yet synced to use for admission`), decided by the policy's
//! failurePolicy as upstream's after its one-second wait.

use std::{
    collections::{BTreeMap, HashMap},
    pin::Pin,
    sync::{Arc, OnceLock, RwLock},
    time::Duration,
};

use kubestore_proto::{admissionregistration::v1::ParamRef, meta::v1::WatchEventType};
use serde_json::Value;
use tokio_stream::{Stream, StreamExt};

use crate::error::ApiError;

/// Watch events of a followed kind.
pub type Events = Pin<Box<dyn Stream<Item = Result<(WatchEventType, Value), ApiError>> + Send>>;

/// Where the objects of a kind come from (the catalog).
#[tonic::async_trait]
pub trait Source: Send + Sync + 'static {
    /// Whether `api_version`/`kind` is served, and if so whether it is namespaced.
    fn scope(&self, api_version: &str, kind: &str) -> Option<bool>;

    /// Every object of the kind, and the list's resourceVersion.
    async fn list(&self, api_version: &str, kind: &str) -> Result<(String, Vec<Value>), ApiError>;

    /// The kind served as `group`/`version`/`resource`, and its schema when it has one:
    /// `None` when nothing is served there (type checking, `super::typecheck`).
    fn resource_schema(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<(String, Option<super::typecheck::Schema>)>;

    /// The schema of `api_version`/`kind` (a paramKind), when it is served.
    fn kind_schema(&self, api_version: &str, kind: &str) -> Option<super::typecheck::Schema>;

    /// The kind's changes after `resource_version`.
    async fn watch(
        &self,
        api_version: &str,
        kind: &str,
        resource_version: &str,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Events, ApiError>;
}

/// The objects of one followed kind.
#[derive(Debug, Default)]
struct Followed {
    /// Set once the first list arrived.
    synced: std::sync::atomic::AtomicBool,
    /// By (namespace, name).
    objects: RwLock<BTreeMap<(String, String), Arc<Value>>>,
}

impl Followed {
    fn put(&self, v: Value) {
        let key = key_of(&v);
        self.write().insert(key, Arc::new(v));
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<(String, String), Arc<Value>>> {
        self.objects.write().unwrap_or_else(|p| p.into_inner())
    }
}

fn key_of(v: &Value) -> (String, String) {
    let text = |k: &str| {
        v.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (text("namespace"), text("name"))
}

/// Every followed parameter kind.
#[derive(Default)]
pub struct Params {
    kinds: RwLock<HashMap<(String, String), Arc<Followed>>>,
    source: OnceLock<(Arc<dyn Source>, tokio::sync::watch::Receiver<bool>)>,
}

impl std::fmt::Debug for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Params").finish_non_exhaustive()
    }
}

impl Params {
    /// Where objects come from, and when to stop following them (set once, at start).
    pub fn start(&self, source: Arc<dyn Source>, stop: tokio::sync::watch::Receiver<bool>) {
        let _ = self.source.set((source, stop));
    }

    /// Follows `api_version`/`kind` from now on (a policy names it).
    pub fn follow(&self, api_version: &str, kind: &str) {
        let Some((source, stop)) = self.source.get() else {
            return;
        };
        let key = (api_version.to_string(), kind.to_string());
        let followed = {
            let mut kinds = self.kinds.write().unwrap_or_else(|p| p.into_inner());
            if kinds.contains_key(&key) {
                return;
            }
            let f = Arc::new(Followed::default());
            kinds.insert(key.clone(), f.clone());
            f
        };
        tokio::spawn(run(source.clone(), key, followed, stop.clone()));
    }

    /// The parameters `param_ref` names for a request in `namespace`, in upstream's
    /// `CollectParams` order of checks; an error is a configuration error of the binding.
    pub fn collect(
        &self,
        (api_version, kind): &(String, String),
        param_ref: &ParamRef,
        namespace: &str,
    ) -> Result<Vec<Arc<Value>>, String> {
        let named = || format!("{kind}.{api_version}");
        let Some((source, _)) = self.source.get() else {
            return Err(format!("paramKind kind `{}` not known", named()));
        };
        let Some(namespaced) = source.scope(api_version, kind) else {
            return Err(format!("paramKind kind `{}` not known", named()));
        };
        let followed = self
            .kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(api_version.clone(), kind.clone()))
            .cloned();
        let Some(followed) =
            followed.filter(|f| f.synced.load(std::sync::atomic::Ordering::Acquire))
        else {
            self.follow(api_version, kind);
            return Err(format!(
                "paramKind kind `{}` not yet synced to use for admission",
                named()
            ));
        };
        let in_namespace = if namespaced {
            if !param_ref.namespace.is_empty() {
                param_ref.namespace.as_str()
            } else if namespace.is_empty() {
                return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
            } else {
                namespace
            }
        } else if !param_ref.namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        } else {
            ""
        };
        let objects = followed.objects.read().unwrap_or_else(|p| p.into_inner());
        let found: Vec<Arc<Value>> = if !param_ref.name.is_empty() {
            if param_ref.selector.is_some() {
                return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
            }
            objects
                .get(&(in_namespace.to_string(), param_ref.name.clone()))
                .cloned()
                .into_iter()
                .collect()
        } else if let Some(selector) = &param_ref.selector {
            objects
                .range((in_namespace.to_string(), String::new())..)
                .take_while(|((ns, _), _)| ns == in_namespace)
                .filter(|(_, v)| {
                    crate::rbac::rules::selects(selector, &crate::admission::labels_of(v))
                })
                .map(|(_, v)| v.clone())
                .collect()
        } else {
            return Err("one of name or selector must be provided".into());
        };
        if found.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
            );
        }
        Ok(found)
    }
}

/// Follows one kind into `into` until `stop`: list, then watch from the list's
/// resourceVersion; list again when the watch ends or fails (bounded backoff).
async fn run(
    source: Arc<dyn Source>,
    (api_version, kind): (String, String),
    into: Arc<Followed>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(100);
    while !*stop.borrow() {
        let rv = match source.list(&api_version, &kind).await {
            Ok((rv, items)) => {
                let mut objects = BTreeMap::new();
                for v in items {
                    objects.insert(key_of(&v), Arc::new(v));
                }
                *into.write() = objects;
                into.synced
                    .store(true, std::sync::atomic::Ordering::Release);
                rv
            }
            Err(e) => {
                tracing::debug!(%api_version, %kind, error = %e, "params: listing failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        let mut events = match source.watch(&api_version, &kind, &rv, stop.clone()).await {
            Ok(e) => e,
            Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        while let Some(Ok((event, v))) = events.next().await {
            match event {
                WatchEventType::Added | WatchEventType::Modified => into.put(v),
                WatchEventType::Deleted => {
                    into.write().remove(&key_of(&v));
                }
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
