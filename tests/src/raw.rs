//! Calls with raw request bytes (to send what no generated client would: malformed messages,
//! made-up methods), and the memory of this test process.

use bytes::{Buf, BufMut};
use tonic::{
    Request, Status,
    codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
    transport::Channel,
};

/// A codec that sends and receives bytes as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

/// Encoder/decoder of [`RawCodec`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RawBytes;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawBytes;
    type Decoder = RawBytes;
    fn encoder(&mut self) -> RawBytes {
        RawBytes
    }
    fn decoder(&mut self) -> RawBytes {
        RawBytes
    }
}

impl Encoder for RawBytes {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        buf.put_slice(&item);
        Ok(())
    }
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

impl Decoder for RawBytes {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// A ready client and the parsed method path.
async fn ready(
    channel: Channel,
    path: &str,
) -> Result<(tonic::client::Grpc<Channel>, http::uri::PathAndQuery), Status> {
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(64 << 20);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::try_from(path)
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    Ok((grpc, path))
}

/// Calls the unary method at `path` (`/package.Service/Method`) with `body` as the request.
pub async fn call(channel: Channel, path: &str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let (mut grpc, path) = ready(channel, path).await?;
    grpc.unary(Request::new(body), path, RawCodec)
        .await
        .map(|r| r.into_inner())
}

/// Opens a call to `path` that sends its headers and never a request message (its request
/// stream never yields), with `grpc-timeout` = `timeout` when given, and returns the status it
/// ends with (from the call itself, or from its response stream).
pub async fn stalled_upload(
    channel: Channel,
    path: &str,
    timeout: Option<std::time::Duration>,
) -> Status {
    let (mut grpc, path) = match ready(channel, path).await {
        Ok(r) => r,
        Err(s) => return s,
    };
    let mut req = Request::new(tokio_stream::pending::<Vec<u8>>());
    if let Some(t) = timeout {
        req.set_timeout(t);
    }
    match grpc.streaming(req, path, RawCodec).await {
        Err(s) => s,
        Ok(r) => {
            let mut stream = r.into_inner();
            loop {
                match stream.message().await {
                    Ok(Some(_)) => {}
                    Ok(None) => return Status::ok("the stream ended"),
                    Err(s) => return s,
                }
            }
        }
    }
}

/// What a streaming call did before it ended or went quiet (a healthy watch goes quiet; it does
/// not end).
#[derive(Debug, Clone, Copy)]
pub struct Streamed {
    /// Messages received.
    pub messages: usize,
    /// Whether the server ended the stream (rather than staying quiet for the allowed time).
    pub ended: bool,
}

/// How a streaming call ended for [`server_streaming`] and [`streaming`]: the first error (at
/// the call or in the stream), or what it did.
pub type StreamOutcome = Result<Streamed, Status>;

/// Opens the server-streaming method at `path` with `body`, and reads messages until the stream
/// ends, fails, or stays quiet for `quiet`.
pub async fn server_streaming(
    channel: Channel,
    path: &str,
    body: Vec<u8>,
    quiet: std::time::Duration,
) -> StreamOutcome {
    let (mut grpc, path) = ready(channel, path).await?;
    let stream = grpc
        .server_streaming(Request::new(body), path, RawCodec)
        .await?
        .into_inner();
    drain(stream, quiet).await
}

/// Calls the bidirectional method at `path`, sending `messages` and then closing its side, and
/// reads replies as [`server_streaming`] does.
pub async fn streaming(
    channel: Channel,
    path: &str,
    messages: Vec<Vec<u8>>,
    quiet: std::time::Duration,
) -> StreamOutcome {
    let (mut grpc, path) = ready(channel, path).await?;
    let stream = grpc
        .streaming(Request::new(tokio_stream::iter(messages)), path, RawCodec)
        .await?
        .into_inner();
    drain(stream, quiet).await
}

async fn drain(mut stream: tonic::Streaming<Vec<u8>>, quiet: std::time::Duration) -> StreamOutcome {
    let mut messages = 0;
    loop {
        match tokio::time::timeout(quiet, stream.message()).await {
            Err(_) => {
                return Ok(Streamed {
                    messages,
                    ended: false,
                });
            }
            Ok(Ok(None)) => {
                return Ok(Streamed {
                    messages,
                    ended: true,
                });
            }
            Ok(Ok(Some(_))) => messages += 1,
            Ok(Err(e)) => return Err(e),
        }
    }
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// This process's current resident set, in MiB.
pub fn rss_mib() -> u64 {
    status_kib("VmRSS:") / 1024
}

/// This process's peak resident set since [`reset_peak_rss`], in MiB.
pub fn peak_rss_mib() -> u64 {
    status_kib("VmHWM:") / 1024
}

/// Resets the peak resident set to the current one (`/proc/self/clear_refs`).
pub fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS");
}
