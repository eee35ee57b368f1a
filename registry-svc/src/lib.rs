//! registry-svc: typed Kubernetes-style resources on storage-svc.
//!
//! The gRPC form of upstream's generic registry `Store` (`pkg/registry/generic/registry`) and
//! `pkg/registry/rest`, with per-kind strategies. It calls storage-svc for every read and write
//! and uses storage's GuaranteedUpdate stream for every read-modify-write.
//!
//! Layers, each using only those below it (kube-apiserver's `pkg/endpoints/handlers` over
//! `rest.Storage` over the generic registry `Store` is the model):
//!
//! 1. transports: [`grpc`] (the typed services, `CustomObjects`, and `registry.v1.Resources`)
//!    and [`rest`] (Kubernetes' REST API); each reads its request, makes a [`store::Ctx`] of
//!    its deadline and calls the layer below;
//! 2. [`catalog`]: every resource as one resource-agnostic [`catalog::Endpoint`] (verbs on
//!    Kubernetes JSON, Tables, patches, discovery facts), for built-in kinds and each served
//!    version of a custom kind; the typed gRPC services skip it and call their Store directly;
//! 3. [`store`]: the generic Store, one module per verb (Get, Create, Update, Delete, List,
//!    Watch, DeleteCollection, Patch), graceful deletion and finalizers;
//!    [`selectors`] (label and field selectors); what a kind is and how
//!    it behaves: [`resource`], [`strategy`], [`kinds`] (one strategy per built-in kind),
//!    [`custom`] (kinds defined at run time: definitions, schemas, CEL, their controller);
//!    [`lifecycle`]: the NamespaceLifecycle admission rule;
//! 4. [`storage`]: the storage-svc client; [`relay`]: its watches, read eagerly into a bounded
//!    buffer; [`shared_watch`]: one storage stream for client watches of the same events.
//!
//! The request chain, before the catalog: [`authn`] (who a request is, impersonation),
//! [`authz`] (the gate every entrance asks, the access reviews), [`rbac`] (roles, bindings,
//! the bootstrap policy, escalation), [`chain`] (all of it built from the flags); [`follow`]
//! keeps a kind in memory by list and watch.
//!
//! Beside them: [`validation`], [`violations`], [`quantity`], [`names`] (ObjectMeta rules,
//! bounded field violations, Kubernetes quantities, generated names); [`error`]: API errors and
//! their gRPC codes (the REST transport maps the same errors to `Status` bodies); [`metrics`]:
//! kube-apiserver's request metrics; [`object_count`]: its `apiserver_storage_objects`;
//! [`offload`]: work that grows with a request's input, off the async workers;
//! [`fuzzing`]: entry points for the fuzz targets.
//!
//! A built-in kind is one proto message and service, one `resource!` line ([`resource`]), one
//! strategy ([`kinds`]), one `grpc_service!` line and one registration in [`run_with_listeners`]
//! (its Store, its typed service, its catalog entry); no transport has code of its own for it.

pub mod admission;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod catalog;
pub mod chain;
pub mod config;
pub mod custom;
pub mod error;
pub mod follow;
pub mod fuzzing;
pub mod grpc;
pub mod kinds;
pub mod lifecycle;
pub mod managed;
pub mod metrics;
pub mod names;
pub mod object_count;
pub mod offload;
/// Resource quantities, shared with the controllers (`kubestore_apimachinery::quantity`).
pub use kubestore_apimachinery::quantity;
pub mod rbac;
pub mod relay;
pub mod resource;
pub mod rest;
pub mod selectors;
pub mod serviceaccount;
pub mod shared_watch;
pub mod storage;
pub mod store;
pub mod strategy;
pub mod validation;
pub mod violations;
pub mod warning;

pub use config::Config;

use std::{future::Future, sync::Arc, time::Duration};

