//! ValidatingAdmissionPolicy (issue 33): upstream's documented examples, on ConfigMaps (the
//! docs use Deployments, which kubestore does not serve): a policy and a binding with a
//! namespace selector deny in upstream's words (REST 422 `Invalid` with the message as its
//! one cause; kubectl 1.33 and 1.37 print `The configmaps "x" is invalid: : ...`; gRPC
//! INVALID_ARGUMENT with the same message); Warn and Audit actions; parameters from a custom
//! kind and from ConfigMaps chosen by a selector; `parameterNotFoundAction` under both failure
//! policies; matchConditions, variables, messageExpression and reason; DELETE with
//! `oldObject`; the official Python client's models and its ApiException. Policies take effect
//! without a restart, within the watch's delay.

use std::time::Duration;

use kubestore_proto::{
    admissionregistration::v1::{
        CreateValidatingAdmissionPolicyRequest, ValidatingAdmissionPolicy,
        validating_admission_policies_client::ValidatingAdmissionPoliciesClient,
    },
    registry::v1::{CreateRequest, ResourceRef, resources_client::ResourcesClient},
};
use kubestore_tests::{
    kube::{KubeCluster, Kubectl, audit_events},
    rest::{JSON, Reply, assert_status, call, wait_until},
};
use serde_json::{Value, json};

async fn post(c: &KubeCluster, path: &str, body: &Value) -> Reply {
    call(c.api, "POST", path, &[JSON], body.to_string().as_bytes()).await
}

async fn namespace(c: &KubeCluster, name: &str, labels: Value) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels}});
    post(c, "/api/v1/namespaces", &ns).await.is(201);
}

/// Defines upstream's ReplicaLimit parameter kind (`rules.example.com/v1`, `maxReplicas`) and
/// waits until it is served.
async fn replica_limits(c: &KubeCluster) {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "replicalimits.rules.example.com"},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": "replicalimits", "singular": "replicalimit", "kind": "ReplicaLimit"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object",
                         "properties": {"maxReplicas": {"type": "integer"}}}}}]}});
    post(
        c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await
    .is(201);
    wait_until(Duration::from_secs(10), "the kind is served", || async {
        call(
            c.api,
            "GET",
            "/apis/rules.example.com/v1/replicalimits",
            &[],
            b"",
        )
        .await
        .code
            == 200
    })
    .await;
}

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

