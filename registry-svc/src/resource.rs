//! What the generic Store needs to know about a resource kind: its names and where its
//! metadata is. Implemented for each proto message by one `resource!` line.

use kubestore_proto::{
    core::v1::{
        ConfigMap, Event, ListConfigMapsRequest, ListEventsRequest, ListPodsRequest,
        ListSecretsRequest, Pod, Secret, WatchConfigMapsRequest, WatchEventsRequest,
        WatchPodsRequest, WatchSecretsRequest,
    },
    meta::v1::{ListOptions, ObjectMeta},
};

/// A resource kind stored by the registry.
pub trait Resource: prost::Message + Default + Clone + PartialEq + Send + Sync + 'static {
    /// Kind, e.g. `Pod` (used in Invalid errors).
    const KIND: &'static str;
    /// Plural resource, e.g. `pods` (used in keys and NotFound/Conflict errors).
    const RESOURCE: &'static str;
    /// API group: "" for the core group (request metrics' `group` label).
    const GROUP: &'static str = "";
    /// kubectl's short names (`po`), for discovery.
    const SHORT_NAMES: &'static [&'static str] = &[];
    /// Discovery's categories (`all`).
    const CATEGORIES: &'static [&'static str] = &[];
    /// The proto message, `.core.v1.Pod`: by convention the package is the group's first label
    /// (`core` for the core group) and the version, and the message is named for the kind, so
    /// that the descriptor-driven JSON codec finds every built-in kind without a list.
    fn message_name() -> String {
        let package = match Self::GROUP.split('.').next() {
            None | Some("") => "core",
            Some(label) => label,
        };
        format!(".{package}.v1.{}", Self::KIND)
    }
    /// The object as Kubernetes JSON, with its `apiVersion` and `kind` (what admission
    /// sees): built-in kinds through the descriptor-driven codec ([`codec`]).
    fn as_json(&self) -> Result<serde_json::Value, crate::error::ApiError> {
        let api_version = if Self::GROUP.is_empty() {
            "v1".to_string()
        } else {
            format!("{}/v1", Self::GROUP)
        };
        codec()
            .encode_to_value(
                &Self::message_name(),
                &self.encode_to_vec(),
                Some((&api_version, Self::KIND)),
            )
            .map_err(|e| crate::error::ApiError::Internal(format!("{} as JSON: {e}", Self::KIND)))
    }
    /// The object from its Kubernetes JSON (what a mutating webhook's patch leaves): built-in
    /// kinds through the descriptor-driven codec, fields the kind does not have dropped (as
    /// upstream's decoding of a patched object drops them).
    fn from_json(value: &serde_json::Value) -> Result<Self, crate::error::ApiError>
    where
        Self: Sized,
    {
        let mut unknown = Vec::new();
        let bytes = codec()
            .decode(
                &Self::message_name(),
                value,
                &["apiVersion", "kind"],
                &mut unknown,
            )
            .map_err(|e| {
                crate::error::ApiError::BadRequest(format!(
                    "{} cannot be handled as a {}: {}",
                    Self::KIND,
                    Self::KIND,
                    e.message
                ))
            })?;
        Self::decode(bytes.as_slice()).map_err(|e| {
            crate::error::ApiError::Internal(format!(
                "{} from JSON does not decode: {e}",
                Self::KIND
            ))
        })
    }
    /// The metadata (field 1), if present.
    fn meta(&self) -> Option<&ObjectMeta>;
    /// The metadata, created empty if absent.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// The kind's List request (for the List pass-through, `passthrough`).
    type ListRequest: prost::Message + Default + Send + Sync + 'static;
    /// A List request's namespace and options.
    fn list_parts(request: Self::ListRequest) -> (String, Option<ListOptions>);
    /// The kind's Watch request (for the Watch pass-through, `passthrough`).
    type WatchRequest: prost::Message + Default + Send + Sync + 'static;
    /// A Watch request's namespace and options.
    fn watch_parts(request: Self::WatchRequest) -> (String, Option<ListOptions>);
}

