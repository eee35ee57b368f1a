//! Leader election on a `coordination.v1` Lease, as client-go's `leaderelection` does: every
//! candidate tries to take or renew the Lease every `retry_period`; every write is an Update of
//! the Lease as last read (its resourceVersion a precondition), so two candidates racing produce
//! one success and one Conflict. A Lease held by another is taken only once its record has not
//! changed for its `leaseDurationSeconds`, judged by the time *this* candidate saw it change
//! (never by comparing clocks). A leader that cannot renew within `renew_deadline` stops
//! leading. On a clean shutdown the leader empties the holder so another takes over at once.

use std::time::{Duration, Instant};

use kubestore_proto::{
    Timestamp,
    coordination::v1::{
        CreateLeaseRequest, GetLeaseRequest, Lease, LeaseSpec, UpdateLeaseRequest,
        leases_client::LeasesClient,
    },
    meta::v1::ObjectMeta,
};
use tokio::sync::watch;
use tonic::{Code, Request, Status};

use crate::{Ch, client::CALL_TIMEOUT};

/// Settings (client-go's defaults: 15 s, 10 s, 2 s).
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This candidate's identity (`hostname_uuid`).
    pub identity: String,
    /// How long a claim lasts without renewal.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// How often candidates try.
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// client-go's checks: lease duration > renew deadline > 1.2 x retry period > 0.
    pub fn check(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("retry period must be greater than zero".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        if self.renew_deadline <= self.retry_period.mul_f64(1.2) {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if self.identity.is_empty() {
            return Err("leader election requires a non-empty identity".into());
        }
        Ok(())
    }
}

/// Now, as a Timestamp with microseconds (upstream's MicroTime).
fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        seconds: d.as_secs() as i64,
        nanos: (d.subsec_micros() * 1000) as i32,
    }
}

/// One candidate.
pub struct Elector {
    client: LeasesClient<Ch>,
    config: LeaderConfig,
    /// The Lease as last read or written by us.
    lease: Option<Lease>,
    /// The spec last observed, and when it was observed to change.
    observed: Option<(LeaseSpec, Instant)>,
}

fn call<T>(m: T) -> Request<T> {
    let mut r = Request::new(m);
    r.set_timeout(CALL_TIMEOUT);
    r
}

impl Elector {
    /// A candidate using `ch`.
    pub fn new(ch: Ch, config: LeaderConfig) -> Self {
        Self {
            client: LeasesClient::new(ch),
            config,
            lease: None,
            observed: None,
        }
    }

    fn leading(&self) -> bool {
        self.observed.as_ref().is_some_and(|(s, at)| {
            s.holder_identity.as_deref() == Some(self.config.identity.as_str())
                && at.elapsed() < self.config.lease_duration
        })
    }

