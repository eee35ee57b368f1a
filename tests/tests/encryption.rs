//! Issue 11, part 2: encryption at rest in storage-svc, configured by upstream's
//! `EncryptionConfiguration`: etcd holds no plaintext of encrypted resources, clients see
//! plaintext, keys rotate end to end (new key first, restart, `storage rewrite`, old key
//! removed), a missing key is a clear INTERNAL naming key and resource, and an identity-first
//! configuration reads old encrypted data (and a rewrite decrypts it).

use std::{path::PathBuf, time::Duration};

use kubestore_cli::rewrite::{Rewritten, rewrite};
use kubestore_proto::{
    core::v1::{
        CreateSecretRequest, GetSecretRequest, ListSecretsRequest, Secret, UpdateSecretRequest,
        WatchSecretsRequest, secrets_client::SecretsClient,
    },
    meta::v1::{ListOptions, ObjectMeta, WatchEventType},
    storage::v1::{
        CreateRequest, GetRequest, ListRequest, WatchRequest, storage_client::StorageClient,
    },
};
use kubestore_tests::{
    EtcdProcess,
    fixtures_registry::{NS, cm, create_cm},
    services::{ServiceHandle, channel, spawn_registry, spawn_storage, wait_serving},
};
use prost::Message;
use tonic::{Code, transport::Channel};

const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgZG9uJ3QgdGVsbCBhbnk="; // 32 bytes
const KEY2: &str = "YW5vdGhlciAzMiBieXRlIGtleSBmb3IgYWVzZ2NtISE="; // 32 bytes
const KEY3: &str = "dGhpcmQga2V5LCAzMiBieXRlcyBsb25nLCBzZWNyZXQ="; // 32 bytes

/// A config file for `secrets` with `providers` (YAML list items, indented 6).
struct ConfigFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn config(providers: &str) -> ConfigFile {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("encryption.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources:\n      - secrets\n    providers:\n{providers}"
        ),
    )
    .expect("write config");
    ConfigFile { _dir: dir, path }
}

fn aesgcm(keys: &[(&str, &str)]) -> String {
    let mut s = "      - aesgcm:\n          keys:\n".to_string();
    for (name, secret) in keys {
        s += &format!("            - name: {name}\n              secret: {secret}\n");
    }
    s
}

const IDENTITY: &str = "      - identity: {}\n";

async fn start_storage(etcd: &EtcdProcess, c: &ConfigFile) -> ServiceHandle {
    let s = spawn_storage(
        storage_svc::Config {
            encryption_provider_config: Some(c.path.clone()),
            ..Default::default()
        },
        etcd.endpoint(),
        None,
    );
    wait_serving(&s.url()).await;
    s
}

fn secret(name: &str, value: &str) -> Secret {
    Secret {
        metadata: Some(ObjectMeta {
            name: name.into(),
            namespace: NS.into(),
            ..Default::default()
        }),
        data: [("password".to_string(), value.as_bytes().to_vec())].into(),
        r#type: "Opaque".into(),
        ..Default::default()
    }
}

