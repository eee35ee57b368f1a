//! storage-svc against a real etcd, through gRPC only (plus a raw etcd client to check what was
//! written). One test per semantic point of the storage contract.

use std::time::{Duration, Instant};

use kubestore_proto::{
    core::v1::{ConfigMap, Event, Pod, PodSpec},
    meta::v1::{ObjectMeta, Preconditions},
    storage::v1::{
        CreateRequest, DeleteRequest, GetRequest, GuaranteedUpdateRequest, UpdateStart,
        guaranteed_update_request::Message as Req, storage_client::StorageClient,
    },
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    update::{Ended, Reply, guaranteed_update},
};
use prost::Message;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            ..Default::default()
        }),
        data: data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        immutable: None,
    }
}

/// The resource version of any encoded object (reads field 1 only, as storage does).
fn rv_of(bytes: &[u8]) -> String {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Envelope {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
    }
    Envelope::decode(bytes)
        .expect("decodes")
        .metadata
        .expect("meta")
        .resource_version
}

fn reason(s: &Status) -> String {
    s.get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

async fn create(
    c: &mut StorageClient<Channel>,
    key: &str,
    obj: &impl Message,
    ttl: i64,
) -> Result<String, Status> {
    let r = c
        .create(CreateRequest {
            key: key.into(),
            object: obj.encode_to_vec(),
            ttl_seconds: ttl,
            dry_run: false,
        })
        .await?
        .into_inner();
    assert_eq!(
        rv_of(&r.object),
        r.resource_version,
        "returned object carries its resource version"
    );
    Ok(r.resource_version)
}

async fn get(c: &mut StorageClient<Channel>, key: &str) -> Result<ConfigMap, Status> {
    let r = c
        .get(GetRequest {
            key: key.into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(ConfigMap::decode(r.object.as_slice()).expect("decodes"))
}

async fn raw(cluster: &Cluster, etcd_key: &str) -> Option<etcd_client::KeyValue> {
    let mut c = cluster.etcd.client().await;
    c.get(etcd_key, None)
        .await
        .expect("etcd get")
        .take_kvs()
        .into_iter()
        .next()
}

/// A write by another etcd client, made synchronously from inside an update function.
fn raw_put(endpoint: &str, etcd_key: &str, bytes: Vec<u8>) {
    let (ep, k) = (endpoint.to_string(), etcd_key.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let mut e = etcd_client::Client::connect([ep], None)
                .await
                .expect("etcd");
            e.put(k, bytes, None).await.expect("put");
        })
    })
    .join()
    .expect("writer thread");
}

fn start(key: &str) -> UpdateStart {
    UpdateStart {
        key: key.into(),
        ..Default::default()
    }
}

/// Adds 1 to data["n"].
fn increment(state: &kubestore_tests::update::CurrentState) -> Reply {
    let mut obj = ConfigMap::decode(state.object.as_slice()).expect("decodes");
    let n: u64 = obj.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
    obj.data.insert("n".into(), (n + 1).to_string());
    Reply::Write(obj.encode_to_vec(), 0)
}

