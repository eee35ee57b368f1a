//! The valid requests that the random-request test (`tests/random_requests.rs`) mutates: for
//! every method of both services, a few requests that succeed or fail for a reason worth
//! reaching (so mutations get past the decoder into validation, selectors, preconditions and
//! the update protocol).

use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, CreateEventRequest, CreatePodRequest,
        DeleteCollectionConfigMapsRequest, DeleteCollectionEventsRequest,
        DeleteCollectionPodsRequest, DeleteConfigMapRequest, DeleteEventRequest, DeletePodRequest,
        Event, GetConfigMapRequest, GetEventRequest, GetPodRequest, ListConfigMapsRequest,
        ListEventsRequest, ListPodsRequest, ObjectReference, Pod, PodStatus,
        UpdateConfigMapRequest, UpdateEventRequest, UpdatePodRequest, WatchConfigMapsRequest,
        WatchEventsRequest, WatchPodsRequest,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, Preconditions},
    storage::v1::{
        CreateRequest, DeleteRequest, FieldRequirement, GetRequest, GuaranteedUpdateRequest,
        LabelRequirement, ListRequest, Selector, UpdateAbort, UpdateProposal, UpdateStart,
        WatchRequest, guaranteed_update_request::Message as Req,
    },
};
use prost::Message;

use crate::{
    fixtures_registry::{NS, cm, pod},
    fixtures_storage,
};

/// How a method is called.
pub enum Shape {
    /// One request, one answer.
    Unary,
    /// A watch: it goes quiet rather than ending.
    ServerStream,
    /// GuaranteedUpdate: the client sends its messages and closes; the server must end.
    Bidi,
}

/// A method and the valid requests its mutations start from (for `Bidi`, each seed is the
/// sequence of messages, separated into `Vec`s).
pub struct Method {
    /// `/package.Service/Method`.
    pub path: &'static str,
    /// How it is called.
    pub shape: Shape,
    /// Valid requests.
    pub seeds: Vec<Vec<Vec<u8>>>,
}

/// A unary method and its seeds.
pub fn unary(path: &'static str, seeds: Vec<Vec<u8>>) -> Method {
    Method {
        path,
        shape: Shape::Unary,
        seeds: seeds.into_iter().map(|s| vec![s]).collect(),
    }
}

/// A server-streaming method (a watch) and its seeds.
pub fn watch(path: &'static str, seeds: Vec<Vec<u8>>) -> Method {
    Method {
        path,
        shape: Shape::ServerStream,
        seeds: seeds.into_iter().map(|s| vec![s]).collect(),
    }
}