fn config_map(name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> =
        (0..keys).map(|i| (format!("k{i}"), json!("v"))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

async fn create_cm(c: &KubeCluster, ns: &str, cm: &Value, dry_run: bool) -> Reply {
    let q = if dry_run { "?dryRun=All" } else { "" };
    post(c, &format!("/api/v1/namespaces/{ns}/configmaps{q}"), cm).await
}

/// Waits until a dry-run create of `cm` in `ns` is answered `code` (a policy's change reached
/// admission).
async fn answered(c: &KubeCluster, ns: &str, cm: &Value, code: u16) {
    wait_until(
        Duration::from_secs(10),
        "the policy takes effect",
        || async { create_cm(c, ns, cm, true).await.code == code },
    )
    .await;
}

const RULE: &str = "!has(object.data) || size(object.data) <= 2";

/// The official Python client: AdmissionregistrationV1Api's models, and a refused delete.
const PYTHON: &str = r#"
import json
from kubernetes import client, config
config.load_kube_config()
adm = client.AdmissionregistrationV1Api()
rules = [client.V1NamedRuleWithOperations(api_groups=[""], api_versions=["v1"],
                                          operations=["UPDATE"], resources=["configmaps"])]
p = adm.create_validating_admission_policy(client.V1ValidatingAdmissionPolicy(
    metadata=client.V1ObjectMeta(name="python-policy"),
    spec=client.V1ValidatingAdmissionPolicySpec(
        match_constraints=client.V1MatchResources(resource_rules=rules),
        validations=[client.V1Validation(expression="true")])))
got = adm.read_validating_admission_policy("python-policy")
print("policy", got.metadata.name, got.spec.failure_policy, got.metadata.generation,
      got.spec.match_constraints.resource_rules[0].resources)
b = adm.create_validating_admission_policy_binding(client.V1ValidatingAdmissionPolicyBinding(
    metadata=client.V1ObjectMeta(name="python-binding"),
    spec=client.V1ValidatingAdmissionPolicyBindingSpec(policy_name="python-policy",
                                                      validation_actions=["Deny", "Audit"])))
print("binding", b.metadata.name, b.spec.policy_name, b.spec.validation_actions)
try:
    client.CoreV1Api().delete_namespaced_config_map("keep", "default")
    print("deleted")
except client.ApiException as e:
    body = json.loads(e.body)
    print("refused", e.status, body["reason"], body["message"])
"#;

/// Upstream's "demo-policy.example.com", on ConfigMaps.
fn demo_policy() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "demo-policy.example.com"},
           "spec": {"failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
                    "validations": [{"expression": RULE}]}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_policy_denies_warns_and_audits_in_upstreams_words() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("audit.log");
    let c = KubeCluster::audited(dir.path(), &log, &["configmaps"]).await;
    namespace(&c, "test", json!({"environment": "test"})).await;
    namespace(&c, "prod", json!({"environment": "prod"})).await;
    // The policy through the typed gRPC API, with upstream's defaults filled in.
    let mut typed = ValidatingAdmissionPoliciesClient::connect(c.registry_url())
        .await
        .expect("connect");
    let policy: ValidatingAdmissionPolicy =
        serde_json::from_value(demo_policy()).expect("the proto's JSON form");
    let created = typed
        .create(CreateValidatingAdmissionPolicyRequest {
            namespace: String::new(),
            validating_admission_policy: Some(policy),
            dry_run: false,
        })
        .await
        .expect("create the policy")
        .into_inner();
    let spec = created.spec.expect("spec");
    let constraints = spec.match_constraints.expect("matchConstraints");
    assert_eq!(constraints.match_policy.as_deref(), Some("Equivalent"));
    assert_eq!(constraints.resource_rules[0].scope.as_deref(), Some("*"));
    assert_eq!(created.metadata.expect("metadata").generation, 1);
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "demo-binding-test.example.com"},
        "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}}}});
    post(&c, BINDINGS, &binding).await.is(201);
    answered(&c, "test", &config_map("probe", 3), 422).await;

    // REST: 422 Invalid; the message as NewForbidden words it, the reason alone as the cause.
    let why = format!(
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: {RULE}"
    );
    let r = create_cm(&c, "test", &config_map("big", 3), false).await;
    let status = assert_status(&r, 422, "Invalid");
    assert_eq!(
        status["message"],
        format!("configmaps \"big\" is forbidden: {why}")
    );
    assert_eq!(status["details"]["causes"], json!([{"message": why}]));
    let got = call(
        c.api,
        "GET",
        "/api/v1/namespaces/test/configmaps/big",
        &[],
        b"",
    )
    .await;
    assert_eq!(got.code, 404, "a denied object is not stored");
    // What passes, and what the selector leaves out, is created.
    create_cm(&c, "test", &config_map("small", 2), false)
        .await
        .is(201);
    create_cm(&c, "prod", &config_map("big", 3), false)
        .await
        .is(201);
    // An update is checked as well.
    let put = call(
        c.api,
        "PUT",
        "/api/v1/namespaces/test/configmaps/small",
        &[JSON],
        config_map("small", 4).to_string().as_bytes(),
    )
    .await;
    assert_status(&put, 422, "Invalid");

    // kubectl prints it as upstream's documentation shows.
    for (v, name) in [(Kubectl::V1_33, "k133"), (Kubectl::V1_37, "k137")] {
        let manifest = c.file("cm.json", &config_map(name, 3).to_string());
        let out = c
            .kubectl(
                v,
                &[
                    "create",
                    "-n",
                    "test",
                    "-f",
                    manifest.to_str().expect("path"),
                ],
            )
            .run()
            .fails();
        assert!(
            out.err()
                .contains(&format!("The configmaps \"{name}\" is invalid: : {why}")),
            "{out}"
        );
    }

    // The generic gRPC API: the same words, INVALID_ARGUMENT.
    let mut g = ResourcesClient::connect(c.registry_url())
        .await
        .expect("connect");
    let e = g
        .create(CreateRequest {
            resource: Some(ResourceRef {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
            }),
            namespace: "test".into(),
            json: config_map("grpc", 3).to_string(),
            ..Default::default()
        })
        .await
        .expect_err("denied");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        e.message(),
        format!("configmaps \"grpc\" is forbidden: {why}")
    );

    // Warn and Audit: created, with upstream's warning and audit annotation.
    let warn = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "demo-binding-prod"},
        "spec": {"policyName": "demo-policy.example.com", "validationActions": ["Warn", "Audit"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "prod"}}}}});
    post(&c, BINDINGS, &warn).await.is(201);
    wait_until(Duration::from_secs(10), "the warning", || async {
        !create_cm(&c, "prod", &config_map("probe", 3), true)
            .await
            .headers("warning")
            .is_empty()
    })
    .await;
    let r = create_cm(&c, "prod", &config_map("warned", 3), false)
        .await
        .is(201);
    let warning = format!(
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-prod': failed expression: {RULE}\""
    );
    assert_eq!(r.headers("warning"), vec![warning.as_str()], "{}", r.head);
    wait_until(Duration::from_secs(10), "the audit annotation", || async {
        audit_events(&log).iter().any(|e| {
            e["objectRef"]["name"] == "warned"
                && e["verb"] == "create"
                && e["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
                    .as_str()
                    .and_then(|v| serde_json::from_str::<Value>(v).ok())
                    == Some(json!([{
                        "message": format!("failed expression: {RULE}"),
                        "policy": "demo-policy.example.com",
                        "binding": "demo-binding-prod",
                        "expressionIndex": 0,
                        "validationActions": ["Warn", "Audit"],
                    }]))
        })
    })
    .await;

    // Upstream's metric of policy decisions.
    let metrics = kubestore_tests::services::scrape(
        c.cluster.registry.as_ref().expect("registry").metrics_addr,
    )
    .await;
    for line in [
        r#"apiserver_validating_admission_policy_check_total{policy="demo-policy.example.com",policy_binding="demo-binding-test.example.com",error_type="no_error",enforcement_action="deny"}"#,
        r#"apiserver_validating_admission_policy_check_total{policy="demo-policy.example.com",policy_binding="demo-binding-prod",error_type="no_error",enforcement_action="warn"}"#,
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }

    // Deleting the binding lifts the denial, without a restart.
    let del = call(
        c.api,
        "DELETE",
        &format!("{BINDINGS}/demo-binding-test.example.com"),
        &[],
        b"",
    )
    .await;
    assert_eq!(del.code, 200, "{del}");
    answered(&c, "test", &config_map("probe", 3), 201).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parameters_come_from_a_custom_kind_and_from_selected_config_maps() {
    let c = KubeCluster::start().await;
    namespace(&c, "team", json!({})).await;
    replica_limits(&c).await;
    let limits = "/apis/rules.example.com/v1/namespaces/default/replicalimits";
    let limit = json!({"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit",
                       "metadata": {"name": "replica-limit-test.example.com"}, "maxReplicas": 1});
    post(&c, limits, &limit).await.is(201);
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replicalimit-policy.example.com"},
        "spec": {"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [{"expression": "!has(object.data) || size(object.data) <= params.maxReplicas",
                                  "messageExpression": "'at most ' + string(params.maxReplicas) + ' keys'",
                                  "reason": "Forbidden"}]}});
    post(&c, VAP, &policy).await.is(201);
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "replicalimit-binding-test.example.com"},
        "spec": {"policyName": "replicalimit-policy.example.com", "validationActions": ["Deny"],
                 "paramRef": {"name": "replica-limit-test.example.com", "namespace": "default",
                              "parameterNotFoundAction": "Deny"}}});
    post(&c, BINDINGS, &binding).await.is(201);
    answered(&c, "team", &config_map("probe", 2), 403).await;
    // The reason chose 403; the messageExpression the words.
    let r = create_cm(&c, "team", &config_map("two", 2), false).await;
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        status["message"],
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' denied request: at most 1 keys"
    );
    create_cm(&c, "team", &config_map("one", 1), false)
        .await
        .is(201);
    // The parameter changes: so does the decision.
    let patched = call(
        c.api,
        "PATCH",
        &format!("{limits}/replica-limit-test.example.com"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"maxReplicas": 3}"#,
    )
    .await;
    assert_eq!(patched.code, 200, "{patched}");
    answered(&c, "team", &config_map("probe", 2), 201).await;
    // No parameter with `Deny`: the binding is misconfigured, and failurePolicy Fail denies.
    let gone = call(
        c.api,
        "DELETE",
        &format!("{limits}/replica-limit-test.example.com"),
        &[],
        b"",
    )
    .await;
    assert_eq!(gone.code, 200, "{gone}");
    answered(&c, "team", &config_map("probe", 0), 422).await;
    let r = create_cm(&c, "team", &config_map("none", 0), false).await;
    let status = assert_status(&r, 422, "Invalid");
    assert_eq!(
        status["message"],
        "configmaps \"none\" is forbidden: ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    // failurePolicy Ignore lets it through.
    let ignore = call(
        c.api,
        "PATCH",
        &format!("{VAP}/replicalimit-policy.example.com"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"spec": {"failurePolicy": "Ignore"}}"#,
    )
    .await;
    assert_eq!(ignore.code, 200, "{ignore}");
    assert_eq!(
        ignore.json()["metadata"]["generation"],
        2,
        "a new spec, a new generation"
    );
    answered(&c, "team", &config_map("probe", 0), 201).await;

    // ConfigMaps as parameters, chosen by a selector in the request's namespace: each one
    // found is evaluated.
    for (name, max) in [("limits-a", "2"), ("limits-b", "3")] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {"limits": "true"}},
                        "data": {"maxKeys": max}});
        create_cm(&c, "team", &cm, false).await.is(201);
    }
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "max-keys"},
        "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "variables": [{"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"}],
                 "validations": [{"expression": "variables.keys <= int(params.data.maxKeys)",
                                  "message": "too many keys"}]}});
    post(&c, VAP, &policy).await.is(201);
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "max-keys"},
        "spec": {"policyName": "max-keys", "validationActions": ["Deny"],
                 "paramRef": {"selector": {"matchLabels": {"limits": "true"}},
                              "parameterNotFoundAction": "Allow"}}});
    post(&c, BINDINGS, &binding).await.is(201);
    // Three keys pass limits-b but not limits-a (once the parameters' kind is followed: until
    // its first list, a binding needing it is misconfigured, as upstream's before its informer
    // synced).
    wait_until(
        Duration::from_secs(10),
        "the parameters are read",
        || async {
            let r = create_cm(&c, "team", &config_map("probe", 3), true).await;
            r.code == 422
                && r.json()["message"]
                    .as_str()
                    .is_some_and(|m| m.ends_with("denied request: too many keys"))
        },
    )
    .await;
    create_cm(&c, "team", &config_map("two-keys", 2), false)
        .await
        .is(201);
    // A namespace with no parameters: `Allow` lets anything through.
    create_cm(&c, "default", &config_map("many", 5), false)
        .await
        .is(201);
}

