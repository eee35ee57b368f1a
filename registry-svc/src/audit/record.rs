//! One request's audit record (upstream's `AuditContext` and its `Event`): made by the
//! transport once the request is authenticated, carried in its `authz::Caller`, completed by
//! the transport when the response ends (`super::body`). It emits each stage the policy keeps
//! as one `audit.k8s.io/v1` Event, in upstream's field names:
//!
//! - RequestReceived, when the gate first decides on the request (its attributes give the
//!   level, the verb and `objectRef`);
//! - ResponseStarted, for watches, when the response's headers go;
//! - ResponseComplete, when the response's body ends or the client goes;
//! - Panic, when the task serving the request panics before completing it (upstream's 500).
//!
//! Objects (level Request and up: the request's body; RequestResponse: the response's) over
//! [`MAX_OBJECT_BYTES`] are left out and the event annotated `audit.k8s.io/truncated`, as
//! upstream's truncating backend does.

use std::{
    collections::BTreeMap,
    net::IpAddr,
    sync::{Arc, Mutex, PoisonError},
};

use serde_json::{Value, json};

use super::{
    Auditor,
    policy::{Decision, Level, Stage},
};
use crate::{authn::UserInfo, authz::Attributes};

/// Largest object an event carries.
pub const MAX_OBJECT_BYTES: usize = 1 << 20;

/// What is known of a request when its record is made.
#[derive(Debug, Clone)]
pub struct Request {
    /// The audit id (`super::audit_id`).
    pub id: String,
    /// REST: the path and query; gRPC: the method's path.
    pub uri: String,
    /// The lower-cased HTTP method (a request that never reached the gate is audited as this
    /// verb on its path).
    pub method: String,
    /// The client's address.
    pub source_ip: Option<IpAddr>,
    /// The `User-Agent`.
    pub user_agent: String,
}

/// See the module's doc.
#[derive(Debug)]
pub struct Record {
    auditor: Arc<Auditor>,
    request: Request,
    /// The authenticated user (before impersonation); None for a request that failed
    /// authentication.
    user: Option<UserInfo>,
    received: (i64, i32),
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    impersonated: Option<UserInfo>,
    attributes: Option<Attributes>,
    decision: Option<Decision>,
    annotations: BTreeMap<String, String>,
    request_object: Option<Value>,
    done: bool,
}

fn now() -> (i64, i32) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, d.subsec_nanos() as i32)
}

/// `metav1.MicroTime`: RFC 3339 in UTC with six fraction digits.
fn micro_time((secs, nanos): (i64, i32)) -> String {
    let whole = kubestore_apimachinery::time::format(secs, 0);
    let micros = nanos.clamp(0, 999_999_999) / 1000;
    match whole.strip_suffix('Z') {
        Some(t) => format!("{t}.{micros:06}Z"),
        None => whole,
    }
}

