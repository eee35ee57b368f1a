//! ServiceAccounts and their tokens (issue 32): the kind, `kubectl create token` (TokenRequest:
//! durations, audiences, a token bound to a Pod), the token as a bearer credential on REST and
//! gRPC (the Python client too), RBAC deciding for `system:serviceaccount:NS:NAME` and its
//! groups, and the controller-manager's `default` account in every namespace.
//!
//! Adversarial: a token ends with its account and with its bound Pod (within the 10 s success
//! cache, so the tests poll), a recreated account or Pod (another uid) does not revive it, and
//! forged tokens (another key, `alg: none`, a changed payload, another audience) are 401 with
//! nothing written. The signature cases without a server are `serviceaccount::token`'s tests.

use std::time::Duration;

use base64::Engine;
use kubestore_proto::core::v1::{ListConfigMapsRequest, config_maps_client::ConfigMapsClient};
use kubestore_tests::{
    ClusterOptions,
    kube::{KubeCluster, Kubectl},
    rest::{JSON, Reply, assert_status, call, wait_until},
};
use serde_json::{Value, json};
use tonic::{Request, metadata::MetadataValue};

const ISSUER: &str = "https://kubestore.test";

// Test keys (`openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`, `openssl pkey
// -pubout`): the server's pair, and another key a forger holds.
const SA_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOhRjHUMlUF+hDyXX
V0gMY0Jl/6L7jD9VZZDu1zFOvxChRANCAASltsj4E//tjLJ8YiySoqU6UebEw1Lb
qWzsIpRODTx95KN4ZZpNWXeyftuZET7J9UVnkl/zCIgxL0A+uri27Q8f
-----END PRIVATE KEY-----
";
const SA_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpbbI+BP/7YyyfGIskqKlOlHmxMNS
26ls7CKUTg08feSjeGWaTVl3sn7bmRE+yfVFZ5Jf8wiIMS9APrq4tu0PHw==
-----END PUBLIC KEY-----
";
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgickrtqBmkorUbIR0
vtq5ge2v7du0obqjDou8lOmJGmChRANCAARg/dJkiboKdeyceb9n4rFdO0KLB2Hm
0/G72K1ri6E+sljxRT5WmDwUJjEqm62exd8yNc5HxurP3ebiaGRIg1wv
-----END PRIVATE KEY-----
";

/// A cluster whose registry-svc issues and verifies ServiceAccount tokens (plain HTTP: a
/// request without a token is the local administrator, one with a token is its account).
async fn cluster(rbac: bool) -> KubeCluster {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write key");
        p
    };
    let flags = registry_svc::serviceaccount::Flags {
        issuers: vec![ISSUER.into()],
        signing_key_file: Some(write("sa.key", SA_KEY)),
        key_files: vec![write("sa.pub", SA_PUB)],
        ..Default::default()
    };
    let mut config = registry_svc::Config {
        service_accounts: flags,
        ..Default::default()
    };
    if rbac {
        config.authorization_mode = vec![registry_svc::authz::Mode::Rbac];
    }
    let c = KubeCluster::start_with(ClusterOptions {
        registry: Some(config),
        ..Default::default()
    })
    .await;
    // The keys are read at start.
    drop(dir);
    c
}

/// A REST request with `token`.
async fn with(c: &KubeCluster, token: &str, method: &str, path: &str, body: &str) -> Reply {
    let auth = format!("Bearer {token}");
    call(
        c.api,
        method,
        path,
        &[JSON, ("Authorization", &auth)],
        body.as_bytes(),
    )
    .await
}

/// Who `token` is (SelfSubjectReview), or the refusal's code.
async fn whoami(c: &KubeCluster, token: &str) -> Result<Value, u16> {
    let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let r = with(c, token, "POST", path, "{}").await;
    if r.code == 201 {
        Ok(r.json()["status"]["userInfo"].clone())
    } else {
        Err(r.code)
    }
}

/// An administrator's REST request.
async fn admin(c: &KubeCluster, method: &str, path: &str, body: Value) -> Reply {
    call(c.api, method, path, &[JSON], body.to_string().as_bytes()).await
}

