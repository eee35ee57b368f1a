//! kubestore's own components under RBAC (issue 32): the node agent and the controller-manager
//! authenticate with their own tokens (`kubestore --token`) and hold only the bootstrap roles
//! meant for them (`system:kubestore:node-agent` for group `system:nodes`,
//! `system:kubestore:controller-manager` for user `system:kube-controller-manager`), and do
//! their work with them: the agent runs a pod, the controller-manager makes a namespace's
//! `default` account and empties a namespace being deleted. The CLI's `--as` impersonates.

use std::{process::Stdio, time::Duration};

use kubestore_tests::{
    fixtures_gc::Process,
    fixtures_rbac,
    kube::{KubeCluster, pod_yaml},
    rest::{JSON, call, wait_until},
};
use serde_json::json;

const TOKENS: &str = "agent-token,system:node:node-1,n1,system:nodes\n\
                      cm-token,system:kube-controller-manager,cm\n\
                      alice-token,alice,1001\n";

async fn cluster() -> KubeCluster {
    fixtures_rbac::with_tokens(TOKENS, ("Authorization", "Bearer alice-token")).await
}

/// `kubestore ARGS` against the cluster's registry-svc.
fn kubestore(c: &KubeCluster, args: &[&str]) -> std::process::Output {
    std::process::Command::new(kubestore_tests::kubestore_binary())
        .args(["--registry", &c.registry_url()])
        .args(args)
        .env_remove("KUBESTORE_TOKEN")
        .output()
        .expect("kubestore runs")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_runs_pods_with_the_node_agent_role_only() {
    let c = cluster().await;
    let mut agent = std::process::Command::new(kubestore_tests::kubestore_binary())
        .args(["--registry", &c.registry_url(), "--token", "agent-token"])
        .args(["agent", "--node", "node-1", "--stop-delay", "200ms"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("the agent starts");
    c.create("web.yaml", &pod_yaml("web", "node-1", &[("app", "web")]))
        .ok();
    let phase = || async {
        let r = call(
            c.api,
            "GET",
            "/api/v1/namespaces/default/pods/web",
            &[],
            b"",
        )
        .await;
        r.json()["status"]["phase"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    wait_until(
        Duration::from_secs(30),
        "the agent runs the pod",
        || async { phase().await == "Running" },
    )
    .await;
    // Its role lets it touch pods and events, nothing else.
    let out = kubestore(&c, &["--token", "agent-token", "get", "secrets"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(
            "secrets is forbidden: User \"system:node:node-1\" cannot list resource \"secrets\""
        ),
        "{err}"
    );
    // Deleted gracefully: the agent stops it and removes it, with its role.
    call(
        c.api,
        "DELETE",
        "/api/v1/namespaces/default/pods/web",
        &[JSON],
        b"{}",
    )
    .await;
    wait_until(
        Duration::from_secs(30),
        "the agent removes the pod",
        || async {
            call(
                c.api,
                "GET",
                "/api/v1/namespaces/default/pods/web",
                &[],
                b"",
            )
            .await
            .code
                == 404
        },
    )
    .await;
    let _ = agent.kill();
    let _ = agent.wait();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_controller_manager_works_with_its_own_role() {
    let c = cluster().await;
    let cm = Process::start_as(
        &c.registry_url(),
        "rbac-test",
        Duration::from_secs(2),
        2,
        Some("cm-token"),
    );
    cm.wait_leading(Duration::from_secs(30)).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}});
    call(
        c.api,
        "POST",
        "/api/v1/namespaces",
        &[JSON],
        ns.to_string().as_bytes(),
    )
    .await
    .is(201);
    wait_until(
        Duration::from_secs(30),
        "team-b's default account",
        || async {
            call(
                c.api,
                "GET",
                "/api/v1/namespaces/team-b/serviceaccounts/default",
                &[],
                b"",
            )
            .await
            .code
                == 200
        },
    )
    .await;
    let cmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    call(
        c.api,
        "POST",
        "/api/v1/namespaces/team-b/configmaps",
        &[JSON],
        cmap.to_string().as_bytes(),
    )
    .await
    .is(201);
    call(c.api, "DELETE", "/api/v1/namespaces/team-b", &[JSON], b"{}").await;
    wait_until(
        Duration::from_secs(30),
        "the namespace controller empties team-b",
        || async {
            call(c.api, "GET", "/api/v1/namespaces/team-b", &[], b"")
                .await
                .code
                == 404
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_impersonates_with_as() {
    let c = cluster().await;
    // The administrator (plain port: system:masters) may impersonate; alice's view is empty.
    let out = kubestore(&c, &["--as", "alice", "get", "configmaps"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\""),
        "{err}"
    );
    // alice may not impersonate.
    let out = kubestore(
        &c,
        &["--token", "alice-token", "--as", "bob", "get", "configmaps"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\""
        ),
        "{err}"
    );
    // Groups need a user, as upstream's.
    let out = kubestore(&c, &["--as-group", "dev", "get", "configmaps"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--as-group needs --as"), "{err}");
}
