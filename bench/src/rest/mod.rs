//! The `rest` part: registry-svc's Kubernetes REST API (JSON, `--kube-api-addr`) against its
//! typed gRPC API, in the same run and on the same registry-svc process, each with its ratio to
//! raw etcd doing the same etcd work. The part starts a registry-svc of its own (on the run's
//! storage-svc) with the REST API on a free port: a fresh process, so that its peak RSS during
//! the large List (measured first) is not hidden by memory earlier parts left to its allocator.
//!
//! - ConfigMaps create, get, update with resourceVersion (Get + Put) and a list page, at each
//!   concurrency, per operation back to back: raw etcd, then for the default client (gRPC on
//!   `--channels` connections; REST on a pooled HTTP/1.1 client, a connection per concurrent
//!   request) and for a client on **one** connection (one gRPC channel; one h2 connection) the
//!   gRPC row, then the REST row (`ops.rs`, `client.rs`);
//! - watch fan-out: `--rest-watchers` watchers (1,000) over HTTP/1.1, and over h2 (as client-go
//!   over TLS), against as many typed gRPC watchers, lag from write ack to receipt (`watch.rs`);
//! - a List of 10,000 ConfigMaps in one page, and registry-svc's peak RSS while it serves one
//!   (`list.rs`).
//!
//! `report.rs` writes the REST section of BENCHMARKS.md from these rows.

pub(crate) mod client;
pub(crate) mod list;
pub(crate) mod ops;
pub(crate) mod report;
pub(crate) mod watch;

use std::{
    net::SocketAddr,
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use kubestore_proto::core::v1::config_maps_client::ConfigMapsClient;
use tonic::transport::Channel;

use crate::{
    procs::ServiceProcess,
    report::Row,
    scenarios::{ConfigMaps, Raw},
};
use client::RestClient;
use ops::{GrpcPage, RawPage, RestConfigMaps};

/// The typed gRPC rows, default client.
pub(crate) const GRPC: &str = "gRPC ConfigMaps";
/// The REST rows, pooled HTTP/1.1 client.
pub(crate) const REST: &str = "REST ConfigMaps, HTTP/1.1 pool";
/// The typed gRPC rows, one channel.
pub(crate) const GRPC_ONE: &str = "gRPC ConfigMaps, 1 channel";
/// The REST rows, one h2 connection.
pub(crate) const REST_ONE: &str = "REST ConfigMaps, 1 h2 connection";
/// The HTTP/1.1 watch row.
pub(crate) const WATCH_HTTP1: &str = "REST ConfigMaps, HTTP/1.1 watches";
/// The h2 watch row.
pub(crate) const WATCH_H2: &str = "REST ConfigMaps, h2 watches";

/// The operations, as rows name them, and the raw etcd row each compares with.
pub(crate) const OPS: [(&str, &str); 4] = [
    ("create", "create"),
    ("get", "get"),
    ("update (get+update rv)", "update"),
    ("list page of 100", "list page of 100"),
];

/// What the part needs from the run.
pub(crate) struct Setup<'a> {
    /// Raw etcd clients (one per channel).
    pub(crate) etcd: &'a [etcd_client::Client],
    /// The storage-svc the part's registry-svc runs on.
    pub(crate) storage: &'a ServiceProcess,
    /// The default client's gRPC channels.
    pub(crate) channels: usize,
    pub(crate) concurrency: &'a [usize],
    pub(crate) ops: usize,
    pub(crate) watchers: usize,
    pub(crate) watch_events: usize,
    pub(crate) list_objects: usize,
    pub(crate) list_reps: usize,
}

/// What the part measured.
pub(crate) struct Results {
    /// Per concurrency: raw etcd, then gRPC and REST pairs.
    pub(crate) rows: Vec<Row>,
    /// Fan-out: gRPC, then HTTP.
    pub(crate) watch: Vec<Row>,
    /// The large list: raw etcd, gRPC, REST.
    pub(crate) list: Vec<Row>,
    /// registry-svc's memory during one large List, per transport.
    pub(crate) memory: Vec<list::ListMemory>,
    /// The default client's gRPC channels.
    pub(crate) channels: usize,
    pub(crate) watchers: usize,
    pub(crate) watch_events: usize,
    pub(crate) list_objects: usize,
    /// The descriptor limit the run had.
    pub(crate) nofile: u64,
}

