//! The REST rows' HTTP client, as a Kubernetes client would use one: a pooled HTTP/1.1 client
//! with keep-alive (hyper-util's, as Go's `net/http` transport pools plain-HTTP connections:
//! one request per connection at a time, so up to one connection per concurrent worker), or
//! one HTTP/2 connection (h2 with prior knowledge) carrying every request, as client-go does
//! over TLS, where ALPN picks h2: the counterpart of a client with one gRPC channel.
//!
//! Every answer is read whole and decoded, as a client decodes it: lists into typed ConfigMaps
//! ([`ConfigMapList`], as client-go and kube-rs decode into their structs, and the gRPC rows'
//! client into prost's), single objects, which the update row edits, into a
//! `serde_json::Value`. The client's cost is part of the row (its CPU is the `bench` column).

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use serde_json::Value;

/// How requests reach the REST API.
#[derive(Clone)]
pub(crate) enum Http {
    /// A pool of HTTP/1.1 connections, kept alive between requests.
    Pool(Box<Client<HttpConnector, Full<Bytes>>>),
    /// One h2 connection, every request a stream on it.
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// A client of the REST API at `addr`.
#[derive(Clone)]
pub(crate) struct RestClient {
    http: Http,
    base: String,
}

impl RestClient {
    /// A pooled HTTP/1.1 client (keep-alive; idle connections kept 90 s, as Go's default).
    pub(crate) fn pooled(addr: SocketAddr) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Self {
            http: Http::Pool(Box::new(client)),
            base: format!("http://{addr}"),
        }
    }

    /// A client on one h2 connection to `addr`.
    pub(crate) async fn one_h2_connection(addr: SocketAddr) -> Result<Self, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let (send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .map_err(|e| format!("h2 handshake with {addr}: {e}"))?;
        tokio::spawn(conn);
        Ok(Self {
            http: Http::H2(send),
            base: format!("http://{addr}"),
        })
    }

    /// Sends `method path` with `body` (JSON); the status and the whole answer.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), String> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(header::ACCEPT, "application/json");
        if body.is_some() {
            req = req.header(header::CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| e.to_string())?;
        let resp = match &self.http {
            Http::Pool(c) => c.request(req).await.map_err(|e| e.to_string())?,
            Http::H2(s) => {
                let mut s = s.clone();
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await.map_err(|e| e.to_string())?
            }
        };
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, body))
    }

    /// Sends a GET and decodes the answer, which must be 200, into `T` (a typed object, as
    /// client-go and kube-rs decode: the gRPC rows' clients decode into prost's structs).
    pub(crate) async fn typed<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<T, String> {
        let (status, bytes) = self.send(Method::GET, path, None).await?;
        if status != StatusCode::OK {
            return Err(format!("GET {path}: {status}"));
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("GET {path}: {e}"))
    }

    /// Sends a request and parses the answer, which must come with `want`.
    pub(crate) async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        want: StatusCode,
    ) -> Result<Value, String> {
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| e.to_string())?;
        let (status, bytes) = self.send(method.clone(), path, body).await?;
        if status != want {
            return Err(format!(
                "{method} {path}: {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("{method} {path}: {e}"))
    }
}

/// A ConfigMapList as a typed client decodes it (k8s-openapi's fields of it that the benchmark's
/// objects carry; the rest of each object is read and skipped, as serde does).
#[derive(serde::Deserialize)]
pub(crate) struct ConfigMapList {
    pub(crate) items: Vec<ConfigMap>,
}

/// A ConfigMap as a typed client decodes it.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // decoded, as a client's would be; the benchmark reads only the count
pub(crate) struct ConfigMap {
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    pub(crate) data: std::collections::BTreeMap<String, String>,
}

/// A watch event as a typed client decodes it: its object a ConfigMap (an ERROR event's
/// `Status` decodes into one too, its fields defaulted: only the type is read then).
#[derive(serde::Deserialize)]
#[allow(dead_code)] // decoded, as a client's would be
pub(crate) struct WatchEvent {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) object: ConfigMap,
}

/// The ObjectMeta fields the benchmark's ConfigMaps carry.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // decoded, as a client's would be
pub(crate) struct ObjectMeta {
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) namespace: String,
    #[serde(default)]
    pub(crate) uid: String,
    #[serde(default)]
    pub(crate) resource_version: String,
    #[serde(default)]
    pub(crate) creation_timestamp: Option<String>,
    #[serde(default)]
    pub(crate) labels: std::collections::BTreeMap<String, String>,
}
