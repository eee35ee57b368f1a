//! What one client can do to the REST API and everyone else (issue 30's denial-of-service
//! points), against registry-svc as a process of its own, so that its memory is measured
//! apart from this test's: each attack is refused or served within bounds, a bystander's
//! requests meanwhile keep a p99 under a second, and registry-svc's peak resident memory grows
//! by less than 150 MiB per attack.
//!
//! - a YAML body of nested aliases (CVE-2019-11253's shape) is refused;
//! - JSON patches: more than 10,000 operations (413), `copy` operations that double a value
//!   (422 at 3 MiB of copies), and a valid patch of many `move`s (applied without an undo log);
//! - strategic merge patches of long lists, concurrently (linear now, off the async workers);
//! - requests whose bodies never come hold no in-flight slot;
//! - Lists nobody reads hold their slot until written, but not the list;
//! - connections that send only h2's preface are closed when idle, and one client address
//!   holds at most its bound of connections;
//! - `/openapi/v3` fetched in a loop, with a large definition, is served from memory.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_tests::{
    processes::{ProcessCluster, p99},
    rest::{JSON, call, connect_from, exchange, request},
    services::{sample, scrape},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MIB: u64 = 1 << 20;
/// What one attack may add to registry-svc's peak resident memory.
const GROWTH: u64 = 150 * MIB;
/// What a bystander's p99 may be meanwhile.
const BYSTANDER_P99: Duration = Duration::from_secs(1);

/// One attack at a time: each test measures a bystander's latency and registry-svc's memory,
/// and on two cores the other tests' clusters and attacks (run in parallel by default) would be
/// what the bystander waits for, not the attack under test (a p99 of 1.6 s was seen so).
async fn alone() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE.lock().await
}

/// A bystander: GETs of one ConfigMap, each on a connection of its own from another client
/// address, until stopped; their latencies.
struct Bystander {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Duration>>,
}

impl Bystander {
    async fn start(api: SocketAddr) -> Self {
        call(
            api,
            "POST",
            CMS,
            &[JSON],
            br#"{"metadata":{"name":"probe"}}"#,
        )
        .await;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let task = tokio::spawn(async move {
            let mut lat = Vec::new();
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                let mut c = connect_from([127, 0, 0, 2], api).await.expect("connect");
                let r = exchange(&mut c, &request("GET", &format!("{CMS}/probe"), &[], b""))
                    .await
                    .expect("the bystander's GET");
                assert_eq!(r.code, 200, "the bystander was refused: {r}");
                lat.push(t.elapsed());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            lat
        });
        Self { stop, task }
    }

    /// Stops it and asserts its p99.
    async fn finish(self, what: &str) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        let mut lat = self.task.await.expect("bystander");
        let p = p99(&mut lat).expect("the bystander made requests");
        assert!(
            p < BYSTANDER_P99,
            "{what}: the bystander's p99 was {p:?} ({} requests)",
            lat.len()
        );
        p
    }
}

/// Asserts that registry-svc's peak memory since `base` grew by less than [`GROWTH`].
fn assert_growth(c: &ProcessCluster, base: u64, what: &str) -> u64 {
    let grown = c.peak_rss().saturating_sub(base);
    assert!(
        grown < GROWTH,
        "{what}: registry-svc's peak resident memory grew by {} MiB",
        grown / MIB
    );
    grown
}

/// Starts counting registry-svc's peak memory afresh; the baseline.
fn baseline(c: &ProcessCluster) -> u64 {
    c.reset_peak();
    c.rss()
}

/// A YAML document of 15 KB whose aliases expand to ~10^9 nodes: a wide anchor, aliased by a
/// second, aliased by a third.
fn laughs() -> String {
    let a = vec!["lol"; 1000].join(",");
    let b = vec!["*a"; 1000].join(",");
    let c = vec!["*b"; 1000].join(",");
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\na: &a [{a}]\nb: &b [{b}]\nc: [{c}]\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn nested_yaml_aliases_are_refused_without_growing_the_server() {
    let _alone = alone().await;
    let mut c = ProcessCluster::start(&[]).await;
    let body = laughs();
    assert!(body.len() < 16 * 1024, "{} bytes", body.len());
    let bystander = Bystander::start(c.api).await;
    let base = baseline(&c);
    for _ in 0..4 {
        let r = call(
            c.api,
            "POST",
            CMS,
            &[("Content-Type", "application/yaml")],
            body.as_bytes(),
        )
        .await
        .is(400);
        let message = r.json()["message"].as_str().unwrap_or("").to_string();
        assert!(message.contains("excessive aliasing"), "{r}");
    }
    let grown = assert_growth(&c, base, "YAML aliases");
    let p = bystander.finish("YAML aliases").await;
    assert!(c.running());
    println!(
        "YAML aliases: peak +{} MiB, bystander p99 {p:?}",
        grown / MIB
    );
}

/// A ConfigMap `name` with `data`.
fn config_map(name: &str, data: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"metadata": {"name": name}, "data": data})).expect("JSON")
}

