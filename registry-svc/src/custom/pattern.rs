//! Regular expressions written by definitions (`pattern`, CEL's `matches()`), compiled with a
//! bound on the program they compile to, so that no definition or rule can make registry-svc
//! build a huge automaton.
//!
//! A minimal stand-in: the `regex` crate with a 1 MiB compiled-size limit. (Another change
//! brings RE2's ASCII classes and a tighter limit; the signature is the contract.)

/// Compiled programs larger than this are refused.
const SIZE_LIMIT: usize = 1 << 20;

/// Compiles `pattern`; the reason it was refused otherwise.
pub fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}
