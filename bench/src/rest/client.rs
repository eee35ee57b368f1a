//! The REST rows' HTTP client, as a Kubernetes client would use one: a pooled HTTP/1.1 client
//! with keep-alive (hyper-util's, as Go's `net/http` transport pools plain-HTTP connections:
//! one request per connection at a time, so up to one connection per concurrent worker), or
//! one HTTP/2 connection (h2 with prior knowledge) carrying every request, as client-go does
//! over TLS, where ALPN picks h2: the counterpart of a client with one gRPC channel.
//!
//! Every answer is read whole and parsed into a `serde_json::Value`, as a client decodes it:
//! the client's cost is part of the row (its CPU is the `bench` column).

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
