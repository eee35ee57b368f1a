//! `kubestore-bench`: one run measures raw etcd, storage-svc and registry-svc on the same etcd,
//! prints ops/s, p50, p99 and the ratio to raw etcd, and writes the table to BENCHMARKS.md.
//!
//! ```text
//! cargo run --release -p kubestore-bench              # full run, writes BENCHMARKS.md
//! cargo run --release -p kubestore-bench -- --only rest  # REST against gRPC: its section only
//! cargo run -p kubestore-bench -- --smoke             # a few ops, writes target/bench-smoke.md
//! cargo run --release -p kubestore-bench -- --authorization  # RBAC against AlwaysAllow
//! cargo run --release -p kubestore-bench -- --admission      # a policy, a webhook, neither
//! cargo run --release -p kubestore-bench -- --soak 600  # steady load, writes target/soak.md
//! scripts/bench-releases.sh a582744                   # this tree against a582744, interleaved
//! ```
//!
//! The services run as child processes (this binary in `serve-storage` / `serve-registry`
//! mode, i.e. the same library `run` and env-configured telemetry as the real binaries), so
//! each has its own RSS. Timings are reported, never asserted.

mod admission;
mod authz;
mod cpu;
mod custom;
mod gc;
mod listwatch;
mod procs;
mod releases;
mod report;
mod rest;
mod runner;
mod scenarios;
mod soak;

use std::{
    future::Future,
    path::PathBuf,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use clap::{Parser, Subcommand};

/// glibc's allocator spent a third of the service's CPU in malloc/free/memmove under load
/// (BENCHMARKS.md); mimalloc's thread-local free lists suit tonic's many small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use kubestore_proto::{
    core::v1::{config_maps_client::ConfigMapsClient, pods_client::PodsClient},
    storage::v1::storage_client::StorageClient,
};
use kubestore_tests::{
    EtcdProcess,
    otlp::OtlpReceiver,
    services::{channel, sample, scrape},
};

use crate::{
    procs::ServiceProcess,
    report::{ANALYSIS_MARKER, Row, report},
    runner::run,
    scenarios::{ConfigMaps, Pods, Raw, Storage},
};

#[derive(Parser)]
#[command(
    name = "kubestore-bench",
    about = "kubestore against raw etcd, in one run"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Operations per scenario and concurrency.
    #[arg(long, default_value_t = 2000)]
    ops: usize,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// Where to write the report.
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// gRPC connections per client.
    #[arg(long, default_value_t = 4)]
    channels: usize,
    /// Parts to run: raw, storage, registry, tracing, list, watch, nocache, rest (the report is
    /// written only when all run; a partial run with `rest` rewrites the REST section).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "raw,storage,registry,tracing,list,watch,nocache,rest"
    )]
    only: Vec<String>,
    /// Objects listed by the list rows.
    #[arg(long, default_value_t = 10_000)]
    list_objects: usize,
    /// Watchers of the fan-out rows.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Watchers of the REST part's fan-out (HTTP/1.1 watches against gRPC watches).
    #[arg(long, default_value_t = 1000)]
    rest_watchers: usize,
    /// A few operations only (CI smoke test); writes target/bench-smoke.md.
    #[arg(long)]
    smoke: bool,
    /// Instead of the benchmark: the garbage collector's background cascade of this many
    /// dependents (`gc.rs`); prints its report row.
    #[arg(long, value_name = "N")]
    gc_cascade: Option<usize>,
    /// Instead of the benchmark: custom objects against ConfigMaps (`custom.rs`): Create, Get,
    /// a 1,000-object List, the schema's share of a Create, registration to first Create.
    #[arg(long)]
    custom_kinds: bool,
    /// Instead of the benchmark: authorization's cost (`authz.rs`): Create and Get through
    /// AlwaysAllow against RBAC with 1,000 RoleBindings, raw etcd beside them.
    #[arg(long)]
    authorization: bool,
    /// Instead of the benchmark: admission's cost (`admission.rs`): Create and Update with no
    /// admission configuration, one ValidatingAdmissionPolicy, one webhook on loopback.
    #[arg(long)]
    admission: bool,
    /// Instead of the benchmark: a steady load for this many seconds, sampling RSS, fds and
    /// tasks (`soak.rs`); writes target/soak.md unless --out says otherwise.
    #[arg(long, value_name = "SECS")]
    soak: Option<u64>,
    /// Instead of the benchmark: release over release (`releases.rs`). Builds to compare, as
    /// NAME=DIR, DIR holding that build's storage-svc and registry-svc; one gRPC channel at the
    /// highest --concurrency; writes its section of --out.
    #[arg(long, value_delimiter = ',', value_name = "NAME=DIR")]
    releases: Vec<releases::Build>,
    /// Runs of --releases (each build once per run, the order rotating).
    #[arg(long, default_value_t = 4)]
    runs: usize,
    /// Lists per build and run of --releases (one page of --list-objects each).
    #[arg(long, default_value_t = 10)]
    list_reps: usize,
    /// With --releases: record each pair with `perf record --call-graph dwarf` during Create,
    /// Get and the one-page List into this directory instead of writing the table.
    #[arg(long, value_name = "DIR")]
    perf_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run storage-svc (used by the benchmark itself).
    #[command(hide = true, name = "serve-storage")]
    Storage(Box<storage_svc::Config>),
    /// Run registry-svc (used by the benchmark itself).
    #[command(hide = true, name = "serve-registry")]
    Registry(Box<registry_svc::Config>),
    /// Run a controller-manager (used by the benchmark itself).
    #[command(hide = true, name = "serve-controllers")]
    Controllers {
        /// registry-svc's URL.
        #[arg(long)]
        registry: String,
        /// Where `/metrics` is served.
        #[arg(long)]
        metrics_addr: std::net::SocketAddr,
    },
}

