//! Go's text forms of values, where kubestore must write what Go's `fmt` writes: messages
//! clients match (Pod Security's details, structured-merge-diff's paths) quote strings as
//! Go's `%q` does.

/// Go's `%q` of a string (`strconv.Quote`): `"`, `\` and what Go does not print are escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if go_printable(c) => out.push(c),
            c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint`, near enough: not a control, not a space other than ` `, not a
/// format character or private use. (Go also escapes unassigned code points; std has no
/// table of them.)
fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format_or_private = matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{fffe}'..='\u{ffff}'
            | '\u{e000}'..='\u{f8ff}'
            | '\u{f0000}'..='\u{10ffff}'
    );
    !(c.is_control() || c.is_whitespace() || format_or_private)
}
