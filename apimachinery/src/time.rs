//! Timestamps as Kubernetes writes them: `metav1.Time` is RFC 3339 in UTC with `Z` and whole
//! seconds (`2024-05-01T10:00:00Z`); `metav1.MicroTime` (an Event's `eventTime`) has six
//! fraction digits. A stored timestamp with nanoseconds is written as a MicroTime.

use chrono::{DateTime, SecondsFormat, Utc};

/// `seconds`/`nanos` since the epoch as upstream writes them.
pub fn format(seconds: i64, nanos: i32) -> String {
    let Some(t) = DateTime::<Utc>::from_timestamp(seconds, nanos.clamp(0, 999_999_999) as u32)
    else {
        return "1970-01-01T00:00:00Z".into();
    };
    if nanos == 0 {
        t.to_rfc3339_opts(SecondsFormat::Secs, true)
    } else {
        t.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

/// An RFC 3339 timestamp (any offset, any fraction) as seconds and nanoseconds since the epoch.
pub fn parse(text: &str) -> Option<(i64, i32)> {
    let t = DateTime::parse_from_rfc3339(text).ok()?;
    Some((t.timestamp(), t.timestamp_subsec_nanos() as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_upstream() {
        assert_eq!(format(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(format(951_782_400, 0), "2000-02-29T00:00:00Z");
        assert_eq!(format(1, 123_456_000), "1970-01-01T00:00:01.123456Z");
        assert_eq!(parse("2000-02-29T00:00:00Z"), Some((951_782_400, 0)));
        assert_eq!(parse("2000-02-29T01:00:00+01:00"), Some((951_782_400, 0)));
        assert_eq!(parse("yesterday"), None);
    }
}
