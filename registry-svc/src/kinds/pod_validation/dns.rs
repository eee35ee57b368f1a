//! A pod's name resolution: upstream's `validatePodDNSConfig` (a `dnsPolicy` of `None` needs a
//! `dnsConfig` with a nameserver; at most 3 nameservers, 32 search domains of at most 2048
//! characters together, options with names) and `ValidateHostAliases` (`/etc/hosts` entries),
//! with upstream's paths and words.
//!
//! An IP address is checked as Rust's parser reads it; upstream 1.33 (`IsValidIPForLegacyField`)
//! also accepts the legacy forms with leading zeros (`010.0.0.1`) in fields that always took
//! them. kubestore refuses those: no new pod should carry an address that two programs read
//! differently.

use std::net::IpAddr;

use kubestore_proto::core::v1::{HostAlias, PodDnsConfig};

use super::go_strings;
use crate::{
    validation::{dns1123_label, dns1123_subdomain},
    violations::Violations,
};

/// Upstream's `MaxDNSNameservers`.
const MAX_NAMESERVERS: usize = 3;
/// Upstream's `MaxDNSSearchPaths`.
const MAX_SEARCH_PATHS: usize = 32;
/// Upstream's `MaxDNSSearchListChars`, spaces between the domains included.
const MAX_SEARCH_CHARS: usize = 2048;

/// Upstream's `IsDNS1123SubdomainWithUnderscore`: a DNS-1123 subdomain whose labels may each
/// start with one `_` (`_sip._tcp.example.com`).
fn subdomain_with_underscore(s: &str) -> Option<String> {
    if s.is_empty() || s.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    let ok = s.split('.').all(|label| {
        let label = label.strip_prefix('_').unwrap_or(label);
        dns1123_label(label).is_none()
    });
    (!ok).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character".to_string()
    })
}

