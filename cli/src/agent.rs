//! `kubestore agent --node NAME`: a stand-in kubelet, an honest client of the public API.
//!
//! It lists and watches the pods bound to its node (`spec.nodeName=NAME`, every namespace),
//! resuming from the last resourceVersion it saw when the stream drops (and listing again when
//! that version was compacted). A new pod is "started": UpdateStatus sets phase Running. A pod
//! that gets a deletionTimestamp is "stopped": the agent waits `min(grace, --stop-delay)`, then
//! sends the final Delete with grace 0 and the pod's UID as a precondition, exactly as the
//! kubelet does, so that a pod recreated under the same name is never deleted by mistake.

use std::{
    collections::HashSet,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_proto::{
    Timestamp,
    core::v1::{Pod, PodStatus, UpdatePodRequest, pods_client::PodsClient},
    meta::v1::{DeleteOptions, ListOptions, Preconditions, WatchEventType},
};
use tokio_stream::StreamExt;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use crate::{Ch, kinds::Kind, table::now};

/// Settings of the agent.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The node whose pods this agent runs.
    pub node: String,
    /// Longest a pod takes to stop (a pod's own grace period, when shorter, wins).
    pub stop_delay: Duration,
}

/// What the agent did, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The pod was marked Running.
    Started(String),
    /// The pod was stopped and finally deleted.
    Deleted(String),
}

/// The agent's shared state.
struct Agent {
    ch: Ch,
    config: AgentConfig,
    /// UIDs of pods being stopped.
    stopping: Mutex<HashSet<String>>,
    /// UIDs of pods marked Running.
    started: Mutex<HashSet<String>>,
    report: Box<dyn Fn(Action) + Send + Sync>,
}

/// Runs the agent until `shutdown` resolves; `report` hears what it does.
pub async fn run(
    ch: Ch,
    config: AgentConfig,
    shutdown: impl Future<Output = ()>,
    report: impl Fn(Action) + Send + Sync + 'static,
) {
    let agent = Arc::new(Agent {
        ch,
        config,
        stopping: Mutex::default(),
        started: Mutex::default(),
        report: Box::new(report),
    });
    tokio::select! {
        () = shutdown => {}
        () = agent.clone().follow() => {}
    }
}

fn key(p: &Pod) -> String {
    let m = p.meta();
    format!("{}/{}", m.namespace, m.name)
}

