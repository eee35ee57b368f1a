//! Server-side apply through real clients against the REST API (`PATCH` with
//! `application/apply-patch+yaml`, `fieldManager`, `force`), as a controller would use it:
//!
//! - kube-rs (`kube` 5 with `k8s-openapi`): a reconcile loop applying a ConfigMap derived from
//!   a source ConfigMap with `Patch::Apply` under `PatchParams::apply("my-controller")`:
//!   created, re-applied unchanged without a write (same resourceVersion), following the
//!   source, its `managedFields` entry (manager `my-controller`, operation `Apply`); a second
//!   writer's merge patch under its own field manager, the controller's next apply a 409
//!   Conflict naming that manager and the field, and `.force()` taking the field back;
//! - the official Python client's `DynamicClient.server_side_apply`: create (201), an
//!   unchanged re-apply, a conflict after another manager's merge patch
//!   (`ApiException(409)`), and `force_conflicts=True`;
//! - the official JavaScript client (`@kubernetes/client-node` 1.4.0):
//!   `CoreV1Api.patchNamespacedConfigMap` with `PatchStrategy.ServerSideApply`, `fieldManager`
//!   and `force` (the `apply` scenario of `tests/node/client.mjs`), the same steps.
//!
//! The Python script and the JavaScript scenario check as they go and print what they saw,
//! one line each; the lines are asserted here.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use kubestore_tests::kube::KubeCluster;
use serde_json::json;

fn client(c: &KubeCluster) -> Client {
    let config = kube::Config::new(c.url().parse().expect("cluster URL"));
    Client::try_from(config).expect("client")
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut m = ConfigMap::default();
    m.metadata.name = Some(name.into());
    m.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    m
}

fn data(m: &ConfigMap, key: &str) -> Option<String> {
    m.data.as_ref().and_then(|d| d.get(key)).cloned()
}

