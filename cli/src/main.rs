//! `kubestore`: a small client of registry-svc.
//!
//! `kubestore demo` walks through what registry-svc does: a pod created Pending with its QoS
//! class, deleted gracefully in two phases (as a kubelet would finish it), and a ConfigMap held
//! by a finalizer until the finalizer is removed. `kubestore get pod NAME` and friends make
//! single calls.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubestore_proto::{
    core::v1::{
        ConfigMap, Container, CreateConfigMapRequest, CreatePodRequest, DeleteConfigMapRequest,
        DeletePodRequest, GetConfigMapRequest, GetPodRequest, Pod, PodSpec, ResourceRequirements,
        UpdateConfigMapRequest, config_maps_client::ConfigMapsClient, pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ObjectMeta, Preconditions},
};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

#[derive(Parser)]
#[command(
    name = "kubestore",
    version,
    about = "Client of kubestore's registry-svc"
)]
struct Cli {
    /// registry-svc URL.
    #[arg(
        long,
        env = "REGISTRY_ADDR",
        default_value = "http://127.0.0.1:50052",
        global = true
    )]
    registry: String,
    /// Namespace.
    #[arg(long, short, default_value = "default", global = true)]
    namespace: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Pod lifecycle, graceful deletion and finalizers, step by step.
    Demo,
    /// Print one object.
    Get {
        /// `pod` or `configmap`.
        kind: String,
        /// Object name.
        name: String,
    },
}

fn describe(status: &Status) -> String {
    let reason = status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default();
    format!("{:?} ({reason}): {}", status.code(), status.message())
}

fn meta_line(m: &ObjectMeta) -> String {
    format!(
        "uid={} resourceVersion={} generation={} deletionTimestamp={} deletionGracePeriodSeconds={} finalizers={:?}",
        m.uid,
        m.resource_version,
        m.generation,
        m.deletion_timestamp
            .map_or("-".to_string(), |t| rfc3339(t.seconds)),
        m.deletion_grace_period_seconds
            .map_or("-".to_string(), |g| g.to_string()),
        m.finalizers
    )
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, proleptic Gregorian).
fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

