//! Who a request is (issue 32, its first part): static bearer tokens of `--token-auth-file`
//! (upstream's CSV) on REST and gRPC, the local administrator of plain ports, and
//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami` of three minors). A token
//! the file does not hold is upstream's `401 Unauthorized` (gRPC UNAUTHENTICATED), never the
//! local administrator. (Certificates and tokens over TLS, with kubectl: `rest_api.rs`.)

use kubestore_tests::{
    ClusterOptions,
    kube::{KubeCluster, Kubectl},
    rest::{JSON, assert_status, call},
};
use serde_json::json;

const TOKENS: &str = "s3cret-alice,alice,1001,\"dev,ops\"\n,nobody,0\nbob-token,bob,1002\n";

async fn cluster() -> KubeCluster {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, TOKENS).expect("write tokens");
    let c = KubeCluster::start_with(ClusterOptions {
        registry: Some(registry_svc::Config {
            token_auth_file: Some(path),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    // The file is read at start.
    drop(dir);
    c
}

/// kubectl sends credentials over https:// only (`rest_api.rs` runs it with a certificate and
/// a token over TLS); over plain HTTP it is the local administrator, whoever it says it is.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_auth_whoami_over_plain_http_is_the_local_administrator() {
    let c = cluster().await;
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let r = c.kubectl(v, &["auth", "whoami"]).run().ok();
        for want in ["system:unsecured", "[system:masters system:authenticated]"] {
            assert!(r.out().contains(want), "{want}: {r}");
        }
        let r = c.kubectl(v, &["auth", "whoami", "-o", "json"]).run().ok();
        let review: serde_json::Value = serde_json::from_str(r.out()).expect("JSON");
        assert_eq!(
            review["status"]["userInfo"],
            json!({"username": "system:unsecured",
                   "groups": ["system:masters", "system:authenticated"]}),
            "{r}"
        );
    }
}

/// The token file's users over plain HTTP, as any client that sends a token there sees them
/// (the Python client does).
#[tokio::test(flavor = "multi_thread")]
async fn a_token_names_its_user() {
    let c = cluster().await;
    for (token, want) in [
        (
            "s3cret-alice",
            json!({"username": "alice", "uid": "1001",
                   "groups": ["dev", "ops", "system:authenticated"]}),
        ),
        (
            "bob-token",
            json!({"username": "bob", "uid": "1002", "groups": ["system:authenticated"]}),
        ),
    ] {
        let auth = format!("Bearer {token}");
        let r = call(
            c.api,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[JSON, ("Authorization", &auth)],
            b"{}",
        )
        .await;
        assert_eq!(r.is(201).json()["status"]["userInfo"], want);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_token_is_refused_and_changes_nothing() {
    let c = cluster().await;
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}).to_string();
    for token in ["guess", "", "s3cret-alic", "s3cret-alice2"] {
        let auth = format!("Bearer {token}");
        let headers: &[(&str, &str)] = if token.is_empty() {
            &[JSON, ("Authorization", "Bearer ")]
        } else {
            &[JSON, ("Authorization", &auth)]
        };
        let r = call(
            c.api,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            headers,
            body.as_bytes(),
        )
        .await;
        if token.is_empty() {
            // An empty token is no token: plain HTTP's local administrator.
            r.is(201);
            call(
                c.api,
                "DELETE",
                "/api/v1/namespaces/default/configmaps/x",
                &[],
                b"",
            )
            .await
            .is(200);
            continue;
        }
        let s = assert_status(&r, 401, "Unauthorized");
        assert_eq!(s["message"], "Unauthorized", "{r}");
    }
    let r = call(
        c.api,
        "GET",
        "/api/v1/namespaces/default/configmaps/x",
        &[],
        b"",
    )
    .await;
    r.is(404);
    // The review answers for the token's user, created.
    let r = call(
        c.api,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[JSON, ("Authorization", "Bearer s3cret-alice")],
        br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
    )
    .await;
    assert_eq!(r.is(201).json()["status"]["userInfo"]["username"], "alice");
}

/// The same tokens in gRPC metadata: a call with a token the file does not hold ends
/// UNAUTHENTICATED before any service; the file's token and (plain gRPC) no token are served;
/// health checks are never refused.
#[tokio::test(flavor = "multi_thread")]
async fn grpc_calls_present_the_same_tokens() {
    use kubestore_proto::core::v1::{ListConfigMapsRequest, config_maps_client::ConfigMapsClient};
    let c = cluster().await;
    let channel = kubestore_tests::services::channel(&c.registry_url()).await;
    let list = |token: Option<&'static str>| {
        let channel = channel.clone();
        async move {
            let mut request = tonic::Request::new(ListConfigMapsRequest {
                namespace: "default".into(),
                ..Default::default()
            });
            if let Some(t) = token {
                request.metadata_mut().insert(
                    "authorization",
                    format!("Bearer {t}").parse().expect("metadata"),
                );
            }
            ConfigMapsClient::new(channel).list(request).await
        }
    };
    assert!(list(Some("s3cret-alice")).await.is_ok());
    assert!(
        list(None).await.is_ok(),
        "plain gRPC: the local administrator"
    );
    let refused = list(Some("guess")).await.expect_err("an unknown token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert_eq!(refused.message(), "Unauthorized");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let mut request = tonic::Request::new(tonic_health::pb::HealthCheckRequest::default());
    request
        .metadata_mut()
        .insert("authorization", "Bearer guess".parse().expect("metadata"));
    assert!(
        health.check(request).await.is_ok(),
        "health is not authenticated"
    );
}
