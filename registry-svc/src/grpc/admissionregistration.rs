//! The typed gRPC services of the admission configuration kinds
//! (`admissionregistration.v1.ValidatingAdmissionPolicies`, `ValidatingAdmissionPolicyBindings`,
//! `MutatingWebhookConfigurations`, `ValidatingWebhookConfigurations`): one `grpc_service!`
//! line each, like every built-in kind's.

use kubestore_proto::admissionregistration::v1::{
    CreateMutatingWebhookConfigurationRequest, CreateValidatingAdmissionPolicyBindingRequest,
    CreateValidatingAdmissionPolicyRequest, CreateValidatingWebhookConfigurationRequest,
    DeleteCollectionMutatingWebhookConfigurationsRequest,
    DeleteCollectionValidatingAdmissionPoliciesRequest,
    DeleteCollectionValidatingAdmissionPolicyBindingsRequest,
    DeleteCollectionValidatingWebhookConfigurationsRequest,
    DeleteMutatingWebhookConfigurationRequest, DeleteMutatingWebhookConfigurationResponse,
    DeleteValidatingAdmissionPolicyBindingRequest, DeleteValidatingAdmissionPolicyBindingResponse,
    DeleteValidatingAdmissionPolicyRequest, DeleteValidatingAdmissionPolicyResponse,
    DeleteValidatingWebhookConfigurationRequest, DeleteValidatingWebhookConfigurationResponse,
    GetMutatingWebhookConfigurationRequest, GetValidatingAdmissionPolicyBindingRequest,
    GetValidatingAdmissionPolicyRequest, GetValidatingWebhookConfigurationRequest,
    ListMutatingWebhookConfigurationsRequest, ListValidatingAdmissionPoliciesRequest,
    ListValidatingAdmissionPolicyBindingsRequest, ListValidatingWebhookConfigurationsRequest,
    MutatingWebhookConfiguration, MutatingWebhookConfigurationList,
    MutatingWebhookConfigurationWatchEvent, UpdateMutatingWebhookConfigurationRequest,
    UpdateValidatingAdmissionPolicyBindingRequest, UpdateValidatingAdmissionPolicyRequest,
    UpdateValidatingWebhookConfigurationRequest, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingList,
    ValidatingAdmissionPolicyBindingWatchEvent, ValidatingAdmissionPolicyList,
    ValidatingAdmissionPolicyWatchEvent, ValidatingWebhookConfiguration,
    ValidatingWebhookConfigurationList, ValidatingWebhookConfigurationWatchEvent,
    WatchMutatingWebhookConfigurationsRequest, WatchValidatingAdmissionPoliciesRequest,
    WatchValidatingAdmissionPolicyBindingsRequest, WatchValidatingWebhookConfigurationsRequest,
};

use crate::grpc_service;

grpc_service!(
    kubestore_proto::admissionregistration::v1::validating_admission_policies_server::ValidatingAdmissionPolicies,
    ValidatingAdmissionPolicy,
    validating_admission_policy,
    CreateValidatingAdmissionPolicyRequest,
    GetValidatingAdmissionPolicyRequest,
    UpdateValidatingAdmissionPolicyRequest,
    DeleteValidatingAdmissionPolicyRequest,
    DeleteValidatingAdmissionPolicyResponse,
    ListValidatingAdmissionPoliciesRequest,
    ValidatingAdmissionPolicyList,
    WatchValidatingAdmissionPoliciesRequest,
    ValidatingAdmissionPolicyWatchEvent,
    DeleteCollectionValidatingAdmissionPoliciesRequest
);

grpc_service!(
    kubestore_proto::admissionregistration::v1::validating_admission_policy_bindings_server::ValidatingAdmissionPolicyBindings,
    ValidatingAdmissionPolicyBinding,
    validating_admission_policy_binding,
    CreateValidatingAdmissionPolicyBindingRequest,
    GetValidatingAdmissionPolicyBindingRequest,
    UpdateValidatingAdmissionPolicyBindingRequest,
    DeleteValidatingAdmissionPolicyBindingRequest,
    DeleteValidatingAdmissionPolicyBindingResponse,
    ListValidatingAdmissionPolicyBindingsRequest,
    ValidatingAdmissionPolicyBindingList,
    WatchValidatingAdmissionPolicyBindingsRequest,
    ValidatingAdmissionPolicyBindingWatchEvent,
    DeleteCollectionValidatingAdmissionPolicyBindingsRequest
);

grpc_service!(
    kubestore_proto::admissionregistration::v1::mutating_webhook_configurations_server::MutatingWebhookConfigurations,
    MutatingWebhookConfiguration,
    mutating_webhook_configuration,
    CreateMutatingWebhookConfigurationRequest,
    GetMutatingWebhookConfigurationRequest,
    UpdateMutatingWebhookConfigurationRequest,
    DeleteMutatingWebhookConfigurationRequest,
    DeleteMutatingWebhookConfigurationResponse,
    ListMutatingWebhookConfigurationsRequest,
    MutatingWebhookConfigurationList,
    WatchMutatingWebhookConfigurationsRequest,
    MutatingWebhookConfigurationWatchEvent,
    DeleteCollectionMutatingWebhookConfigurationsRequest
);

grpc_service!(
    kubestore_proto::admissionregistration::v1::validating_webhook_configurations_server::ValidatingWebhookConfigurations,
    ValidatingWebhookConfiguration,
    validating_webhook_configuration,
    CreateValidatingWebhookConfigurationRequest,
    GetValidatingWebhookConfigurationRequest,
    UpdateValidatingWebhookConfigurationRequest,
    DeleteValidatingWebhookConfigurationRequest,
    DeleteValidatingWebhookConfigurationResponse,
    ListValidatingWebhookConfigurationsRequest,
    ValidatingWebhookConfigurationList,
    WatchValidatingWebhookConfigurationsRequest,
    ValidatingWebhookConfigurationWatchEvent,
    DeleteCollectionValidatingWebhookConfigurationsRequest
);
