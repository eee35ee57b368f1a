//! Watch fan-out over HTTP against the typed gRPC Watch, in the same run: `n` watchers of one
//! namespace, started at the same resourceVersion, while one writer creates ConfigMaps there
//! through the typed gRPC API. Each watcher notes when it received each event; the lag is from
//! the write's acknowledgement to that receipt (as `listwatch::registry_fanout` measures gRPC's).
//!
//! - gRPC: each watcher a Watch stream on the client's channels (HTTP/2 streams, up to a few
//!   hundred per connection);
//! - HTTP/1.1: each watcher its own connection (`GET ...?watch=1&resourceVersion=RV`), a
//!   chunked body of JSON lines, each line decoded into a typed event (`client::WatchEvent`) as a client decodes
//!   it. A thousand watchers are a thousand sockets in this process and as many in
//!   registry-svc: `raise_nofile` lifts the descriptor limit first.
//! - h2: the same requests as streams of h2 connections, [`H2_STREAMS`] per connection (the
//!   REST server allows 250), as client-go over TLS opens them.
//!
//! The writer starts once every watcher has its answer's headers (its watch is open), so no
//! watcher's lag includes its own connection set-up.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::TokioIo;
use kubestore_proto::{
    core::v1::{
        CreateConfigMapRequest, WatchConfigMapsRequest, config_maps_client::ConfigMapsClient,
    },
    meta::v1::ListOptions,
};
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::runner::Stats;

