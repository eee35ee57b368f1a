//! What the garbage collector must never do, and must always finish, end to end: dangling
//! references and an owner re-created under its name judged by UID, an owner in another
//! namespace taken for absent (and never letting that namespace decide about this one's
//! objects), and foreground deletion of an ownership cycle.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{ConfigMap, CreateConfigMapRequest, GetConfigMapRequest, UpdateConfigMapRequest},
    meta::v1::{ObjectMeta, PropagationPolicy},
};
use kubestore_tests::{Cluster, fixtures_gc::*};

#[tokio::test(flavor = "multi_thread")]
async fn dangling_references_and_recreated_owners_are_judged_by_uid() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut cms = cluster.config_maps().await;
    // Before any controller runs: an owner, deleted and re-created under its name.
    let first = create_cm(&mut cms, "owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "old-dep",
        vec![owner("v1", "ConfigMap", &first, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "owner", PropagationPolicy::Orphan).await;
    // The orphan finalizer would wait for a controller; take it off by hand.
    if let Some(mut c) = get_cm(&mut cms, "owner").await {
        c.metadata.as_mut().expect("meta").finalizers.clear();
        cms.update(UpdateConfigMapRequest {
            namespace: NS.into(),
            config_map: Some(c),
            dry_run: false,
        })
        .await
        .expect("finalizer removed");
    }
    assert!(gone(&cms, "owner").await);
    let second = create_cm(&mut cms, "owner", vec![], &[]).await;
    assert_ne!(first.uid, second.uid);
    create_cm(
        &mut cms,
        "new-dep",
        vec![owner("v1", "ConfigMap", &second, None)],
        &[],
    )
    .await;
    // An owner that never existed.
    let never = ObjectMeta {
        name: "never-was".into(),
        uid: "6b1b3a3c-0000-4000-8000-000000000000".into(),
        ..Default::default()
    };
    create_cm(
        &mut cms,
        "dangling",
        vec![owner("v1", "ConfigMap", &never, None)],
        &[],
    )
    .await;
    // An owner that exists, but in another namespace: a namespaced dependent's owner must be
    // in its own namespace, so it is absent (the dependent is collected) and upstream's
    // Warning event `OwnerRefInvalidNamespace` is recorded on the dependent.
    let foreign = cms
        .create(CreateConfigMapRequest {
            namespace: "other".into(),
            config_map: Some(ConfigMap {
                metadata: Some(ObjectMeta {
                    name: "foreign-owner".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("create the owner elsewhere")
        .into_inner()
        .metadata
        .expect("meta");
    let foreign_dep = create_cm(
        &mut cms,
        "foreign-dep",
        vec![owner("v1", "ConfigMap", &foreign, None)],
        &[],
    )
    .await;
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    eventually(
        "the old dependent and the dangling one are collected",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "old-dep").await && gone(&cms, "dangling").await }
        },
    )
    .await;
    assert!(
        get_cm(&mut cms, "new-dep").await.is_some(),
        "the new owner's dependent stays"
    );
    assert!(get_cm(&mut cms, "owner").await.is_some());
    eventually(
        "the dependent of an owner in another namespace is collected",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "foreign-dep").await }
        },
    )
    .await;
    let events = cluster.events().await;
    eventually(
        "an OwnerRefInvalidNamespace Warning names the dependent",
        Duration::from_secs(5),
        || {
            let (mut events, uid) = (events.clone(), foreign_dep.uid.clone());
            async move {
                events
                    .list(kubestore_proto::core::v1::ListEventsRequest {
                        namespace: NS.into(),
                        options: None,
                    })
                    .await
                    .expect("list events")
                    .into_inner()
                    .items
                    .iter()
                    .any(|e| {
                        e.reason == "OwnerRefInvalidNamespace"
                            && e.r#type == "Warning"
                            && e.involved_object
                                .as_ref()
                                .is_some_and(|o| o.uid == uid && o.name == "foreign-dep")
                    })
            }
        },
    )
    .await;
    // The owner itself, in its own namespace, is untouched.
    assert!(
        cms.get(GetConfigMapRequest {
            namespace: "other".into(),
            name: "foreign-owner".into(),
        })
        .await
        .is_ok()
    );
}

/// The namespace a ConfigMap of the attacks below lives in.
const EVIL: &str = "evil";

#[tokio::test(flavor = "multi_thread")]
async fn a_reference_from_another_namespace_never_decides_about_this_ones_objects() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    let owner_cm = create_cm(&mut cms, "prod-owner", vec![], &[]).await;
    let other = create_cm(&mut cms, "other-owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "prod-dep",
        vec![
            owner("v1", "ConfigMap", &owner_cm, Some(true)),
            owner("v1", "ConfigMap", &other, None),
        ],
        &[],
    )
    .await;
    // The attack: a ConfigMap in another namespace names the prod owner (its name and UID,
    // blocking), and holds itself with a finalizer. Its owner is not in its namespace, so the
    // collector deletes it (it stays, held): the owner is absent *for it*.
    create_cm_in(
        &mut cms,
        EVIL,
        "bait",
        vec![owner("v1", "ConfigMap", &owner_cm, Some(true))],
        &["example.com/hold"],
    )
    .await;
    eventually(
        "the bait is collected (its owner is not in its namespace)",
        Duration::from_secs(10),
        || {
            let mut cms = cms.clone();
            async move {
                get_cm_in(&mut cms, EVIL, "bait")
                    .await
                    .and_then(|c| c.metadata)
                    .is_some_and(|m| m.deletion_timestamp.is_some())
            }
        },
    )
    .await;
    // The prod dependent is checked now (one of its owners goes): its other owner exists, in
    // its namespace, so only the deleted owner's reference goes. What the bait's check found
    // in its own namespace must not count here.
    delete_cm(&mut cms, "other-owner", PropagationPolicy::Background).await;
    eventually(
        "the deleted owner's reference is dropped, the dependent kept",
        Duration::from_secs(10),
        || {
            let (mut cms, keep) = (cms.clone(), owner_cm.uid.clone());
            async move {
                let dep = get_cm(&mut cms, "prod-dep").await;
                let refs = dep
                    .expect("the collector deleted a dependent whose owner exists")
                    .metadata
                    .expect("meta")
                    .owner_references;
                refs.len() == 1 && refs[0].uid == keep
            }
        },
    )
    .await;
    // Foreground deletion of the prod owner waits for its own blocking dependent only: the
    // bait, held by its finalizer in another namespace, does not hold it up.
    delete_cm(&mut cms, "prod-owner", PropagationPolicy::Foreground).await;
    eventually(
        "the owner and its dependent are deleted, whatever the bait does",
        Duration::from_secs(15),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "prod-dep").await && gone(&cms, "prod-owner").await }
        },
    )
    .await;
    // And its event is its own: the bait's collection (reported in the bait's namespace) did
    // not use it up.
    let events = cluster.events().await;
    let about = settled_events(&events, NS, &owner_cm.uid, "DeletingDependents").await;
    assert_eq!(about.len(), 1, "{about:?}");
    // The bait is still held by its finalizer, and only by it.
    let bait = get_cm_in(&mut cms, EVIL, "bait")
        .await
        .expect("held by its finalizer")
        .metadata
        .expect("meta");
    assert_eq!(bait.finalizers, vec!["example.com/hold".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_of_an_ownership_cycle_finishes() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    // a owns b and b owns a, both references blocking.
    let a = create_cm(&mut cms, "cycle-a", vec![], &[]).await;
    let b = create_cm(
        &mut cms,
        "cycle-b",
        vec![owner("v1", "ConfigMap", &a, Some(true))],
        &[],
    )
    .await;
    let mut a_now = get_cm(&mut cms, "cycle-a").await.expect("a");
    a_now.metadata.as_mut().expect("meta").owner_references =
        vec![owner("v1", "ConfigMap", &b, Some(true))];
    cms.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(a_now),
        dry_run: false,
    })
    .await
    .expect("a owned by b");
    // A third, outside the cycle, owned by a: it goes too.
    create_cm(
        &mut cms,
        "cycle-leaf",
        vec![owner("v1", "ConfigMap", &a, Some(true))],
        &[],
    )
    .await;
    delete_cm(&mut cms, "cycle-a", PropagationPolicy::Foreground).await;
    // b waits for a (its owner, deleted in the foreground) and a waits for b (its blocking
    // dependent): without upstream's cycle breaking neither ever goes.
    eventually(
        "both objects of the cycle and the leaf are deleted",
        Duration::from_secs(20),
        || {
            let cms = cms.clone();
            async move {
                gone(&cms, "cycle-a").await
                    && gone(&cms, "cycle-b").await
                    && gone(&cms, "cycle-leaf").await
            }
        },
    )
    .await;
}
