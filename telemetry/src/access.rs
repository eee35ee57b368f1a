//! The access log's folding of repeats: a connection that makes the same call again and again
//! (a leader renewing its Lease every 2 s, and storage-svc's GuaranteedUpdate behind it) logged
//! two lines every 2 s, 60 a minute of a stack doing nothing. A call of the same method with the
//! same outcome on the same connection (peer address and port) within [`WINDOW`] of the last
//! line logged for it is counted, not logged; the next line logged for it says how many were
//! folded (`repeated=N`). A client that connects per command (kubectl, the CLI) is never folded;
//! neither is a call with another outcome.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

/// How long repeats of a logged call are folded.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Calls remembered at most (a map of this many is cleared of what the window has passed).
const REMEMBERED: usize = 4096;

type Key = (String, String, SocketAddr);

fn seen() -> &'static Mutex<HashMap<Key, (Instant, u64)>> {
    static SEEN: OnceLock<Mutex<HashMap<Key, (Instant, u64)>>> = OnceLock::new();
    SEEN.get_or_init(Mutex::default)
}

/// Whether to log a call of `method` that ended with `outcome` on the connection of `peer`:
/// Some(folded) with the number of repeats folded since the last line, or None (folded).
pub fn fold(method: &str, outcome: &str, peer: Option<SocketAddr>) -> Option<u64> {
    let Some(peer) = peer else {
        return Some(0);
    };
    fold_at(seen(), method, outcome, peer, Instant::now())
}

fn fold_at(
    seen: &Mutex<HashMap<Key, (Instant, u64)>>,
    method: &str,
    outcome: &str,
    peer: SocketAddr,
    now: Instant,
) -> Option<u64> {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    let key = (method.to_string(), outcome.to_string(), peer);
    match seen.get_mut(&key) {
        Some((logged, folded)) if now.duration_since(*logged) < WINDOW => {
            *folded += 1;
            None
        }
        Some(entry) => {
            let folded = entry.1;
            *entry = (now, 0);
            Some(folded)
        }
        None => {
            if seen.len() >= REMEMBERED {
                seen.retain(|_, (logged, _)| now.duration_since(*logged) < WINDOW);
                if seen.len() >= REMEMBERED {
                    return Some(0);
                }
            }
            seen.insert(key, (now, 0));
            Some(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_on_one_connection_are_folded_for_a_window() {
        let seen = Mutex::default();
        let t0 = Instant::now();
        let a: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let b: SocketAddr = "127.0.0.1:5001".parse().expect("addr");
        let lease = "/coordination.v1.Leases/Update";
        assert_eq!(fold_at(&seen, lease, "OK", a, t0), Some(0));
        for i in 1..30 {
            assert_eq!(
                fold_at(&seen, lease, "OK", a, t0 + Duration::from_secs(2 * i)),
                None
            );
        }
        // Another connection, another outcome, another method: logged.
        assert_eq!(fold_at(&seen, lease, "OK", b, t0), Some(0));
        assert_eq!(fold_at(&seen, lease, "ABORTED", a, t0), Some(0));
        assert_eq!(fold_at(&seen, "/core.v1.Pods/Get", "OK", a, t0), Some(0));
        // After the window, the next one is logged, saying how many were folded.
        assert_eq!(fold_at(&seen, lease, "OK", a, t0 + WINDOW), Some(29));
        assert_eq!(
            fold_at(&seen, lease, "OK", a, t0 + WINDOW + Duration::from_secs(2)),
            None
        );
    }
}
