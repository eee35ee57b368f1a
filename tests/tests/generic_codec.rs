//! The generic API (`registry.v1.Resources`, JSON) and each typed service (protobuf) answer the
//! same object, for every built-in kind discovery lists, Namespaces and definitions included:
//! an object rich in fields (int32 and int64 numbers, quantities, times, maps, lists, bytes)
//! written through the generic API is stored with every field it carried, and reads back
//! through the typed service with the same uid,
//! resourceVersion and content, once the typed message is written as JSON by the registry's
//! codec; and in the generic API's raw JSON text every integer field is a JSON number, never
//! the string proto3's JSON mapping writes for an int64.

use kubestore_apimachinery::json::Codec;
use kubestore_proto::{
    admissionregistration::v1::{
        GetMutatingWebhookConfigurationRequest, GetValidatingAdmissionPolicyBindingRequest,
        GetValidatingAdmissionPolicyRequest, GetValidatingWebhookConfigurationRequest,
        mutating_webhook_configurations_client::MutatingWebhookConfigurationsClient,
        validating_admission_policies_client::ValidatingAdmissionPoliciesClient,
        validating_admission_policy_bindings_client::ValidatingAdmissionPolicyBindingsClient,
        validating_webhook_configurations_client::ValidatingWebhookConfigurationsClient,
    },
    apiextensions::v1::{
        GetCustomResourceDefinitionRequest,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    coordination::v1::{GetLeaseRequest, leases_client::LeasesClient},
    core::v1::{
        GetConfigMapRequest, GetEventRequest, GetNamespaceRequest, GetPodRequest,
        GetResourceQuotaRequest, GetSecretRequest, GetServiceAccountRequest,
        config_maps_client::ConfigMapsClient, events_client::EventsClient,
        namespaces_client::NamespacesClient, pods_client::PodsClient,
        resource_quotas_client::ResourceQuotasClient, secrets_client::SecretsClient,
        service_accounts_client::ServiceAccountsClient,
    },
    rbac::v1::{
        GetClusterRoleBindingRequest, GetClusterRoleRequest, GetRoleBindingRequest, GetRoleRequest,
        cluster_role_bindings_client::ClusterRoleBindingsClient,
        cluster_roles_client::ClusterRolesClient, role_bindings_client::RoleBindingsClient,
        roles_client::RolesClient,
    },
    registry::v1::{
        CreateRequest, DiscoverRequest, GetRequest, Output, ResourceRef,
        resources_client::ResourcesClient,
    },
};
use kubestore_tests::{Cluster, assert_carried, services::channel};
use prost::Message;
use serde_json::{Value, json};
use tonic::transport::Channel;

/// One kind: its resource, namespace, message, and an object of it.
struct Case {
    group: &'static str,
    resource: &'static str,
    namespace: &'static str,
    message: &'static str,
    object: Value,
    /// Paths (JSON pointers) of integer fields, whose raw JSON must be a number.
    integers: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            group: "",
            resource: "pods",
            namespace: "default",
            message: ".core.v1.Pod",
            object: json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"app": "web"}, "annotations": {"a": "b"}},
                "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 3_000_000_000_i64,
                    "activeDeadlineSeconds": 60,
                    "containers": [{"name": "c", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}),
            integers: &[
                "/spec/terminationGracePeriodSeconds",
                "/spec/activeDeadlineSeconds",
                "/spec/containers/0/ports/0/containerPort",
                "/metadata/generation",
            ],
        },
        Case {
            group: "",
            resource: "configmaps",
            namespace: "default",
            message: ".core.v1.ConfigMap",
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm"}, "data": {"k": "v"}, "immutable": false}),
            integers: &[],
        },
        Case {
            group: "",
            resource: "serviceaccounts",
            namespace: "default",
            message: ".core.v1.ServiceAccount",
            object: json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "builder"},
                "secrets": [{"name": "builder-token", "namespace": "default"}],
                "imagePullSecrets": [{"name": "registry"}],
                "automountServiceAccountToken": false}),
            integers: &[],
        },
        Case {
            group: "",
            resource: "secrets",
            namespace: "default",
            message: ".core.v1.Secret",
            object: json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s"}, "type": "Opaque", "data": {"password": "aHVudGVyMg=="}}),
            integers: &[],
        },
        Case {
            group: "",
            resource: "events",
            namespace: "default",
            message: ".core.v1.Event",
            object: json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": "Started", "message": "m", "type": "Normal", "count": 4,
                "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z",
                "eventTime": "2026-01-02T03:04:05.123456Z",
                "source": {"component": "kubelet"}}),
            integers: &["/count"],
        },
        Case {
            group: "rbac.authorization.k8s.io",
            resource: "roles",
            namespace: "default",
            message: ".rbac.v1.Role",
            object: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"],
                    "resourceNames": ["p"]}]}),
            integers: &[],
        },
        Case {
            group: "rbac.authorization.k8s.io",
            resource: "clusterroles",
            namespace: "",
            message: ".rbac.v1.ClusterRole",
            object: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "cr"},
                "rules": [{"nonResourceURLs": ["/healthz", "/version/*"], "verbs": ["get"]}],
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}),
            integers: &[],
        },
        Case {
            group: "rbac.authorization.k8s.io",
            resource: "rolebindings",
            namespace: "default",
            message: ".rbac.v1.RoleBinding",
            object: json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "rb"},
                "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
            integers: &[],
        },
        Case {
            group: "rbac.authorization.k8s.io",
            resource: "clusterrolebindings",
            namespace: "",
            message: ".rbac.v1.ClusterRoleBinding",
            object: json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                    "name": "dev"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cr"}}),
            integers: &[],
        },
        Case {
            group: "",
            resource: "resourcequotas",
            namespace: "default",
            message: ".core.v1.ResourceQuota",
            // It limits nothing the other cases write (and no controller runs here).
            object: json!({"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "q"},
                "spec": {"hard": {"count/widgets.example.com": "5", "requests.cpu": "1500m"},
                    "scopes": ["NotTerminating"]}}),
            integers: &[],
        },
        Case {
            group: "admissionregistration.k8s.io",
            resource: "validatingadmissionpolicies",
            namespace: "",
            message: ".admissionregistration.v1.ValidatingAdmissionPolicy",
            // No binding names it: it admits nothing.
            object: json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "vap"},
                "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                        "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]},
                    "validations": [{"expression": "object.spec.size < 3", "reason": "Forbidden"}],
                    "variables": [{"name": "v", "expression": "1"}]}}),
            integers: &["/metadata/generation"],
        },
        Case {
            group: "admissionregistration.k8s.io",
            resource: "validatingadmissionpolicybindings",
            namespace: "",
            message: ".admissionregistration.v1.ValidatingAdmissionPolicyBinding",
            object: json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "vapb"},
                "spec": {"policyName": "no-such-policy", "validationActions": ["Warn", "Audit"],
                    "paramRef": {"name": "p", "parameterNotFoundAction": "Allow"}}}),
            integers: &["/metadata/generation"],
        },
        Case {
            group: "admissionregistration.k8s.io",
            resource: "validatingwebhookconfigurations",
            namespace: "",
            message: ".admissionregistration.v1.ValidatingWebhookConfiguration",
            // Its rules select nothing the other cases write.
            object: json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "vwc"},
                "webhooks": [{"name": "v.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/v", "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="},
                    "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["widgets"]}],
                    "sideEffects": "None", "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 5}]}),
            integers: &["/webhooks/0/timeoutSeconds", "/metadata/generation"],
        },
        Case {
            group: "admissionregistration.k8s.io",
            resource: "mutatingwebhookconfigurations",
            namespace: "",
            message: ".admissionregistration.v1.MutatingWebhookConfiguration",
            object: json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration", "metadata": {"name": "mwc"},
                "webhooks": [{"name": "m.example.com",
                    "clientConfig": {"url": "https://127.0.0.1:1/m"},
                    "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["widgets"]}],
                    "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
                    "reinvocationPolicy": "IfNeeded"}]}),
            integers: &["/webhooks/0/timeoutSeconds", "/metadata/generation"],
        },
        Case {
            group: "coordination.k8s.io",
            resource: "leases",
            namespace: "default",
            message: ".coordination.v1.Lease",
            object: json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l"},
                "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                    "renewTime": "2026-01-02T03:04:06.654321Z", "leaseTransitions": 3}}),
            integers: &["/spec/leaseDurationSeconds", "/spec/leaseTransitions"],
        },
        Case {
            group: "",
            resource: "namespaces",
            namespace: "",
            message: ".core.v1.Namespace",
            object: json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "ns-codec", "labels": {"team": "a"}}}),
            integers: &[],
        },
        Case {
            group: "apiextensions.k8s.io",
            resource: "customresourcedefinitions",
            namespace: "",
            message: ".apiextensions.v1.CustomResourceDefinition",
            object: json!({"apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": "integer", "maximum": 10, "minimum": 1}}}}}}}]}}),
            integers: &["/metadata/generation"],
        },
    ]
}

