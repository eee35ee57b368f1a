//! The typed gRPC services. Each kind's service is the generic [`ResourceService`] over its
//! Store; `grpc_service!` writes the tonic impl for one kind (Create, Get, Update, Delete, List,
//! Watch, DeleteCollection, and UpdateStatus for kinds with a status subresource) from its
//! message and field names, so no per-kind handler code exists.

use kubestore_telemetry::Deadline;
use std::time::Duration;

use crate::{
    error::ApiError,
    resource::Resource,
    store::{Ctx, DEFAULT_REQUEST_TIMEOUT, DELETE_COLLECTION_TIMEOUT, Store},
};

/// How long a call may hold an in-flight slot (`--max-requests-inflight`): the defaults
/// above, which its handler uses too.
pub const REQUEST_TIMEOUTS: kubestore_telemetry::inflight::RequestTimeouts =
    kubestore_telemetry::inflight::RequestTimeouts {
        default: DEFAULT_REQUEST_TIMEOUT,
        longer: &[("/DeleteCollection", DELETE_COLLECTION_TIMEOUT)],
    };

/// The gRPC service of one kind.
pub struct ResourceService<R: Resource> {
    /// The kind's Store.
    pub store: Store<R>,
    /// Raised on shutdown: open watches end with UNAVAILABLE.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

impl<R: Resource> ResourceService<R> {
    /// Serves `store`; `stop` is raised on shutdown.
    pub fn new(store: Store<R>, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        Self { store, stop }
    }
}

/// A write through a typed service: Create, or Update of a part of the object.
#[derive(Debug, Clone, Copy)]
pub enum Write {
    /// Create.
    Create,
    /// Update (the object, its status, or its finalizers).
    Update(crate::store::update::Part),
}

impl<R: Resource> ResourceService<R> {
    /// One write of a typed service: the object it must carry, authorized in the namespace it
    /// is written to (the request's, else the object's: `Store::request_namespace`), the
    /// Store's verb, and the request metrics.
    pub async fn write(
        &self,
        mut ctx: Ctx,
        write: Write,
        namespace: String,
        obj: Option<R>,
        field: &str,
        dry_run: bool,
    ) -> Result<tonic::Response<R>, tonic::Status> {
        let store = &self.store;
        let verb = match write {
            Write::Create => crate::metrics::Verb::Create,
            Write::Update(part) => crate::metrics::Verb::update(part),
        };
        // Authorized first, as upstream's filter runs before anything reads the request: in
        // the namespace the object is written to (the request's, else the object's; none
        // known: the cluster scope, which only a cluster-wide grant covers).
        let (obj_ns, name) = obj
            .as_ref()
            .and_then(|o| o.meta())
            .map_or(("", ""), |m| (m.namespace.as_str(), m.name.as_str()));
        // A create names nothing (upstream's create is a POST to the collection).
        let name = if matches!(write, Write::Create) {
            ""
        } else {
            name
        };
        let ns = if namespace.is_empty() {
            obj_ns
        } else {
            &namespace
        };
        store.authorize(&mut ctx, verb, ns, name)?;
        let obj = required(obj, field)?;
        type Fut<'a, R> =
            std::pin::Pin<Box<dyn std::future::Future<Output = Result<R, ApiError>> + Send + 'a>>;
        let fut: Fut<'_, R> = match write {
            Write::Create => Box::pin(store.create(ctx.clone(), &namespace, obj, dry_run)),
            Write::Update(part) => {
                Box::pin(store.update_in(ctx.clone(), &namespace, obj, dry_run, part))
            }
        };
        Ok(tonic::Response::new(
            store.request(&ctx, verb, &namespace, dry_run, fut).await?,
        ))
    }
}

/// A typed watch's events, as the generated services stream them.
pub type Watched<R> = std::pin::Pin<
    Box<
        dyn tokio_stream::Stream<
                Item = Result<(kubestore_proto::meta::v1::WatchEventType, R), tonic::Status>,
            > + Send,
    >,
>;

impl<R: Resource> ResourceService<R> {
    /// Get, with the request metrics.
    pub async fn get_one(
        &self,
        mut ctx: Ctx,
        namespace: &str,
        name: &str,
    ) -> Result<R, tonic::Status> {
        use crate::metrics::Verb;
        let s = &self.store;
        s.authorize(&mut ctx, Verb::Get, namespace, name)?;
        Ok(s.request(
            &ctx,
            Verb::Get,
            namespace,
            false,
            s.get(ctx.clone(), namespace, name),
        )
        .await?)
    }

