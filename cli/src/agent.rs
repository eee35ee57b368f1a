//! `kubestore agent --node NAME`: a stand-in kubelet, an honest client of the public API.
//!
//! It lists and watches the pods bound to its node (`spec.nodeName=NAME`, every namespace),
//! resuming from the last resourceVersion it saw when the stream drops (and listing again when
//! that version was compacted). A new pod is "started": UpdateStatus sets phase Running. A pod
//! that gets a deletionTimestamp is "stopped": the agent waits `min(grace, --stop-delay)`,
//! reports its containers terminated (UpdateStatus), then sends the final Delete with grace 0 and the pod's UID as a precondition, exactly as the
//! kubelet does, so that a pod recreated under the same name is never deleted by mistake.
//!
//! What it writes is shaped as a kubelet's status (`status`): the node's and the pod's
//! addresses, the conditions, and a status per container (running, ready; terminated before
//! the final delete).
//!
//! Each pod has its own worker task (the kubelet's pod workers), so a pod whose writes are
//! refused never holds up another. A refused write is tried again until it is taken, as the
//! kubelet syncs a pod until its status is written and its final delete done, waiting as
//! [`backoff`](crate::backoff) says (a `RetryInfo` in the refusal wins); a Conflict re-reads
//! the pod first. A worker ends when its pod is gone (its DELETED event, a list that no longer
//! holds it, NOT_FOUND, or another UID under its name) or the agent stops.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_proto::{
    core::v1::{DeletePodRequest, GetPodRequest, Pod, UpdatePodRequest, pods_client::PodsClient},
    meta::v1::{DeleteOptions, ListOptions, Preconditions},
};
use tokio::sync::watch;
use tonic::{Code, Request, Status};

use kubestore_controllers::informer::{self, Delta};
use tokio::sync::mpsc;

use crate::{
    Ch,
    backoff::Backoff,
    kinds::{Kind, Listing},
    table::now,
};

pub mod status;

/// Longest the agent waits for one call (sent as `grpc-timeout`, and enforced by the client):
/// a call that hangs must not stall its pod's retries.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// The pod was stopped and finally deleted: by the agent's final delete, or it was found
    /// gone when that delete was sent (a try whose answer was lost may have done it).
    Deleted(String),
}

/// What the agent is doing about one pod (by UID).
enum Work {
    /// A worker is marking the pod Running (held for its drop, which cancels the worker).
    Starting { _cancel: Cancel },
    /// The pod was marked Running.
    Started,
    /// A worker is stopping the pod and sending its final delete.
    Stopping { _cancel: Cancel },
    /// The final delete was done (the pod's DELETED event has yet to come).
    Stopped,
}

/// The sending half of a worker's [`Token`], kept in its pod's entry and never sent on:
/// dropping it (the entry replaced or removed) cancels the worker.
struct Cancel {
    _tx: watch::Sender<()>,
}

/// A worker's hold on its pod's entry: cancelled once the entry is replaced or removed.
struct Token(watch::Receiver<()>);

impl Token {
    /// A new worker's token, and what its entry keeps.
    fn new() -> (Cancel, Self) {
        let (tx, rx) = watch::channel(());
        (Cancel { _tx: tx }, Self(rx))
    }

    /// Whether the worker should stop: the entry that started it is gone.
    fn cancelled(&self) -> bool {
        self.0.has_changed().is_err()
    }

    /// Sleeps `d`; false if cancelled meanwhile (at once, not at the end of the sleep).
    async fn sleep(&mut self, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => !self.cancelled(),
            // Nothing is ever sent: this ends only when the sender is dropped.
            _ = self.0.changed() => false,
        }
    }
}

/// The agent's shared state.
struct Agent {
    ch: Ch,
    config: AgentConfig,
    /// Events about the pods, as the kubelet records them (`get events`, `describe`).
    events: kubestore_controllers::events::Recorder,
    /// What is being done about each pod, by UID.
    pods: Mutex<HashMap<String, Work>>,
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
        events: kubestore_controllers::events::Recorder::new(ch.clone(), "kubelet"),
        ch,
        config,
        pods: Mutex::default(),
        report: Box::new(report),
    });
    tokio::select! {
        () = shutdown => {}
        () = agent.clone().follow() => {}
    }
    // Cancels every worker (a call under way finishes, within CALL_TIMEOUT).
    if let Ok(mut pods) = agent.pods.lock() {
        pods.clear();
    }
}

