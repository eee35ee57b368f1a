//! An in-process OTLP/gRPC trace receiver: a real `opentelemetry.proto.collector.trace.v1.
//! TraceService/Export` server that keeps every span it receives.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::{AnyValue, any_value},
    trace::v1::Span,
};
use tokio_stream::wrappers::TcpListenerStream;

/// One received span with the service that exported it.
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    /// `service.name` of the exporting resource.
    pub service: String,
    /// The span.
    pub span: Span,
}

impl ReceivedSpan {
    /// Hex trace id.
    pub fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }
    /// Hex span id.
    pub fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }
    /// Hex parent span id ("" for a root).
    pub fn parent_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }
    /// A string or integer attribute, as a string.
    pub fn attr(&self, key: &str) -> Option<String> {
        self.span
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(value_str)
    }
    /// An attribute exported as an integer (not a string that reads as one).
    pub fn int(&self, key: &str) -> Option<i64> {
        self.value(key).and_then(|v| match v {
            any_value::Value::IntValue(i) => Some(*i),
            _ => None,
        })
    }
    /// An attribute exported as a boolean.
    pub fn boolean(&self, key: &str) -> Option<bool> {
        self.value(key).and_then(|v| match v {
            any_value::Value::BoolValue(b) => Some(*b),
            _ => None,
        })
    }
    fn value(&self, key: &str) -> Option<&any_value::Value> {
        self.span
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.as_ref())
    }
    /// Names of the span's events.
    pub fn events(&self) -> Vec<String> {
        self.span.events.iter().map(|e| e.name.clone()).collect()
    }
}

fn value_str(v: &AnyValue) -> Option<String> {
    match v.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut out = self
            .spans
            .lock()
            .map_err(|_| tonic::Status::internal("poisoned"))?;
        for rs in request.into_inner().resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
                .and_then(|kv| kv.value.as_ref())
                .and_then(value_str)
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    out.push(ReceivedSpan {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// The running receiver.
pub struct OtlpReceiver {
    /// Where to export (`http://127.0.0.1:<port>`).
    pub endpoint: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
    /// Address it listens on.
    pub addr: SocketAddr,
}

impl OtlpReceiver {
    /// Starts the receiver on the current runtime.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind OTLP port");
        let addr = listener.local_addr().expect("addr");
        let receiver = Receiver::default();
        let spans = receiver.spans.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(receiver))
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            endpoint: format!("http://{addr}"),
            spans,
            _stop: stop,
            addr,
        }
    }

    /// Everything received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until `pred` holds for the spans received (at most `timeout`).
    pub async fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let start = std::time::Instant::now();
        loop {
            let spans = self.spans();
            if pred(&spans) || start.elapsed() > timeout {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
