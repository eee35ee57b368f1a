//! Set-up shared by the watch-cache tests: storage-svc with its cache on (whatever
//! `KUBESTORE_TEST_WATCH_CACHE` says), and waiting until the cache serves.

use std::time::Duration;

use kubestore_proto::storage::v1::{GetRequest, storage_client::StorageClient};
use tonic::transport::Channel;

use crate::{
    Cluster, ClusterOptions,
    services::{sample, scrape},
};

/// storage-svc's configuration with the watch cache on.
pub fn cached() -> storage_svc::Config {
    storage_svc::Config {
        watch_cache: true,
        ..Default::default()
    }
}

/// etcd and storage-svc with its watch cache on, whatever the run asks (+ registry-svc).
pub async fn cached_cluster(with_registry: bool) -> Cluster {
    Cluster::start(ClusterOptions {
        storage: Some(cached()),
        with_registry,
        exact_storage: true,
        ..Default::default()
    })
    .await
}

/// Waits until `addr`'s cache serves `resource` (a read was answered from it).
pub async fn warm(c: &mut StorageClient<Channel>, metrics: std::net::SocketAddr, key: &str) {
    for _ in 0..200 {
        let _ = c
            .get(GetRequest {
                key: key.into(),
                ignore_not_found: true,
                ..Default::default()
            })
            .await;
        let hits = sample(
            &scrape(metrics).await,
            r#"storage_watch_cache_reads_total{resource="configmaps"}"#,
        )
        .unwrap_or(0.0);
        if hits > 0.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the watch cache never served {key}");
}
