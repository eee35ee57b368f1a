//! `kubestore controller-manager`: leader election, then the controllers (the garbage collector
//! and the namespace controller) while this process leads; the `/metrics` endpoint. Talks to registry-svc only
//! through its public gRPC API, over a channel that connects lazily, so a controller-manager
//! started before registry-svc waits for it (backing off) instead of failing.

use std::{net::SocketAddr, time::Duration};

use tokio::sync::watch;

use crate::{
    Ch,
    gc::{self, GcConfig},
    leader::{self, LeaderConfig},
    metrics::ControllerMetrics,
    quota::QuotaConfig,
};

/// Settings of a controller-manager.
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// Leader election.
    pub leader: LeaderConfig,
    /// The garbage collector.
    pub gc: GcConfig,
    /// The ResourceQuota controller.
    pub quota: QuotaConfig,
    /// Where `/metrics` is served (None: not served).
    pub metrics_addr: Option<SocketAddr>,
}

impl ManagerConfig {
    /// Defaults (client-go's lease timings, upstream's lock name) for `identity`.
    pub fn new(identity: String) -> Self {
        Self {
            leader: LeaderConfig {
                namespace: "kube-system".into(),
                name: "kube-controller-manager".into(),
                identity,
                lease_duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            },
            gc: GcConfig::default(),
            quota: QuotaConfig::default(),
            metrics_addr: None,
        }
    }
}

/// A default identity: host name and a random suffix (as kube components do).
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kubestore".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// What `run` reports while it runs.
#[derive(Clone)]
pub struct Handle {
    /// Whether this process leads now.
    pub leading: watch::Receiver<bool>,
    /// The `/metrics` address, when served.
    pub metrics_addr: Option<SocketAddr>,
}

/// Runs the controller-manager until `stop` is raised; `started` hears its [`Handle`] once the
/// metrics endpoint is bound.
pub async fn run(
    ch: Ch,
    config: ManagerConfig,
    stop: watch::Receiver<bool>,
    started: impl FnOnce(Handle),
) -> Result<(), String> {
    config.leader.check()?;
    let registry = kubestore_telemetry::Metrics::new();
    let metrics = ControllerMetrics::register(&registry);
    let mut metrics_addr = None;
    if let Some(addr) = config.metrics_addr {
        let mut s = stop.clone();
        let local = registry
            .spawn_server(addr, async move {
                let _ = s.wait_for(|v| *v).await;
            })
            .await
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        metrics_addr = Some(local);
    }
    let (leading_tx, leading_rx) = watch::channel(false);
    started(Handle {
        leading: leading_rx,
        metrics_addr,
    });
    let name = config.leader.name.clone();
    let gauge = metrics
        .leader
        .get_or_create(&vec![("name".to_string(), name)])
        .clone();
    let mut observe = leading_tx.subscribe();
    tokio::spawn(async move {
        while observe.changed().await.is_ok() {
            gauge.set(i64::from(*observe.borrow()));
        }
    });
    let gc_config = config.gc.clone();
    let quota_config = config.quota.clone();
    leader::run(ch.clone(), config.leader, stop, leading_tx, move |lost| {
        let (ch, gc_config, metrics) = (ch.clone(), gc_config.clone(), metrics.clone());
        let quota_config = quota_config.clone();
        async move {
            tokio::join!(
                gc::run(ch.clone(), gc_config, metrics, lost.clone()),
                crate::namespace::run(ch.clone(), lost.clone()),
                crate::quota::run(ch.clone(), quota_config, lost.clone()),
                crate::serviceaccounts::run(ch, lost),
            );
        }
    })
    .await;
    Ok(())
}
