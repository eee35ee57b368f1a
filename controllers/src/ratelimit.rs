//! A token bucket for the requests controllers send (client-go's
//! `flowcontrol.NewTokenBucketRateLimiter`, behind kube-controller-manager's `--kube-api-qps`
//! and `--kube-api-burst`): `qps` tokens a second, at most `burst` saved up. A caller takes a
//! token before each request and waits for one when none is left, so a cascade of thousands of
//! deletions is spread out instead of taking the registry's capacity from other clients.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// See the module docs. Clones share one bucket.
#[derive(Clone, Debug, Default)]
pub struct RateLimiter(Option<Arc<Mutex<Bucket>>>);

#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    /// Tokens left; negative when callers wait for tokens not yet made.
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// `qps` requests a second, `burst` at once; `qps <= 0` means no limit.
    pub fn new(qps: f64, burst: u32) -> Self {
        if qps <= 0.0 || !qps.is_finite() {
            return Self(None);
        }
        let burst = f64::from(burst.max(1));
        Self(Some(Arc::new(Mutex::new(Bucket {
            qps,
            burst,
            tokens: burst,
            at: Instant::now(),
        }))))
    }

    /// Takes a token, waiting for it when the bucket is empty.
    pub async fn wait(&self) {
        let Some(bucket) = &self.0 else { return };
        let delay = {
            let mut b = bucket.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let made = now.duration_since(b.at).as_secs_f64() * b.qps;
            b.tokens = (b.tokens + made).min(b.burst);
            b.at = now;
            // Reserve the token now (the balance may go negative): waiters are served in the
            // order they came, each after its own share of time.
            b.tokens -= 1.0;
            if b.tokens >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-b.tokens / b.qps)
            }
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_passes_at_once_then_requests_are_spaced_by_the_rate() {
        let limiter = RateLimiter::new(100.0, 5);
        let start = Instant::now();
        for _ in 0..5 {
            limiter.wait().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(30),
            "the burst waits"
        );
        let start = Instant::now();
        for _ in 0..10 {
            limiter.wait().await;
        }
        // Ten more at 100 a second: about 100 ms (a lower bound only).
        assert!(
            start.elapsed() >= Duration::from_millis(80),
            "{:?}",
            start.elapsed()
        );
        // No limit: nothing waits.
        let free = RateLimiter::new(0.0, 0);
        let start = Instant::now();
        for _ in 0..1000 {
            free.wait().await;
        }
        assert!(start.elapsed() < Duration::from_millis(50));
    }
}
