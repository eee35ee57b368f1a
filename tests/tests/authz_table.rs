//! Every entrance asks the gate (issue 32, `registry_svc::authz`): under
//! `--authorization-mode AlwaysDeny` a user outside `system:masters` is refused every verb of
//! every resource on the REST API (the resources from discovery), the generic gRPC API (from
//! `Discover`) and every method of every typed gRPC service (the services from live
//! reflection, the methods from their descriptors: a service added later is tested without a
//! line here), each with upstream's Forbidden words and nothing written; `system:masters` is
//! allowed everything.

use std::collections::BTreeSet;

use kubestore_proto::registry::v1::{
    CreateRequest, DeleteCollectionRequest, DeleteRequest, DiscoverRequest, GetRequest,
    ListRequest, PatchRequest, ResourceRef, UpdateRequest, WatchRequest,
    resources_client::ResourcesClient,
};
use kubestore_tests::{
    ClusterOptions,
    kube::KubeCluster,
    raw::RawCodec,
    rest::{JSON, assert_status, call},
    services::channel,
};
use prost::Message;
use serde_json::json;
use tonic::{Code, Request, metadata::MetadataValue, transport::Channel};

const TOKENS: &str = "alice-token,alice,1001,dev\nroot-token,root,0,system:masters\n";
const ALICE: &str = "Bearer alice-token";
const ROOT: &str = "Bearer root-token";

