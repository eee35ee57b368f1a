//! The HTTPS client of admission webhooks (upstream's `k8s.io/apiserver/pkg/util/webhook`
//! `ClientManager`/`HookClient` and the `r.Do(ctx)` of the webhook dispatchers in
//! `pkg/admission/plugin/webhook/{validating,mutating}/dispatcher.go`): POSTs an AdmissionReview
//! JSON body to a webhook's URL and hands back the answer's bytes; building and checking the
//! reviews (`pkg/admission/plugin/webhook/request`) is the caller's.
//!
//! Each call is bounded: connecting, the TLS handshake, the request and reading the answer
//! together by the webhook's timeout (upstream's `timeoutSeconds`, sent as the `timeout` query
//! parameter as client-go's `Request.Timeout` does), and the answer's body by a size limit.
//! Every failure is a [`CallError`], whose text reads as upstream's after `failed calling
//! webhook "NAME": `, so that the webhook's failurePolicy decides it as upstream would.
//!
//! HTTP/1.1 connections are kept for the next call when an answer was read whole and good
//! (`pool`, bounded as client-go's transport); any other ends with its call: its driver task is
//! aborted when the call returns or times out (a DNS name's resolution, which runs on tokio's
//! blocking pool, ends by the system resolver's own timeout). A kept connection the webhook
//! closed meanwhile is replaced by a new one once, as Go's transport retries a request its
//! reused connection could not carry. The TLS configuration of each
//! distinct caBundle is kept (at most [`MAX_CONFIGS`], by the bundle's SHA-256); its lock is
//! never held across an await. An empty caBundle trusts the system's roots, read once from
//! [`SYSTEM_ROOTS`] (none when that file is missing or unreadable), as client-go trusts the
//! system's pool.

use std::{
    collections::VecDeque,
    error::Error as StdError,
    fmt,
    net::{IpAddr, Ipv6Addr},
    sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError},
    time::Duration,
};

use bytes::Bytes;
use http::{
    HeaderValue, Method, Uri,
    header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST},
    uri::PathAndQuery,
};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body as _, Incoming};
use hyper_util::rt::TokioIo;
use rustls_pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio::net::TcpStream;

use super::pool::{AbortOnDrop, Connection, Key, Pool};
use tokio_rustls::{
    TlsConnector,
    rustls::{ClientConfig, RootCertStore},
};

/// How many TLS configurations (distinct caBundles) a [`Client`] keeps.
pub const MAX_CONFIGS: usize = 64;

/// The system's trusted roots (PEM), read once, for webhooks without a caBundle.
pub const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// How much of a failed answer's body a [`CallError::Status`] keeps.
const ERROR_BODY_LIMIT: usize = 1024;

/// Why a call failed (each is a webhook failure, decided by its failurePolicy). The text is
/// upstream's reason, to follow `failed calling webhook "NAME": `; the strings of `BadUrl`,
/// `Tls`, `Connect` and `Body` are that whole text, the URL (with its `timeout` parameter)
/// included.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The URL is not `https://host[:port][/path]` (without user information or fragment).
    #[error("{0}")]
    BadUrl(String),
    /// The caBundle holds no usable certificate, or the TLS handshake failed.
    #[error("{0}")]
    Tls(String),
    /// The webhook could not be reached, or the connection failed before the answer.
    #[error("{0}")]
    Connect(String),
    /// The call did not end within the timeout.
    #[error("failed to call webhook: Post {url:?}: context deadline exceeded")]
    Timeout {
        /// The URL called (with its `timeout` parameter).
        url: String,
    },
    /// The webhook answered with a status other than success.
    #[error("failed to call webhook: {}", status_message(*.code, .body))]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The start of the answer's body (at most 1 KiB, UTF-8 lossily, trimmed).
        body: String,
    },
    /// The answer's body is larger than the limit.
    #[error("failed to call webhook: the response body exceeds the size limit")]
    TooLarge,
    /// Reading the answer's body failed.
    #[error("{0}")]
    Body(String),
}

