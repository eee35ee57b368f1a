//! Upstream's hugepages rules of a container's resources (`ValidateResourceRequirements` in
//! `pkg/apis/core/validation`), with its field paths and wording:
//!
//! - a `hugepages-<size>` quantity, in requests as in limits, is a whole number of pages
//!   (`validateResourceQuantityHugePageValue`, `IsHugePageResourceValueDivisible`): the page
//!   size is a positive whole number of bytes and the quantity, rounded up to whole bytes, a
//!   multiple of it. `hugepages-1Mi: 1.1Mi` is Invalid;
//! - hugepages cannot be overcommitted (`IsOvercommitAllowed`): a request needs a limit and
//!   equals it;
//! - a container that asks for hugepages asks for cpu or memory too.
//!
//! Validation ratchets, as upstream's `GetValidationOptionsFromPodSpecAndMeta`
//! (`AllowIndivisibleHugePagesValues` = `usesIndivisibleHugePagesValues(oldPodSpec)`): an update
//! of a pod stored with indivisible quantities (written before the rule, or by another writer)
//! is not refused for repeating them; [`uses_indivisible`] says whether the stored pod has any.
//! The other two rules always apply.
//!
//! Deliberate difference: upstream's messages print the quantity in its canonical form
//! (`1153433600m` for `1.1Mi`); ours print it as the client wrote it, as our other quantity
//! errors do.

use kubestore_proto::core::v1::{PodSpec, ResourceRequirements};

use crate::{quantity::Quantity, violations::Violations};

/// The prefix of hugepages resource names (upstream's `ResourceHugePagesPrefix`).
pub const PREFIX: &str = "hugepages-";

