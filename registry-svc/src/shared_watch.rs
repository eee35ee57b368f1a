//! Shared watches: client watches that ask for exactly the same events share one storage-svc
//! stream.
//!
//! Upstream's cacher serves every watcher of a resource from one etcd watch, inside the
//! apiserver the clients are connected to. Our cache lives in storage-svc, one hop away, so
//! without sharing each client watch costs a storage stream, and each event crosses that hop
//! once per watcher: at 1,000 watchers that was half the CPU of the fan-out (BENCHMARKS.md,
//! issue 19). With sharing, storage sends each event once per distinct watch, and registry-svc
//! hands the same decoded event (its object bytes shared, not copied) to every member.
//!
//! A watch may share when its events are fully determined by its request and its starting
//! point: an explicit resourceVersion (not "" or "0", whose meaning depends on when storage
//! answers), no initial events, no timeout. It joins a shared stream of the same key,
//! selectors and bookmark setting whose **position** (the resourceVersion of the last event or
//! bookmark it delivered, or its start) is exactly its own resourceVersion: every member then
//! receives every event after its resourceVersion, in order, and nothing before, as with a
//! stream of its own. Otherwise it starts a new shared stream at its resourceVersion, which
//! later watches may join.
//!
//! Each member has its own bounded buffer (the relay's bounds). The shared stream never waits
//! for a member: one whose buffer is full is cut off at once with `WatcherTooSlow` (a watch of
//! its own waits `relay::SEND_BUDGET` first), so one slow watcher cannot delay the others. An
//! error from storage (Expired, UNAVAILABLE) ends every member with it. The storage stream
//! ends when its last member has gone.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_proto::storage::v1::{WatchEvent, WatchRequest};
use prometheus_client::metrics::counter::Counter;
use prost::Message;
use tokio_stream::{Stream, StreamExt};

use crate::relay::{Feed, Refused, Relay};

/// How often a shared stream that sees no events checks whether its members are still there.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// What a shared stream delivers: requests with the same key deliver the same events.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShareKey {
    key: String,
    recursive: bool,
    selector: Vec<u8>,
    bookmarks: bool,
}

impl ShareKey {
    /// The key and starting resourceVersion of `req`, or None when it needs a stream of its
    /// own (see the module doc).
    pub fn of(req: &WatchRequest) -> Option<(Self, i64)> {
        if req.send_initial_events.unwrap_or(false) || req.timeout_seconds != 0 {
            return None;
        }
        let rv = req
            .resource_version
            .parse::<i64>()
            .ok()
            .filter(|r| *r > 0)?;
        Some((
            Self {
                key: req.key.clone(),
                recursive: req.recursive,
                selector: req
                    .selector
                    .as_ref()
                    .map(Message::encode_to_vec)
                    .unwrap_or_default(),
                bookmarks: req.allow_watch_bookmarks,
            },
            rv,
        ))
    }
}

struct HubState {
    /// The resourceVersion after which the next event comes.
    position: i64,
    members: Vec<Feed>,
    /// Ended, or ending: nobody may join.
    closed: bool,
}

/// One shared storage stream and its members.
struct Hub {
    state: Mutex<HubState>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `event` to every member; false when none is left (the hub then closes).
    fn deliver(&self, event: WatchEvent, cut_off: &Counter) -> bool {
        let position = event.resource_version.parse::<i64>().ok();
        // Measured once for every member.
        let size = crate::relay::size(&event);
        let mut s = self.lock();
        let mut kept = Vec::with_capacity(s.members.len());
        for m in s.members.drain(..) {
            match m.push(event.clone(), size) {
                Ok(()) => kept.push(m),
                Err(Refused::Full) => m.cut_off(cut_off),
                Err(Refused::Gone) => {}
            }
        }
        s.members = kept;
        // An event without a readable resourceVersion (never sent by storage) leaves no
        // position anyone could join at.
        s.position = position.unwrap_or(-1);
        if s.members.is_empty() {
            s.closed = true;
        }
        !s.closed
    }

