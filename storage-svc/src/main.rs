//! The storage-svc binary: parse configuration, then [`kubestore_telemetry::process::main`]
//! starts telemetry and calls [`storage_svc::run`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// glibc's allocator spent a third of the service's CPU in malloc/free/memmove under load
/// (BENCHMARKS.md); mimalloc's thread-local free lists suit tonic's many small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "storage-svc",
    version,
    about = "Resource-agnostic object storage on etcd, over gRPC"
)]
struct Cli {
    #[command(flatten)]
    config: storage_svc::Config,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Exit 0 if the server at --listen-addr reports SERVING (for container healthchecks);
    /// over TLS with --certificate-authority (and a client certificate for mTLS).
    Healthcheck(kubestore_telemetry::tls::ClientTlsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = cli.config;
    let healthcheck = cli.command.map(|Command::Healthcheck(tls)| tls);
    kubestore_telemetry::process::main(
        "storage-svc",
        config.log_format,
        config.listen_addr,
        healthcheck,
        |listener, shutdown| storage_svc::run(listener, config, shutdown),
    )
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
