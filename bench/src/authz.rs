//! `kubestore-bench --authorization` (`cargo run --release -p kubestore-bench -- --authorization`): what authorization costs (issue 32's benchmark). Two
//! registry-svc processes on one storage-svc and one etcd, both authenticating the same static
//! token (`--token-auth-file`): A with `--authorization-mode AlwaysAllow` (the default), B with
//! `--authorization-mode RBAC` and 1,000 RoleBindings in the benchmark's namespace (999 for
//! other users, one granting the benchmark's user get and create on ConfigMaps through a
//! Role), and audit at Metadata level for every request (`--audit-policy-file` with one rule,
//! `level: Metadata`, and `omitStages: [RequestReceived]` as the Kubernetes documentation's
//! example policy has it: one event per request, written to a file rotated at 100 MB). Rows: typed gRPC ConfigMaps Create and Get at c=1 (one channel) and c=64 (four
//! channels, and one), each as raw etcd then four rounds of A and B (A B, B A, A B, B A) back
//! to back, so every ratio compares runs seconds apart on an etcd of the same size. The
//! target: B's ops/s over its rounds at least 0.90 of A's; A's slowest round against its
//! fastest shows how far runs of the same server differ here.
//!
//! Not measured here: the REST API (its authorization and audit are the same gate call and
//! record, on a path parsed anyway).

use std::sync::{Arc, atomic::AtomicU64};

use kubestore_proto::{
    core::v1::{CreateConfigMapRequest, GetConfigMapRequest, config_maps_client::ConfigMapsClient},
    meta::v1::ObjectMeta,
    rbac::v1::{
        CreateRoleBindingRequest, CreateRoleRequest, PolicyRule, Role, RoleBinding, RoleRef,
        Subject, role_bindings_client::RoleBindingsClient, roles_client::RolesClient,
    },
};
use kubestore_tests::{EtcdProcess, services::channel};
use tonic::{Code, Request, metadata::MetadataValue, transport::Channel};

use crate::{procs::ServiceProcess, runner::run, scenarios::Raw};

const TOKEN: &str = "Bearer bench-token";
const NS: &str = "default";
/// Rounds of A and B per row.
const ROUNDS: usize = 4;

/// Typed ConfigMaps as the benchmark's user.
#[derive(Clone)]
struct Maps {
    clients: Vec<ConfigMapsClient<Channel>>,
    prefix: String,
}

fn with_token<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("authorization", MetadataValue::from_static(TOKEN));
    r
}

