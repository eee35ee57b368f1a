//! `kubestore get` lists in pages of 500 (kubectl's `--chunk-size=500`) with continue tokens,
//! `-w` watches from the list's resourceVersion, and both `get` and `storage rewrite` read a
//! resource whose objects weigh more than tonic's default 4 MiB limit on a response.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use kubestore_cli::{
    get::{GetOptions, get},
    rewrite::{Rewritten, rewrite},
};
use kubestore_proto::{
    core::v1::{
        CreateConfigMapRequest, CreateSecretRequest, Secret, config_maps_client::ConfigMapsClient,
        secrets_client::SecretsClient,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{NS, cm},
    services::{channel, sample, scrape},
};

/// 501 ConfigMaps: one more than a page.
const COUNT: usize = 501;

/// How many Lists of the generic API (the CLI's) registry-svc answered.
async fn lists(cluster: &Cluster) -> f64 {
    let registry = cluster.registry.as_ref().expect("registry");
    sample(
        &scrape(registry.metrics_addr).await,
        r#"grpc_server_handled_total{grpc_type="unary",grpc_service="registry.v1.Resources",grpc_method="List",grpc_code="OK"}"#,
    )
    .unwrap_or(0.0)
}

/// The data rows of a table (the header left out).
fn rows(table: &str) -> Vec<String> {
    table.lines().skip(1).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn get_lists_in_pages_of_500_and_watches_from_the_lists_version() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let c = ConfigMapsClient::new(channel(&url).await);
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..8 {
        let mut c = c.clone();
        writers.spawn(async move {
            for i in (w..COUNT).step_by(8) {
                c.create(CreateConfigMapRequest {
                    namespace: NS.into(),
                    config_map: Some(cm(&format!("cm-{i:04}"), &[])),
                    dry_run: false,
                })
                .await
                .expect("create");
            }
        });
    }
    while let Some(r) = writers.join_next().await {
        r.expect("writer");
    }
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let o = GetOptions {
        namespace: NS.into(),
        ..Default::default()
    };

    // Two pages (500 + 1), printed as one table.
    let before = lists(&cluster).await;
    let mut out = Vec::new();
    get(&ch, "configmaps", &o, |s| out.push(s))
        .await
        .expect("get configmaps");
    assert_eq!(lists(&cluster).await - before, 2.0, "two pages of 500");
    assert_eq!(out.len(), 1, "one table");
    let header: Vec<&str> = out[0]
        .lines()
        .next()
        .expect("a header")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"]);
    // Every ConfigMap once, in name order across the page boundary, each row whole: its name
    // and its one data key (AGE left out).
    let table: Vec<Vec<String>> = rows(&out[0])
        .iter()
        .map(|r| r.split_whitespace().take(2).map(String::from).collect())
        .collect();
    let want: Vec<Vec<String>> = (0..COUNT)
        .map(|i| vec![format!("cm-{i:04}"), "1".to_string()])
        .collect();
    assert_eq!(table, want);

    // -o json: one List whose items are every page's.
    let mut out = Vec::new();
    get(
        &ch,
        "configmaps",
        &GetOptions {
            output: "json".into(),
            ..o.clone()
        },
        |s| out.push(s),
    )
    .await
    .expect("get -o json");
    let json: serde_json::Value = serde_json::from_str(&out.join("\n")).expect("one JSON List");
    let names: Vec<&str> = json["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("a name"))
        .collect();
    let want: Vec<String> = (0..COUNT).map(|i| format!("cm-{i:04}")).collect();
    assert_eq!(names, want);

    // -w: the paged table, then only what changed after the list (a watch from an older or
    // empty version would repeat the listed objects).
    let printed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = printed.clone();
    let wch = ch.clone();
    let wo = GetOptions {
        watch: true,
        ..o.clone()
    };
    let watcher = tokio::spawn(async move {
        get(&wch, "configmaps", &wo, move |s| {
            sink.lock().expect("lock").push(s)
        })
        .await
    });
    for _ in 0..200 {
        if !printed.lock().expect("lock").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = c.clone();
    c.create(CreateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(cm("late", &[])),
        dry_run: false,
    })
    .await
    .expect("create late");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let seen = printed.lock().expect("lock").clone();
        if seen.len() >= 2 {
            assert_eq!(rows(&seen[0]).len(), COUNT, "the paged table first");
            let late: Vec<&str> = seen[1].split_whitespace().take(2).collect();
            assert_eq!(
                late,
                ["late", "1"],
                "then the change, one row: {:?}",
                seen[1]
            );
            assert_eq!(seen[1].lines().count(), 1, "{:?}", seen[1]);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "get -w never printed the new ConfigMap: {} chunks",
            seen.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(printed.lock().expect("lock").len(), 2, "nothing repeated");
    watcher.abort();
}

/// Five Secrets of 900 KiB each: 4.5 MiB in one namespace, more than one response may carry
/// under tonic's default limit.
async fn big_secrets(cluster: &Cluster) -> usize {
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut c = SecretsClient::new(channel(&url).await);
    let value = vec![b'x'; 900 * 1024];
    for i in 0..5 {
        c.create(CreateSecretRequest {
            namespace: NS.into(),
            secret: Some(Secret {
                metadata: Some(ObjectMeta {
                    name: format!("big-{i}"),
                    ..Default::default()
                }),
                data: [("blob".to_string(), value.clone())].into(),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("create a 900 KiB secret");
    }
    5
}

#[tokio::test(flavor = "multi_thread")]
async fn get_secrets_reads_more_than_4_mib() {
    let cluster = Cluster::full().await;
    let n = big_secrets(&cluster).await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let mut out = Vec::new();
    get(
        &ch,
        "secrets",
        &GetOptions {
            namespace: NS.into(),
            ..Default::default()
        },
        |s| out.push(s),
    )
    .await
    .expect("get secrets over 4 MiB");
    let table = rows(&out.join("\n"));
    assert_eq!(table.len(), n, "{table:?}");
    assert!(table.iter().all(|r| r.starts_with("big-")), "{table:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn storage_rewrite_pages_over_more_than_4_mib() {
    let cluster = Cluster::full().await;
    let n = big_secrets(&cluster).await;
    // A client as `kubestore storage rewrite` makes one: tonic's defaults.
    let mut c = cluster.storage_client().await;
    let done = rewrite(&mut c, "secrets")
        .await
        .expect("rewrite over 4 MiB");
    assert_eq!(
        done,
        Rewritten {
            written: 0,
            unchanged: n,
            gone: 0
        },
        "no encryption configured: every value is current"
    );
}