impl Agent {
    /// List, then watch from the list's version; on a dropped stream resume from the last
    /// version seen, on Expired list again. Never returns.
    async fn follow(self: Arc<Self>) {
        let selector = format!("spec.nodeName={}", self.config.node);
        let mut backoff = Duration::from_millis(100);
        loop {
            let rv = match Pod::list(
                &self.ch,
                "",
                ListOptions {
                    field_selector: selector.clone(),
                    ..Default::default()
                },
            )
            .await
            {
                Ok((meta, pods)) => {
                    for p in pods {
                        self.clone().handle(p);
                    }
                    meta.resource_version
                }
                Err(e) => {
                    tracing::warn!(error = %e.message(), "agent: list failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            backoff = Duration::from_millis(100);
            if let Err(e) = self.clone().watch_from(rv, &selector).await {
                let expired = e
                    .get_details_error_info()
                    .is_some_and(|i| i.reason == "Expired");
                if !expired {
                    tracing::warn!(error = %e.message(), "agent: watch ended; listing again");
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    /// Watches from `rv`, resuming after drops, until an error that needs a new list.
    async fn watch_from(self: Arc<Self>, mut rv: String, selector: &str) -> Result<(), Status> {
        let mut drops = 0;
        loop {
            let stream = Pod::watch(
                &self.ch,
                "",
                ListOptions {
                    field_selector: selector.to_string(),
                    resource_version: rv.clone(),
                    allow_watch_bookmarks: true,
                    ..Default::default()
                },
            )
            .await;
            let mut stream = match stream {
                Ok(s) => s,
                Err(e) if e.code() == Code::Unavailable && drops < 10 => {
                    drops += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            while let Some(event) = stream.next().await {
                match event {
                    Ok((kind, pod)) => {
                        rv = pod.meta().resource_version;
                        drops = 0;
                        match kind {
                            WatchEventType::Added | WatchEventType::Modified => {
                                self.clone().handle(pod)
                            }
                            WatchEventType::Deleted => self.forget(&pod),
                            _ => {}
                        }
                    }
                    // Dropped (shutdown of a service, network): resume from `rv`.
                    Err(e) if e.code() == Code::Unavailable && drops < 10 => {
                        drops += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn forget(&self, pod: &Pod) {
        let uid = pod.meta().uid;
        if let Ok(mut s) = self.stopping.lock() {
            s.remove(&uid);
        }
        if let Ok(mut s) = self.started.lock() {
            s.remove(&uid);
        }
    }

    /// Starts or stops `pod` as its state asks.
    fn handle(self: Arc<Self>, pod: Pod) {
        let m = pod.meta();
        if m.deletion_timestamp.is_some() {
            let first = self
                .stopping
                .lock()
                .map(|mut s| s.insert(m.uid.clone()))
                .unwrap_or(false);
            if first {
                tokio::spawn(async move { self.stop(pod).await });
            }
            return;
        }
        let phase = pod.status.as_ref().map_or("", |s| s.phase.as_str());
        if phase == "Pending" {
            let first = self
                .started
                .lock()
                .map(|mut s| s.insert(m.uid.clone()))
                .unwrap_or(false);
            if first {
                tokio::spawn(async move { self.start(pod).await });
            }
        }
    }

    /// Marks the pod Running (retrying a conflict on fresh data while it is still Pending).
    async fn start(&self, mut pod: Pod) {
        let k = key(&pod);
        for _ in 0..5 {
            let mut status = pod.status.clone().unwrap_or_default();
            status.phase = "Running".into();
            status.start_time = Some(Timestamp {
                seconds: now(),
                nanos: 0,
            });
            pod.status = Some(PodStatus { ..status });
            let m = pod.meta();
            let r = PodsClient::new(self.ch.clone())
                .update_status(UpdatePodRequest {
                    namespace: m.namespace.clone(),
                    pod: Some(pod.clone()),
                    dry_run: false,
                })
                .await;
            match r {
                Ok(_) => {
                    tracing::info!(pod = %k, node = %self.config.node, "started: Running");
                    (self.report)(Action::Started(k));
                    return;
                }
                Err(e) if e.code() == Code::Aborted => {
                    match Pod::get(&self.ch, &m.namespace, &m.name).await {
                        Ok(fresh)
                            if fresh.meta().uid == m.uid
                                && fresh.meta().deletion_timestamp.is_none()
                                && fresh.status.as_ref().is_some_and(|s| s.phase == "Pending") =>
                        {
                            pod = fresh;
                        }
                        _ => return,
                    }
                }
                Err(e) => {
                    tracing::warn!(pod = %k, error = %e.message(), "could not mark the pod Running");
                    return;
                }
            }
        }
    }

    /// Stops the pod, then sends the kubelet's final delete.
    async fn stop(&self, pod: Pod) {
        let m = pod.meta();
        let k = key(&pod);
        let grace = m.deletion_grace_period_seconds.unwrap_or(0).max(0) as u64;
        let wait = self.config.stop_delay.min(Duration::from_secs(grace));
        tracing::info!(pod = %k, ?wait, "stopping");
        tokio::time::sleep(wait).await;
        let options = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(m.uid.clone()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match Pod::delete(&self.ch, &m.namespace, &m.name, Some(options)).await {
            Ok(_) => {
                tracing::info!(pod = %k, "stopped: deleted with grace 0");
                (self.report)(Action::Deleted(k));
            }
            // Already gone, or a different pod now has the name: nothing of ours to delete.
            Err(e) if matches!(e.code(), Code::NotFound | Code::Aborted) => {}
            Err(e) => {
                tracing::warn!(pod = %k, error = %e.message(), "final delete failed");
                if let Ok(mut s) = self.stopping.lock() {
                    s.remove(&m.uid);
                }
            }
        }
    }
}