impl Maps {
    async fn create(&self, i: usize) -> Result<(), String> {
        self.clients[i % self.clients.len()]
            .clone()
            .create(with_token(CreateConfigMapRequest {
                namespace: NS.into(),
                config_map: Some({
                    let mut cm = crate::scenarios::config_map(&format!("{}{i}", self.prefix), 0);
                    if let Some(m) = cm.metadata.as_mut() {
                        m.namespace = NS.into();
                    }
                    cm
                }),
                dry_run: false,
            }))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn get(&self, i: usize) -> Result<(), String> {
        self.clients[i % self.clients.len()]
            .clone()
            .get(with_token(GetConfigMapRequest {
                namespace: NS.into(),
                name: format!("{}{i}", self.prefix),
            }))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// One row's figures.
pub(crate) struct Row {
    pub(crate) layer: String,
    pub(crate) what: String,
    pub(crate) ops_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
}

/// Runs `op` `ops` times at concurrency `c` and prints its row (shared with `admission`).
pub(crate) async fn rate<F, Fut>(
    layer: &str,
    what: &str,
    c: usize,
    ops: usize,
    op: F,
) -> Result<Row, String>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let s = run(c, ops, op).await;
    if s.errors > 0 {
        return Err(format!("{layer} {what}: {} errors", s.errors));
    }
    let row = Row {
        layer: layer.into(),
        what: what.into(),
        ops_per_sec: s.ops_per_sec(),
        p50_ms: s.p50.as_secs_f64() * 1e3,
        p99_ms: s.p99.as_secs_f64() * 1e3,
    };
    println!(
        "  {layer:<44} {what:<28} {:>8.0} ops/s  p50 {:>6.2} ms  p99 {:>6.2} ms",
        row.ops_per_sec, row.p50_ms, row.p99_ms
    );
    Ok(row)
}

/// The Role and the 1,000 RoleBindings of B, written as the local administrator.
async fn seed_rbac(url: &str, bindings: usize) -> Result<(), String> {
    let ch = channel(url).await;
    let meta = |name: String| {
        Some(ObjectMeta {
            name,
            ..Default::default()
        })
    };
    RolesClient::new(ch.clone())
        .create(CreateRoleRequest {
            namespace: NS.into(),
            role: Some(Role {
                metadata: meta("bench-configmaps".into()),
                rules: vec![PolicyRule {
                    verbs: vec!["get".into(), "create".into()],
                    api_groups: vec!["".into()],
                    resources: vec!["configmaps".into()],
                    ..Default::default()
                }],
            }),
            dry_run: false,
        })
        .await
        .map_err(|e| format!("the benchmark's Role: {e}"))?;
    let mut client = RoleBindingsClient::new(ch);
    for i in 0..bindings {
        let user = if i + 1 == bindings {
            "bench-user".to_string()
        } else {
            format!("user-{i}")
        };
        client
            .create(CreateRoleBindingRequest {
                namespace: NS.into(),
                role_binding: Some(RoleBinding {
                    metadata: meta(format!("binding-{i}")),
                    subjects: vec![Subject {
                        kind: "User".into(),
                        api_group: "rbac.authorization.k8s.io".into(),
                        name: user,
                        namespace: String::new(),
                    }],
                    role_ref: Some(RoleRef {
                        api_group: "rbac.authorization.k8s.io".into(),
                        kind: "Role".into(),
                        name: "bench-configmaps".into(),
                    }),
                }),
                dry_run: false,
            })
            .await
            .map_err(|e| format!("RoleBinding {i}: {e}"))?;
    }
    // B decides from its watch-fed cache: wait until it has the benchmark user's binding.
    let mut maps = ConfigMapsClient::new(channel(url).await);
    for _ in 0..200 {
        match maps
            .get(with_token(GetConfigMapRequest {
                namespace: NS.into(),
                name: "absent".into(),
            }))
            .await
        {
            Err(e) if e.code() == Code::NotFound => return Ok(()),
            _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    Err("registry-svc B never allowed the benchmark user".into())
}

/// Runs every row with `ops` operations each and prints the table.
pub(crate) async fn authorization(ops: usize, bindings: usize) -> Result<(), String> {
    let etcd = EtcdProcess::start().await;
    let storage = ServiceProcess::start(
        "storage",
        &["--etcd-endpoints".into(), etcd.endpoint()],
        &[],
    )
    .await;
    let tokens =
        std::env::temp_dir().join(format!("kubestore-bench-tokens-{}.csv", std::process::id()));
    std::fs::write(&tokens, "bench-token,bench-user,1001,bench\n").map_err(|e| e.to_string())?;
    let token_file = tokens.display().to_string();
    let base = |mode: &str| {
        vec![
            "--storage-addr".to_string(),
            storage.url(),
            "--token-auth-file".into(),
            token_file.clone(),
            "--authorization-mode".into(),
            mode.into(),
        ]
    };
    let policy =
        std::env::temp_dir().join(format!("kubestore-bench-audit-{}.yaml", std::process::id()));
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
    )
    .map_err(|e| e.to_string())?;
    let log =
        std::env::temp_dir().join(format!("kubestore-bench-audit-{}.log", std::process::id()));
    let mut audited = base("RBAC");
    audited.extend([
        "--audit-policy-file".to_string(),
        policy.display().to_string(),
        "--audit-log-path".into(),
        log.display().to_string(),
    ]);
    let a = ServiceProcess::start("registry", &base("AlwaysAllow"), &[]).await;
    let b = ServiceProcess::start("registry", &audited, &[]).await;
    seed_rbac(&b.url(), bindings).await?;
    let mut raw_clients = Vec::new();
    for _ in 0..4 {
        raw_clients.push(etcd.client().await);
    }
    let mut chans_a = Vec::new();
    let mut chans_b = Vec::new();
    for _ in 0..4 {
        chans_a.push(channel(&a.url()).await);
        chans_b.push(channel(&b.url()).await);
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut verdicts = Vec::new();
    for (c, n) in [(1, 1), (64, 4), (64, 1)] {
        let tag = format!("c={c}, {n} channel{}", if n == 1 { "" } else { "s" });
        // A row lasts a few seconds: at c=64, 8 times the operations of c=1.
        let ops = if c == 1 { ops } else { ops * 8 };
        println!("{tag}");
        let raw = Arc::new(Raw {
            clients: raw_clients[..n].to_vec(),
            prefix: format!("/raw/authz-c{c}-n{n}/"),
            conflicts: Arc::new(AtomicU64::new(0)),
        });
        let maps = |chans: &[Channel], round: usize, which: &str| {
            Arc::new(Maps {
                clients: chans[..n]
                    .iter()
                    .cloned()
                    .map(ConfigMapsClient::new)
                    .collect(),
                prefix: format!("{which}-c{c}-n{n}-r{round}-"),
            })
        };
        let layer_a = "A: AlwaysAllow";
        let layer_b = format!("B: RBAC, {bindings} RoleBindings, Metadata audit");
        for what in ["create", "get"] {
            macro_rules! row {
                ($layer:expr, $obj:expr, $m:ident) => {{
                    let o = $obj.clone();
                    rows.push(
                        rate($layer, &format!("{what}, {tag}"), c, ops, move |i| {
                            let o = o.clone();
                            async move { o.$m(i).await }
                        })
                        .await?,
                    );
                    rows.last().map_or(0.0, |r| r.ops_per_sec)
                }};
            }
            if what == "create" {
                let _ = row!("raw etcd", raw, create);
            } else {
                let _ = row!("raw etcd", raw, get);
            }
            // Four rounds in the order A B B A A B B A: neither side always runs first.
            let (mut sum_a, mut sum_b, mut each_a) = (0.0, 0.0, Vec::new());
            for round in 0..ROUNDS {
                let (ma, mb) = (maps(&chans_a, round, "a"), maps(&chans_b, round, "b"));
                let b_first = round % 2 == 1;
                let (ra, rb) = match (what, b_first) {
                    ("create", false) => (row!(layer_a, ma, create), row!(&layer_b, mb, create)),
                    ("create", true) => {
                        let rb = row!(&layer_b, mb, create);
                        (row!(layer_a, ma, create), rb)
                    }
                    (_, false) => (row!(layer_a, ma, get), row!(&layer_b, mb, get)),
                    (_, true) => {
                        let rb = row!(&layer_b, mb, get);
                        (row!(layer_a, ma, get), rb)
                    }
                };
                sum_a += ra;
                sum_b += rb;
                each_a.push(ra);
            }
            let spread = each_a.iter().copied().fold(f64::MAX, f64::min)
                / each_a.iter().copied().fold(0.0, f64::max).max(1e-9);
            verdicts.push((format!("{what}, {tag}"), sum_b / sum_a.max(1e-9), spread));
        }
    }
    println!();
    println!("| layer | operation | ops/s | p50 ms | p99 ms | ratio to raw etcd |");
    println!("|---|---|---:|---:|---:|---:|");
    let mut raw_rate = 1.0;
    for r in &rows {
        if r.layer == "raw etcd" {
            raw_rate = r.ops_per_sec.max(1e-9);
        }
        println!(
            "| {} | {} | {:.0} | {:.2} | {:.2} | {:.2} |",
            r.layer,
            r.what,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.ops_per_sec / raw_rate
        );
    }
    println!();
    println!(
        "| operation | B / A (ops/s over {ROUNDS} rounds each) | A's slowest round / its fastest | required | met |"
    );
    println!("|---|---:|---:|---:|---|");
    for (what, ratio, spread) in &verdicts {
        println!(
            "| {what} | {ratio:.2} | {spread:.2} | >= 0.90 | {} |",
            if *ratio >= 0.90 { "yes" } else { "no" }
        );
    }
    drop((a, b, storage));
    // What B audited (the log and its rotated backups), so a reader sees every event was
    // written; then they go.
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let logs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(stem.as_str()))
                        && p.extension().is_some_and(|e| e == "log")
                })
                .collect()
        })
        .unwrap_or_default();
    let events: usize = logs
        .iter()
        .map(|p| std::fs::read(p).map_or(0, |t| t.iter().filter(|b| **b == b'\n').count()))
        .sum();
    println!("\nB wrote {events} audit events ({} files)", logs.len());
    for f in logs.iter().chain([&tokens, &policy]) {
        let _ = std::fs::remove_file(f);
    }
    Ok(())
}
