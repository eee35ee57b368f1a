//! ResourceQuota (issue 33): the controller-manager keeps `status` (hard as the spec says, used
//! as the namespace holds); admission charges every create before it is stored, so 50
//! concurrent creates against `count/configmaps: 10` leave exactly 10, and the others are
//! refused in upstream's words (403 `exceeded quota: ...`, kubectl's `Error from server
//! (Forbidden)`); a delete is released at once (the controller watches what quotas count, its
//! resync an hour away in that test); pods' compute
//! (`requests.cpu`, `limits.memory`) is charged too; a dry run is checked, not charged.

use std::time::Duration;

use kubestore_tests::{
    fixtures_gc::Manager,
    kube::{KubeCluster, Kubectl},
    rest::{JSON, Reply, assert_status, call, wait_until},
};
use serde_json::{Value, json};

async fn post(c: &KubeCluster, path: &str, body: &Value) -> Reply {
    call(c.api, "POST", path, &[JSON], body.to_string().as_bytes()).await
}

async fn get(c: &KubeCluster, path: &str) -> Value {
    call(c.api, "GET", path, &[], b"").await.is(200).json()
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// Waits until quota `name` in `ns` says `used` for `key`.
async fn used(c: &KubeCluster, ns: &str, name: &str, key: &str, want: &str) {
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas/{name}");
    wait_until(
        Duration::from_secs(20),
        &format!("{key} used {want}"),
        || async { get(c, &path).await["status"]["used"][key] == want },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_creates_never_overshoot_and_deletes_are_released() {
    let c = KubeCluster::start().await;
    let _manager = Manager::start(&c.registry_url(), "quota-test", Duration::from_secs(2), 2).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    post(&c, "/api/v1/namespaces", &ns).await.is(201);
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
                       "metadata": {"name": "objects"},
                       "spec": {"hard": {"count/configmaps": "10", "pods": "2",
                                         "requests.cpu": "1", "limits.memory": "1Gi"}}});
    post(&c, "/api/v1/namespaces/team/resourcequotas", &quota)
        .await
        .is(201);
    // The controller writes the status: hard from the spec, nothing used yet.
    used(&c, "team", "objects", "count/configmaps", "0").await;
    let q = get(&c, "/api/v1/namespaces/team/resourcequotas/objects").await;
    assert_eq!(q["status"]["hard"]["count/configmaps"], "10", "{q}");
    assert_eq!(q["status"]["used"]["requests.cpu"], "0", "{q}");

    // 50 at once: exactly 10 are created.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let api = c.api;
        tasks.spawn(async move {
            let body = config_map(&format!("cm-{i}")).to_string();
            call(
                api,
                "POST",
                "/api/v1/namespaces/team/configmaps",
                &[JSON],
                body.as_bytes(),
            )
            .await
        });
    }
    let mut created = 0;
    let mut refused = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let r = r.expect("task");
        match r.code {
            201 => created += 1,
            _ => refused.push(r),
        }
    }
    assert_eq!(created, 10, "exactly the quota");
    let list = get(&c, "/api/v1/namespaces/team/configmaps").await;
    let stored = list["items"].as_array().map_or(0, Vec::len);
    assert_eq!(stored, 10, "what is stored is what was created");
    for r in &refused {
        let status = assert_status(r, 403, "Forbidden");
        let message = status["message"].as_str().expect("message");
        assert!(
            message.ends_with(
                "is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=10, limited: count/configmaps=10"
            ),
            "{message}"
        );
    }
    let q = get(&c, "/api/v1/namespaces/team/resourcequotas/objects").await;
    assert_eq!(q["status"]["used"]["count/configmaps"], "10", "{q}");

    // kubectl prints the refusal as upstream's server makes it.
    let manifest = c.file("cm.json", &config_map("kubectl").to_string());
    let manifest = manifest.to_str().expect("path");
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let out = c
            .kubectl(v, &["create", "-n", "team", "-f", manifest])
            .run()
            .fails();
        assert!(
            out.err().contains(&format!(
                "Error from server (Forbidden): error when creating \"{manifest}\": configmaps \"kubectl\" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=10, limited: count/configmaps=10"
            )),
            "{out}"
        );
    }

    // A delete is released at the controller's next pass; then one more fits.
    let any = list["items"][0]["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    call(
        c.api,
        "DELETE",
        &format!("/api/v1/namespaces/team/configmaps/{any}"),
        &[],
        b"",
    )
    .await
    .is(200);
    used(&c, "team", "objects", "count/configmaps", "9").await;
    post(
        &c,
        "/api/v1/namespaces/team/configmaps",
        &config_map("again"),
    )
    .await
    .is(201);

    // Pods: a count and their compute; a dry run is checked but not charged.
    let pod = |name: &str, cpu: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                   "resources": {"requests": {"cpu": cpu}, "limits": {"memory": "256Mi"}}}]}})
    };
    post(
        &c,
        "/api/v1/namespaces/team/pods?dryRun=All",
        &pod("dry", "600m"),
    )
    .await
    .is(201);
    post(&c, "/api/v1/namespaces/team/pods", &pod("a", "600m"))
        .await
        .is(201);
    let q = get(&c, "/api/v1/namespaces/team/resourcequotas/objects").await;
    assert_eq!(q["status"]["used"]["requests.cpu"], "600m", "{q}");
    assert_eq!(q["status"]["used"]["limits.memory"], "256Mi", "{q}");
    assert_eq!(
        q["status"]["used"]["pods"], "1",
        "the dry run was not charged: {q}"
    );
    let r = post(&c, "/api/v1/namespaces/team/pods", &pod("b", "600m")).await;
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        status["message"],
        "pods \"b\" is forbidden: exceeded quota: objects, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    // Another namespace is not limited.
    post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        &config_map("free"),
    )
    .await
    .is(201);
    // kubectl's own generator (a protobuf body) and its table.
    for (v, name) in [(Kubectl::V1_33, "k133"), (Kubectl::V1_37, "k137")] {
        c.kubectl(
            v,
            &[
                "create",
                "quota",
                name,
                "-n",
                "team",
                "--hard=count/secrets=3,pods=5",
            ],
        )
        .run()
        .ok();
        let q = get(
            &c,
            &format!("/api/v1/namespaces/team/resourcequotas/{name}"),
        )
        .await;
        assert_eq!(
            q["spec"]["hard"],
            json!({"count/secrets": "3", "pods": "5"}),
            "{q}"
        );
    }
    used(&c, "team", "k133", "pods", "1").await;
    let out = c
        .kubectl(Kubectl::V1_33, &["get", "quota", "k133", "-n", "team"])
        .run()
        .ok();
    let table = out.out();
    assert!(
        table.starts_with("NAME   AGE   REQUEST")
            && table.contains("count/secrets: 0/3, pods: 1/5"),
        "{out}"
    );
    // An invalid quota is refused with the field.
    let bad = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"},
                     "spec": {"hard": {"count/configmaps": "-1"}}});
    let r = post(&c, "/api/v1/namespaces/team/resourcequotas", &bad).await;
    let status = assert_status(&r, 422, "Invalid");
    assert_eq!(
        status["details"]["causes"][0]["field"], "spec.hard[count/configmaps]",
        "{status}"
    );
}

