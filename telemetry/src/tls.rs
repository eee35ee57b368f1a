//! TLS on every hop, with Kubernetes' flag names: what a server presents and whom it accepts
//! (`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`), what a client trusts and
//! presents (kubectl's `--certificate-authority`, `--client-certificate`, `--client-key`, and
//! per-hop equivalents in the services), and the allow-list of client certificate common names
//! storage-svc accepts (`--allowed-client-names`, like kube-apiserver's
//! `--requestheader-allowed-names`: the subject CN only, never a SAN).
//!
//! rustls with ring's primitives does the cryptography (tonic's `tls-ring`); this module only
//! reads files and checks that they go together, so that a mistake is reported at start, naming
//! the flag and the file, instead of as a handshake failure later.

use std::{
    path::{Path, PathBuf},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use tonic::{
    Status,
    body::Body,
    transport::{
        Certificate, ClientTlsConfig, Identity, ServerTlsConfig,
        server::{TcpConnectInfo, TlsConnectInfo},
    },
};
use tonic_types::{ErrorDetails, StatusExt};

/// A TLS file that cannot be used, or files that do not go together.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file is unreadable or holds no PEM block.
    #[error("{flag} {path}: {reason}")]
    File {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Flags that need each other.
    #[error("{0}")]
    Combination(String),
}

/// Reads a PEM file named by `flag`.
fn pem(flag: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|e| TlsError::File {
        flag,
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(TlsError::File {
            flag,
            path: path.to_path_buf(),
            reason: "no PEM block (-----BEGIN ...) in it".into(),
        });
    }
    Ok(bytes)
}

/// A certificate and its key, both or neither.
fn identity(
    (cert_flag, cert): (&'static str, Option<&Path>),
    (key_flag, key): (&'static str, Option<&Path>),
) -> Result<Option<Identity>, TlsError> {
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(c), Some(k)) => Ok(Some(Identity::from_pem(
            pem(cert_flag, c)?,
            pem(key_flag, k)?,
        ))),
        _ => Err(TlsError::Combination(format!(
            "{cert_flag} and {key_flag} go together"
        ))),
    }
}

/// What a server presents and whom it accepts.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ServerTlsArgs {
    /// Serve TLS with this certificate (PEM, with its chain); needs --tls-private-key-file.
    #[arg(long, env = "TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, env = "TLS_PRIVATE_KEY_FILE")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Require a client certificate signed by one of these CAs (PEM): mutual TLS. Needs
    /// --tls-cert-file.
    #[arg(long, env = "CLIENT_CA_FILE")]
    pub client_ca_file: Option<PathBuf>,
    /// With a client CA, let a client without a certificate complete the handshake (one that
    /// sends a certificate must still present one the CA signed): set by a service that
    /// authenticates such clients otherwise (registry-svc's bearer tokens). Not a flag.
    #[arg(skip)]
    pub client_auth_optional: bool,
}

impl ServerTlsArgs {
    /// The server's TLS configuration; `None` serves plaintext.
    pub fn config(&self) -> Result<Option<ServerTlsConfig>, TlsError> {
        let Some(id) = identity(
            ("--tls-cert-file", self.tls_cert_file.as_deref()),
            (
                "--tls-private-key-file",
                self.tls_private_key_file.as_deref(),
            ),
        )?
        else {
            return match self.client_ca_file {
                Some(_) => Err(TlsError::Combination(
                    "--client-ca-file needs --tls-cert-file and --tls-private-key-file: \
                     client certificates are only asked for over TLS"
                        .into(),
                )),
                None => Ok(None),
            };
        };
        let mut config = ServerTlsConfig::new().identity(id);
        if let Some(ca) = &self.client_ca_file {
            // With a client CA, rustls refuses connections without a certificate it signed.
            config = config
                .client_ca_root(Certificate::from_pem(pem("--client-ca-file", ca)?))
                .client_auth_optional(self.client_auth_optional);
        }
        Ok(Some(config))
    }

    /// Whether the server speaks TLS.
    pub fn enabled(&self) -> bool {
        self.tls_cert_file.is_some()
    }
}

