//! The node agent (`kubestore agent`) closes the graceful-deletion loop on its own, as a
//! kubelet does, through the public API only, and tries refused writes again until they are
//! taken.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kubestore_cli::agent::{self, Action, AgentConfig};
use kubestore_proto::{
    core::v1::{WatchPodsRequest, pods_client::PodsClient},
    meta::v1::{ListOptions, WatchEventType},
    storage::v1::{
        GuaranteedUpdateRequest, UpdateStart, guaranteed_update_request::Message as Req,
        storage_client::StorageClient,
    },
};
use kubestore_tests::{
    Cluster, EtcdProcess,
    fixtures_registry::*,
    services::{
        ServiceHandle, channel, sample, scrape, spawn_registry, spawn_storage, wait_serving,
    },
};
use tokio_stream::wrappers::ReceiverStream;

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
    // The agent starts its pod, and reports it as a kubelet does: addresses, conditions, a
    // running, ready container.
    let (kind, name, p) = next(&mut watch).await;
    assert_eq!((kind, name.as_str()), (WatchEventType::Modified, "web"));
    let uid = meta(&p).uid;
    let status = p.status.expect("status");
    assert_eq!(status.phase, "Running");
    assert!(status.start_time.is_some());
    assert_eq!(status.qos_class, "BestEffort", "kept");
    assert_eq!(status.host_ip, agent::status::host_ip("node-1"));
    assert_eq!(status.host_ips[0].ip, status.host_ip);
    assert_eq!(status.pod_ip, agent::status::pod_ip(&uid));
    assert!(status.pod_ip.starts_with("10.244."), "{}", status.pod_ip);
    assert_eq!(status.pod_ips[0].ip, status.pod_ip);
    let conditions: Vec<(&str, &str)> = status
        .conditions
        .iter()
        .map(|c| (c.r#type.as_str(), c.status.as_str()))
        .collect();
    assert_eq!(
        conditions,
        [
            ("Initialized", "True"),
            ("Ready", "True"),
            ("ContainersReady", "True"),
            ("PodScheduled", "True")
        ]
    );
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.last_transition_time.is_some())
    );
    let c = &status.container_statuses[0];
    assert_eq!(
        (
            c.name.as_str(),
            c.image.as_str(),
            c.ready,
            c.started,
            c.restart_count
        ),
        ("app", "nginx:1", true, Some(true), 0)
    );
    assert!(
        c.image_id.starts_with("docker-pullable://nginx@sha256:"),
        "{}",
        c.image_id
    );
    assert!(
        c.container_id.starts_with("containerd://"),
        "{}",
        c.container_id
    );
    assert!(
        c.state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .is_some_and(|r| r.started_at.is_some())
    );
    // kubectl's row of it: 1/1 Running, its address (the server's printPod over this status).
    let row = registry_svc::kinds::pod_printer::pod_cells(&p_with(&status, &name), 0);
    assert_eq!(row[1..4], ["1/1", "Running", "0"]);
    assert_eq!(row[5], status.pod_ip.as_str());
    // A default delete marks the pod; the agent stops it and sends the final delete.
    // describe: the object, then what happened to it (the Started event is written just
    // after the status: wait for it).
    let cli = kubestore_cli::connect(&url).await.expect("connect");
    let mut described = String::new();
    for _ in 0..100 {
        described = kubestore_cli::description::describe(&cli, NS, "po", "web")
            .await
            .expect("describe");
        if described.contains("Started") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(described.contains("name: web"), "{described}");
    assert!(described.contains("phase: Running"), "{described}");
    let events = described
        .split_once("Events:")
        .map(|(_, e)| e.to_string())
        .unwrap_or_default();
    let (scheduled, started) = (
        events.find("Scheduled").expect(&described),
        events.find("Started").expect(&described),
    );
    assert!(scheduled < started, "oldest first: {described}");
    assert!(events.contains("Successfully assigned default/web to node-1"));
    let (marked, deleted) = delete_pod(&mut pods, "web", None).await.expect("delete");
    assert!(!deleted);
    assert_eq!(meta(&marked).deletion_grace_period_seconds, Some(30));
    let (kind, _, _) = next(&mut watch).await;
    assert_eq!(kind, WatchEventType::Modified, "the mark");
    // Before its final delete, the agent reports the container terminated, as a kubelet does.
    let (kind, _, stopped) = next(&mut watch).await;
    assert_eq!(kind, WatchEventType::Modified, "the stopped containers");
    let status = stopped.status.clone().expect("status");
    let c = &status.container_statuses[0];
    let done = c
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!((done.exit_code, done.reason.as_str()), (0, "Completed"));
    assert!(done.finished_at.is_some() && done.started_at.is_some());
    assert_eq!(
        status.phase, "Succeeded",
        "a terminal phase before the final delete"
    );
    assert_eq!(done.container_id, c.container_id);
    assert!(!c.ready);
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.r#type == "Ready" && c.status == "False")
    );
    assert_eq!(meta(&stopped).deletion_grace_period_seconds, Some(30));
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
    // What happened is recorded as a kubelet records it: Events on the pod.
    let mut events = cluster.events().await;
    let mut reasons = Vec::new();
    for _ in 0..100 {
        reasons = events
            .list(kubestore_proto::core::v1::ListEventsRequest {
                namespace: NS.into(),
                options: Some(ListOptions {
                    field_selector: "involvedObject.name=web".into(),
                    ..Default::default()
                }),
            })
            .await
            .expect("list events")
            .into_inner()
            .items
            .into_iter()
            .map(|e| (e.reason, e.message))
            .collect();
        if reasons.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reasons.sort();
    assert_eq!(
        reasons,
        [
            ("Killing".to_string(), "Stopping container app".to_string()),
            (
                "Scheduled".to_string(),
                "Successfully assigned default/web to node-1".to_string()
            ),
            ("Started".to_string(), "Started container app".to_string()),
        ]
    );
    let _ = stop.send(());
    running.await.expect("agent stopped");
}