    /// Forgets members that have gone; false when none is left (the hub then closes).
    fn anyone_left(&self) -> bool {
        let mut s = self.lock();
        s.members.retain(|m| !m.is_gone());
        if s.members.is_empty() {
            s.closed = true;
        }
        !s.closed
    }

    /// Ends every member, with `status` when storage's stream failed.
    fn end(&self, status: Option<tonic::Status>) {
        let mut s = self.lock();
        s.closed = true;
        for m in s.members.drain(..) {
            if let Some(status) = &status {
                m.end_with(status.clone());
            }
        }
    }
}

/// The shared streams of one registry-svc; cheap to clone.
#[derive(Clone, Default)]
pub struct SharedWatches {
    hubs: Arc<Mutex<HashMap<ShareKey, Vec<Arc<Hub>>>>>,
    /// Watches that joined a shared stream (`registry_watches_shared_total`).
    pub joined: Counter,
}

impl SharedWatches {
    fn hubs(&self) -> std::sync::MutexGuard<'_, HashMap<ShareKey, Vec<Arc<Hub>>>> {
        self.hubs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins a shared stream of `key` positioned exactly at `rv`, if there is one.
    pub fn join(&self, key: &ShareKey, rv: i64) -> Option<Relay> {
        let hubs = self.hubs();
        for hub in hubs.get(key)? {
            let mut s = hub.lock();
            if !s.closed && s.position == rv {
                let (feed, relay) = Feed::new();
                s.members.push(feed);
                self.joined.inc();
                return Some(relay);
            }
        }
        None
    }

    /// Opens a shared stream of `key` from `rv` with the caller as its first member. The
    /// stream is joinable at once, while `open` (storage's Watch call) is under way, so that
    /// watches arriving together share it; if `open` fails, the caller gets its error and
    /// those that joined meanwhile get it as their first item.
    pub async fn open<F, S>(
        &self,
        key: ShareKey,
        rv: i64,
        open: F,
        cut_off: Counter,
    ) -> Result<Relay, tonic::Status>
    where
        F: std::future::Future<Output = Result<S, tonic::Status>>,
        S: Stream<Item = Result<WatchEvent, tonic::Status>> + Send + Unpin + 'static,
    {
        let (feed, relay) = Feed::new();
        let hub = Arc::new(Hub {
            state: Mutex::new(HubState {
                position: rv,
                members: vec![feed],
                closed: false,
            }),
        });
        self.hubs()
            .entry(key.clone())
            .or_default()
            .push(hub.clone());
        match open.await {
            Ok(upstream) => {
                tokio::spawn(self.clone().run(key, hub, upstream, cut_off));
                Ok(relay)
            }
            Err(status) => {
                hub.end(Some(status.clone()));
                self.remove(&key, &hub);
                Err(status)
            }
        }
    }

    fn remove(&self, key: &ShareKey, hub: &Arc<Hub>) {
        let mut hubs = self.hubs();
        if let Some(list) = hubs.get_mut(key) {
            list.retain(|h| !Arc::ptr_eq(h, hub));
            if list.is_empty() {
                hubs.remove(key);
            }
        }
    }

    /// Hands storage's events (`upstream`: its `tonic::Streaming`, or any stream of them) to
    /// the hub's members until it ends, fails, or nobody is left.
    async fn run<S>(self, key: ShareKey, hub: Arc<Hub>, mut upstream: S, cut_off: Counter)
    where
        S: Stream<Item = Result<WatchEvent, tonic::Status>> + Unpin,
    {
        loop {
            let item = tokio::select! {
                m = upstream.next() => m.transpose(),
                () = tokio::time::sleep(IDLE_CHECK) => {
                    if hub.anyone_left() {
                        continue;
                    }
                    break;
                }
            };
            match item {
                Ok(Some(event)) => {
                    if !hub.deliver(event, &cut_off) {
                        break;
                    }
                }
                Ok(None) => {
                    hub.end(None);
                    break;
                }
                Err(status) => {
                    hub.end(Some(status));
                    break;
                }
            }
        }
        self.remove(&key, &hub);
    }
}

