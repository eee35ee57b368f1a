//! Server-side apply and managed fields, as kube-apiserver answers them (issue 34), against a
//! real etcd, storage-svc and registry-svc, with real clients:
//!
//! - kubectl 1.29, 1.33 and 1.37: `apply --server-side` (created, unchanged without a write,
//!   `--field-manager`, `--force-conflicts`, `--dry-run=server`), conflicts in upstream's words,
//!   `get -o yaml` hiding managed fields unless `--show-managed-fields`, `diff`, and the
//!   upgrade from client-side apply;
//! - the REST API spoken by hand: managed fields on every write (manager from `fieldManager` or
//!   the User-Agent, Update entries merged, a no-op leaving the resourceVersion, a reset, the
//!   cap on update managers), apply's 409 with `FieldManagerConflict` causes, `fieldManager`
//!   required, create on apply, removal of what an applier stopped sending, shared ownership,
//!   lists merged by their keys (a Pod's containers, a custom kind's `x-kubernetes-list-type`);
//! - the same apply over gRPC's Apply.
//!
//! Tests named `upstream_*` follow kube-apiserver's `test/integration/apiserver/apply` cases of
//! the same name, for the kinds kubestore serves.

use std::net::SocketAddr;

use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    rest::{JSON, Reply, call},
    services::wait_system_namespaces,
};
use serde_json::{Value, json};

const APPLY: (&str, &str) = ("Content-Type", "application/apply-patch+yaml");
const MERGE: (&str, &str) = ("Content-Type", "application/merge-patch+json");
const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

async fn apply(api: SocketAddr, path: &str, manager: &str, force: bool, body: &str) -> Reply {
    let q = if force { "&force=true" } else { "" };
    call(
        api,
        "PATCH",
        &format!("{path}?fieldManager={manager}{q}"),
        &[APPLY],
        body.as_bytes(),
    )
    .await
}

