//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`): what client-go's
//! typed clients (1.32 and later) and kubectl's `create configmap|secret|namespace` send, with no
//! JSON fallback. A body is `k8s\0` and a `runtime.Unknown` whose `raw` is the object in
//! upstream's `generated.proto` form; it is transcoded to Kubernetes JSON with the descriptors
//! of those messages (`proto/k8s`, upstream's field numbers), and then taken in exactly as a JSON
//! body. Responses are JSON (clients that send protobuf accept JSON too).

use std::sync::OnceLock;

use kubestore_apimachinery::json::Codec;
use serde_json::Value;

use crate::{catalog::ResourceInfo, error::ApiError};

/// The envelope's magic bytes.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, prost::Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    content_encoding: Option<String>,
}

/// `meta.k8s.io/v1` DeleteOptions in upstream's `generated.proto` numbering.
#[derive(Clone, PartialEq, prost::Message)]
struct DeleteOptions {
    #[prost(int64, optional, tag = "1")]
    grace_period_seconds: Option<i64>,
    #[prost(message, optional, tag = "2")]
    preconditions: Option<Preconditions>,
    #[prost(bool, optional, tag = "3")]
    orphan_dependents: Option<bool>,
    #[prost(string, optional, tag = "4")]
    propagation_policy: Option<String>,
    #[prost(string, repeated, tag = "5")]
    dry_run: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Preconditions {
    #[prost(string, optional, tag = "1")]
    uid: Option<String>,
    #[prost(string, optional, tag = "2")]
    resource_version: Option<String>,
}

fn codec() -> Result<&'static Codec, ApiError> {
    static CODEC: OnceLock<Option<Codec>> = OnceLock::new();
    CODEC
        .get_or_init(|| Codec::new(kubestore_proto::K8S_DESCRIPTOR_SET).ok())
        .as_ref()
        .ok_or_else(|| ApiError::Internal("Kubernetes protobuf descriptors do not decode".into()))
}

/// The envelope of a protobuf body, its kind checked against `kind`: the object's
/// `apiVersion` and its bytes.
fn envelope(raw: &[u8], kind: &str) -> Result<(String, Vec<u8>), ApiError> {
    let body = raw.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "provided data does not appear to be a protobuf message, expected prefix {:?}",
            MAGIC
        ))
    })?;
    // prost decodes without a recursion limit (`kubestore_proto::depth`): nested groups in an
    // unknown field would recurse until the stack overflowed.
    let malformed = |e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("the protobuf envelope does not decode: {e}"))
    };
    kubestore_proto::depth::bounded(body).map_err(|e| malformed(&e))?;
    let unknown = <Unknown as prost::Message>::decode(body).map_err(|e| malformed(&e))?;
    if unknown
        .content_encoding
        .as_deref()
        .is_some_and(|e| !e.is_empty())
    {
        return Err(ApiError::UnsupportedMediaType(format!(
            "the protobuf content encoding {:?} is not supported",
            unknown.content_encoding.unwrap_or_default()
        )));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let got = type_meta.kind.unwrap_or_default();
    if got != kind {
        return Err(ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {kind}): kind {got:?} in the protobuf envelope"
        )));
    }
    Ok((
        type_meta.api_version.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    ))
}

/// A protobuf DeleteOptions body (what client-go's typed clients send, Helm's delete of its
/// release record among them: `k8s\0` and an envelope of kind DeleteOptions, any
/// apiVersion, as upstream takes it unversioned) as the JSON object it encodes.
pub fn delete_options(raw: &[u8]) -> Result<Value, ApiError> {
    let (_, bytes) = envelope(raw, "DeleteOptions")?;
    let o = <DeleteOptions as prost::Message>::decode(bytes.as_slice()).map_err(|e| {
        ApiError::BadRequest(format!("DeleteOptions in protobuf does not decode: {e}"))
    })?;
    let mut m = serde_json::Map::new();
    if let Some(g) = o.grace_period_seconds {
        m.insert("gracePeriodSeconds".into(), g.into());
    }
    if let Some(p) = o.preconditions {
        let mut pm = serde_json::Map::new();
        if let Some(u) = p.uid {
            pm.insert("uid".into(), u.into());
        }
        if let Some(rv) = p.resource_version {
            pm.insert("resourceVersion".into(), rv.into());
        }
        m.insert("preconditions".into(), Value::Object(pm));
    }
    if let Some(o) = o.orphan_dependents {
        m.insert("orphanDependents".into(), o.into());
    }
    if let Some(p) = o.propagation_policy {
        m.insert("propagationPolicy".into(), p.into());
    }
    if !o.dry_run.is_empty() {
        m.insert("dryRun".into(), o.dry_run.into());
    }
    Ok(Value::Object(m))
}