/// Upstream's text of a failed answer (apimachinery's `NewGenericServerResponse`, from the
/// body a webhook sent; a Status body's `message` as client-go decodes it).
fn status_message(code: u16, body: &str) -> String {
    if let Some(message) = status_body_message(body) {
        return message;
    }
    let server = if body.is_empty() { "unknown" } else { body };
    match code {
        400 => "the server rejected our request for an unknown reason".to_string(),
        401 => "the server has asked for the client to provide credentials".to_string(),
        403 | 415 => server.to_string(),
        404 => "the server could not find the requested resource".to_string(),
        405 => "the server does not allow this method on the requested resource".to_string(),
        406 if server == "unknown" => {
            "the server was unable to respond with a content type that the client supports"
                .to_string()
        }
        406 => server.to_string(),
        409 => "the server reported a conflict".to_string(),
        422 => "the server rejected our request due to an error in our request".to_string(),
        429 => "the server has received too many requests and has asked us to try again later"
            .to_string(),
        503 => "the server is currently unable to handle the request".to_string(),
        504 => "the server was unable to return a response in the time allotted, but may still \
                be processing the request"
            .to_string(),
        500.. => {
            format!("an error on the server ({server:?}) has prevented the request from succeeding")
        }
        _ => format!(
            "the server responded with the status code {code} but did not return more \
             information"
        ),
    }
}

/// The `message` of a `kind: Status` body.
fn status_body_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    if value.get("kind")?.as_str()? != "Status" {
        return None;
    }
    let message = value.get("message")?.as_str()?;
    (!message.is_empty()).then(|| message.to_string())
}

/// The kept TLS configurations, by the SHA-256 of their caBundle, oldest first.
type Configs = VecDeque<([u8; 32], Arc<ClientConfig>)>;

/// Calls webhooks; cheap to clone (clones share the TLS configurations and idle connections).
#[derive(Clone, Default)]
pub struct Client {
    configs: Arc<Mutex<Configs>>,
    pool: Arc<Pool>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("configs", &self.lock().len())
            .finish()
    }
}

impl Client {
    /// POSTs `body` (JSON) to `url` (`https://host[:port][/path][?query]`, the host a DNS
    /// name or an IP literal, the port 443 by default) with `timeout=<timeout>` added to the
    /// query, trusting `ca_bundle` (PEM, one or more certificates; when empty, the system's
    /// roots: [`SYSTEM_ROOTS`]), and returns the answer's body when its status is a success
    /// (200 to 206, as client-go). The whole call is bounded by `timeout`, the answer's body by
    /// `max_response_bytes`.
    pub async fn post(
        &self,
        url: &str,
        ca_bundle: &[u8],
        body: Vec<u8>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<Vec<u8>, CallError> {
        let target = Target::parse(url, timeout)?;
        let (bundle, config) = self.config(ca_bundle)?;
        let key = (
            target.address.clone(),
            format!("{:?}", target.server_name),
            bundle,
        );
        let called = tokio::time::timeout(
            timeout,
            self.call(&target, key, config, body, max_response_bytes),
        )
        .await;
        match called {
            Ok(result) => result,
            Err(_) => Err(CallError::Timeout { url: target.shown }),
        }
    }

    /// One call on a kept connection to its target, or a new one; unbounded in time (the
    /// caller bounds it). The connection is kept again when its answer was read whole and good.
    async fn call(
        &self,
        target: &Target,
        key: Key,
        config: Arc<ClientConfig>,
        body: Vec<u8>,
        max_response_bytes: usize,
    ) -> Result<Vec<u8>, CallError> {
        let body = Bytes::from(body);
        let mut kept = self.pool.take(&key);
        loop {
            let reused = kept.is_some();
            let mut conn = match kept.take() {
                Some(c) => c,
                None => connect(target, config.clone()).await?,
            };
            match exchange(target, &mut conn, body.clone(), max_response_bytes).await {
                // The webhook closed the kept connection before it took the request: once more
                // on a new one (a new one's failure is final).
                Err(Exchange::Unsent(_)) if reused => continue,
                Err(Exchange::Unsent(e) | Exchange::Failed(e)) => return Err(e),
                Ok(answer) => {
                    self.pool.put(key, conn);
                    return Ok(answer);
                }
            }
        }
    }

    /// The TLS configuration trusting `ca_bundle`, kept or made (and kept), with the SHA-256
    /// of the bundle.
    fn config(&self, ca_bundle: &[u8]) -> Result<([u8; 32], Arc<ClientConfig>), CallError> {
        let key: [u8; 32] = ::ring::digest::digest(&::ring::digest::SHA256, ca_bundle)
            .as_ref()
            .try_into()
            .map_err(|_| CallError::Tls("could not get REST client: SHA-256".to_string()))?;
        if let Some((_, config)) = self.lock().iter().find(|(k, _)| *k == key) {
            return Ok((key, config.clone()));
        }
        let config = tls_config(ca_bundle)
            .map_err(|e| CallError::Tls(format!("could not get REST client: {e}")))?;
        let mut configs = self.lock();
        if !configs.iter().any(|(k, _)| *k == key) {
            if configs.len() >= MAX_CONFIGS {
                configs.pop_front();
            }
            configs.push_back((key, config.clone()));
        }
        Ok((key, config))
    }

    fn lock(&self) -> MutexGuard<'_, Configs> {
        self.configs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A client configuration trusting `ca_bundle` (the system's roots when empty), offering
/// HTTP/1.1 by ALPN.
fn tls_config(ca_bundle: &[u8]) -> Result<Arc<ClientConfig>, String> {
    let roots = if ca_bundle.is_empty() {
        system_roots().clone()
    } else {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_bundle)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
        if certs.is_empty() {
            return Err(
                "unable to load root certificates: unable to parse bytes as PEM block".to_string(),
            );
        }
        let mut roots = RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
        }
        roots
    };
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The system's roots, read once from [`SYSTEM_ROOTS`] (certificates rustls cannot use are
/// skipped); empty without that file.
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        match CertificateDer::pem_file_iter(SYSTEM_ROOTS) {
            Ok(certs) => {
                let (added, skipped) = roots.add_parsable_certificates(certs.map_while(Result::ok));
                tracing::debug!(added, skipped, path = SYSTEM_ROOTS, "webhook system roots");
            }
            Err(e) => {
                tracing::warn!(path = SYSTEM_ROOTS, error = %e, "no system roots for webhooks");
            }
        }
        roots
    })
}