/// The pod an event is about.
fn reference(p: &Pod) -> kubestore_proto::core::v1::ObjectReference {
    let m = p.meta();
    kubestore_proto::core::v1::ObjectReference {
        kind: "Pod".into(),
        api_version: "v1".into(),
        namespace: m.namespace.clone(),
        name: m.name.clone(),
        uid: m.uid.clone(),
        ..Default::default()
    }
}

/// The pod's container names, as the kubelet's event messages list them.
fn containers(p: &Pod) -> String {
    p.spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn key(p: &Pod) -> String {
    let m = p.meta();
    format!("{}/{}", m.namespace, m.name)
}

/// `msg` with the agent's call timeout.
fn request<T>(msg: T) -> Request<T> {
    let mut r = Request::new(msg);
    r.set_timeout(CALL_TIMEOUT);
    r
}

/// What a re-read after a Conflict found.
enum Reread {
    /// The same pod (same UID), fresh.
    Same(Box<Pod>),
    /// No pod of that UID any more (none under the name, or another one).
    Gone,
    /// The read itself failed.
    Failed(Status),
}

impl Agent {
    /// Lists and watches the node's pods through the informer (pages of 500, resume from the
    /// last version seen, list again on Expired, back off on refusals). Never returns.
    async fn follow(self: Arc<Self>) {
        let selector = format!("spec.nodeName={}", self.config.node);
        let source = Listing::<Pod>::new(
            self.ch.clone(),
            "",
            ListOptions {
                field_selector: selector,
                ..Default::default()
            },
        );
        let (tx, mut rx) = mpsc::channel::<Delta<Pod>>(256);
        // Never raised: the agent stops by dropping this future (the informer with it).
        let (_keep, stop) = watch::channel(false);
        let consume = async {
            while let Some(delta) = rx.recv().await {
                match delta {
                    Delta::Replace(pods) => {
                        // Pods deleted while the agent was not watching: their workers end.
                        let listed: std::collections::HashSet<String> =
                            pods.iter().map(|p| p.meta().uid).collect();
                        if let Ok(mut work) = self.pods.lock() {
                            work.retain(|uid, _| listed.contains(uid));
                        }
                        for p in pods {
                            self.clone().handle(p);
                        }
                    }
                    Delta::Upsert(pod) => self.clone().handle(pod),
                    Delta::Delete(pod) => self.forget(&pod),
                }
            }
        };
        tokio::join!(informer::run(source, tx, stop), consume);
    }

    /// The pod is gone (its DELETED event): its worker, if any, ends.
    fn forget(&self, pod: &Pod) {
        if let Ok(mut pods) = self.pods.lock() {
            pods.remove(&pod.meta().uid);
        }
    }

    /// Starts or stops `pod` as its state asks, on a worker of its own; never waits.
    fn handle(self: Arc<Self>, pod: Pod) {
        let m = pod.meta();
        let deleting = m.deletion_timestamp.is_some();
        let pending = pod.status.as_ref().is_some_and(|s| s.phase == "Pending");
        let Ok(mut pods) = self.pods.lock() else {
            return;
        };
        match pods.get(&m.uid) {
            Some(Work::Stopping { .. } | Work::Stopped) => {}
            // Replacing a Starting entry cancels its worker: a pod being deleted is not started.
            _ if deleting => {
                let (cancel, token) = Token::new();
                pods.insert(m.uid, Work::Stopping { _cancel: cancel });
                tokio::spawn(self.clone().stop(pod, token));
            }
            None if pending => {
                let (cancel, token) = Token::new();
                pods.insert(m.uid, Work::Starting { _cancel: cancel });
                tokio::spawn(self.clone().start(pod, token));
            }
            _ => {}
        }
    }

    /// A worker is done: its pod's entry becomes `next` (`None`: removed, so that a later event
    /// of the pod may start a worker again), unless the worker was cancelled, in which case the
    /// entry is no longer its own.
    fn finish(&self, uid: &str, token: &Token, next: Option<Work>) {
        let Ok(mut pods) = self.pods.lock() else {
            return;
        };
        // Checked under the lock: entries are replaced and removed under it.
        if token.cancelled() {
            return;
        }
        match next {
            Some(w) => {
                pods.insert(uid.to_string(), w);
            }
            None => {
                pods.remove(uid);
            }
        }
    }

    /// Reads the pod again after a Conflict.
    async fn reread(&self, namespace: &str, name: &str, uid: &str) -> Reread {
        let r = PodsClient::new(self.ch.clone())
            .get(request(GetPodRequest {
                namespace: namespace.to_string(),
                name: name.to_string(),
            }))
            .await;
        match r {
            Ok(p) if p.get_ref().meta().uid == uid => Reread::Same(Box::new(p.into_inner())),
            Ok(_) => Reread::Gone,
            Err(e) if e.code() == Code::NotFound => Reread::Gone,
            Err(e) => Reread::Failed(e),
        }
    }

    /// Marks the pod Running, trying until it is written or the pod is gone (a conflict is
    /// tried again on fresh data while the pod is still Pending).
    async fn start(self: Arc<Self>, mut pod: Pod, mut token: Token) {
        let k = key(&pod);
        let m = pod.meta();
        // What the scheduler and the kubelet say of a pod starting (our agent is both).
        self.events.record(
            reference(&pod),
            "Normal",
            "Scheduled",
            format!(
                "Successfully assigned {}/{} to {}",
                m.namespace, m.name, self.config.node
            ),
        );
        let mut backoff = Backoff::default();
        let started = loop {
            if token.cancelled() {
                return;
            }
            pod.status = Some(status::running(&pod, &self.config.node, now()));
            let r = PodsClient::new(self.ch.clone())
                .update_status(request(UpdatePodRequest {
                    namespace: m.namespace.clone(),
                    pod: Some(pod.clone()),
                    dry_run: false,
                }))
                .await;
            let e = match r {
                Ok(_) => break true,
                Err(e) if e.code() == Code::NotFound => break false,
                Err(e) => e,
            };
            if e.code() == Code::Aborted {
                // Conflict: our copy is stale; decide again on what the pod is now.
                match self.reread(&m.namespace, &m.name, &m.uid).await {
                    Reread::Same(fresh) if fresh.meta().deletion_timestamp.is_some() => {
                        break false; // its stop worker follows from the watch
                    }
                    Reread::Same(fresh) => match fresh.status.as_ref().map(|s| s.phase.as_str()) {
                        Some("Pending") => {
                            pod = *fresh;
                            continue;
                        }
                        // A try whose answer was lost (a timeout) may have written it.
                        Some("Running") => break true,
                        _ => break false,
                    },
                    Reread::Gone => break false,
                    Reread::Failed(e) => {
                        if !token.sleep(backoff.delay(&e)).await {
                            return;
                        }
                        continue;
                    }
                }
            }
            let wait = backoff.delay(&e);
            tracing::warn!(pod = %k, code = ?e.code(), error = %e.message(), ?wait, "could not mark the pod Running; retrying");
            if !token.sleep(wait).await {
                return;
            }
        };
        if started {
            tracing::info!(pod = %k, node = %self.config.node, "started: Running");
            self.events.record(
                reference(&pod),
                "Normal",
                "Started",
                format!("Started container {}", containers(&pod)),
            );
            (self.report)(Action::Started(k));
            self.finish(&m.uid, &token, Some(Work::Started));
        } else {
            self.finish(&m.uid, &token, None);
        }
    }

    /// Writes the stopped containers' terminated state, as the kubelet reports it before its
    /// final delete, trying until it is written, the pod is gone or had nothing running (true:
    /// go on to the delete), or the worker is cancelled or another pod has the name (false).
    async fn report_stopped(&self, mut pod: Pod, token: &mut Token) -> bool {
        let m = pod.meta();
        let k = key(&pod);
        let mut backoff = Backoff::default();
        loop {
            if token.cancelled() {
                return false;
            }
            let Some(stopped) = status::stopped(&pod, now()) else {
                return true;
            };
            pod.status = Some(stopped);
            let r = PodsClient::new(self.ch.clone())
                .update_status(request(UpdatePodRequest {
                    namespace: m.namespace.clone(),
                    pod: Some(pod.clone()),
                    dry_run: false,
                }))
                .await;
            let e = match r {
                Ok(_) => return true,
                // Gone: the final delete finds it so.
                Err(e) if e.code() == Code::NotFound => return true,
                Err(e) => e,
            };
            if e.code() == Code::Aborted {
                // Conflict: report on what the pod is now.
                match self.reread(&m.namespace, &m.name, &m.uid).await {
                    Reread::Same(fresh) => {
                        pod = *fresh;
                        continue;
                    }
                    Reread::Gone => {
                        tracing::info!(pod = %k, "stopped: a new pod has the name");
                        self.finish(&m.uid, token, Some(Work::Stopped));
                        return false;
                    }
                    Reread::Failed(e) => {
                        if !token.sleep(backoff.delay(&e)).await {
                            return false;
                        }
                        continue;
                    }
                }
            }
            let wait = backoff.delay(&e);
            tracing::warn!(pod = %k, code = ?e.code(), error = %e.message(), ?wait, "could not report the stopped containers; retrying");
            if !token.sleep(wait).await {
                return false;
            }
        }
    }

    /// Stops the pod, then sends the kubelet's final delete until it is done or the pod is gone.
    async fn stop(self: Arc<Self>, pod: Pod, mut token: Token) {
        let m = pod.meta();
        let k = key(&pod);
        let grace = m.deletion_grace_period_seconds.unwrap_or(0).max(0) as u64;
        let wait = self.config.stop_delay.min(Duration::from_secs(grace));
        tracing::info!(pod = %k, ?wait, "stopping");
        self.events.record(
            reference(&pod),
            "Normal",
            "Killing",
            format!("Stopping container {}", containers(&pod)),
        );
        if !token.sleep(wait).await {
            return;
        }
        if !self.report_stopped(pod.clone(), &mut token).await {
            return;
        }
        let options = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(m.uid.clone()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let mut backoff = Backoff::default();
        loop {
            if token.cancelled() {
                return;
            }
            let r = PodsClient::new(self.ch.clone())
                .delete(request(DeletePodRequest {
                    namespace: m.namespace.clone(),
                    name: m.name.clone(),
                    options: Some(options.clone()),
                }))
                .await;
            let e = match r {
                Ok(_) => {
                    tracing::info!(pod = %k, "stopped: deleted with grace 0");
                    break;
                }
                // Gone: what the final delete was for.
                Err(e) if e.code() == Code::NotFound => {
                    tracing::info!(pod = %k, "stopped: already gone");
                    break;
                }
                Err(e) => e,
            };
            if e.code() == Code::Aborted {
                // The UID precondition failed or the delete conflicted: is our pod still there?
                match self.reread(&m.namespace, &m.name, &m.uid).await {
                    Reread::Gone => {
                        // Another pod has the name now: nothing of ours to delete.
                        tracing::info!(pod = %k, "stopped: a new pod has the name");
                        self.finish(&m.uid, &token, Some(Work::Stopped));
                        return;
                    }
                    Reread::Same(_) => {}
                    Reread::Failed(e) => {
                        if !token.sleep(backoff.delay(&e)).await {
                            return;
                        }
                        continue;
                    }
                }
            }
            let wait = backoff.delay(&e);
            tracing::warn!(pod = %k, code = ?e.code(), error = %e.message(), ?wait, "final delete failed; retrying");
            if !token.sleep(wait).await {
                return;
            }
        }
        (self.report)(Action::Deleted(k));
        self.finish(&m.uid, &token, Some(Work::Stopped));
    }
}
