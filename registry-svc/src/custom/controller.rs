//! The definitions controller, run by every registry-svc replica (upstream runs the same loops
//! inside the apiserver): it accepts a definition's names or says which conflict
//! (`NamesAccepted`, upstream's naming controller), marks it `Established`, and deletes the
//! objects of a definition being deleted before letting the definition go (upstream's
//! `customresourcecleanup.apiextensions.k8s.io` finalizer controller).
//!
//! Every replica may act on the same definition: each write is an update at the
//! resourceVersion it read, so a replica that lost a race reads again and finds nothing left to
//! do. Names are taken one by one, as upstream: a name that does not conflict is accepted even
//! when another does.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use kubestore_proto::{
    apiextensions::v1::{
        CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
    },
    meta::v1::{DeleteOptions, ListOptions},
};
use tokio::sync::mpsc;

use crate::{
    custom::{
        definition::CLEANUP_FINALIZER,
        kinds::{CustomKinds, cleaning_up, name_of},
    },
    error::ApiError,
    store::graceful::now,
    store::{Ctx, Store},
};

/// How long the controller waits before looking again at a definition whose objects are not
/// all gone (some held by their own finalizers), as upstream polls every 5 s.
const RECHECK: Duration = Duration::from_secs(2);

/// Runs the controller until `stop`: `queue` names the definitions to look at.
pub async fn run(
    kinds: Arc<CustomKinds>,
    definitions: Store<CustomResourceDefinition>,
    mut queue: mpsc::Receiver<String>,
    requeue: mpsc::Sender<String>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let name = tokio::select! {
            n = queue.recv() => match n { Some(n) => n, None => return },
            _ = stop.wait_for(|s| *s) => return,
        };
        match sync(&kinds, &definitions, &name).await {
            Ok(Next::Done) => {}
            Ok(Next::Later) => later(&requeue, name, RECHECK),
            Err(e) => {
                tracing::debug!(definition = %name, error = %e, "definitions controller: retrying");
                later(&requeue, name, Duration::from_millis(200));
            }
        }
    }
}

fn later(requeue: &mpsc::Sender<String>, name: String, after: Duration) {
    let requeue = requeue.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let _ = requeue.send(name).await;
    });
}

enum Next {
    Done,
    Later,
}

fn ctx() -> Ctx {
    Ctx::within(crate::store::DEFAULT_REQUEST_TIMEOUT)
}

async fn sync(
    kinds: &CustomKinds,
    definitions: &Store<CustomResourceDefinition>,
    name: &str,
) -> Result<Next, ApiError> {
    let crd = match definitions.get(ctx(), "", name).await {
        Ok(c) => c,
        Err(ApiError::NotFound { .. }) => return Ok(Next::Done),
        Err(e) => return Err(e),
    };
    if cleaning_up(&crd) {
        return clean_up(kinds, definitions, crd).await;
    }
    let wanted = status_for(&crd, &kinds.definitions());
    if crd
        .status
        .as_ref()
        .map(|s| (&s.accepted_names, &s.conditions))
        == Some((&wanted.0, &wanted.1))
    {
        return Ok(Next::Done);
    }
    let mut updated = crd.clone();
    let status = updated.status.get_or_insert_with(Default::default);
    status.accepted_names = wanted.0;
    status.conditions = wanted.1;
    definitions.update_status(ctx(), "", updated, false).await?;
    Ok(Next::Done)
}

