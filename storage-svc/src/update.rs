//! GuaranteedUpdate: the optimistic-concurrency loop of upstream's `etcd3.store.GuaranteedUpdate`,
//! with the update function on the other end of a gRPC stream.
//!
//! ```text
//! state, current = cached ? (cached, false) : (read, true)
//! loop:
//!   A. preconditions fail:  current ? error : re-read, continue
//!   B. ask the caller for a proposal on `state` (for a cached object the caller sent it unasked)
//!      abort:               current ? aborted : re-read; same revision ? aborted : continue
//!   C. encode (strip resource_version), check size
//!   D. byte-identical:      current ? done, nothing written : re-read; differs ? continue : done
//!   E. dry run:             current ? done, nothing written : re-read, continue
//!   F. Txn(If(mod_revision == state.rev) Then(Put [lease]) Else(Get))
//!      lost the compare:    state = the Else(Get) result, current = true, continue
//!   G. done, resource_version = the txn's header revision
//! ```
//!
//! Differences from upstream, on purpose: attempts are bounded (`max_attempts`, then ABORTED)
//! and reported; updates to one key take turns inside this process (see `keylock`), starting
//! from the state the previous turn wrote.
//!
//! The caller is remote, so two rules keep one caller from hurting others or the data:
//! - a turn is held across a round trip to the caller for at most `turn_hold`; a slower caller
//!   loses its turn (the queue moves on) and finishes its update without it;
//! - nothing is written once the caller has gone: a cancelled caller that was waiting for its
//!   turn leaves the queue, and the caller's presence is checked right before every txn.
//!
//! A caller that sends a cached object sends its proposal for it at once; that answer is read
//! before the turn is taken, so the turn is never spent waiting for it.

use kubestore_proto::meta::v1::Preconditions;
use kubestore_telemetry::Deadline;
use tracing::Instrument;

use crate::{
    error::StorageError,
    etcd::EtcdCall,
    keylock::KeyTurn,
    lease::validate_ttl,
    object::parse_object,
    preconditions,
    state::ObjState,
    store::{Store, Versioned, op_span},
};

/// What the caller answered for a state.
#[derive(Debug)]
pub enum Answer {
    /// The new object, and its TTL (0: no lease).
    Proposal {
        /// resource_version of the state it was computed from.
        based_on: String,
        /// The encoded object.
        object: Vec<u8>,
        /// TTL in seconds.
        ttl: i64,
    },
    /// The caller's update function failed.
    Abort {
        /// resource_version of the state it failed on.
        based_on: String,
        /// The caller's gRPC code.
        code: i32,
        /// The caller's message.
        message: String,
    },
}

impl Answer {
    fn based_on(&self) -> &str {
        match self {
            Self::Proposal { based_on, .. } | Self::Abort { based_on, .. } => based_on,
        }
    }
}

/// The caller's side of the loop (a gRPC stream in production).
#[allow(async_fn_in_trait)]
pub trait UpdatePeer {
    /// Sends `state` (the object with its resource version, or a missing key) and waits for
    /// the answer.
    async fn ask(
        &mut self,
        state: &ObjState,
        object: Vec<u8>,
        attempt: u32,
    ) -> Result<Answer, StorageError>;
    /// Waits for the answer the caller sent without being asked (for its cached object).
    async fn unasked(&mut self) -> Result<Answer, StorageError>;
    /// Whether the caller has gone (cancelled, disconnected): nothing may be written for it.
    fn gone(&self) -> bool;
    /// Resolves once the caller has gone.
    async fn closed(&self);
}

/// The parameters of one GuaranteedUpdate.
#[derive(Debug, Default)]
pub struct UpdateRequest<'a> {
    /// Caller's key.
    pub key: &'a str,
    /// Checked on every attempt.
    pub preconditions: Option<&'a Preconditions>,
    /// A missing key is an empty object whose write is a create.
    pub ignore_not_found: bool,
    /// Check everything, write nothing.
    pub dry_run: bool,
    /// The caller's cached copy.
    pub cached: Option<&'a [u8]>,
}

/// How a GuaranteedUpdate ended.
#[derive(Debug)]
pub enum UpdateOutcome {
    /// Committed (or nothing to write).
    Done {
        /// The resulting object.
        result: Versioned,
        /// Attempts used.
        attempts: u32,
        /// Whether etcd was written.
        written: bool,
    },
    /// The caller aborted on a current state.
    Aborted {
        /// Attempts used.
        attempts: u32,
    },
}

