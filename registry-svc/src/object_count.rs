//! `apiserver_storage_objects{resource}`: how many objects each resource has in storage.
//!
//! Upstream counts every minute in the background. We count when a scrape of `/metrics` asks
//! and the last count is older than [`Config::storage_objects_period`](crate::Config) (1m):
//! the same freshness for a Prometheus scraping every 15-60 s, the series there from the first
//! scrape, and no storage traffic from a registry nobody scrapes (a count reads each resource,
//! which also starts storage's watch cache for it).
//!
//! A count is one List of the resource's key with `limit: 1`: storage answers the first item
//! and `remaining_item_count` (etcd's count of the range), so a count costs the same whatever
//! the number of objects, and never decodes them. A count that fails sets -1, as upstream does,
//! so that a dashboard tells "none" from "unknown".

use std::{collections::HashSet, sync::Arc, time::Duration};

use kubestore_proto::storage::v1::ListRequest;
use kubestore_telemetry::Deadline;

use crate::{custom::kinds::CustomKinds, storage::StorageClient, store::Names};

/// How long one count may take.
const COUNT_TIMEOUT: Duration = Duration::from_secs(10);

/// A resource to count: its metric label and its storage key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counted {
    /// `pods`, `customresourcedefinitions.apiextensions.k8s.io`.
    pub resource: String,
    /// `/pods`, `/stable.example.com/crontabs`.
    pub key_root: String,
}

impl Counted {
    /// A Store's resource, labelled as upstream's `groupResource.String()`.
    pub fn of(names: &Names) -> Self {
        Self {
            resource: if names.group.is_empty() {
                names.plural.clone()
            } else {
                format!("{}.{}", names.plural, names.group)
            },
            key_root: names.key_root.clone(),
        }
    }
}

/// The number of objects under `key_root`.
pub async fn count(storage: &StorageClient, key_root: &str) -> Result<i64, tonic::Status> {
    let page = storage
        .list(
            Deadline::after(COUNT_TIMEOUT),
            ListRequest {
                key: key_root.into(),
                recursive: true,
                limit: 1,
                ..Default::default()
            },
        )
        .await?;
    let listed = i64::try_from(page.items.len()).unwrap_or(i64::MAX);
    Ok(listed.saturating_add(page.remaining_item_count.unwrap_or(0)))
}

/// Counts `fixed` and every custom kind `custom` serves when a scrape of `registry` asks for
/// it and the last count is older than `period` (see the module doc).
pub fn register(
    registry: &kubestore_telemetry::Metrics,
    storage: StorageClient,
    fixed: Vec<Counted>,
    custom: Arc<CustomKinds>,
    period: Duration,
) {
    let counter = Arc::new(Counter {
        storage,
        fixed,
        custom,
        period,
        state: tokio::sync::Mutex::default(),
    });
    registry.before_scrape(Arc::new(move || {
        let counter = counter.clone();
        Box::pin(async move { counter.refresh().await })
    }));
}

struct Counter {
    storage: StorageClient,
    fixed: Vec<Counted>,
    custom: Arc<CustomKinds>,
    period: Duration,
    /// When the last count ended, and the custom kinds it counted.
    state: tokio::sync::Mutex<(Option<std::time::Instant>, HashSet<String>)>,
}

impl Counter {
    async fn refresh(&self) {
        // Concurrent scrapes wait for one count rather than each making their own.
        let mut state = self.state.lock().await;
        if state.0.is_some_and(|at| at.elapsed() < self.period) {
            return;
        }
        let metrics = &self.storage.api;
        let served: Vec<Counted> = self
            .custom
            .all()
            .iter()
            .filter_map(|k| k.storage_store().map(|s| Counted::of(s.names())))
            .collect();
        // A kind no longer served has no count, rather than its last one forever.
        let now: HashSet<String> = served.iter().map(|c| c.resource.clone()).collect();
        for gone in state.1.difference(&now) {
            metrics.forget_objects(gone);
        }
        for c in self.fixed.iter().chain(&served) {
            let n = match count(&self.storage, &c.key_root).await {
                Ok(n) => n,
                Err(s) => {
                    tracing::debug!(resource = %c.resource, error = %s.message(), "counting objects failed");
                    -1
                }
            };
            metrics.set_objects(&c.resource, n);
        }
        *state = (Some(std::time::Instant::now()), now);
    }
}
