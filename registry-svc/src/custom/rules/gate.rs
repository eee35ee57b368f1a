//! Where validation that may take long runs: off the async workers, a bounded number at a
//! time, and not past the request's deadline.
//!
//! registry-svc serves every call on a couple of tokio workers. An evaluation of CEL rules (up
//! to the per-request budget, about a second of CPU) or the schema validation of a large
//! object run on one of them used to hold it for as long: two such writes starved every other
//! call (a bystander's List went from 9 ms to 4.4 s). [`offload`] runs such work with
//! `tokio::task::block_in_place` (the worker hands its other tasks to a new thread first), and
//! at most [`permits`] at once: one core fewer than the machine has, so other calls always
//! find one. Waiting for a permit is bounded by the request's deadline (the Store's verbs set it
//! for the work they do, `store::with_deadline`, whatever the transport) and by [`MAX_WAITING`]
//! waiters.
//!
//! Upstream runs CEL on the request's goroutine, interrupted by the request's context; the
//! Go scheduler preempts it. An interruption is reported as upstream's is: an `Invalid` entry
//! whose text starts with "operation interrupted".

use std::{
    sync::{Condvar, LazyLock, Mutex},
    time::{Duration, Instant},
};

/// Calls waiting for a permit, at most; more are refused at once.
pub const MAX_WAITING: usize = 256;
/// The stack of the thread a validation runs on (reserved, not committed).
const STACK_BYTES: usize = 64 << 20;
/// How long a call without a deadline waits for a permit.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

pub use crate::store::with_deadline;

/// The deadline of the request being served, if the Store's verb set one.
pub fn deadline() -> Option<Instant> {
    crate::store::deadline()
}

/// Validations that may run at once: one fewer than the cores, at least one.
pub fn permits() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().saturating_sub(1))
        .unwrap_or(1)
        .max(1)
}

struct Gate {
    state: Mutex<(usize, usize)>,
    freed: Condvar,
    permits: usize,
}

static GATE: LazyLock<Gate> = LazyLock::new(|| Gate {
    state: Mutex::new((0, 0)),
    freed: Condvar::new(),
    permits: permits(),
});

/// Holds a permit; gives it back when dropped.
struct Permit;

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 -= 1;
        drop(s);
        GATE.freed.notify_one();
    }
}

fn acquire(until: Instant) -> Result<Permit, String> {
    let mut s = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    if s.0 < GATE.permits {
        s.0 += 1;
        return Ok(Permit);
    }
    if s.1 >= MAX_WAITING {
        return Err(format!(
            "operation interrupted: {MAX_WAITING} validations are waiting already"
        ));
    }
    s.1 += 1;
    loop {
        let now = Instant::now();
        if now >= until {
            s.1 -= 1;
            if s.0 < GATE.permits {
                // A permit freed as this waiter gave up: another waiter may take it.
                GATE.freed.notify_one();
            }
            return Err(
                "operation interrupted: the request's deadline passed before its validation could start"
                    .into(),
            );
        }
        s = GATE
            .freed
            .wait_timeout(s, until - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if s.0 < GATE.permits {
            s.0 += 1;
            s.1 -= 1;
            return Ok(Permit);
        }
    }
}

fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        // A current-thread runtime (tests) cannot hand its tasks over; no runtime: a plain
        // thread.
        _ => f(),
    }
}

thread_local! {
    /// Whether this thread holds a permit (nested validation runs on it).
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` off the async workers, with a permit; the interruption's description when no
/// permit was free before the request's deadline.
pub fn offload<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    if HOLDING.with(|h| h.get()) {
        return Ok(f());
    }
    let until = deadline().unwrap_or_else(|| Instant::now() + DEFAULT_WAIT);
    {
        // Checked before leaving the worker, so that at most this many threads (and the
        // workers) wait in `block_in_place`.
        let s = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.0 >= GATE.permits && s.1 >= MAX_WAITING {
            return Err(format!(
                "operation interrupted: {MAX_WAITING} validations are waiting already"
            ));
        }
    }
    blocking(|| {
        let _permit = acquire(until)?;
        // The `cel` crate evaluates (and the estimator walks) expressions recursively: an
        // expression nested as deep as compilation allows (`MAX_DEPTH`) needs several MiB of
        // stack in a debug build, more than a worker's 2 MiB; an overflow aborts the process.
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("validation".into())
                .stack_size(STACK_BYTES)
                .spawn_scoped(scope, || {
                    HOLDING.with(|h| h.set(true));
                    f()
                })
                .map_err(|e| format!("operation interrupted: no thread to validate on: {e}"))?;
            match worker.join() {
                Ok(out) => Ok(out),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    #[test]
    fn a_validation_waits_for_a_permit_no_longer_than_its_deadline() {
        // Hold every permit for a while.
        let n = GATE.permits;
        let started = Arc::new(Barrier::new(n + 1));
        let holders: Vec<_> = (0..n)
            .map(|_| {
                let started = started.clone();
                std::thread::spawn(move || {
                    offload(|| {
                        started.wait();
                        std::thread::sleep(Duration::from_millis(700));
                    })
                })
            })
            .collect();
        started.wait();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let begun = Instant::now();
        let r = runtime.block_on(async {
            // On a worker, with the request's deadline 100 ms away.
            tokio::spawn(with_deadline(
                Instant::now() + Duration::from_millis(100),
                async { offload(|| "ran") },
            ))
            .await
            .expect("task")
        });
        let waited = begun.elapsed();
        let e = r.expect_err("no permit before the deadline");
        assert!(e.starts_with("operation interrupted"), "{e}");
        assert!(waited < Duration::from_millis(600), "{waited:?}");
        for h in holders {
            h.join().expect("holder").expect("held a permit");
        }
        // Once they are free, it runs; on a current-thread runtime, in place.
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(current.block_on(async { offload(|| 7) }), Ok(7));
        assert_eq!(
            offload(|| offload(|| 8)),
            Ok(Ok(8)),
            "nested, on its permit"
        );
    }
}
