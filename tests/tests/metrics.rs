//! The Prometheus `/metrics` endpoints of both services after real traffic.

use kubestore_proto::{
    core::v1::{
        Container, CreateEventRequest, CreatePodRequest, Event, GetPodRequest, Pod, PodSpec,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    Cluster,
    services::{channel, sample, scrape},
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
                ..Default::default()
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
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="core.v1.Pods",grpc_method="Create",grpc_code="OK"}"#
        ),
        Some(1.0),
        "{registry}"
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="core.v1.Pods",grpc_method="Get",grpc_code="OK"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="core.v1.Pods",grpc_method="Get",grpc_code="NOT_FOUND"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &registry,
            r#"grpc_server_handling_seconds_count{grpc_type="unary",grpc_service="core.v1.Pods",grpc_method="Create"}"#
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
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="storage.v1.Storage",grpc_method="Create",grpc_code="OK"}"#
        ),
        // The pod and the event, and the system namespaces registry-svc creates at start.
        Some(2.0 + registry_svc::kinds::namespace::SYSTEM_NAMESPACES.len() as f64),
        "{storage}"
    );
    assert!(
        sample(
            &storage,
            r#"storage_etcd_rpc_duration_seconds_count{rpc="Txn"}"#
        )
        .unwrap_or(0.0)
            >= 2.0,
        "{storage}"
    );
    assert!(
        sample(
            &storage,
            r#"storage_etcd_rpc_duration_seconds_count{rpc="Range"}"#
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
    // kube-apiserver's etcd series: upstream's operation names, the resource as `type`.
    for (operation, ty) in [("create", "pods"), ("create", "events")] {
        assert_eq!(
            sample(
                &storage,
                &format!(
                    r#"etcd_request_duration_seconds_count{{operation="{operation}",type="{ty}"}}"#
                )
            ),
            Some(1.0),
            "{operation} {ty}: {storage}"
        );
    }
    assert!(storage.contains("# TYPE storage_etcd_rpc_duration_seconds histogram"));

    // Lists and watches (registry-svc's object count, run by its scrape above, lists too:
    // count from here).
    let items_before = sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_list_items_returned_total",
    )
    .unwrap_or(0.0);
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
        Some(items_before + 1.0)
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

/// go-grpc-prometheus's names: every served method's series exist (at zero) before its first
/// call; streams are counted with their type and kept out of the latency histogram; the process
/// metrics dashboards expect are there.
#[tokio::test(flavor = "multi_thread")]
async fn rpc_series_follow_the_grpc_ecosystem_names_from_the_start() {
    let cluster = Cluster::full().await;
    let addr = cluster.registry.as_ref().expect("registry").metrics_addr;
    let registry = scrape(addr).await;
    for (series, want) in [
        (
            r#"grpc_server_started_total{grpc_type="unary",grpc_service="core.v1.Secrets",grpc_method="Create"}"#,
            0.0,
        ),
        (
            r#"grpc_server_handled_total{grpc_type="unary",grpc_service="core.v1.Secrets",grpc_method="Create",grpc_code="OK"}"#,
            0.0,
        ),
        (
            r#"grpc_server_handling_seconds_count{grpc_type="unary",grpc_service="core.v1.Secrets",grpc_method="Create"}"#,
            0.0,
        ),
        (
            r#"grpc_server_handled_total{grpc_type="server_stream",grpc_service="core.v1.Pods",grpc_method="Watch",grpc_code="OK"}"#,
            0.0,
        ),
    ] {
        assert_eq!(
            sample(&registry, series),
            Some(want),
            "{series}\n{registry}"
        );
    }
    let storage = scrape(cluster.storage.metrics_addr).await;
    assert!(
        storage.contains(r#"grpc_server_started_total{grpc_type="bidi_stream",grpc_service="storage.v1.Storage",grpc_method="GuaranteedUpdate"}"#),
        "{storage}"
    );

    // A watch: started at once, handled with its code when it ends, never in the histogram.
    let mut pods = cluster.pods().await;
    let watch = pods
        .watch(kubestore_proto::core::v1::WatchPodsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect("watch");
    let started = r#"grpc_server_started_total{grpc_type="server_stream",grpc_service="core.v1.Pods",grpc_method="Watch"}"#;
    assert_eq!(sample(&scrape(addr).await, started), Some(1.0));
    drop(watch);
    let registry = scrape(addr).await;
    assert!(
        !registry.contains(r#"grpc_server_handling_seconds_count{grpc_type="server_stream""#),
        "streams stay out of the latency histogram: {registry}"
    );

    // Process metrics.
    let cpu = sample(&registry, "process_cpu_seconds_total").expect("process_cpu_seconds_total");
    assert!(cpu > 0.0, "{cpu}");
    let start = sample(&registry, "process_start_time_seconds").expect("start time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    assert!(
        start <= now + 1.0 && start > now - 3600.0 * 24.0,
        "started {start}, now {now}"
    );
    assert!(
        registry.contains("# TYPE process_cpu_seconds counter"),
        "{registry}"
    );
}

/// kube-apiserver's request metrics: verb, group, version, resource, scope and HTTP code as
/// upstream labels them, for built-in and custom kinds; watches counted as long-running and
/// kept out of the latency histogram.
#[tokio::test(flavor = "multi_thread")]
async fn apiserver_request_metrics_carry_upstreams_labels() {
    use kubestore_proto::apiextensions::v1::{
        CreateCustomObjectRequest, custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    };
    let cluster = Cluster::full().await;
    let addr = cluster.registry.as_ref().expect("registry").metrics_addr;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut cms = cluster.config_maps().await;
    let cm = |name: &str| kubestore_proto::core::v1::ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    cms.create(kubestore_proto::core::v1::CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(cm("a")),
        dry_run: false,
    })
    .await
    .expect("create");
    cms.create(kubestore_proto::core::v1::CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(cm("a")),
        dry_run: true,
    })
    .await
    .expect_err("exists");
    cms.list(kubestore_proto::core::v1::ListConfigMapsRequest {
        namespace: String::new(),
        options: None,
    })
    .await
    .expect("list");
    let watch = cms
        .watch(kubestore_proto::core::v1::WatchConfigMapsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect("watch");
    let text = scrape(addr).await;
    let series = |verb: &str, dry: &str, scope: &str, code: &str| {
        format!(
            r#"apiserver_request_total{{verb="{verb}",dry_run="{dry}",group="",version="v1",resource="configmaps",subresource="",scope="{scope}",component="apiserver",code="{code}"}}"#
        )
    };
    assert_eq!(
        sample(&text, &series("POST", "", "resource", "201")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &series("POST", "All", "resource", "409")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &series("LIST", "", "cluster", "200")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &series("WATCH", "", "namespace", "200")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"apiserver_longrunning_requests{verb="WATCH",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains(r#"apiserver_request_duration_seconds_count{verb="WATCH""#),
        "watches stay out of the latency histogram"
    );
    assert!(
        text.contains(r#"apiserver_request_duration_seconds_count{verb="LIST",dry_run="",group="",version="v1",resource="configmaps""#),
        "{text}"
    );
    drop(watch);

    // A custom kind: its group, version and plural.
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    kubestore_tests::fixtures_custom::register_established(
        &mut defs,
        kubestore_tests::fixtures_custom::crontab_crd(),
    )
    .await;
    CustomObjectsClient::new(channel(&url).await)
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: "default".into(),
            object: Some(
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "stable.example.com/v1", "kind": "CronTab",
                    "metadata": {"name": "c"}, "spec": {"cronSpec": "* * * * */5"}
                }))
                .expect("a Struct"),
            ),
            dry_run: false,
        })
        .await
        .expect("create a CronTab");
    let text = scrape(addr).await;
    assert_eq!(
        sample(
            &text,
            r#"apiserver_request_total{verb="POST",dry_run="",group="stable.example.com",version="v1",resource="crontabs",subresource="",scope="resource",component="apiserver",code="201"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"apiserver_request_total{verb="POST",dry_run="",group="apiextensions.k8s.io",version="v1",resource="customresourcedefinitions",subresource="",scope="resource",component="apiserver",code="201"}"#
        ),
        Some(1.0),
        "{text}"
    );
}

/// Every series the provisioned Grafana dashboard (`deploy/grafana/dashboards/kubestore.json`)
/// queries is exported by a process of the stack: a renamed metric would leave a panel empty
/// without anyone noticing.
#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_queries_only_series_the_stack_exports() {
    let dashboard: serde_json::Value = serde_json::from_str(include_str!(
        "../../deploy/grafana/dashboards/kubestore.json"
    ))
    .expect("the dashboard is JSON");
    let mut wanted = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            // Metric names: the identifiers with one of the stack's metric prefixes (label
            // names such as `grpc_method` have none of them).
            const PREFIXES: [&str; 9] = [
                "apiserver_",
                "grpc_server_",
                "etcd_",
                "storage_",
                "registry_",
                "garbagecollector_",
                "leader_election_",
                "process_",
                "tokio_",
            ];
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if PREFIXES.iter().any(|p| word.starts_with(p)) {
                    wanted.insert(word.to_string());
                }
            }
        }
    }
    assert!(wanted.len() >= 10, "{wanted:?}");

    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    // A watch and a create, so that request-labelled series exist.
    let mut cms = cluster.config_maps().await;
    cms.create(kubestore_proto::core::v1::CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(kubestore_proto::core::v1::ConfigMap {
            metadata: Some(ObjectMeta {
                name: "a".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        dry_run: false,
    })
    .await
    .expect("create");
    let _watch = cms
        .watch(kubestore_proto::core::v1::WatchConfigMapsRequest {
            namespace: "default".into(),
            options: None,
        })
        .await
        .expect("watch");
    // A real controller-manager process for the collector's series.
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let mut manager = std::process::Command::new(kubestore_tests::kubestore_binary())
        .args(["--registry", &url, "controller-manager", "--metrics-addr"])
        .arg(metrics.to_string())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("controller-manager starts");
    let mut exported = String::new();
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(metrics).await.is_ok() {
            exported = scrape(metrics).await;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = manager.kill();
    let _ = manager.wait();
    exported += &scrape(cluster.storage.metrics_addr).await;
    exported += &scrape(cluster.registry.as_ref().expect("registry").metrics_addr).await;
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|m| !exported.lines().any(|l| l.starts_with(m.as_str())))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries series nobody exports: {missing:?}"
    );
}

/// `apiserver_storage_objects{resource}`: every resource's count from the first scrape (0 for
/// none), then the objects created once the period has passed, custom kinds included
/// (`plural.group`), as upstream labels them.
#[tokio::test(flavor = "multi_thread")]
async fn storage_objects_are_counted_per_resource() {
    let cluster = Cluster::start(kubestore_tests::services::ClusterOptions {
        with_registry: true,
        registry: Some(registry_svc::Config {
            storage_objects_period: std::time::Duration::from_millis(200),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let addr = cluster.registry.as_ref().expect("registry").metrics_addr;
    let count = |text: &str, resource: &str| {
        sample(
            text,
            &format!(r#"apiserver_storage_objects{{resource="{resource}"}}"#),
        )
    };
    // Every built-in resource's series from the first scrape, counted (0).
    let first = scrape(addr).await;
    for resource in [
        "pods",
        "configmaps",
        "events",
        "secrets",
        "leases.coordination.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
    ] {
        assert_eq!(count(&first, resource), Some(0.0), "{resource}: {first}");
    }
    let mut c = cluster.config_maps().await;
    for i in 0..3 {
        kubestore_tests::fixtures_registry::create_cm(
            &mut c,
            kubestore_tests::fixtures_registry::cm(&format!("c{i}"), &[]),
        )
        .await
        .expect("create");
    }
    let mut defs = kubestore_proto::apiextensions::v1::custom_resource_definitions_client::CustomResourceDefinitionsClient::new(
        channel(&cluster.registry.as_ref().expect("registry").url()).await,
    );
    kubestore_tests::fixtures_custom::register_established(
        &mut defs,
        kubestore_tests::fixtures_custom::crontab_crd(),
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = scrape(addr).await;
        if count(&text, "configmaps") == Some(3.0)
            && count(&text, "customresourcedefinitions.apiextensions.k8s.io") == Some(1.0)
            && count(&text, "crontabs.stable.example.com") == Some(0.0)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "counts never caught up: {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
