//! Bad input at scale over gRPC (issue 10, part 6): 10,000 random and mutated requests to each
//! service, every method, one at a time, against a real etcd. Nothing may panic, no answer may
//! be INTERNAL or UNKNOWN (a request is the caller's fault or it is fine), streams must end when
//! they should, and a rejected request must leave etcd's revision where it was.
//!
//! The inputs start from valid requests (`kubestore_tests::request_seeds`, so mutations reach
//! past the decoder into validation, selectors, preconditions and the update protocol) and one
//! in ten is plain random bytes. The
//! generator is seeded: `KUBESTORE_RANDOM_SEED=N` replays a run, `KUBESTORE_RANDOM_REQUESTS=N`
//! changes the count (both printed at the start).
//!
//! Two things move etcd's revision without being a request's write: a lease expiring (a mutated
//! `ttl_seconds` may be small), and, with the watch cache on, its *fence* (a put of a reserved
//! key no caller can name, which a consistent read from a cache that is behind makes; see
//! `storage_svc::cache`). A revision that moved across a rejected request is accepted only
//! when every change in between was one of those two.

use std::{
    collections::BTreeMap,
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use etcd_client::{EventType, WatchOptions};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_registry::{cm, create_cm, create_pod, pod},
    fixtures_storage::{self, create},
    mutate::{Rng, mutate},
    raw::{self, Streamed},
    request_seeds::{Method, Shape, registry_methods, storage_methods},
    services::{channel, wait_serving},
};
use tonic::{Code, Status, transport::Channel};

/// Panics anywhere in this process: the services run on its threads.
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// What one run saw, per method and code.
#[derive(Default)]
struct Tally {
    codes: BTreeMap<(&'static str, String), usize>,
    rejected: usize,
    moved_by_housekeeping: usize,
}

impl Tally {
    fn print(&self, service: &str) {
        eprintln!(
            "{service}: {} rejected, {} with housekeeping (lease expiry, cache fence) in between",
            self.rejected, self.moved_by_housekeeping
        );
        for ((path, code), n) in &self.codes {
            eprintln!("  {path:<45} {code:<18} {n}");
        }
    }
}

fn count_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn install_panic_counter() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
}

async fn etcd_revision(etcd: &mut etcd_client::Client) -> i64 {
    etcd.get("/", None)
        .await
        .expect("etcd get")
        .header()
        .map_or(0, |h| h.revision())
}

/// Whether every change to etcd in revisions `(after, upto]` was housekeeping: the deletion of
/// a key held by a lease (an expiry), or a put of the watch cache's fence key.
async fn only_housekeeping(etcd: &mut etcd_client::Client, after: i64, upto: i64) -> bool {
    let options = WatchOptions::new()
        .with_prefix()
        .with_prev_key()
        .with_start_revision(after + 1);
    let mut stream = etcd.watch("", Some(options)).await.expect("etcd watch");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let next = tokio::time::timeout_at(deadline, stream.message()).await;
        let Ok(Ok(Some(response))) = next else {
            panic!("etcd history ({after}, {upto}] not readable: {next:?}");
        };
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            if kv.mod_revision() > upto {
                return true;
            }
            let expiry = event.event_type() == EventType::Delete
                && event.prev_kv().is_some_and(|p| p.lease() != 0);
            let fence = event.event_type() == EventType::Put
                && kv.key().ends_with(storage_svc::keys::FENCE.as_bytes());
            if !expiry && !fence {
                eprintln!(
                    "revision {} changed {:?} ({:?})",
                    kv.mod_revision(),
                    kv.key_str(),
                    event.event_type()
                );
                return false;
            }
            if kv.mod_revision() == upto {
                return true;
            }
        }
    }
}

