//! registry-svc's Kubernetes REST API (`--kube-api-addr`) where real clients cannot take it:
//! kubectl and client-go always send whole, well-formed requests, read what they are sent and
//! pick their own TLS settings, so these tests speak HTTP by hand (HTTP/1.1 over a raw TCP
//! stream, TLS by rustls, h2 by hyper's client) against a real etcd, storage-svc and
//! registry-svc:
//!
//! - TLS with a client CA: no client certificate is upstream's `401` Status (not a handshake
//!   failure), a certificate of another CA fails the handshake, one of the CA (CN=alice,
//!   O=devs, O=ops) is served and is the request's user (the REST span's `user.name`; its groups
//!   as the server reads the certificate); ALPN picks h2 when offered and HTTP/1.1 when only
//!   that is, and requests work over both (h2 without a certificate: 401 too); kubectl 1.37
//!   works over `https://` with the client certificate.
//! - Bodies: past 3 MiB by `Content-Length` is `413` at once (the body is never waited for;
//!   chunked and h2 bodies: `rest_limits.rs`),
//!   malformed JSON is `400`, an unknown `Content-Type` is `415`, each a `Status`.
//! - Slow clients: a connection that stops half-way through its headers, or that never sends a
//!   byte, is closed (the 10 s header bound, with a margin; the silent one at the bound, not
//!   before it nor long after) and cannot hold a connection forever.
//! - Tracing: a `traceparent` header continues its trace through registry-svc's REST span and
//!   storage-svc's server span (exported over OTLP to a real receiver), with OpenTelemetry's
//!   HTTP attributes (`http.response.status_code` an integer, as the conventions say).
//! - Metrics: REST calls are counted in `apiserver_request_total` under upstream's labels, and
//!   a REST watch in `apiserver_longrunning_requests` until its client hangs up.
//! - `/healthz`, `/livez`, `/readyz` as upstream answers them, and `405` for a verb a path
//!   does not take.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubestore_telemetry::{
    LogFormat, TelemetryConfig, TelemetryGuard, tls::ServerTlsArgs, tracing_setup,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    kube::{KubeCluster, Kubectl},
    otlp::{OtlpReceiver, ReceivedSpan},
    rest::{
        CMS, JSON, Reply, assert_status, call, config_map, exchange, get, metrics_addr, open_watch,
        post, read_reply, request, wait_closed, wait_until,
    },
    services::{sample, scrape, spawn_registry_with_kube_api, wait_system_namespaces},
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::Value;
use tokio::{io::AsyncWriteExt, net::TcpStream};
use tokio_rustls::{
    TlsConnector,
    rustls::{
        self,
        pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject},
    },
};

fn telemetry(name: &str, endpoint: &str) -> (tracing::Dispatch, TelemetryGuard) {
    tracing_setup::build(&TelemetryConfig {
        service_name: name.into(),
        otlp_endpoint: Some(endpoint.into()),
        log_format: LogFormat::Text,
        log_filter: "warn".into(),
    })
    .expect("telemetry")
}

/// Flushes the exporters (the services have stopped) and returns every span received once
/// `done` holds (at most 10 s).
async fn flushed(
    receiver: &OtlpReceiver,
    guards: Vec<TelemetryGuard>,
    done: impl Fn(&[ReceivedSpan]) -> bool,
) -> Vec<ReceivedSpan> {
    tokio::task::spawn_blocking(move || guards.into_iter().for_each(|g| g.shutdown()))
        .await
        .expect("flush");
    receiver.wait_for(Duration::from_secs(10), done).await
}

/// A CA made here (rcgen): the test's [`kubestore_tests::pki::Pki`] cannot put an O in a
/// subject, and the REST API reads groups from it.
struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let pem = params.self_signed(&key).expect("CA certificate").pem();
        Self { params, key, pem }
    }

    /// A certificate (PEM) and key (PEM) for `cn` in the organizations `orgs`, valid for
    /// localhost.
    fn issue(&self, cn: &str, orgs: &[&str]) -> (String, String) {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        // rcgen keeps one value per attribute type: a second O goes in by its OID (2.5.4.10).
        for (i, org) in orgs.iter().enumerate() {
            let kind = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            params.distinguished_name.push(kind, *org);
        }
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().expect("key");
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    }
}

