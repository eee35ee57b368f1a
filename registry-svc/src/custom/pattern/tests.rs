//! Go's (RE2's) meaning and refusals, checked against what Go's `regexp` does (the expected
//! values are Go's).

use super::{MAX_PROGRAM_BYTES, compile, compile_sized};

fn matches(pattern: &str, s: &str) -> bool {
    compile(pattern)
        .unwrap_or_else(|e| panic!("{pattern} compiles: {e}"))
        .is_match(s)
}

#[test]
fn perl_classes_and_word_boundaries_are_ascii_as_in_go() {
    // Arabic-Indic digits, full-width letters, an accented letter, a no-break space.
    assert!(matches(r"^\d+$", "80"));
    assert!(!matches(r"^\d+$", "٨٠"));
    assert!(matches(r"^\w+$", "a_Z9"));
    assert!(!matches(r"^\w+$", "ａｂｃ"));
    assert!(!matches(r"^\w+$", "é"));
    assert!(matches(r"^\s+$", " \t\n\r\x0C"));
    assert!(!matches(r"^\s$", "\u{a0}"));
    assert!(!matches(r"^\s$", "\x0B"), "Go's \\s has no vertical tab");
    // Negations match the rest of Unicode.
    assert!(matches(r"^\D$", "٨"));
    assert!(matches(r"^\W$", "é"));
    assert!(matches(r"^\S$", "\u{a0}"));
    // Inside classes, and inside negated classes.
    assert!(!matches(r"^[\d]+$", "٨"));
    assert!(matches(r"^[\W]$", "é"));
    assert!(!matches(r"^[^\d]$", "5"));
    assert!(matches(r"^[^\d]$", "٨"));
    assert!(matches(r"^[^\D]$", "5"));
    assert!(!matches(r"^[^\D]$", "٨"));
    assert!(matches(r"^[\w-]+$", "a-b"));
    assert!(
        matches(r"^[\d-z]+$", "1-z"),
        "a `-` after a class is itself"
    );
    // \b: 'é' is no ASCII word character, so "aé" has a boundary after 'a'.
    assert!(matches(r"a\b", "aé"));
    assert!(!matches(r"a\B", "aé"));
    // Case folding still applies to the ASCII classes, as Go folds them (Kelvin sign).
    assert!(matches(r"(?i)^\w$", "\u{212A}"));
}

#[test]
fn go_syntax_rust_reads_otherwise_is_translated() {
    // A `{` that starts no repetition is a literal.
    assert!(matches(r"^a{$", "a{"));
    assert!(matches(r"^x{,5}$", "x{,5}"));
    assert!(matches(r"^a{01}$", "a{01}"));
    // \Q...\E quotes, octal escapes, escaped punctuation.
    assert!(matches(r"^\Q.*+\E$", ".*+"));
    assert!(!matches(r"^\Q.*\E$", "ab"));
    assert!(matches(r"^\101\0$", "A\0"));
    assert!(matches(r"^\<\>\_$", "<>_"), "escaped punctuation is itself");
    // `[` inside a class is a literal; Rust's class operators are plain characters.
    assert!(matches(r"^[a[b]+$", "a[b"));
    assert!(matches(r"^[&&~~-]+$", "&~-"));
    assert!(matches(r"^[]a]+$", "]a"));
    assert!(matches(r"^[[:alpha:][:^ascii:]]+$", "aé"));
    // Named groups whatever Rust thinks of their names; flags Go knows.
    assert!(matches(r"^(?P<1st>a)(?<x_y>b)$", "ab"));
    assert!(matches(r"(?i)^ABC$", "abc"));
    assert!(matches(r"(?s:^.$)", "\n"));
    assert!(matches(r"(?)^a$", "a"));
    assert!(matches(r"^\p{Greek}+\PL\p{^Greek}$", "αβ1a"));
    assert!(matches(r"^\x41\x{1F600}$", "A😀"));
}

#[test]
fn what_go_refuses_is_refused_in_gos_words() {
    let refused = |pattern: &str| compile(pattern).expect_err(pattern);
    assert_eq!(
        refused("a{1001}"),
        "error parsing regexp: invalid repeat count: `{1001}`"
    );
    assert_eq!(
        refused(r"(\w{2}){600}"),
        "error parsing regexp: invalid repeat count: `{600}`"
    );
    assert_eq!(
        refused("a{3,2}"),
        "error parsing regexp: invalid repeat count: `{3,2}`"
    );
    assert_eq!(
        refused("a**"),
        "error parsing regexp: invalid nested repetition operator: `**`"
    );
    assert_eq!(
        refused("a{2}{3}"),
        "error parsing regexp: invalid nested repetition operator: `{2}{3}`"
    );
    assert_eq!(
        refused("*a"),
        "error parsing regexp: missing argument to repetition operator: `*`"
    );
    assert_eq!(
        refused("(?x)a"),
        "error parsing regexp: invalid or unsupported Perl syntax: `(?x`"
    );
    assert_eq!(
        refused("(?i-)a"),
        "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`"
    );
    assert_eq!(
        refused(r"\8"),
        "error parsing regexp: invalid escape sequence: `\\8`"
    );
    assert_eq!(
        refused(r"a\1"),
        "error parsing regexp: invalid escape sequence: `\\1`"
    );
    assert_eq!(
        refused(r"\C"),
        "error parsing regexp: invalid escape sequence: `\\C`"
    );
    assert_eq!(
        refused(r"[a-\d]"),
        "error parsing regexp: invalid escape sequence: `\\d`"
    );
    assert_eq!(
        refused("[z-a]"),
        "error parsing regexp: invalid character class range: `z-a`"
    );
    assert_eq!(
        refused("[[:word:][:nope:]]"),
        "error parsing regexp: invalid character class range: `[:nope:]`"
    );
    assert_eq!(
        refused(r"\p{Nope}"),
        "error parsing regexp: invalid character class range: `\\p{Nope}`"
    );
    assert_eq!(
        refused("[abc"),
        "error parsing regexp: missing closing ]: `[abc`"
    );
    assert_eq!(
        refused("(a"),
        "error parsing regexp: missing closing ): `(a`"
    );
    assert_eq!(refused("a)"), "error parsing regexp: unexpected ): `a)`");
    assert_eq!(
        refused("a\\"),
        "error parsing regexp: trailing backslash at end of expression: ``"
    );
    assert_eq!(
        refused("(?<=a)b"),
        "error parsing regexp: invalid named capture: `(?<=a)b`"
    );
}

#[test]
fn programs_are_sized_as_with_ascii_classes_and_bounded() {
    // Valid in Go, and small once \w is ASCII (Rust's Unicode \w{300} passed 10 MiB).
    for p in [
        r"\w{300}",
        r"^\w{1000}$",
        r"^.{1000}$",
        r"(?i)^[a-z]{1000}$",
    ] {
        let (_, bytes) = compile_sized(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(bytes <= MAX_PROGRAM_BYTES, "{p}: {bytes}");
    }
    let (_, bytes) = compile_sized(r"\w{200}").expect("compiles");
    assert!(bytes < 64 << 10, "\\w{{200}} takes {bytes} bytes");
    // Large Unicode classes repeated: over the limit, refused before Rust compiles them.
    let e = compile(r"\pL{100}").expect_err("too large");
    assert!(
        e.starts_with("error parsing regexp: expression too large: `\\pL{100}`"),
        "{e}"
    );
    assert!(compile(r"\pL{10}").is_ok());
}
