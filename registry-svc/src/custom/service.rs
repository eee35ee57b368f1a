//! The gRPC services of custom kinds: `apiextensions.v1.CustomResourceDefinitions` (the
//! definitions, a cluster-scoped kind of the generic Store) and `apiextensions.v1.CustomObjects`
//! (the objects of every served kind, found by group, version and plural at each request).
//!
//! A custom object is taken in as upstream's handler does: the JSON from the request's
//! `Struct`, its apiVersion and kind checked against the URL's (here: the request's group,
//! version and the served kind), pruned and defaulted by the request version's schema, and
//! stored in the storage version (conversion `None`: only apiVersion changes). Objects go out
//! in the requested version, pruned and defaulted by its schema.

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
    meta::v1::Preconditions,
};
use serde_json::{Map, Value};
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use crate::{
    custom::{
        definition::CLEANUP_FINALIZER,
        kinds::{CustomKinds, ServedKind, ServedVersion, not_found},
        object::{CustomObject, from_struct, metadata_json, to_struct},
        rules::with_deadline,
    },
    error::ApiError,
    metrics::Verb,
    service::{DELETE_COLLECTION_TIMEOUT, ctx, ctx_within, required},
    store::{Ctx, Store},
};

/// Both services.
#[derive(Clone)]
pub struct CustomService {
    /// The definitions' Store.
    pub definitions: Store<CustomResourceDefinition>,
    /// The kinds served.
    pub kinds: Arc<CustomKinds>,
    /// Raised on shutdown: watches end with UNAVAILABLE.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

type WatchStream<T> = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl CustomResourceDefinitions for CustomService {
    async fn create(
        &self,
        request: Request<CreateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let crd = required(r.custom_resource_definition, "custom_resource_definition")?;
        let d = &self.definitions;
        Ok(Response::new(
            d.request(
                Verb::Create,
                "",
                r.dry_run,
                d.create(ctx, "", crd, r.dry_run),
            )
            .await?,
        ))
    }

    async fn get(
        &self,
        request: Request<GetCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let d = &self.definitions;
        Ok(Response::new(
            d.request(Verb::Get, "", false, d.get(ctx, "", &r.name))
                .await?,
        ))
    }

    async fn update(
        &self,
        request: Request<UpdateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let crd = required(r.custom_resource_definition, "custom_resource_definition")?;
        let d = &self.definitions;
        Ok(Response::new(
            d.request(
                Verb::Update,
                "",
                r.dry_run,
                d.update(ctx, "", crd, r.dry_run),
            )
            .await?,
        ))
    }

    async fn update_status(
        &self,
        request: Request<UpdateCustomResourceDefinitionRequest>,
    ) -> Result<Response<CustomResourceDefinition>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let crd = required(r.custom_resource_definition, "custom_resource_definition")?;
        let d = &self.definitions;
        Ok(Response::new(
            d.request(
                Verb::UpdateStatus,
                "",
                r.dry_run,
                d.update_status(ctx, "", crd, r.dry_run),
            )
            .await?,
        ))
    }

    async fn delete(
        &self,
        request: Request<DeleteCustomResourceDefinitionRequest>,
    ) -> Result<Response<DeleteCustomResourceDefinitionResponse>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let dry_run = r.options.as_ref().is_some_and(|o| o.dry_run);
        let d = &self.definitions;
        Ok(Response::new(
            d.request(Verb::Delete, "", dry_run, self.delete_definition(ctx, r))
                .await?,
        ))
    }

    async fn list(
        &self,
        request: Request<ListCustomResourceDefinitionsRequest>,
    ) -> Result<Response<CustomResourceDefinitionList>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let d = &self.definitions;
        let (metadata, items) = d
            .request(Verb::List, "", false, d.list(ctx, "", r.options))
            .await?;
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
        let d = &self.definitions;
        let events = d
            .request(
                Verb::Watch,
                "",
                false,
                d.watch("", r.options, self.stop.clone()),
            )
            .await?;
        let open = d.watch_opened("");
        Ok(Response::new(Box::pin(events.map(move |e| {
            let _open = &open;
            e.map(|(kind, object)| CustomResourceDefinitionWatchEvent {
                r#type: kind as i32,
                object: Some(object),
            })
        }))))
    }
}

