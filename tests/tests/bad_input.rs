//! Bad input at both services: every request that is wrong gets a bounded, clear error and
//! changes nothing, and no request can make a service allocate far beyond its own size.
//! Each test reproduces a defect found by review (issue 12), named in its comment.

use kubestore_proto::{
    core::v1::{CreatePodRequest, DeletePodRequest, GetPodRequest, Pod},
    meta::v1::{DeleteOptions, ObjectMeta, OwnerReference},
    storage::v1::{CreateRequest, UpdateStart},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{NS, create_pod, pod, reason},
    raw,
    services::{channel, scrape},
    update::{Reply, guaranteed_update},
};
use prost::Message;
use tonic::Code;
use tonic_types::StatusExt;

/// etcd's current revision, read directly.
async fn etcd_revision(cluster: &Cluster) -> i64 {
    let mut c = cluster.etcd.client().await;
    c.get("/", None)
        .await
        .expect("etcd get")
        .header()
        .map_or(0, |h| h.revision())
}

/// Defect 1: a 2 MB Pods/Create whose metadata held a million empty owner references took
/// ~2 GB of registry-svc memory (every violation allocated, rendered and copied), and later
/// still ~226 MiB (the million structs it decoded into).
#[tokio::test(flavor = "multi_thread")]
async fn a_million_owner_references_cost_little_memory_and_one_short_error() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("refs", "node-1");
    p.metadata.as_mut().expect("meta").owner_references =
        vec![OwnerReference::default(); 1_000_000];
    let request = CreatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    };
    assert!(
        request.encoded_len() >= 2_000_000,
        "{}",
        request.encoded_len()
    );
    let before = etcd_revision(&cluster).await;
    raw::reset_peak_rss();
    let base = raw::rss_mib();
    let e = pods
        .create(request)
        .await
        .expect_err("too many owner references");
    let grown = raw::peak_rss_mib().saturating_sub(base);
    eprintln!("a million owner references: peak RSS +{grown} MiB");
    // Refused before it is decoded (`kubestore_proto::amplification`), naming the field.
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "BadRequest")
    );
    assert!(
        e.message()
            .contains("1000000 of them at metadata.ownerReferences"),
        "{}",
        e.message()
    );
    // The request was built (a million structs, ~100 MB) before `base`; what the call costs is
    // its encoding and its bytes on each side: far under 50 times its 2 MB (before the bound,
    // registry-svc alone grew by 226 MiB decoding it).
    assert!(grown < 100, "peak RSS grew by {grown} MiB");
    assert_eq!(etcd_revision(&cluster).await, before, "nothing written");
}

/// Defect 1 (storage-svc): metadata was decoded before the 1.5 MiB size check, so a large
/// object full of repeated metadata fields cost hundreds of MB before being refused.
#[tokio::test(flavor = "multi_thread")]
async fn storage_checks_the_size_before_decoding() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let p = Pod {
        metadata: Some(ObjectMeta {
            name: "big".into(),
            finalizers: vec![String::new(); 900_000],
            ..Default::default()
        }),
        ..Default::default()
    };
    let object = p.encode_to_vec();
    assert!(object.len() > 1_572_864 && object.len() < 2 << 20);
    let before = etcd_revision(&cluster).await;
    raw::reset_peak_rss();
    let base = raw::rss_mib();
    let e = c
        .create(CreateRequest {
            key: "/pods/default/big".into(),
            object,
            ..Default::default()
        })
        .await
        .expect_err("too large");
    let grown = raw::peak_rss_mib().saturating_sub(base);
    eprintln!("an oversized object at storage-svc: peak RSS +{grown} MiB");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains("object is too large"),
        "{}",
        e.message()
    );
    assert!(grown < 64, "peak RSS grew by {grown} MiB");
    assert_eq!(etcd_revision(&cluster).await, before);
}

