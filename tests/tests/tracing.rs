//! End-to-end tracing: the test client, registry-svc and storage-svc each export over OTLP/gRPC
//! to an in-process receiver (a real `TraceService/Export` server) under their own service
//! names. For a Create, an Update that loses an etcd race, and a graceful Delete, one trace runs
//! from the client's span through registry-svc and storage-svc down to the etcd calls, and every
//! parent link holds.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use kubestore_proto::{
    core::v1::{
        ConfigMap, Container, CreateConfigMapRequest, CreatePodRequest, DeletePodRequest, Pod,
        PodSpec, UpdateConfigMapRequest, config_maps_client::ConfigMapsClient,
        pods_client::PodsClient,
    },
    meta::v1::ObjectMeta,
    storage::v1::{
        GuaranteedUpdateRequest, UpdateAbort, UpdateStart,
        guaranteed_update_request::Message as Req, guaranteed_update_response::Message as Resp,
    },
};
use kubestore_telemetry::{
    GrpcTraceLayer, LogFormat, TelemetryConfig, TelemetryGuard, tracing_setup,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    otlp::{OtlpReceiver, ReceivedSpan},
    services::{channel, sample, scrape},
};
use prost::Message;
use tokio_stream::wrappers::ReceiverStream;
use tracing::{Instrument, instrument::WithSubscriber};

fn telemetry(name: &str, endpoint: &str) -> (tracing::Dispatch, TelemetryGuard) {
    let config = TelemetryConfig {
        service_name: name.into(),
        otlp_endpoint: Some(endpoint.into()),
        log_format: LogFormat::Text,
        log_filter: "warn".into(),
    };
    tracing_setup::build(&config).expect("telemetry")
}

/// The spans of one trace, by span id.
struct Trace {
    spans: Vec<ReceivedSpan>,
}

