//! Resource versions as text, parsed as upstream parses them.

/// A resourceVersion as upstream's `strconv.ParseUint(rv, 10, 64)` reads it, limited to etcd's
/// revision range (`i64`): ASCII digits only. Rust's own integer parsing also accepts a leading
/// `+`, which no Kubernetes client sends and upstream rejects (found by the `resource_version`
/// fuzz target).
pub fn parse_revision(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_revision;

    #[test]
    fn digits_only_within_etcds_range() {
        assert_eq!(parse_revision("0"), Some(0));
        assert_eq!(parse_revision("007"), Some(7));
        assert_eq!(parse_revision("9223372036854775807"), Some(i64::MAX));
        for bad in [
            "",
            "+5",
            "-1",
            " 5",
            "5 ",
            "1e3",
            "9223372036854775808",
            "0x10",
        ] {
            assert_eq!(parse_revision(bad), None, "{bad:?}");
        }
    }
}
