//! The generic Store with a recording strategy, against real etcd and storage-svc: hooks run in
//! upstream's order, create-on-update and strict (conditional-only) updates follow the strategy,
//! and a strategy that decorates objects keeps List and Watch on the typed path.

use std::sync::{Arc, Mutex};

use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, ListConfigMapsRequest, WatchConfigMapsRequest,
        config_maps_client::ConfigMapsClient, config_maps_server::ConfigMapsServer,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, ResourceVersionMatch, WatchEventType},
};
use kubestore_tests::Cluster;
use registry_svc::{
    error::ApiError,
    grpc::{passthrough::PassThrough, service::ResourceService},
    kinds::configmap::ConfigMapStrategy,
    storage::StorageClient,
    store::{Ctx, Store},
    strategy::Strategy,
    violations::Violations,
};

#[derive(Clone, Default)]
struct Recorder {
    calls: Arc<Mutex<Vec<String>>>,
    fail_validation: Arc<Mutex<bool>>,
    /// Names handed out for generateName, in order; `None` entries repeat the last one.
    names: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn log(&self, s: impl Into<String>) {
        self.calls.lock().expect("lock").push(s.into());
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().expect("lock"))
    }
}

impl Strategy<ConfigMap> for Recorder {
    fn generate_name(&self, base: &str) -> String {
        self.log(format!("GenerateName({base})"));
        let mut names = self.names.lock().expect("lock");
        if names.len() > 1 {
            names.remove(0)
        } else {
            names.first().cloned().unwrap_or_default()
        }
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn allow_unconditional_update(&self) -> bool {
        false
    }
    fn validate(&self, _: &ConfigMap) -> Violations {
        self.log("Validate");
        if *self.fail_validation.lock().expect("lock") {
            vec![("data".into(), "Invalid value: test".into())].into()
        } else {
            Violations::new()
        }
    }
    fn begin_create(&self, _: &ConfigMap, _: bool) -> Result<(), ApiError> {
        self.log("BeginCreate");
        Ok(())
    }
    fn finish_create(&self, _: &ConfigMap, ok: bool) {
        self.log(format!("FinishCreate({ok})"));
    }
    fn after_create(&self, _: &ConfigMap, _: bool) {
        self.log("AfterCreate");
    }
    fn begin_update(&self, _: &ConfigMap, _: &ConfigMap, _: bool) -> Result<(), ApiError> {
        self.log("BeginUpdate");
        Ok(())
    }
    fn finish_update(&self, _: &ConfigMap, ok: bool) {
        self.log(format!("FinishUpdate({ok})"));
    }
    fn after_update(&self, _: &ConfigMap, _: bool) {
        self.log("AfterUpdate");
    }
    fn after_delete(&self, _: &ConfigMap, _: bool) {
        self.log("AfterDelete");
    }
    fn decorate(&self, _: &mut ConfigMap) {
        self.log("Decorator");
    }
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ctx() -> Ctx {
    Ctx::within(std::time::Duration::from_secs(10))
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_run_in_upstream_order() {
    let cluster = Cluster::storage_only().await;
    let storage = StorageClient::connect_lazy(&cluster.storage.url(), None).expect("client");
    let rec = Recorder::default();
    let store: Store<ConfigMap> = Store::new(storage, rec.clone());

    let created = store
        .create(ctx(), "default", cm("a"), false)
        .await
        .expect("create");
    assert_eq!(
        rec.take(),
        [
            "BeginCreate",
            "Validate",
            "FinishCreate(true)",
            "AfterCreate",
            "Decorator"
        ]
    );

    *rec.fail_validation.lock().expect("lock") = true;
    store
        .create(ctx(), "default", cm("b"), false)
        .await
        .expect_err("invalid");
    assert_eq!(
        rec.take(),
        ["BeginCreate", "Validate", "FinishCreate(false)"]
    );
    *rec.fail_validation.lock().expect("lock") = false;

    store
        .update(ctx(), "default", created.clone(), false)
        .await
        .expect("update");
    assert_eq!(
        rec.take(),
        [
            "BeginUpdate",
            "FinishUpdate(true)",
            "AfterUpdate",
            "Decorator"
        ]
    );

    // Create on update (the strategy allows it): create hooks, no update hooks.
    let out = store
        .update(ctx(), "default", cm("c"), false)
        .await
        .expect("create on update");
    assert!(!out.metadata.expect("meta").uid.is_empty());
    assert_eq!(
        rec.take(),
        [
            "BeginCreate",
            "Validate",
            "FinishCreate(true)",
            "AfterCreate",
            "Decorator"
        ]
    );

    // Conditional-only strategy: an update without resourceVersion is Invalid.
    let mut no_rv = created.clone();
    no_rv
        .metadata
        .as_mut()
        .expect("meta")
        .resource_version
        .clear();
    let e = store
        .update(ctx(), "default", no_rv, false)
        .await
        .expect_err("rv required");
    assert!(matches!(e, ApiError::Invalid { .. }), "{e}");
    assert!(
        e.to_string().contains("must be specified for an update"),
        "{e}"
    );
    rec.take();

    let (_, deleted) = store
        .delete(ctx(), "default", "a", Some(DeleteOptions::default()))
        .await
        .expect("delete");
    assert!(deleted);
    assert_eq!(rec.take(), ["AfterDelete", "Decorator"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_names_are_retried_on_a_clash_up_to_eight_times() {
    let cluster = Cluster::storage_only().await;
    let storage = StorageClient::connect_lazy(&cluster.storage.url(), None).expect("client");
    let rec = Recorder::default();
    let store: Store<ConfigMap> = Store::new(storage, rec.clone());
    store
        .create(ctx(), "default", cm("web-aaaaa"), false)
        .await
        .expect("create");

    // Three clashes, then a free name.
    *rec.names.lock().expect("lock") = vec![
        "web-aaaaa".into(),
        "web-aaaaa".into(),
        "web-aaaaa".into(),
        "web-bbbbb".into(),
    ];
    let mut generated = cm("");
    generated.metadata.as_mut().expect("meta").generate_name = "web-".into();
    rec.take();
    let out = store
        .create(ctx(), "default", generated.clone(), false)
        .await
        .expect("fourth name is free");
    assert_eq!(out.metadata.expect("meta").name, "web-bbbbb");
    assert_eq!(
        rec.take()
            .iter()
            .filter(|c| c.starts_with("GenerateName"))
            .count(),
        4
    );

    // Always the same taken name: AlreadyExists after exactly 8 attempts.
    *rec.names.lock().expect("lock") = vec!["web-aaaaa".into()];
    let e = store
        .create(ctx(), "default", generated, false)
        .await
        .expect_err("no free name");
    assert!(matches!(e, ApiError::AlreadyExists { .. }), "{e}");
    assert!(
        e.to_string().contains("not able to generate a unique name"),
        "{e}"
    );
    assert_eq!(
        rec.take()
            .iter()
            .filter(|c| c.starts_with("GenerateName"))
            .count(),
        8
    );
}

/// ConfigMaps' own strategy, plus a decorator that stamps an annotation.
#[derive(Clone)]
struct Stamped;

impl Strategy<ConfigMap> for Stamped {
    fn validate(&self, cm: &ConfigMap) -> Violations {
        ConfigMapStrategy.validate(cm)
    }
    fn decorate(&self, cm: &mut ConfigMap) {
        cm.metadata
            .get_or_insert_with(Default::default)
            .annotations
            .insert("stamped".into(), "yes".into());
    }
    fn has_decorator(&self) -> bool {
        true
    }
}

/// Serves `store` the way registry-svc serves a kind (generated server inside `PassThrough`)
/// and returns a client for it.
async fn serve(store: Store<ConfigMap>) -> ConfigMapsClient<tonic::transport::Channel> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let service = PassThrough::new(
        ConfigMapsServer::new(ResourceService::new(store.clone(), stop.clone())),
        store,
        stop,
    );
    tokio::spawn(async move {
        let _keep = _stop_tx;
        // The registry's own layer: every call has its caller (the local administrator here).
        tonic::transport::Server::builder()
            .layer(registry_svc::grpc::identify::IdentifyLayer::new(
                std::sync::Arc::new(registry_svc::authn::Authenticator::default()),
                true,
                registry_svc::authz::Gate::allow_all(),
                registry_svc::error::DOMAIN,
            ))
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
    });
    ConfigMapsClient::connect(format!("http://{addr}"))
        .await
        .expect("connect")
}

/// List and Watch answer with storage's bytes for a plain kind and with decorated objects for a
/// kind whose strategy decorates; both look the same to a client otherwise.
#[tokio::test(flavor = "multi_thread")]
async fn list_and_watch_pass_bytes_through_unless_the_strategy_decorates() {
    let cluster = Cluster::storage_only().await;
    let storage = StorageClient::connect_lazy(&cluster.storage.url(), None).expect("client");
    let mut plain = serve(Store::new(storage.clone(), ConfigMapStrategy)).await;
    let mut stamped = serve(Store::new(storage, Stamped)).await;

    let created = plain
        .create(CreateConfigMapRequest {
            namespace: "default".into(),
            config_map: Some(cm("a")),
            dry_run: false,
        })
        .await
        .expect("create")
        .into_inner();
    let rv = created
        .metadata
        .clone()
        .unwrap_or_default()
        .resource_version;
    let mut want_stamped = created.clone();
    Stamped.decorate(&mut want_stamped);

    for (client, want) in [(&mut plain, &created), (&mut stamped, &want_stamped)] {
        let list = client
            .list(ListConfigMapsRequest {
                namespace: "default".into(),
                options: None,
            })
            .await
            .expect("list")
            .into_inner();
        assert_eq!(list.items, std::slice::from_ref(want));
        // From "0" with sendInitialEvents: the object as ADDED, then the annotated bookmark.
        let mut events = client
            .watch(WatchConfigMapsRequest {
                namespace: "default".into(),
                options: Some(ListOptions {
                    resource_version: "0".into(),
                    send_initial_events: Some(true),
                    allow_watch_bookmarks: true,
                    resource_version_match: ResourceVersionMatch::NotOlderThan as i32,
                    ..Default::default()
                }),
            })
            .await
            .expect("watch")
            .into_inner();
        let added = events.message().await.expect("event").expect("open");
        assert_eq!(added.r#type(), WatchEventType::Added);
        assert_eq!(added.object.as_ref(), Some(want));
        let bookmark = events.message().await.expect("event").expect("open");
        assert_eq!(bookmark.r#type(), WatchEventType::Bookmark);
        let meta = bookmark.object.and_then(|o| o.metadata).unwrap_or_default();
        // The snapshot's revision: at least the create's (a watch-cache fence may follow it).
        let at = |v: &str| v.parse::<i64>().expect("rv");
        assert!(
            at(&meta.resource_version) >= at(&rv),
            "{} < {rv}",
            meta.resource_version
        );
        assert_eq!(
            meta.annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true")
        );
    }

    // A malformed Watch request is refused like the generated server refuses it.
    let status = plain
        .watch(WatchConfigMapsRequest {
            namespace: "default".into(),
            options: Some(ListOptions {
                r#continue: "x".into(),
                ..Default::default()
            }),
        })
        .await
        .expect_err("continue on a watch");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
}
