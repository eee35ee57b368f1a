//! The Prometheus `/metrics` endpoints of both services after real traffic.

use kubestore_proto::{
    core::v1::{
        Container, CreateEventRequest, CreatePodRequest, Event, GetPodRequest, Pod, PodSpec,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    Cluster,
    services::{sample, scrape},
};

#[tokio::test(flavor = "multi_thread")]
async fn both_services_export_rpc_etcd_update_and_lease_metrics() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: "web".into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: "nginx".into(),
                resources: None,
            }],
            ..Default::default()
        }),
        status: None,
    };
    pods.create(CreatePodRequest {
        namespace: "default".into(),
        pod: Some(pod),
        dry_run: false,
    })
    .await
    .expect("create");
    pods.get(GetPodRequest {
        namespace: "default".into(),
        name: "web".into(),
    })
    .await
    .expect("get");
    pods.get(GetPodRequest {
        namespace: "default".into(),
        name: "nope".into(),
    })
    .await
    .expect_err("missing");
    let mut events = cluster.events().await;
    let e = Event {
        metadata: Some(ObjectMeta {
            name: "e1".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    events
        .create(CreateEventRequest {
            namespace: "default".into(),
            event: Some(e),
            dry_run: false,
        })
        .await
        .expect("event");

    let registry = scrape(cluster.registry.as_ref().expect("registry").metrics_addr).await;
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_requests_total{service="core.v1.Pods",method="Create",code="OK"}"#
        ),
        Some(1.0),
        "{registry}"
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_requests_total{service="core.v1.Pods",method="Get",code="OK"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_requests_total{service="core.v1.Pods",method="Get",code="NOT_FOUND"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_request_duration_seconds_count{service="core.v1.Pods",method="Create",code="OK"}"#
        ),
        Some(1.0)
    );
    assert!(
        !registry.contains("grpc.health.v1.Health"),
        "health checks are not counted"
    );

    let storage = scrape(cluster.storage.metrics_addr).await;
    assert_eq!(
        sample(
            &storage,
            r#"grpc_server_requests_total{service="storage.v1.Storage",method="Create",code="OK"}"#
        ),
        Some(2.0),
        "{storage}"
    );
    assert!(
        sample(
            &storage,
            r#"etcd_request_duration_seconds_count{operation="Txn"}"#
        )
        .unwrap_or(0.0)
            >= 2.0,
        "{storage}"
    );
    assert!(
        sample(
            &storage,
            r#"etcd_request_duration_seconds_count{operation="Range"}"#
        )
        .unwrap_or(0.0)
            >= 2.0
    );
    assert_eq!(
        sample(&storage, "storage_lease_grants_total"),
        Some(1.0),
        "the event's TTL"
    );
    assert_eq!(
        sample(&storage, "storage_lease_attachments_total"),
        Some(1.0)
    );
    assert!(storage.contains("# TYPE storage_guaranteed_update_attempts histogram"));
    assert!(storage.contains("# TYPE etcd_request_duration_seconds histogram"));

    // Lists and watches.
    let listed = pods
        .list(kubestore_proto::core::v1::ListPodsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.items.len(), 1);
    // registry-svc keeps a watch of its own (custom kinds' definitions): count from here.
    let watches_before = sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_watches_open",
    )
    .unwrap_or(0.0);
    let mut watch = pods
        .watch(kubestore_proto::core::v1::WatchPodsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect("watch")
        .into_inner();
    watch
        .message()
        .await
        .expect("ok")
        .expect("the initial ADDED");
    let storage = scrape(cluster.storage.metrics_addr).await;
    assert_eq!(
        sample(&storage, "storage_list_items_returned_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(&storage, "storage_watches_open"),
        Some(watches_before + 1.0)
    );
    assert_eq!(
        sample(&storage, "storage_watchers_cut_off_total"),
        Some(0.0)
    );
    assert_eq!(sample(&storage, "storage_compactions_total"), Some(0.0));
    drop(watch);
    let mut closed = false;
    for _ in 0..100 {
        let s = scrape(cluster.storage.metrics_addr).await;
        if sample(&s, "storage_watches_open") == Some(watches_before) {
            assert_eq!(sample(&s, "storage_watch_events_sent_total"), Some(1.0));
            closed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(closed, "a watch whose client left is closed");
}