/// A protobuf body of the resource `info` describes, as the JSON object it encodes.
pub fn decode(raw: &[u8], info: &ResourceInfo) -> Result<Value, ApiError> {
    let Some(message) = &info.message else {
        return Err(ApiError::UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml".into(),
        ));
    };
    // Our `.core.v1.Pod` is upstream's `.k8s.io.api.core.v1.Pod`.
    decode_upstream(raw, &info.kind, &format!(".k8s.io.api{message}"))
}

/// A protobuf body of `kind`, upstream's message `upstream` (`.k8s.io.api.authorization.v1.
/// SelfSubjectAccessReview`), as the JSON object it encodes.
pub fn decode_upstream(raw: &[u8], kind: &str, upstream: &str) -> Result<Value, ApiError> {
    let (api_version, bytes) = envelope(raw, kind)?;
    codec()?
        .encode_to_value(upstream, &bytes, Some((&api_version, kind)))
        .map_err(|e| ApiError::BadRequest(format!("{kind} in protobuf does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_configmap_in_kubernetes_protobuf_reads_as_its_json() {
        // upstream ConfigMap: metadata (1) { name (1) }, data (2) map entry.
        let mut meta = Vec::new();
        prost::encoding::string::encode(1, &"c1".to_string(), &mut meta);
        let mut entry = Vec::new();
        prost::encoding::string::encode(1, &"a".to_string(), &mut entry);
        prost::encoding::string::encode(2, &"b".to_string(), &mut entry);
        let mut cm = Vec::new();
        prost::encoding::bytes::encode(1, &meta, &mut cm);
        prost::encoding::bytes::encode(2, &entry, &mut cm);
        let env = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            raw: Some(cm),
            content_encoding: None,
        };
        let mut body = MAGIC.to_vec();
        body.extend(env.encode_to_vec());
        let json = codec()
            .expect("descriptors")
            .encode_to_value(
                ".k8s.io.api.core.v1.ConfigMap",
                env.raw.as_deref().unwrap_or_default(),
                Some(("v1", "ConfigMap")),
            )
            .expect("transcodes");
        assert_eq!(
            json,
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1",
                               "metadata": {"name": "c1"}, "data": {"a": "b"}})
        );
        assert!(body.starts_with(MAGIC));
    }

    /// Field `n` holding the message `b`.
    fn nested(n: u32, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::bytes::encode(n, &b.to_vec(), &mut out);
        out
    }

    /// An upstream Pod's bytes as the JSON they transcode to.
    fn pod_json(pod: &[u8]) -> serde_json::Value {
        codec()
            .expect("descriptors")
            .encode_to_value(".k8s.io.api.core.v1.Pod", pod, Some(("v1", "Pod")))
            .expect("transcodes")
    }

    /// Field `n` holding the text `s`.
    fn text(n: u32, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::string::encode(n, &s.to_string(), &mut out);
        out
    }

    #[test]
    fn embedded_references_are_flat_in_json() {
        use prost::encoding::bool as boolean;
        let msg = nested;
        // env[0].valueFrom.secretKeyRef {localObjectReference {name}, key, optional};
        // envFrom[0].configMapRef {localObjectReference {name}}, prefix.
        let mut selector = msg(1, &text(1, "db"));
        selector.extend(text(2, "password"));
        boolean::encode(3, &true, &mut selector);
        let mut var = text(1, "PASSWORD");
        var.extend(msg(3, &msg(4, &selector)));
        let mut from = text(1, "CFG_");
        from.extend(msg(2, &msg(1, &text(1, "settings"))));
        let mut container = text(1, "c");
        container.extend(msg(7, &var));
        container.extend(msg(19, &from));
        let pod = msg(2, &msg(2, &container));
        let json = pod_json(&pod);
        assert_eq!(
            json["spec"]["containers"][0],
            serde_json::json!({
                "name": "c",
                "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef":
                    {"name": "db", "key": "password", "optional": true}}}],
                "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
            })
        );
    }

    #[test]
    fn a_probe_embeds_its_handler_and_ports_keep_their_type() {
        use prost::encoding::{int32, int64};
        let msg = nested;
        // livenessProbe (10) {handler (1) {httpGet (2) {path (1), port (2) IntOrString
        // {type (1) 1, strVal (3)}}}, periodSeconds (4) 5}; readinessProbe (11) {handler
        // {tcpSocket (3) {port (1) {type 0, intVal (2) 80}}}}.
        let mut port = Vec::new();
        int64::encode(1, &1, &mut port);
        port.extend(text(3, "http"));
        let mut get = text(1, "/h");
        get.extend(msg(2, &port));
        let mut liveness = msg(1, &msg(2, &get));
        int32::encode(4, &5, &mut liveness);
        let mut number = Vec::new();
        int64::encode(1, &0, &mut number);
        int32::encode(2, &80, &mut number);
        let readiness = msg(1, &msg(3, &msg(1, &number)));
        let mut container = Vec::new();
        container.extend(msg(10, &liveness));
        container.extend(msg(11, &readiness));
        let pod = msg(2, &msg(2, &container));
        let json = pod_json(&pod);
        assert_eq!(
            json["spec"]["containers"][0],
            serde_json::json!({
                "livenessProbe": {"httpGet": {"path": "/h", "port": "http"}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 80}},
            })
        );
    }

    /// A volume embeds its source (`VolumeSource`), a configMap source its reference; a
    /// container's security context keeps a `false` and a `0` (root) that are on the wire.
    #[test]
    fn volumes_embed_their_source_and_security_zeros_are_kept() {
        use prost::encoding::{bool as boolean, int32, int64};
        let msg = nested;
        // volumes (1) {name (1), volumeSource (2) {configMap (19) {localObjectReference (1)
        // {name (1)}, defaultMode (3) 420}}}.
        let mut config_map = msg(1, &text(1, "settings"));
        int32::encode(3, &420, &mut config_map);
        let mut volume = text(1, "cfg");
        volume.extend(msg(2, &msg(19, &config_map)));
        // containers (2) {name (1), securityContext (15) {runAsUser (4) 0,
        // allowPrivilegeEscalation (7) false}}.
        let mut security = Vec::new();
        int64::encode(4, &0, &mut security);
        boolean::encode(7, &false, &mut security);
        let mut container = text(1, "c");
        container.extend(msg(15, &security));
        let mut spec = msg(1, &volume);
        spec.extend(msg(2, &container));
        let json = pod_json(&msg(2, &spec));
        assert_eq!(
            json["spec"],
            serde_json::json!({
                "volumes": [{"name": "cfg",
                             "configMap": {"name": "settings", "defaultMode": 420}}],
                "containers": [{"name": "c", "securityContext":
                    {"runAsUser": 0, "allowPrivilegeEscalation": false}}],
            })
        );
    }

    #[test]
    fn false_and_zero_on_the_wire_are_kept_and_empty_strings_dropped() {
        use prost::encoding::{bool as boolean, bytes, int64, string};
        // upstream PodSpec: restartPolicy (3) "", terminationGracePeriodSeconds (4) 0,
        // serviceAccount (9) "" (what Go writes for a value field), hostNetwork (11) false,
        // enableServiceLinks (30) false.
        let mut spec = Vec::new();
        string::encode(3, &String::new(), &mut spec);
        int64::encode(4, &0, &mut spec);
        string::encode(9, &String::new(), &mut spec);
        boolean::encode(11, &false, &mut spec);
        boolean::encode(30, &false, &mut spec);
        let mut pod = Vec::new();
        bytes::encode(2, &spec, &mut pod);
        let json = pod_json(&pod);
        assert_eq!(
            json["spec"],
            serde_json::json!({
                "terminationGracePeriodSeconds": 0,
                "hostNetwork": false,
                "enableServiceLinks": false,
            })
        );
    }

    /// A kubelet's pod status in upstream's protobuf (its field numbers: `proto/k8s/core.proto`)
    /// reads as upstream's JSON names.
    #[test]
    fn a_pod_status_in_kubernetes_protobuf_reads_as_its_json() {
        use prost::encoding::{bytes, int32, int64};
        let msg = |fields: &[(u32, Vec<u8>)]| {
            let mut out = Vec::new();
            for (n, b) in fields {
                bytes::encode(*n, b, &mut out);
            }
            out
        };
        let ip = |s: &str| text(1, s);
        let mut started_at = Vec::new();
        int64::encode(1, &1_700_000_000, &mut started_at);
        let running = msg(&[(2, msg(&[(1, started_at)]))]);
        let mut terminated = Vec::new();
        int32::encode(1, &2, &mut terminated);
        terminated.extend(text(3, "Error"));
        let mut app = text(1, "app");
        app.extend(msg(&[(2, running), (3, msg(&[(3, terminated)]))]));
        app.extend(text(7, "docker-pullable://nginx@sha256:abc"));
        app.extend(text(8, "containerd://0123"));
        int32::encode(5, &1, &mut app);
        let mut status = text(1, "Running");
        status.extend(text(5, "10.0.0.7"));
        status.extend(msg(&[
            (8, app),
            (10, text(1, "setup")),
            (12, ip("10.244.3.9")),
            (16, ip("10.0.0.7")),
        ]));
        status.extend(text(6, "10.244.3.9"));
        let pod = msg(&[(3, status)]);
        let json = pod_json(&pod);
        assert_eq!(
            json["status"],
            serde_json::json!({
                "phase": "Running",
                "hostIP": "10.0.0.7",
                "podIP": "10.244.3.9",
                "containerStatuses": [{
                    "name": "app",
                    "state": {"running": {"startedAt": "2023-11-14T22:13:20Z"}},
                    "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}},
                    "restartCount": 1,
                    "imageID": "docker-pullable://nginx@sha256:abc",
                    "containerID": "containerd://0123"
                }],
                "initContainerStatuses": [{"name": "setup"}],
                "podIPs": [{"ip": "10.244.3.9"}],
                "hostIPs": [{"ip": "10.0.0.7"}]
            })
        );
    }
}
