//! Helpers of the List/Watch tests: ConfigMap lists and watches through registry-svc.
// Small helpers named for what they do; documenting each would repeat its name.
#![allow(missing_docs)]

use std::time::Duration;

use kubestore_proto::{
    core::v1::{
        ConfigMap, ConfigMapWatchEvent, ListConfigMapsRequest, WatchConfigMapsRequest,
        config_maps_client::ConfigMapsClient,
    },
    meta::v1::{ListOptions, ObjectMeta, WatchEventType},
};
use tonic::{Status, Streaming, transport::Channel};

/// A ConfigMap in `ns` with `labels`.
pub fn cm_in(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: ns.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

pub async fn list_cms(
    c: &mut ConfigMapsClient<Channel>,
    ns: &str,
    options: ListOptions,
) -> Result<(kubestore_proto::meta::v1::ListMeta, Vec<ConfigMap>), Status> {
    let r = c
        .list(ListConfigMapsRequest {
            namespace: ns.into(),
            options: Some(options),
        })
        .await?
        .into_inner();
    Ok((r.metadata.unwrap_or_default(), r.items))
}

pub fn names(items: &[ConfigMap]) -> Vec<String> {
    items
        .iter()
        .map(|c| c.metadata.clone().unwrap_or_default().name)
        .collect()
}

pub async fn watch_cms(
    c: &mut ConfigMapsClient<Channel>,
    ns: &str,
    options: ListOptions,
) -> Result<Streaming<ConfigMapWatchEvent>, Status> {
    Ok(c.watch(WatchConfigMapsRequest {
        namespace: ns.into(),
        options: Some(options),
    })
    .await?
    .into_inner())
}

/// One event as (type, name, resourceVersion, object).
pub type Seen = (WatchEventType, String, String, ConfigMap);

/// The next event within `within`; `Ok(None)` when the stream ended with OK, `Err` when it
/// ended with an error status. Panics when nothing arrives in time.
pub async fn next(
    s: &mut Streaming<ConfigMapWatchEvent>,
    within: Duration,
) -> Result<Option<Seen>, Status> {
    let msg = tokio::time::timeout(within, s.message())
        .await
        .expect("no watch event in time")?;
    Ok(msg.map(|e| {
        let object = e.object.unwrap_or_default();
        let m = object.metadata.clone().unwrap_or_default();
        (
            WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
            m.name,
            m.resource_version,
            object,
        )
    }))
}

/// Whether no event arrives within `within`.
pub async fn quiet(s: &mut Streaming<ConfigMapWatchEvent>, within: Duration) -> bool {
    tokio::time::timeout(within, s.message()).await.is_err()
}