/// A client trusting `ca`, presenting `id` (certificate and key PEM) if given, offering `alpn`.
fn tls_client(ca: &str, id: Option<&(String, String)>, alpn: &[&[u8]]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("CA PEM"))
        .expect("trust the CA");
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots);
    let mut config = match id {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).expect("cert PEM")],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key PEM"),
            )
            .expect("client certificate"),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

async fn tls_connect(
    api: SocketAddr,
    client: &TlsConnector,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(api).await?;
    client
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
}

/// GET `path` over HTTP/1.1 on a TLS connection of its own: the protocol ALPN picked, and the
/// response.
async fn tls_get(
    api: SocketAddr,
    client: &TlsConnector,
    path: &str,
) -> std::io::Result<(Option<Vec<u8>>, Reply)> {
    let mut s = tls_connect(api, client).await?;
    let alpn = s.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    Ok((
        alpn,
        exchange(&mut s, &request("GET", path, &[], b"")).await?,
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_client_certificates_are_identities_and_alpn_picks_h2_or_http1() {
    let ca = Ca::new("kubestore");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = |name: &str, pem: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, pem).expect("write PEM");
        p
    };
    let (server_cert, server_key) = ca.issue("registry-svc", &[]);
    let tls = ServerTlsArgs {
        tls_cert_file: Some(file("server.crt", &server_cert)),
        tls_private_key_file: Some(file("server.key", &server_key)),
        client_ca_file: Some(file("ca.crt", &ca.pem)),
        ..Default::default()
    };
    let receiver = OtlpReceiver::start().await;
    let (dispatch, guard) = telemetry("registry-svc", &receiver.endpoint);
    let cluster = Cluster::storage_only().await;
    let config = registry_svc::Config {
        tls,
        token_auth_file: Some(file("tokens.csv", "t0ken,carol,3003,ops\n")),
        ..Default::default()
    };
    let (mut registry, api) =
        spawn_registry_with_kube_api(config, cluster.storage.url(), Some(dispatch));
    let alice = ca.issue("alice", &["devs", "ops"]);
    let http1 = tls_client(&ca.pem, Some(&alice), &[b"http/1.1"]);
    wait_until(
        Duration::from_secs(20),
        "the REST API serves over TLS",
        || async {
            let ready = tls_get(api, &http1, "/readyz").await;
            ready.is_ok_and(|(_, r)| r.code == 200)
        },
    )
    .await;

    // No client certificate: the handshake succeeds, the request is upstream's 401.
    let anonymous = tls_client(&ca.pem, None, &[b"http/1.1"]);
    let (_, r) = tls_get(api, &anonymous, CMS).await.expect("served");
    let status = assert_status(&r, 401, "Unauthorized");
    assert_eq!(status["message"], "Unauthorized", "{r}");

    // With a token file, a certificate is optional: a bearer token of the file is its user, any
    // other token upstream's 401.
    for (token, code) in [("t0ken", 200), ("t0ken2", 401)] {
        let mut s = tls_connect(api, &anonymous).await.expect("handshake");
        let auth = format!("Bearer {token}");
        let r = exchange(
            &mut s,
            &request("GET", CMS, &[("Authorization", &auth)], b""),
        )
        .await
        .expect("served");
        assert_eq!(r.code, code, "{token}: {r}");
    }
    let mut s = tls_connect(api, &anonymous).await.expect("handshake");
    let r = exchange(
        &mut s,
        &request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[JSON, ("Authorization", "Bearer t0ken")],
            b"{}",
        ),
    )
    .await
    .expect("served");
    assert_eq!(
        r.is(201).json()["status"]["userInfo"],
        serde_json::json!({"username": "carol", "uid": "3003",
                           "groups": ["ops", "system:authenticated"]}),
    );

    // A certificate another CA signed does not verify: no response at all.
    let mallory = Ca::new("other").issue("mallory", &["devs"]);
    let foreign = tls_client(&ca.pem, Some(&mallory), &[b"http/1.1"]);
    if let Ok((_, r)) = tls_get(api, &foreign, CMS).await {
        panic!("a certificate of another CA was served: {r}");
    }

    // alice over HTTP/1.1 (the only protocol offered).
    let (alpn, r) = tls_get(api, &http1, CMS).await.expect("served");
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!(r.is(200).json()["kind"], "ConfigMapList");

    // alice offering h2 first: h2 it is, and a request over it works.
    let both = tls_client(&ca.pem, Some(&alice), &[b"h2", b"http/1.1"]);
    let s = tls_connect(api, &both).await.expect("handshake");
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(s))
            .await
            .expect("h2 handshake");
    let driver = tokio::spawn(conn);
    let req = http::Request::get(format!("https://localhost:{}{CMS}", api.port()))
        .body(http_body_util::Empty::<Bytes>::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("h2 request");
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.expect("h2 body");
    let list: Value = serde_json::from_slice(&body.to_bytes()).expect("JSON");
    assert_eq!(list["kind"], "ConfigMapList", "{list}");
    drop(sender);
    driver.abort();

    // No certificate over h2: upstream's 401 too.
    let anonymous_h2 = tls_client(&ca.pem, None, &[b"h2"]);
    let s = tls_connect(api, &anonymous_h2).await.expect("handshake");
    assert_eq!(s.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(s))
            .await
            .expect("h2 handshake");
    let driver = tokio::spawn(conn);
    let req = http::Request::get(format!("https://localhost:{}{CMS}", api.port()))
        .body(http_body_util::Empty::<Bytes>::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("h2 request");
    assert_eq!(resp.status(), 401);
    let body = resp.into_body().collect().await.expect("h2 body");
    let status: Value = serde_json::from_slice(&body.to_bytes()).expect("JSON");
    assert_eq!(
        (&status["kind"], &status["reason"]),
        (&Value::from("Status"), &Value::from("Unauthorized")),
        "{status}"
    );
    drop(sender);
    driver.abort();

    // Who alice is, as the server reads the certificate it verified: CN the user, every O a
    // group.
    let der = CertificateDer::from_pem_slice(alice.0.as_bytes()).expect("alice's certificate");
    assert_eq!(
        registry_svc::rest::tls::identity(&der),
        Some(registry_svc::rest::tls::Identity {
            user: "alice".into(),
            groups: vec!["devs".into(), "ops".into()],
        })
    );

    // kubectl over https:// with alice's certificate.
    let kubeconfig = || {
        let user = format!(
            "  user:\n    client-certificate: {}\n    client-key: {}\n",
            file("alice.crt", &alice.0).display(),
            file("alice.key", &alice.1).display()
        );
        file(
            "kubeconfig",
            &format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://localhost:{}\n    certificate-authority: {}\n\
                 users:\n- name: u\n{user}contexts:\n- name: k\n  context:\n    cluster: k\n    user: u\n    namespace: default\ncurrent-context: k\n",
                api.port(),
                file("ca.crt", &ca.pem).display()
            ),
        )
    };
    let config = kubeconfig();
    let kubectl = |args: &'static [&'static str]| {
        let (home, config) = (dir.path().to_path_buf(), config.clone());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(Kubectl::V1_37.path())
                .arg("--kubeconfig")
                .arg(config)
                .args(args)
                .env_remove("KUBECONFIG")
                .env("HOME", home)
                .output()
                .expect("kubectl runs")
        })
    };
    for (args, want) in [
        (
            &["create", "configmap", "by-kubectl"][..],
            "configmap/by-kubectl created\n",
        ),
        (
            &["get", "configmaps", "-o", "name"][..],
            "configmap/by-kubectl\n",
        ),
    ] {
        let out = kubectl(args).await.expect("kubectl");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "kubectl {args:?} with alice's certificate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // kubectl auth whoami (1.29, 1.33, 1.37): alice by her certificate, carol by her token
    // (kubectl sends credentials over https:// only), and a token the file does not hold as
    // kubectl prints a 401.
    let token_config = file(
        "kubeconfig-token",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://localhost:{}\n    certificate-authority: {}\n\
             users:\n- name: u\n  user:\n    token: t0ken\ncontexts:\n- name: k\n  context:\n    cluster: k\n    user: u\n    namespace: default\ncurrent-context: k\n",
            api.port(),
            file("ca.crt", &ca.pem).display()
        ),
    );
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        for (config, args, want) in [
            (
                &config,
                &["auth", "whoami"][..],
                "[devs ops system:authenticated]",
            ),
            (
                &token_config,
                &["auth", "whoami"][..],
                "[ops system:authenticated]",
            ),
            (
                &token_config,
                &["get", "configmaps", "--token", "t0ken2"][..],
                "error: You must be logged in to the server (Unauthorized)",
            ),
        ] {
            let out = std::process::Command::new(v.path())
                .arg("--kubeconfig")
                .arg(config)
                .args(args)
                .env_remove("KUBECONFIG")
                .env("HOME", dir.path())
                .output()
                .expect("kubectl runs");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains(want),
                "kubectl {} {args:?}: {text}",
                v.minor()
            );
        }
    }

    // Who each request was: the REST span's user.name (the certificate's CN).
    registry.stop();
    let route = "GET /api/v1/namespaces/{namespace}/{resource}";
    let spans = flushed(&receiver, vec![guard], |s| {
        s.iter().filter(|x| x.span.name == route).count() >= 10
    })
    .await;
    let mut users: Vec<(Option<i64>, String)> = spans
        .iter()
        .filter(|x| x.service == "registry-svc" && x.span.name == route)
        .map(|x| {
            (
                x.int("http.response.status_code"),
                x.attr("user.name").unwrap_or_default(),
            )
        })
        .collect();
    users.sort();
    // alice over HTTP/1.1, h2 and kubectl (its create is a POST), carol by her token; no one
    // (401) over HTTP/1.1 and h2 without credentials, with a token the file does not hold
    // (raw, and kubectl of three minors).
    let alice = (Some(200), "alice".to_string());
    let carol = (Some(200), "carol".to_string());
    let nobody = (Some(401), String::new());
    let mut want = vec![alice.clone(), alice.clone(), alice, carol];
    want.extend(std::iter::repeat_n(nobody, 6));
    assert_eq!(users, want);
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_too_large_malformed_or_of_unknown_type_are_refused_with_a_status() {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    let api = kube.api;

    // 4 MiB announced, 1 KiB sent: refused without waiting for the rest.
    let mut s = TcpStream::connect(api).await.expect("connect");
    let mut head = request("POST", CMS, &[JSON, ("Content-Length", "4194304")], b"");
    head.extend_from_slice(&vec![b' '; 1024]);
    s.write_all(&head).await.expect("write");
    let r = tokio::time::timeout(Duration::from_secs(10), read_reply(&mut s))
        .await
        .expect("413 before the body: the server waited for it")
        .expect("a response");
    let status = assert_status(&r, 413, "RequestEntityTooLarge");
    assert_eq!(
        status["message"], "Request entity too large: limit is 3145728",
        "{r}"
    );

    let malformed = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#;
    let r = call(api, "POST", CMS, &[JSON], malformed).await;
    let status = assert_status(&r, 400, "BadRequest");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be handled as a ConfigMap")),
        "{r}"
    );
    let text = [("Content-Type", "text/plain")];
    let r = call(api, "POST", CMS, &text, &config_map("plain", 1)).await;
    assert_status(&r, 415, "UnsupportedMediaType");

    // A Kubernetes protobuf envelope of nothing but nested groups (field 15, start group): a
    // decoder that recursed into them would overflow its stack and take the server down.
    let mut deep = b"k8s\0".to_vec();
    deep.extend(std::iter::repeat_n(0x7b_u8, 200_000));
    let proto = [("Content-Type", "application/vnd.kubernetes.protobuf")];
    let r = call(api, "POST", CMS, &proto, &deep).await;
    let status = assert_status(&r, 400, "BadRequest");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("nests deeper than")),
        "{r}"
    );

    // The same body as JSON is fine, and only it was stored.
    post(api, "plain", 1).await.is(201);
    let list = get(api, CMS).await.is(200).json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["plain"], "{list}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_stalled_half_way_through_its_headers_is_closed() {
    let kube = KubeCluster::start().await;
    let api = kube.api;
    let mut partial = TcpStream::connect(api).await.expect("connect");
    partial
        .write_all(format!("GET {CMS} HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").as_bytes())
        .await
        .expect("write");
    get(api, CMS).await.is(200); // meanwhile others are served
    let (closed, got) = wait_closed(&mut partial, Duration::from_secs(30)).await;
    let closed =
        closed.expect("half a request still holds its connection after 30 s (bound: 10 s)");
    assert!(
        closed >= Duration::from_secs(5),
        "closed after {closed:?}: not by the header bound"
    );
    let got = String::from_utf8_lossy(&got);
    assert!(got.is_empty() || got.starts_with("HTTP/1.1 408"), "{got}");
}