/// Implements [`Resource`] for a message whose field 1 is `metadata`.
#[macro_export]
macro_rules! resource {
    (
        $ty:ty, $kind:literal, $plural:literal, $list:ty, $watch:ty
        $(, group = $group:literal)?
        $(, short = [$($short:literal),*])?
        $(, categories = [$($category:literal),*])?
    ) => {
        impl $crate::resource::Resource for $ty {
            const KIND: &'static str = $kind;
            const RESOURCE: &'static str = $plural;
            $(const GROUP: &'static str = $group;)?
            $(const SHORT_NAMES: &'static [&'static str] = &[$($short),*];)?
            $(const CATEGORIES: &'static [&'static str] = &[$($category),*];)?
            type ListRequest = $list;
            fn list_parts(
                request: $list,
            ) -> (String, Option<kubestore_proto::meta::v1::ListOptions>) {
                (request.namespace, request.options)
            }
            type WatchRequest = $watch;
            fn watch_parts(
                request: $watch,
            ) -> (String, Option<kubestore_proto::meta::v1::ListOptions>) {
                (request.namespace, request.options)
            }
            fn meta(&self) -> Option<&kubestore_proto::meta::v1::ObjectMeta> {
                self.metadata.as_ref()
            }
            fn meta_mut(&mut self) -> &mut kubestore_proto::meta::v1::ObjectMeta {
                self.metadata.get_or_insert_with(Default::default)
            }
        }
    };
}

resource!(
    Pod,
    "Pod",
    "pods",
    ListPodsRequest,
    WatchPodsRequest,
    short = ["po"],
    categories = ["all"]
);
resource!(
    ConfigMap,
    "ConfigMap",
    "configmaps",
    ListConfigMapsRequest,
    WatchConfigMapsRequest,
    short = ["cm"]
);
resource!(
    Event,
    "Event",
    "events",
    ListEventsRequest,
    WatchEventsRequest,
    short = ["ev"]
);
resource!(
    kubestore_proto::coordination::v1::Lease,
    "Lease",
    "leases",
    kubestore_proto::coordination::v1::ListLeasesRequest,
    kubestore_proto::coordination::v1::WatchLeasesRequest,
    group = "coordination.k8s.io"
);
resource!(
    kubestore_proto::core::v1::Namespace,
    "Namespace",
    "namespaces",
    kubestore_proto::core::v1::ListNamespacesRequest,
    kubestore_proto::core::v1::WatchNamespacesRequest,
    short = ["ns"]
);
resource!(
    kubestore_proto::rbac::v1::Role,
    "Role",
    "roles",
    kubestore_proto::rbac::v1::ListRolesRequest,
    kubestore_proto::rbac::v1::WatchRolesRequest,
    group = "rbac.authorization.k8s.io"
);
resource!(
    kubestore_proto::rbac::v1::ClusterRole,
    "ClusterRole",
    "clusterroles",
    kubestore_proto::rbac::v1::ListClusterRolesRequest,
    kubestore_proto::rbac::v1::WatchClusterRolesRequest,
    group = "rbac.authorization.k8s.io"
);
resource!(
    kubestore_proto::rbac::v1::RoleBinding,
    "RoleBinding",
    "rolebindings",
    kubestore_proto::rbac::v1::ListRoleBindingsRequest,
    kubestore_proto::rbac::v1::WatchRoleBindingsRequest,
    group = "rbac.authorization.k8s.io"
);
resource!(
    kubestore_proto::rbac::v1::ClusterRoleBinding,
    "ClusterRoleBinding",
    "clusterrolebindings",
    kubestore_proto::rbac::v1::ListClusterRoleBindingsRequest,
    kubestore_proto::rbac::v1::WatchClusterRoleBindingsRequest,
    group = "rbac.authorization.k8s.io"
);
resource!(
    kubestore_proto::admissionregistration::v1::ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicy",
    "validatingadmissionpolicies",
    kubestore_proto::admissionregistration::v1::ListValidatingAdmissionPoliciesRequest,
    kubestore_proto::admissionregistration::v1::WatchValidatingAdmissionPoliciesRequest,
    group = "admissionregistration.k8s.io"
);
resource!(
    kubestore_proto::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    "ValidatingAdmissionPolicyBinding",
    "validatingadmissionpolicybindings",
    kubestore_proto::admissionregistration::v1::ListValidatingAdmissionPolicyBindingsRequest,
    kubestore_proto::admissionregistration::v1::WatchValidatingAdmissionPolicyBindingsRequest,
    group = "admissionregistration.k8s.io"
);
resource!(
    kubestore_proto::admissionregistration::v1::MutatingWebhookConfiguration,
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    kubestore_proto::admissionregistration::v1::ListMutatingWebhookConfigurationsRequest,
    kubestore_proto::admissionregistration::v1::WatchMutatingWebhookConfigurationsRequest,
    group = "admissionregistration.k8s.io"
);
resource!(
    kubestore_proto::admissionregistration::v1::ValidatingWebhookConfiguration,
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    kubestore_proto::admissionregistration::v1::ListValidatingWebhookConfigurationsRequest,
    kubestore_proto::admissionregistration::v1::WatchValidatingWebhookConfigurationsRequest,
    group = "admissionregistration.k8s.io"
);
resource!(
    kubestore_proto::core::v1::ResourceQuota,
    "ResourceQuota",
    "resourcequotas",
    kubestore_proto::core::v1::ListResourceQuotasRequest,
    kubestore_proto::core::v1::WatchResourceQuotasRequest,
    short = ["quota"]
);
resource!(
    kubestore_proto::core::v1::ServiceAccount,
    "ServiceAccount",
    "serviceaccounts",
    kubestore_proto::core::v1::ListServiceAccountsRequest,
    kubestore_proto::core::v1::WatchServiceAccountsRequest,
    short = ["sa"]
);
resource!(
    Secret,
    "Secret",
    "secrets",
    ListSecretsRequest,
    WatchSecretsRequest
);

