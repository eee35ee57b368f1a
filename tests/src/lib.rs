//! Test harness for kubestore: a real etcd process, storage-svc and registry-svc, each started
//! on free loopback ports and stopped when the test's handles drop.
//!
//! - [`etcd::EtcdProcess`]: Debian's `etcd` with a temp data dir. If the binary is missing the
//!   test fails with a message saying how to install it; it never skips.
//! - [`services`]: each service runs on its own tokio runtime and threads, optionally with its
//!   own `tracing` dispatcher, so one test process can hold several services whose spans are
//!   exported under different service names, as separate processes would.
//! - [`otlp`]: an in-process OTLP/gRPC trace receiver (a real `TraceService/Export` server).
//! - [`update`]: drives a storage GuaranteedUpdate stream from a closure.
//! - [`raw`]: calls with raw bytes (malformed messages, made-up methods), and this process's RSS.
//! - [`mutate`]: a deterministic generator and byte mutator, and the fuzz seed corpus.
//! - [`watch_gate`]: a proxy in front of storage-svc that holds back watch streams on demand.
//! - [`fixtures_gc`]: controller-managers (in process, or the real binary) for the garbage
//!   collector's tests.
//! - [`rest`]: registry-svc's REST API spoken by hand (HTTP/1.1 on raw streams).
//! - [`processes`]: storage-svc and registry-svc as processes of their own (their memory
//!   measured apart from the test's).
//! - [`kube`]: the real Kubernetes clients (kubectl 1.29, 1.33, 1.37 and the Python client)
//!   against registry-svc's REST API, with a kubeconfig, a node agent and a controller-manager.

pub mod etcd;
pub mod fixtures_custom;
pub mod fixtures_gc;
pub mod fixtures_rbac;
pub mod fixtures_registry;
pub mod fixtures_storage;
pub mod fixtures_watch;
pub mod kube;
pub mod mutate;
pub mod otlp;
pub mod pki;
pub mod processes;
pub mod proxy;
pub mod raw;
pub mod request_seeds;
pub mod rest;
pub mod services;
pub mod update;
pub mod watch_cache;
pub mod watch_gate;

pub use etcd::EtcdProcess;
pub use services::{Cluster, ClusterOptions};

/// The `google.rpc.ErrorInfo` reason of a status ("" without one).
pub fn reason(s: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    s.get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

/// Asserts every field of `sent` is in `got` with the same value (lists item by item, of the
/// same length): what a server stores carries what it was sent, with its own fields and
/// defaults added. `at` names the value in the failure.
#[track_caller]
pub fn assert_carried(sent: &serde_json::Value, got: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match sent {
        Value::Object(m) => {
            for (k, v) in m {
                assert_carried(v, &got[k], &format!("{at}.{k}"));
            }
        }
        Value::Array(a) => {
            let g = got.as_array().unwrap_or_else(|| panic!("{at}: {got}"));
            assert_eq!(a.len(), g.len(), "{at}: {got}");
            for (i, (s, g)) in a.iter().zip(g).enumerate() {
                assert_carried(s, g, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(sent, got, "{at}"),
    }
}

/// The `kubestore` binary of this build (`target/<profile>/kubestore`, next to the test's
/// `deps/` directory), for tests that run it as a process. `scripts/test.sh` builds it first
/// (`cargo build --bins`); missing, the test fails saying so.
pub fn kubestore_binary() -> std::path::PathBuf {
    processes::binary("kubestore")
}

/// What one run of the `kubestore` binary printed.
#[derive(Debug)]
pub struct CliRun {
    /// Whether it exited 0.
    pub ok: bool,
    /// Standard output, trailing whitespace trimmed.
    pub stdout: String,
    /// Standard error, trailing whitespace trimmed.
    pub stderr: String,
}

/// Runs `kubestore --registry URL ARGS...` as a user runs it, with `env` set (and no
/// `$EDITOR` of the test's own), off the test's runtime threads.
pub async fn kubestore(url: &str, args: &[&str], env: &[(&str, &str)]) -> CliRun {
    let mut cmd = std::process::Command::new(kubestore_binary());
    cmd.arg("--registry").arg(url).args(args);
    cmd.env_remove("KUBE_EDITOR").env_remove("EDITOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("joins")
        .expect("kubestore runs");
    CliRun {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
    }
}
