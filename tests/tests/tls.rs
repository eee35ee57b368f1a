//! Issue 11, part 1: TLS and mutual TLS on every hop (client -> registry-svc -> storage-svc ->
//! etcd), with a CA made at run time. Everything works as before over TLS; a plaintext client,
//! a client whose certificate another CA signed, a client without a certificate, and (at
//! storage-svc) a client not on --allowed-client-names are each refused.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{GetPodRequest, pods_client::PodsClient},
    storage::v1::{GetRequest, storage_client::StorageClient},
};
use kubestore_telemetry::{
    health,
    tls::{ClientTlsArgs, ServerTlsArgs},
};
use kubestore_tests::{
    etcd::{EtcdProcess, EtcdTls},
    fixtures_registry::{NS, pod},
    pki::{Issued, Pki},
    services::{ServiceHandle, spawn_registry, spawn_storage},
};
use tonic::{
    Code,
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity},
};
use tonic_types::StatusExt;

fn read(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).expect("read PEM")
}

/// A client TLS configuration trusting `ca`, presenting `id` if given.
fn client_tls(ca: &Pki, id: Option<&Issued>) -> ClientTlsConfig {
    let mut c = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(&ca.ca)));
    if let Some(id) = id {
        c = c.identity(Identity::from_pem(read(&id.cert), read(&id.key)));
    }
    c
}

fn https(s: &ServiceHandle) -> String {
    format!("https://{}", s.addr)
}

/// Waits until the server at `url` answers health over `tls`.
async fn wait_tls(url: &str, tls: ClientTlsConfig) {
    for _ in 0..200 {
        if health::check_with(url, "", Duration::from_secs(1), Some(tls.clone()))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never served over TLS");
}

async fn tls_channel(url: &str, tls: ClientTlsConfig) -> Result<Channel, String> {
    Endpoint::from_shared(url.to_string())
        .map_err(|e| e.to_string())?
        .tls_config(tls)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(3))
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))
}

/// The whole stack over TLS: etcd (`--client-cert-auth`), storage-svc (mTLS, only
/// `registry-svc` allowed), registry-svc (mTLS).
struct Stack {
    pki: Pki,
    registry_client: Issued,
    _etcd: EtcdProcess,
    storage: ServiceHandle,
    registry: ServiceHandle,
}

async fn stack() -> Stack {
    stack_with(None).await
}

