//! Sizes both services must agree on, and the bounding of texts that travel in gRPC trailers.
//!
//! Error messages and details are sent as HTTP/2 trailers (`grpc-message`,
//! `grpc-status-details-bin`), and gRPC's C-core clients (Python, C++, Ruby, C#) refuse a
//! header list over 16 KiB: the caller then sees RESOURCE_EXHAUSTED instead of our error.
//! Every message we put in a status goes through [`bounded`].

/// etcd's default `--max-request-bytes` (1.5 MiB): a larger request is refused by etcd.
pub const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Bytes of an etcd put txn besides the value and (twice) the key: compare, op headers, lease.
pub const TXN_OVERHEAD_BYTES: usize = 64;

/// Longest storage key (etcd has no key limit of its own besides the request size).
pub const MAX_KEY_BYTES: usize = 1024;

/// Largest message storage-svc accepts: an object etcd can hold plus its key and envelope.
pub const STORAGE_MAX_MESSAGE_BYTES: usize = 2 * 1024 * 1024;

/// Largest message registry-svc accepts: upstream's `MaxRequestBodyBytes` (3 MB). Anything
/// larger could not be stored anyway.
pub const REGISTRY_MAX_MESSAGE_BYTES: usize = 3 * 1024 * 1024;

/// Longest `grpc-message` we send, in bytes (before percent-encoding).
pub const MAX_STATUS_MESSAGE_BYTES: usize = 1024;

/// Longest value of an `ErrorInfo.metadata` entry, in bytes.
pub const MAX_METADATA_VALUE_BYTES: usize = 256;

/// The size of the etcd request that stores `value_len` bytes under a key of `key_len` bytes.
pub fn etcd_request_bytes(key_len: usize, value_len: usize) -> usize {
    value_len + 2 * key_len + TXN_OVERHEAD_BYTES
}

/// `s` cut to at most `max` bytes at a character boundary, with "..." marking a cut.
pub fn bounded(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_char_boundaries() {
        assert_eq!(bounded("short", 10), "short");
        assert_eq!(bounded("abcdefghij", 8), "abcde...");
        let s = "ééééé"; // 2 bytes each
        let b = bounded(s, 6);
        assert!(b.len() <= 6 && b.ends_with("..."), "{b}");
    }
}
