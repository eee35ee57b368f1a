//! RBAC against those who would get around it (issue 32): escalation by a Role, a patch, a
//! binding and an `aggregationRule`, and impersonation without the verb, each refused in
//! upstream's words with nothing written; granted `escalate`, `bind` or `impersonate`, they
//! pass.

use std::time::Duration;

use kubestore_proto::registry::v1::{ListRequest, ResourceRef, resources_client::ResourcesClient};
use kubestore_tests::{
    fixtures_rbac::{ALICE, CMS, admin, alice, cluster, until_alice},
    kube::Kubectl,
    rest::{assert_status, call, wait_until},
    services::channel,
};
use serde_json::{Value, json};
use tonic::{Code, Request, metadata::MetadataValue};

/// Adversarial: a Role granting what its author lacks, a binding to a role whose rules its
/// author lacks, an aggregationRule without full authority: each refused in upstream's words,
/// dry runs too, nothing written; with `escalate` / `bind` granted they pass.
#[tokio::test(flavor = "multi_thread")]
async fn escalation_by_role_by_binding_and_by_aggregation_is_refused() {
    let c = cluster().await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let roles = format!("{rbac}/namespaces/default/roles");
    let bindings = format!("{rbac}/namespaces/default/rolebindings");
    // alice may write roles and bindings in default, and read configmaps there; and create
    // cluster roles.
    admin(
        &c,
        "POST",
        &roles,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "role-writer"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"],
                          "resources": ["roles", "rolebindings"],
                          "verbs": ["create", "update", "patch", "get"]},
                         {"apiGroups": [""], "resources": ["configmaps"],
                          "verbs": ["get", "list"]}]}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        &bindings,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "alice-writes-roles"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "role-writer"}}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        &format!("{rbac}/clusterroles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "clusterrole-creator"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                          "verbs": ["create"]}]}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        &format!("{rbac}/clusterrolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "alice-creates-clusterroles"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "clusterrole-creator"}}),
    )
    .await
    .is(201);
    until_alice(&c, "GET", CMS, "", 200).await;

    // A Role with what alice holds: allowed.
    let role = |name: &str, verbs: &[&str], resource: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name},
               "rules": [{"apiGroups": [""], "resources": [resource], "verbs": verbs}]})
        .to_string()
    };
    alice(&c, "POST", &roles, &role("cm-get", &["get"], "configmaps"))
        .await
        .is(201);
    // More than she holds: refused, dry run too, nothing written.
    let want = "roles.rbac.authorization.k8s.io \"grab\" is forbidden: user \"alice\" \
                (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC \
                permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], \
                Verbs:[\"delete\" \"get\"]}";
    for path in [roles.clone(), format!("{roles}?dryRun=All")] {
        let r = alice(
            &c,
            "POST",
            &path,
            &role("grab", &["delete", "get"], "secrets"),
        )
        .await;
        let s = assert_status(&r, 403, "Forbidden");
        assert_eq!(s["message"], want, "{r}");
    }
    call(c.api, "GET", &format!("{roles}/grab"), &[], b"")
        .await
        .is(404);
    // Widening a Role she may update: refused the same way (a patch is checked on its result).
    let r = alice(
        &c,
        "PATCH",
        &format!("{roles}/cm-get"),
        r#"{"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","delete"]}]}"#,
    )
    .await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = call(
        c.api,
        "PATCH",
        &format!("{roles}/cm-get"),
        &[("Content-Type", "application/merge-patch+json"), ALICE],
        br#"{"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","delete"]}]}"#,
    )
    .await;
    let s = assert_status(&r, 403, "Forbidden");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("Resources:[\"configmaps\"], Verbs:[\"delete\"]}")),
        "{r}"
    );
    // A binding to cluster-admin: refused.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "grab"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"}})
    .to_string();
    let r = alice(&c, "POST", &bindings, &binding).await;
    let s = assert_status(&r, 403, "Forbidden");
    assert!(
        s["message"].as_str().is_some_and(|m| m.starts_with(
            "rolebindings.rbac.authorization.k8s.io \"grab\" is forbidden: user \"alice\" \
             (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC \
             permissions not currently held:\n"
        )),
        "{r}"
    );
    call(c.api, "GET", &format!("{bindings}/grab"), &[], b"")
        .await
        .is(404);
    // An aggregationRule gathers anything: only with full authority.
    let r = alice(
        &c,
        "POST",
        &format!("{rbac}/clusterroles"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "gather"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}})
        .to_string(),
    )
    .await;
    let s = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        s["message"],
        "clusterroles.rbac.authorization.k8s.io \"gather\" is forbidden: must have \
         cluster-admin privileges to use the aggregationRule",
        "{r}"
    );

    // `escalate` on roles and `bind` on cluster-admin, granted: both pass.
    admin(
        &c,
        "POST",
        &roles,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "escalator"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                          "verbs": ["escalate"]},
                         {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                          "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        &bindings,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "alice-escalates"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "escalator"}}),
    )
    .await
    .is(201);
    until_alice(
        &c,
        "POST",
        &roles,
        &role("grab", &["delete", "get"], "secrets"),
        201,
    )
    .await;
    alice(&c, "POST", &bindings, &binding).await.is(201);
}

