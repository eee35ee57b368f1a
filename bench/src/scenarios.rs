//! The operations measured, per layer. Each layer does the same etcd work for the same
//! operation, so a ratio to raw etcd is the price of the layer:
//!
//! | operation | raw etcd (etcd-client) | storage-svc | registry-svc |
//! |---|---|---|---|
//! | create | Txn(mod==0 ? Put) | Create | Create |
//! | get | Range | Get | Get |
//! | update (distinct keys) | Range + Txn(mod==rev ? Put) | GuaranteedUpdate | Get + Update(resourceVersion) |
//! | hot update (one key, all workers) | Range, then Txn(mod==rev ? Put : Range) until it wins | GuaranteedUpdate | Get + Update(resourceVersion), again on ABORTED |
//! | delete | Range + Txn(mod==rev ? Delete) | Delete | Delete (graceful, then immediate, for pods) |

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use kubestore_proto::{
    core::v1::{
        ConfigMap, Container, CreateConfigMapRequest, CreatePodRequest, DeleteConfigMapRequest,
        DeletePodRequest, GetConfigMapRequest, GetPodRequest, Pod, PodSpec, UpdateConfigMapRequest,
        UpdatePodRequest, config_maps_client::ConfigMapsClient, pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ObjectMeta},
    storage::v1::{
        CreateRequest, DeleteRequest, GetRequest, GuaranteedUpdateRequest, UpdateProposal,
        UpdateStart, guaranteed_update_request::Message as Req,
        guaranteed_update_response::Message as Resp, storage_client::StorageClient,
    },
};
use prost::Message;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

/// A small ConfigMap, the object every layer writes.
pub(crate) fn config_map(name: &str, n: u64) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: "bench".into(),
            ..Default::default()
        }),
        data: [
            ("n".to_string(), n.to_string()),
            ("payload".to_string(), "x".repeat(64)),
        ]
        .into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

