//! The gRPC services of custom kinds: `apiextensions.v1.CustomResourceDefinitions` (the
//! definitions, a cluster-scoped kind of the generic Store, served by the typed services'
//! helpers like every built-in kind) and `apiextensions.v1.CustomObjects`, deprecated: the
//! generic API's handlers ([`GenericService`]) for custom kinds, objects as
//! `google.protobuf.Struct`s ([`CustomObjectsAlias`]).

use std::sync::Arc;

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, CreateCustomResourceDefinitionRequest, CustomObjectList,
        CustomObjectWatchEvent, CustomResourceDefinition, CustomResourceDefinitionList,
        CustomResourceDefinitionWatchEvent, DeleteCollectionCustomObjectsRequest,
        DeleteCustomObjectRequest, DeleteCustomObjectResponse,
        DeleteCustomResourceDefinitionRequest, DeleteCustomResourceDefinitionResponse,
        GetCustomObjectRequest, GetCustomResourceDefinitionRequest, ListCustomObjectsRequest,
        ListCustomResourceDefinitionsRequest, UpdateCustomObjectRequest,
        UpdateCustomResourceDefinitionRequest, WatchCustomObjectsRequest,
        WatchCustomResourceDefinitionsRequest, custom_objects_server::CustomObjects,
        custom_resource_definitions_server::CustomResourceDefinitions,
    },
    registry::v1::{
        CreateRequest, DeleteCollectionRequest, DeleteRequest, GetRequest, ListRequest, ObjectList,
        ResourceRef, UpdateRequest, WatchRequest, WriteOptions as WireOptions,
        resources_server::Resources,
    },
};
use serde_json::Value;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status, metadata::MetadataMap};

use crate::{
    catalog::{Endpoint, custom::CustomProvider},
    custom::{
        kinds::{ServedKind, not_found},
        object::{from_struct, to_struct},
        resolve::{Resolver, Target},
    },
    error::ApiError,
    grpc::{
        generic::GenericService,
        service::{ResourceService, Write, ctx},
    },
    store::Ctx,
    store::update::Part as UpdatePart,
};

type WatchStream<T> = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

const CRD: &str = "custom_resource_definition";