impl CustomService {
    /// A definition's Delete: upstream's first delete marks it with the cleanup finalizer (its
    /// objects are deleted first, by the controller), under a UID precondition.
    async fn delete_definition(
        &self,
        ctx: Ctx,
        r: DeleteCustomResourceDefinitionRequest,
    ) -> Result<DeleteCustomResourceDefinitionResponse, ApiError> {
        let dry_run = r.options.as_ref().is_some_and(|o| o.dry_run);
        let current = self.definitions.get(ctx, "", &r.name).await?;
        let meta = current.metadata.clone().unwrap_or_default();
        if let Some(p) = r.options.as_ref().and_then(|o| o.preconditions.as_ref())
            && let Some(uid) = &p.uid
            && *uid != meta.uid
        {
            return Err(ApiError::Conflict {
                resource: "customresourcedefinitions.apiextensions.k8s.io".into(),
                name: r.name.clone(),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta.uid
                ),
            });
        }
        if meta.deletion_timestamp.is_none()
            && !meta.finalizers.iter().any(|f| f == CLEANUP_FINALIZER)
            && !dry_run
        {
            let mut marked = current;
            marked
                .metadata
                .get_or_insert_with(Default::default)
                .finalizers
                .push(CLEANUP_FINALIZER.into());
            self.definitions.update(ctx, "", marked, false).await?;
        }
        let mut options = r.options.unwrap_or_default();
        options
            .preconditions
            .get_or_insert_with(Preconditions::default)
            .uid = Some(meta.uid);
        let (crd, deleted) = self
            .definitions
            .delete(ctx, "", &r.name, Some(options))
            .await?;
        Ok(DeleteCustomResourceDefinitionResponse {
            custom_resource_definition: Some(crd),
            deleted,
        })
    }
}

/// What a custom-object request names.
pub(crate) struct Target<'a> {
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) namespace: &'a str,
}

impl CustomService {
    /// The served kind and version a request names, with its namespace checked against the
    /// kind's scope (`collection`: List, Watch and DeleteCollection may leave a namespaced
    /// kind's namespace empty).
    ///
    /// A kind or version this replica does not know yet is looked up in storage (a consistent
    /// read of its definition, `<plural>.<group>`) before it is refused: the definitions watch
    /// may lag the write that established it, and a client that saw `Established=True` (from
    /// any replica) must be served at once, not get a NOT_FOUND it cannot tell from a typo.
    pub(crate) async fn resolve(
        &self,
        ctx: &Ctx,
        t: &Target<'_>,
        collection: bool,
    ) -> Result<(Arc<ServedKind>, String), ApiError> {
        let known = self
            .kinds
            .get(t.group, t.plural)
            .filter(|k| k.version(t.version).is_ok());
        let kind = match known {
            Some(kind) => kind,
            None => {
                self.catch_up(ctx, t).await?;
                self.kinds
                    .get(t.group, t.plural)
                    .ok_or_else(|| not_found(t.group, t.version, t.plural))?
            }
        };
        kind.version(t.version)?;
        if !kind.namespaced && !t.namespace.is_empty() {
            return Err(ApiError::NotFound {
                resource: format!("{}/{}/{}", t.group, t.version, t.plural),
                name: format!("(cluster-scoped; no namespace {:?})", t.namespace),
            });
        }
        if kind.namespaced && t.namespace.is_empty() && !collection {
            return Err(ApiError::BadRequest(format!(
                "{}.{} is namespaced: the request needs a namespace",
                t.plural, t.group
            )));
        }
        Ok((kind, t.version.to_string()))
    }