/// Defect 6: ~60 violations made trailers over the 16 KiB that gRPC C-core clients accept, and
/// `Pods/Get` with a 6,000-character name answered INTERNAL "h2 protocol error".
#[tokio::test(flavor = "multi_thread")]
async fn errors_fit_in_every_clients_trailers() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("labels", "node-1");
    let labels = &mut p.metadata.as_mut().expect("meta").labels;
    for i in 0..200 {
        labels.insert(
            format!("bad key {i} {}!", "é".repeat(40)),
            "bad value!".into(),
        );
    }
    let e = create_pod(&mut pods, p).await.expect_err("invalid labels");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().ends_with("more]"), "{}", e.message());
    // grpc-message is percent-encoded (non-ASCII bytes triple), details are base64.
    let trailers = e.message().len() * 3 + e.details().len() * 4 / 3;
    assert!(trailers < 12 * 1024, "{trailers} bytes of trailers");
    let violations = e
        .get_details_bad_request()
        .expect("BadRequest")
        .field_violations;
    assert!(violations.len() <= 21, "{}", violations.len());
    assert!(
        violations
            .last()
            .is_some_and(|v| v.description.contains("more violations")),
        "{violations:?}"
    );

    let long = "a".repeat(6000);
    let e = pods
        .get(GetPodRequest {
            namespace: NS.into(),
            name: long.clone(),
        })
        .await
        .expect_err("no such pod");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );
    assert!(e.message().len() <= 1024, "{}", e.message().len());
    let e = pods
        .delete(DeletePodRequest {
            namespace: NS.into(),
            name: long,
            options: None,
        })
        .await
        .expect_err("no such pod");
    assert_eq!(e.code(), Code::NotFound);
}

/// Defect 7: metric labels came from the request path, so made-up methods grew `/metrics`.
#[tokio::test(flavor = "multi_thread")]
async fn made_up_methods_share_one_metric_label() {
    let cluster = Cluster::full().await;
    // Every served method's series exist from the start; what 1,000 made-up paths may add is
    // the one `unknown` method's series (a histogram among them, a few KiB) and whatever the
    // calls' own work records, not a series each (that would be 100 KiB and more).
    let mut before = Vec::new();
    for addr in [
        cluster.registry.as_ref().expect("registry").metrics_addr,
        cluster.storage.metrics_addr,
    ] {
        before.push(scrape(addr).await.len());
    }
    for url in [
        cluster.registry.as_ref().expect("registry").url(),
        cluster.storage.url(),
    ] {
        let ch = channel(&url).await;
        for i in 0..1000 {
            let e = raw::call(
                ch.clone(),
                &format!("/made.up.Service{i}/Method{i}"),
                vec![],
            )
            .await
            .expect_err("no such method");
            assert_eq!(e.code(), Code::Unimplemented);
        }
    }
    for (addr, before) in [
        cluster.registry.as_ref().expect("registry").metrics_addr,
        cluster.storage.metrics_addr,
    ]
    .into_iter()
    .zip(before)
    {
        let text = scrape(addr).await;
        assert!(!text.contains("made.up"), "path leaked into labels");
        assert!(
            text.contains(
                r#"grpc_server_handled_total{grpc_type="unary",grpc_service="unknown",grpc_method="unknown",grpc_code="UNIMPLEMENTED"} 1000"#
            ),
            "{text}"
        );
        assert!(
            text.len() < before + 16 * 1024,
            "{before} bytes before, {} after",
            text.len()
        );
    }
}

/// Defect 9: a huge `ttl_seconds` panicked storage-svc (Instant overflow); inside a
/// GuaranteedUpdate the panic ended the stream with OK and no result.
#[tokio::test(flavor = "multi_thread")]
async fn ttls_beyond_etcds_maximum_are_invalid() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let object = kubestore_tests::fixtures_storage::cm("t", &[]).encode_to_vec();
    for ttl in [i64::MAX, 9_000_000_000] {
        let e = c
            .create(CreateRequest {
                key: "/configmaps/default/t".into(),
                object: object.clone(),
                ttl_seconds: ttl,
                dry_run: false,
            })
            .await
            .expect_err("ttl too long");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().contains("ttl_seconds must be at most"),
            "{}",
            e.message()
        );
    }
    c.create(CreateRequest {
        key: "/configmaps/default/t".into(),
        object: object.clone(),
        ttl_seconds: 0,
        dry_run: false,
    })
    .await
    .expect("create");
    let e = guaranteed_update(
        &mut c,
        UpdateStart {
            key: "/configmaps/default/t".into(),
            ..Default::default()
        },
        |s| {
            Reply::Write(
                s.object.clone().into_iter().chain([0x10, 0x01]).collect(),
                i64::MAX,
            )
        },
    )
    .await
    .expect_err("ttl too long");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    // The service is still there.
    kubestore_tests::fixtures_storage::get(&mut c, "/configmaps/default/t")
        .await
        .expect("get");
}

