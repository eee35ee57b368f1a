//! The Markdown report: the table, RSS, and the targets at the highest concurrency. The
//! hand-written analysis after [`ANALYSIS_MARKER`] in an existing report is kept.

use crate::{Cli, runner::Stats};

/// One row of the report.
pub(crate) struct Row {
    pub(crate) layer: &'static str,
    pub(crate) op: &'static str,
    pub(crate) baseline: &'static str,
    pub(crate) concurrency: usize,
    pub(crate) stats: Stats,
    pub(crate) note: String,
    /// CPU µs per operation of each process during the row.
    pub(crate) cpu: crate::cpu::PerOp,
}

pub(crate) const ANALYSIS_MARKER: &str = "<!-- analysis: written by hand, kept across runs -->";

#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    cli: &Cli,
    rows: &[Row],
    tracing_rows: &[Row],
    listwatch_rows: &[Row],
    list_memory: &[(String, f64, f64)],
    spans: usize,
    idle: &[(&str, f64)],
    peak: &[(&str, f64)],
) -> String {
    use std::fmt::Write;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let etcd_version = std::process::Command::new("etcd")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Machine: {cores} cores. {etcd_version}, local, one member, data on local disk. Everything \
         (etcd, storage-svc, registry-svc, the load generator) shares those cores. {} operations per \
         row; concurrency = workers issuing operations back to back; {} gRPC connections per client. \
         Produced by `cargo run --release -p kubestore-bench`; ratios compare each row with raw etcd \
         doing the same etcd work in the same run (see `bench/src/scenarios.rs`).\n",
        cli.ops, cli.channels
    );
    let _ = writeln!(
        out,
        "| layer | operation | concurrency | ops/s | p50 ms | p99 ms | ratio to raw etcd | CPU µs/op etcd / storage / registry / bench | errors | notes |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    let baseline = |op: &str, c: usize| {
        rows.iter()
            .chain(listwatch_rows)
            .find(|r| r.layer == "raw etcd" && r.op == op && r.concurrency == c)
            .map(|r| r.stats.ops_per_sec())
    };
    for r in rows.iter().chain(tracing_rows).chain(listwatch_rows) {
        let ratio = baseline(r.baseline, r.concurrency)
            .filter(|b| *b > 0.0)
            .map(|b| r.stats.ops_per_sec() / b);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {} | {} | {} | {} |",
            r.layer,
            r.op,
            r.concurrency,
            r.stats.ops_per_sec(),
            r.stats.p50.as_secs_f64() * 1e3,
            r.stats.p99.as_secs_f64() * 1e3,
            ratio.map_or("-".to_string(), |x| format!("{x:.2}")),
            r.cpu.cell(),
            r.stats.errors,
            r.note
        );
    }
    let _ = writeln!(
        out,
        "\nSpans received by the OTLP receiver during the traced run: {spans}.\n"
    );
    let _ = writeln!(out, "| service | RSS idle MiB | RSS peak MiB |");
    let _ = writeln!(out, "|---|---:|---:|");
    for ((name, i), (_, p)) in idle.iter().zip(peak) {
        let _ = writeln!(out, "| {name}-svc | {i:.1} | {p:.1} |");
    }

    // Targets at the highest concurrency.
    let c = cli.concurrency.iter().copied().max().unwrap_or(1);
    let rate = |layer: &str, op: &str| {
        rows.iter()
            .chain(tracing_rows)
            .find(|r| r.layer == layer && r.op == op && r.concurrency == c)
            .map(|r| r.stats.ops_per_sec())
            .unwrap_or(0.0)
    };
    let raw = |op: &str| baseline(op, c).unwrap_or(f64::NAN);
    let note = |op: &str| {
        rows.iter()
            .find(|r| r.layer == "registry-svc ConfigMaps" && r.op == op && r.concurrency == c)
            .map(|r| r.note.clone())
            .unwrap_or_default()
    };
    let targets = [
        (
            "storage-svc Create / raw create",
            rate("storage-svc", "create") / raw("create"),
            0.85,
            String::new(),
        ),
        (
            "registry-svc Create / raw create",
            rate("registry-svc ConfigMaps", "create") / raw("create"),
            0.75,
            String::new(),
        ),
        (
            "storage-svc Get / raw get",
            rate("storage-svc", "get") / raw("get"),
            0.6,
            String::new(),
        ),
        (
            "registry-svc Get / raw get",
            rate("registry-svc ConfigMaps", "get") / raw("get"),
            0.5,
            String::new(),
        ),
        (
            "registry-svc hot update, with resourceVersion / raw hot CAS loop",
            rate("registry-svc ConfigMaps", "hot update") / raw("hot update"),
            2.0,
            note("hot update"),
        ),
        (
            "registry-svc hot update, no resourceVersion / raw hot CAS loop",
            rate("registry-svc ConfigMaps", "hot update (no rv)") / raw("hot update"),
            2.0,
            note("hot update (no rv)"),
        ),
        (
            "storage-svc hot GuaranteedUpdate / raw hot CAS loop",
            rate("storage-svc", "hot update") / raw("hot update"),
            2.0,
            String::new(),
        ),
        (
            "tracing on / tracing off (registry Create)",
            rate("registry-svc, tracing on", "ConfigMaps create")
                / rate("registry-svc, tracing off", "ConfigMaps create"),
            0.9,
            String::new(),
        ),
    ];
    let find = |layer: &str, op: &str| {
        listwatch_rows
            .iter()
            .find(|r| r.layer == layer && r.op == op)
    };
    let list_ratio = |op: &str| match (find("registry-svc ConfigMaps", op), find("raw etcd", op)) {
        (Some(r), Some(b)) => r.stats.ops_per_sec() / b.stats.ops_per_sec().max(1e-9),
        _ => f64::NAN,
    };
    let watch = "watch fan-out (100 watchers)";
    let lag_ratio = match (
        find("registry-svc ConfigMaps", watch),
        find("raw etcd", watch),
    ) {
        (Some(r), Some(b)) => r.stats.p99.as_secs_f64() / b.stats.p99.as_secs_f64().max(1e-6),
        _ => f64::NAN,
    };
    let _ = writeln!(out, "\n## List and Watch (issue 8)\n");
    let _ = writeln!(out, "| target | measured | required | met |");
    let _ = writeln!(out, "|---|---:|---:|---|");
    for (name, got, want) in [
        (
            "registry List of the objects, one page / raw etcd range",
            list_ratio("list 10000 (one page)"),
            0.35,
        ),
        (
            "registry List of the objects, pages of 500 / raw etcd paged range",
            list_ratio("list 10000 (pages of 500)"),
            0.35,
        ),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {got:.2} | >= {want} | {} |",
            if got >= want { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(
        out,
        "| watch fan-out p99 lag / raw etcd's | {lag_ratio:.2} | <= 2 | {} |",
        if lag_ratio <= 2.0 { "yes" } else { "**no**" }
    );
    for (service, growth, size) in list_memory {
        let x = growth / size.max(1e-9);
        let _ = writeln!(
            out,
            "| {service} RSS growth during the one-page list / its encoded size ({growth:.1} MiB / {size:.1} MiB) | {x:.2} | <= 3 | {} |",
            if x <= 3.0 { "yes" } else { "**no**" }
        );
    }
    // The watch cache's targets (issue 9): cache on, cache off.
    let rate_of = |layer: &str, op: &str| {
        rows.iter()
            .chain(listwatch_rows)
            .find(|r| {
                r.layer == layer
                    && r.op == op
                    && (r.concurrency == c || r.concurrency == 1 && op.starts_with("list"))
            })
            .map(|r| r.stats.ops_per_sec())
    };
    let ratio_of = |layer: &str, op: &str, base: &str| -> Option<f64> {
        let b = rows
            .iter()
            .chain(listwatch_rows)
            .find(|r| {
                r.layer == "raw etcd"
                    && r.op == base
                    && (r.concurrency == c || r.concurrency == 1 && base.starts_with("list"))
            })
            .map(|r| r.stats.ops_per_sec())?;
        Some(rate_of(layer, op)? / b.max(1e-9))
    };
    let fanout_lag = |layer: &str, op: &str| -> Option<f64> {
        let b = find("raw etcd", "watch fan-out (100 watchers)")?;
        let r = listwatch_rows
            .iter()
            .find(|r| r.layer == layer && r.op == op)?;
        Some(r.stats.p99.as_secs_f64() / b.stats.p99.as_secs_f64().max(1e-6))
    };
    let show = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let _ = writeln!(out, "\n## Watch cache (issue 9), concurrency {c}\n");
    let _ = writeln!(
        out,
        "| target | cache on | cache off | required | met (cache on) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---|---|");
    let cm = "registry-svc ConfigMaps";
    let cm_off = "registry-svc ConfigMaps, cache off";
    let st = "storage-svc";
    let st_off = "storage-svc, cache off";
    for (name, on, off, want, at_least) in [
        (
            "storage-svc Get / raw get",
            ratio_of(st, "get", "get"),
            ratio_of(st_off, "get", "get"),
            1.0,
            true,
        ),
        (
            "registry-svc Get / raw get",
            ratio_of(cm, "get", "get"),
            ratio_of(cm_off, "get", "get"),
            0.8,
            true,
        ),
        (
            "registry-svc Update with resourceVersion / raw CAS (get + txn)",
            ratio_of(cm, "update (get+update rv)", "update"),
            ratio_of(cm_off, "update (get+update rv)", "update"),
            0.45,
            true,
        ),
        (
            "registry-svc Delete / raw delete (get + txn)",
            ratio_of(cm, "delete", "delete"),
            ratio_of(cm_off, "delete", "delete"),
            0.45,
            true,
        ),
        (
            "registry-svc List of the objects, one page / raw range",
            ratio_of(cm, "list 10000 (one page)", "list 10000 (one page)"),
            ratio_of(cm_off, "list 10000 (one page)", "list 10000 (one page)"),
            1.0,
            true,
        ),
        (
            "hot object, resourceVersion + retry on Conflict / raw CAS loop",
            ratio_of(cm, "hot update", "hot update"),
            ratio_of(cm_off, "hot update", "hot update"),
            1.0,
            true,
        ),
        (
            "registry-svc Create / raw create",
            ratio_of(cm, "create", "create"),
            ratio_of(cm_off, "create", "create"),
            0.75,
            true,
        ),
        (
            "watch fan-out p99 lag: 1,000 registry watchers / 100 raw etcd watchers",
            fanout_lag(cm, "watch fan-out (1000 watchers)"),
            None,
            1.0,
            false,
        ),
    ] {
        let met = on.is_some_and(|x| if at_least { x >= want } else { x <= want });
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} {want} | {} |",
            show(on),
            show(off),
            if at_least { ">=" } else { "<=" },
            if met { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(out, "\n## Targets (concurrency {c})\n");
    let _ = writeln!(out, "| target | measured | required | met |");
    let _ = writeln!(out, "|---|---:|---:|---|");
    for (name, got, want, note) in targets {
        let note = if note.is_empty() {
            String::new()
        } else {
            format!(" ({note})")
        };
        let _ = writeln!(
            out,
            "| {name}{note} | {got:.2} | >= {want} | {} |",
            if got >= want { "yes" } else { "**no**" }
        );
    }
    for (name, p) in peak {
        let _ = writeln!(
            out,
            "| {name}-svc peak RSS MiB | {p:.1} | <= 64 | {} |",
            if *p <= 64.0 { "yes" } else { "**no**" }
        );
    }
    cpu_targets(&mut out, rows, c);
    out
}

/// The CPU targets: per registry ConfigMaps operation, storage-svc + registry-svc together
/// against the CPU etcd spends on the same operation done raw (the raw etcd row's: writes no
/// more than etcd; Get under half). The registry row's own etcd CPU is shown too: what etcd
/// spends per registry operation (the watch cache's feed and revision reads included).
fn cpu_targets(out: &mut String, rows: &[Row], c: usize) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\n## CPU per operation (concurrency {c}, registry-svc ConfigMaps)\n"
    );
    let _ = writeln!(
        out,
        "| operation | etcd µs, raw | etcd µs, through registry-svc | storage-svc µs | registry-svc µs | services / etcd raw | required | met |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
    let find = |layer: &str, op: &str| {
        rows.iter()
            .find(|r| r.layer == layer && r.op == op && r.concurrency == c)
    };
    for (op, raw_op, want) in [
        ("create", "create", 1.0),
        ("get", "get", 0.5),
        ("update (get+update rv)", "update", 1.0),
        ("delete", "delete", 1.0),
    ] {
        let (Some(r), Some(raw)) = (
            find("registry-svc ConfigMaps", op),
            find("raw etcd", raw_op),
        ) else {
            continue;
        };
        let etcd = raw.cpu.of("etcd");
        let (through, storage, registry) =
            (r.cpu.of("etcd"), r.cpu.of("storage"), r.cpu.of("registry"));
        let ratio = (storage + registry) / etcd.max(1e-9);
        let _ = writeln!(
            out,
            "| {op} | {etcd:.0} | {through:.0} | {storage:.0} | {registry:.0} | {ratio:.2} | <= {want} | {} |",
            if ratio <= want { "yes" } else { "**no**" }
        );
    }
}

/// Writes `section` into `path` in place of the text between `markers` (the section's first
/// and last lines) when it has them; otherwise before the hand-written analysis
/// (`before_analysis`, where a full run rewrites it) or at the end (where a full run keeps it).
pub(crate) fn splice(
    path: &std::path::Path,
    (begin, end): (&str, &str),
    section: &str,
    before_analysis: bool,
) -> Result<(), String> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let new = match (old.find(begin), old.find(end)) {
        (Some(b), Some(e)) if e > b => {
            let after = &old[e + end.len()..];
            format!("{}{}{}", &old[..b], section.trim_end(), after)
        }
        _ => match old.find(ANALYSIS_MARKER).filter(|_| before_analysis) {
            Some(i) => format!("{}{section}\n{}", &old[..i], &old[i..]),
            None => format!("{}\n\n{section}", old.trim_end()),
        },
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(path, new).map_err(|e| format!("writing {}: {e}", path.display()))
}
