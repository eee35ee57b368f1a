//! Validation of MutatingWebhookConfiguration and ValidatingWebhookConfiguration: upstream's
//! `pkg/apis/admissionregistration/validation/validation.go` (1.33) and the URL rule of
//! `staging/src/k8s.io/apiserver/pkg/util/webhook/validation.go`, with their field paths, words
//! and order, as pure functions over the stored messages. Metadata is the Store's. What the
//! webhooks share with the policy kinds (a rule's operations and resources, the selectors, the
//! words of a violation) is `admission_policy_validation`'s; the match conditions' rule lives
//! here, with its path as a parameter.
//!
//! An update relaxes what upstream's `validationOptions` relax: the match conditions are not
//! checked when no webhook's changed, and side effects other than `None`/`NoneOnDryRun`,
//! admission review versions none of which is known, and duplicate webhook names are accepted
//! when the old object had them too. Deliberate differences:
//! - A `clientConfig.service` is `Forbidden`: kubestore has no Services, so a webhook gives its
//!   `url` (upstream checks the service's name, namespace, port and path).
//! - A non-empty `caBundle` must hold a PEM certificate; upstream does not look at it until it
//!   calls the webhook.
//! - Fields v1 defaults (failurePolicy, matchPolicy, both selectors, timeoutSeconds,
//!   reinvocationPolicy) are `Required value` when the caller did not default them, as the
//!   policy kinds' are; upstream checks them only when set.
//! - CEL is checked by `compile_error`, on the source alone (a match condition's result type is
//!   not checked), and an expression the old object had is not compiled again on update.
//! - The URL is parsed as Go's `net/url` parses it, as far as it refuses one (not an IPv6
//!   zone's rules).
//! - Selectors' label values are always checked (upstream relaxes that on an update of an
//!   object stored with invalid ones; kubestore never stored one), and a version's DNS-1035
//!   problems are one violation, joined with ",".

use std::collections::HashSet;

use kubestore_proto::admissionregistration::v1::{
    MatchCondition, MutatingWebhookConfiguration, NamedRuleWithOperations, RuleWithOperations,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use kubestore_proto::meta::v1::LabelSelector;
use percent_encoding::percent_decode_str;

use super::admission_policy_validation::{
    FAILURE_POLICIES, MATCH_POLICIES, MAX_MATCH_CONDITIONS, compile, dns1035, duplicate, go_list,
    invalid, invalid_as, named_rule, not_supported, one_of, required,
};
use super::pod_validation::scheduling::label_selector;
use crate::{
    validation::{dns1123_subdomain, qualified_name},
    violations::Violations,
};

#[cfg(test)]
#[path = "webhook_validation_tests.rs"]
mod tests;

/// Upstream's `noSideEffectClasses`, what a new webhook may declare.
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
/// Upstream's `supportedSideEffectClasses`.
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
/// Upstream's `AcceptedAdmissionReviewVersions`.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const PEM_CERTIFICATE: &[u8] = b"-----BEGIN CERTIFICATE-----";
const URL_FORM: &str = "; desired format: https://host[/path]";
const NO_SERVICES: &str =
    "Forbidden: kubestore has no Services: give the webhook's url (https://...) instead";
const NO_PEM: &str = "no PEM certificate found (a caBundle holds PEM-encoded CA certificates, \
    each a \"-----BEGIN CERTIFICATE-----\" block)";

/// One webhook of either kind, as the rules read it.
struct Hook<'a> {
    name: &'a str,
    client_config: Option<&'a WebhookClientConfig>,
    rules: &'a [RuleWithOperations],
    failure_policy: Option<&'a str>,
    match_policy: Option<&'a str>,
    side_effects: Option<&'a str>,
    timeout_seconds: Option<i32>,
    namespace_selector: Option<&'a LabelSelector>,
    object_selector: Option<&'a LabelSelector>,
    /// Whether it is a mutating webhook, which has a reinvocation policy.
    mutating: bool,
    reinvocation_policy: Option<&'a str>,
    admission_review_versions: &'a [String],
    match_conditions: &'a [MatchCondition],
}

