//! The `kubestore` binary: parses the command line, sets up telemetry (traces go to the
//! standard `OTEL_*` endpoint when set), connects, and runs the command from the library.

use std::{process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kubestore_cli::{
    Ch, DryRun,
    agent::{self, AgentConfig},
    apply, client_dry_run, connect_with, custom, demo, describe,
    get::{GetOptions, get},
    modify,
};
use kubestore_controllers::manager;
use kubestore_proto::core::v1::{ConfigMap, Event, Pod, Secret};
use kubestore_telemetry::{LogFormat, TelemetryConfig, deadline::parse_duration, shutdown};

#[derive(Parser)]
#[command(
    name = "kubestore",
    version,
    about = "Client of kubestore's registry-svc: get, apply, delete, a node agent, and a demo"
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
    /// TLS to registry-svc (kubectl's flags): --certificate-authority, --client-certificate,
    /// --client-key, --tls-server-name.
    #[command(flatten)]
    tls: kubestore_telemetry::tls::ClientTlsArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Pod lifecycle with the node agent, graceful deletion and finalizers, step by step.
    Demo,
    /// A stand-in kubelet: runs the pods of one node and finishes their graceful deletion.
    Agent {
        /// The node whose pods this agent runs (spec.nodeName).
        #[arg(long)]
        node: String,
        /// Longest time a pod takes to stop (its grace period, when shorter, wins).
        #[arg(long, default_value = "5s", value_parser = parse_duration)]
        stop_delay: Duration,
    },
    /// The controllers (today the garbage collector), while this process holds the
    /// kube-system/kube-controller-manager Lease; several may run, one acts.
    ControllerManager {
        /// This candidate's identity in the Lease (default: host name and a random suffix).
        #[arg(long)]
        identity: Option<String>,
        /// How long a leader's claim lasts without renewal.
        #[arg(long, default_value = "15s", value_parser = parse_duration)]
        leader_elect_lease_duration: Duration,
        /// How long a leader tries to renew before it stops leading.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        leader_elect_renew_deadline: Duration,
        /// How often candidates try to take or renew the Lease.
        #[arg(long, default_value = "2s", value_parser = parse_duration)]
        leader_elect_retry_period: Duration,
        /// The Lease's namespace.
        #[arg(long, default_value = "kube-system")]
        leader_elect_resource_namespace: String,
        /// The Lease's name.
        #[arg(long, default_value = "kube-controller-manager")]
        leader_elect_resource_name: String,
        /// Objects the garbage collector checks at once (kube-controller-manager's flag).
        #[arg(long, default_value_t = 20)]
        concurrent_gc_syncs: usize,
        /// Requests a second the garbage collector's workers send to registry-svc (0: no
        /// limit; upstream's default is 20, see the README).
        #[arg(long, default_value_t = kubestore_controllers::gc::DEFAULT_QPS)]
        kube_api_qps: f64,
        /// Requests the workers may send at once before `--kube-api-qps` applies.
        #[arg(long, default_value_t = kubestore_controllers::gc::DEFAULT_BURST)]
        kube_api_burst: u32,
        /// Address of the Prometheus `/metrics` endpoint; unset: none.
        #[arg(long, env = "CONTROLLER_METRICS_ADDR", value_parser = kubestore_telemetry::deadline::parse_socket_addr)]
        metrics_addr: Option<std::net::SocketAddr>,
    },
    /// List objects, or print one (kubectl-like).
    Get {
        /// pods (po), configmaps (cm), events (ev), secrets, crd, or a custom kind (its
        /// plural, singular, short name or kind).
        kind: String,
        /// One object.
        name: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Label selector, e.g. `app=web,tier in (1,2)`.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// Field selector, e.g. `spec.nodeName=node-1`.
        #[arg(long)]
        field_selector: Option<String>,
        /// After listing, print changes as they happen.
        #[arg(short, long)]
        watch: bool,
        /// Output: wide, yaml, json, name (`kind/name` per object), `jsonpath=TEMPLATE`
        /// (`'{.items[*].metadata.name}'`) or `custom-columns=NAME:.metadata.name,...`.
        #[arg(short, long, default_value = "")]
        output: String,
    },
    /// Show one object and the Events about it (kubectl-like).
    Describe {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
    },
    /// Create or update the objects of a manifest (YAML, several documents allowed).
    Apply {
        /// Manifest file (`-`: standard input).
        #[arg(short, long)]
        filename: String,
        /// `server`: every write is registry-svc's dry run (validated, defaulted and answered;
        /// nothing stored); `client`: told after reading each object, nothing sent; `none`:
        /// for real.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
    },
    /// Delete the objects of a manifest (`-f FILE`), or objects by kind and name
    /// (`delete pod web db`), as kubectl does.
    Delete {
        /// Manifest file (`-`: standard input).
        #[arg(short, long, conflicts_with = "resource")]
        filename: Option<String>,
        /// The kind, then one or more names.
        #[arg(value_name = "KIND NAME", num_args = 0..)]
        resource: Vec<String>,
        /// `server`: registry-svc's dry run (checked and answered, nothing deleted); `client`:
        /// each object read, nothing deleted.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
    },
    /// Set or remove labels of an object: `label pod web tier=front old-` (kubectl's form).
    Label(MapChange),
    /// Set or remove annotations of an object: `annotate cm settings owner=team-a`.
    Annotate(MapChange),
    /// Change an object by a patch: `patch cm settings -p '{"data":{"color":"red"}}'`
    /// (`--type merge`, RFC 7386, the default) or `--type json` (RFC 6902 operations).
    Patch {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
        /// The patch (JSON or YAML).
        #[arg(short, long)]
        patch: String,
        /// merge or json (kubectl's strategic merge patch is not offered: see the README).
        #[arg(long = "type", value_enum, default_value = "merge")]
        patch_type: kubestore_cli::patch::PatchType,
        /// `server`: registry-svc's dry run (nothing stored); `client`: the change computed
        /// and printed, nothing sent.
        #[arg(long, value_enum, default_value = "none")]
        dry_run: DryRun,
    },
    /// Edit an object in `$KUBE_EDITOR`, `$EDITOR` or vi; saved changes are written at the
    /// version that was read.
    Edit {
        /// The kind (as for get).
        kind: String,
        /// The object's name.
        name: String,
    },
    /// Print a shell completion script: `source <(kubestore completion bash)`.
    Completion {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// storage-svc administration (talks to storage-svc, not registry-svc).
    Storage {
        #[command(subcommand)]
        command: StorageCommand,
    },
}

/// The arguments of `label` and `annotate`.
#[derive(clap::Args)]
struct MapChange {
    /// The kind (as for get).
    kind: String,
    /// The object's name.
    name: String,
    /// `key=value` to set, `key-` to remove.
    #[arg(required = true, num_args = 1..)]
    changes: Vec<String>,
    /// Let `key=value` replace a different value already set.
    #[arg(long)]
    overwrite: bool,
    /// `server`: registry-svc's dry run (nothing stored); `client`: the change computed and
    /// printed, nothing sent.
    #[arg(long, value_enum, default_value = "none")]
    dry_run: DryRun,
}

#[derive(Subcommand)]
enum StorageCommand {
    /// Rewrite every object of a resource as it is stored, so that it is stored again with the
    /// first provider and key of storage-svc's --encryption-provider-config (key rotation).
    Rewrite {
        /// The resource, e.g. secrets.
        #[arg(long)]
        resource: String,
        /// storage-svc URL (with TLS, https://, and a client certificate storage-svc allows,
        /// given by the TLS flags).
        #[arg(long, env = "STORAGE_ADDR", default_value = "http://127.0.0.1:50051")]
        storage_addr: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Completion { shell } = &cli.command {
        use clap::CommandFactory;
        clap_complete::generate(
            *shell,
            &mut Cli::command(),
            "kubestore",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kubestore: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let service = match &cli.command {
        Command::Agent { .. } => "kubestore-agent",
        Command::ControllerManager { .. } => "kubestore-controller-manager",
        _ => "kubestore",
    };
    let guard = match runtime.block_on(async {
        kubestore_telemetry::tracing_setup::init(&TelemetryConfig::from_env(
            service,
            LogFormat::Text,
        ))
    }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("kubestore: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        if let Command::Storage {
            command:
                StorageCommand::Rewrite {
                    resource,
                    storage_addr,
                },
        } = &cli.command
        {
            return storage_rewrite(storage_addr, &cli.tls, resource).await;
        }
        if let Command::ControllerManager { .. } = &cli.command {
            return controller_manager(&cli).await;
        }
        let ch = match connect_with(&cli.registry, &cli.tls).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("kubestore: {e}");
                return ExitCode::FAILURE;
            }
        };
        run(ch, cli.namespace, cli.command).await
    });
    // Flush spans outside block_on (the SDK's flush blocks).
    guard.shutdown();
    code
}

async fn controller_manager(cli: &Cli) -> ExitCode {
    let Command::ControllerManager {
        identity,
        leader_elect_lease_duration,
        leader_elect_renew_deadline,
        leader_elect_retry_period,
        leader_elect_resource_namespace,
        leader_elect_resource_name,
        concurrent_gc_syncs,
        kube_api_qps,
        kube_api_burst,
        metrics_addr,
    } = &cli.command
    else {
        return ExitCode::FAILURE;
    };
    let ch = match kubestore_cli::connect_lazy_with(&cli.registry, &cli.tls) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kubestore: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut config =
        manager::ManagerConfig::new(identity.clone().unwrap_or_else(manager::default_identity));
    config.leader.lease_duration = *leader_elect_lease_duration;
    config.leader.renew_deadline = *leader_elect_renew_deadline;
    config.leader.retry_period = *leader_elect_retry_period;
    config.leader.namespace = leader_elect_resource_namespace.clone();
    config.leader.name = leader_elect_resource_name.clone();
    config.gc.workers = *concurrent_gc_syncs;
    config.gc.qps = *kube_api_qps;
    config.gc.burst = *kube_api_burst;
    config.metrics_addr = *metrics_addr;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown::signal().await;
        let _ = stop_tx.send(true);
    });
    let identity = config.leader.identity.clone();
    match manager::run(ch, config, stop_rx, |h| {
        println!(
            "controller-manager {identity}: campaigning for the lease{} (Ctrl-C stops)",
            h.metrics_addr
                .map(|a| format!("; metrics on http://{a}/metrics"))
                .unwrap_or_default()
        );
    })
    .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubestore: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn storage_rewrite(
    addr: &str,
    tls: &kubestore_telemetry::tls::ClientTlsArgs,
    resource: &str,
) -> ExitCode {
    let channel = match kubestore_cli::channel_with(addr, "--storage-addr", tls).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kubestore: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut client = kubestore_proto::storage::v1::storage_client::StorageClient::new(channel);
    match kubestore_cli::rewrite::rewrite(&mut client, resource).await {
        Ok(r) => {
            println!(
                "{resource}: {} rewritten, {} already current, {} gone meanwhile",
                r.written, r.unchanged, r.gone
            );
            ExitCode::SUCCESS
        }
        Err(s) => {
            eprintln!("{}", describe(&s));
            ExitCode::FAILURE
        }
    }
}

