//! Custom kinds end to end, through registry-svc and storage-svc on real etcd: the CronTab
//! definition of the Kubernetes docs (its manifest, as JSON) is registered, established and
//! served; its objects are created, read, listed, watched, updated (status subresource rules,
//! generation), validated against the schema, and deleted; a second registry-svc serves the
//! definition at once, before its watch brings it; deleting the definition refuses creates
//! and deletes its objects first (whether or not a version is served), waiting for any held
//! by their finalizers.

use std::time::{Duration, Instant};

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
        DeleteCustomObjectRequest, DeleteCustomResourceDefinitionRequest, GetCustomObjectRequest,
        GetCustomResourceDefinitionRequest, ListCustomObjectsRequest, UpdateCustomObjectRequest,
        WatchCustomObjectsRequest, custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    meta::v1::{ListOptions, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{crontab_crd, register_established as register, to_json},
    reason,
    services::{channel, spawn_registry, wait_serving},
    watch_gate::WatchGate,
};
use prost::Message;
use registry_svc::custom::object::CustomObject;
use serde_json::{Value, json};
use tonic::{Code, Status, transport::Channel};

const NS: &str = "default";

fn to_struct(v: Value) -> pbjson_types::Struct {
    serde_json::from_value(v).expect("a JSON object")
}

/// Creates a CronTab: once, with no retry. A replica serves an established definition at once,
/// whether or not its definitions watch brought it yet (it reads a kind it does not know from
/// storage before it refuses it), so a NOT_FOUND here is a failure, not a lag to wait out.
async fn create(c: &mut CustomObjectsClient<Channel>, object: Value) -> Result<Value, Status> {
    create_with(c, object, false).await
}

async fn create_with(
    c: &mut CustomObjectsClient<Channel>,
    object: Value,
    dry_run: bool,
) -> Result<Value, Status> {
    c.create(CreateCustomObjectRequest {
        group: "stable.example.com".into(),
        version: "v1".into(),
        plural: "crontabs".into(),
        namespace: NS.into(),
        object: Some(to_struct(object)),
        dry_run,
    })
    .await
    .map(|r| to_json(&r.into_inner()))
}

async fn get_tab(c: &mut CustomObjectsClient<Channel>, name: &str) -> Result<Value, Status> {
    c.get(GetCustomObjectRequest {
        group: "stable.example.com".into(),
        version: "v1".into(),
        plural: "crontabs".into(),
        namespace: NS.into(),
        name: name.into(),
    })
    .await
    .map(|r| to_json(&r.into_inner()))
}

/// The definition `name` as stored, None once it is gone.
async fn definition(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    name: &str,
) -> Option<CustomResourceDefinition> {
    match defs
        .get(GetCustomResourceDefinitionRequest { name: name.into() })
        .await
    {
        Ok(d) => Some(d.into_inner()),
        Err(e) if e.code() == Code::NotFound => None,
        Err(e) => panic!("get {name}: {e:?}"),
    }
}