/// The managed fields of `obj` as (manager, operation, fieldsV1) triples, in their order.
fn managers(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_string(),
                        e["operation"].as_str().unwrap_or("").to_string(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn config_map(name: &str, data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
        .to_string()
}

/// Upstream's `TestApplyManagedFields`, `TestNoOpUpdateSameResourceVersion` and
/// `TestClearManagedFieldsWithMergePatch`, for writes that are not applies.
#[tokio::test(flavor = "multi_thread")]
async fn upstream_managed_fields_on_every_write_no_op_and_clear() {
    let kube = started().await;
    let api = kube.api;
    // A create by a client naming no manager: the User-Agent's product is the manager.
    let created = call(
        api,
        "POST",
        CMS,
        &[JSON, ("User-Agent", "deployer/2.1 (linux/amd64)")],
        config_map("cm", json!({"a": "1"})).as_bytes(),
    )
    .await
    .is(201)
    .json();
    let entries = created["metadata"]["managedFields"]
        .as_array()
        .expect("entries");
    assert_eq!(entries.len(), 1, "{created}");
    let e = &entries[0];
    assert_eq!(e["manager"], "deployer");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
    assert_eq!(e["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
    assert!(e.get("subresource").is_none(), "{e}");

    // A merge patch by another manager: its field is its own, the first keeps the rest.
    let patched = call(
        api,
        "PATCH",
        &format!("{CMS}/cm?fieldManager=patcher"),
        &[MERGE],
        br#"{"data":{"b":"2"}}"#,
    )
    .await
    .is(200)
    .json();
    let m = managers(&patched);
    assert_eq!(m.len(), 2, "{patched}");
    assert_eq!(m[0].0, "deployer");
    assert_eq!(
        m[1],
        (
            "patcher".into(),
            "Update".into(),
            json!({"f:data": {"f:b": {}}})
        )
    );

    // The first manager changes `b`: it takes it from the patcher, whose entry goes; its own
    // entry is one, merged.
    let rv = patched["metadata"]["resourceVersion"].clone();
    let updated = call(
        api,
        "PATCH",
        &format!("{CMS}/cm?fieldManager=deployer"),
        &[MERGE],
        br#"{"data":{"b":"3"}}"#,
    )
    .await
    .is(200)
    .json();
    assert_eq!(
        managers(&updated),
        vec![(
            "deployer".into(),
            "Update".into(),
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        )],
        "{updated}"
    );
    assert_ne!(updated["metadata"]["resourceVersion"], rv);

    // A write that changes nothing changes no time and writes nothing.
    let rv = updated["metadata"]["resourceVersion"].clone();
    let same = call(
        api,
        "PATCH",
        &format!("{CMS}/cm?fieldManager=someone-else"),
        &[MERGE],
        br#"{"data":{"b":"3"}}"#,
    )
    .await
    .is(200)
    .json();
    assert_eq!(same["metadata"]["resourceVersion"], rv, "{same}");
    assert_eq!(
        same["metadata"]["managedFields"],
        updated["metadata"]["managedFields"]
    );

    // A client that clears them (upstream's documented reset: one empty entry) leaves none.
    let reset = call(
        api,
        "PATCH",
        &format!("{CMS}/cm"),
        &[MERGE],
        br#"{"metadata":{"managedFields":[{}]}}"#,
    )
    .await
    .is(200)
    .json();
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
}

/// Upstream's `TestApplyGroupsManySeparateUpdates`: eleven update managers keep ten entries,
/// the oldest merged into `ancient-changes`.
#[tokio::test(flavor = "multi_thread")]
async fn upstream_apply_groups_many_separate_updates() {
    let kube = started().await;
    let api = kube.api;
    // Created with a field of its own: an object created with none keeps no entries until it
    // is applied (upstream's `skipNonApplied`).
    call(
        api,
        "POST",
        CMS,
        &[JSON],
        config_map("cm", json!({"seed": "x"})).as_bytes(),
    )
    .await
    .is(201);
    let mut last = Value::Null;
    for i in 0..12 {
        last = call(
            api,
            "PATCH",
            &format!("{CMS}/cm?fieldManager=m{i:02}"),
            &[MERGE],
            json!({"data": {format!("k{i}"): "v"}})
                .to_string()
                .as_bytes(),
        )
        .await
        .is(200)
        .json();
    }
    let m = managers(&last);
    assert_eq!(m.len(), 10, "{last}");
    assert!(m.iter().any(|(n, _, _)| n == "ancient-changes"), "{last}");
    assert!(m.iter().any(|(n, _, _)| n == "m11"), "{last}");
}

/// Upstream's `TestApplyAlsoCreates` and `TestApplyUpdateApplyConflictForced`.
#[tokio::test(flavor = "multi_thread")]
async fn upstream_apply_update_apply_conflict_forced() {
    let kube = started().await;
    let api = kube.api;
    // Create on apply.
    let r = apply(
        api,
        &format!("{CMS}/cm"),
        "applier",
        false,
        &config_map("cm", json!({"key": "a"})),
    )
    .await;
    let created = r.is(201).json();
    assert_eq!(
        managers(&created),
        vec![(
            "applier".into(),
            "Apply".into(),
            json!({"f:data": {"f:key": {}}})
        )]
    );
    // Another writer changes the key by an update.
    call(
        api,
        "PATCH",
        &format!("{CMS}/cm?fieldManager=kubectl-client-side-apply"),
        &[MERGE],
        br#"{"data":{"key":"b"}}"#,
    )
    .await
    .is(200);
    // The applier sends its value again: a conflict, in upstream's words and causes.
    let r = apply(
        api,
        &format!("{CMS}/cm"),
        "applier",
        false,
        &config_map("cm", json!({"key": "a"})),
    )
    .await;
    let status = r.is(409).json();
    assert_eq!(status["reason"], "Conflict", "{status}");
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict",
            "message": "conflict with \"kubectl-client-side-apply\" using v1",
            "field": ".data.key"}])
    );
    // Forced, the applier takes the field.
    let forced = apply(
        api,
        &format!("{CMS}/cm"),
        "applier",
        true,
        &config_map("cm", json!({"key": "a"})),
    )
    .await
    .is(200)
    .json();
    assert_eq!(forced["data"]["key"], "a");
    assert_eq!(
        managers(&forced),
        vec![(
            "applier".into(),
            "Apply".into(),
            json!({"f:data": {"f:key": {}}})
        )],
        "{forced}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_apply_removes_what_an_applier_stopped_sending_unless_shared() {
    let kube = started().await;
    let api = kube.api;
    let at = format!("{CMS}/cm");
    apply(
        api,
        &at,
        "one",
        false,
        &config_map("cm", json!({"a": "1", "b": "2", "c": "3"})),
    )
    .await
    .is(201);
    // A second applier sends `c` with the same value: shared, no conflict.
    let shared = apply(api, &at, "two", false, &config_map("cm", json!({"c": "3"})))
        .await
        .is(200)
        .json();
    assert_eq!(managers(&shared).len(), 2, "{shared}");
    // The first stops sending `b` and `c`: `b` goes, `c` stays (the second owns it).
    let after = apply(api, &at, "one", false, &config_map("cm", json!({"a": "1"})))
        .await
        .is(200)
        .json();
    assert_eq!(after["data"], json!({"a": "1", "c": "3"}), "{after}");
    // Applying the same again changes nothing and writes nothing.
    let rv = after["metadata"]["resourceVersion"].clone();
    let again = apply(api, &at, "one", false, &config_map("cm", json!({"a": "1"})))
        .await
        .is(200)
        .json();
    assert_eq!(again["metadata"]["resourceVersion"], rv, "{again}");
}

/// Upstream's `TestApplyRequiresFieldManager` and `TestApplyFailsWithVersionMismatch`, and a
/// value of the wrong type.
#[tokio::test(flavor = "multi_thread")]
async fn upstream_apply_requires_field_manager_and_fails_with_version_mismatch() {
    let kube = started().await;
    let api = kube.api;
    let body = config_map("cm", json!({"a": "1"}));
    let r = call(
        api,
        "PATCH",
        &format!("{CMS}/cm"),
        &[APPLY],
        body.as_bytes(),
    )
    .await;
    let status = r.is(422).json();
    assert!(
        status["message"].as_str().is_some_and(
            |m| m == "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        ),
        "{status}"
    );
    let wrong =
        json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "cm"}}).to_string();
    let status = apply(api, &format!("{CMS}/cm"), "m", false, &wrong)
        .await
        .is(400)
        .json();
    assert_eq!(
        status["message"],
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    // A value of the wrong type: 422 naming the field.
    let typed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": 1}}).to_string();
    let status = apply(api, &format!("{CMS}/cm"), "m", false, &typed)
        .await
        .is(422)
        .json();
    assert_eq!(
        status["details"]["causes"][0]["field"], "data.a",
        "{status}"
    );
    // `force` belongs to apply.
    let r = call(
        api,
        "PATCH",
        &format!("{CMS}/cm?force=true"),
        &[MERGE],
        b"{}",
    )
    .await;
    r.is(422);
    let r = call(api, "GET", &format!("{CMS}/cm"), &[], b"").await;
    r.is(404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pods_containers_merge_by_name_between_appliers() {
    let kube = started().await;
    let api = kube.api;
    let pods = "/api/v1/namespaces/default/pods/web";
    let both = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: main\n    image: nginx:1.27\n    ports:\n    - containerPort: 80\n  - name: sidecar\n    image: busybox:1.36\n";
    apply(api, pods, "team-a", false, both).await.is(201);
    // Team B sends one container's image: a conflict on that field alone, named by the
    // container's key.
    let sidecar = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: sidecar\n    image: busybox:1.37\n";
    let status = apply(api, pods, "team-b", false, sidecar)
        .await
        .is(409)
        .json();
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"team-a\": .spec.containers[name=\"sidecar\"].image",
        "{status}"
    );
    // Forced: team B owns that image, the list is merged by name (both containers stay).
    let pod = apply(api, pods, "team-b", true, sidecar)
        .await
        .is(200)
        .json();
    let images: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["image"].as_str())
        .collect();
    assert_eq!(images, ["nginx:1.27", "busybox:1.37"], "{pod}");
    let m = managers(&pod);
    let b = m.iter().find(|(n, _, _)| n == "team-b").expect("team-b");
    assert_eq!(
        b.2,
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}}}}),
        "{pod}"
    );
    let a = m.iter().find(|(n, _, _)| n == "team-a").expect("team-a");
    let a_containers = &a.2["f:spec"]["f:containers"];
    assert!(
        a_containers["k:{\"name\":\"main\"}"]["f:ports"]
            .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
            .is_some(),
        "{pod}"
    );
    assert!(
        a_containers["k:{\"name\":\"sidecar\"}"]
            .get("f:image")
            .is_none(),
        "{pod}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_server_side() {
    let kube = started().await;
    for (i, v) in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37]
        .into_iter()
        .enumerate()
    {
        let name = format!("ssa-{i}");
        let manifest = kube.file(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: one\n"
            ),
        );
        let r = kube
            .kubectl(v, &["apply", "--server-side", "-f", path(&manifest)])
            .run()
            .ok();
        assert_eq!(
            r.out(),
            format!("configmap/{name} serverside-applied"),
            "{r}"
        );
        assert!(
            r.requested(&[
                "PATCH",
                &format!("/api/v1/namespaces/default/configmaps/{name}?fieldManager=kubectl"),
                "201"
            ]),
            "{r}"
        );
        let rv = kube
            .kubectl(
                v,
                &[
                    "get",
                    "cm",
                    &name,
                    "-o",
                    "jsonpath={.metadata.resourceVersion}",
                ],
            )
            .run()
            .ok()
            .out()
            .to_string();
        // Applied again: unchanged, nothing written.
        kube.kubectl(v, &["apply", "--server-side", "-f", path(&manifest)])
            .run()
            .ok();
        let again = kube
            .kubectl(
                v,
                &[
                    "get",
                    "cm",
                    &name,
                    "-o",
                    "jsonpath={.metadata.resourceVersion}",
                ],
            )
            .run()
            .ok()
            .out()
            .to_string();
        assert_eq!(rv, again);
        // `get -o yaml` hides managed fields; `--show-managed-fields` shows them.
        let yaml = kube
            .kubectl(v, &["get", "cm", &name, "-o", "yaml"])
            .run()
            .ok();
        assert!(!yaml.out().contains("managedFields"), "{yaml}");
        let yaml = kube
            .kubectl(
                v,
                &["get", "cm", &name, "-o", "yaml", "--show-managed-fields"],
            )
            .run()
            .ok();
        assert!(yaml.out().contains("manager: kubectl"), "{yaml}");
        assert!(yaml.out().contains("operation: Apply"), "{yaml}");
        assert!(yaml.out().contains("f:key: {}"), "{yaml}");

        // Another manager changes the key; kubectl's apply conflicts, then forces.
        kube.kubectl(
            v,
            &["patch", "cm", &name, "-p", r#"{"data":{"key":"two"}}"#],
        )
        .run()
        .ok();
        let r = kube
            .kubectl(v, &["apply", "--server-side", "-f", path(&manifest)])
            .run()
            .fails();
        assert!(
            r.err()
                .contains("conflict with \"kubectl-patch\" using v1: .data.key"),
            "{r}"
        );
        let r = kube
            .kubectl(
                v,
                &[
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "-f",
                    path(&manifest),
                ],
            )
            .run()
            .ok();
        assert_eq!(
            r.out(),
            format!("configmap/{name} serverside-applied"),
            "{r}"
        );
        let value = kube
            .kubectl(v, &["get", "cm", &name, "-o", "jsonpath={.data.key}"])
            .run()
            .ok()
            .out()
            .to_string();
        assert_eq!(value, "one");

        // A dry run changes nothing.
        let changed = kube.file(
            &format!("{name}-2.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: three\n"
            ),
        );
        let r = kube
            .kubectl(
                v,
                &[
                    "apply",
                    "--server-side",
                    "--dry-run=server",
                    "-f",
                    path(&changed),
                ],
            )
            .run()
            .ok();
        assert_eq!(
            r.out(),
            format!("configmap/{name} serverside-applied (server dry run)"),
            "{r}"
        );
        let value = kube
            .kubectl(v, &["get", "cm", &name, "-o", "jsonpath={.data.key}"])
            .run()
            .ok()
            .out()
            .to_string();
        assert_eq!(value, "one");
        // `diff` shows what an apply would change.
        let r = kube
            .kubectl(v, &["diff", "--server-side", "-f", path(&changed)])
            .run();
        assert!(
            r.out().contains("-  key: one") && r.out().contains("+  key: three"),
            "{r}"
        );
        // `--field-manager` names the applier.
        kube.kubectl(
            v,
            &[
                "apply",
                "--server-side",
                "--field-manager=pipeline",
                "--force-conflicts",
                "-f",
                path(&changed),
            ],
        )
        .run()
        .ok();
        let managers = kube
            .kubectl(
                v,
                &[
                    "get",
                    "cm",
                    &name,
                    "-o",
                    "jsonpath={.metadata.managedFields[*].manager}",
                ],
            )
            .run()
            .ok()
            .out()
            .to_string();
        assert!(managers.split(' ').any(|m| m == "pipeline"), "{managers}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_upgrades_client_side_apply() {
    let kube = started().await;
    let one = kube.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\ndata:\n  key: one\n",
    );
    kube.k(&["apply", "-f", path(&one)]).run().ok();
    let two = kube.file(
        "cm2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\ndata:\n  key: two\n",
    );
    // The fields client-side apply set are kubectl's to change server-side: no conflict.
    let r = kube
        .k(&["apply", "--server-side", "-f", path(&two)])
        .run()
        .ok();
    assert_eq!(r.out(), "configmap/csa serverside-applied", "{r}");
    let got = kube
        .k(&["get", "cm", "csa", "-o", "json"])
        .run()
        .ok()
        .out()
        .to_string();
    let got: Value = serde_json::from_str(&got).expect("json");
    assert_eq!(got["data"]["key"], "two");
    // The annotation follows what was applied.
    let last = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("annotation");
    let last: Value = serde_json::from_str(last).expect("json");
    assert_eq!(last["data"]["key"], "two");
}

