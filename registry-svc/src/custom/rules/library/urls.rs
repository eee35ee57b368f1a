//! Kubernetes' URL library (`library/urls.go`): `url(s)`, a `kubernetes.URL`, and `isURL(s)`,
//! both accepting what Go's `url.ParseRequestURI` accepts (an absolute URI or an absolute
//! path), and the accessors `getScheme`, `getHost`, `getHostname`, `getPort`,
//! `getEscapedPath`, `getQuery`.
//!
//! Parsing follows Go's `net/url` (`parse`, `parseAuthority`, `parseHost`, `unescape`,
//! `shouldEscape`), written out here: the same strings are accepted and refused, with Go's
//! messages, and the accessors give what Go's give.

use std::collections::HashMap;

use cel::{
    DeclarationError, Env, ExecutionError,
    common::{
        types::{CelBool, CelList, CelMap, CelMapKey, CelString},
        value::Val,
    },
};

use super::{add_type, opaque_type};

/// A parsed URL (Go's `url.URL`, as far as the accessors read it).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Url {
    scheme: String,
    opaque: String,
    user: Option<String>,
    /// As written, unescaped.
    host: String,
    /// The path as written (valid escapes; Go's `RawPath` or the escaping of `Path`).
    raw_path: String,
    raw_query: String,
    force_query: bool,
    fragment: Option<String>,
}

opaque_type!(Url, "kubernetes.URL");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    add_type::<Url>(env)?;
    cel::add_overload!(env, fn url: (CelString<'_>) -> Result<Url>)?;
    cel::add_overload!(env, fn is_url: (CelString<'_>) -> CelBool, name = "isURL")?;
    cel::add_member_overload!(env, fn get_scheme: (Url) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn get_host: (Url) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn get_hostname: (Url) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn get_port: (Url) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn get_escaped_path: (Url) -> CelString<'_>)?;
    cel::add_member_overload!(env, fn get_query: (Url) -> CelMap<'_>)?;
    Ok(())
}

fn url(s: &CelString<'_>) -> Result<Url, ExecutionError> {
    parse_url(s.inner()).map_err(|e| {
        ExecutionError::function_error(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    })
}

fn is_url(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse(s.inner(), true).is_ok())
}

fn get_scheme(u: &Url) -> CelString<'static> {
    CelString::from(u.scheme.clone())
}

fn get_host(u: &Url) -> CelString<'static> {
    CelString::from(u.host.clone())
}

fn get_hostname(u: &Url) -> CelString<'static> {
    CelString::from(split_host_port(&u.host).0.to_string())
}

fn get_port(u: &Url) -> CelString<'static> {
    CelString::from(split_host_port(&u.host).1.to_string())
}

fn get_escaped_path(u: &Url) -> CelString<'static> {
    CelString::from(escaped_path(&u.raw_path))
}

fn get_query(u: &Url) -> CelMap<'static> {
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in query_pairs(&u.raw_query) {
        values.entry(k).or_default().push(v);
    }
    let map: HashMap<CelMapKey<'static>, Box<dyn Val>> = values
        .into_iter()
        .map(|(k, vs)| {
            let list: Vec<Box<dyn Val>> = vs
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val>)
                .collect();
            (
                CelMapKey::from(k),
                Box::new(CelList::from(list)) as Box<dyn Val>,
            )
        })
        .collect();
    CelMap::from(map)
}

/// `url()`: Go's `ParseRequestURI` must accept `raw`, and the URL is `Parse`'s.
pub(crate) fn parse_url(raw: &str) -> Result<Url, String> {
    parse(raw, true).map_err(|e| format!("parse {raw:?}: {e}"))?;
    let (rest, fragment) = match raw.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (raw, None),
    };
    let mut u = parse(rest, false).map_err(|e| format!("parse {rest:?}: {e}"))?;
    if let Some(f) = fragment {
        let f = unescape(f, Mode::Fragment).map_err(|e| format!("parse {raw:?}: {e}"))?;
        u.fragment = Some(String::from_utf8_lossy(&f).into_owned());
    }
    Ok(u)
}

