//! kubectl-like tables: upper-case headers, columns padded to their widest cell, three spaces
//! apart; ages like `45s`, `3m`, `2h`, `5d`.

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

/// Time since `created` (seconds since the epoch), as kubectl shows ages.
pub fn age(created: Option<i64>, now: i64) -> String {
    let Some(created) = created else {
        return "<unknown>".into();
    };
    let s = (now - created).max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
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
    fn ages_and_timestamps() {
        assert_eq!(age(Some(100), 145), "45s");
        assert_eq!(age(Some(0), 600), "10m");
        assert_eq!(age(Some(0), 3 * 3600), "3h");
        assert_eq!(age(Some(0), 5 * 86_400), "5d");
        assert_eq!(age(None, 5), "<unknown>");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_353_701), "2026-11-22T13:21:41Z");
    }
}
