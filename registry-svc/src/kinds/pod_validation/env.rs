//! Where a container's environment variables come from: upstream's `validateEnvVarValueFrom`
//! (the downward API's field and resource selectors, ConfigMap and Secret keys) and
//! `ValidateEnvFrom`, with their paths and words (`pkg/apis/core/validation/validation.go`).
//!
//! One difference: a resource divisor is compared by value with the divisors upstream allows
//! (`1m`, `1`, `1Ki`, ...), where upstream compares its canonical text, so `1000m` passes on both
//! but `1024` passes here for memory where upstream wants `1Ki`.

use kubestore_proto::core::v1::{
    EnvFromSource, EnvVarSource, ObjectFieldSelector, ResourceFieldSelector,
};

use super::not_supported;
use crate::{
    kinds::configmap::config_key,
    quantity::Quantity,
    validation::{dns1123_subdomain, qualified_name},
    violations::Violations,
};

/// The pod fields a variable may name (`validEnvDownwardAPIFieldPathExpressions`), sorted as
/// upstream lists them in its error.
const FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The paths upstream's v1 Pod field-label conversion knows
/// (`ConvertDownwardAPIFieldLabel`); the others are `field label not supported`.
const CONVERTIBLE: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// A container's resources a variable may name (`validContainerResourceFieldPathExpressions`).
const RESOURCES: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// The divisors of memory, storage and huge pages.
const BYTE_DIVISORS: &[&str] = &[
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// `IsRelaxedEnvVarName`: printable ASCII other than `=`.
pub(super) fn relaxed_name(name: &str, path: String, v: &mut Violations) {
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        v.push((
            path,
            format!(
                "Invalid value: {name:?}: a valid environment variable name must consist only of printable ASCII characters other than '='"
            ),
        ));
    }
}

/// One variable's `valueFrom`, at `path`; `value` is the variable's own.
pub(super) fn value_from(value: &str, from: &EnvVarSource, path: &str, v: &mut Violations) {
    let mut sources = 0;
    if let Some(f) = &from.field_ref {
        sources += 1;
        field_ref(f, &format!("{path}.fieldRef"), v);
    }
    if let Some(r) = &from.resource_field_ref {
        sources += 1;
        resource_field_ref(r, &format!("{path}.resourceFieldRef"), false, v);
    }
    for (name, key, at) in [
        from.config_map_key_ref
            .as_ref()
            .map(|s| (&s.name, &s.key, "configMapKeyRef")),
        from.secret_key_ref
            .as_ref()
            .map(|s| (&s.name, &s.key, "secretKeyRef")),
    ]
    .into_iter()
    .flatten()
    {
        sources += 1;
        key_selector(name, key, &format!("{path}.{at}"), v);
    }
    let problem = if sources == 0 {
        Some(
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        )
    } else if !value.is_empty() {
        Some("may not be specified when `value` is not empty")
    } else if sources > 1 {
        Some("may not have more than one field specified at a time")
    } else {
        None
    };
    if let Some(p) = problem {
        v.push((path.to_string(), format!("Invalid value: \"\": {p}")));
    }
}

/// `validateObjectFieldSelector` with the variables' paths.
fn field_ref(f: &ObjectFieldSelector, path: &str, v: &mut Violations) {
    if f.api_version.is_empty() {
        v.push((format!("{path}.apiVersion"), "Required value".into()));
        return;
    }
    if f.field_path.is_empty() {
        v.push((format!("{path}.fieldPath"), "Required value".into()));
        return;
    }
    let (field, subscript) = split_subscript(&f.field_path);
    let conversion = if f.api_version != "v1" {
        Some(format!("unsupported pod version: {}", f.api_version))
    } else if !CONVERTIBLE.contains(&field) {
        Some(format!("field label not supported: {field}"))
    } else {
        None
    };
    if let Some(e) = conversion {
        v.push((
            format!("{path}.fieldPath"),
            format!(
                "Invalid value: {:?}: error converting fieldPath: {e}",
                f.field_path
            ),
        ));
        return;
    }
    match subscript {
        Some(key) => match field {
            "metadata.annotations" | "metadata.labels" => {
                let key = if field == "metadata.annotations" {
                    key.to_ascii_lowercase()
                } else {
                    key.to_string()
                };
                if let Some(e) = qualified_name(&key) {
                    v.push((path.to_string(), format!("Invalid value: {key:?}: {e}")));
                }
            }
            _ => v.push((
                path.to_string(),
                format!("Invalid value: {field:?}: does not support subscript"),
            )),
        },
        None if !FIELD_PATHS.contains(&field) => v.push((
            format!("{path}.fieldPath"),
            not_supported(field, FIELD_PATHS),
        )),
        None => {}
    }
}

