//! storage-svc against a real etcd, through gRPC only (plus a raw etcd client to check what was
//! written). One test per semantic point of the storage contract.

use std::time::{Duration, Instant};

use kubestore_proto::{
    core::v1::{ConfigMap, Event, Pod, PodSpec},
    meta::v1::{ObjectMeta, Preconditions},
    storage::v1::{CreateRequest, DeleteRequest, GetRequest, UpdateStart},
};
use kubestore_tests::fixtures_storage::*;
use kubestore_tests::{
    Cluster, ClusterOptions,
    update::{Ended, Reply, guaranteed_update},
};
use prost::Message;
use tonic::Code;

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
    let back = Pod::decode(r.object.as_ref()).expect("decodes");
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
        Event::decode(r.object.as_ref()).expect("decodes").reason,
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
            cached_object: Some(cached.to_vec()),
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
            cached_object: Some(cached.to_vec()),
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