#[tokio::test(flavor = "multi_thread")]
async fn match_conditions_exclusions_and_deletes_with_the_old_object() {
    let c = KubeCluster::start().await;
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "protect"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["DELETE"], "resources": ["configmaps"]}],
                     "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["*"], "resources": ["configmaps"], "resourceNames": ["scratch"]}]},
                 "matchConditions": [{"name": "not-exempt",
                     "expression": "!has(oldObject.metadata.labels) || !('exempt' in oldObject.metadata.labels)"}],
                 "validations": [{"expression": "oldObject.metadata.name.startsWith('tmp-')",
                     "messageExpression": "'only tmp- objects may be deleted, not ' + oldObject.metadata.name"}]}});
    post(&c, VAP, &policy).await.is(201);
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "protect"},
        "spec": {"policyName": "protect", "validationActions": ["Deny"]}});
    post(&c, BINDINGS, &binding).await.is(201);
    for (name, labels) in [
        ("keep", json!({})),
        ("tmp-1", json!({})),
        ("scratch", json!({})),
        ("exempted", json!({"exempt": "yes"})),
    ] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": labels}});
        create_cm(&c, "default", &cm, false).await.is(201);
    }
    let delete = |name: &'static str| {
        let api = c.api;
        async move {
            call(
                api,
                "DELETE",
                &format!("/api/v1/namespaces/default/configmaps/{name}"),
                &[],
                b"",
            )
            .await
        }
    };
    wait_until(
        Duration::from_secs(10),
        "the policy takes effect",
        || async {
            call(
                c.api,
                "DELETE",
                "/api/v1/namespaces/default/configmaps/keep?dryRun=All",
                &[],
                b"",
            )
            .await
            .code
                == 422
        },
    )
    .await;
    let r = delete("keep").await;
    let status = assert_status(&r, 422, "Invalid");
    assert_eq!(
        status["message"],
        "configmaps \"keep\" is forbidden: ValidatingAdmissionPolicy 'protect' with binding 'protect' denied request: only tmp- objects may be deleted, not keep"
    );
    // The Python client: a policy written and read back through its typed models, and the
    // refusal as its ApiException.
    let r = c.python(PYTHON, &[]).run().ok();
    let out = r.out();
    for line in [
        "policy python-policy Fail 1 ['configmaps']",
        "binding python-binding python-policy ['Deny', 'Audit']",
        "refused 422 Invalid configmaps \"keep\" is forbidden: ValidatingAdmissionPolicy 'protect' with binding 'protect' denied request: only tmp- objects may be deleted, not keep",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} in:\n{r}");
    }
    assert_eq!(delete("tmp-1").await.code, 200, "the rule passes");
    assert_eq!(delete("scratch").await.code, 200, "excluded by name");
    assert_eq!(
        delete("exempted").await.code,
        200,
        "a matchCondition is false"
    );
    // A policy that does not validate is refused with the field.
    let bad = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bad"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [{"expression": "object.data =="}]}});
    let r = post(&c, VAP, &bad).await;
    let status = assert_status(&r, 422, "Invalid");
    assert_eq!(
        status["details"]["causes"][0]["field"], "spec.validations[0].expression",
        "{status}"
    );
}

