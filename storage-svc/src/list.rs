//! List (upstream's `etcd3.store.GetList`): the objects under a prefix, or one key, in key
//! order, filtered by a [`Selector`], in pages that share the first page's revision.
//!
//! ```text
//! resource_version / match       read at                           list RV
//! "" (any match unset)           current (linearizable)            header revision
//! "0"                            current                           header revision
//! N, NOT_OLDER_THAN              current; N > it: Timeout          header revision
//! N, unset, no limit             as NOT_OLDER_THAN (legacy)
//! N, unset, limit (recursive)    exactly N (legacy EXACT)          N
//! N, EXACT                       exactly N                         N
//! continue (rv of token)         exactly the token's revision      the token's revision
//! continue (rv -1)               current                           header revision
//! ```
//!
//! Filling a page with a selector reads on from the last evaluated key, doubling the etcd
//! limit up to 10,000 (upstream's growth loop), so a `limit` returns full pages and the
//! registry never re-pages. A compacted revision is `Expired`; inside a continuation the error
//! carries a fresh token that restarts at the same key at the current revision.

use bytes::Bytes;
use etcd_client::KeyValue;
use kubestore_proto::meta::v1::ResourceVersionMatch;
use kubestore_telemetry::Deadline;
use tracing::{Instrument, field::Empty};

pub use crate::request::{ListPage, ListRequest};
use crate::{
    cache::serve::{self, Served},
    continuation,
    error::StorageError,
    etcd::EtcdCall,
    keys::{first_child, is_internal, prefix_end},
    object::with_resource_version,
    selector::Selector,
    state::parse_resource_version,
    store::{Store, resource_of},
};

/// Largest etcd page the growth loop asks for (upstream's `maxLimit`).
const MAX_ETCD_LIMIT: i64 = 10_000;

/// Upstream's message for a continuation whose revision was compacted.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Where and at which revision a list reads.
struct Plan {
    /// Revision to read at (0 = current).
    rev: i64,
    /// The revision the caller needs at least (checked against the first read).
    min_rev: i64,
    /// First key of the range.
    start: Vec<u8>,
    /// The continuation this list follows, if any (for the Expired error's fresh token).
    continued: Option<continuation::Continue>,
}

impl Store {
    /// Lists one page; see the module docs.
    pub async fn list(
        &self,
        req: ListRequest<'_>,
        deadline: Deadline,
    ) -> Result<ListPage, StorageError> {
        let span = tracing::info_span!(
            "storage",
            otel.name = "List etcd3",
            otel.status_code = Empty,
            key = %req.key,
            resource = %resource_of(req.key),
            items = Empty,
            etcd_reads = Empty,
        );
        let mut reads = 0u32;
        let mut result = self
            .list_inner(&req, deadline, &mut reads)
            .instrument(span.clone())
            .await;
        // A resourceVersion just ahead of etcd: wait (a bounded time) for etcd to get there,
        // then read once more (see `Store::await_revision`).
        if let Err(StorageError::Timeout { message, .. }) = &result
            && message.starts_with("Too large resource version")
            && let Ok(min) = parse_resource_version(req.key, req.resource_version)
            && min > 0
        {
            result = match self.await_revision(req.key, min, deadline).await {
                Ok(()) => {
                    self.list_inner(&req, deadline, &mut reads)
                        .instrument(span.clone())
                        .await
                }
                Err(e) => Err(e),
            };
        }
        span.record("etcd_reads", i64::from(reads));
        match &result {
            Ok(page) => {
                span.record("items", page.items.len() as i64);
                self.etcd.metrics.list_items.inc_by(page.items.len() as u64);
            }
            Err(_) => {
                span.record("otel.status_code", "ERROR");
            }
        }
        result
    }