impl Record {
    /// The record of `request` by `user` (None: authentication failed).
    pub fn new(auditor: Arc<Auditor>, request: Request, user: Option<UserInfo>) -> Self {
        Self {
            auditor,
            request,
            user,
            received: now(),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The audit id (the `Audit-Id` response header).
    pub fn id(&self) -> &str {
        &self.request.id
    }

    /// The request acts as `user` (impersonation).
    pub fn impersonating(&self, user: &UserInfo) {
        self.state().impersonated = Some(user.clone());
    }

    /// The request's attributes, from the gate's first decision (later decisions, such as
    /// RBAC's escalation checks, are not the request's): the policy decides its level here,
    /// and RequestReceived is emitted.
    pub fn attributes(&self, attrs: &Attributes) {
        let mut state = self.state();
        if state.attributes.is_some() {
            return;
        }
        self.decide(&mut state, attrs.clone());
        self.emit(&state, Stage::RequestReceived, None);
    }

    fn decide(&self, state: &mut State, attrs: Attributes) {
        let user = self.user.clone().unwrap_or_default();
        state.decision = Some(self.auditor.policy().evaluate(&user, &attrs));
        state.attributes = Some(attrs);
    }

    /// The object a create makes is `namespace/name` (its request named neither).
    pub fn named(&self, namespace: &str, name: &str) {
        if let Some(Attributes::Resource(r)) = &mut self.state().attributes {
            if r.name.is_empty() {
                r.name = name.to_string();
            }
            if r.namespace.is_empty() {
                r.namespace = namespace.to_string();
            }
        }
    }

    /// The gate's decision on the request's attributes.
    pub fn decided(&self, allowed: bool, reason: &str) {
        let mut state = self.state();
        if state
            .annotations
            .contains_key("authorization.k8s.io/decision")
        {
            return;
        }
        let decision = if allowed { "allow" } else { "forbid" };
        state
            .annotations
            .insert("authorization.k8s.io/decision".into(), decision.into());
        state
            .annotations
            .insert("authorization.k8s.io/reason".into(), reason.into());
    }

    /// Adds an annotation (a TokenRequest's credential id, later admission's).
    pub fn annotate(&self, key: &str, value: &str) {
        self.state().annotations.insert(key.into(), value.into());
    }

    /// The request's level (None until its attributes are known).
    pub fn level(&self) -> Level {
        self.state()
            .decision
            .as_ref()
            .map_or(Level::None, |d| d.level)
    }

    /// Whether the request is a watch (its response is long).
    pub fn is_watch(&self) -> bool {
        matches!(&self.state().attributes, Some(Attributes::Resource(r)) if r.verb == "watch")
    }

    /// The request's body (kept at level Request and up, when it is JSON or YAML).
    pub fn request_body(&self, body: &[u8]) {
        if self.level() < Level::Request {
            return;
        }
        let object = object(body);
        let mut state = self.state();
        match object {
            Ok(v) => state.request_object = v,
            Err(()) => {
                state
                    .annotations
                    .insert("audit.k8s.io/truncated".into(), "true".into());
            }
        }
    }

    /// The response's headers went (ResponseStarted, for watches).
    pub fn started(&self, code: u16) {
        let state = self.state();
        self.emit(
            &state,
            Stage::ResponseStarted,
            Some(&json!({"metadata": {}, "code": code})),
        );
    }

    /// The response ended with HTTP `code` (`message`: what a gRPC status said); `body` is
    /// its content when captured (errors' Status, and RequestResponse's objects).
    pub fn complete(&self, code: u16, message: Option<&str>, body: Option<&[u8]>) {
        let mut state = self.state();
        if state.done {
            return;
        }
        state.done = true;
        if state.attributes.is_none() {
            let path = self.request.uri.split('?').next().unwrap_or("").to_string();
            let verb = self.request.method.clone();
            self.decide(&mut state, Attributes::NonResource { verb, path });
        }
        let parsed = body.and_then(|b| serde_json::from_slice::<Value>(b).ok());
        let status = if code < 400 {
            json!({"metadata": {}, "code": code})
        } else {
            let given = parsed.as_ref().filter(|v| v["kind"] == "Status");
            let mut s = json!({"metadata": {}, "status": "Failure", "code": code});
            let message = given
                .and_then(|v| v["message"].as_str())
                .or(message)
                .unwrap_or_default();
            if !message.is_empty() {
                s["message"] = json!(message);
            }
            if let Some(reason) = given.and_then(|v| v["reason"].as_str()) {
                s["reason"] = json!(reason);
            }
            s
        };
        let level = state.decision.as_ref().map_or(Level::None, |d| d.level);
        let response = if level == Level::RequestResponse && code < 400 {
            parsed
        } else {
            None
        };
        let response = match (response, body) {
            (None, Some(b)) if level == Level::RequestResponse && b.len() >= MAX_OBJECT_BYTES => {
                state
                    .annotations
                    .insert("audit.k8s.io/truncated".into(), "true".into());
                None
            }
            (r, _) => r,
        };
        self.emit_with(
            &state,
            Stage::ResponseComplete,
            Some(&status),
            response.as_ref(),
        );
    }

    fn emit(&self, state: &State, stage: Stage, status: Option<&Value>) {
        self.emit_with(state, stage, status, None);
    }

    fn emit_with(
        &self,
        state: &State,
        stage: Stage,
        status: Option<&Value>,
        response: Option<&Value>,
    ) {
        let Some(decision) = &state.decision else {
            return;
        };
        if !decision.emits(stage) {
            return;
        }
        self.auditor
            .emit(&self.event(state, decision.level, stage, status, response));
    }

    /// The Event, in upstream's field order, borrowing the record's fields (nothing is
    /// copied per event but the two timestamps).
    fn event<'a>(
        &'a self,
        state: &'a State,
        level: Level,
        stage: Stage,
        status: Option<&'a Value>,
        response: Option<&'a Value>,
    ) -> Event<'a> {
        let (verb, object_ref) = match &state.attributes {
            Some(Attributes::Resource(r)) => (r.verb.as_str(), Some(ObjectRef(r))),
            Some(Attributes::NonResource { verb, .. }) => (verb.as_str(), None),
            None => (self.request.method.as_str(), None),
        };
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: level.as_str(),
            audit_id: &self.request.id,
            stage: stage.as_str(),
            request_uri: &self.request.uri,
            verb,
            user: User(self.user.as_ref().unwrap_or(&NOBODY)),
            impersonated_user: state.impersonated.as_ref().map(User),
            source_ips: self.request.source_ip.map(|ip| [ip]),
            user_agent: &self.request.user_agent,
            object_ref,
            response_status: status,
            request_object: state
                .request_object
                .as_ref()
                .filter(|_| level >= Level::Request),
            response_object: response,
            request_received_timestamp: micro_time(self.received),
            stage_timestamp: micro_time(now()),
            annotations: &state.annotations,
        }
    }
}

