//! registry-svc's Kubernetes REST API spoken by hand, for the tests real clients cannot
//! write: HTTP/1.1 requests written byte by byte on a raw TCP (or TLS) stream and responses
//! read off it (a chunked body de-chunked), the ConfigMaps of `default` as the usual subject,
//! upstream's `Status` checked, and connections watched until the server closes them.

use std::{
    future::Future,
    net::SocketAddr,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
};

use crate::kube::KubeCluster;

/// The ConfigMaps of `default`.
pub const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A response read off the wire (a chunked body is de-chunked).
pub struct Reply {
    /// The status code.
    pub code: u16,
    /// The status line and headers.
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (panics, showing the response, when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self}"))
    }
    /// Asserts the status code.
    #[track_caller]
    pub fn is(self, code: u16) -> Self {
        assert_eq!(self.code, code, "{self}");
        self
    }

    /// The values of header `name`, in order.
    pub fn headers(&self, name: &str) -> Vec<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
            .collect()
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.head, name)
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(2000)]);
        let head = &self.head[..self.head.len().min(4000)];
        write!(f, "\n{head}\n\n{body}")
    }
}

/// The value of the header `name` in `head` (the first, case-insensitively).
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Where `needle` first occurs in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The data of a chunked body received so far, and whether its last chunk came.
pub fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    while let Some(eol) = find(raw, b"\r\n") {
        let line = String::from_utf8_lossy(&raw[..eol]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
        if size == 0 {
            return (out, true);
        }
        if raw.len() < eol + 2 + size + 2 {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
    (out, false)
}

/// The response in `buf` once it is whole (`eof`: the connection has ended).
pub fn complete(buf: &[u8], eof: bool) -> Option<Reply> {
    let end = find(buf, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let code = head.split(' ').nth(1)?.parse().ok()?;
    let raw = &buf[end + 4..];
    let body = if code == 304 {
        Vec::new()
    } else if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let (body, done) = dechunk(raw);
        done.then_some(body)?
    } else if let Some(len) = header(&head, "content-length").and_then(|v| v.parse().ok()) {
        (raw.len() >= len).then(|| raw[..len].to_vec())?
    } else {
        eof.then(|| raw.to_vec())?
    };
    Some(Reply { code, head, body })
}

/// Reads one whole response.
pub async fn read_reply<S: AsyncRead + Unpin>(s: &mut S) -> std::io::Result<Reply> {
    let (mut buf, mut chunk) = (Vec::new(), vec![0u8; 64 << 10]);
    loop {
        if let Some(r) = complete(&buf, false) {
            return Ok(r);
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return complete(&buf, true).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("connection ended after {} bytes", buf.len()),
                )
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// An HTTP/1.1 request (`Connection: close`; a `Content-Length` when it has a body).
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        r.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Sends `req` on `s` and reads the response (at most 20 s).
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    req: &[u8],
) -> std::io::Result<Reply> {
    s.write_all(req).await?;
    s.flush().await?;
    tokio::time::timeout(Duration::from_secs(20), read_reply(s))
        .await
        .map_err(|_| std::io::Error::other("no response within 20 s"))?
}

/// One request on a connection of its own.
pub async fn call(
    api: SocketAddr,
    method: &str,
    path: &str,
    hdrs: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(api)
        .await
        .expect("connect to the REST API");
    exchange(&mut s, &request(method, path, hdrs, body))
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// `Content-Type: application/json`.
pub const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A ConfigMap `name` whose `data.blob` is `blob` bytes, as JSON.
pub fn config_map(name: &str, blob: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"blob": "x".repeat(blob)},
    }))
    .expect("JSON")
}

/// POSTs [`config_map`]`(name, blob)` to [`CMS`].
pub async fn post(api: SocketAddr, name: &str, blob: usize) -> Reply {
    call(api, "POST", CMS, &[JSON], &config_map(name, blob)).await
}

/// GETs `path`.
pub async fn get(api: SocketAddr, path: &str) -> Reply {
    call(api, "GET", path, &[], b"").await
}

