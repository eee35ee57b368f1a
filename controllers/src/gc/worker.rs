//! What the collector's workers do with a queued object (upstream's `attemptToDeleteItem`,
//! `processDeletingDependentsItem` and `attemptToOrphanWorker`). The graph only says what to
//! look at; every decision is taken on live reads through registry-svc, and every write
//! carries the UID (and, for deletes, the resourceVersion) it was decided on, so a stale graph
//! can never delete or change an object that is not the one it was about.

use kubestore_proto::meta::v1::{
    DeleteOptions, ObjectMeta, OwnerReference, Preconditions, PropagationPolicy,
};
use tonic::{Code, Status};
use tracing::Instrument;

use super::{
    Collector,
    absent::OwnerKey,
    graph::{FOREGROUND, ORPHAN},
};
use crate::client::{KindClient, Live};

/// Tries of a write that meets Conflicts (upstream's `updateMaxRetries`).
const MAX_TRIES: usize = 4;

/// How an owner reference stands, from live reads.
enum Standing {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// The owner is gone, or another object (another UID) has its name.
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

fn policy_of(meta: &ObjectMeta) -> PropagationPolicy {
    if meta.finalizers.iter().any(|f| f == ORPHAN) {
        PropagationPolicy::Orphan
    } else if meta.finalizers.iter().any(|f| f == FOREGROUND) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    }
}

impl Collector {
    /// Checks the object `uid`: deletes it when all its owners are gone (or waiting for their
    /// dependents), removes references to owners that are gone when others remain, and
    /// finishes a foreground deletion once no blocking dependent remains.
    pub(crate) async fn attempt_to_delete(&self, uid: &str) -> Result<(), Status> {
        let Some(node) = self.graph().node(uid).cloned() else {
            return Ok(());
        };
        let span = tracing::info_span!(
            "garbagecollector.attempt_to_delete",
            kind = %node.kind.kind,
            namespace = %node.meta.namespace,
            name = %node.meta.name,
            uid = %uid,
        );
        async {
            let client = self.client(node.kind.clone());
            let Some(live) = client.get(&node.meta.namespace, &node.meta.name).await? else {
                return Ok(());
            };
            if live.meta.uid != uid {
                return Ok(());
            }
            let latest = &live.meta;
            if latest.deletion_timestamp.is_some() {
                if latest.finalizers.iter().any(|f| f == FOREGROUND) {
                    return self.finish_foreground(&client, &live).await;
                }
                // Being deleted already: its delete event will come.
                return Ok(());
            }
            if latest.owner_references.is_empty() {
                return Ok(());
            }
            let (mut solid, mut gone, mut waiting) = (0, Vec::new(), Vec::new());
            for r in &latest.owner_references {
                match self.standing(&node.kind, latest, r).await? {
                    None => return Ok(()),
                    Some(Standing::Solid) => solid += 1,
                    Some(Standing::Dangling) => gone.push(r.uid.clone()),
                    Some(Standing::Waiting) => waiting.push(r.uid.clone()),
                }
            }
            if solid > 0 {
                if gone.is_empty() && waiting.is_empty() {
                    return Ok(());
                }
                // Another owner holds it: only the references to owners that are gone (or
                // waiting, which would otherwise wait for it forever) go.
                let drop: Vec<String> = gone.into_iter().chain(waiting).collect();
                let mut meta = latest.clone();
                meta.owner_references.retain(|r| !drop.contains(&r.uid));
                client.update_meta(&live, &meta).await?;
                self.metrics.orphaned.inc_by(drop.len() as u64);
                return Ok(());
            }
            if !waiting.is_empty() && self.graph().has_dependents(uid) {
                // Its owner waits for it, and it has dependents of its own: they go first.
                let cycle = self
                    .graph()
                    .dependents(uid)
                    .iter()
                    .any(|d| d.deleting_dependents());
                if !cycle {
                    return self
                        .delete(&client, &live, PropagationPolicy::Foreground)
                        .await;
                }
                // One of its dependents waits for its own dependents too: maybe a cycle
                // (A owns B owns A, both blocking), where each would wait for the other for
                // ever. Upstream's attemptToDeleteItem breaks it: the item's references stop
                // blocking (so its owners can finish), then it is deleted in the foreground.
                // (A false positive only makes its owners stop waiting for it.)
                let Some(unblocked) = self.unblock_owner_references(&client, &live).await? else {
                    return Ok(());
                };
                return self
                    .delete(&client, &unblocked, PropagationPolicy::Foreground)
                    .await;
            }
            self.delete(&client, &live, policy_of(latest)).await
        }
        .instrument(span)
        .await
    }