/// Where a call goes, from its URL.
#[derive(Debug)]
struct Target {
    /// The URL called, with its `timeout` parameter, as messages show it.
    shown: String,
    /// The host, without an IPv6 literal's brackets.
    host: String,
    port: u16,
    /// `host:port` as a dial error shows it.
    address: String,
    /// The `Host` header: the URL's authority.
    authority: HeaderValue,
    path_and_query: PathAndQuery,
    server_name: ServerName<'static>,
}

impl Target {
    fn parse(url: &str, timeout: Duration) -> Result<Self, CallError> {
        let bad = |why: &str| CallError::BadUrl(format!("invalid webhook URL {url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("the scheme must be https"))?;
        if !scheme.eq_ignore_ascii_case("https") {
            return Err(bad("the scheme must be https"));
        }
        if rest.contains('#') {
            return Err(bad("fragments are not permitted"));
        }
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains('@') {
            return Err(bad("user information is not permitted"));
        }
        let (host, port, ipv6) = match authority.strip_prefix('[') {
            Some(bracketed) => {
                let (host, after) = bracketed
                    .split_once(']')
                    .ok_or_else(|| bad("unclosed IPv6 literal"))?;
                let port = match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':').ok_or_else(|| bad("invalid port"))?),
                };
                (host, port, true)
            }
            None => match authority.split_once(':') {
                Some((host, port)) => (host, Some(port), false),
                None => (authority, None, false),
            },
        };
        if host.is_empty() {
            return Err(bad("the host is missing"));
        }
        let port = match port {
            None | Some("") => 443,
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p != 0 => p,
                _ => return Err(bad("invalid port")),
            },
        };
        let server_name = if ipv6 {
            let ip: Ipv6Addr = host.parse().map_err(|_| bad("invalid IPv6 literal"))?;
            ServerName::from(IpAddr::V6(ip))
        } else {
            match host.parse::<IpAddr>() {
                Ok(ip) => ServerName::from(ip),
                Err(_) => {
                    ServerName::try_from(host.to_string()).map_err(|_| bad("invalid host"))?
                }
            }
        };
        let mut path = if tail.is_empty() || tail.starts_with('?') {
            format!("/{tail}")
        } else {
            tail.to_string()
        };
        match path.find('?') {
            None => path.push('?'),
            Some(q) if q + 1 < path.len() && !path.ends_with('&') => path.push('&'),
            Some(_) => {}
        }
        path.push_str("timeout=");
        path.push_str(&go_duration(timeout));
        let path_and_query =
            PathAndQuery::try_from(path.as_str()).map_err(|_| bad("invalid path or query"))?;
        let authority_header = HeaderValue::from_str(authority).map_err(|_| bad("invalid host"))?;
        let address = if ipv6 {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Self {
            shown: format!("https://{authority}{path}"),
            host: host.to_string(),
            port,
            address,
            authority: authority_header,
            path_and_query,
            server_name,
        })
    }

    /// Upstream's text of a failure of the request itself: `failed to call webhook: Post
    /// "URL": CAUSE`.
    fn failed(&self, cause: impl fmt::Display) -> String {
        format!("failed to call webhook: Post {:?}: {cause}", self.shown)
    }
}

