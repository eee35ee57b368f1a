//! Lists in pages, as client-go's `tools/pager` and kubectl's `--chunk-size=500` do: one List
//! of everything would be one response as large as the collection, which a server must build in
//! memory and a client must accept whole (tonic refuses a response over 4 MiB unless told
//! otherwise; see [`crate::MAX_RESPONSE_BYTES`]). Pages of [`CHUNK_SIZE`] keep each response
//! bounded by what 500 objects weigh.
//!
//! Every page is read at the revision of the first (the continue token carries it), so the
//! pages together are one consistent snapshot, and the first page's resourceVersion is the
//! list's: a watch started from it misses nothing and repeats nothing.
//!
//! [`Listing`] is the same list, and its watch, as the informer's source (`get -w`).

use kubestore_controllers::informer::{Events, Source};
use kubestore_proto::{
    meta::v1::{ListMeta, ListOptions, WatchEventType},
    registry::v1::{ApiResource, Output},
};
use serde_json::Value;
use tokio_stream::StreamExt;
use tonic::Status;
use tonic_types::StatusExt;

use crate::client::{Client, parse};

/// Objects per page: kubectl's default `--chunk-size`, and the reflector's page size.
pub const CHUNK_SIZE: i64 = 500;

/// A whole list: objects, or a Table's rows and column definitions.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    /// The list's metadata (its resourceVersion is the snapshot's; no continue token).
    pub meta: ListMeta,
    /// Each object, or each row (`{"cells": [...], "object": ...}`).
    pub items: Vec<Value>,
    /// For a Table: the column definitions (a JSON array).
    pub columns: Value,
}

/// Lists every object `options` selects of `r` in `ns` ("" = all), a page of [`CHUNK_SIZE`]
/// at a time, as `output` asks.
///
/// A continue token that expired between two pages (its revision was compacted) makes the
/// list start again as one unpaged List, as client-go's pager does (`FullListIfExpired`):
/// pages read at different revisions would not be one snapshot.
pub async fn list_all(
    client: &Client,
    r: &ApiResource,
    ns: &str,
    options: ListOptions,
    output: Output,
) -> Result<Listed, Status> {
    let mut page_options = ListOptions {
        limit: CHUNK_SIZE,
        r#continue: String::new(),
        ..options.clone()
    };
    let mut listed: Option<Listed> = None;
    loop {
        let page = match client.list(r, ns, page_options.clone(), output).await {
            Ok(p) => p,
            Err(e) if listed.is_some() && is_expired(&e) => {
                tracing::info!(
                    resource = r.resource,
                    "continue token expired; listing in one call"
                );
                let whole = ListOptions {
                    limit: 0,
                    r#continue: String::new(),
                    ..options.clone()
                };
                listed = None;
                client.list(r, ns, whole, output).await?
            }
            Err(e) => return Err(e),
        };
        let meta = page.metadata.unwrap_or_default();
        let token = meta.r#continue.clone();
        let all = listed.get_or_insert_with(|| Listed {
            meta,
            items: Vec::new(),
            columns: Value::Null,
        });
        if all.columns.is_null() && !page.columns.is_empty() {
            all.columns = parse(&page.columns)?;
        }
        for item in &page.items {
            all.items.push(parse(item)?);
        }
        if token.is_empty() {
            // What the caller sees is the whole list: no continue token left.
            all.meta.r#continue.clear();
            all.meta.remaining_item_count = None;
            return Ok(listed.unwrap_or_default());
        }
        // A continue request carries no resourceVersion of its own (the token holds it;
        // upstream refuses both together).
        page_options.resource_version.clear();
        page_options.resource_version_match = Default::default();
        page_options.r#continue = token;
    }
}

/// Whether `e` is a 410 Gone (`Expired`): the continue token's revision was compacted.
fn is_expired(e: &Status) -> bool {
    e.get_details_error_info()
        .is_some_and(|i| i.reason == "Expired")
}

/// What `options` select of a resource in `ns` ("" = all), as objects or Table rows, as the
/// informer's source ([`kubestore_controllers::informer`]): `get -w` watches through it, so a
/// watch that drops resumes from the last version printed and an expired one lists again.
pub struct Listing {
    /// The client.
    pub client: Client,
    /// The resource.
    pub resource: ApiResource,
    /// The namespace ("" = all).
    pub namespace: String,
    /// The selectors.
    pub options: ListOptions,
    /// Objects, or Table rows.
    pub output: Output,
}

/// The informer's page request (`limit`, `continue`) with a source's selectors (`base`).
pub fn page_options(base: &ListOptions, page: ListOptions) -> ListOptions {
    ListOptions {
        limit: page.limit,
        // A continue token carries its revision; upstream refuses both together.
        resource_version: if page.r#continue.is_empty() {
            base.resource_version.clone()
        } else {
            String::new()
        },
        r#continue: page.r#continue,
        ..base.clone()
    }
}

/// The informer's watch request (from a version, with bookmarks) with a source's selectors.
pub fn watch_options(base: &ListOptions, from: ListOptions) -> ListOptions {
    ListOptions {
        resource_version: from.resource_version,
        allow_watch_bookmarks: from.allow_watch_bookmarks,
        limit: 0,
        r#continue: String::new(),
        ..base.clone()
    }
}

/// An item's resourceVersion: an object's, or a Table row's object's.
fn item_version(item: &Value) -> String {
    item.pointer("/metadata/resourceVersion")
        .or_else(|| item.pointer("/object/metadata/resourceVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A watch event's item: the object, or the one row of the event's Table (a bookmark carries
/// only its resourceVersion, as an object).
fn event_item(json: &str) -> Result<Value, Status> {
    let v = parse(json)?;
    if v["kind"] == "Table" {
        return Ok(v
            .pointer("/rows/0")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default())));
    }
    Ok(v)
}

impl Source for Listing {
    type Item = Value;
    fn resource_version(item: &Value) -> String {
        item_version(item)
    }
    async fn list(&self, page: ListOptions) -> Result<(Vec<Value>, ListMeta), Status> {
        let options = page_options(&self.options, page);
        let list = self
            .client
            .list(&self.resource, &self.namespace, options, self.output)
            .await?;
        let items = list
            .items
            .iter()
            .map(|i| parse(i))
            .collect::<Result<_, _>>()?;
        Ok((items, list.metadata.unwrap_or_default()))
    }
    async fn watch(&self, from: ListOptions) -> Result<Events<Value>, Status> {
        let options = watch_options(&self.options, from);
        let events = self
            .client
            .watch(&self.resource, &self.namespace, options, self.output)
            .await?;
        Ok(Box::pin(events.map(|e| {
            let e = e?;
            let kind = WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified);
            Ok((kind, event_item(&e.json)?))
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_carry_their_version_as_objects_or_rows() {
        let row = event_item(
            r#"{"kind":"Table","columnDefinitions":[],"rows":[{"cells":["a"],"object":{"metadata":{"resourceVersion":"7"}}}]}"#,
        )
        .expect("a table");
        assert_eq!(row["cells"][0], "a");
        assert_eq!(item_version(&row), "7");
        let bookmark =
            event_item(r#"{"kind":"Pod","metadata":{"resourceVersion":"9"}}"#).expect("an object");
        assert_eq!(item_version(&bookmark), "9");
    }
}
