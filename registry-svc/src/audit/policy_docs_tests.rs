//! `audit::policy` on the Kubernetes documentation's example policy (`audit-policy.yaml`).
use super::Stage::{Panic, RequestReceived, ResponseComplete, ResponseStarted};
use super::tests::{non_resource, resource};
use super::*;

/// The example policy of the Kubernetes documentation ("Auditing", audit-policy.yaml).
pub(super) const DOCS_POLICY: &str = r#"
apiVersion: audit.k8s.io/v1 # This is required.
kind: Policy
metadata:
  name: example
# Don't generate audit events for all requests in RequestReceived stage.
omitStages:
  - "RequestReceived"
rules:
  # Log pod changes at RequestResponse level
  - level: RequestResponse
    resources:
    - group: ""
      resources: ["pods"]
  # Log "pods/log", "pods/status" at Metadata level
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]
  # Don't log requests to a configmap called "controller-leader"
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]
  # Don't log watch requests by the "system:kube-proxy" on endpoints or services
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: "" # core API group
      resources: ["endpoints", "services"]
  # Don't log authenticated requests to certain non-resource URL paths.
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs:
    - "/api*" # Wildcard matching.
    - "/version"
  # Log the request body of configmap changes in kube-system.
  - level: Request
    resources:
    - group: "" # core API group
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  # Log configmap and secret changes in all other namespaces at the Metadata level.
  - level: Metadata
    resources:
    - group: "" # core API group
      resources: ["secrets", "configmaps"]
  # Log all other resources in core and extensions at the Request level.
  - level: Request
    resources:
    - group: "" # core API group
    - group: "extensions" # Version of group should NOT be included.
  # A catch-all rule to log all other requests at the Metadata level.
  - level: Metadata
    omitStages:
      - "RequestReceived"
"#;

#[test]
fn the_documentations_example_policy() {
    let p = Policy::parse(DOCS_POLICY.as_bytes(), "audit-policy.yaml").expect("the docs' policy");
    let alice = UserInfo {
        name: "alice".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    };
    let proxy = UserInfo {
        name: "system:kube-proxy".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    };
    let level = |user: &UserInfo, attrs: Attributes| p.evaluate(user, &attrs).level;
    assert_eq!(
        level(&alice, resource("create", "", "pods", "", "default", "web")),
        Level::RequestResponse
    );
    assert_eq!(
        level(&alice, resource("get", "", "pods", "log", "default", "web")),
        Level::Metadata
    );
    assert_eq!(
        level(
            &alice,
            resource("update", "", "pods", "status", "default", "web")
        ),
        Level::Metadata
    );
    assert_eq!(
        level(
            &alice,
            resource("create", "", "pods", "exec", "default", "web")
        ),
        Level::Request,
        "the core group's rule"
    );
    assert_eq!(
        level(
            &alice,
            resource(
                "update",
                "",
                "configmaps",
                "",
                "kube-system",
                "controller-leader"
            )
        ),
        Level::None
    );
    assert_eq!(
        level(
            &alice,
            resource("update", "", "configmaps", "", "kube-system", "other")
        ),
        Level::Request
    );
    assert_eq!(
        level(
            &alice,
            resource("update", "", "configmaps", "", "default", "other")
        ),
        Level::Metadata
    );
    assert_eq!(
        level(
            &alice,
            resource("get", "", "secrets", "", "default", "token")
        ),
        Level::Metadata
    );
    assert_eq!(
        level(&proxy, resource("watch", "", "endpoints", "", "", "")),
        Level::None
    );
    assert_eq!(
        level(&proxy, resource("list", "", "endpoints", "", "", "")),
        Level::Request
    );
    assert_eq!(
        level(&alice, resource("watch", "", "services", "", "", "")),
        Level::Request
    );
    assert_eq!(level(&alice, non_resource("get", "/api/v1")), Level::None);
    assert_eq!(
        level(&alice, non_resource("get", "/apis")),
        Level::None,
        "/api* prefixes /apis"
    );
    assert_eq!(level(&alice, non_resource("get", "/version")), Level::None);
    assert_eq!(
        level(&alice, non_resource("get", "/healthz")),
        Level::Metadata
    );
    assert_eq!(
        level(&UserInfo::default(), non_resource("get", "/version")),
        Level::Metadata,
        "not authenticated"
    );
    assert_eq!(
        level(
            &alice,
            resource("get", "extensions", "ingresses", "", "default", "x")
        ),
        Level::Request
    );
    assert_eq!(
        level(
            &alice,
            resource("get", "apps", "deployments", "", "default", "x")
        ),
        Level::Metadata
    );

    let d = p.evaluate(
        &alice,
        &resource("get", "apps", "deployments", "", "default", "x"),
    );
    assert_eq!(d.omit_stages, vec![RequestReceived]);
    assert!(
        !d.emits(RequestReceived)
            && d.emits(ResponseStarted)
            && d.emits(ResponseComplete)
            && d.emits(Panic)
    );
    let d = p.evaluate(&alice, &resource("get", "", "pods", "", "default", "web"));
    assert_eq!(
        d.omit_stages,
        vec![RequestReceived],
        "the policy's stages reach every rule"
    );
    assert!(!d.omit_managed_fields);
}
