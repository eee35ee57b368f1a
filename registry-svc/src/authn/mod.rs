//! Authentication: who a request is (upstream's `WithAuthentication` over its authenticator
//! union, `apiserver/pkg/authentication`). A request's credentials give a [`UserInfo`]:
//!
//! 1. a verified client certificate (CN the user, each O a group: the `x509` authenticator);
//! 2. else a bearer token of `--token-auth-file` ([`token_file`]), or a ServiceAccount token
//!    (`crate::serviceaccount`, with `--service-account-key-file`); a token neither accepts is
//!    `401 Unauthorized`, never anonymous (and a token whose account cannot be read now is
//!    `503`: the server's fault, not the caller's);
//! 3. else, on plain HTTP (no TLS flags: the local-development mode, like kube-apiserver's old
//!    insecure port), the fixed local administrator [`UNSECURED_USER`] in `system:masters`;
//! 4. else, with `--anonymous-auth` (upstream's default; off under `AlwaysAllow`, as upstream's
//!    options turn it off), `system:anonymous` in `system:unauthenticated`;
//! 5. else `401 Unauthorized`.
//!
//! Every authenticated user also has `system:authenticated` (upstream's
//! `AuthenticatedGroupAdder`). What the user may do is decided by `authz`.

pub mod impersonation;
pub mod token_file;

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub use token_file::TokenFile;

/// Upstream's `system:masters`: every request of its members is allowed.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// Upstream's group of every authenticated user.
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// Upstream's group of unauthenticated requests.
pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Upstream's anonymous user.
pub const ANONYMOUS: &str = "system:anonymous";

/// The ServiceAccount a user name is (`system:serviceaccount:NS:NAME`, upstream's
/// `serviceaccount.SplitUsername`).
pub fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// A ServiceAccount's groups in `namespace` (upstream's `MakeGroupNames`).
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

/// The user of plain-HTTP requests (the name of kube-apiserver's old insecure port's user).
pub const UNSECURED_USER: &str = "system:unsecured";

