//! The namespace controller's decisions (`kubestore_controllers::namespace`), on a scripted
//! registry: a gRPC `registry.v1.Resources` server on a loopback port whose state the test
//! sets and reads, so that each decision is seen in the calls the controller makes (the
//! end-to-end test, `generic_api::a_deleted_namespace_loses_its_content_then_goes`, runs it
//! against registry-svc):
//! - a Terminating namespace's content is deleted kind by kind, by DeleteCollection where
//!   discovery lists it and one Delete per object where it does not; cluster-scoped kinds,
//!   kinds it cannot list and other namespaces are left alone;
//! - while an object remains (held by its finalizer), the namespace is not finalized; once it
//!   goes, the `finalize` subresource is written with the resourceVersion read and every
//!   finalizer but the controller's kept;
//! - a refused call is retried; a namespace without the controller's finalizer, or not being
//!   deleted, is not touched.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kubestore_controllers::namespace::{FINALIZER, RECHECK, run};
use kubestore_proto::{
    meta::v1::ListMeta,
    registry::v1::{
        ApiResource, ApplyRequest, CreateRequest, DeleteCollectionRequest, DeleteRequest,
        DeleteResponse, DiscoverRequest, DiscoverResponse, GetRequest, ListRequest, Object,
        ObjectList, PatchRequest, UpdateRequest, WatchEvent, WatchRequest, WriteResponse,
        resources_server::{Resources, ResourcesServer},
    },
};
use kubestore_telemetry::GrpcTraceLayer;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

/// An object of the scripted registry: held by a finalizer or not.
#[derive(Clone, Debug)]
struct Obj {
    held: bool,
    deleting: bool,
}

/// The scripted registry's state.
#[derive(Default)]
struct State {
    /// The namespaces, whole.
    namespaces: BTreeMap<String, Value>,
    /// (resource, namespace, name) -> object.
    objects: BTreeMap<(String, String, String), Obj>,
    /// Every write, as `verb resource namespace[/name]`.
    calls: Vec<String>,
    /// The `finalize` writes' bodies.
    finalized: Vec<Value>,
    /// DeleteCollection calls refused before they are served.
    refuse: usize,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<State>>);

impl Fake {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("the fake's lock")
    }

    /// Deletes one object: gone unless a finalizer holds it (then marked deleting).
    fn delete_one(s: &mut State, key: &(String, String, String)) {
        let held = match s.objects.get_mut(key) {
            Some(o) if o.held => {
                o.deleting = true;
                true
            }
            Some(_) => false,
            None => return,
        };
        if !held {
            s.objects.remove(key);
        }
    }
}

fn api_resource(group: &str, resource: &str, namespaced: bool, verbs: &[&str]) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        kind: resource.into(),
        namespaced,
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        storage_version: true,
        ..Default::default()
    }
}

