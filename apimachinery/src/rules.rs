//! What Kubernetes says about some fields that a `.proto` cannot: the Go struct tags of
//! `k8s.io/api` that change a field's JSON or its patching. Data, keyed by the field's full
//! proto name, read by the JSON codec (`json`) and the strategic merge patch
//! (`patch::strategic`); no kind has code of its own.
//!
//! - **always**: the Go field has no `omitempty`, so upstream writes it even when empty (clients
//!   with strict models, such as the Python client, require it: `ContainerStatus.imageID`,
//!   `restartCount`, `ready`).
//! - **quantity**: the value is a `resource.Quantity`, which upstream also accepts as a JSON
//!   number (`cpu: 1` in YAML) and always writes as a string.
//! - **patch**: `patchStrategy` and `patchMergeKey` (strategic merge patch). A list without one
//!   is replaced whole by a patch, as upstream does.
//! - **json**: a string field holding JSON text (a definition's schema travels so over gRPC, where
//!   a `Struct` nests past generated clients' recursion limits), the JSON value it holds in
//!   Kubernetes JSON.
//! - **inline**: a message field of Kubernetes' own protobuf (`proto/k8s`) whose Go struct is
//!   embedded (`json:",inline"`): nested on the wire, its fields are the parent's in JSON
//!   (`configMapKeyRef.localObjectReference.name` is `configMapKeyRef.name`).

/// How a strategic merge patch treats a list field (upstream's `patchStrategy` tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// No tag: the patch's list replaces the object's.
    Replace,
    /// `merge` of a list of scalars: union, in order (e.g. `finalizers`).
    MergePrimitives,
    /// `merge` of a list of objects by a key (`containers` by `name`).
    MergeByKey(&'static str),
    /// `merge,retainKeys` by a key (`volumes` by `name`): merged by key, and each item keeps
    /// only the fields the patch names.
    MergeByKeyRetainKeys(&'static str),
}

/// The rules of one field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldRule {
    /// Written even when empty.
    pub always: bool,
    /// A map of quantities (numbers accepted, strings written).
    pub quantity: bool,
    /// Strategic merge patch strategy of a list field.
    pub list: Option<ListStrategy>,
    /// A string holding JSON text, written and read as the JSON value it holds.
    pub json: bool,
    /// A message whose fields are written as its parent's (Go's embedded structs).
    pub inline: bool,
}

const NONE: FieldRule = FieldRule {
    always: false,
    quantity: false,
    list: None,
    json: false,
    inline: false,
};
const ALWAYS: FieldRule = FieldRule {
    always: true,
    ..NONE
};
const QUANTITY: FieldRule = FieldRule {
    quantity: true,
    ..NONE
};
const JSON: FieldRule = FieldRule { json: true, ..NONE };
const INLINE: FieldRule = FieldRule {
    inline: true,
    ..NONE
};
const fn merge_by(key: &'static str) -> FieldRule {
    FieldRule {
        list: Some(ListStrategy::MergeByKey(key)),
        ..NONE
    }
}
const fn merge_retain_keys(key: &'static str) -> FieldRule {
    FieldRule {
        list: Some(ListStrategy::MergeByKeyRetainKeys(key)),
        ..NONE
    }
}
const MERGE_PRIMITIVES: FieldRule = FieldRule {
    list: Some(ListStrategy::MergePrimitives),
    ..NONE
};