use kubestore_proto::admissionregistration::v1::{
    mutating_webhook_configurations_server::MutatingWebhookConfigurationsServer,
    validating_admission_policies_server::ValidatingAdmissionPoliciesServer,
    validating_admission_policy_bindings_server::ValidatingAdmissionPolicyBindingsServer,
    validating_webhook_configurations_server::ValidatingWebhookConfigurationsServer,
};
use kubestore_proto::apiextensions::v1::{
    custom_objects_server::CustomObjectsServer,
    custom_resource_definitions_server::CustomResourceDefinitionsServer,
};
use kubestore_proto::coordination::v1::{
    CreateLeaseRequest, DeleteCollectionLeasesRequest, DeleteLeaseRequest, DeleteLeaseResponse,
    GetLeaseRequest, Lease, LeaseList, LeaseWatchEvent, ListLeasesRequest, UpdateLeaseRequest,
    WatchLeasesRequest, leases_server::LeasesServer,
};
use kubestore_proto::core::v1::{
    ConfigMap, ConfigMapList, ConfigMapWatchEvent, CreateConfigMapRequest, CreateEventRequest,
    CreatePodRequest, DeleteCollectionConfigMapsRequest, DeleteCollectionEventsRequest,
    DeleteCollectionPodsRequest, DeleteConfigMapRequest, DeleteConfigMapResponse,
    DeleteEventRequest, DeleteEventResponse, DeletePodRequest, DeletePodResponse, Event, EventList,
    EventWatchEvent, GetConfigMapRequest, GetEventRequest, GetPodRequest, ListConfigMapsRequest,
    ListEventsRequest, ListPodsRequest, Pod, PodList, PodWatchEvent, UpdateConfigMapRequest,
    UpdateEventRequest, UpdatePodRequest, WatchConfigMapsRequest, WatchEventsRequest,
    WatchPodsRequest, config_maps_server::ConfigMapsServer, events_server::EventsServer,
    pods_server::PodsServer,
};
use kubestore_proto::core::v1::{
    CreateResourceQuotaRequest, DeleteCollectionResourceQuotasRequest, DeleteResourceQuotaRequest,
    DeleteResourceQuotaResponse, GetResourceQuotaRequest, ListResourceQuotasRequest, ResourceQuota,
    ResourceQuotaList, ResourceQuotaWatchEvent, UpdateResourceQuotaRequest,
    WatchResourceQuotasRequest, resource_quotas_server::ResourceQuotasServer,
};
use kubestore_proto::core::v1::{
    CreateSecretRequest, DeleteCollectionSecretsRequest, DeleteSecretRequest, DeleteSecretResponse,
    GetSecretRequest, ListSecretsRequest, Secret, SecretList, SecretWatchEvent,
    UpdateSecretRequest, WatchSecretsRequest, secrets_server::SecretsServer,
};
use kubestore_proto::core::v1::{
    DeleteNamespaceResponse, DeleteServiceAccountResponse, NamespaceList, NamespaceWatchEvent,
    ServiceAccountList, ServiceAccountWatchEvent, namespaces_server::NamespacesServer,
    service_accounts_server::ServiceAccountsServer,
};
use kubestore_proto::limits::REGISTRY_MAX_MESSAGE_BYTES;
use kubestore_proto::rbac::v1::{
    cluster_role_bindings_server::ClusterRoleBindingsServer,
    cluster_roles_server::ClusterRolesServer, role_bindings_server::RoleBindingsServer,
    roles_server::RolesServer,
};
use kubestore_telemetry::{
    Metrics,
    serving::{self, Serving},
    tls::{ServerTlsArgs, check_scheme},
};
use tokio::net::TcpListener;
use tonic_health::{
    ServingStatus,
    pb::{HealthCheckRequest, health_client::HealthClient},
};