/// A token for `ns/name` from the REST API (as the administrator), with `spec`.
async fn token(c: &KubeCluster, ns: &str, name: &str, spec: Value) -> String {
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token");
    let r = admin(c, "POST", &path, json!({"spec": spec})).await;
    r.is(201).json()["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

fn service_account(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_creates_accounts_and_tokens() {
    let c = cluster(false).await;
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let name = format!("builder-{}", v.minor().replace('.', "-"));
        // 1.33 and later send the account in protobuf.
        c.kubectl(v, &["create", "serviceaccount", &name])
            .run()
            .ok();
        let r = c.kubectl(v, &["get", "sa", &name]).run().ok();
        assert!(r.out().starts_with("NAME"), "{r}");
        assert!(r.out().contains("SECRETS"), "{r}");
        assert!(
            r.out().lines().nth(1).is_some_and(|l| {
                l.split_whitespace().take(2).collect::<Vec<_>>() == [name.as_str(), "0"]
            }),
            "{r}"
        );
        // A token, as the account: the user, its uid, its groups, the credential id.
        let r = c.kubectl(v, &["create", "token", &name]).run().ok();
        let token = r.out().trim().to_string();
        let uid = c
            .kubectl(v, &["get", "sa", &name, "-o", "jsonpath={.metadata.uid}"])
            .run()
            .ok()
            .out()
            .to_string();
        let user = whoami(&c, &token).await.expect("the token authenticates");
        assert_eq!(
            user["username"],
            format!("system:serviceaccount:default:{name}")
        );
        assert_eq!(user["uid"], uid.as_str());
        assert_eq!(
            user["groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ])
        );
        let jti = claims(&token)["jti"].as_str().expect("a jti").to_string();
        assert_eq!(
            user["extra"]["authentication.kubernetes.io/credential-id"],
            json!([format!("JTI={jti}")])
        );
        // Upstream's claims: an hour by default, the API's audience, the account's uid.
        let cl = claims(&token);
        assert_eq!(cl["iss"], ISSUER);
        assert_eq!(cl["aud"], json!([ISSUER]));
        assert_eq!(
            cl["exp"].as_i64().expect("exp") - cl["iat"].as_i64().expect("iat"),
            3600
        );
        assert_eq!(cl["kubernetes.io"]["serviceaccount"]["uid"], uid.as_str());
        // Durations: upstream's floor, in its words; a longer one; -o json shows the request.
        let r = c
            .kubectl(v, &["create", "token", &name, "--duration", "5m"])
            .run()
            .fails();
        assert!(
            r.err().contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
            "{r}"
        );
        let r = c
            .kubectl(
                v,
                &["create", "token", &name, "--duration", "2h", "-o", "json"],
            )
            .run()
            .ok();
        let tr: Value = serde_json::from_str(r.out()).expect("JSON");
        assert_eq!(tr["kind"], "TokenRequest", "{r}");
        assert_eq!(tr["spec"]["expirationSeconds"], 7200, "{r}");
        assert!(tr["status"]["expirationTimestamp"].is_string(), "{r}");
        // A token for another audience is not this API's.
        let r = c
            .kubectl(v, &["create", "token", &name, "--audience", "vault"])
            .run()
            .ok();
        assert_eq!(claims(r.out().trim())["aud"], json!(["vault"]));
        assert_eq!(whoami(&c, r.out().trim()).await, Err(401));
        // No such account.
        let r = c.kubectl(v, &["create", "token", "nobody"]).run().fails();
        assert!(
            r.err().contains("serviceaccounts \"nobody\" not found"),
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_bound_to_a_pod_ends_with_the_pod() {
    let c = cluster(false).await;
    let sas = "/api/v1/namespaces/default/serviceaccounts";
    admin(&c, "POST", sas, service_account("runner"))
        .await
        .is(201);
    let pod = |sa: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job"},
               "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "busybox"}]}})
    };
    let pods = "/api/v1/namespaces/default/pods";
    admin(&c, "POST", pods, pod("runner")).await.is(201);
    let r = c
        .k(&[
            "create",
            "token",
            "runner",
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "job",
        ])
        .run()
        .ok();
    let token = r.out().trim().to_string();
    let pod_uid = c
        .k(&["get", "pod", "job", "-o", "jsonpath={.metadata.uid}"])
        .run()
        .ok()
        .out()
        .to_string();
    assert_eq!(
        claims(&token)["kubernetes.io"]["pod"],
        json!({"name": "job", "uid": pod_uid})
    );
    let user = whoami(&c, &token).await.expect("authenticates");
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["job"])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );
    // Upstream's refusals: a Pod of another account, a uid that is not the Pod's, a kind a
    // token cannot bind to.
    let path = "/api/v1/namespaces/default/serviceaccounts/runner/token";
    admin(&c, "POST", sas, service_account("other"))
        .await
        .is(201);
    let other = "/api/v1/namespaces/default/serviceaccounts/other/token";
    let bind = |kind: &str, name: &str, uid: &str| json!({"spec": {"boundObjectRef": {"kind": kind, "apiVersion": "v1", "name": name, "uid": uid}}});
    let r = admin(&c, "POST", other, bind("Pod", "job", "")).await;
    let s = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        s["message"],
        "cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name."
    );
    let r = admin(&c, "POST", path, bind("Pod", "job", "not-its-uid")).await;
    let s = assert_status(&r, 409, "Conflict");
    assert!(
        s["message"].as_str().is_some_and(|m| m.contains(
            "the UID in the bound object reference (not-its-uid) does not match the UID in record"
        )),
        "{r}"
    );
    let r = admin(&c, "POST", path, bind("Node", "n1", "")).await;
    let s = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        s["message"],
        "cannot bind token to object of type /v1, Kind=Node"
    );
    let r = admin(&c, "POST", path, bind("Pod", "ghost", "")).await;
    assert_status(&r, 404, "NotFound");
    // The Pod goes: the token stops (within the success cache), and a new Pod of the same
    // name does not revive it.
    admin(
        &c,
        "DELETE",
        &format!("{pods}/job?gracePeriodSeconds=0"),
        json!({}),
    )
    .await;
    admin(&c, "POST", pods, pod("runner")).await.is(201);
    wait_until(
        Duration::from_secs(20),
        "the bound token is refused",
        || async { whoami(&c, &token).await == Err(401) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_ends_with_its_account_and_forgeries_are_refused() {
    let c = cluster(false).await;
    let sas = "/api/v1/namespaces/default/serviceaccounts";
    admin(&c, "POST", sas, service_account("ci")).await.is(201);
    let t = token(&c, "default", "ci", json!({})).await;
    assert!(whoami(&c, &t).await.is_ok());
    // Forgeries, each refused with nothing written.
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let parts: Vec<&str> = t.split('.').collect();
    let mut escalated = claims(&t);
    escalated["sub"] = json!("system:serviceaccount:kube-system:ci");
    escalated["kubernetes.io"]["namespace"] = json!("kube-system");
    let forged = [
        // alg none.
        format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            parts[1]
        ),
        // The payload changed under a real signature.
        format!("{}.{}.{}", parts[0], b64(&escalated), parts[2]),
        // Signed by another key.
        {
            let key = jsonwebtoken::EncodingKey::from_ec_pem(OTHER_KEY.as_bytes()).expect("key");
            jsonwebtoken::encode(
                &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
                &claims(&t),
                &key,
            )
            .expect("signs")
        },
        // HS256 with the public key as the secret.
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims(&t),
            &jsonwebtoken::EncodingKey::from_secret(SA_PUB.as_bytes()).expect("key"),
        )
        .expect("signs"),
    ];
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "forged"}});
    for f in &forged {
        let r = with(
            &c,
            f,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            &cm.to_string(),
        )
        .await;
        let s = assert_status(&r, 401, "Unauthorized");
        assert_eq!(s["message"], "Unauthorized");
    }
    admin(
        &c,
        "GET",
        "/api/v1/namespaces/default/configmaps/forged",
        json!(null),
    )
    .await
    .is(404);
    // The account goes: its tokens stop; one of the same name does not revive them.
    admin(&c, "DELETE", &format!("{sas}/ci"), json!({}))
        .await
        .is(200);
    admin(&c, "POST", sas, service_account("ci")).await.is(201);
    wait_until(
        Duration::from_secs(20),
        "the token of a deleted account is refused",
        || async { whoami(&c, &t).await == Err(401) },
    )
    .await;
    let fresh = token(&c, "default", "ci", json!({})).await;
    assert!(
        whoami(&c, &fresh).await.is_ok(),
        "the new account's token works"
    );
}