async fn cluster() -> KubeCluster {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, TOKENS).expect("write tokens");
    KubeCluster::start_with(ClusterOptions {
        registry: Some(registry_svc::Config {
            token_auth_file: Some(path),
            authorization_mode: vec![registry_svc::authz::Mode::AlwaysDeny],
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
}

/// Upstream's words for what alice cannot do.
fn forbidden(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> String {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let what = if name.is_empty() {
        format!("{qualified} is forbidden")
    } else {
        format!("{qualified} {name:?} is forbidden")
    };
    let res = if sub.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{sub}")
    };
    let scope = if ns.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {ns:?}")
    };
    format!(
        "{what}: User \"alice\" cannot {verb} resource {res:?} in API group {group:?} {scope}: \
         Everything is forbidden."
    )
}

/// One resource of discovery: (group, version, plural, subresource, namespaced, verbs).
type Discovered = (String, String, String, String, bool, Vec<String>);

async fn rest_discovery(api: std::net::SocketAddr) -> Vec<Discovered> {
    let mut gvs = vec![("".to_string(), "v1".to_string(), "/api/v1".to_string())];
    let groups = call(api, "GET", "/apis", &[], b"").await.is(200).json();
    for g in groups["groups"].as_array().expect("groups") {
        for v in g["versions"].as_array().expect("versions") {
            let gv = v["groupVersion"].as_str().expect("groupVersion");
            let (group, version) = gv.split_once('/').expect("group/version");
            gvs.push((group.into(), version.into(), format!("/apis/{gv}")));
        }
    }
    let mut out = Vec::new();
    for (group, version, path) in gvs {
        let list = call(api, "GET", &path, &[], b"").await.is(200).json();
        for r in list["resources"].as_array().expect("resources") {
            let name = r["name"].as_str().expect("name");
            let (plural, sub) = name.split_once('/').unwrap_or((name, ""));
            let verbs = r["verbs"]
                .as_array()
                .expect("verbs")
                .iter()
                .map(|v| v.as_str().expect("verb").to_string())
                .collect();
            out.push((
                group.clone(),
                version.clone(),
                plural.into(),
                sub.into(),
                r["namespaced"].as_bool().expect("namespaced"),
                verbs,
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn always_deny_refuses_every_rest_verb_of_every_resource() {
    let c = cluster().await;
    let resources = rest_discovery(c.api).await;
    assert!(
        resources.len() >= 8,
        "discovery lists the built-in kinds: {resources:?}"
    );
    let mut tried = 0;
    for (group, version, plural, sub, namespaced, verbs) in &resources {
        let base = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let ns = if *namespaced { "team-a" } else { "" };
        let collection = if *namespaced {
            format!("{base}/namespaces/{ns}/{plural}")
        } else {
            format!("{base}/{plural}")
        };
        let object = format!("{collection}/x");
        let at_object = if sub.is_empty() {
            object.clone()
        } else {
            format!("{object}/{sub}")
        };
        // A Namespace is in itself (upstream's RequestInfo).
        let ns_of = |name: &str| {
            if group.is_empty() && plural == "namespaces" {
                name.to_string()
            } else {
                ns.to_string()
            }
        };
        for verb in verbs {
            let body =
                json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}}).to_string();
            let (method, path, name, headers): (&str, String, &str, &[(&str, &str)]) =
                match verb.as_str() {
                    "get" => ("GET", at_object.clone(), "x", &[]),
                    "list" if sub.is_empty() => ("GET", collection.clone(), "", &[]),
                    "watch" if sub.is_empty() => ("GET", format!("{collection}?watch=1"), "", &[]),
                    "create" if sub.is_empty() => ("POST", collection.clone(), "", &[JSON]),
                    "update" => ("PUT", at_object.clone(), "x", &[JSON]),
                    "patch" => (
                        "PATCH",
                        at_object.clone(),
                        "x",
                        &[("Content-Type", "application/merge-patch+json")],
                    ),
                    "delete" if sub.is_empty() => ("DELETE", object.clone(), "x", &[]),
                    "deletecollection" if sub.is_empty() => ("DELETE", collection.clone(), "", &[]),
                    _ => continue,
                };
            let mut hs = vec![("Authorization", ALICE)];
            hs.extend_from_slice(headers);
            let r = call(c.api, method, &path, &hs, body.as_bytes()).await;
            let s = assert_status(&r, 403, "Forbidden");
            assert_eq!(
                s["message"],
                forbidden(verb, group, plural, sub, &ns_of(name), name),
                "{method} {path}: {r}"
            );
            let mut details = json!({"kind": plural});
            if !group.is_empty() {
                details["group"] = json!(group);
            }
            if !name.is_empty() {
                details["name"] = json!(name);
            }
            assert_eq!(s["details"], details, "{method} {path}");
            tried += 1;
        }
        // Nothing was written: the administrator (plain HTTP, `system:masters`) finds no `x`.
        if sub.is_empty() && verbs.iter().any(|v| v == "get") {
            call(c.api, "GET", &object, &[], b"").await.is(404);
        }
    }
    assert!(tried > 40, "{tried} refusals");
    // Non-resource paths too, and a path nobody serves.
    for path in [
        "/version",
        "/apis",
        "/api",
        "/openapi/v3",
        "/healthz",
        "/nope",
    ] {
        let r = call(c.api, "GET", path, &[("Authorization", ALICE)], b"").await;
        let s = assert_status(&r, 403, "Forbidden");
        assert_eq!(
            s["message"],
            format!("forbidden: User \"alice\" cannot get path {path:?}: Everything is forbidden."),
            "{r}"
        );
    }
    // A member of `system:masters` passes every chain.
    let r = call(
        c.api,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[JSON, ("Authorization", ROOT)],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"by-root"}}"#,
    )
    .await;
    r.is(201);
    call(c.api, "GET", "/version", &[("Authorization", ROOT)], b"")
        .await
        .is(200);
}

fn with_token<T>(message: T, token: &str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(token).expect("ASCII"),
    );
    r
}

fn assert_denied(status: &tonic::Status, want: &str, what: &str) {
    assert_eq!(status.code(), Code::PermissionDenied, "{what}: {status:?}");
    assert_eq!(status.message(), want, "{what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn always_deny_refuses_every_generic_grpc_verb_of_every_resource() {
    let c = cluster().await;
    let url = c.cluster.registry.as_ref().expect("registry").url();
    let mut api = ResourcesClient::new(channel(&url).await);
    let discovered = api
        .discover(with_token(DiscoverRequest {}, ROOT))
        .await
        .expect("masters may discover")
        .into_inner();
    let denied = api
        .discover(with_token(DiscoverRequest {}, ALICE))
        .await
        .expect_err("alice may not");
    assert_denied(
        &denied,
        "forbidden: User \"alice\" cannot get path \"/apis\": Everything is forbidden.",
        "Discover",
    );
    let mut tried = 0;
    for r in &discovered.resources {
        let resource = Some(ResourceRef {
            group: r.group.clone(),
            version: r.version.clone(),
            resource: r.resource.clone(),
        });
        let namespace = if r.namespaced { "team-a" } else { "" }.to_string();
        let ns_of = |name: &str| {
            if r.group.is_empty() && r.resource == "namespaces" {
                name.to_string()
            } else {
                namespace.clone()
            }
        };
        let object = json!({"metadata": {"name": "x"}}).to_string();
        let want = |verb: &str, sub: &str, name: &str| {
            forbidden(verb, &r.group, &r.resource, sub, &ns_of(name), name)
        };
        for verb in &r.verbs {
            let status = match verb.as_str() {
                "get" => api
                    .get(with_token(
                        GetRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            name: "x".into(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "list" => api
                    .list(with_token(
                        ListRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "watch" => api
                    .watch(with_token(
                        WatchRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "create" => api
                    .create(with_token(
                        CreateRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            json: object.clone(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "update" => api
                    .update(with_token(
                        UpdateRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            name: "x".into(),
                            json: object.clone(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "patch" => api
                    .patch(with_token(
                        PatchRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            name: "x".into(),
                            patch: "{}".into(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "delete" => api
                    .delete(with_token(
                        DeleteRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            name: "x".into(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                "deletecollection" => api
                    .delete_collection(with_token(
                        DeleteCollectionRequest {
                            resource: resource.clone(),
                            namespace: namespace.clone(),
                            ..Default::default()
                        },
                        ALICE,
                    ))
                    .await
                    .map(drop),
                other => panic!("a verb this test does not know: {other}"),
            };
            let name = match verb.as_str() {
                "get" | "update" | "patch" | "delete" => "x",
                _ => "",
            };
            let status = status.expect_err(verb);
            assert_denied(
                &status,
                &want(verb, "", name),
                &format!("{verb} {}", r.resource),
            );
            tried += 1;
        }
        for sub in &r.subresources {
            let status = api
                .get(with_token(
                    GetRequest {
                        resource: resource.clone(),
                        namespace: namespace.clone(),
                        name: "x".into(),
                        subresource: sub.clone(),
                        ..Default::default()
                    },
                    ALICE,
                ))
                .await
                .expect_err("get of a subresource");
            assert_denied(&status, &want("get", sub, "x"), &format!("get {sub}"));
        }
    }
    assert!(tried > 40, "{tried} refusals");
    // Nothing was written.
    let list = api
        .list(with_token(
            ListRequest {
                resource: Some(ResourceRef {
                    group: String::new(),
                    version: "v1".into(),
                    resource: "configmaps".into(),
                }),
                namespace: "team-a".into(),
                ..Default::default()
            },
            ROOT,
        ))
        .await
        .expect("masters may list")
        .into_inner();
    assert!(list.items.is_empty(), "{list:?}");
}

/// The services registry-svc serves, as its reflection lists them.
async fn served_services(channel: Channel) -> Vec<String> {
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let mut client = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection answers")
        .into_inner();
    match stream
        .message()
        .await
        .expect("a response")
        .map(|r| r.message_response)
    {
        Some(Some(MessageResponse::ListServicesResponse(l))) => {
            l.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("not a service list: {other:?}"),
    }
}

/// Every method of every typed service refuses alice before it looks at her request (an empty
/// message: no object, no name).
#[tokio::test(flavor = "multi_thread")]
async fn always_deny_refuses_every_method_of_every_typed_service() {
    let c = cluster().await;
    let url = c.cluster.registry.as_ref().expect("registry").url();
    let ch = channel(&url).await;
    let services = served_services(ch.clone()).await;
    let descriptors = prost_types::FileDescriptorSet::decode(kubestore_proto::CORE_DESCRIPTOR_SET)
        .expect("descriptors");
    // Not resources: health, reflection. The generic API and CustomObjects first read which
    // resource a call names (an empty call names none: INVALID_ARGUMENT, NOT_FOUND); the
    // generic API is tested verb by verb above, and CustomObjects is its handler (one call
    // naming a real kind is below).
    let exempt: BTreeSet<&str> = [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "apiextensions.v1.CustomObjects",
        "registry.v1.Resources",
    ]
    .into();
    let mut tried = Vec::new();
    for file in &descriptors.file {
        for svc in &file.service {
            let full = format!("{}.{}", file.package(), svc.name());
            if exempt.contains(full.as_str()) || !services.contains(&full) {
                continue;
            }
            for m in &svc.method {
                let path = format!("/{full}/{}", m.name());
                let mut grpc = tonic::client::Grpc::new(ch.clone());
                grpc.ready().await.expect("ready");
                let pq = http::uri::PathAndQuery::try_from(path.as_str()).expect("path");
                let request = with_token(Vec::<u8>::new(), ALICE);
                let status = if m.server_streaming() {
                    grpc.server_streaming(request, pq, RawCodec).await.map(drop)
                } else {
                    grpc.unary(request, pq, RawCodec).await.map(drop)
                };
                let status = status.expect_err(&path);
                assert_eq!(status.code(), Code::PermissionDenied, "{path}: {status:?}");
                assert!(
                    status
                        .message()
                        .contains("is forbidden: User \"alice\" cannot")
                        || status.message().starts_with("forbidden: User \"alice\""),
                    "{path}: {status:?}"
                );
                tried.push(path);
            }
        }
    }
    // Eleven kinds' services (pods, configmaps, events, secrets, leases, namespaces,
    // definitions, the four RBAC kinds), each seven methods or more.
    assert!(tried.len() >= 77, "{tried:?}");
    assert!(
        tried.iter().any(|p| p == "/core.v1.Pods/UpdateStatus"),
        "{tried:?}"
    );
    // The empty Create names no namespace: alice was asked about the cluster scope.
    let mut pods = kubestore_proto::core::v1::pods_client::PodsClient::new(ch.clone());
    let status = pods
        .create(with_token(Default::default(), ALICE))
        .await
        .expect_err("refused");
    assert_denied(
        &status,
        &forbidden("create", "", "pods", "", "", ""),
        "an empty Create",
    );
    // A Create into team-a is asked about team-a, the object's namespace.
    let status = pods
        .create(with_token(
            kubestore_proto::core::v1::CreatePodRequest {
                pod: Some(kubestore_proto::core::v1::Pod {
                    metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
                        name: "web".into(),
                        namespace: "team-a".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ALICE,
        ))
        .await
        .expect_err("refused");
    assert_denied(
        &status,
        &forbidden("create", "", "pods", "", "team-a", ""),
        "a Create",
    );
    // The status details name what was refused.
    let info = tonic_types::StatusExt::get_details_error_info(&status).expect("ErrorInfo");
    assert_eq!(info.reason, "Forbidden");
    assert_eq!(
        info.metadata.get("resource").map(String::as_str),
        Some("pods")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deprecated_custom_objects_service_is_the_generic_apis_gate() {
    use kubestore_proto::apiextensions::v1::{
        GetCustomObjectRequest, custom_objects_client::CustomObjectsClient,
    };
    let c = cluster().await;
    let url = c.cluster.registry.as_ref().expect("registry").url();
    kubestore_tests::fixtures_gc::register_crontab(&url).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let status = objects
        .get(with_token(
            GetCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: "team-a".into(),
                name: "daily".into(),
            },
            ALICE,
        ))
        .await
        .expect_err("refused");
    assert_denied(
        &status,
        &forbidden(
            "get",
            "stable.example.com",
            "crontabs",
            "",
            "team-a",
            "daily",
        ),
        "CustomObjects/Get",
    );
}
