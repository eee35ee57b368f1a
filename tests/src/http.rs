//! HTTP/1.1 by hand against the REST API: requests written as bytes and responses read off
//! the wire, for tests that need what a client library hides (a body that never comes, a
//! response left unread, a connection from a chosen source address, the raw headers).

use std::{net::SocketAddr, time::Duration};

use serde_json::Value;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpSocket, TcpStream},
};

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
    /// The body as JSON.
    #[track_caller]
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
        self.headers(name).into_iter().next()
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(2000)]);
        let head = &self.head[..self.head.len().min(4000)];
        write!(f, "\n{head}\n\n{body}")
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The data of a chunked body received so far, and whether its last chunk came.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
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
fn complete(buf: &[u8], eof: bool) -> Option<Reply> {
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

/// Sends `req` on `s` and reads the response (at most 60 s).
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    req: &[u8],
) -> std::io::Result<Reply> {
    s.write_all(req).await?;
    s.flush().await?;
    tokio::time::timeout(Duration::from_secs(60), read_reply(s))
        .await
        .map_err(|_| std::io::Error::other("no response within 60 s"))?
}

/// A connection to `api` from the loopback address `from` (`127.0.0.N`: each is a client
/// address of its own).
pub async fn connect_from(from: [u8; 4], api: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((from, 0)))?;
    socket.connect(api).await
}

/// One request on a connection of its own.
pub async fn call(
    api: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(api)
        .await
        .expect("connect to the REST API");
    exchange(&mut s, &request(method, path, headers, body))
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// `Content-Type: application/json`.
pub const JSON: (&str, &str) = ("Content-Type", "application/json");