/// Measures `$obj.$method(i)` as one row.
macro_rules! bench_op {
    ($rows:expr, $layer:expr, $op:expr, $baseline:expr, $c:expr, $ops:expr, $obj:expr, $method:ident) => {{
        let o = $obj.clone();
        measure($rows, $layer, $op, $baseline, $c, $ops, move |i| {
            let o = o.clone();
            async move { o.$method(i).await }
        })
        .await
    }};
}

async fn measure<F, Fut>(
    rows: &mut Vec<Row>,
    layer: &'static str,
    op: &'static str,
    baseline: &'static str,
    c: usize,
    ops: usize,
    f: F,
) where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let before = cpu::sample();
    let stats = run(c, ops, f).await;
    let cpu = before.per_op(&cpu::sample(), stats.ops);
    println!(
        "  {layer:<24} {op:<22} c={c:<3} {:>9.0} ops/s  p50 {:>7.2} ms  p99 {:>7.2} ms{}",
        stats.ops_per_sec(),
        stats.p50.as_secs_f64() * 1e3,
        stats.p99.as_secs_f64() * 1e3,
        if stats.errors > 0 {
            format!("  ({} errors)", stats.errors)
        } else {
            String::new()
        }
    );
    rows.push(Row {
        layer,
        op,
        baseline,
        concurrency: c,
        stats,
        note: String::new(),
        cpu,
    });
}

async fn storage_conflicts(storage: &ServiceProcess) -> f64 {
    sample(
        &scrape(storage.metrics).await,
        "storage_etcd_conflicts_total",
    )
    .unwrap_or(0.0)
}

async fn channels(url: &str, n: usize) -> Vec<tonic::transport::Channel> {
    let mut v = Vec::new();
    for _ in 0..n.max(1) {
        v.push(channel(url).await);
    }
    v
}

