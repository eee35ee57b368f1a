//! Helpers of the storage-svc tests: a small ConfigMap, typed Create/Get wrappers, raw etcd
//! reads and writes, and an increment update function.
// Small helpers named for what they do; documenting each would repeat its name.
#![allow(missing_docs)]

use kubestore_proto::{
    core::v1::ConfigMap,
    meta::v1::ObjectMeta,
    storage::v1::{CreateRequest, GetRequest, UpdateStart, storage_client::StorageClient},
};
use prost::Message;
use tonic::{Status, transport::Channel};

use crate::{Cluster, update::Reply};

pub use crate::reason;

pub fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            ..Default::default()
        }),
        data: data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        immutable: None,
        binary_data: Default::default(),
    }
}

/// The resource version of any encoded object (reads field 1 only, as storage does).
pub fn rv_of(bytes: &[u8]) -> String {
    kubestore_proto::meta::v1::resource_version_of(bytes)
}

pub async fn create(
    c: &mut StorageClient<Channel>,
    key: &str,
    obj: &impl Message,
    ttl: i64,
) -> Result<String, Status> {
    let r = c
        .create(CreateRequest {
            key: key.into(),
            object: obj.encode_to_vec(),
            ttl_seconds: ttl,
            dry_run: false,
        })
        .await?
        .into_inner();
    assert_eq!(
        rv_of(&r.object),
        r.resource_version,
        "returned object carries its resource version"
    );
    Ok(r.resource_version)
}

pub async fn get(c: &mut StorageClient<Channel>, key: &str) -> Result<ConfigMap, Status> {
    let r = c
        .get(GetRequest {
            key: key.into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(ConfigMap::decode(r.object.as_ref()).expect("decodes"))
}

pub async fn raw(cluster: &Cluster, etcd_key: &str) -> Option<etcd_client::KeyValue> {
    let mut c = cluster.etcd.client().await;
    c.get(etcd_key, None)
        .await
        .expect("etcd get")
        .take_kvs()
        .into_iter()
        .next()
}

/// A write by another etcd client, made synchronously from inside an update function.
pub fn raw_put(endpoint: &str, etcd_key: &str, bytes: Vec<u8>) {
    let (ep, k) = (endpoint.to_string(), etcd_key.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let mut e = etcd_client::Client::connect([ep], None)
                .await
                .expect("etcd");
            e.put(k, bytes, None).await.expect("put");
        })
    })
    .join()
    .expect("writer thread");
}

pub fn start(key: &str) -> UpdateStart {
    UpdateStart {
        key: key.into(),
        ..Default::default()
    }
}

/// Adds 1 to data["n"].
pub fn increment(state: &crate::update::CurrentState) -> Reply {
    let mut obj = ConfigMap::decode(state.object.as_slice()).expect("decodes");
    let n: u64 = obj.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
    obj.data.insert("n".into(), (n + 1).to_string());
    Reply::Write(obj.encode_to_vec(), 0)
}
