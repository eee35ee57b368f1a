//! Lists in pages, as client-go's `tools/pager` and kubectl's `--chunk-size=500` do: one List
//! of everything would be one response as large as the collection, which a server must build in
//! memory and a client must accept whole (tonic refuses a response over 4 MiB unless told
//! otherwise; see [`crate::MAX_RESPONSE_BYTES`]). Pages of [`CHUNK_SIZE`] keep each response
//! bounded by what 500 objects weigh.
//!
//! Every page is read at the revision of the first (the continue token carries it), so the
//! pages together are one consistent snapshot, and the first page's resourceVersion is the
//! list's: a watch started from it misses nothing and repeats nothing.

use kubestore_proto::meta::v1::{ListMeta, ListOptions};
use tonic::Status;
use tonic_types::StatusExt;

use crate::{Ch, kinds::Kind};

/// Objects per page: kubectl's default `--chunk-size`, and the reflector's page size.
pub const CHUNK_SIZE: i64 = 500;

/// Lists every object `options` selects in `ns`, a page of [`CHUNK_SIZE`] at a time; the
/// list's metadata (its resourceVersion is the snapshot's) and the objects, in order.
///
/// A continue token that expired between two pages (its revision was compacted) makes the
/// list start again as one unpaged List, as client-go's pager does (`FullListIfExpired`):
/// pages read at different revisions would not be one snapshot.
pub async fn list_all<K: Kind>(
    ch: &Ch,
    ns: &str,
    options: ListOptions,
) -> Result<(ListMeta, Vec<K>), Status> {
    let mut page_options = ListOptions {
        limit: CHUNK_SIZE,
        r#continue: String::new(),
        ..options.clone()
    };
    let mut first: Option<ListMeta> = None;
    let mut items = Vec::new();
    loop {
        let (meta, page) = match K::list(ch, ns, page_options.clone()).await {
            Ok(r) => r,
            Err(e) if first.is_some() && is_expired(&e) => {
                tracing::info!(
                    kind = K::KIND,
                    "continue token expired; listing in one call"
                );
                return K::list(
                    ch,
                    ns,
                    ListOptions {
                        limit: 0,
                        r#continue: String::new(),
                        ..options
                    },
                )
                .await;
            }
            Err(e) => return Err(e),
        };
        items.extend(page);
        let token = meta.r#continue.clone();
        let list_meta = first.get_or_insert(meta);
        if token.is_empty() {
            // What the caller sees is the whole list: no continue token left.
            list_meta.r#continue.clear();
            list_meta.remaining_item_count = None;
            return Ok((list_meta.clone(), items));
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
