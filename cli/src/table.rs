//! Tables as kubectl prints them: the server's `meta.k8s.io/v1` Tables (column definitions
//! and rows computed by registry-svc for every kind, as upstream's server-side printing), with
//! upper-case headers, columns padded to their widest cell, three spaces apart; priority-1
//! columns only with `-o wide`; NAMESPACE first under `-A`, read from each row's object.

use serde_json::Value;

/// Which of a Table's columns are printed, and how (kubectl's `printTable` options).
#[derive(Debug, Clone)]
pub struct Printer {
    /// Each column's header and whether it is printed.
    columns: Vec<(String, bool)>,
    /// A NAMESPACE column first, from each row's object (`-A` on a namespaced resource).
    namespace: bool,
}

impl Printer {
    /// A printer of the column definitions `columns` (a Table's `columnDefinitions`):
    /// priority-1 columns only when `wide`.
    pub fn new(columns: &Value, wide: bool, namespace: bool) -> Self {
        let columns = columns
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        let name = c["name"].as_str().unwrap_or_default().to_uppercase();
                        (name, wide || c["priority"].as_i64().unwrap_or(0) == 0)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { columns, namespace }
    }

    /// The header line's cells.
    pub fn header(&self) -> Vec<String> {
        let mut h = Vec::new();
        if self.namespace {
            h.push("NAMESPACE".to_string());
        }
        h.extend(
            self.columns
                .iter()
                .filter(|(_, shown)| *shown)
                .map(|(n, _)| n.clone()),
        );
        h
    }

    /// A row's cells (`{"cells": [...], "object": {...}}`).
    pub fn cells(&self, row: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if self.namespace {
            out.push(
                row.pointer("/object/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        let cells = row["cells"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for ((_, shown), cell) in self.columns.iter().zip(cells) {
            if *shown {
                out.push(cell_text(cell));
            }
        }
        out
    }

    /// The table of `rows`, aligned.
    pub fn table(&self, rows: &[Value]) -> String {
        let rows: Vec<Vec<String>> = rows.iter().map(|r| self.cells(r)).collect();
        render(&self.header(), &rows)
    }

    /// One row on its own line, padded as a table of that row would pad it (kubectl's `-w`
    /// prints each change so).
    pub fn line(&self, row: &Value) -> String {
        let t = render(&self.header(), &[self.cells(row)]);
        t.lines().nth(1).unwrap_or_default().to_string()
    }
}

/// A cell as kubectl prints it: a string up to its first line break (then `...`), anything
/// else as its JSON text, nothing for null (upstream's `printTable`).
fn cell_text(cell: &Value) -> String {
    match cell {
        Value::Null => String::new(),
        Value::String(s) => match s.find(['\n', '\r', '\x0c']) {
            Some(i) => format!("{}...", &s[..i]),
            None => s.clone(),
        },
        other => other.to_string(),
    }
}

/// Columns aligned as kubectl aligns them.
pub fn render(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                let pad = widths.get(i).copied().unwrap_or(0);
                out.push_str(&format!("{c:<pad$}   "));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(header);
    for row in rows {
        out.push('\n');
        out.push_str(&line(row));
    }
    out
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, proleptic Gregorian).
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_like_kubectl() {
        let t = render(
            &["NAME".into(), "STATUS".into(), "AGE".into()],
            &[
                vec!["web".into(), "Running".into(), "5s".into()],
                vec!["database-0".into(), "Terminating".into(), "3m".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME         STATUS        AGE\nweb          Running       5s\ndatabase-0   Terminating   3m"
        );
    }

    #[test]
    fn server_tables_print_as_kubectl_prints_them() {
        let columns = serde_json::json!([
            {"name": "Name", "priority": 0},
            {"name": "Ready", "priority": 0},
            {"name": "Nominated Node", "priority": 1},
            {"name": "Age", "priority": 0},
        ]);
        let row = serde_json::json!({
            "cells": ["web", 2, null, "5s\nmore"],
            "object": {"metadata": {"namespace": "team-a", "name": "web"}},
        });
        let narrow = Printer::new(&columns, false, false);
        assert_eq!(
            narrow.table(std::slice::from_ref(&row)),
            "NAME   READY   AGE\nweb    2       5s..."
        );
        let wide = Printer::new(&columns, true, true);
        assert_eq!(
            wide.header(),
            ["NAMESPACE", "NAME", "READY", "NOMINATED NODE", "AGE"]
        );
        assert_eq!(wide.cells(&row), ["team-a", "web", "2", "", "5s..."]);
        assert_eq!(narrow.line(&row), "web    2       5s...");
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_353_701), "2026-11-22T13:21:41Z");
    }
}
