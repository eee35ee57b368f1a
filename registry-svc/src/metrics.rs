//! kube-apiserver's request metrics, under its names and labels, so that dashboards and alerts
//! written for Kubernetes read registry-svc as they read an apiserver:
//!
//! - `apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`
//! - `apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,component}`
//!   (not WATCH: a watch lasts as long as its client wants)
//! - `apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,component}`
//!   (watches open now)
//! - `apiserver_storage_objects{resource}`: objects stored per resource (`pods`,
//!   `crontabs.stable.example.com`), counted every `--storage-objects-period` (upstream: every
//!   minute) by `object_count`; -1 when the count failed, as upstream.
//!
//! As upstream: `verb` is the HTTP method the REST call would use (`POST` create, `GET`,
//! `LIST`, `WATCH`, `PUT` update, `DELETE`, also for DeleteCollection); `code` the HTTP status
//! it would answer (201 for a create, 200, 404, 409, 422, ...); `scope` `resource` for one
//! named object or a create, `namespace` for a collection in a namespace, `cluster` across
//! namespaces; `component` `apiserver`. Recorded for the clients' calls of every transport
//! (`Store::request`), so a DeleteCollection is one DELETE and the registry's own reads (the
//! definitions controller) are not client requests; a REST request refused before its verb
//! runs (a body that does not decode: 400, 413, 415) is counted too (`Store::refused`), as
//! upstream's instrumentation wraps the whole handler.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
};

use kubestore_telemetry::metrics::{LatencyFamily, latency_family};

use crate::error::ApiError;

/// What a request was, in upstream's terms.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Verb {
    /// Create (`POST`).
    Create,
    /// Get (`GET`).
    Get,
    /// List (`LIST`).
    List,
    /// Watch (`WATCH`).
    Watch,
    /// Update (`PUT`).
    Update,
    /// UpdateStatus (`PUT`, subresource `status`).
    UpdateStatus,
    /// Patch (`PATCH`).
    Patch,
    /// Patch of the status subresource (`PATCH`, subresource `status`).
    PatchStatus,
    /// A Namespace's finalize (`PUT`, subresource `finalize`).
    UpdateFinalize,
    /// Delete (`DELETE`).
    Delete,
    /// DeleteCollection (`DELETE` on a collection).
    DeleteCollection,
}

impl Verb {
    fn label(self) -> &'static str {
        match self {
            Self::Create => "POST",
            Self::Get => "GET",
            Self::List => "LIST",
            Self::Watch => "WATCH",
            Self::Update | Self::UpdateStatus | Self::UpdateFinalize => "PUT",
            Self::Patch | Self::PatchStatus => "PATCH",
            Self::Delete | Self::DeleteCollection => "DELETE",
        }
    }

    /// The subresource the verb works on ("" for the object).
    pub fn subresource(self) -> &'static str {
        match self {
            Self::UpdateStatus | Self::PatchStatus => "status",
            Self::UpdateFinalize => "finalize",
            _ => "",
        }
    }

    /// Upstream's authorization verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete`, `deletecollection`).
    pub fn authz_verb(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Update | Self::UpdateStatus | Self::UpdateFinalize => "update",
            Self::Patch | Self::PatchStatus => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }

    fn collection(self) -> bool {
        matches!(self, Self::List | Self::Watch | Self::DeleteCollection)
    }
}

/// The labels every series shares.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `POST`, `GET`, `LIST`, `WATCH`, `PUT`, `DELETE`.
    pub verb: String,
    /// `All` for a dry run, else empty (upstream's values).
    pub dry_run: String,
    /// API group ("" for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// `status` for UpdateStatus, else empty.
    pub subresource: String,
    /// `resource`, `namespace` or `cluster`.
    pub scope: String,
    /// Always `apiserver`.
    pub component: String,
}

/// [`RequestLabels`] and the HTTP status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabels {
    #[prometheus(flatten)]
    /// The request.
    pub request: RequestLabels,
    /// HTTP status code, e.g. `200`.
    pub code: String,
}

/// `apiserver_storage_objects`' label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    /// `pods`, `leases.coordination.k8s.io`, `crontabs.stable.example.com`.
    pub resource: String,
}

/// What tells one kind's request series from another's: the labels that are not the kind's.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct SeriesKey {
    verb: Verb,
    dry_run: bool,
    /// `scope` is `cluster` (only collections tell it from `namespace`).
    cluster: bool,
    code: u16,
}

/// One kind's request series, each resolved from its families once (per verb, dry run, scope
/// and code: a few dozen at most) and then counted through its handle. Building the nine labels
/// and finding them in the families on every request cost ~1.6 µs of a ~140 µs Get (two hashes
/// of nine strings, ten allocations; BENCHMARKS.md, "Release over release"); a handle costs one
/// lookup of a small key. Each Store holds its kind's; it dies with the Store (a removed custom
/// kind's handles with it).
#[derive(Clone, Default)]
pub struct Series(Arc<Mutex<HashMap<SeriesKey, Handles>>>);