/// The [`Hook`] of a webhook `$h` of either kind.
macro_rules! hook {
    ($h:expr, $mutating:expr, $reinvocation:expr) => {
        Hook {
            name: &$h.name,
            client_config: $h.client_config.as_ref(),
            rules: &$h.rules,
            failure_policy: $h.failure_policy.as_deref(),
            match_policy: $h.match_policy.as_deref(),
            side_effects: $h.side_effects.as_deref(),
            timeout_seconds: $h.timeout_seconds,
            namespace_selector: $h.namespace_selector.as_ref(),
            object_selector: $h.object_selector.as_ref(),
            mutating: $mutating,
            reinvocation_policy: $reinvocation,
            admission_review_versions: &$h.admission_review_versions,
            match_conditions: &$h.match_conditions,
        }
    };
}

fn mutating_hooks(c: &MutatingWebhookConfiguration) -> Vec<Hook<'_>> {
    let hooks = c.webhooks.iter();
    hooks
        .map(|h| hook!(h, true, h.reinvocation_policy.as_deref()))
        .collect()
}

fn validating_hooks(c: &ValidatingWebhookConfiguration) -> Vec<Hook<'_>> {
    c.webhooks.iter().map(|h| hook!(h, false, None)).collect()
}

/// What a create checks and an update may relax (upstream's `validationOptions`).
struct Options<'a> {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_versions: bool,
    require_unique_names: bool,
    /// The old object's match condition expressions, not compiled again.
    stored: HashSet<&'a str>,
}

impl<'a> Options<'a> {
    fn create() -> Self {
        Self {
            ignore_match_conditions: false,
            require_no_side_effects: true,
            require_recognized_versions: true,
            require_unique_names: true,
            stored: HashSet::new(),
        }
    }

