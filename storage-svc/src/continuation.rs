//! Continue tokens of paged lists (upstream's `storage.EncodeContinue`/`DecodeContinue`).
//!
//! A token carries the revision every page of the chain is read at and the key to start the
//! next page from, relative to the list's prefix (the last evaluated key plus `\0`). It is
//! opaque to clients: base64url (no padding) of a small protobuf message with a format version,
//! rather than upstream's JSON, since nothing outside kubestore reads it. A revision of `-1`
//! (only made after a compaction, see `list`) means "continue at the current revision".

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use prost::Message;

/// Format version of the tokens we make.
const VERSION: u32 = 1;
/// Longest token accepted (a start key is at most a key's length).
const MAX_TOKEN_BYTES: usize = 4096;

#[derive(Clone, PartialEq, prost::Message)]
struct Token {
    #[prost(uint32, tag = "1")]
    v: u32,
    #[prost(int64, tag = "2")]
    rv: i64,
    #[prost(string, tag = "3")]
    start: String,
}

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// Revision to read at; `-1`: the current one.
    pub rv: i64,
    /// Key to start from, relative to the list's prefix.
    pub start: String,
}

/// Encodes a token for the page after `start` (relative key) at revision `rv`.
pub fn encode(rv: i64, start: &str) -> String {
    URL_SAFE_NO_PAD.encode(
        Token {
            v: VERSION,
            rv,
            start: start.to_string(),
        }
        .encode_to_vec(),
    )
}

/// Decodes a client's token; errors say what is wrong with it.
pub fn decode(token: &str) -> Result<Continue, String> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err("continue key is not valid: too long".into());
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| "continue key is not valid: not base64url".to_string())?;
    let t = Token::decode(bytes.as_slice())
        .map_err(|_| "continue key is not valid: not a kubestore token".to_string())?;
    if t.v != VERSION {
        return Err(format!(
            "server does not recognize this encoded version: {}",
            t.v
        ));
    }
    if t.rv == 0 || t.rv < -1 {
        return Err(format!("incorrect encoded start resourceVersion: {}", t.rv));
    }
    if t.start.is_empty() {
        return Err("encoded start key empty".into());
    }
    // Upstream's path-traversal defence: the relative key must be a clean path.
    let path = t.start.trim_end_matches('\0');
    if path.starts_with('/')
        || path
            .split('/')
            .any(|s| s == "." || s == ".." || (s.is_empty() && path.contains('/')))
    {
        return Err(format!("continue key is not valid: {:?}", t.start));
    }
    Ok(Continue {
        rv: t.rv,
        start: t.start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let t = encode(42, "default/b\0");
        assert!(
            !t.contains('=') && !t.contains('+') && !t.contains('/'),
            "{t}"
        );
        assert_eq!(
            decode(&t),
            Ok(Continue {
                rv: 42,
                start: "default/b\0".into()
            })
        );
        assert_eq!(decode(&encode(-1, "a\0")).map(|c| c.rv), Ok(-1));
    }

    #[test]
    fn bad_tokens_are_refused_with_a_reason() {
        for (token, why) in [
            ("!!!".to_string(), "not base64url"),
            (
                URL_SAFE_NO_PAD.encode([0xff, 0x01]),
                "not a kubestore token",
            ),
            (
                URL_SAFE_NO_PAD.encode(
                    Token {
                        v: 9,
                        rv: 1,
                        start: "a".into(),
                    }
                    .encode_to_vec(),
                ),
                "version",
            ),
            (encode(0, "a"), "resourceVersion"),
            (encode(-7, "a"), "resourceVersion"),
            (encode(5, ""), "empty"),
            (encode(5, "../secrets/x"), "not valid"),
            (encode(5, "/abs"), "not valid"),
            (encode(5, "a//b"), "not valid"),
            ("a".repeat(5000), "too long"),
        ] {
            let e = decode(&token).expect_err(&token);
            assert!(e.contains(why), "{token}: {e}");
        }
    }
}
