//! Label and field selectors (apimachinery's `labels.Parse` and `fields.ParseSelector`),
//! parsed here and handed to storage-svc as kind-agnostic requirements: labels by key, fields by
//! their path of protobuf field numbers, which each kind's strategy declares
//! ([`SelectableField`]). storage-svc evaluates them where pages are filled.
//!
//! Label grammar: comma-separated requirements, whitespace between tokens ignored:
//! `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>N`,
//! `key<N`. Keys are qualified names, values label values; `()` is the set {""}.
//! Field grammar: comma-separated `field=v`, `field==v`, `field!=v`; `\\`, `\,`, `\=` escape.

use kubestore_proto::storage::v1::{
    FieldRequirement, LabelRequirement, Selector, field_requirement, label_requirement::Operator,
};

use crate::{
    error::ApiError,
    validation::{label_value, qualified_name},
};

/// Longest selector accepted, in bytes (a selector is a handful of terms).
pub const MAX_SELECTOR_BYTES: usize = 4096;

/// A field a kind can be selected by: its name in field selectors and where it is in the
/// encoded object.
#[derive(Debug, Clone, Copy)]
pub struct SelectableField {
    /// The field label, e.g. `spec.nodeName`.
    pub label: &'static str,
    /// Field numbers from the object's root, e.g. `[2, 2]`.
    pub path: &'static [u32],
    /// How the field is read.
    pub ty: field_requirement::Type,
}

impl SelectableField {
    /// A string field.
    pub const fn string(label: &'static str, path: &'static [u32]) -> Self {
        Self {
            label,
            path,
            ty: field_requirement::Type::String,
        }
    }
}

/// `metadata.name` and `metadata.namespace`, selectable on every kind (upstream's
/// `DefaultNamespaceScopedAttr`).
pub const METADATA_FIELDS: &[SelectableField] = &[
    SelectableField::string("metadata.name", &[1, 1]),
    SelectableField::string("metadata.namespace", &[1, 3]),
];

/// One parsed field term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field label.
    pub field: String,
    /// `=`/`==` (true) or `!=` (false).
    pub equals: bool,
    /// The unescaped value.
    pub value: String,
}

/// A parsed request selection.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The requirements for storage.
    pub selector: Selector,
    /// The field terms as parsed (to narrow the key by name or namespace).
    pub field_terms: Vec<FieldTerm>,
}

impl Selection {
    /// The value a field selector pins `field` to (`field=value`), if any.
    pub fn pinned(&self, field: &str) -> Option<&str> {
        self.field_terms
            .iter()
            .find(|t| t.equals && t.field == field)
            .map(|t| t.value.as_str())
    }

    /// Whether nothing is selected on.
    pub fn is_empty(&self) -> bool {
        self.selector.labels.is_empty() && self.selector.fields.is_empty()
    }
}

/// A selectable field inside a custom object's JSON content (a definition's
/// `selectableFields`): storage reads the JSON at field 2 and follows `keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonField {
    /// The field label, e.g. `spec.color`.
    pub label: String,
    /// Keys from the object's root, e.g. `["spec", "color"]`.
    pub keys: Vec<String>,
    /// How the value is read.
    pub ty: field_requirement::Type,
}

/// The protobuf field of a custom object that holds its JSON content (`custom::object`).
pub const JSON_CONTENT_FIELD: u32 = 2;

