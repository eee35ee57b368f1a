//! What callers see when etcd itself is in trouble: out of space, or a lease that vanished.
//! Each test reproduces a defect found by review (issue 12), named in its comment.

use kubestore_proto::{
    core::v1::{ConfigMap, CreateConfigMapRequest, CreateEventRequest, Event, GetConfigMapRequest},
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_registry::{NS, reason},
};
use std::time::Duration;

use tonic::Code;

fn big_cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        data: [("blob".to_string(), "x".repeat(900_000))].into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

/// Defect 5: etcd's "database space exceeded" became INVALID_ARGUMENT "ConfigMap ... is
/// invalid", as if the client were at fault.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_etcd_is_resource_exhausted_and_reads_still_work() {
    let cluster = Cluster::start(ClusterOptions {
        with_registry: true,
        etcd_args: vec!["--quota-backend-bytes", "4194304"],
        ..Default::default()
    })
    .await;
    let mut cms = cluster.config_maps().await;
    let mut full = None;
    let mut created = Vec::new();
    for i in 0..40 {
        let name = format!("big-{i}");
        match cms
            .create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(big_cm(&name)),
                dry_run: false,
            })
            .await
        {
            Ok(_) => created.push(name),
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let e = full.expect("etcd never filled up");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::ResourceExhausted, "StorageFull"),
        "{}",
        e.message()
    );
    assert!(e.message().contains("out of space"), "{}", e.message());
    assert!(!e.message().contains("/configmaps/"), "{}", e.message());
    // Reads keep working.
    let first = created.first().expect("something fit");
    cms.get(GetConfigMapRequest {
        namespace: NS.into(),
        name: first.clone(),
    })
    .await
    .expect("read while full");
    // storage-svc says the same to its own clients.
    let mut c = cluster.storage_client().await;
    let e = kubestore_tests::fixtures_storage::create(
        &mut c,
        "/configmaps/default/small",
        &kubestore_tests::fixtures_storage::cm("small", &[("k", "v")]),
        0,
    )
    .await
    .expect_err("full");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::ResourceExhausted, "StorageFull")
    );
}

/// Defect 13: after `etcdctl lease revoke`, every Event create failed UNAVAILABLE until the
/// cached lease's local expiry (up to an hour).
#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_lease_is_replaced_on_the_next_write() {
    let cluster = Cluster::full().await;
    let mut events = cluster.events().await;
    let event = |name: &str| CreateEventRequest {
        namespace: NS.into(),
        event: Some(Event {
            metadata: Some(ObjectMeta {
                name: name.into(),
                ..Default::default()
            }),
            reason: "Test".into(),
            ..Default::default()
        }),
        dry_run: false,
    };
    events.create(event("e1")).await.expect("create");
    let mut etcd = cluster.etcd.client().await;
    let lease_of = |kvs: Vec<etcd_client::KeyValue>| kvs.first().map(|kv| kv.lease());
    let first = lease_of(
        etcd.get("/registry/events/default/e1", None)
            .await
            .expect("get")
            .take_kvs(),
    )
    .expect("stored");
    assert_ne!(first, 0, "events carry a lease");
    etcd.lease_revoke(first).await.expect("revoke");
    events
        .create(event("e2"))
        .await
        .expect("a new lease is granted");
    let second = lease_of(
        etcd.get("/registry/events/default/e2", None)
            .await
            .expect("get")
            .take_kvs(),
    )
    .expect("stored");
    assert!(second != 0 && second != first, "{second} vs {first}");
}

/// Issue 10: a full etcd is reported by health (`kubestore.writes` NOT_SERVING on both
/// services, the servers themselves still SERVING since reads work), and once an operator frees
/// space (delete, compact, defragment, disarm) writes work again without restarting anything.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_etcd_recovers_without_restarting_the_services() {
    use kubestore_proto::core::v1::DeleteConfigMapRequest;
    use kubestore_telemetry::{health::check, serving::WRITES};
    let cluster = Cluster::start(ClusterOptions {
        with_registry: true,
        etcd_args: vec!["--quota-backend-bytes", "4194304"],
        ..Default::default()
    })
    .await;
    let storage = cluster.storage.url();
    let registry = cluster.registry.as_ref().expect("registry").url();
    let mut cms = cluster.config_maps().await;
    let mut created = Vec::new();
    for i in 0..40 {
        let name = format!("big-{i}");
        match cms
            .create(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some(big_cm(&name)),
                dry_run: false,
            })
            .await
        {
            Ok(_) => created.push(name),
            Err(e) => {
                assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
                break;
            }
        }
    }
    assert!(created.len() < 40, "etcd never filled up");
    eprintln!(
        "etcd full after {} acknowledged 512 KiB creates; then RESOURCE_EXHAUSTED",
        created.len()
    );
    // Health: writes NOT_SERVING on both, the servers SERVING (within the probes' second).
    let until = |want_writes: bool| {
        let (storage, registry) = (storage.clone(), registry.clone());
        async move {
            for _ in 0..100 {
                let s = check(&storage, WRITES, Duration::from_secs(2))
                    .await
                    .is_ok();
                let r = check(&registry, WRITES, Duration::from_secs(2))
                    .await
                    .is_ok();
                if s == want_writes && r == want_writes {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("health never said writes = {want_writes}");
        }
    };
    until(false).await;
    for url in [&storage, &registry] {
        check(url, "", Duration::from_secs(2))
            .await
            .expect("the server itself stays SERVING: reads work");
    }
    // The operator's runbook: delete what is not needed (deletes work while full), compact,
    // defragment, disarm.
    for name in &created {
        cms.delete(DeleteConfigMapRequest {
            namespace: NS.into(),
            name: name.clone(),
            ..Default::default()
        })
        .await
        .expect("deletes work while etcd is full");
    }
    let mut etcd = cluster.etcd.client().await;
    let rev = etcd
        .get("/", None)
        .await
        .expect("get")
        .header()
        .map_or(0, |h| h.revision());
    etcd.compact(
        rev,
        Some(etcd_client::CompactionOptions::new().with_physical()),
    )
    .await
    .expect("compact");
    etcd.defragment().await.expect("defragment");
    // `etcdctl alarm disarm`: deactivate each raised alarm, by member.
    let raised = etcd
        .alarm(
            etcd_client::AlarmAction::Get,
            etcd_client::AlarmType::None,
            None,
        )
        .await
        .expect("alarm list");
    assert!(!raised.alarms().is_empty(), "NOSPACE was raised");
    let disarmed = std::time::Instant::now();
    for a in raised.alarms() {
        let mut only = etcd_client::AlarmOptions::new();
        only.with_member(a.member_id());
        etcd.alarm(etcd_client::AlarmAction::Deactivate, a.alarm(), Some(only))
            .await
            .expect("disarm");
    }
    // Writes work again through the same processes, and health says so.
    let mut small = big_cm("after");
    small.data = [("k".to_string(), "v".to_string())].into();
    cms.create(CreateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(small),
        dry_run: false,
    })
    .await
    .expect("a write after the alarm is disarmed");
    let first_write = disarmed.elapsed();
    until(true).await;
    eprintln!(
        "writes again {:?} after the disarm; health says so {:?} after it",
        first_write,
        disarmed.elapsed()
    );
    for name in &created {
        assert!(
            cms.get(kubestore_proto::core::v1::GetConfigMapRequest {
                namespace: NS.into(),
                name: name.clone(),
            })
            .await
            .is_err_and(|e| e.code() == Code::NotFound),
            "{name} was deleted while full"
        );
    }
}