/// RBAC decides for the account's user and groups, on REST and gRPC alike.
#[tokio::test(flavor = "multi_thread")]
async fn rbac_decides_for_the_account_on_rest_and_grpc() {
    let c = cluster(true).await;
    admin(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
    )
    .await
    .is(201);
    let sas = "/api/v1/namespaces/ns1/serviceaccounts";
    admin(&c, "POST", sas, service_account("deployer"))
        .await
        .is(201);
    let t = token(&c, "ns1", "deployer", json!({})).await;
    // Ready once the roles are loaded: /version is every authenticated user's (the
    // administrator, in system:masters, is allowed before).
    wait_until(Duration::from_secs(20), "RBAC is ready", || async {
        with(&c, &t, "GET", "/version", "").await.code == 200
    })
    .await;
    let cms = "/api/v1/namespaces/ns1/configmaps";
    let want = "configmaps is forbidden: User \"system:serviceaccount:ns1:deployer\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"ns1\"";
    let r = with(&c, &t, "GET", cms, "").await;
    assert_eq!(assert_status(&r, 403, "Forbidden")["message"], want);
    let url = c.registry_url();
    let grpc = |token: String| {
        let url = url.clone();
        async move {
            let mut client = ConfigMapsClient::connect(url).await.expect("connect");
            let mut req = Request::new(ListConfigMapsRequest {
                namespace: "ns1".into(),
                options: None,
            });
            req.metadata_mut().insert(
                "authorization",
                MetadataValue::try_from(format!("Bearer {token}")).expect("metadata"),
            );
            client.list(req).await
        }
    };
    let e = grpc(t.clone()).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert_eq!(e.message(), want);
    // `view` for every account of ns1, by their group.
    admin(
        &c,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/ns1/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "accounts-view"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                             "name": "system:serviceaccounts:ns1"}]}),
    )
    .await
    .is(201);
    wait_until(Duration::from_secs(10), "the account may list", || async {
        with(&c, &t, "GET", cms, "").await.code == 200
    })
    .await;
    grpc(t.clone()).await.expect("allowed over gRPC");
    // Still not a writer.
    let r = with(
        &c,
        &t,
        "POST",
        cms,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}).to_string(),
    )
    .await;
    assert_status(&r, 403, "Forbidden");
    // A token of an account of another namespace is not in that group.
    admin(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        service_account("deployer"),
    )
    .await
    .is(201);
    let other = token(&c, "default", "deployer", json!({})).await;
    assert_eq!(with(&c, &other, "GET", cms, "").await.code, 403);
}