type Events =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<WatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl Resources for Fake {
    async fn discover(
        &self,
        _: Request<DiscoverRequest>,
    ) -> Result<Response<DiscoverResponse>, Status> {
        let all = [
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ];
        Ok(Response::new(DiscoverResponse {
            resources: vec![
                api_resource("", "namespaces", false, &all[..7]),
                api_resource("", "configmaps", true, &all),
                // A kind without deletecollection: deleted object by object.
                api_resource("example.com", "widgets", true, &all[..7]),
                // Cluster-scoped: not a namespace's content.
                api_resource("example.com", "clusterthings", false, &all),
                // Not listable: left alone.
                api_resource("example.com", "reviews", true, &["create"]),
            ],
        }))
    }

    async fn get(&self, r: Request<GetRequest>) -> Result<Response<Object>, Status> {
        let r = r.into_inner();
        let resource = r.resource.unwrap_or_default().resource;
        let s = self.state();
        match (resource.as_str(), s.namespaces.get(&r.name)) {
            ("namespaces", Some(ns)) => Ok(Response::new(Object {
                json: ns.to_string(),
            })),
            _ => Err(Status::not_found(format!(
                "{resource} {:?} not found",
                r.name
            ))),
        }
    }

    async fn list(&self, r: Request<ListRequest>) -> Result<Response<ObjectList>, Status> {
        let r = r.into_inner();
        let resource = r.resource.unwrap_or_default().resource;
        let s = self.state();
        let items = if resource == "namespaces" {
            s.namespaces.values().map(Value::to_string).collect()
        } else {
            s.objects
                .keys()
                .filter(|(res, ns, _)| *res == resource && *ns == r.namespace)
                .map(|(_, ns, name)| {
                    json!({"metadata": {"name": name, "namespace": ns}}).to_string()
                })
                .collect()
        };
        Ok(Response::new(ObjectList {
            metadata: Some(ListMeta {
                resource_version: "1".into(),
                ..Default::default()
            }),
            items,
            columns: String::new(),
        }))
    }

    type WatchStream = Events;

    async fn watch(&self, _: Request<WatchRequest>) -> Result<Response<Events>, Status> {
        // No events: the controller must look again by itself.
        Ok(Response::new(Box::pin(tokio_stream::pending())))
    }

    async fn create(&self, _: Request<CreateRequest>) -> Result<Response<WriteResponse>, Status> {
        Err(Status::unimplemented("the controller creates nothing"))
    }

    async fn update(&self, r: Request<UpdateRequest>) -> Result<Response<WriteResponse>, Status> {
        let r = r.into_inner();
        let mut s = self.state();
        s.calls
            .push(format!("update namespaces {}/{}", r.name, r.subresource));
        let body: Value = serde_json::from_str(&r.json).expect("the controller writes JSON");
        if r.subresource == "finalize" {
            s.finalized.push(body.clone());
        }
        s.namespaces.insert(r.name, body.clone());
        Ok(Response::new(WriteResponse {
            json: body.to_string(),
            ..Default::default()
        }))
    }

    async fn patch(&self, _: Request<PatchRequest>) -> Result<Response<WriteResponse>, Status> {
        Err(Status::unimplemented("the controller patches nothing"))
    }

    async fn apply(&self, _: Request<ApplyRequest>) -> Result<Response<WriteResponse>, Status> {
        Err(Status::unimplemented("the controller applies nothing"))
    }

    async fn delete(&self, r: Request<DeleteRequest>) -> Result<Response<DeleteResponse>, Status> {
        let r = r.into_inner();
        let resource = r.resource.unwrap_or_default().resource;
        let mut s = self.state();
        s.calls
            .push(format!("delete {resource} {}/{}", r.namespace, r.name));
        Fake::delete_one(&mut s, &(resource, r.namespace, r.name));
        Ok(Response::new(DeleteResponse::default()))
    }

    async fn delete_collection(
        &self,
        r: Request<DeleteCollectionRequest>,
    ) -> Result<Response<ObjectList>, Status> {
        let r = r.into_inner();
        let resource = r.resource.unwrap_or_default().resource;
        let mut s = self.state();
        if s.refuse > 0 {
            s.refuse -= 1;
            return Err(Status::unavailable("scripted refusal"));
        }
        s.calls
            .push(format!("deletecollection {resource} {}", r.namespace));
        let keys: Vec<_> = s
            .objects
            .keys()
            .filter(|(res, ns, _)| *res == resource && *ns == r.namespace)
            .cloned()
            .collect();
        for k in &keys {
            Fake::delete_one(&mut s, k);
        }
        Ok(Response::new(ObjectList::default()))
    }
}

/// The scripted registry, served, and the namespace controller running against it; stops
/// both when dropped.
struct Running {
    fake: Fake,
    _stop_server: tokio::sync::oneshot::Sender<()>,
    _stop_controller: watch::Sender<bool>,
}

async fn start(fake: Fake) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = fake.clone();
    tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(ResourcesServer::new(served))
            .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                let _ = stopped.await;
            })
            .await;
    });
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("an endpoint")
        .connect_lazy();
    let ch = tower::ServiceBuilder::new()
        .layer(GrpcTraceLayer::client())
        .service(channel);
    let (stop_controller, stop) = watch::channel(false);
    tokio::spawn(run(ch, stop));
    Running {
        fake,
        _stop_server: stop_server,
        _stop_controller: stop_controller,
    }
}