fn same_version(based_on: &str, state: &ObjState) -> bool {
    let based = if based_on == "0" { "" } else { based_on };
    based == state.resource_version()
}

impl Store {
    /// Runs the loop described in the module docs.
    pub async fn guaranteed_update(
        &self,
        req: UpdateRequest<'_>,
        peer: &mut impl UpdatePeer,
        deadline: Deadline,
    ) -> Result<UpdateOutcome, StorageError> {
        let span = op_span("GuaranteedUpdate", req.key);
        let mut attempts = 0;
        let result = self
            .update_loop(&req, peer, deadline, &mut attempts)
            .instrument(span.clone())
            .await;
        // Recorded once, at the end: a field recorded twice is exported twice.
        span.record("attempts", i64::from(attempts));
        if result.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        if attempts > 0 {
            self.etcd
                .metrics
                .update_attempts
                .observe(f64::from(attempts));
        }
        result
    }

    async fn update_loop(
        &self,
        req: &UpdateRequest<'_>,
        peer: &mut impl UpdatePeer,
        deadline: Deadline,
        attempts: &mut u32,
    ) -> Result<UpdateOutcome, StorageError> {
        let key = req.key;
        let etcd_key = self.prefix.etcd_key(key)?;
        let call = EtcdCall { key, deadline };
        let gone = || StorageError::Unavailable {
            key: key.to_string(),
            message: "the caller went away: nothing was written".into(),
        };
        let mut cached_state = match req.cached {
            Some(c) => Some(ObjState::from_cached(key, c)?),
            None => None,
        };
        // A caller that sent a cached object already sent its proposal for it: read it now,
        // before queueing, so that no turn is ever spent waiting for it.
        let mut unasked = if cached_state.is_some() {
            Some(peer.unasked().await?)
        } else {
            None
        };
        // A resourceVersion precondition already older than what the watch cache saw can never
        // pass: fail before queueing behind the key's other updates (on a hot key, the losers
        // of a round return while the winner still holds the turn).
        if let Some(seen) = self.cached_state(key, &etcd_key)
            && preconditions::never_again(req.preconditions, seen.rev)
            && let Err(e) = preconditions::check(key, req.preconditions, &seen.meta)
        {
            return Err(e);
        }

        // Take this key's turn (not for dry runs: they write nothing). Our own last write is a
        // better suggestion than none, but a caller's cached copy comes first. A caller that
        // goes away while queued leaves the queue.
        let mut turn = if req.dry_run {
            None
        } else {
            tokio::select! {
                t = self.take_turn(key, &etcd_key, deadline) => Some(t?),
                () = peer.closed() => return Err(gone()),
            }
        };
        if cached_state.is_none() {
            // Our own last write on this key, or the watch cache's copy: the newer one.
            let remembered = turn.as_ref().and_then(|t| (**t).clone());
            let cached = self.cached_state(key, &etcd_key);
            cached_state = match (remembered, cached) {
                (Some(r), Some(c)) => Some(if c.rev > r.rev { c } else { r }),
                (r, c) => r.or(c),
            };
        }
        let (mut state, mut current) = match cached_state {
            Some(s) => (s, false),
            None => (
                self.refresh(&call, &etcd_key, req.ignore_not_found, &mut turn)
                    .await?,
                true,
            ),
        };

        loop {
            // A. preconditions
            if let Err(e) = preconditions::check(key, req.preconditions, &state.meta) {
                if current
                    || (state.observed && preconditions::never_again(req.preconditions, state.rev))
                {
                    return Err(e);
                }
                unasked = None;
                state = self
                    .refresh(&call, &etcd_key, req.ignore_not_found, &mut turn)
                    .await?;
                current = true;
                continue;
            }
            *attempts += 1;
            if *attempts > self.config.max_attempts {
                return Err(StorageError::conflict(
                    key,
                    format!(
                        "gave up after {} attempts: the key kept changing",
                        self.config.max_attempts
                    ),
                ));
            }
            // B. the caller's update function
            let answer = match unasked.take() {
                Some(a) => a,
                None => {
                    let object = state.object_at(key, state.rev)?;
                    let mut ask = std::pin::pin!(peer.ask(&state, object.into(), *attempts));
                    if turn.is_some() {
                        match tokio::time::timeout(self.config.turn_hold, &mut ask).await {
                            Ok(answer) => answer?,
                            Err(_) => {
                                tracing::debug!("Caller is slow: turn released");
                                turn = None;
                                ask.await?
                            }
                        }
                    } else {
                        ask.await?
                    }
                }
            };
            if !same_version(answer.based_on(), &state) {
                return Err(StorageError::invalid(
                    key,
                    format!(
                        "answer is based on resource_version {:?} but the state sent was {:?}",
                        answer.based_on(),
                        state.resource_version()
                    ),
                ));
            }
            let (object, ttl) = match answer {
                Answer::Abort { code, message, .. } => {
                    tracing::debug!(code, message = %message, "Update function aborted");
                    if current {
                        return Ok(UpdateOutcome::Aborted {
                            attempts: *attempts,
                        });
                    }
                    let cached_rev = state.rev;
                    state = self
                        .refresh(&call, &etcd_key, req.ignore_not_found, &mut turn)
                        .await?;
                    current = true;
                    if state.rev == cached_rev {
                        return Ok(UpdateOutcome::Aborted {
                            attempts: *attempts,
                        });
                    }
                    continue;
                }
                Answer::Proposal { object, ttl, .. } => (object, ttl),
            };
            // C. encode
            let parsed = parse_object(key, &object, "proposed object")?;
            validate_ttl(key, ttl)?;
            self.check_size(key, &etcd_key, &parsed.data)?;
            tracing::debug!("Encode succeeded");
            let data = parsed.data;
            // D. nothing changed: nothing to write, unless the stored value is stale (read
            // with an older encryption key or provider: upstream rewrites it)
            if state.data.as_deref() == Some(data.as_slice())
                && !self
                    .etcd
                    .transformer
                    .is_stale(etcd_key.as_bytes(), state.rev)
            {
                if !current {
                    state = self
                        .refresh(&call, &etcd_key, req.ignore_not_found, &mut turn)
                        .await?;
                    current = true;
                    if state.data.as_deref() != Some(data.as_slice()) {
                        continue;
                    }
                }
                tracing::debug!("No change: write skipped");
                let result = Versioned {
                    object: state.object_at(key, state.rev)?,
                    rev: state.rev,
                };
                return Ok(UpdateOutcome::Done {
                    result,
                    attempts: *attempts,
                    written: false,
                });
            }
            // E. dry run: every check ran, on the current state
            if req.dry_run {
                if !current {
                    state = self.current(&call, &etcd_key, req.ignore_not_found).await?;
                    current = true;
                    continue;
                }
                let proposed = ObjState {
                    rev: state.rev,
                    data: Some(data),
                    ..Default::default()
                };
                let result = Versioned {
                    object: proposed.object_at(key, state.rev)?,
                    rev: state.rev,
                };
                return Ok(UpdateOutcome::Done {
                    result,
                    attempts: *attempts,
                    written: false,
                });
            }
            // F. compare-and-swap, only for a caller still there; a lost compare returns the
            // fresh state in the same round trip
            if peer.gone() {
                return Err(gone());
            }
            let resp = self
                .put_if(&call, "update", &etcd_key, state.rev, &data, ttl)
                .await?;
            let (rev, kv) = self.etcd.txn_outcome(&resp)?;
            if !resp.succeeded() {
                self.etcd.metrics.conflicts.inc();
                tracing::debug!("Txn call failed: conflict");
                state = ObjState::from_kv(key, kv, req.ignore_not_found)?;
                remember(&mut turn, &state);
                current = true;
                tracing::debug!("Retry with fresh state");
                continue;
            }
            tracing::debug!("Txn call succeeded");
            // G. committed
            let mut meta = parsed.meta;
            meta.resource_version = rev.to_string();
            let written = ObjState {
                rev,
                data: Some(data),
                meta,
                observed: true,
            };
            remember(&mut turn, &written);
            let result = Versioned {
                object: written.object_at(key, rev)?,
                rev,
            };
            return Ok(UpdateOutcome::Done {
                result,
                attempts: *attempts,
                written: true,
            });
        }
    }

    async fn refresh(
        &self,
        call: &EtcdCall<'_>,
        etcd_key: &str,
        ignore_not_found: bool,
        turn: &mut Option<KeyTurn>,
    ) -> Result<ObjState, StorageError> {
        let s = self.current(call, etcd_key, ignore_not_found).await?;
        remember(turn, &s);
        Ok(s)
    }
}

/// Leaves `state` as the next turn's suggestion (a missing key suggests nothing).
fn remember(turn: &mut Option<KeyTurn>, state: &ObjState) {
    if let Some(t) = turn.as_mut() {
        **t = state.exists().then(|| state.clone());
    }
}
