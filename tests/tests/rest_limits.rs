//! The REST API's limits on requests, spoken by hand (HTTP/1.1 on raw TCP, h2 by hyper's
//! client without TLS) against a real etcd, storage-svc and registry-svc:
//!
//! - In flight: with `--max-requests-inflight` 2 taken by two PATCHes waiting for their
//!   object's update turn (a storage-svc GuaranteedUpdate the test holds), a third request is
//!   upstream's `429` `TooManyRequests` Status with `Retry-After: 1`, over REST and gRPC alike
//!   (one limit); a watch and `/readyz` are exempt; once the turn is released the waiting
//!   PATCHes are served.
//! - `?timeout=`: a PATCH that waits longer than its `timeout` is upstream's `504` `Timeout`
//!   Status, near its timeout (not at once, not after the default 60 s), and writes nothing.
//! - Bodies past 3 MiB are `413` whether they announce their length or not: chunked HTTP/1.1
//!   and h2 bodies are refused once 3 MiB have arrived, before their end (the client still
//!   has more to send), and the same bodies under the limit are stored.

use std::{
    convert::Infallible,
    net::SocketAddr,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubestore_proto::core::v1::ListConfigMapsRequest;
use kubestore_tests::{
    ClusterOptions,
    fixtures_storage::start,
    kube::KubeCluster,
    reason,
    rest::{
        CMS, JSON, Reply, assert_status, call, config_map, get, header, open_watch, post,
        read_reply,
    },
    services::wait_system_namespaces,
    update::{Holder, Reply as Answer, long_turn_hold, wait_for_waiting},
};
use serde_json::{Value, json};
use tokio::{io::AsyncWriteExt, net::TcpStream, sync::mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

const MERGE: (&str, &str) = ("Content-Type", "application/merge-patch+json");

/// A cluster whose storage-svc lets a held update keep its turn for a minute, with registry-svc's
/// in-flight limit at `inflight`.
async fn cluster(inflight: usize) -> KubeCluster {
    let kube = KubeCluster::start_with(ClusterOptions {
        storage: Some(long_turn_hold()),
        registry: Some(registry_svc::Config {
            max_requests_inflight: inflight,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

/// Holds the update turn of the ConfigMap `default/name` in storage-svc.
async fn hold(kube: &KubeCluster, name: &str) -> Holder {
    let mut storage = kube.cluster.storage_client().await;
    Holder::take(&mut storage, start(&format!("/configmaps/default/{name}"))).await
}

/// PATCHes a label onto `default/name` (`query` appended to the path).
async fn patch(api: SocketAddr, name: &str, query: &str) -> Reply {
    let body = json!({"metadata": {"labels": {"patched": "yes"}}}).to_string();
    call(
        api,
        "PATCH",
        &format!("{CMS}/{name}{query}"),
        &[MERGE],
        body.as_bytes(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_past_the_inflight_limit_are_429_with_retry_after_and_watches_are_exempt() {
    let kube = cluster(2).await;
    let api = kube.api;
    post(api, "held", 1).await.is(201);
    let holder = hold(&kube, "held").await;
    // Two PATCHes wait for the held turn: both slots taken.
    let waiting: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { patch(api, "held", "").await }))
        .collect();
    wait_for_waiting(kube.cluster.storage.metrics_addr, 2).await;

    let r = get(api, CMS).await;
    let status = assert_status(&r, 429, "TooManyRequests");
    assert_eq!(header(&r.head, "retry-after"), Some("1"), "{r}");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Too many requests, please try again later")),
        "{r}"
    );
    // One limit for both APIs: gRPC is refused too.
    let e = kube
        .cluster
        .config_maps()
        .await
        .list(ListConfigMapsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect_err("no slot for a gRPC List either");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::ResourceExhausted, "TooManyRequests")
    );
    // A watch and the health endpoints are not counted.
    let mut watch = TcpStream::connect(api).await.expect("connect");
    let (head, _) = open_watch(&mut watch).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    get(api, "/readyz").await.is(200);

    // The turn is released: the waiting PATCHes are served, and so is everyone again.
    holder
        .answer(Answer::Abort("released by the test".into()))
        .await
        .expect("the held update ends");
    for w in waiting {
        let r = w.await.expect("a PATCH").is(200);
        assert_eq!(r.json()["metadata"]["labels"]["patched"], "yes", "{r}");
    }
    get(api, CMS).await.is(200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_past_its_timeout_parameter_is_504() {
    let kube = cluster(400).await;
    let api = kube.api;
    post(api, "held", 1).await.is(201);
    let holder = hold(&kube, "held").await;
    let started = Instant::now();
    let r = patch(api, "held", "?timeout=2s").await;
    let took = started.elapsed();
    // Whichever gives up first (the REST handler's timer, or storage-svc's queue, which the
    // request's deadline reaches through gRPC), the answer is upstream's 504.
    assert_status(&r, 504, "Timeout");
    // Near its 2 s (storage-svc gives up a little before the deadline it was sent), far from
    // the default of 60 s.
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(30),
        "answered after {took:?}"
    );
    holder
        .answer(Answer::Abort("released by the test".into()))
        .await
        .expect("the held update ends");
    // Nothing was written by the request that timed out; a later one is served.
    let got = get(api, &format!("{CMS}/held")).await.is(200).json();
    assert_eq!(got["metadata"]["labels"], Value::Null, "{got}");
    patch(api, "held", "?timeout=10s").await.is(200);
}

/// A POST of [`config_map`]`(name, size)` as a chunked HTTP/1.1 body in chunks of 64 KiB,
/// without the last (empty) chunk that ends it.
fn chunked_config_map(name: &str, size: usize) -> Vec<u8> {
    let body = config_map(name, size);
    let mut out = format!(
        "POST {CMS} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for c in body.chunks(64 << 10) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chunked_body_past_3_mib_is_413_before_its_end() {
    let kube = cluster(400).await;
    let api = kube.api;
    // Under the limit, chunked: stored.
    let mut s = TcpStream::connect(api).await.expect("connect");
    let mut small = chunked_config_map("small", 1 << 20);
    small.extend_from_slice(b"0\r\n\r\n");
    s.write_all(&small).await.expect("write");
    let r = tokio::time::timeout(Duration::from_secs(20), read_reply(&mut s))
        .await
        .expect("an answer")
        .expect("a response");
    r.is(201);

    // 4 MiB in chunks, never ended: the 413 comes once 3 MiB are in.
    let mut s = TcpStream::connect(api).await.expect("connect");
    let (mut rd, mut wr) = s.split();
    let large = chunked_config_map("large", 4 << 20);
    let (reply, _) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(20), read_reply(&mut rd)),
        async {
            // The server may close before everything is written: that is its answer.
            let _ = wr.write_all(&large).await;
        }
    );
    let r = reply
        .expect("413 before the body's end: the server waited for it")
        .expect("a response");
    let status = assert_status(&r, 413, "RequestEntityTooLarge");
    assert_eq!(
        status["message"], "Request entity too large: limit is 3145728",
        "{r}"
    );
    let names: Vec<Value> = get(api, CMS).await.is(200).json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("small")]);
}

/// A request body streamed from a channel.
type Streamed = StreamBody<ReceiverStream<Result<Frame<Bytes>, Infallible>>>;

/// An h2 connection without TLS (prior knowledge).
async fn h2(api: SocketAddr) -> hyper::client::conn::http2::SendRequest<Streamed> {
    let tcp = TcpStream::connect(api).await.expect("connect");
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    sender
}

#[tokio::test(flavor = "multi_thread")]
async fn an_h2_body_past_3_mib_is_413_before_its_end() {
    let kube = cluster(400).await;
    let api = kube.api;
    let mut sender = h2(api).await;
    for (name, size, code) in [("small", 1 << 20, 201), ("large", 4 << 20, 413)] {
        let (tx, rx) = mpsc::channel(4);
        let req = http::Request::post(format!("http://localhost:{}{CMS}", api.port()))
            .header(JSON.0, JSON.1)
            .body(StreamBody::new(ReceiverStream::new(rx)))
            .expect("request");
        let body = config_map(name, size);
        let finish = code == 201;
        // Frames of 64 KiB; the large body's stream is never ended (its sender is kept).
        let feeder = tokio::spawn(async move {
            for c in body.chunks(64 << 10) {
                if tx
                    .send(Ok(Frame::data(Bytes::copy_from_slice(c))))
                    .await
                    .is_err()
                {
                    return None;
                }
            }
            if finish { None } else { Some(tx) }
        });
        let resp = tokio::time::timeout(Duration::from_secs(20), sender.send_request(req))
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer before the body's end"))
            .expect("an h2 response");
        assert_eq!(resp.version(), http::Version::HTTP_2);
        assert_eq!(resp.status().as_u16(), code, "{name}");
        let bytes = resp
            .into_body()
            .collect()
            .await
            .expect("the body")
            .to_bytes();
        let json: Value = serde_json::from_slice(&bytes).expect("JSON");
        if code == 413 {
            assert_eq!(json["reason"], "RequestEntityTooLarge", "{json}");
            assert_eq!(
                json["message"],
                "Request entity too large: limit is 3145728"
            );
        } else {
            assert_eq!(json["metadata"]["name"], name, "{json}");
        }
        drop(feeder);
    }
    assert_eq!(
        get(api, &format!("{CMS}/large")).await.code,
        404,
        "the large body was not stored"
    );
}