/// `(manager, operation)` of each managed fields entry, in their order.
fn managers(m: &ConfigMap) -> Vec<(String, String)> {
    m.managed_fields()
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

const CONTROLLER: &str = "my-controller";

/// One pass of the controller: reads `source`, applies `derived` from it (its `color`, and a
/// label naming the source), as its field manager.
async fn reconcile(api: &Api<ConfigMap>, force: bool) -> Result<ConfigMap, kube::Error> {
    let source = api.get("source").await?;
    let color = data(&source, "color").unwrap_or_default();
    let mut derived = cm("derived", &[("color", &color)]);
    derived.metadata.labels = Some(BTreeMap::from([("derived-from".into(), "source".into())]));
    let mut params = PatchParams::apply(CONTROLLER);
    if force {
        params = params.force();
    }
    api.patch("derived", &params, &Patch::Apply(&derived)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_patch_apply_in_a_reconcile_loop() {
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    api.create(&PostParams::default(), &cm("source", &[("color", "red")]))
        .await
        .expect("create the source");
    assert!(api.get_opt("derived").await.expect("get_opt").is_none());

    // The first pass creates the derived object.
    let created = reconcile(&api, false).await.expect("first apply");
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some(), "{created:?}");
    assert_eq!(data(&created, "color").as_deref(), Some("red"));
    assert_eq!(
        created.labels().get("derived-from").map(String::as_str),
        Some("source")
    );
    assert_eq!(
        managers(&created),
        [(CONTROLLER.to_string(), "Apply".to_string())]
    );
    let entry = &created.managed_fields()[0];
    assert_eq!(entry.api_version.as_deref(), Some("v1"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    assert!(entry.time.is_some(), "{entry:?}");
    let owned = serde_json::to_value(entry.fields_v1.as_ref().expect("fieldsV1")).expect("JSON");
    assert_eq!(owned["f:data"], json!({"f:color": {}}), "{owned}");
    assert_eq!(
        owned["f:metadata"]["f:labels"],
        json!({"f:derived-from": {}}),
        "{owned}"
    );
    let rv = created.resource_version().expect("a resourceVersion");
    let got = api.get("derived").await.expect("get");
    assert_eq!(got.uid(), created.uid());
    assert_eq!(got.resource_version().as_deref(), Some(rv.as_str()));

    // Nothing changed: the next passes write nothing.
    for _ in 0..2 {
        let again = reconcile(&api, false).await.expect("unchanged apply");
        assert_eq!(again.resource_version().as_deref(), Some(rv.as_str()));
        assert_eq!(
            managers(&again),
            [(CONTROLLER.to_string(), "Apply".to_string())]
        );
    }

    // The source changes: the next pass follows it.
    api.patch(
        "source",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"color": "green"}})),
    )
    .await
    .expect("change the source");
    let followed = reconcile(&api, false).await.expect("apply the change");
    assert_eq!(data(&followed, "color").as_deref(), Some("green"));
    assert_ne!(followed.resource_version(), Some(rv.clone()));
    let rv = followed.resource_version().expect("a resourceVersion");

    // A second writer takes the controller's field with a merge patch of its own.
    let other = PatchParams {
        field_manager: Some("other".into()),
        ..Default::default()
    };
    let changed = api
        .patch(
            "derived",
            &other,
            &Patch::Merge(json!({"data": {"color": "blue"}})),
        )
        .await
        .expect("the other writer's merge patch");
    assert_eq!(data(&changed, "color").as_deref(), Some("blue"));
    assert_ne!(changed.resource_version(), Some(rv.clone()));
    assert_eq!(
        managers(&changed),
        [
            (CONTROLLER.to_string(), "Apply".to_string()),
            ("other".to_string(), "Update".to_string()),
        ]
    );
    let rv = changed.resource_version().expect("a resourceVersion");

    // The controller's next pass conflicts with it, and changes nothing.
    let e = match reconcile(&api, false).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("a 409 Status expected, got {other:?}"),
    };
    assert!(e.is_conflict(), "{e:?}");
    assert_eq!(e.code, 409, "{e:?}");
    assert_eq!(e.reason, "Conflict", "{e:?}");
    assert!(e.message.contains(r#"conflict with "other""#), "{e:?}");
    assert_eq!(
        e.message,
        r#"Apply failed with 1 conflict: conflict with "other" using v1: .data.color"#
    );
    let causes = e
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert_eq!(causes.len(), 1, "{e:?}");
    assert_eq!(causes[0].message, r#"conflict with "other" using v1"#);
    assert_eq!(causes[0].field, ".data.color");
    let kept = api.get("derived").await.expect("get");
    assert_eq!(data(&kept, "color").as_deref(), Some("blue"));
    assert_eq!(kept.resource_version().as_deref(), Some(rv.as_str()));

    // Forced, the controller takes the field back; the other manager, left owning nothing,
    // is gone from managedFields.
    let forced = reconcile(&api, true).await.expect("forced apply");
    assert_eq!(data(&forced, "color").as_deref(), Some("green"));
    assert_ne!(forced.resource_version(), Some(rv.clone()));
    assert_eq!(
        managers(&forced),
        [(CONTROLLER.to_string(), "Apply".to_string())]
    );
    // Then unchanged again.
    let again = reconcile(&api, false).await.expect("unchanged apply");
    assert_eq!(again.resource_version(), forced.resource_version());

    // The cause's machine-readable type is `reason` in JSON (upstream's `StatusCause.Type` is
    // tagged `json:"reason,omitempty"`): kube-rs reads it as `StatusCause::reason`. Checked
    // last, so that the steps above are exercised whatever it reads.
    assert_eq!(causes[0].reason, "FieldManagerConflict", "{e:?}");
}

/// Server-side apply with the dynamic client, a conflict with another manager, and forcing.
const PY_APPLY: &str = r#"
import json
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException
config.load_kube_config()
dyn = dynamic.DynamicClient(client.ApiClient())
api = dyn.resources.get(api_version="v1", kind="ConfigMap")
body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py-applied"}, "data": {"key": "mine"}}
resp = api.server_side_apply(body=body, namespace="default", field_manager="py", serialize=False)
made = json.loads(resp.data)
rv = made["metadata"]["resourceVersion"]
print("created", resp.status, made["metadata"]["name"], made["data"],
      [(m["manager"], m["operation"]) for m in made["metadata"]["managedFields"]])
again = api.server_side_apply(body=body, namespace="default", field_manager="py")
print("unchanged", again.metadata.resourceVersion == rv, again.data.key)
theirs = api.patch(body={"metadata": {"name": "py-applied"}, "data": {"key": "theirs"}}, namespace="default",
                   field_manager="other", content_type="application/merge-patch+json")
print("patched", theirs.data.key, [(m.manager, m.operation) for m in theirs.metadata.managedFields])
try:
    api.server_side_apply(body=body, namespace="default", field_manager="py")
    print("conflict: none")
except ApiException as e:
    status = json.loads(e.body)
    print("conflict", e.status, status["reason"], status["message"])
    print("causes", [(c.get("reason"), c.get("field")) for c in status["details"]["causes"]])
print("kept", api.get(name="py-applied", namespace="default").data.key)
forced = api.server_side_apply(body=body, namespace="default", field_manager="py", force_conflicts=True)
print("forced", forced.data.key, [(m.manager, m.operation) for m in forced.metadata.managedFields])
"#;

#[tokio::test(flavor = "multi_thread")]
async fn python_dynamic_client_server_side_apply() {
    let c = KubeCluster::start().await;
    let r = c.python(PY_APPLY, &[]).run().ok();
    let lines: Vec<&str> = r.out().lines().collect();
    assert_eq!(
        lines,
        [
            "created 201 py-applied {'key': 'mine'} [('py', 'Apply')]",
            "unchanged True mine",
            // The update took the applier's only field: its entry, left empty, is gone (as
            // upstream's structured-merge-diff drops a manager owning nothing).
            "patched theirs [('other', 'Update')]",
            r#"conflict 409 Conflict Apply failed with 1 conflict: conflict with "other" using v1: .data.key"#,
            "causes [('FieldManagerConflict', '.data.key')]",
            "kept theirs",
            "forced mine [('py', 'Apply')]",
        ],
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_client_server_side_apply() {
    let c = KubeCluster::start().await;
    let (r, lines) = c.node_scenario("apply", &[]);
    assert_eq!(
        lines,
        [
            r#"created 201 js-applied {"key":"mine"} [["js","Apply","FieldsV1"]]"#,
            "unchanged 200 true",
            // The update took the applier's only field: its entry, left empty, is gone.
            r#"patched theirs [["other","Update"]]"#,
            r#"conflict 409 Conflict Apply failed with 1 conflict: conflict with "other" using v1: .data.key"#,
            r#"causes [["FieldManagerConflict",".data.key"]]"#,
            "kept theirs",
            r#"forced mine [["js","Apply"]]"#,
        ],
        "{r}"
    );
    // What the client left: the applier's value, owned by it alone.
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    let got = api.get("js-applied").await.expect("get");
    assert_eq!(data(&got, "key").as_deref(), Some("mine"));
    assert_eq!(managers(&got), [("js".to_string(), "Apply".to_string())]);
}