    /// Where owner reference `r` of `item` stands; None: never collectable (a cluster-scoped
    /// object naming a namespaced owner kind, as upstream).
    async fn standing(
        &self,
        kind: &crate::client::Kind,
        item: &ObjectMeta,
        r: &OwnerReference,
    ) -> Result<Option<Standing>, Status> {
        // Upstream's isDangling: the cache is asked for the owner as cluster-scoped, then as
        // looked for in the item's own namespace; never by UID alone, so what a reference
        // from another namespace found says nothing about this one's.
        if self.is_absent(&OwnerKey::new(r, ""))
            || self.is_absent(&OwnerKey::new(r, &item.namespace))
        {
            return Ok(Some(Standing::Dangling));
        }
        let Some(owner_kind) = self.kind_of(&r.api_version, &r.kind) else {
            // Not served (yet): retried, never taken for absent.
            return Err(Status::failed_precondition(format!(
                "owner kind {}/{} is not served",
                r.api_version, r.kind
            )));
        };
        if !kind.namespaced && owner_kind.namespaced {
            tracing::warn!(owner = %r.name, "a cluster-scoped object names a namespaced owner; it is never collected");
            return Ok(None);
        }
        // A namespaced owner is looked for in the item's namespace only (an owner of that UID
        // elsewhere is absent for this item), and remembered as absent there only.
        let absent = OwnerKey::new(
            r,
            if owner_kind.namespaced {
                &item.namespace
            } else {
                ""
            },
        );
        let owners = self.client(owner_kind);
        Ok(Some(match owners.get(&item.namespace, &r.name).await? {
            Some(o) if o.meta.uid == r.uid => {
                if o.meta.deletion_timestamp.is_some()
                    && o.meta.finalizers.iter().any(|f| f == FOREGROUND)
                {
                    Standing::Waiting
                } else {
                    Standing::Solid
                }
            }
            _ => {
                self.mark_absent(absent);
                Standing::Dangling
            }
        }))
    }

    /// Deletes `live` with `policy`, on the UID and resourceVersion it was read at. When only
    /// the resourceVersion moved and the owners are the same, it is deleted on its UID alone
    /// (upstream's conflict handling).
    async fn delete(
        &self,
        client: &KindClient,
        live: &Live,
        policy: PropagationPolicy,
    ) -> Result<(), Status> {
        let meta = &live.meta;
        let options = |rv: Option<String>| DeleteOptions {
            preconditions: Some(Preconditions {
                uid: Some(meta.uid.clone()),
                resource_version: rv,
            }),
            propagation_policy: policy as i32,
            ..Default::default()
        };
        let result = match client
            .delete(
                &meta.namespace,
                &meta.name,
                options(Some(meta.resource_version.clone())),
            )
            .await
        {
            Err(s) if s.code() == Code::Aborted => {
                match client.get(&meta.namespace, &meta.name).await? {
                    Some(now)
                        if now.meta.uid == meta.uid
                            && now.meta.owner_references == meta.owner_references =>
                    {
                        client
                            .delete(&meta.namespace, &meta.name, options(None))
                            .await
                    }
                    Some(_) => Err(s),
                    None => Ok(false),
                }
            }
            other => other,
        };
        if result? {
            self.metrics.deleted.inc();
            tracing::info!(kind = %client.kind.kind, namespace = %meta.namespace, name = %meta.name, ?policy, "garbage collector deleted a dependent");
            if let Some(owner) = meta.owner_references.first() {
                self.event_once(
                    owner,
                    &meta.namespace,
                    "DeletingDependents",
                    format!(
                        "deleting the dependents of {} {}, first {} {} ({policy:?})",
                        owner.kind, owner.name, client.kind.kind, meta.name
                    ),
                );
            }
        }
        Ok(())
    }

    /// An owner deleted in the foreground: once no dependent blocks it, its
    /// `foregroundDeletion` finalizer goes (and registry-svc deletes it); until then, its
    /// blocking dependents are checked.
    async fn finish_foreground(&self, client: &KindClient, live: &Live) -> Result<(), Status> {
        let blocking = self.graph().blocking_dependents(&live.meta.uid);
        if blocking.is_empty() {
            return self.remove_finalizer(client, &live.meta, FOREGROUND).await;
        }
        for d in blocking {
            if !d.deleting_dependents() {
                self.delete_queue.add(d.meta.uid.clone());
            }
        }
        Ok(())
    }

    /// Sets `blockOwnerDeletion: false` on every reference of `live` that blocks (upstream's
    /// `unblockOwnerReferences` patch), on the resourceVersion read, a Conflict read again;
    /// the object as it is afterwards, None once it is gone (or another object has its name).
    async fn unblock_owner_references(
        &self,
        client: &KindClient,
        live: &Live,
    ) -> Result<Option<Live>, Status> {
        let mut current = live.clone();
        for _ in 0..MAX_TRIES {
            if current.meta.uid != live.meta.uid {
                return Ok(None);
            }
            let blocking = |r: &OwnerReference| r.block_owner_deletion == Some(true);
            if !current.meta.owner_references.iter().any(blocking) {
                return Ok(Some(current));
            }
            let mut next = current.meta.clone();
            for r in next.owner_references.iter_mut().filter(|r| blocking(r)) {
                r.block_owner_deletion = Some(false);
            }
            match client.update_meta(&current, &next).await {
                // Read again: after a success for the resourceVersion the delete is decided
                // on, after a Conflict for fresh data.
                Ok(()) => {}
                Err(s) if s.code() == Code::Aborted => {}
                Err(s) if s.code() == Code::NotFound => return Ok(None),
                Err(s) => return Err(s),
            }
            match client.get(&live.meta.namespace, &live.meta.name).await? {
                Some(now) => current = now,
                None => return Ok(None),
            }
        }
        Err(Status::aborted(format!(
            "updateMaxRetries({MAX_TRIES}) has reached unblocking the owner references of {}",
            live.meta.name
        )))
    }