/// What a client trusts and presents, by file; the flag names are the caller's (they differ
/// per hop), given with each file for errors.
#[derive(Clone, Debug, Default)]
pub struct ClientTlsFiles {
    /// CA bundle that signs the server's certificate, and its flag.
    pub ca: Option<(&'static str, PathBuf)>,
    /// Client certificate, and its flag.
    pub cert: Option<(&'static str, PathBuf)>,
    /// Client key, and its flag.
    pub key: Option<(&'static str, PathBuf)>,
    /// Flag names of cert and key, for "go together" errors when only one is given.
    pub pair_flags: (&'static str, &'static str),
}

impl ClientTlsFiles {
    /// The client's TLS configuration; `None` when no file is given (plaintext).
    pub fn config(&self) -> Result<Option<ClientTlsConfig>, TlsError> {
        let id = identity(
            (
                self.pair_flags.0,
                self.cert.as_ref().map(|(_, p)| p.as_path()),
            ),
            (
                self.pair_flags.1,
                self.key.as_ref().map(|(_, p)| p.as_path()),
            ),
        )?;
        if self.ca.is_none() && id.is_none() {
            return Ok(None);
        }
        let mut config = ClientTlsConfig::new();
        match &self.ca {
            Some((flag, path)) => {
                config = config.ca_certificate(Certificate::from_pem(pem(flag, path)?));
            }
            None => {
                return Err(TlsError::Combination(format!(
                    "{} needs {}: the server's certificate must be checked against a CA",
                    self.pair_flags.0,
                    ca_flag_for(self.pair_flags.0)
                )));
            }
        }
        if let Some(id) = id {
            config = config.identity(id);
        }
        Ok(Some(config))
    }
}

/// The CA flag that goes with a client-certificate flag (for error messages).
fn ca_flag_for(cert_flag: &str) -> &'static str {
    match cert_flag {
        "--storage-cert-file" => "--storage-ca-file",
        "--etcd-certfile" => "--etcd-cafile",
        _ => "--certificate-authority",
    }
}

/// kubectl-style client flags, for the CLI and the `healthcheck` subcommands.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ClientTlsArgs {
    /// CA bundle (PEM) that signs the server's certificate; use an https:// address.
    #[arg(long, global = true, env = "KUBESTORE_CERTIFICATE_AUTHORITY")]
    pub certificate_authority: Option<PathBuf>,
    /// Client certificate (PEM), for servers that require one.
    #[arg(long, global = true, env = "KUBESTORE_CLIENT_CERTIFICATE")]
    pub client_certificate: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, global = true, env = "KUBESTORE_CLIENT_KEY")]
    pub client_key: Option<PathBuf>,
    /// The name the server's certificate must carry, when it differs from the address's host
    /// (e.g. connecting to 127.0.0.1 a certificate made for `storage-svc`).
    #[arg(long, global = true, env = "KUBESTORE_TLS_SERVER_NAME")]
    pub tls_server_name: Option<String>,
}

impl ClientTlsArgs {
    /// The TLS configuration; `None`: plaintext.
    pub fn config(&self) -> Result<Option<ClientTlsConfig>, TlsError> {
        let config = self.files().config()?;
        Ok(match (config, &self.tls_server_name) {
            (Some(c), Some(name)) => Some(c.domain_name(name.clone())),
            (c, _) => c,
        })
    }

    /// As [`ClientTlsFiles`].
    pub fn files(&self) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: self
                .certificate_authority
                .clone()
                .map(|p| ("--certificate-authority", p)),
            cert: self
                .client_certificate
                .clone()
                .map(|p| ("--client-certificate", p)),
            key: self.client_key.clone().map(|p| ("--client-key", p)),
            pair_flags: ("--client-certificate", "--client-key"),
        }
    }
}

/// What a plaintext client sees from a TLS server (an HTTP/2 protocol error or a bare
/// transport error) says nothing of TLS; this hint is added to such errors.
pub const PLAINTEXT_HINT: &str =
    "(if the server serves TLS, use an https:// address and --certificate-authority)";

/// Checks that `url` and a TLS configuration agree: https with TLS, http without.
pub fn check_scheme(flag: &str, url: &str, tls: bool) -> Result<(), TlsError> {
    let https = url.starts_with("https://");
    match (https, tls) {
        (true, false) => Err(TlsError::Combination(format!(
            "{flag} {url} is https:// but no CA is given to check its certificate"
        ))),
        (false, true) => Err(TlsError::Combination(format!(
            "{flag} {url}: TLS is configured, so the address must be https://"
        ))),
        _ => Ok(()),
    }
}

/// The subject common name (CN) of a DER certificate, the one name `--allowed-client-names`
/// checks. Upstream's `--requestheader-allowed-names` (the x509 `Verifier.verifySubject` of
/// k8s.io/apiserver) compares the subject's CN only, never the subject alternative names: a
/// SAN says which hosts a certificate may serve, not who the client is, and a CA that issues
/// server certificates with a SAN `registry-svc` (a load balancer's, a sidecar's) must not
/// thereby make its holder storage's client. With several CN attributes the last one counts, as
/// Go's `pkix.Name.FillFromRDNSequence` keeps the last.
pub fn subject_common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    cert.subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_string))
        .last()
}

