//! The Pod Security Standards checks of upstream's `k8s.io/pod-security-admission` v0.33
//! (Kubernetes 1.33), on a Pod's Kubernetes JSON.
//!
//! Here: the levels and versions ([`Level`], [`Version`]: `api/helpers.go`'s `ParseLevel` and
//! `ParseVersion`), the registry of versioned checks and how a level and version choose and
//! order them ([`evaluate`]: `policy/registry.go`, `policy/checks.go`), the aggregate text of
//! a refusal ([`message`]: `AggregateCheckResult.ForbiddenDetail`), and what the checks share
//! (`policy/visitor.go`, `policy/helpers.go`). The checks are in the siblings `baseline` and
//! `restricted` (upstream's `policy/check_*.go`), with upstream's reasons and details word for
//! word, since clients and tests match on them.
//!
//! The Pod is read as JSON with upstream's field names. A field that is missing, `null` or of
//! another type than upstream's counts as unset (Go's zero value: `false`, `""`, `0`, a nil
//! pointer), so no shape of input makes a check fail or panic; validation is elsewhere.
//!
//! Not here: upstream's `UserNamespacesPodSecurityStandards` relaxation (pods with
//! `hostUsers: false` skip `procMount`, `runAsNonRoot` and `runAsUser`), an alpha feature gate
//! that is off by default in 1.33, so it is off here.

use serde_json::Value;

/// Go's `%q`, as the annotation details quote values.
pub(super) use kubestore_apimachinery::gotext::go_quote;

use super::{baseline, restricted};

/// A Pod Security level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Unrestricted: no check runs.
    Privileged,
    /// Prevents known privilege escalations.
    Baseline,
    /// Baseline and the hardening best practices.
    Restricted,
}

impl Level {
    /// Upstream's `api.ParseLevel`: exactly `privileged`, `baseline` or `restricted`. Upstream
    /// returns `restricted` with its error; here the caller chooses the fallback.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    /// The level's name, as in the namespace labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A version a policy is evaluated at: `latest`, or `v1.N` (upstream's `api.ParseVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// `v1.N`, the checks as Kubernetes 1.N defined them.
    Minor(u32),
    /// `latest`: every check's newest definition (newer than any `v1.N`).
    Latest,
}

impl Version {
    /// Upstream's `api.ParseVersion`: `latest`, or `v1.` and a minor matching
    /// `[0-9]|[1-9][0-9]*` (no sign, no leading zero). Upstream returns `latest` with its
    /// error; here the caller chooses the fallback. A minor beyond `u32` is refused (upstream
    /// takes any Go `int`; every minor past 1.32 behaves the same anyway).
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::Latest);
        }
        let minor = s.strip_prefix("v1.")?;
        let digits_only = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        let leading_zero = minor.len() > 1 && minor.starts_with('0');
        if !digits_only || leading_zero {
            return None;
        }
        minor.parse().ok().map(Version::Minor)
    }

    /// As upstream prints it: `latest` or `v1.N`.
    pub fn to_string_upstream(self) -> String {
        match self {
            Version::Latest => "latest".to_string(),
            Version::Minor(n) => format!("v1.{n}"),
        }
    }
}

/// One failed check, as upstream's `CheckResult` of a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Upstream's `ForbiddenReason`, such as `host namespaces`.
    pub reason: String,
    /// Upstream's `ForbiddenDetail`, such as `hostNetwork=true` (may be empty).
    pub detail: String,
}

/// The failed checks of a Pod (`pod_metadata` is its `metadata`, whose legacy AppArmor and
/// seccomp annotations are checked; `pod_spec` its `spec`) at `level` and `version`, in the
/// order upstream's evaluator reports them: the baseline checks by ID, then (for restricted)
/// the restricted checks by ID, less the baseline checks a restricted one replaces.
pub fn evaluate(
    level: Level,
    version: Version,
    pod_metadata: &Value,
    pod_spec: &Value,
) -> Vec<Failure> {
    selected(level, version)
        .into_iter()
        .filter_map(|(_, check)| (check.run)(pod_metadata, pod_spec))
        .collect()
}