fn namespace(name: &str, deleting: bool, finalizers: &[&str]) -> Value {
    let mut ns = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "resourceVersion": "7"},
        "spec": {"finalizers": finalizers},
        "status": {"phase": if deleting { "Terminating" } else { "Active" }},
    });
    if deleting {
        ns["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    ns
}

fn key(resource: &str, ns: &str, name: &str) -> (String, String, String) {
    (resource.into(), ns.into(), name.into())
}

/// Waits until `check` holds of the fake's state (`within` at most).
async fn until(fake: &Fake, what: &str, within: Duration, check: impl Fn(&State) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        {
            let s = fake.state();
            if check(&s) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never happened: {what}; calls {:?}",
                s.calls
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn content_goes_kind_by_kind_and_a_held_object_keeps_the_namespace() {
    let fake = Fake::default();
    {
        let mut s = fake.state();
        s.namespaces.insert(
            "team-a".into(),
            namespace("team-a", true, &[FINALIZER, "example.com/other"]),
        );
        s.namespaces
            .insert("live".into(), namespace("live", false, &[FINALIZER]));
        let free = Obj {
            held: false,
            deleting: false,
        };
        for k in [
            key("configmaps", "team-a", "a"),
            key("widgets", "team-a", "w1"),
            key("widgets", "team-a", "w2"),
            key("reviews", "team-a", "r"),
            key("clusterthings", "", "c"),
            key("configmaps", "live", "x"),
        ] {
            s.objects.insert(k, free.clone());
        }
        s.objects.insert(
            key("configmaps", "team-a", "held"),
            Obj {
                held: true,
                deleting: false,
            },
        );
    }
    let running = start(fake).await;
    let fake = &running.fake;
    until(
        fake,
        "the free content deleted",
        Duration::from_secs(10),
        |s| {
            !s.objects.contains_key(&key("configmaps", "team-a", "a"))
                && !s.objects.contains_key(&key("widgets", "team-a", "w1"))
                && !s.objects.contains_key(&key("widgets", "team-a", "w2"))
                && s.objects[&key("configmaps", "team-a", "held")].deleting
        },
    )
    .await;
    {
        let s = fake.state();
        let calls = &s.calls;
        assert!(
            calls.contains(&"deletecollection configmaps team-a".to_string()),
            "{calls:?}"
        );
        for w in ["w1", "w2"] {
            assert!(
                calls.contains(&format!("delete widgets team-a/{w}")),
                "one Delete per object of a kind without deletecollection: {calls:?}"
            );
        }
        assert!(
            !calls
                .iter()
                .any(|c| c.contains("widgets") && c.starts_with("deletecollection")),
            "{calls:?}"
        );
        assert!(
            !calls.iter().any(|c| c.contains("clusterthings")
                || c.contains("reviews")
                || c.contains("live")),
            "only the namespace's listable content: {calls:?}"
        );
        for k in [
            key("reviews", "team-a", "r"),
            key("clusterthings", "", "c"),
            key("configmaps", "live", "x"),
        ] {
            assert!(s.objects.contains_key(&k), "{k:?} left alone");
        }
    }
    // Held: longer than two of the controller's looks, the namespace is not finalized, and
    // the controller keeps deleting what remains.
    let calls_before = fake.state().calls.len();
    tokio::time::sleep(RECHECK * 2 + RECHECK / 2).await;
    {
        let s = fake.state();
        assert!(
            s.finalized.is_empty(),
            "finalized while held: {:?}",
            s.finalized
        );
        assert!(
            s.calls.len() > calls_before,
            "looked again while content remains: {:?}",
            s.calls
        );
    }
    // The finalizer goes: then the namespace is finalized, once.
    fake.state()
        .objects
        .remove(&key("configmaps", "team-a", "held"));
    until(fake, "the namespace finalized", RECHECK * 3, |s| {
        !s.finalized.is_empty()
    })
    .await;
    tokio::time::sleep(RECHECK + RECHECK / 2).await;
    let s = fake.state();
    assert_eq!(s.finalized.len(), 1, "{:?}", s.finalized);
    let body = &s.finalized[0];
    assert_eq!(
        (
            &body["metadata"]["name"],
            &body["metadata"]["resourceVersion"],
            &body["spec"]["finalizers"]
        ),
        (&json!("team-a"), &json!("7"), &json!(["example.com/other"])),
        "the controller's finalizer only, under the resourceVersion read: {body}"
    );
    assert!(
        s.calls
            .contains(&"update namespaces team-a/finalize".to_string()),
        "{:?}",
        s.calls
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_call_is_retried_and_other_namespaces_are_not_touched() {
    let fake = Fake::default();
    {
        let mut s = fake.state();
        s.refuse = 1;
        s.namespaces
            .insert("gone".into(), namespace("gone", true, &[FINALIZER]));
        // Being deleted, but finalized already (another finalizer holds it): not the
        // controller's to empty.
        s.namespaces.insert(
            "other".into(),
            namespace("other", true, &["example.com/other"]),
        );
        s.namespaces
            .insert("live".into(), namespace("live", false, &[FINALIZER]));
        let free = Obj {
            held: false,
            deleting: false,
        };
        for ns in ["gone", "other", "live"] {
            s.objects.insert(key("configmaps", ns, "a"), free.clone());
        }
    }
    let start_at = Instant::now();
    let running = start(fake).await;
    let fake = &running.fake;
    until(
        fake,
        "the namespace emptied and finalized after a refusal",
        RECHECK * 4,
        |s| !s.finalized.is_empty(),
    )
    .await;
    assert!(
        start_at.elapsed() >= RECHECK,
        "the refusal was retried after {RECHECK:?}, not in a loop: {:?}",
        start_at.elapsed()
    );
    let s = fake.state();
    assert!(!s.objects.contains_key(&key("configmaps", "gone", "a")));
    assert_eq!(s.finalized[0]["metadata"]["name"], json!("gone"));
    assert_eq!(s.finalized[0]["spec"]["finalizers"], json!([]));
    for ns in ["other", "live"] {
        assert!(
            s.objects.contains_key(&key("configmaps", ns, "a")),
            "{ns} not touched: {:?}",
            s.calls
        );
        assert!(
            !s.calls.iter().any(|c| c.contains(&format!(" {ns}"))),
            "{:?}",
            s.calls
        );
    }
}