/// Polls `check` every 50 ms until it holds; panics with `what` after `within`.
pub async fn wait_until<F: Future<Output = bool>>(
    within: Duration,
    what: &str,
    check: impl Fn() -> F,
) {
    let until = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < until, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens a watch of the ConfigMaps of `default` on `s`: its response head, and what came after.
pub async fn open_watch(s: &mut TcpStream) -> (String, Vec<u8>) {
    open_stream(s, &format!("{CMS}?watch=1")).await
}

/// Sends a GET of `path` on `s` and reads until its response head is whole (10 s at most,
/// and it must be a 200): the head, and what came after it (the start of a chunked body).
pub async fn open_stream(s: &mut TcpStream, path: &str) -> (String, Vec<u8>) {
    let req = request("GET", path, &[], b"");
    s.write_all(&req).await.expect("write");
    let (mut got, mut buf) = (Vec::new(), vec![0u8; 4096]);
    while find(&got, b"\r\n\r\n").is_none() {
        let read = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await;
        let n = read.expect("the stream answers").expect("read");
        assert!(n > 0, "the stream ended at once");
        got.extend_from_slice(&buf[..n]);
    }
    let rest = got.split_off(find(&got, b"\r\n\r\n").expect("head") + 4);
    let head = String::from_utf8_lossy(&got).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    (head, rest)
}

/// Reads `s` (the rest of a chunked body, `raw` what came so far) until the body ends, `within`
/// at most: the JSON lines of the body (a watch's events). Panics if the connection ends first.
pub async fn read_lines_to_end(
    s: &mut TcpStream,
    mut raw: Vec<u8>,
    within: Duration,
) -> Vec<Value> {
    let mut buf = vec![0u8; 64 << 10];
    tokio::time::timeout(within, async {
        while !dechunk(&raw).1 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => panic!("the connection ended before the body did"),
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the body ended in time");
    lines(&dechunk(&raw).0)
}

/// Reads `s` (the rest of a chunked body, `raw` what came so far) until the body holds `n`
/// whole lines (`within` at most): the first `n`, as JSON (a watch's first events).
pub async fn first_lines(
    s: &mut TcpStream,
    raw: &mut Vec<u8>,
    n: usize,
    within: Duration,
) -> Vec<Value> {
    let mut buf = vec![0u8; 64 << 10];
    let until = Instant::now() + within;
    loop {
        let (body, _) = dechunk(raw);
        let whole: Vec<&[u8]> = body.split_inclusive(|b| *b == b'\n').collect();
        let complete: Vec<&[u8]> = whole.into_iter().filter(|l| l.ends_with(b"\n")).collect();
        if complete.len() >= n {
            return lines(&complete[..n].concat());
        }
        let read = tokio::time::timeout_at(until.into(), s.read(&mut buf)).await;
        let got = read.unwrap_or_else(|_| {
            panic!(
                "{} of {n} lines within {within:?}: {}",
                complete.len(),
                String::from_utf8_lossy(&body)
            )
        });
        match got {
            Ok(0) | Err(_) => panic!("the stream ended: {}", String::from_utf8_lossy(&body)),
            Ok(k) => raw.extend_from_slice(&buf[..k]),
        }
    }
}

/// The JSON values of a body of one value per line.
pub fn lines(body: &[u8]) -> Vec<Value> {
    body.split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| serde_json::from_slice(l).expect("a JSON value per line"))
        .collect()
}

/// registry-svc's `/metrics` address.
pub fn metrics_addr(kube: &KubeCluster) -> SocketAddr {
    kube.cluster
        .registry
        .as_ref()
        .expect("registry")
        .metrics_addr
}

/// `reply` is a `Status` of `code` and `reason`; returns it.
#[track_caller]
pub fn assert_status(reply: &Reply, code: u16, reason: &str) -> Value {
    assert_eq!(reply.code, code, "{reply}");
    let json = header(&reply.head, "content-type").is_some_and(|c| c.contains("json"));
    assert!(json, "{reply}");
    let s = reply.json();
    assert_eq!(s["kind"], "Status", "{reply}");
    assert_eq!(s["apiVersion"], "v1", "{reply}");
    assert_eq!(s["status"], "Failure", "{reply}");
    assert_eq!(s["code"], code, "{reply}");
    assert_eq!(s["reason"], reason, "{reply}");
    s
}

/// Reads `s` until the peer closes it (EOF or reset) or `within` passes: when it closed, and
/// what came before.
pub async fn wait_closed(s: &mut TcpStream, within: Duration) -> (Option<Duration>, Vec<u8>) {
    let (start, mut got, mut buf) = (Instant::now(), Vec::new(), vec![0u8; 16 << 10]);
    loop {
        match tokio::time::timeout_at((start + within).into(), s.read(&mut buf)).await {
            Err(_) => return (None, got),
            Ok(Ok(0) | Err(_)) => return (Some(start.elapsed()), got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A connection to `api` from the loopback address `from` (`127.0.0.N`: each is a client
/// address of its own).
pub async fn connect_from(from: [u8; 4], api: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((from, 0)))?;
    socket.connect(api).await
}