/// Upstream's aggregate text of `failures` (`AggregateCheckResult.ForbiddenDetail`), what
/// follows `violates PodSecurity "restricted:latest": `: each reason, with its detail in
/// parentheses when there is one, joined by `, `.
pub fn message(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| {
            let reason = if f.reason.is_empty() {
                UNKNOWN_REASON
            } else {
                f.reason.as_str()
            };
            if f.detail.is_empty() {
                reason.to_string()
            } else {
                format!("{reason} ({})", f.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Upstream's `UnknownForbiddenReason`, for a failure without a reason.
const UNKNOWN_REASON: &str = "unknown forbidden reason";

// ---- The registry (`policy/registry.go`) ----

/// One versioned check's function (upstream's `CheckPodFn`): `None` when the pod passes.
type CheckFn = fn(&Value, &Value) -> Option<Failure>;

/// A check (upstream's `Check`): its ID, level, and its definitions by version.
struct Check {
    id: &'static str,
    level: Level,
    /// By increasing `since`; a version before the first has no such check.
    versions: &'static [Versioned],
}

/// A check as defined from a minor version on (upstream's `VersionedCheck`).
struct Versioned {
    /// The first `v1.N` this definition applies to.
    since: u32,
    run: CheckFn,
    /// The baseline checks this restricted one replaces at the restricted level (upstream's
    /// `OverrideCheckIDs`: restricted reports its stricter form instead of both).
    overrides: &'static [&'static str],
}

impl Check {
    /// The definition that applies at `v1.minor`, if the check exists then.
    fn at(&self, minor: u32) -> Option<&'static Versioned> {
        self.versions.iter().rev().find(|v| v.since <= minor)
    }
}

/// A definition from `v1.since` on that overrides nothing.
const fn since(since: u32, run: CheckFn) -> Versioned {
    Versioned {
        since,
        run,
        overrides: &[],
    }
}

/// A restricted definition from `v1.since` on that replaces the baseline check `overrides`.
const fn replacing(since: u32, run: CheckFn, overrides: &'static [&'static str]) -> Versioned {
    Versioned {
        since,
        run,
        overrides,
    }
}

/// A baseline check.
const fn baseline_check(id: &'static str, versions: &'static [Versioned]) -> Check {
    Check {
        id,
        level: Level::Baseline,
        versions,
    }
}

/// A restricted check.
const fn restricted_check(id: &'static str, versions: &'static [Versioned]) -> Check {
    Check {
        id,
        level: Level::Restricted,
        versions,
    }
}

/// Every check of 1.33 with its versions (upstream's `init` of each `check_*.go`).
static CHECKS: &[Check] = &[
    baseline_check(
        "appArmorProfile",
        &[since(0, baseline::app_armor_profile_1_0)],
    ),
    baseline_check(
        "capabilities_baseline",
        &[since(0, baseline::capabilities_1_0)],
    ),
    baseline_check("hostNamespaces", &[since(0, baseline::host_namespaces_1_0)]),
    baseline_check(
        "hostPathVolumes",
        &[since(0, baseline::host_path_volumes_1_0)],
    ),
    baseline_check("hostPorts", &[since(0, baseline::host_ports_1_0)]),
    baseline_check("privileged", &[since(0, baseline::privileged_1_0)]),
    baseline_check("procMount", &[since(0, baseline::proc_mount_1_0)]),
    baseline_check(
        "seLinuxOptions",
        &[
            since(0, baseline::se_linux_options_1_0),
            since(31, baseline::se_linux_options_1_31),
        ],
    ),
    baseline_check(
        "seccompProfile_baseline",
        &[
            since(0, baseline::seccomp_profile_1_0),
            since(19, baseline::seccomp_profile_1_19),
        ],
    ),
    baseline_check(
        "sysctls",
        &[
            since(0, baseline::sysctls_1_0),
            since(27, baseline::sysctls_1_27),
            since(29, baseline::sysctls_1_29),
            since(32, baseline::sysctls_1_32),
        ],
    ),
    baseline_check(
        "windowsHostProcess",
        &[since(0, baseline::windows_host_process_1_0)],
    ),
    restricted_check(
        "allowPrivilegeEscalation",
        &[
            since(8, restricted::allow_privilege_escalation_1_8),
            since(25, restricted::allow_privilege_escalation_1_25),
        ],
    ),
    restricted_check(
        "capabilities_restricted",
        &[
            replacing(
                22,
                restricted::capabilities_1_22,
                &["capabilities_baseline"],
            ),
            replacing(
                25,
                restricted::capabilities_1_25,
                &["capabilities_baseline"],
            ),
        ],
    ),
    restricted_check(
        "restrictedVolumes",
        &[replacing(0, restricted::volumes_1_0, &["hostPathVolumes"])],
    ),
    restricted_check("runAsNonRoot", &[since(0, restricted::run_as_non_root_1_0)]),
    restricted_check("runAsUser", &[since(23, restricted::run_as_user_1_23)]),
    restricted_check(
        "seccompProfile_restricted",
        &[
            replacing(
                19,
                restricted::seccomp_profile_1_19,
                &["seccompProfile_baseline"],
            ),
            replacing(
                25,
                restricted::seccomp_profile_1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    ),
];

/// The newest minor any check of `table` was redefined at (1.32 for [`CHECKS`]): upstream
/// evaluates `latest` and every newer `v1.N` as this one.
fn newest_minor(table: &[Check]) -> u32 {
    table
        .iter()
        .filter_map(|c| c.versions.last())
        .map(|v| v.since)
        .max()
        .unwrap_or(0)
}

/// The minor whose definitions `version` runs.
fn effective_minor(table: &[Check], version: Version) -> u32 {
    let newest = newest_minor(table);
    match version {
        Version::Latest => newest,
        Version::Minor(n) => n.min(newest),
    }
}

/// The checks of `level` in `table` that exist at `v1.minor`, by ID (byte order, as Go
/// sorts strings).
fn active(
    table: &'static [Check],
    level: Level,
    minor: u32,
) -> Vec<(&'static str, &'static Versioned)> {
    let mut found: Vec<(&'static str, &'static Versioned)> = table
        .iter()
        .filter(|c| c.level == level)
        .filter_map(|c| c.at(minor).map(|v| (c.id, v)))
        .collect();
    found.sort_by_key(|(id, _)| *id);
    found
}

/// The checks of `table` that `level` runs at `version`, in upstream's order (`populate`):
/// baseline's (less those a restricted one overrides), then restricted's.
fn selected_in(
    table: &'static [Check],
    level: Level,
    version: Version,
) -> Vec<(&'static str, &'static Versioned)> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let minor = effective_minor(table, version);
    let restricted_checks = if level == Level::Restricted {
        active(table, Level::Restricted, minor)
    } else {
        Vec::new()
    };
    let overridden: Vec<&'static str> = restricted_checks
        .iter()
        .flat_map(|(_, v)| v.overrides.iter().copied())
        .collect();
    let mut checks: Vec<(&'static str, &'static Versioned)> = active(table, Level::Baseline, minor)
        .into_iter()
        .filter(|(id, _)| !overridden.contains(id))
        .collect();
    checks.extend(restricted_checks);
    checks
}

/// The checks of 1.33 that `level` runs at `version`, in upstream's order.
fn selected(level: Level, version: Version) -> Vec<(&'static str, &'static Versioned)> {
    selected_in(CHECKS, level, version)
}

// ---- What the checks share: reading the JSON, the visitor, the wording ----

/// A failed check's result.
pub(super) fn forbid(reason: &str, detail: String) -> Option<Failure> {
    Some(Failure {
        reason: reason.to_string(),
        detail,
    })
}

/// `v.key` when it is an object (a Go struct pointer that is set).
pub(super) fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|f| f.is_object())
}

