//! Generated names (upstream's `NameGenerator`): `generateName` plus a random suffix.
//!
//! Below both `strategy` (whose default `generate_name` uses it) and `create` (which retries a
//! clash), so neither imports the other for it.

/// Attempts at a generated name before giving up (upstream: 8).
pub const GENERATE_NAME_ATTEMPTS: usize = 8;
/// Alphabet of generated suffixes (no vowels, no confusable characters), as upstream.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `base` (cut to 58 characters) plus 5 random characters, upstream's SimpleNameGenerator.
pub fn generate_name(base: &str) -> String {
    let base: String = base.chars().take(58).collect();
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let suffix: String = bytes[..5]
        .iter()
        .map(|b| SUFFIX_ALPHABET[*b as usize % SUFFIX_ALPHABET.len()] as char)
        .collect();
    format!("{base}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_extend_the_base() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..].bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
        assert_ne!(generate_name("web-"), generate_name("web-"));
        assert_eq!(generate_name(&"a".repeat(100)).len(), 63);
    }
}
