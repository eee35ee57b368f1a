//! The gRPC services of custom kinds: `apiextensions.v1.CustomResourceDefinitions` (the
//! definitions, a cluster-scoped kind of the generic Store, served by the typed services'
//! helpers like every built-in kind) and `apiextensions.v1.CustomObjects` (the objects of every
//! served kind, found by group, version and plural at each request, and served by the
//! catalog's endpoint of that version: `catalog::custom`, what the REST and generic APIs use).
//!
//! Objects travel as `google.protobuf.Struct`s here: the endpoint's Kubernetes JSON, read
//! into one.

use std::sync::Arc;

use kubestore_proto::apiextensions::v1::{
    CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomObjectList,
    CustomObjectWatchEvent, CustomResourceDefinition, CustomResourceDefinitionList,
    CustomResourceDefinitionWatchEvent, DeleteCollectionCustomObjectsRequest,
    DeleteCustomObjectRequest, DeleteCustomObjectResponse, DeleteCustomResourceDefinitionRequest,
    DeleteCustomResourceDefinitionResponse, GetCustomObjectRequest,
    GetCustomResourceDefinitionRequest, ListCustomObjectsRequest,
    ListCustomResourceDefinitionsRequest, UpdateCustomObjectRequest,
    UpdateCustomResourceDefinitionRequest, WatchCustomObjectsRequest,
    WatchCustomResourceDefinitionsRequest, custom_objects_server::CustomObjects,
    custom_resource_definitions_server::CustomResourceDefinitions,
};
use serde_json::Value;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::{
    catalog::{Endpoint, Output, Page, Part, WriteOptions, custom::CustomProvider},
    custom::{
        kinds::{ServedKind, not_found},
        object::{from_struct, to_struct},
        resolve::{Resolver, Target},
    },
    error::ApiError,
    grpc::service::{ResourceService, Write, ctx, ctx_within},
    store::update::Part as UpdatePart,
    store::{Ctx, DELETE_COLLECTION_TIMEOUT},
};

type WatchStream<T> = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

const CRD: &str = "custom_resource_definition";

/// Update or UpdateStatus of a definition (the same request, another part).
async fn update_definition(
    service: &ResourceService<CustomResourceDefinition>,
    request: Request<UpdateCustomResourceDefinitionRequest>,
    part: UpdatePart,
) -> Result<Response<CustomResourceDefinition>, Status> {
    let (metadata, _, r) = request.into_parts();
    service
        .write(
            &metadata,
            Write::Update(part),
            String::new(),
            r.custom_resource_definition,
            CRD,
            r.dry_run,
        )
        .await
}

#[tonic::async_trait]
impl CustomResourceDefinitions for ResourceService<CustomResourceDefinition> {
    async fn create(
        &self,
        request: Request<CreateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let (metadata, _, r) = request.into_parts();
        self.write(
            &metadata,
            Write::Create,
            String::new(),
            r.custom_resource_definition,
            CRD,
            r.dry_run,
        )
        .await
    }

    async fn get(
        &self,
        request: Request<GetCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let (metadata, _, r) = request.into_parts();
        Ok(Response::new(self.get_one(&metadata, "", &r.name).await?))
    }

    async fn update(
        &self,
        request: Request<UpdateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        update_definition(self, request, UpdatePart::Main).await
    }

    async fn update_status(
        &self,
        request: Request<UpdateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        update_definition(self, request, UpdatePart::Status).await
    }

    /// The first Delete marks the definition with its cleanup finalizer (the definitions'
    /// strategy: `Strategy::delete_finalizers`, in the Store, for every transport).
    async fn delete(
        &self,
        request: Request<DeleteCustomResourceDefinitionRequest>,
    ) -> Result<Response<DeleteCustomResourceDefinitionResponse>, Status> {
        let (metadata, _, r) = request.into_parts();
        let (crd, deleted) = self.delete_one(&metadata, "", &r.name, r.options).await?;
        Ok(Response::new(DeleteCustomResourceDefinitionResponse {
            custom_resource_definition: Some(crd),
            deleted,
        }))
    }

    async fn list(
        &self,
        request: Request<ListCustomResourceDefinitionsRequest>,
    ) -> Result<Response<CustomResourceDefinitionList>, Status> {
        let (md, _, r) = request.into_parts();
        let (metadata, items) = self.list_page(&md, "", r.options).await?;
        Ok(Response::new(CustomResourceDefinitionList {
            metadata: Some(metadata),
            items,
        }))
    }

    type WatchStream = WatchStream<CustomResourceDefinitionWatchEvent>;

    async fn watch(
        &self,
        request: Request<WatchCustomResourceDefinitionsRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let r = request.into_inner();
        let events = self.watch_events("", r.options).await?;
        Ok(Response::new(Box::pin(events.map(|e| {
            e.map(|(kind, object)| CustomResourceDefinitionWatchEvent {
                r#type: kind as i32,
                object: Some(object),
            })
        }))))
    }
}

