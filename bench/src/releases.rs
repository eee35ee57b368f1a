//! Release over release: the same workloads against two or more builds of storage-svc and
//! registry-svc, run interleaved, so that a regression of this release against the previous one
//! shows at once (BENCHMARKS.md, "Release over release").
//!
//! Each build is a directory holding its `storage-svc` and `registry-svc` binaries, built side
//! by side (`scripts/bench-releases.sh` builds a commit in a worktree). This process is the load
//! generator for every build: the same client code, one gRPC channel (as most users have),
//! concurrency 64.
//!
//! A run is one block per build, in an order that rotates from run to run (A B, then B A, ...),
//! so that a drift of the machine over the runs falls on every build alike. A block starts a
//! fresh etcd and the build's pair on it, measures each workload on raw etcd and then on the
//! pair, and stops everything: the ratio of each workload compares runs seconds apart on an etcd
//! of the same size, and an idle pair never spends the CPU the measured one needs (two builds'
//! watch caches on one etcd would both follow every write).
//!
//! Beside each ratio, the CPU each process spent per operation (`cpu.rs`): on two shared cores
//! the ratios move with whoever got the CPU; the microseconds per request do not, and they are
//! what a release adds or takes back.
//!
//! With `--perf-dir`, each block also records the pair with `perf record --call-graph dwarf`
//! during Create, Get, Delete and the one-page List (`<build>-<workload>.data`, read with
//! `perf report -i`), runs only those, and writes no table: a profiled run is not a measured
//! one.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use kubestore_proto::core::v1::config_maps_client::ConfigMapsClient;
use kubestore_tests::{EtcdProcess, services::channel};

use crate::{
    cpu::{self, PerOp},
    listwatch,
    procs::ServiceProcess,
    runner::{Stats, run},
    scenarios::{ConfigMaps, Raw},
};

const BEGIN: &str = "<!-- releases: begin (written by `kubestore-bench --releases`) -->";
const END: &str = "<!-- releases: end -->";

/// One build under test: a name for the table and the directory of its binaries.
#[derive(Clone, Debug)]
pub(crate) struct Build {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
}

impl std::str::FromStr for Build {
    type Err = String;

    /// `NAME=DIR`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, dir) = s.split_once('=').ok_or_else(|| {
            format!("{s:?}: expected NAME=DIR (a directory holding storage-svc and registry-svc)")
        })?;
        let dir = PathBuf::from(dir);
        for bin in ["storage-svc", "registry-svc"] {
            if !dir.join(bin).is_file() {
                return Err(format!("{}: no {bin} binary there", dir.display()));
            }
        }
        Ok(Self {
            name: name.to_string(),
            dir,
        })
    }
}

/// What a release run does.
pub(crate) struct Plan<'a> {
    pub(crate) builds: &'a [Build],
    pub(crate) runs: usize,
    pub(crate) ops: usize,
    pub(crate) concurrency: usize,
    pub(crate) list_objects: usize,
    pub(crate) list_reps: usize,
    pub(crate) watchers: usize,
    pub(crate) watch_events: usize,
    pub(crate) perf_dir: Option<&'a Path>,
    pub(crate) out: &'a Path,
}

/// The workloads, in the table's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Get,
    Create,
    Update,
    Hot,
    Delete,
    List,
    Watch,
}

impl Workload {
    const ALL: [Workload; 7] = [
        Workload::Get,
        Workload::Create,
        Workload::Update,
        Workload::Hot,
        Workload::Delete,
        Workload::List,
        Workload::Watch,
    ];

    fn label(self, p: &Plan<'_>) -> String {
        match self {
            Workload::Get => "Get".into(),
            Workload::Create => "Create".into(),
            Workload::Update => "Update with resourceVersion".into(),
            Workload::Hot => "hot object (Get + Update, retried on conflict)".into(),
            Workload::Delete => "Delete".into(),
            Workload::List => format!("List {} ConfigMaps, one page", p.list_objects),
            Workload::Watch => format!("watch, {} watchers, p99 lag", p.watchers),
        }
    }

    fn file(self) -> &'static str {
        match self {
            Workload::Get => "get",
            Workload::Create => "create",
            Workload::Update => "update",
            Workload::Hot => "hot",
            Workload::Delete => "delete",
            Workload::List => "list",
            Workload::Watch => "watch",
        }
    }
}

/// Operation `$i` of workload `$w` (Create, Get, Update, Hot, else Delete) on `$s`, a
/// `scenarios` target: raw etcd and registry-svc run the same five.
macro_rules! one {
    ($s:expr, $w:expr, $i:expr) => {
        match $w {
            Workload::Create => $s.create($i).await,
            Workload::Get => $s.get($i).await,
            Workload::Update => $s.update($i).await,
            Workload::Hot => $s.hot_update($i).await,
            _ => $s.delete($i).await,
        }
    };
}