/// Update or UpdateStatus of a definition (the same request, another part).
async fn update_definition(
    service: &ResourceService<CustomResourceDefinition>,
    request: Request<UpdateCustomResourceDefinitionRequest>,
    part: UpdatePart,
) -> Result<Response<CustomResourceDefinition>, Status> {
    let (metadata, ext, r) = request.into_parts();
    service
        .write(
            ctx(&metadata, &ext)?,
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
        let (metadata, ext, r) = request.into_parts();
        self.write(
            ctx(&metadata, &ext)?,
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
        let (metadata, ext, r) = request.into_parts();
        Ok(Response::new(
            self.get_one(ctx(&metadata, &ext)?, "", &r.name).await?,
        ))
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
        let (metadata, ext, r) = request.into_parts();
        let (crd, deleted) = self
            .delete_one(ctx(&metadata, &ext)?, "", &r.name, r.options)
            .await?;
        Ok(Response::new(DeleteCustomResourceDefinitionResponse {
            custom_resource_definition: Some(crd),
            deleted,
        }))
    }

    async fn list(
        &self,
        request: Request<ListCustomResourceDefinitionsRequest>,
    ) -> Result<Response<CustomResourceDefinitionList>, Status> {
        let (md, ext, r) = request.into_parts();
        let (metadata, items) = self.list_page(ctx(&md, &ext)?, "", r.options).await?;
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
        let (md, ext, r) = request.into_parts();
        let events = self.watch_events(ctx(&md, &ext)?, "", r.options).await?;
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

/// `apiextensions.v1.CustomObjects`, deprecated: an alias of the generic API
/// (`registry.v1.Resources`, [`GenericService`]) for custom kinds, with objects as
/// `google.protobuf.Struct`s instead of JSON text. Each call is checked to name a served custom
/// kind, in a namespace its scope allows ([`Resolver::resolve`], the errors clients of this
/// service have always had), then answered by the generic API's handler of the same verb: one
/// implementation of every verb, whichever service is called.
///
/// Why deprecated rather than removed: clients written against it keep working. Why not the
/// way forward: a `Struct` nests three messages per JSON level, and the generated clients of
/// Python, C++ and Java stop decoding at 100 (an object ~33 JSON levels deep); the generic API
/// carries any object as text.
#[derive(Clone)]
pub struct CustomObjectsAlias {
    resolver: Resolver,
    generic: GenericService,
}

impl CustomObjectsAlias {
    /// The alias over `resolver`'s custom kinds and `generic`'s handlers.
    pub fn new(resolver: Resolver, generic: GenericService) -> Self {
        Self { resolver, generic }
    }

    /// The generic request of a call named by `t`, once `t` is checked to be a served custom
    /// kind (`collection`: a List, Watch or DeleteCollection, which may span namespaces).
    async fn forward<T>(
        &self,
        metadata: MetadataMap,
        extensions: tonic::Extensions,
        t: Target<'_>,
        collection: bool,
        make: impl FnOnce(Option<ResourceRef>) -> T,
    ) -> Result<Request<T>, Status> {
        self.resolver
            .resolve(&ctx(&metadata, &extensions)?, &t, collection)
            .await?;
        let resource = ResourceRef {
            group: t.group.to_string(),
            version: t.version.to_string(),
            resource: t.plural.to_string(),
        };
        // The extensions go on: they carry the caller the generic API authorizes.
        Ok(Request::from_parts(
            metadata,
            extensions,
            make(Some(resource)),
        ))
    }
}

/// A `Struct` from an object's JSON text.
fn structure(json: &str) -> Result<pbjson_types::Struct, ApiError> {
    match serde_json::from_str(json) {
        Ok(Value::Object(m)) => to_struct(m),
        _ => Err(ApiError::Internal(
            "an endpoint's object is not a JSON object".into(),
        )),
    }
}

/// The request's object as JSON text.
fn text(object: Option<pbjson_types::Struct>) -> Result<String, ApiError> {
    let object = object.ok_or_else(|| {
        ApiError::BadRequest("request field `object` is required: the object to write".into())
    })?;
    Ok(Value::Object(from_struct(object)?).to_string())
}

fn objects(list: ObjectList) -> Result<CustomObjectList, ApiError> {
    Ok(CustomObjectList {
        metadata: list.metadata,
        items: list
            .items
            .iter()
            .map(|i| structure(i))
            .collect::<Result<_, _>>()?,
    })
}

fn writing(dry_run: bool) -> Option<WireOptions> {
    Some(WireOptions {
        dry_run,
        ..Default::default()
    })
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
impl CustomObjects for CustomObjectsAlias {
    async fn create(
        &self,
        request: Request<CreateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let json = text(r.object)?;
        let call = self
            .forward(metadata, ext, target!(r), false, |resource| CreateRequest {
                resource,
                namespace: r.namespace.clone(),
                json,
                options: writing(r.dry_run),
                ..Default::default()
            })
            .await?;
        let w = Resources::create(&self.generic, call).await?.into_inner();
        Ok(Response::new(structure(&w.json)?))
    }

    async fn get(
        &self,
        request: Request<GetCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let call = self
            .forward(metadata, ext, target!(r), false, |resource| GetRequest {
                resource,
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                ..Default::default()
            })
            .await?;
        let o = Resources::get(&self.generic, call).await?.into_inner();
        Ok(Response::new(structure(&o.json)?))
    }

    async fn update(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        self.update_part(request, "").await
    }

    async fn update_status(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        self.update_part(request, "status").await
    }

    async fn delete(
        &self,
        request: Request<DeleteCustomObjectRequest>,
    ) -> Result<Response<DeleteCustomObjectResponse>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let call = self
            .forward(metadata, ext, target!(r), false, |resource| DeleteRequest {
                resource,
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                options: r.options,
            })
            .await?;
        let d = Resources::delete(&self.generic, call).await?.into_inner();
        Ok(Response::new(DeleteCustomObjectResponse {
            object: Some(structure(&d.json)?),
            deleted: d.deleted,
        }))
    }

    async fn delete_collection(
        &self,
        request: Request<DeleteCollectionCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let call = self
            .forward(metadata, ext, target!(r), true, |resource| {
                DeleteCollectionRequest {
                    resource,
                    namespace: r.namespace.clone(),
                    list_options: r.list_options,
                    options: r.options,
                }
            })
            .await?;
        let list = Resources::delete_collection(&self.generic, call).await?;
        Ok(Response::new(objects(list.into_inner())?))
    }

    /// Served by [`crate::grpc::custom_passthrough`] before it reaches here, but for callers
    /// of the generated server without it.
    async fn list(
        &self,
        request: Request<ListCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let call = self
            .forward(metadata, ext, target!(r), true, |resource| ListRequest {
                resource,
                namespace: r.namespace.clone(),
                options: r.options,
                ..Default::default()
            })
            .await?;
        let list = Resources::list(&self.generic, call).await?;
        Ok(Response::new(objects(list.into_inner())?))
    }

    type WatchStream = WatchStream<CustomObjectWatchEvent>;

    async fn watch(
        &self,
        request: Request<WatchCustomObjectsRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let (metadata, ext, r) = request.into_parts();
        let call = self
            .forward(metadata, ext, target!(r), true, |resource| WatchRequest {
                resource,
                namespace: r.namespace.clone(),
                options: r.options,
                ..Default::default()
            })
            .await?;
        let events = Resources::watch(&self.generic, call).await?.into_inner();
        Ok(Response::new(Box::pin(events.map(|ev| {
            let ev = ev?;
            Ok(CustomObjectWatchEvent {
                r#type: ev.r#type,
                object: Some(structure(&ev.json)?),
            })
        }))))
    }
}

impl CustomObjectsAlias {
    /// Update or UpdateStatus (`subresource`; only with the status subresource: NOT_FOUND
    /// otherwise, naming the version's status).
    async fn update_part(
        &self,
        request: Request<UpdateCustomObjectRequest>,
        subresource: &str,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let (metadata, ext, r) = request.into_parts();
        if subresource == "status" {
            let (e, kind, v) = self
                .resolver
                .endpoint(&ctx(&metadata, &ext)?, &target!(r), false)
                .await?;
            if !e.info().status {
                return Err(not_found(&kind.group, &format!("{v} (status)"), &kind.plural).into());
            }
        }
        let object = r.object.map(from_struct).transpose()?.map(Value::Object);
        let name = object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let json = object.map(|o| o.to_string()).ok_or_else(|| {
            ApiError::BadRequest("request field `object` is required: the object to write".into())
        })?;
        let call = self
            .forward(metadata, ext, target!(r), false, |resource| UpdateRequest {
                resource,
                namespace: r.namespace.clone(),
                name,
                subresource: subresource.to_string(),
                json,
                options: writing(r.dry_run),
            })
            .await?;
        let w = Resources::update(&self.generic, call).await?.into_inner();
        Ok(Response::new(structure(&w.json)?))
    }
}
