//! CPU time per operation of each process: etcd, storage-svc, registry-svc and the load
//! generator (this process), from `/proc/<pid>/stat` (`utime + stime`, every thread) before and
//! after a row. On two shared cores the ratios move with whoever got the CPU; the CPU each
//! process spent per operation does not, so every row reports it next to its ratio.
//!
//! `/proc` counts in clock ticks of `USER_HZ`, which Linux fixes at 100 for user space on
//! every architecture we run on: a 10 ms resolution, i.e. 5 µs per operation over a
//! 2,000-operation row, enough to compare layers whose costs are tens of µs.

use std::sync::Mutex;

/// Ticks per second of `/proc/<pid>/stat` (`USER_HZ`).
const TICKS_PER_SEC: f64 = 100.0;

/// The processes measured, by the name rows print (several processes of one name add up:
/// the cache-off pair runs beside the first).
static WATCHED: Mutex<Vec<(&'static str, u32)>> = Mutex::new(Vec::new());

/// The order names print in.
pub(crate) const NAMES: [&str; 4] = ["etcd", "storage", "registry", "bench"];

/// Measures `pid` under `name` (`etcd`, `storage`, `registry`).
pub(crate) fn watch(name: &'static str, pid: u32) {
    if let Ok(mut w) = WATCHED.lock() {
        w.push((name, pid));
    }
}

/// CPU seconds `pid` has used, or None once it is gone.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces, inside parentheses): state is
    // field 3, utime 14 and stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3)?.parse::<f64>().ok();
    Some((ticks(14)? + ticks(15)?) / TICKS_PER_SEC)
}

/// A reading of every measured process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sample(Vec<(&'static str, u32, f64)>);

/// Reads every measured process, and this one as `bench`.
pub(crate) fn sample() -> Sample {
    let mut out = Vec::new();
    let watched = WATCHED.lock().map(|w| w.clone()).unwrap_or_default();
    for (name, pid) in watched.into_iter().chain([("bench", std::process::id())]) {
        if let Some(s) = cpu_seconds(pid) {
            out.push((name, pid, s));
        }
    }
    Sample(out)
}

/// CPU per operation of each name between two samples, in µs, in [`NAMES`] order (0 for a
/// name with no process).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PerOp(pub(crate) Vec<(&'static str, f64)>);

impl Sample {
    /// What each name spent from `self` to `later`, per one of `ops` operations.
    pub(crate) fn per_op(&self, later: &Sample, ops: usize) -> PerOp {
        let ops = ops.max(1) as f64;
        PerOp(
            NAMES
                .iter()
                .map(|name| {
                    let spent: f64 = later
                        .0
                        .iter()
                        .filter(|(n, _, _)| n == name)
                        .filter_map(|(_, pid, after)| {
                            let before = self.0.iter().find(|(_, p, _)| p == pid)?.2;
                            Some(after - before)
                        })
                        .sum();
                    (*name, spent * 1e6 / ops)
                })
                .collect(),
        )
    }
}

impl PerOp {
    /// `etcd 130 · storage 62 · registry 0 · bench 40` as one table cell (µs per operation).
    pub(crate) fn cell(&self) -> String {
        if self.0.is_empty() {
            return "-".into();
        }
        self.0
            .iter()
            .map(|(_, us)| format!("{us:.0}"))
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// µs per operation of `name`.
    pub(crate) fn of(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, us)| *us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_measured_and_spends_cpu() {
        let before = sample();
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        let after = sample();
        let per = before.per_op(&after, 1);
        assert!(per.of("bench") > 0.0, "{per:?}");
        assert_eq!(per.of("etcd"), 0.0);
        assert_eq!(per.cell().split(" / ").count(), NAMES.len());
    }
}
