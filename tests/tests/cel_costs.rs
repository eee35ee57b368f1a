//! The cost limits of CEL rules (`x-kubernetes-validations`), end to end:
//! - a definition whose rule's estimated cost passes upstream's per-rule limit is refused when
//!   it is written, with upstream's message at the rule's path (the estimate reads the parsed
//!   rule: a space before a macro's parenthesis does not hide it), and accepted once the
//!   schema bounds its list;
//! - a rule whose cost on the values written passes the per-call limit is not run, intermediate
//!   results counted (a `map()` of concatenations of a long string), and registry-svc does not
//!   grow by what it would have allocated (its peak resident set, reset before the write, grows
//!   by far less than the 23 MB the evaluation would take);
//! - while concurrent writers make registry-svc evaluate rules of the largest cost allowed (each
//!   write answered with all ten rules' violations, which only a full evaluation finds, and
//!   writes answered throughout the measurement), an unrelated List is still answered within a
//!   second (p99, measured during the attack).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    core::v1::ListConfigMapsRequest,
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::register_established,
    raw::{peak_rss_mib, reset_peak_rss, rss_mib},
    reason,
    services::channel,
};
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

const NS: &str = "default";

/// A definition `<plural>.example.com` of kind `kind` whose `spec` has `spec_schema`.
fn definition(plural: &str, kind: &str, spec_schema: Value) -> CustomResourceDefinition {
    kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}
            }]
        }
    }))
}

/// Creates an object of `plural` (a dry run, when asked) within `timeout`.
async fn create(
    c: &mut CustomObjectsClient<Channel>,
    plural: &str,
    kind: &str,
    spec: Value,
    dry_run: bool,
    timeout: Duration,
) -> Result<(), Status> {
    let object = json!({"apiVersion": "example.com/v1", "kind": kind,
        "metadata": {"name": "o"}, "spec": spec});
    let mut req = tonic::Request::new(CreateCustomObjectRequest {
        group: "example.com".into(),
        version: "v1".into(),
        plural: plural.into(),
        namespace: NS.into(),
        object: Some(serde_json::from_value(object).expect("a JSON object")),
        dry_run,
    });
    req.set_timeout(timeout);
    c.create(req).await.map(drop)
}

fn ints(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!(i)).collect())
}

fn assert_invalid(r: Result<(), Status>, want: &str) {
    let e = r.expect_err(want);
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid"),
        "{e:?}"
    );
    assert!(e.message().contains(want), "want {want:?} in {e:?}");
}

/// One test at a time: rules are evaluated off the async workers through one process-wide
/// gate, so another test's costly rules (the bystander test floods it on purpose) would hold
/// this one's small write past its deadline, and not because of the rule under test.
async fn alone() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE.lock().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_definition_whose_rule_costs_too_much_is_refused_when_written() {
    let _alone = alone().await;
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let triples = |max_items: Option<u64>| {
        let mut items = json!({"type": "array", "items": {"type": "integer"},
            "x-kubernetes-validations": [
                {"rule": "self.all (x, self.all (y, self.all (z, x + y + z >= 0)))"}]});
        if let Some(m) = max_items {
            items["maxItems"] = json!(m);
        }
        definition(
            "triples",
            "Triple",
            json!({"type": "object", "properties": {"items": items}}),
        )
    };
    let e = defs
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(triples(None)),
            dry_run: false,
        })
        .await
        .expect_err("an unbounded list iterated three times over");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{e:?}"
    );
    // With maxItems the estimate is within the limit; the cost on the values written is then
    // bounded by the per-call limit.
    register_established(&mut defs, triples(Some(50))).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let timeout = Duration::from_secs(10);
    let small = json!({"items": ints(20)});
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match create(
            &mut objects,
            "triples",
            "Triple",
            small.clone(),
            true,
            timeout,
        )
        .await
        {
            Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break r.expect("twenty items: 8,000 iterations"),
        }
    }
    assert_invalid(
        create(
            &mut objects,
            "triples",
            "Triple",
            json!({"items": ints(50)}),
            true,
            timeout,
        )
        .await,
        "spec.items: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all (x, self.all (y, self.all (z, x + y + z >= 0)))",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_too_costly_for_the_values_written_is_not_run() {
    let _alone = alone().await;
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    // Within the write-time limit: 990 x (16 + 9,600) = 9.5 million.
    let rule = "self.l.map(x, self.s + self.s).size() > 0";
    register_established(
        &mut defs,
        definition(
            "concats",
            "Concat",
            json!({"type": "object",
                "x-kubernetes-validations": [{"rule": rule}],
                "properties": {
                    "l": {"type": "array", "maxItems": 990, "items": {"type": "integer"}},
                    "s": {"type": "string", "maxLength": 12000}}}),
        ),
    )
    .await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let timeout = Duration::from_secs(10);
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let small = json!({"l": ints(3), "s": "abc"});
        match create(&mut objects, "concats", "Concat", small, true, timeout).await {
            Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break r.expect("small values"),
        }
    }
    // 990 concatenations of 24,000 bytes: 2.4 million, over the per-call limit. Run, they
    // would allocate 990 x 24,000 bytes (23 MB): the peak resident set, reset just before the
    // write, must stay well under that.
    reset_peak_rss();
    let before = rss_mib();
    let large = json!({"l": ints(990), "s": "x".repeat(12000)});
    assert_invalid(
        create(&mut objects, "concats", "Concat", large, true, timeout).await,
        &format!(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
        ),
    );
    let grown = peak_rss_mib().saturating_sub(before);
    assert!(
        grown < 8,
        "the peak grew by {grown} MiB: the rule ran (its values allocate 23 MB)"
    );
}

