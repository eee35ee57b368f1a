//! A work queue as client-go's: an item is queued once however often it is added; an item
//! added while a worker holds it is queued again when the worker is done (never two workers on
//! one item); a failed item comes back after a delay that doubles per failure (5 ms up to
//! 1000 s, client-go's per-item limiter).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::Notify;

/// First delay of a failed item.
const FIRST_RETRY: Duration = Duration::from_millis(5);
/// Longest delay of a failed item.
const MAX_RETRY: Duration = Duration::from_secs(1000);

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    queued: HashSet<String>,
    processing: HashSet<String>,
    /// Added while being processed: queued again when done.
    dirty: HashSet<String>,
    failures: HashMap<String, u32>,
    closed: bool,
}

/// The queue.
#[derive(Clone, Default)]
pub struct Queue {
    state: Arc<Mutex<State>>,
    ready: Arc<Notify>,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `item` (once).
    pub fn add(&self, item: String) {
        let mut s = self.lock();
        if s.closed {
            return;
        }
        if s.processing.contains(&item) {
            s.dirty.insert(item);
            return;
        }
        if s.queued.insert(item.clone()) {
            s.queue.push_back(item);
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Queues `item` after a delay that grows with its failures.
    pub fn add_rate_limited(&self, item: String) {
        let failures = {
            let mut s = self.lock();
            let n = s.failures.entry(item.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let delay = FIRST_RETRY
            .saturating_mul(1u32 << failures.min(20).saturating_sub(1))
            .min(MAX_RETRY);
        self.add_after(item, delay);
    }

    /// Queues `item` after `delay`.
    pub fn add_after(&self, item: String, delay: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.add(item);
        });
    }

    /// Clears `item`'s failures (it succeeded).
    pub fn forget(&self, item: &str) {
        self.lock().failures.remove(item);
    }

    /// The next item (None once closed); [`Self::done`] must follow.
    pub async fn get(&self) -> Option<String> {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.lock();
                if s.closed {
                    return None;
                }
                if let Some(item) = s.queue.pop_front() {
                    s.queued.remove(&item);
                    s.processing.insert(item.clone());
                    if !s.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return Some(item);
                }
            }
            notified.await;
        }
    }

    /// A worker is done with `item`.
    pub fn done(&self, item: &str) {
        let again = {
            let mut s = self.lock();
            s.processing.remove(item);
            s.dirty.remove(item)
        };
        if again {
            self.add(item.to_string());
        }
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: `get` returns None.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_item_is_queued_once_and_again_if_added_while_processed() {
        let q = Queue::default();
        q.add("a".into());
        q.add("a".into());
        assert_eq!(q.len(), 1);
        let a = q.get().await.expect("a");
        q.add("a".into());
        assert_eq!(q.len(), 0, "not while a worker holds it");
        q.done(&a);
        assert_eq!(q.len(), 1);
        q.close();
        assert_eq!(q.get().await, None);
    }
}