/// A definition whose `spec.routes` is a list keyed by `name`, `spec.tags` a set and
/// `spec.selector` an atomic map.
const ROUTES_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {plural: routes, singular: route, kind: Route}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              routes:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    weight: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_kinds_lists_merge_as_its_schema_says() {
    let kube = started().await;
    let api = kube.api;
    let crd = kube.file("routes.yaml", ROUTES_CRD);
    kube.k(&["apply", "-f", path(&crd)]).run().ok();
    kube.k(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/routes.net.example.com",
    ])
    .run()
    .ok();
    let at = "/apis/net.example.com/v1/namespaces/default/routes/r";
    let one = "apiVersion: net.example.com/v1\nkind: Route\nmetadata:\n  name: r\nspec:\n  routes:\n  - {name: a, weight: 1}\n  tags: [x]\n  selector: {app: web}\n";
    let mut created = None;
    for _ in 0..50 {
        let r = apply(api, at, "one", false, one).await;
        if r.code == 201 {
            created = Some(r.json());
            break;
        }
        // The kind is served a moment after it is Established.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let created = created.expect("created by apply");
    assert_eq!(
        managers(&created),
        vec![(
            "one".into(),
            "Apply".into(),
            json!({"f:spec": {"f:routes": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:weight": {}}},
                "f:selector": {}, "f:tags": {"v:\"x\"": {}}}})
        )],
        "{created}"
    );
    // A second applier adds its own route and tag: merged by key and by value.
    let two = "apiVersion: net.example.com/v1\nkind: Route\nmetadata:\n  name: r\nspec:\n  routes:\n  - {name: b, weight: 2}\n  tags: [y]\n";
    let merged = apply(api, at, "two", false, two).await.is(200).json();
    assert_eq!(
        merged["spec"]["routes"],
        json!([{"name": "a", "weight": 1}, {"name": "b", "weight": 2}]),
        "{merged}"
    );
    assert_eq!(merged["spec"]["tags"], json!(["x", "y"]), "{merged}");
    // The atomic map is one field: another applier's different map conflicts as a whole.
    let three = "apiVersion: net.example.com/v1\nkind: Route\nmetadata:\n  name: r\nspec:\n  selector: {app: api}\n";
    let status = apply(api, at, "three", false, three).await.is(409).json();
    assert_eq!(
        status["message"], "Apply failed with 1 conflict: conflict with \"one\": .spec.selector",
        "{status}"
    );
    // The first applier drops its route: only `b` is left.
    let fewer = "apiVersion: net.example.com/v1\nkind: Route\nmetadata:\n  name: r\nspec:\n  tags: [x]\n  selector: {app: web}\n";
    let after = apply(api, at, "one", false, fewer).await.is(200).json();
    assert_eq!(
        after["spec"]["routes"],
        json!([{"name": "b", "weight": 2}]),
        "{after}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_apply_over_grpc_gives_the_same_managed_fields() {
    use kubestore_proto::registry::v1::{
        ApplyRequest, ResourceRef, WriteOptions, resources_client::ResourcesClient,
    };
    let kube = started().await;
    let api = kube.api;
    let rest = apply(
        api,
        &format!("{CMS}/rest"),
        "pipeline",
        false,
        &config_map("rest", json!({"k": "v"})),
    )
    .await
    .is(201)
    .json();
    let mut grpc =
        ResourcesClient::new(kubestore_tests::services::channel(&kube.registry_url()).await);
    let request = |name: &str, value: &str, manager: &str, force: bool| ApplyRequest {
        resource: Some(ResourceRef {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
        }),
        namespace: "default".into(),
        name: name.into(),
        subresource: String::new(),
        // YAML, as kubectl sends; JSON would do as well.
        config: format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: {value}\n"
        ),
        options: Some(WriteOptions {
            field_manager: manager.into(),
            force,
            ..Default::default()
        }),
    };
    let w = grpc
        .apply(request("grpc", "v", "pipeline", false))
        .await
        .expect("apply over gRPC")
        .into_inner();
    assert!(w.created);
    let obj: Value = serde_json::from_str(&w.json).expect("json");
    let strip = |o: &Value| {
        let mut e = o["metadata"]["managedFields"].clone();
        for entry in e.as_array_mut().expect("entries") {
            entry.as_object_mut().expect("entry").remove("time");
        }
        e
    };
    assert_eq!(strip(&obj), strip(&rest), "{obj}");
    // A conflict is ABORTED, reason Conflict, upstream's message.
    call(
        api,
        "PATCH",
        &format!("{CMS}/grpc?fieldManager=editor"),
        &[MERGE],
        br#"{"data":{"k":"edited"}}"#,
    )
    .await
    .is(200);
    let e = grpc
        .apply(request("grpc", "v", "pipeline", false))
        .await
        .expect_err("a conflict");
    assert_eq!(e.code(), tonic::Code::Aborted, "{e:?}");
    assert_eq!(
        e.message(),
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.k"
    );
    let w = grpc
        .apply(request("grpc", "v", "pipeline", true))
        .await
        .expect("forced")
        .into_inner();
    let obj: Value = serde_json::from_str(&w.json).expect("json");
    assert_eq!(obj["data"]["k"], "v");
    // No field manager: refused.
    let e = grpc
        .apply(request("grpc", "v", "", false))
        .await
        .expect_err("no manager");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
}

