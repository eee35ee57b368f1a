//! `kubestore describe KIND NAME`: the object as `get -o yaml` prints it, then the Events
//! about it (kubectl's describe ends the same way), oldest first: what happened to it.

use kubestore_proto::{
    core::v1::{ListEventsRequest, events_client::EventsClient},
    meta::v1::ListOptions,
};
use serde_json::Value;
use tonic::Status;

use crate::{
    Ch, MAX_RESPONSE_BYTES, custom,
    kinds::Kind,
    manifest,
    resource::{Named, resolve, unknown},
    table,
};

async fn builtin<K: Kind>(ch: &Ch, ns: &str, name: &str) -> Result<(Value, String), Status> {
    let obj = K::get(ch, ns, name).await?;
    Ok((manifest::to_value(&obj), obj.meta().uid))
}

/// The description of `kind` `name` in `ns`.
pub async fn describe(ch: &Ch, ns: &str, kind: &str, name: &str) -> Result<String, Status> {
    use kubestore_proto::core::v1::{ConfigMap, Event, Pod, Secret};
    let Some(named) = resolve(ch, kind).await? else {
        return Err(Status::not_found(unknown(kind)));
    };
    let (object, uid) = match &named {
        Named::Pods => builtin::<Pod>(ch, ns, name).await?,
        Named::ConfigMaps => builtin::<ConfigMap>(ch, ns, name).await?,
        Named::Events => builtin::<Event>(ch, ns, name).await?,
        Named::Secrets => builtin::<Secret>(ch, ns, name).await?,
        Named::Definitions => custom::get_definition_value(ch, name).await?,
        Named::Custom(r) => custom::get_value(ch, r, ns, name).await?,
    };
    let events_ns = match &named {
        Named::Definitions => "default",
        Named::Custom(r) if !r.namespaced => "default",
        _ => ns,
    };
    let mut out = manifest::render(&object, "yaml").map_err(Status::internal)?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let mut events = EventsClient::new(ch.clone())
        .max_decoding_message_size(MAX_RESPONSE_BYTES)
        .list(ListEventsRequest {
            namespace: events_ns.into(),
            options: Some(ListOptions {
                field_selector: format!("involvedObject.name={name}"),
                ..Default::default()
            }),
        })
        .await?
        .into_inner()
        .items;
    // The object under this name now, not an earlier one of the same name.
    events.retain(|e| uid.is_empty() || e.involved_object.as_ref().is_some_and(|o| o.uid == uid));
    let created = |e: &Event| {
        e.metadata
            .as_ref()
            .and_then(|m| m.creation_timestamp.as_ref())
            .map(|t| t.seconds)
    };
    events.sort_by_key(created);
    if events.is_empty() {
        out.push_str("Events:  <none>");
        return Ok(out);
    }
    let now = table::now();
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            vec![
                e.r#type.clone(),
                e.reason.clone(),
                table::age(created(e), now),
                e.message.clone(),
            ]
        })
        .collect();
    out.push_str("Events:\n");
    let header = ["TYPE", "REASON", "AGE", "MESSAGE"].map(String::from);
    for line in table::render(&header, &rows).lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    Ok(out.trim_end().to_string())
}
