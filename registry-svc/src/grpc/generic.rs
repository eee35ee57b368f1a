//! The generic gRPC API (`registry.v1.Resources`): every resource of the catalog by group,
//! version and plural, objects as Kubernetes JSON. One dispatch of each verb to the catalog's
//! endpoints, as the REST API's handlers do; the CLI and the controllers use it, so they hold
//! no list of kinds.

use std::sync::Arc;

use bytes::Bytes;
use kubestore_apimachinery::patch::{Patch, PatchType as ApplyType};
use kubestore_proto::registry::v1::{
    ApiResource, ApplyRequest, CreateRequest, DeleteCollectionRequest, DeleteRequest,
    DeleteResponse, DiscoverRequest, DiscoverResponse, FieldValidation as WireValidation,
    GetRequest, ListRequest, Object, ObjectList, Output as WireOutput, PatchRequest, PatchType,
    ResourceRef, UpdateRequest, WatchEvent, WatchRequest, WriteOptions as WireOptions,
    WriteResponse, resources_server::Resources,
};
use serde_json::Value;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::{
    catalog::authorize,
    catalog::{
        Catalog, Endpoint, FieldValidation, IncludeObject, Output, Page, Part, WriteOptions,
    },
    error::ApiError,
    grpc::service::{ctx, ctx_within},
    metrics::Verb,
    store::{Ctx, DELETE_COLLECTION_TIMEOUT},
};

