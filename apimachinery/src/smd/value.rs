//! JSON values as structured-merge-diff's `value` package sees them: a total order over any two
//! values (so that set items and associative keys sort), equality that treats `1` and `1.0` as
//! the same number, and the text forms upstream prints them in (Go's `%v`/`%q` in paths,
//! `encoding/json` in `FieldsV1` keys).
//!
//! Upstream holds numbers as `int64` or `float64`; serde_json holds them as `i64`, `u64` or
//! `f64`. An integer here is any `i64`/`u64` (compared as `i128`, so no `u64` is lost), a float
//! anything else, which is how upstream's decoders split them.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// A number as upstream classifies it.
#[derive(Clone, Copy, Debug)]
enum Num {
    Int(i128),
    Float(f64),
}

fn num(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(0.0))
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Ranks of the kinds in upstream's `value.Compare`: floats and ints (compared with each other
/// numerically), strings, booleans, lists, maps, null.
fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 2,
        Value::Bool(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
        Value::Null => 6,
    }
}

/// Upstream's `value.Compare`: a total order over any two JSON values, so that values of
/// different kinds sort too (numbers, strings, booleans, lists, maps, null).
pub fn compare(lhs: &Value, rhs: &Value) -> Ordering {
    match (lhs, rhs) {
        (Value::Number(a), Value::Number(b)) => match (num(a), num(b)) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (Num::Int(a), Num::Float(b)) => float_cmp(a as f64, b),
            (Num::Float(a), Num::Int(b)) => float_cmp(a, b as f64),
            (Num::Float(a), Num::Float(b)) => float_cmp(a, b),
        },
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter().zip(b.iter()) {
                let c = compare(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            a.len().cmp(&b.len())
        }
        (Value::Object(a), Value::Object(b)) => compare_maps(a, b),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(lhs).cmp(&rank(rhs)),
    }
}

/// Upstream's `MapCompare`: walks the union of both maps' keys in lexical order; the first key
/// one side lacks, or the first differing value, decides.
fn compare_maps(lhs: &Map<String, Value>, rhs: &Map<String, Value>) -> Ordering {
    if lhs.is_empty() && rhs.is_empty() {
        return Ordering::Equal;
    }
    let mut keys: Vec<&String> = lhs.keys().chain(rhs.keys()).collect();
    keys.sort();
    keys.dedup();
    for (i, key) in keys.into_iter().enumerate() {
        let c = if i == lhs.len() {
            Ordering::Less
        } else if i == rhs.len() {
            Ordering::Greater
        } else {
            match (lhs.get(key), rhs.get(key)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(a), Some(b)) => compare(a, b),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Upstream's `value.Equals`: deep equality where an integer equals the float of the same
/// value (`1` == `1.0`), and map key order does not matter.
pub fn equals(lhs: &Value, rhs: &Value) -> bool {
    match (lhs, rhs) {
        (Value::Number(a), Value::Number(b)) => match (num(a), num(b)) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Int(a), Num::Float(b)) | (Num::Float(b), Num::Int(a)) => a as f64 == b,
            (Num::Float(a), Num::Float(b)) => a == b,
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| equals(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => lhs == rhs,
    }
}

pub use crate::gotext::go_quote;

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits
/// that round-trip, in exponent form (`1e+06`, `1e-05`) when the decimal exponent is below -4
/// or at least 6, as Go's `%g` decides for the shortest precision.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Shortest round-trip digits and decimal exponent, from Rust's `{:e}`.
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    format!("{sign}{}", plain_decimal(&digits, exp))
}

/// `digits` (d.ddd without the point) times 10^`exp`, written without an exponent.
fn plain_decimal(digits: &str, exp: i32) -> String {
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if (point as usize) >= digits.len() {
        format!("{}{}", digits, "0".repeat(point as usize - digits.len()))
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    }
}

/// Upstream's `value.ToString`, as paths print values: strings quoted as Go's `%q`, numbers
/// and booleans as Go's `%v`, lists `[a,b]`, maps `k=v` pairs run together.
pub fn to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Number(n) => match num(n) {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => go_float(f),
        },
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(to_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", to_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// A JSON string as Go's `encoding/json` writes it (what upstream's serializer uses): `<`, `>`
/// and `&` escaped as `\u003c`, `\u003e`, `\u0026`, U+2028/U+2029 escaped, control characters
/// as `\n`, `\r`, `\t` or `\u00XX`.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Go's `encoding/json` writes it: plain decimals, exponent form (`1e+21`,
/// `1e-07`... written `1e-7`) below 1e-6 or from 1e21 on.
fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{:e}", f);
        let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let esign = if exp < 0 { '-' } else { '+' };
        // Go writes at least two exponent digits, then trims `e-07` to `e-7`.
        return format!("{mantissa}e{esign}{}", exp.abs());
    }
    if f == 0.0 {
        return "0".into();
    }
    let e = format!("{:e}", abs);
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    format!("{sign}{}", plain_decimal(&digits, exp))
}

/// A value as Go's `encoding/json` writes it: compact, map keys sorted, strings escaped as
/// [`write_json_string`] does.
pub fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match num(n) {
            Num::Int(i) => out.push_str(&i.to_string()),
            Num::Float(f) => out.push_str(&json_float(f)),
        },
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                if let Some(v) = m.get(k) {
                    write_json(out, v);
                }
            }
            out.push('}');
        }
    }
}

/// Whether `v` is a scalar in upstream's sense (number, string or boolean; null is not).
pub fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Number(_) | Value::String(_) | Value::Bool(_))
}

/// Go's `%T` of the unstructured form of `v`, for upstream's validation messages.
pub fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => match num(n) {
            Num::Int(_) => "int64",
            Num::Float(_) => "float64",
        },
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
