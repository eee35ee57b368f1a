//! `kubestore`, a client of registry-svc, as a library so the tests can drive it.
//!
//! The kubectl-like verbs know no kind: they ask registry-svc's generic API
//! (`registry.v1.Resources`) what it serves and speak to every resource the same way, objects as
//! Kubernetes JSON, tables printed by the server.
//!
//! - [`client`]: the generic API's calls, objects as JSON; [`resource`]: what a kind typed on
//!   the command line (or a manifest's `apiVersion` and `kind`) names, from discovery;
//! - [`manifest`]: Kubernetes manifests in (several YAML documents per file) and objects out
//!   (`-o yaml|json|jsonpath=|custom-columns=`);
//! - [`table`]: the server's Tables as kubectl prints them;
//! - [`get`]: `get` (tables, `-o ...`, `-w`), with [`pager`]: lists in pages of 500 and the
//!   informer's source for `-w`;
//! - [`apply`]: `apply -f`, `delete -f`, `delete KIND NAME...`; [`client_dry_run`]: their
//!   `--dry-run=client`;
//! - [`modify`]: `label`, `annotate`, `patch` (sent to the server's Patch) and `edit` (an Update
//!   at the version read), with [`patch`]: kubectl's `key=value` edits and local patches;
//! - [`description`]: the `describe` verb;
//! - [`kinds`]: the typed Pods API the node agent and the demo use; [`agent`]: the node agent,
//!   a stand-in kubelet that closes the graceful-deletion loop, with [`backoff`], how its
//!   writes are retried; [`demo`]: the guided walk through pods, graceful deletion and
//!   finalizers;
//! - [`jsonpath`]: `-o jsonpath=` and `-o custom-columns=` (the shared crate's);
//! - [`verbs`]: the verbs' command lines and printing, for the `kubestore` binary;
//! - [`rewrite`]: `storage rewrite`, re-storing a resource's objects after a key rotation.

pub mod agent;
pub mod apply;
/// How refused writes are retried (shared with the controllers).
pub use kubestore_controllers::backoff;
pub mod client;
pub mod client_dry_run;
pub mod demo;
pub mod description;
pub mod get;
pub use kubestore_apimachinery::jsonpath;
pub mod kinds;
pub mod manifest;
pub mod modify;
pub mod pager;
pub mod patch;
pub mod resource;
pub mod rewrite;
pub mod table;
pub mod verbs;

use kubestore_telemetry::{
    GrpcTraceLayer, GrpcTraceService,
    tls::{ClientTlsArgs, check_scheme},
};
use tonic::{Status, transport::Channel};
use tonic_types::StatusExt;

/// kubectl's `--dry-run` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    /// For real.
    None,
    /// registry-svc's dry run: validated, defaulted and answered; nothing stored.
    Server,
    /// Told by the CLI after reading the objects; nothing written, nothing validated
    /// ([`client_dry_run`]).
    Client,
}

impl DryRun {
    /// What kubectl appends to each line.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Server => " (server dry run)",
            Self::Client => client_dry_run::SUFFIX,
        }
    }
}

/// Largest response the CLI accepts (tonic's default is 4 MiB, which one page of Secrets
/// passes easily). registry-svc passes a List page on as storage-svc made it and accepts pages
/// of up to 1 GiB from storage-svc (its `storage::MAX_RESPONSE_BYTES`), so that is what it can
/// send; a page of [`pager::CHUNK_SIZE`] objects, each at most what etcd stores
/// ([`kubestore_proto::limits::ETCD_MAX_REQUEST_BYTES`], 1.5 MiB), is 750 MiB at worst. The
/// same bound serves `storage rewrite`'s pages from storage-svc.
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

// A full page of the largest objects must fit.
const _: () = assert!(
    pager::CHUNK_SIZE as usize * kubestore_proto::limits::ETCD_MAX_REQUEST_BYTES
        < MAX_RESPONSE_BYTES
);

/// The traced channel to registry-svc every client uses.
pub type Ch = GrpcTraceService<Channel>;

/// `url` with a scheme: `127.0.0.1:50052` and `localhost:50052` (as grpcurl users type an
/// address) become `http://...`, or `https://...` when TLS is configured; a URL with a scheme
/// is left as it is.
pub fn with_scheme(url: &str, tls: bool) -> String {
    if url.contains("://") {
        url.to_string()
    } else if tls {
        format!("https://{url}")
    } else {
        format!("http://{url}")
    }
}

/// Who the CLI (and the node agent and controller-manager it runs) is to registry-svc:
/// kubectl's flags. Without them, a client certificate (`--client-certificate`) or nothing
/// (plain ports: the local administrator).
#[derive(clap::Args, Clone, Default)]
pub struct Credentials {
    /// Bearer token (kubectl's `--token`): one of `--token-auth-file`, or a ServiceAccount's
    /// (`kubectl create token`).
    #[arg(long, env = "KUBESTORE_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// Act as this user (kubectl's `--as`; the caller needs the `impersonate` verb).
    #[arg(long = "as", global = true)]
    pub as_user: Option<String>,
    /// Act as this group (kubectl's `--as-group`), repeatable; needs `--as`.
    #[arg(long = "as-group", global = true)]
    pub as_groups: Vec<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.debug_struct("Credentials")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("as_user", &self.as_user)
            .field("as_groups", &self.as_groups)
            .finish()
    }
}