/// One series' duration histogram (none for WATCH) and request counter.
type Handles = (Option<Histogram>, Counter);

/// The families; cheap to clone.
#[derive(Clone)]
pub struct ApiMetrics {
    requests: Family<CodeLabels, Counter>,
    duration: LatencyFamily<RequestLabels>,
    longrunning: Family<RequestLabels, Gauge>,
    objects: Family<ObjectLabels, Gauge>,
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            duration: latency_family(),
            longrunning: Family::default(),
            objects: Family::default(),
        }
    }
}

impl ApiMetrics {
    /// Registers the families in `metrics`.
    pub fn register(&self, metrics: &kubestore_telemetry::Metrics) {
        metrics.register(
            "apiserver_request",
            "Requests, by verb, dry run, group, version, resource, subresource, scope, component and HTTP code",
            self.requests.clone(),
        );
        metrics.register(
            "apiserver_request_duration_seconds",
            "Request latency in seconds, by verb, dry run, group, version, resource, subresource, scope and component (not WATCH)",
            self.duration.clone(),
        );
        metrics.register(
            "apiserver_storage_objects",
            "Objects stored, by resource (-1: the last count failed)",
            self.objects.clone(),
        );
        metrics.register(
            "apiserver_longrunning_requests",
            "Long-running requests (watches) open now, by verb, group, version, resource, subresource, scope and component",
            self.longrunning.clone(),
        );
    }

    /// The labels of a `verb` on `names` in `namespace` ("" = none or all).
    pub fn labels(
        verb: Verb,
        names: &crate::resource::Names,
        namespace: &str,
        dry_run: bool,
    ) -> RequestLabels {
        let scope = if !verb.collection() {
            "resource"
        } else if namespace.is_empty() {
            "cluster"
        } else {
            "namespace"
        };
        RequestLabels {
            verb: verb.label().into(),
            dry_run: if dry_run { "All".into() } else { String::new() },
            group: names.group.clone(),
            version: names.version.clone(),
            resource: names.plural.clone(),
            subresource: verb.subresource().into(),
            scope: scope.into(),
            component: "apiserver".into(),
        }
    }

    /// The HTTP code a request of `verb` that ended with `result` answers (upstream's label).
    pub fn code<T>(verb: Verb, result: &Result<T, ApiError>) -> u16 {
        match result {
            Ok(_) if verb == Verb::Create => 201,
            Ok(_) => 200,
            Err(e) => e.http_code(),
        }
    }

    /// Records a request of `verb` on `names` in `namespace` that answered `code` after
    /// starting at `start`, through `series` (the caller's kind's handles).
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &self,
        series: &Series,
        verb: Verb,
        names: &crate::resource::Names,
        namespace: &str,
        dry_run: bool,
        start: Instant,
        code: u16,
    ) {
        let key = SeriesKey {
            verb,
            dry_run,
            cluster: namespace.is_empty(),
            code,
        };
        let elapsed = start.elapsed().as_secs_f64();
        let Ok(mut handles) = series.0.lock() else {
            return;
        };
        let (duration, requests) = handles.entry(key).or_insert_with(|| {
            let labels = Self::labels(verb, names, namespace, dry_run);
            let duration =
                (verb != Verb::Watch).then(|| self.duration.get_or_create(&labels).clone());
            let requests = self
                .requests
                .get_or_create(&CodeLabels {
                    request: labels,
                    code: code.to_string(),
                })
                .clone();
            (duration, requests)
        });
        if let Some(h) = duration {
            h.observe(elapsed);
        }
        requests.inc();
    }

    /// Sets `apiserver_storage_objects{resource}`.
    pub fn set_objects(&self, resource: &str, count: i64) {
        self.objects
            .get_or_create(&ObjectLabels {
                resource: resource.into(),
            })
            .set(count);
    }

    /// Forgets `resource`'s count (a custom kind no longer served).
    pub fn forget_objects(&self, resource: &str) {
        self.objects.remove(&ObjectLabels {
            resource: resource.into(),
        });
    }

    /// Counts a watch as open until the returned guard is dropped.
    pub fn open(&self, labels: RequestLabels) -> Longrunning {
        let gauge = self.longrunning.get_or_create(&labels).clone();
        gauge.inc();
        Longrunning(gauge)
    }
}

/// An open long-running request; see [`ApiMetrics::open`].
pub struct Longrunning(Gauge);

impl Drop for Longrunning {
    fn drop(&mut self) {
        self.0.dec();
    }
}
