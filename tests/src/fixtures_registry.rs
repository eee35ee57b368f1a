//! Helpers of the registry-svc tests: objects and typed client wrappers.
// Small helpers named for what they do; documenting each would repeat its name.
#![allow(missing_docs)]

use kubestore_proto::{
    core::v1::{
        ConfigMap, Container, CreateConfigMapRequest, CreatePodRequest, DeleteConfigMapRequest,
        DeletePodRequest, GetConfigMapRequest, GetPodRequest, Pod, PodSpec, ResourceRequirements,
        UpdateConfigMapRequest, UpdatePodRequest, config_maps_client::ConfigMapsClient,
        pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ObjectMeta},
};
use tonic::{Status, transport::Channel};

pub use crate::reason;

pub const NS: &str = "default";

pub fn container(image: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    let m = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    Container {
        name: "app".into(),
        image: image.into(),
        resources: Some(ResourceRequirements {
            requests: m(requests),
            limits: m(limits),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn pod(name: &str, node: &str) -> Pod {
    Pod {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container("nginx:1", &[], &[])],
            node_name: node.into(),
            ..Default::default()
        }),
        status: None,
    }
}

pub fn cm(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            finalizers: finalizers.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        immutable: None,
        binary_data: Default::default(),
    }
}

pub fn meta<T>(o: &T) -> ObjectMeta
where
    T: HasMeta,
{
    o.meta_ref().clone().unwrap_or_default()
}

pub trait HasMeta {
    fn meta_ref(&self) -> &Option<ObjectMeta>;
}
impl HasMeta for Pod {
    fn meta_ref(&self) -> &Option<ObjectMeta> {
        &self.metadata
    }
}
impl HasMeta for ConfigMap {
    fn meta_ref(&self) -> &Option<ObjectMeta> {
        &self.metadata
    }
}

pub async fn create_pod(c: &mut PodsClient<Channel>, p: Pod) -> Result<Pod, Status> {
    Ok(c.create(CreatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn get_pod(c: &mut PodsClient<Channel>, name: &str) -> Result<Pod, Status> {
    Ok(c.get(GetPodRequest {
        namespace: NS.into(),
        name: name.into(),
    })
    .await?
    .into_inner())
}
pub async fn update_pod(c: &mut PodsClient<Channel>, p: Pod) -> Result<Pod, Status> {
    Ok(c.update(UpdatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn delete_pod(
    c: &mut PodsClient<Channel>,
    name: &str,
    options: Option<DeleteOptions>,
) -> Result<(Pod, bool), Status> {
    let r = c
        .delete(DeletePodRequest {
            namespace: NS.into(),
            name: name.into(),
            options,
        })
        .await?
        .into_inner();
    Ok((r.pod.unwrap_or_default(), r.deleted))
}
pub async fn create_cm(
    c: &mut ConfigMapsClient<Channel>,
    m: ConfigMap,
) -> Result<ConfigMap, Status> {
    Ok(c.create(CreateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn get_cm(c: &mut ConfigMapsClient<Channel>, name: &str) -> Result<ConfigMap, Status> {
    Ok(c.get(GetConfigMapRequest {
        namespace: NS.into(),
        name: name.into(),
    })
    .await?
    .into_inner())
}
pub async fn update_cm(
    c: &mut ConfigMapsClient<Channel>,
    m: ConfigMap,
) -> Result<ConfigMap, Status> {
    Ok(c.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn delete_cm(
    c: &mut ConfigMapsClient<Channel>,
    name: &str,
    options: Option<DeleteOptions>,
) -> Result<(ConfigMap, bool), Status> {
    let r = c
        .delete(DeleteConfigMapRequest {
            namespace: NS.into(),
            name: name.into(),
            options,
        })
        .await?
        .into_inner();
    Ok((r.config_map.unwrap_or_default(), r.deleted))
}
pub fn grace(g: i64) -> Option<DeleteOptions> {
    Some(DeleteOptions {
        grace_period_seconds: Some(g),
        ..Default::default()
    })
}
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
pub async fn create_cm_in(
    c: &mut ConfigMapsClient<Channel>,
    ns: &str,
    m: ConfigMap,
) -> Result<ConfigMap, Status> {
    Ok(c.create(CreateConfigMapRequest {
        namespace: ns.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn update_cm_in(
    c: &mut ConfigMapsClient<Channel>,
    ns: &str,
    m: ConfigMap,
) -> Result<ConfigMap, Status> {
    Ok(c.update(UpdateConfigMapRequest {
        namespace: ns.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
pub async fn delete_cm_in(
    c: &mut ConfigMapsClient<Channel>,
    ns: &str,
    name: &str,
) -> Result<(ConfigMap, bool), Status> {
    let r = c
        .delete(DeleteConfigMapRequest {
            namespace: ns.into(),
            name: name.into(),
            options: None,
        })
        .await?
        .into_inner();
    Ok((r.config_map.unwrap_or_default(), r.deleted))
}