/// `v.key` when it is a boolean (a Go `*bool` that is set).
pub(super) fn boolean(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(Value::as_bool)
}

/// `v.key` when it is a string.
pub(super) fn string<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `v.key` when it is an integer.
pub(super) fn integer(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// The elements of `v.key` when it is an array, else none.
pub(super) fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    match v.get(key) {
        Some(Value::Array(list)) => list,
        _ => &[],
    }
}

/// The strings of the array `v.key`; an element that is no string is "" (Go's zero value).
pub(super) fn strings<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    items(v, key).iter().map(|s| s.as_str().unwrap_or(""))
}

/// `spec.securityContext.<key>`, when the pod has a security context.
pub(super) fn pod_security<'a>(spec: &'a Value, key: &str) -> Option<&'a Value> {
    object(spec, "securityContext").and_then(|sc| sc.get(key))
}

/// The pod's annotation `key`.
pub(super) fn annotation<'a>(meta: &'a Value, key: &str) -> Option<&'a str> {
    object(meta, "annotations").and_then(|a| string(a, key))
}

/// The pod's annotations (those with string values).
pub(super) fn annotations(meta: &Value) -> impl Iterator<Item = (&str, &str)> {
    meta.get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
}

/// Whether the pod says it runs on Windows (`spec.os.name: windows`), which exempts it from
/// the restricted checks of fields Windows pods may not set (from 1.25).
pub(super) fn is_windows(spec: &Value) -> bool {
    object(spec, "os").and_then(|os| string(os, "name")) == Some("windows")
}