    fn our_spec(&self, previous: Option<&LeaseSpec>) -> LeaseSpec {
        let t = now();
        let held = previous
            .is_some_and(|p| p.holder_identity.as_deref() == Some(self.config.identity.as_str()));
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_duration.as_secs().max(1) as i32),
            acquire_time: if held {
                previous.and_then(|p| p.acquire_time)
            } else {
                Some(t)
            },
            renew_time: Some(t),
            // As client-go: a new holder of an existing Lease is one more transition.
            lease_transitions: Some(match previous {
                Some(_) if !held => transitions + 1,
                _ => transitions,
            }),
        }
    }

    fn observe(&mut self, spec: &LeaseSpec) {
        if self.observed.as_ref().is_none_or(|(s, _)| s != spec) {
            self.observed = Some((spec.clone(), Instant::now()));
        }
    }

    /// client-go's `tryAcquireOrRenew`: Ok(true) when this candidate holds the Lease now.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, Status> {
        // Fast path: a leader renews the Lease it last wrote.
        if self.leading()
            && let Some(mut lease) = self.lease.clone()
        {
            let spec = self.our_spec(lease.spec.as_ref());
            lease.spec = Some(spec.clone());
            let req = UpdateLeaseRequest {
                namespace: self.config.namespace.clone(),
                lease: Some(lease),
                dry_run: false,
            };
            if let Ok(written) = self.client.update(call(req)).await {
                let written = written.into_inner();
                self.observe(&spec);
                self.lease = Some(written);
                return Ok(true);
            }
        }
        let got = self
            .client
            .get(call(GetLeaseRequest {
                namespace: self.config.namespace.clone(),
                name: self.config.name.clone(),
            }))
            .await;
        let current = match got {
            Ok(l) => l.into_inner(),
            Err(s) if s.code() == Code::NotFound => {
                let spec = self.our_spec(None);
                let lease = Lease {
                    metadata: Some(ObjectMeta {
                        name: self.config.name.clone(),
                        namespace: self.config.namespace.clone(),
                        ..Default::default()
                    }),
                    spec: Some(spec.clone()),
                };
                let created = self
                    .client
                    .create(call(CreateLeaseRequest {
                        namespace: self.config.namespace.clone(),
                        lease: Some(lease),
                        dry_run: false,
                    }))
                    .await?
                    .into_inner();
                self.observe(&spec);
                self.lease = Some(created);
                return Ok(true);
            }
            Err(s) => return Err(s),
        };
        let spec = current.spec.clone().unwrap_or_default();
        self.observe(&spec);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
        let observed_at = self.observed.as_ref().map(|(_, at)| *at);
        if !holder.is_empty()
            && holder != self.config.identity
            && observed_at.is_some_and(|at| at.elapsed() < duration)
        {
            self.lease = Some(current);
            return Ok(false);
        }
        let next = self.our_spec(Some(&spec));
        let mut lease = current;
        lease.spec = Some(next.clone());
        let written = self
            .client
            .update(call(UpdateLeaseRequest {
                namespace: self.config.namespace.clone(),
                lease: Some(lease),
                dry_run: false,
            }))
            .await?
            .into_inner();
        self.observe(&next);
        self.lease = Some(written);
        Ok(true)
    }

    /// Lets go of the Lease if held: an empty holder, so another candidate takes it at once.
    pub async fn release(&mut self) {
        if !self.leading() {
            return;
        }
        let Some(mut lease) = self.lease.clone() else {
            return;
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now());
        spec.acquire_time = spec.renew_time;
        lease.spec = Some(spec);
        let _ = self
            .client
            .update(call(UpdateLeaseRequest {
                namespace: self.config.namespace.clone(),
                lease: Some(lease),
                dry_run: false,
            }))
            .await;
        self.observed = None;
    }
}

/// A random extra of up to 1.2 x `base` (client-go's JitterFactor).
fn jittered(base: Duration) -> Duration {
    use std::hash::{BuildHasher, RandomState};
    let r = RandomState::new().hash_one(Instant::now()) % 1000;
    base + base.mul_f64(1.2 * r as f64 / 1000.0)
}

/// Campaigns until `stop`: while this candidate leads, `lead` runs with a stop signal that is
/// raised when leadership is lost (or on `stop`); then campaigns again. `leading` follows
/// whether it leads.
pub async fn run<F, Fut>(
    ch: Ch,
    config: LeaderConfig,
    mut stop: watch::Receiver<bool>,
    leading: watch::Sender<bool>,
    lead: F,
) where
    F: Fn(watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut elector = Elector::new(ch, config.clone());
    loop {
        // Acquire.
        loop {
            if *stop.borrow() {
                return;
            }
            match elector.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(s) => tracing::debug!(error = %s.message(), "leader election: lease not taken"),
            }
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(jittered(config.retry_period)) => {}
            }
        }
        tracing::info!(identity = %config.identity, lease = %config.name, "leader election: leading");
        let _ = leading.send(true);
        let (lost_tx, lost_rx) = watch::channel(false);
        let work = tokio::spawn(lead(lost_rx));
        // Renew.
        let mut last_renewal = Instant::now();
        let stopped = loop {
            tokio::select! {
                _ = stop.changed() => break true,
                _ = tokio::time::sleep(config.retry_period) => {}
            }
            let attempt = tokio::time::timeout(
                config.renew_deadline.saturating_sub(last_renewal.elapsed()),
                elector.try_acquire_or_renew(),
            )
            .await;
            match attempt {
                Ok(Ok(true)) => last_renewal = Instant::now(),
                other => {
                    if let Ok(Err(s)) = &other {
                        tracing::debug!(error = %s.message(), "leader election: renewal failed");
                    }
                    if last_renewal.elapsed() >= config.renew_deadline
                        || matches!(other, Ok(Ok(false)))
                    {
                        tracing::warn!(identity = %config.identity, "leader election: failed to renew lease; no longer leading");
                        break false;
                    }
                }
            }
        };
        let _ = lost_tx.send(true);
        let _ = work.await;
        let _ = leading.send(false);
        if stopped {
            elector.release().await;
            return;
        }
    }
}