/// The names the built-in kinds hold: kind, plural, and kubectl's short names. A custom kind may
/// take none of them (issue 17: such a definition gets `NamesAccepted=False`), so that a name
/// given to `kubestore get` or a manifest's `kind` always means one kind. Upstream checks
/// names within a group only; see the README's deviations.
pub const BUILT_IN_NAMES: &[(&str, &str, &[&str])] = &[
    (Pod::KIND, Pod::RESOURCE, &["po"]),
    (ConfigMap::KIND, ConfigMap::RESOURCE, &["cm"]),
    (Event::KIND, Event::RESOURCE, &["ev"]),
    (
        <kubestore_proto::coordination::v1::Lease as Resource>::KIND,
        <kubestore_proto::coordination::v1::Lease as Resource>::RESOURCE,
        &[],
    ),
    (Secret::KIND, Secret::RESOURCE, &[]),
    ("ServiceAccount", "serviceaccounts", &["sa"]),
    ("ResourceQuota", "resourcequotas", &["quota"]),
    ("Role", "roles", &[]),
    ("ClusterRole", "clusterroles", &[]),
    ("RoleBinding", "rolebindings", &[]),
    ("ClusterRoleBinding", "clusterrolebindings", &[]),
    (
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        &[],
    ),
    (
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        &[],
    ),
    (
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        &[],
    ),
    (
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        &[],
    ),
    (
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
    ),
];

/// Shorthand accessors over [`Resource::meta`].
pub trait MetaExt {
    /// `metadata.name` or "".
    fn name(&self) -> &str;
}

impl<R: Resource> MetaExt for R {
    fn name(&self) -> &str {
        self.meta().map_or("", |m| m.name.as_str())
    }
}

/// What a Store's kind is called, and where its objects live: a built-in kind's come from its
/// [`Resource`] constants; a custom kind's from its definition, at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// Kind, e.g. `Pod` (Invalid errors).
    pub kind: String,
    /// The resource as errors name it: `pods`, or `crontabs.stable.example.com`.
    pub resource: String,
    /// The storage key every object's key starts with: `/pods`, or
    /// `/stable.example.com/crontabs`.
    pub key_root: String,
    /// API group ("" for core), version and plural: the request metrics' labels.
    pub group: String,
    /// See `group`.
    pub version: String,
    /// See `group`.
    pub plural: String,
}

impl Names {
    /// A built-in kind's names; errors name a grouped kind's resource with its group
    /// (`leases.coordination.k8s.io "x" not found`), as upstream's `GroupResource` does.
    pub fn of<R: Resource>() -> Self {
        Self {
            kind: R::KIND.into(),
            resource: if R::GROUP.is_empty() {
                R::RESOURCE.into()
            } else {
                format!("{}.{}", R::RESOURCE, R::GROUP)
            },
            key_root: format!("/{}", R::RESOURCE),
            group: R::GROUP.into(),
            version: "v1".into(),
            plural: R::RESOURCE.into(),
        }
    }
}

/// The Kubernetes JSON codec over the registry's own descriptors (every built-in kind, and
/// `ObjectMeta`), built once.
pub fn codec() -> std::sync::Arc<kubestore_apimachinery::json::Codec> {
    static CODEC: std::sync::OnceLock<std::sync::Arc<kubestore_apimachinery::json::Codec>> =
        std::sync::OnceLock::new();
    CODEC
        .get_or_init(|| {
            std::sync::Arc::new(
                kubestore_apimachinery::json::Codec::new(kubestore_proto::CORE_DESCRIPTOR_SET)
                    .unwrap_or_else(|e| {
                        panic!("the registry's own descriptors do not decode: {e}")
                    }),
            )
        })
        .clone()
}
