//! Client side of `grpc.health.v1`, for the `healthcheck` subcommand of both binaries (used by
//! docker-compose healthchecks, where no grpcurl or grpc_health_probe is installed).

use std::time::Duration;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

/// Asks `addr` (e.g. `http://127.0.0.1:50051`) whether `service` ("" = the whole server) is
/// SERVING. Errors name what failed.
pub async fn check(addr: &str, service: &str, timeout: Duration) -> Result<(), String> {
    check_with(addr, service, timeout, None).await
}

/// [`check`] over TLS when `tls` is given (`addr` is then https://).
pub async fn check_with(
    addr: &str,
    service: &str,
    timeout: Duration,
    tls: Option<tonic::transport::ClientTlsConfig>,
) -> Result<(), String> {
    let mut endpoint = tonic::transport::Endpoint::from_shared(addr.to_string())
        .map_err(|e| format!("invalid address {addr:?}: {e}"))?;
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| format!("TLS configuration: {e}"))?;
    }
    let channel = endpoint
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {addr}: {}", crate::error_chain(&e)))?;
    let resp = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .map_err(|s| {
            let hint = if addr.starts_with("http://") {
                format!(" {}", crate::tls::PLAINTEXT_HINT)
            } else {
                String::new()
            };
            format!("health check failed: {}: {}{hint}", s.code(), s.message())
        })?;
    match resp.into_inner().status() {
        ServingStatus::Serving => Ok(()),
        other => Err(format!("{addr} is {}", other.as_str_name())),
    }
}