/// Impersonation: each part asked for is one `impersonate` decision; without the verb 403,
/// nothing done; with it, the request is the impersonated user's (kubectl `--as`, gRPC
/// metadata).
#[tokio::test(flavor = "multi_thread")]
async fn impersonation_needs_the_impersonate_verb_for_each_part() {
    let c = cluster().await;
    let as_bob = ("Impersonate-User", "bob");
    let r = call(c.api, "GET", CMS, &[ALICE, as_bob], b"").await;
    let s = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        s["message"],
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API \
         group \"\" at the cluster scope",
        "{r}"
    );
    // bob may list configmaps in default; alice may impersonate bob (only).
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    for (path, body) in [
        (
            format!("{rbac}/namespaces/default/roles"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "cm-lister"},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
        ),
        (
            format!("{rbac}/namespaces/default/rolebindings"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "bob-lists"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                               "name": "cm-lister"}}),
        ),
        (
            format!("{rbac}/clusterroles"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "be-bob"},
                   "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                              "resourceNames": ["bob"]}]}),
        ),
        (
            format!("{rbac}/clusterrolebindings"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "alice-is-bob"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "be-bob"}}),
        ),
    ] {
        admin(&c, "POST", &path, body).await.is(201);
    }
    wait_until(Duration::from_secs(10), "alice acts as bob", || async {
        call(c.api, "GET", CMS, &[ALICE, as_bob], b"").await.code == 200
    })
    .await;
    // alice herself still may not; nor may she add a group.
    assert_status(&alice(&c, "GET", CMS, "").await, 403, "Forbidden");
    let r = call(
        c.api,
        "GET",
        CMS,
        &[ALICE, as_bob, ("Impersonate-Group", "ops")],
        b"",
    )
    .await;
    let s = assert_status(&r, 403, "Forbidden");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("groups \"ops\" is forbidden")),
        "{r}"
    );
    // Groups without a user: upstream's 500.
    let r = call(c.api, "GET", CMS, &[("Impersonate-Group", "ops")], b"").await;
    assert_status(&r, 500, "InternalError");
    // Who the request is, as kubectl --as shows it (the administrator may impersonate anyone).
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let r = c
            .kubectl(
                v,
                &[
                    "auth",
                    "whoami",
                    "--as",
                    "bob",
                    "--as-group",
                    "qa",
                    "-o",
                    "json",
                ],
            )
            .run()
            .ok();
        let review: Value = serde_json::from_str(r.out()).expect("JSON");
        assert_eq!(
            review["status"]["userInfo"],
            json!({"username": "bob", "groups": ["qa", "system:authenticated"]}),
            "{r}"
        );
        let r = c
            .kubectl(v, &["auth", "can-i", "list", "configmaps", "--as", "bob"])
            .run()
            .ok();
        assert_eq!(r.out().trim(), "yes", "{r}");
        let r = c
            .kubectl(v, &["auth", "can-i", "create", "configmaps", "--as", "bob"])
            .run();
        assert_eq!(r.out().trim(), "no", "{r}");
    }
    // gRPC metadata, the same names.
    let mut generic = ResourcesClient::new(channel(&c.registry_url()).await);
    let mut request = Request::new(ListRequest {
        resource: Some(ResourceRef {
            group: String::new(),
            version: "v1".into(),
            resource: "secrets".into(),
        }),
        namespace: "default".into(),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("impersonate-user", MetadataValue::from_static("bob"));
    let denied = generic
        .list(request)
        .await
        .expect_err("bob may not list secrets");
    assert_eq!(denied.code(), Code::PermissionDenied);
    assert!(
        denied.message().contains("User \"bob\" cannot list"),
        "{denied:?}"
    );
}
