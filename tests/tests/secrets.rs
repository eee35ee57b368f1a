//! Issue 11, part 3: Secrets, a kind added as one message (and its service), one strategy and
//! one registration line, served like the others (CRUD, List/Watch, selectors,
//! DeleteCollection) with upstream's Secret rules.

use kubestore_proto::{
    core::v1::{
        CreateSecretRequest, DeleteCollectionSecretsRequest, DeleteSecretRequest, GetSecretRequest,
        ListSecretsRequest, Secret, UpdateSecretRequest, WatchSecretsRequest,
        secrets_client::SecretsClient,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{NS, reason},
    fixtures_storage::raw,
    services::channel,
};
use prost::Message;
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

fn secret(name: &str, ty: &str, data: &[(&str, &[u8])]) -> Secret {
    Secret {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        data: data
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect(),
        r#type: ty.into(),
        ..Default::default()
    }
}

async fn create(c: &mut SecretsClient<Channel>, s: Secret) -> Result<Secret, Status> {
    Ok(c.create(CreateSecretRequest {
        namespace: NS.into(),
        secret: Some(s),
        dry_run: false,
    })
    .await?
    .into_inner())
}

async fn update(c: &mut SecretsClient<Channel>, s: Secret) -> Result<Secret, Status> {
    Ok(c.update(UpdateSecretRequest {
        namespace: NS.into(),
        secret: Some(s),
        dry_run: false,
    })
    .await?
    .into_inner())
}

fn violation_fields(e: &Status) -> Vec<String> {
    e.get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_a_kind_like_the_others() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut c = SecretsClient::new(channel(&url).await);
    let mut watch = c
        .watch(WatchSecretsRequest {
            namespace: NS.into(),
            options: Some(ListOptions {
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();

    // stringData is merged into data (its values win) and never stored; type defaults.
    let mut s = secret("db", "", &[("user", b"admin"), ("password", b"old")]);
    s.string_data.insert("password".into(), "s3cr3t".into());
    let created = create(&mut c, s).await.expect("create");
    assert_eq!(created.r#type, "Opaque");
    assert!(created.string_data.is_empty());
    assert_eq!(created.data["password"], b"s3cr3t");
    let meta = created.metadata.clone().expect("meta");
    assert!(!meta.uid.is_empty() && !meta.resource_version.is_empty());
    let stored = raw(&cluster, "/registry/secrets/default/db")
        .await
        .expect("stored under the secrets prefix");
    let decoded = Secret::decode(stored.value()).expect("decodes");
    assert!(decoded.string_data.is_empty());
    let got = c
        .get(GetSecretRequest {
            namespace: NS.into(),
            name: "db".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got, created);
    // Bounded: a lost event fails here instead of holding the test run.
    let ev = tokio::time::timeout(std::time::Duration::from_secs(10), watch.message())
        .await
        .expect("the ADDED event within 10 s")
        .expect("event")
        .expect("open");
    assert_eq!(ev.r#type, WatchEventType::Added as i32);
    assert_eq!(ev.object.expect("object").data["user"], b"admin");

    // Field selector `type`, as upstream.
    create(
        &mut c,
        secret(
            "tls",
            "kubernetes.io/tls",
            &[("tls.crt", b"c"), ("tls.key", b"k")],
        ),
    )
    .await
    .expect("tls secret");
    let list = c
        .list(ListSecretsRequest {
            namespace: NS.into(),
            options: Some(ListOptions {
                field_selector: "type=kubernetes.io/tls".into(),
                ..Default::default()
            }),
        })
        .await
        .expect("list")
        .into_inner();
    let names: Vec<_> = list
        .items
        .iter()
        .map(|s| s.metadata.clone().unwrap_or_default().name)
        .collect();
    assert_eq!(names, ["tls"]);

    // The type never changes; immutable data stays.
    let mut retyped = created.clone();
    retyped.r#type = "example.com/other".into();
    let e = update(&mut c, retyped)
        .await
        .expect_err("type is immutable");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert_eq!(violation_fields(&e), ["type"]);
    let mut frozen = created.clone();
    frozen.immutable = Some(true);
    let frozen = update(&mut c, frozen).await.expect("make immutable");
    let mut changed = frozen.clone();
    changed.data.insert("user".into(), b"root".to_vec());
    let e = update(&mut c, changed).await.expect_err("immutable");
    assert_eq!(violation_fields(&e), ["data"]);

    // DeleteCollection and Delete as for every kind.
    let gone = c
        .delete_collection(DeleteCollectionSecretsRequest {
            namespace: NS.into(),
            list_options: Some(ListOptions {
                field_selector: "type=kubernetes.io/tls".into(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("delete collection")
        .into_inner();
    assert_eq!(gone.items.len(), 1);
    let deleted = c
        .delete(DeleteSecretRequest {
            namespace: NS.into(),
            name: "db".into(),
            options: Some(DeleteOptions::default()),
        })
        .await
        .expect("delete")
        .into_inner();
    assert!(deleted.deleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_secrets_need_their_keys_and_errors_never_show_values() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut c = SecretsClient::new(channel(&url).await);
    let e = create(
        &mut c,
        secret("t", "kubernetes.io/tls", &[("tls.crt", b"c")]),
    )
    .await
    .expect_err("tls.key missing");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(violation_fields(&e), ["data[tls.key]"]);
    let e = create(
        &mut c,
        secret(
            "d",
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", b"{\"auths\": hunter2")],
        ),
    )
    .await
    .expect_err("not JSON");
    assert_eq!(violation_fields(&e), ["data[.dockerconfigjson]"]);
    let details = format!("{e:?}");
    assert!(!details.contains("hunter2"), "{details}");
    let e = create(&mut c, secret("k", "Opaque", &[("bad/key", b"x")]))
        .await
        .expect_err("bad key");
    assert_eq!(violation_fields(&e), ["data[bad/key]"]);
    let mut etcd = cluster.etcd.client().await;
    let n = etcd
        .get(
            "/registry/secrets/",
            Some(etcd_client::GetOptions::new().with_prefix()),
        )
        .await
        .expect("etcd")
        .count();
    assert_eq!(n, 0, "nothing written");
}
