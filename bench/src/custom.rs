//! `kubestore-bench --custom-kinds`: custom objects against ConfigMaps, in one run on one etcd
//! (issue 17's benchmark). Rows: Create and Get of a CronTab (the Kubernetes docs' CRD) and
//! of a ServiceMonitor (prometheus-operator's published CRD, a schema of hundreds of
//! properties) against ConfigMaps of about the same size, at c=64 with one and with four gRPC
//! channels; a one-page List of 1,000 objects; the share of a ServiceMonitor Create spent in
//! schema validation, pruning and defaulting (measured in this process on the same schema
//! code registry-svc runs, against Create's p50 at c=1); and the time from registering a
//! definition to the first successful Create of its kind (p50/p99).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomResourceDefinition,
        GetCustomObjectRequest, ListCustomObjectsRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    core::v1::{
        ConfigMap, CreateConfigMapRequest, GetConfigMapRequest, ListConfigMapsRequest,
        config_maps_client::ConfigMapsClient,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::{EtcdProcess, fixtures_custom::register_established, services::channel};
use serde_json::{Value, json};
use tonic::{Code, transport::Channel};

use crate::{procs::ServiceProcess, runner::run};

const CRONTAB: &str = include_str!("../../tests/fixtures/crds/crontab.json");
const SERVICE_MONITOR: &str =
    include_str!("../../tests/fixtures/crds/monitoring.coreos.com_servicemonitors.json");

/// A manifest as the request body (without `apiVersion`/`kind`).
fn definition(text: &str) -> Result<CustomResourceDefinition, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    CustomResourceDefinition::from_manifest(v).map_err(|e| e.to_string())
}

fn to_struct(v: Value) -> Result<pbjson_types::Struct, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// The ConfigMap the rows compare with: two short data entries (as the main benchmark's).
fn config_map(name: String) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name,
            ..Default::default()
        }),
        data: [
            ("n".to_string(), "0".to_string()),
            ("payload".to_string(), "x".repeat(64)),
        ]
        .into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

fn crontab(name: &str) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", "image": "x".repeat(48), "replicas": 1},
    })
}

/// A ServiceMonitor as users write them: two endpoints, relabelings, TLS settings.
fn service_monitor(name: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": name, "labels": {"team": "frontend"}},
        "spec": {
            "selector": {"matchLabels": {"app": "example-app"}},
            "namespaceSelector": {"matchNames": ["default", "monitoring"]},
            "jobLabel": "app",
            "sampleLimit": 10000,
            "endpoints": [
                {
                    "port": "web", "interval": "30s", "scrapeTimeout": "10s", "scheme": "https",
                    "path": "/metrics",
                    "tlsConfig": {"insecureSkipVerify": false, "serverName": "example-app", "minVersion": "TLS12"},
                    "relabelings": [
                        {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "pod"},
                        {"sourceLabels": ["__meta_kubernetes_namespace"], "targetLabel": "namespace", "action": "replace"},
                    ],
                    "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": "go_.*", "action": "drop"}],
                },
                {"port": "metrics", "interval": "1m", "honorLabels": true},
            ],
        },
    })
}

/// One custom kind's client.
#[derive(Clone)]
struct Kind {
    clients: Vec<CustomObjectsClient<Channel>>,
    group: &'static str,
    plural: &'static str,
    namespace: String,
    prefix: String,
    object: fn(&str) -> Value,
}

