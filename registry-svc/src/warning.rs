//! Warnings for clients (upstream's `warning.Recorder`): the REST API writes them as `Warning`
//! headers and the gRPC APIs as `warning` metadata, both in the same form and bounds.

use std::collections::HashSet;

use http::HeaderValue;

/// Upstream's warning recorder's bounds (`endpoints/filters/warning.go`): warnings total at
/// most this many characters ...
pub const WARNING_TOTAL_CHARS: usize = 4 * 1024;

/// ... and once past it, each is cut to this many.
pub const WARNING_ITEM_CHARS: usize = 256;

/// `warnings` as upstream's recorder writes them: each text once, in order, as `299 - "text"`
/// (quotes and backslashes escaped). When they would total more than [`WARNING_TOTAL_CHARS`],
/// every warning is cut to [`WARNING_ITEM_CHARS`] and no more are written once the total is
/// reached: 100,000 unknown fields once made 5.4 MB of headers, more than any client reads.
pub fn warning_headers(warnings: &[String]) -> Vec<HeaderValue> {
    let mut seen = HashSet::new();
    let texts: Vec<&str> = warnings
        .iter()
        .map(String::as_str)
        .filter(|w| !w.is_empty() && seen.insert(*w))
        .collect();
    let total: usize = texts.iter().map(|t| t.chars().count()).sum();
    let truncating = total > WARNING_TOTAL_CHARS;
    let mut written = 0;
    let mut out = Vec::new();
    for text in texts {
        if truncating && written >= WARNING_TOTAL_CHARS {
            break;
        }
        let text: String = if truncating {
            text.chars().take(WARNING_ITEM_CHARS).collect()
        } else {
            text.to_string()
        };
        written += text.chars().count();
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            out.push(v);
        }
    }
    out
}