/// Whether `name` is a hugepages resource (upstream's `IsHugePageResourceName`).
pub fn is_hugepages(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Whether any container of `spec` has a hugepages quantity that is not a whole number of
/// pages (upstream's `usesIndivisibleHugePagesValues`; our pods have no init containers and no
/// overhead). Quantities that do not parse count as whole: validation refuses them anyway.
pub fn uses_indivisible(spec: &PodSpec) -> bool {
    spec.containers.iter().any(|c| {
        c.resources.as_ref().is_some_and(|r| {
            [&r.limits, &r.requests].into_iter().any(|m| {
                m.iter().any(|(name, q)| {
                    is_hugepages(name)
                        && Quantity::parse(q)
                            .is_ok_and(|q| q >= Quantity::ZERO && !divisible(name, q))
                })
            })
        })
    })
}

/// The hugepages problems of one container's resources, reported under `path`
/// (`spec.containers[i].resources`); with `allow_indivisible` (the stored pod had such
/// quantities, see the module docs) a quantity need not be a whole number of pages. Quantities
/// that do not parse or are negative are left to the caller, which reports them already.
pub fn validate(
    res: &ResourceRequirements,
    path: &str,
    allow_indivisible: bool,
    v: &mut Violations,
) {
    let mut any_hugepages = false;
    for (kind, map) in [("limits", &res.limits), ("requests", &res.requests)] {
        for (name, q) in map.iter().filter(|(name, _)| is_hugepages(name)) {
            any_hugepages = true;
            let Ok(quantity) = Quantity::parse(q) else {
                continue;
            };
            if !allow_indivisible && quantity >= Quantity::ZERO && !divisible(name, quantity) {
                v.push((
                    format!("{path}.{kind}[{name}]"),
                    format!("Invalid value: {q:?}: {q} is not positive integer multiple of {name}"),
                ));
            }
            if kind != "requests" {
                continue;
            }
            // Not overcommittable: upstream reports these at the whole map's path.
            match res.limits.get(name) {
                None => v.push((
                    format!("{path}.limits"),
                    "Required value: Limit must be set for non overcommitable resources".into(),
                )),
                Some(limit) if Quantity::parse(limit).is_ok_and(|l| l != quantity) => {
                    v.push((
                        format!("{path}.requests"),
                        format!("Invalid value: {q:?}: must be equal to {name} limit of {limit}"),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    let cpu_or_memory = [&res.limits, &res.requests]
        .iter()
        .any(|m| m.contains_key("cpu") || m.contains_key("memory"));
    if any_hugepages && !cpu_or_memory {
        v.push((
            path.to_string(),
            "Forbidden: HugePages require cpu or memory".into(),
        ));
    }
}

/// Upstream's `IsHugePageResourceValueDivisible`: the page size, the name's suffix, is a
/// positive whole number of bytes, and `quantity` rounded up to whole bytes (upstream's
/// `Quantity.Value()`) is a multiple of it. A suffix that is no quantity divides nothing.
fn divisible(name: &str, quantity: Quantity) -> bool {
    let one = Quantity::parse("1").unwrap_or(Quantity::ZERO);
    let Some(page) = name
        .strip_prefix(PREFIX)
        .and_then(|size| Quantity::parse(size).ok())
    else {
        return false;
    };
    if !page.is_positive() || floor_multiple(page, one) != page {
        return false;
    }
    let whole = floor_multiple(quantity, one);
    let bytes = if whole == quantity {
        quantity
    } else {
        whole.saturating_add(one)
    };
    floor_multiple(bytes, page) == bytes
}

/// The largest multiple of `step` (> 0) not above `q` (>= 0): long division by doubling, as
/// [`Quantity`] offers addition and comparison only. At most ~128 doublings.
fn floor_multiple(q: Quantity, step: Quantity) -> Quantity {
    let mut multiples = vec![step];
    while let Some(&last) = multiples.last() {
        let next = last.saturating_add(last);
        if next > q || next == last {
            break;
        }
        multiples.push(next);
    }
    let mut acc = Quantity::ZERO;
    for m in multiples.iter().rev() {
        let next = acc.saturating_add(*m);
        if next <= q {
            acc = next;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn res(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
        let m = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        ResourceRequirements {
            requests: m(requests),
            limits: m(limits),
            ..Default::default()
        }
    }

    fn fields_allowing(r: &ResourceRequirements, allow_indivisible: bool) -> Vec<String> {
        let mut v = Violations::new();
        validate(r, "r", allow_indivisible, &mut v);
        v.iter().map(|(f, _)| f.clone()).collect()
    }

    fn fields(r: &ResourceRequirements) -> Vec<String> {
        fields_allowing(r, false)
    }

    #[test]
    fn quantities_are_whole_pages() {
        for (name, value, ok) in [
            ("hugepages-1Mi", "1Mi", true),
            ("hugepages-1Mi", "2Mi", true),
            ("hugepages-1Mi", "0", true),
            ("hugepages-1Mi", "1.1Mi", false),
            ("hugepages-1Mi", "1048577", false),
            ("hugepages-2Mi", "1Mi", false),
            ("hugepages-2Mi", "4194304", true),
            ("hugepages-1Gi", "2Gi", true),
            // Rounded up to a whole byte first, as upstream's Value().
            ("hugepages-1", "1.5", true),
            ("hugepages-2", "1.5", true),
            ("hugepages-2", "2.5", false),
            // The page size itself must be a positive whole number of bytes.
            ("hugepages-0", "0", false),
            ("hugepages-0.5", "1", false),
            ("hugepages-huge", "1Mi", false),
        ] {
            assert_eq!(divisible(name, q(value)), ok, "{name}: {value}");
        }
    }

    #[test]
    fn upstream_rules_with_their_paths() {
        let ok = res(
            &[("hugepages-2Mi", "4Mi"), ("memory", "1Gi")],
            &[("hugepages-2Mi", "4Mi"), ("memory", "1Gi")],
        );
        assert!(fields(&ok).is_empty());
        let odd = res(
            &[("hugepages-1Mi", "1.1Mi"), ("cpu", "1")],
            &[("hugepages-1Mi", "1.1Mi")],
        );
        assert_eq!(
            fields(&odd),
            ["r.limits[hugepages-1Mi]", "r.requests[hugepages-1Mi]"]
        );
        let unequal = res(
            &[("hugepages-1Mi", "1Mi"), ("cpu", "1")],
            &[("hugepages-1Mi", "2Mi")],
        );
        assert_eq!(fields(&unequal), ["r.requests"]);
        let no_limit = res(&[("hugepages-1Mi", "1Mi"), ("cpu", "1")], &[]);
        assert_eq!(fields(&no_limit), ["r.limits"]);
        let alone = res(&[], &[("hugepages-1Mi", "1Mi")]);
        assert_eq!(fields(&alone), ["r"]);
    }

    #[test]
    fn indivisible_quantities_pass_only_when_allowed_and_the_other_rules_still_apply() {
        let odd = res(
            &[("hugepages-2Mi", "2.1Mi"), ("cpu", "10")],
            &[("hugepages-2Mi", "2.1Mi"), ("cpu", "10")],
        );
        assert_eq!(
            fields(&odd),
            ["r.limits[hugepages-2Mi]", "r.requests[hugepages-2Mi]"]
        );
        assert!(fields_allowing(&odd, true).is_empty());
        let unequal = res(
            &[("hugepages-2Mi", "2.1Mi"), ("cpu", "1")],
            &[("hugepages-2Mi", "4.1Mi")],
        );
        assert_eq!(fields_allowing(&unequal, true), ["r.requests"]);
        let alone = res(&[], &[("hugepages-2Mi", "2.1Mi")]);
        assert_eq!(fields_allowing(&alone, true), ["r"]);
    }

    #[test]
    fn a_spec_uses_indivisible_values_when_any_container_has_one() {
        use kubestore_proto::core::v1::Container;
        let container = |r: ResourceRequirements| Container {
            name: "c".into(),
            image: "i".into(),
            resources: Some(r),
            ..Default::default()
        };
        let whole = res(&[("hugepages-2Mi", "4Mi")], &[("hugepages-2Mi", "4Mi")]);
        let odd_limit = res(&[], &[("hugepages-1Mi", "1.1Mi")]);
        let odd_request = res(&[("hugepages-64Ki", "127Ki")], &[]);
        let not_hugepages = res(&[("memory", "1.1Mi")], &[("memory", "1.1Mi")]);
        let spec = |cs: Vec<Container>| PodSpec {
            containers: cs,
            ..Default::default()
        };
        assert!(!uses_indivisible(&spec(vec![])));
        assert!(!uses_indivisible(&spec(vec![
            container(whole.clone()),
            container(not_hugepages)
        ])));
        assert!(uses_indivisible(&spec(vec![
            container(whole.clone()),
            container(odd_limit)
        ])));
        assert!(uses_indivisible(&spec(vec![container(odd_request)])));
        // Unparsable quantities are validation's to refuse, not a reason to relax it.
        assert!(!uses_indivisible(&spec(vec![container(res(
            &[],
            &[("hugepages-1Mi", "lots")]
        ))])));
    }
}
