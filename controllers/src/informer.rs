//! The informer every controller uses (client-go's reflector): list in pages, then watch from
//! the list's resourceVersion with bookmarks; when a watch ends, resume from the last
//! resourceVersion seen; when that version is too old (OUT_OF_RANGE, reason Expired), list
//! again. Refusals wait as [`crate::backoff`] says (a server's RetryInfo wins), so a registry-svc
//! that is down is retried at most every few seconds, never in a busy loop.
//!
//! What it saw goes to one bounded channel as [`Delta`]s: a whole list as `Replace` (the
//! consumer drops what the list no longer holds), then each change. A full channel holds the
//! informer back rather than buffering without bound.

use std::{future::Future, pin::Pin, time::Duration};

use kubestore_proto::meta::v1::{ListMeta, ListOptions, ObjectMeta, WatchEventType};
use tokio::sync::{mpsc, watch};
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Status};

use crate::{backoff::Backoff, client::KindClient};

/// Objects per list page (kubectl's and client-go's chunk size).
pub const PAGE: i64 = 500;

/// What an informer saw.
#[derive(Debug, Clone)]
pub enum Delta<T> {
    /// Every object there is (after a list): what is not here is gone.
    Replace(Vec<T>),
    /// An object was added or changed.
    Upsert(T),
    /// An object was deleted (its last state).
    Delete(T),
}

/// A watch's events.
pub type Events<T> = Pin<Box<dyn Stream<Item = Result<(WatchEventType, T), Status>> + Send>>;

/// What an informer lists and watches.
pub trait Source: Send + Sync + 'static {
    /// The objects.
    type Item: Send + 'static;
    /// An object's resourceVersion.
    fn resource_version(item: &Self::Item) -> String;
    /// One page.
    fn list(
        &self,
        options: ListOptions,
    ) -> impl Future<Output = Result<(Vec<Self::Item>, ListMeta), Status>>;
    /// Changes after `options.resource_version`.
    fn watch(
        &self,
        options: ListOptions,
    ) -> impl Future<Output = Result<Events<Self::Item>, Status>>;
}

impl Source for KindClient {
    type Item = ObjectMeta;
    fn resource_version(item: &ObjectMeta) -> String {
        item.resource_version.clone()
    }
    async fn list(&self, options: ListOptions) -> Result<(Vec<ObjectMeta>, ListMeta), Status> {
        let page = KindClient::list(self, "", options).await?;
        Ok((page.items, page.metadata))
    }
    async fn watch(&self, options: ListOptions) -> Result<Events<ObjectMeta>, Status> {
        KindClient::watch(self, options).await
    }
}

/// Whether `s` says "that resourceVersion is gone: list again" (410 Gone, reason Expired).
pub fn expired(s: &Status) -> bool {
    s.code() == Code::OutOfRange
}

/// Lists every page; the list's resourceVersion and its items. A continue token that expired
/// between two pages makes it list again in one call (client-go's pager,
/// `FullListIfExpired`): pages of different revisions would not be one snapshot.
pub async fn list_all<S: Source>(source: &S) -> Result<(Vec<S::Item>, String), Status> {
    let mut items = Vec::new();
    let mut token = String::new();
    loop {
        let paged = source
            .list(ListOptions {
                limit: PAGE,
                r#continue: token.clone(),
                ..Default::default()
            })
            .await;
        let (page, meta) = match paged {
            Err(s) if !token.is_empty() && expired(&s) => {
                let (all, meta) = source.list(ListOptions::default()).await?;
                return Ok((all, meta.resource_version));
            }
            other => other?,
        };
        items.extend(page);
        if meta.r#continue.is_empty() {
            return Ok((items, meta.resource_version));
        }
        token = meta.r#continue;
    }
}

/// Runs the informer until `stop` is raised or `sink` is closed.
pub async fn run<S: Source>(
    source: S,
    sink: mpsc::Sender<Delta<S::Item>>,
    stop: watch::Receiver<bool>,
) {
    run_from(source, sink, stop, None).await
}

