//! The typed gRPC services of the RBAC kinds (`rbac.v1.Roles`, `ClusterRoles`,
//! `RoleBindings`, `ClusterRoleBindings`): one `grpc_service!` line each, like every built-in
//! kind's (kept here so `lib.rs` stays the list of registrations).

use kubestore_proto::rbac::v1::{
    ClusterRole, ClusterRoleBinding, ClusterRoleBindingList, ClusterRoleBindingWatchEvent,
    ClusterRoleList, ClusterRoleWatchEvent, CreateClusterRoleBindingRequest,
    CreateClusterRoleRequest, CreateRoleBindingRequest, CreateRoleRequest,
    DeleteClusterRoleBindingRequest, DeleteClusterRoleBindingResponse, DeleteClusterRoleRequest,
    DeleteClusterRoleResponse, DeleteCollectionClusterRoleBindingsRequest,
    DeleteCollectionClusterRolesRequest, DeleteCollectionRoleBindingsRequest,
    DeleteCollectionRolesRequest, DeleteRoleBindingRequest, DeleteRoleBindingResponse,
    DeleteRoleRequest, DeleteRoleResponse, GetClusterRoleBindingRequest, GetClusterRoleRequest,
    GetRoleBindingRequest, GetRoleRequest, ListClusterRoleBindingsRequest, ListClusterRolesRequest,
    ListRoleBindingsRequest, ListRolesRequest, Role, RoleBinding, RoleBindingList,
    RoleBindingWatchEvent, RoleList, RoleWatchEvent, UpdateClusterRoleBindingRequest,
    UpdateClusterRoleRequest, UpdateRoleBindingRequest, UpdateRoleRequest,
    WatchClusterRoleBindingsRequest, WatchClusterRolesRequest, WatchRoleBindingsRequest,
    WatchRolesRequest,
};

use crate::grpc_service;

grpc_service!(
    kubestore_proto::rbac::v1::roles_server::Roles,
    Role,
    role,
    CreateRoleRequest,
    GetRoleRequest,
    UpdateRoleRequest,
    DeleteRoleRequest,
    DeleteRoleResponse,
    ListRolesRequest,
    RoleList,
    WatchRolesRequest,
    RoleWatchEvent,
    DeleteCollectionRolesRequest
);

grpc_service!(
    kubestore_proto::rbac::v1::cluster_roles_server::ClusterRoles,
    ClusterRole,
    cluster_role,
    CreateClusterRoleRequest,
    GetClusterRoleRequest,
    UpdateClusterRoleRequest,
    DeleteClusterRoleRequest,
    DeleteClusterRoleResponse,
    ListClusterRolesRequest,
    ClusterRoleList,
    WatchClusterRolesRequest,
    ClusterRoleWatchEvent,
    DeleteCollectionClusterRolesRequest
);

grpc_service!(
    kubestore_proto::rbac::v1::role_bindings_server::RoleBindings,
    RoleBinding,
    role_binding,
    CreateRoleBindingRequest,
    GetRoleBindingRequest,
    UpdateRoleBindingRequest,
    DeleteRoleBindingRequest,
    DeleteRoleBindingResponse,
    ListRoleBindingsRequest,
    RoleBindingList,
    WatchRoleBindingsRequest,
    RoleBindingWatchEvent,
    DeleteCollectionRoleBindingsRequest
);

grpc_service!(
    kubestore_proto::rbac::v1::cluster_role_bindings_server::ClusterRoleBindings,
    ClusterRoleBinding,
    cluster_role_binding,
    CreateClusterRoleBindingRequest,
    GetClusterRoleBindingRequest,
    UpdateClusterRoleBindingRequest,
    DeleteClusterRoleBindingRequest,
    DeleteClusterRoleBindingResponse,
    ListClusterRoleBindingsRequest,
    ClusterRoleBindingList,
    WatchClusterRoleBindingsRequest,
    ClusterRoleBindingWatchEvent,
    DeleteCollectionClusterRoleBindingsRequest
);
