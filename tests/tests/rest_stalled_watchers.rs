//! A REST watcher that stops reading cannot take registry-svc from others, over HTTP/1.1 and
//! h2 alike: while 20 MiB of changes pile up behind it, a bystander's reads are measured (p99
//! under a second, every one answered 200; an h2 bystander on a connection of its own in the
//! h2 case); the watcher is cut off (`registry_watchers_cut_off_total`), and when it reads
//! again it finds what was on its way, then upstream's `429` ERROR event, then the end of its
//! stream, having missed some of the changes.
//!
//! The watchers: HTTP/1.1 on a socket with a small receive buffer, so that the server's side
//! holds what it does not read; h2 by hyper's client (no TLS), which stops granting the stream
//! flow-control window while its body is not read.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, dechunk, get, header, lines, metrics_addr, open_watch, post, wait_until},
    services::{sample, scrape, wait_system_namespaces},
};
use serde_json::Value;
use tokio::{io::AsyncReadExt, net::TcpStream, task::JoinHandle};

/// Changes written while the watcher stalls: 80 of 256 KiB, far more than every buffer on
/// the way holds.
const WRITES: usize = 80;

type H2 = hyper::client::conn::http2::SendRequest<Empty<Bytes>>;

/// An h2 connection without TLS (prior knowledge).
async fn h2(api: SocketAddr) -> H2 {
    let tcp = TcpStream::connect(api).await.expect("connect");
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    sender
}

/// GET `path` over h2: the status code.
async fn h2_get(sender: &mut H2, api: SocketAddr, path: &str) -> u16 {
    let req = http::Request::get(format!("http://localhost:{}{path}", api.port()))
        .body(Empty::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("an h2 response");
    let code = resp.status().as_u16();
    resp.into_body().collect().await.expect("the body");
    code
}

/// A bystander reading the probe ConfigMap again and again (HTTP/1.1, or h2 on a connection
/// of its own) until `stop`: the latency of each read, every one a 200.
fn bystander(api: SocketAddr, over_h2: bool, stop: Arc<AtomicBool>) -> JoinHandle<Vec<Duration>> {
    tokio::spawn(async move {
        let path = format!("{CMS}/probe");
        let mut sender = if over_h2 { Some(h2(api).await) } else { None };
        let mut latencies = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let start = Instant::now();
            let code = match sender.as_mut() {
                Some(s) => h2_get(s, api, &path).await,
                None => get(api, &path).await.code,
            };
            latencies.push(start.elapsed());
            assert_eq!(code, 200, "a bystander's read");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        latencies
    })
}

/// Writes [`WRITES`] large ConfigMaps while a bystander reads, until the stalled watcher is
/// cut off; asserts the bystander's p99.
async fn pile_up_until_cut_off(kube: &KubeCluster, over_h2: bool) {
    let (metrics, api) = (metrics_addr(kube), kube.api);
    let cut_off = || async { sample(&scrape(metrics).await, "registry_watchers_cut_off_total") };
    assert_eq!(cut_off().await, Some(0.0));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = bystander(api, over_h2, stop.clone());
    for i in 0..WRITES {
        post(api, &format!("big-{i}"), 256 << 10).await.is(201);
    }
    let cut = || async { cut_off().await == Some(1.0) };
    wait_until(
        Duration::from_secs(30),
        "the stalled watcher is cut off",
        cut,
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = reads.await.expect("the bystander");
    latencies.sort();
    assert!(latencies.len() >= 10, "{} reads", latencies.len());
    let p99 = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    assert!(
        p99 < Duration::from_secs(1),
        "bystander p99 {p99:?} over {} reads while a watcher stalled (h2: {over_h2})",
        latencies.len()
    );
}

/// The events of a cut-off watch: some of the changes, then the cut-off, as the last event.
fn assert_cut_off(events: &[Value]) {
    let added = events.iter().filter(|e| e["type"] == "ADDED").count();
    assert!(
        added < WRITES,
        "{added} of {WRITES} writes delivered: not cut off"
    );
    let last = events.last().expect("events");
    assert_eq!(last["type"], "ERROR", "the stream ends with the cut-off");
    assert_eq!(last["object"]["kind"], "Status");
    assert_eq!(last["object"]["code"], 429);
    assert_eq!(last["object"]["reason"], "TooManyRequests");
    assert!(
        last["object"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not read its events")),
        "{last}"
    );
}

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    post(kube.api, "probe", 1).await.is(201);
    kube
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http1_watcher_that_stops_reading_is_cut_off_and_others_are_served() {
    let kube = started().await;
    // A small receive buffer, so that the server's side holds what the watcher does not read.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(64 << 10).expect("SO_RCVBUF");
    let mut watch = socket.connect(kube.api).await.expect("connect");
    let (head, mut raw) = open_watch(&mut watch).await;
    let chunked = header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
    assert!(chunked, "{head}");

    pile_up_until_cut_off(&kube, false).await;
    get(kube.api, &format!("{CMS}/probe")).await.is(200);

    // Reading now: what was on its way, then the cut-off as an ERROR event, then the end.
    let mut buf = vec![0u8; 256 << 10];
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while !dechunk(&raw).1 {
            match watch.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
        true
    })
    .await
    .expect("the cut-off watch never ended");
    assert!(ended, "the connection ended before the stream did");
    assert_cut_off(&lines(&dechunk(&raw).0));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_h2_watcher_that_stops_reading_is_cut_off_and_others_are_served() {
    let kube = started().await;
    let api = kube.api;
    let mut watcher = h2(api).await;
    let req = http::Request::get(format!("http://localhost:{}{CMS}?watch=1", api.port()))
        .body(Empty::new())
        .expect("request");
    let resp = watcher.send_request(req).await.expect("the watch answers");
    assert_eq!(
        (resp.version(), resp.status().as_u16()),
        (http::Version::HTTP_2, 200)
    );
    // Its body is not read until the cut-off.
    let body = resp.into_body();

    pile_up_until_cut_off(&kube, true).await;
    let mut sender = h2(api).await;
    assert_eq!(h2_get(&mut sender, api, &format!("{CMS}/probe")).await, 200);

    let collected = tokio::time::timeout(Duration::from_secs(30), body.collect())
        .await
        .expect("the cut-off watch never ended")
        .expect("the stream ends cleanly, with the cut-off event");
    assert_cut_off(&lines(&collected.to_bytes()));
}