static NOBODY: UserInfo = UserInfo {
    name: String::new(),
    uid: String::new(),
    groups: Vec::new(),
    extra: BTreeMap::new(),
};

/// An `audit.k8s.io/v1` Event (upstream's names and order; empty fields left out).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: &'static str,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: User<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<User<'a>>,
    /// One address, or none (`[]`).
    #[serde(rename = "sourceIPs", serialize_with = "addresses")]
    source_ips: Option<[IpAddr; 1]>,
    #[serde(skip_serializing_if = "str::is_empty")]
    user_agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<ObjectRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<&'a Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

fn addresses<S: serde::Serializer>(ips: &Option<[IpAddr; 1]>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ips.iter().flatten())
}

/// A user as `authentication.k8s.io/v1` writes it (`UserInfo::to_json`'s fields).
struct User<'a>(&'a UserInfo);

impl serde::Serialize for User<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        if !u.name.is_empty() {
            m.serialize_entry("username", &u.name)?;
        }
        if !u.uid.is_empty() {
            m.serialize_entry("uid", &u.uid)?;
        }
        if !u.groups.is_empty() {
            m.serialize_entry("groups", &u.groups)?;
        }
        if !u.extra.is_empty() {
            m.serialize_entry("extra", &u.extra)?;
        }
        m.end()
    }
}

/// An event's `objectRef`: the request's attributes, empty fields left out.
struct ObjectRef<'a>(&'a crate::authz::ResourceAttributes);

impl serde::Serialize for ObjectRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        for (k, v) in [
            ("resource", &r.resource),
            ("namespace", &r.namespace),
            ("name", &r.name),
            ("apiGroup", &r.group),
            ("apiVersion", &r.version),
            ("subresource", &r.subresource),
        ] {
            if !v.is_empty() {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// A body as an event's object: Ok(None) when it is not JSON or YAML (a protobuf body),
/// Err when it is too large to carry.
fn object(body: &[u8]) -> Result<Option<Value>, ()> {
    if body.len() > MAX_OBJECT_BYTES {
        return Err(());
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(Some(v));
    }
    if body.starts_with(b"k8s\0") {
        return Ok(None);
    }
    Ok(kubestore_apimachinery::yaml::to_json(body).ok())
}

impl Drop for Record {
    fn drop(&mut self) {
        // A request whose task panicked is never completed: upstream's Panic stage, as a 500.
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if !state.done && std::thread::panicking() {
            let status = json!({"metadata": {}, "status": "Failure", "code": 500,
                                "message": "the request's handler panicked"});
            let state = std::mem::take(state);
            self.emit(&state, Stage::Panic, Some(&status));
        }
    }
}
