//! A real etcd server for one test, or a cluster of three on loopback (issue 10's failover
//! tests): separate data dirs, free ports, each member killed on drop.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A running `etcd` on loopback ports with its own data dir; killed on drop.
pub struct EtcdProcess {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// The data dir (inside `dir`).
    data: PathBuf,
    /// Whether it has answered once (a restart then keeps its ports).
    started: bool,
    client_port: u16,
    peer_port: u16,
    extra_args: Vec<String>,
    /// Member name.
    name: String,
    /// `--initial-cluster`: every member's `name=peer URL`.
    initial_cluster: String,
    /// Client TLS: etcd's own certificate, and the CA and client certificate our clients use.
    tls: Option<EtcdTls>,
}

/// TLS files of an etcd serving https with `--client-cert-auth`.
#[derive(Clone, Debug)]
pub struct EtcdTls {
    /// CA of both etcd's certificate and the client certificates it accepts.
    pub ca: PathBuf,
    /// etcd's server certificate and key.
    pub server: crate::pki::Issued,
    /// The certificate and key the test's own clients present.
    pub client: crate::pki::Issued,
}

impl EtcdTls {
    fn options(&self) -> etcd_client::ConnectOptions {
        let read = |p: &PathBuf| std::fs::read(p).expect("read TLS file");
        etcd_client::ConnectOptions::new().with_tls(
            etcd_client::TlsOptions::new()
                .ca_certificate(etcd_client::Certificate::from_pem(read(&self.ca)))
                .identity(etcd_client::Identity::from_pem(
                    read(&self.client.cert),
                    read(&self.client.key),
                )),
        )
    }
}

/// A free loopback port (bound then released; the kernel does not hand it out again at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("cannot bind a loopback port")
}

fn etcd_binary() -> PathBuf {
    let path = std::env::var_os("ETCD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("etcd"));
    match Command::new(&path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => path,
        _ => panic!(
            "etcd is required by this test and was not found ({}). Install it with \
             `apt-get install -y etcd-server` or set ETCD_BIN; tests never skip.",
            path.display()
        ),
    }
}

impl EtcdProcess {
    /// Starts etcd and waits until it answers.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts etcd with extra command-line flags (e.g. `--quota-backend-bytes`).
    pub async fn start_with(extra_args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for etcd");
        let peer_port = free_port();
        let mut me = Self {
            child: None,
            dir,
            client_port: free_port(),
            peer_port,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            name: "test".into(),
            initial_cluster: format!("test=http://127.0.0.1:{peer_port}"),
            tls: None,
            data: PathBuf::new(),
            started: false,
        };
        me.data = me.dir.path().join("data");
        me.spawn().await;
        me
    }

    /// Starts etcd serving its clients over TLS, requiring client certificates signed by
    /// `tls.ca` (`--client-cert-auth`).
    pub async fn start_tls(tls: EtcdTls) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for etcd");
        let peer_port = free_port();
        let path = |p: &PathBuf| p.display().to_string();
        let mut me = Self {
            child: None,
            dir,
            client_port: free_port(),
            peer_port,
            extra_args: vec![
                "--cert-file".into(),
                path(&tls.server.cert),
                "--key-file".into(),
                path(&tls.server.key),
                "--client-cert-auth".into(),
                "--trusted-ca-file".into(),
                path(&tls.ca),
            ],
            name: "test".into(),
            initial_cluster: format!("test=http://127.0.0.1:{peer_port}"),
            tls: Some(tls),
            data: PathBuf::new(),
            started: false,
        };
        me.data = me.dir.path().join("data");
        me.spawn().await;
        me
    }

    /// Starts a cluster of `n` members and waits until each answers (members start together:
    /// none answers before a quorum runs).
    pub async fn start_cluster(n: usize) -> Vec<Self> {
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members: Vec<Self> = ports
            .into_iter()
            .enumerate()
            .map(|(i, (client_port, peer_port))| {
                let dir = tempfile::tempdir().expect("temp dir for etcd");
                Self {
                    child: None,
                    data: dir.path().join("data"),
                    started: true,
                    dir,
                    client_port,
                    peer_port,
                    extra_args: vec!["--initial-cluster-token".into(), "kubestore-test".into()],
                    name: format!("m{i}"),
                    initial_cluster: initial_cluster.clone(),
                    tls: None,
                }
            })
            .collect();
        for m in &mut members {
            m.launch();
        }
        for m in &mut members {
            if let Err(e) = m.wait_ready().await {
                panic!("{e}");
            }
        }
        members
    }

    /// This member's ID and its leader's, from its status.
    pub async fn status(&self) -> Option<(u64, u64)> {
        let mut c = etcd_client::Client::connect([self.endpoint()], None)
            .await
            .ok()?;
        let s = tokio::time::timeout(Duration::from_secs(2), c.status())
            .await
            .ok()?
            .ok()?;
        Some((s.header()?.member_id(), s.leader()))
    }

    /// Whether this member runs.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts etcd and waits until it answers. A single member that exits during start-up
    /// (most often: a free port taken by another test between `free_port` and etcd's bind)
    /// is started again on fresh ports with a fresh data dir, twice at most, unless it was
    /// started before (a restart keeps its ports: clients hold its endpoint).
    async fn spawn(&mut self) {
        let fresh = !self.started;
        for attempt in 0.. {
            self.launch();
            match self.wait_ready().await {
                Ok(()) => {
                    self.started = true;
                    return;
                }
                Err(e) if fresh && self.name == "test" && attempt < 2 => {
                    eprintln!("{e}; starting it again on other ports");
                    self.client_port = free_port();
                    self.peer_port = free_port();
                    self.initial_cluster = format!("test=http://127.0.0.1:{}", self.peer_port);
                    self.data = self.dir.path().join(format!("data-{attempt}"));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn launch(&mut self) {
        let bin = etcd_binary();
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(bin)
            .args(["--name", &self.name, "--data-dir"])
            .arg(&self.data)
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &self.initial_cluster])
            .args([
                "--logger",
                "zap",
                "--log-level",
                "error",
                "--log-outputs",
                "stderr",
            ])
            .args(&self.extra_args)
            .stdout(Stdio::null())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.path().join("etcd.log"))
                    .map_or_else(|_| Stdio::null(), Stdio::from),
            )
            .spawn()
            .expect("cannot spawn etcd");
        self.child = Some(child);
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if let Ok(mut c) = etcd_client::Client::connect([self.endpoint()], self.options()).await
                && c.get("ready-probe", None).await.is_ok()
            {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                let log =
                    std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                return Err(format!(
                    "etcd exited during start-up: {status}: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "etcd did not become ready in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The etcd process's id while it runs (the benchmark reads its CPU time).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    /// `http://127.0.0.1:<port>` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn options(&self) -> Option<etcd_client::ConnectOptions> {
        self.tls.as_ref().map(EtcdTls::options)
    }

    /// A raw etcd client, to check what storage wrote.
    pub async fn client(&self) -> etcd_client::Client {
        etcd_client::Client::connect([self.endpoint()], self.options())
            .await
            .expect("etcd client")
    }

    /// Kills etcd (data is kept).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts etcd again on the same ports and data.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