    /// Delete: the object's last state and whether it is gone.
    pub async fn delete_one(
        &self,
        mut ctx: Ctx,
        namespace: &str,
        name: &str,
        options: Option<kubestore_proto::meta::v1::DeleteOptions>,
    ) -> Result<(R, bool), tonic::Status> {
        use crate::metrics::Verb;
        let s = &self.store;
        let dry_run = options.as_ref().is_some_and(|o| o.dry_run);
        s.authorize(&mut ctx, Verb::Delete, namespace, name)?;
        Ok(s.request(
            &ctx,
            Verb::Delete,
            namespace,
            dry_run,
            s.delete(ctx.clone(), namespace, name, options),
        )
        .await?)
    }

    /// List: one page.
    pub async fn list_page(
        &self,
        mut ctx: Ctx,
        namespace: &str,
        options: Option<kubestore_proto::meta::v1::ListOptions>,
    ) -> Result<(kubestore_proto::meta::v1::ListMeta, Vec<R>), tonic::Status> {
        use crate::metrics::Verb;
        let s = &self.store;
        let name = crate::authz::selected_name(options.as_ref());
        s.authorize(&mut ctx, Verb::List, namespace, &name)?;
        Ok(s.request(
            &ctx,
            Verb::List,
            namespace,
            false,
            s.list(ctx.clone(), namespace, options),
        )
        .await?)
    }

    /// Watch, counted as open (`apiserver_longrunning_requests`) while its stream lives.
    pub async fn watch_events(
        &self,
        mut ctx: Ctx,
        namespace: &str,
        options: Option<kubestore_proto::meta::v1::ListOptions>,
    ) -> Result<Watched<R>, tonic::Status> {
        use crate::metrics::Verb;
        use tokio_stream::StreamExt;
        let s = &self.store;
        let name = crate::authz::selected_name(options.as_ref());
        s.authorize(&mut ctx, Verb::Watch, namespace, &name)?;
        let events = s
            .request(
                &ctx,
                Verb::Watch,
                namespace,
                false,
                s.watch(namespace, options, self.stop.clone()),
            )
            .await?;
        let open = s.watch_opened(namespace);
        Ok(Box::pin(events.map(move |e| {
            let _open = &open;
            e
        })))
    }

    /// DeleteCollection (`ctx` with its longer deadline: [`ctx_within`]).
    pub async fn delete_all(
        &self,
        mut ctx: Ctx,
        namespace: &str,
        list_options: Option<kubestore_proto::meta::v1::ListOptions>,
        options: Option<kubestore_proto::meta::v1::DeleteOptions>,
    ) -> Result<(kubestore_proto::meta::v1::ListMeta, Vec<R>), tonic::Status> {
        use crate::metrics::Verb;
        let s = &self.store;
        let dry_run = options.as_ref().is_some_and(|o| o.dry_run);
        s.authorize(&mut ctx, Verb::DeleteCollection, namespace, "")?;
        Ok(s.request(
            &ctx,
            Verb::DeleteCollection,
            namespace,
            dry_run,
            s.delete_collection(ctx.clone(), namespace, list_options, options),
        )
        .await?)
    }
}

/// The context of a gRPC request: its deadline, and its caller (`grpc::identify` puts it in
/// every request's extensions; a request without one is a bug, never the registry itself).
pub fn ctx(
    metadata: &tonic::metadata::MetadataMap,
    extensions: &tonic::Extensions,
) -> Result<Ctx, ApiError> {
    ctx_within(metadata, extensions, DEFAULT_REQUEST_TIMEOUT)
}

/// [`ctx`], for a request that may take up to `default` when the caller sets no deadline.
pub fn ctx_within(
    metadata: &tonic::metadata::MetadataMap,
    extensions: &tonic::Extensions,
    default: Duration,
) -> Result<Ctx, ApiError> {
    let caller = extensions
        .get::<std::sync::Arc<crate::authz::Caller>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("a gRPC request without its caller".into()))?;
    Ok(Ctx::of(caller, Deadline::from_metadata(metadata, default)))
}

/// The object a write request must carry.
pub fn required<R: Resource>(obj: Option<R>, field: &str) -> Result<R, ApiError> {
    obj.ok_or_else(|| {
        ApiError::BadRequest(format!(
            "request field `{field}` is required: the {} to write",
            R::KIND
        ))
    })
}

