//! The `kubestore` binary: parses the command line, sets up telemetry (traces go to the
//! standard `OTEL_*` endpoint when set), connects, and runs the command from the library.

use std::{process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kubestore_cli::{
    Ch,
    agent::{self, AgentConfig},
    connect_with, demo, describe,
    verbs::{self, Verb},
};
use kubestore_controllers::manager;
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
    /// Who to be (kubectl's flags): --token, --as, --as-group.
    #[command(flatten)]
    credentials: kubestore_cli::Credentials,
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
    /// The kubectl-like verbs: get, describe, apply, delete, label, annotate, patch, edit.
    #[command(flatten)]
    Verb(Verb),
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
        let ch = match connect_with(&cli.registry, &cli.tls, &cli.credentials).await {
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
    let ch = match kubestore_cli::connect_lazy_with(&cli.registry, &cli.tls, &cli.credentials) {
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
        Command::Verb(verb) => verbs::run(&ch, namespace, verb).await,
        // Handled before connecting to registry-svc (it talks to storage-svc).
        Command::Storage { .. }
        | Command::ControllerManager { .. }
        | Command::Completion { .. } => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The flags flattened into the command are consistent (clap checks ids, groups and names
    /// only when it builds the command: a clash would panic at start).
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