impl Trace {
    fn of(all: &[ReceivedSpan], trace_id: &str) -> Self {
        Self {
            spans: all
                .iter()
                .filter(|s| s.trace_id() == trace_id)
                .cloned()
                .collect(),
        }
    }
    fn named(&self, name: &str) -> Vec<&ReceivedSpan> {
        self.spans.iter().filter(|s| s.span.name == name).collect()
    }
    fn one(&self, service: &str, name: &str) -> &ReceivedSpan {
        let found: Vec<_> = self
            .named(name)
            .into_iter()
            .filter(|s| s.service == service)
            .collect();
        assert!(
            !found.is_empty(),
            "no {name:?} span from {service}; have {:?}",
            self.summary()
        );
        found[0]
    }
    fn parent(&self, s: &ReceivedSpan) -> Option<&ReceivedSpan> {
        self.spans.iter().find(|p| p.span_id() == s.parent_id())
    }
    fn summary(&self) -> Vec<String> {
        self.spans
            .iter()
            .map(|s| format!("{}:{}", s.service, s.span.name))
            .collect()
    }
    /// Every span but the root has its parent in the same trace; exactly one root.
    fn assert_connected(&self) {
        let ids: HashSet<String> = self.spans.iter().map(ReceivedSpan::span_id).collect();
        let roots: Vec<_> = self
            .spans
            .iter()
            .filter(|s| s.parent_id().is_empty())
            .collect();
        assert_eq!(roots.len(), 1, "one root: {:?}", self.summary());
        for s in &self.spans {
            if !s.parent_id().is_empty() {
                assert!(
                    ids.contains(&s.parent_id()),
                    "{}:{} has a parent outside the trace",
                    s.service,
                    s.span.name
                );
            }
        }
    }
    /// The chain client -> registry -> storage -> etcd for one storage RPC.
    fn assert_path(&self, client_root: &str, storage_method: &str, storage_op: &str) {
        let root = self.one("test-client", client_root);
        let client_call = self.parent_of_server("registry-svc");
        assert_eq!(client_call.service, "test-client");
        assert_eq!(
            client_call.attr("otel.kind").as_deref().or(Some("client")),
            Some("client")
        );
        assert_eq!(
            self.parent(client_call).map(|p| p.span_id()),
            Some(root.span_id()),
            "client call under the client span"
        );
        let storage_server = self.one(
            "storage-svc",
            &format!("storage.v1.Storage/{storage_method}"),
        );
        let registry_client = self
            .parent(storage_server)
            .expect("storage server span has a parent");
        assert_eq!(
            registry_client.service, "registry-svc",
            "storage is called by registry"
        );
        assert_eq!(
            registry_client.span.name,
            format!("storage.v1.Storage/{storage_method}")
        );
        // registry's client span descends from registry's server span.
        let mut up = self.parent(registry_client);
        let mut reached_server = false;
        while let Some(p) = up {
            if p.service == "registry-svc" && p.span.name.starts_with("core.v1.") {
                reached_server = true;
                break;
            }
            up = self.parent(p);
        }
        assert!(
            reached_server,
            "registry client span is under registry's server span"
        );
        let op = self.one("storage-svc", storage_op);
        assert_eq!(
            self.parent(op).map(|p| p.span_id()),
            Some(storage_server.span_id())
        );
        assert_eq!(op.attr("key").map(|k| k.starts_with('/')), Some(true));
        assert!(op.attr("resource").is_some());
        let etcd: Vec<_> = self
            .spans
            .iter()
            .filter(|s| s.attr("db.system").as_deref() == Some("etcd"))
            .collect();
        assert!(!etcd.is_empty(), "etcd client spans present");
        for e in etcd {
            assert!(e.attr("db.operation").is_some());
            let parent = self.parent(e).expect("etcd span has a parent");
            assert_eq!(parent.service, "storage-svc");
            assert!(
                parent.span.name.ends_with(" etcd3"),
                "etcd span under a storage op span, got {}",
                parent.span.name
            );
        }
        assert_eq!(storage_server.attr("rpc.system").as_deref(), Some("grpc"));
        assert_eq!(
            storage_server.attr("rpc.service").as_deref(),
            Some("storage.v1.Storage")
        );
        assert_eq!(
            storage_server.attr("rpc.method").as_deref(),
            Some(storage_method)
        );
        assert!(storage_server.attr("rpc.grpc.status_code").is_some());
    }
    /// The span tree as indented text: name [service] attributes events.
    fn render(&self) -> String {
        let mut children: HashMap<String, Vec<&ReceivedSpan>> = HashMap::new();
        for s in &self.spans {
            children.entry(s.parent_id()).or_default().push(s);
        }
        let mut out = String::new();
        fn walk(
            children: &HashMap<String, Vec<&ReceivedSpan>>,
            parent: &str,
            depth: usize,
            out: &mut String,
        ) {
            let mut kids = children.get(parent).cloned().unwrap_or_default();
            kids.sort_by_key(|s| s.span.start_time_unix_nano);
            for s in kids {
                let attrs: Vec<String> = s
                    .span
                    .attributes
                    .iter()
                    .filter(|kv| {
                        !kv.key.starts_with("code.")
                            && !kv.key.starts_with("thread.")
                            && !["target", "busy_ns", "idle_ns", "trace_id"]
                                .contains(&kv.key.as_str())
                    })
                    .map(|kv| format!("{}={}", kv.key, s.attr(&kv.key).unwrap_or_default()))
                    .collect();
                let events = s.events();
                let events = if events.is_empty() {
                    String::new()
                } else {
                    format!(" events={events:?}")
                };
                out.push_str(&format!(
                    "{}{} [{}] {}{}\n",
                    "  ".repeat(depth),
                    s.span.name,
                    s.service,
                    attrs.join(" "),
                    events
                ));
                walk(children, &s.span_id(), depth + 1, out);
            }
        }
        walk(&children, "", 0, &mut out);
        out
    }
    fn parent_of_server(&self, service: &str) -> &ReceivedSpan {
        let server = self
            .spans
            .iter()
            .find(|s| s.service == service && s.span.kind == 2)
            .unwrap_or_else(|| panic!("no server span from {service}: {:?}", self.summary()));
        self.parent(server)
            .expect("server span has a remote parent")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_trace_from_client_to_etcd() {
    let receiver = OtlpReceiver::start().await;
    let (storage_d, storage_g) = telemetry("storage-svc", &receiver.endpoint);
    let (registry_d, registry_g) = telemetry("registry-svc", &receiver.endpoint);
    let (client_d, client_g) = telemetry("test-client", &receiver.endpoint);
    let cluster = Cluster::start(ClusterOptions {
        // The holder below keeps its turn while the test arranges the conflict; without the
        // watch cache, whose newer copy would let the update avoid the conflict it must show.
        storage: Some(storage_svc::Config {
            watch_cache: false,
            ..kubestore_tests::update::long_turn_hold()
        }),
        storage_dispatch: Some(storage_d),
        registry_dispatch: Some(registry_d),
        with_registry: true,
        ..Default::default()
    })
    .await;
    let _client_subscriber = tracing::dispatcher::set_default(&client_d);
    let traced = tower::ServiceBuilder::new()
        .layer(GrpcTraceLayer::client())
        .service(channel(&cluster.registry.as_ref().expect("registry").url()).await);
    let mut pods = PodsClient::new(traced.clone());
    let mut cms = ConfigMapsClient::new(traced);

    // 1. Create.
    let span = tracing::info_span!("client Create");
    let create_trace = kubestore_telemetry::grpc_trace::trace_id(&span).expect("trace id");
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: "web".into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            node_name: "node-1".into(),
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
    .instrument(span)
    .await
    .expect("create");

    // 2. An Update that loses an etcd txn, made deterministic: a raw GuaranteedUpdate stream
    //    holds the key's turn in storage-svc; the registry Update queues behind it; a raw etcd
    //    write changes the key; the stream aborts and releases the turn. The Update starts from
    //    the state storage remembered (now stale), loses its txn, and retries on the fresh state.
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: "hot".into(),
            ..Default::default()
        }),
        data: [("n".to_string(), "0".to_string())].into(),
        immutable: None,
        binary_data: Default::default(),
    };
    cms.create(CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(cm.clone()),
        dry_run: false,
    })
    .await
    .expect("create cm");
    let mut storage = cluster.storage_client().await;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let start = UpdateStart {
        key: "/configmaps/default/hot".into(),
        ..Default::default()
    };
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Start(start)),
    })
    .await
    .expect("send");
    let mut holder = storage
        .guaranteed_update(ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    let Some(Resp::State(held)) = holder
        .message()
        .await
        .expect("state")
        .and_then(|m| m.message)
    else {
        panic!("expected a state")
    };
    let span = tracing::info_span!("client Update");
    let update_trace = kubestore_telemetry::grpc_trace::trace_id(&span).expect("trace id");
    let mut updated = cm.clone();
    updated.data.insert("n".into(), "1".into());
    let mut cms2 = cms.clone();
    let update = tokio::spawn(
        async move {
            cms2.update(UpdateConfigMapRequest {
                namespace: "default".into(),
                config_map: Some(updated),
                dry_run: false,
            })
            .await
        }
        .instrument(span)
        // The task runs on a worker thread: take the client's subscriber along.
        .with_current_subscriber(),
    );
    let waiting = "storage_guaranteed_updates_waiting";
    for _ in 0..200 {
        if sample(&scrape(cluster.storage.metrics_addr).await, waiting) == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        sample(&scrape(cluster.storage.metrics_addr).await, waiting),
        Some(1.0),
        "the update waits for its turn"
    );
    let mut etcd = cluster.etcd.client().await;
    let mut other = ConfigMap::decode(held.object.as_slice()).expect("decode");
    other.data.insert("writer".into(), "raw".into());
    other
        .metadata
        .as_mut()
        .expect("meta")
        .resource_version
        .clear();
    etcd.put(
        "/registry/configmaps/default/hot",
        other.encode_to_vec(),
        None,
    )
    .await
    .expect("raw put");
    let abort = UpdateAbort {
        based_on_resource_version: held.resource_version.clone(),
        code: 10,
        message: "done".into(),
    };
    tx.send(GuaranteedUpdateRequest {
        message: Some(Req::Abort(abort)),
    })
    .await
    .expect("send");
    while holder.message().await.expect("stream").is_some() {}
    update
        .await
        .expect("join")
        .expect("update succeeds after a retry");
    let conflicts = sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_etcd_conflicts_total",
    )
    .unwrap_or(0.0);
    assert!(
        conflicts >= 1.0,
        "storage counted the lost txn: {conflicts}"
    );

    // 3. Graceful delete.
    let span = tracing::info_span!("client Delete");
    let delete_trace = kubestore_telemetry::grpc_trace::trace_id(&span).expect("trace id");
    let r = pods
        .delete(DeletePodRequest {
            namespace: "default".into(),
            name: "web".into(),
            options: None,
        })
        .instrument(span)
        .await
        .expect("delete")
        .into_inner();
    assert!(!r.deleted);

    // 4. A list with a selector.
    let span = tracing::info_span!("client List");
    let list_trace = kubestore_telemetry::grpc_trace::trace_id(&span).expect("trace id");
    let listed = pods
        .list(kubestore_proto::core::v1::ListPodsRequest {
            namespace: String::new(),
            options: Some(kubestore_proto::meta::v1::ListOptions {
                field_selector: "spec.nodeName=node-1".into(),
                ..Default::default()
            }),
        })
        .instrument(span)
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.items.len(), 1);

    // 5. A watch: one trace from the client's span to storage's `Watch etcd3`, which counts
    // the events it sent.
    let span = tracing::info_span!("client Watch");
    let watch_trace = kubestore_telemetry::grpc_trace::trace_id(&span).expect("trace id");
    let mut watch = pods
        .watch(kubestore_proto::core::v1::WatchPodsRequest {
            namespace: "default".into(),
            options: None,
        })
        .instrument(span)
        .await
        .expect("watch")
        .into_inner();
    let first = watch.message().await.expect("event").expect("open");
    assert_eq!(
        first.r#type,
        kubestore_proto::meta::v1::WatchEventType::Added as i32
    );
    drop(watch);

    // Stop the services (drain), then flush every exporter.
    drop(_client_subscriber);
    drop(cluster);
    tokio::task::spawn_blocking(move || {
        storage_g.shutdown();
        registry_g.shutdown();
        client_g.shutdown();
    })
    .await
    .expect("flush");
    let all = receiver
        .wait_for(Duration::from_secs(10), |s| {
            s.iter().any(|x| x.trace_id() == delete_trace)
        })
        .await;
    let services: HashSet<&str> = all.iter().map(|s| s.service.as_str()).collect();
    assert!(
        services.contains("storage-svc")
            && services.contains("registry-svc")
            && services.contains("test-client"),
        "{services:?}"
    );

    let create = Trace::of(&all, &create_trace);
    create.assert_connected();
    create.assert_path("client Create", "Create", "Create etcd3");
    let before_create = create.one("registry-svc", "BeforeCreate");
    assert!(
        create
            .named("Validate")
            .iter()
            .any(|v| create.parent(v).map(|p| p.span_id()) == Some(before_create.span_id()))
    );
    assert!(
        create
            .one("storage-svc", "Create etcd3")
            .events()
            .iter()
            .any(|e| e == "Txn call succeeded")
    );
    let registry_server = create.one("registry-svc", "core.v1.Pods/Create");
    // Numbers travel as numbers (OpenTelemetry's int attributes), not as strings.
    assert_eq!(registry_server.int("rpc.grpc.status_code"), Some(0));
    assert!(
        create.named("grpc.health.v1.Health/Check").is_empty(),
        "health checks are not traced"
    );

    // The update that lost a txn: attempts >= 2, with the retry events.
    let retried = Trace::of(&all, &update_trace);
    retried.assert_connected();
    retried.assert_path(
        "client Update",
        "GuaranteedUpdate",
        "GuaranteedUpdate etcd3",
    );
    let gu = retried.one("storage-svc", "GuaranteedUpdate etcd3");
    assert!(
        gu.int("attempts").unwrap_or(0) >= 2,
        "attempts = {:?}",
        gu.attr("attempts")
    );
    let events = gu.events();
    assert!(
        events.iter().any(|e| e == "Txn call failed: conflict"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e == "Retry with fresh state"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e == "Txn call succeeded"),
        "{events:?}"
    );
    assert!(
        retried.named("BeforeUpdate").len() >= 2,
        "the update function ran once per attempt"
    );

    let delete = Trace::of(&all, &delete_trace);
    delete.assert_connected();
    delete.assert_path(
        "client Delete",
        "GuaranteedUpdate",
        "GuaranteedUpdate etcd3",
    );
    let decision = delete.one("registry-svc", "DeletionDecision");
    assert_eq!(decision.boolean("graceful"), Some(true));
    assert_eq!(decision.int("grace_period_seconds"), Some(30));
    assert_eq!(decision.boolean("pending"), Some(false));
    assert_eq!(decision.boolean("deleted"), Some(false));
    assert!(!delete.named("BeforeDelete").is_empty());
    for s in &delete.spans {
        if let Some(code) = s.attr("rpc.grpc.status_code") {
            assert_eq!(
                code, "0",
                "{}:{} ended with status {code}",
                s.service, s.span.name
            );
        }
    }
    assert!(
        delete.named("storage.v1.Storage/Get").len() >= 2,
        "registry reads first (client and server span)"
    );

    let list = Trace::of(&all, &list_trace);
    list.assert_connected();
    list.assert_path("client List", "List", "List etcd3");
    let l = list.one("storage-svc", "List etcd3");
    assert_eq!(l.int("items"), Some(1));
    assert_eq!(l.int("etcd_reads"), Some(1));

    let watched = Trace::of(&all, &watch_trace);
    watched.assert_connected();
    watched.assert_path("client Watch", "Watch", "Watch etcd3");
    let w = watched.one("storage-svc", "Watch etcd3");
    assert!(
        w.int("events").is_some_and(|n| n >= 1),
        "events = {:?}",
        w.attr("events")
    );

    // The span trees, as the README and the closing note show them.
    println!("{}", create.render());
    println!("{}", retried.render());
    println!("{}", delete.render());
    println!("{}", list.render());
}
