//! `kubestore demo`: what registry-svc does, step by step, with the node agent playing the
//! kubelet: a pod is created Pending with its QoS class, the agent marks it Running, a default
//! delete marks it (grace 30 s, `deleted=false`), the agent stops it and sends the final delete,
//! and a watcher sees DELETED. Then a ConfigMap, through the generic API, held by a finalizer
//! until a patch removes it.
//!
//! Without an agent for `node-1` (none answers within 15 s), the demo plays the kubelet itself,
//! as it did before the agent existed.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{
        Container, Pod, PodSpec, PodStatus, ResourceRequirements, UpdatePodRequest,
        pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, Preconditions, WatchEventType},
};
use tokio_stream::StreamExt;
use tonic::{Code, Status};
use tracing::Instrument;

use kubestore_proto::registry::v1::PatchType;
use serde_json::json;

use crate::{
    Ch,
    client::Client,
    describe,
    kinds::{Events, Kind},
    table::rfc3339,
};

/// The node the demo's pod runs on.
pub const NODE: &str = "node-1";
const POD: &str = "demo-nginx";
const WAIT_FOR_AGENT: Duration = Duration::from_secs(15);

fn meta_line(m: &ObjectMeta) -> String {
    format!(
        "uid={} resourceVersion={} generation={} deletionTimestamp={} deletionGracePeriodSeconds={} finalizers={:?}",
        m.uid,
        m.resource_version,
        m.generation,
        m.deletion_timestamp
            .as_ref()
            .map_or("-".to_string(), |t| rfc3339(t.seconds)),
        m.deletion_grace_period_seconds
            .map_or("-".to_string(), |g| g.to_string()),
        m.finalizers
    )
}

/// The next event of `events` that `want` accepts, within `within`.
async fn wait_for(
    events: &mut Events<Pod>,
    within: Duration,
    want: impl Fn(WatchEventType, &Pod) -> bool,
) -> Result<Option<(WatchEventType, Pod)>, Status> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Err(_) => return Ok(None),
            Ok(None) => return Err(Status::unavailable("the watch ended")),
            Ok(Some(e)) => {
                let (kind, pod) = e?;
                if want(kind, &pod) {
                    return Ok(Some((kind, pod)));
                }
            }
        }
    }
}

/// Runs the demo in namespace `ns`.
pub async fn run(ch: &Ch, ns: &str) -> Result<(), Status> {
    let span = tracing::info_span!("kubestore demo");
    run_inner(ch, ns).instrument(span).await
}

