//! The garbage collector end to end (real etcd, storage-svc, registry-svc and a
//! controller-manager on a runtime of its own, see `kubestore_tests::fixtures_gc`): background
//! cascades across kinds (a custom kind owning ConfigMaps owning Secrets), foreground with and
//! without blockOwnerDeletion, orphaning, the events that report them, and a custom kind
//! defined (and deleted) while the collector runs.

use std::time::Duration;

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, DeleteCustomObjectRequest,
        DeleteCustomResourceDefinitionRequest, GetCustomObjectRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    core::v1::{
        CreateSecretRequest, GetSecretRequest, Secret, UpdateConfigMapRequest,
        secrets_client::SecretsClient,
    },
    meta::v1::{ObjectMeta, PropagationPolicy},
};
use kubestore_tests::{
    Cluster,
    fixtures_gc::*,
    services::{channel, sample, scrape},
};
use serde_json::json;
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn background_deletion_cascades_three_levels_across_kinds() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    register_crontab(&url).await;
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;

    // A CronTab owns two ConfigMaps; one of them owns a Secret; another ConfigMap has a
    // second, live owner and must survive with only that reference.
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let tab: serde_json::Value = serde_json::to_value(
        objects
            .create(CreateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(
                    serde_json::from_value(json!({
                        "apiVersion": "stable.example.com/v1",
                        "kind": "CronTab",
                        "metadata": {"name": "nightly"},
                        "spec": {"cronSpec": "* * * * *"},
                    }))
                    .expect("struct"),
                ),
                dry_run: false,
            })
            .await
            .expect("create crontab")
            .into_inner(),
    )
    .expect("json");
    let tab_meta = ObjectMeta {
        name: "nightly".into(),
        uid: tab["metadata"]["uid"].as_str().expect("uid").into(),
        ..Default::default()
    };
    let tab_ref = owner("stable.example.com/v1", "CronTab", &tab_meta, None);
    let mut cms = cluster.config_maps().await;
    let keeper = create_cm(&mut cms, "keeper", vec![], &[]).await;
    let level1 = create_cm(&mut cms, "level-1", vec![tab_ref.clone()], &[]).await;
    create_cm(&mut cms, "level-1b", vec![tab_ref.clone()], &[]).await;
    create_cm(
        &mut cms,
        "shared",
        vec![tab_ref.clone(), owner("v1", "ConfigMap", &keeper, None)],
        &[],
    )
    .await;
    let mut secrets = SecretsClient::new(channel(&url).await);
    secrets
        .create(CreateSecretRequest {
            namespace: NS.into(),
            secret: Some(Secret {
                metadata: Some(ObjectMeta {
                    name: "level-2".into(),
                    owner_references: vec![owner("v1", "ConfigMap", &level1, None)],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("create secret");

    objects
        .delete(DeleteCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "nightly".into(),
            options: None,
        })
        .await
        .expect("delete crontab");
    let s = secrets.clone();
    eventually("the whole cascade is gone", Duration::from_secs(15), || {
        let (cms, mut s) = (cms.clone(), s.clone());
        async move {
            gone(&cms, "level-1").await
                && gone(&cms, "level-1b").await
                && s.get(GetSecretRequest {
                    namespace: NS.into(),
                    name: "level-2".into(),
                })
                .await
                .is_err_and(|e| e.code() == Code::NotFound)
        }
    })
    .await;
    // What it did is reported: one event on the owner (not one per dependent: two of its
    // dependents were deleted), and the metrics.
    let events = cluster.events().await;
    let about_tab = settled_events(&events, NS, &tab_meta.uid, "DeletingDependents").await;
    assert_eq!(about_tab.len(), 1, "one event per owner: {about_tab:?}");
    let o = about_tab[0]
        .involved_object
        .as_ref()
        .expect("involvedObject");
    assert_eq!(
        (o.kind.as_str(), o.name.as_str(), o.namespace.as_str()),
        ("CronTab", "nightly", NS)
    );
    assert_eq!(about_tab[0].r#type, "Normal");
    let scraped = scrape(m.handle.metrics_addr.expect("metrics")).await;
    assert!(
        sample(&scraped, "garbagecollector_deleted_dependents_total").unwrap_or(0.0) >= 3.0,
        "{scraped}"
    );
    assert_eq!(
        sample(
            &scraped,
            "leader_election_master_status{name=\"kube-controller-manager\"}"
        ),
        Some(1.0)
    );
    assert!(
        sample(&scraped, "garbagecollector_removed_owner_references_total").unwrap_or(0.0) >= 1.0
    );
    let shared = get_cm(&mut cms, "shared")
        .await
        .expect("a live owner keeps it");
    let refs = shared.metadata.expect("meta").owner_references;
    assert_eq!(
        refs.len(),
        1,
        "only the live owner's reference is left: {refs:?}"
    );
    assert_eq!(refs[0].uid, keeper.uid);
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_waits_for_blocking_dependents_only() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;

    // With a blocking dependent that a finalizer holds, the owner waits for it.
    let o = create_cm(&mut cms, "owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "blocking",
        vec![owner("v1", "ConfigMap", &o, Some(true))],
        &["example.com/hold"],
    )
    .await;
    create_cm(
        &mut cms,
        "free",
        vec![owner("v1", "ConfigMap", &o, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "owner", PropagationPolicy::Foreground).await;
    eventually(
        "the non-blocking dependent is deleted",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "free").await }
        },
    )
    .await;
    let waiting = get_cm(&mut cms, "owner").await.expect("the owner waits");
    let meta = waiting.metadata.expect("meta");
    assert!(meta.deletion_timestamp.is_some());
    assert_eq!(meta.finalizers, vec!["foregroundDeletion".to_string()]);
    let blocking = get_cm(&mut cms, "blocking")
        .await
        .expect("held by its finalizer");
    assert!(
        blocking
            .metadata
            .as_ref()
            .expect("meta")
            .deletion_timestamp
            .is_some(),
        "the blocking dependent is being deleted"
    );
    // Releasing the dependent's finalizer lets both go.
    let mut b = blocking;
    b.metadata.as_mut().expect("meta").finalizers.clear();
    cms.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(b),
        dry_run: false,
    })
    .await
    .expect("release the dependent");
    eventually(
        "the owner is deleted after its blocking dependent",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "blocking").await && gone(&cms, "owner").await }
        },
    )
    .await;

    // Without blockOwnerDeletion, the owner does not wait for a dependent that lingers.
    let o2 = create_cm(&mut cms, "owner-2", vec![], &[]).await;
    create_cm(
        &mut cms,
        "lingering",
        vec![owner("v1", "ConfigMap", &o2, Some(false))],
        &["example.com/hold"],
    )
    .await;
    delete_cm(&mut cms, "owner-2", PropagationPolicy::Foreground).await;
    eventually(
        "the owner goes while its non-blocking dependent lingers",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "owner-2").await }
        },
    )
    .await;
    eventually(
        "the dependent is being deleted",
        Duration::from_secs(10),
        || {
            let mut cms = cms.clone();
            async move {
                get_cm(&mut cms, "lingering")
                    .await
                    .is_some_and(|c| c.metadata.is_some_and(|m| m.deletion_timestamp.is_some()))
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn orphaning_keeps_dependents_and_removes_only_that_reference() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    let o = create_cm(&mut cms, "owner", vec![], &[]).await;
    let other = create_cm(&mut cms, "other-owner", vec![], &[]).await;
    for i in 0..3 {
        create_cm(
            &mut cms,
            &format!("dep-{i}"),
            vec![
                owner("v1", "ConfigMap", &o, Some(true)),
                owner("v1", "ConfigMap", &other, None),
            ],
            &[],
        )
        .await;
    }
    delete_cm(&mut cms, "owner", PropagationPolicy::Orphan).await;
    eventually("the owner is deleted", Duration::from_secs(10), || {
        let cms = cms.clone();
        async move { gone(&cms, "owner").await }
    })
    .await;
    for i in 0..3 {
        let dep = get_cm(&mut cms, &format!("dep-{i}"))
            .await
            .expect("orphaned, kept");
        let refs = dep.metadata.expect("meta").owner_references;
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(
            refs[0].uid, other.uid,
            "only the deleted owner's reference went"
        );
    }
    // One event on the orphaned owner says so.
    let events = cluster.events().await;
    let orphaned = settled_events(&events, NS, &o.uid, "OrphanedDependents").await;
    assert_eq!(orphaned.len(), 1, "{orphaned:?}");
    assert_eq!(
        orphaned[0].message,
        "removed the owner reference from 3 dependents"
    );
    assert_eq!(
        orphaned[0]
            .involved_object
            .as_ref()
            .map(|i| (i.kind.as_str(), i.name.as_str())),
        Some(("ConfigMap", "owner"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_defined_while_the_collector_runs_is_collected_and_dropped_with_its_definition() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let metrics = m.handle.metrics_addr.expect("metrics");
    let monitors = move || async move {
        sample(&scrape(metrics).await, "garbagecollector_monitors").unwrap_or(0.0)
    };
    // The built-in kinds' monitors (Events excepted).
    eventually(
        "the built-in kinds are monitored",
        Duration::from_secs(10),
        || async move { monitors().await > 0.0 },
    )
    .await;
    let built_in = monitors().await;

    // Defined after the collector started (the only other custom cascade registers its
    // definition first).
    register_crontab(&url).await;
    eventually(
        "the new kind is monitored",
        Duration::from_secs(10),
        || async move { monitors().await == built_in + 1.0 },
    )
    .await;
    // A CronTab owned by a ConfigMap: only a collector that watches CronTabs knows the
    // ConfigMap has a dependent to collect.
    let mut cms = cluster.config_maps().await;
    let o = create_cm(&mut cms, "tab-owner", vec![], &[]).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let target = |name: &str| GetCustomObjectRequest {
        group: "stable.example.com".into(),
        version: "v1".into(),
        plural: "crontabs".into(),
        namespace: NS.into(),
        name: name.into(),
    };
    objects
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(
                serde_json::from_value(json!({
                    "apiVersion": "stable.example.com/v1",
                    "kind": "CronTab",
                    "metadata": {
                        "name": "owned-tab",
                        "ownerReferences": [{
                            "apiVersion": "v1", "kind": "ConfigMap",
                            "name": o.name, "uid": o.uid,
                        }],
                    },
                    "spec": {"cronSpec": "* * * * *"},
                }))
                .expect("struct"),
            ),
            dry_run: false,
        })
        .await
        .expect("create the dependent CronTab");
    delete_cm(&mut cms, "tab-owner", PropagationPolicy::Background).await;
    eventually(
        "the CronTab dependent is collected",
        Duration::from_secs(15),
        || {
            let mut objects = objects.clone();
            let get = target("owned-tab");
            async move {
                match objects.get(get).await {
                    Err(e) if e.code() == Code::NotFound => true,
                    Err(e) => panic!("get: {e:?}"),
                    Ok(_) => false,
                }
            }
        },
    )
    .await;

    // The definition goes: the collector stops watching its kind.
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    defs.delete(DeleteCustomResourceDefinitionRequest {
        name: "crontabs.stable.example.com".into(),
        options: None,
    })
    .await
    .expect("delete the definition");
    eventually(
        "the deleted kind is no longer monitored",
        Duration::from_secs(15),
        || async move { monitors().await == built_in },
    )
    .await;
}