/// `metadata.labels['app']` as (`metadata.labels`, `app`); a path without one as itself
/// (upstream's `SplitMaybeSubscriptedPath`).
fn split_subscript(path: &str) -> (&str, Option<&str>) {
    if let Some(rest) = path.strip_suffix("']")
        && let Some((field, key)) = rest.split_once("['")
    {
        return (field, Some(key));
    }
    (path, None)
}

/// `validateContainerResourceFieldSelector` and `validateContainerResourceDivisor`, for a
/// variable (`container_required` false: the variable's own container is meant) or a downward
/// API file (the container must be named). A divisor is checked as upstream checks it, by the
/// text Go writes it back as (`divisor.String()`: kubestore stores divisors so), so `1024` is
/// no memory divisor though it equals `1Ki`.
pub(super) fn resource_field_ref(
    r: &ResourceFieldSelector,
    path: &str,
    container_required: bool,
    v: &mut Violations,
) {
    let resource = r.resource.as_str();
    let huge_pages =
        resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-");
    if container_required && r.container_name.is_empty() {
        v.push((format!("{path}.containerName"), "Required value".into()));
    } else if resource.is_empty() {
        v.push((format!("{path}.resource"), "Required value".into()));
    } else if !RESOURCES.contains(&resource) && !huge_pages {
        v.push((
            format!("{path}.resource"),
            not_supported(resource, RESOURCES),
        ));
    }
    let divisor = if r.divisor.is_empty() {
        "0"
    } else {
        &r.divisor
    };
    let written = match Quantity::parse(divisor) {
        Ok(d) if d == Quantity::ZERO => return,
        Ok(_) => Quantity::canonical(divisor).unwrap_or_default(),
        Err(e) => {
            v.push((
                format!("{path}.divisor"),
                format!("Invalid value: {:?}: {e}", r.divisor),
            ));
            return;
        }
    };
    let allowed = |list: &[&str]| list.contains(&written.as_str());
    let bytes = |kind: &str| {
        format!(
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the {kind} resource"
        )
    };
    let problem = match resource {
        "limits.cpu" | "requests.cpu" if !allowed(&["1m", "1"]) => {
            Some("only divisor's values 1m and 1 are supported with the cpu resource".to_string())
        }
        "limits.memory" | "requests.memory" if !allowed(BYTE_DIVISORS) => Some(bytes("memory")),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" if !allowed(BYTE_DIVISORS) => {
            Some(bytes("local ephemeral storage"))
        }
        _ if huge_pages && !allowed(BYTE_DIVISORS) => Some(bytes("hugepages")),
        _ => None,
    };
    if let Some(p) = problem {
        v.push((
            format!("{path}.divisor"),
            format!("Invalid value: {resource:?}: {p}"),
        ));
    }
}

/// `validateConfigMapKeySelector` and `validateSecretKeySelector` (the same rules): the name a
/// DNS subdomain, the key a config key.
fn key_selector(name: &str, key: &str, path: &str, v: &mut Violations) {
    if let Some(e) = dns1123_subdomain(name) {
        v.push((
            format!("{path}.name"),
            format!("Invalid value: {name:?}: {e}"),
        ));
    }
    if key.is_empty() {
        v.push((format!("{path}.key"), "Required value".into()));
    } else if let Some(e) = config_key(key) {
        v.push((
            format!("{path}.key"),
            format!("Invalid value: {key:?}: {e}"),
        ));
    }
}

