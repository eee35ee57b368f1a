//! The services as child processes of the benchmark (the benchmark binary itself in
//! `serve-storage` / `serve-registry` mode), so that each has its own RSS and its own telemetry
//! configured from the environment, exactly as the real binaries.

use std::{
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

/// A running service process; killed on drop.
pub(crate) struct ServiceProcess {
    pub(crate) name: &'static str,
    child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) metrics: SocketAddr,
}

/// A free loopback port.
pub(crate) fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

impl ServiceProcess {
    /// Starts `serve-<name>` with `args` and `env`, and waits until it is SERVING.
    pub(crate) async fn start(
        name: &'static str,
        args: &[String],
        env: &[(String, String)],
    ) -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut cmd = Command::new(exe);
        cmd.arg(format!("serve-{name}"));
        Self::spawn(name, cmd, args, env).await
    }

    /// Starts the service binary `<dir>/<name>-svc` (another build's, e.g. the previous
    /// release's) with `args`, and waits until it is SERVING.
    pub(crate) async fn start_binary(name: &'static str, dir: &Path, args: &[String]) -> Self {
        let exe = dir.join(format!("{name}-svc"));
        assert!(exe.is_file(), "no service binary at {}", exe.display());
        Self::spawn(name, Command::new(exe), args, &[]).await
    }

    async fn spawn(
        name: &'static str,
        mut cmd: Command,
        args: &[String],
        env: &[(String, String)],
    ) -> Self {
        let addr = free_addr();
        let metrics = free_addr();
        cmd.arg("--listen-addr")
            .arg(addr.to_string())
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn service");
        crate::cpu::watch(name, child.id());
        let me = Self {
            name,
            child,
            addr,
            metrics,
        };
        kubestore_tests::services::wait_serving(&me.url()).await;
        me
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// (current RSS, peak RSS) in MiB, from /proc.
    pub(crate) fn rss_mib(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kib = |field: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
    }

    /// Resets the process's peak RSS to its current RSS (`/proc/PID/clear_refs`), so that a
    /// later [`rss_mib`](Self::rss_mib) peak measures one scenario.
    pub(crate) fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }

    /// SIGTERM, then wait (so spans are flushed), then kill.
    pub(crate) async fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
