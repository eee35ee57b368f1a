//! Downward API and projected volumes: upstream's `validateDownwardAPIVolumeSource`,
//! `validateDownwardAPIVolumeFile` (with the volume flavour of `validateObjectFieldSelector` and
//! `validateContainerResourceFieldSelector`), `validateProjectedVolumeSource` and
//! `validateProjectionSources`, with the cluster trust bundle's name and signer name rules
//! (`ValidateClusterTrustBundleName`, `ValidateSignerName`).
//!
//! Upstream's path quirks are kept: a downward API item's errors are reported at the source's
//! path, not the item's (`downwardAPI.path`, not `downwardAPI.items[0].path`); a token's `path`
//! at the projected volume's (`projected.path`); conflicting paths at `projected`, with a
//! secret's or config map's name as the bad value.
//!
//! Differences: `env` has its own selectors for variables; the ones here follow upstream's
//! field-label conversion more closely (`metadata.name['x']` is a conversion error, `spec.host`
//! is `spec.nodeName`). A divisor is compared by value, as in `env`.

use std::collections::BTreeSet;

use kubestore_proto::{
    core::v1::{
        ClusterTrustBundleProjection, DownwardApiVolumeFile, DownwardApiVolumeSource,
        ObjectFieldSelector, ProjectedVolumeSource,
    },
    meta::v1::LabelSelector,
};

use super::{file_mode, go_pointer, go_strings, key_to_path, label, local_non_reserved_path};
use crate::{
    kinds::{
        pod_validation::{not_supported, scheduling},
        volume_defaults::DEFAULT_TOKEN_EXPIRATION_SECONDS,
    },
    validation::qualified_name,
    violations::Violations,
};

/// The pod fields a volume file may name (`validVolumeDownwardAPIFieldPathExpressions`),
/// sorted as upstream lists them.
const FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// Shortest and longest token lifetimes.
const MIN_TOKEN_SECONDS: i64 = 10 * 60;
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

/// `validateDownwardAPIVolumeSource`, for the source at `at`.
pub(super) fn downward_api(s: &DownwardApiVolumeSource, at: &str, v: &mut Violations) {
    file_mode(s.default_mode, &format!("{at}.defaultMode"), v);
    for f in &s.items {
        downward_file(f, at, v);
    }
}

/// `validateDownwardAPIVolumeFile`, reported at `at` (the source's path, as upstream does).
fn downward_file(f: &DownwardApiVolumeFile, at: &str, v: &mut Violations) {
    if f.path.is_empty() {
        v.push((format!("{at}.path"), "Required value".into()));
    }
    local_non_reserved_path(&f.path, &format!("{at}.path"), v);
    if let Some(field) = &f.field_ref {
        object_field(field, &format!("{at}.fieldRef"), v);
        if f.resource_field_ref.is_some() {
            v.push((
                at.to_string(),
                "Invalid value: \"resource\": fieldRef and resourceFieldRef can not be specified simultaneously"
                    .into(),
            ));
        }
    } else if let Some(r) = &f.resource_field_ref {
        super::super::env::resource_field_ref(r, &format!("{at}.resourceFieldRef"), true, v);
    } else {
        v.push((
            at.to_string(),
            "Required value: one of fieldRef and resourceFieldRef is required".into(),
        ));
    }
    file_mode(f.mode, &format!("{at}.mode"), v);
}

/// `validateObjectFieldSelector` with the volume's field paths.
fn object_field(f: &ObjectFieldSelector, at: &str, v: &mut Violations) {
    if f.api_version.is_empty() {
        v.push((format!("{at}.apiVersion"), "Required value".into()));
        return;
    }
    if f.field_path.is_empty() {
        v.push((format!("{at}.fieldPath"), "Required value".into()));
        return;
    }
    let field = match convert_field_label(&f.api_version, &f.field_path) {
        Ok(field) => field,
        Err(e) => {
            v.push((
                format!("{at}.fieldPath"),
                format!(
                    "Invalid value: {:?}: error converting fieldPath: {e}",
                    f.field_path
                ),
            ));
            return;
        }
    };
    match split_subscript(field) {
        Some(("metadata.annotations", key)) => {
            let key = key.to_lowercase();
            if let Some(e) = qualified_name(&key) {
                v.push((at.to_string(), format!("Invalid value: {key:?}: {e}")));
            }
        }
        Some(("metadata.labels", key)) => {
            if let Some(e) = qualified_name(key) {
                v.push((at.to_string(), format!("Invalid value: {key:?}: {e}")));
            }
        }
        // Conversion refused every other subscripted path already.
        Some((path, _)) => v.push((
            at.to_string(),
            format!("Invalid value: {path:?}: does not support subscript"),
        )),
        None if !FIELD_PATHS.contains(&field) => {
            v.push((format!("{at}.fieldPath"), not_supported(field, FIELD_PATHS)))
        }
        None => {}
    }
}

