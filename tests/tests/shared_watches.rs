//! Client watches of the same events share one storage-svc stream (`shared_watch`): twenty
//! registry watches from one resourceVersion cost storage one watch, each receives every event
//! in order, a member that stops reading is cut off alone while the others go on, a watch from
//! another version gets a stream of its own, and the stream ends with its last member; an
//! error from storage mid-stream ends every member with it.

use std::time::Duration;

use kubestore_proto::{
    core::v1::WatchConfigMapsRequest,
    meta::v1::{ListOptions, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{cm, create_cm_in, meta},
    fixtures_storage::raw_put,
    services::{sample, scrape},
};

const NS: &str = "shared";

async fn storage_watches(cluster: &Cluster) -> f64 {
    sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_watches_open",
    )
    .unwrap_or(0.0)
}

/// Waits (5 s at most) until storage serves `n` watches.
async fn until_storage_watches(cluster: &Cluster, n: f64) {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = storage_watches(cluster).await;
        if now == n {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "storage serves {now} watches, expected {n}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn watches_of_the_same_events_share_one_storage_stream() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let start = meta(
        &create_cm_in(&mut cms, NS, cm("start", &[]))
            .await
            .expect("create"),
    )
    .resource_version;
    let before = storage_watches(&cluster).await;
    let watch = |rv: String| {
        let cluster = &cluster;
        async move {
            cluster
                .config_maps()
                .await
                .watch(WatchConfigMapsRequest {
                    namespace: NS.into(),
                    options: Some(ListOptions {
                        resource_version: rv,
                        ..Default::default()
                    }),
                })
                .await
                .expect("watch")
                .into_inner()
        }
    };
    let mut members = Vec::new();
    for _ in 0..20 {
        members.push(watch(start.clone()).await);
    }
    until_storage_watches(&cluster, before + 1.0).await;

    let mut written = Vec::new();
    for i in 0..3 {
        let o = create_cm_in(&mut cms, NS, cm(&format!("a{i}"), &[]))
            .await
            .expect("create");
        written.push(meta(&o).resource_version);
    }
    for m in &mut members {
        for rv in &written {
            let e = tokio::time::timeout(Duration::from_secs(10), m.message())
                .await
                .expect("in time")
                .expect("ok")
                .expect("an event");
            assert_eq!(e.r#type, WatchEventType::Added as i32);
            assert_eq!(&meta(&e.object.expect("object")).resource_version, rv);
        }
    }

    // A watch from the version the members are at now joins them; one from an older version
    // needs a stream of its own (it must get a0..a2 again).
    let joined = watch(written[2].clone()).await;
    let mut older = watch(start.clone()).await;
    until_storage_watches(&cluster, before + 2.0).await;
    let e = tokio::time::timeout(Duration::from_secs(10), older.message())
        .await
        .expect("in time")
        .expect("ok")
        .expect("an event");
    assert_eq!(
        meta(&e.object.expect("object")).resource_version,
        written[0]
    );
    drop(older);
    members.push(joined);

    // One member stops reading: it alone is cut off; the others get every event. The events
    // are large (64 KiB), so that what the member does not read outgrows the HTTP/2 windows
    // between it and registry-svc and then its buffer there (4 MiB).
    let mut slow = members.pop().expect("a member");
    let mut fast = members.pop().expect("a member");
    drop(members);
    let writer = {
        let mut cms = cluster.config_maps().await;
        tokio::spawn(async move {
            let mut last = String::new();
            for i in 0..300 {
                let mut o = cm(&format!("b{i:03}"), &[]);
                o.data.insert("big".into(), "x".repeat(64 << 10));
                last = meta(&create_cm_in(&mut cms, NS, o).await.expect("create")).resource_version;
            }
            last
        })
    };
    let mut got = 0;
    while got < 300 {
        let e = tokio::time::timeout(Duration::from_secs(20), fast.message())
            .await
            .expect("in time")
            .expect("the reading member is not cut off")
            .expect("an event");
        assert_eq!(e.r#type, WatchEventType::Added as i32);
        got += 1;
    }
    writer.await.expect("writer");
    // What was already on its way to the slow member (HTTP/2 windows) comes first, then the
    // cut-off, well before the 300th event.
    let mut before_cut = 0;
    let cut = loop {
        match tokio::time::timeout(Duration::from_secs(10), slow.message())
            .await
            .expect("in time")
        {
            Ok(Some(_)) => before_cut += 1,
            Ok(None) => panic!("the slow member's watch ended without an error"),
            Err(status) => break status,
        }
    };
    assert_eq!(
        cut.code(),
        tonic::Code::ResourceExhausted,
        "{}",
        cut.message()
    );
    assert!(
        before_cut < 300,
        "{before_cut} events reached the slow member"
    );
    let registry = scrape(cluster.registry.as_ref().expect("registry").metrics_addr).await;
    assert!(sample(&registry, "registry_watches_shared_total").unwrap_or(0.0) >= 20.0);

    // The shared stream ends with its last member.
    drop(slow);
    drop(fast);
    until_storage_watches(&cluster, before).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_from_storage_ends_every_member_of_a_shared_stream() {
    const NS_ERR: &str = "shared-err";
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let start = meta(
        &create_cm_in(&mut cms, NS_ERR, cm("start", &[]))
            .await
            .expect("create"),
    )
    .resource_version;
    let before = storage_watches(&cluster).await;
    let mut members = Vec::new();
    for _ in 0..5 {
        members.push(
            cluster
                .config_maps()
                .await
                .watch(WatchConfigMapsRequest {
                    namespace: NS_ERR.into(),
                    options: Some(ListOptions {
                        resource_version: start.clone(),
                        ..Default::default()
                    }),
                })
                .await
                .expect("watch")
                .into_inner(),
        );
    }
    until_storage_watches(&cluster, before + 1.0).await;
    // Mid-stream: every member has events behind it.
    for i in 0..2 {
        let o = create_cm_in(&mut cms, NS_ERR, cm(&format!("a{i}"), &[]))
            .await
            .expect("create");
        for m in &mut members {
            let e = tokio::time::timeout(Duration::from_secs(10), m.message())
                .await
                .expect("in time")
                .expect("ok")
                .expect("an event");
            assert_eq!(
                meta(&e.object.expect("object")).resource_version,
                meta(&o).resource_version
            );
        }
    }
    // Another etcd client writes bytes that are no object into the watched namespace: storage
    // cannot send that event, and its stream ends with the error.
    raw_put(
        &cluster.etcd.endpoint(),
        &format!("/registry/configmaps/{NS_ERR}/corrupt"),
        vec![0x08, 0x01],
    );
    for (i, m) in members.iter_mut().enumerate() {
        let status = tokio::time::timeout(Duration::from_secs(10), m.message())
            .await
            .unwrap_or_else(|_| panic!("member {i} was left waiting"))
            .expect_err("the stream's error");
        assert_eq!(
            status.code(),
            tonic::Code::Internal,
            "member {i}: {status:?}"
        );
        assert!(
            status.message().contains("corrupt"),
            "member {i}: {status:?}"
        );
    }
    until_storage_watches(&cluster, before).await;
}
