//! CPU work that grows with a request's input, off the runtime's async workers.
//!
//! Decoding a 3 MiB body, applying a patch, or converting a large object to and from
//! Kubernetes JSON takes milliseconds to tens of milliseconds; on one of the runtime's few
//! workers (two on a small machine) it stalls every other request that worker serves, which is
//! how two large patches once blocked every request for seconds. Go's scheduler preempts such
//! work in kube-apiserver; here it is moved aside:
//!
//! - work on less than [`INLINE_BYTES`] of input runs where it is (a thread hop costs more);
//! - larger work runs under `block_in_place`, which hands the worker's other tasks to another
//!   thread, and at most [`heavy_slots`] such jobs run at once (one fewer than the machine's
//!   cores, at least one), so the async workers always keep a core;
//! - a job waits for its slot no longer than its request's deadline (504 then), and the work
//!   itself checks the deadline where it loops (`kubestore_apimachinery::patch::Limits`).
//!
//! On a current-thread runtime (some tests), work runs inline: there is no other worker to
//! protect.

use std::{
    sync::{Condvar, Mutex, OnceLock},
    time::Instant,
};

use crate::error::ApiError;

/// Input below which work runs inline.
pub const INLINE_BYTES: usize = 64 * 1024;

/// How many large jobs may run at once: one fewer than the cores, at least one.
pub fn heavy_slots() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_sub(1)
        .max(1)
}

/// A counting semaphore for threads that may block (they run under `block_in_place`).
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| Slots {
        free: Mutex::new(heavy_slots()),
        freed: Condvar::new(),
    })
}

/// A held slot, given back on drop (also when the work panics).
struct Held(&'static Slots);

impl Drop for Held {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

impl Slots {
    /// A slot, waiting until `deadline` at most.
    fn acquire(&'static self, deadline: Option<Instant>) -> Result<Held, ApiError> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = match deadline {
                None => self.freed.wait(free).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(timeout());
                    }
                    self.freed
                        .wait_timeout(free, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
        *free -= 1;
        Ok(Held(self))
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

/// Runs `work`, whose input is `size` bytes, as the module docs say: inline when small, else
/// off the async workers within a bounded number of slots, waiting for one until `deadline`.
pub fn run<T>(
    size: usize,
    deadline: Option<Instant>,
    work: impl FnOnce() -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if size < INLINE_BYTES || !multi_thread {
        return work();
    }
    tokio::task::block_in_place(|| {
        let _slot = slots().acquire(deadline)?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(timeout());
        }
        work()
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn small_work_runs_inline_anywhere() {
        assert_eq!(run(10, None, || Ok(7)).expect("runs"), 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_work_past_its_deadline_is_a_timeout() {
        let past = Some(Instant::now() - Duration::from_millis(1));
        let r = run(INLINE_BYTES, past, || Ok(1));
        assert!(matches!(
            r,
            Err(ApiError::Unavailable {
                reason: "Timeout",
                ..
            })
        ));
        let r = run(
            INLINE_BYTES,
            Some(Instant::now() + Duration::from_secs(5)),
            || Ok(2),
        );
        assert_eq!(r.expect("runs"), 2);
    }

    /// While every slot is held, a large job waits, and gives up at its deadline.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_jobs_wait_for_a_slot_until_their_deadline() {
        let held: Vec<Held> = (0..heavy_slots())
            .map(|_| slots().acquire(None).expect("a free slot"))
            .collect();
        let started = Instant::now();
        let r = run(
            INLINE_BYTES,
            Some(Instant::now() + Duration::from_millis(200)),
            || Ok(3),
        );
        assert!(matches!(
            r,
            Err(ApiError::Unavailable {
                reason: "Timeout",
                ..
            })
        ));
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(held);
        assert_eq!(run(INLINE_BYTES, None, || Ok(4)).expect("runs"), 4);
    }
}
