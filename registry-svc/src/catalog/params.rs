//! The catalog as the source of admission policies' parameters
//! (`admission::policy::params::Source`): the objects of any kind served, built-in or custom,
//! found by apiVersion and kind, listed and watched as Kubernetes JSON with the registry's own
//! identity, as upstream's policy plugin reads params through informers of its own.

use std::{sync::Arc, time::Duration};

use kubestore_proto::meta::v1::ListOptions;
use serde_json::Value;
use tokio_stream::StreamExt;

use super::{Catalog, Endpoint, Output, Page};
use crate::{
    admission::policy::{
        params::{Events, Source},
        typecheck::Schema,
    },
    error::ApiError,
    store::Ctx,
};

/// How long one list or the opening of a watch may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

impl Catalog {
    /// The endpoint serving `kind` in `api_version` (`v1`, `group/version`).
    fn of_kind(&self, api_version: &str, kind: &str) -> Option<Arc<dyn Endpoint>> {
        self.all()
            .into_iter()
            .find(|e| e.info().kind == kind && e.info().api_version() == api_version)
    }
}

/// The type checker's view of `e`'s kind's schema (`catalog::schemas`, as `/openapi/v3`
/// serves it).
fn schema(e: &Arc<dyn Endpoint>) -> Option<Schema> {
    let mut components = serde_json::Map::new();
    super::schemas::kind_schemas(
        crate::resource::codec().descriptors(),
        std::slice::from_ref(e),
        &mut components,
    );
    let root = components.get(&super::schemas::kind_schema_name(e.info()))?;
    Some(Schema::from_openapi(root, &components))
}

fn parse(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::Internal(format!("params: {e}")))
}

#[tonic::async_trait]
impl Source for Catalog {
    fn scope(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.of_kind(api_version, kind).map(|e| e.info().namespaced)
    }

    fn resource_schema(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<(String, Option<Schema>)> {
        let e = self.all().into_iter().find(|e| {
            let i = e.info();
            i.group == group && i.version == version && i.plural == resource
        })?;
        Some((e.info().kind.clone(), schema(&e)))
    }

    fn kind_schema(&self, api_version: &str, kind: &str) -> Option<Schema> {
        schema(&self.of_kind(api_version, kind)?)
    }

    async fn list(&self, api_version: &str, kind: &str) -> Result<(String, Vec<Value>), ApiError> {
        let e = self
            .of_kind(api_version, kind)
            .ok_or_else(|| super::not_served("", api_version, kind))?;
        let page = e
            .list(
                Ctx::within(CALL_TIMEOUT),
                "",
                ListOptions::default(),
                Output::Object,
            )
            .await?;
        let Page::Objects { meta, items } = page else {
            return Err(ApiError::Internal("params: a list answered a table".into()));
        };
        let items = items.iter().map(|b| parse(b)).collect::<Result<_, _>>()?;
        Ok((meta.resource_version, items))
    }

    async fn watch(
        &self,
        api_version: &str,
        kind: &str,
        resource_version: &str,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Events, ApiError> {
        let e = self
            .of_kind(api_version, kind)
            .ok_or_else(|| super::not_served("", api_version, kind))?;
        let options = ListOptions {
            resource_version: resource_version.to_string(),
            ..Default::default()
        };
        let events = e
            .watch(
                &Ctx::within(CALL_TIMEOUT),
                "",
                options,
                Output::Object,
                stop,
            )
            .await?;
        Ok(Box::pin(events.map(|r| {
            r.and_then(|(kind, bytes)| Ok((kind, parse(&bytes)?)))
        })))
    }
}