    /// Reads the definition a request names from storage and takes it in (a definition the
    /// watch has not brought yet). A name that cannot be a definition's, or one that is not
    /// there, leaves the kinds as they are: the caller's NOT_FOUND follows.
    ///
    /// A miss costs one consistent read of one definition (served by storage-svc's watch cache
    /// once fresh), as a Get of a missing object costs one, and never a rebuild when the
    /// definition is the one held (`CustomKinds::apply` compares uid and resourceVersion).
    /// The read itself stays: answering from what the definitions watch has seen would need
    /// to know the watch is current, and knowing that takes asking etcd its revision, a round
    /// trip like this read; without it, a client that saw `Established=True` on another
    /// replica could get a NOT_FOUND here it cannot tell from a typo.
    async fn catch_up(&self, ctx: &Ctx, t: &Target<'_>) -> Result<(), ApiError> {
        if t.group.is_empty() || t.plural.is_empty() {
            return Ok(());
        }
        match self
            .definitions
            .get(*ctx, "", &format!("{}.{}", t.plural, t.group))
            .await
        {
            Ok(crd) => {
                self.kinds.apply(&crd);
                Ok(())
            }
            Err(ApiError::NotFound { .. } | ApiError::BadRequest(_) | ApiError::Invalid { .. }) => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// A client's object taken in: checked, pruned, defaulted, in the storage version.
    fn take_in(
        kind: &ServedKind,
        version: &ServedVersion,
        request_version: &str,
        object: Option<pbjson_types::Struct>,
    ) -> Result<CustomObject, ApiError> {
        let object = object.ok_or_else(|| {
            ApiError::BadRequest("request field `object` is required: the object to write".into())
        })?;
        let mut json = from_struct(object)?;
        let api_version = format!("{}/{request_version}", kind.group);
        for (field, want) in [
            ("apiVersion", api_version.as_str()),
            ("kind", kind.kind.as_str()),
        ] {
            match json.get(field) {
                None => {
                    json.insert(field.into(), Value::String(want.into()));
                }
                Some(Value::String(s)) if s == want => {}
                Some(other) => {
                    return Err(ApiError::BadRequest(format!(
                        "the object's {field} {other} does not match the request's {want:?}"
                    )));
                }
            }
        }
        version.schema.normalize_map(&mut json);
        json.insert(
            "apiVersion".into(),
            Value::String(format!("{}/{}", kind.group, kind.storage_version)),
        );
        let mut obj = CustomObject::from_json(json)?;
        obj.schema = version.schema.fingerprint();
        Ok(obj)
    }

    /// An object as it goes out, in `version`: pruned and defaulted by the version's schema,
    /// as upstream's decoder does to what it reads (a field since removed from the schema is
    /// not served; one added with a default is).
    fn give_out(
        kind: &ServedKind,
        version: &str,
        obj: &CustomObject,
    ) -> Result<pbjson_types::Struct, ApiError> {
        let mut json: Map<String, Value> = obj.content()?;
        if let Some(v) = kind.versions.get(version) {
            v.schema.read(obj.schema, &mut json);
        }
        json.insert("metadata".into(), metadata_json(obj.metadata.as_ref())?);
        json.insert(
            "apiVersion".into(),
            Value::String(format!("{}/{version}", kind.group)),
        );
        to_struct(json)
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
impl CustomObjects for CustomService {
    async fn create(
        &self,
        request: Request<CreateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), false).await?;
        if kind.terminating {
            return Err(ApiError::Forbidden(format!(
                "create not allowed while custom resource definition {}.{} is terminating",
                kind.plural, kind.group
            ))
            .into());
        }
        let version = kind.version(&v)?;
        let obj = Self::take_in(&kind, version, &v, r.object)?;
        let store = &version.store;
        let created = store
            .request(
                Verb::Create,
                &r.namespace,
                r.dry_run,
                with_deadline(
                    ctx.deadline.instant().into_std(),
                    store.create(ctx, &r.namespace, obj, r.dry_run),
                ),
            )
            .await?;
        Ok(Response::new(Self::give_out(&kind, &v, &created)?))
    }

    async fn get(
        &self,
        request: Request<GetCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), false).await?;
        let store = &kind.version(&v)?.store;
        let obj = store
            .request(
                Verb::Get,
                &r.namespace,
                false,
                store.get(ctx, &r.namespace, &r.name),
            )
            .await?;
        Ok(Response::new(Self::give_out(&kind, &v, &obj)?))
    }