/// Parses both selectors against `fields`, the kind's selectable fields, and `json_fields`, a
/// custom kind's.
pub fn parse(
    label_selector: &str,
    field_selector: &str,
    fields: &[SelectableField],
    json_fields: &[JsonField],
) -> Result<Selection, ApiError> {
    let labels = parse_labels(label_selector).map_err(|e| {
        ApiError::BadRequest(format!(
            "unable to parse labelSelector {:?}: {e}",
            kubestore_proto::limits::bounded(label_selector, 256)
        ))
    })?;
    let terms = parse_fields(field_selector).map_err(|e| {
        ApiError::BadRequest(format!(
            "invalid fieldSelector {:?}: {e}",
            kubestore_proto::limits::bounded(field_selector, 256)
        ))
    })?;
    let mut requirements = Vec::with_capacity(terms.len());
    for t in &terms {
        if let Some(f) = fields.iter().find(|f| f.label == t.field) {
            requirements.push(FieldRequirement {
                path: f.path.to_vec(),
                r#type: f.ty as i32,
                equals: t.equals,
                value: t.value.clone(),
                json_path: Vec::new(),
            });
        } else if let Some(f) = json_fields.iter().find(|f| f.label == t.field) {
            requirements.push(FieldRequirement {
                path: vec![JSON_CONTENT_FIELD],
                r#type: f.ty as i32,
                equals: t.equals,
                value: t.value.clone(),
                json_path: f.keys.clone(),
            });
        } else {
            return Err(ApiError::BadRequest(format!(
                "field label not supported: {}",
                kubestore_proto::limits::bounded(&t.field, 256)
            )));
        }
    }
    Ok(Selection {
        selector: Selector {
            labels,
            fields: requirements,
        },
        field_terms: terms,
    })
}

/// Parses a field selector into its terms.
pub fn parse_fields(s: &str) -> Result<Vec<FieldTerm>, String> {
    if s.len() > MAX_SELECTOR_BYTES {
        return Err(format!("longer than {MAX_SELECTOR_BYTES} bytes"));
    }
    let mut terms = Vec::new();
    for part in split_unescaped(s, ',') {
        if part.is_empty() {
            continue;
        }
        let Some((field, op, raw)) = split_term(part) else {
            return Err(format!(
                "invalid selector: '{part}'; can't understand '{part}'"
            ));
        };
        terms.push(FieldTerm {
            field: field.to_string(),
            equals: op != "!=",
            value: unescape(raw)?,
        });
    }
    Ok(terms)
}

/// Splits `s` at every `sep` not escaped by a backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// `lhs op rhs` at the first position where `!=`, `==` or `=` starts (upstream's order).
fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        for op in ["!=", "==", "="] {
            if term[i..].starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

/// Upstream's `UnescapeValue`: `\\`, `\,` and `\=` only; bare `,` or `=` are errors.
fn unescape(v: &str) -> Result<String, String> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return Err("invalid escape sequence".into()),
            },
            ',' | '=' => return Err(format!("invalid selector value: unescaped {c:?} in {v:?}")),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Tokens of the label-selector language.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    In,
    NotIn,
    Open,
    Close,
    Comma,
}

fn lex(s: &str) -> Result<Vec<Token>, String> {
    let special = |c: char| matches!(c, '!' | '=' | ',' | '(' | ')' | '>' | '<');
    let mut tokens = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if special(c) {
            chars.next();
            let next_is_eq = chars.peek().is_some_and(|(_, n)| *n == '=');
            tokens.push(match c {
                '!' if next_is_eq => {
                    chars.next();
                    Token::NotEq
                }
                '!' => Token::Not,
                '=' if next_is_eq => {
                    chars.next();
                    Token::DoubleEq
                }
                '=' => Token::Eq,
                '>' => Token::Gt,
                '<' => Token::Lt,
                '(' => Token::Open,
                ')' => Token::Close,
                _ => Token::Comma,
            });
            continue;
        }
        let mut end = i;
        while let Some(&(j, c)) = chars.peek() {
            if c.is_whitespace() || special(c) {
                break;
            }
            end = j + c.len_utf8();
            chars.next();
        }
        let word = &s[i..end];
        tokens.push(match word {
            "in" => Token::In,
            "notin" => Token::NotIn,
            w => Token::Ident(w.to_string()),
        });
    }
    Ok(tokens)
}