#[allow(clippy::too_many_lines)]
async fn bench(cli: Cli) -> Result<(), String> {
    let etcd = EtcdProcess::start().await;
    if let Some(pid) = etcd.pid() {
        cpu::watch("etcd", pid);
    }
    let wants = |part: &str| cli.only.iter().any(|p| p == part);
    let storage = ServiceProcess::start(
        "storage",
        &["--etcd-endpoints".into(), etcd.endpoint()],
        &[],
    )
    .await;
    let registry =
        ServiceProcess::start("registry", &["--storage-addr".into(), storage.url()], &[]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = [
        (storage.name, storage.rss_mib().0),
        (registry.name, registry.rss_mib().0),
    ];
    let mut raw_clients = Vec::new();
    for _ in 0..cli.channels.max(1) {
        raw_clients.push(etcd.client().await);
    }
    let storage_channels = channels(&storage.url(), cli.channels).await;
    let registry_channels = channels(&registry.url(), cli.channels).await;
    let mut rows = Vec::new();
    let ops = cli.ops;

    // Per concurrency and operation, the layers run back to back (raw etcd first), so each
    // ratio compares runs minutes apart at most, on an etcd of the same size.
    for &c in &cli.concurrency {
        println!("concurrency {c}");
        let raw = Raw {
            clients: raw_clients.clone(),
            prefix: format!("/raw/c{c}/"),
            conflicts: Arc::new(AtomicU64::new(0)),
        };
        let s = Storage {
            clients: storage_channels
                .iter()
                .cloned()
                .map(StorageClient::new)
                .collect(),
            prefix: format!("/bench/c{c}/"),
        };
        let cms = ConfigMaps {
            clients: registry_channels
                .iter()
                .cloned()
                .map(ConfigMapsClient::new)
                .collect(),
            prefix: format!("cm-c{c}-"),
            aborted: Arc::new(AtomicU64::new(0)),
        };
        let pods = Pods {
            clients: registry_channels
                .iter()
                .cloned()
                .map(PodsClient::new)
                .collect(),
            prefix: format!("pod-c{c}-"),
        };
        let (r, st, reg) = (wants("raw"), wants("storage"), wants("registry"));
        const CM: &str = "registry-svc ConfigMaps";
        const POD: &str = "registry-svc Pods";

        if r {
            bench_op!(
                &mut rows, "raw etcd", "create", "create", c, ops, raw, create
            );
        }
        if st {
            bench_op!(
                &mut rows,
                "storage-svc",
                "create",
                "create",
                c,
                ops,
                s,
                create
            );
        }
        if reg {
            bench_op!(&mut rows, CM, "create", "create", c, ops, cms, create);
            bench_op!(&mut rows, POD, "create", "create", c, ops, pods, create);
        }
        if r {
            bench_op!(&mut rows, "raw etcd", "get", "get", c, ops, raw, get);
        }
        if st {
            bench_op!(&mut rows, "storage-svc", "get", "get", c, ops, s, get);
        }
        if reg {
            bench_op!(&mut rows, CM, "get", "get", c, ops, cms, get);
            bench_op!(&mut rows, POD, "get", "get", c, ops, pods, get);
        }
        if r {
            bench_op!(
                &mut rows, "raw etcd", "update", "update", c, ops, raw, update
            );
        }
        if st {
            bench_op!(
                &mut rows,
                "storage-svc",
                "update",
                "update",
                c,
                ops,
                s,
                update
            );
        }
        if reg {
            bench_op!(
                &mut rows,
                CM,
                "update (get+update rv)",
                "update",
                c,
                ops,
                cms,
                update
            );
            bench_op!(
                &mut rows,
                POD,
                "update (get+update rv)",
                "update",
                c,
                ops,
                pods,
                update
            );
        }
        if r {
            raw.seed_hot().await;
            bench_op!(
                &mut rows,
                "raw etcd",
                "hot update",
                "hot update",
                c,
                ops,
                raw,
                hot_update
            );
            if let Some(row) = rows.last_mut() {
                row.note = format!(
                    "{:.2} conflicts/update",
                    raw.conflicts.load(Ordering::Relaxed) as f64 / row.stats.ops.max(1) as f64
                );
            }
        }
        if st {
            s.seed_hot().await;
            let before = storage_conflicts(&storage).await;
            bench_op!(
                &mut rows,
                "storage-svc",
                "hot update",
                "hot update",
                c,
                ops,
                s,
                hot_update
            );
            let after = storage_conflicts(&storage).await;
            if let Some(row) = rows.last_mut() {
                row.note = format!(
                    "{:.2} conflicts/update",
                    (after - before) / row.stats.ops.max(1) as f64
                );
            }
        }
        if reg {
            cms.seed_hot().await;
            for (op, conditional) in [("hot update", true), ("hot update (no rv)", false)] {
                let before = storage_conflicts(&storage).await;
                if conditional {
                    bench_op!(&mut rows, CM, op, "hot update", c, ops, cms, hot_update);
                } else {
                    bench_op!(
                        &mut rows,
                        CM,
                        op,
                        "hot update",
                        c,
                        ops,
                        cms,
                        hot_update_unconditional
                    );
                }
                let after = storage_conflicts(&storage).await;
                if let Some(row) = rows.last_mut() {
                    let n = row.stats.ops.max(1) as f64;
                    row.note = format!(
                        "{:.2} etcd conflicts/update, {:.1} ABORTED/update",
                        (after - before) / n,
                        cms.aborted.swap(0, Ordering::Relaxed) as f64 / n
                    );
                }
            }
        }
        if r {
            bench_op!(
                &mut rows, "raw etcd", "delete", "delete", c, ops, raw, delete
            );
        }
        if st {
            bench_op!(
                &mut rows,
                "storage-svc",
                "delete",
                "delete",
                c,
                ops,
                s,
                delete
            );
        }
        if reg {
            bench_op!(&mut rows, CM, "delete", "delete", c, ops, cms, delete);
            bench_op!(
                &mut rows,
                POD,
                "delete (graceful)",
                "delete",
                c,
                ops,
                pods,
                delete_graceful
            );
            bench_op!(
                &mut rows,
                POD,
                "delete (grace 0)",
                "delete",
                c,
                ops,
                pods,
                delete_now
            );
        }
    }
    let peak = [
        (storage.name, storage.rss_mib().1),
        (registry.name, registry.rss_mib().1),
    ];

    // The same operations with storage-svc's watch cache off, at the highest concurrency, on a
    // second pair (storage-svc --watch-cache=false, registry-svc on it).
    let off = if wants("nocache") {
        let storage_off = ServiceProcess::start(
            "storage",
            &[
                "--etcd-endpoints".into(),
                etcd.endpoint(),
                "--watch-cache=false".into(),
            ],
            &[],
        )
        .await;
        let registry_off = ServiceProcess::start(
            "registry",
            &["--storage-addr".into(), storage_off.url()],
            &[],
        )
        .await;
        Some((storage_off, registry_off))
    } else {
        None
    };
    if let Some((storage_off, registry_off)) = &off {
        let c = cli.concurrency.iter().copied().max().unwrap_or(1);
        println!("watch cache off, concurrency {c}");
        let s_off = Storage {
            clients: channels(&storage_off.url(), cli.channels)
                .await
                .into_iter()
                .map(StorageClient::new)
                .collect(),
            prefix: format!("/bench-off/c{c}/"),
        };
        let cms_off = ConfigMaps {
            clients: channels(&registry_off.url(), cli.channels)
                .await
                .into_iter()
                .map(ConfigMapsClient::new)
                .collect(),
            prefix: format!("cm-off-c{c}-"),
            aborted: Arc::new(AtomicU64::new(0)),
        };
        const S_OFF: &str = "storage-svc, cache off";
        const CM_OFF: &str = "registry-svc ConfigMaps, cache off";
        bench_op!(&mut rows, S_OFF, "create", "create", c, ops, s_off, create);
        bench_op!(
            &mut rows, CM_OFF, "create", "create", c, ops, cms_off, create
        );
        bench_op!(&mut rows, S_OFF, "get", "get", c, ops, s_off, get);
        bench_op!(&mut rows, CM_OFF, "get", "get", c, ops, cms_off, get);
        bench_op!(&mut rows, S_OFF, "update", "update", c, ops, s_off, update);
        bench_op!(
            &mut rows,
            CM_OFF,
            "update (get+update rv)",
            "update",
            c,
            ops,
            cms_off,
            update
        );
        cms_off.seed_hot().await;
        bench_op!(
            &mut rows,
            CM_OFF,
            "hot update",
            "hot update",
            c,
            ops,
            cms_off,
            hot_update
        );
        if let Some(row) = rows.last_mut() {
            let n = row.stats.ops.max(1) as f64;
            row.note = format!(
                "{:.1} ABORTED/update",
                cms_off.aborted.swap(0, Ordering::Relaxed) as f64 / n
            );
        }
        bench_op!(&mut rows, S_OFF, "delete", "delete", c, ops, s_off, delete);
        bench_op!(
            &mut rows, CM_OFF, "delete", "delete", c, ops, cms_off, delete
        );
    }

    let mut listwatch_rows = Vec::new();
    let mut list_memory = Vec::new();
    if wants("list") {
        let reps = if cli.smoke { 2 } else { 20 };
        let off_channels = match &off {
            Some((_, r)) => Some(channels(&r.url(), 1).await),
            None => None,
        };
        let (rows, memory) = listwatch::list_rows(
            &raw_clients[0],
            &registry_channels,
            off_channels.as_deref(),
            &[&storage, &registry],
            cli.list_objects,
            reps,
        )
        .await?;
        listwatch_rows.extend(rows);
        list_memory = memory;
    }
    if wants("watch") {
        let writes = if cli.smoke { 20 } else { 500 };
        let off_channels = match &off {
            Some((_, r)) => Some(channels(&r.url(), cli.channels).await),
            None => None,
        };
        let mut services = vec![&storage, &registry];
        if let Some((s, r)) = &off {
            services.extend([s, r]);
        }
        listwatch_rows.extend(
            listwatch::watch_rows(
                &raw_clients[0],
                &registry_channels,
                off_channels.as_deref(),
                &services,
                cli.watchers,
                writes,
            )
            .await?,
        );
    }

    let rest_section = if wants("rest") {
        let results = rest::run(rest::Setup {
            etcd: &raw_clients,
            storage: &storage,
            channels: cli.channels,
            concurrency: &cli.concurrency,
            ops,
            watchers: cli.rest_watchers,
            watch_events: if cli.smoke { 20 } else { 500 },
            list_objects: cli.list_objects,
            list_reps: if cli.smoke { 2 } else { 20 },
        })
        .await?;
        Some(rest::report::section(&results, ops))
    } else {
        None
    };

    let mut tracing_rows = Vec::new();
    let mut spans = 0;
    if wants("tracing") {
        // Tracing: the same registry ConfigMap create at the highest concurrency, on a pair that
        // exports every span (100% sampling) to an in-process OTLP receiver, against this pair.
        let c = cli.concurrency.iter().copied().max().unwrap_or(1);
        println!("tracing at concurrency {c}");
        let receiver = OtlpReceiver::start().await;
        let otel = |name: &str| {
            vec![
                (
                    "OTEL_EXPORTER_OTLP_ENDPOINT".to_string(),
                    receiver.endpoint.clone(),
                ),
                ("OTEL_SERVICE_NAME".to_string(), name.to_string()),
                ("OTEL_TRACES_SAMPLER".to_string(), "always_on".to_string()),
            ]
        };
        let storage_t = ServiceProcess::start(
            "storage",
            &["--etcd-endpoints".into(), etcd.endpoint()],
            &otel("storage-svc"),
        )
        .await;
        let registry_t = ServiceProcess::start(
            "registry",
            &["--storage-addr".into(), storage_t.url()],
            &otel("registry-svc"),
        )
        .await;
        let traced_channels = channels(&registry_t.url(), cli.channels).await;
        for (label, chans) in [
            ("tracing off", &registry_channels),
            ("tracing on (100%)", &traced_channels),
        ] {
            let cms = ConfigMaps {
                clients: chans.iter().cloned().map(ConfigMapsClient::new).collect(),
                prefix: format!("tr-{}-", label.len()),
                aborted: Arc::new(AtomicU64::new(0)),
            };
            let layer: &'static str = if label.starts_with("tracing on") {
                "registry-svc, tracing on"
            } else {
                "registry-svc, tracing off"
            };
            bench_op!(
                &mut tracing_rows,
                layer,
                "ConfigMaps create",
                "create",
                c,
                ops,
                cms,
                create
            );
        }
        registry_t.stop().await;
        storage_t.stop().await;
        spans = receiver.spans().len();
        println!("  spans received by the OTLP receiver: {spans}");
    }
    if [
        "raw", "storage", "registry", "tracing", "list", "watch", "nocache", "rest",
    ]
    .iter()
    .any(|p| !wants(p))
    {
        if let Some(section) = &rest_section {
            rest::report::splice(&cli.out, section)?;
            println!("partial run: REST section written to {}", cli.out.display());
        } else {
            println!("partial run: report not written");
        }
        return Ok(());
    }

    let report = report(
        &cli,
        &rows,
        &tracing_rows,
        &listwatch_rows,
        &list_memory,
        spans,
        &idle,
        &peak,
    );
    if let Some(dir) = cli.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let kept = std::fs::read_to_string(&cli.out)
        .ok()
        .and_then(|old| old.find(ANALYSIS_MARKER).map(|i| old[i..].to_string()))
        .unwrap_or_else(|| format!("{ANALYSIS_MARKER}\n"));
    let rest_section = rest_section.unwrap_or_default();
    std::fs::write(&cli.out, format!("{report}\n{rest_section}\n{kept}"))
        .map_err(|e| format!("writing {}: {e}", cli.out.display()))?;
    println!("wrote {}", cli.out.display());
    drop(registry);
    drop(storage);
    Ok(())
}