fn bump(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut cm = ConfigMap::decode(bytes).map_err(|e| e.to_string())?;
    let n: u64 = cm.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
    cm.data.insert("n".into(), (n + 1).to_string());
    Ok(cm.encode_to_vec())
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Raw etcd through etcd-client.
#[derive(Clone)]
pub(crate) struct Raw {
    /// One client (connection) per slot; operation `i` uses slot `i % len`.
    pub(crate) clients: Vec<etcd_client::Client>,
    pub(crate) prefix: String,
    /// Lost compares in the hot-key loop.
    pub(crate) conflicts: Arc<AtomicU64>,
}

impl Raw {
    fn kv(&self, i: usize) -> etcd_client::KvClient {
        self.clients[i % self.clients.len()].kv_client()
    }

    fn key(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    pub(crate) async fn create(&self, i: usize) -> Result<(), String> {
        let k = self.key(i);
        let txn = Txn::new()
            .when([Compare::mod_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k, config_map("x", 0).encode_to_vec(), None)]);
        let r = self.kv(i).txn(txn).await.map_err(err)?;
        if r.succeeded() {
            Ok(())
        } else {
            Err("exists".into())
        }
    }

    pub(crate) async fn get(&self, i: usize) -> Result<(), String> {
        let r = self.kv(i).get(self.key(i), None).await.map_err(err)?;
        if r.kvs().is_empty() {
            Err("missing".into())
        } else {
            Ok(())
        }
    }

    async fn cas(&self, i: usize, k: String, retry: bool) -> Result<(), String> {
        let mut kv = self.kv(i);
        let r = kv.get(k.clone(), None).await.map_err(err)?;
        let cur = r.kvs().first().ok_or("missing")?;
        let (mut rev, mut val) = (cur.mod_revision(), cur.value().to_vec());
        loop {
            let txn = Txn::new()
                .when([Compare::mod_revision(k.clone(), CompareOp::Equal, rev)])
                .and_then([TxnOp::put(k.clone(), bump(&val)?, None)])
                .or_else([TxnOp::get(k.clone(), None)]);
            let r = kv.txn(txn).await.map_err(err)?;
            if r.succeeded() {
                return Ok(());
            }
            if !retry {
                return Err("conflict".into());
            }
            self.conflicts.fetch_add(1, Ordering::Relaxed);
            let fresh = r.op_responses().into_iter().find_map(|o| match o {
                TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
                _ => None,
            });
            let fresh = fresh.ok_or("deleted")?;
            (rev, val) = (fresh.mod_revision(), fresh.value().to_vec());
        }
    }

    pub(crate) async fn update(&self, i: usize) -> Result<(), String> {
        self.cas(i, self.key(i), false).await
    }

    pub(crate) async fn hot_update(&self, i: usize) -> Result<(), String> {
        self.cas(i, format!("{}hot", self.prefix), true).await
    }

    pub(crate) async fn delete(&self, i: usize) -> Result<(), String> {
        let k = self.key(i);
        let mut kv = self.kv(i);
        let r = kv.get(k.clone(), None).await.map_err(err)?;
        let rev = r.kvs().first().ok_or("missing")?.mod_revision();
        let txn = Txn::new()
            .when([Compare::mod_revision(k.clone(), CompareOp::Equal, rev)])
            .and_then([TxnOp::delete(k, None)]);
        let r = kv.txn(txn).await.map_err(err)?;
        if r.succeeded() {
            Ok(())
        } else {
            Err("conflict".into())
        }
    }

    pub(crate) async fn seed_hot(&self) {
        let i = 0;
        let _ = self
            .kv(i)
            .put(
                format!("{}hot", self.prefix),
                config_map("hot", 0).encode_to_vec(),
                None,
            )
            .await;
    }
}

/// storage-svc over gRPC.
#[derive(Clone)]
pub(crate) struct Storage {
    pub(crate) clients: Vec<StorageClient<Channel>>,
    pub(crate) prefix: String,
}

impl Storage {
    fn c(&self, i: usize) -> StorageClient<Channel> {
        self.clients[i % self.clients.len()].clone()
    }
    fn key(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    pub(crate) async fn create(&self, i: usize) -> Result<(), String> {
        let req = CreateRequest {
            key: self.key(i),
            object: config_map(&format!("cm{i}"), 0).encode_to_vec(),
            ..Default::default()
        };
        self.c(i).create(req).await.map(|_| ()).map_err(err)
    }

    pub(crate) async fn get(&self, i: usize) -> Result<(), String> {
        self.c(i)
            .get(GetRequest {
                key: self.key(i),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(err)
    }

    async fn guaranteed_update(&self, i: usize, key: String) -> Result<(), String> {
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        tx.send(GuaranteedUpdateRequest {
            message: Some(Req::Start(UpdateStart {
                key,
                ..Default::default()
            })),
        })
        .await
        .map_err(err)?;
        let mut stream = self
            .c(i)
            .guaranteed_update(ReceiverStream::new(rx))
            .await
            .map_err(err)?
            .into_inner();
        loop {
            match stream.message().await.map_err(err)?.and_then(|m| m.message) {
                Some(Resp::State(s)) => {
                    let proposal = UpdateProposal {
                        based_on_resource_version: s.resource_version,
                        object: bump(&s.object)?,
                        ttl_seconds: 0,
                    };
                    tx.send(GuaranteedUpdateRequest {
                        message: Some(Req::Proposal(proposal)),
                    })
                    .await
                    .map_err(err)?;
                }
                Some(Resp::Result(_)) => return Ok(()),
                other => return Err(format!("unexpected {other:?}")),
            }
        }
    }

    pub(crate) async fn update(&self, i: usize) -> Result<(), String> {
        self.guaranteed_update(i, self.key(i)).await
    }

    pub(crate) async fn hot_update(&self, i: usize) -> Result<(), String> {
        self.guaranteed_update(i, format!("{}hot", self.prefix))
            .await
    }

    pub(crate) async fn delete(&self, i: usize) -> Result<(), String> {
        self.c(i)
            .delete(DeleteRequest {
                key: self.key(i),
                ..Default::default()
            })
            .await
            .map(|_| ())
            .map_err(err)
    }

    pub(crate) async fn seed_hot(&self) {
        let req = CreateRequest {
            key: format!("{}hot", self.prefix),
            object: config_map("hot", 0).encode_to_vec(),
            ..Default::default()
        };
        let _ = self.c(0).create(req).await;
    }
}

/// registry-svc ConfigMaps over gRPC.
#[derive(Clone)]
pub(crate) struct ConfigMaps {
    pub(crate) clients: Vec<ConfigMapsClient<Channel>>,
    pub(crate) prefix: String,
    /// ABORTED answers in the hot loop.
    pub(crate) aborted: Arc<AtomicU64>,
}

const NS: &str = "bench";

impl ConfigMaps {
    fn c(&self, i: usize) -> ConfigMapsClient<Channel> {
        self.clients[i % self.clients.len()].clone()
    }
    fn name(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    pub(crate) async fn create(&self, i: usize) -> Result<(), String> {
        let req = CreateConfigMapRequest {
            namespace: NS.into(),
            config_map: Some(config_map(&self.name(i), 0)),
            dry_run: false,
        };
        self.c(i).create(req).await.map(|_| ()).map_err(err)
    }

    pub(crate) async fn get(&self, i: usize) -> Result<(), String> {
        self.c(i)
            .get(GetConfigMapRequest {
                namespace: NS.into(),
                name: self.name(i),
            })
            .await
            .map(|_| ())
            .map_err(err)
    }

    async fn read_modify_write(
        &self,
        i: usize,
        name: String,
        retry: bool,
        conditional: bool,
    ) -> Result<(), String> {
        let mut c = self.c(i);
        loop {
            let mut cm = c
                .get(GetConfigMapRequest {
                    namespace: NS.into(),
                    name: name.clone(),
                })
                .await
                .map_err(err)?
                .into_inner();
            let n: u64 = cm.data.get("n").and_then(|v| v.parse().ok()).unwrap_or(0);
            cm.data.insert("n".into(), (n + 1).to_string());
            if !conditional {
                // Last writer wins: storage applies it to whatever is current.
                if let Some(m) = cm.metadata.as_mut() {
                    m.resource_version.clear();
                }
            }
            match c
                .update(UpdateConfigMapRequest {
                    namespace: NS.into(),
                    config_map: Some(cm),
                    dry_run: false,
                })
                .await
            {
                Ok(_) => return Ok(()),
                Err(s) if retry && s.code() == tonic::Code::Aborted => {
                    self.aborted.fetch_add(1, Ordering::Relaxed);
                }
                Err(s) => return Err(err(s)),
            }
        }
    }

    pub(crate) async fn update(&self, i: usize) -> Result<(), String> {
        self.read_modify_write(i, self.name(i), false, true).await
    }

    pub(crate) async fn hot_update(&self, i: usize) -> Result<(), String> {
        self.read_modify_write(i, format!("{}hot", self.prefix), true, true)
            .await
    }

    pub(crate) async fn hot_update_unconditional(&self, i: usize) -> Result<(), String> {
        self.read_modify_write(i, format!("{}hot", self.prefix), true, false)
            .await
    }

    pub(crate) async fn delete(&self, i: usize) -> Result<(), String> {
        let req = DeleteConfigMapRequest {
            namespace: NS.into(),
            name: self.name(i),
            options: None,
        };
        let r = self.c(i).delete(req).await.map_err(err)?.into_inner();
        if r.deleted {
            Ok(())
        } else {
            Err("not deleted".into())
        }
    }

    pub(crate) async fn seed_hot(&self) {
        let req = CreateConfigMapRequest {
            namespace: NS.into(),
            config_map: Some(config_map(&format!("{}hot", self.prefix), 0)),
            dry_run: false,
        };
        let _ = self.c(0).create(req).await;
    }
}

/// registry-svc Pods over gRPC.
#[derive(Clone)]
pub(crate) struct Pods {
    pub(crate) clients: Vec<PodsClient<Channel>>,
    pub(crate) prefix: String,
}

impl Pods {
    fn c(&self, i: usize) -> PodsClient<Channel> {
        self.clients[i % self.clients.len()].clone()
    }
    fn name(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    pub(crate) async fn create(&self, i: usize) -> Result<(), String> {
        let pod = Pod {
            metadata: Some(ObjectMeta {
                name: self.name(i),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    image: "nginx:1".into(),
                    resources: None,
                    ..Default::default()
                }],
                node_name: "node-1".into(),
                ..Default::default()
            }),
            status: None,
        };
        self.c(i)
            .create(CreatePodRequest {
                namespace: NS.into(),
                pod: Some(pod),
                dry_run: false,
            })
            .await
            .map(|_| ())
            .map_err(err)
    }

    pub(crate) async fn get(&self, i: usize) -> Result<(), String> {
        self.c(i)
            .get(GetPodRequest {
                namespace: NS.into(),
                name: self.name(i),
            })
            .await
            .map(|_| ())
            .map_err(err)
    }

    pub(crate) async fn update(&self, i: usize) -> Result<(), String> {
        let mut c = self.c(i);
        let mut pod = c
            .get(GetPodRequest {
                namespace: NS.into(),
                name: self.name(i),
            })
            .await
            .map_err(err)?
            .into_inner();
        if let Some(s) = pod.spec.as_mut() {
            s.containers[0].image = "nginx:2".into();
        }
        c.update(UpdatePodRequest {
            namespace: NS.into(),
            pod: Some(pod),
            dry_run: false,
        })
        .await
        .map(|_| ())
        .map_err(err)
    }

    /// Default grace: marks the pod (deleted=false).
    pub(crate) async fn delete_graceful(&self, i: usize) -> Result<(), String> {
        let r = self
            .c(i)
            .delete(DeletePodRequest {
                namespace: NS.into(),
                name: self.name(i),
                options: None,
            })
            .await
            .map_err(err)?;
        if r.into_inner().deleted {
            Err("deleted at once".into())
        } else {
            Ok(())
        }
    }

    /// Grace 0: removes the (terminating) pod.
    pub(crate) async fn delete_now(&self, i: usize) -> Result<(), String> {
        let options = Some(DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        });
        let r = self
            .c(i)
            .delete(DeletePodRequest {
                namespace: NS.into(),
                name: self.name(i),
                options,
            })
            .await
            .map_err(err)?;
        if r.into_inner().deleted {
            Ok(())
        } else {
            Err("not deleted".into())
        }
    }
}
