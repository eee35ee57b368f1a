//! The generic API's calls (`registry.v1.Resources`) as the verbs use them: a resource from
//! discovery, a namespace and a name in; objects out as JSON values. One path for every kind,
//! built in or custom; registry-svc does the per-kind work (defaults, validation, tables,
//! patches).

use kubestore_proto::{
    meta::v1::{DeleteOptions, ListOptions},
    registry::v1::{
        ApiResource, CreateRequest, DeleteRequest, DiscoverRequest, GetRequest, ListRequest,
        ObjectList, Output, PatchRequest, PatchType, ResourceRef, UpdateRequest, WatchEvent,
        WatchRequest, WriteOptions, resources_client::ResourcesClient,
    },
};
use serde_json::Value;
use tonic::{Status, Streaming};

use crate::{
    Ch, MAX_RESPONSE_BYTES,
    resource::{Discovery, namespace_for},
};

/// A client of the generic API.
#[derive(Clone)]
pub struct Client {
    inner: ResourcesClient<Ch>,
}

/// What a write answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The object as written (or as it would be, in a dry run).
    pub object: Value,
    /// The server's warnings (unknown fields dropped, ...), printed as `Warning: ...`.
    pub warnings: Vec<String>,
}

/// A write's warnings as kubectl prints them (`Warning: unknown field "spec.x"`), for
/// standard error.
pub fn warning_lines(warnings: &[String]) -> impl Iterator<Item = String> + '_ {
    warnings.iter().map(|w| format!("Warning: {w}"))
}

/// The reference of `r` in requests.
fn reference(r: &ApiResource) -> Option<ResourceRef> {
    Some(ResourceRef {
        group: r.group.clone(),
        version: r.version.clone(),
        resource: r.resource.clone(),
    })
}

/// Parses a JSON text the server sent.
pub fn parse(json: &str) -> Result<Value, Status> {
    serde_json::from_str(json)
        .map_err(|e| Status::internal(format!("registry-svc sent JSON that does not parse: {e}")))
}

fn write_options(dry_run: bool) -> Option<WriteOptions> {
    Some(WriteOptions {
        dry_run,
        ..Default::default()
    })
}

fn written(w: kubestore_proto::registry::v1::WriteResponse) -> Result<Written, Status> {
    Ok(Written {
        object: parse(&w.json)?,
        warnings: w.warnings,
    })
}

/// The `metadata.name` of an object.
pub fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The `metadata.resourceVersion` of an object.
pub fn resource_version_of(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Client {
    /// A client over `ch` that accepts responses up to [`MAX_RESPONSE_BYTES`] (a page of 500
    /// large objects), not tonic's 4 MiB default.
    pub fn new(ch: &Ch) -> Self {
        Self {
            inner: ResourcesClient::new(ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES),
        }
    }

    fn c(&self) -> ResourcesClient<Ch> {
        self.inner.clone()
    }

    /// Every resource served now.
    pub async fn discover(&self) -> Result<Discovery, Status> {
        let r = self.c().discover(DiscoverRequest {}).await?.into_inner();
        Ok(Discovery::new(r.resources))
    }

    /// One object (`Output::Table`: a Table of one row).
    pub async fn get(
        &self,
        r: &ApiResource,
        ns: &str,
        name: &str,
        output: Output,
    ) -> Result<Value, Status> {
        let o = self
            .c()
            .get(GetRequest {
                resource: reference(r),
                namespace: namespace_for(r, ns),
                name: name.into(),
                subresource: String::new(),
                output: output as i32,
            })
            .await?
            .into_inner();
        parse(&o.json)
    }

    /// One page ("" namespace: every namespace); items as JSON texts (objects, or Table rows).
    pub async fn list(
        &self,
        r: &ApiResource,
        ns: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<ObjectList, Status> {
        Ok(self
            .c()
            .list(ListRequest {
                resource: reference(r),
                namespace: namespace_for(r, ns),
                options: Some(options),
                output: output as i32,
            })
            .await?
            .into_inner())
    }

    /// A watch from `options.resource_version`.
    pub async fn watch(
        &self,
        r: &ApiResource,
        ns: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<Streaming<WatchEvent>, Status> {
        Ok(self
            .c()
            .watch(WatchRequest {
                resource: reference(r),
                namespace: namespace_for(r, ns),
                options: Some(options),
                output: output as i32,
            })
            .await?
            .into_inner())
    }

    /// Creates `obj` in `ns`.
    pub async fn create(
        &self,
        r: &ApiResource,
        ns: &str,
        obj: &Value,
        dry_run: bool,
    ) -> Result<Written, Status> {
        written(
            self.c()
                .create(CreateRequest {
                    resource: reference(r),
                    namespace: namespace_for(r, ns),
                    json: obj.to_string(),
                    options: write_options(dry_run),
                    ..Default::default()
                })
                .await?
                .into_inner(),
        )
    }

    /// Replaces the object named in `obj` with `obj`, at the resourceVersion it carries.
    pub async fn update(
        &self,
        r: &ApiResource,
        ns: &str,
        obj: &Value,
        dry_run: bool,
    ) -> Result<Written, Status> {
        written(
            self.c()
                .update(UpdateRequest {
                    resource: reference(r),
                    namespace: namespace_for(r, ns),
                    name: name_of(obj).into(),
                    subresource: String::new(),
                    json: obj.to_string(),
                    options: write_options(dry_run),
                })
                .await?
                .into_inner(),
        )
    }

    /// Patches `name`; the server applies the patch inside its update's retry loop.
    pub async fn patch(
        &self,
        r: &ApiResource,
        ns: &str,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
        dry_run: bool,
    ) -> Result<Written, Status> {
        written(
            self.c()
                .patch(PatchRequest {
                    resource: reference(r),
                    namespace: namespace_for(r, ns),
                    name: name.into(),
                    subresource: String::new(),
                    patch_type: patch_type as i32,
                    patch: patch.to_string(),
                    options: write_options(dry_run),
                })
                .await?
                .into_inner(),
        )
    }

    /// Deletes `name`: its last state, and whether it is gone (false while a grace period or
    /// finalizers hold it).
    pub async fn delete(
        &self,
        r: &ApiResource,
        ns: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<(Value, bool), Status> {
        let d = self
            .c()
            .delete(DeleteRequest {
                resource: reference(r),
                namespace: namespace_for(r, ns),
                name: name.into(),
                options: Some(options),
            })
            .await?
            .into_inner();
        let last = if d.json.is_empty() {
            Value::Null
        } else {
            parse(&d.json)?
        };
        Ok((last, d.deleted))
    }
}
