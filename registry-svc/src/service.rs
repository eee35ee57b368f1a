//! The typed gRPC services. Each kind's service is the generic [`ResourceService`] over its
//! Store; `grpc_service!` writes the four-method tonic impl for one kind from its message and
//! field names, so no per-kind handler code exists.

use kubestore_telemetry::Deadline;
use std::time::Duration;

use crate::{
    error::ApiError,
    resource::Resource,
    store::{Ctx, Store},
};

/// Longest a request may take when the caller sets no deadline.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The gRPC service of one kind.
pub struct ResourceService<R: Resource> {
    /// The kind's Store.
    pub store: Store<R>,
}

impl<R: Resource> ResourceService<R> {
    /// Serves `store`.
    pub fn new(store: Store<R>) -> Self {
        Self { store }
    }
}

/// The context of a gRPC request.
pub fn ctx(metadata: &tonic::metadata::MetadataMap) -> Ctx {
    Ctx {
        deadline: Deadline::from_metadata(metadata, DEFAULT_REQUEST_TIMEOUT),
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

/// Implements a kind's tonic service trait on [`ResourceService`].
#[macro_export]
macro_rules! grpc_service {
    ($svc:path, $res:ty, $field:ident, $create:ty, $get:ty, $update:ty, $delete:ty, $delete_resp:ident) => {
        #[tonic::async_trait]
        impl $svc for $crate::service::ResourceService<$res> {
            async fn create(
                &self,
                request: tonic::Request<$create>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let ctx = $crate::service::ctx(request.metadata());
                let r = request.into_inner();
                let obj = $crate::service::required(r.$field, stringify!($field))?;
                Ok(tonic::Response::new(
                    self.store.create(ctx, &r.namespace, obj, r.dry_run).await?,
                ))
            }
            async fn get(
                &self,
                request: tonic::Request<$get>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let ctx = $crate::service::ctx(request.metadata());
                let r = request.into_inner();
                Ok(tonic::Response::new(
                    self.store.get(ctx, &r.namespace, &r.name).await?,
                ))
            }
            async fn update(
                &self,
                request: tonic::Request<$update>,
            ) -> Result<tonic::Response<$res>, tonic::Status> {
                let ctx = $crate::service::ctx(request.metadata());
                let r = request.into_inner();
                let obj = $crate::service::required(r.$field, stringify!($field))?;
                Ok(tonic::Response::new(
                    self.store.update(ctx, &r.namespace, obj, r.dry_run).await?,
                ))
            }
            async fn delete(
                &self,
                request: tonic::Request<$delete>,
            ) -> Result<tonic::Response<$delete_resp>, tonic::Status> {
                let ctx = $crate::service::ctx(request.metadata());
                let r = request.into_inner();
                let (obj, deleted) = self
                    .store
                    .delete(ctx, &r.namespace, &r.name, r.options)
                    .await?;
                Ok(tonic::Response::new($delete_resp {
                    $field: Some(obj),
                    deleted,
                }))
            }
        }
    };
}
