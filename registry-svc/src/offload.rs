//! Work that may take long, off the runtime's async workers: CEL validation (up to a request's
//! budget, about a second of CPU), the schema validation of a large object, and CPU work that
//! grows with a request's input (decoding a 3 MiB body, applying a patch, converting a large
//! object to and from Kubernetes JSON).
//!
//! registry-svc serves every call on a couple of tokio workers. Such work on one of them used to
//! hold it for as long: two costly validations took a bystander's List from 9 ms to 4.4 s, and
//! two large patches blocked every request for seconds. Go's scheduler preempts such work in
//! kube-apiserver; here it is moved aside, by one gate:
//!
//! - work on less than [`INLINE_BYTES`] of input runs where it is (a thread hop costs more);
//! - other work runs under `tokio::task::block_in_place` (the worker hands its other tasks to
//!   a new thread first), at most [`permits`] jobs at once: one core fewer than the machine
//!   has, so other calls always find one;
//! - waiting for a permit is bounded by the request's deadline and by [`MAX_WAITING`] waiters;
//!   the work itself checks the deadline where it loops (CEL's budget,
//!   `kubestore_apimachinery::patch::Limits`);
//! - work nested in work that holds a permit runs on that permit.
//!
//! On a current-thread runtime (some tests) work runs in place: there is no other worker to
//! protect.

use std::{
    sync::{Condvar, LazyLock, Mutex},
    time::{Duration, Instant},
};

use crate::error::ApiError;

/// Input below which work runs inline.
pub const INLINE_BYTES: usize = 64 * 1024;
/// Calls waiting for a permit, at most; more are refused at once.
pub const MAX_WAITING: usize = 256;
/// The stack of the thread a validation runs on (reserved, not committed).
const STACK_BYTES: usize = 64 << 20;
/// How long a call without a deadline waits for a permit.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// Jobs that may run at once: one fewer than the cores, at least one.
pub fn permits() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().saturating_sub(1))
        .unwrap_or(1)
        .max(1)
}