async fn run_inner(ch: &Ch, ns: &str) -> Result<(), Status> {
    // Leftovers of an earlier run.
    let force = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let _ = Pod::delete(ch, ns, POD, Some(force)).await;

    println!("== 1. Create a pod (scheduled on {NODE}, cpu/memory requests below limits)");
    let container = Container {
        name: "nginx".into(),
        image: "nginx:1.27".into(),
        resources: Some(ResourceRequirements {
            requests: [
                ("cpu".to_string(), "100m".to_string()),
                ("memory".to_string(), "64Mi".to_string()),
            ]
            .into(),
            limits: [
                ("cpu".to_string(), "200m".to_string()),
                ("memory".to_string(), "128Mi".to_string()),
            ]
            .into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: POD.into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            node_name: NODE.into(),
            ..Default::default()
        }),
        status: None,
    };
    let created = Pod::create(ch, ns, pod, false).await?;
    let status = created.status.clone().unwrap_or_default();
    println!("   phase={} qosClass={}", status.phase, status.qos_class);
    println!("   {}", meta_line(&created.meta()));
    let uid = created.meta().uid;
    let mut events = Pod::watch(
        ch,
        ns,
        ListOptions {
            field_selector: format!("metadata.name={POD}"),
            resource_version: created.meta().resource_version,
            ..Default::default()
        },
    )
    .await?;

    println!("== 2. The node agent starts it");
    let running = wait_for(&mut events, WAIT_FOR_AGENT, |_, p| {
        p.status.as_ref().is_some_and(|s| s.phase == "Running")
    })
    .await?;
    let agent = running.is_some();
    match running {
        Some(_) => println!("   watch: MODIFIED phase=Running (by the agent on {NODE})"),
        None => {
            println!(
                "   no agent for {NODE} answered in {WAIT_FOR_AGENT:?} (start one with `kubestore agent --node {NODE}`); playing the kubelet here"
            );
            let mut p = Pod::get(ch, ns, POD).await?;
            p.status = Some(PodStatus {
                phase: "Running".into(),
                ..p.status.unwrap_or_default()
            });
            PodsClient::new(ch.clone())
                .update_status(UpdatePodRequest {
                    namespace: ns.into(),
                    pod: Some(p),
                    dry_run: false,
                })
                .await?;
            println!("   UpdateStatus: phase=Running");
        }
    }

    println!("== 3. Delete it with the default grace period: it is marked, not removed");
    let (marked, deleted) = Pod::delete(ch, ns, POD, None).await?;
    println!("   deleted={deleted}");
    println!("   {}", meta_line(&marked.meta()));

    println!("== 4. The kubelet's final delete: grace 0 with a UID precondition");
    if agent {
        let gone = wait_for(&mut events, Duration::from_secs(60), |k, _| {
            k == WatchEventType::Deleted
        })
        .await?;
        match gone {
            Some((_, p)) => println!(
                "   watch: DELETED (the agent stopped the pod and deleted it) resourceVersion={}",
                p.meta().resource_version
            ),
            None => return Err(Status::deadline_exceeded("the agent never deleted the pod")),
        }
    } else {
        let options = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..Default::default()
        };
        let (_, deleted) = Pod::delete(ch, ns, POD, Some(options)).await?;
        println!("   deleted={deleted}");
    }
    match Pod::get(ch, ns, POD).await {
        Err(s) if s.code() == Code::NotFound => println!("   get: {}", describe(&s)),
        Err(s) => return Err(s),
        Ok(_) => return Err(Status::internal("the pod is still there")),
    }

    println!(
        "== 5. A ConfigMap with a finalizer stays after delete until the finalizer is removed"
    );
    finalizer_demo(ch, ns).await?;
    println!("== done");
    Ok(())
}

/// A ConfigMap through the generic API (`registry.v1.Resources`), as the CLI's verbs reach
/// every kind.
async fn finalizer_demo(ch: &Ch, ns: &str) -> Result<(), Status> {
    let name = "demo-settings";
    let client = Client::new(ch);
    let discovery = client.discover().await?;
    let cm = discovery
        .for_kind("v1", "ConfigMap")
        .ok_or_else(|| Status::not_found("registry-svc serves no v1 ConfigMap"))?
        .clone();
    let release = json!({"metadata": {"finalizers": null}});
    if client.get(&cm, ns, name, Default::default()).await.is_ok() {
        // Leftover of an earlier run: release it.
        let _ = client
            .patch(&cm, ns, name, PatchType::Merge, &release, false)
            .await;
        let _ = client.delete(&cm, ns, name, Default::default()).await;
    }
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "finalizers": ["example.com/protect"]},
        "data": {"color": "blue"},
    });
    client.create(&cm, ns, &object, false).await?;
    let (_, deleted) = client.delete(&cm, ns, name, Default::default()).await?;
    println!("   delete: deleted={deleted}");
    let held = client.get(&cm, ns, name, Default::default()).await?;
    let meta = &held["metadata"];
    println!(
        "   get:    uid={} resourceVersion={} deletionTimestamp={} finalizers={}",
        meta["uid"].as_str().unwrap_or("-"),
        meta["resourceVersion"].as_str().unwrap_or("-"),
        meta["deletionTimestamp"].as_str().unwrap_or("-"),
        meta["finalizers"]
    );
    client
        .patch(&cm, ns, name, PatchType::Merge, &release, false)
        .await?;
    println!("   removed the finalizer (a merge patch)");
    match client.get(&cm, ns, name, Default::default()).await {
        Err(s) if s.code() == Code::NotFound => println!("   get: {}", describe(&s)),
        Err(s) => return Err(s),
        Ok(_) => return Err(Status::internal("the ConfigMap is still there")),
    }
    Ok(())
}