/// The value etcd holds for a secret.
async fn stored(etcd: &EtcdProcess, name: &str) -> Vec<u8> {
    let mut c = etcd.client().await;
    c.get(format!("/registry/secrets/default/{name}"), None)
        .await
        .expect("etcd get")
        .kvs()
        .first()
        .map(|kv| kv.value().to_vec())
        .expect("stored")
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

async fn storage_get(c: &mut StorageClient<Channel>, name: &str) -> Result<Secret, tonic::Status> {
    let r = c
        .get(GetRequest {
            key: format!("/secrets/default/{name}"),
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(Secret::decode(&r.object[..]).expect("decodes"))
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_holds_no_plaintext_of_encrypted_resources_and_clients_see_plaintext() {
    let etcd = EtcdProcess::start().await;
    let c = config(&(aesgcm(&[("key1", KEY1)]) + IDENTITY));
    let storage = start_storage(&etcd, &c).await;
    let registry = spawn_registry(registry_svc::Config::default(), storage.url(), None);
    wait_serving(&registry.url()).await;
    let mut secrets = SecretsClient::new(channel(&registry.url()).await);
    let mut watch = secrets
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
    let created = secrets
        .create(CreateSecretRequest {
            namespace: NS.into(),
            secret: Some(secret("db", "hunter2-plaintext")),
            dry_run: false,
        })
        .await
        .expect("create")
        .into_inner();
    let mut cms = kubestore_proto::core::v1::config_maps_client::ConfigMapsClient::new(
        channel(&registry.url()).await,
    );
    let mut visible = cm("settings", &[]);
    visible.data.insert("color".into(), "visible-config".into());
    create_cm(&mut cms, visible).await.expect("configmap");

    // etcd: upstream's prefix, no plaintext; ConfigMaps (not configured) as they are.
    let raw = stored(&etcd, "db").await;
    assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{raw:?}");
    assert!(!contains(&raw, "hunter2-plaintext"));
    let mut e = etcd.client().await;
    let cm_raw = e
        .get("/registry/configmaps/default/settings", None)
        .await
        .expect("get")
        .kvs()
        .first()
        .map(|kv| kv.value().to_vec())
        .expect("configmap stored");
    assert!(contains(&cm_raw, "visible-config"));

    // Clients: plaintext through Get, List, Watch and Update.
    let got = secrets
        .get(GetSecretRequest {
            namespace: NS.into(),
            name: "db".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.data["password"], b"hunter2-plaintext");
    let list = secrets
        .list(ListSecretsRequest {
            namespace: NS.into(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(list.items[0].data["password"], b"hunter2-plaintext");
    let ev = watch.message().await.expect("event").expect("open");
    assert_eq!(ev.r#type, WatchEventType::Added as i32);
    assert_eq!(
        ev.object.expect("object").data["password"],
        b"hunter2-plaintext"
    );
    let mut changed = created.clone();
    changed
        .data
        .insert("password".into(), b"changed-plaintext".to_vec());
    secrets
        .update(UpdateSecretRequest {
            namespace: NS.into(),
            secret: Some(changed),
            dry_run: false,
        })
        .await
        .expect("update");
    let ev = watch.message().await.expect("event").expect("open");
    assert_eq!(ev.r#type, WatchEventType::Modified as i32);
    assert_eq!(
        ev.object.expect("object").data["password"],
        b"changed-plaintext"
    );
    assert!(!contains(&stored(&etcd, "db").await, "changed-plaintext"));
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_rotate_end_to_end_and_a_missing_key_is_named() {
    let etcd = EtcdProcess::start().await;
    let old = config(&aesgcm(&[("key1", KEY1)]));
    let storage = start_storage(&etcd, &old).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    for name in ["a", "b", "c"] {
        c.create(CreateRequest {
            key: format!("/secrets/default/{name}"),
            object: secret(name, &format!("value-{name}")).encode_to_vec(),
            ..Default::default()
        })
        .await
        .expect("create");
        assert!(
            stored(&etcd, name)
                .await
                .starts_with(b"k8s:enc:aesgcm:v1:key1:")
        );
    }
    drop(storage);

    // 1. The new key first, the old one still listed: old data reads, new writes use key2.
    let both = config(&aesgcm(&[("key2", KEY2), ("key1", KEY1)]));
    let storage = start_storage(&etcd, &both).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    assert_eq!(
        storage_get(&mut c, "a").await.expect("old key reads").data["password"],
        b"value-a"
    );
    // 2. Rewrite everything: each object is stored again under key2.
    let done = rewrite(&mut c, "secrets").await.expect("rewrite");
    assert_eq!(
        done,
        Rewritten {
            written: 3,
            unchanged: 0,
            gone: 0
        }
    );
    for name in ["a", "b", "c"] {
        let raw = stored(&etcd, name).await;
        assert!(
            raw.starts_with(b"k8s:enc:aesgcm:v1:key2:"),
            "{name}: {raw:?}"
        );
    }
    // Nothing is stale any more: a second rewrite writes nothing.
    let again = rewrite(&mut c, "secrets").await.expect("rewrite again");
    assert_eq!((again.written, again.unchanged), (0, 3));
    drop(storage);

    // 3. The old key removed: everything still reads.
    let new_only = config(&aesgcm(&[("key2", KEY2)]));
    let storage = start_storage(&etcd, &new_only).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    for name in ["a", "b", "c"] {
        assert_eq!(
            storage_get(&mut c, name).await.expect("reads").data["password"],
            format!("value-{name}").as_bytes()
        );
    }
    drop(storage);

    // A configuration without the key the data needs: INTERNAL naming key and resource, never
    // garbage, on Get and List.
    let wrong = config(&aesgcm(&[("key3", KEY3)]));
    let storage = start_storage(&etcd, &wrong).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    let e = storage_get(&mut c, "a").await.expect_err("key2 is missing");
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(
        e.message().contains("key2") && e.message().contains("secrets"),
        "{}",
        e.message()
    );
    let e = c
        .list(ListRequest {
            key: "/secrets".into(),
            recursive: true,
            ..Default::default()
        })
        .await
        .expect_err("list cannot decrypt either");
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(e.message().contains("key2"), "{}", e.message());
    // Nor a watch replaying their history (written under key1 first): INTERNAL too, not
    // UNAVAILABLE (which would have clients watch again forever).
    let mut events = c
        .watch(WatchRequest {
            key: "/secrets".into(),
            recursive: true,
            resource_version: "1".into(),
            ..Default::default()
        })
        .await
        .expect("watch opens")
        .into_inner();
    let e = tokio::time::timeout(Duration::from_secs(10), events.message())
        .await
        .expect("in time")
        .expect_err("the watch cannot decrypt either");
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(
        e.message().contains("key1") && e.message().contains("secrets"),
        "{}",
        e.message()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_identity_first_configuration_reads_encrypted_data_and_a_rewrite_decrypts_it() {
    let etcd = EtcdProcess::start().await;
    let encrypting = config(&aesgcm(&[("key1", KEY1)]));
    let storage = start_storage(&etcd, &encrypting).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    c.create(CreateRequest {
        key: "/secrets/default/old".into(),
        object: secret("old", "was-encrypted").encode_to_vec(),
        ..Default::default()
    })
    .await
    .expect("create");
    drop(storage);

    let decrypting = config(&(IDENTITY.to_string() + &aesgcm(&[("key1", KEY1)])));
    let storage = start_storage(&etcd, &decrypting).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    assert_eq!(
        storage_get(&mut c, "old").await.expect("reads").data["password"],
        b"was-encrypted"
    );
    c.create(CreateRequest {
        key: "/secrets/default/new".into(),
        object: secret("new", "written-plain").encode_to_vec(),
        ..Default::default()
    })
    .await
    .expect("create");
    assert!(contains(&stored(&etcd, "new").await, "written-plain"));
    let done = rewrite(&mut c, "secrets").await.expect("rewrite");
    assert_eq!((done.written, done.unchanged), (1, 1));
    assert!(contains(&stored(&etcd, "old").await, "was-encrypted"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_configuration_stops_storage_at_start_and_events_are_not_rewritten() {
    let etcd = EtcdProcess::start().await;
    let bad = config(
        "      - aesgcm:\n          keys:\n            - name: k\n              secret: c2hvcnQ=\n",
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        storage_svc::run(
            listener,
            storage_svc::Config {
                etcd_endpoints: vec![etcd.endpoint()],
                encryption_provider_config: Some(bad.path.clone()),
                ..Default::default()
            },
            std::future::pending(),
        ),
    )
    .await
    .expect("fails at once");
    let e = r.expect_err("refused").to_string();
    assert!(
        e.contains("--encryption-provider-config") && e.contains("must be 16, 24 or 32 bytes"),
        "{e}"
    );
    let storage = start_storage(&etcd, &config(IDENTITY)).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    let e = rewrite(&mut c, "events")
        .await
        .expect_err("events keep their TTL");
    assert_eq!(e.code(), Code::InvalidArgument);
}

/// A watch served by a replica's watch cache, when that cache meets a value it cannot decrypt
/// (another replica, already on a key this one lacks, wrote it: the rotation done in one step
/// instead of upstream's two), ends with that error instead of going on with nothing but
/// bookmarks at the old revision; upstream's cacher ends its watchers when its watch fails.
#[tokio::test(flavor = "multi_thread")]
async fn a_cached_watch_that_meets_an_undecryptable_value_ends_with_its_error() {
    let etcd = EtcdProcess::start().await;
    let old = config(&aesgcm(&[("key1", KEY1)]));
    let new = config(&aesgcm(&[("key2", KEY2), ("key1", KEY1)]));
    let cached = |c: &ConfigFile| storage_svc::Config {
        encryption_provider_config: Some(c.path.clone()),
        watch_cache: true,
        watch_bookmark_interval: Duration::from_millis(500),
        ..Default::default()
    };
    let behind =
        kubestore_tests::services::spawn_storage_exact(cached(&old), etcd.endpoint(), None);
    let ahead = kubestore_tests::services::spawn_storage_exact(cached(&new), etcd.endpoint(), None);
    wait_serving(&behind.url()).await;
    wait_serving(&ahead.url()).await;
    let mut b = StorageClient::new(channel(&behind.url()).await);
    let mut a = StorageClient::new(channel(&ahead.url()).await);
    let first = b
        .create(CreateRequest {
            key: "/secrets/default/one".into(),
            object: secret("one", "v1").encode_to_vec(),
            ..Default::default()
        })
        .await
        .expect("create through the replica behind")
        .into_inner();
    // The replica behind serves secrets from its cache.
    let mut served = false;
    for _ in 0..200 {
        let _ = storage_get(&mut b, "one").await;
        let text = kubestore_tests::services::scrape(behind.metrics_addr).await;
        if kubestore_tests::services::sample(
            &text,
            r#"storage_watch_cache_reads_total{resource="secrets"}"#,
        )
        .is_some_and(|n| n > 0.0)
        {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        served,
        "the cache of the replica behind never served secrets"
    );
    let mut w = b
        .watch(WatchRequest {
            key: "/secrets/default".into(),
            recursive: true,
            resource_version: first.resource_version,
            allow_watch_bookmarks: true,
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    a.create(CreateRequest {
        key: "/secrets/default/two".into(),
        object: secret("two", "v2").encode_to_vec(),
        ..Default::default()
    })
    .await
    .expect("create through the replica ahead (key2)");
    let end = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match w.message().await {
                Ok(Some(e)) => assert_eq!(
                    e.r#type,
                    WatchEventType::Bookmark as i32,
                    "no event for a value that cannot be read: {e:?}"
                ),
                Ok(None) => return None,
                Err(s) => return Some(s),
            }
        }
    })
    .await
    .expect("the watch ends instead of going on with bookmarks only")
    .expect("it ends with an error");
    assert_eq!(end.code(), Code::Internal, "{end:?}");
    assert!(end.message().contains("secrets"), "{end:?}");
}

/// A custom kind is named in the EncryptionConfiguration as `<plural>.<group>`, as upstream
/// names it: its objects are sealed in etcd and read back in plaintext; kinds it does not name
/// stay as they come.
#[tokio::test(flavor = "multi_thread")]
async fn a_custom_kind_named_plural_dot_group_is_encrypted() {
    use kubestore_proto::apiextensions::v1::{
        CreateCustomObjectRequest, GetCustomObjectRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    };
    let etcd = EtcdProcess::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("encryption.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources:\n      - crontabs.stable.example.com\n    providers:\n{}",
            aesgcm(&[("key1", KEY1)])
        ),
    )
    .expect("write config");
    let storage = start_storage(
        &etcd,
        &ConfigFile {
            _dir: dir,
            path: path.clone(),
        },
    )
    .await;
    let registry = spawn_registry(Default::default(), storage.url(), None);
    wait_serving(&registry.url()).await;
    let mut defs = CustomResourceDefinitionsClient::new(channel(&registry.url()).await);
    kubestore_tests::fixtures_custom::register_established(
        &mut defs,
        kubestore_tests::fixtures_custom::crontab_crd(),
    )
    .await;
    let mut objects = CustomObjectsClient::new(channel(&registry.url()).await);
    objects
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "stable.example.com/v1",
                    "kind": "CronTab",
                    "metadata": {"name": "c1"},
                    "spec": {"cronSpec": "* * * * */5", "image": "plaintext-marker-image"},
                }))
                .expect("a Struct"),
            ),
            dry_run: false,
        })
        .await
        .expect("create");
    let mut e = etcd.client().await;
    let raw = e
        .get("/registry/stable.example.com/crontabs/default/c1", None)
        .await
        .expect("etcd get")
        .kvs()
        .first()
        .map(|kv| kv.value().to_vec())
        .expect("stored");
    assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{raw:?}");
    assert!(!contains(&raw, "plaintext-marker-image"));
    let got = objects
        .get(GetCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "c1".into(),
        })
        .await
        .expect("get")
        .into_inner();
    let got = serde_json::to_value(got).expect("json");
    assert_eq!(got["spec"]["image"], "plaintext-marker-image");
    // The definition itself is not named: stored as it comes.
    let def = e
        .get(
            "/registry/apiextensions.k8s.io/customresourcedefinitions/crontabs.stable.example.com",
            None,
        )
        .await
        .expect("etcd get")
        .kvs()
        .first()
        .map(|kv| kv.value().to_vec())
        .expect("stored definition");
    assert!(!def.starts_with(b"k8s:enc:"));
}
