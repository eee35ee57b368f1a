//! The translation of a Go (RE2) pattern into a Rust pattern of the same meaning (see the
//! parent module's docs): one pass over the pattern as Go's `regexp/syntax` parser reads it
//! (`parse`, `parseEscape`, `parseClass`, `parsePerlFlags`, `parseRepeat`), writing each token
//! in Rust's syntax and refusing what Go refuses, in Go's words.

use super::go_error;

/// Go's `maxRepeat`: the largest count of `x{n,m}`, and of the product of nested counts.
const MAX_REPEAT: u64 = 1000;

/// A Go pattern rewritten as a Rust pattern of the same meaning; see the module docs.
pub fn translate(pattern: &str) -> Result<String, String> {
    let mut t = Translator {
        src: pattern,
        at: 0,
        out: String::with_capacity(pattern.len() * 2),
        groups: Vec::new(),
        top: 1,
        last: None,
        last_repeat: None,
    };
    t.run()?;
    Ok(t.out)
}

/// A group being translated: the largest repeat product of anything in it so far.
struct Group {
    max: u64,
}

struct Translator<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    at: usize,
    out: String,
    groups: Vec<Group>,
    /// The largest repeat product outside any group.
    top: u64,
    /// The repeat product of the last atom (what a repetition would apply to); None when
    /// nothing can be repeated (start, after `(` or `|`).
    last: Option<u64>,
    /// Where the repetition operator just read started (another right after it is Go's
    /// "invalid nested repetition operator").
    last_repeat: Option<usize>,
}

const PERL_CLASSES: [(char, &str, bool); 6] = [
    ('d', "0-9", false),
    ('D', "0-9", true),
    ('s', r"\t\n\x0C\r ", false),
    ('S', r"\t\n\x0C\r ", true),
    ('w', "0-9A-Za-z_", false),
    ('W', "0-9A-Za-z_", true),
];

const POSIX_CLASSES: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