/// The official Python client with a ServiceAccount token as its bearer token.
#[tokio::test(flavor = "multi_thread")]
async fn the_python_client_authenticates_with_a_service_account_token() {
    let c = cluster(false).await;
    admin(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        service_account("py"),
    )
    .await
    .is(201);
    let t = token(&c, "default", "py", json!({})).await;
    let script = r#"
import sys
from kubernetes import client
conf = client.Configuration()
conf.host = sys.argv[1]
conf.api_key = {"authorization": "Bearer " + sys.argv[2]}
api = client.ApiClient(conf)
review = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
print("user", review.status.user_info.username, review.status.user_info.groups)
try:
    client.CoreV1Api(client.ApiClient(client.Configuration(host=sys.argv[1], api_key={"authorization": "Bearer x.y.z"}))).list_namespaced_config_map("default")
    print("forged token accepted")
except client.ApiException as e:
    print("forged", e.status)
"#;
    let r = c.python(script, &[&c.url(), &t]).run().ok();
    assert!(
        r.out().contains("user system:serviceaccount:default:py ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']"),
        "{r}"
    );
    assert!(r.out().contains("forged 401"), "{r}");
}

/// The controller-manager keeps a `default` account in every namespace.
#[tokio::test(flavor = "multi_thread")]
async fn every_namespace_has_a_default_account() {
    let c = cluster(false).await;
    let _cm = c.controller_manager().await;
    admin(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    )
    .await
    .is(201);
    let default = |ns: &str| format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    for ns in ["team-a", "default", "kube-system"] {
        let what = format!("{ns} has its default account");
        wait_until(Duration::from_secs(30), &what, || async {
            admin(&c, "GET", &default(ns), json!(null)).await.code == 200
        })
        .await;
    }
    let uid = |r: Reply| {
        r.json()["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let before = uid(admin(&c, "GET", &default("team-a"), json!(null)).await);
    admin(&c, "DELETE", &default("team-a"), json!({}))
        .await
        .is(200);
    wait_until(
        Duration::from_secs(30),
        "the default account comes back",
        || async {
            let r = admin(&c, "GET", &default("team-a"), json!(null)).await;
            r.code == 200 && uid(r) != before
        },
    )
    .await;
}

/// kube-rs with a ServiceAccount token in its kubeconfig (`user.token`), as an operator runs.
#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_authenticates_with_a_service_account_token() {
    use k8s_openapi::api::{authentication::v1::SelfSubjectReview, core::v1::ConfigMap};
    let c = cluster(true).await;
    admin(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        service_account("operator"),
    )
    .await
    .is(201);
    let t = token(&c, "default", "operator", json!({})).await;
    wait_until(Duration::from_secs(20), "RBAC is ready", || async {
        with(&c, &t, "GET", "/version", "").await.code == 200
    })
    .await;
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: {}\n\
         users:\n- name: op\n  user:\n    token: {t}\ncontexts:\n- name: k\n  context:\n    cluster: k\n    user: op\n    namespace: default\ncurrent-context: k\n",
        c.url()
    );
    let kc = kube::config::Kubeconfig::from_yaml(&kubeconfig).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("a config");
    let client = kube::Client::try_from(config).expect("a client");
    let review: SelfSubjectReview = kube::Api::all(client.clone())
        .create(&Default::default(), &SelfSubjectReview::default())
        .await
        .expect("a review");
    let user = review.status.and_then(|s| s.user_info).expect("user info");
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:operator")
    );
    // RBAC decides for it: no role yet.
    let maps: kube::Api<ConfigMap> = kube::Api::default_namespaced(client);
    match maps.list(&Default::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(
                s.message
                    .contains("User \"system:serviceaccount:default:operator\" cannot list"),
                "{}",
                s.message
            );
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// The reviews and `serviceaccounts/token` are in discovery as upstream lists them (legacy and
/// aggregated), only `create` is allowed on them, and clients that find their way by
/// discovery use them: kubectl's `api-resources`, and the Python dynamic client creating an
/// access review and a token through the resources discovery gave it.
#[tokio::test(flavor = "multi_thread")]
async fn discovery_lists_the_reviews_and_the_token_subresource() {
    let c = cluster(false).await;
    let resources = |path: &'static str| {
        let c = &c;
        async move { admin(c, "GET", path, Value::Null).await.is(200).json()["resources"].clone() }
    };
    let named = |list: &Value, name: &str| -> Value {
        list.as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not in discovery: {list}"))
    };
    let authorization = resources("/apis/authorization.k8s.io/v1").await;
    for (name, kind, namespaced) in [
        ("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
        ("subjectaccessreviews", "SubjectAccessReview", false),
        (
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
        ),
        ("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
    ] {
        let r = named(&authorization, name);
        assert_eq!(r["kind"], kind);
        assert_eq!(r["namespaced"], namespaced);
        assert_eq!(r["verbs"], json!(["create"]), "{r}");
    }
    let r = named(
        &resources("/apis/authentication.k8s.io/v1").await,
        "selfsubjectreviews",
    );
    assert_eq!(r["verbs"], json!(["create"]));
    let token = named(&resources("/api/v1").await, "serviceaccounts/token");
    assert_eq!(
        (
            &token["group"],
            &token["version"],
            &token["kind"],
            &token["verbs"]
        ),
        (
            &json!("authentication.k8s.io"),
            &json!("v1"),
            &json!("TokenRequest"),
            &json!(["create"])
        )
    );
    // Aggregated discovery: the token is a subresource of serviceaccounts.
    let aggregated = call(
        c.api,
        "GET",
        "/api",
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )],
        b"",
    )
    .await
    .is(200)
    .json();
    let accounts = aggregated["items"][0]["versions"][0]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == "serviceaccounts")
        .cloned()
        .expect("serviceaccounts");
    assert_eq!(
        accounts["subresources"],
        json!([{"subresource": "token", "verbs": ["create"],
                "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}}])
    );
    // Only create: anything else is upstream's 405.
    let r = admin(
        &c,
        "GET",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Value::Null,
    )
    .await;
    assert_status(&r, 405, "MethodNotAllowed");
    let out = c
        .kubectl(
            Kubectl::V1_33,
            &["api-resources", "--api-group=authorization.k8s.io"],
        )
        .run()
        .ok();
    assert!(
        out.out().contains("selfsubjectaccessreviews")
            && out.out().contains("SelfSubjectRulesReview"),
        "{out}"
    );
    admin(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        service_account("dyn"),
    )
    .await
    .is(201);
    let script = r#"
import sys
from kubernetes import client, dynamic
api = dynamic.DynamicClient(client.ApiClient(client.Configuration(host=sys.argv[1])))
ssar = api.resources.get(api_version="authorization.k8s.io/v1", kind="SelfSubjectAccessReview")
review = ssar.create(body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
    "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}})
print("allowed", review.status.allowed)
accounts = api.resources.get(api_version="v1", kind="ServiceAccount")
token = accounts.subresources["token"].create(body={"apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}, name="dyn", namespace="default")
print("token", token.kind, len(token.status.token.split(".")))
"#;
    let r = c.python(script, &[&c.url()]).run().ok();
    assert!(r.out().contains("allowed True"), "{r}");
    assert!(r.out().contains("token TokenRequest 3"), "{r}");
}

/// The generic gRPC API answers the reviews and issues tokens as the REST API does: the
/// same discovery, `Create` on a review, `Create` of the `token` subresource of an account
/// (and that token then authenticates over gRPC), each refusal in plain words.
#[tokio::test(flavor = "multi_thread")]
async fn the_generic_grpc_api_answers_reviews_and_issues_tokens() {
    use kubestore_proto::registry::v1::{
        CreateRequest, DiscoverRequest, GetRequest, ResourceRef, resources_client::ResourcesClient,
    };
    let c = cluster(false).await;
    let mut g = ResourcesClient::new(kubestore_tests::services::channel(&c.registry_url()).await);
    let discovered = g
        .discover(DiscoverRequest {})
        .await
        .expect("discover")
        .into_inner()
        .resources;
    let find = |group: &str, resource: &str| {
        discovered
            .iter()
            .find(|r| r.group == group && r.resource == resource)
            .cloned()
            .unwrap_or_else(|| panic!("{group}/{resource} is not discovered"))
    };
    let ssar = find("authorization.k8s.io", "selfsubjectaccessreviews");
    assert_eq!(
        (ssar.kind.as_str(), ssar.verbs.clone()),
        ("SelfSubjectAccessReview", vec!["create".to_string()])
    );
    assert!(
        find("", "serviceaccounts")
            .subresources
            .contains(&"token".to_string())
    );
    let reference = |group: &str, resource: &str| {
        Some(ResourceRef {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
        })
    };
    let review = g
        .create(CreateRequest {
            resource: reference("authorization.k8s.io", "selfsubjectaccessreviews"),
            json: json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                         "spec": {"resourceAttributes": {"verb": "delete", "resource": "secrets", "namespace": "default"}}})
                .to_string(),
            ..Default::default()
        })
        .await
        .expect("a review")
        .into_inner();
    let answer: Value = serde_json::from_str(&review.json).expect("JSON");
    assert_eq!(answer["status"]["allowed"], true, "{answer}");
    assert!(review.created);
    admin(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        service_account("grpc"),
    )
    .await
    .is(201);
    let issued = g
        .create(CreateRequest {
            resource: reference("", "serviceaccounts"),
            namespace: "default".into(),
            name: "grpc".into(),
            subresource: "token".into(),
            json: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"audiences": [ISSUER]}})
            .to_string(),
            ..Default::default()
        })
        .await
        .expect("a token")
        .into_inner();
    let issued: Value = serde_json::from_str(&issued.json).expect("JSON");
    assert_eq!(issued["kind"], "TokenRequest");
    let t = issued["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    assert_eq!(claims(&t)["sub"], "system:serviceaccount:default:grpc");
    // The token, as the credential of a gRPC call.
    let mut req = Request::new(CreateRequest {
        resource: reference("authentication.k8s.io", "selfsubjectreviews"),
        json: "{}".into(),
        ..Default::default()
    });
    req.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {t}")).expect("metadata"),
    );
    let me: Value = serde_json::from_str(&g.create(req).await.expect("whoami").into_inner().json)
        .expect("JSON");
    assert_eq!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:default:grpc"
    );
    // Refusals: no such subresource, no account named, an account that does not exist, and a
    // verb a review does not take.
    let refused = |subresource: &str, name: &str| CreateRequest {
        resource: reference("", "serviceaccounts"),
        namespace: "default".into(),
        name: name.into(),
        subresource: subresource.into(),
        json: "{}".into(),
        ..Default::default()
    };
    let e = g
        .create(refused("nope", "grpc"))
        .await
        .expect_err("no such subresource");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("no subresource \"nope\""), "{e:?}");
    let e = g
        .create(refused("token", ""))
        .await
        .expect_err("no account");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let e = g
        .create(refused("token", "missing"))
        .await
        .expect_err("a missing account");
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    let e = g
        .get(GetRequest {
            resource: reference("authorization.k8s.io", "selfsubjectaccessreviews"),
            name: "x".into(),
            ..Default::default()
        })
        .await
        .expect_err("only create");
    assert_eq!(e.code(), tonic::Code::Unimplemented, "{e:?}");
}