    /// Upstream's options of an update from `old` to `new`.
    fn update(new: &[Hook<'_>], old: &[Hook<'a>]) -> Self {
        let mut names = HashSet::new();
        let known = |v: &String| REVIEW_VERSIONS.contains(&v.as_str());
        Self {
            ignore_match_conditions: new
                .iter()
                .map(|h| h.match_conditions)
                .eq(old.iter().map(|h| h.match_conditions)),
            require_no_side_effects: old
                .iter()
                .all(|h| h.side_effects.is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_recognized_versions: old.iter().all(|h| {
                let versions = h.admission_review_versions;
                versions.is_empty() || versions.iter().any(known)
            }),
            require_unique_names: old.iter().all(|h| names.insert(h.name)),
            stored: old
                .iter()
                .flat_map(|h| h.match_conditions)
                .map(|c| c.expression.as_str())
                .collect(),
        }
    }
}

/// Upstream's `ValidateMutatingWebhookConfiguration`, less the metadata.
pub fn mutating(c: &MutatingWebhookConfiguration) -> Violations {
    configuration(&mutating_hooks(c), &Options::create())
}

/// Upstream's `ValidateMutatingWebhookConfigurationUpdate`, less the metadata: [`mutating`] of
/// the new object, relaxed where the old object was (see the module's documentation).
pub fn mutating_update(
    new: &MutatingWebhookConfiguration,
    old: &MutatingWebhookConfiguration,
) -> Violations {
    let (new, old) = (mutating_hooks(new), mutating_hooks(old));
    configuration(&new, &Options::update(&new, &old))
}

/// Upstream's `ValidateValidatingWebhookConfiguration`, less the metadata.
pub fn validating(c: &ValidatingWebhookConfiguration) -> Violations {
    configuration(&validating_hooks(c), &Options::create())
}

/// Upstream's `ValidateValidatingWebhookConfigurationUpdate`, less the metadata:
/// [`validating`] of the new object, relaxed where the old object was.
pub fn validating_update(
    new: &ValidatingWebhookConfiguration,
    old: &ValidatingWebhookConfiguration,
) -> Violations {
    let (new, old) = (validating_hooks(new), validating_hooks(old));
    configuration(&new, &Options::update(&new, &old))
}

/// Upstream's `validateMutatingWebhookConfiguration` and
/// `validateValidatingWebhookConfiguration`, less the metadata.
fn configuration(hooks: &[Hook<'_>], o: &Options<'_>) -> Violations {
    let mut v = Violations::new();
    let mut names = HashSet::new();
    for (i, h) in hooks.iter().enumerate() {
        let path = format!("webhooks[{i}]");
        webhook(h, &path, o, &mut v);
        let versions = format!("{path}.admissionReviewVersions");
        let recognized = o.require_recognized_versions;
        review_versions(h.admission_review_versions, recognized, &versions, &mut v);
        if o.require_unique_names && !h.name.is_empty() && !names.insert(h.name) {
            duplicate(&mut v, format!("{path}.name"), h.name);
        }
    }
    v
}

/// Upstream's `validateMutatingWebhook` and `validateValidatingWebhook` of the webhook at
/// `path`.
fn webhook(h: &Hook<'_>, path: &str, o: &Options<'_>, v: &mut Violations) {
    let at = |f: &str| format!("{path}.{f}");
    fully_qualified_name(h.name, at("name"), v);
    for (i, r) in h.rules.iter().enumerate() {
        rule(r, &format!("{path}.rules[{i}]"), v);
    }
    one_of(v, at("failurePolicy"), h.failure_policy, FAILURE_POLICIES);
    one_of(v, at("matchPolicy"), h.match_policy, MATCH_POLICIES);
    let allowed = if o.require_no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        SIDE_EFFECTS
    };
    match h.side_effects {
        None => {
            let detail = format!("must specify one of {}", allowed.join(", "));
            required(v, at("sideEffects"), &detail);
        }
        Some(s) if !allowed.contains(&s) => not_supported(v, at("sideEffects"), s, allowed),
        Some(_) => {}
    }
    match h.timeout_seconds {
        None => required(v, at("timeoutSeconds"), ""),
        Some(t) if !(1..=30).contains(&t) => {
            let detail = "the timeout value must be between 1 and 30 seconds";
            invalid_as(v, at("timeoutSeconds"), &t.to_string(), detail);
        }
        Some(_) => {}
    }
    for (field, selector) in [
        ("namespaceSelector", h.namespace_selector),
        ("objectSelector", h.object_selector),
    ] {
        match selector {
            None => required(v, at(field), ""),
            Some(s) => label_selector(s, &at(field), v),
        }
    }
    if h.mutating {
        let policy = h.reinvocation_policy;
        one_of(v, at("reinvocationPolicy"), policy, REINVOCATION_POLICIES);
    }
    client_config(h.client_config, &at("clientConfig"), v);
    if !o.ignore_match_conditions {
        match_conditions(h.match_conditions, &at("matchConditions"), &o.stored, v);
    }
}

/// apimachinery's `IsFullyQualifiedName`: a DNS subdomain of at least three labels.
fn fully_qualified_name(name: &str, path: String, v: &mut Violations) {
    if name.is_empty() {
        required(v, path, "");
    } else if let Some(e) = dns1123_subdomain(name) {
        invalid(v, path, name, &e);
    } else if name.split('.').count() < 3 {
        let detail = "should be a domain with at least three segments separated by dots";
        invalid(v, path, name, detail);
    }
}

/// Upstream's `validateRuleWithOperations`: the policy kinds' named rule, without names.
fn rule(r: &RuleWithOperations, path: &str, v: &mut Violations) {
    let named = NamedRuleWithOperations {
        resource_names: Vec::new(),
        operations: r.operations.clone(),
        api_groups: r.api_groups.clone(),
        api_versions: r.api_versions.clone(),
        resources: r.resources.clone(),
        scope: r.scope.clone(),
    };
    named_rule(&named, path, v);
}

/// Upstream's `validateAdmissionReviewVersions` of the list at `path`.
fn review_versions(versions: &[String], recognized: bool, path: &str, v: &mut Violations) {
    let accepted = REVIEW_VERSIONS.join(", ");
    if versions.is_empty() {
        required(v, path, &format!("must specify one of {accepted}"));
        return;
    }
    let mut seen = HashSet::new();
    for (i, version) in versions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if !seen.insert(version.as_str()) {
            invalid(v, at, version, "duplicate version");
            continue;
        }
        let e = dns1035(version);
        if !e.is_empty() {
            invalid(v, at, version, &e);
        }
    }
    let known = versions
        .iter()
        .any(|x| REVIEW_VERSIONS.contains(&x.as_str()));
    if recognized && !known {
        let detail = format!("must include at least one of {accepted}");
        invalid_as(v, path, &go_list("string", versions), &detail);
    }
}

