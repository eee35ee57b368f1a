//! The operations of the REST rows, each the same registry work as its typed gRPC twin in
//! `scenarios.rs` (ConfigMaps in namespace `bench`, the same object):
//!
//! | operation | REST (JSON) | typed gRPC | raw etcd |
//! |---|---|---|---|
//! | create | `POST .../configmaps` | Create | Txn(mod==0 ? Put) |
//! | get | `GET .../configmaps/NAME` | Get | Range |
//! | update | `GET`, then `PUT` with its resourceVersion | Get + Update(resourceVersion) | Range + Txn(mod==rev ? Put) |
//! | list page | `GET .../configmaps?limit=N` | List(limit N) | Range(limit N) |
//!
//! A list page reads the first `N` of a namespace seeded with more (`PAGE_NS`).

use etcd_client::GetOptions;
use http::{Method, StatusCode};
use kubestore_proto::{
    core::v1::{ListConfigMapsRequest, config_maps_client::ConfigMapsClient},
    meta::v1::ListOptions,
};
use serde_json::{Value, json};
use tonic::transport::Channel;

use super::client::RestClient;

/// The namespace the list-page rows read.
pub(crate) const PAGE_NS: &str = "bench-rest-page";
/// Objects per list page.
pub(crate) const PAGE: usize = 100;

/// ConfigMaps over the REST API.
#[derive(Clone)]
pub(crate) struct RestConfigMaps {
    pub(crate) client: RestClient,
    pub(crate) prefix: String,
}

const NS: &str = "bench";

/// The object of `scenarios::config_map`, as a client writes it in JSON.
fn object(name: &str, n: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"n": n.to_string(), "payload": "x".repeat(64)},
    })
}

impl RestConfigMaps {
    fn name(&self, i: usize) -> String {
        format!("{}{i}", self.prefix)
    }

    pub(crate) async fn create(&self, i: usize) -> Result<(), String> {
        let path = format!("/api/v1/namespaces/{NS}/configmaps");
        let body = object(&self.name(i), 0);
        self.client
            .json(Method::POST, &path, Some(&body), StatusCode::CREATED)
            .await
            .map(|_| ())
    }

    pub(crate) async fn get(&self, i: usize) -> Result<(), String> {
        let path = format!("/api/v1/namespaces/{NS}/configmaps/{}", self.name(i));
        let cm = self
            .client
            .json(Method::GET, &path, None, StatusCode::OK)
            .await?;
        if cm["metadata"]["name"].as_str() == Some(&self.name(i)) {
            Ok(())
        } else {
            Err("got another object".into())
        }
    }

    /// Get, then Update with the resourceVersion read (a client's read-modify-write).
    pub(crate) async fn update(&self, i: usize) -> Result<(), String> {
        let path = format!("/api/v1/namespaces/{NS}/configmaps/{}", self.name(i));
        let mut cm = self
            .client
            .json(Method::GET, &path, None, StatusCode::OK)
            .await?;
        if cm["metadata"]["resourceVersion"].as_str().is_none() {
            return Err("no resourceVersion".into());
        }
        let n: u64 = cm["data"]["n"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        cm["data"]["n"] = Value::from((n + 1).to_string());
        self.client
            .json(Method::PUT, &path, Some(&cm), StatusCode::OK)
            .await
            .map(|_| ())
    }

    pub(crate) async fn list_page(&self, _i: usize) -> Result<(), String> {
        let path = format!("/api/v1/namespaces/{PAGE_NS}/configmaps?limit={PAGE}");
        let list: super::client::ConfigMapList = self.client.typed(&path).await?;
        check(list.items.len(), PAGE)
    }
}

pub(crate) fn check(got: usize, want: usize) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("listed {got} objects, expected {want}"))
    }
}

/// The typed gRPC List of one page.
#[derive(Clone)]
pub(crate) struct GrpcPage {
    pub(crate) channels: Vec<Channel>,
}

impl GrpcPage {
    pub(crate) async fn list_page(&self, i: usize) -> Result<(), String> {
        let mut c = ConfigMapsClient::new(self.channels[i % self.channels.len()].clone());
        let r = c
            .list(ListConfigMapsRequest {
                namespace: PAGE_NS.into(),
                options: Some(ListOptions {
                    limit: PAGE as i64,
                    ..Default::default()
                }),
            })
            .await
            .map_err(|e| e.to_string())?;
        check(r.into_inner().items.len(), PAGE)
    }
}

/// A raw etcd range of one page over the same keys.
#[derive(Clone)]
pub(crate) struct RawPage {
    pub(crate) clients: Vec<etcd_client::Client>,
}

impl RawPage {
    pub(crate) async fn list_page(&self, i: usize) -> Result<(), String> {
        let prefix = format!("/registry/configmaps/{PAGE_NS}/");
        let mut kv = self.clients[i % self.clients.len()].kv_client();
        let r = kv
            .get(
                prefix.clone(),
                Some(
                    GetOptions::new()
                        .with_range(crate::listwatch::prefix_end(&prefix))
                        .with_limit(PAGE as i64),
                ),
            )
            .await
            .map_err(|e| e.to_string())?;
        check(r.kvs().len(), PAGE)
    }
}