async fn json_patch(api: SocketAddr, name: &str, ops: &Value) -> kubestore_tests::rest::Reply {
    call(
        api,
        "PATCH",
        &format!("{CMS}/{name}"),
        &[("Content-Type", "application/json-patch+json")],
        &serde_json::to_vec(ops).expect("JSON"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn json_patches_are_bounded_as_upstream_bounds_them() {
    let _alone = alone().await;
    let mut c = ProcessCluster::start(&[]).await;
    call(
        c.api,
        "POST",
        CMS,
        &[JSON],
        &config_map("p", json!({"a": "x"})),
    )
    .await
    .is(201);
    // 10,001 operations: 413, with upstream's words.
    let ops: Vec<Value> = (0..=10_000)
        .map(|i| json!({"op": "add", "path": format!("/data/k{i}"), "value": "v"}))
        .collect();
    let r = json_patch(c.api, "p", &Value::Array(ops)).await.is(413);
    assert_eq!(
        r.json()["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
        "{r}"
    );
    // A 1 KB patch of copies, each doubling a list (a copy of it appended to itself):
    // refused once the copies add 3 MiB (2^20 times the value, unbounded).
    let bystander = Bystander::start(c.api).await;
    let base = baseline(&c);
    let mut ops = vec![json!({"op": "add", "path": "/data/l", "value": ["x".repeat(64)]})];
    for _ in 0..20 {
        ops.push(json!({"op": "copy", "from": "/data/l", "path": "/data/l/-"}));
    }
    let body = serde_json::to_vec(&ops).expect("JSON");
    assert!(body.len() < 1200, "{} bytes", body.len());
    let r = json_patch(c.api, "p", &Value::Array(ops)).await.is(422);
    assert!(
        r.json()["details"]["causes"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Unable to complete the copy")),
        "{r}"
    );
    assert_growth(&c, base, "copies");
    // A valid 160 KB patch of moves of a 256 KiB value: applied, with no undo log.
    let base = baseline(&c);
    call(
        c.api,
        "PUT",
        &format!("{CMS}/p"),
        &[JSON],
        &config_map("p", json!({"big": "y".repeat(256 * 1024)})),
    )
    .await
    .is(200);
    let mut moves = Vec::new();
    while serde_json::to_vec(&moves).expect("JSON").len() < 160 * 1024 {
        moves.push(json!({"op": "move", "from": "/data/big", "path": "/data/tmp"}));
        moves.push(json!({"op": "move", "from": "/data/tmp", "path": "/data/big"}));
    }
    let r = json_patch(c.api, "p", &Value::Array(moves)).await.is(200);
    assert_eq!(
        r.json()["data"]["big"].as_str().map(str::len),
        Some(256 * 1024)
    );
    let grown = assert_growth(&c, base, "a patch of moves");
    let p = bystander.finish("JSON patches").await;
    assert!(c.running());
    println!(
        "JSON patch of moves: peak +{} MiB, bystander p99 {p:?}",
        grown / MIB
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn long_strategic_merge_patches_leave_others_served() {
    let _alone = alone().await;
    let mut c = ProcessCluster::start(&[]).await;
    // As many finalizers as an object may have.
    let finalizers: Vec<String> = (0..1000).map(|i| format!("example.com/f-{i}")).collect();
    let cm = json!({"metadata": {"name": "long", "finalizers": finalizers}});
    call(
        c.api,
        "POST",
        CMS,
        &[JSON],
        &serde_json::to_vec(&cm).expect("JSON"),
    )
    .await
    .is(201);
    let bystander = Bystander::start(c.api).await;
    let base = baseline(&c);
    // Two patches of ~290 KB at once, as `kubectl apply` writes them: 4,000 finalizers to
    // merge into the list there, and the order of 8,000 (`$setElementOrder`; ordering took a
    // scan of the order for every comparison of the sort): merged, then refused by validation
    // (an object has at most 1,000 finalizers).
    let patches: Vec<_> = (0..2)
        .map(|p| {
            let more: Vec<String> = (0..4_000)
                .map(|i| format!("example.com/p{p}-finalizer-{i}"))
                .collect();
            let order: Vec<String> = (0..8_000)
                .map(|i| format!("example.com/p{p}-finalizer-{}", 7_999 - i))
                .collect();
            let body = serde_json::to_vec(&json!({"metadata": {
                "$setElementOrder/finalizers": order, "finalizers": more}}))
            .expect("JSON");
            assert!(body.len() > 280 * 1024, "{}", body.len());
            let api = c.api;
            tokio::spawn(async move {
                let started = Instant::now();
                let r = call(
                    api,
                    "PATCH",
                    &format!("{CMS}/long"),
                    &[("Content-Type", "application/strategic-merge-patch+json")],
                    &body,
                )
                .await
                .is(422);
                let message = r.json()["message"].as_str().unwrap_or("").to_string();
                assert!(message.contains("must have at most 1000 items"), "{r}");
                started.elapsed()
            })
        })
        .collect();
    for p in patches {
        let took = p.await.expect("patch");
        println!("a strategic merge patch of 4,000 finalizers in an order of 8,000 took {took:?}");
    }
    assert_growth(&c, base, "strategic merge patches");
    bystander.finish("strategic merge patches").await;
    assert!(c.running());
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_that_never_come_hold_no_slot() {
    let _alone = alone().await;
    let c = ProcessCluster::start(&["--max-requests-inflight", "20"]).await;
    // 100 requests send their headers and never their bodies.
    let mut stalled = Vec::new();
    for i in 0..100 {
        let mut s = TcpStream::connect(c.api).await.expect("connect");
        let head = format!(
            "POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"metadata\":{{\"name\":\"s{i}\"}}"
        );
        s.write_all(head.as_bytes()).await.expect("send headers");
        stalled.push(s);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Every other call is served: REST and gRPC.
    let mut lat = Vec::new();
    for i in 0..40 {
        let t = Instant::now();
        call(
            c.api,
            "POST",
            CMS,
            &[JSON],
            &config_map(&format!("ok-{i}"), json!({})),
        )
        .await
        .is(201);
        lat.push(t.elapsed());
    }
    let mut grpc = kubestore_proto::core::v1::config_maps_client::ConfigMapsClient::new(
        kubestore_tests::services::channel(&c.grpc).await,
    );
    for i in 0..20 {
        grpc.get(kubestore_proto::core::v1::GetConfigMapRequest {
            namespace: "default".into(),
            name: format!("ok-{i}"),
        })
        .await
        .expect("a gRPC call beside the stalled bodies");
    }
    let inflight = sample(&scrape(c.metrics).await, "grpc_server_inflight_requests");
    assert_eq!(inflight, Some(0.0), "the stalled bodies hold slots");
    let p = p99(&mut lat).expect("latencies");
    assert!(p < BYSTANDER_P99, "p99 {p:?} beside stalled bodies");
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_nobody_reads_hold_their_slot_but_not_the_list() {
    let _alone = alone().await;
    let c = ProcessCluster::start(&["--max-requests-inflight", "60"]).await;
    // 300 ConfigMaps of 90 KB: a 27 MB list.
    let blob = "z".repeat(90 * 1024);
    for i in 0..300 {
        call(
            c.api,
            "POST",
            CMS,
            &[JSON],
            &config_map(&format!("big-{i:03}"), json!({"blob": blob})),
        )
        .await
        .is(201);
    }
    let bystander = Bystander::start(c.api).await;
    let base = baseline(&c);
    // 30 clients ask for the whole list and never read it.
    let mut unread = Vec::new();
    for _ in 0..30 {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .set_recv_buffer_size(4096)
            .expect("small receive buffer");
        let mut s = socket.connect(c.api).await.expect("connect");
        s.write_all(&request("GET", CMS, &[], b""))
            .await
            .expect("send");
        unread.push(s);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Each unread list holds its slot (and the bystander's GET may hold one more).
    let inflight = sample(&scrape(c.metrics).await, "grpc_server_inflight_requests");
    assert!(
        inflight.is_some_and(|n| (30.0..=31.0).contains(&n)),
        "{inflight:?} slots held by 30 unread lists"
    );
    let grown = assert_growth(&c, base, "30 unread lists");
    bystander.finish("30 unread lists").await;
    // The clients go: their slots are free.
    drop(unread);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let inflight = sample(&scrape(c.metrics).await, "grpc_server_inflight_requests");
        if inflight == Some(0.0) {
            break;
        }
        assert!(Instant::now() < until, "slots still held: {inflight:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A list read to its end is whole.
    let r = call(c.api, "GET", CMS, &[], b"").await.is(200);
    assert_eq!(r.json()["items"].as_array().map(Vec::len), Some(301));
    println!("30 unread 27 MB lists: peak +{} MiB", grown / MIB);
}

/// Whether `s` is closed by the server within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let until = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(until, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_h2_connections_close_and_one_client_holds_a_bounded_number() {
    let _alone = alone().await;
    let c = ProcessCluster::start(&[
        "--kube-api-idle-timeout",
        "2s",
        "--kube-api-max-connections-per-client",
        "50",
    ])
    .await;
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut conns = Vec::new();
    for _ in 0..200 {
        let mut s = connect_from([127, 0, 0, 3], c.api).await.expect("connect");
        let _ = s.write_all(PREFACE).await;
        conns.push(s);
    }
    // Past the bound, connections are closed at once (well within the idle bound).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut open = 0;
    for s in &mut conns {
        if !closed_within(s, Duration::from_millis(5)).await {
            open += 1;
        }
    }
    assert_eq!(open, 50, "connections one client holds");
    // Another client is served meanwhile.
    let mut other = connect_from([127, 0, 0, 4], c.api).await.expect("connect");
    exchange(&mut other, &request("GET", "/readyz", &[], b""))
        .await
        .expect("readyz")
        .is(200);
    // Idle (only a preface), every one is closed: the idle bound and the shutdown's grace.
    let started = Instant::now();
    for s in &mut conns {
        assert!(
            closed_within(s, Duration::from_secs(15)).await,
            "a preface-only connection still open after {:?}",
            started.elapsed()
        );
    }
    // And the client may connect again.
    let mut again = connect_from([127, 0, 0, 3], c.api).await.expect("connect");
    exchange(&mut again, &request("GET", "/readyz", &[], b""))
        .await
        .expect("readyz")
        .is(200);
}

#[tokio::test(flavor = "multi_thread")]
async fn openapi_fetched_in_a_loop_is_served_from_memory() {
    let _alone = alone().await;
    let mut c = ProcessCluster::start(&[]).await;
    // A definition whose schema is ~1 MB (many described fields).
    let properties: serde_json::Map<String, Value> = (0..2000)
        .map(|i| {
            (
                format!("field{i}"),
                json!({"type": "string", "description": "d".repeat(480)}),
            )
        })
        .collect();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.big.example.com"},
        "spec": {"group": "big.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": properties}}}}}]}});
    call(
        c.api,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &[JSON],
        &serde_json::to_vec(&crd).expect("JSON"),
    )
    .await
    .is(201);
    let doc = "/openapi/v3/apis/big.example.com/v1";
    let until = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let r = call(c.api, "GET", doc, &[], b"").await;
        if r.code == 200 {
            break r;
        }
        assert!(
            Instant::now() < until,
            "the definition's document never came: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(first.body.len() > 900 * 1024, "{} bytes", first.body.len());
    let etag = first.header("etag").expect("an ETag").to_string();
    let r = call(c.api, "GET", doc, &[("If-None-Match", &etag)], b"")
        .await
        .is(304);
    assert!(r.body.is_empty());
    // 16 clients fetch it in a loop; a bystander meanwhile.
    let bystander = Bystander::start(c.api).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<_> = (0..16)
        .map(|_| {
            let (stop, api) = (stop.clone(), c.api);
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    call(api, "GET", doc, &[], b"").await.is(200);
                    n += 1;
                }
                n
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    let mut fetched = 0;
    for l in loops {
        fetched += l.await.expect("loop");
    }
    assert!(fetched > 16, "{fetched} fetches");
    let p = bystander.finish("/openapi/v3 in a loop").await;
    assert!(c.running());
    println!("{fetched} fetches of a 1 MB OpenAPI document in 5 s; bystander p99 {p:?}");
}