/// Refuses calls whose client certificate's subject CN is none of the allowed names
/// (PERMISSION_DENIED, reason `Forbidden`); subject alternative names are not considered
/// ([`subject_common_name`]). Empty: every client the TLS handshake let in is allowed. Only
/// meaningful with `--client-ca-file` (without a verified client certificate there is no name
/// to check, and every call is refused). Health checks are exempt: they reveal nothing, and a
/// prober (the `healthcheck` subcommand, a load balancer) holds a certificate of the CA but is
/// not a client of the data.
#[derive(Clone, Debug)]
pub struct AllowedNamesLayer {
    allowed: Arc<Vec<String>>,
    domain: &'static str,
}

impl AllowedNamesLayer {
    /// Allows `allowed` (none: all); errors name `domain`.
    pub fn new(allowed: Vec<String>, domain: &'static str) -> Self {
        Self {
            allowed: Arc::new(allowed),
            domain,
        }
    }
}

impl<S> tower::Layer<S> for AllowedNamesLayer {
    type Service = AllowedNames<S>;
    fn layer(&self, inner: S) -> Self::Service {
        AllowedNames {
            inner,
            allowed: self.allowed.clone(),
            domain: self.domain,
        }
    }
}

/// The service made by [`AllowedNamesLayer`].
#[derive(Clone, Debug)]
pub struct AllowedNames<S> {
    inner: S,
    allowed: Arc<Vec<String>>,
    domain: &'static str,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for AllowedNames<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if self.allowed.is_empty() || request.uri().path().starts_with("/grpc.health.v1.Health/") {
            return Box::pin(self.inner.call(request));
        }
        let certs = request
            .extensions()
            .get::<TlsConnectInfo<TcpConnectInfo>>()
            .and_then(TlsConnectInfo::peer_certs);
        // The leaf certificate (the first of the chain) names the client.
        let leaf = certs.as_ref().and_then(|c| c.first());
        let cn = leaf.and_then(|c| subject_common_name(c));
        if cn.as_ref().is_some_and(|n| self.allowed.contains(n)) {
            return Box::pin(self.inner.call(request));
        }
        let message = match (leaf, cn) {
            (None, _) => {
                "no client certificate: only clients named in --allowed-client-names may call"
                    .to_string()
            }
            (Some(_), None) => "the client certificate has no subject common name (CN): only \
                                clients whose CN is in --allowed-client-names may call"
                .to_string(),
            (Some(_), Some(cn)) => format!(
                "client certificate with CN={cn} is not in --allowed-client-names (only the \
                 subject CN is checked, not subject alternative names)"
            ),
        };
        let mut details = ErrorDetails::new();
        details.set_error_info(
            "Forbidden",
            self.domain,
            [("reason".to_string(), "client-name".to_string())],
        );
        let status = Status::with_error_details(tonic::Code::PermissionDenied, message, details);
        Box::pin(async move { Ok(status.into_http()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_that_need_each_other_are_named() {
        let only_cert = ServerTlsArgs {
            tls_cert_file: Some("/nonexistent.crt".into()),
            ..Default::default()
        };
        let e = only_cert.config().expect_err("pair").to_string();
        assert_eq!(e, "--tls-cert-file and --tls-private-key-file go together");
        let files = ClientTlsFiles {
            cert: Some(("--storage-cert-file", "/x.crt".into())),
            key: Some(("--storage-key-file", "/x.key".into())),
            pair_flags: ("--storage-cert-file", "--storage-key-file"),
            ..Default::default()
        };
        let e = files.config().expect_err("unreadable").to_string();
        assert!(e.starts_with("--storage-cert-file /x.crt: "), "{e}");
        assert!(
            check_scheme("--storage-addr", "http://a:1", true)
                .expect_err("scheme")
                .to_string()
                .contains("must be https://")
        );
        assert!(check_scheme("--storage-addr", "https://a:1", false).is_err());
        assert!(check_scheme("--storage-addr", "http://a:1", false).is_ok());
    }

    #[test]
    fn a_file_without_pem_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("kubestore-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let der = dir.join("cert.der");
        std::fs::write(&der, [0x30, 0x82, 0x01]).expect("write");
        let args = ServerTlsArgs {
            tls_cert_file: Some(der.clone()),
            tls_private_key_file: Some(der.clone()),
            client_ca_file: None,
            ..Default::default()
        };
        let e = args.config().expect_err("not PEM").to_string();
        assert!(e.contains("no PEM block"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
