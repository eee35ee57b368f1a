//! Defects issue, point 11: v1 defaults on create and on read, as upstream (its storage codec
//! defaults every object it decodes, `SetDefaults_Pod`/`SetDefaults_PodSpec`/
//! `SetDefaults_Secret`). Objects are seeded through storage-svc directly, "as stored" by an
//! older writer that knew no defaults, then read and updated through registry-svc: Get, List
//! and Watch (the encoded pass-through) serve them defaulted, and an update that sends back
//! what was read is not refused as a change.

use kubestore_proto::{
    core::v1::{
        GetSecretRequest, ListPodsRequest, ListSecretsRequest, Pod, PodSpec, PodStatus, Secret,
        UpdateSecretRequest, WatchPodsRequest, WatchSecretsRequest, secrets_client::SecretsClient,
    },
    meta::v1::{ListOptions, ObjectMeta, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{NS, container, create_pod, get_pod, meta, pod, update_pod},
    fixtures_storage::{create as seed, raw},
    services::channel,
};
use prost::Message;
use tonic::{Status, transport::Channel};

/// Metadata of an object written by an older writer: what storage-svc needs, nothing more.
fn stored_meta(name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: name.into(),
        namespace: NS.into(),
        uid: format!("uid-{name}"),
        generation: 1,
        ..Default::default()
    })
}

async fn get_secret(c: &mut SecretsClient<Channel>, name: &str) -> Result<Secret, Status> {
    Ok(c.get(GetSecretRequest {
        namespace: NS.into(),
        name: name.into(),
    })
    .await?
    .into_inner())
}