/// Defect 12: a grace period near i64::MAX stored a deletion timestamp in year -292 billion.
#[tokio::test(flavor = "multi_thread")]
async fn grace_periods_cannot_overflow_the_deletion_timestamp() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    create_pod(&mut pods, pod("g", "node-1"))
        .await
        .expect("create");
    let e = pods
        .delete(DeletePodRequest {
            namespace: NS.into(),
            name: "g".into(),
            options: Some(DeleteOptions {
                grace_period_seconds: Some(i64::MAX - 5),
                ..Default::default()
            }),
        })
        .await
        .expect_err("grace too long");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains("gracePeriodSeconds"),
        "{}",
        e.message()
    );
    let got = pods
        .get(GetPodRequest {
            namespace: NS.into(),
            name: "g".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert!(got.metadata.expect("meta").deletion_timestamp.is_none());
    let mut p = pod("h", "node-1");
    p.spec
        .as_mut()
        .expect("spec")
        .termination_grace_period_seconds = Some(i64::MAX);
    let e = create_pod(&mut pods, p).await.expect_err("invalid grace");
    assert!(
        e.message().contains("spec.terminationGracePeriodSeconds"),
        "{}",
        e.message()
    );
}

/// Defect 14: malformed protobuf was INTERNAL on both services, and a pod just under the
/// registry's message limit became INTERNAL inside storage.
#[tokio::test(flavor = "multi_thread")]
async fn malformed_and_oversized_messages_are_the_callers_fault() {
    let cluster = Cluster::full().await;
    let before = etcd_revision(&cluster).await;
    let registry = channel(&cluster.registry.as_ref().expect("registry").url()).await;
    let storage = channel(&cluster.storage.url()).await;
    for (ch, path, domain) in [
        (
            registry.clone(),
            "/core.v1.Pods/Create",
            "registry.kubestore.io",
        ),
        (
            storage.clone(),
            "/storage.v1.Storage/Create",
            "storage.kubestore.io",
        ),
    ] {
        for bad in [vec![0x12, 0x05, 0x01], vec![0x08], vec![0x0b, 0x0c, 0xff]] {
            let e = raw::call(ch.clone(), path, bad.clone())
                .await
                .expect_err("malformed");
            assert_eq!(e.code(), Code::InvalidArgument, "{path} {bad:?}: {e:?}");
            let info = e.get_details_error_info().expect("ErrorInfo");
            assert_eq!(
                (info.reason.as_str(), info.domain.as_str()),
                ("BadRequest", domain)
            );
        }
    }
    // 2 MB: under registry-svc's message limit, over what storage can hold.
    let mut pods = cluster.pods().await;
    let mut p = pod("big", "node-1");
    p.spec.as_mut().expect("spec").containers[0].image = "x".repeat(2_000_000);
    let e = create_pod(&mut pods, p).await.expect_err("too large");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "RequestEntityTooLarge")
    );
    assert!(
        e.message()
            .starts_with("Request entity too large: Pod \"big\""),
        "{}",
        e.message()
    );
    assert_eq!(etcd_revision(&cluster).await, before);
}

/// Defect 15: storage keys and wording leaked into registry messages
/// ("invalid request for key \"/pods/default/big\": ...").
#[tokio::test(flavor = "multi_thread")]
async fn registry_messages_never_name_storage_keys() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let created = create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let mut messages = Vec::new();
    // A uid precondition that storage (not the registry) finds failed.
    let mut wrong_uid = created.clone();
    wrong_uid.metadata.as_mut().expect("meta").uid = "someone-else".into();
    let e = pods
        .update(kubestore_proto::core::v1::UpdatePodRequest {
            namespace: NS.into(),
            pod: Some(wrong_uid),
            dry_run: false,
        })
        .await
        .expect_err("uid differs");
    assert_eq!(e.code(), Code::Aborted);
    assert!(
        e.message()
            .starts_with("Operation cannot be fulfilled on pods \"web\": "),
        "{}",
        e.message()
    );
    messages.push(e.message().to_string());
    let mut big = pod("big", "node-1");
    big.spec.as_mut().expect("spec").containers[0].image = "x".repeat(1_600_000);
    messages.push(
        create_pod(&mut pods, big)
            .await
            .expect_err("too large")
            .message()
            .to_string(),
    );
    messages.push(
        pods.get(GetPodRequest {
            namespace: NS.into(),
            name: "missing".into(),
        })
        .await
        .expect_err("missing")
        .message()
        .to_string(),
    );
    for m in &messages {
        assert!(!m.contains("/pods/") && !m.contains("key \""), "{m}");
    }
}