#[cfg(test)]
mod tests {
    use kubestore_proto::storage::v1::{LabelRequirement, Selector};

    use super::*;

    fn req(rv: &str) -> WatchRequest {
        WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: rv.into(),
            selector: Some(Selector {
                labels: vec![LabelRequirement {
                    key: "app".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_watches_fixed_by_their_request_share() {
        let (a, rv) = ShareKey::of(&req("42")).expect("an explicit version shares");
        assert_eq!(rv, 42);
        assert_eq!(ShareKey::of(&req("7")).expect("shares").0, a);
        assert!(
            ShareKey::of(&req("")).is_none(),
            "most recent: storage decides"
        );
        assert!(ShareKey::of(&req("0")).is_none(), "any: storage decides");
        assert!(ShareKey::of(&req("x")).is_none());
        let mut initial = req("42");
        initial.send_initial_events = Some(true);
        assert!(ShareKey::of(&initial).is_none());
        let mut timed = req("42");
        timed.timeout_seconds = 30;
        assert!(ShareKey::of(&timed).is_none());
        let mut other = req("42");
        other.selector = None;
        assert_ne!(ShareKey::of(&other).expect("shares").0, a);
        let mut bookmarks = req("42");
        bookmarks.allow_watch_bookmarks = true;
        assert_ne!(ShareKey::of(&bookmarks).expect("shares").0, a);
    }

    #[tokio::test]
    async fn a_full_member_is_cut_off_alone_and_the_position_follows_the_events() {
        let hub = Hub {
            state: Mutex::new(HubState {
                position: 10,
                members: Vec::new(),
                closed: false,
            }),
        };
        let (fast, mut fast_relay) = Feed::new();
        let (slow, mut slow_relay) = Feed::new();
        hub.lock().members.extend([fast, slow]);
        let cut = Counter::default();
        use tokio_stream::StreamExt;
        for rv in 11..=(11 + crate::relay::BUFFER_EVENTS as i64) {
            let event = WatchEvent {
                resource_version: rv.to_string(),
                ..Default::default()
            };
            assert!(hub.deliver(event, &cut));
            let got = fast_relay.next().await.expect("event").expect("ok");
            assert_eq!(got.resource_version, rv.to_string());
        }
        assert_eq!(cut.get(), 1, "the member that read nothing was cut off");
        assert_eq!(hub.lock().members.len(), 1);
        assert_eq!(hub.lock().position, 11 + crate::relay::BUFFER_EVENTS as i64);
        let first = slow_relay.next().await.expect("an item");
        assert_eq!(
            first.expect_err("cut off first").code(),
            tonic::Code::ResourceExhausted
        );
        drop(fast_relay);
        assert!(!hub.anyone_left(), "the last member left: the hub closes");
        assert!(hub.lock().closed);
    }

    #[tokio::test]
    async fn watches_that_join_while_the_stream_opens_get_its_error() {
        use tokio_stream::StreamExt;
        let watches = SharedWatches::default();
        let (key, rv) = ShareKey::of(&req("5")).expect("shares");
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let opener = {
            let (watches, key) = (watches.clone(), key.clone());
            tokio::spawn(async move {
                let open = async move {
                    let _ = wait.await;
                    Err::<tonic::Streaming<WatchEvent>, _>(tonic::Status::out_of_range("too old"))
                };
                watches
                    .open(key, rv, open, Counter::default())
                    .await
                    .map(drop)
            })
        };
        let mut joined = loop {
            if let Some(r) = watches.join(&key, rv) {
                break r;
            }
            tokio::task::yield_now().await;
        };
        let _ = go.send(());
        let refused = opener.await.expect("joins").expect_err("the open failed");
        assert_eq!(refused.code(), tonic::Code::OutOfRange);
        let first = joined.next().await.expect("an item");
        assert_eq!(
            first.expect_err("the error").code(),
            tonic::Code::OutOfRange
        );
        assert!(
            watches.join(&key, rv).is_none(),
            "the failed stream is gone"
        );
    }

    /// Storage's side of a shared stream, fed by the test.
    type Upstream = tokio::sync::mpsc::UnboundedSender<Result<WatchEvent, tonic::Status>>;

    /// Opens a shared stream of `req("…")`'s key at `rv` whose events the test sends.
    async fn opened(watches: &SharedWatches, rv: i64) -> (ShareKey, Relay, Upstream) {
        let (key, _) = ShareKey::of(&req("1")).expect("shares");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let upstream = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        let relay = watches
            .open(
                key.clone(),
                rv,
                async move { Ok(upstream) },
                Counter::default(),
            )
            .await
            .expect("opened");
        (key, relay, tx)
    }

    fn event(rv: i64) -> Result<WatchEvent, tonic::Status> {
        Ok(WatchEvent {
            resource_version: rv.to_string(),
            ..Default::default()
        })
    }

    /// The resourceVersion of `relay`'s next event (10 s at most).
    async fn next_rv(relay: &mut Relay) -> String {
        use tokio_stream::StreamExt;
        tokio::time::timeout(Duration::from_secs(10), relay.next())
            .await
            .expect("in time")
            .expect("an item")
            .expect("an event")
            .resource_version
    }

    #[tokio::test]
    async fn a_watch_joins_only_at_the_version_the_stream_is_at_and_gets_what_follows() {
        let watches = SharedWatches::default();
        let (key, mut first, upstream) = opened(&watches, 10).await;
        assert!(watches.join(&key, 9).is_none(), "it would miss event 10");
        assert!(watches.join(&key, 11).is_none(), "it would get 11 again");
        let (other, _) = ShareKey::of(&WatchRequest {
            selector: None,
            ..req("10")
        })
        .expect("shares");
        assert!(watches.join(&other, 10).is_none(), "other events");
        let mut second = watches.join(&key, 10).expect("joins at 10");

        upstream.send(event(11)).expect("sent");
        assert_eq!(next_rv(&mut first).await, "11");
        assert_eq!(next_rv(&mut second).await, "11");
        // The stream is at 11 now: a watch from 10 needs one of its own (it must get 11).
        assert!(watches.join(&key, 10).is_none(), "it would miss event 11");
        let mut third = watches.join(&key, 11).expect("joins at 11");

        upstream.send(event(12)).expect("sent");
        for m in [&mut first, &mut second, &mut third] {
            assert_eq!(
                next_rv(m).await,
                "12",
                "every member, nothing before its version"
            );
        }
        assert_eq!(watches.joined.get(), 2);
    }

    #[tokio::test]
    async fn an_error_from_storage_ends_every_member_mid_stream() {
        use tokio_stream::StreamExt;
        let watches = SharedWatches::default();
        let (key, first, upstream) = opened(&watches, 10).await;
        let mut members = vec![first];
        members.push(watches.join(&key, 10).expect("joins"));
        members.push(watches.join(&key, 10).expect("joins"));
        for rv in [11, 12] {
            upstream.send(event(rv)).expect("sent");
            for m in &mut members {
                assert_eq!(next_rv(m).await, rv.to_string());
            }
        }
        upstream
            .send(Err(tonic::Status::unavailable("storage-svc went away")))
            .expect("sent");
        for (i, m) in members.iter_mut().enumerate() {
            let end = tokio::time::timeout(Duration::from_secs(10), m.next())
                .await
                .expect("in time")
                .expect("an item");
            let status = end.expect_err("the error");
            assert_eq!(status.code(), tonic::Code::Unavailable, "member {i}");
            assert_eq!(status.message(), "storage-svc went away", "member {i}");
            assert!(m.next().await.is_none(), "member {i} ended");
        }
        assert!(watches.join(&key, 12).is_none(), "the ended stream is gone");
    }
}
