//! JSON patch (RFC 6902) as upstream applies it: `gopkg.in/evanphx/json-patch.v4`, the library
//! behind kube-apiserver's `application/json-patch+json`, with the apiserver's limits.
//!
//! Where v4 differs from the RFC, clients rely on v4, so this follows it:
//! - `test` of `null` (or with no `value`) passes against a missing member (kube-rs'
//!   `finalizer()` helper sends exactly that for an object without finalizers);
//! - `replace` of a missing object member adds it; negative array indices count from the end
//!   (`/a/-1`); `copy` from a missing member copies `null`;
//! - a path that is not `/`-rooted names its last token in the document's root.
//!
//! Limits, as kube-apiserver sets them: at most [`MAX_OPERATIONS`] operations (413 above), and
//! the values `copy` adds total at most [`MAX_COPY_BYTES`] of JSON (upstream's
//! `JSONPatchMaxCopyBytes`; 422 above). The document is patched in place, a copy of it that is
//! dropped if an operation fails: no undo log grows with the patch (the `json-patch` crate kept
//! every overwritten value for its rollback, ~350 MiB for a valid 162 KB patch).
//!
//! Errors carry v4's own words (`add operation does not apply: doc is missing path: "/a/b":
//! missing value`), which clients print.

use serde_json::Value;

use super::{Limits, PatchError};
use crate::json::json_type;

/// Upstream's `maxJSONPatchOperations`.
pub const MAX_OPERATIONS: usize = 10_000;

/// Upstream's `JSONPatchMaxCopyBytes` (3 MiB): the JSON that `copy` operations may add.
pub const MAX_COPY_BYTES: usize = 3 << 20;

/// The widest object whose members keep their order when one is removed.
const ORDERED_REMOVAL: usize = 1024;

/// v4's `ErrMissing`, `ErrInvalidIndex` and `ErrTestFailed` words.
const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";
const TEST_FAILED: &str = "test failed";

/// Applies `patch` (a JSON array of operations) to `doc`.
pub fn apply(doc: &Value, patch: &Value, limits: &Limits) -> Result<Value, PatchError> {
    let ops = decode(patch)?;
    if ops.len() > MAX_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut doc = doc.clone();
    let mut copied = 0usize;
    for op in ops {
        limits.check()?;
        let kind = match op.get("op") {
            Some(Value::String(s)) => s.as_str(),
            _ => "unknown",
        };
        let result = match kind {
            "add" => add(&mut doc, op),
            "remove" => remove(&mut doc, op),
            "replace" => replace(&mut doc, op),
            "move" => move_(&mut doc, op),
            "test" => test(&doc, op),
            "copy" => copy(&mut doc, op, &mut copied, limits.max_copy_bytes),
            other => Err(format!("Unexpected kind: {other}")),
        };
        result.map_err(PatchError::Unprocessable)?;
    }
    Ok(doc)
}

/// The operations of a patch (v4's `DecodePatch`: an array of objects; 400 otherwise).
fn decode(patch: &Value) -> Result<&[Value], PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            json_type(patch)
        )));
    };
    if let Some(bad) = ops.iter().find(|o| !o.is_object()) {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            json_type(bad)
        )));
    }
    Ok(ops)
}

/// A string field of an operation (`path`, `from`): v4's `Path()` and `From()`.
fn field<'a>(op: &'a Value, name: &str, missing: &str) -> Result<&'a str, String> {
    match op.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(format!("{missing}: {MISSING}")),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_type(other)
        )),
    }
}

fn path(op: &Value) -> Result<&str, String> {
    field(op, "path", "operation missing path field")
}

fn from(op: &Value) -> Result<&str, String> {
    field(op, "from", "operation, missing from field")
}

/// The operation's `value`; an absent one is `null`, as v4 writes a nil node.
fn value(op: &Value) -> Value {
    op.get("value").cloned().unwrap_or(Value::Null)
}

/// RFC 6901's unescaping of one reference token: `~1` is `/`, `~0` is `~`, in one pass.
fn unescape(token: &str) -> String {
    if !token.contains('~') {
        return token.to_string();
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('~', Some('1')) => {
                chars.next();
                out.push('/');
            }
            ('~', Some('0')) => {
                chars.next();
                out.push('~');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The container a path's last token is in, and that token (v4's `findObject`); None when a
/// token before the last names nothing, null or a scalar, or the path has no `/`.
fn find<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let mut tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return None;
    }
    let key = unescape(tokens.pop().unwrap_or_default());
    let mut container = doc;
    for token in &tokens[1..] {
        let next = match container {
            Value::Object(m) => m.get_mut(&unescape(token)),
            Value::Array(a) => index(token, a.len(), false)
                .ok()
                .and_then(move |i| a.get_mut(i)),
            _ => None,
        }?;
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        container = next;
    }
    Some((container, key))
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, within an `int`.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {s:?}: invalid syntax"));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {s:?}: value out of range"))
}

/// An index into an array of `len` items (`len + 1` places when adding): negative ones count
/// from the end, as v4's `SupportNegativeIndices` (on by default) has it.
fn index(token: &str, len: usize, adding: bool) -> Result<usize, String> {
    let i = atoi(token)?;
    let places = if adding { len + 1 } else { len };
    let invalid = || format!("Unable to access invalid index: {i}: {INVALID_INDEX}");
    let places = i64::try_from(places).map_err(|_| invalid())?;
    let at = if i < 0 { i + places } else { i };
    if at < 0 || at >= places {
        return Err(invalid());
    }
    usize::try_from(at).map_err(|_| invalid())
}