/// Upstream's v1 `ConvertDownwardAPIFieldLabel`: the internal field path, or why not.
fn convert_field_label<'a>(version: &str, label: &'a str) -> Result<&'a str, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((path, _)) = split_subscript(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label),
        // Old v1 clients' name for it.
        "spec.host" => Ok("spec.nodeName"),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `metadata.labels['app']` as (`metadata.labels`, `app`), as `SplitMaybeSubscriptedPath`.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let (field, key) = path.strip_suffix("']")?.split_once("['")?;
    (!field.is_empty()).then_some((field, key))
}

/// `validateProjectedVolumeSource` and `validateProjectionSources`, for the source at `at`. A
/// source with no projection is accepted, as upstream does; one with several is Forbidden.
pub(super) fn projected(s: &ProjectedVolumeSource, at: &str, v: &mut Violations) {
    file_mode(s.default_mode, &format!("{at}.defaultMode"), v);
    let mut paths = BTreeSet::new();
    let mut conflict = |path: &str, bad: &str, v: &mut Violations| {
        if !paths.insert(path.to_string()) {
            v.push((
                at.to_string(),
                format!("Invalid value: {bad:?}: conflicting duplicate paths"),
            ));
        }
    };
    for (i, src) in s.sources.iter().enumerate() {
        let sp = format!("{at}.sources[{i}]");
        let mut count = 0;
        for (kind, name, items) in [
            src.secret.as_ref().map(|s| ("secret", &s.name, &s.items)),
            src.config_map
                .as_ref()
                .map(|c| ("configMap", &c.name, &c.items)),
        ]
        .into_iter()
        .flatten()
        {
            count += 1;
            let pp = format!("{sp}.{kind}");
            if name.is_empty() {
                v.push((format!("{pp}.name"), "Required value".into()));
            }
            for (j, kp) in items.iter().enumerate() {
                key_to_path(kp, &format!("{pp}.items[{j}]"), v);
                if !kp.path.is_empty() {
                    conflict(&kp.path, name, v);
                }
            }
        }
        if let Some(d) = &src.downward_api {
            count += 1;
            let pp = format!("{sp}.downwardAPI");
            for f in &d.items {
                downward_file(f, &pp, v);
                if !f.path.is_empty() {
                    conflict(&f.path, &f.path, v);
                }
            }
        }
        if let Some(t) = &src.service_account_token {
            count += 1;
            let exp = t
                .expiration_seconds
                .unwrap_or(DEFAULT_TOKEN_EXPIRATION_SECONDS);
            let exp_at = format!("{sp}.serviceAccountToken.expirationSeconds");
            if exp < MIN_TOKEN_SECONDS {
                v.push((
                    exp_at.clone(),
                    format!(
                        "Invalid value: {exp}: may not specify a duration less than 10 minutes"
                    ),
                ));
            }
            if exp > MAX_TOKEN_SECONDS {
                v.push((
                    exp_at,
                    format!(
                        "Invalid value: {exp}: may not specify a duration larger than 2^32 seconds"
                    ),
                ));
            }
            // At the projected volume's `path`, as upstream reports it; not checked for
            // conflicts with the other projections, as upstream does not.
            if t.path.is_empty() {
                v.push((format!("{at}.path"), "Required value".into()));
            } else {
                local_non_reserved_path(&t.path, &format!("{at}.path"), v);
            }
        }
        if let Some(b) = &src.cluster_trust_bundle {
            count += 1;
            cluster_trust_bundle(b, &format!("{sp}.clusterTrustBundle"), v);
            conflict(&b.path, &b.path, v);
        }
        if count > 1 {
            v.push((
                sp,
                "Forbidden: may not specify more than 1 volume type per source".into(),
            ));
        }
    }
}