use crate::{
    grpc::{passthrough::PassThrough, service::ResourceService},
    kinds::rbac::{
        ClusterRoleBindingStrategy, ClusterRoleStrategy, RoleBindingStrategy, RoleStrategy,
    },
    kinds::{
        configmap::ConfigMapStrategy, event::EventStrategy, lease::LeaseStrategy,
        namespace::NamespaceStrategy, pod::PodStrategy, secret::SecretStrategy,
        service_account::ServiceAccountStrategy,
    },
    storage::StorageClient,
    store::Store,
};

grpc_service!(
    kubestore_proto::core::v1::pods_server::Pods,
    Pod,
    pod,
    CreatePodRequest,
    GetPodRequest,
    UpdatePodRequest,
    DeletePodRequest,
    DeletePodResponse,
    ListPodsRequest,
    PodList,
    WatchPodsRequest,
    PodWatchEvent,
    DeleteCollectionPodsRequest,
    status
);
grpc_service!(
    kubestore_proto::core::v1::resource_quotas_server::ResourceQuotas,
    ResourceQuota,
    resource_quota,
    CreateResourceQuotaRequest,
    GetResourceQuotaRequest,
    UpdateResourceQuotaRequest,
    DeleteResourceQuotaRequest,
    DeleteResourceQuotaResponse,
    ListResourceQuotasRequest,
    ResourceQuotaList,
    WatchResourceQuotasRequest,
    ResourceQuotaWatchEvent,
    DeleteCollectionResourceQuotasRequest,
    status
);
grpc_service!(
    kubestore_proto::core::v1::config_maps_server::ConfigMaps,
    ConfigMap,
    config_map,
    CreateConfigMapRequest,
    GetConfigMapRequest,
    UpdateConfigMapRequest,
    DeleteConfigMapRequest,
    DeleteConfigMapResponse,
    ListConfigMapsRequest,
    ConfigMapList,
    WatchConfigMapsRequest,
    ConfigMapWatchEvent,
    DeleteCollectionConfigMapsRequest
);
grpc_service!(
    kubestore_proto::core::v1::events_server::Events,
    Event,
    event,
    CreateEventRequest,
    GetEventRequest,
    UpdateEventRequest,
    DeleteEventRequest,
    DeleteEventResponse,
    ListEventsRequest,
    EventList,
    WatchEventsRequest,
    EventWatchEvent,
    DeleteCollectionEventsRequest
);
grpc_service!(
    kubestore_proto::core::v1::secrets_server::Secrets,
    Secret,
    secret,
    CreateSecretRequest,
    GetSecretRequest,
    UpdateSecretRequest,
    DeleteSecretRequest,
    DeleteSecretResponse,
    ListSecretsRequest,
    SecretList,
    WatchSecretsRequest,
    SecretWatchEvent,
    DeleteCollectionSecretsRequest
);

grpc_service!(
    kubestore_proto::core::v1::service_accounts_server::ServiceAccounts,
    kubestore_proto::core::v1::ServiceAccount,
    service_account,
    kubestore_proto::core::v1::CreateServiceAccountRequest,
    kubestore_proto::core::v1::GetServiceAccountRequest,
    kubestore_proto::core::v1::UpdateServiceAccountRequest,
    kubestore_proto::core::v1::DeleteServiceAccountRequest,
    DeleteServiceAccountResponse,
    kubestore_proto::core::v1::ListServiceAccountsRequest,
    ServiceAccountList,
    kubestore_proto::core::v1::WatchServiceAccountsRequest,
    ServiceAccountWatchEvent,
    kubestore_proto::core::v1::DeleteCollectionServiceAccountsRequest
);

grpc_service!(
    kubestore_proto::core::v1::namespaces_server::Namespaces,
    kubestore_proto::core::v1::Namespace,
    namespace_object,
    kubestore_proto::core::v1::CreateNamespaceRequest,
    kubestore_proto::core::v1::GetNamespaceRequest,
    kubestore_proto::core::v1::UpdateNamespaceRequest,
    kubestore_proto::core::v1::DeleteNamespaceRequest,
    DeleteNamespaceResponse,
    kubestore_proto::core::v1::ListNamespacesRequest,
    NamespaceList,
    kubestore_proto::core::v1::WatchNamespacesRequest,
    NamespaceWatchEvent,
    kubestore_proto::core::v1::DeleteCollectionNamespacesRequest,
    status,
    finalize = finalize
);