impl Resolver {
    /// The endpoint of the served kind and version a request names (scope checked as
    /// [`Self::resolve`] does).
    async fn endpoint(
        &self,
        ctx: &Ctx,
        t: &Target<'_>,
        collection: bool,
    ) -> Result<(Arc<dyn Endpoint>, Arc<ServedKind>, String), ApiError> {
        let (kind, v) = self.resolve(ctx, t, collection).await?;
        let e = CustomProvider::new(self.clone())
            .endpoint(kind.clone(), &v)
            .ok_or_else(|| not_found(t.group, t.version, t.plural))?;
        Ok((e, kind, v))
    }
}

/// A `Struct` from an object's JSON text.
fn structure(json: &[u8]) -> Result<pbjson_types::Struct, ApiError> {
    match serde_json::from_slice(json) {
        Ok(Value::Object(m)) => to_struct(m),
        _ => Err(ApiError::Internal(
            "an endpoint's object is not a JSON object".into(),
        )),
    }
}

/// The request's object as JSON.
fn body(object: Option<pbjson_types::Struct>) -> Result<Value, ApiError> {
    let object = object.ok_or_else(|| {
        ApiError::BadRequest("request field `object` is required: the object to write".into())
    })?;
    Ok(Value::Object(from_struct(object)?))
}

fn objects(page: Page) -> Result<CustomObjectList, ApiError> {
    let (metadata, items) = match page {
        Page::Objects { meta, items } => (meta, items),
        Page::Table { meta, rows, .. } => (meta, rows),
    };
    Ok(CustomObjectList {
        metadata: Some(metadata),
        items: items
            .iter()
            .map(|i| structure(i))
            .collect::<Result<_, _>>()?,
    })
}

fn writing(dry_run: bool) -> WriteOptions {
    WriteOptions {
        dry_run,
        ..Default::default()
    }
}

macro_rules! target {
    ($r:expr) => {
        Target {
            group: &$r.group,
            version: &$r.version,
            plural: &$r.plural,
            namespace: &$r.namespace,
        }
    };
}

#[tonic::async_trait]
impl CustomObjects for Resolver {
    async fn create(
        &self,
        request: Request<CreateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&ctx, &target!(r), false).await?;
        let w = e
            .create(ctx, &r.namespace, body(r.object)?, &writing(r.dry_run))
            .await?;
        Ok(Response::new(structure(&w.object)?))
    }

    async fn get(
        &self,
        request: Request<GetCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&ctx, &target!(r), false).await?;
        let json = e
            .get(ctx, &r.namespace, &r.name, Part::Main, Output::Object)
            .await?;
        Ok(Response::new(structure(&json)?))
    }

    async fn update(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        self.update_part(request, Part::Main).await
    }

    async fn update_status(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        self.update_part(request, Part::Status).await
    }

    async fn delete(
        &self,
        request: Request<DeleteCustomObjectRequest>,
    ) -> Result<Response<DeleteCustomObjectResponse>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&ctx, &target!(r), false).await?;
        let d = e
            .delete(ctx, &r.namespace, &r.name, r.options.unwrap_or_default())
            .await?;
        Ok(Response::new(DeleteCustomObjectResponse {
            object: Some(structure(&d.object)?),
            deleted: d.deleted,
        }))
    }

    async fn delete_collection(
        &self,
        request: Request<DeleteCollectionCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let ctx = ctx_within(request.metadata(), DELETE_COLLECTION_TIMEOUT);
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&ctx, &target!(r), true).await?;
        let page = e
            .delete_collection(
                ctx,
                &r.namespace,
                r.list_options.unwrap_or_default(),
                r.options.unwrap_or_default(),
            )
            .await?;
        Ok(Response::new(objects(page)?))
    }

    async fn list(
        &self,
        request: Request<ListCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&ctx, &target!(r), true).await?;
        let page = e
            .list(
                ctx,
                &r.namespace,
                r.options.unwrap_or_default(),
                Output::Object,
            )
            .await?;
        Ok(Response::new(objects(page)?))
    }

    type WatchStream = WatchStream<CustomObjectWatchEvent>;

    async fn watch(
        &self,
        request: Request<WatchCustomObjectsRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        // The watch itself has no deadline; looking its kind up has a unary call's.
        let lookup = ctx(request.metadata());
        let r = request.into_inner();
        let (e, _, _) = self.endpoint(&lookup, &target!(r), true).await?;
        let events = e
            .watch(
                &r.namespace,
                r.options.unwrap_or_default(),
                Output::Object,
                self.stop.clone(),
            )
            .await?;
        Ok(Response::new(Box::pin(events.map(|ev| {
            let (t, json) = ev?;
            Ok(CustomObjectWatchEvent {
                r#type: t as i32,
                object: Some(structure(&json)?),
            })
        }))))
    }
}

impl Resolver {
    /// Update or UpdateStatus (only with the status subresource: NOT_FOUND otherwise).
    async fn update_part(
        &self,
        request: Request<UpdateCustomObjectRequest>,
        part: Part,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (e, kind, v) = self.endpoint(&ctx, &target!(r), false).await?;
        if part == Part::Status && !e.info().status {
            return Err(not_found(&kind.group, &format!("{v} (status)"), &kind.plural).into());
        }
        let object = body(r.object)?;
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let w = e
            .update(ctx, &r.namespace, &name, object, part, &writing(r.dry_run))
            .await?;
        Ok(Response::new(structure(&w.object)?))
    }
}