/// An apply that would create the object needs `create`, as upstream's patch handler asks:
/// a user who may only patch gets a 403, and may apply to an object that exists.
#[tokio::test(flavor = "multi_thread")]
async fn creating_by_apply_needs_create_permission() {
    use kubestore_tests::fixtures_rbac::{ALICE, admin, cluster, until_alice};
    let c = cluster().await;
    admin(
        &c,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "cm-patcher"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                          "verbs": ["get", "patch"]}]}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "alice-patches"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-patcher"}}),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        CMS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "there"}}),
    )
    .await
    .is(201);
    until_alice(&c, "GET", &format!("{CMS}/there"), "", 200).await;
    let as_alice = |name: &str| {
        let api = c.api;
        let path = format!("{CMS}/{name}?fieldManager=alice");
        let body = config_map(name, json!({"k": "v"}));
        async move { call(api, "PATCH", &path, &[APPLY, ALICE], body.as_bytes()).await }
    };
    let r = as_alice("new").await;
    let status = r.is(403).json();
    assert_eq!(
        status["message"],
        "configmaps \"new\" is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\"",
        "{status}"
    );
    let r = call(c.api, "GET", &format!("{CMS}/new"), &[], b"").await;
    r.is(404);
    as_alice("there").await.is(200);
}

/// Objects written before managed fields were kept (or reset by a client) keep none until
/// they are applied; then what they hold belongs to `before-first-apply`, and an apply of
/// another value conflicts with it instead of taking it silently.
#[tokio::test(flavor = "multi_thread")]
async fn upstream_apply_to_an_object_without_managed_fields_conflicts_with_before_first_apply() {
    let kube = started().await;
    let api = kube.api;
    call(
        api,
        "POST",
        CMS,
        &[JSON],
        config_map("old", json!({"k": "1"})).as_bytes(),
    )
    .await
    .is(201);
    let reset = call(
        api,
        "PATCH",
        &format!("{CMS}/old"),
        &[MERGE],
        br#"{"metadata":{"managedFields":[{}]}}"#,
    )
    .await
    .is(200)
    .json();
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
    // An update keeps none.
    let updated = call(
        api,
        "PATCH",
        &format!("{CMS}/old?fieldManager=editor"),
        &[MERGE],
        br#"{"data":{"k":"2"}}"#,
    )
    .await
    .is(200)
    .json();
    assert!(
        updated["metadata"].get("managedFields").is_none(),
        "{updated}"
    );
    let status = apply(
        api,
        &format!("{CMS}/old"),
        "applier",
        false,
        &config_map("old", json!({"k": "3"})),
    )
    .await
    .is(409)
    .json();
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.k",
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_checks_the_kind_and_a_converted_version_says_where_to_apply() {
    let kube = started().await;
    let api = kube.api;
    let secret =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm"}}).to_string();
    let status = apply(api, &format!("{CMS}/cm"), "m", false, &secret)
        .await
        .is(400)
        .json();
    assert_eq!(
        status["message"], "invalid object type: /v1, Kind=Secret",
        "{status}"
    );
    let event = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: e\n";
    let r = apply(
        api,
        "/apis/events.k8s.io/v1/namespaces/default/events/e",
        "m",
        false,
        event,
    )
    .await;
    let status = r.is(415).json();
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("served in the version stored only")),
        "{status}"
    );
}