/// The status of policy `name` once its type checking is written for `generation`.
async fn checked(c: &KubeCluster, name: &str, generation: i64) -> Value {
    let path = format!("{VAP}/{name}");
    wait_until(
        Duration::from_secs(10),
        "the policy's status is written",
        || async {
            call(c.api, "GET", &path, &[], b"").await.json()["status"]["observedGeneration"]
                == generation
        },
    )
    .await;
    call(c.api, "GET", &path, &[], b"").await.json()["status"].clone()
}

/// Upstream's status controller: each expression's undefined fields, against the schemas of
/// the kinds the rules name and of the paramKind, in cel-go's words and display (upstream's
/// documented `object.replicas` example, on a ConfigMap); a spec change is checked again; a
/// rule naming `*` is not checked.
#[tokio::test(flavor = "multi_thread")]
async fn type_checking_warnings_are_written_to_the_policy_status() {
    let c = KubeCluster::start().await;
    replica_limits(&c).await;
    let policy = |validations: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "typed"},
            "spec": {"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                     "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                         "operations": ["CREATE"], "resources": ["configmaps"]}]},
                     "validations": validations}})
    };
    post(
        &c,
        VAP,
        &policy(json!([
            {"expression": "object.replicas > 1"},
            {"expression": "!has(object.data) || size(object.data) <= params.maxReplicas"},
            {"expression": "object.data.all(k, k.size() < 10) && params.maxReplicass > 0"},
        ])),
    )
    .await
    .is(201);
    let status = checked(&c, "typed", 1).await;
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([
            {"fieldRef": "spec.validations[0].expression",
             "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"},
            {"fieldRef": "spec.validations[2].expression",
             "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:44: undefined field 'maxReplicass'\n | object.data.all(k, k.size() < 10) && params.maxReplicass > 0\n | ...........................................^\n"},
        ]),
        "{status}"
    );

    // The spec fixed: checked again, no warnings.
    let mut fixed = policy(json!([{"expression": "size(object.data) <= params.maxReplicas"}]));
    let path = format!("{VAP}/typed");
    let current = call(c.api, "GET", &path, &[], b"").await.json();
    fixed["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    call(c.api, "PUT", &path, &[JSON], fixed.to_string().as_bytes())
        .await
        .is(200);
    let status = checked(&c, "typed", 2).await;
    assert!(
        status["typeChecking"]["expressionWarnings"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{status}"
    );

    // A rule naming every resource is not checked (upstream checks named kinds only).
    let wide = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "wide"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                     "operations": ["CREATE"], "resources": ["*"]}]},
                 "validations": [{"expression": "object.nothing > 1"}]}});
    post(&c, VAP, &wide).await.is(201);
    let status = checked(&c, "wide", 1).await;
    assert!(
        status["typeChecking"]["expressionWarnings"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{status}"
    );
}