/// An authenticated user (upstream's `user.Info`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user's name.
    pub name: String,
    /// The user's UID (empty when its authenticator gives none).
    pub uid: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The local administrator of plain-HTTP requests.
    pub fn unsecured() -> Self {
        Self {
            name: UNSECURED_USER.into(),
            groups: vec![SYSTEM_MASTERS.into()],
            ..Default::default()
        }
        .authenticated()
    }

    /// The user with `system:authenticated` added (upstream's `AuthenticatedGroupAdder`).
    pub fn authenticated(mut self) -> Self {
        if !self
            .groups
            .iter()
            .any(|g| g == SYSTEM_AUTHENTICATED || g == SYSTEM_UNAUTHENTICATED)
        {
            self.groups.push(SYSTEM_AUTHENTICATED.into());
        }
        self
    }

    /// The user as `authentication.k8s.io/v1` writes it (`UserInfo`: username, uid, groups,
    /// extra, each omitted when empty).
    pub fn to_json(&self) -> Value {
        let mut v = json!({"username": self.name});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            v["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}

/// What a request presents. (No `Debug`: it holds a secret.)
#[derive(Default, Clone, Copy)]
pub struct Credentials<'a> {
    /// The user of a verified client certificate.
    pub certificate: Option<&'a UserInfo>,
    /// The `Authorization: Bearer` token (gRPC: the `authorization` metadata).
    pub bearer: Option<&'a str>,
    /// Whether the request came over plain HTTP (no TLS configured).
    pub plain: bool,
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Upstream answers every such request `401` with `Unauthorized`, and logs the reason only.
    Unauthorized(&'static str),
    /// The credential could not be checked now (a ServiceAccount token's account could not be
    /// read): `503`, the server's fault.
    Unavailable(String),
}

impl Failure {
    /// The error a transport answers.
    pub fn to_error(&self) -> Option<crate::error::ApiError> {
        match self {
            Failure::Unauthorized(_) => None,
            Failure::Unavailable(m) => Some(crate::error::ApiError::Unavailable {
                reason: "ServiceUnavailable",
                message: m.clone(),
            }),
        }
    }
}

/// The authenticator union.
#[derive(Debug, Default)]
pub struct Authenticator {
    /// `--token-auth-file`.
    pub tokens: Option<TokenFile>,
    /// ServiceAccount tokens (`--service-account-key-file`).
    pub service_accounts: Option<std::sync::Arc<crate::serviceaccount::TokenAuthenticator>>,
    /// `--anonymous-auth`, as it applies (off under AlwaysAllow).
    pub anonymous: bool,
}

impl Authenticator {
    /// Whether a bearer token can authenticate here.
    pub fn takes_tokens(&self) -> bool {
        self.tokens.is_some() || self.service_accounts.is_some()
    }

    /// Who presents `credentials`.
    pub async fn authenticate(&self, credentials: Credentials<'_>) -> Result<UserInfo, Failure> {
        if let Some(user) = credentials.certificate {
            return Ok(user.clone().authenticated());
        }
        if let Some(token) = credentials.bearer
            && self.takes_tokens()
        {
            // Upstream's order: the token file, then ServiceAccount JWTs.
            if let Some(user) = self.tokens.as_ref().and_then(|t| t.user(token)) {
                return Ok(user.clone().authenticated());
            }
            if let Some(service_accounts) = &self.service_accounts
                && let Some(result) = service_accounts.authenticate(token).await
            {
                return result.map(UserInfo::authenticated);
            }
            return Err(Failure::Unauthorized("invalid bearer token"));
        }
        if credentials.plain {
            return Ok(UserInfo::unsecured());
        }
        if self.anonymous {
            return Ok(UserInfo {
                name: ANONYMOUS.into(),
                groups: vec![SYSTEM_UNAUTHENTICATED.into()],
                ..Default::default()
            });
        }
        Err(Failure::Unauthorized("no credentials"))
    }
}

/// The token of an `Authorization` header's value, read as upstream's bearer-token reader
/// reads it (`bearertoken.go`): trimmed, split on single spaces into at most three parts, the
/// first `bearer` in any case, the second the token; an empty token is none.
pub fn bearer(authorization: &str) -> Option<&str> {
    let mut parts = authorization.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The user of a client certificate the handshake verified (upstream's `x509` authenticator):
/// the subject CN is the name, each O a group. A certificate without a CN (or with an empty
/// one) names nobody, and the request's other credentials decide.
pub fn certificate_user(der: &[u8]) -> Option<UserInfo> {
    let (_, parsed) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Some(UserInfo {
        name,
        groups,
        ..Default::default()
    })
}

/// `authentication.k8s.io/v1` SelfSubjectReview's answer for `user` (`kubectl auth whoami`).
pub fn self_subject_review(user: &UserInfo) -> Value {
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": user.to_json()},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator() -> Authenticator {
        Authenticator {
            tokens: Some(
                TokenFile::parse("secret,alice,1001,\"dev,ops\"\n", "tokens.csv")
                    .expect("a valid file"),
            ),
            service_accounts: None,
            anonymous: false,
        }
    }

    /// The authenticator's answer, now (nothing here waits).
    fn now<T>(f: impl std::future::Future<Output = T>) -> T {
        futures_util::FutureExt::now_or_never(f).expect("no wait")
    }

    #[test]
    fn certificates_then_tokens_then_plain_http() {
        let a = authenticator();
        let a = &a;
        let cert = UserInfo {
            name: "bob".into(),
            groups: vec!["team".into()],
            ..Default::default()
        };
        let who = |c: Credentials<'_>| now(a.authenticate(c)).map(|u| (u.name, u.groups));
        assert_eq!(
            who(Credentials {
                certificate: Some(&cert),
                bearer: Some("wrong"),
                plain: false,
            }),
            Ok((
                "bob".into(),
                vec!["team".into(), SYSTEM_AUTHENTICATED.into()]
            )),
            "a verified certificate wins, as x509 comes first in upstream's union"
        );
        assert_eq!(
            who(Credentials {
                bearer: Some("secret"),
                ..Default::default()
            }),
            Ok((
                "alice".into(),
                vec!["dev".into(), "ops".into(), SYSTEM_AUTHENTICATED.into()]
            ))
        );
        assert_eq!(
            now(a.authenticate(Credentials {
                bearer: Some("guess"),
                plain: true,
                ..Default::default()
            })),
            Err(Failure::Unauthorized("invalid bearer token")),
            "a bad token is refused, even on plain HTTP"
        );
        assert_eq!(
            who(Credentials {
                plain: true,
                ..Default::default()
            }),
            Ok((
                UNSECURED_USER.into(),
                vec![SYSTEM_MASTERS.into(), SYSTEM_AUTHENTICATED.into()]
            ))
        );
        assert_eq!(
            now(a.authenticate(Credentials::default())),
            Err(Failure::Unauthorized("no credentials"))
        );
        // Anonymous requests, where allowed: no credentials, never a bad token.
        let open = Authenticator {
            anonymous: true,
            ..authenticator()
        };
        assert_eq!(
            now(open.authenticate(Credentials::default())).map(|u| (u.name, u.groups)),
            Ok((ANONYMOUS.into(), vec![SYSTEM_UNAUTHENTICATED.into()]))
        );
        assert_eq!(
            now(open.authenticate(Credentials {
                bearer: Some("guess"),
                ..Default::default()
            })),
            Err(Failure::Unauthorized("invalid bearer token"))
        );
        // Without a token file, a bearer token is nobody's: TLS without a certificate is 401.
        assert_eq!(
            now(Authenticator::default().authenticate(Credentials {
                bearer: Some("secret"),
                ..Default::default()
            })),
            Err(Failure::Unauthorized("no credentials"))
        );
    }

    #[test]
    fn bearer_headers_and_reviews() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer(" bearer abc "), Some("abc"));
        // Upstream's split: a second space makes the token empty, a third part is ignored.
        assert_eq!(bearer("Bearer  abc"), None);
        assert_eq!(bearer("Bearer abc def"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
        let user = UserInfo {
            name: "alice".into(),
            uid: "1001".into(),
            groups: vec!["dev".into(), SYSTEM_AUTHENTICATED.into()],
            ..Default::default()
        };
        assert_eq!(
            self_subject_review(&user),
            json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                   "metadata": {"creationTimestamp": null},
                   "status": {"userInfo": {"username": "alice", "uid": "1001",
                                           "groups": ["dev", "system:authenticated"]}}})
        );
    }
}
