//! ServiceAccount tokens: kube-apiserver's flags (`--service-account-issuer`,
//! `--service-account-signing-key-file`, `--service-account-key-file`, `--api-audiences`,
//! `--service-account-max-token-expiration`), the JWTs (`token`), the authenticator that
//! accepts them (`authenticator`) and the TokenRequest that issues them (`token_request`). The
//! ServiceAccount kind itself is an ordinary kind (`kinds::service_account`).
//!
//! A server with key files verifies tokens; one with the signing key also issues them. Keys
//! are P-256 (`openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`; ES256) or RSA
//! (RS256, kubeadm's default), PKCS#8 PEM.

pub mod authenticator;
pub mod token;
pub mod token_request;

use std::{path::PathBuf, sync::Arc, time::Duration};

pub use authenticator::{Getter, TokenAuthenticator};
pub use token_request::TokenIssuer;

/// The flags.
#[derive(clap::Args, Clone, Debug, Default)]
#[group(id = "service-account-tokens")]
pub struct Flags {
    /// The `iss` of the ServiceAccount tokens this server issues (a URL, as upstream's
    /// `--service-account-issuer`). Repeatable: the first signs, all are accepted.
    #[arg(
        long = "service-account-issuer",
        env = "SERVICE_ACCOUNT_ISSUER",
        value_delimiter = ','
    )]
    pub issuers: Vec<String>,
    /// PKCS#8 PEM private key (P-256 or RSA) that signs ServiceAccount tokens; unset: this
    /// server issues none (TokenRequest answers 500), and verifies with the key files.
    #[arg(
        long = "service-account-signing-key-file",
        env = "SERVICE_ACCOUNT_SIGNING_KEY_FILE"
    )]
    pub signing_key_file: Option<PathBuf>,
    /// PEM public keys that verify ServiceAccount tokens; must hold the signing key's.
    /// Repeatable (or comma-separated).
    #[arg(
        long = "service-account-key-file",
        env = "SERVICE_ACCOUNT_KEY_FILE",
        value_delimiter = ','
    )]
    pub key_files: Vec<PathBuf>,
    /// Audiences a token must name one of (kube-apiserver's `--api-audiences`); default the
    /// issuers. Also the audiences of a TokenRequest that names none.
    #[arg(long = "api-audiences", env = "API_AUDIENCES", value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// Longest token a TokenRequest gets; longer requests are shortened (upstream's
    /// `--service-account-max-token-expiration`). Unset: 2^32 s, upstream's bound.
    #[arg(long = "service-account-max-token-expiration", env = "SERVICE_ACCOUNT_MAX_TOKEN_EXPIRATION", value_parser = kubestore_telemetry::deadline::parse_duration)]
    pub max_token_expiration: Option<Duration>,
}

/// What the flags make: the authenticator, and the issuer when there is a signing key.
pub struct Tokens {
    /// Verifies tokens.
    pub authenticator: Arc<TokenAuthenticator>,
    /// Issues them (TokenRequest), if this server has the signing key.
    pub issuer: Option<Arc<TokenIssuer>>,
}

impl Flags {
    /// The authenticator and issuer the flags configure (None: no key files, no tokens). An
    /// error names the flag and file.
    pub fn build(&self, getter: Getter) -> Result<Option<Tokens>, String> {
        if self.key_files.is_empty() {
            if self.signing_key_file.is_some() {
                return Err(
                    "--service-account-signing-key-file needs --service-account-key-file with its \
                     public key (`openssl pkey -in KEY -pubout`)"
                        .into(),
                );
            }
            return Ok(None);
        }
        let read = |flag: &str, p: &PathBuf| {
            std::fs::read(p).map_err(|e| format!("{flag} {}: cannot read: {e}", p.display()))
        };
        let verifying = self
            .key_files
            .iter()
            .map(|p| {
                let what = format!("--service-account-key-file {}", p.display());
                read("--service-account-key-file", p).map(|pem| (what, pem))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let signing = self
            .signing_key_file
            .as_ref()
            .map(|p| {
                read("--service-account-signing-key-file", p).map(|pem| {
                    (
                        format!("--service-account-signing-key-file {}", p.display()),
                        pem,
                    )
                })
            })
            .transpose()?;
        let audiences = if self.api_audiences.is_empty() {
            self.issuers.clone()
        } else {
            self.api_audiences.clone()
        };
        let keys = Arc::new(token::Keys::new(
            signing
                .as_ref()
                .map(|(w, pem)| (w.as_str(), pem.as_slice())),
            &verifying,
            self.issuers.clone(),
            audiences,
        )?);
        let issuer = keys.signs().then(|| {
            Arc::new(TokenIssuer::new(
                keys.clone(),
                getter.clone(),
                self.max_token_expiration,
            ))
        });
        Ok(Some(Tokens {
            authenticator: Arc::new(TokenAuthenticator::new(keys, getter)),
            issuer,
        }))
    }
}
