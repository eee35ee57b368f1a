//! Where validation that may take long runs: off the async workers, a bounded number at a
//! time, and not past the request's deadline.
//!
//! registry-svc serves every call on a couple of tokio workers. An evaluation of CEL rules (up
//! to the per-request budget, about a second of CPU) or the schema validation of a large
//! object run on one of them used to hold it for as long: two such writes starved every other
//! call (a bystander's List went from 9 ms to 4.4 s). [`offload`] runs such work with
//! `tokio::task::block_in_place` (the worker hands its other tasks to a new thread first), and
//! at most [`permits`] at once: one core fewer than the machine has, so other calls always
//! find one. Waiting for a permit is bounded by the request's deadline (set by the service
//! with [`with_deadline`]) and by [`MAX_WAITING`] waiters.
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
/// How long a call without a deadline waits for a permit.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `f` with `deadline` as the deadline of the validation it does.
pub async fn with_deadline<F: std::future::Future>(deadline: Instant, f: F) -> F::Output {
    DEADLINE.scope(deadline, f).await
}

/// The deadline of the request being served, if the service set one.
pub fn deadline() -> Option<Instant> {
    DEADLINE.try_with(|d| *d).ok()
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
        HOLDING.with(|h| h.set(false));
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
pub fn offload<T>(f: impl FnOnce() -> T) -> Result<T, String> {
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
        HOLDING.with(|h| h.set(true));
        Ok(f())
    })
}
