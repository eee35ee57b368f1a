//! storage-svc and registry-svc as processes of their own (the binaries of this build, as a
//! user runs them), for tests that measure what one client costs the server: its memory
//! (`/proc/PID/status`) must not be the test process's, where every other test's allocations
//! mix in.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::etcd::{EtcdProcess, free_port};

/// Where [`binary`] looks instead of this build's directory, when set: the tests of a tree
/// run against another build (an earlier commit's, to see a test fail without its fix).
pub const BIN_DIR_ENV: &str = "KUBESTORE_TEST_BIN_DIR";

/// A binary of this build (`target/<profile>/NAME`, beside the test's `deps/`), or of
/// [`BIN_DIR_ENV`]: built by `cargo build --bins` (`scripts/test.sh` does); missing, the test
/// fails saying so.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(d) => PathBuf::from(d),
        None => exe
            .parent()
            .and_then(|deps| deps.parent())
            .map(PathBuf::from)
            .expect("target directory"),
    };
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build --bins` (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// A child process, killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// etcd, then storage-svc and registry-svc as processes; registry-svc serves the REST API.
/// Dropped: the services are killed, then etcd.
pub struct ProcessCluster {
    registry: Killed,
    _storage: Killed,
    /// etcd.
    pub etcd: EtcdProcess,
    /// registry-svc's gRPC URL.
    pub grpc: String,
    /// registry-svc's REST API.
    pub api: SocketAddr,
    /// registry-svc's `/metrics`.
    pub metrics: SocketAddr,
}

impl ProcessCluster {
    /// Starts the three, registry-svc with `registry_args` besides its addresses, and waits
    /// until its REST API is ready.
    pub async fn start(registry_args: &[&str]) -> Self {
        let etcd = EtcdProcess::start().await;
        let storage_addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let storage = Command::new(binary("storage-svc"))
            .args([
                "--listen-addr",
                &storage_addr.to_string(),
                "--etcd-endpoints",
                &etcd.endpoint(),
                "--watch-cache",
                if crate::services::watch_cache_on() {
                    "true"
                } else {
                    "false"
                },
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start storage-svc");
        let storage = Killed(storage);
        let grpc_addr: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let api: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let metrics: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let registry = Command::new(binary("registry-svc"))
            .args([
                "--listen-addr",
                &grpc_addr.to_string(),
                "--storage-addr",
                &format!("http://{storage_addr}"),
                "--kube-api-addr",
                &api.to_string(),
                "--metrics-addr",
                &metrics.to_string(),
            ])
            .args(registry_args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("start registry-svc");
        let c = Self {
            registry: Killed(registry),
            _storage: storage,
            etcd,
            grpc: format!("http://{grpc_addr}"),
            api,
            metrics,
        };
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((200, body)) = crate::kube::http_get(api, "/readyz").await
                && body == "ok"
            {
                break;
            }
            assert!(
                Instant::now() < until,
                "registry-svc's /readyz never answered ok"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        crate::services::wait_system_namespaces(&c.grpc).await;
        c
    }

    /// registry-svc's process id.
    pub fn pid(&self) -> u32 {
        self.registry.0.id()
    }

    /// registry-svc's resident memory now, in bytes.
    pub fn rss(&self) -> u64 {
        status_kib(self.pid(), "VmRSS") * 1024
    }

    /// registry-svc's peak resident memory since the last [`Self::reset_peak`], in bytes.
    pub fn peak_rss(&self) -> u64 {
        status_kib(self.pid(), "VmHWM") * 1024
    }

    /// Starts registry-svc's peak count afresh, at its resident memory now (Linux's
    /// `clear_refs` 5).
    pub fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5")
            .expect("reset the peak resident memory");
    }

    /// Whether registry-svc is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.registry.0.try_wait(), Ok(None))
    }
}

/// A `kB` field of `/proc/PID/status`.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// The 99th percentile of `samples` (None when there are none).
pub fn p99(samples: &mut [Duration]) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    samples.sort();
    let i = (samples.len() * 99).div_ceil(100).saturating_sub(1);
    Some(samples[i])
}
