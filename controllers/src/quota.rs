//! The ResourceQuota controller (upstream's
//! `pkg/controller/resourcequota/resource_quota_controller.go`): every `core/v1` ResourceQuota's
//! status says what it limits and what its namespace holds now, `status.hard` a copy of
//! `spec.hard` and `status.used` the namespace's usage of each of those keys. Admission
//! (`registry-svc`'s `admission::quota`) charges creates against that status and refuses what a
//! quota without one limits, so the controller both starts a quota's accounting and, since
//! admission only ever adds, releases what deleted objects held.
//!
//! - Usage is `kubestore_apimachinery::quota`'s, shared with admission: every namespaced
//!   resource discovery lists with the `list` verb, built in or custom, that charges one of the
//!   quota's keys is listed in the quota's namespace (every page) and totalled; keys nothing
//!   charges are "0".
//! - Quotas are followed by an informer: one added, or whose spec changed, or whose status lacks
//!   its keys, is recomputed at once; so are a namespace's quotas when an object they count is
//!   deleted or a pod they count turns terminal (replenishment, `quota_replenish`); every quota
//!   is recomputed every [`QuotaConfig::resync`].
//!   One pass runs at a time, one discovery each, and each resource is listed once per namespace
//!   per pass.
//! - The status is written through the `status` subresource only when it differs semantically
//!   (quantities compared by value), carrying the resourceVersion read: a conflict (a charge made
//!   meanwhile) has the quota read again live on the next pass. A namespace whose content fails
//!   to list keeps its quotas' status as is until a later pass succeeds.
//!
//! Deliberate differences from upstream: only the resources some quota counts are watched for
//! replenishment (upstream watches every quota-able one). Scopes
//! (`spec.scopes`) select pods only, as upstream's scoped quotas match pods only: under a scoped
//! quota no other resource counts anything. `spec.scopeSelector`, and with it the PriorityClass
//! scope, is not applied, nor is CrossNamespacePodAffinity (admission ignores them alike).
//! Upstream's default `--resource-quota-sync-period` is 5 minutes; ours, [`DEFAULT_RESYNC`], is
//! short because it is also how a release dropped by a full replenishment queue happens.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, hash_map::Entry},
    time::Duration,
};

use kubestore_apimachinery::{
    quantity::Quantity,
    quota::{self, Usage},
};
use kubestore_proto::{
    meta::v1::{ListMeta, ListOptions},
    registry::v1::{
        GetRequest, ListRequest, Output, ResourceRef, UpdateRequest,
        resources_client::ResourcesClient,
    },
};
use serde_json::{Map, Value, json};
use tokio::{
    sync::{mpsc, watch},
    time::MissedTickBehavior,
};
use tonic::{Code, Status};

use crate::{
    Ch,
    client::{Kind, MAX_RESPONSE_BYTES, discover},
    informer::{self, Delta, Events, Source},
    namespace::{Objects, request},
    quota_replenish::{QUEUED, Replenisher},
};

/// How often every quota is recomputed by default.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(5);
/// The shortest resync honoured (a zero period would be a busy loop).
pub const MIN_RESYNC: Duration = Duration::from_millis(100);

/// Settings of the ResourceQuota controller.
#[derive(Clone, Debug)]
pub struct QuotaConfig {
    /// How often every quota is recomputed (upstream's `--resource-quota-sync-period`); also how
    /// soon a deleted object's charge is released.
    pub resync: Duration,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            resync: DEFAULT_RESYNC,
        }
    }
}

/// A quota by namespace and name.
type Key = (String, String);