/// Upstream's rule of the client config at `path`: exactly one of a url (`ValidateWebhookURL`,
/// https only) and a service, which kubestore refuses; and the caBundle (ours).
fn client_config(c: Option<&WebhookClientConfig>, path: &str, v: &mut Violations) {
    let zero = WebhookClientConfig::default();
    let c = c.unwrap_or(&zero);
    match (&c.url, &c.service) {
        (Some(url), None) => webhook_url(url, &format!("{path}.url"), v),
        (None, Some(_)) => v.push((format!("{path}.service"), NO_SERVICES.into())),
        _ => required(v, path, "exactly one of url or service is required"),
    }
    let ca = &c.ca_bundle;
    let pem = ca
        .windows(PEM_CERTIFICATE.len())
        .any(|w| w == PEM_CERTIFICATE);
    if !ca.is_empty() && !pem {
        let rendered = format!("\"<{} bytes>\"", ca.len());
        invalid_as(v, format!("{path}.caBundle"), &rendered, NO_PEM);
    }
}

/// Upstream's `ValidateWebhookURL` of the url at `path`, https required.
fn webhook_url(raw: &str, path: &str, v: &mut Violations) {
    let u = match parse_url(raw) {
        Ok(u) => u,
        Err(e) => {
            required(v, path, &format!("url must be a valid URL: {e}{URL_FORM}"));
            return;
        }
    };
    let mut refuse = |value: &str, detail: &str| invalid(v, path, value, detail);
    if u.scheme != "https" {
        refuse(
            &u.scheme,
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        );
    }
    if u.host.is_empty() {
        refuse("", &format!("host must be specified{URL_FORM}"));
    }
    if let Some(user) = u.user {
        refuse(user, "user information is not permitted in the URL");
    }
    if !u.fragment.is_empty() {
        refuse(&u.fragment, "fragments are not permitted in the URL");
    }
    if !u.query.is_empty() {
        refuse(u.query, "query parameters are not permitted in the URL");
    }
}

/// What `ValidateWebhookURL` reads of a URL Go's `url.Parse` parsed.
#[derive(Default)]
struct Url<'a> {
    /// Lowercase.
    scheme: String,
    host: &'a str,
    user: Option<&'a str>,
    query: &'a str,
    /// Unescaped.
    fragment: String,
}

/// Go's `url.Parse`, as far as it refuses a URL (with Go's words: `parse "<url>": <why>`).
fn parse_url(raw: &str) -> Result<Url<'_>, String> {
    let (u, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_before_fragment(u).map_err(|e| format!("parse {u:?}: {e}"))?;
    if let Some(e) = unescape_error(fragment, false) {
        return Err(format!("parse {raw:?}: {e}"));
    }
    url.fragment = percent_decode_str(fragment)
        .decode_utf8_lossy()
        .into_owned();
    Ok(url)
}

