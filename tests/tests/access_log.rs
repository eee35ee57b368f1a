//! One access-log line per served call at `info` (target `kubestore::access`): method, gRPC
//! code, duration, peer and trace id, as a newcomer reads them with `RUST_LOG=info`.

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kubestore_proto::core::v1::GetConfigMapRequest;
use kubestore_tests::Cluster;

/// Log output kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        self.0
            .lock()
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_served_call_logs_one_line_at_info() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_env_filter("kubestore::access=info")
        .with_writer(move || writer.clone())
        .finish();
    // The process-wide default: every thread of both services logs here (this test binary runs
    // this one test), as a service's own process logs to its stderr.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let cluster = Cluster::full().await;
    let e = cluster
        .config_maps()
        .await
        .get(GetConfigMapRequest {
            namespace: "default".into(),
            name: "missing".into(),
        })
        .await
        .expect_err("missing");
    assert_eq!(e.code(), tonic::Code::NotFound);
    let until = Instant::now() + Duration::from_secs(5);
    let line = loop {
        let text = log.text();
        if let Some(l) = text
            .lines()
            .find(|l| l.contains("method=/core.v1.ConfigMaps/Get"))
        {
            break l.to_string();
        }
        assert!(Instant::now() < until, "no access line: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains("kubestore::access"), "{line}");
    assert!(line.contains(r#"code="NOT_FOUND""#), "{line}");
    assert!(line.contains("duration_ms="), "{line}");
    assert!(line.contains("peer=127.0.0.1:"), "{line}");
    assert!(line.contains("trace_id="), "{line}");
    let calls = log
        .text()
        .lines()
        .filter(|l| l.contains("method=/core.v1.ConfigMaps/Get"))
        .count();
    assert_eq!(calls, 1, "one line per call");
}