async fn update_secret(c: &mut SecretsClient<Channel>, s: Secret) -> Result<Secret, Status> {
    Ok(c.update(UpdateSecretRequest {
        namespace: NS.into(),
        secret: Some(s),
        dry_run: false,
    })
    .await?
    .into_inner())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_stored_without_type_is_served_opaque_and_can_be_updated() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut c = SecretsClient::new(channel(&url).await);
    let mut storage = cluster.storage_client().await;
    let legacy = Secret {
        metadata: stored_meta("legacy"),
        data: [("k".to_string(), b"v".to_vec())].into(),
        ..Default::default()
    };
    seed(&mut storage, "/secrets/default/legacy", &legacy, 0)
        .await
        .expect("seed");

    let got = get_secret(&mut c, "legacy").await.expect("get");
    assert_eq!(got.r#type, "Opaque", "SetDefaults_Secret on read");
    // List and Watch pass storage's bytes through: these must be defaulted all the same.
    let list = c
        .list(ListSecretsRequest {
            namespace: NS.into(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(list.items, vec![got.clone()], "List serves what Get serves");
    let mut watch = c
        .watch(WatchSecretsRequest {
            namespace: NS.into(),
            options: Some(ListOptions::default()),
        })
        .await
        .expect("watch")
        .into_inner();
    let ev = watch.message().await.expect("event").expect("open");
    assert_eq!(ev.r#type, WatchEventType::Added as i32);
    assert_eq!(
        ev.object.expect("object"),
        got,
        "Watch serves what Get serves"
    );

    // Before defaulting on read, both were refused: `type: Invalid value: "Opaque": field is
    // immutable`.
    let mut sent_back = got.clone();
    sent_back.data.insert("k".into(), b"w".to_vec());
    let updated = update_secret(&mut c, sent_back).await.expect("update");
    assert_eq!(updated.r#type, "Opaque");
    let mut without_type = updated.clone();
    without_type.r#type.clear();
    without_type
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .insert("a".into(), "b".into());
    let updated = update_secret(&mut c, without_type)
        .await
        .expect("an update leaving type out");
    assert_eq!(updated.r#type, "Opaque");
    // The write stored the default.
    let stored = raw(&cluster, "/registry/secrets/default/legacy")
        .await
        .expect("stored");
    let stored = Secret::decode(stored.value()).expect("decodes");
    assert_eq!(stored.r#type, "Opaque");
    // The watch saw the updates defaulted too.
    let ev = watch.message().await.expect("event").expect("open");
    assert_eq!(ev.r#type, WatchEventType::Modified as i32);
    assert_eq!(ev.object.expect("object").r#type, "Opaque");
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_store_the_default_grace_period_and_an_update_sending_it_is_no_change() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let created = create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let spec = created.spec.clone().expect("spec");
    assert_eq!(
        spec.termination_grace_period_seconds,
        Some(30),
        "SetDefaults_PodSpec on create"
    );
    let stored = raw(&cluster, "/registry/pods/default/web")
        .await
        .expect("stored");
    let stored = Pod::decode(stored.value()).expect("decodes");
    assert_eq!(
        stored.spec.expect("spec").termination_grace_period_seconds,
        Some(30),
        "stored, not only served"
    );
    // The client says 30 out loud: the same spec, no spec change, no new generation.
    let mut explicit = created.clone();
    explicit
        .spec
        .get_or_insert_with(Default::default)
        .termination_grace_period_seconds = Some(30);
    explicit
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .insert("tier".into(), "web".into());
    let updated = update_pod(&mut pods, explicit).await.expect("update");
    assert_eq!(meta(&updated).generation, meta(&created).generation);
    // And so does a client that leaves it out.
    let mut omitted = updated.clone();
    omitted
        .spec
        .get_or_insert_with(Default::default)
        .termination_grace_period_seconds = None;
    let updated = update_pod(&mut pods, omitted).await.expect("update");
    assert_eq!(meta(&updated).generation, meta(&created).generation);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_stored_without_defaults_is_served_defaulted_everywhere() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut storage = cluster.storage_client().await;
    let mut legacy = pod("legacy", "node-1");
    legacy.metadata = stored_meta("legacy");
    legacy.spec = Some(PodSpec {
        // A negative grace period (accepted before 1.22), no restartPolicy, and limits
        // without requests.
        termination_grace_period_seconds: Some(-1),
        containers: vec![container("nginx:1", &[], &[("memory", "64Mi")])],
        node_name: "node-1".into(),
        ..Default::default()
    });
    legacy.status = Some(PodStatus {
        phase: "Running".into(),
        qos_class: "Burstable".into(),
        ..Default::default()
    });
    seed(&mut storage, "/pods/default/legacy", &legacy, 0)
        .await
        .expect("seed");

    let got = get_pod(&mut pods, "legacy").await.expect("get");
    let spec = got.spec.clone().expect("spec");
    assert_eq!(
        spec.termination_grace_period_seconds,
        Some(1),
        "negative is 1"
    );
    assert_eq!(spec.restart_policy, "Always");
    let res = spec.containers[0].resources.clone().expect("resources");
    assert_eq!(res.requests.get("memory").map(String::as_str), Some("64Mi"));

    let list = pods
        .list(ListPodsRequest {
            namespace: NS.into(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(list.items, vec![got.clone()], "List serves what Get serves");
    let mut watch = pods
        .watch(WatchPodsRequest {
            namespace: NS.into(),
            options: Some(ListOptions::default()),
        })
        .await
        .expect("watch")
        .into_inner();
    let ev = watch.message().await.expect("event").expect("open");
    assert_eq!(
        ev.object.expect("object"),
        got,
        "Watch serves what Get serves"
    );

    // Sending back what was read (a label added) is no spec change: the stored pod is
    // compared defaulted.
    let mut relabelled = got.clone();
    relabelled
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .insert("a".into(), "b".into());
    let updated = update_pod(&mut pods, relabelled).await.expect("update");
    assert_eq!(meta(&updated).generation, 1, "no spec change");
    assert_eq!(
        updated.spec.expect("spec").termination_grace_period_seconds,
        Some(1)
    );
}