/// Waits until the REST API answers `/readyz`.
async fn wait_ready(client: &RestClient) -> Result<(), String> {
    for _ in 0..200 {
        if let Ok((s, _)) = client.send(http::Method::GET, "/readyz", None).await
            && s.is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err("the REST API did not become ready in 10 s".into())
}

/// Runs the part.
pub(crate) async fn run(s: Setup<'_>) -> Result<Results, String> {
    // HTTP/1.1 watches hold a socket each, here and in registry-svc (which inherits the limit).
    let nofile = watch::raise_nofile(2 * s.watchers as u64 + 4096);
    let rest_addr: SocketAddr = crate::procs::free_addr();
    let registry = ServiceProcess::start(
        "registry",
        &[
            "--storage-addr".into(),
            s.storage.url(),
            "--kube-api-addr".into(),
            rest_addr.to_string(),
        ],
        &[],
    )
    .await;
    let pooled = RestClient::pooled(rest_addr);
    wait_ready(&pooled).await?;
    let one_h2 = RestClient::one_h2_connection(rest_addr).await?;
    let channels = crate::channels(&registry.url(), s.channels).await;
    let one_channel = crate::channels(&registry.url(), 1).await;

    // The large List's memory first, on the fresh process.
    let big =
        list::seed_and_measure_memory(&s.etcd[0], &channels[0], &pooled, &registry, s.list_objects)
            .await?;

    crate::listwatch::seed(&s.etcd[0], ops::PAGE_NS, ops::PAGE * 5).await?;
    let mut rows = Vec::new();
    for &c in s.concurrency {
        println!("REST against gRPC, concurrency {c}");
        let raw = Raw {
            clients: s.etcd.to_vec(),
            prefix: format!("/raw-rest/c{c}/"),
            conflicts: Arc::new(AtomicU64::new(0)),
        };
        let raw_page = RawPage {
            clients: s.etcd.to_vec(),
        };
        let grpc = |chans: &[Channel], prefix: String| ConfigMaps {
            clients: chans.iter().cloned().map(ConfigMapsClient::new).collect(),
            prefix,
            aborted: Arc::new(AtomicU64::new(0)),
        };
        // (gRPC layer, its client, REST layer, its client), default client first.
        let pairs = [
            (
                GRPC,
                grpc(&channels, format!("rg-c{c}-")),
                GrpcPage {
                    channels: channels.clone(),
                },
                REST,
                RestConfigMaps {
                    client: pooled.clone(),
                    prefix: format!("rr-c{c}-"),
                },
            ),
            (
                GRPC_ONE,
                grpc(&one_channel, format!("rg1-c{c}-")),
                GrpcPage {
                    channels: one_channel.clone(),
                },
                REST_ONE,
                RestConfigMaps {
                    client: one_h2.clone(),
                    prefix: format!("rr1-c{c}-"),
                },
            ),
        ];
        for (op, base) in OPS {
            macro_rules! row {
                ($layer:expr, $obj:expr, $method:ident) => {{
                    // Raw etcd's rows are named by the baseline they are.
                    let name = if $layer == "raw etcd" { base } else { op };
                    let o = $obj.clone();
                    crate::measure(&mut rows, $layer, name, base, c, s.ops, move |i| {
                        let o = o.clone();
                        async move { o.$method(i).await }
                    })
                    .await
                }};
            }
            match op {
                "create" => row!("raw etcd", raw, create),
                "get" => row!("raw etcd", raw, get),
                "list page of 100" => row!("raw etcd", raw_page, list_page),
                _ => row!("raw etcd", raw, update),
            }
            for (grpc_layer, cms, page, rest_layer, rest) in &pairs {
                match op {
                    "create" => {
                        row!(*grpc_layer, cms, create);
                        row!(*rest_layer, rest, create);
                    }
                    "get" => {
                        row!(*grpc_layer, cms, get);
                        row!(*rest_layer, rest, get);
                    }
                    "list page of 100" => {
                        row!(*grpc_layer, page, list_page);
                        row!(*rest_layer, rest, list_page);
                    }
                    _ => {
                        row!(*grpc_layer, cms, update);
                        row!(*rest_layer, rest, update);
                    }
                }
            }
        }
    }

    println!(
        "REST watch fan-out: {} watchers, {} writes",
        s.watchers, s.watch_events
    );
    let writer = channels[0].clone();
    let mut watch_rows = Vec::new();
    for (layer, how, ns) in [
        (
            GRPC,
            watch::Watchers::Grpc(channels.clone()),
            "bench-rest-watch-grpc",
        ),
        (
            WATCH_HTTP1,
            watch::Watchers::Http(rest_addr),
            "bench-rest-watch-http",
        ),
        (
            WATCH_H2,
            watch::Watchers::H2(rest_addr),
            "bench-rest-watch-h2",
        ),
    ] {
        registry.reset_peak();
        let before = crate::cpu::sample();
        let stats = watch::fanout(how, writer.clone(), ns, s.watchers, s.watch_events).await?;
        let cpu = before.per_op(&crate::cpu::sample(), s.watchers * s.watch_events);
        watch_rows.push(crate::listwatch::row(
            layer,
            "watch fan-out",
            "watch fan-out",
            (stats, cpu),
            format!(
                "events/s per watcher; p50/p99 = lag from write ack to receipt; registry peak {:.0} MiB",
                registry.rss_mib().1
            ),
        ));
    }

    let list = list::list_rows(
        &s.etcd[0],
        channels[0].clone(),
        pooled.clone(),
        s.list_objects,
        s.list_reps,
    )
    .await?;
    registry.stop().await;
    Ok(Results {
        rows,
        watch: watch_rows,
        list,
        memory: big,
        channels: channels.len(),
        watchers: s.watchers,
        watch_events: s.watch_events,
        list_objects: s.list_objects,
        nofile,
    })
}