/// Go's `url.parse`; `via_request`: as `ParseRequestURI` (an absolute URI or path, and no
/// fragment).
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut u = Url::default();
    if raw == "*" {
        u.raw_path = "*".into();
        return Ok(u);
    }
    let (scheme, mut rest) = scheme(raw)?;
    u.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        u.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        u.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !u.scheme.is_empty() {
            // An opaque URL (`mailto:x`): nothing else is parsed.
            u.opaque = rest.to_string();
            return Ok(u);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or_default();
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!u.scheme.is_empty() || (!via_request && !rest.starts_with("///")))
        && rest.starts_with("//")
    {
        let after = &rest[2..];
        let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        let (user, host) = parse_authority(authority)?;
        u.user = user;
        u.host = host;
        rest = path;
    }
    unescape(rest, Mode::Path)?;
    u.raw_path = rest.to_string();
    Ok(u)
}

/// The scheme and the rest (Go's `getScheme`): no scheme unless letters, digits, `+`, `-`,
/// `.` (a letter first) precede a colon.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseAuthority`: the user information (validated) and the host.
fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
    let (user, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    let user = match user {
        None => None,
        Some(u) => {
            if !u.chars().all(valid_userinfo) {
                return Err("net/url: invalid userinfo".into());
            }
            let (name, password) = match u.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (u, None),
            };
            unescape(name, Mode::UserPassword)?;
            if let Some(p) = password {
                unescape(p, Mode::UserPassword)?;
            }
            Some(u.to_string())
        }
    };
    Ok((user, host))
}

fn valid_userinfo(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c)
}

/// Go's `parseHost`: the host unescaped, its port (if any) checked.
fn parse_host(host: &str) -> Result<String, String> {
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    if host.starts_with('[') {
        let i = host.rfind(']').ok_or("missing ']' in host")?;
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
        // An IPv6 zone, `%25` escaped, may use characters a host may not.
        if let Some(z) = host[..i].find("%25") {
            let mut out = unescape(&host[..z], Mode::Host)?;
            out.extend(unescape(&host[z..i], Mode::Zone)?);
            out.extend(unescape(&host[i..], Mode::Host)?);
            return Ok(text(out));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    }
    Ok(text(unescape(host, Mode::Host)?))
}

/// "" or a colon and digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `splitHostPort` of `URL.Hostname` and `URL.Port`.
fn split_host_port(host_port: &str) -> (&str, &str) {
    let (mut host, mut port) = (host_port, "");
    if let Some(i) = host_port.rfind(':')
        && valid_optional_port(&host_port[i..])
    {
        (host, port) = (&host_port[..i], &host_port[i + 1..]);
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

/// Go's `URL.EscapedPath`: the path as written when it is validly escaped, else escaped anew.
fn escaped_path(raw: &str) -> String {
    if raw == "*" || valid_encoded(raw) {
        return raw.to_string();
    }
    match unescape(raw, Mode::Path) {
        Ok(bytes) => escape(&bytes, Mode::Path),
        Err(_) => raw.to_string(),
    }
}

/// Go's `validEncoded` for a path.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Mode::Path)
    })
}

/// Go's `url.ParseQuery`, skipping what it reports as errors (as `URL.Query` does).
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in query.split('&') {
        if part.contains(';') || part.is_empty() {
            continue;
        }
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let (Ok(k), Ok(v)) = (
            unescape(k, Mode::QueryComponent),
            unescape(v, Mode::QueryComponent),
        ) else {
            continue;
        };
        out.push((
            String::from_utf8_lossy(&k).into_owned(),
            String::from_utf8_lossy(&v).into_owned(),
        ));
    }
    out
}

/// What is being escaped or unescaped (Go's `encoding`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Go's `unescape`: the bytes `s` stands for; Go's error for a bad escape, or for a character
/// a host may not hold.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let (Some(h), Some(l)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) else {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("invalid URL escape {bad:?}"));
                };
                let escape = &s[i..i + 3];
                let v = (h << 4) | l;
                if mode == Mode::Host && h < 8 && escape != "%25" {
                    return Err(format!("invalid URL escape {escape:?}"));
                }
                if mode == Mode::Zone
                    && escape != "%25"
                    && v != b' '
                    && should_escape(v, Mode::Host)
                {
                    return Err(format!("invalid URL escape {escape:?}"));
                }
                out.push(v);
                i += 3;
            }
            b'+' => {
                out.push(if mode == Mode::QueryComponent {
                    b' '
                } else {
                    b'+'
                });
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    let bad = (c as char).to_string();
                    return Err(format!("invalid character {bad:?} in host name"));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Go's `escape` (never for a query component: no `+` for spaces).
fn escape(bytes: &[u8], mode: Mode) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &c in bytes {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}
