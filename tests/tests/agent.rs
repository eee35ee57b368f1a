//! The node agent (`kubestore agent`) closes the graceful-deletion loop on its own, as a
//! kubelet does, through the public API only.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_cli::agent::{self, Action, AgentConfig};
use kubestore_proto::{
    core::v1::WatchPodsRequest,
    meta::v1::{ListOptions, WatchEventType},
};
use kubestore_tests::{Cluster, fixtures_registry::*};

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_starts_pods_and_finishes_their_graceful_deletion() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let actions = Arc::new(Mutex::new(Vec::new()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let seen = actions.clone();
    let running = tokio::spawn(agent::run(
        ch,
        AgentConfig {
            node: "node-1".into(),
            stop_delay: Duration::from_millis(300),
        },
        async {
            let _ = stopped.await;
        },
        move |a| seen.lock().expect("lock").push(a),
    ));

    let mut pods = cluster.pods().await;
    let mut watch = pods
        .watch(WatchPodsRequest {
            namespace: NS.into(),
            options: Some(ListOptions {
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    async fn next(
        w: &mut tonic::Streaming<kubestore_proto::core::v1::PodWatchEvent>,
    ) -> (WatchEventType, String, kubestore_proto::core::v1::Pod) {
        let e = tokio::time::timeout(Duration::from_secs(10), w.message())
            .await
            .expect("an event in time")
            .expect("ok")
            .expect("an event");
        let pod = e.object.expect("pod");
        (
            WatchEventType::try_from(e.r#type).expect("type"),
            pod.metadata.clone().expect("meta").name,
            pod,
        )
    }
    create_pod(&mut pods, pod("elsewhere", "node-2"))
        .await
        .expect("create");
    create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    assert_eq!(next(&mut watch).await.1, "elsewhere");
    assert_eq!(next(&mut watch).await.1, "web");
    // The agent starts its pod.
    let (kind, name, p) = next(&mut watch).await;
    assert_eq!((kind, name.as_str()), (WatchEventType::Modified, "web"));
    let status = p.status.expect("status");
    assert_eq!(status.phase, "Running");
    assert!(status.start_time.is_some());
    // A default delete marks the pod; the agent stops it and sends the final delete.
    let (marked, deleted) = delete_pod(&mut pods, "web", None).await.expect("delete");
    assert!(!deleted);
    assert_eq!(meta(&marked).deletion_grace_period_seconds, Some(30));
    let (kind, _, _) = next(&mut watch).await;
    assert_eq!(kind, WatchEventType::Modified, "the mark");
    let (kind, _, _) = next(&mut watch).await;
    assert_eq!(
        kind,
        WatchEventType::Modified,
        "the final delete stamps grace 0"
    );
    let (kind, name, _) = next(&mut watch).await;
    assert_eq!((kind, name.as_str()), (WatchEventType::Deleted, "web"));
    // The agent hears its Delete's answer just after the watcher sees the deletion.
    for _ in 0..100 {
        if actions.lock().expect("lock").len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        *actions.lock().expect("lock"),
        [
            Action::Started("default/web".into()),
            Action::Deleted("default/web".into())
        ]
    );
    // The pod of another node was never touched.
    let other = get_pod(&mut pods, "elsewhere").await.expect("get");
    assert_eq!(other.status.expect("status").phase, "Pending");
    let _ = stop.send(());
    running.await.expect("agent stopped");
}

/// The agent's watch drops when registry-svc restarts; the agent resumes on its own (from its
/// last resourceVersion, or by listing again) and goes on running and deleting its pods.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_resumes_after_its_watch_drops() {
    let mut cluster = Cluster::full().await;
    let addr = cluster.registry.as_ref().expect("registry").addr;
    let url = format!("http://{addr}");
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let actions = Arc::new(Mutex::new(Vec::new()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let seen = actions.clone();
    let running = tokio::spawn(agent::run(
        ch,
        AgentConfig {
            node: "node-1".into(),
            stop_delay: Duration::from_millis(100),
        },
        async {
            let _ = stopped.await;
        },
        move |a| seen.lock().expect("lock").push(a),
    ));
    let wait_for = |want: Action| {
        let actions = actions.clone();
        async move {
            for _ in 0..300 {
                if actions.lock().expect("lock").contains(&want) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!(
                "the agent never did {want:?}: {:?}",
                actions.lock().expect("lock")
            );
        }
    };
    let mut pods = cluster.pods().await;
    create_pod(&mut pods, pod("before", "node-1"))
        .await
        .expect("create");
    wait_for(Action::Started("default/before".into())).await;

    // registry-svc stops (its watches end with UNAVAILABLE) and comes back on its address.
    let mut old = cluster.registry.take().expect("registry");
    old.signal_stop();
    assert!(old.wait_stopped(Duration::from_secs(10)).await, "stopped");
    drop(old);
    let again = kubestore_tests::services::spawn_registry_at(
        &addr.to_string(),
        registry_svc::Config::default(),
        cluster.storage.url(),
        None,
    );
    kubestore_tests::services::wait_serving(&url).await;
    cluster.registry = Some(again);

    // The agent carries on: it starts a new pod and finishes a graceful delete.
    let mut pods = cluster.pods().await;
    create_pod(&mut pods, pod("after", "node-1"))
        .await
        .expect("create");
    wait_for(Action::Started("default/after".into())).await;
    let (_, deleted) = delete_pod(&mut pods, "after", grace(1))
        .await
        .expect("delete");
    assert!(!deleted, "graceful: the agent finishes it");
    wait_for(Action::Deleted("default/after".into())).await;
    assert!(
        get_pod(&mut pods, "after")
            .await
            .is_err_and(|e| e.code() == tonic::Code::NotFound),
        "gone"
    );
    let _ = stop.send(());
    running.await.expect("agent stopped");
}