/// Upstream's tags for the fields kubestore models (`k8s.io/api` types.go of each kind).
const RULES: &[(&str, FieldRule)] = &[
    // meta/v1 ObjectMeta
    (".meta.v1.ObjectMeta.finalizers", MERGE_PRIMITIVES),
    (".meta.v1.ObjectMeta.owner_references", merge_by("uid")),
    // meta/v1 ManagedFieldsEntry: FieldsV1 is JSON in Kubernetes JSON.
    (".meta.v1.ManagedFieldsEntry.fields_v1", JSON),
    // meta/v1 OwnerReference: apiVersion, kind, name and uid have no omitempty.
    (".meta.v1.OwnerReference.api_version", ALWAYS),
    (".meta.v1.OwnerReference.kind", ALWAYS),
    (".meta.v1.OwnerReference.name", ALWAYS),
    (".meta.v1.OwnerReference.uid", ALWAYS),
    // core/v1 Pod
    (".core.v1.PodSpec.containers", merge_by("name")),
    (".core.v1.PodSpec.init_containers", merge_by("name")),
    (".core.v1.PodSpec.volumes", merge_retain_keys("name")),
    (".core.v1.PodSpec.tolerations", FieldRule::EMPTY),
    // A struct value, which Go's omitempty never omits: every container reads back
    // `resources: {}`.
    (".core.v1.Container.resources", ALWAYS),
    // The rest of upstream's v1 Pod, from k8s.io/api v0.33's types.go: fields without
    // omitempty or of struct type (written even when empty), quantities, and the patch
    // strategies of its lists. An `optional` (Go pointer) field without omitempty is written
    // as null when unset, as Go writes a nil pointer.
    (".core.v1.PodSpec.ephemeral_containers", merge_by("name")),
    (".core.v1.PodSpec.image_pull_secrets", merge_by("name")),
    (".core.v1.PodSpec.host_aliases", merge_by("ip")),
    (".core.v1.PodSpec.overhead", QUANTITY),
    (
        ".core.v1.PodSpec.topology_spread_constraints",
        merge_by("topologyKey"),
    ),
    (".core.v1.PodSpec.scheduling_gates", merge_by("name")),
    (
        ".core.v1.PodSpec.resource_claims",
        merge_retain_keys("name"),
    ),
    (
        ".core.v1.PodStatus.resource_claim_statuses",
        merge_retain_keys("name"),
    ),
    (".core.v1.Container.volume_devices", merge_by("devicePath")),
    (".core.v1.ContainerStatus.allocated_resources", QUANTITY),
    (
        ".core.v1.ContainerStatus.volume_mounts",
        merge_by("mountPath"),
    ),
    (
        ".core.v1.ContainerStatus.allocated_resources_status",
        merge_by("name"),
    ),
    (".core.v1.Volume.name", ALWAYS),
    (".core.v1.EphemeralContainer.name", ALWAYS),
    (
        ".core.v1.EphemeralContainer.ports",
        merge_by("containerPort"),
    ),
    (".core.v1.EphemeralContainer.env", merge_by("name")),
    (".core.v1.EphemeralContainer.resources", ALWAYS),
    (
        ".core.v1.EphemeralContainer.volume_mounts",
        merge_by("mountPath"),
    ),
    (
        ".core.v1.EphemeralContainer.volume_devices",
        merge_by("devicePath"),
    ),
    (".core.v1.HostAlias.ip", ALWAYS),
    (".core.v1.TopologySpreadConstraint.max_skew", ALWAYS),
    (".core.v1.TopologySpreadConstraint.topology_key", ALWAYS),
    (
        ".core.v1.TopologySpreadConstraint.when_unsatisfiable",
        ALWAYS,
    ),
    (".core.v1.PodOS.name", ALWAYS),
    (".core.v1.PodSchedulingGate.name", ALWAYS),
    (".core.v1.PodResourceClaim.name", ALWAYS),
    (".core.v1.PodResourceClaimStatus.name", ALWAYS),
    (".core.v1.ContainerResizePolicy.resource_name", ALWAYS),
    (".core.v1.ContainerResizePolicy.restart_policy", ALWAYS),
    (".core.v1.VolumeDevice.name", ALWAYS),
    (".core.v1.VolumeDevice.device_path", ALWAYS),
    (".core.v1.ResourceClaim.name", ALWAYS),
    (".core.v1.VolumeMountStatus.name", ALWAYS),
    (".core.v1.VolumeMountStatus.mount_path", ALWAYS),
    (".core.v1.ResourceStatus.name", ALWAYS),
    (".core.v1.HostPathVolumeSource.path", ALWAYS),
    (".core.v1.EmptyDirVolumeSource.size_limit", QUANTITY),
    (".core.v1.GCEPersistentDiskVolumeSource.pd_name", ALWAYS),
    (
        ".core.v1.AWSElasticBlockStoreVolumeSource.volume_id",
        ALWAYS,
    ),
    (".core.v1.GitRepoVolumeSource.repository", ALWAYS),
    (".core.v1.NFSVolumeSource.server", ALWAYS),
    (".core.v1.NFSVolumeSource.path", ALWAYS),
    (".core.v1.ISCSIVolumeSource.target_portal", ALWAYS),
    (".core.v1.ISCSIVolumeSource.iqn", ALWAYS),
    (".core.v1.ISCSIVolumeSource.lun", ALWAYS),
    (".core.v1.GlusterfsVolumeSource.endpoints", ALWAYS),
    (".core.v1.GlusterfsVolumeSource.path", ALWAYS),
    (
        ".core.v1.PersistentVolumeClaimVolumeSource.claim_name",
        ALWAYS,
    ),
    (".core.v1.RBDVolumeSource.image", ALWAYS),
    (".core.v1.FlexVolumeSource.driver", ALWAYS),
    (".core.v1.CinderVolumeSource.volume_id", ALWAYS),
    (".core.v1.AzureFileVolumeSource.secret_name", ALWAYS),
    (".core.v1.AzureFileVolumeSource.share_name", ALWAYS),
    (
        ".core.v1.VsphereVirtualDiskVolumeSource.volume_path",
        ALWAYS,
    ),
    (".core.v1.QuobyteVolumeSource.registry", ALWAYS),
    (".core.v1.QuobyteVolumeSource.volume", ALWAYS),
    (".core.v1.AzureDiskVolumeSource.disk_name", ALWAYS),
    (".core.v1.AzureDiskVolumeSource.disk_uri", ALWAYS),
    (".core.v1.PhotonPersistentDiskVolumeSource.pd_id", ALWAYS),
    (".core.v1.PortworxVolumeSource.volume_id", ALWAYS),
    (".core.v1.ScaleIOVolumeSource.gateway", ALWAYS),
    (".core.v1.ScaleIOVolumeSource.system", ALWAYS),
    (".core.v1.CSIVolumeSource.driver", ALWAYS),
    (".core.v1.Sysctl.name", ALWAYS),
    (".core.v1.Sysctl.value", ALWAYS),
    (".core.v1.SeccompProfile.type", ALWAYS),
    (".core.v1.AppArmorProfile.type", ALWAYS),
    (".core.v1.LinuxContainerUser.uid", ALWAYS),
    (".core.v1.LinuxContainerUser.gid", ALWAYS),
    (".core.v1.ResourceHealth.resource_id", ALWAYS),
    (".core.v1.KeyToPath.key", ALWAYS),
    (".core.v1.KeyToPath.path", ALWAYS),
    (".core.v1.DownwardAPIVolumeFile.path", ALWAYS),
    (".core.v1.PersistentVolumeClaimTemplate.metadata", ALWAYS),
    (".core.v1.PersistentVolumeClaimTemplate.spec", ALWAYS),
    (".core.v1.PreferredSchedulingTerm.weight", ALWAYS),
    (".core.v1.PreferredSchedulingTerm.preference", ALWAYS),
    (".core.v1.PodAffinityTerm.topology_key", ALWAYS),
    (".core.v1.WeightedPodAffinityTerm.weight", ALWAYS),
    (".core.v1.WeightedPodAffinityTerm.pod_affinity_term", ALWAYS),
    (".core.v1.ServiceAccountTokenProjection.path", ALWAYS),
    (".core.v1.ClusterTrustBundleProjection.path", ALWAYS),
    (".core.v1.PersistentVolumeClaimSpec.resources", ALWAYS),
    (".core.v1.VolumeResourceRequirements.limits", QUANTITY),
    (".core.v1.VolumeResourceRequirements.requests", QUANTITY),
    (".core.v1.TypedLocalObjectReference.api_group", ALWAYS),
    (".core.v1.TypedLocalObjectReference.kind", ALWAYS),
    (".core.v1.TypedLocalObjectReference.name", ALWAYS),
    (".core.v1.TypedObjectReference.api_group", ALWAYS),
    (".core.v1.TypedObjectReference.kind", ALWAYS),
    (".core.v1.TypedObjectReference.name", ALWAYS),
    (".core.v1.NodeSelectorRequirement.key", ALWAYS),
    (".core.v1.NodeSelectorRequirement.operator", ALWAYS),
    (".k8s.io.api.core.v1.Volume.volumeSource", INLINE),
    (
        ".k8s.io.api.core.v1.EphemeralContainer.ephemeralContainerCommon",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.SecretProjection.localObjectReference",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.ConfigMapVolumeSource.localObjectReference",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.ConfigMapProjection.localObjectReference",
        INLINE,
    ),
    (".core.v1.Container.name", ALWAYS),
    (".core.v1.Container.ports", merge_by("containerPort")),
    (".core.v1.Container.env", merge_by("name")),
    (".core.v1.Container.volume_mounts", merge_by("mountPath")),
    (".core.v1.ContainerPort.container_port", ALWAYS),
    (".core.v1.EnvVar.name", ALWAYS),
    // core/v1 EnvVarSource's selectors: the path, resource and keys have no omitempty; a
    // divisor is a Quantity (a value struct upstream, so written even when zero, as "0").
    (".core.v1.ObjectFieldSelector.field_path", ALWAYS),
    (".core.v1.ResourceFieldSelector.resource", ALWAYS),
    (".core.v1.ResourceFieldSelector.divisor", QUANTITY),
    (".core.v1.ConfigMapKeySelector.key", ALWAYS),
    (".core.v1.SecretKeySelector.key", ALWAYS),
    // core/v1 probes and hooks: ports, header names and values, and a sleep's seconds have no
    // omitempty.
    (".core.v1.HTTPGetAction.port", ALWAYS),
    (".core.v1.TCPSocketAction.port", ALWAYS),
    (".core.v1.GRPCAction.port", ALWAYS),
    (".core.v1.HTTPHeader.name", ALWAYS),
    (".core.v1.HTTPHeader.value", ALWAYS),
    (".core.v1.SleepAction.seconds", ALWAYS),
    // Kubernetes' protobuf: Probe embeds its ProbeHandler.
    (".k8s.io.api.core.v1.Probe.handler", INLINE),
    // Kubernetes' protobuf: the embedded LocalObjectReference of the selectors and sources.
    (
        ".k8s.io.api.core.v1.ConfigMapKeySelector.localObjectReference",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.SecretKeySelector.localObjectReference",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.ConfigMapEnvSource.localObjectReference",
        INLINE,
    ),
    (
        ".k8s.io.api.core.v1.SecretEnvSource.localObjectReference",
        INLINE,
    ),
    (".core.v1.VolumeMount.name", ALWAYS),
    (".core.v1.VolumeMount.mount_path", ALWAYS),
    (".core.v1.ResourceRequirements.requests", QUANTITY),
    (".core.v1.ResourceQuotaSpec.hard", QUANTITY),
    (".core.v1.ResourceQuotaStatus.hard", QUANTITY),
    (".core.v1.ResourceQuotaStatus.used", QUANTITY),
    (".core.v1.ResourceRequirements.limits", QUANTITY),
    (".core.v1.PodStatus.conditions", merge_by("type")),
    (".core.v1.PodStatus.pod_ips", merge_by("ip")),
    (".core.v1.PodStatus.host_ips", merge_by("ip")),
    (".core.v1.PodCondition.type", ALWAYS),
    (".core.v1.PodCondition.status", ALWAYS),
    (".core.v1.PodCondition.last_probe_time", ALWAYS),
    (".core.v1.PodCondition.last_transition_time", ALWAYS),
    (".core.v1.ContainerStatus.name", ALWAYS),
    (".core.v1.ContainerStatus.ready", ALWAYS),
    (".core.v1.ContainerStatus.restart_count", ALWAYS),
    (".core.v1.ContainerStatus.image", ALWAYS),
    (".core.v1.ContainerStatus.image_id", ALWAYS),
    // `state` and `lastState` are struct values (`ContainerState`), which Go's omitempty never
    // omits: `"lastState": {}`. Likewise every `metav1.Time` value below is written as `null`.
    (".core.v1.ContainerStatus.state", ALWAYS),
    (".core.v1.ContainerStatus.last_state", ALWAYS),
    (".core.v1.ContainerStateRunning.started_at", ALWAYS),
    (".core.v1.ContainerStateTerminated.exit_code", ALWAYS),
    (".core.v1.ContainerStateTerminated.started_at", ALWAYS),
    (".core.v1.ContainerStateTerminated.finished_at", ALWAYS),
    (".core.v1.PodIP.ip", ALWAYS),
    (".core.v1.HostIP.ip", ALWAYS),
    (".core.v1.PodReadinessGate.condition_type", ALWAYS),
    // core/v1 Event: involvedObject, reportingComponent, reportingInstance, eventTime have no
    // omitempty; eventTime is written as null when unset (a MicroTime).
    (".core.v1.Event.involved_object", ALWAYS),
    (".core.v1.Event.reporting_component", ALWAYS),
    (".core.v1.Event.reporting_instance", ALWAYS),
    (".core.v1.Event.event_time", ALWAYS),
    (".core.v1.Event.first_timestamp", ALWAYS),
    (".core.v1.Event.last_timestamp", ALWAYS),
    // events.k8s.io/v1 Event: eventTime and the deprecated times are written as null when
    // unset, regarding and deprecatedSource are values (`{}` when empty); EventSeries' fields
    // have no omitempty.
    (".events.v1.Event.event_time", ALWAYS),
    (".events.v1.Event.regarding", ALWAYS),
    (".events.v1.Event.deprecated_source", ALWAYS),
    (".events.v1.Event.deprecated_first_timestamp", ALWAYS),
    (".events.v1.Event.deprecated_last_timestamp", ALWAYS),
    (".events.v1.EventSeries.count", ALWAYS),
    (".events.v1.EventSeries.last_observed_time", ALWAYS),
    // apiextensions/v1
    (
        ".apiextensions.v1.CustomResourceDefinitionNames.plural",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionNames.kind",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionSpec.group",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionSpec.scope",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionSpec.versions",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionVersion.name",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionVersion.served",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionVersion.storage",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionStatus.stored_versions",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionStatus.accepted_names",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionCondition.type",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceDefinitionCondition.status",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceColumnDefinition.name",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceColumnDefinition.type",
        ALWAYS,
    ),
    (
        ".apiextensions.v1.CustomResourceColumnDefinition.json_path",
        ALWAYS,
    ),
    (".apiextensions.v1.SelectableField.json_path", ALWAYS),
    (
        ".apiextensions.v1.CustomResourceValidation.open_api_v3_schema",
        JSON,
    ),
];

impl FieldRule {
    /// No rule.
    pub const EMPTY: FieldRule = NONE;
}

/// The rule of the field `full_name` (`.core.v1.PodSpec.containers`).
pub fn rule(full_name: &str) -> FieldRule {
    // Read once per field when the descriptors are indexed (`FieldDesc::rule`), not per object.
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, FieldRule>> =
        std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| RULES.iter().copied().collect())
        .get(full_name)
        .copied()
        .unwrap_or_default()
}