/// The same bound for a connection that never sends its first byte (upstream's
/// `ReadHeaderTimeout` runs from the start of the connection, too): closed at the bound, not
/// before it and not long after.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_that_never_sends_a_byte_is_closed() {
    let kube = KubeCluster::start().await;
    let bound = registry_svc::rest::conn::HEADER_READ_TIMEOUT;
    let start = std::time::Instant::now();
    let mut silent = TcpStream::connect(kube.api).await.expect("connect");
    let (closed, got) = wait_closed(&mut silent, bound * 3).await;
    let closed = closed.unwrap_or_else(|| {
        panic!("a connection that never sent a byte is still held after {:?} (bound: {bound:?}); got {got:?}", start.elapsed())
    });
    assert!(got.is_empty(), "{got:?}");
    assert!(
        closed >= bound - Duration::from_millis(500),
        "closed after {closed:?}, before the bound of {bound:?}"
    );
    assert!(
        closed < bound * 2,
        "closed after {closed:?}, long after the bound of {bound:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_traceparent_continues_through_registry_and_storage() {
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";
    let receiver = OtlpReceiver::start().await;
    let (storage_d, storage_g) = telemetry("storage-svc", &receiver.endpoint);
    let (registry_d, registry_g) = telemetry("registry-svc", &receiver.endpoint);
    let kube = KubeCluster::start_with(ClusterOptions {
        storage_dispatch: Some(storage_d),
        registry_dispatch: Some(registry_d),
        ..Default::default()
    })
    .await;
    wait_system_namespaces(&kube.registry_url()).await;
    post(kube.api, "traced", 1).await.is(201);
    let path = format!("{CMS}/traced");
    let traceparent = [("traceparent", &*format!("00-{TRACE}-{PARENT}-01"))];
    call(kube.api, "GET", &path, &traceparent, b"")
        .await
        .is(200);
    drop(kube);

    let all = flushed(&receiver, vec![registry_g, storage_g], |s| {
        s.iter()
            .any(|x| x.trace_id() == TRACE && x.service == "storage-svc")
    })
    .await;
    let trace: Vec<&ReceivedSpan> = all.iter().filter(|s| s.trace_id() == TRACE).collect();
    let summary: Vec<String> = trace
        .iter()
        .map(|s| format!("{}:{}", s.service, s.span.name))
        .collect();
    let template = "/api/v1/namespaces/{namespace}/{resource}/{name}";
    let rest = trace
        .iter()
        .find(|s| s.service == "registry-svc" && s.span.name == format!("GET {template}"))
        .unwrap_or_else(|| panic!("no REST span in the trace: {summary:?}"));
    assert_eq!(rest.parent_id(), PARENT, "the caller's span is the parent");
    assert_eq!(rest.span.kind, 2, "a server span");
    assert_eq!(rest.attr("http.request.method").as_deref(), Some("GET"));
    assert_eq!(rest.int("http.response.status_code"), Some(200));
    assert_eq!(rest.attr("http.route").as_deref(), Some(template));
    assert_eq!(rest.attr("url.path").as_deref(), Some(path.as_str()));
    let storage = trace
        .iter()
        .find(|s| s.service == "storage-svc" && s.span.name == "storage.v1.Storage/Get")
        .unwrap_or_else(|| panic!("no storage Get span in the trace: {summary:?}"));
    // Up from storage's server span, through registry's client span, to the REST span.
    let parent = |s: &ReceivedSpan| trace.iter().find(|p| p.span_id() == s.parent_id()).copied();
    let mut up = parent(storage);
    while let Some(p) = up.filter(|p| p.span_id() != rest.span_id()) {
        up = parent(p);
    }
    assert!(
        up.is_some(),
        "storage's span does not descend from the REST span: {summary:?}"
    );
    for s in &trace {
        assert!(
            s.parent_id() == PARENT || parent(s).is_some(),
            "{}:{} has a parent outside the trace",
            s.service,
            s.span.name
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_calls_are_counted_under_upstreams_labels() {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    let (metrics, api) = (metrics_addr(&kube), kube.api);
    post(api, "counted", 1).await.is(201);
    get(api, &format!("{CMS}/counted")).await.is(200);
    get(api, &format!("{CMS}/missing")).await.is(404);
    get(api, CMS).await.is(200);
    // Refused before the verb runs: counted all the same, as upstream counts them.
    let text_plain = [("Content-Type", "text/plain")];
    let r = call(api, "POST", CMS, &text_plain, &config_map("plain", 1)).await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = call(api, "POST", CMS, &[JSON], br#"{"kind": "#).await;
    assert_status(&r, 400, "BadRequest");
    let mut watch = TcpStream::connect(api).await.expect("connect");
    open_watch(&mut watch).await;

    let text = scrape(metrics).await;
    let labels = |verb: &str, scope: &str| {
        format!(
            r#"verb="{verb}",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="{scope}",component="apiserver""#
        )
    };
    for (verb, scope, code) in [
        ("POST", "resource", "201"),
        ("GET", "resource", "200"),
        ("GET", "resource", "404"),
        ("LIST", "namespace", "200"),
        ("WATCH", "namespace", "200"),
        ("POST", "resource", "415"),
        ("POST", "resource", "400"),
    ] {
        let series = format!(
            r#"apiserver_request_total{{{},code="{code}"}}"#,
            labels(verb, scope)
        );
        assert_eq!(sample(&text, &series), Some(1.0), "{series} in\n{text}");
    }
    let open = format!(
        "apiserver_longrunning_requests{{{}}}",
        labels("WATCH", "namespace")
    );
    assert_eq!(sample(&text, &open), Some(1.0), "{open} in\n{text}");
    // The client hangs up: the watch is no longer open.
    drop(watch);
    let closed = || async { sample(&scrape(metrics).await, &open) == Some(0.0) };
    wait_until(
        Duration::from_secs(10),
        "the watch ends with its client",
        closed,
    )
    .await;
}

/// Upstream's health endpoints (`ok`, a line per check with `?verbose`, one check by its path,
/// `exclude=`), and `405` with a `Status` for a verb a path does not take.
#[tokio::test(flavor = "multi_thread")]
async fn health_endpoints_and_unsupported_verbs_answer_as_upstream() {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    let api = kube.api;
    let text = |r: &Reply| String::from_utf8_lossy(&r.body).into_owned();

    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(text(&get(api, path).await.is(200)), "ok", "{path}");
    }
    let ready = text(&get(api, "/readyz?verbose").await.is(200));
    for line in [
        "[+]ping ok",
        "[+]etcd ok",
        "[+]shutdown ok",
        "readyz check passed",
    ] {
        assert!(ready.lines().any(|l| l == line), "no {line:?} in:\n{ready}");
    }
    let live = text(&get(api, "/livez?verbose").await.is(200));
    assert!(live.lines().any(|l| l == "livez check passed"), "{live}");
    assert!(
        !live.contains("etcd"),
        "livez does not depend on etcd:\n{live}"
    );
    assert_eq!(text(&get(api, "/readyz/etcd").await.is(200)), "ok");
    let excluded = text(&get(api, "/readyz?verbose&exclude=etcd").await.is(200));
    assert!(
        excluded.lines().any(|l| l == "[+]etcd excluded: ok"),
        "{excluded}"
    );
    assert_status(&get(api, "/readyz/nosuchcheck").await, 404, "NotFound");

    // POST names no object, PUT needs one: 405, as upstream's routes answer.
    post(api, "named", 1).await.is(201);
    let r = call(
        api,
        "POST",
        &format!("{CMS}/named"),
        &[JSON],
        &config_map("named", 1),
    )
    .await;
    assert_status(&r, 405, "MethodNotAllowed");
    let r = call(api, "PUT", CMS, &[JSON], &config_map("named", 1)).await;
    assert_status(&r, 405, "MethodNotAllowed");
    let r = call(api, "POST", "/version", &[JSON], b"{}").await;
    assert_status(&r, 405, "MethodNotAllowed");
}