struct Gate {
    /// Permits taken, and callers waiting.
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

/// Why no permit was had.
enum Refused {
    /// [`MAX_WAITING`] callers wait already.
    Crowded,
    /// The deadline passed first.
    Deadline,
}

fn acquire(until: Instant) -> Result<Permit, Refused> {
    let mut s = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    if s.0 < GATE.permits {
        s.0 += 1;
        return Ok(Permit);
    }
    if s.1 >= MAX_WAITING {
        return Err(Refused::Crowded);
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
            return Err(Refused::Deadline);
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

/// Whether [`MAX_WAITING`] callers wait already (checked before leaving the worker, so that
/// at most this many threads, and the workers, wait in `block_in_place`).
fn crowded() -> bool {
    let s = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    s.0 >= GATE.permits && s.1 >= MAX_WAITING
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
    /// Whether this thread holds a permit (nested work runs on it).
    static HOLDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as holding a permit while it lives.
struct Holding(bool);

impl Holding {
    fn set() -> Self {
        Self(HOLDING.with(|h| h.replace(true)))
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        HOLDING.with(|h| h.set(self.0));
    }
}

/// Upstream's 504 for a request past its deadline.
pub fn timeout() -> ApiError {
    ApiError::Unavailable {
        reason: "Timeout",
        message:
            "Timeout: request did not complete within requested timeout - context deadline exceeded"
                .into(),
    }
}

fn too_many() -> ApiError {
    ApiError::TooManyRequests(format!(
        "Too many requests, please try again later: {MAX_WAITING} requests are waiting for CPU already"
    ))
}

/// The work of reading `raw` as YAML, in bytes of input it is like: its size, except with
/// aliases, which may expand to far more (up to the bound of `kubestore_apimachinery::yaml`,
/// about half a second of CPU for a 15 KB body): such a body is read off the async workers
/// whatever its size.
pub fn yaml_size(raw: &[u8]) -> usize {
    if raw.contains(&b'*') {
        raw.len().max(INLINE_BYTES)
    } else {
        raw.len()
    }
}

/// Runs `work`, whose input is `size` bytes: in place when small, else off the async workers
/// with a permit, waiting for one until `deadline` (504 after it; 429 when [`MAX_WAITING`]
/// callers wait already).
pub fn run<T>(
    size: usize,
    deadline: Option<Instant>,
    work: impl FnOnce() -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    if size < INLINE_BYTES || HOLDING.with(|h| h.get()) {
        return work();
    }
    if crowded() {
        return Err(too_many());
    }
    let until = deadline.unwrap_or_else(|| Instant::now() + DEFAULT_WAIT);
    blocking(|| {
        let _permit = acquire(until).map_err(|r| match r {
            Refused::Crowded => too_many(),
            Refused::Deadline => timeout(),
        })?;
        if Instant::now() >= until {
            return Err(timeout());
        }
        let _holding = Holding::set();
        work()
    })
}

/// Runs a validation (CEL rules, a schema) off the async workers with a permit, on a thread
/// with a large stack; the interruption's description, in upstream's words, when no permit
/// was free before the request's deadline (`store::deadline`).
///
/// Upstream runs CEL on the request's goroutine, interrupted by the request's context; an
/// interruption is reported as upstream's is: an `Invalid` entry whose text starts with
/// "operation interrupted".
pub fn validation<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    if HOLDING.with(|h| h.get()) {
        return Ok(f());
    }
    if crowded() {
        return Err(format!(
            "operation interrupted: {MAX_WAITING} validations are waiting already"
        ));
    }
    let until = crate::store::deadline().unwrap_or_else(|| Instant::now() + DEFAULT_WAIT);
    blocking(|| {
        let _permit = acquire(until).map_err(|r| match r {
            Refused::Crowded => format!(
                "operation interrupted: {MAX_WAITING} validations are waiting already"
            ),
            Refused::Deadline => "operation interrupted: the request's deadline passed before its validation could start".to_string(),
        })?;
        // The `cel` crate evaluates (and the estimator walks) expressions recursively: an
        // expression nested as deep as compilation allows (`MAX_DEPTH`) needs several MiB of
        // stack in a debug build, more than a worker's 2 MiB; an overflow aborts the process.
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("validation".into())
                .stack_size(STACK_BYTES)
                .spawn_scoped(scope, || {
                    let _holding = Holding::set();
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

/// [`validation`] of `validate`'s violations; an interruption is one violation at the root,
/// in upstream's words (`Invalid value: "object": operation interrupted: ...`).
pub fn violations(
    validate: impl FnOnce() -> crate::violations::Violations + Send,
) -> crate::violations::Violations {
    validation(validate).unwrap_or_else(|interrupted| {
        let mut v = crate::violations::Violations::new();
        v.push((
            "<root>".into(),
            format!("Invalid value: \"object\": {interrupted}"),
        ));
        v
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;
    use crate::store::with_deadline;

    #[test]
    fn a_validation_waits_for_a_permit_no_longer_than_its_deadline() {
        // Hold every permit for a while.
        let n = GATE.permits;
        let started = Arc::new(Barrier::new(n + 1));
        let holders: Vec<_> = (0..n)
            .map(|_| {
                let started = started.clone();
                std::thread::spawn(move || {
                    validation(|| {
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
        let (r, large) = runtime.block_on(async {
            // On a worker, with the request's deadline 100 ms away.
            tokio::spawn(with_deadline(
                Instant::now() + Duration::from_millis(100),
                async {
                    let soon = Some(Instant::now() + Duration::from_millis(100));
                    (validation(|| "ran"), run(INLINE_BYTES, soon, || Ok(1)))
                },
            ))
            .await
            .expect("task")
        });
        let waited = begun.elapsed();
        let e = r.expect_err("no permit before the deadline");
        assert!(e.starts_with("operation interrupted"), "{e}");
        assert!(
            matches!(
                large,
                Err(ApiError::Unavailable {
                    reason: "Timeout",
                    ..
                })
            ),
            "{large:?}"
        );
        assert!(waited < Duration::from_millis(600), "{waited:?}");
        // Small work does not wait for a permit.
        assert_eq!(run(10, None, || Ok(2)).expect("inline"), 2);
        for h in holders {
            h.join().expect("holder").expect("held a permit");
        }
        // Once they are free, it runs; on a current-thread runtime, in place.
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(current.block_on(async { validation(|| 7) }), Ok(7));
        assert_eq!(
            validation(|| validation(|| 8)),
            Ok(Ok(8)),
            "nested, on its permit"
        );
        let nested = runtime.block_on(async {
            tokio::spawn(async { run(INLINE_BYTES, None, || run(INLINE_BYTES, None, || Ok(9))) })
                .await
                .expect("task")
        });
        assert_eq!(nested.expect("nested, on its permit"), 9);
    }
}
