//! A List of every object of a namespace of 10,000 ConfigMaps in one page (`limit=10000`), over
//! REST (JSON) and over typed gRPC, against a raw etcd range of the same keys: throughput, and
//! registry-svc's peak RSS while it serves one such List against the answer's size.
//!
//! The REST handler streams the list (its envelope, then each item as the codec wrote it), so
//! what it should hold is the page storage-svc sent (protobuf) and the items' JSON, once: the
//! peak's growth is compared with both sizes. The peak is `/proc/<pid>/status`'s `VmHWM`, reset
//! to the current RSS before the List (`clear_refs`), after a pause that lets the allocator
//! return what earlier requests freed. It is measured on a fresh registry-svc, before anything
//! else: memory an allocator keeps after a busier phase (a thousand watches) would hide the
//! growth.

use std::time::Duration;

use etcd_client::GetOptions;
use http::{Method, StatusCode};
use kubestore_proto::{
    core::v1::{ListConfigMapsRequest, config_maps_client::ConfigMapsClient},
    meta::v1::ListOptions,
};
use prost::Message;
use tonic::transport::Channel;

use super::{client::RestClient, ops::check};
use crate::{procs::ServiceProcess, report::Row};

/// The namespace of the large list.
pub(crate) const BIG_NS: &str = "bench-rest-big";

/// registry-svc's memory during one List.
pub(crate) struct ListMemory {
    /// `REST (JSON)` or `gRPC (protobuf)`.
    pub(crate) transport: &'static str,
    /// RSS before, MiB.
    pub(crate) base: f64,
    /// Peak RSS during the List, MiB.
    pub(crate) peak: f64,
    /// The answer's size, MiB.
    pub(crate) answer: f64,
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

async fn rest_list(client: &RestClient, want: usize) -> Result<usize, String> {
    let path = format!("/api/v1/namespaces/{BIG_NS}/configmaps?limit={want}");
    let (status, bytes) = client.send(Method::GET, &path, None).await?;
    if status != StatusCode::OK {
        return Err(format!("list answered {status}"));
    }
    let list: super::client::ConfigMapList =
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    check(list.items.len(), want)?;
    Ok(bytes.len())
}

async fn grpc_list(channel: Channel, want: usize) -> Result<usize, String> {
    let mut c = ConfigMapsClient::new(channel).max_decoding_message_size(1 << 30);
    let r = c
        .list(ListConfigMapsRequest {
            namespace: BIG_NS.into(),
            options: Some(ListOptions {
                limit: want as i64,
                ..Default::default()
            }),
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    check(r.items.len(), want)?;
    Ok(r.encoded_len())
}

/// registry-svc's RSS before and at its peak during `list`, and the answer's size.
async fn memory<F: std::future::Future<Output = Result<usize, String>>>(
    registry: &ServiceProcess,
    transport: &'static str,
    list: F,
) -> Result<ListMemory, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    registry.reset_peak();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let base = registry.rss_mib().0;
    let size = list.await?;
    let peak = registry.rss_mib().1;
    println!(
        "  registry-svc RSS during one {transport} list: {base:.1} -> peak {peak:.1} MiB (+{:.1}); answer {:.2} MiB",
        peak - base,
        mib(size)
    );
    Ok(ListMemory {
        transport,
        base,
        peak,
        answer: mib(size),
    })
}

/// Seeds the large list's namespace, then measures registry-svc's memory during one REST and
/// one gRPC List of it (after a List of 10 objects on each, so that what every first request
/// sets up is not counted).
pub(crate) async fn seed_and_measure_memory(
    etcd: &etcd_client::Client,
    grpc: &Channel,
    rest: &RestClient,
    registry: &ServiceProcess,
    objects: usize,
) -> Result<Vec<ListMemory>, String> {
    println!("REST: registry-svc's memory during a list of {objects} ConfigMaps in one page");
    crate::listwatch::seed(etcd, BIG_NS, objects).await?;
    let few = objects.min(10);
    rest_list(rest, few).await?;
    grpc_list(grpc.clone(), few).await?;
    Ok(vec![
        memory(registry, "REST (JSON)", rest_list(rest, objects)).await?,
        memory(
            registry,
            "gRPC (protobuf)",
            grpc_list(grpc.clone(), objects),
        )
        .await?,
    ])
}

/// The large-list rows: raw etcd, gRPC, REST; one List at a time, `reps` each.
pub(crate) async fn list_rows(
    etcd: &etcd_client::Client,
    grpc: Channel,
    rest: RestClient,
    objects: usize,
    reps: usize,
) -> Result<Vec<Row>, String> {
    println!("REST: list of {objects} ConfigMaps in one page");

    const OP: &str = "list all (one page)";
    let mut rows = Vec::new();
    let raw = etcd.clone();
    let stats = crate::listwatch::measured(reps, move |_| {
        let mut kv = raw.kv_client();
        async move {
            let p = format!("/registry/configmaps/{BIG_NS}/");
            let end = crate::listwatch::prefix_end(&p);
            let r = kv
                .get(p, Some(GetOptions::new().with_range(end)))
                .await
                .map_err(|e| e.to_string())?;
            check(r.kvs().len(), objects)
        }
    })
    .await;
    rows.push(crate::listwatch::row(
        "raw etcd",
        OP,
        OP,
        stats,
        String::new(),
    ));
    let stats = crate::listwatch::measured(reps, move |_| {
        let ch = grpc.clone();
        async move { grpc_list(ch, objects).await.map(|_| ()) }
    })
    .await;
    rows.push(crate::listwatch::row(
        super::GRPC,
        OP,
        OP,
        stats,
        String::new(),
    ));
    let stats = crate::listwatch::measured(reps, move |_| {
        let c = rest.clone();
        async move { rest_list(&c, objects).await.map(|_| ()) }
    })
    .await;
    rows.push(crate::listwatch::row(
        super::REST,
        OP,
        OP,
        stats,
        "the client decodes the JSON into typed ConfigMaps".into(),
    ));
    Ok(rows)
}
