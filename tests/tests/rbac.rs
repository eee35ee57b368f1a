//! `--authorization-mode RBAC` (issue 32): a user with no roles is refused everything but what
//! upstream's bootstrap policy gives every authenticated user (discovery, the version, its own
//! reviews); a Role bound to it allows exactly the Role's rules, on the REST API, the generic
//! gRPC API and the typed services alike, and stops when the binding goes; `edit` is
//! aggregated from `system:aggregate-to-edit`; the access reviews answer as requests are
//! decided; kubectl's `auth can-i` (with `--list`) and its Forbidden line are upstream's.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{
        ListConfigMapsRequest, ListSecretsRequest, config_maps_client::ConfigMapsClient,
        secrets_client::SecretsClient,
    },
    registry::v1::{ListRequest, ResourceRef, resources_client::ResourcesClient},
};
use kubestore_tests::{
    Cluster,
    fixtures_rbac::{CMS, TOKENS, admin, alice, cluster, until_alice, with_token},
    kube::Kubectl,
    pki::Pki,
    rest::{assert_status, call, wait_until},
    services::{channel, spawn_registry_with_kube_api},
};
use serde_json::json;
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn a_role_allows_exactly_its_rules_on_every_api() {
    let c = cluster().await;
    // No roles: refused, in upstream's words (RBAC gives no reason for a plain refusal).
    let r = alice(&c, "GET", CMS, "").await;
    let s = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        s["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API \
         group \"\" in the namespace \"default\"",
        "{r}"
    );
    // What every authenticated user may: discovery, and its own reviews.
    for path in ["/api", "/apis", "/api/v1", "/openapi/v3"] {
        alice(&c, "GET", path, "").await.is(200);
    }
    let review = |verb: &str, resource: &str, ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                               "namespace": ns}}})
        .to_string()
    };
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let r = alice(&c, "POST", ssar, &review("list", "configmaps", "default")).await;
    let r = r.is(201);
    assert_eq!(r.json()["status"], json!({"allowed": false}), "{r}");

    // A Role and its binding, written by the administrator (plain HTTP: system:masters).
    admin(
        &c,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "cm-reader"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await
    .is(201);
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-reads"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"}});
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    admin(&c, "POST", bindings, binding).await.is(201);
    until_alice(&c, "GET", CMS, "", 200).await;

    // Exactly the rules: get and list here; not create, not elsewhere, not cluster-wide.
    alice(&c, "GET", &format!("{CMS}/nothing"), "")
        .await
        .is(404);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let r = alice(&c, "POST", CMS, &cm.to_string()).await;
    assert_status(&r, 403, "Forbidden");
    let r = alice(&c, "GET", "/api/v1/namespaces/kube-system/configmaps", "").await;
    assert_status(&r, 403, "Forbidden");
    let r = alice(&c, "GET", "/api/v1/configmaps", "").await;
    let s = assert_status(&r, 403, "Forbidden");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("at the cluster scope")),
        "{r}"
    );
    let r = alice(&c, "GET", "/api/v1/namespaces/default/secrets", "").await;
    assert_status(&r, 403, "Forbidden");
    call(c.api, "GET", &format!("{CMS}/x"), &[], b"")
        .await
        .is(404);

    // The reviews say the same.
    let r = alice(&c, "POST", ssar, &review("list", "configmaps", "default")).await;
    let r = r.is(201);
    assert_eq!(r.json()["status"]["allowed"], true, "{r}");
    let r = alice(&c, "POST", ssar, &review("create", "configmaps", "default")).await;
    let r = r.is(201);
    assert_eq!(r.json()["status"]["allowed"], false, "{r}");
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                       "spec": {"namespace": "default"}});
    let r = alice(
        &c,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        &rules.to_string(),
    )
    .await;
    let status = r.is(201).json()["status"].clone();
    assert!(
        status["resourceRules"].as_array().expect("rules").contains(
            &json!({"verbs": ["get", "list", "watch"], "apiGroups": [""],
                              "resources": ["configmaps"]})
        ),
        "{status}"
    );
    assert_eq!(status["incomplete"], false);

    // The same decisions over gRPC: the generic API and the typed services.
    let url = c.registry_url();
    let ch = channel(&url).await;
    let resource = |plural: &str| {
        Some(ResourceRef {
            group: String::new(),
            version: "v1".into(),
            resource: plural.into(),
        })
    };
    let mut generic = ResourcesClient::new(ch.clone());
    generic
        .list(with_token(ListRequest {
            resource: resource("configmaps"),
            namespace: "default".into(),
            ..Default::default()
        }))
        .await
        .expect("alice may list configmaps over the generic API");
    let denied = generic
        .list(with_token(ListRequest {
            resource: resource("secrets"),
            namespace: "default".into(),
            ..Default::default()
        }))
        .await
        .expect_err("not secrets");
    assert_eq!(denied.code(), Code::PermissionDenied);
    ConfigMapsClient::new(ch.clone())
        .list(with_token(ListConfigMapsRequest {
            namespace: "default".into(),
            options: None,
        }))
        .await
        .expect("alice may list configmaps over the typed service");
    let denied = SecretsClient::new(ch.clone())
        .list(with_token(ListSecretsRequest {
            namespace: "default".into(),
            options: None,
        }))
        .await
        .expect_err("not secrets");
    assert_eq!(denied.code(), Code::PermissionDenied);
    assert_eq!(
        denied.message(),
        "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" \
         in the namespace \"default\""
    );

    // The binding goes: so does the permission.
    call(
        c.api,
        "DELETE",
        &format!("{bindings}/alice-reads"),
        &[],
        b"",
    )
    .await
    .is(200);
    until_alice(&c, "GET", CMS, "", 403).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_is_aggregated_and_a_binding_to_a_missing_role_says_so() {
    let c = cluster().await;
    admin(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
    )
    .await
    .is(201);
    // `edit` holds the rules of `system:aggregate-to-edit` (and view's), put there by the
    // aggregation.
    let edit = call(
        c.api,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/edit",
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert!(
        edit["rules"].as_array().is_some_and(|r| r.len() > 10),
        "{edit}"
    );
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings";
    admin(
        &c,
        "POST",
        bindings,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "alice-edits"},
               "subjects": [{"kind": "Group", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "edit"}}),
    )
    .await
    .is(201);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-alice"}})
        .to_string();
    until_alice(&c, "POST", "/api/v1/namespaces/team-a/configmaps", &cm, 201).await;
    // edit does not reach roles.
    let r = alice(
        &c,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
        "",
    )
    .await;
    assert_status(&r, 403, "Forbidden");
    // A new aggregate-to-edit role widens edit.
    admin(
        &c,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "roles-for-editors",
                            "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                          "verbs": ["list"]}]}),
    )
    .await
    .is(201);
    until_alice(
        &c,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
        "",
        200,
    )
    .await;
    // A binding to a role that does not exist: the refusal says why.
    admin(
        &c,
        "POST",
        bindings,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "dangling"},
               "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "nonexistent"}}),
    )
    .await
    .is(201);
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings";
    let what = "the refusal names the missing role";
    wait_until(Duration::from_secs(10), what, || async {
        let r = alice(&c, "GET", path, "").await;
        r.code == 403
            && r.json()["message"].as_str().is_some_and(|m| {
                m.ends_with(": RBAC: role.rbac.authorization.k8s.io \"nonexistent\" not found")
            })
    })
    .await;
    // The bootstrap policy is upstream's, labelled as upstream labels it.
    let admin_role = call(
        c.api,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin",
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(
        admin_role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin_role["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                "name": "system:masters"}])
    );
}

/// kubectl over TLS (it sends tokens over https:// only): `auth can-i` and `--list`, a
/// Forbidden printed as upstream prints it, three minors.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_auth_can_i_and_a_forbidden_line() {
    let pki = Pki::new("rbac");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p
    };
    let server = pki.issue("registry-svc");
    let tls = kubestore_telemetry::tls::ServerTlsArgs {
        tls_cert_file: Some(server.cert.clone()),
        tls_private_key_file: Some(server.key.clone()),
        client_ca_file: Some(pki.ca.clone()),
        ..Default::default()
    };
    let cluster = Cluster::storage_only().await;
    let config = registry_svc::Config {
        tls,
        token_auth_file: Some(file("tokens.csv", TOKENS)),
        authorization_mode: vec![registry_svc::authz::Mode::Rbac],
        ..Default::default()
    };
    let (_registry, api) = spawn_registry_with_kube_api(config, cluster.storage.url(), None);
    let root = pki.issue_with_groups("root", &["system:masters"]);
    let kubeconfig = |name: &str, user: String| {
        file(
            name,
            &format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: https://localhost:{}\n    certificate-authority: {}\n\
                 users:\n- name: u\n  user:\n{user}contexts:\n- name: k\n  context:\n    cluster: k\n    user: u\n    namespace: default\ncurrent-context: k\n",
                api.port(),
                pki.ca.display()
            ),
        )
    };
    let admin = kubeconfig(
        "admin",
        format!(
            "    client-certificate: {}\n    client-key: {}\n",
            root.cert.display(),
            root.key.display()
        ),
    );
    let alice = kubeconfig("alice", "    token: alice-token\n".into());
    // A user kubectl does not prompt for (basic auth, which the server ignores, as upstream's
    // has since 1.19): no credentials.
    let nobody = kubeconfig(
        "nobody",
        "    username: nobody\n    password: none\n".into(),
    );
    let run = |v: Kubectl, config: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(v.path())
            .arg("--kubeconfig")
            .arg(config)
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", dir.path())
            .output()
            .expect("kubectl runs");
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    wait_until(Duration::from_secs(20), "RBAC is ready", || async {
        run(Kubectl::V1_33, &alice, &["version"])
            .1
            .contains("Server Version")
    })
    .await;
    // No credentials over TLS: system:anonymous (--anonymous-auth, upstream's default), who
    // may read the version and nothing else.
    let (code, out) = run(Kubectl::V1_37, &nobody, &["version"]);
    assert!(code == Some(0) && out.contains("Server Version"), "{out}");
    // Self reviews are every authenticated user's (system:basic-user), not anonymous ones':
    // kubectl words the 403 its own way.
    let (_, out) = run(Kubectl::V1_37, &nobody, &["auth", "whoami"]);
    assert!(
        out.contains("you do not have permission to call it"),
        "{out}"
    );
    let (_, out) = run(
        Kubectl::V1_37,
        &nobody,
        &["get", "--raw", "/api/v1/namespaces/default/configmaps"],
    );
    assert!(
        out.contains("configmaps is forbidden: User \"system:anonymous\" cannot list resource"),
        "{out}"
    );
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let (code, out) = run(v, &alice, &["auth", "can-i", "list", "configmaps"]);
        assert_eq!((code, out.trim()), (Some(1), "no"), "{}", v.minor());
        let (_, out) = run(v, &alice, &["get", "configmaps"]);
        assert!(
            out.contains(
                "Error from server (Forbidden): configmaps is forbidden: User \"alice\" cannot \
                 list resource \"configmaps\" in API group \"\" in the namespace \"default\""
            ),
            "{}: {out}",
            v.minor()
        );
        let (code, out) = run(v, &admin, &["auth", "can-i", "delete", "pods"]);
        assert_eq!((code, out.trim()), (Some(0), "yes"), "{}", v.minor());
    }
    let (code, out) = run(
        Kubectl::V1_37,
        &admin,
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get,list",
            "--resource=configmaps",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(
        Kubectl::V1_37,
        &admin,
        &[
            "create",
            "rolebinding",
            "alice-reads",
            "--role=cm-reader",
            "--user=alice",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    wait_until(Duration::from_secs(10), "the binding applies", || async {
        run(
            Kubectl::V1_37,
            &alice,
            &["auth", "can-i", "list", "configmaps"],
        )
        .0 == Some(0)
    })
    .await;
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let (code, out) = run(v, &alice, &["auth", "can-i", "get", "configmaps"]);
        assert_eq!((code, out.trim()), (Some(0), "yes"), "{}", v.minor());
        let (code, out) = run(v, &alice, &["auth", "can-i", "create", "configmaps"]);
        assert_eq!((code, out.trim()), (Some(1), "no"), "{}", v.minor());
        let (code, out) = run(v, &alice, &["auth", "can-i", "--list"]);
        assert_eq!(code, Some(0), "{out}");
        let line = out
            .lines()
            .find(|l| l.starts_with("configmaps "))
            .unwrap_or_else(|| panic!("{}: {out}", v.minor()));
        assert!(line.ends_with("[get list]"), "{}: {out}", v.minor());
        assert!(
            out.contains("selfsubjectaccessreviews.authorization.k8s.io"),
            "{}: {out}",
            v.minor()
        );
        let (_, out) = run(v, &alice, &["get", "configmaps"]);
        assert!(out.contains("No resources found"), "{}: {out}", v.minor());
    }
}