/// Waits (15 s at most) until the definition `name` is gone.
async fn wait_gone(defs: &mut CustomResourceDefinitionsClient<Channel>, name: &str) {
    let until = Instant::now() + Duration::from_secs(15);
    while definition(defs, name).await.is_some() {
        assert!(Instant::now() < until, "the definition was never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The etcd keys of CronTabs (storage's own fence key, no object, left out).
async fn crontab_keys(cluster: &Cluster) -> Vec<String> {
    let mut etcd = cluster.etcd.client().await;
    let left = etcd
        .get(
            CRONTABS_PREFIX,
            Some(
                etcd_client::GetOptions::new()
                    .with_prefix()
                    .with_keys_only(),
            ),
        )
        .await
        .expect("etcd");
    left.kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .filter(|k| !k.contains("kubestore-fence"))
        .collect()
}

/// Rewrites the CronTab definition's record in etcd, around the API, as `change` says, with
/// its generation moved as a spec change through the API moves it (replicas reuse a
/// generation's schemas).
async fn rewrite_stored_definition(
    cluster: &Cluster,
    change: impl FnOnce(&mut CustomResourceDefinition),
) {
    let mut etcd = cluster.etcd.client().await;
    let stored = etcd
        .get(CRONTAB_DEFINITION_KEY, None)
        .await
        .expect("etcd get")
        .take_kvs()
        .into_iter()
        .next()
        .expect("the definition's record");
    let mut crd = CustomResourceDefinition::decode(stored.value()).expect("a definition");
    change(&mut crd);
    crd.metadata.as_mut().expect("metadata").generation += 1;
    etcd.put(CRONTAB_DEFINITION_KEY, crd.encode_to_vec(), None)
        .await
        .expect("etcd put");
}

/// Where CronTabs live in etcd.
const CRONTABS_PREFIX: &str = "/registry/stable.example.com/crontabs/";
/// Where the CronTab definition lives in etcd.
const CRONTAB_DEFINITION_KEY: &str =
    "/registry/apiextensions.k8s.io/customresourcedefinitions/crontabs.stable.example.com";
/// The CronTab definition's name.
const CRONTABS: &str = "crontabs.stable.example.com";

fn crontab(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": spec,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_definition_serves_its_kind_with_the_stores_semantics() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let crd = register(&mut defs, crontab_crd()).await;
    let status = crd.status.expect("status");
    assert_eq!(status.stored_versions, vec!["v1".to_string()]);
    let accepted = status.accepted_names.expect("accepted names");
    assert_eq!(
        (accepted.kind.as_str(), accepted.list_kind.as_str()),
        ("CronTab", "CronTabList")
    );

    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let mut watch = objects
        .watch(WatchCustomObjectsRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            options: Some(ListOptions {
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    let created = create(
        &mut objects,
        crontab(
            "my-new-cron-object",
            json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 1, "unknown": "pruned"}),
        ),
    )
    .await
    .expect("create");
    // System fields, generation 1, unknown fields pruned.
    let meta = &created["metadata"];
    assert!(!meta["uid"].as_str().unwrap_or("").is_empty(), "{created}");
    assert!(!meta["resourceVersion"].as_str().unwrap_or("").is_empty());
    assert!(meta["creationTimestamp"].is_string());
    assert_eq!(meta["generation"], json!(1));
    assert_eq!(created["spec"]["replicas"], json!(1));
    assert!(
        created["spec"].get("unknown").is_none(),
        "pruned: {created}"
    );
    assert_eq!(created["apiVersion"], json!("stable.example.com/v1"));
    assert_eq!(created["kind"], json!("CronTab"));

    // Schema violations: INVALID_ARGUMENT, Invalid, one violation per field in upstream's words.
    let e = create(
        &mut objects,
        crontab(
            "bad",
            json!({"cronSpec": "not a cron spec", "replicas": "string"}),
        ),
    )
    .await
    .expect_err("invalid");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains(
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        ),
        "{e:?}"
    );
    assert!(
        e.message().contains("spec.cronSpec in body should match"),
        "{e:?}"
    );
    let e = create(
        &mut objects,
        crontab("big", json!({"cronSpec": "* * * * *", "replicas": 11})),
    )
    .await
    .expect_err("too many replicas");
    assert!(
        e.message()
            .contains("spec.replicas in body should be less than or equal to 10"),
        "{e:?}"
    );

    let ev = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("an event in time")
        .expect("event")
        .expect("open");
    assert_eq!(ev.r#type, WatchEventType::Added as i32);
    assert_eq!(
        to_json(ev.object.as_ref().expect("object"))["metadata"]["name"],
        json!("my-new-cron-object")
    );

    let got = objects
        .get(GetCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "my-new-cron-object".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(to_json(&got), created);

    // Update: the status is the status subresource's; spec changes bump the generation.
    let mut changed = created.clone();
    changed["spec"]["replicas"] = json!(3);
    changed["status"] = json!({"replicas": 7});
    let updated = to_json(
        &objects
            .update(UpdateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(to_struct(changed)),
                dry_run: false,
            })
            .await
            .expect("update")
            .into_inner(),
    );
    assert_eq!(updated["spec"]["replicas"], json!(3));
    assert!(
        updated.get("status").is_none(),
        "status kept as stored: {updated}"
    );
    assert_eq!(updated["metadata"]["generation"], json!(2));
    let mut status_only = updated.clone();
    status_only["status"] = json!({"replicas": 3});
    status_only["spec"]["replicas"] = json!(9);
    let after_status = to_json(
        &objects
            .update_status(UpdateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(to_struct(status_only)),
                dry_run: false,
            })
            .await
            .expect("update status")
            .into_inner(),
    );
    assert_eq!(after_status["status"]["replicas"], json!(3));
    assert_eq!(after_status["spec"]["replicas"], json!(3), "spec kept");
    assert_eq!(after_status["metadata"]["generation"], json!(2));

    // An unknown kind, or version, is NOT_FOUND naming it.
    let e = objects
        .get(GetCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v2".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "x".into(),
        })
        .await
        .expect_err("v2 is not served");
    assert_eq!(e.code(), Code::NotFound);
    assert!(
        e.message().contains("stable.example.com/v2/crontabs"),
        "{e:?}"
    );

    // List with a label selector, and the object's removal.
    let list = objects
        .list(ListCustomObjectsRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: String::new(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(list.items.len(), 1);
    let deleted = objects
        .delete(DeleteCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "my-new-cron-object".into(),
            options: None,
        })
        .await
        .expect("delete")
        .into_inner();
    assert!(deleted.deleted, "custom kinds have no grace period");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_registry_serves_a_new_definition_before_its_watch_brings_it() {
    let cluster = Cluster::full().await;
    // The second replica reaches storage-svc through a gate that holds its watches back.
    let gate = WatchGate::start(&cluster.storage.url()).await;
    let second = spawn_registry(registry_svc::Config::default(), gate.url(), None);
    wait_serving(&second.url()).await;
    // Serving is not watching yet: the replica's definitions and namespaces watches (the two it
    // opens at start) must be open before they are held, or the definitions watch could start
    // after the write and learn the definition by its list, which would prove nothing.
    let opened = tokio::time::Instant::now() + Duration::from_secs(10);
    while gate.watches() < 2 {
        assert!(
            tokio::time::Instant::now() < opened,
            "the second replica opened {} watches",
            gate.watches()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    gate.hold();
    register(&mut defs, crontab_crd()).await;
    // Its definitions watch has not brought the definition: it serves the new kind at once
    // anyway, from a consistent read of the definition it does not know yet. One try: a
    // client that saw Established=True must not get a NOT_FOUND.
    let mut other = CustomObjectsClient::new(channel(&second.url()).await);
    let created = create(
        &mut other,
        crontab(
            "through-the-second",
            json!({"cronSpec": "* * * * *", "replicas": 2}),
        ),
    )
    .await
    .expect("the second replica serves the new kind at once");
    assert_eq!(created["metadata"]["name"], json!("through-the-second"));
    assert!(
        gate.delayed() > 0,
        "the second replica's definitions watch was not held back"
    );
    gate.release();
    // Once its watch catches up, it serves the kind as before.
    let got = get_tab(&mut other, "through-the-second")
        .await
        .expect("served after its watch caught up");
    assert_eq!(got["spec"]["replicas"], json!(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminating_definition_refuses_creates_and_waits_for_its_objects() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register(&mut defs, crontab_crd()).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let mut held = crontab("held", json!({"cronSpec": "* * * * *"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&mut objects, held).await.expect("create held");
    create(
        &mut objects,
        crontab("plain", json!({"cronSpec": "* * * * *"})),
    )
    .await
    .expect("create plain");
    let r = defs
        .delete(DeleteCustomResourceDefinitionRequest {
            name: CRONTABS.into(),
            options: None,
        })
        .await
        .expect("delete definition")
        .into_inner();
    assert!(!r.deleted, "held until its objects are gone");

    // Creates are refused once the replica has seen the deletion (its watch brings it; a dry
    // run tells when, creating nothing), with upstream's words.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match create_with(
            &mut objects,
            crontab("late", json!({"cronSpec": "* * * * *"})),
            true,
        )
        .await
        {
            Err(e) if e.code() == Code::FailedPrecondition => break,
            Ok(_) => {}
            Err(e) => panic!("dry run: {e:?}"),
        }
        assert!(
            Instant::now() < until,
            "creates are still accepted while the definition terminates"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e = create(
        &mut objects,
        crontab("late", json!({"cronSpec": "* * * * *"})),
    )
    .await
    .expect_err("create while terminating");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::FailedPrecondition, "Forbidden"),
        "{e:?}"
    );
    assert!(
        e.message().contains(
            "create not allowed while custom resource definition crontabs.stable.example.com is terminating"
        ),
        "{e:?}"
    );
    assert_eq!(
        get_tab(&mut objects, "late")
            .await
            .expect_err("not created")
            .code(),
        Code::NotFound
    );

    // The objects go; the one its finalizer holds keeps the definition (and its cleanup
    // finalizer) for as long as it stays: checked over several of the controller's passes.
    let until = Instant::now() + Duration::from_secs(15);
    while get_tab(&mut objects, "plain").await.is_ok() {
        assert!(Instant::now() < until, "the plain object was never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let d = definition(&mut defs, CRONTABS)
            .await
            .expect("the definition waits for the held object");
        assert_eq!(
            d.metadata.as_ref().expect("meta").finalizers,
            vec!["customresourcecleanup.apiextensions.k8s.io".to_string()]
        );
    }
    // Reads and updates still work: the held object is released, and then everything goes.
    let mut h = get_tab(&mut objects, "held").await.expect("held stays");
    assert!(h["metadata"]["deletionTimestamp"].is_string(), "{h}");
    h["metadata"]["finalizers"] = json!([]);
    objects
        .update(UpdateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(to_struct(h)),
            dry_run: false,
        })
        .await
        .expect("release the held object");
    wait_gone(&mut defs, CRONTABS).await;
    assert_eq!(crontab_keys(&cluster).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_definition_deletes_its_objects_even_when_no_version_is_served() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register(&mut defs, crontab_crd()).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let mut held = crontab("held", json!({"cronSpec": "* * * * *"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&mut objects, held).await.expect("create held");
    for i in 0..3 {
        create(
            &mut objects,
            crontab(&format!("c{i}"), json!({"cronSpec": "* * * * *"})),
        )
        .await
        .expect("create");
    }
    // The storage version's schema stops building: the definition's record is rewritten in
    // etcd, around the API (which would refuse it), with a root that is not an object. No
    // version of the kind is served any more; its objects are still in storage. The record
    // carries the cleanup finalizer already: the API's first Delete adds it with an update
    // that validates the definition, which this record fails; with the finalizer there, the
    // Delete below only marks the definition for deletion, as for any definition.
    rewrite_stored_definition(&cluster, |crd| {
        crd.metadata
            .as_mut()
            .expect("metadata")
            .finalizers
            .push("customresourcecleanup.apiextensions.k8s.io".into());
        for v in &mut crd.spec.as_mut().expect("spec").versions {
            let schema = &mut v.schema.as_mut().expect("a schema").open_api_v3_schema;
            let mut json: serde_json::Value = serde_json::from_str(schema).expect("JSON text");
            json["type"] = json!("string");
            *schema = json.to_string();
        }
    })
    .await;
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match get_tab(&mut objects, "c0").await {
            Err(e) if e.code() == Code::NotFound => break,
            Ok(_) => {}
            Err(e) => panic!("get: {e:?}"),
        }
        assert!(Instant::now() < until, "the broken version is still served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(crontab_keys(&cluster).await.len(), 4);

    let r = defs
        .delete(DeleteCustomResourceDefinitionRequest {
            name: CRONTABS.into(),
            options: None,
        })
        .await
        .expect("delete definition")
        .into_inner();
    assert!(!r.deleted, "held until its objects are gone");
    // Its objects go all the same, but the one its finalizer holds (marked for deletion) keeps
    // the definition.
    let held_key = format!("{CRONTABS_PREFIX}{NS}/held");
    let until = Instant::now() + Duration::from_secs(15);
    while crontab_keys(&cluster).await != vec![held_key.clone()] {
        assert!(
            Instant::now() < until,
            "the objects of a definition with no served version were not deleted: {:?}",
            crontab_keys(&cluster).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let d = definition(&mut defs, CRONTABS)
            .await
            .expect("the definition waits for the held object");
        assert_eq!(
            d.metadata.as_ref().expect("meta").finalizers,
            vec!["customresourcecleanup.apiextensions.k8s.io".to_string()]
        );
    }
    // The held object is released (in etcd: its kind is not served) and goes on the
    // controller's next pass, and the definition with it.
    let mut etcd = cluster.etcd.client().await;
    let raw = etcd
        .get(held_key.as_str(), None)
        .await
        .expect("etcd get")
        .take_kvs()
        .into_iter()
        .next()
        .expect("the held object");
    let mut object = CustomObject::decode(raw.value()).expect("a custom object");
    let meta = object.metadata.as_mut().expect("metadata");
    assert!(meta.deletion_timestamp.is_some(), "marked for deletion");
    meta.finalizers.clear();
    etcd.put(held_key.as_str(), object.encode_to_vec(), None)
        .await
        .expect("etcd put");
    wait_gone(&mut defs, CRONTABS).await;
    assert_eq!(crontab_keys(&cluster).await, Vec::<String>::new());

    // A definition of the same name, created again, finds none of them.
    register(&mut defs, crontab_crd()).await;
    let listed = objects
        .list(ListCustomObjectsRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: String::new(),
            options: None,
        })
        .await
        .expect("list")
        .into_inner();
    let names: Vec<Value> = listed
        .items
        .iter()
        .map(|o| to_json(o)["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, Vec::<Value>::new(), "the old objects are back");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_definition_deletes_its_objects_first() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register(&mut defs, crontab_crd()).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    for i in 0..5 {
        create(
            &mut objects,
            crontab(&format!("c{i}"), json!({"cronSpec": "* * * * *"})),
        )
        .await
        .expect("create");
    }
    let r = defs
        .delete(DeleteCustomResourceDefinitionRequest {
            name: "crontabs.stable.example.com".into(),
            options: None,
        })
        .await
        .expect("delete definition")
        .into_inner();
    assert!(!r.deleted, "held until its objects are gone");
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        match defs
            .get(GetCustomResourceDefinitionRequest {
                name: "crontabs.stable.example.com".into(),
            })
            .await
        {
            Err(e) if e.code() == Code::NotFound => break,
            Err(e) => panic!("get: {e:?}"),
            Ok(_) => {}
        }
        assert!(Instant::now() < until, "the definition was never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The kind is no longer served (once the replica's watch brought the deletion), and
    // storage holds none of its objects.
    let until = Instant::now() + Duration::from_secs(5);
    let e = loop {
        match objects
            .list(ListCustomObjectsRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: String::new(),
                options: None,
            })
            .await
        {
            Err(e) => break e,
            Ok(l) => assert!(
                l.get_ref().items.is_empty(),
                "objects listed after the deletion: {l:?}"
            ),
        }
        assert!(Instant::now() < until, "still served after its deletion");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );
    assert_eq!(
        crontab_keys(&cluster).await,
        Vec::<String>::new(),
        "every object deleted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_definition_whose_names_are_taken_is_not_served_and_bad_ones_are_refused() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register(&mut defs, crontab_crd()).await;
    // Another definition of the group whose kind (and short name) the first holds.
    let mut other = crontab_crd();
    other.metadata.as_mut().expect("meta").name = "crontabs2.stable.example.com".into();
    let names = other
        .spec
        .as_mut()
        .expect("spec")
        .names
        .as_mut()
        .expect("names");
    names.plural = "crontabs2".into();
    names.singular = "crontab2".into();
    defs.create(CreateCustomResourceDefinitionRequest {
        custom_resource_definition: Some(other),
        dry_run: false,
    })
    .await
    .expect("create the second definition");
    let until = Instant::now() + Duration::from_secs(10);
    let condition = loop {
        let crd = defs
            .get(GetCustomResourceDefinitionRequest {
                name: "crontabs2.stable.example.com".into(),
            })
            .await
            .expect("get")
            .into_inner();
        if let Some(c) = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.r#type == "NamesAccepted"))
        {
            break c.clone();
        }
        assert!(Instant::now() < until, "names never judged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(condition.status, "False", "{condition:?}");
    // Upstream reports the last conflict found: kinds come after short names.
    assert_eq!(condition.reason, "ListKindConflict", "{condition:?}");
    assert!(
        condition.message.contains("is already in use"),
        "{condition:?}"
    );
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let e = objects
        .list(ListCustomObjectsRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs2".into(),
            namespace: String::new(),
            options: None,
        })
        .await
        .expect_err("not served");
    assert_eq!(e.code(), Code::NotFound);

    // A built-in kind's names are taken too, in any group: plural `pods`, short name `cm`.
    for (plural, short, want) in [
        ("pods", "zz", "PluralConflict"),
        ("widgets", "cm", "ShortNamesConflict"),
    ] {
        let group = format!("{plural}.example.com");
        let name = format!("{plural}.{group}");
        let mut clash = crontab_crd();
        clash.metadata.as_mut().expect("meta").name = name.clone();
        let spec = clash.spec.as_mut().expect("spec");
        spec.group = group;
        let names = spec.names.as_mut().expect("names");
        names.plural = plural.into();
        names.singular = format!("{plural}one");
        names.kind = "Widget".into();
        names.list_kind = String::new();
        names.short_names = vec![short.into()];
        defs.create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(clash),
            dry_run: false,
        })
        .await
        .expect("create a clashing definition");
        let until = Instant::now() + Duration::from_secs(10);
        let condition = loop {
            let crd = defs
                .get(GetCustomResourceDefinitionRequest { name: name.clone() })
                .await
                .expect("get")
                .into_inner();
            if let Some(c) = crd
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.r#type == "NamesAccepted"))
            {
                break c.clone();
            }
            assert!(Instant::now() < until, "names never judged");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", want),
            "{condition:?}"
        );
    }

    // Names as upstream validates them: DNS labels, a CamelCase kind.
    let mut bad = crontab_crd();
    bad.metadata.as_mut().expect("meta").name = "Cron_Tabs.stable.example.com".into();
    let names = bad
        .spec
        .as_mut()
        .expect("spec")
        .names
        .as_mut()
        .expect("names");
    names.plural = "Cron_Tabs".into();
    names.kind = "Cron_Tab".into();
    let e = defs
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(bad),
            dry_run: false,
        })
        .await
        .expect_err("invalid names");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let fields: Vec<String> = {
        use tonic_types::StatusExt;
        e.get_details_bad_request()
            .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
            .unwrap_or_default()
    };
    for field in ["spec.names.plural", "spec.names.kind", "metadata.name"] {
        assert!(fields.iter().any(|f| f == field), "{field} in {fields:?}");
    }

    // Static validation: a name that is not <plural>.<group>, no storage version.
    let mut bad = crontab_crd();
    bad.metadata.as_mut().expect("meta").name = "wrong.stable.example.com".into();
    for v in &mut bad.spec.as_mut().expect("spec").versions {
        v.storage = false;
    }
    let e = defs
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(bad),
            dry_run: false,
        })
        .await
        .expect_err("invalid");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message()
            .contains("must be spec.names.plural+\".\"+spec.group"),
        "{e:?}"
    );
    assert!(
        e.message()
            .contains("must have exactly one version marked as storage version"),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_served_versions_store_in_one_and_answer_in_the_one_asked() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let mut crd = crontab_crd();
    let spec = crd.spec.as_mut().expect("spec");
    let mut beta = spec.versions[0].clone();
    beta.name = "v1beta1".into();
    beta.storage = false;
    spec.versions.insert(0, beta);
    register(&mut defs, crd).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let get = |version: &str| GetCustomObjectRequest {
        group: "stable.example.com".into(),
        version: version.into(),
        plural: "crontabs".into(),
        namespace: NS.into(),
        name: "two".into(),
    };
    // Created through v1beta1 (retrying while the kind is being served)...
    let until = Instant::now() + Duration::from_secs(2);
    let created = loop {
        let r = objects
            .create(CreateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1beta1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(to_struct(json!({
                    "apiVersion": "stable.example.com/v1beta1", "kind": "CronTab",
                    "metadata": {"name": "two"}, "spec": {"cronSpec": "* * * * *"}}))),
                dry_run: false,
            })
            .await;
        match r {
            Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break to_json(&r.expect("create through v1beta1").into_inner()),
        }
    };
    assert_eq!(created["apiVersion"], json!("stable.example.com/v1beta1"));
    // ... read in either version, stored in the storage version.
    let v1 = to_json(&objects.get(get("v1")).await.expect("get v1").into_inner());
    assert_eq!(v1["apiVersion"], json!("stable.example.com/v1"));
    assert_eq!(v1["spec"], created["spec"]);
    let beta = to_json(
        &objects
            .get(get("v1beta1"))
            .await
            .expect("get v1beta1")
            .into_inner(),
    );
    assert_eq!(beta["apiVersion"], json!("stable.example.com/v1beta1"));
    let mut etcd = cluster.etcd.client().await;
    let stored = etcd
        .get("/registry/stable.example.com/crontabs/default/two", None)
        .await
        .expect("etcd");
    let value = stored.kvs().first().expect("stored").value().to_vec();
    let text = String::from_utf8_lossy(&value);
    assert!(
        text.contains("\"apiVersion\":\"stable.example.com/v1\""),
        "{text}"
    );
    // An apiVersion that is not the request's is refused.
    let e = objects
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(to_struct(json!({
                "apiVersion": "stable.example.com/v1beta1", "kind": "CronTab",
                "metadata": {"name": "mismatch"}, "spec": {}}))),
            dry_run: false,
        })
        .await
        .expect_err("mismatched apiVersion");
    assert_eq!(e.code(), Code::InvalidArgument);
}

/// A definition with CEL rules: `self` and transition rules (`oldSelf`), message and reason.
fn widget_crd(rule: &str) -> CustomResourceDefinition {
    kubestore_tests::fixtures_custom::definition(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {"rule": rule},
                            {"rule": "self.class == oldSelf.class", "message": "class is immutable"}
                        ],
                        "properties": {
                            "class": {"type": "string"},
                            "min": {"type": "integer"},
                            "replicas": {"type": "integer"}
                        }
                    }}
                }}
            }]
        }
    }))
}