/// The typed service's answer for `case`'s object, as protobuf bytes.
async fn typed(ch: &Channel, case: &Case, name: &str) -> Vec<u8> {
    let (ns, name) = (case.namespace.to_string(), name.to_string());
    match case.resource {
        "pods" => PodsClient::new(ch.clone())
            .get(GetPodRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "configmaps" => ConfigMapsClient::new(ch.clone())
            .get(GetConfigMapRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "serviceaccounts" => ServiceAccountsClient::new(ch.clone())
            .get(GetServiceAccountRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "secrets" => SecretsClient::new(ch.clone())
            .get(GetSecretRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "events" => EventsClient::new(ch.clone())
            .get(GetEventRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "leases" => LeasesClient::new(ch.clone())
            .get(GetLeaseRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "namespaces" => NamespacesClient::new(ch.clone())
            .get(GetNamespaceRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "roles" => RolesClient::new(ch.clone())
            .get(GetRoleRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "clusterroles" => ClusterRolesClient::new(ch.clone())
            .get(GetClusterRoleRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "rolebindings" => RoleBindingsClient::new(ch.clone())
            .get(GetRoleBindingRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "clusterrolebindings" => ClusterRoleBindingsClient::new(ch.clone())
            .get(GetClusterRoleBindingRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "resourcequotas" => ResourceQuotasClient::new(ch.clone())
            .get(GetResourceQuotaRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "validatingadmissionpolicies" => ValidatingAdmissionPoliciesClient::new(ch.clone())
            .get(GetValidatingAdmissionPolicyRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "validatingadmissionpolicybindings" => {
            ValidatingAdmissionPolicyBindingsClient::new(ch.clone())
                .get(GetValidatingAdmissionPolicyBindingRequest {
                    namespace: ns,
                    name,
                })
                .await
                .map(|r| r.into_inner().encode_to_vec())
        }
        "validatingwebhookconfigurations" => ValidatingWebhookConfigurationsClient::new(ch.clone())
            .get(GetValidatingWebhookConfigurationRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "mutatingwebhookconfigurations" => MutatingWebhookConfigurationsClient::new(ch.clone())
            .get(GetMutatingWebhookConfigurationRequest {
                namespace: ns,
                name,
            })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        "customresourcedefinitions" => CustomResourceDefinitionsClient::new(ch.clone())
            .get(GetCustomResourceDefinitionRequest { name })
            .await
            .map(|r| r.into_inner().encode_to_vec()),
        other => panic!("no typed service for {other}"),
    }
    .unwrap_or_else(|e| panic!("typed get of {}: {e:?}", case.resource))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_reads_the_same_through_the_generic_and_typed_apis() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = channel(&url).await;
    let mut g = ResourcesClient::new(ch.clone());
    let codec = Codec::new(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors");
    let cases = cases();
    // Every built-in kind discovery lists is a case here, in its storage version (a second
    // version converts, so its bytes are not the typed API's: tests/events_v1.rs).
    let discovered: Vec<(String, String)> = g
        .discover(DiscoverRequest {})
        .await
        .expect("discover")
        .into_inner()
        .resources
        .into_iter()
        .filter(|r| !r.message.is_empty() && r.storage_version)
        .map(|r| (r.group, r.resource))
        .collect();
    for (group, resource) in &discovered {
        assert!(
            cases
                .iter()
                .any(|c| c.group == group && c.resource == resource),
            "{group}/{resource} has no case here"
        );
    }
    for case in &cases {
        let reference = Some(ResourceRef {
            group: case.group.into(),
            version: "v1".into(),
            resource: case.resource.into(),
        });
        let name = case.object["metadata"]["name"].as_str().expect("a name");
        let written = g
            .create(CreateRequest {
                resource: reference.clone(),
                namespace: case.namespace.into(),
                json: case.object.to_string(),
                options: None,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("create {}: {e:?}", case.resource))
            .into_inner()
            .json;
        let generic_get = |mut g: ResourcesClient<Channel>, reference: Option<ResourceRef>| async move {
            let json = g
                .get(GetRequest {
                    resource: reference,
                    namespace: case.namespace.into(),
                    name: name.into(),
                    subresource: String::new(),
                    output: Output::Object as i32,
                })
                .await
                .expect("generic get")
                .into_inner()
                .json;
            serde_json::from_str::<Value>(&json).expect("JSON")
        };
        let api_version = case.object["apiVersion"].as_str().expect("apiVersion");
        let kind = case.object["kind"].as_str().expect("kind");
        // A definition's controller may change it meanwhile: compare a typed read taken
        // between two generic reads of one version.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let raw = loop {
            let before = generic_get(g.clone(), reference.clone()).await;
            let bytes = typed(&ch, case, name).await;
            let after = generic_get(g.clone(), reference.clone()).await;
            if before == after {
                let typed_json = codec
                    .encode_to_value(case.message, &bytes, Some((api_version, kind)))
                    .expect("the typed answer as JSON");
                assert_eq!(
                    typed_json, after,
                    "{}: typed and generic differ",
                    case.resource
                );
                break after;
            }
            assert!(
                std::time::Instant::now() < until,
                "{} keeps changing",
                case.resource
            );
        };
        let created: Value = serde_json::from_str(&written).expect("JSON");
        if created["metadata"]["resourceVersion"] == raw["metadata"]["resourceVersion"] {
            assert_eq!(created, raw, "{}: read as written", case.resource);
        }
        assert_carried(&case.object, &raw, case.resource);
        for pointer in case.integers {
            let v = raw
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{}: no {pointer} in {raw}", case.resource));
            assert!(
                v.is_i64(),
                "{}: {pointer} is {v}, not a number",
                case.resource
            );
        }
    }
}

/// Upstream's ConfigMap has `binaryData` (base64 in JSON, bytes in protobuf); registry-svc's
/// `core.v1.ConfigMap` had no such field, so it was dropped on every write (with an unknown
/// field warning): `kubectl create configmap --from-file` of a file that is not UTF-8 lost it.
#[tokio::test(flavor = "multi_thread")]
async fn a_config_maps_binary_data_is_stored() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut g = ResourcesClient::new(channel(&url).await);
    let sent = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bin"},
        "data": {"k": "v"}, "binaryData": {"b": "AAEC"}});
    let written = g
        .create(CreateRequest {
            resource: Some(ResourceRef {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
            }),
            namespace: "default".into(),
            json: sent.to_string(),
            options: None,
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let stored: Value = serde_json::from_str(&written.json).expect("JSON");
    assert_carried(&sent, &stored, "configmaps");
}