/// How long a watcher waits for its next event before giving up (a missed event is an error).
const EVENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Watches per h2 connection (the REST server's limit is 250 concurrent streams).
const H2_STREAMS: usize = 200;

/// The transport of a fan-out.
#[derive(Clone)]
pub(crate) enum Watchers {
    /// Typed gRPC Watch streams on these channels.
    Grpc(Vec<Channel>),
    /// One HTTP/1.1 connection per watch to the REST API at this address.
    Http(SocketAddr),
    /// h2 streams to the REST API at this address, [`H2_STREAMS`] per connection.
    H2(SocketAddr),
}

/// How one watcher reaches the server.
#[derive(Clone)]
enum Conn {
    Grpc(Channel),
    Http1(SocketAddr),
    H2(SocketAddr, SendRequest<Empty<Bytes>>),
}

/// Raises this process's soft limit on open files to `want` (at most the hard limit), so that
/// `want` sockets fit; children started afterwards (registry-svc) inherit it. The limit after.
pub(crate) fn raise_nofile(want: u64) -> u64 {
    let before = kubestore_telemetry::process::nofile();
    let after = kubestore_telemetry::process::raise_nofile(Some(want));
    if after > before {
        println!("RLIMIT_NOFILE raised from {before} to {after} (HTTP/1.1 watches: a socket each)");
    }
    after
}

/// One gRPC watcher: its receipts.
async fn grpc_watcher(
    channel: Channel,
    ns: &'static str,
    rv: String,
    events: usize,
    ready: mpsc::Sender<()>,
) -> Result<Vec<Instant>, String> {
    let mut c = ConfigMapsClient::new(channel);
    let mut stream = c
        .watch(WatchConfigMapsRequest {
            namespace: ns.into(),
            options: Some(ListOptions {
                resource_version: rv,
                ..Default::default()
            }),
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let _ = ready.send(()).await;
    let mut got = Vec::with_capacity(events);
    while got.len() < events {
        match tokio::time::timeout(EVENT_TIMEOUT, stream.message()).await {
            Ok(Ok(Some(_))) => got.push(Instant::now()),
            _ => break,
        }
    }
    Ok(got)
}

async fn connect(addr: SocketAddr) -> Result<TokioIo<tokio::net::TcpStream>, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    Ok(TokioIo::new(tcp))
}

/// One HTTP watcher: over a connection of its own (HTTP/1.1) or a stream of a shared h2
/// connection; its receipts, one per complete line.
async fn http_watcher(
    conn: Conn,
    ns: &'static str,
    rv: String,
    events: usize,
    ready: mpsc::Sender<()>,
) -> Result<Vec<Instant>, String> {
    let addr = match &conn {
        Conn::Http1(addr) | Conn::H2(addr, _) => *addr,
        Conn::Grpc(_) => return Err("not an HTTP watcher".into()),
    };
    let req = http::Request::get(format!(
        "http://{addr}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}"
    ))
    .header(http::header::ACCEPT, "application/json")
    .body(Empty::<Bytes>::new())
    .map_err(|e| e.to_string())?;
    let (resp, driver) = match conn {
        Conn::H2(_, mut send) => {
            send.ready().await.map_err(|e| e.to_string())?;
            (
                send.send_request(req).await.map_err(|e| e.to_string())?,
                None,
            )
        }
        _ => {
            let (mut send, c) = hyper::client::conn::http1::handshake(connect(addr).await?)
                .await
                .map_err(|e| e.to_string())?;
            let driver = tokio::spawn(async move {
                let _ = c.await;
            });
            let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
            (resp, Some(driver))
        }
    };
    if resp.status() != http::StatusCode::OK {
        return Err(format!("watch answered {}", resp.status()));
    }
    let _ = ready.send(()).await;
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    let mut got = Vec::with_capacity(events);
    'read: while got.len() < events {
        let frame = match tokio::time::timeout(EVENT_TIMEOUT, body.frame()).await {
            Ok(Some(Ok(f))) => f,
            _ => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line = buf.split_to(end + 1);
            let now = Instant::now();
            let event: super::client::WatchEvent =
                serde_json::from_slice(&line[..end]).map_err(|e| e.to_string())?;
            match event.kind.as_str() {
                "ADDED" => got.push(now),
                "ERROR" => break 'read,
                _ => {}
            }
        }
    }
    drop(body);
    if let Some(d) = driver {
        d.abort();
    }
    Ok(got)
}

/// `n` watchers of `ns` over `how` while one writer creates `events` ConfigMaps there through
/// `writer`; the lag of every delivery (p50, p99) and the events/s each watcher received.
pub(crate) async fn fanout(
    how: Watchers,
    writer: Channel,
    ns: &'static str,
    n: usize,
    events: usize,
) -> Result<Stats, String> {
    let mut cms = ConfigMapsClient::new(writer);
    let start = cms
        .create(CreateConfigMapRequest {
            namespace: ns.into(),
            config_map: Some(crate::listwatch::object(ns, "start")),
            dry_run: false,
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .metadata
        .unwrap_or_default()
        .resource_version;
    let mut h2 = Vec::new();
    if let Watchers::H2(addr) = &how {
        for _ in 0..n.div_ceil(H2_STREAMS) {
            let (send, c) = hyper::client::conn::http2::handshake(
                hyper_util::rt::TokioExecutor::new(),
                connect(*addr).await?,
            )
            .await
            .map_err(|e| e.to_string())?;
            tokio::spawn(c);
            h2.push(send);
        }
    }
    let conn = |i: usize| match &how {
        Watchers::Grpc(chans) => Conn::Grpc(chans[i % chans.len()].clone()),
        Watchers::Http(addr) => Conn::Http1(*addr),
        Watchers::H2(addr) => Conn::H2(*addr, h2[i % h2.len()].clone()),
    };
    let receipts = Arc::new(Mutex::new(Vec::new()));
    let (ready_tx, mut ready) = mpsc::channel(n.max(1));
    let mut tasks = Vec::new();
    for i in 0..n {
        let (receipts, rv, ready_tx, conn) =
            (receipts.clone(), start.clone(), ready_tx.clone(), conn(i));
        tasks.push(tokio::spawn(async move {
            let got = match conn {
                Conn::Grpc(channel) => grpc_watcher(channel, ns, rv, events, ready_tx).await?,
                conn => http_watcher(conn, ns, rv, events, ready_tx).await?,
            };
            if let Ok(mut r) = receipts.lock() {
                r.push(got);
            }
            Ok::<(), String>(())
        }));
    }
    drop(ready_tx);
    let mut opened = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while opened < n {
        match tokio::time::timeout_at(deadline, ready.recv()).await {
            Ok(Some(())) => opened += 1,
            _ => break,
        }
    }
    if opened < n {
        for t in &tasks {
            t.abort();
        }
        return Err(format!("only {opened} of {n} watches opened"));
    }
    let begin = Instant::now();
    let acks = crate::listwatch::write_events(&mut cms, ns, events).await?;
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let receipts = receipts.lock().map_err(|e| e.to_string())?;
    Ok(crate::listwatch::fanout_stats(&acks, &receipts, begin))
}
