//! TLS of the REST API: the gRPC server's certificate and client CA (`--tls-cert-file`,
//! `--tls-private-key-file`, `--client-ca-file`), HTTP/1.1 and h2 offered by ALPN, and the
//! client's identity from its certificate as kube-apiserver reads it (`x509` authenticator:
//! CN = user, O = groups).
//!
//! With a client CA, the handshake asks for a certificate but lets a client without one through,
//! so that its requests get upstream's `401 Unauthorized` Status instead of a handshake failure
//! kubectl can only print as a TLS error. A certificate that does not verify still fails the
//! handshake.

use std::{path::Path, sync::Arc};

use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio_rustls::rustls::{self, ServerConfig, server::WebPkiClientVerifier};

use kubestore_telemetry::tls::ServerTlsArgs;

/// Who a client is, by its certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The subject CN.
    pub user: String,
    /// The subject O values.
    pub groups: Vec<String>,
}

fn certs(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{flag} {}: no certificate in it", path.display()));
    }
    Ok(certs)
}

/// The REST API's TLS configuration from the service's flags; None without a certificate.
pub fn config(args: &ServerTlsArgs) -> Result<Option<Arc<ServerConfig>>, String> {
    let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_private_key_file) else {
        return Ok(None);
    };
    let chain = certs("--tls-cert-file", cert)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-private-key-file {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match &args.client_ca_file {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs("--client-ca-file", ca)? {
                roots
                    .add(c)
                    .map_err(|e| format!("--client-ca-file {}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("--client-ca-file {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert-file/--tls-private-key-file: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// The identity in a verified client certificate (`crate::authn::certificate_user`): None for
/// a certificate without a subject CN, which names nobody.
pub fn identity(cert: &[u8]) -> Option<Identity> {
    crate::authn::certificate_user(cert).map(|u| Identity {
        user: u.name,
        groups: u.groups,
    })
}
