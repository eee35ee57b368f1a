//! On the wire, every object storage-svc and registry-svc return carries its metadata once:
//! exactly one field 1 at the object's top level, holding name, namespace and resourceVersion.
//! (Storage once appended a second field 1 holding only resourceVersion: protobuf merges the
//! two, but protobufjs, which `@grpc/proto-loader` uses, replaces, and Node clients lost
//! `metadata.name` on every listed object.) Read with raw bytes, as such a client would.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{GetConfigMapRequest, ListConfigMapsRequest, WatchConfigMapsRequest},
    meta::v1::{ListOptions, ObjectMeta},
    storage::v1::{GetRequest, GetResponse, ListRequest, ListResponse},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{cm, create_cm},
    raw,
    services::channel,
};
use prost::Message;

/// The payloads of every top-level occurrence of `number` in `msg`.
fn occurrences(msg: &[u8], number: u32) -> Vec<Vec<u8>> {
    let mut buf = msg;
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (n, wire) = prost::encoding::decode_key(&mut buf).expect("key");
        match wire {
            prost::encoding::WireType::LengthDelimited => {
                let len = prost::encoding::decode_varint(&mut buf).expect("len") as usize;
                if n == number {
                    out.push(buf[..len].to_vec());
                }
                buf = &buf[len..];
            }
            prost::encoding::WireType::Varint => {
                prost::encoding::decode_varint(&mut buf).expect("varint");
            }
            other => panic!("unexpected wire type {other:?}"),
        }
    }
    out
}

/// Asserts `object` has one metadata field naming `name` with a resourceVersion.
fn one_metadata(object: &[u8], name: &str, what: &str) {
    let metas = occurrences(object, 1);
    assert_eq!(
        metas.len(),
        1,
        "{what}: field 1 occurs {} times",
        metas.len()
    );
    let meta = ObjectMeta::decode(metas[0].as_slice()).expect("ObjectMeta");
    assert_eq!(meta.name, name, "{what}");
    assert_eq!(meta.namespace, "default", "{what}");
    assert!(
        !meta.resource_version.is_empty(),
        "{what}: no resourceVersion"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_returned_object_has_its_metadata_once() {
    let cluster = Cluster::full().await;
    let registry = channel(&cluster.registry.as_ref().expect("registry").url()).await;
    let storage = channel(&cluster.storage.url()).await;
    let mut cms = cluster.config_maps().await;
    create_cm(&mut cms, cm("a", &[])).await.expect("create");

    // storage-svc: Get and List.
    let got = raw::call(
        storage.clone(),
        "/storage.v1.Storage/Get",
        GetRequest {
            key: "/configmaps/default/a".into(),
            ..Default::default()
        }
        .encode_to_vec(),
    )
    .await
    .expect("storage get");
    one_metadata(
        &GetResponse::decode(got.as_slice())
            .expect("response")
            .object,
        "a",
        "storage Get",
    );
    let listed = raw::call(
        storage,
        "/storage.v1.Storage/List",
        ListRequest {
            key: "/configmaps/default".into(),
            recursive: true,
            ..Default::default()
        }
        .encode_to_vec(),
    )
    .await
    .expect("storage list");
    let listed = ListResponse::decode(listed.as_slice()).expect("response");
    one_metadata(&listed.items[0], "a", "storage List");

    // registry-svc: Get, List (its items pass storage's bytes through) and Watch.
    let got = raw::call(
        registry.clone(),
        "/core.v1.ConfigMaps/Get",
        GetConfigMapRequest {
            namespace: "default".into(),
            name: "a".into(),
        }
        .encode_to_vec(),
    )
    .await
    .expect("registry get");
    one_metadata(&got, "a", "registry Get");
    let list = raw::call(
        registry.clone(),
        "/core.v1.ConfigMaps/List",
        ListConfigMapsRequest {
            namespace: "default".into(),
            options: None,
        }
        .encode_to_vec(),
    )
    .await
    .expect("registry list");
    let items = occurrences(&list, 2);
    assert_eq!(items.len(), 1);
    one_metadata(&items[0], "a", "registry List");

    let mut grpc = tonic::client::Grpc::new(registry);
    grpc.ready().await.expect("ready");
    let mut stream = grpc
        .server_streaming(
            tonic::Request::new(
                WatchConfigMapsRequest {
                    namespace: "default".into(),
                    options: Some(ListOptions {
                        send_initial_events: Some(true),
                        ..Default::default()
                    }),
                }
                .encode_to_vec(),
            ),
            http::uri::PathAndQuery::from_static("/core.v1.ConfigMaps/Watch"),
            raw::RawCodec,
        )
        .await
        .expect("watch")
        .into_inner();
    let event = tokio::time::timeout(Duration::from_secs(5), stream.message())
        .await
        .expect("an event in time")
        .expect("event")
        .expect("open");
    let objects = occurrences(&event, 2);
    assert_eq!(objects.len(), 1);
    one_metadata(&objects[0], "a", "registry Watch");
}