fn resource_quotas() -> ResourceRef {
    ResourceRef {
        group: String::new(),
        version: "v1".into(),
        resource: "resourcequotas".into(),
    }
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn key(quota: &Value) -> Key {
    (
        str_at(quota, "/metadata/namespace").to_string(),
        str_at(quota, "/metadata/name").to_string(),
    )
}

fn map_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a Map<String, Value>> {
    object.pointer(pointer).and_then(Value::as_object)
}

/// `spec.hard`, parsed.
fn hard(quota: &Value) -> Usage {
    map_at(quota, "/spec/hard")
        .map(quota::parse_map)
        .unwrap_or_default()
}

/// `spec.scopes`.
fn scopes(quota: &Value) -> Vec<String> {
    quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn is_pods(group: &str, resource: &str) -> bool {
    group.is_empty() && resource == "pods"
}

/// Whether a resource's objects count toward a quota with `scopes` and `hard`: it charges one
/// of the keys, and the quota is unscoped or the resource is pods.
fn counted(group: &str, resource: &str, scopes: &[String], hard: &Usage) -> bool {
    (scopes.is_empty() || is_pods(group, resource))
        && hard.keys().any(|k| quota::charges(group, resource, k))
}

/// What `objects` of one resource use of `hard`, `scopes` applied (pods in scope only).
fn total_of(
    group: &str,
    resource: &str,
    objects: &[Value],
    scopes: &[String],
    hard: &Usage,
) -> Usage {
    if scopes.is_empty() {
        quota::total(group, resource, objects, hard)
    } else if is_pods(group, resource) {
        let in_scope = objects.iter().filter(|p| quota::pod_in_scopes(p, scopes));
        quota::total(group, resource, in_scope, hard)
    } else {
        Usage::new()
    }
}

/// The usage of each key of `hard`: the per-resource `totals` added, "0" where none has it,
/// keys `hard` lacks left out.
fn merge(hard: &Usage, totals: impl IntoIterator<Item = Usage>) -> Usage {
    let mut used: Usage = hard.keys().map(|k| (k.clone(), Quantity::ZERO)).collect();
    for total in totals {
        for (k, v) in total {
            if let Some(sum) = used.get_mut(&k) {
                *sum = sum.saturating_add(v);
            }
        }
    }
    used
}

/// Whether two resource lists say the same (same keys, equal quantities); an absent list is
/// an empty one.
fn same(a: Option<&Map<String, Value>>, b: Option<&Map<String, Value>>) -> bool {
    let empty = Map::new();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    a.len() == b.len() && quota::parse_map(a) == quota::parse_map(b)
}

/// Whether a stored resource list says `used`.
fn says(stored: Option<&Map<String, Value>>, used: &Usage) -> bool {
    let empty = Map::new();
    let stored = stored.unwrap_or(&empty);
    stored.len() == used.len() && quota::parse_map(stored) == *used
}

/// Whether `quota`'s stored status differs from `hard` = its `spec.hard` and `used` (upstream's
/// `dirty`).
fn differs(quota: &Value, used: &Usage) -> bool {
    !same(map_at(quota, "/spec/hard"), map_at(quota, "/status/hard"))
        || !says(map_at(quota, "/status/used"), used)
}

/// Whether `quota`'s status lags its spec: hard keys not yet in `status.hard` or
/// `status.used` (upstream's `addQuota` prioritises those).
fn incomplete(quota: &Value) -> bool {
    let used = map_at(quota, "/status/used");
    !same(map_at(quota, "/spec/hard"), map_at(quota, "/status/hard"))
        || map_at(quota, "/spec/hard")
            .is_some_and(|h| h.keys().any(|k| !used.is_some_and(|u| u.contains_key(k))))
}

/// Whether a quota seen as `new` (after `old`, None when first seen) is recomputed at once.
fn wanted(old: Option<&Value>, new: &Value) -> bool {
    old.is_none_or(|o| o.get("spec") != new.get("spec")) || incomplete(new)
}

/// `quota` with the status it should have: `spec.hard` as it is written, and `used`.
fn with_status(quota: &Value, used: &Usage) -> Value {
    let mut q = quota.clone();
    let hard = quota
        .pointer("/spec/hard")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(o) = q.as_object_mut() {
        o.insert(
            "status".into(),
            json!({"hard": hard, "used": quota::to_json(used)}),
        );
    }
    q
}

/// The objects of one resource in one namespace, whole, as a pager's source (listed only).
struct InNamespace {
    ch: Ch,
    resource: ResourceRef,
    namespace: String,
}

impl Source for InNamespace {
    type Item = Value;
    fn resource_version(item: &Value) -> String {
        <Objects as Source>::resource_version(item)
    }
    async fn list(&self, options: ListOptions) -> Result<(Vec<Value>, ListMeta), Status> {
        let list = ResourcesClient::new(self.ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .list(request(ListRequest {
                resource: Some(self.resource.clone()),
                namespace: self.namespace.clone(),
                options: Some(options),
                output: Output::Object as i32,
            }))
            .await?
            .into_inner();
        let items = list
            .items
            .iter()
            .map(|i| serde_json::from_str(i).map_err(|e| Status::internal(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok((items, list.metadata.unwrap_or_default()))
    }
    async fn watch(&self, _options: ListOptions) -> Result<Events<Value>, Status> {
        Err(Status::unimplemented(
            "the quota controller lists a namespace's objects, never watches them",
        ))
    }
}

/// Every object of `kind` in `namespace` (every page); none when the resource went meanwhile.
async fn list_in(ch: &Ch, kind: &Kind, namespace: &str) -> Result<Vec<Value>, Status> {
    let source = InNamespace {
        ch: ch.clone(),
        resource: ResourceRef {
            group: kind.group().to_string(),
            version: kind.version().to_string(),
            resource: kind.resource.clone(),
        },
        namespace: namespace.to_string(),
    };
    match informer::list_all(&source).await {
        Ok((items, _)) => Ok(items),
        Err(s) if s.code() == Code::NotFound => Ok(Vec::new()),
        Err(s) => Err(s),
    }
}

/// What `quota`'s namespace uses of its hard keys; `lists` holds the resources of that
/// namespace listed so far in this pass.
async fn used(
    ch: &Ch,
    kinds: &[Kind],
    quota: &Value,
    lists: &mut HashMap<String, Vec<Value>>,
) -> Result<Usage, Status> {
    let namespace = str_at(quota, "/metadata/namespace");
    let hard = hard(quota);
    let scopes = scopes(quota);
    let mut totals = Vec::new();
    for kind in kinds {
        let (group, resource) = (kind.group(), kind.resource.as_str());
        if !counted(group, resource, &scopes, &hard) {
            continue;
        }
        let objects: &[Value] = match lists.entry(kind.qualified()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(list_in(ch, kind, namespace).await?),
        };
        totals.push(total_of(group, resource, objects, &scopes, &hard));
    }
    Ok(merge(&hard, totals))
}

/// Why a quota was not brought up to date.
enum Failed {
    /// Its namespace's content did not list: the namespace's other quotas wait too.
    Namespace(Status),
    /// Reading or writing the quota itself.
    Quota(Status),
}

/// The controller's state between passes.
struct Controller {
    ch: Ch,
    /// Every quota as last read (informer or write).
    quotas: BTreeMap<Key, Value>,
    /// Quotas whose write conflicted: read live on the next pass.
    stale: BTreeSet<Key>,
    /// The watches of the resources quotas count.
    replenisher: Replenisher,
}

impl Controller {
    /// Takes what the informer saw; the quotas to recompute at once go to `pending`.
    fn observe(&mut self, delta: Delta<Value>, pending: &mut BTreeSet<Key>) {
        match delta {
            Delta::Replace(items) => {
                let mut next = BTreeMap::new();
                for q in items {
                    let k = key(&q);
                    if wanted(self.quotas.get(&k), &q) {
                        pending.insert(k.clone());
                    }
                    next.insert(k, q);
                }
                self.quotas = next;
                pending.retain(|k| self.quotas.contains_key(k));
                self.stale.retain(|k| self.quotas.contains_key(k));
            }
            Delta::Upsert(q) => {
                let k = key(&q);
                if wanted(self.quotas.get(&k), &q) {
                    pending.insert(k.clone());
                }
                self.quotas.insert(k, q);
            }
            Delta::Delete(q) => {
                let k = key(&q);
                self.quotas.remove(&k);
                self.stale.remove(&k);
                pending.remove(&k);
            }
        }
    }

    /// Recomputes the quotas `keys`, namespace by namespace.
    async fn pass(&mut self, keys: BTreeSet<Key>) {
        let kinds: Vec<Kind> = match discover(&self.ch).await {
            Ok(kinds) => kinds
                .into_iter()
                .filter(|k| k.namespaced && k.can("list"))
                .collect(),
            Err(e) => {
                tracing::info!(
                    error = %e.message(),
                    "resourcequota controller: discovery failed; retrying next pass"
                );
                return;
            }
        };
        // What the quotas count is watched for deletes from now on, and what discovery no
        // longer lists is not.
        self.replenisher.retain(&kinds);
        for key in &keys {
            if let Some(q) = self.quotas.get(key) {
                let (hard, scopes) = (hard(q), scopes(q));
                for kind in &kinds {
                    if counted(kind.group(), &kind.resource, &scopes, &hard) {
                        self.replenisher.watch(kind);
                    }
                }
            }
        }
        let mut namespace = None;
        let mut lists = HashMap::new();
        let mut skipped = false;
        for key in keys {
            if namespace.as_ref() != Some(&key.0) {
                namespace = Some(key.0.clone());
                lists.clear();
                skipped = false;
            }
            if skipped {
                continue;
            }
            match self.sync(&kinds, &key, &mut lists).await {
                Ok(()) => {}
                Err(Failed::Namespace(e)) => {
                    tracing::info!(
                        namespace = %key.0,
                        error = %e.message(),
                        "resourcequota controller: content did not list; retrying next pass"
                    );
                    skipped = true;
                }
                Err(Failed::Quota(e)) => {
                    tracing::info!(
                        namespace = %key.0,
                        quota = %key.1,
                        error = %e.message(),
                        "resourcequota controller: retrying next pass"
                    );
                }
            }
        }
    }

    /// Brings the status of quota `key` up to date.
    async fn sync(
        &mut self,
        kinds: &[Kind],
        key: &Key,
        lists: &mut HashMap<String, Vec<Value>>,
    ) -> Result<(), Failed> {
        if self.stale.contains(key) {
            match get(&self.ch, key).await.map_err(Failed::Quota)? {
                Some(q) => {
                    self.quotas.insert(key.clone(), q);
                }
                None => {
                    self.quotas.remove(key);
                }
            }
            self.stale.remove(key);
        }
        let Some(quota) = self.quotas.get(key) else {
            return Ok(());
        };
        let used = used(&self.ch, kinds, quota, lists)
            .await
            .map_err(Failed::Namespace)?;
        if !differs(quota, &used) {
            return Ok(());
        }
        let updated = with_status(quota, &used);
        match write(&self.ch, key, &updated).await {
            Ok(written) => {
                tracing::debug!(
                    namespace = %key.0,
                    quota = %key.1,
                    "resourcequota controller: status written"
                );
                self.quotas.insert(key.clone(), written);
                Ok(())
            }
            // Changed meanwhile (a charge, a spec update): read it again next pass.
            Err(e) if e.code() == Code::Aborted => {
                tracing::debug!(
                    namespace = %key.0,
                    quota = %key.1,
                    "resourcequota controller: conflict; reading again next pass"
                );
                self.stale.insert(key.clone());
                Ok(())
            }
            Err(e) if e.code() == Code::NotFound => {
                self.quotas.remove(key);
                Ok(())
            }
            Err(e) => Err(Failed::Quota(e)),
        }
    }
}

/// A live read of quota `key` (None: not found).
async fn get(ch: &Ch, key: &Key) -> Result<Option<Value>, Status> {
    let got = ResourcesClient::new(ch.clone())
        .get(request(GetRequest {
            resource: Some(resource_quotas()),
            namespace: key.0.clone(),
            name: key.1.clone(),
            subresource: String::new(),
            output: Output::Object as i32,
        }))
        .await;
    match got {
        Ok(r) => serde_json::from_str(&r.into_inner().json)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string())),
        Err(s) if s.code() == Code::NotFound => Ok(None),
        Err(s) => Err(s),
    }
}

/// Writes `quota`'s status (its resourceVersion the precondition); the quota as stored.
async fn write(ch: &Ch, key: &Key, quota: &Value) -> Result<Value, Status> {
    let written = ResourcesClient::new(ch.clone())
        .update(request(UpdateRequest {
            resource: Some(resource_quotas()),
            namespace: key.0.clone(),
            name: key.1.clone(),
            subresource: "status".into(),
            json: quota.to_string(),
            options: None,
        }))
        .await?
        .into_inner();
    serde_json::from_str(&written.json).map_err(|e| Status::internal(e.to_string()))
}

/// Runs the controller until `stop` is raised.
pub async fn run(ch: Ch, config: QuotaConfig, mut stop: watch::Receiver<bool>) {
    let (tx, mut rx) = mpsc::channel(256);
    tokio::spawn(informer::run(
        Objects(ch.clone(), resource_quotas()),
        tx,
        stop.clone(),
    ));
    let (released, mut replenish) = mpsc::channel(QUEUED);
    let mut controller = Controller {
        replenisher: Replenisher::new(ch.clone(), released),
        ch,
        quotas: BTreeMap::new(),
        stale: BTreeSet::new(),
    };
    let mut pending: BTreeSet<Key> = BTreeSet::new();
    let mut resync = tokio::time::interval(config.resync.max(MIN_RESYNC));
    resync.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            d = rx.recv() => {
                let Some(d) = d else { return };
                controller.observe(d, &mut pending);
                // Whatever else is waiting joins the same pass.
                while let Ok(d) = rx.try_recv() {
                    controller.observe(d, &mut pending);
                }
            }
            ns = replenish.recv() => {
                let mut namespaces: BTreeSet<String> = ns.into_iter().collect();
                while let Ok(ns) = replenish.try_recv() {
                    namespaces.insert(ns);
                }
                pending.extend(
                    controller
                        .quotas
                        .keys()
                        .filter(|(ns, _)| namespaces.contains(ns))
                        .cloned(),
                );
            }
            _ = resync.tick() => pending.extend(controller.quotas.keys().cloned()),
        }
        if pending.is_empty() {
            continue;
        }
        let keys = std::mem::take(&mut pending);
        tokio::select! {
            _ = stop.changed() => return,
            () = controller.pass(keys) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    //! The controller's decisions (pure logic; no network).
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("a quantity")
    }

    fn usage(pairs: &[(&str, &str)]) -> Usage {
        pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    #[test]
    fn totals_add_up_per_hard_key_and_keys_nothing_uses_are_zero() {
        let hard = usage(&[
            ("pods", "10"),
            ("requests.cpu", "4"),
            ("count/secrets", "5"),
        ]);
        let used = merge(
            &hard,
            [
                usage(&[("pods", "2"), ("requests.cpu", "500m")]),
                usage(&[("pods", "1"), ("requests.cpu", "1500m")]),
                // A key the quota does not limit is left out.
                usage(&[("count/configmaps", "3")]),
            ],
        );
        assert_eq!(
            used,
            usage(&[("pods", "3"), ("requests.cpu", "2"), ("count/secrets", "0")])
        );
        assert_eq!(
            merge(&Usage::new(), [usage(&[("pods", "1")])]),
            Usage::new()
        );
    }

    #[test]
    fn status_differs_only_when_its_quantities_do() {
        let quota = json!({
            "metadata": {"namespace": "a", "name": "q", "resourceVersion": "7"},
            "spec": {"hard": {"pods": "10", "requests.memory": "1Gi"}},
        });
        let used = usage(&[("pods", "2"), ("requests.memory", "0")]);
        // No status yet.
        assert!(differs(&quota, &used));
        assert!(incomplete(&quota));
        let written = with_status(&quota, &used);
        assert_eq!(written["status"]["hard"], quota["spec"]["hard"]);
        assert_eq!(written["metadata"]["resourceVersion"], "7");
        assert!(!differs(&written, &used));
        assert!(!incomplete(&written));
        // The same values in other notations are the same.
        let mut other = written.clone();
        other["status"] = json!({
            "hard": {"pods": "10", "requests.memory": "1073741824"},
            "used": {"pods": "2000m", "requests.memory": "0"},
        });
        assert!(!differs(&other, &used));
        // A changed usage, a changed hard, a missing or extra key differ.
        assert!(differs(
            &written,
            &usage(&[("pods", "3"), ("requests.memory", "0")])
        ));
        let mut changed = written.clone();
        changed["spec"]["hard"]["pods"] = json!("20");
        assert!(differs(&changed, &used));
        assert!(incomplete(&changed));
        let mut missing = written.clone();
        missing["status"]["used"] = json!({"pods": "2"});
        assert!(differs(&missing, &used));
        assert!(incomplete(&missing));
        let mut extra = written.clone();
        extra["status"]["used"]["cpu"] = json!("0");
        assert!(differs(&extra, &used));
    }

    #[test]
    fn a_quota_limiting_nothing_is_settled_without_a_status() {
        let quota = json!({"metadata": {"name": "q"}, "spec": {}});
        assert!(!differs(&quota, &Usage::new()));
        assert!(!incomplete(&quota));
    }

    #[test]
    fn a_new_quota_or_a_changed_spec_is_recomputed_at_once_a_status_write_is_not() {
        let old = json!({
            "metadata": {"namespace": "a", "name": "q"},
            "spec": {"hard": {"pods": "1"}},
            "status": {"hard": {"pods": "1"}, "used": {"pods": "0"}},
        });
        assert!(wanted(None, &old));
        let mut charged = old.clone();
        charged["status"]["used"]["pods"] = json!("1");
        assert!(!wanted(Some(&old), &charged));
        let mut raised = old.clone();
        raised["spec"]["hard"]["pods"] = json!("2");
        assert!(wanted(Some(&old), &raised));
        let mut scoped = old.clone();
        scoped["spec"]["scopes"] = json!(["BestEffort"]);
        assert!(wanted(Some(&old), &scoped));
        assert_eq!(scopes(&scoped), ["BestEffort"]);
        assert_eq!(key(&old), ("a".to_string(), "q".to_string()));
    }

    #[test]
    fn a_scoped_quota_counts_pods_only() {
        let hard = usage(&[("pods", "10")]);
        let scoped = vec!["BestEffort".to_string()];
        assert!(counted("", "pods", &[], &hard));
        assert!(counted("", "pods", &scoped, &hard));
        // Not charged by the resource at all.
        assert!(!counted("", "configmaps", &[], &hard));
        let counts = usage(&[("count/configmaps", "10")]);
        assert!(counted("", "configmaps", &[], &counts));
        assert!(!counted("", "configmaps", &scoped, &counts));
        let objects = [json!({"metadata": {"name": "c"}})];
        assert_eq!(
            total_of("", "configmaps", &objects, &scoped, &counts),
            Usage::new()
        );
    }
}