/// [`stack`], registry-svc with `--token-auth-file` when `tokens` is given (its text).
async fn stack_with(tokens: Option<&str>) -> Stack {
    let pki = Pki::new("kubestore");
    let etcd = EtcdProcess::start_tls(EtcdTls {
        ca: pki.ca.clone(),
        server: pki.issue("etcd"),
        client: pki.issue("etcd-client"),
    })
    .await;
    let storage_id = pki.issue("storage-svc");
    let storage = spawn_storage(
        storage_svc::Config {
            tls: ServerTlsArgs {
                tls_cert_file: Some(storage_id.cert.clone()),
                tls_private_key_file: Some(storage_id.key.clone()),
                client_ca_file: Some(pki.ca.clone()),
                ..Default::default()
            },
            allowed_client_names: vec!["registry-svc".into()],
            etcd_cafile: Some(pki.ca.clone()),
            etcd_certfile: Some(storage_id.cert.clone()),
            etcd_keyfile: Some(storage_id.key.clone()),
            ..Default::default()
        },
        etcd.endpoint(),
        None,
    );
    let registry_id = pki.issue("registry-svc");
    wait_tls(&https(&storage), client_tls(&pki, Some(&registry_id))).await;
    let registry = spawn_registry(
        registry_svc::Config {
            tls: ServerTlsArgs {
                tls_cert_file: Some(registry_id.cert.clone()),
                tls_private_key_file: Some(registry_id.key.clone()),
                client_ca_file: Some(pki.ca.clone()),
                ..Default::default()
            },
            storage_ca_file: Some(pki.ca.clone()),
            storage_cert_file: Some(registry_id.cert.clone()),
            storage_key_file: Some(registry_id.key.clone()),
            token_auth_file: tokens.map(|text| {
                let path = pki.ca.with_file_name("tokens.csv");
                std::fs::write(&path, text).expect("write tokens");
                path
            }),
            ..Default::default()
        },
        https(&storage),
        None,
    );
    let registry_client = pki.issue("alice");
    wait_tls(&https(&registry), client_tls(&pki, Some(&registry_client))).await;
    Stack {
        pki,
        registry_client,
        _etcd: etcd,
        storage,
        registry,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hop_speaks_tls_and_everything_works_as_before() {
    let s = stack().await;
    // Through the CLI's own connection code, kubectl's flags.
    let tls = ClientTlsArgs {
        certificate_authority: Some(s.pki.ca.clone()),
        client_certificate: Some(s.registry_client.cert.clone()),
        client_key: Some(s.registry_client.key.clone()),
        tls_server_name: None,
    };
    let ch = kubestore_cli::connect_with(&https(&s.registry), &tls, &Default::default())
        .await
        .expect("CLI connects over mTLS");
    let created = <kubestore_proto::core::v1::Pod as kubestore_cli::kinds::Kind>::create(
        &ch,
        NS,
        pod("web", "node-1"),
        false,
    )
    .await
    .expect("create through registry-svc -> storage-svc -> etcd, all TLS");
    let mut pods = PodsClient::new(
        tls_channel(
            &https(&s.registry),
            client_tls(&s.pki, Some(&s.registry_client)),
        )
        .await
        .expect("connect"),
    );
    let got = pods
        .get(GetPodRequest {
            namespace: NS.into(),
            name: "web".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got, created);
    // Health through the healthcheck's TLS path, by certificate name instead of address.
    let by_name = ClientTlsArgs {
        tls_server_name: Some("registry-svc".into()),
        ..tls.clone()
    };
    health::check_with(
        &https(&s.registry),
        "",
        Duration::from_secs(2),
        by_name.config().expect("files"),
    )
    .await
    .expect("healthcheck over mTLS");
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_without_the_right_certificate_are_refused_at_every_hop() {
    let s = stack().await;
    let other = Pki::new("other");
    let stranger = other.issue("registry-svc");

    for (hop, url, good_client) in [
        (
            "registry-svc",
            https(&s.registry),
            s.registry_client.clone(),
        ),
        (
            "storage-svc",
            https(&s.storage),
            s.pki.issue("registry-svc"),
        ),
    ] {
        // Plaintext: the TLS server does not speak it.
        let plain = url.replace("https://", "http://");
        let refused = health::check(&plain, "", Duration::from_secs(2)).await;
        assert!(refused.is_err(), "{hop}: plaintext client accepted");
        // No client certificate: refused in the handshake (mTLS).
        let r = health::check_with(
            &url,
            "",
            Duration::from_secs(2),
            Some(client_tls(&s.pki, None)),
        )
        .await;
        assert!(r.is_err(), "{hop}: a client without a certificate accepted");
        // A certificate another CA signed, even with the right name.
        let r = health::check_with(
            &url,
            "",
            Duration::from_secs(2),
            Some(client_tls(&s.pki, Some(&stranger))),
        )
        .await;
        assert!(r.is_err(), "{hop}: a certificate of another CA accepted");
        // A client that does not trust the server's CA refuses the server.
        let r = health::check_with(
            &url,
            "",
            Duration::from_secs(2),
            Some(client_tls(&other, Some(&good_client))),
        )
        .await;
        assert!(r.is_err(), "{hop}: a server of an untrusted CA accepted");
    }

    // storage-svc: a certificate of the right CA whose name is not on the allow-list may
    // connect (and be health-checked) but every call is refused.
    let alice = s.pki.issue("alice");
    let mut c = StorageClient::new(
        tls_channel(&https(&s.storage), client_tls(&s.pki, Some(&alice)))
            .await
            .expect("handshake succeeds: the CA is right"),
    );
    let e = c
        .get(GetRequest {
            key: "/pods/default/web".into(),
            ..Default::default()
        })
        .await
        .expect_err("alice is not registry-svc");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert_eq!(
        e.get_details_error_info().map(|i| i.reason),
        Some("Forbidden".to_string())
    );
    assert!(e.message().contains("alice"), "{}", e.message());
    // registry-svc's own certificate is allowed.
    let mut c = StorageClient::new(
        tls_channel(
            &https(&s.storage),
            client_tls(&s.pki, Some(&s.pki.issue("registry-svc"))),
        )
        .await
        .expect("connect"),
    );
    c.get(GetRequest {
        key: "/pods/default/none".into(),
        ignore_not_found: true,
        ..Default::default()
    })
    .await
    .expect("registry-svc's name is allowed");
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_mistakes_stop_the_service_at_start_with_the_flag_named() {
    let pki = Pki::new("kubestore");
    let id = pki.issue("storage-svc");
    let etcd = EtcdProcess::start().await;
    let cases: Vec<(storage_svc::Config, &str)> = vec![
        (
            storage_svc::Config {
                tls: ServerTlsArgs {
                    tls_cert_file: Some(id.cert.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
            "--tls-cert-file and --tls-private-key-file go together",
        ),
        (
            storage_svc::Config {
                tls: ServerTlsArgs {
                    client_ca_file: Some(pki.ca.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
            "--client-ca-file needs --tls-cert-file",
        ),
        (
            storage_svc::Config {
                allowed_client_names: vec!["registry-svc".into()],
                ..Default::default()
            },
            "--allowed-client-names needs --client-ca-file",
        ),
        (
            storage_svc::Config {
                tls: ServerTlsArgs {
                    tls_cert_file: Some(id.cert.clone()),
                    tls_private_key_file: Some(pki.ca.with_file_name("missing.key")),
                    client_ca_file: None,
                    ..Default::default()
                },
                ..Default::default()
            },
            "--tls-private-key-file",
        ),
        (
            storage_svc::Config {
                etcd_cafile: Some(pki.ca.clone()),
                ..Default::default()
            },
            "TLS is configured, so the address must be https://",
        ),
    ];
    for (mut config, expected) in cases {
        config.etcd_endpoints = vec![etcd.endpoint()];
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            storage_svc::run(listener, config, std::future::pending()),
        )
        .await
        .expect("fails at once");
        let e = r.expect_err("refused to start").to_string();
        assert!(e.contains(expected), "{e:?} should say {expected:?}");
    }
}

/// A CA made here (not [`Pki`]) so that a client certificate can carry a subject CN and
/// subject alternative names that differ.
struct SanCa {
    dir: tempfile::TempDir,
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
    ca: std::path::PathBuf,
}

impl SanCa {
    fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let dir = tempfile::tempdir().expect("temp dir");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "san-ca");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        let ca = dir.path().join("ca.crt");
        std::fs::write(&ca, cert.pem()).expect("write CA");
        Self {
            dir,
            params,
            key,
            ca,
        }
    }

    /// A client and server certificate with subject CN `cn` and, besides localhost and
    /// 127.0.0.1, `sans` as both DNS and URI subject alternative names.
    fn issue(&self, cn: &str, sans: &[&str]) -> Issued {
        use rcgen::{
            CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose,
            SanType,
        };
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("params");
        for san in sans {
            let ia5 = || rcgen::string::Ia5String::try_from(san.to_string()).expect("ia5");
            params.subject_alt_names.push(SanType::DnsName(ia5()));
            params.subject_alt_names.push(SanType::URI(ia5()));
        }
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &Issuer::from_params(&self.params, &self.key))
            .expect("sign");
        let base = self.dir.path().join(cn);
        let issued = Issued {
            cert: base.with_extension("crt"),
            key: base.with_extension("key"),
        };
        std::fs::write(&issued.cert, cert.pem()).expect("write certificate");
        std::fs::write(&issued.key, key.serialize_pem()).expect("write key");
        issued
    }

    fn client_tls(&self, id: &Issued) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read(&self.ca)))
            .identity(Identity::from_pem(read(&id.cert), read(&id.key)))
    }
}

/// `--allowed-client-names` checks the subject CN only, as upstream's
/// `--requestheader-allowed-names`: a certificate of the right CA whose CN is `web-frontend` is
/// refused even though it carries `registry-svc` as a DNS and a URI SAN; one whose CN is
/// `registry-svc` is let in whatever its SANs.
#[tokio::test(flavor = "multi_thread")]
async fn allowed_client_names_match_the_subject_cn_only_never_a_san() {
    let ca = SanCa::new();
    let etcd = EtcdProcess::start().await;
    let server = ca.issue("storage-svc", &["storage-svc"]);
    let storage = spawn_storage(
        storage_svc::Config {
            tls: ServerTlsArgs {
                tls_cert_file: Some(server.cert.clone()),
                tls_private_key_file: Some(server.key.clone()),
                client_ca_file: Some(ca.ca.clone()),
                ..Default::default()
            },
            allowed_client_names: vec!["registry-svc".into()],
            ..Default::default()
        },
        etcd.endpoint(),
        None,
    );
    let registry = ca.issue("registry-svc", &["registry.internal"]);
    wait_tls(&https(&storage), ca.client_tls(&registry)).await;
    let get = |tls: ClientTlsConfig| {
        let url = https(&storage);
        async move {
            let mut c = StorageClient::new(tls_channel(&url, tls).await.expect("handshake"));
            c.get(GetRequest {
                key: "/pods/default/none".into(),
                ignore_not_found: true,
                ..Default::default()
            })
            .await
        }
    };

    let frontend = ca.issue("web-frontend", &["registry-svc"]);
    let e = get(ca.client_tls(&frontend))
        .await
        .expect_err("a SAN naming registry-svc does not make web-frontend registry-svc");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert_eq!(
        e.get_details_error_info().map(|i| i.reason),
        Some("Forbidden".to_string())
    );
    assert!(e.message().contains("CN=web-frontend"), "{}", e.message());
    get(ca.client_tls(&registry))
        .await
        .expect("CN registry-svc is allowed, whatever its SANs");
}

/// With `--token-auth-file`, a client certificate is optional: a client without one presents a
/// bearer token in its metadata, and one with neither (or a token the file does not hold) ends
/// UNAUTHENTICATED; a certificate of another CA still fails the handshake, and health needs no
/// credentials.
#[tokio::test(flavor = "multi_thread")]
async fn with_tokens_a_client_presents_a_certificate_or_a_token() {
    let s = stack_with(Some("t0ken,carol,3003,ops\n")).await;
    let url = https(&s.registry);
    let no_cert = tls_channel(&url, client_tls(&s.pki, None))
        .await
        .expect("the handshake lets a client without a certificate through");
    let get = |channel: Channel, token: Option<&'static str>| async move {
        let mut request = tonic::Request::new(GetPodRequest {
            namespace: NS.into(),
            name: "nobody".into(),
        });
        if let Some(t) = token {
            request.metadata_mut().insert(
                "authorization",
                format!("Bearer {t}").parse().expect("metadata"),
            );
        }
        PodsClient::new(channel).get(request).await
    };
    let served = get(no_cert.clone(), Some("t0ken"))
        .await
        .expect_err("no such pod");
    assert_eq!(served.code(), Code::NotFound, "{served:?}");
    for token in [None, Some("t0ken2")] {
        let refused = get(no_cert.clone(), token).await.expect_err("refused");
        assert_eq!(
            refused.code(),
            Code::Unauthenticated,
            "{token:?}: {refused:?}"
        );
        assert_eq!(refused.message(), "Unauthorized");
        assert_eq!(
            refused.get_details_error_info().map(|i| i.reason),
            Some("Unauthorized".into())
        );
    }
    let with_cert = tls_channel(&url, client_tls(&s.pki, Some(&s.registry_client)))
        .await
        .expect("connect");
    let served = get(with_cert, None).await.expect_err("no such pod");
    assert_eq!(
        served.code(),
        Code::NotFound,
        "a certificate alone: {served:?}"
    );
    let other = Pki::new("other");
    let stranger = other.issue("alice");
    // With TLS 1.3 the client may finish its side of the handshake before the server
    // refuses the certificate: then its first call fails, and is never served.
    if let Ok(channel) = tls_channel(&url, client_tls(&s.pki, Some(&stranger))).await {
        let failed = get(channel, Some("t0ken"))
            .await
            .expect_err("a certificate of another CA is never served");
        assert_ne!(failed.code(), Code::NotFound, "{failed:?}");
    }
    health::check_with(
        &url,
        "",
        Duration::from_secs(2),
        Some(client_tls(&s.pki, None)),
    )
    .await
    .expect("health without credentials");
}
