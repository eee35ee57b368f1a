//! Container image references (`[domain/]path[:tag][@digest]`), as far as upstream's
//! `SetDefaults_Container` needs them: it asks `parsers.ParseImageName` (docker's
//! `reference.ParseNormalizedNamed`) for the tag, and pulls `Always` when that tag is `latest`
//! (which is also what a reference without tag and digest means). A reference that does not
//! parse has no tag, so it is `IfNotPresent`, as upstream defaults it.
//!
//! The grammar is the distribution project's (`reference/regexp.go`): a domain (a host name
//! or `[IPv6]`, with an optional port) is told apart from the path by a `.` or `:`, by being
//! `localhost`, or by an upper-case letter; path components are lower-case alphanumerics
//! joined by `.`, `_`, `__` or dashes; a tag is `[\w][\w.-]{0,127}`; a digest is
//! `algorithm:hex`, checked for the algorithms upstream knows. The whole name is at most 255
//! characters.

/// Longest name (domain and path), upstream's `NameTotalLengthMax`.
const NAME_MAX: usize = 255;

/// The tag and digest of a reference that parses; `None` if it does not.
pub fn parse(image: &str) -> Option<(Option<&str>, Option<&str>)> {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest
        && !valid_digest(d)
    {
        return None;
    }
    // The tag follows the last ':' after the last '/' (a ':' before it is a domain's port).
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[slash..].rfind(':') {
        Some(i) => (&rest[..slash + i], Some(&rest[slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(t) = tag
        && !valid_tag(t)
    {
        return None;
    }
    if name.is_empty() || name.len() > NAME_MAX || is_identifier(name) {
        return None;
    }
    let mut components = name.split('/').peekable();
    let first = components.next()?;
    let has_path = components.peek().is_some();
    let is_domain = has_path
        && (first.contains(['.', ':'])
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase()));
    if is_domain {
        if !valid_domain(first) {
            return None;
        }
    } else if !valid_path_component(first) {
        return None;
    }
    for c in components {
        if !valid_path_component(c) {
            return None;
        }
    }
    Some((tag, digest))
}

/// Upstream's default pull policy of `image`: `Always` for the `latest` tag (or none and no
/// digest), else `IfNotPresent` (also for a reference that does not parse).
pub fn default_pull_policy(image: &str) -> &'static str {
    match parse(image) {
        Some((Some("latest"), _)) | Some((None, None)) => "Always",
        _ => "IfNotPresent",
    }
}

/// A 64-hex-digit name alone is refused (it reads as an image ID).
fn is_identifier(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && is_word(b[0])
        && b.iter().all(|&c| is_word(c) || c == b'.' || c == b'-')
}

/// `algorithm:hex`, with the hex length of the algorithms upstream registers.
fn valid_digest(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lower-case alphanumerics separated by `.`, `_`, `__` or one or more `-`.
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !is_lower_alnum(b[0]) || !is_lower_alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_lower_alnum(b[i]) {
            i += 1;
            continue;
        }
        // A separator: the run of non-alphanumerics between two alphanumerics.
        let start = i;
        while i < b.len() && !is_lower_alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|s| s == b'-');
        if !ok {
            return false;
        }
    }
    true
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// A host (labels of alphanumerics and inner dashes, or `[IPv6]`) with an optional port.
fn valid_domain(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after.strip_prefix(':') {
            Some(p) => ("", Some(p)),
            None if after.is_empty() => ("", None),
            None => return false,
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    host.is_empty() && d.starts_with('[')
        || host.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn the_pull_policy_follows_the_tag() {
        let digest = format!("nginx@sha256:{HEX}");
        let tagged_digest = format!("nginx:latest@sha256:{HEX}");
        let versioned_digest = format!("nginx:1.27@sha256:{HEX}");
        for (image, want) in [
            // No tag and no digest: `latest`.
            ("nginx", "Always"),
            ("busybox", "Always"),
            ("nginx:latest", "Always"),
            ("library/nginx", "Always"),
            ("docker.io/library/nginx", "Always"),
            ("localhost:5000/nginx", "Always"),
            ("localhost/nginx", "Always"),
            ("[::1]:5000/team/app", "Always"),
            ("registry.example.com:443/a/b-c/d__e:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("nginx:Latest", "IfNotPresent"),
            ("localhost:5000/nginx:1.0", "IfNotPresent"),
            (digest.as_str(), "IfNotPresent"),
            (tagged_digest.as_str(), "Always"),
            (versioned_digest.as_str(), "IfNotPresent"),
            // Not references: no tag, so IfNotPresent (upstream ignores the parse error).
            ("", "IfNotPresent"),
            ("NGINX", "IfNotPresent"),
            ("nginx:", "IfNotPresent"),
            ("nginx:-bad", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx@md5:d41d8cd98f00b204e9800998ecf8427e", "IfNotPresent"),
            ("-nginx", "IfNotPresent"),
            ("ngi..nx", "IfNotPresent"),
            (" nginx", "IfNotPresent"),
            (HEX, "IfNotPresent"),
        ] {
            assert_eq!(default_pull_policy(image), want, "{image:?}");
        }
    }

    #[test]
    fn tags_and_digests_are_found_after_the_domain_port() {
        assert_eq!(parse("localhost:5000/app"), Some((None, None)));
        assert_eq!(parse("localhost:5000/app:v2"), Some((Some("v2"), None)));
        assert_eq!(parse("Example.com/app:v2"), Some((Some("v2"), None)));
        let long = format!("a:{}", "t".repeat(129));
        assert_eq!(parse(&long), None, "a tag is at most 128 characters");
        let name = "a/".repeat(128) + "b";
        assert_eq!(parse(&name), None, "a name is at most 255 characters");
    }
}