/// The `authorizer` variable asks the server's authorizers (RBAC here) about the request's
/// user: a policy lets alice create a ConfigMap only where she may also list Secrets (an
/// upstream documentation pattern), its message says RBAC's reason (empty when
/// no rule matches, as upstream's RBAC authorizer gives none); once a Role lets her, she
/// may. `authorizer.requestResource` is the request's own resource.
#[tokio::test(flavor = "multi_thread")]
async fn the_authorizer_variable_asks_rbac_about_the_requests_user() {
    use kubestore_tests::fixtures_rbac::{self, CMS, admin, alice, until_alice};
    let c = fixtures_rbac::cluster().await;
    let role = |name: &str, resource: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name},
               "rules": [{"apiGroups": [""], "resources": [resource], "verbs": verbs}]})
    };
    let binding = |name: &str, role: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role}})
    };
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    admin(
        &c,
        "POST",
        roles,
        role("cm-writer", "configmaps", json!(["create", "list"])),
    )
    .await
    .is(201);
    admin(&c, "POST", bindings, binding("alice-writes", "cm-writer"))
        .await
        .is(201);
    until_alice(&c, "GET", CMS, "", 200).await;

    let check = "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list')";
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "secret-listers-only"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": [
                     {"expression": "authorizer.requestResource.check('create').allowed()",
                      "message": "the request's own resource is allowed"},
                     {"expression": format!("{check}.allowed()"),
                      "messageExpression": format!("'may not list secrets: ' + {check}.reason()"),
                      "reason": "Forbidden"}]}});
    admin(&c, "POST", VAP, policy).await.is(201);
    let bound = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "secret-listers-only"},
        "spec": {"policyName": "secret-listers-only", "validationActions": ["Deny"]}});
    admin(&c, "POST", BINDINGS, bound).await.is(201);
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string()
    };
    wait_until(
        Duration::from_secs(10),
        "the policy takes effect",
        || async {
            alice(&c, "POST", &format!("{CMS}?dryRun=All"), &cm("probe"))
                .await
                .code
                == 403
        },
    )
    .await;
    let r = alice(&c, "POST", CMS, &cm("denied")).await.is(403);
    let message = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.starts_with(
            "configmaps \"denied\" is forbidden: ValidatingAdmissionPolicy 'secret-listers-only' \
             with binding 'secret-listers-only' denied request: may not list secrets:"
        ),
        "{message}"
    );
    // The administrator (system:masters) may list anything.
    admin(
        &c,
        "POST",
        CMS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-admin"}}),
    )
    .await
    .is(201);

    // Allowed to list Secrets, alice may create.
    admin(
        &c,
        "POST",
        roles,
        role("secret-lister", "secrets", json!(["list"])),
    )
    .await
    .is(201);
    admin(
        &c,
        "POST",
        bindings,
        binding("alice-lists", "secret-lister"),
    )
    .await
    .is(201);
    until_alice(&c, "GET", "/api/v1/namespaces/default/secrets", "", 200).await;
    alice(&c, "POST", CMS, &cm("allowed")).await.is(201);
}