async fn run(ch: Ch, namespace: String, command: Command) -> ExitCode {
    let fail = |s: tonic::Status| {
        eprintln!("{}", describe(&s));
        ExitCode::FAILURE
    };
    match command {
        Command::Demo => match demo::run(&ch, &namespace).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(s) => fail(s),
        },
        Command::Agent { node, stop_delay } => {
            println!("agent for node {node}: watching its pods (Ctrl-C stops)");
            agent::run(
                ch,
                AgentConfig { node, stop_delay },
                shutdown::signal(),
                |_| {},
            )
            .await;
            ExitCode::SUCCESS
        }
        Command::Get {
            kind,
            name,
            all_namespaces,
            selector,
            field_selector,
            watch,
            output,
        } => {
            if let Err(e) = kubestore_cli::manifest::check_output(&output) {
                eprintln!("kubestore: {e}");
                return ExitCode::FAILURE;
            }
            let o = GetOptions {
                namespace,
                all_namespaces,
                name,
                label_selector: selector.unwrap_or_default(),
                field_selector: field_selector.unwrap_or_default(),
                watch,
                output,
            };
            let print = |s: String| println!("{s}");
            use kubestore_cli::resource::{Named, resolve};
            let r = match resolve(&ch, &kind).await {
                Ok(Some(Named::Pods)) => get::<Pod>(&ch, &o, print).await,
                Ok(Some(Named::ConfigMaps)) => get::<ConfigMap>(&ch, &o, print).await,
                Ok(Some(Named::Events)) => get::<Event>(&ch, &o, print).await,
                Ok(Some(Named::Secrets)) => get::<Secret>(&ch, &o, print).await,
                Ok(Some(Named::Definitions)) => custom::get_definitions(&ch, &o, print).await,
                Ok(Some(Named::Custom(r))) => custom::get(&ch, &r, &o, print).await,
                Ok(None) => {
                    eprintln!(
                        "kubestore: unknown kind {kind:?}: use pods, configmaps, events, secrets, crd or a kind a custom resource definition serves"
                    );
                    return ExitCode::FAILURE;
                }
                Err(s) => Err(s),
            };
            r.map_or_else(fail, |()| ExitCode::SUCCESS)
        }
        Command::Describe { kind, name } => {
            match kubestore_cli::description::describe(&ch, &namespace, &kind, &name).await {
                Ok(text) => {
                    println!("{text}");
                    ExitCode::SUCCESS
                }
                Err(s) => fail(s),
            }
        }
        Command::Apply { filename, dry_run } => {
            manifest_command(&ch, &namespace, &filename, true, dry_run).await
        }
        Command::Delete {
            filename: Some(filename),
            dry_run,
            ..
        } => manifest_command(&ch, &namespace, &filename, false, dry_run).await,
        Command::Delete {
            resource, dry_run, ..
        } => match resource.split_first() {
            Some((kind, names)) if !names.is_empty() && dry_run == DryRun::Client => {
                let Some(target) = target(&ch, namespace, kind, String::new()).await else {
                    return ExitCode::FAILURE;
                };
                let (lines, ok) =
                    client_dry_run::delete_named(&ch, target.kind, &target.namespace, names).await;
                print_results(lines, ok)
            }
            Some((kind, names)) if !names.is_empty() => {
                let (lines, ok) =
                    apply::delete_named(&ch, &namespace, kind, names, dry_run == DryRun::Server)
                        .await;
                print_results(lines, ok)
            }
            _ => {
                eprintln!(
                    "kubestore: delete needs -f FILE, or a kind and at least one name (delete pod web)"
                );
                ExitCode::FAILURE
            }
        },
        Command::Label(c) => map_command(&ch, namespace, "labels", c).await,
        Command::Annotate(c) => map_command(&ch, namespace, "annotations", c).await,
        Command::Patch {
            kind,
            name,
            patch,
            patch_type,
            dry_run,
        } => {
            let Some(target) = target(&ch, namespace, &kind, name).await else {
                return ExitCode::FAILURE;
            };
            let r = modify::modify(&ch, &target, dry_run, |current| {
                kubestore_cli::patch::apply(patch_type, current, &patch).map(|v| (v, Vec::new()))
            })
            .await;
            changed(&target, r, "patched", "patched (no change)", dry_run)
        }
        Command::Edit { kind, name } => {
            let Some(target) = target(&ch, namespace, &kind, name).await else {
                return ExitCode::FAILURE;
            };
            let editor = ["KUBE_EDITOR", "EDITOR"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
                .unwrap_or_else(|| "vi".into());
            match modify::edit(&ch, &target, &editor, false).await {
                Ok(modify::Edited::Cancelled) => {
                    println!("Edit cancelled, no changes made.");
                    ExitCode::SUCCESS
                }
                Ok(modify::Edited::Edited { warnings }) => {
                    for w in warnings {
                        eprintln!("{w}");
                    }
                    println!("{} edited", target.what());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
        // Handled before connecting to registry-svc (it talks to storage-svc).
        Command::Storage { .. }
        | Command::ControllerManager { .. }
        | Command::Completion { .. } => ExitCode::FAILURE,
    }
}

/// The object `kind`/`name` names, or None after saying why not.
async fn target(ch: &Ch, namespace: String, kind: &str, name: String) -> Option<modify::Target> {
    use kubestore_cli::resource::{resolve, unknown};
    match resolve(ch, kind).await {
        Ok(Some(kind)) => Some(modify::Target {
            kind,
            namespace,
            name,
        }),
        Ok(None) => {
            eprintln!("{}", unknown(kind));
            None
        }
        Err(s) => {
            eprintln!("{}", describe(&s));
            None
        }
    }
}

/// `label` and `annotate`: `field` is `labels` or `annotations`.
async fn map_command(ch: &Ch, namespace: String, field: &str, c: MapChange) -> ExitCode {
    let MapChange {
        kind,
        name,
        changes,
        overwrite,
        dry_run,
    } = c;
    let edits = match kubestore_cli::patch::map_edits(&changes) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(target) = target(ch, namespace, &kind, name).await else {
        return ExitCode::FAILURE;
    };
    let r = modify::modify(ch, &target, dry_run, |current| {
        let mut next = current.clone();
        let warnings = kubestore_cli::patch::edit_map(&mut next, field, &edits, overwrite)?;
        Ok((next, warnings))
    })
    .await;
    let (done, not) = if field == "labels" {
        ("labeled", "not labeled")
    } else {
        ("annotated", "not annotated")
    };
    changed(&target, r, done, not, dry_run)
}

/// Prints what a change did (kubectl's words) and says how it went.
fn changed(
    target: &modify::Target,
    r: Result<modify::Changed, String>,
    done: &str,
    unchanged: &str,
    dry_run: DryRun,
) -> ExitCode {
    match r {
        Ok(c) => {
            for w in &c.warnings {
                eprintln!("{w}");
            }
            let word = if c.changed { done } else { unchanged };
            println!("{} {word}{}", target.what(), dry_run.suffix());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn manifest_command(
    ch: &Ch,
    ns: &str,
    file: &str,
    apply_it: bool,
    dry_run: DryRun,
) -> ExitCode {
    let (docs, unreadable) = match apply::read(file) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("kubestore: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = dry_run == DryRun::Server;
    let (mut lines, ok) = match (dry_run, apply_it) {
        (DryRun::Client, _) => client_dry_run::manifest(ch, ns, docs, apply_it).await,
        (_, true) => apply::apply_with(ch, ns, docs, server).await,
        (_, false) => apply::delete_with(ch, ns, docs, server).await,
    };
    let ok = ok && unreadable.is_empty();
    lines.extend(unreadable);
    print_results(lines, ok)
}

/// Prints apply/delete results and says how it went. Results on stdout, warnings and errors on
/// stderr: `apply -f x.yaml | grep created` and scripts reading stdout see only what was done.
fn print_results(lines: Vec<String>, ok: bool) -> ExitCode {
    for l in lines {
        if apply::is_diagnostic(&l) {
            eprintln!("{l}");
        } else {
            println!("{l}");
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