/// How an exchange on a connection failed.
enum Exchange {
    /// Before the request was taken: the connection was closed (a kept one may have been, by
    /// the webhook, while idle).
    Unsent(CallError),
    /// Anything else.
    Failed(CallError),
}

/// A new connection to `target`, its TLS handshake done.
async fn connect(target: &Target, config: Arc<ClientConfig>) -> Result<Connection, CallError> {
    let tcp = TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| {
            CallError::Connect(target.failed(format_args!("dial tcp {}: {e}", target.address)))
        })?;
    // Best effort: a request is one write.
    let _ = tcp.set_nodelay(true);
    let tls = TlsConnector::from(config)
        .connect(target.server_name.clone(), tcp)
        .await
        .map_err(|e| CallError::Tls(target.failed(format_args!("tls: {}", chain(&e)))))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| CallError::Connect(target.failed(chain(&e))))?;
    let driver = AbortOnDrop(tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %chain(&e), "admission webhook connection");
        }
    }));
    Ok(Connection {
        sender,
        _driver: driver,
    })
}

/// One request and its answer on `conn`.
async fn exchange(
    target: &Target,
    conn: &mut Connection,
    body: Bytes,
    max_response_bytes: usize,
) -> Result<Vec<u8>, Exchange> {
    let failed = Exchange::Failed;
    let sender = &mut conn.sender;
    sender
        .ready()
        .await
        .map_err(|e| Exchange::Unsent(CallError::Connect(target.failed(chain(&e)))))?;
    let length = body.len();
    let request = http::Request::builder()
        .method(Method::POST)
        .uri(Uri::from(target.path_and_query.clone()))
        .header(HOST, target.authority.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .header(CONTENT_LENGTH, length)
        .body(Full::new(body))
        .map_err(|e| failed(CallError::BadUrl(target.failed(e))))?;
    let response = sender.send_request(request).await.map_err(|e| {
        let error = CallError::Connect(target.failed(chain(&e)));
        // hyper cancels a request the connection closed under before writing it.
        if e.is_canceled() {
            Exchange::Unsent(error)
        } else {
            Exchange::Failed(error)
        }
    })?;

    let code = response.status().as_u16();
    if !(200..=206).contains(&code) {
        let body = error_body(response.into_body()).await;
        return Err(failed(CallError::Status { code, body }));
    }
    let body = response.into_body();
    if body.size_hint().lower() > u64::try_from(max_response_bytes).unwrap_or(u64::MAX) {
        return Err(failed(CallError::TooLarge));
    }
    match Limited::new(body, max_response_bytes).collect().await {
        Ok(collected) => Ok(Vec::from(collected.to_bytes())),
        Err(e) if e.is::<LengthLimitError>() => Err(failed(CallError::TooLarge)),
        Err(e) => Err(failed(CallError::Body(target.failed(chain(&*e))))),
    }
}

/// The start of a failed answer's body, for its message.
async fn error_body(mut body: Incoming) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    bytes.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// An error and its causes, `outer: inner`.
fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A duration as Go's `time.Duration.String` writes it (`10s`, `200ms`, `1m30s`), the form
/// client-go gives the `timeout` parameter.
fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", decimal(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", decimal(nanos, 1_000_000));
    }
    let secs = d.as_secs();
    let (h, m) = (secs / 3600, secs / 60 % 60);
    let s = decimal(
        u128::from(secs % 60) * 1_000_000_000 + u128::from(d.subsec_nanos()),
        1_000_000_000,
    );
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / unit` in decimal, without trailing zeros (`unit` a power of ten).
fn decimal(n: u128, unit: u128) -> String {
    let (whole, fraction) = (n / unit, n % unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn bad_urls() {
        let client = Client::default();
        for url in [
            "http://127.0.0.1:8443/validate",
            "https:///validate",
            "https://:8443/validate",
            "127.0.0.1/validate",
            "https://user@host/validate",
            "https://host/validate#fragment",
            "https://host:99999/validate",
            "https://[::1/validate",
        ] {
            let err = client
                .post(url, b"", b"{}".to_vec(), SECOND, 1024)
                .await
                .expect_err(url);
            assert!(matches!(err, CallError::BadUrl(_)), "{url}: {err:?}");
        }
    }

    #[tokio::test]
    async fn bundles_without_certificates() {
        let client = Client::default();
        for bundle in [
            &b"not a certificate"[..],
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        ] {
            let err = client
                .post(
                    "https://127.0.0.1:1/v",
                    bundle,
                    b"{}".to_vec(),
                    SECOND,
                    1024,
                )
                .await
                .expect_err("no certificate");
            assert!(matches!(err, CallError::Tls(_)), "{err:?}");
            assert!(
                err.to_string().starts_with("could not get REST client: "),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn silence_is_a_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        // Accepts and keeps every connection, answering nothing.
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let url = format!("https://{addr}/validate");
        let started = Instant::now();
        let err = Client::default()
            .post(&url, b"", b"{}".to_vec(), Duration::from_millis(200), 1024)
            .await
            .expect_err("no answer");
        assert!(started.elapsed() < 2 * SECOND, "{:?}", started.elapsed());
        assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "failed to call webhook: Post \"https://{addr}/validate?timeout=200ms\": \
                 context deadline exceeded"
            )
        );
        silent.abort();
    }

    #[test]
    fn targets() {
        let t = Target::parse("https://webhook.example:8443/validate", 10 * SECOND).expect("valid");
        assert_eq!(t.shown, "https://webhook.example:8443/validate?timeout=10s");
        assert_eq!(t.path_and_query.as_str(), "/validate?timeout=10s");
        assert_eq!((t.host.as_str(), t.port), ("webhook.example", 8443));
        assert!(matches!(t.server_name, ServerName::DnsName(_)));

        let t = Target::parse("https://10.0.0.1?a=b", 5 * SECOND).expect("valid");
        assert_eq!(t.path_and_query.as_str(), "/?a=b&timeout=5s");
        assert_eq!(t.port, 443);
        assert!(matches!(t.server_name, ServerName::IpAddress(_)));

        let t = Target::parse("https://[::1]:9443/v?", 30 * SECOND).expect("valid");
        assert_eq!(t.host, "::1");
        assert_eq!(t.address, "[::1]:9443");
        assert_eq!(t.authority, "[::1]:9443");
        assert_eq!(t.path_and_query.as_str(), "/v?timeout=30s");
        assert!(matches!(t.server_name, ServerName::IpAddress(_)));
    }

    #[test]
    fn durations_as_go_writes_them() {
        assert_eq!(go_duration(10 * SECOND), "10s");
        assert_eq!(go_duration(Duration::from_millis(200)), "200ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(90 * SECOND), "1m30s");
        assert_eq!(go_duration(3600 * SECOND), "1h0m0s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn status_messages() {
        let text = |code, body: &str| {
            CallError::Status {
                code,
                body: body.to_string(),
            }
            .to_string()
        };
        assert_eq!(
            text(404, ""),
            "failed to call webhook: the server could not find the requested resource"
        );
        assert_eq!(
            text(500, "boom"),
            "failed to call webhook: an error on the server (\"boom\") has prevented the \
             request from succeeding"
        );
        assert_eq!(
            text(418, ""),
            "failed to call webhook: the server responded with the status code 418 but did not \
             return more information"
        );
        assert_eq!(
            text(500, r#"{"kind":"Status","message":"denied by policy"}"#),
            "failed to call webhook: denied by policy"
        );
    }
}