    /// Removes `finalizer` from the object `meta` names (read again on every try, so a
    /// Conflict is retried on fresh data).
    async fn remove_finalizer(
        &self,
        client: &KindClient,
        meta: &ObjectMeta,
        finalizer: &str,
    ) -> Result<(), Status> {
        for _ in 0..MAX_TRIES {
            let Some(live) = client.get(&meta.namespace, &meta.name).await? else {
                return Ok(());
            };
            if live.meta.uid != meta.uid || !live.meta.finalizers.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let mut next = live.meta.clone();
            next.finalizers.retain(|f| f != finalizer);
            match client.update_meta(&live, &next).await {
                Ok(()) => {
                    self.metrics.finalizers_removed.inc();
                    return Ok(());
                }
                Err(s) if s.code() == Code::Aborted => continue,
                Err(s) if s.code() == Code::NotFound => return Ok(()),
                Err(s) => return Err(s),
            }
        }
        Err(Status::aborted(format!(
            "updateMaxRetries({MAX_TRIES}) has reached. The garbage collector will retry later for owner {}",
            meta.name
        )))
    }

    /// Removes the reference to `owner_uid` from the object `meta` names.
    async fn remove_reference(
        &self,
        client: &KindClient,
        meta: &ObjectMeta,
        owner_uid: &str,
    ) -> Result<(), Status> {
        for _ in 0..MAX_TRIES {
            let Some(live) = client.get(&meta.namespace, &meta.name).await? else {
                return Ok(());
            };
            if live.meta.uid != meta.uid
                || !live
                    .meta
                    .owner_references
                    .iter()
                    .any(|r| r.uid == owner_uid)
            {
                return Ok(());
            }
            let mut next = live.meta.clone();
            next.owner_references.retain(|r| r.uid != owner_uid);
            match client.update_meta(&live, &next).await {
                Ok(()) => {
                    self.metrics.orphaned.inc();
                    return Ok(());
                }
                Err(s) if s.code() == Code::Aborted => continue,
                Err(s) if s.code() == Code::NotFound => return Ok(()),
                Err(s) => return Err(s),
            }
        }
        Err(Status::aborted(format!(
            "updateMaxRetries({MAX_TRIES}) has reached removing an owner reference from {}",
            meta.name
        )))
    }

    /// An owner deleted with `orphan`: its reference goes from every dependent, then the
    /// finalizer goes (and registry-svc deletes it). Any failure queues the owner again.
    pub(crate) async fn attempt_to_orphan(&self, uid: &str) -> Result<(), Status> {
        let Some(node) = self.graph().node(uid).cloned() else {
            return Ok(());
        };
        let span = tracing::info_span!(
            "garbagecollector.attempt_to_orphan",
            kind = %node.kind.kind,
            namespace = %node.meta.namespace,
            name = %node.meta.name,
            uid = %uid,
        );
        async {
            let client = self.client(node.kind.clone());
            let Some(live) = client.get(&node.meta.namespace, &node.meta.name).await? else {
                return Ok(());
            };
            if live.meta.uid != uid
                || live.meta.deletion_timestamp.is_none()
                || !live.meta.finalizers.iter().any(|f| f == ORPHAN)
            {
                return Ok(());
            }
            let dependents = self.graph().dependents(uid);
            let count = dependents.len();
            let mut tasks = tokio::task::JoinSet::new();
            let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(ORPHAN_PARALLELISM));
            for d in dependents {
                let me = self.clone();
                let owner = uid.to_string();
                let slots = slots.clone();
                tasks.spawn(async move {
                    let _slot = slots.acquire_owned().await;
                    let c = me.client(d.kind.clone());
                    me.remove_reference(&c, &d.meta, &owner).await
                });
            }
            let mut failed = None;
            while let Some(r) = tasks.join_next().await {
                match r {
                    Ok(Err(s)) => failed = Some(s),
                    Err(e) => failed = Some(Status::internal(e.to_string())),
                    Ok(Ok(())) => {}
                }
            }
            if let Some(s) = failed {
                return Err(s);
            }
            self.remove_finalizer(&client, &live.meta, ORPHAN).await?;
            if count > 0 {
                self.events.record(
                    crate::events::reference(&node.kind, &live.meta),
                    "Normal",
                    "OrphanedDependents",
                    format!("removed the owner reference from {count} dependents"),
                );
            }
            Ok(())
        }
        .instrument(span)
        .await
    }
}

/// Dependents of one owner orphaned at once.
const ORPHAN_PARALLELISM: usize = 8;
