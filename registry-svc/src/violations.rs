//! The field violations of one request: what makes an object Invalid, as `(field path,
//! description)` pairs, listed in the error's message and in its `google.rpc.BadRequest`.
//!
//! Bounded on purpose. One request whose metadata holds a million bad owner references used to
//! allocate, render and copy every violation (gigabytes); a response listing sixty violations
//! no longer fit in the 16 KiB of trailers gRPC's C-core clients accept. So at most
//! [`MAX_VIOLATIONS`] are kept, each cut to a bounded length, and the rest are only counted:
//! the error says "and N more".

use kubestore_proto::limits::bounded;

/// Violations kept per request; the rest are counted.
pub const MAX_VIOLATIONS: usize = 20;
/// Longest field path kept, in bytes.
pub const MAX_FIELD_BYTES: usize = 128;
/// Longest description kept, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 256;

/// Field violations: the first [`MAX_VIOLATIONS`] (field path, description) pairs, and how many
/// more there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Violations {
    kept: Vec<(String, String)>,
    omitted: usize,
}

impl Violations {
    /// No violations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one violation (kept only while fewer than [`MAX_VIOLATIONS`] are).
    pub fn push(&mut self, (field, description): (String, String)) {
        if self.kept.len() < MAX_VIOLATIONS {
            self.kept.push((
                bounded(&field, MAX_FIELD_BYTES).into_owned(),
                bounded(&description, MAX_DESCRIPTION_BYTES).into_owned(),
            ));
        } else {
            self.omitted += 1;
        }
    }

    /// Whether no more violations will be kept: loops over many items may stop describing
    /// them and only [`count`](Self::count) the rest.
    pub fn is_full(&self) -> bool {
        self.kept.len() >= MAX_VIOLATIONS
    }

    /// Counts `n` violations that are not described.
    pub fn count(&mut self, n: usize) {
        self.omitted = self.omitted.saturating_add(n);
    }

    /// Adds every violation of `other`.
    pub fn merge(&mut self, other: Violations) {
        for v in other.kept {
            self.push(v);
        }
        self.count(other.omitted);
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.omitted == 0
    }

    /// How many there were, kept or not.
    pub fn len(&self) -> usize {
        self.kept.len().saturating_add(self.omitted)
    }

    /// How many were counted but not kept.
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// The kept violations.
    pub fn iter(&self) -> impl Iterator<Item = &(String, String)> {
        self.kept.iter()
    }
}

impl Extend<(String, String)> for Violations {
    fn extend<I: IntoIterator<Item = (String, String)>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

impl FromIterator<(String, String)> for Violations {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut v = Self::new();
        v.extend(iter);
        v
    }
}

impl From<Vec<(String, String)>> for Violations {
    fn from(v: Vec<(String, String)>) -> Self {
        v.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_are_kept_and_each_is_bounded() {
        let mut v = Violations::new();
        for i in 0..1_000_000 {
            v.push((format!("f{i}"), "x".repeat(1000)));
        }
        assert_eq!(v.len(), 1_000_000);
        assert_eq!(v.iter().count(), MAX_VIOLATIONS);
        assert_eq!(v.omitted(), 1_000_000 - MAX_VIOLATIONS);
        assert!(v.iter().all(|(_, d)| d.len() <= MAX_DESCRIPTION_BYTES));
        let mut w = Violations::from(vec![("a".to_string(), "b".to_string())]);
        w.merge(v);
        assert_eq!(w.len(), 1_000_001);
        assert!(w.is_full());
    }
}