/// The generic service over the catalog.
#[derive(Clone)]
pub struct GenericService {
    catalog: Arc<Catalog>,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl GenericService {
    /// The service over `catalog`; `stop` ends watches on shutdown.
    pub fn new(catalog: Arc<Catalog>, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        Self { catalog, stop }
    }

    async fn endpoint(
        &self,
        ctx: &Ctx,
        r: Option<&ResourceRef>,
    ) -> Result<Arc<dyn Endpoint>, ApiError> {
        let r = r.ok_or_else(|| {
            ApiError::BadRequest(
                "request field `resource` is required: group, version and resource".into(),
            )
        })?;
        if r.version.is_empty() || r.resource.is_empty() {
            return Err(ApiError::BadRequest(
                "resource.version and resource.resource are required".into(),
            ));
        }
        match self
            .catalog
            .resolve(ctx, &r.group, &r.version, &r.resource)
            .await
        {
            Err(ApiError::NotFound { .. }) => Err(ApiError::NotFound {
                resource: format!(
                    "{}/{}/{}",
                    if r.group.is_empty() { "core" } else { &r.group },
                    r.version,
                    r.resource
                ),
                name: String::new(),
            }),
            other => other,
        }
    }
}

impl GenericService {
    /// A create of a create-only subresource of `parent` (`serviceaccounts/token`).
    async fn create_subresource(
        &self,
        mut ctx: Ctx,
        parent: &crate::catalog::ResourceInfo,
        r: CreateRequest,
    ) -> Result<WriteResponse, ApiError> {
        let Some(c) = self.catalog.create_only(
            &parent.group,
            &parent.version,
            &parent.plural,
            &r.subresource,
        ) else {
            return Err(ApiError::BadRequest(if r.subresource.is_empty() {
                format!(
                    "a create names an object ({:?}) only with a subresource that takes it",
                    r.name
                )
            } else {
                format!(
                    "{} has no subresource {:?} to create (discovery lists those it has)",
                    parent.qualified(),
                    r.subresource
                )
            }));
        };
        if r.name.is_empty() {
            return Err(ApiError::BadRequest(format!(
                "a create of {}/{} names the object it belongs to: name is empty",
                parent.plural, r.subresource
            )));
        }
        ctx.authorize(&c.attributes(&r.namespace, &r.name))?;
        let obj = body(&r.json, &ctx)?;
        let answer = c.create(&ctx.caller, &r.namespace, &r.name, obj).await?;
        Ok(WriteResponse {
            json: answer.to_string(),
            warnings: Vec::new(),
            created: true,
        })
    }
}

fn part(subresource: &str) -> Result<Part, ApiError> {
    match subresource {
        "" => Ok(Part::Main),
        "status" => Ok(Part::Status),
        "finalize" => Ok(Part::Finalize),
        other => Err(ApiError::BadRequest(format!(
            "unknown subresource {other:?}: \"\", \"status\" or \"finalize\""
        ))),
    }
}

fn output(o: i32) -> Output {
    match WireOutput::try_from(o) {
        Ok(WireOutput::Table) => Output::Table {
            include_object: IncludeObject::Metadata,
            no_headers: false,
        },
        Ok(WireOutput::Metadata) => Output::Metadata,
        _ => Output::Object,
    }
}

/// The options of a write whose body (object or patch) is `body` (its size decides whether
/// the work runs off the async workers).
fn write_options(o: Option<WireOptions>, body: &str) -> Result<WriteOptions, ApiError> {
    let o = o.unwrap_or_default();
    crate::managed::check_field_manager(&o.field_manager)?;
    Ok(WriteOptions {
        dry_run: o.dry_run,
        field_validation: match WireValidation::try_from(o.field_validation) {
            Ok(WireValidation::Ignore) => FieldValidation::Ignore,
            Ok(WireValidation::Strict) => FieldValidation::Strict,
            _ => FieldValidation::Warn,
        },
        field_manager: o.field_manager,
        force: o.force,
        body_bytes: body.len(),
    })
}

fn text(b: Bytes) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

/// A request's JSON, decoded (off the async workers when large).
fn body(json: &str, ctx: &Ctx) -> Result<Value, ApiError> {
    let deadline = Some(ctx.deadline.instant().into_std());
    crate::offload::run(json.len(), deadline, || {
        serde_json::from_str(json)
            .map_err(|e| ApiError::BadRequest(format!("the object is not valid JSON: {e}")))
    })
}

/// The namespace a write works in, for its authorization: the request's, else the object's
/// (read from the value that is written: one parse, see `authz`).
fn namespace_of<'a>(request: &'a str, obj: Option<&'a Value>) -> &'a str {
    if !request.is_empty() {
        return request;
    }
    obj.and_then(|o| o.pointer("/metadata/namespace"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn list(page: Page) -> ObjectList {
    match page {
        Page::Objects { meta, items } => ObjectList {
            metadata: Some(meta),
            items: items.into_iter().map(text).collect(),
            columns: String::new(),
        },
        Page::Table {
            meta,
            columns,
            rows,
        } => ObjectList {
            metadata: Some(meta),
            items: rows.into_iter().map(text).collect(),
            columns: text(columns),
        },
    }
}

fn written(w: crate::catalog::Written) -> WriteResponse {
    WriteResponse {
        json: text(w.object),
        warnings: w.warnings,
        created: w.created,
    }
}

type Stream<T> = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl Resources for GenericService {
    async fn discover(
        &self,
        request: Request<DiscoverRequest>,
    ) -> Result<Response<DiscoverResponse>, Status> {
        // What the REST API's discovery is: `get /apis` (granted to every user by
        // `system:discovery`).
        ctx(request.metadata(), request.extensions())?
            .caller
            .check(&crate::authz::Attributes::NonResource {
                verb: "get".into(),
                path: "/apis".into(),
            })?;
        let resources = self
            .catalog
            .all()
            .iter()
            .map(|e| {
                let i = e.info();
                let mut subresources = Vec::new();
                if i.status {
                    subresources.push("status".to_string());
                }
                if i.finalize {
                    subresources.push("finalize".to_string());
                }
                for c in self.catalog.create_only_subresources(i) {
                    subresources.push(c.subresource.to_string());
                }
                ApiResource {
                    group: i.group.clone(),
                    version: i.version.clone(),
                    resource: i.plural.clone(),
                    singular: i.singular.clone(),
                    kind: i.kind.clone(),
                    list_kind: i.list_kind.clone(),
                    short_names: i.short_names.clone(),
                    categories: i.categories.clone(),
                    namespaced: i.namespaced,
                    verbs: i.verbs.clone(),
                    subresources,
                    storage_version: i.storage_version,
                    message: i.message.clone().unwrap_or_default(),
                }
            })
            .collect();
        Ok(Response::new(DiscoverResponse { resources }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<Object>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        let p = part(&r.subresource)?;
        authorize(&mut ctx, e.as_ref(), Verb::Get, p, &r.namespace, &r.name)?;
        let json = e
            .get(ctx, &r.namespace, &r.name, p, output(r.output))
            .await?;
        Ok(Response::new(Object { json: text(json) }))
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<ObjectList>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        let name = crate::authz::selected_name(r.options.as_ref());
        authorize(
            &mut ctx,
            e.as_ref(),
            Verb::List,
            Part::Main,
            &r.namespace,
            &name,
        )?;
        let page = e
            .list(
                ctx,
                &r.namespace,
                r.options.unwrap_or_default(),
                output(r.output),
            )
            .await?;
        Ok(Response::new(list(page)))
    }

    type WatchStream = Stream<WatchEvent>;

    async fn watch(
        &self,
        request: Request<WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        // Looking the resource up has a unary call's deadline; the watch itself none.
        let (md, ext, r) = request.into_parts();
        let mut lookup = ctx(&md, &ext)?;
        let e = self.endpoint(&lookup, r.resource.as_ref()).await?;
        let name = crate::authz::selected_name(r.options.as_ref());
        authorize(
            &mut lookup,
            e.as_ref(),
            Verb::Watch,
            Part::Main,
            &r.namespace,
            &name,
        )?;
        let events = e
            .watch(
                &lookup,
                &r.namespace,
                r.options.unwrap_or_default(),
                output(r.output),
                self.stop.clone(),
            )
            .await?;
        Ok(Response::new(Box::pin(events.map(|ev| {
            let (kind, json) = ev?;
            Ok(WatchEvent {
                r#type: kind as i32,
                json: text(json),
            })
        }))))
    }

    async fn create(
        &self,
        request: Request<CreateRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        if !r.subresource.is_empty() || !r.name.is_empty() {
            return Ok(Response::new(
                self.create_subresource(ctx, e.info(), r).await?,
            ));
        }
        // Authorized in the namespace the object is written to: the request's, else the
        // object's, read from the value that is written (one parse: see `authz`).
        let obj = body(&r.json, &ctx);
        let namespace = namespace_of(&r.namespace, obj.as_ref().ok());
        authorize(
            &mut ctx,
            e.as_ref(),
            Verb::Create,
            Part::Main,
            namespace,
            "",
        )?;
        let obj = obj?;
        let options = write_options(r.options, &r.json)?;
        let w = e.create(ctx, &r.namespace, obj, &options).await?;
        Ok(Response::new(written(w)))
    }

    async fn update(
        &self,
        request: Request<UpdateRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        let p = part(&r.subresource)?;
        let obj = body(&r.json, &ctx);
        let namespace = namespace_of(&r.namespace, obj.as_ref().ok());
        authorize(&mut ctx, e.as_ref(), Verb::update(p), p, namespace, &r.name)?;
        let obj = obj?;
        let options = write_options(r.options, &r.json)?;
        let w = e
            .update(ctx, &r.namespace, &r.name, obj, p, &options)
            .await?;
        Ok(Response::new(written(w)))
    }

    async fn patch(
        &self,
        request: Request<PatchRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        let p = part(&r.subresource)?;
        authorize(
            &mut ctx,
            e.as_ref(),
            Verb::patch(p),
            p,
            &r.namespace,
            &r.name,
        )?;
        let patch_type = match PatchType::try_from(r.patch_type) {
            Ok(PatchType::Json) => ApplyType::Json,
            Ok(PatchType::Strategic) => ApplyType::Strategic,
            Ok(PatchType::Apply) => ApplyType::Apply,
            _ => ApplyType::Merge,
        };
        let body = if patch_type == ApplyType::Apply {
            // YAML, of which JSON is a part; aliases are bounded by the YAML reader.
            let deadline = Some(ctx.deadline.instant().into_std());
            let size = crate::offload::yaml_size(r.patch.as_bytes());
            crate::offload::run(size, deadline, || {
                kubestore_apimachinery::yaml::to_json(r.patch.as_bytes())
                    .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}")))
            })?
        } else {
            body(&r.patch, &ctx)?
        };
        let patch = Patch { patch_type, body };
        let options = write_options(r.options, &r.patch)?;
        let w = e
            .patch(ctx, &r.namespace, &r.name, patch, p, &options)
            .await?;
        Ok(Response::new(written(w)))
    }

    /// A patch of type APPLY: the same request, named for what it does.
    async fn apply(
        &self,
        request: Request<ApplyRequest>,
    ) -> Result<Response<WriteResponse>, Status> {
        let (md, ext, r) = request.into_parts();
        let patch = PatchRequest {
            resource: r.resource,
            namespace: r.namespace,
            name: r.name,
            subresource: r.subresource,
            patch_type: PatchType::Apply.into(),
            patch: r.config,
            options: r.options,
        };
        self.patch(Request::from_parts(md, ext, patch)).await
    }

    async fn delete(
        &self,
        request: Request<DeleteRequest>,
    ) -> Result<Response<DeleteResponse>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx(&md, &ext)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        authorize(
            &mut ctx,
            e.as_ref(),
            Verb::Delete,
            Part::Main,
            &r.namespace,
            &r.name,
        )?;
        let d = e
            .delete(ctx, &r.namespace, &r.name, r.options.unwrap_or_default())
            .await?;
        Ok(Response::new(DeleteResponse {
            json: text(d.object),
            deleted: d.deleted,
        }))
    }

    async fn delete_collection(
        &self,
        request: Request<DeleteCollectionRequest>,
    ) -> Result<Response<ObjectList>, Status> {
        let (md, ext, r) = request.into_parts();
        let mut ctx = ctx_within(&md, &ext, DELETE_COLLECTION_TIMEOUT)?;
        let e = self.endpoint(&ctx, r.resource.as_ref()).await?;
        let verb = Verb::DeleteCollection;
        authorize(&mut ctx, e.as_ref(), verb, Part::Main, &r.namespace, "")?;
        let page = e
            .delete_collection(
                ctx,
                &r.namespace,
                r.list_options.unwrap_or_default(),
                r.options.unwrap_or_default(),
            )
            .await?;
        Ok(Response::new(list(page)))
    }
}
