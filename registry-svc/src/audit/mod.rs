//! Audit (upstream's `apiserver/pkg/audit` with its log backend): what each request did, as
//! `audit.k8s.io/v1` Events written one JSON line each to `--audit-log-path`, at the level
//! `--audit-policy-file` gives the request (`policy`).
//!
//! Every request of either transport gets a [`record::Record`] once it is authenticated (in
//! its `authz::Caller`); the gate's first decision gives it the request's attributes (the
//! policy is evaluated on them, for the authenticated user, as upstream's `WithAudit` runs
//! before impersonation) and its `authorization.k8s.io/decision`; the body reader gives it the
//! request object (level Request and up), the transport its response (status, and the object
//! at RequestResponse) and its end. Stages as upstream's: RequestReceived, ResponseStarted
//! (watches), ResponseComplete, Panic. Requests refused before authentication (401) are
//! audited as upstream's failed-authentication events, with no user.
//!
//! The sink (`sink`) never blocks a request: events go to a bounded queue (by count,
//! `--audit-log-batch-buffer-size`, and by bytes) that one thread writes and rotates
//! (`rotate`); a full queue or a failing write drops the event and counts it
//! (`apiserver_audit_error_total`).

pub mod body;
pub mod policy;
pub mod record;
pub mod rotate;
pub mod sink;

use std::{path::PathBuf, sync::Arc};

pub use record::Record;

/// The flags (kube-apiserver's names).
#[derive(clap::Args, Clone, Debug)]
#[group(id = "audit")]
pub struct Flags {
    /// The audit policy (`audit.k8s.io/v1` Policy, YAML or JSON): which requests are audited
    /// at which level. Unset: no audit.
    #[arg(long = "audit-policy-file", env = "AUDIT_POLICY_FILE")]
    pub policy_file: Option<PathBuf>,
    /// Where audit events go, one JSON line each; `-` is stdout.
    #[arg(long = "audit-log-path", env = "AUDIT_LOG_PATH")]
    pub log_path: Option<PathBuf>,
    /// Size in megabytes at which the log is rotated (0: upstream's default of 100).
    #[arg(
        long = "audit-log-maxsize",
        env = "AUDIT_LOG_MAXSIZE",
        default_value_t = 0
    )]
    pub max_size: u64,
    /// Rotated logs kept (0: all).
    #[arg(
        long = "audit-log-maxbackup",
        env = "AUDIT_LOG_MAXBACKUP",
        default_value_t = 0
    )]
    pub max_backup: usize,
    /// Days a rotated log is kept (0: no limit).
    #[arg(
        long = "audit-log-maxage",
        env = "AUDIT_LOG_MAXAGE",
        default_value_t = 0
    )]
    pub max_age: u64,
    /// Events that may wait to be written; more are dropped and counted, never waited for.
    #[arg(
        long = "audit-log-batch-buffer-size",
        env = "AUDIT_LOG_BATCH_BUFFER_SIZE",
        default_value_t = 10_000
    )]
    pub buffer_size: usize,
}

impl Default for Flags {
    fn default() -> Self {
        Self {
            policy_file: None,
            log_path: None,
            max_size: 0,
            max_backup: 0,
            max_age: 0,
            buffer_size: 10_000,
        }
    }
}

/// The policy and where its events go.
#[derive(Debug)]
pub struct Auditor {
    policy: policy::Policy,
    sink: sink::Sink,
}

impl Flags {
    /// The auditor the flags configure (None: no audit); its metrics go to `metrics`. An error
    /// names the flag.
    pub fn build(
        &self,
        metrics: &kubestore_telemetry::Metrics,
    ) -> Result<Option<Arc<Auditor>>, String> {
        let (policy, path) = match (&self.policy_file, &self.log_path) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err("--audit-policy-file needs --audit-log-path (`-` for stdout)".into());
            }
            (None, Some(_)) => {
                return Err(
                    "--audit-log-path needs --audit-policy-file: without a policy nothing is audited"
                        .into(),
                );
            }
            (Some(policy), Some(path)) => (policy::Policy::read(policy)?, path),
        };
        if self.buffer_size == 0 {
            return Err("--audit-log-batch-buffer-size must be at least 1".into());
        }
        let (max_size, max_backup, max_age) = (self.max_size, self.max_backup, self.max_age);
        let open = {
            let path = path.clone();
            move || rotate::Rotating::open(&path, max_size, max_backup, max_age)
        };
        // A FIFO is opened by the writer (opening one waits for its reader); anything else
        // here, so that a path that cannot be written stops the start, naming the flag.
        use std::os::unix::fs::FileTypeExt;
        let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
        let sink = if fifo {
            sink::Sink::start(open, self.buffer_size, metrics)
        } else {
            let out = open().map_err(|e| format!("--audit-log-path {}: {e}", path.display()))?;
            sink::Sink::start(move || Ok(out), self.buffer_size, metrics)
        };
        Ok(Some(Arc::new(Auditor { policy, sink })))
    }
}

impl Auditor {
    /// The policy.
    pub fn policy(&self) -> &policy::Policy {
        &self.policy
    }

    /// Sends an event (never waits).
    pub fn emit(&self, event: &impl serde::Serialize) {
        self.sink.send(event);
    }
}

/// The audit id of a request: the client's `Audit-ID` when it sent a sane one (upstream keeps
/// it, so a client can correlate), else a new UUID.
pub fn audit_id(headers: &http::HeaderMap) -> String {
    headers
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), String::from)
}