/// Replenishment: with the controller's resync an hour away, a deleted ConfigMap's charge and a
/// pod's that turned Succeeded are released within moments (the controller watches what its
/// quotas count), and the freed room can be used again.
#[tokio::test(flavor = "multi_thread")]
async fn deletes_and_finished_pods_are_released_without_waiting_for_the_resync() {
    let c = KubeCluster::start().await;
    let _manager = Manager::start_with(
        &c.registry_url(),
        "quota-replenish",
        Duration::from_secs(2),
        2,
        |config| config.quota.resync = Duration::from_secs(3600),
    )
    .await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    post(&c, "/api/v1/namespaces", &ns).await.is(201);
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
                       "metadata": {"name": "small"},
                       "spec": {"hard": {"count/configmaps": "2", "pods": "1"}}});
    post(&c, "/api/v1/namespaces/team/resourcequotas", &quota)
        .await
        .is(201);
    used(&c, "team", "small", "count/configmaps", "0").await;
    let cms = "/api/v1/namespaces/team/configmaps";
    for name in ["a", "b"] {
        post(&c, cms, &config_map(name)).await.is(201);
    }
    post(&c, cms, &config_map("c")).await.is(403);
    call(c.api, "DELETE", &format!("{cms}/a"), &[], b"")
        .await
        .is(200);
    used(&c, "team", "small", "count/configmaps", "1").await;
    post(&c, cms, &config_map("c")).await.is(201);

    // A pod that finished no longer counts.
    let pods = "/api/v1/namespaces/team/pods";
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
    };
    post(&c, pods, &pod("job")).await.is(201);
    post(&c, pods, &pod("next")).await.is(403);
    let mut done = get(&c, &format!("{pods}/job")).await;
    done["status"] = json!({"phase": "Succeeded"});
    call(
        c.api,
        "PUT",
        &format!("{pods}/job/status"),
        &[JSON],
        done.to_string().as_bytes(),
    )
    .await
    .is(200);
    used(&c, "team", "small", "pods", "0").await;
    post(&c, pods, &pod("next")).await.is(201);
}
