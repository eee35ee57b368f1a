//! Client side of `grpc.health.v1`, for the `healthcheck` subcommand of both binaries (used by
//! docker-compose healthchecks, where no grpcurl or grpc_health_probe is installed).

use std::time::Duration;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

/// Asks `addr` (e.g. `http://127.0.0.1:50051`) whether `service` ("" = the whole server) is
/// SERVING. Errors name what failed.
pub async fn check(addr: &str, service: &str, timeout: Duration) -> Result<(), String> {
    let channel = tonic::transport::Endpoint::from_shared(addr.to_string())
        .map_err(|e| format!("invalid address {addr:?}: {e}"))?
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect()
        .await
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let resp = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .map_err(|s| format!("health check failed: {}: {}", s.code(), s.message()))?;
    match resp.into_inner().status() {
        ServingStatus::Serving => Ok(()),
        other => Err(format!("{addr} is {}", other.as_str_name())),
    }
}