/// storage-svc's methods. Their keys are under `/fuzzed/`, a resource registry-svc does not
/// serve: storage stores whatever bytes it is given (it knows no kinds), and a mutated object
/// under `/configmaps/` would be a corrupt ConfigMap for the registry's half of the test.
pub fn storage_methods(seed_rv: &str) -> Vec<Method> {
    let key = "/fuzzed/ns/seed";
    let object = |name: &str, n: &str| fixtures_storage::cm(name, &[("n", n)]).encode_to_vec();
    let selector = Selector {
        labels: vec![LabelRequirement {
            key: "app".into(),
            operator: 3,
            values: vec!["web".into()],
        }],
        fields: vec![FieldRequirement {
            path: vec![1, 1],
            r#type: 0,
            equals: false,
            value: "seed".into(),
            json_path: Vec::new(),
        }],
    };
    let start = |key: &str, dry_run: bool, uid: Option<&str>| UpdateStart {
        key: key.into(),
        preconditions: uid.map(|u| Preconditions {
            uid: Some(u.into()),
            resource_version: None,
        }),
        dry_run,
        ..Default::default()
    };
    let msg = |m: Req| GuaranteedUpdateRequest { message: Some(m) }.encode_to_vec();
    vec![
        unary(
            "/storage.v1.Storage/Create",
            vec![
                CreateRequest {
                    key: "/fuzzed/ns/made".into(),
                    object: object("made", "1"),
                    ttl_seconds: 0,
                    dry_run: false,
                }
                .encode_to_vec(),
                CreateRequest {
                    key: "/fuzzed/other/leased".into(),
                    object: object("leased", "1"),
                    ttl_seconds: 3600,
                    dry_run: false,
                }
                .encode_to_vec(),
                CreateRequest {
                    key: "/fuzzed/ns/dry".into(),
                    object: object("dry", "1"),
                    ttl_seconds: 0,
                    dry_run: true,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/storage.v1.Storage/Get",
            vec![
                GetRequest {
                    key: key.into(),
                    ..Default::default()
                }
                .encode_to_vec(),
                GetRequest {
                    key: "/fuzzed/ns/none".into(),
                    ignore_not_found: true,
                    resource_version: "0".into(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/storage.v1.Storage/Delete",
            vec![
                DeleteRequest {
                    key: "/fuzzed/ns/made".into(),
                    preconditions: Some(Preconditions {
                        uid: Some("uid-made".into()),
                        resource_version: None,
                    }),
                    dry_run: false,
                    cached_object: None,
                }
                .encode_to_vec(),
                DeleteRequest {
                    key: key.into(),
                    dry_run: true,
                    ..Default::default()
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/storage.v1.Storage/List",
            vec![
                ListRequest {
                    key: "/fuzzed/".into(),
                    recursive: true,
                    limit: 2,
                    ..Default::default()
                }
                .encode_to_vec(),
                ListRequest {
                    key: "/fuzzed/ns".into(),
                    recursive: true,
                    resource_version: seed_rv.into(),
                    resource_version_match: 1,
                    selector: Some(selector.clone()),
                    ..Default::default()
                }
                .encode_to_vec(),
            ],
        ),
        watch(
            "/storage.v1.Storage/Watch",
            vec![
                WatchRequest {
                    key: "/fuzzed/".into(),
                    recursive: true,
                    send_initial_events: Some(true),
                    allow_watch_bookmarks: true,
                    ..Default::default()
                }
                .encode_to_vec(),
                WatchRequest {
                    key: key.into(),
                    resource_version: seed_rv.into(),
                    selector: Some(selector),
                    timeout_seconds: 1,
                    ..Default::default()
                }
                .encode_to_vec(),
            ],
        ),
        Method {
            path: "/storage.v1.Storage/GuaranteedUpdate",
            shape: Shape::Bidi,
            seeds: vec![
                vec![
                    msg(Req::Start(start(key, false, Some("uid-seed")))),
                    msg(Req::Proposal(UpdateProposal {
                        based_on_resource_version: seed_rv.into(),
                        object: object("seed", "2"),
                        ttl_seconds: 0,
                    })),
                ],
                vec![
                    msg(Req::Start(start(key, true, None))),
                    msg(Req::Abort(UpdateAbort {
                        based_on_resource_version: seed_rv.into(),
                        code: 9,
                        message: "no".into(),
                    })),
                ],
                vec![msg(Req::Start(UpdateStart {
                    ignore_not_found: true,
                    ..start("/fuzzed/ns/none", false, None)
                }))],
            ],
        },
    ]
}

fn list_options(label_selector: &str, field_selector: &str, limit: i64) -> Option<ListOptions> {
    Some(ListOptions {
        label_selector: label_selector.into(),
        field_selector: field_selector.into(),
        limit,
        ..Default::default()
    })
}

fn delete_options(grace: Option<i64>, uid: Option<&str>, dry_run: bool) -> Option<DeleteOptions> {
    Some(DeleteOptions {
        grace_period_seconds: grace,
        preconditions: uid.map(|u| Preconditions {
            uid: Some(u.into()),
            resource_version: None,
        }),
        dry_run,
        ..Default::default()
    })
}

/// registry-svc's methods, every kind's, from objects created before.
pub fn registry_methods(seed_pod: &Pod, seed_cm: &ConfigMap) -> Vec<Method> {
    let ns = || NS.to_string();
    let mut labelled = pod("fresh", "node-1");
    if let Some(m) = labelled.metadata.as_mut() {
        m.labels.insert("app".into(), "web".into());
        m.generate_name = "gen-".into();
    }
    let mut running = seed_pod.clone();
    running.status = Some(PodStatus {
        phase: "Running".into(),
        ..Default::default()
    });
    let mut changed_cm = seed_cm.clone();
    changed_cm.data.insert("k2".into(), "v2".into());
    let event = Event {
        metadata: Some(ObjectMeta {
            name: "ev".into(),
            ..Default::default()
        }),
        involved_object: Some(ObjectReference {
            kind: "Pod".into(),
            namespace: NS.into(),
            name: "seed".into(),
            ..Default::default()
        }),
        reason: "Started".into(),
        message: "started".into(),
        r#type: "Normal".into(),
        count: 1,
        ..Default::default()
    };
    let watch_options = Some(ListOptions {
        send_initial_events: Some(true),
        allow_watch_bookmarks: true,
        timeout_seconds: Some(1),
        ..Default::default()
    });
    vec![
        unary(
            "/core.v1.Pods/Create",
            vec![
                CreatePodRequest {
                    namespace: ns(),
                    pod: Some(labelled),
                    dry_run: false,
                }
                .encode_to_vec(),
                CreatePodRequest {
                    namespace: ns(),
                    pod: Some(pod("dry", "")),
                    dry_run: true,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/Get",
            vec![
                GetPodRequest {
                    namespace: ns(),
                    name: "seed".into(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/Update",
            vec![
                UpdatePodRequest {
                    namespace: ns(),
                    pod: Some(seed_pod.clone()),
                    dry_run: false,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/UpdateStatus",
            vec![
                UpdatePodRequest {
                    namespace: ns(),
                    pod: Some(running),
                    dry_run: true,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/Delete",
            vec![
                DeletePodRequest {
                    namespace: ns(),
                    name: "seed".into(),
                    options: delete_options(Some(30), None, true),
                }
                .encode_to_vec(),
                DeletePodRequest {
                    namespace: ns(),
                    name: "fresh".into(),
                    options: delete_options(Some(0), Some("uid"), false),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/List",
            vec![
                ListPodsRequest {
                    namespace: ns(),
                    options: list_options("app=web", "spec.nodeName=node-1", 2),
                }
                .encode_to_vec(),
                ListPodsRequest {
                    namespace: String::new(),
                    options: list_options("app in (web,db),!tier", "status.phase!=Failed", 0),
                }
                .encode_to_vec(),
            ],
        ),
        watch(
            "/core.v1.Pods/Watch",
            vec![
                WatchPodsRequest {
                    namespace: ns(),
                    options: watch_options.clone(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Pods/DeleteCollection",
            vec![
                DeleteCollectionPodsRequest {
                    namespace: ns(),
                    list_options: list_options("app=none", "", 0),
                    options: delete_options(Some(0), None, false),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/Create",
            vec![
                CreateConfigMapRequest {
                    namespace: ns(),
                    config_map: Some(cm("made", &["example.com/hold"])),
                    dry_run: false,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/Get",
            vec![
                GetConfigMapRequest {
                    namespace: ns(),
                    name: "seed".into(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/Update",
            vec![
                UpdateConfigMapRequest {
                    namespace: ns(),
                    config_map: Some(changed_cm),
                    dry_run: false,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/Delete",
            vec![
                DeleteConfigMapRequest {
                    namespace: ns(),
                    name: "made".into(),
                    options: delete_options(None, None, false),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/List",
            vec![
                ListConfigMapsRequest {
                    namespace: ns(),
                    options: list_options("", "metadata.name!=seed", 1),
                }
                .encode_to_vec(),
            ],
        ),
        watch(
            "/core.v1.ConfigMaps/Watch",
            vec![
                WatchConfigMapsRequest {
                    namespace: ns(),
                    options: watch_options.clone(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.ConfigMaps/DeleteCollection",
            vec![
                DeleteCollectionConfigMapsRequest {
                    namespace: ns(),
                    list_options: list_options("", "metadata.name=made", 0),
                    options: delete_options(None, None, true),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/Create",
            vec![
                CreateEventRequest {
                    namespace: ns(),
                    event: Some(event.clone()),
                    dry_run: false,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/Get",
            vec![
                GetEventRequest {
                    namespace: ns(),
                    name: "ev".into(),
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/Update",
            vec![
                UpdateEventRequest {
                    namespace: ns(),
                    event: Some(Event { count: 2, ..event }),
                    dry_run: false,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/Delete",
            vec![
                DeleteEventRequest {
                    namespace: ns(),
                    name: "ev".into(),
                    options: None,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/List",
            vec![
                ListEventsRequest {
                    namespace: String::new(),
                    options: None,
                }
                .encode_to_vec(),
            ],
        ),
        watch(
            "/core.v1.Events/Watch",
            vec![
                WatchEventsRequest {
                    namespace: ns(),
                    options: watch_options,
                }
                .encode_to_vec(),
            ],
        ),
        unary(
            "/core.v1.Events/DeleteCollection",
            vec![
                DeleteCollectionEventsRequest {
                    namespace: ns(),
                    list_options: None,
                    options: delete_options(Some(0), None, false),
                }
                .encode_to_vec(),
            ],
        ),
    ]
}
