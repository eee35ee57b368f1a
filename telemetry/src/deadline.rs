//! The caller's deadline, read from the `grpc-timeout` request header.
//!
//! Work done on behalf of a request (etcd calls, calls to storage-svc) must end inside the
//! caller's deadline, so that the caller gets our UNAVAILABLE with a reason instead of its own
//! DEADLINE_EXCEEDED with none. We keep a margin of 10% (at most 100 ms) for the answer to travel
//! back.

use std::time::Duration;
use tokio::time::Instant;

/// The point in time by which a request's work must be finished.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// A deadline `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now() + timeout,
        }
    }

    /// The deadline of a request: its `grpc-timeout` less a margin, capped at `default`
    /// (which is also used when the caller sent no timeout).
    pub fn from_metadata(metadata: &tonic::metadata::MetadataMap, default: Duration) -> Self {
        let budget = metadata
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout)
            .map(|t| t - (t / 10).min(Duration::from_millis(100)))
            .map_or(default, |t| t.min(default));
        Self::after(budget)
    }

    /// Time left, zero once passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// The instant itself.
    pub fn instant(&self) -> Instant {
        self.at
    }
}

/// Parses a `grpc-timeout` value: at most 8 digits and a unit (H, M, S, m, u, n).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_may_name_a_host() {
        assert_eq!(
            super::parse_socket_addr("127.0.0.1:50052").map(|a| a.port()),
            Ok(50052)
        );
        let local = super::parse_socket_addr("localhost:50052").expect("localhost resolves");
        assert!(local.ip().is_loopback() && local.port() == 50052, "{local}");
        assert!(super::parse_socket_addr("localhost").is_err());
    }

    #[test]
    fn parses_every_unit_and_rejects_garbage() {
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout("150m"), Some(Duration::from_millis(150)));
        assert_eq!(parse_grpc_timeout("7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse_grpc_timeout("9n"), Some(Duration::from_nanos(9)));
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("12x"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
    }

    #[tokio::test]
    async fn deadline_takes_the_callers_timeout_less_a_margin() {
        let mut md = tonic::metadata::MetadataMap::new();
        md.insert("grpc-timeout", "500m".parse().expect("valid header"));
        let d = Deadline::from_metadata(&md, Duration::from_secs(10));
        let left = d.remaining();
        assert!(
            left <= Duration::from_millis(450) && left > Duration::from_millis(300),
            "{left:?}"
        );
        let d =
            Deadline::from_metadata(&tonic::metadata::MetadataMap::new(), Duration::from_secs(3));
        assert!(d.remaining() > Duration::from_millis(2900));
    }
}

/// Parses an address flag: `127.0.0.1:50052`, `[::1]:50052`, or a host name and port
/// (`localhost:50052`, resolved once at start, first address), as users of other tools type it.
pub fn parse_socket_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("{s:?} is not HOST:PORT: {e}"))?
        .next()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

/// Parses a duration flag: `10s`, `500ms`, `2m`, `1h`, or plain seconds (`30`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: expected e.g. 10s, 500ms, 2m, 1h"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!(
            "invalid duration {s:?}: unit must be ms, s, m or h"
        )),
    }
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("").is_err());
    }
}