/// Sends `count` requests built from `methods` to `channel`, checking each; returns the tally.
async fn bombard(
    channel: &Channel,
    methods: &[Method],
    etcd: &mut etcd_client::Client,
    rng: &mut Rng,
    count: u64,
) -> Tally {
    let mut tally = Tally::default();
    let mut revision = etcd_revision(etcd).await;
    for i in 0..count {
        let method = &methods[rng.below(methods.len())];
        let seed = &method.seeds[rng.below(method.seeds.len())];
        let messages: Vec<Vec<u8>> = if rng.below(10) == 0 {
            // Plain random bytes.
            let n = rng.below(64);
            vec![(0..n).map(|_| rng.byte()).collect()]
        } else {
            let mut m = seed.clone();
            let at = rng.below(m.len());
            m[at] = mutate(rng, &m[at]);
            m
        };
        let shown = format!("request {i} to {}: {messages:02x?}", method.path);
        let outcome = match method.shape {
            Shape::Unary => raw::call(
                channel.clone(),
                method.path,
                messages.into_iter().next().unwrap_or_default(),
            )
            .await
            .map(|_| Streamed {
                messages: 1,
                ended: true,
            }),
            Shape::ServerStream => {
                raw::server_streaming(
                    channel.clone(),
                    method.path,
                    messages.into_iter().next().unwrap_or_default(),
                    Duration::from_millis(20),
                )
                .await
            }
            Shape::Bidi => {
                raw::streaming(
                    channel.clone(),
                    method.path,
                    messages,
                    Duration::from_secs(5),
                )
                .await
            }
        };
        let code = match &outcome {
            Ok(s) => {
                assert!(
                    s.ended || matches!(method.shape, Shape::ServerStream),
                    "{shown}: the stream neither ended nor failed 5 s after the client closed it"
                );
                "OK".to_string()
            }
            Err(e) => format!("{:?}", e.code()),
        };
        *tally.codes.entry((method.path, code)).or_default() += 1;
        let now = etcd_revision(etcd).await;
        if let Err(e) = outcome {
            check_rejection(&shown, &e);
            tally.rejected += 1;
            if now != revision {
                assert!(
                    only_housekeeping(etcd, revision, now).await,
                    "{shown}: rejected with {e:?} but etcd moved from revision {revision} to {now}"
                );
                tally.moved_by_housekeeping += 1;
            }
        }
        revision = now;
        assert_eq!(PANICS.load(Ordering::SeqCst), 0, "{shown}: a panic");
    }
    tally
}

/// A rejection must be a code that names the caller's mistake or a state of the data, never a
/// server fault. One UNAVAILABLE is a state of the data: a resourceVersion ahead of etcd
/// (upstream's 504 "Too large resource version", a Timeout to retry; HTTP 504 is gRPC's
/// UNAVAILABLE).
fn check_rejection(shown: &str, e: &Status) {
    if e.code() == Code::Unavailable && e.message().starts_with("Too large resource version") {
        return;
    }
    assert!(
        !matches!(
            e.code(),
            Code::Internal
                | Code::Unknown
                | Code::DataLoss
                | Code::Unimplemented
                | Code::Unavailable
        ),
        "{shown}: {e:?}"
    );
    assert!(!e.message().is_empty(), "{shown}: no message in {e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_random_requests_to_each_service_are_refused_cleanly() {
    install_panic_counter();
    let count = count_from_env("KUBESTORE_RANDOM_REQUESTS", 10_000);
    let seed = count_from_env(
        "KUBESTORE_RANDOM_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
    );
    eprintln!("KUBESTORE_RANDOM_SEED={seed} KUBESTORE_RANDOM_REQUESTS={count}");
    let mut rng = Rng::new(seed);
    let cluster = Cluster::start(ClusterOptions {
        // Compaction off: the history of every revision is read back (only_housekeeping).
        storage: Some(storage_svc::Config {
            compaction_interval: Duration::ZERO,
            ..Default::default()
        }),
        with_registry: true,
        ..Default::default()
    })
    .await;
    let mut etcd = cluster.etcd.client().await;

    let mut storage = cluster.storage_client().await;
    let seed_rv = create(
        &mut storage,
        "/fuzzed/ns/seed",
        &fixtures_storage::cm("seed", &[("n", "1")]),
        0,
    )
    .await
    .expect("seed object");
    let storage_channel = channel(&cluster.storage.url()).await;
    let tally = bombard(
        &storage_channel,
        &storage_methods(&seed_rv),
        &mut etcd,
        &mut rng,
        count,
    )
    .await;
    tally.print("storage-svc");

    let mut pods = cluster.pods().await;
    let seed_pod = create_pod(&mut pods, pod("seed", "node-1"))
        .await
        .expect("seed pod");
    let mut cms = cluster.config_maps().await;
    let seed_cm = create_cm(&mut cms, cm("seed", &[]))
        .await
        .expect("seed configmap");
    let registry_url = cluster.registry.as_ref().expect("registry").url();
    let registry_channel = channel(&registry_url).await;
    let tally = bombard(
        &registry_channel,
        &registry_methods(&seed_pod, &seed_cm),
        &mut etcd,
        &mut rng,
        count,
    )
    .await;
    tally.print("registry-svc");

    // Both still serve and write.
    wait_serving(&cluster.storage.url()).await;
    wait_serving(&registry_url).await;
    create(
        &mut storage,
        "/fuzzed/after/x",
        &fixtures_storage::cm("x", &[]),
        0,
    )
    .await
    .expect("storage-svc still writes");
    fixtures_storage::get(&mut storage, "/fuzzed/after/x")
        .await
        .expect("storage-svc still reads");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}