/// The accepted names and conditions `crd` should have, given every definition seen.
fn status_for(
    crd: &CustomResourceDefinition,
    all: &[CustomResourceDefinition],
) -> (
    Option<CustomResourceDefinitionNames>,
    Vec<CustomResourceDefinitionCondition>,
) {
    let spec = crd.spec.clone().unwrap_or_default();
    let wanted = spec.names.clone().unwrap_or_default();
    let uid = crd.metadata.as_ref().map(|m| m.uid.as_str()).unwrap_or("");
    // Names held by the other definitions of the group: plurals, singulars and short names
    // share one space; kinds and list kinds another.
    let (mut resources, mut kinds) = (BTreeSet::new(), BTreeSet::new());
    for other in all {
        let other_uid = other
            .metadata
            .as_ref()
            .map(|m| m.uid.as_str())
            .unwrap_or("");
        if other_uid == uid || other.spec.as_ref().map(|s| s.group.as_str()) != Some(&spec.group) {
            continue;
        }
        if let Some(n) = other
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
        {
            resources.insert(n.plural.clone());
            resources.insert(n.singular.clone());
            resources.extend(n.short_names.iter().cloned());
            kinds.insert(n.kind.clone());
            kinds.insert(n.list_kind.clone());
        }
    }
    // And the built-in kinds' names, whatever the group (see `BUILT_IN_NAMES`).
    for (kind, plural, short) in crate::resource::BUILT_IN_NAMES {
        resources.insert((*plural).to_string());
        resources.insert(kind.to_lowercase());
        resources.extend(short.iter().map(|s| (*s).to_string()));
        kinds.insert((*kind).to_string());
        kinds.insert(format!("{kind}List"));
    }
    let current = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_default();
    let mut accepted = current.clone();
    let mut conflict: Option<(&str, String)> = None;
    let free = |set: &BTreeSet<String>, name: &str, mine: &str| {
        name.is_empty() || name == mine || !set.contains(name)
    };
    if free(&resources, &wanted.plural, &current.plural) {
        accepted.plural = wanted.plural.clone();
    } else {
        conflict = Some((
            "PluralConflict",
            format!("{:?} is already in use", wanted.plural),
        ));
    }
    if free(&resources, &wanted.singular, &current.singular) {
        accepted.singular = wanted.singular.clone();
    } else {
        conflict = Some((
            "SingularConflict",
            format!("{:?} is already in use", wanted.singular),
        ));
    }
    let taken: Vec<&String> = wanted
        .short_names
        .iter()
        .filter(|s| !current.short_names.contains(s) && resources.contains(*s))
        .collect();
    if taken.is_empty() {
        accepted.short_names = wanted.short_names.clone();
    } else {
        conflict = Some((
            "ShortNamesConflict",
            format!("{:?} is already in use", taken[0]),
        ));
    }
    if free(&kinds, &wanted.kind, &current.kind) {
        accepted.kind = wanted.kind.clone();
    } else {
        conflict = Some((
            "KindConflict",
            format!("{:?} is already in use", wanted.kind),
        ));
    }
    if free(&kinds, &wanted.list_kind, &current.list_kind) {
        accepted.list_kind = wanted.list_kind.clone();
    } else {
        conflict = Some((
            "ListKindConflict",
            format!("{:?} is already in use", wanted.list_kind),
        ));
    }
    accepted.categories = wanted.categories.clone();
    let old = crd
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut conditions: Vec<CustomResourceDefinitionCondition> = old
        .iter()
        .filter(|c| c.r#type != "NamesAccepted" && c.r#type != "Established")
        .cloned()
        .collect();
    let was_established = old
        .iter()
        .any(|c| c.r#type == "Established" && c.status == "True");
    let names_accepted = match &conflict {
        None => set(
            &old,
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
        ),
        Some((reason, message)) => set(&old, "NamesAccepted", "False", reason, message),
    };
    conditions.push(names_accepted);
    // This replica serves a definition as soon as its names are accepted, so it is established
    // at once (upstream waits 5 s with several apiservers; once established, a later conflict
    // never un-establishes it).
    let established = if was_established || conflict.is_none() {
        set(
            &old,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else {
        set(
            &old,
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        )
    };
    conditions.push(established);
    conditions.sort_by(|a, b| a.r#type.cmp(&b.r#type));
    (Some(accepted), conditions)
}

/// A condition, keeping its last transition time while its status stays the same.
fn set(
    old: &[CustomResourceDefinitionCondition],
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> CustomResourceDefinitionCondition {
    let since = old
        .iter()
        .find(|c| c.r#type == kind && c.status == status)
        .and_then(|c| c.last_transition_time)
        .unwrap_or_else(now);
    CustomResourceDefinitionCondition {
        r#type: kind.into(),
        status: status.into(),
        last_transition_time: Some(since),
        reason: reason.into(),
        message: message.into(),
    }
}

/// Deletes the definition's objects, then drops the cleanup finalizer: never while one
/// remains (one held by its own finalizers keeps the definition until it goes, as upstream).
///
/// The objects are found by their keys, `/<group>/<plural>/...`, through a Store that needs no
/// schema ([`CustomKinds::objects_of`]), not through what this replica serves: a definition
/// whose storage version is not served (its schema does not build, say) still has objects in
/// storage, and they must not outlive it to reappear when a definition of that name is created
/// again. Upstream lists through the storage version's registry store, and skips the deletion
/// for a definition never established; here whatever is under the prefix goes (it can only be
/// this definition's, or a former one's of the same name).
async fn clean_up(
    kinds: &CustomKinds,
    definitions: &Store<CustomResourceDefinition>,
    crd: CustomResourceDefinition,
) -> Result<Next, ApiError> {
    let name = name_of(&crd);
    match kinds.objects_of(&crd) {
        Some(store) => {
            let ctx = Ctx::within(crate::store::DELETE_COLLECTION_TIMEOUT);
            store
                .delete_collection(
                    ctx,
                    "",
                    Some(ListOptions::default()),
                    Some(DeleteOptions::default()),
                )
                .await?;
            let (_, left) = store
                .list(
                    crate::custom::controller::ctx(),
                    "",
                    Some(ListOptions {
                        limit: 1,
                        ..Default::default()
                    }),
                )
                .await?;
            if !left.is_empty() {
                tracing::info!(definition = %name, "custom objects remain (held by their finalizers); checking again");
                return Ok(Next::Later);
            }
        }
        None => {
            // Its names are a built-in kind's (or no valid names): never served, so it has no
            // objects, and its prefix may hold what is not its own (upstream skips the
            // deletion too, OverlappingBuiltInResource).
            tracing::info!(definition = %name, "a definition whose names are a built-in kind's (or invalid) is deleted; no objects to delete");
        }
    }
    let mut updated = crd;
    if let Some(m) = updated.metadata.as_mut() {
        m.finalizers.retain(|f| f != CLEANUP_FINALIZER);
    }
    definitions.update_status(ctx(), "", updated, false).await?;
    Ok(Next::Done)
}