/// Kubernetes' CEL libraries in policy expressions (quantity, URLs, IP/CIDR, lists, regex,
/// strings), on a ConfigMap's data: a conforming ConfigMap passes, and each validation
/// refuses its own bad value with its message.
#[tokio::test(flavor = "multi_thread")]
async fn kubernetes_cel_libraries_decide_policies() {
    let c = KubeCluster::start().await;
    namespace(&c, "libs", json!({})).await;
    let validations = json!([
        {"expression": "!has(object.data.memory) || (isQuantity(object.data.memory) && quantity(object.data.memory).isLessThan(quantity('1Gi')))",
         "message": "memory must be a quantity under 1Gi"},
        {"expression": "!has(object.data.endpoint) || (isURL(object.data.endpoint) && url(object.data.endpoint).getScheme() == 'https')",
         "message": "endpoint must be an https URL"},
        {"expression": "!has(object.data.peer) || (isIP(object.data.peer) && cidr('10.0.0.0/8').containsIP(object.data.peer))",
         "message": "peer must be in 10.0.0.0/8"},
        {"expression": "!has(object.data.ports) || object.data.ports.split(',').map(p, int(p)).isSorted()",
         "message": "ports must be sorted"},
        {"expression": "!has(object.data.owner) || object.data.owner.lowerAscii().find('[a-z]+@example\\\\.com') != ''",
         "message": "owner must be an example.com address"},
    ]);
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "libraries"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "validations": validations}});
    post(&c, VAP, &policy).await.is(201);
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "libraries"},
        "spec": {"policyName": "libraries", "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "libs"}}}}});
    post(&c, BINDINGS, &binding).await.is(201);
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data});
    answered(&c, "libs", &cm(json!({"memory": "2Gi"})), 422).await;
    let good = json!({"memory": "512Mi", "endpoint": "https://example.com:8443/x?y=1",
                      "peer": "10.1.2.3", "ports": "80,443,8080", "owner": "Ops@Example.com"});
    create_cm(&c, "libs", &cm(good.clone()), true).await.is(201);
    for (key, bad, message) in [
        ("memory", "2Gi", "memory must be a quantity under 1Gi"),
        ("memory", "lots", "memory must be a quantity under 1Gi"),
        (
            "endpoint",
            "http://example.com",
            "endpoint must be an https URL",
        ),
        ("peer", "192.168.0.1", "peer must be in 10.0.0.0/8"),
        ("ports", "443,80", "ports must be sorted"),
        (
            "owner",
            "someone@elsewhere.org",
            "owner must be an example.com address",
        ),
    ] {
        let mut data = good.clone();
        data[key] = json!(bad);
        let r = create_cm(&c, "libs", &cm(data), true).await.is(422);
        let got = r.json()["message"].as_str().unwrap_or_default().to_string();
        assert!(
            got.ends_with(&format!("denied request: {message}")),
            "{key}={bad}: {got}"
        );
    }
}