    async fn update(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), false).await?;
        let version = kind.version(&v)?;
        let obj = Self::take_in(&kind, version, &v, r.object)?;
        let store = &version.store;
        let updated = store
            .request(
                Verb::Update,
                &r.namespace,
                r.dry_run,
                with_deadline(
                    ctx.deadline.instant().into_std(),
                    store.update(ctx, &r.namespace, obj, r.dry_run),
                ),
            )
            .await?;
        Ok(Response::new(Self::give_out(&kind, &v, &updated)?))
    }

    async fn update_status(
        &self,
        request: Request<UpdateCustomObjectRequest>,
    ) -> Result<Response<pbjson_types::Struct>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), false).await?;
        let version = kind.version(&v)?;
        if !version.store.strategy.has_status() {
            return Err(not_found(&kind.group, &format!("{v} (status)"), &kind.plural).into());
        }
        let obj = Self::take_in(&kind, version, &v, r.object)?;
        let store = &version.store;
        let updated = store
            .request(
                Verb::UpdateStatus,
                &r.namespace,
                r.dry_run,
                with_deadline(
                    ctx.deadline.instant().into_std(),
                    store.update_status(ctx, &r.namespace, obj, r.dry_run),
                ),
            )
            .await?;
        Ok(Response::new(Self::give_out(&kind, &v, &updated)?))
    }

    async fn delete(
        &self,
        request: Request<DeleteCustomObjectRequest>,
    ) -> Result<Response<DeleteCustomObjectResponse>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), false).await?;
        let store = &kind.version(&v)?.store;
        let dry_run = r.options.as_ref().is_some_and(|o| o.dry_run);
        let (obj, deleted) = store
            .request(
                Verb::Delete,
                &r.namespace,
                dry_run,
                store.delete(ctx, &r.namespace, &r.name, r.options),
            )
            .await?;
        Ok(Response::new(DeleteCustomObjectResponse {
            object: Some(Self::give_out(&kind, &v, &obj)?),
            deleted,
        }))
    }

    async fn delete_collection(
        &self,
        request: Request<DeleteCollectionCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let ctx = ctx_within(request.metadata(), DELETE_COLLECTION_TIMEOUT);
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), true).await?;
        let store = &kind.version(&v)?.store;
        let dry_run = r.options.as_ref().is_some_and(|o| o.dry_run);
        let (metadata, items) = store
            .request(
                Verb::DeleteCollection,
                &r.namespace,
                dry_run,
                store.delete_collection(ctx, &r.namespace, r.list_options, r.options),
            )
            .await?;
        let items = items
            .iter()
            .map(|o| Self::give_out(&kind, &v, o))
            .collect::<Result<_, _>>()?;
        Ok(Response::new(CustomObjectList {
            metadata: Some(metadata),
            items,
        }))
    }

    async fn list(
        &self,
        request: Request<ListCustomObjectsRequest>,
    ) -> Result<Response<CustomObjectList>, Status> {
        let ctx = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&ctx, &target!(r), true).await?;
        let store = &kind.version(&v)?.store;
        let (metadata, items) = store
            .request(
                Verb::List,
                &r.namespace,
                false,
                store.list(ctx, &r.namespace, r.options),
            )
            .await?;
        let items = items
            .iter()
            .map(|o| Self::give_out(&kind, &v, o))
            .collect::<Result<_, _>>()?;
        Ok(Response::new(CustomObjectList {
            metadata: Some(metadata),
            items,
        }))
    }

    type WatchStream = WatchStream<CustomObjectWatchEvent>;

    async fn watch(
        &self,
        request: Request<WatchCustomObjectsRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        // The watch itself has no deadline; looking its kind up has a unary call's.
        let lookup = ctx(request.metadata());
        let r = request.into_inner();
        let (kind, v) = self.resolve(&lookup, &target!(r), true).await?;
        let store = &kind.version(&v)?.store;
        let events = store
            .request(
                Verb::Watch,
                &r.namespace,
                false,
                store.watch(&r.namespace, r.options, self.stop.clone()),
            )
            .await?;
        let open = store.watch_opened(&r.namespace);
        Ok(Response::new(Box::pin(events.map(move |e| {
            let _open = &open;
            let (t, object) = e?;
            Ok(CustomObjectWatchEvent {
                r#type: t as i32,
                object: Some(Self::give_out(&kind, &v, &object)?),
            })
        }))))
    }
}
