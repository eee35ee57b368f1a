//! Regular expressions as upstream reads them: a schema's `pattern` (and CEL's `matches()`)
//! is Go's `regexp` syntax (RE2), compiled here with Rust's `regex`, with RE2's meaning and a
//! bound on what a compiled pattern may cost.
//!
//! **Meaning.** Go's Perl classes are ASCII: `\d` = `[0-9]`, `\w` = `[0-9A-Za-z_]`, `\s` =
//! `[\t\n\f\r ]`, `\b` an ASCII word boundary; Rust's are Unicode (`^\d+$` would accept "٨٠",
//! and each `\w` compiles to a program a hundred times larger). [`translate`] rewrites a Go
//! pattern into a Rust pattern of the same meaning, token by token (Go's `regexp/syntax`
//! parser: `parse`, `parseEscape`, `parseClass`, `parsePerlFlags`, `parseRepeat`): the Perl
//! classes, also inside character classes and their negations; `\Q...\E`; octal escapes; a
//! `{` that starts no repetition is a literal; `[` inside a class is a literal; escaped
//! punctuation is itself (`\<` is `<`, a word boundary in Rust); named groups lose their
//! names (Go allows names Rust refuses; names change no match). What Go refuses is refused
//! with Go's words (`error parsing regexp: invalid repeat count: `{1001}``): repeat counts
//! over 1000, also nested ones whose product passes 1000 (`repeatIsValid`), stacked
//! repetitions (`a**`), flags other than `imsU`, unknown escapes.
//!
//! **Cost.** A pattern's program (its Thompson NFA, measured before the pattern is compiled)
//! may take at most [`MAX_PROGRAM_BYTES`], and matching at most [`MATCH_CACHE_BYTES`] of lazy
//! DFA cache, so compiling one pattern takes milliseconds and a bounded amount of memory; a
//! schema also bounds the sum over its patterns (`openapi`). Go allows programs of up to 3.3
//! million instructions (`maxSize`); ours are smaller (see the README's deviations): with
//! ASCII classes, every pattern of RE2's repeat limits over small classes fits (`\w{1000}`
//! takes 57 KiB, `.{1000}` 270 KiB); large Unicode classes repeated many times (`\pL{100}`)
//! do not. Rust's nesting limit (250 groups) is also lower than Go's (1000).

mod translate;

use regex_automata::nfa::thompson;

pub use translate::translate;

/// Largest program one pattern may compile to: its Thompson NFA's heap bytes.
pub const MAX_PROGRAM_BYTES: usize = 1 << 20;

/// Lazy DFA cache one pattern may use while matching (Rust's default is 2 MiB per cache).
pub const MATCH_CACHE_BYTES: usize = 1 << 20;

/// Compiles a Go (RE2) pattern, with Go's meaning; the refusal in Go's words otherwise.
pub fn compile(pattern: &str) -> Result<regex::Regex, String> {
    compile_sized(pattern).map(|(re, _)| re)
}

#[cfg(test)]
thread_local! {
    /// Patterns compiled by this thread (tests count them).
    pub(crate) static COMPILED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`compile`], and the bytes of the pattern's program (a schema bounds their sum).
pub fn compile_sized(pattern: &str) -> Result<(regex::Regex, usize), String> {
    #[cfg(test)]
    COMPILED.with(|n| n.set(n.get() + 1));
    let rust = translate(pattern)?;
    let bytes = program_bytes(pattern, &rust)?;
    // The program was measured: the builder's own limit (per NFA, forward and reverse) is a
    // safety net that what was measured never reaches.
    let re = regex::RegexBuilder::new(&rust)
        .size_limit(4 * MAX_PROGRAM_BYTES)
        .dfa_size_limit(MATCH_CACHE_BYTES)
        .build()
        .map_err(|e| rust_error(pattern, &e.to_string()))?;
    Ok((re, bytes))
}

/// The heap bytes of `rust`'s forward NFA, or "expression too large" past the limit.
fn program_bytes(pattern: &str, rust: &str) -> Result<usize, String> {
    let nfa = thompson::Compiler::new()
        .configure(thompson::Config::new().nfa_size_limit(Some(MAX_PROGRAM_BYTES)))
        .build(rust);
    match nfa {
        Ok(nfa) => Ok(nfa.memory_usage()),
        Err(e) if e.size_limit().is_some() => Err(format!(
            "{}; compiled, it would take more than {} KiB",
            go_error("expression too large", pattern),
            MAX_PROGRAM_BYTES >> 10
        )),
        Err(e) => Err(rust_error(pattern, &e.to_string())),
    }
}

/// What Rust's parser refused in a translated pattern (what Go also refuses: nesting past the
/// limit, an unknown Unicode class, ...), in Go's form.
fn rust_error(pattern: &str, message: &str) -> String {
    let last = message.lines().last().unwrap_or(message);
    let last = last.trim().trim_start_matches("error: ");
    if last.contains("nest limit") {
        return go_error("expression nests too deeply", pattern);
    }
    format!("error parsing regexp: {last}: `{pattern}`")
}

/// Go's `syntax.Error` text.
fn go_error(code: &str, expr: &str) -> String {
    format!("error parsing regexp: {code}: `{expr}`")
}

#[cfg(test)]
mod tests;