/// A controller-manager with default settings against `registry` (the cascade benchmark).
fn serve_controllers(registry: &str, metrics_addr: std::net::SocketAddr) -> ExitCode {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    let result = rt.block_on(async {
        let endpoint = tonic::transport::Endpoint::from_shared(registry.to_string())
            .map_err(|e| e.to_string())?;
        let ch = tower::ServiceBuilder::new()
            .layer(kubestore_telemetry::GrpcTraceLayer::client())
            .service(endpoint.connect_lazy());
        let mut config = kubestore_controllers::manager::ManagerConfig::new(
            kubestore_controllers::manager::default_identity(),
        );
        config.metrics_addr = Some(metrics_addr);
        let (_stop_tx, stop) = tokio::sync::watch::channel(false);
        kubestore_controllers::manager::run(ch, config, stop, |_| {}).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubestore-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    match cli.command.take() {
        Some(Command::Storage(config)) => {
            let (fmt, listen) = (config.log_format, config.listen_addr);
            return kubestore_telemetry::process::main(
                "storage-svc",
                fmt,
                listen,
                None,
                |l, stop| storage_svc::run(l, *config, stop),
            );
        }
        Some(Command::Registry(config)) => {
            let (fmt, listen) = (config.log_format, config.listen_addr);
            return kubestore_telemetry::process::main(
                "registry-svc",
                fmt,
                listen,
                None,
                |l, stop| registry_svc::run(l, *config, stop),
            );
        }
        Some(Command::Controllers {
            registry,
            metrics_addr,
        }) => return serve_controllers(&registry, metrics_addr),
        None => {}
    }
    if cli.smoke {
        cli.ops = 32;
        cli.concurrency = vec![1, 4];
        cli.channels = 1;
        cli.list_objects = 200;
        cli.watchers = 5;
        cli.rest_watchers = 5;
        if cli.out == std::path::Path::new("BENCHMARKS.md") {
            cli.out = PathBuf::from("target/bench-smoke.md");
        }
    }
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    if let Some(n) = cli.gc_cascade {
        return match rt.block_on(gc::cascade(n)) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kubestore-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cli.admission {
        return match rt.block_on(admission::admission(cli.ops)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kubestore-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cli.authorization {
        let bindings = if cli.smoke { 20 } else { 1000 };
        return match rt.block_on(authz::authorization(cli.ops, bindings)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kubestore-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if cli.custom_kinds {
        let registrations = if cli.smoke { 3 } else { 50 };
        return match rt.block_on(custom::custom_kinds(cli.ops, registrations)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kubestore-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if !cli.releases.is_empty() {
        let plan = releases::Plan {
            builds: &cli.releases,
            runs: if cli.smoke { 1 } else { cli.runs },
            ops: cli.ops,
            concurrency: cli.concurrency.iter().copied().max().unwrap_or(64),
            list_objects: cli.list_objects,
            list_reps: if cli.smoke { 2 } else { cli.list_reps },
            watchers: cli.watchers,
            watch_events: if cli.smoke { 20 } else { 500 },
            perf_dir: cli.perf_dir.as_deref(),
            out: &cli.out,
        };
        return match rt.block_on(releases::releases(plan)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("kubestore-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let done = match cli.soak {
        Some(secs) => {
            let out = if cli.out == std::path::Path::new("BENCHMARKS.md") {
                PathBuf::from("target/soak.md")
            } else {
                cli.out.clone()
            };
            rt.block_on(soak::soak(secs, &out))
        }
        None => rt.block_on(bench(cli)),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubestore-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
