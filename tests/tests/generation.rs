//! Defects issue, point 12: ConfigMaps and Secrets get a server-managed `metadata.generation`,
//! as kubernetes#124507 has the apiserver manage it: 1 on create, whatever the client sent;
//! one more on an update that changes the content (`data`, `immutable`); unchanged by
//! metadata-only updates, which still move resourceVersion.

use kubestore_proto::{
    core::v1::{CreateSecretRequest, Secret, UpdateSecretRequest, secrets_client::SecretsClient},
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{NS, cm, create_cm, get_cm, meta, update_cm},
    services::channel,
};
use tonic::{Status, transport::Channel};

async fn create_secret(c: &mut SecretsClient<Channel>, s: Secret) -> Result<Secret, Status> {
    Ok(c.create(CreateSecretRequest {
        namespace: NS.into(),
        secret: Some(s),
        dry_run: false,
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

fn label(meta: &mut Option<ObjectMeta>, value: &str) {
    meta.get_or_insert_with(Default::default)
        .labels
        .insert("rev".into(), value.into());
}

#[tokio::test(flavor = "multi_thread")]
async fn config_map_generation_follows_its_content() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let mut sent = cm("settings", &[]);
    sent.metadata
        .get_or_insert_with(Default::default)
        .generation = 7;
    let created = create_cm(&mut cms, sent).await.expect("create");
    assert_eq!(meta(&created).generation, 1, "set on create");

    let mut relabelled = created.clone();
    label(&mut relabelled.metadata, "1");
    let relabelled = update_cm(&mut cms, relabelled).await.expect("relabel");
    assert_ne!(
        meta(&relabelled).resource_version,
        meta(&created).resource_version
    );
    assert_eq!(meta(&relabelled).generation, 1, "metadata only");

    let mut edited = relabelled.clone();
    edited.data.insert("k".into(), "changed".into());
    let edited = update_cm(&mut cms, edited).await.expect("edit");
    assert_eq!(meta(&edited).generation, 2, "data changed");

    let mut frozen = edited.clone();
    frozen.immutable = Some(true);
    let frozen = update_cm(&mut cms, frozen).await.expect("freeze");
    assert_eq!(meta(&frozen).generation, 3, "immutable changed");

    // A client cannot move it: the stored generation wins.
    let mut forged = frozen.clone();
    label(&mut forged.metadata, "2");
    forged
        .metadata
        .get_or_insert_with(Default::default)
        .generation = 40;
    let forged = update_cm(&mut cms, forged).await.expect("relabel");
    assert_eq!(meta(&forged).generation, 3);
    assert_eq!(get_cm(&mut cms, "settings").await.expect("get"), forged);
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_generation_follows_its_content() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut c = SecretsClient::new(channel(&url).await);
    let created = create_secret(
        &mut c,
        Secret {
            metadata: Some(ObjectMeta {
                name: "db".into(),
                generation: 5,
                ..Default::default()
            }),
            data: [("user".to_string(), b"admin".to_vec())].into(),
            ..Default::default()
        },
    )
    .await
    .expect("create");
    let generation = |s: &Secret| s.metadata.clone().unwrap_or_default().generation;
    assert_eq!(generation(&created), 1, "set on create");

    let mut relabelled = created.clone();
    label(&mut relabelled.metadata, "1");
    let relabelled = update_secret(&mut c, relabelled).await.expect("relabel");
    assert_eq!(generation(&relabelled), 1, "metadata only");

    // stringData is content: merged into data, it changes it.
    let mut edited = relabelled.clone();
    edited
        .string_data
        .insert("password".into(), "s3cr3t".into());
    let edited = update_secret(&mut c, edited).await.expect("edit");
    assert_eq!(generation(&edited), 2, "data changed");

    // The same data again (here through stringData) is no change.
    let mut same = edited.clone();
    same.data.remove("password");
    same.string_data.insert("password".into(), "s3cr3t".into());
    let same = update_secret(&mut c, same).await.expect("same data");
    assert_eq!(generation(&same), 2, "data unchanged");

    let mut frozen = same.clone();
    frozen.immutable = Some(true);
    let frozen = update_secret(&mut c, frozen).await.expect("freeze");
    assert_eq!(generation(&frozen), 3, "immutable changed");
}
