//! AdmissionReview v1 (`admission.k8s.io/v1`), the body a webhook is sent and answers: the
//! request as upstream's `CreateAdmissionObjects` makes it, and the checks upstream's
//! `VerifyAdmissionResponse` makes of the answer, in its words.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Value, json};

use crate::admission::Request;

/// The review sent for `request` (`uid` is the request's, the same for every webhook).
pub fn request(
    uid: &str,
    r: &Request<'_>,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> Value {
    let mut req = r.to_json(uid);
    req["object"] = object.cloned().unwrap_or(Value::Null);
    req["oldObject"] = old_object.cloned().unwrap_or(Value::Null);
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// A webhook's verdict.
#[derive(Debug, Default)]
pub struct Answer {
    /// Whether it admits the request.
    pub allowed: bool,
    /// Its Status when it refuses: (code, reason, message).
    pub status: Option<(u16, String, String)>,
    /// A JSONPatch (mutating webhooks only).
    pub patch: Option<Value>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// Audit annotations (key, value), keys as the webhook gave them.
    pub audit_annotations: BTreeMap<String, String>,
}

/// Reads the answer `body` to the review of `uid`; `mutating` allows a patch. An error is a
/// failure of the call (its failurePolicy decides), in upstream's words.
pub fn answer(body: &[u8], uid: &str, mutating: bool) -> Result<Answer, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("failed to decode webhook response: {e}"))?;
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(r) = v.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let allowed = r.get("allowed").and_then(Value::as_bool).unwrap_or(false);
    let mut out = Answer {
        allowed,
        ..Answer::default()
    };
    if let Some(p) = r
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        if !mutating {
            return Err("validating webhook may not return response.patch".into());
        }
        match r.get("patchType").and_then(Value::as_str) {
            Some("JSONPatch") => {}
            Some(other) => {
                return Err(format!(
                    "webhook returned invalid response.patchType of {other:?}"
                ));
            }
            None => return Err("webhook returned response.patch but not response.patchType".into()),
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(p)
            .map_err(|e| format!("webhook returned a response.patch that is not base64: {e}"))?;
        let patch: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("webhook returned a response.patch that is not JSON: {e}"))?;
        out.patch = Some(patch);
    }
    if let Some(s) = r.get("status").filter(|s| s.is_object()) {
        let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let code = s
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(0);
        out.status = Some((code, text("reason"), text("message")));
    }
    if let Some(w) = r.get("warnings").and_then(Value::as_array) {
        out.warnings = w
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
    }
    if let Some(a) = r.get("auditAnnotations").and_then(Value::as_object) {
        out.audit_annotations = a
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
    }
    Ok(out)
}

/// Upstream's `ToStatusErr`: the refusal of webhook `name` as the request's error status
/// (code at least 400; the webhook's message after `admission webhook "NAME" denied the
/// request`).
pub fn denied(name: &str, status: Option<(u16, String, String)>) -> (u16, String, String) {
    let (code, reason, message) = status.unwrap_or_default();
    let code = if code < 400 { 400 } else { code };
    let by = format!("admission webhook {name:?} denied the request");
    let message = if !message.is_empty() {
        format!("{by}: {message}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    (code, reason, message)
}
