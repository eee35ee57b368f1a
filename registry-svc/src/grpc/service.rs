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
    /// One write of a typed service: its context from the request, the object it must carry,
    /// the Store's verb, and the request metrics.
    pub async fn write(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        write: Write,
        namespace: String,
        obj: Option<R>,
        field: &str,
        dry_run: bool,
    ) -> Result<tonic::Response<R>, tonic::Status> {
        let ctx = ctx(metadata);
        let obj = required(obj, field)?;
        let store = &self.store;
        type Fut<'a, R> =
            std::pin::Pin<Box<dyn std::future::Future<Output = Result<R, ApiError>> + Send + 'a>>;
        let (verb, fut): (_, Fut<'_, R>) = match write {
            Write::Create => (
                crate::metrics::Verb::Create,
                Box::pin(store.create(ctx, &namespace, obj, dry_run)),
            ),
            Write::Update(part) => (
                crate::metrics::Verb::update(part),
                Box::pin(store.update_in(ctx, &namespace, obj, dry_run, part)),
            ),
        };
        Ok(tonic::Response::new(
            store.request(verb, &namespace, dry_run, fut).await?,
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
        metadata: &tonic::metadata::MetadataMap,
        namespace: &str,
        name: &str,
    ) -> Result<R, tonic::Status> {
        let s = &self.store;
        Ok(s.request(
            crate::metrics::Verb::Get,
            namespace,
            false,
            s.get(ctx(metadata), namespace, name),
        )
        .await?)
    }

    /// Delete: the object's last state and whether it is gone.
    pub async fn delete_one(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        namespace: &str,
        name: &str,
        options: Option<kubestore_proto::meta::v1::DeleteOptions>,
    ) -> Result<(R, bool), tonic::Status> {
        let s = &self.store;
        let dry_run = options.as_ref().is_some_and(|o| o.dry_run);
        Ok(s.request(
            crate::metrics::Verb::Delete,
            namespace,
            dry_run,
            s.delete(ctx(metadata), namespace, name, options),
        )
        .await?)
    }

    /// List: one page.
    pub async fn list_page(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        namespace: &str,
        options: Option<kubestore_proto::meta::v1::ListOptions>,
    ) -> Result<(kubestore_proto::meta::v1::ListMeta, Vec<R>), tonic::Status> {
        let s = &self.store;
        Ok(s.request(
            crate::metrics::Verb::List,
            namespace,
            false,
            s.list(ctx(metadata), namespace, options),
        )
        .await?)
    }

    /// Watch, counted as open (`apiserver_longrunning_requests`) while its stream lives.
    pub async fn watch_events(
        &self,
        namespace: &str,
        options: Option<kubestore_proto::meta::v1::ListOptions>,
    ) -> Result<Watched<R>, tonic::Status> {
        use tokio_stream::StreamExt;
        let s = &self.store;
        let events = s
            .request(
                crate::metrics::Verb::Watch,
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

    /// DeleteCollection, with its longer deadline.
    pub async fn delete_all(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        namespace: &str,
        list_options: Option<kubestore_proto::meta::v1::ListOptions>,
        options: Option<kubestore_proto::meta::v1::DeleteOptions>,
    ) -> Result<(kubestore_proto::meta::v1::ListMeta, Vec<R>), tonic::Status> {
        let s = &self.store;
        let dry_run = options.as_ref().is_some_and(|o| o.dry_run);
        let ctx = ctx_within(metadata, DELETE_COLLECTION_TIMEOUT);
        Ok(s.request(
            crate::metrics::Verb::DeleteCollection,
            namespace,
            dry_run,
            s.delete_collection(ctx, namespace, list_options, options),
        )
        .await?)
    }
}

/// The context of a gRPC request.
pub fn ctx(metadata: &tonic::metadata::MetadataMap) -> Ctx {
    ctx_within(metadata, DEFAULT_REQUEST_TIMEOUT)
}

/// The context of a gRPC request that may take up to `default` when the caller sets no deadline.
pub fn ctx_within(metadata: &tonic::metadata::MetadataMap, default: Duration) -> Ctx {
    Ctx {
        deadline: Deadline::from_metadata(metadata, default),
    }
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
                let (metadata, _, r) = request.into_parts();
                let write = $crate::grpc::service::Write::Create;
                self.write(&metadata, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                    .await
            }
            async fn get(
                &self,
                request: tonic::Request<$get>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let (metadata, _, r) = request.into_parts();
                let obj = self.get_one(&metadata, &r.namespace, &r.name).await?;
                Ok(tonic::Response::new(obj))
            }
            async fn update(
                &self,
                request: tonic::Request<$update>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let (metadata, _, r) = request.into_parts();
                let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Main);
                self.write(&metadata, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                    .await
            }
            async fn delete(
                &self,
                request: tonic::Request<$delete>,
            ) -> Result<tonic::Response<$delete_resp>, tonic::Status> {
                let (metadata, _, r) = request.into_parts();
                let (obj, deleted) = self
                    .delete_one(&metadata, &r.namespace, &r.name, r.options)
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
                let (md, _, r) = request.into_parts();
                let (metadata, items) = self.list_page(&md, &r.namespace, r.options).await?;
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
                let r = request.into_inner();
                let events = self.watch_events(&r.namespace, r.options).await?;
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
                let (md, _, r) = request.into_parts();
                let (metadata, items) = self
                    .delete_all(&md, &r.namespace, r.list_options, r.options)
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
                    let (metadata, _, r) = request.into_parts();
                    let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Status);
                    self.write(&metadata, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                        .await
                }
            )?
            $(
                #[doc = concat!("UpdateFinalize: the ", stringify!($finalize), " subresource.")]
                async fn update_finalize(
                    &self,
                    request: tonic::Request<$update>,
                ) -> Result<tonic::Response<$res>, tonic::Status> {
                    let (metadata, _, r) = request.into_parts();
                    let write = $crate::grpc::service::Write::Update($crate::store::update::Part::Finalize);
                    self.write(&metadata, write, r.namespace, r.$field, stringify!($field), r.dry_run)
                        .await
                }
            )?
        }
    };
}
