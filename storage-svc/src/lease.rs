//! TTLs with etcd leases, reusing one lease for many objects as upstream's `leaseManager` does:
//! granting a lease per object would cost an etcd round trip per write and leave etcd with as
//! many leases as objects (Events are written at high rates, each with a TTL).
//!
//! A lease granted for `ttl` lives `ttl + reuse` seconds, where `reuse = min(5% of ttl, 60 s)`;
//! later requests whose TTL would end inside that lease's life (and not more than `reuse`
//! before its end) share it, up to [`MAX_OBJECTS_PER_LEASE`] objects. An object written with TTL
//! `t` therefore expires after `t` to `t + reuse` seconds.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::{
    error::StorageError,
    etcd::{Etcd, EtcdCall},
};

/// Reuse window cap, upstream's `ReuseDurationSeconds`.
pub const REUSE_DURATION_SECONDS: i64 = 60;
/// Objects attached to one lease before a new one is granted, upstream's `MaxObjectCount`.
pub const MAX_OBJECTS_PER_LEASE: u32 = 1000;

#[derive(Debug, Default)]
struct Current {
    id: i64,
    expires: Option<Instant>,
    attached: u32,
}

/// Hands out etcd lease ids for TTLs.
#[derive(Debug, Default)]
pub struct LeaseManager {
    current: Mutex<Current>,
}

impl LeaseManager {
    /// A lease id for an object that must expire after `ttl` seconds (> 0).
    pub async fn lease_for(
        &self,
        etcd: &Etcd,
        call: &EtcdCall<'_>,
        ttl: i64,
    ) -> Result<i64, StorageError> {
        // The mutex is held across the grant, as upstream does, so that a burst of writers
        // shares one new lease instead of granting one each.
        let mut cur = self.current.lock().await;
        let now = Instant::now();
        let reuse = reuse_seconds(ttl);
        let wanted_end = now + Duration::from_secs(ttl as u64);
        cur.attached += 1;
        if let Some(expires) = cur.expires {
            let valid = wanted_end < expires;
            let sufficient = wanted_end + Duration::from_secs(reuse as u64) > expires;
            if valid && sufficient && cur.attached <= MAX_OBJECTS_PER_LEASE {
                etcd.metrics.lease_attachments.inc();
                return Ok(cur.id);
            }
        }
        let id = etcd.lease_grant(call, ttl + reuse).await?;
        cur.id = id;
        cur.expires = Some(now + Duration::from_secs((ttl + reuse) as u64));
        cur.attached = 1;
        etcd.metrics.lease_attachments.inc();
        Ok(id)
    }
}

/// Upstream's reuse window: 5% of the TTL, at most a minute.
pub fn reuse_seconds(ttl: i64) -> i64 {
    ((ttl as f64 * 0.05) as i64).min(REUSE_DURATION_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_window_matches_upstream() {
        assert_eq!(reuse_seconds(3600), 60);
        assert_eq!(reuse_seconds(1000), 50);
        assert_eq!(reuse_seconds(1), 0);
        assert_eq!(reuse_seconds(100_000), 60);
    }
}