grpc_service!(
    kubestore_proto::coordination::v1::leases_server::Leases,
    Lease,
    lease,
    CreateLeaseRequest,
    GetLeaseRequest,
    UpdateLeaseRequest,
    DeleteLeaseRequest,
    DeleteLeaseResponse,
    ListLeasesRequest,
    LeaseList,
    WatchLeasesRequest,
    LeaseWatchEvent,
    DeleteCollectionLeasesRequest
);

/// Errors that stop the service.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The storage address is not a valid URL.
    #[error("invalid --storage-addr: {0}")]
    StorageAddr(tonic::transport::Error),
    /// The reflection service could not be built.
    #[error("cannot build gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// Flags or files that cannot be used (TLS, tokens, keys, audit): the message names the flag.
    #[error("{0}")]
    Tls(String),
    /// A listener could not be bound.
    #[error("cannot bind: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs registry-svc on `listener` until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let metrics_listener =
        match config.metrics_addr {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("--metrics-addr {addr}: {e}"))
            })?),
            None => None,
        };
    run_with_metrics(listener, metrics_listener, config, shutdown).await
}

/// [`run`], with the metrics endpoint on an already bound listener.
pub async fn run_with_metrics(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let kube_api =
        match config.kube_api_addr {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("--kube-api-addr {addr}: {e}"))
            })?),
            None => None,
        };
    run_with_listeners(listener, metrics_listener, kube_api, config, shutdown).await
}

/// Registers built-in kinds: each kind's Store in the catalog (every transport but the typed
/// gRPC services reaches it there) and among the kinds `apiserver_storage_objects` counts.
struct Builtin<'a> {
    catalog: &'a catalog::Catalog,
    codec: &'a Arc<kubestore_apimachinery::json::Codec>,
    counted: Vec<object_count::Counted>,
}

impl Builtin<'_> {
    /// Registers `store`'s kind; returns the store, for its typed service.
    fn kind<R: resource::Resource>(&mut self, store: Store<R>) -> Store<R> {
        catalog::builtin::register(self.catalog, self.codec, &store);
        self.counted.push(object_count::Counted::of(store.names()));
        store
    }

    /// Serves `store`'s kind in version `V` too (events.k8s.io/v1's Event): a Store of its own
    /// over the same objects, whose `strategy` judges writes made in `V` (upstream's strategy
    /// asks the request's group version); its errors name `V`'s group. Not counted again: the
    /// objects are the same.
    fn version<R: resource::Resource, V: catalog::builtin::Version<R>>(
        &mut self,
        store: &Store<R>,
        strategy: impl strategy::Strategy<R>,
    ) {
        let stored = store.names();
        let names = store::Names {
            group: V::GROUP.into(),
            version: V::VERSION.into(),
            resource: format!("{}.{}", stored.plural, V::GROUP),
            ..stored.clone()
        };
        let served = Store::with_names(store.storage.clone(), Arc::new(strategy), names);
        catalog::builtin::register_version::<R, V>(self.catalog, self.codec, &served);
    }
}