fn describe(t: Option<&Token>) -> String {
    match t {
        None => "end of string".into(),
        Some(Token::Ident(w)) => format!("'{w}'"),
        Some(t) => format!("{t:?}"),
    }
}

/// Parses a label selector into requirements (upstream's grammar and validation).
pub fn parse_labels(s: &str) -> Result<Vec<LabelRequirement>, String> {
    if s.len() > MAX_SELECTOR_BYTES {
        return Err(format!("longer than {MAX_SELECTOR_BYTES} bytes"));
    }
    let tokens = lex(s)?;
    let mut out = Vec::new();
    let mut i = 0;
    if tokens.is_empty() {
        return Ok(out);
    }
    loop {
        let (req, next) = requirement(&tokens, i)?;
        out.push(req);
        i = next;
        match tokens.get(i) {
            None => return Ok(out),
            Some(Token::Comma) => {
                i += 1;
                if tokens.get(i).is_none() {
                    return Err("found end of string, expected: a label key".into());
                }
            }
            other => {
                return Err(format!(
                    "found {}, expected: ',' or 'end of string'",
                    describe(other)
                ));
            }
        }
    }
}

fn key_at(tokens: &[Token], i: usize) -> Result<String, String> {
    match tokens.get(i) {
        Some(Token::Ident(k)) => {
            if let Some(e) = qualified_name(k) {
                return Err(format!("invalid label key {k:?}: {e}"));
            }
            Ok(k.clone())
        }
        other => Err(format!("found {}, expected: a label key", describe(other))),
    }
}

fn value(v: &str) -> Result<String, String> {
    match label_value(v) {
        Some(e) => Err(format!("invalid label value: {v:?}: {e}")),
        None => Ok(v.to_string()),
    }
}

