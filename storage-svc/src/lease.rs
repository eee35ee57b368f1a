//! TTLs with etcd leases, reusing one lease for many objects as upstream's `leaseManager` does:
//! granting a lease per object would cost an etcd round trip per write and leave etcd with as
//! many leases as objects (Events are written at high rates, each with a TTL).
//!
//! A lease granted for `ttl` lives `ttl + reuse` seconds, where `reuse = min(5% of ttl, 60 s)`;
//! later requests whose TTL would end inside that lease's life (and not more than `reuse`
//! before its end) share it, up to [`MAX_OBJECTS_PER_LEASE`] objects. An object written with TTL
//! `t` therefore expires after `t` to `t + reuse` seconds.
//!
//! A TTL above etcd's own maximum (`MaxLeaseTTL`, 9e9 s) is refused before any I/O, and a lease
//! that etcd no longer knows (revoked by an operator, or lost) is forgotten so that the next
//! write gets a fresh one instead of failing until the cached lease's local expiry.

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
/// etcd's `MaxLeaseTTL`: a longer lease is refused by etcd.
pub const ETCD_MAX_LEASE_TTL_SECONDS: i64 = 9_000_000_000;
/// Longest TTL accepted: the lease (TTL plus reuse window) must stay within etcd's maximum.
pub const MAX_TTL_SECONDS: i64 = ETCD_MAX_LEASE_TTL_SECONDS - REUSE_DURATION_SECONDS;

/// Rejects a TTL that is negative or longer than etcd can hold (0 = no TTL).
pub fn validate_ttl(key: &str, ttl: i64) -> Result<(), StorageError> {
    if ttl < 0 {
        return Err(StorageError::invalid(
            key,
            format!("ttl_seconds must not be negative, got {ttl}"),
        ));
    }
    if ttl > MAX_TTL_SECONDS {
        return Err(StorageError::invalid(
            key,
            format!(
                "ttl_seconds must be at most {MAX_TTL_SECONDS} (etcd's maximum lease TTL less the reuse window), got {ttl}"
            ),
        ));
    }
    Ok(())
}

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
        validate_ttl(call.key, ttl)?;
        // The mutex is held across the grant, as upstream does, so that a burst of writers
        // shares one new lease instead of granting one each.
        let mut cur = self.current.lock().await;
        let now = Instant::now();
        let reuse = reuse_seconds(ttl);
        let after = |secs: i64| now.checked_add(Duration::from_secs(secs.unsigned_abs()));
        let (Some(wanted_end), Some(lease_end)) = (after(ttl), after(ttl + reuse)) else {
            return Err(StorageError::invalid(
                call.key,
                format!("ttl_seconds {ttl} is beyond this machine's clock"),
            ));
        };
        cur.attached += 1;
        if let Some(expires) = cur.expires {
            let valid = wanted_end < expires;
            let sufficient = lease_end > expires;
            if valid && sufficient && cur.attached <= MAX_OBJECTS_PER_LEASE {
                etcd.metrics.lease_attachments.inc();
                return Ok(cur.id);
            }
        }
        let id = etcd.lease_grant(call, ttl + reuse).await?;
        cur.id = id;
        cur.expires = Some(lease_end);
        cur.attached = 1;
        etcd.metrics.lease_attachments.inc();
        Ok(id)
    }

    /// Forgets `lease` if it is the one being handed out: etcd said it no longer exists.
    pub async fn forget(&self, lease: i64) {
        let mut cur = self.current.lock().await;
        if cur.id == lease {
            *cur = Current::default();
        }
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

    #[test]
    fn ttls_are_bounded_by_etcd() {
        assert!(validate_ttl("/k", 0).is_ok());
        assert!(validate_ttl("/k", MAX_TTL_SECONDS).is_ok());
        for bad in [-1, MAX_TTL_SECONDS + 1, i64::MAX] {
            let e = validate_ttl("/k", bad).expect_err("out of range");
            assert!(matches!(e, StorageError::Invalid { .. }), "{e}");
        }
    }
}