#[tokio::test(flavor = "multi_thread")]
async fn cel_rules_validate_writes_and_transitions() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    // A rule that does not compile refuses the definition.
    let e = defs
        .create(CreateCustomResourceDefinitionRequest {
            custom_resource_definition: Some(widget_crd("self.min <=")),
            dry_run: false,
        })
        .await
        .expect_err("a rule that does not compile");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("x-kubernetes-validations[0].rule"),
        "{e:?}"
    );
    register(&mut defs, widget_crd("self.min <= self.replicas")).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let request = |object: Value| CreateCustomObjectRequest {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        namespace: NS.into(),
        object: Some(to_struct(object)),
        dry_run: false,
    };
    let widget = |min: i64, replicas: i64, class: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"min": min, "replicas": replicas, "class": class}})
    };
    let until = Instant::now() + Duration::from_secs(2);
    let e = loop {
        match objects.create(request(widget(3, 1, "a"))).await {
            Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            r => break r.expect_err("the rule fails"),
        }
    };
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message()
            .contains("spec: Invalid value: \"object\": failed rule: self.min <= self.replicas"),
        "{e:?}"
    );
    let created = to_json(
        &objects
            .create(request(widget(1, 2, "a")))
            .await
            .expect("valid")
            .into_inner(),
    );
    let mut changed = created.clone();
    changed["spec"]["class"] = json!("b");
    let e = objects
        .update(UpdateCustomObjectRequest {
            group: "example.com".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            namespace: NS.into(),
            object: Some(to_struct(changed)),
            dry_run: false,
        })
        .await
        .expect_err("transition rule");
    assert!(e.message().contains("class is immutable"), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn selectable_fields_select_in_lists_and_watches() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    let mut crd = widget_crd("true");
    crd.spec.as_mut().expect("spec").versions[0].selectable_fields =
        vec![kubestore_proto::apiextensions::v1::SelectableField {
            json_path: ".spec.class".into(),
        }];
    register(&mut defs, crd).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    for (name, class) in [("a1", "a"), ("a2", "a"), ("b1", "b")] {
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let r = objects
                .create(CreateCustomObjectRequest {
                    group: "example.com".into(),
                    version: "v1".into(),
                    plural: "widgets".into(),
                    namespace: NS.into(),
                    object: Some(to_struct(json!({
                        "apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": name}, "spec": {"class": class}}))),
                    dry_run: false,
                })
                .await;
            match r {
                Err(e) if e.code() == Code::NotFound && Instant::now() < until => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                r => {
                    r.expect("create");
                    break;
                }
            }
        }
    }
    let list = |selector: &str| ListCustomObjectsRequest {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        namespace: String::new(),
        options: Some(ListOptions {
            field_selector: selector.into(),
            ..Default::default()
        }),
    };
    let names = |l: kubestore_proto::apiextensions::v1::CustomObjectList| -> Vec<Value> {
        l.items
            .iter()
            .map(|o| to_json(o)["metadata"]["name"].clone())
            .collect()
    };
    let a = objects
        .list(list("spec.class=a"))
        .await
        .expect("list")
        .into_inner();
    assert_eq!(names(a), vec![json!("a1"), json!("a2")]);
    let not_a = objects
        .list(list("spec.class!=a"))
        .await
        .expect("list")
        .into_inner();
    assert_eq!(names(not_a), vec![json!("b1")]);
    let e = objects
        .list(list("spec.other=x"))
        .await
        .expect_err("not selectable");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message()
            .contains("field label not supported: spec.other"),
        "{e:?}"
    );
    let mut w = objects
        .watch(WatchCustomObjectsRequest {
            group: "example.com".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            namespace: NS.into(),
            options: Some(ListOptions {
                field_selector: "spec.class=b".into(),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    let ev = tokio::time::timeout(Duration::from_secs(5), w.message())
        .await
        .expect("in time")
        .expect("event")
        .expect("open");
    assert_eq!(
        to_json(ev.object.as_ref().expect("object"))["metadata"]["name"],
        json!("b1")
    );
}

/// A definition stored before schemas travelled as JSON text (its `openAPIV3Schema` a
/// `google.protobuf.Struct` in field 1) is read as text, and served by its schema: the record
/// is rewritten in etcd around the API in the old form, with a lower `maximum`, which objects
/// then meet.
#[tokio::test(flavor = "multi_thread")]
#[allow(deprecated)]
async fn a_definition_stored_with_a_struct_schema_reads_as_text_and_serves() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register(&mut defs, crontab_crd()).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let five = || crontab("five", json!({"cronSpec": "* * * * *", "replicas": 5}));
    create_with(&mut objects, five(), true)
        .await
        .expect("5 replicas are within the schema's maximum of 10");

    let mut want = None;
    rewrite_stored_definition(&cluster, |crd| {
        for v in &mut crd.spec.as_mut().expect("spec").versions {
            let s = v.schema.as_mut().expect("a schema");
            let mut json: Value = serde_json::from_str(&s.open_api_v3_schema).expect("JSON text");
            json["properties"]["spec"]["properties"]["replicas"]["maximum"] = json!(3);
            s.open_api_v3_schema.clear();
            s.open_api_v3_schema_struct = Some(to_struct(json.clone()));
            want = Some(json);
        }
    })
    .await;

    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match create_with(&mut objects, five(), true).await {
            Err(e) if e.code() == Code::InvalidArgument => {
                assert!(
                    e.message().contains("should be less than or equal to 3"),
                    "{e:?}"
                );
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("create: {e:?}"),
        }
        assert!(
            Instant::now() < until,
            "the schema stored as a Struct is not served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let d = definition(&mut defs, CRONTABS)
        .await
        .expect("the definition");
    let v = &d.spec.as_ref().expect("spec").versions[0];
    let s = v.schema.as_ref().expect("a schema");
    assert_eq!(s.open_api_v3_schema_struct, None, "never written");
    assert_eq!(
        kubestore_tests::fixtures_custom::schema_of(v),
        want.expect("a version"),
        "read as the JSON text of the stored Struct"
    );
}

/// A schema's text that is not a JSON object is refused with the field it is in, and nothing
/// is stored.
#[tokio::test(flavor = "multi_thread")]
async fn a_schema_that_is_not_json_text_of_an_object_is_refused() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    for (text, why) in [
        (
            "{\"type\": \"object\"",
            "must be JSON text of an object: EOF",
        ),
        ("[1]", "must be JSON text of an object"),
        ("\"object\"", "must be JSON text of an object"),
    ] {
        let mut crd = crontab_crd();
        crd.spec.as_mut().expect("spec").versions[0]
            .schema
            .as_mut()
            .expect("a schema")
            .open_api_v3_schema = text.into();
        let e = defs
            .create(CreateCustomResourceDefinitionRequest {
                custom_resource_definition: Some(crd),
                dry_run: false,
            })
            .await
            .expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{text}: {e:?}");
        assert!(
            e.message()
                .contains("spec.versions[0].schema.openAPIV3Schema: Invalid value: ")
                && e.message().contains(why),
            "{text}: {e:?}"
        );
        assert_eq!(reason(&e), "Invalid", "{e:?}");
    }
    assert!(
        definition(&mut defs, CRONTABS).await.is_none(),
        "nothing stored"
    );
}
