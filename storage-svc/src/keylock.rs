//! Per-key queueing of GuaranteedUpdates inside one storage-svc process.
//!
//! Without it, N callers updating one hot key race: each reads revision R, all but one lose the
//! compare-and-swap, re-read, and race again, so etcd does O(N) failed txns per committed
//! update (upstream's known collapse, kubernetes/kubernetes#122070). Here updates to the same key
//! take turns, and each turn starts from the state the previous one wrote, kept in memory, so a
//! turn costs one etcd txn instead of a read and a txn.
//!
//! Correctness never depends on this: the remembered state is used exactly like a caller's
//! cached object (a suggestion). Every write still compares `mod_revision`, so a write made by
//! another storage-svc replica (or anything else) shows up as a conflict whose `Else(Get)`
//! returns the fresh state. Entries live only while some update on the key is running or
//! waiting, so memory is bounded by the number of concurrent updates.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
};

use tokio::sync::OwnedMutexGuard;

use crate::state::ObjState;

type Slot = tokio::sync::Mutex<Option<ObjState>>;

/// The turn of one update on one key, with the last state seen on that key by this process.
pub type KeyTurn = OwnedMutexGuard<Option<ObjState>>;

/// The queues, by etcd key.
#[derive(Default)]
pub struct KeyLocks {
    slots: Mutex<HashMap<String, Weak<Slot>>>,
}

impl KeyLocks {
    /// Waits for this key's turn.
    pub async fn turn(&self, etcd_key: &str) -> KeyTurn {
        let slot = {
            // A poisoned map only means a panic elsewhere; the map itself is still consistent.
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(live) = slots.get(etcd_key).and_then(Weak::upgrade) {
                live
            } else {
                if slots.len() >= 1024 {
                    slots.retain(|_, w| w.strong_count() > 0);
                }
                let fresh = Arc::new(Slot::new(None));
                slots.insert(etcd_key.to_string(), Arc::downgrade(&fresh));
                fresh
            }
        };
        slot.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_on_one_key_are_exclusive_and_remember_state() {
        let locks = KeyLocks::default();
        let mut a = locks.turn("/k").await;
        *a = Some(ObjState {
            rev: 7,
            ..Default::default()
        });
        // Another key is independent.
        let _other = locks.turn("/other").await;
        let waiter = {
            let locks = Arc::new(locks);
            let l2 = locks.clone();
            let h = tokio::spawn(async move { l2.turn("/k").await.as_ref().map(|s| s.rev) });
            tokio::task::yield_now().await;
            assert!(!h.is_finished(), "second turn must wait");
            drop(a);
            h
        };
        assert_eq!(waiter.await.expect("joined"), Some(7));
    }
}
