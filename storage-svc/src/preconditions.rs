//! UID and resourceVersion preconditions, checked against an object's metadata on every attempt
//! of an update or delete (upstream's `storage.Preconditions.Check`).

use kubestore_proto::meta::v1::{ObjectMeta, Preconditions};

use crate::error::StorageError;

/// Checks `pre` against `meta` (an empty meta stands for a missing object, as upstream checks
/// preconditions against the zero-value object). Failure is a Conflict (ABORTED), as upstream's
/// registry turns storage's InvalidObj into a 409 Conflict.
pub fn check(
    key: &str,
    pre: Option<&Preconditions>,
    meta: &ObjectMeta,
) -> Result<(), StorageError> {
    let Some(pre) = pre else { return Ok(()) };
    if let Some(uid) = &pre.uid
        && *uid != meta.uid
    {
        return Err(StorageError::precondition_failed(
            key,
            "uid",
            format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta.uid
            ),
        ));
    }
    if let Some(rv) = &pre.resource_version
        && *rv != meta.resource_version
    {
        return Err(StorageError::precondition_failed(
            key,
            "resourceVersion",
            format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta.resource_version
            ),
        ));
    }
    Ok(())
}

/// Whether `pre` can never pass again on this key, given a state `observed_rev` that etcd
/// really had: a resourceVersion precondition older than an observed revision cannot match,
/// because a key's mod revision only grows (a deleted and re-created key gets a newer one).
/// Lets a queued update fail without re-reading etcd. Only for states read from etcd or
/// written by us, never for a caller's cached copy, which could claim any revision.
pub fn never_again(pre: Option<&Preconditions>, observed_rev: i64) -> bool {
    pre.and_then(|p| p.resource_version.as_deref())
        .and_then(kubestore_proto::parse_revision)
        .is_some_and(|rv| rv < observed_rev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_and_resource_version_must_match_exactly() {
        let meta = ObjectMeta {
            uid: "u1".into(),
            resource_version: "5".into(),
            ..Default::default()
        };
        assert!(check("/k", None, &meta).is_ok());
        assert!(check("/k", Some(&Preconditions::default()), &meta).is_ok());
        let ok = Preconditions {
            uid: Some("u1".into()),
            resource_version: Some("5".into()),
        };
        assert!(check("/k", Some(&ok), &meta).is_ok());
        let bad_uid = Preconditions {
            uid: Some("u2".into()),
            resource_version: None,
        };
        let e = check("/k", Some(&bad_uid), &meta).expect_err("uid differs");
        assert!(
            e.to_string()
                .contains("UID in precondition: u2, UID in object meta: u1"),
            "{e}"
        );
        let bad_rv = Preconditions {
            uid: None,
            resource_version: Some("05".into()),
        };
        assert!(
            check("/k", Some(&bad_rv), &meta).is_err(),
            "string comparison, as upstream"
        );
        assert!(never_again(Some(&bad_rv), 6));
        assert!(!never_again(Some(&bad_rv), 5));
        assert!(!never_again(Some(&bad_uid), 100));
        // A missing object (empty meta) fails a uid precondition.
        assert!(check("/k", Some(&ok), &ObjectMeta::default()).is_err());
    }
}