/// `ValidateEnvFrom`, for the container's `envFrom` at `path`.
pub(super) fn env_from(sources: &[EnvFromSource], path: &str, v: &mut Violations) {
    for (i, s) in sources.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if !s.prefix.is_empty() {
            relaxed_name(&s.prefix, format!("{at}.prefix"), v);
        }
        let refs = [
            s.config_map_ref.as_ref().map(|r| (&r.name, "configMapRef")),
            s.secret_ref.as_ref().map(|r| (&r.name, "secretRef")),
        ];
        let mut count = 0;
        for (name, field) in refs.into_iter().flatten() {
            count += 1;
            let name_path = format!("{at}.{field}.name");
            if name.is_empty() {
                v.push((name_path, "Required value".into()));
            } else if let Some(e) = dns1123_subdomain(name) {
                v.push((name_path, format!("Invalid value: {name:?}: {e}")));
            }
        }
        // Upstream reports these at the list's path, not the item's.
        let problem = match count {
            0 => Some("must specify one of: `configMapRef` or `secretRef`"),
            1 => None,
            _ => Some("may not have more than one field specified at a time"),
        };
        if let Some(p) = problem {
            v.push((path.to_string(), format!("Invalid value: \"\": {p}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use kubestore_proto::core::v1::{
        ConfigMapEnvSource, ConfigMapKeySelector, SecretEnvSource, SecretKeySelector,
    };

    use super::*;

    fn check(value: &str, from: EnvVarSource) -> Vec<String> {
        let mut v = Violations::new();
        value_from(value, &from, "spec.containers[0].env[0].valueFrom", &mut v);
        v.iter().map(|(f, d)| format!("{f}: {d}")).collect()
    }

    fn field(api_version: &str, path: &str) -> EnvVarSource {
        EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: api_version.into(),
                field_path: path.into(),
            }),
            ..Default::default()
        }
    }

    fn resource(resource: &str, divisor: &str) -> EnvVarSource {
        EnvVarSource {
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: String::new(),
                resource: resource.into(),
                divisor: divisor.into(),
            }),
            ..Default::default()
        }
    }

    const AT: &str = "spec.containers[0].env[0].valueFrom";

    #[test]
    fn the_sources_upstreams_examples_use_are_valid() {
        for ok in [
            field("v1", "metadata.name"),
            field("v1", "status.podIP"),
            field("v1", "metadata.labels['app.kubernetes.io/name']"),
            field("v1", "metadata.annotations['Example.com/Note']"),
            resource("limits.cpu", "1m"),
            resource("requests.memory", "1Mi"),
            resource("limits.memory", "0"),
            resource("requests.hugepages-2Mi", "1Mi"),
            EnvVarSource {
                config_map_key_ref: Some(ConfigMapKeySelector {
                    name: "special-config".into(),
                    key: "special.how".into(),
                    optional: None,
                }),
                ..Default::default()
            },
            EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: "backend-user".into(),
                    key: "backend-username".into(),
                    optional: Some(true),
                }),
                ..Default::default()
            },
        ] {
            assert!(check("", ok.clone()).is_empty(), "{ok:?}");
        }
    }

    #[test]
    fn bad_sources_are_refused_in_upstreams_words() {
        assert_eq!(
            check("", EnvVarSource::default()),
            [format!(
                "{AT}: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
            )]
        );
        assert_eq!(
            check("x", field("v1", "metadata.name")),
            [format!(
                "{AT}: Invalid value: \"\": may not be specified when `value` is not empty"
            )]
        );
        let mut two = field("v1", "metadata.name");
        two.resource_field_ref = resource("limits.cpu", "").resource_field_ref;
        assert_eq!(
            check("", two),
            [format!(
                "{AT}: Invalid value: \"\": may not have more than one field specified at a time"
            )]
        );
        assert_eq!(
            check("", field("v1", "spec.restartPolicy")),
            [format!(
                "{AT}.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\""
            )]
        );
        assert_eq!(
            check("", field("v1", "spec.containers")),
            [format!(
                "{AT}.fieldRef.fieldPath: Invalid value: \"spec.containers\": error converting fieldPath: field label not supported: spec.containers"
            )]
        );
        assert_eq!(
            check("", field("v2", "metadata.name")),
            [format!(
                "{AT}.fieldRef.fieldPath: Invalid value: \"metadata.name\": error converting fieldPath: unsupported pod version: v2"
            )]
        );
        assert_eq!(
            check("", field("v1", "metadata.name['x']")),
            [format!(
                "{AT}.fieldRef: Invalid value: \"metadata.name\": does not support subscript"
            )]
        );
        assert_eq!(
            check("", field("", "metadata.name")),
            [format!("{AT}.fieldRef.apiVersion: Required value")]
        );
        assert_eq!(
            check("", resource("limits.cpu", "2")),
            [format!(
                "{AT}.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"
            )]
        );
        assert_eq!(
            check("", resource("limits.gpu", "")),
            [format!(
                "{AT}.resourceFieldRef.resource: Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\""
            )]
        );
        let bad_key = EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: "Bad_Name".into(),
                key: String::new(),
                optional: None,
            }),
            ..Default::default()
        };
        let got = check("", bad_key);
        assert!(
            got[0].starts_with(&format!("{AT}.configMapKeyRef.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")),
            "{got:?}"
        );
        assert_eq!(got[1], format!("{AT}.configMapKeyRef.key: Required value"));
    }

    #[test]
    fn env_from_takes_one_source_per_item() {
        let mut v = Violations::new();
        let path = "spec.containers[0].envFrom";
        env_from(
            &[
                EnvFromSource {
                    prefix: "CONFIG_".into(),
                    config_map_ref: Some(ConfigMapEnvSource {
                        name: "special-config".into(),
                        optional: None,
                    }),
                    secret_ref: None,
                },
                EnvFromSource::default(),
                EnvFromSource {
                    prefix: "A=B".into(),
                    config_map_ref: Some(ConfigMapEnvSource::default()),
                    secret_ref: Some(SecretEnvSource {
                        name: "s".into(),
                        optional: Some(false),
                    }),
                },
            ],
            path,
            &mut v,
        );
        let got: Vec<String> = v.iter().map(|(f, d)| format!("{f}: {d}")).collect();
        assert_eq!(
            got,
            [
                format!(
                    "{path}: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"
                ),
                format!(
                    "{path}[2].prefix: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"
                ),
                format!("{path}[2].configMapRef.name: Required value"),
                format!(
                    "{path}: Invalid value: \"\": may not have more than one field specified at a time"
                ),
            ]
        );
    }

    /// A divisor is checked by the text Go writes it back as (`divisor.String()`), as upstream:
    /// `1Ki` and `1000m` (written `1`) are divisors, `1024` (equal to `1Ki`, written `1024`) is
    /// not; a downward API file must name its container.
    #[test]
    fn divisors_are_checked_as_written_back() {
        let resource = |resource: &str, divisor: &str, container: &str| ResourceFieldSelector {
            container_name: container.into(),
            resource: resource.into(),
            divisor: divisor.into(),
        };
        let problems = |r: ResourceFieldSelector, container_required: bool| {
            let mut v = Violations::new();
            resource_field_ref(&r, "f", container_required, &mut v);
            v.iter()
                .map(|(f, d)| format!("{f}: {d}"))
                .collect::<Vec<_>>()
        };
        assert!(problems(resource("limits.memory", "1Ki", ""), false).is_empty());
        assert!(problems(resource("limits.cpu", "1000m", ""), false).is_empty());
        assert_eq!(
            problems(resource("limits.memory", "1024", ""), false),
            [
                "f.divisor: Invalid value: \"limits.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"
            ]
        );
        assert_eq!(
            problems(resource("limits.cpu", "", ""), true),
            ["f.containerName: Required value"]
        );
    }
}
