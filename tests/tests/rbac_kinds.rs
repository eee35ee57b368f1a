//! The RBAC kinds (issue 32): `rbac.authorization.k8s.io/v1` Role, ClusterRole, RoleBinding and
//! ClusterRoleBinding, written by kubectl's own verbs (`create role`, `create rolebinding`, ...,
//! which send protobuf bodies since 1.32), read back as upstream writes them, printed with
//! kubectl's columns, and refused in upstream's words when invalid; the same objects over the
//! typed gRPC service.

use kubestore_proto::{
    meta::v1::ObjectMeta,
    rbac::v1::{CreateRoleRequest, PolicyRule, Role, roles_client::RolesClient},
};
use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    services::channel,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_creates_and_reads_roles_and_bindings() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let m = v.minor();
        let role = format!("pod-reader-{m}");
        c.kubectl(
            v,
            &[
                "create",
                "role",
                &role,
                "--verb=get,list",
                "--verb=watch",
                "--resource=pods",
                "--resource=pods/status",
            ],
        )
        .run()
        .ok();
        let r = c
            .kubectl(v, &["get", "role", &role, "-o", "json"])
            .run()
            .ok();
        let got: Value = serde_json::from_str(r.out()).expect("JSON");
        assert_eq!(got["apiVersion"], "rbac.authorization.k8s.io/v1", "{r}");
        assert_eq!(got["kind"], "Role");
        assert_eq!(
            got["rules"],
            json!([{"apiGroups": [""], "resources": ["pods", "pods/status"],
                    "verbs": ["get", "list", "watch"]}]),
            "{r}"
        );
        let binding = format!("read-pods-{m}");
        c.kubectl(
            v,
            &[
                "create",
                "rolebinding",
                &binding,
                &format!("--role={role}"),
                "--user=alice",
                "--group=dev",
                "--serviceaccount=default:robot",
            ],
        )
        .run()
        .ok();
        let r = c
            .kubectl(v, &["get", "rolebinding", &binding, "-o", "wide"])
            .run()
            .ok();
        let row = r.out().lines().nth(1).unwrap_or_default().to_string();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells.first(), Some(&binding.as_str()), "{r}");
        assert_eq!(cells.get(1), Some(&format!("Role/{role}").as_str()), "{r}");
        assert!(row.ends_with("alice   dev      default/robot"), "{r}");
        let header = r.out().lines().next().unwrap_or_default();
        for column in ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"] {
            assert!(header.contains(column), "{r}");
        }
        let cluster_role = format!("secret-reader-{m}");
        c.kubectl(
            v,
            &[
                "create",
                "clusterrole",
                &cluster_role,
                "--verb=get",
                "--resource=secrets",
                "--resource-name=one",
            ],
        )
        .run()
        .ok();
        c.kubectl(
            v,
            &[
                "create",
                "clusterrolebinding",
                &format!("{cluster_role}-bob"),
                &format!("--clusterrole={cluster_role}"),
                "--user=bob",
            ],
        )
        .run()
        .ok();
        let r = c.kubectl(v, &["get", "clusterroles"]).run().ok();
        assert!(r.out().contains("CREATED AT"), "{r}");
        assert!(r.out().contains(&cluster_role), "{r}");
        let r = c
            .kubectl(
                v,
                &[
                    "get",
                    "clusterrolebinding",
                    &format!("{cluster_role}-bob"),
                    "-o",
                    "json",
                ],
            )
            .run()
            .ok();
        let got: Value = serde_json::from_str(r.out()).expect("JSON");
        assert_eq!(
            got["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                   "name": cluster_role}),
            "{r}"
        );
        assert_eq!(
            got["subjects"],
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]),
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_rbac_objects_are_refused_in_upstreams_words() {
    let c = KubeCluster::start().await;
    let bad_binding = c.file(
        "bad-binding.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: bad\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Secret\n  name: x\n\
         subjects:\n- kind: Robot\n  name: r2\n",
    );
    let r = c
        .k(&["create", "-f", bad_binding.to_str().expect("path")])
        .run()
        .fails();
    for want in [
        "The RoleBinding \"bad\" is invalid",
        "roleRef.kind: Unsupported value: \"Secret\": supported values: \"Role\", \"ClusterRole\"",
        "subjects[0].kind: Unsupported value: \"Robot\"",
    ] {
        assert!(r.err().contains(want), "{want}: {r}");
    }
    let namespaced_url = c.file(
        "bad-role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: urls\n\
         rules:\n- verbs: [get]\n  nonResourceURLs: [\"/healthz\"]\n",
    );
    let r = c
        .k(&["create", "-f", namespaced_url.to_str().expect("path")])
        .run()
        .fails();
    assert!(
        r.err()
            .contains("rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs"),
        "{r}"
    );
    // A binding's roleRef never changes.
    c.k(&[
        "create",
        "rolebinding",
        "fixed",
        "--clusterrole=view",
        "--user=alice",
    ])
    .run()
    .ok();
    let r = c
        .k(&[
            "patch",
            "rolebinding",
            "fixed",
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"edit"}}"#,
        ])
        .run()
        .fails();
    assert!(r.err().contains("roleRef: Invalid value"), "{r}");
    assert!(r.err().contains("cannot change roleRef"), "{r}");
    // RBAC names are path segments: `system:` names are valid, `a/b` is not.
    c.k(&[
        "create",
        "clusterrole",
        "system:kubestore:test",
        "--verb=get",
        "--resource=pods",
    ])
    .run()
    .ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typed_grpc_service_serves_the_same_roles() {
    let c = KubeCluster::start().await;
    let mut roles = RolesClient::new(channel(&c.registry_url()).await);
    let created = roles
        .create(CreateRoleRequest {
            namespace: "default".into(),
            role: Some(Role {
                metadata: Some(ObjectMeta {
                    name: "cm-editor".into(),
                    ..Default::default()
                }),
                rules: vec![PolicyRule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["".into()],
                    resources: vec!["configmaps".into()],
                    ..Default::default()
                }],
            }),
            dry_run: false,
        })
        .await
        .expect("created")
        .into_inner();
    assert!(!created.metadata.expect("metadata").uid.is_empty());
    let r = c
        .k(&[
            "get",
            "role",
            "cm-editor",
            "-o",
            "jsonpath={.rules[0].resources[0]}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "configmaps");
}
