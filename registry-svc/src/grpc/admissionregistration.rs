//! The typed gRPC services of the admission policy kinds
//! (`admissionregistration.v1.ValidatingAdmissionPolicies`,
//! `ValidatingAdmissionPolicyBindings`): one `grpc_service!` line each, like every built-in
//! kind's.

use kubestore_proto::admissionregistration::v1::{
    CreateValidatingAdmissionPolicyBindingRequest, CreateValidatingAdmissionPolicyRequest,
    DeleteCollectionValidatingAdmissionPoliciesRequest,
    DeleteCollectionValidatingAdmissionPolicyBindingsRequest,
    DeleteValidatingAdmissionPolicyBindingRequest, DeleteValidatingAdmissionPolicyBindingResponse,
    DeleteValidatingAdmissionPolicyRequest, DeleteValidatingAdmissionPolicyResponse,
    GetValidatingAdmissionPolicyBindingRequest, GetValidatingAdmissionPolicyRequest,
    ListValidatingAdmissionPoliciesRequest, ListValidatingAdmissionPolicyBindingsRequest,
    UpdateValidatingAdmissionPolicyBindingRequest, UpdateValidatingAdmissionPolicyRequest,
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingAdmissionPolicyBindingList, ValidatingAdmissionPolicyBindingWatchEvent,
    ValidatingAdmissionPolicyList, ValidatingAdmissionPolicyWatchEvent,
    WatchValidatingAdmissionPoliciesRequest, WatchValidatingAdmissionPolicyBindingsRequest,
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