/// A pod named `name` with `status`, for the printer.
fn p_with(
    status: &kubestore_proto::core::v1::PodStatus,
    name: &str,
) -> kubestore_proto::core::v1::Pod {
    let mut p = pod(name, "node-1");
    p.status = Some(status.clone());
    p
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

/// storage-svc's one call slot (`--max-requests-inflight 1`) held by a GuaranteedUpdate left
/// open after storage sent the current state: every other counted call to that storage-svc is
/// refused (RESOURCE_EXHAUSTED, `TooManyRequests`, a one-second RetryInfo, which registry-svc
/// passes on) while watches, exempt, go on. Dropping it ends the stream and frees the slot.
struct Hold {
    _tx: tokio::sync::mpsc::Sender<GuaranteedUpdateRequest>,
    _responses: tonic::Streaming<kubestore_proto::storage::v1::GuaranteedUpdateResponse>,
}

async fn hold(storage_url: &str) -> Hold {
    let mut c = StorageClient::new(channel(storage_url).await);
    // A call of the agent's may still be finishing: try until the slot is ours.
    for _ in 0..100 {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send(GuaranteedUpdateRequest {
            message: Some(Req::Start(UpdateStart {
                key: "/holds/slot".into(),
                ignore_not_found: true,
                ..Default::default()
            })),
        })
        .await
        .expect("send start");
        let started = c.guaranteed_update(ReceiverStream::new(rx)).await;
        if let Ok(r) = started {
            let mut responses = r.into_inner();
            if let Ok(Some(_state)) = responses.message().await {
                return Hold {
                    _tx: tx,
                    _responses: responses,
                };
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never got storage-svc's slot");
}

/// How many UpdateStatus calls registry-svc refused with RESOURCE_EXHAUSTED.
async fn refused_status_updates(registry: &ServiceHandle) -> f64 {
    sample(
        &scrape(registry.metrics_addr).await,
        r#"grpc_server_handled_total{grpc_type="unary",grpc_service="core.v1.Pods",grpc_method="UpdateStatus",grpc_code="RESOURCE_EXHAUSTED"}"#,
    )
    .unwrap_or(0.0)
}

/// The kubelet never gives up on a pod: a refused UpdateStatus or final delete is tried again
/// (after the refusal's RetryInfo) until it is taken, and a pod deleted meanwhile ends its
/// retries. The agent's registry-svc talks to a storage-svc whose one call slot the test holds;
/// the test itself writes through a second storage-svc and registry-svc on the same etcd.
#[tokio::test(flavor = "multi_thread")]
async fn the_agent_retries_refused_writes_until_they_are_taken() {
    let etcd = EtcdProcess::start().await;
    let busy = spawn_storage(
        storage_svc::Config {
            max_requests_inflight: 1,
            // The held update keeps its slot up to its deadline: longer than this test holds.
            request_timeout: Duration::from_secs(60),
            ..Default::default()
        },
        etcd.endpoint(),
        None,
    );
    wait_serving(&busy.url()).await;
    let agents_registry = spawn_registry(registry_svc::Config::default(), busy.url(), None);
    wait_serving(&agents_registry.url()).await;
    let storage = spawn_storage(storage_svc::Config::default(), etcd.endpoint(), None);
    wait_serving(&storage.url()).await;
    let registry = spawn_registry(registry_svc::Config::default(), storage.url(), None);
    wait_serving(&registry.url()).await;
    let mut pods = PodsClient::new(channel(&registry.url()).await);

    let ch = kubestore_cli::connect(&agents_registry.url())
        .await
        .expect("connect");
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
    // The agent lists and watches (before storage is busy).
    create_pod(&mut pods, pod("first", "node-1"))
        .await
        .expect("create");
    wait_for(Action::Started("default/first".into())).await;

    // 1. UpdateStatus refused: the pod stays Pending while storage is busy, the agent tries
    // again after each refusal's one-second RetryInfo (not at once, nor 200 ms later), and the
    // pod is Running soon after storage takes calls again.
    // Counted from here: the first pod's start may have met a refusal too (its Started event
    // and its status update share the one slot).
    let before = refused_status_updates(&agents_registry).await;
    let held = hold(&busy.url()).await;
    create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let created = Instant::now();
    let mut first = None;
    let third = loop {
        let refused = refused_status_updates(&agents_registry).await - before;
        let now = Instant::now();
        if refused >= 1.0 {
            first.get_or_insert(now);
        }
        if refused >= 3.0 {
            break now;
        }
        assert!(
            now - created < Duration::from_secs(20),
            "the agent did not try again: {refused} refusals"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let between = third - first.expect("a first refusal");
    assert!(
        between >= Duration::from_millis(1800),
        "two waits of the refusal's RetryInfo (1 s) between three tries, not {between:?}"
    );
    let phase = |p: kubestore_proto::core::v1::Pod| p.status.unwrap_or_default().phase;
    assert_eq!(
        phase(get_pod(&mut pods, "web").await.expect("get")),
        "Pending"
    );
    drop(held);
    wait_for(Action::Started("default/web".into())).await;
    assert_eq!(
        phase(get_pod(&mut pods, "web").await.expect("get")),
        "Running"
    );

    // 2. The final delete refused: the pod stays Terminating past its grace period, and is gone
    // soon after storage takes calls again.
    let held = hold(&busy.url()).await;
    let (_, deleted) = delete_pod(&mut pods, "web", grace(1))
        .await
        .expect("delete");
    assert!(!deleted, "graceful: the agent finishes it");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let marked = get_pod(&mut pods, "web").await.expect("still there");
    assert!(meta(&marked).deletion_timestamp.is_some());
    drop(held);
    wait_for(Action::Deleted("default/web".into())).await;
    assert!(
        get_pod(&mut pods, "web")
            .await
            .is_err_and(|e| e.code() == tonic::Code::NotFound),
        "gone"
    );

    // 3. A pod deleted while its UpdateStatus is being refused: the retries end.
    let held = hold(&busy.url()).await;
    create_pod(&mut pods, pod("doomed", "node-1"))
        .await
        .expect("create");
    let before = refused_status_updates(&agents_registry).await;
    for _ in 0..100 {
        if refused_status_updates(&agents_registry).await > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        refused_status_updates(&agents_registry).await > before,
        "the agent tried to start doomed"
    );
    delete_pod(&mut pods, "doomed", grace(0))
        .await
        .expect("force delete");
    // The DELETED event reaches the agent through the busy storage's watch (watches are
    // exempt); from then on no try is made: three quiet seconds (tries come every second).
    let quiet_since = Instant::now();
    loop {
        let before = refused_status_updates(&agents_registry).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        if refused_status_updates(&agents_registry).await == before {
            break;
        }
        assert!(
            quiet_since.elapsed() < Duration::from_secs(20),
            "the agent goes on trying to start a pod that is gone"
        );
    }
    drop(held);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !actions
            .lock()
            .expect("lock")
            .contains(&Action::Started("default/doomed".into())),
        "a deleted pod is not started"
    );
    let _ = stop.send(());
    running.await.expect("agent stopped");
}