/// One workload of one block: the build against raw etcd in the same block.
#[derive(Clone, Debug)]
struct Sample {
    build: usize,
    workload: Workload,
    /// Throughput ratio to raw etcd; for the watch, p99 lag in ms.
    value: f64,
    /// For the watch: p99 lag / raw etcd's.
    watch_ratio: f64,
    /// CPU µs per operation of storage-svc + registry-svc (the watch: per delivered event).
    service_cpu: f64,
    errors: usize,
}

/// Runs the plan and writes its section to `plan.out` (not with `perf_dir`).
pub(crate) async fn releases(plan: Plan<'_>) -> Result<(), String> {
    if plan.builds.is_empty() {
        return Err("--releases: name at least one build".into());
    }
    if let Some(dir) = plan.perf_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut samples = Vec::new();
    for r in 0..plan.runs {
        let n = plan.builds.len();
        for k in 0..n {
            let b = (k + r) % n;
            println!("run {} of {}, {}", r + 1, plan.runs, plan.builds[b].name);
            samples.extend(block(&plan, b).await?);
        }
    }
    if plan.perf_dir.is_some() {
        println!("profiles written; no table (a profiled run is not a measured one)");
        return Ok(());
    }
    let section = section(&plan, &samples);
    println!("{section}");
    crate::report::splice(plan.out, (BEGIN, END), &section, false)?;
    println!("wrote the release section of {}", plan.out.display());
    Ok(())
}

/// One build's block of one run: a fresh etcd and the build's pair, every workload.
async fn block(p: &Plan<'_>, b: usize) -> Result<Vec<Sample>, String> {
    let build = &p.builds[b];
    let etcd = EtcdProcess::start().await;
    if let Some(pid) = etcd.pid() {
        cpu::watch("etcd", pid);
    }
    let storage = ServiceProcess::start_binary(
        "storage",
        &build.dir,
        &["--etcd-endpoints".into(), etcd.endpoint()],
    )
    .await;
    let registry = ServiceProcess::start_binary(
        "registry",
        &build.dir,
        &["--storage-addr".into(), storage.url()],
    )
    .await;
    let raw_client = etcd.client().await;
    let ch = channel(&registry.url()).await;
    let raw = Raw {
        clients: vec![raw_client.clone()],
        prefix: "/raw/".into(),
        conflicts: Arc::new(AtomicU64::new(0)),
    };
    let cms = ConfigMaps {
        clients: vec![ConfigMapsClient::new(ch.clone())],
        prefix: "cm-".into(),
        aborted: Arc::new(AtomicU64::new(0)),
    };
    // Warm both paths (connections, the registry's first resolution of the kind).
    let warm = p.ops.min(200);
    run(p.concurrency, warm, {
        let cms = ConfigMaps {
            prefix: "warm-".into(),
            ..cms.clone()
        };
        move |i| {
            let cms = cms.clone();
            async move { cms.create(i).await }
        }
    })
    .await;
    raw.seed_hot().await;
    cms.seed_hot().await;
    listwatch::seed_list(&raw_client, p.list_objects).await?;

    let pids = [storage.pid(), registry.pid()];
    let mut out = Vec::new();
    // Creates first: Get, Update and Delete act on the objects they made.
    for w in [
        Workload::Create,
        Workload::Get,
        Workload::Update,
        Workload::Hot,
        Workload::Delete,
        Workload::List,
        Workload::Watch,
    ] {
        if p.perf_dir.is_some()
            && !matches!(
                w,
                Workload::Create | Workload::Get | Workload::Delete | Workload::List
            )
        {
            continue;
        }
        let sample = match w {
            Workload::List => {
                let (raw_stats, _) =
                    listwatch::raw_one_page(&raw_client, p.list_reps, p.list_objects).await;
                let perf = Perf::start(p, build, w, &pids).await;
                let (stats, cpu) =
                    listwatch::registry_one_page(ch.clone(), p.list_reps, p.list_objects).await;
                drop(perf);
                throughput(b, w, &raw_stats, &stats, &cpu)
            }
            Workload::Watch => {
                let raw_stats =
                    listwatch::raw_fanout(&raw_client, p.watchers, p.watch_events).await?;
                let before = cpu::sample();
                let stats = listwatch::registry_fanout(
                    std::slice::from_ref(&ch),
                    "bench-watch",
                    p.watchers,
                    p.watch_events,
                )
                .await?;
                let cpu = before.per_op(&cpu::sample(), p.watchers * p.watch_events);
                let lag = stats.p99.as_secs_f64();
                Sample {
                    build: b,
                    workload: w,
                    value: lag * 1e3,
                    watch_ratio: lag / raw_stats.p99.as_secs_f64().max(1e-6),
                    service_cpu: services(&cpu),
                    errors: stats.errors,
                }
            }
            _ => {
                let r = raw.clone();
                let raw_stats = measure(p, move |i| {
                    let raw = r.clone();
                    async move { one!(raw, w, i) }
                })
                .await
                .0;
                let perf = Perf::start(p, build, w, &pids).await;
                let c = cms.clone();
                let (stats, cpu) = measure(p, move |i| {
                    let cms = c.clone();
                    async move { one!(cms, w, i) }
                })
                .await;
                drop(perf);
                throughput(b, w, &raw_stats, &stats, &cpu)
            }
        };
        println!(
            "  {:<48} {:>6.2}{}  service CPU {:>6.0} µs/op{}",
            w.label(p),
            sample.value,
            if w == Workload::Watch { " ms" } else { "x raw" },
            sample.service_cpu,
            if sample.errors > 0 {
                format!("  ({} errors)", sample.errors)
            } else {
                String::new()
            }
        );
        out.push(sample);
    }
    registry.stop().await;
    storage.stop().await;
    drop(etcd);
    Ok(out)
}