async fn demo(channel: Channel, ns: &str) -> Result<(), Status> {
    let mut pods = PodsClient::new(channel.clone());
    let mut cms = ConfigMapsClient::new(channel);
    let name = "demo-nginx";
    // Leftovers of an earlier run.
    let force = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let _ = pods
        .delete(DeletePodRequest {
            namespace: ns.into(),
            name: name.into(),
            options: Some(force),
        })
        .await;

    println!("== 1. Create a pod (scheduled on node-1, cpu/memory requests below limits)");
    let container = Container {
        name: "nginx".into(),
        image: "nginx:1.27".into(),
        resources: Some(ResourceRequirements {
            requests: [
                ("cpu".to_string(), "100m".to_string()),
                ("memory".to_string(), "64Mi".to_string()),
            ]
            .into(),
            limits: [
                ("cpu".to_string(), "200m".to_string()),
                ("memory".to_string(), "128Mi".to_string()),
            ]
            .into(),
        }),
    };
    let pod = Pod {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            node_name: "node-1".into(),
            ..Default::default()
        }),
        status: None,
    };
    let created = pods
        .create(CreatePodRequest {
            namespace: ns.into(),
            pod: Some(pod),
            dry_run: false,
        })
        .await?
        .into_inner();
    let status = created.status.clone().unwrap_or_default();
    println!("   phase={} qosClass={}", status.phase, status.qos_class);
    println!(
        "   {}",
        meta_line(&created.metadata.clone().unwrap_or_default())
    );

    println!("== 2. Delete it with the default grace period: it is marked, not removed");
    let r = pods
        .delete(DeletePodRequest {
            namespace: ns.into(),
            name: name.into(),
            options: None,
        })
        .await?
        .into_inner();
    println!("   deleted={}", r.deleted);
    println!(
        "   {}",
        meta_line(&r.pod.and_then(|p| p.metadata).unwrap_or_default())
    );

    println!("== 3. The kubelet's final delete: grace 0 with a UID precondition");
    let uid = created.metadata.map(|m| m.uid).unwrap_or_default();
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    let r = pods
        .delete(DeletePodRequest {
            namespace: ns.into(),
            name: name.into(),
            options: Some(options),
        })
        .await?
        .into_inner();
    println!("   deleted={}", r.deleted);
    match pods
        .get(GetPodRequest {
            namespace: ns.into(),
            name: name.into(),
        })
        .await
    {
        Err(s) if s.code() == Code::NotFound => println!("   get: {}", describe(&s)),
        Err(s) => return Err(s),
        Ok(_) => return Err(Status::internal("the pod is still there")),
    }

    println!(
        "== 4. A ConfigMap with a finalizer stays after delete until the finalizer is removed"
    );
    let cm_name = "demo-settings";
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: cm_name.into(),
            finalizers: vec!["example.com/protect".into()],
            ..Default::default()
        }),
        data: [("color".to_string(), "blue".to_string())].into(),
        immutable: None,
    };
    if let Ok(old) = cms
        .get(GetConfigMapRequest {
            namespace: ns.into(),
            name: cm_name.into(),
        })
        .await
    {
        // Leftover of an earlier run: release it.
        let mut old = old.into_inner();
        old.metadata
            .get_or_insert_with(Default::default)
            .finalizers
            .clear();
        let _ = cms
            .update(UpdateConfigMapRequest {
                namespace: ns.into(),
                config_map: Some(old),
                dry_run: false,
            })
            .await;
        let _ = cms
            .delete(DeleteConfigMapRequest {
                namespace: ns.into(),
                name: cm_name.into(),
                options: None,
            })
            .await;
    }
    cms.create(CreateConfigMapRequest {
        namespace: ns.into(),
        config_map: Some(cm),
        dry_run: false,
    })
    .await?;
    let r = cms
        .delete(DeleteConfigMapRequest {
            namespace: ns.into(),
            name: cm_name.into(),
            options: None,
        })
        .await?
        .into_inner();
    println!("   delete: deleted={}", r.deleted);
    let mut held = cms
        .get(GetConfigMapRequest {
            namespace: ns.into(),
            name: cm_name.into(),
        })
        .await?
        .into_inner();
    println!(
        "   get:    {}",
        meta_line(&held.metadata.clone().unwrap_or_default())
    );
    held.metadata
        .get_or_insert_with(Default::default)
        .finalizers
        .clear();
    cms.update(UpdateConfigMapRequest {
        namespace: ns.into(),
        config_map: Some(held),
        dry_run: false,
    })
    .await?;
    println!("   removed the finalizer");
    match cms
        .get(GetConfigMapRequest {
            namespace: ns.into(),
            name: cm_name.into(),
        })
        .await
    {
        Err(s) if s.code() == Code::NotFound => println!("   get: {}", describe(&s)),
        Err(s) => return Err(s),
        Ok(_) => return Err(Status::internal("the ConfigMap is still there")),
    }
    println!("== done");
    Ok(())
}

async fn get(channel: Channel, ns: &str, kind: &str, name: &str) -> Result<(), Status> {
    match kind {
        "pod" | "pods" => {
            let p = PodsClient::new(channel)
                .get(GetPodRequest {
                    namespace: ns.into(),
                    name: name.into(),
                })
                .await?
                .into_inner();
            println!("{p:#?}");
        }
        "configmap" | "configmaps" | "cm" => {
            let c = ConfigMapsClient::new(channel)
                .get(GetConfigMapRequest {
                    namespace: ns.into(),
                    name: name.into(),
                })
                .await?
                .into_inner();
            println!("{c:#?}");
        }
        other => {
            return Err(Status::invalid_argument(format!(
                "unknown kind {other:?}: use pod or configmap"
            )));
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let channel = match tonic::transport::Endpoint::from_shared(cli.registry.clone()) {
        Ok(e) => match e.connect().await {
            Ok(c) => c,
            Err(err) => {
                eprintln!("kubestore: cannot connect to {}: {err}", cli.registry);
                return ExitCode::FAILURE;
            }
        },
        Err(err) => {
            eprintln!("kubestore: invalid --registry {:?}: {err}", cli.registry);
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Demo => demo(channel, &cli.namespace).await,
        Command::Get { kind, name } => get(channel, &cli.namespace, &kind, &name).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(s) => {
            eprintln!("kubestore: {}", describe(&s));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_render_as_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_353_701), "2026-11-22T13:21:41Z");
    }
}