/// [`run`], starting with a watch from `resource_version` when given (the caller listed
/// already, as `kubestore get -w` does) instead of a list.
pub async fn run_from<S: Source>(
    source: S,
    sink: mpsc::Sender<Delta<S::Item>>,
    mut stop: watch::Receiver<bool>,
    resource_version: Option<String>,
) {
    let mut backoff = Backoff::default();
    let mut rv: Option<String> = resource_version;
    loop {
        if *stop.borrow() || sink.is_closed() {
            return;
        }
        let failed = match rv.clone() {
            None => match list_all(&source).await {
                Ok((items, list_rv)) => {
                    if sink.send(Delta::Replace(items)).await.is_err() {
                        return;
                    }
                    rv = Some(list_rv);
                    backoff = Backoff::default();
                    None
                }
                Err(s) => Some(s),
            },
            Some(from) => {
                let options = ListOptions {
                    resource_version: from,
                    allow_watch_bookmarks: true,
                    ..Default::default()
                };
                match source.watch(options).await {
                    Err(s) => Some(s),
                    Ok(mut events) => loop {
                        let next = tokio::select! {
                            _ = stop.changed() => return,
                            next = events.next() => next,
                        };
                        match next {
                            // The server ended the watch (its timeout, a shutdown): resume.
                            None => break None,
                            Some(Err(s)) => break Some(s),
                            Some(Ok((kind, item))) => {
                                backoff = Backoff::default();
                                let item_rv = S::resource_version(&item);
                                let delta = match kind {
                                    WatchEventType::Added | WatchEventType::Modified => {
                                        Some(Delta::Upsert(item))
                                    }
                                    WatchEventType::Deleted => Some(Delta::Delete(item)),
                                    _ => None,
                                };
                                if let Some(d) = delta
                                    && sink.send(d).await.is_err()
                                {
                                    return;
                                }
                                if !item_rv.is_empty() {
                                    rv = Some(item_rv);
                                }
                            }
                        }
                    },
                }
            }
        };
        let Some(s) = failed else { continue };
        if expired(&s) {
            tracing::debug!(error = %s.message(), "informer: resourceVersion expired; listing again");
            rv = None;
            continue;
        }
        let delay = if rv.is_some() && s.code() == Code::Unavailable {
            // A watch cut by a restart: come back soon, but not at once.
            backoff.delay(&s).min(Duration::from_secs(1))
        } else {
            backoff.delay(&s)
        };
        tracing::debug!(error = %s.message(), code = ?s.code(), ?delay, "informer: call refused; retrying");
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The reflector's decisions, on a scripted source (pure logic; the end-to-end tests run
    //! it against registry-svc).
    use std::sync::{Arc, Mutex};

    use super::*;

    type Item = (String, String);
    type ListStep = Result<(Vec<Item>, String), Status>;
    type WatchStep = Vec<Result<(WatchEventType, Item), Status>>;

    /// Items are (name, resourceVersion); each list and each watch takes the next script step.
    #[derive(Clone, Default)]
    struct Scripted {
        lists: Arc<Mutex<Vec<ListStep>>>,
        watches: Arc<Mutex<Vec<WatchStep>>>,
        watched_from: Arc<Mutex<Vec<String>>>,
    }

    impl Source for Scripted {
        type Item = (String, String);
        fn resource_version(item: &(String, String)) -> String {
            item.1.clone()
        }
        async fn list(
            &self,
            _options: ListOptions,
        ) -> Result<(Vec<(String, String)>, ListMeta), Status> {
            let next = self.lists.lock().expect("lock").remove(0);
            next.map(|(items, rv)| {
                (
                    items,
                    ListMeta {
                        resource_version: rv,
                        ..Default::default()
                    },
                )
            })
        }
        async fn watch(&self, options: ListOptions) -> Result<Events<(String, String)>, Status> {
            self.watched_from
                .lock()
                .expect("lock")
                .push(options.resource_version);
            let mut watches = self.watches.lock().expect("lock");
            if watches.is_empty() {
                // Nothing more scripted: a watch that never ends.
                return Ok(Box::pin(tokio_stream::pending()));
            }
            Ok(Box::pin(tokio_stream::iter(watches.remove(0))))
        }
    }

    fn item(name: &str, rv: &str) -> (String, String) {
        (name.to_string(), rv.to_string())
    }

    fn expired_status() -> Status {
        Status::out_of_range("too old resource version: 5 (12)")
    }

    #[tokio::test]
    async fn a_watch_resumes_from_the_last_version_and_an_expired_one_lists_again() {
        let source = Scripted::default();
        *source.lists.lock().expect("lock") = vec![
            Ok((vec![item("a", "5")], "10".into())),
            Ok((vec![item("a", "5"), item("b", "20")], "21".into())),
        ];
        *source.watches.lock().expect("lock") = vec![
            // From the list's version: one change, then the server ends the watch (OK).
            vec![Ok((WatchEventType::Added, item("c", "11")))],
            // Resumed from 11: the version is gone.
            vec![Err(expired_status())],
        ];
        let (tx, mut rx) = mpsc::channel(16);
        let (_stop_tx, stop) = watch::channel(false);
        let task = tokio::spawn(run(source.clone(), tx, stop));
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(
                tokio::time::timeout(Duration::from_secs(5), rx.recv())
                    .await
                    .expect("in time")
                    .expect("open"),
            );
        }
        assert!(matches!(&seen[0], Delta::Replace(v) if v == &[item("a", "5")]));
        assert!(matches!(&seen[1], Delta::Upsert(i) if i == &item("c", "11")));
        // Expired: a second list replaces everything, and the watch goes on from it.
        assert!(matches!(&seen[2], Delta::Replace(v) if v.len() == 2));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            *source.watched_from.lock().expect("lock"),
            ["10", "11", "21"],
            "resumed from the last version seen, then from the new list's"
        );
        task.abort();
    }

    #[tokio::test]
    async fn refusals_back_off_instead_of_looping() {
        let source = Scripted::default();
        *source.lists.lock().expect("lock") = vec![
            Err(Status::unavailable("registry-svc is down")),
            Err(Status::unavailable("registry-svc is down")),
            Ok((vec![], "3".into())),
        ];
        let (tx, mut rx) = mpsc::channel(16);
        let (_stop_tx, stop) = watch::channel(false);
        let start = std::time::Instant::now();
        let task = tokio::spawn(run(source, tx, stop));
        let first = rx.recv().await.expect("the list, in the end");
        assert!(matches!(first, Delta::Replace(v) if v.is_empty()));
        // Two refusals: at least the first two backoff steps (200 ms, 400 ms, less jitter),
        // a lower bound only: no busy loop.
        assert!(
            start.elapsed() >= Duration::from_millis(450),
            "{:?}",
            start.elapsed()
        );
        task.abort();
    }
}