/// [`run`], with every endpoint on an already bound listener: the metrics endpoint's and the
/// REST API's (`--kube-api-addr`), when given.
pub async fn run_with_listeners(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    kube_api_listener: Option<TcpListener>,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    // TLS mistakes are reported before anything starts, naming the flag and the file.
    let tls_error = |e: kubestore_telemetry::tls::TlsError| RunError::Tls(e.to_string());
    let storage_tls = config.storage_tls().config().map_err(tls_error)?;
    for addr in config.storage_addr.split(',').map(str::trim) {
        check_scheme("--storage-addr", addr, storage_tls.is_some()).map_err(tls_error)?;
    }
    config.tls.config().map_err(tls_error)?;
    let metrics = Metrics::new();
    let mut storage = StorageClient::connect_lazy(&config.storage_addr, storage_tls)
        .map_err(RunError::StorageAddr)?;
    // Admission's configuration, read before anything starts (a mistake names the flag).
    let admission = config.admission.settings().map_err(RunError::Tls)?;
    storage.admission = Arc::new(admission::Admission::new(Arc::default(), &admission));
    storage.register_metrics(&metrics);
    storage.admission.metrics.register(&metrics);

    let serving = Serving::start(
        &[kubestore_proto::CORE_DESCRIPTOR_SET],
        metrics,
        metrics_listener,
        shutdown,
    )
    .await;
    // SERVING only while some storage-svc replica says it is.
    let replica_health = storage.check_health();
    let poller = {
        let storage = storage.clone();
        serving.follow("storage-svc", move || {
            let storage = storage.clone();
            async move { storage.any_healthy() }
        })
    };
    // Writes can succeed while storage-svc says so.
    let writes = {
        let storage = storage.clone();
        serving.follow_writes(move || {
            let mut client = HealthClient::new(storage.channel());
            async move {
                let mut req = tonic::Request::new(HealthCheckRequest {
                    service: serving::WRITES.into(),
                });
                req.set_timeout(Duration::from_secs(2));
                match client.check(req).await {
                    Ok(r) if r.get_ref().status() == ServingStatus::Serving.into() => Ok(()),
                    Ok(_) => Err("storage-svc says writes cannot succeed".into()),
                    Err(s) => Err(format!("storage-svc did not answer: {}", s.message())),
                }
            }
        })
    };
    let (reflection_v1, reflection_v1alpha) = serving.reflection()?;
    tracing::info!(addr = ?listener.local_addr().ok(), storage = %config.storage_addr, "registry-svc serving");
    let stop = serving.stop_signal();
    // A kind's service: its generated server over its Store, with the message limit, and
    // List and Watch passed through without decoding (`passthrough`).
    macro_rules! serve {
        ($server:ident, $store:expr) => {{
            let store = $store;
            PassThrough::new(
                $server::new(ResourceService::new(store.clone(), stop.clone()))
                    .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES),
                store,
                stop.clone(),
            )
        }};
    }
    // Custom kinds: the definitions followed, their controller, both services.
    let custom = custom::start(&storage, stop.clone());
    custom.kinds.register_metrics(&serving.metrics);
    // The built-in kinds: one registration line each (its Store, in the catalog and counted),
    // and one `serve!` line below (its typed gRPC service).
    let codec = catalog::codec();
    let catalog = catalog::Catalog::new();
    let mut builtin = Builtin {
        catalog: &catalog,
        codec: &codec,
        counted: Vec::new(),
    };
    let pods = builtin.kind(Store::new(storage.clone(), PodStrategy));
    let config_maps = builtin.kind(Store::new(storage.clone(), ConfigMapStrategy));
    let events = builtin.kind(Store::new(
        storage.clone(),
        EventStrategy::core(config.event_ttl),
    ));
    builtin.version::<_, kinds::event_v1::EventsV1>(
        &events,
        EventStrategy::events_v1(config.event_ttl),
    );
    let secrets = builtin.kind(Store::new(storage.clone(), SecretStrategy));
    let leases = builtin.kind(Store::new(storage.clone(), LeaseStrategy));
    let service_accounts = builtin.kind(Store::new(storage.clone(), ServiceAccountStrategy));
    let namespaces = builtin.kind(Store::new(storage.clone(), NamespaceStrategy));
    let definitions = builtin.kind(custom.definitions.clone());
    // The RBAC kinds check escalation with the RBAC authorizer, started below.
    let guard = Arc::new(rbac::escalation::Guard::default());
    let roles = builtin.kind(Store::new(storage.clone(), RoleStrategy(guard.clone())));
    let cluster_roles = builtin.kind(Store::new(
        storage.clone(),
        ClusterRoleStrategy(guard.clone()),
    ));
    let role_bindings = builtin.kind(Store::new(
        storage.clone(),
        RoleBindingStrategy(guard.clone()),
    ));
    let cluster_role_bindings = builtin.kind(Store::new(
        storage.clone(),
        ClusterRoleBindingStrategy(guard.clone()),
    ));
    let policies = builtin.kind(Store::new(
        storage.clone(),
        kinds::admission_policy::PolicyStrategy,
    ));
    let policy_bindings = builtin.kind(Store::new(
        storage.clone(),
        kinds::admission_policy::BindingStrategy,
    ));
    let mutating_webhooks = builtin.kind(Store::new(
        storage.clone(),
        kinds::webhook::MutatingStrategy,
    ));
    let validating_webhooks = builtin.kind(Store::new(
        storage.clone(),
        kinds::webhook::ValidatingStrategy,
    ));
    let quotas = builtin.kind(Store::new(
        storage.clone(),
        kinds::resource_quota::ResourceQuotaStrategy,
    ));
    let counted = builtin.counted;
    tokio::spawn(kinds::namespace::ensure_system_namespaces(
        namespaces.clone(),
        stop.clone(),
    ));
    tokio::spawn(kinds::namespace::follow(namespaces.clone(), stop.clone()));
    object_count::register(
        &serving.metrics,
        storage.clone(),
        counted,
        custom.kinds.clone(),
        config.storage_objects_period,
    );
    // The custom kinds' endpoints, each served version as its definition says.
    catalog.add_provider(Arc::new(catalog::custom::CustomProvider::new(
        custom.clone(),
    )));
    // Admission policies: followed into admission, their parameters read through the catalog.
    policies
        .storage
        .admission
        .policies
        .params
        .start(catalog.clone(), stop.clone());
    // Quotas: followed into admission, charged through their Store.
    quotas
        .storage
        .admission
        .quotas
        .start(Arc::new(kinds::resource_quota::Charger(quotas.clone())));
    tokio::spawn(kinds::resource_quota::follow(quotas.clone(), stop.clone()));
    // PodSecurity: a namespace's Pods, read when its enforce label gets stricter.
    pods.storage
        .admission
        .start_pods(Arc::new(kinds::pod::NamespacePods(pods.clone())));
    tokio::spawn(kinds::webhook::follow(
        mutating_webhooks.clone(),
        validating_webhooks.clone(),
        stop.clone(),
    ));
    tokio::spawn(kinds::admission_policy::follow(
        policies.clone(),
        policy_bindings.clone(),
        stop.clone(),
    ));
    tokio::spawn(kinds::admission_policy_status::run(
        policies.clone(),
        policies.storage.admission.policies.clone(),
        catalog.clone(),
        stop.clone(),
    ));
    let generic = grpc::generic::GenericService::new(catalog.clone(), stop.clone());
    // Who a request is and what it may do (RBAC follows its four kinds when asked for).
    let stores = rbac::Stores {
        roles: roles.clone(),
        cluster_roles: cluster_roles.clone(),
        role_bindings: role_bindings.clone(),
        cluster_role_bindings: cluster_role_bindings.clone(),
    };
    let accounts = serviceaccount::Getter {
        service_accounts: service_accounts.clone(),
        pods: pods.clone(),
        secrets: secrets.clone(),
    };
    let chain::Chain {
        authenticator,
        gate,
        open,
        token_issuer,
    } = chain::build(&config, stores, accounts, &guard, stop.clone()).map_err(RunError::Tls)?;
    pods.storage.admission.start_gate(gate.clone());
    // What is only ever created: the reviews, and tokens when this server issues them.
    for review in catalog::create_only::CreateOnly::reviews() {
        catalog.add_create_only(review);
    }
    if let Some(issuer) = &token_issuer {
        catalog.add_create_only(catalog::create_only::CreateOnly::token(issuer.clone()));
    }
    let auditor = config
        .audit
        .build(&serving.metrics)
        .map_err(RunError::Tls)?;
    // With tokens or anonymous requests, a client certificate is optional at the handshake:
    // a client may present either, or nothing (upstream's serving options).
    let grpc_tls = ServerTlsArgs {
        client_auth_optional: authenticator.takes_tokens() || authenticator.anonymous,
        ..config.tls.clone()
    };
    let server = serving
        .server(
            config.max_requests_inflight,
            grpc::service::REQUEST_TIMEOUTS,
            error::DOMAIN,
            &grpc_tls,
            Vec::new(),
        )
        .map_err(|e| RunError::Tls(e.to_string()))?
        .layer(
            grpc::identify::IdentifyLayer::new(
                authenticator.clone(),
                open,
                gate.clone(),
                error::DOMAIN,
            )
            .audited(auditor.clone()),
        )
        .add_service(serving.health_service())
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(serve!(PodsServer, pods))
        .add_service(serve!(ConfigMapsServer, config_maps))
        .add_service(serve!(EventsServer, events))
        .add_service(serve!(SecretsServer, secrets))
        .add_service(serve!(ResourceQuotasServer, quotas))
        .add_service(serve!(LeasesServer, leases))
        .add_service(serve!(ServiceAccountsServer, service_accounts.clone()))
        .add_service(serve!(NamespacesServer, namespaces.clone()))
        .add_service(serve!(RolesServer, roles))
        .add_service(serve!(ClusterRolesServer, cluster_roles))
        .add_service(serve!(RoleBindingsServer, role_bindings))
        .add_service(serve!(ClusterRoleBindingsServer, cluster_role_bindings))
        .add_service(serve!(
            MutatingWebhookConfigurationsServer,
            mutating_webhooks
        ))
        .add_service(serve!(
            ValidatingWebhookConfigurationsServer,
            validating_webhooks
        ))
        .add_service(serve!(ValidatingAdmissionPoliciesServer, policies))
        .add_service(serve!(
            ValidatingAdmissionPolicyBindingsServer,
            policy_bindings
        ))
        .add_service(
            kubestore_proto::registry::v1::resources_server::ResourcesServer::new(generic.clone())
                .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES),
        )
        .add_service(
            CustomResourceDefinitionsServer::new(ResourceService::new(definitions, stop.clone()))
                .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES),
        )
        .add_service(grpc::custom_passthrough::ObjectsPassThrough::new(
            CustomObjectsServer::new(grpc::custom::CustomObjectsAlias::new(
                custom.clone(),
                generic,
            ))
            .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES),
            custom,
        ))
        .serve_with_incoming_shutdown(serving::incoming(listener), serving.drained());
    let rest_server = match kube_api_listener {
        Some(l) => {
            let tls = rest::tls::config(&config.tls).map_err(RunError::Tls)?;
            let rest = Arc::new(rest::Rest {
                catalog: catalog.clone(),
                stop: stop.clone(),
                inflight: serving.inflight(),
                serving: serving.serving_flag(),
                authn: authenticator.clone(),
                gate: gate.clone(),
                open,
                auditor,
                openapi: rest::openapi::OpenApi::new(codec.clone()),
                max_connections_per_client: config.kube_api_max_connections_per_client,
                idle_timeout: config.kube_api_idle_timeout,
            });
            tracing::info!(addr = ?l.local_addr().ok(), tls = tls.is_some(), "Kubernetes REST API serving");
            Some(tokio::spawn(rest::serve(
                l,
                rest,
                tls,
                serving.stopped(),
                config.shutdown_timeout,
            )))
        }
        None => None,
    };
    let result = serving.drain(server, config.shutdown_timeout).await;
    if let Some(r) = rest_server {
        let _ = r.await;
    }
    poller.abort();
    writes.abort();
    replica_health.abort();
    tracing::info!("registry-svc stopped");
    Ok(result?)
}
