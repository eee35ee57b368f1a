//! The request chain's configuration, built once at start from the flags: who a request is
//! (`authn`: the token file, ServiceAccount tokens, anonymous requests) and what it may do
//! (`authz`: the gate of `--authorization-mode`, with the RBAC authorizer started when asked
//! for), and whether a request without credentials is the local administrator. Both transports take the same
//! [`Chain`].

use std::sync::Arc;

use crate::{
    Config, authn,
    authz::{self, Mode},
    rbac, serviceaccount,
};

/// What the transports authenticate and authorize with.
pub struct Chain {
    /// The authenticator union.
    pub authenticator: Arc<authn::Authenticator>,
    /// The authorizer union.
    pub gate: Arc<authz::Gate>,
    /// Whether a request without credentials is the local administrator: plain ports (the
    /// local-development mode), or TLS with nothing to authenticate with (no client CA, no
    /// token file) under `AlwaysAllow`, as every request was before authentication existed.
    /// Under another mode such a request is anonymous (or refused), never an administrator.
    pub open: bool,
    /// Issues ServiceAccount tokens (TokenRequest), with `--service-account-signing-key-file`.
    pub token_issuer: Option<Arc<serviceaccount::TokenIssuer>>,
}

/// The chain of `config`; RBAC (when a mode) follows `stores` until `stop`, and `guard` learns
/// of it for the escalation checks; ServiceAccount tokens read accounts through `accounts`. An
/// error names the flag.
pub fn build(
    config: &Config,
    stores: rbac::Stores,
    accounts: serviceaccount::Getter,
    guard: &rbac::escalation::Guard,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Chain, String> {
    // Upstream's options: anonymous requests are refused under AlwaysAllow, which would let
    // them do anything.
    let always_allow = config.authorization_mode.contains(&Mode::AlwaysAllow);
    if config.anonymous_auth && always_allow && config.tls.enabled() {
        tracing::info!(
            "--anonymous-auth is not allowed with the AlwaysAllow authorizer: anonymous requests are refused"
        );
    }
    let tokens = config.service_accounts.build(accounts)?;
    let authenticator = Arc::new(authn::Authenticator {
        service_accounts: tokens.as_ref().map(|t| t.authenticator.clone()),
        tokens: config
            .token_auth_file
            .as_deref()
            .map(authn::TokenFile::read)
            .transpose()?,
        anonymous: config.anonymous_auth && !always_allow,
    });
    if authenticator.takes_tokens() && !config.tls.enabled() {
        tracing::warn!(
            "tokens without TLS: tokens travel in cleartext, and a request without \
             one is the local administrator (system:unsecured); serve TLS to make tokens a gate"
        );
    }
    // RBAC follows its kinds only when asked for: AlwaysAllow serves without the watches.
    let rbac = if config.authorization_mode.contains(&Mode::Rbac) {
        let rbac = rbac::start(stores, stop)?;
        guard.set(rbac.clone());
        Some(rbac as Arc<dyn authz::Authorizer>)
    } else {
        None
    };
    let gate = Arc::new(authz::Gate::new(&config.authorization_mode, rbac)?);
    let open = !config.tls.enabled()
        || (config.tls.client_ca_file.is_none()
            && !authenticator.takes_tokens()
            && config.authorization_mode.first() == Some(&Mode::AlwaysAllow));
    Ok(Chain {
        authenticator,
        gate,
        open,
        token_issuer: tokens.and_then(|t| t.issuer),
    })
}