impl Credentials {
    /// The metadata every call carries (`authorization`, `impersonate-user`,
    /// `impersonate-group`); an error names the flag whose value cannot be sent.
    pub fn metadata(&self) -> Result<http::HeaderMap, String> {
        let value = |flag: &str, v: &str| {
            http::HeaderValue::from_str(v)
                .map_err(|_| format!("{flag}: not a value a header can carry"))
        };
        let mut m = http::HeaderMap::new();
        if let Some(token) = &self.token {
            let mut v = value("--token", &format!("Bearer {}", token.trim()))?;
            v.set_sensitive(true);
            m.insert(http::header::AUTHORIZATION, v);
        }
        if let Some(user) = &self.as_user {
            m.insert("impersonate-user", value("--as", user)?);
        } else if !self.as_groups.is_empty() {
            return Err("--as-group needs --as (upstream refuses groups without a user)".into());
        }
        for g in &self.as_groups {
            m.append("impersonate-group", value("--as-group", g)?);
        }
        Ok(m)
    }
}

/// Connects to registry-svc at `url`, with the client trace layer (W3C `traceparent`).
pub async fn connect(url: &str) -> Result<Ch, String> {
    connect_with(url, &ClientTlsArgs::default(), &Credentials::default()).await
}

/// [`connect`] over TLS when `tls` gives a CA (`url` is then https://), as `credentials`.
pub async fn connect_with(
    url: &str,
    tls: &ClientTlsArgs,
    credentials: &Credentials,
) -> Result<Ch, String> {
    let metadata = credentials.metadata()?;
    let channel = channel_with(url, "--registry", tls).await?;
    Ok(tower::ServiceBuilder::new()
        .layer(GrpcTraceLayer::client_with(metadata))
        .service(channel))
}

/// [`connect_with`], but connecting on first use (and again after a failure): for processes
/// that outlive registry-svc restarts and may start before it (the controller-manager).
pub fn connect_lazy_with(
    url: &str,
    tls: &ClientTlsArgs,
    credentials: &Credentials,
) -> Result<Ch, String> {
    let metadata = credentials.metadata()?;
    let config = tls.config().map_err(|e| e.to_string())?;
    let url = &with_scheme(url, config.is_some());
    check_scheme("--registry", url, config.is_some()).map_err(|e| e.to_string())?;
    let mut endpoint = tonic::transport::Endpoint::from_shared(url.to_string())
        .map_err(|e| format!("invalid --registry {url:?}: {e}"))?
        .connect_timeout(std::time::Duration::from_secs(5));
    if let Some(config) = config {
        endpoint = endpoint
            .tls_config(config)
            .map_err(|e| format!("TLS configuration: {e}"))?;
    }
    Ok(tower::ServiceBuilder::new()
        .layer(GrpcTraceLayer::client_with(metadata))
        .service(endpoint.connect_lazy()))
}

/// A plain channel to `url` (named by `flag` in errors), over TLS when `tls` gives a CA.
pub async fn channel_with(url: &str, flag: &str, tls: &ClientTlsArgs) -> Result<Channel, String> {
    let config = tls.config().map_err(|e| e.to_string())?;
    let url = &with_scheme(url, config.is_some());
    check_scheme(flag, url, config.is_some()).map_err(|e| e.to_string())?;
    let mut endpoint = tonic::transport::Endpoint::from_shared(url.to_string())
        .map_err(|e| format!("invalid {flag} {url:?}: {e}"))?;
    if let Some(config) = config {
        endpoint = endpoint
            .tls_config(config)
            .map_err(|e| format!("TLS configuration: {e}"))?;
    }
    let channel = endpoint.connect().await.map_err(|e| {
        format!(
            "cannot connect to {url}: {}",
            kubestore_telemetry::error_chain(&e)
        )
    })?;
    Ok(channel)
}

/// A status as kubectl words it: `Error from server (Reason): message`.
pub fn describe(status: &Status) -> String {
    let reason = status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_else(|| format!("{:?}", status.code()));
    // A plaintext client talking to a TLS server gets an HTTP/2 protocol error from its own
    // transport, which names neither TLS nor the fix.
    let hint = if status.message().contains("h2 protocol error") {
        format!(" {}", kubestore_telemetry::tls::PLAINTEXT_HINT)
    } else {
        String::new()
    };
    format!("Error from server ({reason}): {}{hint}", status.message())
}

/// Why a verb failed: the server refused (printed as kubectl prints a refusal), or the
/// request could not be made (`error: ...`, kubectl's words for a client-side failure).
#[derive(Debug, Clone)]
pub enum Error {
    /// A refusal from registry-svc.
    Server(Status),
    /// A problem found by the CLI (an unknown kind, bad input).
    Client(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Server(s) => f.write_str(&describe(s)),
            Self::Client(e) => write!(f, "error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Status> for Error {
    fn from(s: Status) -> Self {
        Self::Server(s)
    }
}

#[cfg(test)]
mod tests {
    use super::with_scheme;

    #[test]
    fn an_address_without_a_scheme_is_taken_as_grpcurl_users_type_it() {
        assert_eq!(
            with_scheme("127.0.0.1:50052", false),
            "http://127.0.0.1:50052"
        );
        assert_eq!(
            with_scheme("localhost:50052", true),
            "https://localhost:50052"
        );
        assert_eq!(
            with_scheme("http://a:1", true),
            "http://a:1",
            "kept, and refused later"
        );
        assert_eq!(with_scheme("https://a:1", false), "https://a:1");
    }
}
