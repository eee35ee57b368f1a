//! `kubestore-bench --gc-cascade N`: the garbage collector's background cascade. One owner
//! ConfigMap with N dependents; a controller-manager (a child process, `serve-controllers`)
//! collects them after the owner's delete. Measured: the time from the owner's delete to the
//! last dependent gone, and registry-svc's p99 for unrelated Gets (one client, one channel, one
//! at a time) while the cascade runs, against the same Gets' p99 at idle just before.

use std::{
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, DeleteConfigMapRequest, GetConfigMapRequest,
        ListConfigMapsRequest, config_maps_client::ConfigMapsClient,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, OwnerReference, PropagationPolicy},
};
use kubestore_tests::{
    EtcdProcess,
    services::{channel, sample, scrape},
};
use tonic::transport::Channel;

use crate::procs::ServiceProcess;

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get((v.len() * 99 / 100).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

async fn gets(c: &mut ConfigMapsClient<Channel>, n: usize) -> Result<Vec<Duration>, String> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.get(GetConfigMapRequest {
            namespace: "default".into(),
            name: "unrelated".into(),
        })
        .await
        .map_err(|e| e.to_string())?;
        v.push(t.elapsed());
    }
    Ok(v)
}

/// Kills the controller-manager child on drop.
struct Controllers(Child);

impl Drop for Controllers {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the cascade of `n` dependents; the report's lines.
pub(crate) async fn cascade(n: usize) -> Result<Vec<String>, String> {
    let etcd = EtcdProcess::start().await;
    let storage = ServiceProcess::start(
        "storage",
        &["--etcd-endpoints".into(), etcd.endpoint()],
        &[],
    )
    .await;
    let registry =
        ServiceProcess::start("registry", &["--storage-addr".into(), storage.url()], &[]).await;
    let mut c = ConfigMapsClient::new(channel(&registry.url()).await);
    let create = |name: String, owners: Vec<OwnerReference>| CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(ConfigMap {
            metadata: Some(ObjectMeta {
                name,
                labels: [("bench".to_string(), "gc".to_string())].into(),
                owner_references: owners,
                ..Default::default()
            }),
            ..Default::default()
        }),
        dry_run: false,
    };
    c.create(CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(ConfigMap {
            metadata: Some(ObjectMeta {
                name: "unrelated".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        dry_run: false,
    })
    .await
    .map_err(|e| e.to_string())?;
    let owner = c
        .create(create("owner".into(), vec![]))
        .await
        .map_err(|e| e.to_string())?
        .into_inner()
        .metadata
        .unwrap_or_default();
    let reference = OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        ..Default::default()
    };
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..32 {
        let mut c = ConfigMapsClient::new(channel(&registry.url()).await);
        let (reference, create) = (reference.clone(), create);
        tasks.spawn(async move {
            for i in (w..n).step_by(32) {
                c.create(create(format!("dep-{i}"), vec![reference.clone()]))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<(), String>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.map_err(|e| e.to_string())??;
    }

    // The controller-manager, as a process of its own.
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let _controllers = Controllers(
        Command::new(exe)
            .arg("serve-controllers")
            .arg("--registry")
            .arg(registry.url())
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    // Ready once its graph holds every object.
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let up = tokio::net::TcpStream::connect(metrics).await.is_ok();
        if up
            && sample(&scrape(metrics).await, "garbagecollector_graph_nodes").unwrap_or(0.0)
                >= (n + 2) as f64
        {
            break;
        }
        if Instant::now() > until {
            return Err("the controller-manager never listed everything".into());
        }
    }
    let idle = p99(gets(&mut c, 2000).await?);

    let done = Arc::new(AtomicBool::new(false));
    let measuring = {
        let done = done.clone();
        let mut c = ConfigMapsClient::new(channel(&registry.url()).await);
        tokio::spawn(async move {
            let mut v = Vec::new();
            while !done.load(Ordering::Relaxed) {
                v.extend(gets(&mut c, 50).await?);
            }
            Ok::<Vec<Duration>, String>(v)
        })
    };
    let start = Instant::now();
    c.delete(DeleteConfigMapRequest {
        namespace: "default".into(),
        name: "owner".into(),
        options: Some(DeleteOptions {
            propagation_policy: PropagationPolicy::Background as i32,
            ..Default::default()
        }),
    })
    .await
    .map_err(|e| e.to_string())?;
    loop {
        let left = c
            .list(ListConfigMapsRequest {
                namespace: "default".into(),
                options: Some(ListOptions {
                    label_selector: "bench=gc".into(),
                    limit: 1,
                    ..Default::default()
                }),
            })
            .await
            .map_err(|e| e.to_string())?
            .into_inner()
            .items
            .len();
        if left == 0 {
            break;
        }
        if start.elapsed() > Duration::from_secs(600) {
            return Err("the cascade did not finish in 10 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let during_samples = measuring.await.map_err(|e| e.to_string())??;
    let samples = during_samples.len();
    let during = p99(during_samples);
    let lines = vec![format!(
        "| background cascade, {n} dependents of one owner | {:.1} s ({:.0} deletions/s) | idle Get p99 {:.2} ms | Get p99 during {:.2} ms ({samples} Gets) | {:.2}x |",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        idle.as_secs_f64() * 1e3,
        during.as_secs_f64() * 1e3,
        during.as_secs_f64() / idle.as_secs_f64().max(1e-9),
    )];
    for l in &lines {
        println!("{l}");
    }
    Ok(lines)
}
