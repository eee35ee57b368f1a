//! The registry-svc binary: parse configuration, start telemetry, call [`registry_svc::run`].

use std::{process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kubestore_telemetry::{TelemetryConfig, shutdown, tracing_setup};

#[derive(Parser)]
#[command(
    name = "registry-svc",
    version,
    about = "Typed Kubernetes-style resources on storage-svc"
)]
struct Cli {
    #[command(flatten)]
    config: registry_svc::Config,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Exit 0 if the server at --listen-addr reports SERVING (for container healthchecks).
    Healthcheck,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("registry-svc: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(Command::Healthcheck) = cli.command {
        let addr = cli.config.listen_addr;
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let url = format!("http://{host}:{}", addr.port());
        return match runtime.block_on(kubestore_telemetry::health::check(
            &url,
            "",
            Duration::from_secs(3),
        )) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("registry-svc healthcheck: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let config = cli.config;
    let guard = match runtime.block_on(async {
        tracing_setup::init(&TelemetryConfig::from_env(
            "registry-svc",
            config.log_format,
        ))
    }) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("registry-svc: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen_addr).await?;
        registry_svc::run(listener, config, shutdown::signal()).await
    });
    // Flush spans after the server has drained (outside the runtime's block_on).
    guard.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("registry-svc: {e}");
            ExitCode::FAILURE
        }
    }
}