#[tokio::test(flavor = "multi_thread")]
async fn create_stores_under_the_prefix_without_resource_version() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let rv = create(&mut c, "/configmaps/default/a", &cm("a", &[("k", "v")]), 0)
        .await
        .expect("create");
    let kv = raw(&cluster, "/registry/configmaps/default/a")
        .await
        .expect("stored under /registry");
    assert_eq!(
        kv.mod_revision().to_string(),
        rv,
        "resourceVersion is the etcd mod revision"
    );
    let stored = ConfigMap::decode(kv.value()).expect("stored bytes decode");
    assert_eq!(
        stored
            .metadata
            .as_ref()
            .map(|m| m.resource_version.as_str()),
        Some(""),
        "no RV in stored bytes"
    );
    assert_eq!(stored.data.get("k").map(String::as_str), Some("v"));
    let got = get(&mut c, "/configmaps/default/a").await.expect("get");
    assert_eq!(got.metadata.expect("meta").resource_version, rv);

    let e = create(&mut c, "/configmaps/default/a", &cm("a", &[]), 0)
        .await
        .expect_err("exists");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::AlreadyExists, "AlreadyExists")
    );
    assert!(
        e.message().contains("/configmaps/default/a"),
        "message names the key: {}",
        e.message()
    );

    let mut with_rv = cm("b", &[]);
    with_rv.metadata.as_mut().expect("meta").resource_version = "5".into();
    let e = create(&mut c, "/configmaps/default/b", &with_rv, 0)
        .await
        .expect_err("rv set");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        raw(&cluster, "/registry/configmaps/default/b")
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn any_kind_is_stored_without_a_code_change() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: "p".into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            node_name: "n1".into(),
            ..Default::default()
        }),
        status: None,
    };
    let event = Event {
        metadata: Some(ObjectMeta {
            name: "e".into(),
            ..Default::default()
        }),
        reason: "Started".into(),
        ..Default::default()
    };
    create(&mut c, "/pods/default/p", &pod, 0)
        .await
        .expect("pod");
    create(&mut c, "/events/default/e", &event, 0)
        .await
        .expect("event");
    let r = c
        .get(GetRequest {
            key: "/pods/default/p".into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner();
    let back = Pod::decode(r.object.as_slice()).expect("decodes");
    assert_eq!(back.spec, pod.spec, "fields storage does not know survive");
    let r = c
        .get(GetRequest {
            key: "/events/default/e".into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(
        Event::decode(r.object.as_slice()).expect("decodes").reason,
        "Started"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_keys_and_objects_are_rejected_before_etcd() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let mut etcd = cluster.etcd.client().await;
    let rev_before = etcd
        .get("x", None)
        .await
        .expect("get")
        .header()
        .expect("header")
        .revision();
    for key in [
        "",
        "/",
        "configmaps/a",
        "/configmaps/../../etc",
        "/configmaps/./a",
        "/configmaps//a",
        "/..",
        "/a/",
    ] {
        let e = create(&mut c, key, &cm("a", &[]), 0).await.expect_err(key);
        assert_eq!(
            (e.code(), reason(&e).as_str()),
            (Code::InvalidArgument, "Invalid"),
            "create {key:?}"
        );
        let e = c
            .get(GetRequest {
                key: key.into(),
                ..Default::default()
            })
            .await
            .expect_err(key);
        assert_eq!(e.code(), Code::InvalidArgument, "get {key:?}");
        let e = c
            .delete(DeleteRequest {
                key: key.into(),
                ..Default::default()
            })
            .await
            .expect_err(key);
        assert_eq!(e.code(), Code::InvalidArgument, "delete {key:?}");
        let e = guaranteed_update(&mut c, start(key), increment)
            .await
            .expect_err(key);
        assert_eq!(e.code(), Code::InvalidArgument, "update {key:?}");
    }
    // Malformed protobuf.
    let e = c
        .create(CreateRequest {
            key: "/configmaps/default/x".into(),
            object: vec![0x0a, 0x05, 0x01],
            ..Default::default()
        })
        .await
        .expect_err("malformed");
    assert_eq!(e.code(), Code::InvalidArgument);
    // Over etcd's 1.5 MiB request limit.
    let big = cm("big", &[("blob", &"x".repeat(1536 * 1024))]);
    let e = create(&mut c, "/configmaps/default/big", &big, 0)
        .await
        .expect_err("too large");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("too large"), "{}", e.message());
    // Negative TTL.
    let e = create(&mut c, "/configmaps/default/t", &cm("t", &[]), -1)
        .await
        .expect_err("negative ttl");
    assert_eq!(e.code(), Code::InvalidArgument);
    let rev_after = etcd
        .get("x", None)
        .await
        .expect("get")
        .header()
        .expect("header")
        .revision();
    assert_eq!(rev_before, rev_after, "nothing was written to etcd");
    // 1 MiB is fine.
    let ok = cm("ok", &[("blob", &"x".repeat(1024 * 1024))]);
    create(&mut c, "/configmaps/default/ok", &ok, 0)
        .await
        .expect("1 MiB fits");
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_prefix_is_used() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            etcd_prefix: "custom//prefix/".into(),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/default/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    assert!(
        raw(&cluster, "/custom/prefix/configmaps/default/a")
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_options() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let e = get(&mut c, "/configmaps/default/none")
        .await
        .expect_err("missing");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );
    let r = c
        .get(GetRequest {
            key: "/configmaps/default/none".into(),
            ignore_not_found: true,
            ..Default::default()
        })
        .await
        .expect("ignore_not_found")
        .into_inner();
    assert!(!r.found && r.object.is_empty());
    let rv: i64 = create(&mut c, "/configmaps/default/a", &cm("a", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("int");
    let at = |v: String| GetRequest {
        key: "/configmaps/default/a".into(),
        ignore_not_found: false,
        resource_version: v,
    };
    assert!(
        c.get(at(rv.to_string())).await.is_ok(),
        "not older than its own revision"
    );
    assert!(c.get(at("0".into())).await.is_ok());
    let e = c
        .get(at((rv + 1000).to_string()))
        .await
        .expect_err("too large");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::Unavailable, "Timeout")
    );
    assert!(
        e.message().contains("Too large resource version"),
        "{}",
        e.message()
    );
    let e = c.get(at("abc".into())).await.expect_err("not a number");
    assert_eq!(e.code(), Code::InvalidArgument);
}

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
        cached_object: Some(current.clone()),
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
        cached_object: Some(current),
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
        cached_object: Some(stale),
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
async fn delete_checks_preconditions_and_returns_the_last_state() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    let rv = create(&mut c, key, &cm("a", &[("k", "v")]), 0)
        .await
        .expect("create");
    let del = |pre: Option<Preconditions>, dry_run: bool| DeleteRequest {
        key: key.into(),
        preconditions: pre,
        dry_run,
        cached_object: None,
    };

    for pre in [
        Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        },
        Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        },
    ] {
        let e = c
            .delete(del(Some(pre), false))
            .await
            .expect_err("precondition");
        assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
        assert!(
            raw(&cluster, "/registry/configmaps/default/a")
                .await
                .is_some(),
            "object stays"
        );
    }
    let r = c
        .delete(del(None, true))
        .await
        .expect("dry run")
        .into_inner();
    assert_eq!(r.resource_version, rv, "dry run returns the current state");
    assert!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .is_some(),
        "dry run deletes nothing"
    );

    let ok = Preconditions {
        uid: Some("uid-a".into()),
        resource_version: Some(rv.clone()),
    };
    let r = c
        .delete(del(Some(ok), false))
        .await
        .expect("delete")
        .into_inner();
    let last = ConfigMap::decode(r.object.as_slice()).expect("decodes");
    assert_eq!(last.data.get("k").map(String::as_str), Some("v"));
    assert!(
        r.resource_version.parse::<i64>().expect("int") > rv.parse::<i64>().expect("int"),
        "RV is the delete's revision"
    );
    assert_eq!(
        last.metadata.expect("meta").resource_version,
        r.resource_version
    );
    assert!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .is_none()
    );
    let e = c.delete(del(None, false)).await.expect_err("gone");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );

    // A stale cached object: preconditions re-checked on the current state, then deleted.
    let rv1 = create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let cached = c
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
        .expect("update");
    let r = c
        .delete(DeleteRequest {
            key: key.into(),
            cached_object: Some(cached.clone()),
            ..Default::default()
        })
        .await
        .expect("delete with stale cache")
        .into_inner();
    assert_eq!(
        ConfigMap::decode(r.object.as_slice())
            .expect("decodes")
            .data
            .get("n")
            .map(String::as_str),
        Some("1")
    );
    // A cached object with a RV precondition that only matched the stale copy fails.
    create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    guaranteed_update(&mut c, start(key), increment)
        .await
        .expect("update");
    let e = c
        .delete(DeleteRequest {
            key: key.into(),
            preconditions: Some(Preconditions {
                uid: None,
                resource_version: Some(rv1),
            }),
            cached_object: Some(cached),
            ..Default::default()
        })
        .await
        .expect_err("stale precondition");
    assert_eq!(e.code(), Code::Aborted);
    assert!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_runs_write_nothing() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/a";
    let r = c
        .create(CreateRequest {
            key: key.into(),
            object: cm("a", &[]).encode_to_vec(),
            ttl_seconds: 0,
            dry_run: true,
        })
        .await
        .expect("dry create")
        .into_inner();
    assert!(r.resource_version.is_empty());
    assert!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .is_none()
    );
    let rv = create(&mut c, key, &cm("a", &[("n", "0")]), 0)
        .await
        .expect("create");
    let e = c
        .create(CreateRequest {
            key: key.into(),
            object: cm("a", &[]).encode_to_vec(),
            ttl_seconds: 0,
            dry_run: true,
        })
        .await
        .expect_err("exists");
    assert_eq!(e.code(), Code::AlreadyExists);
    let (end, _) = guaranteed_update(
        &mut c,
        UpdateStart {
            dry_run: true,
            ..start(key)
        },
        increment,
    )
    .await
    .expect("dry update");
    let Ended::Result(r) = end else {
        panic!("{end:?}")
    };
    assert!(!r.written);
    assert_eq!(
        r.resource_version, rv,
        "dry-run update keeps the current RV"
    );
    assert_eq!(
        ConfigMap::decode(r.object.as_slice())
            .expect("decodes")
            .data
            .get("n")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        raw(&cluster, "/registry/configmaps/default/a")
            .await
            .expect("kv")
            .mod_revision()
            .to_string(),
        rv
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ttl_keys_carry_a_shared_lease_and_expire() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/events/default/a", &cm("a", &[]), 3600)
        .await
        .expect("create");
    create(&mut c, "/events/default/b", &cm("b", &[]), 3600)
        .await
        .expect("create");
    let a = raw(&cluster, "/registry/events/default/a")
        .await
        .expect("a");
    let b = raw(&cluster, "/registry/events/default/b")
        .await
        .expect("b");
    assert_ne!(a.lease(), 0, "TTL key has a lease");
    assert_eq!(
        a.lease(),
        b.lease(),
        "the lease is reused within its window"
    );
    let mut etcd = cluster.etcd.client().await;
    let ttl = etcd
        .lease_time_to_live(a.lease(), None)
        .await
        .expect("ttl")
        .ttl();
    assert!(
        ttl > 3600 && ttl <= 3660,
        "lease = ttl + reuse window, got {ttl}"
    );
    // An update without TTL detaches the lease (as upstream: a Put without lease).
    guaranteed_update(&mut c, start("/events/default/a"), increment)
        .await
        .expect("update");
    assert_eq!(
        raw(&cluster, "/registry/events/default/a")
            .await
            .expect("a")
            .lease(),
        0
    );
    // An update with a TTL attaches one.
    guaranteed_update(&mut c, start("/events/default/a"), |s| match increment(s) {
        Reply::Write(b, _) => Reply::Write(b, 3600),
        other => other,
    })
    .await
    .expect("update");
    assert_ne!(
        raw(&cluster, "/registry/events/default/a")
            .await
            .expect("a")
            .lease(),
        0
    );
    // A short TTL expires.
    create(&mut c, "/events/default/short", &cm("short", &[]), 1)
        .await
        .expect("create");
    let deadline = Instant::now() + Duration::from_secs(15);
    while raw(&cluster, "/registry/events/default/short")
        .await
        .is_some()
    {
        assert!(Instant::now() < deadline, "TTL key did not expire");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
async fn etcd_down_is_unavailable_within_the_deadline_and_recovers() {
    let mut cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/default/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    cluster.etcd.kill();
    let t = Instant::now();
    let mut req = tonic::Request::new(GetRequest {
        key: "/configmaps/default/a".into(),
        ..Default::default()
    });
    req.set_timeout(Duration::from_secs(2));
    let e = c.get(req).await.expect_err("etcd is down");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(
        matches!(reason(&e).as_str(), "ServiceUnavailable" | "Timeout"),
        "{e:?}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "answered within the deadline: {:?}",
        t.elapsed()
    );
    // Health turns NOT_SERVING.
    let url = cluster.storage.url();
    let deadline = Instant::now() + Duration::from_secs(10);
    while kubestore_telemetry::health::check(&url, "", Duration::from_secs(1))
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "health stayed SERVING with etcd down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.etcd.restart().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match get(&mut c, "/configmaps/default/a").await {
            Ok(_) => break,
            Err(e) => assert!(
                Instant::now() < deadline,
                "storage did not reconnect: {e:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kubestore_tests::services::wait_serving(&url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reflection_lists_the_storage_service() {
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let cluster = Cluster::storage_only().await;
    let mut client = ServerReflectionClient::new(
        kubestore_tests::services::channel(&cluster.storage.url()).await,
    );
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = client
        .server_reflection_info(tokio_stream::iter([req]))
        .await
        .expect("reflection")
        .into_inner();
    let resp = stream
        .message()
        .await
        .expect("message")
        .expect("one response");
    let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
        panic!("unexpected response")
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"storage.v1.Storage".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"grpc.health.v1.Health".to_string()),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_update_overtaken_by_a_newer_write_fails_without_reading_etcd() {
    use kubestore_proto::storage::v1::{
        UpdateProposal, guaranteed_update_response::Message as Resp,
    };
    use kubestore_tests::services::{sample, scrape};
    let cluster = Cluster::storage_only().await;
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
        sample(
            s,
            r#"etcd_request_duration_seconds_count{operation="Range"}"#,
        )
        .unwrap_or(0.0)
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