/// A cluster trust bundle projection at `at`: a name or a signer name (with an optional
/// label selector), and a path.
fn cluster_trust_bundle(b: &ClusterTrustBundleProjection, at: &str, v: &mut Violations) {
    match (&b.name, &b.signer_name) {
        (Some(_), Some(_)) => v.push((
            at.to_string(),
            format!(
                "Invalid value: {}: only one of name and signerName may be used",
                go_projection(b)
            ),
        )),
        (Some(name), None) => {
            if name.is_empty() {
                v.push((
                    format!("{at}.name"),
                    "Required value: must be a valid object name".into(),
                ));
            }
            for e in bundle_name_problems(name) {
                v.push((
                    format!("{at}.name"),
                    format!("Invalid value: {name:?}: not a valid clustertrustbundlename: {e}"),
                ));
            }
            if let Some(sel) = &b.label_selector {
                v.push((
                    format!("{at}.labelSelector"),
                    format!(
                        "Invalid value: {}: labelSelector must be unset if name is specified",
                        go_label_selector(sel)
                    ),
                ));
            }
        }
        (None, Some(signer)) => {
            let signer_at = format!("{at}.signerName");
            if signer.is_empty() {
                v.push((
                    signer_at.clone(),
                    "Required value: must be a valid signer name".into(),
                ));
            }
            signer_name(signer, &signer_at, v);
            if let Some(sel) = &b.label_selector {
                scheduling::label_selector(sel, &format!("{at}.labelSelector"), v);
            }
        }
        (None, None) => v.push((
            at.to_string(),
            "Required value: either name or signerName must be specified".into(),
        )),
    }
    if b.path.is_empty() {
        v.push((format!("{at}.path"), "Required value".into()));
    }
    local_non_reserved_path(&b.path, &format!("{at}.path"), v);
}

/// `ValidateClusterTrustBundleName` of the signer the name implies (what precedes its last
/// ':', with ':' for '/'), or of none.
fn bundle_name_problems(name: &str) -> Vec<String> {
    let Some(split) = name.rfind(':') else {
        return super::subdomain(name).into_iter().collect();
    };
    let signer = name[..split].replace(':', "/");
    let prefix = format!("{}:", signer.replace('/', ":"));
    match name.strip_prefix(&prefix) {
        Some(rest) => super::subdomain(rest).into_iter().collect(),
        None => vec![format!(
            "ClusterTrustBundle for signerName {signer} must be named with prefix {prefix}"
        )],
    }
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain of at least two DNS labels, the path of
/// DNS subdomains joined by '.', at most 571 bytes in all.
fn signer_name(signer: &str, at: &str, v: &mut Violations) {
    const DOMAIN_MAX: usize = 253;
    const SIGNER_MAX: usize = DOMAIN_MAX + (253 + 63 + 1) + 1;
    if signer.is_empty() {
        v.push((at.to_string(), "Required value".into()));
        return;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, path] = segments[..] else {
        v.push((
            at.to_string(),
            format!(
                "Invalid value: {signer:?}: must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ),
        ));
        return;
    };
    if domain.len() > DOMAIN_MAX {
        v.push((
            at.to_string(),
            format!("Too long: may not be more than {DOMAIN_MAX} bytes"),
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    // One problem is enough: the next labels' would read the same.
    if let Some((l, e)) = labels.iter().find_map(|l| label(l).map(|e| (l, e))) {
        v.push((
            at.to_string(),
            format!("Invalid value: {domain:?}: validating label {l:?}: {e}"),
        ));
    }
    if labels.len() < 2 {
        v.push((
            at.to_string(),
            format!(
                "Invalid value: {domain:?}: should be a domain with at least two segments separated by dots"
            ),
        ));
    }
    if let Some((l, e)) = path
        .split('.')
        .find_map(|l| super::subdomain(l).map(|e| (l, e)))
    {
        v.push((
            at.to_string(),
            format!("Invalid value: {path:?}: validating label {l:?}: {e}"),
        ));
    }
    if signer.len() > SIGNER_MAX {
        v.push((
            at.to_string(),
            format!("Too long: may not be more than {SIGNER_MAX} bytes"),
        ));
    }
}

/// Go's `%#v` of upstream's internal projection, as its Invalid error prints it.
fn go_projection(b: &ClusterTrustBundleProjection) -> String {
    format!(
        "core.ClusterTrustBundleProjection{{Name:{}, SignerName:{}, LabelSelector:{}, Optional:{}, Path:{:?}}}",
        go_pointer("string", b.name.is_some()),
        go_pointer("string", b.signer_name.is_some()),
        go_pointer("v1.LabelSelector", b.label_selector.is_some()),
        go_pointer("bool", b.optional.is_some()),
        b.path
    )
}

/// Go's `%#v` of a `metav1.LabelSelector` (its `String` is on the pointer, so Go prints the
/// struct). Empty maps and lists print as absent ones: we cannot tell them apart.
fn go_label_selector(s: &LabelSelector) -> String {
    let labels = if s.match_labels.is_empty() {
        "map[string]string(nil)".to_string()
    } else {
        let pairs: Vec<String> = s
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k:?}:{v:?}"))
            .collect();
        format!("map[string]string{{{}}}", pairs.join(", "))
    };
    let expressions = if s.match_expressions.is_empty() {
        "[]v1.LabelSelectorRequirement(nil)".to_string()
    } else {
        let items: Vec<String> = s
            .match_expressions
            .iter()
            .map(|r| {
                format!(
                    "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{}}}",
                    r.key,
                    r.operator,
                    go_strings(&r.values)
                )
            })
            .collect();
        format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}