/// Implements a kind's tonic service trait on [`ResourceService`]. A trailing `status` adds
/// UpdateStatus (taking the Update request), and `finalize = finalize` UpdateFinalize.
#[macro_export]
macro_rules! grpc_service {
    (
        $svc:path, $res:ty, $field:ident,
        $create:ty, $get:ty, $update:ty, $delete:ty, $delete_resp:ident,
        $list_req:ty, $list:ident, $watch_req:ty, $event:ident, $delete_collection:ty
        $(, $status:ident)?
        $(, finalize = $finalize:ident)?
    ) => {
        #[tonic::async_trait]
        impl $svc for $crate::grpc::service::ResourceService<$res> {
            async fn create(
                &self,
                request: tonic::Request<$create>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let (metadata, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                let write = $crate::grpc::service::Write::Create;
                self.write(ctx, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                    .await
            }
            async fn get(
                &self,
                request: tonic::Request<$get>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let (metadata, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                let obj = self.get_one(ctx, &r.namespace, &r.name).await?;
                Ok(tonic::Response::new(obj))
            }
            async fn update(
                &self,
                request: tonic::Request<$update>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let (metadata, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Main);
                self.write(ctx, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                    .await
            }
            async fn delete(
                &self,
                request: tonic::Request<$delete>,
            ) -> Result<tonic::Response<$delete_resp>, tonic::Status> {
                let (metadata, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                let (obj, deleted) = self
                    .delete_one(ctx, &r.namespace, &r.name, r.options)
                    .await?;
                Ok(tonic::Response::new($delete_resp {
                    $field: Some(obj),
                    deleted,
                }))
            }
            async fn list(
                &self,
                request: tonic::Request<$list_req>,
            ) -> Result<tonic::Response<$list>, tonic::Status> {
                let (md, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx(&md, &ext)?;
                let (metadata, items) = self.list_page(ctx, &r.namespace, r.options).await?;
                Ok(tonic::Response::new($list {
                    metadata: Some(metadata),
                    items,
                }))
            }
            type WatchStream = std::pin::Pin<
                Box<dyn tokio_stream::Stream<Item = Result<$event, tonic::Status>> + Send>,
            >;
            async fn watch(
                &self,
                request: tonic::Request<$watch_req>,
            ) -> Result<tonic::Response<Self::WatchStream>, tonic::Status> {
                use tokio_stream::StreamExt;
                let (md, ext, r) = request.into_parts();
                // The lookup has a unary call's deadline; the watch itself none.
                let ctx = $crate::grpc::service::ctx(&md, &ext)?;
                let events = self.watch_events(ctx, &r.namespace, r.options).await?;
                Ok(tonic::Response::new(Box::pin(events.map(|e| {
                    e.map(|(kind, object)| $event {
                        r#type: kind as i32,
                        object: Some(object),
                    })
                }))))
            }
            async fn delete_collection(
                &self,
                request: tonic::Request<$delete_collection>,
            ) -> Result<tonic::Response<$list>, tonic::Status> {
                let (md, ext, r) = request.into_parts();
                let ctx = $crate::grpc::service::ctx_within(
                    &md,
                    &ext,
                    $crate::store::DELETE_COLLECTION_TIMEOUT,
                )?;
                let (metadata, items) = self
                    .delete_all(ctx, &r.namespace, r.list_options, r.options)
                    .await?;
                Ok(tonic::Response::new($list {
                    metadata: Some(metadata),
                    items,
                }))
            }
            $(
                #[doc = concat!("UpdateStatus: the ", stringify!($status), " subresource.")]
                async fn update_status(
                    &self,
                    request: tonic::Request<$update>,
                ) -> Result<tonic::Response<$res>, tonic::Status> {
                    let (metadata, ext, r) = request.into_parts();
                    let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                    let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Status);
                    self.write(ctx, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                        .await
                }
            )?
            $(
                #[doc = concat!("UpdateFinalize: the ", stringify!($finalize), " subresource.")]
                async fn update_finalize(
                    &self,
                    request: tonic::Request<$update>,
                ) -> Result<tonic::Response<$res>, tonic::Status> {
                    let (metadata, ext, r) = request.into_parts();
                    let ctx = $crate::grpc::service::ctx(&metadata, &ext)?;
                    let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Finalize);
                    self.write(ctx, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                        .await
                }
            )?
        }
    };
}