    async fn list_inner(
        &self,
        req: &ListRequest<'_>,
        deadline: Deadline,
        reads: &mut u32,
    ) -> Result<ListPage, StorageError> {
        let key = req.key;
        let call = EtcdCall { key, deadline };
        if req.limit < 0 {
            return Err(StorageError::invalid(
                key,
                format!("limit must not be negative, got {}", req.limit),
            ));
        }
        let prefix = if req.recursive {
            self.prefix.etcd_prefix(key)?
        } else {
            self.prefix.etcd_key(key)?
        };
        let plan = plan(req, &prefix)?;
        if let Some(cache) = &self.store_cache() {
            let rv = (!req.resource_version.is_empty())
                .then(|| parse_resource_version(key, req.resource_version))
                .transpose()?;
            if let Served::Hit(page) = serve::list(cache, req, &prefix, rv, deadline).await? {
                tracing::debug!("Served from the watch cache");
                self.etcd.metrics.list_evaluated.inc_by(page.evaluated);
                return Ok(page);
            }
        }
        if !req.recursive {
            *reads += 1;
            let (kv, header) = match self.etcd.get_at(&call, prefix.as_bytes(), plan.rev).await {
                Ok(r) => r,
                Err(e) => return Err(self.read_error(&call, e, &plan).await),
            };
            let rev = if plan.rev > 0 { plan.rev } else { header };
            check_min(key, plan.min_rev, rev)?;
            let mut page = ListPage {
                rev,
                ..Default::default()
            };
            if let Some(kv) = kv
                && !is_internal(kv.key())
                && self.evaluate(&req.selector, kv.value())
            {
                page.items.push(stamp(key, &kv)?);
            }
            return Ok(page);
        }

        let end = prefix_end(prefix.as_bytes());
        let mut rev = plan.rev;
        let mut start = plan.start.clone();
        let mut etcd_limit = req.limit;
        let mut page = ListPage::default();
        let mut last_key: Option<Vec<u8>> = None;
        let (has_more, remaining) = loop {
            *reads += 1;
            let chunk = match self
                .etcd
                .range_page(&call, &start, &end, etcd_limit, rev)
                .await
            {
                Ok(c) => c,
                Err(e) => return Err(self.read_error(&call, e, &plan).await),
            };
            if rev == 0 {
                // Every later chunk reads at the first one's revision: one snapshot.
                rev = chunk.revision;
                check_min(key, plan.min_rev, rev)?;
            }
            if chunk.kvs.is_empty() && chunk.more {
                return Err(StorageError::internal(
                    key,
                    "no results were found, but etcd indicated there were more values remaining",
                ));
            }
            let mut limit_reached = false;
            let mut consumed: i64 = 0;
            for kv in &chunk.kvs {
                if req.limit > 0 && page.items.len() as i64 >= req.limit {
                    limit_reached = true;
                    break;
                }
                consumed += 1;
                last_key = Some(kv.key().to_vec());
                if !is_internal(kv.key()) && self.evaluate(&req.selector, kv.value()) {
                    page.items.push(stamp(key, kv)?);
                }
            }
            let has_more = chunk.more || limit_reached;
            let full = req.limit > 0 && page.items.len() as i64 >= req.limit;
            if limit_reached || !has_more || req.limit == 0 || full {
                // etcd counted the keys from this chunk's start: those after the last one
                // consumed are what remains (upstream counts from the list's start, which is
                // off by the items of earlier chunks once the page needed more than one).
                break (has_more, chunk.count - consumed);
            }
            // The page is not full yet: read on after the last evaluated key, with a larger
            // etcd page each time.
            if let Some(k) = &last_key {
                start = after(k);
            }
            if etcd_limit < MAX_ETCD_LIMIT {
                etcd_limit = (etcd_limit * 2).min(MAX_ETCD_LIMIT);
            }
        };
        page.rev = rev;
        if has_more && let Some(k) = last_key {
            let next = after(&k);
            let relative = String::from_utf8_lossy(&next[prefix.len()..]).into_owned();
            page.continue_token = Some(continuation::encode(rev, &relative));
            if req.selector.is_empty() {
                page.remaining_item_count = Some(remaining.max(0));
            }
        }
        Ok(page)
    }

    fn store_cache(&self) -> Option<std::sync::Arc<crate::cache::WatchCache>> {
        self.cache.clone()
    }

    fn evaluate(&self, selector: &Selector, value: &[u8]) -> bool {
        self.etcd.metrics.list_evaluated.inc();
        selector.matches(value)
    }

