//! Runs one operation at a fixed concurrency and measures it.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

/// What one scenario measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) ops: usize,
    pub(crate) errors: usize,
    pub(crate) elapsed: Duration,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

impl Stats {
    pub(crate) fn ops_per_sec(&self) -> f64 {
        if self.elapsed.is_zero() {
            0.0
        } else {
            self.ops as f64 / self.elapsed.as_secs_f64()
        }
    }
}

/// Runs `total` operations on `concurrency` workers; `op(i)` performs operation `i` (each index
/// once). Errors are counted, not fatal: a benchmark reports them next to the rate.
pub(crate) async fn run<F, Fut>(concurrency: usize, total: usize, op: F) -> Stats
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (op, next) = (op.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let t = Instant::now();
                match op(i).await {
                    Ok(()) => lat.push(t.elapsed()),
                    Err(e) => errors.push(e),
                }
            }
            (lat, errors)
        }));
    }
    let mut lat = Vec::with_capacity(total);
    let mut errors = 0;
    let mut first_error = None;
    for w in workers {
        if let Ok((l, e)) = w.await {
            lat.extend(l);
            errors += e.len();
            if first_error.is_none() {
                first_error = e.into_iter().next();
            }
        }
    }
    let elapsed = start.elapsed();
    if let Some(e) = first_error {
        eprintln!("    {errors} errors, first: {e}");
    }
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Stats {
        ops: lat.len(),
        errors,
        elapsed,
        p50: pct(0.50),
        p99: pct(0.99),
    }
}