impl<'a> Translator<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    /// Something repeatable was written (its repeat product `product`).
    fn atom(&mut self, product: u64) {
        self.last = Some(product);
        self.note(product);
    }

    fn note(&mut self, product: u64) {
        let max = match self.groups.last_mut() {
            Some(g) => &mut g.max,
            None => &mut self.top,
        };
        *max = (*max).max(product);
    }

    fn literal(&mut self, c: char) {
        self.out
            .push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
        self.atom(1);
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek() {
            let start = self.at;
            let repeated =
                matches!(c, '*' | '+' | '?') || (c == '{' && parse_repeat(self.rest()).is_some());
            if !repeated {
                self.last_repeat = None;
            }
            match c {
                '(' => self.open()?,
                ')' => {
                    self.bump();
                    let Some(g) = self.groups.pop() else {
                        return Err(go_error("unexpected )", self.src));
                    };
                    self.out.push(')');
                    self.atom(g.max);
                }
                '|' => {
                    self.bump();
                    self.out.push('|');
                    self.last = None;
                }
                '^' | '$' | '.' => {
                    self.bump();
                    self.out.push(c);
                    self.atom(1);
                }
                '[' => self.class()?,
                '*' | '+' | '?' => {
                    self.bump();
                    self.repeat(start, 0, 0, false)?;
                }
                '{' => match parse_repeat(self.rest()) {
                    None => {
                        self.bump();
                        self.literal('{');
                    }
                    Some((min, max, len)) => {
                        self.at += len;
                        let text = &self.src[start..self.at];
                        if min < 0
                            || min > MAX_REPEAT as i64
                            || max > MAX_REPEAT as i64
                            || (max >= 0 && min > max)
                        {
                            return Err(go_error("invalid repeat count", text));
                        }
                        self.repeat(start, min, max, true)?;
                    }
                },
                '\\' => self.escape()?,
                _ => {
                    self.bump();
                    self.literal(c);
                }
            }
        }
        if !self.groups.is_empty() {
            return Err(go_error("missing closing )", self.src));
        }
        Ok(())
    }

    /// A repetition operator (`src[start..at]`), and its `?` (non-greedy) if any. `counted`:
    /// `{min,max}` (max -1: unbounded), which Go checks against `maxRepeat`.
    fn repeat(&mut self, start: usize, min: i64, max: i64, counted: bool) -> Result<(), String> {
        if self.peek() == Some('?') {
            self.bump();
        }
        let text = &self.src[start..self.at];
        if let Some(previous) = self.last_repeat {
            return Err(go_error(
                "invalid nested repetition operator",
                &self.src[previous..self.at],
            ));
        }
        let Some(inner) = self.last else {
            return Err(go_error("missing argument to repetition operator", text));
        };
        let product = if !counted {
            inner
        } else if max == 0 {
            // `x{0}`: Go's repeatIsValid stops there, whatever x holds.
            1
        } else {
            let m = if max < 0 { min } else { max };
            let product = (m.max(1) as u64).saturating_mul(inner);
            if (min >= 2 || max >= 2) && product > MAX_REPEAT {
                return Err(go_error("invalid repeat count", text));
            }
            product
        };
        self.out.push_str(text);
        self.last = Some(product);
        self.note(product);
        self.last_repeat = Some(start);
        Ok(())
    }

    /// `(`: a group, a named group, or flags (Go's `parsePerlFlags`).
    fn open(&mut self) -> Result<(), String> {
        let start = self.at;
        self.bump();
        if self.peek() != Some('?') {
            self.out.push('(');
            self.groups.push(Group { max: 1 });
            self.last = None;
            return Ok(());
        }
        let rest = self.rest();
        let named = if rest.len() > 3 && rest.starts_with("?P<") {
            Some(3)
        } else if rest.len() > 2 && rest.starts_with("?<") {
            Some(2)
        } else {
            None
        };
        if let Some(skip) = named {
            let Some(end) = rest.find('>') else {
                return Err(go_error("invalid named capture", &self.src[start..]));
            };
            let name = &rest[skip..end];
            self.at += end + 1;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(go_error("invalid named capture", &self.src[start..self.at]));
            }
            // Names change no match, and Go allows some Rust refuses (`(?<1a>x)`).
            self.out.push('(');
            self.groups.push(Group { max: 1 });
            self.last = None;
            return Ok(());
        }
        self.bump(); // '?'
        let mut flags = String::new();
        let mut negated = false;
        let mut saw_flag = false;
        while let Some(c) = self.bump() {
            match c {
                'i' | 'm' | 's' | 'U' => {
                    flags.push(c);
                    saw_flag = true;
                }
                '-' if !negated => {
                    flags.push('-');
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' if !negated || saw_flag => {
                    if c == ':' {
                        self.out.push_str(&format!("(?{flags}:"));
                        self.groups.push(Group { max: 1 });
                    } else if !flags.is_empty() {
                        self.out.push_str(&format!("(?{flags})"));
                    }
                    // Nothing after `(?:` or a flag change can be repeated yet (Go would
                    // repeat what came before `(?i)`; Rust refuses that, and so do we).
                    self.last = None;
                    return Ok(());
                }
                _ => break,
            }
        }
        Err(go_error(
            "invalid or unsupported Perl syntax",
            &self.src[start..self.at],
        ))
    }

    /// `\` outside a class.
    fn escape(&mut self) -> Result<(), String> {
        let start = self.at;
        self.bump();
        let Some(c) = self.peek() else {
            return Err(go_error("trailing backslash at end of expression", ""));
        };
        match c {
            'A' | 'z' => {
                self.bump();
                self.out.push('\\');
                self.out.push(c);
                self.atom(1);
            }
            // Go's word boundary is ASCII's.
            'b' | 'B' => {
                self.bump();
                self.out
                    .push_str(if c == 'b' { r"(?-u:\b)" } else { r"(?-u:\B)" });
                self.atom(1);
            }
            'C' => return Err(go_error("invalid escape sequence", r"\C")),
            'Q' => {
                self.bump();
                let rest = self.rest();
                let (lit, skip) = match rest.find(r"\E") {
                    Some(end) => (&rest[..end], end + 2),
                    None => (rest, rest.len()),
                };
                let lit = lit.to_string();
                self.at += skip;
                for c in lit.chars() {
                    self.literal(c);
                }
            }
            'p' | 'P' => {
                let class = self.unicode_class(start)?;
                self.out.push_str(&class);
                self.atom(1);
            }
            _ => {
                if let Some((_, ranges, negated)) = PERL_CLASSES.iter().find(|(k, ..)| *k == c) {
                    self.bump();
                    self.out
                        .push_str(&format!("[{}{ranges}]", if *negated { "^" } else { "" }));
                    self.atom(1);
                } else {
                    self.at = start;
                    let c = self.escaped_char()?;
                    self.literal(c);
                }
            }
        }
        Ok(())
    }

    /// `\p{Name}`, `\pN`, `\P...`, `\p{^Name}` at `start` (the backslash), as Rust's
    /// `\p{Name}` / `\P{Name}`.
    fn unicode_class(&mut self, start: usize) -> Result<String, String> {
        self.at = start + 1;
        let negated = self.bump() == Some('P');
        let name = match self.bump() {
            Some('{') => {
                let rest = self.rest();
                let Some(end) = rest.find('}') else {
                    return Err(go_error(
                        "invalid character class range",
                        &self.src[start..],
                    ));
                };
                let name = rest[..end].to_string();
                self.at += end + 1;
                name
            }
            Some(c) => c.to_string(),
            None => String::new(),
        };
        let seq = &self.src[start..self.at];
        let (negated, name) = match name.strip_prefix('^') {
            Some(n) => (!negated, n.to_string()),
            None => (negated, name),
        };
        let class = format!("\\{}{{{name}}}", if negated { 'P' } else { 'p' });
        let known = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '))
            && regex_automata::util::syntax::parse(&class).is_ok();
        if !known {
            return Err(go_error("invalid character class range", seq));
        }
        Ok(class)
    }

    /// One escaped character (Go's `parseEscape`), at a backslash.
    fn escaped_char(&mut self) -> Result<char, String> {
        let start = self.at;
        self.bump();
        let Some(c) = self.bump() else {
            return Err(go_error("trailing backslash at end of expression", ""));
        };
        let invalid = |t: &Self| go_error("invalid escape sequence", &t.src[start..t.at]);
        match c {
            _ if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok(c),
            '0'..='7' => {
                let next_octal = self.peek().is_some_and(|d| ('0'..='7').contains(&d));
                // A single non-zero digit is a backreference: not supported.
                if c != '0' && !next_octal {
                    return Err(invalid(self));
                }
                let mut r = c as u32 - '0' as u32;
                for _ in 1..3 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            self.bump();
                            r = r * 8 + (d as u32 - '0' as u32);
                        }
                        _ => break,
                    }
                }
                char::from_u32(r).ok_or_else(|| invalid(self))
            }
            'x' => {
                let value = if self.peek() == Some('{') {
                    self.bump();
                    let mut r: u32 = 0;
                    let mut digits = 0;
                    loop {
                        match self.bump() {
                            Some('}') if digits > 0 => break,
                            Some(d) if d.is_ascii_hexdigit() => {
                                r = r * 16 + d.to_digit(16).unwrap_or(0);
                                digits += 1;
                                if r > 0x10FFFF {
                                    return Err(invalid(self));
                                }
                            }
                            _ => return Err(invalid(self)),
                        }
                    }
                    r
                } else {
                    let hi = self.bump().and_then(|d| d.to_digit(16));
                    let lo = self.bump().and_then(|d| d.to_digit(16));
                    match (hi, lo) {
                        (Some(h), Some(l)) => h * 16 + l,
                        _ => return Err(invalid(self)),
                    }
                };
                char::from_u32(value).ok_or_else(|| invalid(self))
            }
            'a' => Ok('\x07'),
            'f' => Ok('\x0C'),
            'n' => Ok('\n'),
            'r' => Ok('\r'),
            't' => Ok('\t'),
            'v' => Ok('\x0B'),
            _ => Err(invalid(self)),
        }
    }

    /// A class character, escaped or not (Go's `parseClassChar`).
    fn class_char(&mut self, class_start: usize) -> Result<char, String> {
        match self.peek() {
            None => Err(go_error("missing closing ]", &self.src[class_start..])),
            Some('\\') => self.escaped_char(),
            Some(c) => {
                self.bump();
                Ok(c)
            }
        }
    }

    /// `[...]` (Go's `parseClass`), written item by item as a Rust class: every literal
    /// escaped (Rust gives `[`, `&&`, `--` and `~~` meanings Go does not), Perl classes as
    /// their ASCII ranges (negated ones as a nested negated class).
    fn class(&mut self) -> Result<(), String> {
        let start = self.at;
        self.bump();
        self.out.push('[');
        if self.peek() == Some('^') {
            self.bump();
            self.out.push('^');
        }
        let mut first = true;
        loop {
            match self.peek() {
                None => return Err(go_error("missing closing ]", &self.src[start..])),
                Some(']') if !first => {
                    self.bump();
                    break;
                }
                _ => {}
            }
            first = false;
            let rest = self.rest();
            if rest.len() > 2
                && rest.starts_with("[:")
                && let Some(end) = rest[2..].find(":]")
            {
                let name = &rest[..end + 4];
                let bare = name[2..name.len() - 2].trim_start_matches('^');
                if !POSIX_CLASSES.contains(&bare) || name[2..].starts_with("^^") {
                    return Err(go_error("invalid character class range", name));
                }
                self.out.push_str(name);
                self.at += name.len();
                continue;
            }
            if rest.starts_with("\\p") || rest.starts_with("\\P") {
                let class = self.unicode_class(self.at)?;
                self.out.push_str(&class);
                continue;
            }
            if let Some(k) = rest.strip_prefix('\\').and_then(|r| r.chars().next())
                && let Some((_, ranges, negated)) = PERL_CLASSES.iter().find(|(c, ..)| *c == k)
            {
                self.at += 2;
                if *negated {
                    self.out.push_str(&format!("[^{ranges}]"));
                } else {
                    self.out.push_str(ranges);
                }
                continue;
            }
            let item = self.at;
            let lo = self.class_char(start)?;
            let mut hi = lo;
            let rest = self.rest();
            if rest.len() >= 2 && rest.starts_with('-') && !rest[1..].starts_with(']') {
                self.bump();
                hi = self.class_char(start)?;
                if hi < lo {
                    return Err(go_error(
                        "invalid character class range",
                        &self.src[item..self.at],
                    ));
                }
            }
            push_class_char(&mut self.out, lo);
            if hi != lo {
                self.out.push('-');
                push_class_char(&mut self.out, hi);
            }
        }
        self.out.push(']');
        self.atom(1);
        Ok(())
    }
}

/// A class member as Rust reads it literally.
fn push_class_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    }
}

/// `{min}`, `{min,}` or `{min,max}` at the start of `s` (Go's `parseRepeat`): (min, max,
/// bytes), max -1 when unbounded, min -1 when a number is too big; None when `s` starts no
/// repetition (the `{` is then a literal).
fn parse_repeat(s: &str) -> Option<(i64, i64, usize)> {
    let t = s.strip_prefix('{')?;
    let (min, t) = parse_int(t)?;
    let (max, t) = if let Some(t) = t.strip_prefix(',') {
        if t.starts_with('}') {
            (-1, t)
        } else {
            parse_int(t)?
        }
    } else {
        (min, t)
    };
    let t = t.strip_prefix('}')?;
    let min = if max < -1 { -1 } else { min };
    Some((min, max.max(-1), s.len() - t.len()))
}

/// A decimal without leading zeros (-2 when it is too big, as Go's -1 is taken).
fn parse_int(s: &str) -> Option<(i64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits >= 2 && s.starts_with('0')) {
        return None;
    }
    let n = if digits > 8 {
        -2
    } else {
        s[..digits].parse().ok()?
    };
    Some((n, &s[digits..]))
}
