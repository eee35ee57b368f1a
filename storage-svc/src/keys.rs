//! Key preparation: the caller's key (e.g. `/pods/default/nginx`) becomes the etcd key under the
//! configured prefix (`/registry/pods/default/nginx`).
//!
//! Follows upstream's `storage.PrepareKey` + `store.prepareKey`, slightly stricter because we have
//! no per-resource prefix to check against: every key must be absolute, with non-empty segments,
//! none of them `.` or `..` (which could name a key outside the prefix once a client or tool
//! normalises the path), no trailing `/`, and no NUL or control characters. All of this is
//! checked before etcd is touched.

use crate::error::StorageError;

/// Longest key accepted (etcd has no key limit of its own besides the request size).
pub const MAX_KEY_LEN: usize = 1024;

/// Name of the watch cache's fence key inside a resource's prefix (see `cache`). It starts
/// with NUL, which no caller's key may contain, so it can never be a caller's object; lists
/// and watches skip it ([`is_internal`]).
pub const FENCE: &str = "\0kubestore-fence";

/// Whether an etcd key is storage's own (a fence), not an object: callers' keys never
/// contain NUL.
pub fn is_internal(etcd_key: &[u8]) -> bool {
    etcd_key.contains(&0)
}

/// The storage prefix, normalised as upstream's `path.Join("/", prefix) + "/"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPrefix(String);

impl KeyPrefix {
    /// Normalises `prefix`: `"registry"`, `"/registry"` and `"/registry//"` all give
    /// `"/registry/"`; `""` and `"/"` give `"/"`.
    pub fn new(prefix: &str) -> Self {
        let segments: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
        if segments.is_empty() {
            Self("/".to_string())
        } else {
            Self(format!("/{}/", segments.join("/")))
        }
    }

    /// The normalised prefix.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Validates `key` and returns the etcd key.
    pub fn etcd_key(&self, key: &str) -> Result<String, StorageError> {
        validate(key)?;
        Ok(format!("{}{}", self.0, &key[1..]))
    }

    /// Validates `key` and returns the etcd prefix of its children: the etcd key plus `/`, so
    /// that listing `/pods/a` never returns `/pods/ab/...` (upstream's recursive PrepareKey).
    pub fn etcd_prefix(&self, key: &str) -> Result<String, StorageError> {
        Ok(format!("{}/", self.etcd_key(key)?))
    }
}

/// Where a list of `prefix`'s children starts: just after the prefix's own internal keys (the
/// fence, `<prefix>\0...`), which callers' keys cannot reach (no control characters), so
/// limits and remaining counts are never spent on them.
pub fn first_child(prefix: &str) -> Vec<u8> {
    let mut start = prefix.as_bytes().to_vec();
    start.push(1);
    start
}

/// The end of the range of keys that start with `prefix` (etcd's prefix range end).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff: to the end of the keyspace.
    vec![0]
}

fn validate(key: &str) -> Result<(), StorageError> {
    let bad = |why: &str| {
        Err(StorageError::invalid(
            key,
            format!("invalid key {key:?}: {why}"),
        ))
    };
    if key.is_empty() || key == "/" {
        return bad("empty key");
    }
    if key.len() > MAX_KEY_LEN {
        return bad(&format!("longer than {MAX_KEY_LEN} bytes"));
    }
    if !key.starts_with('/') {
        return bad("must start with '/'");
    }
    if key.ends_with('/') {
        return bad("must not end with '/'");
    }
    if key.chars().any(char::is_control) {
        return bad("contains control characters");
    }
    for segment in key[1..].split('/') {
        match segment {
            "" => return bad("empty path segment"),
            "." | ".." => return bad("'.' and '..' segments would escape the prefix"),
            _ => {}
        }
    }
    Ok(())
}

/// The resource of a caller's key: `/pods/default/a` and `/pods` -> `pods`; a first segment
/// with a dot is an API group, and the resource is group and plural
/// (`/stable.example.com/crontabs/ns/a` -> `stable.example.com/crontabs`), so that each custom
/// kind has its own cache.
pub fn resource_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix('/')?;
    let first = rest.split('/').next()?;
    if first.is_empty() {
        return None;
    }
    if first.contains('.') {
        let second = rest[first.len()..]
            .trim_start_matches('/')
            .split('/')
            .next()?;
        if second.is_empty() {
            return None;
        }
        return Some(&rest[..first.len() + 1 + second.len()]);
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_and_its_plural_are_one_resource() {
        assert_eq!(resource_of("/pods/default/a"), Some("pods"));
        assert_eq!(resource_of("/pods"), Some("pods"));
        assert_eq!(
            resource_of("/stable.example.com/crontabs/ns/a"),
            Some("stable.example.com/crontabs")
        );
        assert_eq!(
            resource_of("/apiextensions.k8s.io/customresourcedefinitions"),
            Some("apiextensions.k8s.io/customresourcedefinitions")
        );
        assert_eq!(resource_of("/stable.example.com"), None);
        assert_eq!(resource_of(""), None);
    }

    #[test]
    fn prefix_is_normalised_like_upstream() {
        assert_eq!(KeyPrefix::new("/registry").as_str(), "/registry/");
        assert_eq!(KeyPrefix::new("custom/prefix").as_str(), "/custom/prefix/");
        assert_eq!(
            KeyPrefix::new("/custom//prefix//").as_str(),
            "/custom/prefix/"
        );
        assert_eq!(KeyPrefix::new("").as_str(), "/");
        assert_eq!(KeyPrefix::new("/").as_str(), "/");
    }

    #[test]
    fn prefixes_end_where_their_children_end() {
        let p = KeyPrefix::new("/registry");
        assert_eq!(
            p.etcd_prefix("/pods/default").ok().as_deref(),
            Some("/registry/pods/default/")
        );
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b".to_vec());
        assert!(p.etcd_prefix("/pods/").is_err());
    }

    #[test]
    fn keys_map_under_the_prefix() {
        let p = KeyPrefix::new("/registry");
        assert_eq!(
            p.etcd_key("/pods/default/nginx").ok().as_deref(),
            Some("/registry/pods/default/nginx")
        );
        assert_eq!(
            KeyPrefix::new("").etcd_key("/a").ok().as_deref(),
            Some("/a")
        );
    }

    #[test]
    fn escaping_and_empty_keys_are_rejected() {
        let p = KeyPrefix::new("/registry");
        for key in [
            "",
            "/",
            "pods/a",
            "/pods/",
            "/pods//a",
            "/..",
            "/../x",
            "/pods/../../etc",
            "/pods/..",
            "/.",
            "/./a",
            "/pods/./a",
            "/pods/.",
            "/pods/a\0b",
            "/pods/a\nb",
        ] {
            let err = p.etcd_key(key).expect_err(key);
            assert!(
                matches!(err, StorageError::Invalid { .. }),
                "{key:?}: {err}"
            );
        }
        assert!(
            p.etcd_key(&format!("/{}", "a".repeat(MAX_KEY_LEN)))
                .is_err()
        );
        // Dots inside a segment are fine.
        assert!(p.etcd_key("/configmaps/default/a..b").is_ok());
        assert!(p.etcd_key("/configmaps/default/.hidden").is_ok());
    }
}