async fn measure<F, Fut>(p: &Plan<'_>, f: F) -> (Stats, PerOp)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let before = cpu::sample();
    let stats = run(p.concurrency, p.ops, f).await;
    let cpu = before.per_op(&cpu::sample(), stats.ops);
    (stats, cpu)
}

fn throughput(b: usize, w: Workload, raw: &Stats, stats: &Stats, cpu: &PerOp) -> Sample {
    Sample {
        build: b,
        workload: w,
        value: stats.ops_per_sec() / raw.ops_per_sec().max(1e-9),
        watch_ratio: 0.0,
        service_cpu: services(cpu),
        errors: stats.errors,
    }
}

/// CPU µs per operation of storage-svc and registry-svc together.
fn services(cpu: &PerOp) -> f64 {
    cpu.0
        .iter()
        .filter(|(n, _)| matches!(*n, "storage" | "registry"))
        .map(|(_, v)| v)
        .sum()
}

/// `perf record` of the pair while it lives (only with `--perf-dir`: Create, Get, Delete, the
/// List).
struct Perf(Option<Child>);

impl Perf {
    async fn start(p: &Plan<'_>, build: &Build, w: Workload, pids: &[u32]) -> Self {
        // The caller runs only the profiled workloads when there is a `perf_dir`.
        let Some(dir) = p.perf_dir else {
            return Self(None);
        };
        let out = dir.join(format!("{}-{}.data", build.name, w.file()));
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        let child = Command::new("perf")
            .args(["record", "--call-graph", "dwarf,16384", "-F", "499", "-o"])
            .arg(&out)
            .args(["-p", &pids.join(",")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match child {
            Ok(c) => {
                // perf needs a moment to attach to every thread.
                tokio::time::sleep(Duration::from_millis(500)).await;
                Self(Some(c))
            }
            Err(e) => {
                eprintln!("perf record: {e} (is perf installed?)");
                Self(None)
            }
        }
    }
}

impl Drop for Perf {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SIGINT makes perf write its file and exit.
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
    }
}

/// Mean and range of `values`.
fn summary(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, lo, hi)
}

/// The markdown section: a table of ratios (mean and range over the runs) and one of the
/// services' CPU per operation.
fn section(p: &Plan<'_>, samples: &[Sample]) -> String {
    let of = |b: usize, w: Workload| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.build == b && s.workload == w)
            .collect()
    };
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}\n");
    let _ = writeln!(
        out,
        "{} runs, interleaved; one gRPC channel, concurrency {}, {} operations per workload; \
         throughput as a ratio to raw etcd measured in the same block (mean, range); the watch \
         as p99 lag from a write's acknowledgement to each watcher's receipt.\n",
        p.runs, p.concurrency, p.ops
    );
    let names: Vec<&str> = p.builds.iter().map(|b| b.name.as_str()).collect();
    let _ = writeln!(out, "| workload | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    for w in Workload::ALL {
        let mut cells = Vec::new();
        for b in 0..p.builds.len() {
            let s = of(b, w);
            let values: Vec<f64> = s.iter().map(|s| s.value).collect();
            let (mean, lo, hi) = summary(&values);
            let errors: usize = s.iter().map(|s| s.errors).sum();
            let mut cell = if w == Workload::Watch {
                let ratios: Vec<f64> = s.iter().map(|s| s.watch_ratio).collect();
                let (r, _, _) = summary(&ratios);
                format!("{mean:.2} ms ({lo:.2}-{hi:.2}), {r:.2}x raw")
            } else {
                format!("{mean:.2} ({lo:.2}-{hi:.2})")
            };
            if errors > 0 {
                let _ = write!(cell, ", {errors} errors");
            }
            cells.push(cell);
        }
        let _ = writeln!(out, "| {} | {} |", w.label(p), cells.join(" | "));
    }
    let _ = writeln!(
        out,
        "\nCPU of storage-svc + registry-svc per operation, µs (mean over the runs; the watch: \
         per delivered event):\n"
    );
    let _ = writeln!(out, "| workload | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    for w in Workload::ALL {
        let cells: Vec<String> = (0..p.builds.len())
            .map(|b| {
                let values: Vec<f64> = of(b, w).iter().map(|s| s.service_cpu).collect();
                format!("{:.0}", summary(&values).0)
            })
            .collect();
        let _ = writeln!(out, "| {} | {} |", w.label(p), cells.join(" | "));
    }
    let _ = writeln!(out, "\n{END}");
    out
}