/// v4's `container.add`: an object member set, or an array item inserted (`-`: appended).
fn insert(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) if key == "-" => {
            a.push(value);
            Ok(())
        }
        Value::Array(a) => {
            let at = match atoi(key) {
                Ok(_) => index(key, a.len(), true)?,
                Err(e) => return Err(format!("value was not a proper array index: '{key}': {e}")),
            };
            a.insert(at, value);
            Ok(())
        }
        _ => Err(MISSING.to_string()),
    }
}

/// v4's `container.get`: a missing object member is no error (None), a bad index is.
fn get<'a>(container: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match container {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(a) => Ok(a.get(index(key, a.len(), false)?)),
        _ => Ok(None),
    }
}

/// v4's `container.remove`: the removed value.
fn take(container: &mut Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(m) => {
            // Members keep their order, unless the object is so wide that shifting the members
            // after each removed one would make a patch of many removals quadratic (upstream's
            // Go maps have no order to keep).
            let removed = if m.len() <= ORDERED_REMOVAL {
                m.shift_remove(key)
            } else {
                m.swap_remove(key)
            };
            removed.ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}"))
        }
        Value::Array(a) => {
            let at = index(key, a.len(), false)?;
            Ok(a.remove(at))
        }
        _ => Err(MISSING.to_string()),
    }
}

fn add(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = path(op).map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
    let Some((container, key)) = find(doc, path) else {
        return Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    insert(container, &key, value(op)).map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path =
        path(op).map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
    let Some((container, key)) = find(doc, path) else {
        return Err(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
        ));
    };
    take(container, &key)
        .map(drop)
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = path(op).map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        let v = value(op);
        if !matches!(v, Value::Object(_) | Value::Array(_)) {
            return Err("replace operation value must be object or array".into());
        }
        *doc = v;
        return Ok(());
    }
    let Some((container, key)) = find(doc, path) else {
        return Err(format!(
            "replace operation does not apply: doc is missing path: {path}: {MISSING}"
        ));
    };
    match container {
        // v4 sets a member that does not exist yet too.
        Value::Object(m) => {
            m.insert(key, value(op));
        }
        Value::Array(a) => {
            let at = index(&key, a.len(), false).map_err(|_| {
                format!("replace operation does not apply: doc is missing key: {path}: {MISSING}")
            })?;
            a[at] = value(op);
        }
        _ => return Err(MISSING.to_string()),
    }
    Ok(())
}

fn move_(doc: &mut Value, op: &Value) -> Result<(), String> {
    let from = from(op).map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let Some((container, key)) = find(doc, from) else {
        return Err(format!(
            "move operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    get(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let moved =
        take(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = path(op).map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let Some((container, key)) = find(doc, path) else {
        return Err(format!(
            "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    };
    insert(container, &key, moved).map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn test(doc: &Value, op: &Value) -> Result<(), String> {
    let path = path(op).map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: {TEST_FAILED}");
    let expected = op.get("value");
    if path.is_empty() {
        return if expected == Some(doc) {
            Ok(())
        } else {
            Err(failed())
        };
    }
    // `find` wants a mutable document; the test reads the same walk without one.
    let mut tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return Err(format!(
            "test operation does not apply: is missing path: {path}: {MISSING}"
        ));
    }
    let key = unescape(tokens.pop().unwrap_or_default());
    let mut container = doc;
    for token in &tokens[1..] {
        let next = match container {
            Value::Object(m) => m.get(&unescape(token)),
            Value::Array(a) => index(token, a.len(), false).ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(v @ (Value::Object(_) | Value::Array(_))) => container = v,
            _ => {
                return Err(format!(
                    "test operation does not apply: is missing path: {path}: {MISSING}"
                ));
            }
        }
    }
    let actual =
        get(container, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match (actual, expected) {
        // A missing member, or null, equals a missing or null value (v4: a nil node).
        (None | Some(Value::Null), None | Some(Value::Null)) => Ok(()),
        (Some(a), Some(e)) if a == e => Ok(()),
        _ => Err(failed()),
    }
}

fn copy(doc: &mut Value, op: &Value, copied: &mut usize, limit: usize) -> Result<(), String> {
    let from = from(op).map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let Some((container, key)) = find(doc, from) else {
        return Err(format!(
            "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
        ));
    };
    // v4 copies a missing member as null, and counts it as no bytes. The size is counted
    // before the value is cloned, so a refused copy allocates nothing.
    let source =
        get(container, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    let size = source.map_or(0, encoded_len);
    let value =
        (size <= limit.saturating_sub(*copied)).then(|| source.cloned().unwrap_or(Value::Null));
    let path = path(op).map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
    if find(doc, path).is_none() {
        return Err(format!(
            "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
        ));
    }
    *copied = copied.saturating_add(size);
    let Some(value) = value else {
        return Err(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {limit}"
        ));
    };
    let Some((container, key)) = find(doc, path) else {
        return Err(MISSING.to_string());
    };
    insert(container, &key, value).map_err(|e| format!("error while adding value during copy: {e}"))
}

/// The length of `v`'s compact JSON, as v4 counts a copy, without writing it.
fn encoded_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
