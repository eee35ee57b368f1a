//! storage-svc GuaranteedUpdate against a real etcd: writes, no-ops, creates, preconditions on
//! every attempt, cached objects, bounded attempts, concurrency, stream protocol errors.

use std::time::Duration;

use kubestore_proto::{
    core::v1::ConfigMap,
    meta::v1::Preconditions,
    storage::v1::{
        GetRequest, GuaranteedUpdateRequest, UpdateStart, guaranteed_update_request::Message as Req,
    },
};
use kubestore_tests::fixtures_storage::*;
use kubestore_tests::{
    Cluster, ClusterOptions,
    update::{Ended, Reply, guaranteed_update},
};
use prost::Message;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic_types::StatusExt;

#[tokio::test(flavor = "multi_thread")]
async fn guaranteed_update_writes_skips_noops_and_creates_with_ignore_not_found() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    let rv1 = create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let (end, states) = guaranteed_update(&mut c, start(key), increment)
        .await
        .expect("update");
    let Ended::Result(r) = end else {
        panic!("expected a result, got {end:?}")
    };
    assert!(r.written && r.attempts == 1 && states == 1);
    assert!(r.resource_version.parse::<i64>().expect("int") > rv1.parse::<i64>().expect("int"));
    assert_eq!(rv_of(&r.object), r.resource_version);
    assert_eq!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .expect("kv")
            .mod_revision()
            .to_string(),
        r.resource_version
    );

    // Byte-identical result: nothing written, resourceVersion unchanged.
    let (end, _) = guaranteed_update(&mut c, start(key), |s| Reply::Write(s.object.clone(), 0))
        .await
        .expect("noop");
    let Ended::Result(noop) = end else {
        panic!("{end:?}")
    };
    assert!(!noop.written);
    assert_eq!(noop.resource_version, r.resource_version);
    assert_eq!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .expect("kv")
            .mod_revision()
            .to_string(),
        r.resource_version
    );

    // Missing key: NOT_FOUND, the update function is never called.
    let mut called = false;
    let e = guaranteed_update(&mut c, start("/configmaps/default/b"), |_| {
        called = true;
        Reply::Abort("x".into())
    })
    .await
    .expect_err("missing");
    assert_eq!(e.code(), Code::NotFound);
    assert!(!called);

    // ignore_not_found: an empty object whose write is a create.
    let s = UpdateStart {
        ignore_not_found: true,
        ..start("/configmaps/default/b")
    };
    let (end, _) = guaranteed_update(&mut c, s, |state| {
        assert!(!state.exists && state.object.is_empty() && state.resource_version.is_empty());
        Reply::Write(cm("b", &[("n", "1")]).encode_to_vec(), 0)
    })
    .await
    .expect("create via update");
    let Ended::Result(created) = end else {
        panic!("{end:?}")
    };
    let kv = raw(&cluster, "/registry/configmaps/default/b")
        .await
        .expect("created");
    assert_eq!(kv.create_revision(), kv.mod_revision());
    assert_eq!(kv.mod_revision().to_string(), created.resource_version);

    // Abort on a current state: accepted, nothing written.
    let (end, _) = guaranteed_update(&mut c, start(key), |_| Reply::Abort("no".into()))
        .await
        .expect("abort");
    assert!(matches!(end, Ended::Aborted(1)), "{end:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn preconditions_are_checked_on_every_attempt() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    let rv = create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let pre = |uid: &str, rv: Option<&str>| {
        Some(Preconditions {
            uid: Some(uid.into()),
            resource_version: rv.map(String::from),
        })
    };

    let e = guaranteed_update(
        &mut c,
        UpdateStart {
            preconditions: pre("other", None),
            ..start(key)
        },
        increment,
    )
    .await
    .expect_err("uid");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
    let e = guaranteed_update(
        &mut c,
        UpdateStart {
            preconditions: pre("uid-a", Some("1")),
            ..start(key)
        },
        increment,
    )
    .await
    .expect_err("rv");
    assert_eq!(e.code(), Code::Aborted);
    assert!(
        guaranteed_update(
            &mut c,
            UpdateStart {
                preconditions: pre("uid-a", Some(&rv)),
                ..start(key)
            },
            increment
        )
        .await
        .is_ok()
    );

    // The object is replaced (new uid) while the first attempt is in flight: the txn loses, the
    // fresh state fails the uid precondition, and nothing is written.
    let mut replaced = cm("a", &[("n", "100")]);
    replaced.metadata.as_mut().expect("meta").uid = "uid-new".into();
    let endpoint = cluster.etcd.endpoint();
    let mut calls = 0;
    let mut wrote = false;
    let e = guaranteed_update(
        &mut c,
        UpdateStart {
            preconditions: pre("uid-a", None),
            ..start(key)
        },
        |s| {
            calls += 1;
            if !wrote {
                wrote = true;
                raw_put(
                    &endpoint,
                    "/registry/configmaps/default/a",
                    replaced.encode_to_vec(),
                );
            }
            increment(s)
        },
    )
    .await
    .expect_err("uid changed under us");
    assert_eq!(e.code(), Code::Aborted);
    assert_eq!(
        calls, 1,
        "the update function is not called on a state failing preconditions"
    );
    let now = get(&mut c, key).await.expect("get");
    assert_eq!(
        now.data.get("n").map(String::as_str),
        Some("100"),
        "the concurrent writer's object stays"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cached_objects_cost_one_round_trip_when_current_and_are_never_applied_when_stale() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let current = c
        .get(GetRequest {
            key: key.into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .object;

    // Current cache: the proposal goes with `start`; storage sends no state, one attempt.
    let s = UpdateStart {
        cached_object: Some(current.to_vec()),
        ..start(key)
    };
    let (end, states) = guaranteed_update(&mut c, s, increment)
        .await
        .expect("update");
    let Ended::Result(r) = end else {
        panic!("{end:?}")
    };
    assert_eq!((states, r.attempts, r.written), (0, 1, true));

    // Stale cache (n=0 while n=1 is stored): the proposal n=1 must not be applied; storage
    // sends the fresh state and the retry writes n=2.
    let s = UpdateStart {
        cached_object: Some(current.to_vec()),
        ..start(key)
    };
    let (end, states) = guaranteed_update(&mut c, s, increment)
        .await
        .expect("update");
    let Ended::Result(r) = end else {
        panic!("{end:?}")
    };
    assert_eq!((states, r.attempts), (1, 2));
    assert_eq!(
        get(&mut c, key)
            .await
            .expect("get")
            .data
            .get("n")
            .map(String::as_str),
        Some("2")
    );

    // A stale cached object whose proposal is byte-identical is re-checked, not returned.
    let stale = c
        .get(GetRequest {
            key: key.into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .object;
    guaranteed_update(&mut c, start(key), increment)
        .await
        .expect("n=3");
    let s = UpdateStart {
        cached_object: Some(stale.to_vec()),
        ..start(key)
    };
    let (end, _) = guaranteed_update(&mut c, s, |st| Reply::Write(st.object.clone(), 0))
        .await
        .expect("noop");
    let Ended::Result(r) = end else {
        panic!("{end:?}")
    };
    assert!(!r.written);
    assert_eq!(
        ConfigMap::decode(r.object.as_slice())
            .expect("decodes")
            .data
            .get("n")
            .map(String::as_str),
        Some("3")
    );

    // An abort on a stale cached object is retried on the fresh state.
    let stale = cm("a", &[("n", "0")]);
    let mut stale_meta = stale.clone();
    stale_meta.metadata.as_mut().expect("meta").resource_version = "2".into();
    let s = UpdateStart {
        cached_object: Some(stale_meta.encode_to_vec()),
        ..start(key)
    };
    let mut seen = Vec::new();
    let (end, _) = guaranteed_update(&mut c, s, |st| {
        seen.push(st.resource_version.clone());
        if st.resource_version == "2" {
            Reply::Abort("stale".into())
        } else {
            increment(st)
        }
    })
    .await
    .expect("retried");
    assert!(matches!(end, Ended::Result(_)), "{end:?}");
    assert_eq!(seen.len(), 2);

    // A suggestion that does not say which revision it is: refused, nothing written (the
    // README's deviations: upstream ignores it).
    let before = get(&mut c, key).await.expect("get");
    let s = UpdateStart {
        cached_object: Some(cm("a", &[("n", "9")]).encode_to_vec()),
        ..start(key)
    };
    let e = guaranteed_update(&mut c, s, increment)
        .await
        .expect_err("a suggestion without resourceVersion");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("no resource_version"), "{e:?}");
    assert_eq!(get(&mut c, key).await.expect("get"), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn attempts_are_bounded_and_reported() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            max_update_attempts: 3,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let endpoint = cluster.etcd.endpoint();
    // Another writer changes the key during every attempt: every txn loses.
    let mut calls = 0;
    let e = guaranteed_update(&mut c, start(key), |s| {
        calls += 1;
        raw_put(
            &endpoint,
            "/registry/configmaps/default/a",
            cm("a", &[("n", &format!("x{calls}"))]).encode_to_vec(),
        );
        increment(s)
    })
    .await
    .expect_err("gives up");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
    assert!(e.message().contains("3 attempts"), "{}", e.message());
    assert_eq!(calls, 3);
    // One conflict, then success: attempts = 2.
    let mut first = true;
    let (end, _) = guaranteed_update(&mut c, start(key), |s| {
        if std::mem::take(&mut first) {
            raw_put(
                &endpoint,
                "/registry/configmaps/default/a",
                cm("a", &[("n", "10")]).encode_to_vec(),
            );
        }
        increment(s)
    })
    .await
    .expect("second attempt wins");
    let Ended::Result(r) = end else {
        panic!("{end:?}")
    };
    assert_eq!(r.attempts, 2);
    assert_eq!(
        get(&mut c, key)
            .await
            .expect("get")
            .data
            .get("n")
            .map(String::as_str),
        Some("11"),
        "recomputed on the fresh state"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_two_tasks_times_fifty_increments_end_at_1600() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/counter";
    create(&mut c, key, &cm("counter", &[("n", "0")]), 0)
        .await
        .expect("create");
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let mut c = cluster.storage_client().await;
        tasks.push(tokio::spawn(async move {
            let mut attempts = 0;
            for _ in 0..50 {
                let (end, _) = guaranteed_update(&mut c, start(key), increment)
                    .await
                    .expect("update");
                let Ended::Result(r) = end else {
                    panic!("{end:?}")
                };
                attempts += r.attempts;
            }
            attempts
        }));
    }
    let mut attempts = 0;
    for t in tasks {
        attempts += t.await.expect("task");
    }
    let n = get(&mut c, key).await.expect("get").data.get("n").cloned();
    assert_eq!(n.as_deref(), Some("1600"));
    assert!(attempts >= 1600);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_protocol_errors_are_invalid_argument() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    // First message is not `start`.
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Abort(Default::default())),
    })
    .await
    .expect("send");
    let e = c
        .guaranteed_update(ReceiverStream::new(rx))
        .await
        .expect_err("bad first message");
    assert_eq!(e.code(), Code::InvalidArgument);
    // A malformed proposal.
    let e = guaranteed_update(&mut c, start(key), |_| Reply::Write(vec![0x0a, 0x05], 0))
        .await
        .expect_err("malformed proposal");
    assert_eq!(e.code(), Code::InvalidArgument);
    // A proposal that names another revision than the state it answers.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Start(start(key))),
    })
    .await
    .expect("send");
    let mut resp = c
        .guaranteed_update(ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    resp.message().await.expect("state").expect("a state");
    let proposal = kubestore_proto::storage::v1::UpdateProposal {
        based_on_resource_version: "1".into(),
        object: cm("a", &[("n", "9")]).encode_to_vec(),
        ttl_seconds: 0,
    };
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Proposal(proposal)),
    })
    .await
    .expect("send");
    let e = resp.message().await.expect_err("wrong revision");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        get(&mut c, key)
            .await
            .expect("get")
            .data
            .get("n")
            .map(String::as_str),
        Some("0"),
        "nothing written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_update_overtaken_by_a_newer_write_fails_without_reading_etcd() {
    use kubestore_proto::storage::v1::{
        UpdateProposal, guaranteed_update_response::Message as Resp,
    };
    use kubestore_tests::services::{sample, scrape};
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(kubestore_tests::update::long_turn_hold()),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/hot";
    let rv = create(&mut c, key, &cm("hot", &[("n", "0")]), 0)
        .await
        .expect("create");
    // A holder takes the key's turn.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Start(start(key))),
    })
    .await
    .expect("send");
    let mut holder = c
        .guaranteed_update(ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    let Some(Resp::State(state)) = holder
        .message()
        .await
        .expect("state")
        .and_then(|m| m.message)
    else {
        panic!("expected a state")
    };
    // An update conditioned on the same revision queues behind it.
    let mut c2 = cluster.storage_client().await;
    let pre = Some(Preconditions {
        uid: None,
        resource_version: Some(rv.clone()),
    });
    let queued = tokio::spawn(async move {
        let mut called = false;
        let r = guaranteed_update(
            &mut c2,
            UpdateStart {
                preconditions: pre,
                ..start(key)
            },
            |s| {
                called = true;
                increment(s)
            },
        )
        .await;
        (r, called)
    });
    let metrics = cluster.storage.metrics_addr;
    for _ in 0..500 {
        if sample(&scrape(metrics).await, "storage_guaranteed_updates_waiting") == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        sample(&scrape(metrics).await, "storage_guaranteed_updates_waiting"),
        Some(1.0)
    );
    let ranges = |s: &str| {
        sample(s, r#"storage_etcd_rpc_duration_seconds_count{rpc="Range"}"#).unwrap_or(0.0)
    };
    let ranges_before = ranges(&scrape(metrics).await);
    let Reply::Write(object, _) = increment(&state) else {
        unreachable!("increment writes")
    };
    let proposal = UpdateProposal {
        based_on_resource_version: state.resource_version.clone(),
        object,
        ttl_seconds: 0,
    };
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Proposal(proposal)),
    })
    .await
    .expect("send");
    let Some(Resp::Result(done)) = holder
        .message()
        .await
        .expect("result")
        .and_then(|m| m.message)
    else {
        panic!("expected a result")
    };
    assert!(done.written);
    let (r, called) = queued.await.expect("join");
    let e = r.expect_err("overtaken");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
    assert_eq!(
        e.get_details_error_info()
            .and_then(|i| i.metadata.get("precondition").cloned())
            .as_deref(),
        Some("resourceVersion")
    );
    assert!(!called, "the update function was never asked");
    assert_eq!(
        ranges(&scrape(metrics).await),
        ranges_before,
        "no etcd read was needed"
    );
}
