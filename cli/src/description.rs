//! `kubestore describe KIND NAME`: the object as `get -o yaml` prints it, then the Events
//! about it (kubectl's describe ends the same way), oldest first: what happened to it.
//!
//! The Events are listed as kubectl's `searchEvents` lists them: by field selector on the
//! involved object's name, namespace, kind and UID (so an earlier object of the same name is
//! not shown), in the object's namespace, or every namespace for a cluster-scoped object.

use kubestore_apimachinery::{table::age, time};
use kubestore_proto::{
    meta::v1::ListOptions,
    registry::v1::{ApiResource, Output},
};
use serde_json::Value;

use crate::{
    Ch, Error,
    client::Client,
    manifest,
    modify::{Target, read},
    pager::list_all,
    table::{now, render},
};

/// Where Events live: the core group's `events`.
fn events_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        resource: "events".into(),
        namespaced: true,
        ..Default::default()
    }
}

/// upstream's `GetFieldSelector` of an involved object: the fields it has.
fn selector(object: &Value) -> String {
    let meta = |f: &str| {
        object
            .pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let kind = object["kind"].as_str().unwrap_or_default();
    [
        ("involvedObject.name", meta("name")),
        ("involvedObject.namespace", meta("namespace")),
        ("involvedObject.kind", kind),
        ("involvedObject.uid", meta("uid")),
    ]
    .iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| format!("{k}={v}"))
    .collect::<Vec<_>>()
    .join(",")
}

/// An Event's creation time, seconds since the epoch.
fn created(e: &Value) -> Option<i64> {
    e.pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(time::parse)
        .map(|(s, _)| s)
}

/// The description of `kind` (as typed) `name` in `ns`.
pub async fn describe(ch: &Ch, ns: &str, kind: &str, name: &str) -> Result<String, Error> {
    let client = Client::new(ch);
    let t = Target::resolve(&client, kind, ns, name).await?;
    let object = read(&client, &t).await?;
    let mut out = manifest::render(&object, "yaml").map_err(Error::Client)?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let events_ns = if t.resource.namespaced { ns } else { "" };
    let options = ListOptions {
        field_selector: selector(&object),
        ..Default::default()
    };
    let mut events = list_all(
        &client,
        &events_resource(),
        events_ns,
        options,
        Output::Object,
    )
    .await?
    .items;
    events.sort_by_key(created);
    if events.is_empty() {
        out.push_str("Events:  <none>");
        return Ok(out);
    }
    let now = now();
    let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_string();
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            vec![
                text(e, "type"),
                text(e, "reason"),
                age(created(e), now),
                text(e, "message"),
            ]
        })
        .collect();
    out.push_str("Events:\n");
    let header = ["TYPE", "REASON", "AGE", "MESSAGE"].map(String::from);
    for line in render(&header, &rows).lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    Ok(out.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_selected_by_the_involved_objects_fields() {
        let pod = serde_json::json!({
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1"},
        });
        assert_eq!(
            selector(&pod),
            "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=u-1"
        );
        let ns = serde_json::json!({"kind": "Namespace", "metadata": {"name": "team-a"}});
        assert_eq!(
            selector(&ns),
            "involvedObject.name=team-a,involvedObject.kind=Namespace"
        );
    }
}