    /// Errors of a read, made specific: a compacted revision is Expired (with a fresh token
    /// inside a continuation), a future one too large.
    async fn read_error(&self, call: &EtcdCall<'_>, e: StorageError, plan: &Plan) -> StorageError {
        match e {
            StorageError::Expired { key, .. } => match &plan.continued {
                Some(c) => StorageError::Expired {
                    key,
                    message: CONTINUE_EXPIRED.into(),
                    continue_token: Some(continuation::encode(-1, &c.start)),
                },
                None => StorageError::Expired {
                    key,
                    message: "The resourceVersion for the provided list is too old.".into(),
                    continue_token: None,
                },
            },
            StorageError::Timeout { key, message } if message == "Too large resource version" => {
                let current = self
                    .etcd
                    .current_revision(call, &self.health_key())
                    .await
                    .unwrap_or(0);
                StorageError::Timeout {
                    key,
                    message: format!(
                        "Too large resource version: {}, current: {current}",
                        plan.rev
                    ),
                }
            }
            other => other,
        }
    }
}

/// Where and at which revision `req` reads (upstream's `ValidateListOptions` and the API's
/// list-options validation).
fn plan(req: &ListRequest<'_>, prefix: &str) -> Result<Plan, StorageError> {
    let key = req.key;
    let rv = (!req.resource_version.is_empty())
        .then(|| parse_resource_version(key, req.resource_version))
        .transpose()?;
    let Ok(rvm) = ResourceVersionMatch::try_from(req.resource_version_match) else {
        return Err(StorageError::invalid(
            key,
            format!(
                "unknown ResourceVersionMatch value: {}",
                req.resource_version_match
            ),
        ));
    };
    let matching = rvm != ResourceVersionMatch::Unspecified;
    let continuing = req.recursive && !req.continue_token.is_empty();
    if matching && rv.is_none() {
        return Err(StorageError::invalid(
            key,
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if matching && continuing {
        return Err(StorageError::invalid(
            key,
            "resourceVersionMatch is forbidden when continue is provided",
        ));
    }
    if rvm == ResourceVersionMatch::Exact && rv == Some(0) {
        return Err(StorageError::invalid(
            key,
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    let mut plan = Plan {
        rev: 0,
        min_rev: 0,
        start: first_child(prefix),
        continued: None,
    };
    if continuing {
        if rv.is_some_and(|r| r != 0) {
            return Err(StorageError::invalid(
                key,
                "specifying resource version is not allowed when using continue",
            ));
        }
        let c = continuation::decode(req.continue_token)
            .map_err(|e| StorageError::invalid(key, format!("invalid continue token: {e}")))?;
        plan.rev = c.rv.max(0);
        plan.start = format!("{prefix}{}", c.start).into_bytes();
        plan.continued = Some(c);
        return Ok(plan);
    }
    match (rvm, rv) {
        (ResourceVersionMatch::Exact, Some(n)) => plan.rev = n,
        (ResourceVersionMatch::NotOlderThan, Some(n)) => plan.min_rev = n,
        (ResourceVersionMatch::Unspecified, Some(n)) if n > 0 => {
            if req.limit > 0 && req.recursive {
                plan.rev = n;
            } else {
                plan.min_rev = n;
            }
        }
        _ => {}
    }
    Ok(plan)
}

fn check_min(key: &str, min: i64, current: i64) -> Result<(), StorageError> {
    if min > current {
        return Err(StorageError::Timeout {
            key: key.to_string(),
            message: format!("Too large resource version: {min}, current: {current}"),
        });
    }
    Ok(())
}

/// The smallest key after `key`.
fn after(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

/// A stored object as a list returns it: resource_version = its own mod revision.
fn stamp(key: &str, kv: &KeyValue) -> Result<Bytes, StorageError> {
    with_resource_version(kv.value(), kv.mod_revision())
        .map(Bytes::from)
        .map_err(|e| {
            StorageError::internal(
                key,
                format!(
                    "stored object {:?} is corrupt: {e}",
                    String::from_utf8_lossy(kv.key())
                ),
            )
        })
}