/// The `type` of a profile (`appArmorProfile`, `seccompProfile`) that is set; a profile
/// without a type has type "" (Go's zero value), which no check allows.
pub(super) fn profile_type(profile: Option<&Value>) -> Option<&str> {
    profile
        .filter(|p| p.is_object())
        .map(|p| string(p, "type").unwrap_or(""))
}

/// The seccomp profile types the checks allow (`validSeccomp`).
pub(super) fn valid_seccomp_type(t: &str) -> bool {
    matches!(t, "RuntimeDefault" | "Localhost")
}

/// A container, init container or ephemeral container, as the checks see it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Container<'a> {
    /// Its name ("" when unset).
    pub(super) name: &'a str,
    raw: &'a Value,
}

impl<'a> Container<'a> {
    /// `securityContext.<key>`, when the container has a security context.
    pub(super) fn security(&self, key: &str) -> Option<&'a Value> {
        object(self.raw, "securityContext").and_then(|sc| sc.get(key))
    }

    /// `securityContext.capabilities`, when set.
    pub(super) fn capabilities(&self) -> Option<&'a Value> {
        self.security("capabilities").filter(|c| c.is_object())
    }

    /// Its `ports`.
    pub(super) fn ports(&self) -> &'a [Value] {
        items(self.raw, "ports")
    }
}

/// Every container of `spec` in upstream's visiting order (`visitContainers`): init
/// containers, containers, then ephemeral containers, which is the order details name them.
pub(super) fn containers(spec: &Value) -> impl Iterator<Item = Container<'_>> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |key| items(spec, key))
        .map(|raw| Container {
            name: string(raw, "name").unwrap_or(""),
            raw,
        })
}

/// Upstream's `pluralize`.
pub(super) fn pluralize(
    singular: &'static str,
    plural: &'static str,
    count: usize,
) -> &'static str {
    if count == 1 { singular } else { plural }
}

/// Upstream's `joinQuote`: `"a", "b"` (no escaping), "" for none.
pub(super) fn join_quote<I>(items: I) -> String
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `container "a"` or `containers "a", "b"`, as most details name containers.
pub(super) fn containers_phrase(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Upstream's "bad setters": `pod` when the pod-level field is bad, then the bad containers;
/// details join them with ` and `.
pub(super) fn setters(pod: bool, bad_containers: &[&str]) -> Vec<String> {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(bad_containers));
    }
    setters
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