fn requirement(tokens: &[Token], mut i: usize) -> Result<(LabelRequirement, usize), String> {
    let req = |key: String, op: Operator, values: Vec<String>| LabelRequirement {
        key,
        operator: op as i32,
        values,
    };
    if tokens.get(i) == Some(&Token::Not) {
        let key = key_at(tokens, i + 1)?;
        return Ok((req(key, Operator::DoesNotExist, vec![]), i + 2));
    }
    let key = key_at(tokens, i)?;
    i += 1;
    let op = match tokens.get(i) {
        None | Some(Token::Comma) => return Ok((req(key, Operator::Exists, vec![]), i)),
        Some(Token::Eq | Token::DoubleEq) => Operator::Equals,
        Some(Token::NotEq) => Operator::NotEquals,
        Some(Token::Gt) => Operator::GreaterThan,
        Some(Token::Lt) => Operator::LessThan,
        Some(Token::In) => Operator::In,
        Some(Token::NotIn) => Operator::NotIn,
        other => {
            return Err(format!(
                "found {}, expected: in, notin, =, ==, !=, gt, lt",
                describe(other)
            ));
        }
    };
    i += 1;
    match op {
        Operator::In | Operator::NotIn => {
            if tokens.get(i) != Some(&Token::Open) {
                return Err(format!("found {}, expected: '('", describe(tokens.get(i))));
            }
            i += 1;
            let mut values = Vec::new();
            loop {
                match tokens.get(i) {
                    Some(Token::Ident(v)) => {
                        values.push(value(v)?);
                        i += 1;
                    }
                    // `()` and `(a,)` carry the empty value.
                    Some(Token::Close | Token::Comma) => values.push(String::new()),
                    other => {
                        return Err(format!(
                            "found {}, expected: ',', ')' or identifier",
                            describe(other)
                        ));
                    }
                }
                match tokens.get(i) {
                    Some(Token::Comma) => i += 1,
                    Some(Token::Close) => {
                        i += 1;
                        break;
                    }
                    other => {
                        return Err(format!("found {}, expected: ',' or ')'", describe(other)));
                    }
                }
            }
            values.sort();
            values.dedup();
            Ok((req(key, op, values), i))
        }
        _ => {
            // A missing value is the empty value (`x=`), unless the next token is an operator.
            let v = match tokens.get(i) {
                Some(Token::Ident(v)) => {
                    i += 1;
                    v.clone()
                }
                None | Some(Token::Comma) => String::new(),
                other => {
                    return Err(format!(
                        "found {}, expected: identifier after '{op:?}'",
                        describe(other)
                    ));
                }
            };
            if matches!(op, Operator::GreaterThan | Operator::LessThan) {
                if v.parse::<i64>().is_err() {
                    return Err(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer, got {v:?}"
                    ));
                }
                return Ok((req(key, op, vec![v]), i));
            }
            Ok((req(key, op, vec![value(&v)?]), i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(s: &str) -> Vec<(String, Operator, Vec<String>)> {
        parse_labels(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .into_iter()
            .map(|r| {
                (
                    r.key.clone(),
                    Operator::try_from(r.operator).expect("operator"),
                    r.values,
                )
            })
            .collect()
    }

    #[test]
    fn label_selectors_parse_as_upstream() {
        assert!(ops("").is_empty());
        assert_eq!(ops("x=a,y=b,z=c").len(), 3);
        assert_eq!(ops("x!=a,y=b")[0].1, Operator::NotEquals);
        assert_eq!(
            ops("x=")[0],
            ("x".into(), Operator::Equals, vec![String::new()])
        );
        assert_eq!(ops("x==a")[0].1, Operator::Equals);
        assert_eq!(ops("!x")[0].1, Operator::DoesNotExist);
        assert_eq!(ops("x")[0].1, Operator::Exists);
        assert_eq!(ops("x>1,z<5")[1].1, Operator::LessThan);
        assert_eq!(
            ops("env in (prod, dev)")[0],
            (
                "env".into(),
                Operator::In,
                vec!["dev".to_string(), "prod".to_string()]
            )
        );
        assert_eq!(ops("env notin (a)")[0].1, Operator::NotIn);
        assert_eq!(ops("x in ()")[0].2, vec![String::new()]);
        assert_eq!(ops("example.com/app = web , tier")[1].1, Operator::Exists);
        for bad in [
            "x=a||y=b",
            "x==a==b",
            "!x=a",
            "x<a",
            "x in a",
            "x in (a",
            "x=a,",
            ",",
            "=a",
            "x in (a b)",
            "Bad Key=1",
            "x=bad value!",
            "x>",
            "x in (a,b c)",
        ] {
            assert!(parse_labels(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn field_selectors_parse_with_escapes() {
        let t = parse_fields("x=a||y\\=b").expect("parses");
        assert_eq!(t[0].value, "a||y=b");
        assert_eq!(parse_fields("x=a\\=\\=b").expect("parses")[0].value, "a==b");
        let t = parse_fields("spec.nodeName!=n1,metadata.name==a").expect("parses");
        assert_eq!(
            (t[0].equals, t[1].equals, t[1].value.as_str()),
            (false, true, "a")
        );
        assert_eq!(parse_fields("a=b\\,c").expect("parses")[0].value, "b,c");
        assert!(parse_fields("").expect("empty").is_empty());
        for bad in ["x=a,b", "x in (a)", "x", "x=a\\b", "x=a=b"] {
            assert!(parse_fields(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn unknown_field_labels_are_refused() {
        let e = parse("", "spec.nodeName=n1", METADATA_FIELDS, &[]).expect_err("unsupported");
        assert_eq!(e.to_string(), "field label not supported: spec.nodeName");
        let s = parse("app=web", "metadata.name=a", METADATA_FIELDS, &[]).expect("valid");
        assert_eq!(s.pinned("metadata.name"), Some("a"));
        assert_eq!(s.selector.fields[0].path, vec![1, 1]);
        let e = parse("a b", "", METADATA_FIELDS, &[]).expect_err("malformed");
        assert!(e.to_string().contains("labelSelector"), "{e}");
    }
}