/// An IP address, in upstream's words when it is not one.
fn ip(value: &str, path: String, v: &mut Violations) {
    if value.parse::<IpAddr>().is_err() {
        v.push((
            path,
            format!(
                "Invalid value: {value:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            ),
        ));
    }
}

/// `validatePodDNSConfig`.
pub(super) fn config(config: Option<&PodDnsConfig>, policy: &str, v: &mut Violations) {
    let path = "spec.dnsConfig";
    if policy == "None" {
        match config {
            None => {
                v.push((
                    path.into(),
                    "Required value: must provide `dnsConfig` when `dnsPolicy` is None".into(),
                ));
                return;
            }
            Some(c) if c.nameservers.is_empty() => {
                v.push((
                    format!("{path}.nameservers"),
                    "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"
                        .into(),
                ));
                return;
            }
            Some(_) => {}
        }
    }
    let Some(c) = config else {
        return;
    };
    if c.nameservers.len() > MAX_NAMESERVERS {
        v.push((
            format!("{path}.nameservers"),
            format!(
                "Invalid value: {}: must not have more than {MAX_NAMESERVERS} nameservers",
                go_strings(&c.nameservers)
            ),
        ));
    }
    for (i, ns) in c.nameservers.iter().enumerate() {
        ip(ns, format!("{path}.nameservers[{i}]"), v);
    }
    if c.searches.len() > MAX_SEARCH_PATHS {
        v.push((
            format!("{path}.searches"),
            format!(
                "Invalid value: {}: must not have more than {MAX_SEARCH_PATHS} search paths",
                go_strings(&c.searches)
            ),
        ));
    }
    if c.searches.join(" ").len() > MAX_SEARCH_CHARS {
        v.push((
            format!("{path}.searches"),
            format!(
                "Invalid value: {}: must not have more than {MAX_SEARCH_CHARS} characters (including spaces) in the search list",
                go_strings(&c.searches)
            ),
        ));
    }
    for (i, search) in c.searches.iter().enumerate() {
        // RelaxedDNSSearchValidation (beta, on in 1.33): "." alone is fine, a trailing dot (a
        // fully qualified domain) too, and labels may start with an underscore (SRV names).
        if search == "." {
            continue;
        }
        let domain = search.strip_suffix('.').unwrap_or(search);
        if let Some(e) = subdomain_with_underscore(domain) {
            v.push((
                format!("{path}.searches[{i}]"),
                format!("Invalid value: {domain:?}: {e}"),
            ));
        }
    }
    for (i, option) in c.options.iter().enumerate() {
        if option.name.is_empty() {
            v.push((
                format!("{path}.options[{i}]"),
                "Required value: must not be empty".into(),
            ));
        }
    }
}

/// `ValidateHostAliases`.
pub(super) fn host_aliases(aliases: &[HostAlias], v: &mut Violations) {
    for (i, alias) in aliases.iter().enumerate() {
        ip(&alias.ip, format!("spec.hostAliases[{i}].ip"), v);
        for (j, name) in alias.hostnames.iter().enumerate() {
            if let Some(e) = dns1123_subdomain(name) {
                v.push((
                    format!("spec.hostAliases[{i}].hostnames[{j}]"),
                    format!("Invalid value: {name:?}: {e}"),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::PodDnsConfigOption;

    fn check(config_: Option<&PodDnsConfig>, policy: &str) -> Vec<(String, String)> {
        let mut v = Violations::new();
        config(config_, policy, &mut v);
        v.iter().cloned().collect()
    }

    #[test]
    fn none_needs_a_config_with_a_nameserver() {
        assert_eq!(
            check(None, "None"),
            [(
                "spec.dnsConfig".to_string(),
                "Required value: must provide `dnsConfig` when `dnsPolicy` is None".to_string()
            )]
        );
        assert_eq!(
            check(Some(&PodDnsConfig::default()), "None"),
            [(
                "spec.dnsConfig.nameservers".to_string(),
                "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"
                    .to_string()
            )]
        );
        let ok = PodDnsConfig {
            nameservers: vec!["1.2.3.4".into()],
            searches: vec![
                "ns1.svc.cluster-domain.example".into(),
                "my.dns.search.suffix.".into(),
            ],
            options: vec![PodDnsConfigOption {
                name: "ndots".into(),
                value: Some("2".into()),
            }],
        };
        assert!(check(Some(&ok), "None").is_empty());
        assert!(check(None, "ClusterFirst").is_empty());
    }

    #[test]
    fn limits_addresses_domains_and_options() {
        let bad = PodDnsConfig {
            nameservers: vec![
                "1.1.1.1".into(),
                "2.2.2.2".into(),
                "::1".into(),
                "bad".into(),
            ],
            searches: vec!["Upper.example".into()],
            options: vec![PodDnsConfigOption::default()],
        };
        let got = check(Some(&bad), "ClusterFirst");
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.dnsConfig.nameservers",
                "spec.dnsConfig.nameservers[3]",
                "spec.dnsConfig.searches[0]",
                "spec.dnsConfig.options[0]",
            ]
        );
        assert_eq!(
            got[0].1,
            "Invalid value: []string{\"1.1.1.1\", \"2.2.2.2\", \"::1\", \"bad\"}: must not have more than 3 nameservers"
        );
        assert_eq!(
            got[1].1,
            "Invalid value: \"bad\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        );
        assert_eq!(got[3].1, "Required value: must not be empty");
        let many = PodDnsConfig {
            searches: (0..33).map(|i| format!("d{i}.example")).collect(),
            ..Default::default()
        };
        let got = check(Some(&many), "ClusterFirst");
        // The list is long: the description is cut at a violation's bound.
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "spec.dnsConfig.searches");
        assert!(
            got[0]
                .1
                .starts_with("Invalid value: []string{\"d0.example\""),
            "{got:?}"
        );
    }

    /// RelaxedDNSSearchValidation: "." and underscored SRV labels are searches.
    #[test]
    fn searches_may_be_a_dot_or_start_labels_with_underscores() {
        let relaxed = PodDnsConfig {
            searches: vec![
                ".".into(),
                "_sip._tcp.example.com".into(),
                "example.com.".into(),
            ],
            ..Default::default()
        };
        assert!(check(Some(&relaxed), "ClusterFirst").is_empty());
        let bad = PodDnsConfig {
            searches: vec!["a__b.example".into()],
            ..Default::default()
        };
        assert_eq!(
            check(Some(&bad), "ClusterFirst"),
            [(
                "spec.dnsConfig.searches[0]".to_string(),
                "Invalid value: \"a__b.example\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character".to_string()
            )]
        );
    }

    #[test]
    fn host_aliases_are_addresses_and_names() {
        let mut v = Violations::new();
        host_aliases(
            &[
                HostAlias {
                    ip: "127.0.0.1".into(),
                    hostnames: vec!["foo.local".into(), "bar.local".into()],
                },
                HostAlias {
                    ip: "999.0.0.1".into(),
                    hostnames: vec!["Bad_Name".into()],
                },
            ],
            &mut v,
        );
        let got: Vec<(String, String)> = v.iter().cloned().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "spec.hostAliases[1].ip");
        assert_eq!(got[1].0, "spec.hostAliases[1].hostnames[0]");
    }
}