/// Go's `parse` of a URL without its fragment.
fn parse_before_fragment(u: &str) -> Result<Url<'_>, String> {
    if u.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if u == "*" {
        return Ok(Url::default());
    }
    let (scheme, rest) = scheme(u)?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut url = Url {
        scheme: scheme.to_ascii_lowercase(),
        query,
        ..Url::default()
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            return Ok(url); // Opaque: no host.
        }
        if rest.split('/').next().is_some_and(|s| s.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    let mut path = rest;
    if let Some(after) = rest.strip_prefix("//")
        && (!scheme.is_empty() || !rest.starts_with("///"))
    {
        let (authority, tail) = after.split_at(after.find('/').unwrap_or(after.len()));
        path = tail;
        let (user, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        parse_host(host)?;
        if let Some(user) = user {
            let allowed = |c: char| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c);
            if !user.chars().all(allowed) {
                return Err("net/url: invalid userinfo".into());
            }
            if let Some(e) = unescape_error(user, false) {
                return Err(e);
            }
        }
        (url.host, url.user) = (host, user);
    }
    unescape_error(path, false).map_or(Ok(url), Err)
}

/// Go's `getScheme`: the text before the first ':', when it is a scheme.
fn scheme(u: &str) -> Result<(&str, &str), String> {
    for (i, c) in u.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&u[..i], &u[i + 1..])),
            _ => break,
        }
    }
    Ok(("", u))
}

/// Go's `parseHost`: digits only after the last ':' (after the ']' of an IPv6 literal), and
/// only what a host may hold.
fn parse_host(host: &str) -> Result<(), String> {
    let colon_port = if host.starts_with('[') {
        let i = host.rfind(']').ok_or("missing ']' in host")?;
        &host[i + 1..]
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if !colon_port.is_empty() && !colon_port.strip_prefix(':').is_some_and(digits) {
        return Err(format!("invalid port {colon_port:?} after host"));
    }
    unescape_error(host, true).map_or(Ok(()), Err)
}

/// Go's `unescape` error of `s` (a host's when `host`), if any: a `%` not followed by two hex
/// digits, or a character a host may not hold.
fn unescape_error(s: &str, host: bool) -> Option<String> {
    const HOST_CHARS: &[u8] = b"-_.~!$&'()*+,;=:[]<>\"";
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'%' {
            let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
            let end = (i + 3).min(b.len());
            // In a host, an escape stands for a non-ASCII byte, or is "%25" (a zone's '%').
            let ascii = host && hex(i + 2) && b[i + 1] < b'8' && &b[i..end] != b"%25";
            if !hex(i + 1) || !hex(i + 2) || ascii {
                let escape = String::from_utf8_lossy(&b[i..end]);
                return Some(format!("invalid URL escape {escape:?}"));
            }
        } else if host && c.is_ascii() && !c.is_ascii_alphanumeric() && !HOST_CHARS.contains(&c) {
            let c = char::from(c).to_string();
            return Some(format!("invalid character {c:?} in host name"));
        }
    }
    None
}

/// Upstream's `validateMatchConditions` of the conditions at `path` (a webhook's or a
/// policy's): at most 64, each with a qualified name, unique, and an expression that compiles
/// unless the old object had it (`stored`).
pub(super) fn match_conditions(
    list: &[MatchCondition],
    path: &str,
    stored: &HashSet<&str>,
    v: &mut Violations,
) {
    if list.len() > MAX_MATCH_CONDITIONS {
        let n = list.len();
        let description = format!("Too many: {n}: must have at most {MAX_MATCH_CONDITIONS} items");
        v.push((path.into(), description));
    }
    let mut names = HashSet::new();
    for (i, c) in list.iter().enumerate() {
        let at = |f: &str| format!("{path}[{i}].{f}");
        let expr = c.expression.trim();
        if expr.is_empty() {
            required(v, at("expression"), "");
        } else {
            compile(expr, expr, stored.contains(expr), at("expression"), v);
        }
        if c.name.is_empty() {
            required(v, at("name"), "");
            continue;
        }
        if let Some(e) = qualified_name(&c.name) {
            invalid(v, at("name"), &c.name, &e);
        }
        if !names.insert(c.name.as_str()) {
            duplicate(v, at("name"), &c.name);
        }
    }
}