impl Kind {
    async fn create(&self, i: usize) -> Result<(), String> {
        let name = format!("{}{i}", self.prefix);
        self.clients[i % self.clients.len()]
            .clone()
            .create(CreateCustomObjectRequest {
                group: self.group.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: self.namespace.clone(),
                object: Some(to_struct((self.object)(&name))?),
                dry_run: false,
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn get(&self, i: usize) -> Result<(), String> {
        self.clients[i % self.clients.len()]
            .clone()
            .get(GetCustomObjectRequest {
                group: self.group.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: self.namespace.clone(),
                name: format!("{}{i}", self.prefix),
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn list(&self) -> Result<usize, String> {
        self.clients[0]
            .clone()
            .list(ListCustomObjectsRequest {
                group: self.group.into(),
                version: "v1".into(),
                plural: self.plural.into(),
                namespace: self.namespace.clone(),
                options: None,
            })
            .await
            .map(|r| r.into_inner().items.len())
            .map_err(|e| e.to_string())
    }
}

#[derive(Clone)]
struct Maps {
    clients: Vec<ConfigMapsClient<Channel>>,
    namespace: String,
    prefix: String,
}

impl Maps {
    async fn create(&self, i: usize) -> Result<(), String> {
        self.clients[i % self.clients.len()]
            .clone()
            .create(CreateConfigMapRequest {
                namespace: self.namespace.clone(),
                config_map: Some(config_map(format!("{}{i}", self.prefix))),
                dry_run: false,
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn get(&self, i: usize) -> Result<(), String> {
        self.clients[i % self.clients.len()]
            .clone()
            .get(GetConfigMapRequest {
                namespace: self.namespace.clone(),
                name: format!("{}{i}", self.prefix),
            })
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn list(&self) -> Result<usize, String> {
        self.clients[0]
            .clone()
            .list(ListConfigMapsRequest {
                namespace: self.namespace.clone(),
                options: None,
            })
            .await
            .map(|r| r.into_inner().items.len())
            .map_err(|e| e.to_string())
    }
}

/// Runs `op` `ops` times at concurrency `c`; (ops/s, p50).
async fn rate<F, Fut>(label: &str, c: usize, ops: usize, op: F) -> Result<(f64, Duration), String>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let s = run(c, ops, op).await;
    if s.errors > 0 {
        return Err(format!("{label}: {} errors", s.errors));
    }
    println!(
        "  {label:<34} c={c:<3} {:>8.0} ops/s  p50 {:>6.2} ms  p99 {:>6.2} ms",
        s.ops_per_sec(),
        s.p50.as_secs_f64() * 1e3,
        s.p99.as_secs_f64() * 1e3
    );
    Ok((s.ops_per_sec(), s.p50))
}

/// Mean time of `reps` one-page Lists, each of which must return `want` items.
async fn list_time<F, Fut>(reps: usize, want: usize, list: F) -> Result<Duration, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<usize, String>>,
{
    let start = Instant::now();
    for _ in 0..reps {
        let n = list().await?;
        if n != want {
            return Err(format!("listed {n}, want {want}"));
        }
    }
    Ok(start.elapsed() / reps as u32)
}

/// The time from a definition's Create to the first successful Create of its kind.
async fn registration_to_first_create(
    defs: &mut CustomResourceDefinitionsClient<Channel>,
    objects: &mut CustomObjectsClient<Channel>,
    i: usize,
) -> Result<Duration, String> {
    let group = format!("g{i}.bench.example.com");
    let crd = definition(
        &json!({
            "metadata": {"name": format!("widgets.{group}")},
            "spec": {
                "group": group,
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    }}},
                }],
            },
        })
        .to_string(),
    )?;
    let start = Instant::now();
    defs.create(CreateCustomResourceDefinitionRequest {
        custom_resource_definition: Some(crd),
        dry_run: false,
    })
    .await
    .map_err(|e| e.to_string())?;
    loop {
        let r = objects
            .create(CreateCustomObjectRequest {
                group: group.clone(),
                version: "v1".into(),
                plural: "widgets".into(),
                namespace: "default".into(),
                object: Some(to_struct(json!({
                    "apiVersion": format!("{group}/v1"),
                    "kind": "Widget",
                    "metadata": {"name": "first"},
                    "spec": {"size": 1},
                }))?),
                dry_run: false,
            })
            .await;
        match r {
            Ok(_) => return Ok(start.elapsed()),
            Err(e) if e.code() == Code::NotFound && start.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            Err(e) => return Err(format!("first create of {group}: {e}")),
        }
    }
}

/// Validation, pruning and defaulting of one ServiceMonitor, as registry-svc does on Create
/// (the same `custom::openapi` code), in this process: mean time per object.
fn schema_cost(reps: usize) -> Result<Duration, String> {
    let crd: Value = serde_json::from_str(SERVICE_MONITOR).map_err(|e| e.to_string())?;
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let schema = registry_svc::custom::openapi::Schema::parse(schema)
        .map_err(|e| format!("the ServiceMonitor schema: {e:?}"))?;
    let object = service_monitor("cost");
    let start = Instant::now();
    for _ in 0..reps {
        let mut o = std::hint::black_box(object.clone());
        schema.prune(&mut o);
        schema.default(&mut o);
        let errors = schema.validate(&o);
        if !errors.is_empty() {
            return Err(format!(
                "the benchmark's ServiceMonitor is invalid: {errors:?}"
            ));
        }
    }
    Ok(start.elapsed() / reps as u32)
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v.get(((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs every row; `ops` operations per rate row, `registrations` definitions timed.
pub(crate) async fn custom_kinds(ops: usize, registrations: usize) -> Result<(), String> {
    let etcd = EtcdProcess::start().await;
    let storage = ServiceProcess::start(
        "storage",
        &["--etcd-endpoints".into(), etcd.endpoint()],
        &[],
    )
    .await;
    let registry =
        ServiceProcess::start("registry", &["--storage-addr".into(), storage.url()], &[]).await;
    let url = registry.url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register_established(&mut defs, definition(CRONTAB)?).await;
    register_established(&mut defs, definition(SERVICE_MONITOR)?).await;

    let mut chans = Vec::new();
    for _ in 0..4 {
        chans.push(channel(&url).await);
    }
    let c = 64;
    let mut table = Vec::new();
    for n in [1, 4] {
        println!("{n} channel(s), c={c}");
        let ch = &chans[..n];
        let ns = format!("ch{n}");
        let maps = Arc::new(Maps {
            clients: ch.iter().cloned().map(ConfigMapsClient::new).collect(),
            namespace: ns.clone(),
            prefix: "cm-".into(),
        });
        let kind = |group, plural, prefix: &str, object| {
            Arc::new(Kind {
                clients: ch.iter().cloned().map(CustomObjectsClient::new).collect(),
                group,
                plural,
                namespace: ns.clone(),
                prefix: prefix.into(),
                object,
            })
        };
        let crontabs = kind("stable.example.com", "crontabs", "ct-", crontab);
        let monitors = kind(
            "monitoring.coreos.com",
            "servicemonitors",
            "sm-",
            service_monitor,
        );
        macro_rules! op {
            ($label:expr, $obj:expr, $m:ident) => {{
                let o = $obj.clone();
                rate($label, c, ops, move |i| {
                    let o = o.clone();
                    async move { o.$m(i).await }
                })
                .await?
            }};
        }
        let cm_create = op!("ConfigMaps create", maps, create);
        let ct_create = op!("CronTabs create", crontabs, create);
        let sm_create = op!("ServiceMonitors create", monitors, create);
        let cm_get = op!("ConfigMaps get", maps, get);
        let ct_get = op!("CronTabs get", crontabs, get);
        let sm_get = op!("ServiceMonitors get", monitors, get);
        for (what, (cm, ct, sm)) in [
            ("create", (cm_create.0, ct_create.0, sm_create.0)),
            ("get", (cm_get.0, ct_get.0, sm_get.0)),
        ] {
            table.push(format!(
                "| {what}, c={c}, {n} channel{} | {cm:.0} | {ct:.0} ({:.2}x) | {sm:.0} ({:.2}x) |",
                if n == 1 { "" } else { "s" },
                ct / cm.max(1e-9),
                sm / cm.max(1e-9),
            ));
        }
    }

    // A one-page List of 1,000 objects of each kind (fresh namespaces: exactly 1,000 each).
    let list_n = 1000.min(ops);
    let maps = Arc::new(Maps {
        clients: chans.iter().cloned().map(ConfigMapsClient::new).collect(),
        namespace: "list".into(),
        prefix: "cm-".into(),
    });
    let crontabs = Arc::new(Kind {
        clients: chans
            .iter()
            .cloned()
            .map(CustomObjectsClient::new)
            .collect(),
        group: "stable.example.com",
        plural: "crontabs",
        namespace: "list".into(),
        prefix: "ct-".into(),
        object: crontab,
    });
    println!("List of {list_n}");
    {
        let m = maps.clone();
        rate("seed ConfigMaps", c, list_n, move |i| {
            let m = m.clone();
            async move { m.create(i).await }
        })
        .await?;
        let k = crontabs.clone();
        rate("seed CronTabs", c, list_n, move |i| {
            let k = k.clone();
            async move { k.create(i).await }
        })
        .await?;
    }
    let reps = 20;
    let cm_list = list_time(reps, list_n, || maps.list()).await?;
    let ct_list = list_time(reps, list_n, || crontabs.list()).await?;
    // Repeated in the other order, so neither kind gains from going second.
    let ct_list = (ct_list + list_time(reps, list_n, || crontabs.list()).await?) / 2;
    let cm_list = (cm_list + list_time(reps, list_n, || maps.list()).await?) / 2;
    println!(
        "  one-page List of {list_n}: ConfigMaps {:.2} ms, CronTabs {:.2} ms",
        ms(cm_list),
        ms(ct_list)
    );

    // Validation's share of a ServiceMonitor Create (c=1, one channel).
    let single = Arc::new(Kind {
        clients: vec![CustomObjectsClient::new(chans[0].clone())],
        group: "monitoring.coreos.com",
        plural: "servicemonitors",
        namespace: "single".into(),
        prefix: "sm-".into(),
        object: service_monitor,
    });
    let (_, sm_p50) = {
        let s = single.clone();
        rate("ServiceMonitors create", 1, ops.min(500), move |i| {
            let s = s.clone();
            async move { s.create(i).await }
        })
        .await?
    };
    let cost = schema_cost(2000)?;

    // Registration to first successful Create.
    let mut objects = CustomObjectsClient::new(chans[0].clone());
    let mut firsts = Vec::new();
    for i in 0..registrations {
        firsts.push(registration_to_first_create(&mut defs, &mut objects, i).await?);
    }
    let (p50, p99) = (percentile(&mut firsts, 0.5), percentile(&mut firsts, 0.99));

    println!();
    println!(
        "| operation | ConfigMaps ops/s | CronTabs ops/s (ratio) | ServiceMonitors ops/s (ratio) |"
    );
    println!("|---|---:|---:|---:|");
    for l in &table {
        println!("{l}");
    }
    println!(
        "| one-page List of {list_n}, mean of {} | {:.2} ms | {:.2} ms ({:.2}x) | |",
        2 * reps,
        ms(cm_list),
        ms(ct_list),
        cm_list.as_secs_f64() / ct_list.as_secs_f64().max(1e-9)
    );
    println!(
        "| ServiceMonitor schema: prune + default + validate per object | | | {:.1} µs = {:.1}% of Create's p50 at c=1 ({:.2} ms) |",
        cost.as_secs_f64() * 1e6,
        100.0 * cost.as_secs_f64() / sm_p50.as_secs_f64().max(1e-9),
        ms(sm_p50)
    );
    println!(
        "| definition registered -> first successful Create ({registrations} definitions) | | p50 {:.1} ms, p99 {:.1} ms | |",
        ms(p50),
        ms(p99)
    );
    drop(registry);
    drop(storage);
    Ok(())
}