/// The rule each of [`bystanders_are_served_while_costly_rules_are_evaluated`]'s ten is: it
/// can only be false once every pair of the list has been compared, so a violation of it
/// proves the whole evaluation ran.
const PAIRS_RULE: &str = "!self.all (x, self.all (y, x <= y || x > y))";

#[tokio::test(flavor = "multi_thread")]
async fn bystanders_are_served_while_costly_rules_are_evaluated() {
    let _alone = alone().await;
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    // Ten rules of about 0.9 million each on 300 items: the most one write may spend (the
    // request budget is 10 million), written so that no text search sees their macros.
    let rules: Vec<Value> = (0..10).map(|_| json!({"rule": PAIRS_RULE})).collect();
    register_established(
        &mut defs,
        definition(
            "pairs",
            "Pair",
            json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 300,
                "items": {"type": "integer"}, "x-kubernetes-validations": rules}}}),
        ),
    )
    .await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let until = Instant::now() + Duration::from_secs(2);
    let evaluated = |r: Result<(), Status>| -> Result<(), String> {
        let e = r.err().ok_or("the write was accepted")?;
        let want = format!("Invalid value: \"array\": failed rule: {PAIRS_RULE}");
        let failed = e
            .get_details_bad_request()
            .map(|b| {
                b.field_violations
                    .iter()
                    .filter(|v| v.field == "spec.l" && v.description == want)
                    .count()
            })
            .unwrap_or_default();
        if e.code() == Code::InvalidArgument && failed == 10 {
            Ok(())
        } else {
            Err(format!("{failed} of the ten rules evaluated: {e:?}"))
        }
    };
    loop {
        let small = json!({"l": ints(3)});
        match create(
            &mut objects,
            "pairs",
            "Pair",
            small,
            true,
            Duration::from_secs(10),
        )
        .await
        {
            Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break evaluated(r).expect("three items: every rule evaluated"),
        }
    }
    // The attack: four writers, each sending one costly dry run after another. Each write
    // must be answered with the ten rules' violations: evaluated, not refused or interrupted
    // (its deadline leaves room for the queue of the others).
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut attackers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (stop, answered) = (stop.clone(), answered.clone());
        let mut c = CustomObjectsClient::new(channel(&url).await);
        attackers.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let spec = json!({"l": ints(300)});
                let r = create(&mut c, "pairs", "Pair", spec, true, Duration::from_secs(60)).await;
                evaluated(r)?;
                answered.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        });
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A bystander lists ConfigMaps, measured during the attack: for 8 s, and until three
    // costly writes were answered since it began (one permit evaluates one write at a time,
    // seconds each in a debug build), 60 s at most.
    let mut cms = cluster.config_maps().await;
    let mut latencies = Vec::new();
    let answered_before = answered.load(Ordering::Relaxed);
    let start = Instant::now();
    let attacked = loop {
        if let Some(r) = attackers.try_join_next() {
            // An attacker stops only on a write that was not evaluated.
            r.expect("an attacker")
                .expect("every costly write evaluated all ten rules");
        }
        let attacked = answered.load(Ordering::Relaxed) - answered_before;
        if start.elapsed() >= Duration::from_secs(8) && attacked >= 3 {
            break attacked;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "only {attacked} costly writes were answered in 60 s"
        );
        let sent = Instant::now();
        let mut req = tonic::Request::new(ListConfigMapsRequest {
            namespace: NS.into(),
            options: None,
        });
        req.set_timeout(Duration::from_secs(30));
        cms.list(req).await.expect("a bystander's List");
        latencies.push(sent.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    stop.store(true, Ordering::Relaxed);
    // Every write of the attack, those in flight included, was evaluated.
    while let Some(r) = attackers.join_next().await {
        r.expect("an attacker")
            .expect("every costly write evaluated all ten rules");
    }
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    assert!(
        p99 < Duration::from_secs(1),
        "p99 {p99:?} of {} Lists during the attack ({attacked} costly writes answered)",
        latencies.len()
    );
}
