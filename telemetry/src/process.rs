//! What every kubestore binary does around its library's `run`: a multi-threaded runtime,
//! the `healthcheck` subcommand, telemetry from the standard variables, binding, SIGTERM/SIGINT,
//! and flushing spans after the server has drained.

use std::{
    fmt::Display, future::Future, net::SocketAddr, pin::Pin, process::ExitCode, time::Duration,
};

use crate::{LogFormat, TelemetryConfig, shutdown, tls::ClientTlsArgs, tracing_setup};

/// The shutdown future handed to `run`.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The stack of the runtime's threads (workers and its blocking pool), reserved, not
/// committed: a request's futures are polled on them, nested as deep as the request's layers,
/// and the work at the bottom (a structured-merge-diff walk of an object, a validation) adds
/// its own. Tokio's 2 MiB default left a debug build's apply of a Pod without room; Go, which
/// kube-apiserver runs on, grows its stacks instead.
pub const THREAD_STACK_BYTES: usize = 8 << 20;

/// Runs a service binary. With `healthcheck`, only asks the server at `listen` whether it is
/// SERVING (exit 0) and returns: over TLS when its flags give a CA.
pub fn main<F, Fut, E>(
    name: &str,
    log_format: LogFormat,
    listen: SocketAddr,
    healthcheck: Option<ClientTlsArgs>,
    run: F,
) -> ExitCode
where
    F: FnOnce(tokio::net::TcpListener, Shutdown) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    // As Go's runtime does for kube-apiserver: every connection is a descriptor, and the
    // usual soft limit (1,024) is a small fraction of what the hard limit allows.
    raise_nofile(None);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(THREAD_STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(tls) = healthcheck {
        let host = if listen.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            listen.ip().to_string()
        };
        let tls = match tls.config() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{name} healthcheck: {e}");
                return ExitCode::FAILURE;
            }
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{host}:{}", listen.port());
        let check = crate::health::check_with(&url, "", Duration::from_secs(3), tls);
        return match runtime.block_on(check) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name} healthcheck: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // The exporter's channel must be created inside the runtime.
    let guard = match runtime
        .block_on(async { tracing_setup::init(&TelemetryConfig::from_env(name, log_format)) })
    {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("cannot bind --listen-addr {listen}: {e}"))?;
        run(listener, Box::pin(shutdown::signal()))
            .await
            .map_err(|e| e.to_string())
    });
    // Flush spans after the server has drained, outside block_on (the SDK's flush blocks).
    guard.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Raises this process's soft limit on open files to `want` (None: to the hard limit), never
/// past the hard limit; children started afterwards inherit it. The soft limit after.
pub fn raise_nofile(want: Option<u64>) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        let want = want.unwrap_or(lim.rlim_max).min(lim.rlim_max);
        if lim.rlim_cur >= want {
            return lim.rlim_cur;
        }
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: lim.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            return raised.rlim_cur;
        }
        lim.rlim_cur
    }
}

/// This process's soft limit on open files (0 if it cannot be read).
pub fn nofile() -> u64 {
    raise_nofile(Some(0))
}
