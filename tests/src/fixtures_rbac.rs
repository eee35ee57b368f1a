//! RBAC fixtures (issue 32): a cluster with `--authorization-mode RBAC` and a token for
//! `alice` (group `dev`), ready once the bootstrap policy is in; requests as alice and as the
//! administrator (plain HTTP: `system:masters`).

use std::time::Duration;

use serde_json::Value;
use tonic::{Request, metadata::MetadataValue};

use crate::{
    ClusterOptions,
    kube::KubeCluster,
    rest::{JSON, Reply, call, wait_until},
};

/// The token file: alice, uid 1001, group dev.
pub const TOKENS: &str = "alice-token,alice,1001,dev\n";
/// alice's `Authorization` header.
pub const ALICE: (&str, &str) = ("Authorization", "Bearer alice-token");

/// A cluster with RBAC and alice's token, ready.
pub async fn cluster() -> KubeCluster {
    with_tokens(TOKENS, ALICE).await
}

/// A cluster with RBAC and the token file `tokens`, ready once `user` (an `Authorization`
/// header of one of them) is decided for.
pub async fn with_tokens(tokens: &str, user: (&str, &str)) -> KubeCluster {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, tokens).expect("write tokens");
    let c = KubeCluster::start_with(ClusterOptions {
        registry: Some(registry_svc::Config {
            token_auth_file: Some(path),
            authorization_mode: vec![registry_svc::authz::Mode::Rbac],
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    // Ready once the roles are loaded and the bootstrap policy is in: /version is every
    // authenticated user's (system:public-info-viewer).
    wait_until(Duration::from_secs(20), "RBAC is ready", || async {
        call(c.api, "GET", "/version", &[user], b"").await.code == 200
    })
    .await;
    c
}

/// A REST request as alice.
pub async fn alice(c: &KubeCluster, method: &str, path: &str, body: &str) -> Reply {
    call(c.api, method, path, &[JSON, ALICE], body.as_bytes()).await
}

/// A REST request as the administrator.
pub async fn admin(c: &KubeCluster, method: &str, path: &str, body: Value) -> Reply {
    call(c.api, method, path, &[JSON], body.to_string().as_bytes()).await
}

/// Polls until alice's `method path` answers `code` (RBAC follows its kinds by watch).
pub async fn until_alice(c: &KubeCluster, method: &str, path: &str, body: &str, code: u16) {
    let what = format!("alice's {method} {path} answers {code}");
    wait_until(Duration::from_secs(10), &what, || async {
        alice(c, method, path, body).await.code == code
    })
    .await;
}

/// A gRPC request with alice's token.
pub fn with_token<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut().insert(
        "authorization",
        MetadataValue::from_static("Bearer alice-token"),
    );
    r
}

/// The ConfigMaps of `default`.
pub const CMS: &str = "/api/v1/namespaces/default/configmaps";
